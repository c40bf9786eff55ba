// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench -b: both directions at once, as perftest's -b.  The
 * server runs the client's one-sided OP toward the client's buffer, in its
 * own kernel, while the client's run goes toward the server's.
 *
 * The client's hello says BH_BIDIR.  Once its buffer exists the client
 * SENDs a struct bench_bidir_req on its first connection, which lands in
 * the last BENCH_TAIL bytes of the server's buffer (the server posted that
 * receive when it accepted the connection), and starts its run when the
 * SEND completes.  The server starts its run when the request arrives.
 * After its run the client sends the END message, as a two-sided run's
 * client does, with a receive posted for the answer in its own tail; the
 * server answers, once its run is over, with a struct bench_bidir_report.
 * No message comes while either side's run goes, which would take a
 * completion the run did not post: over RC an END that comes early waits
 * in RNR retries until the server posts the receive for it.
 *
 * UC drops a message that finds no receive instead, and says nothing:
 * there the client repeats its request until the server answers it (a
 * zero-length KRDMA_BENCH_READY_IMM, before the server's run) and its END
 * until the report comes, as a two-sided run's hello and END are.  A
 * repeat that comes while the server's run goes finds no receive, and is
 * dropped.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "bench.h"

#define BIDIR_REQ_WRID 4
#define BIDIR_END_WRID 5
#define BIDIR_REPORT_WRID 6
#define BIDIR_ACK_WRID 7
#define BIDIR_MAX_ITERS (1ULL << 40)	/* what a client's -n takes */
#define BIDIR_MAX_MS (86400U * 1000)	/* and -D */

static void *bidir_tail(const struct verbs_buf *buf)
{
	return buf->mem + buf->length - BENCH_TAIL;
}

/* The first @len bytes of the tail */
static struct krdma_sge bidir_tail_sge(const struct verbs_buf *buf,
				       uint32_t len)
{
	return (struct krdma_sge){ .buf_handle = buf->handle,
				   .offset = buf->length - BENCH_TAIL,
				   .length = len };
}

static int bidir_send_tail(int fd, uint32_t conn, const struct verbs_buf *buf,
			   uint32_t opcode, uint64_t wr_id, uint32_t len,
			   uint32_t timeout_s)
{
	struct krdma_wr wr = {
		.wr_id = wr_id,
		.opcode = opcode,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
		.sge[0] = bidir_tail_sge(buf, len),
	};
	struct krdma_wc wc;
	int ret;

	/* a SEND_WITH_IMM completes as a SEND (IB_WC_SEND) */
	ret = verbs_post_one(fd, conn, &wr);
	if (!ret)
		ret = bench_wait_wc(fd, conn, KRDMA_OP_SEND, false,
				    loop_now_ms(), timeout_s * 1000, &wc);
	return ret;
}

/* The client: ask for the server's run of @size-byte messages. */
int bench_bidir_request(int fd, const struct bench_opts *o, uint32_t conn,
			const struct verbs_buf *buf, uint32_t size)
{
	struct bench_bidir_req *q = bidir_tail(buf);
	/* UC: repeated until the server's READY, before its run */
	const struct bench_ask a = {
		.wr = { .wr_id = BIDIR_REQ_WRID, .opcode = KRDMA_OP_SEND,
			.flags = KRDMA_WR_SIGNALED, .num_sge = 1,
			.sge[0] = bidir_tail_sge(buf, sizeof(*q)) },
		.answer_ready = true,
		.timeout_ms = o->timeout_s * 1000,
	};
	uint32_t imm;
	int ret;

	memset(q, 0, BENCH_TAIL);
	q->magic = htobe32(BENCH_MAGIC);
	q->size = htobe32(size);
	q->addr = htobe64(buf->addr);
	q->length = htobe64(buf->length - BENCH_TAIL);
	q->rkey = htobe32(buf->rkey);
	q->tx_depth = htobe32(o->tx_depth);
	q->cq_mod = htobe32(o->cq_mod);
	q->duration_ms = htobe32(o->duration_s * 1000);
	q->iters = htobe64(o->iters);
	if (o->transport == KRDMA_TRANSPORT_UC)
		ret = bench_ask_until_answer(fd, conn, o->transport, buf, &a,
					     &imm);
	else
		ret = bidir_send_tail(fd, conn, buf, KRDMA_OP_SEND,
				      BIDIR_REQ_WRID, sizeof(*q), o->timeout_s);
	if (ret)
		err_msg("bench: -b: the request for the server's run: %s",
			bench_errno_hint(ret));
	return ret;
}

/* The client, after its run: the server's figures, in r->remote. */
int bench_bidir_report(int fd, const struct bench_opts *o, uint32_t conn,
		       const struct verbs_buf *buf, struct bench_result *r)
{
	const struct bench_bidir_report *p = bidir_tail(buf);
	struct krdma_bench *rb = &r->remote;
	/*
	 * The server's run may go on after this one: wait as long again as
	 * this one took, and -T more
	 */
	uint32_t wait_s = o->timeout_s + r->b.elapsed_ns / 1000000000 + 1;
	/* UC: repeated until the report comes, to the tail */
	const struct bench_ask a = {
		.wr = { .wr_id = BIDIR_END_WRID,
			.opcode = KRDMA_OP_SEND_WITH_IMM,
			.flags = KRDMA_WR_SIGNALED,
			.imm_data = KRDMA_BENCH_END_IMM },
		.answer_len = BENCH_TAIL,
		.answer_ready = false,
		.timeout_ms = wait_s * 1000,
	};
	uint32_t imm = 0;
	int ret;

	memset(bidir_tail(buf), 0, BENCH_TAIL);
	if (o->transport == KRDMA_TRANSPORT_UC)
		ret = bench_ask_until_answer(fd, conn, o->transport, buf, &a,
					     &imm);
	else
		ret = bench_send_end_report(fd, conn, wait_s, buf, &imm);
	if (!ret && be32toh(p->magic) != BENCH_MAGIC)
		ret = -EPROTO;
	if (ret) {
		err_msg("bench: -b: no figures from the server's run: %s",
			bench_errno_hint(ret));
		return ret;
	}
	memset(rb, 0, sizeof(*rb));
	rb->ops_done = be64toh(p->ops);
	rb->bytes_done = be64toh(p->bytes);
	rb->elapsed_ns = be64toh(p->elapsed_ns);
	rb->peak_bps = be64toh(p->peak_bps);
	r->bidir = true;
	return 0;
}

/*
 * The server: the client's request, checked against what the hello asked
 * for (the buffer's slots, the QPs' depth).
 */
static int bidir_get_request(int fd, const struct bench_bidir_group *bg,
			     struct krdma_bench *b)
{
	const struct bench_bidir_req *q = bidir_tail(bg->buf);
	struct krdma_wc wc;
	int ret;

	ret = bench_wait_wc(fd, bg->ctl, KRDMA_OP_RECV, false, loop_now_ms(),
			    bg->timeout_s * 1000, &wc);
	if (ret)
		return ret;
	if (wc.byte_len < sizeof(*q) || be32toh(q->magic) != BENCH_MAGIC ||
	    !be32toh(q->size) || be32toh(q->size) > bg->max_size ||
	    be32toh(q->tx_depth) > bg->tx_depth ||
	    be32toh(q->cq_mod) > be32toh(q->tx_depth) ||
	    be64toh(q->iters) > BIDIR_MAX_ITERS ||
	    be32toh(q->duration_ms) > BIDIR_MAX_MS)
		return -EPROTO;
	b->opcode = bench_ops[bg->op].opcode;
	b->msg_size = be32toh(q->size);
	b->remote_addr = be64toh(q->addr);
	b->remote_length = be64toh(q->length);
	b->remote_rkey = be32toh(q->rkey);
	b->tx_depth = be32toh(q->tx_depth);
	b->signal_every = be32toh(q->cq_mod);
	b->duration_ms = be32toh(q->duration_ms);
	b->iters = be64toh(q->iters);
	return 0;
}

/*
 * The server, over UC: a zero-length READY, the request's answer; its
 * completion is reaped before the run, which would take it for a
 * stranger's.
 */
static int bidir_send_ready(int fd, uint32_t ctl, uint32_t timeout_s)
{
	struct krdma_wr wr = {
		.wr_id = BIDIR_ACK_WRID,
		.opcode = KRDMA_OP_SEND_WITH_IMM,
		.flags = KRDMA_WR_SIGNALED,
		.imm_data = KRDMA_BENCH_READY_IMM,
	};
	struct krdma_wc wc;
	int ret;

	ret = verbs_post_one(fd, ctl, &wr);
	if (!ret)
		ret = bench_wait_wc(fd, ctl, KRDMA_OP_SEND, false,
				    loop_now_ms(), timeout_s * 1000, &wc);
	return ret;
}

/*
 * The server: wait for the client's END, and answer with the tail.  The
 * client's run may go on after this one: wait as long again as this one
 * took, and -T more.  The END's receive is zero-length: over UC a late
 * repeat of the request that meets it is dropped, where it would fill a
 * larger one (which is passed over here, and not posted again).
 */
static int bidir_answer_end(int fd, uint32_t ctl, const struct verbs_buf *buf,
			    uint64_t wait_ms, uint32_t timeout_s)
{
	struct krdma_wr rwr = { .wr_id = BIDIR_END_WRID,
				.opcode = KRDMA_OP_RECV };
	struct krdma_wc wc;
	int ret;

	ret = verbs_post_one(fd, ctl, &rwr);
	if (!ret)
		ret = bench_wait_wc(fd, ctl, KRDMA_OP_RECV, true, loop_now_ms(),
				    (uint32_t)wait_ms, &wc);
	if (!ret && wc.imm_data != KRDMA_BENCH_END_IMM)
		ret = -EPROTO;
	if (!ret)
		ret = bidir_send_tail(fd, ctl, buf, KRDMA_OP_SEND_WITH_IMM,
				      BIDIR_REPORT_WRID,
				      sizeof(struct bench_bidir_report),
				      timeout_s);
	return ret;
}

/* The server: answer the client's END with @b's figures. */
static int bidir_answer(int fd, uint32_t ctl, const struct verbs_buf *buf,
			const struct krdma_bench *b, uint32_t timeout_s)
{
	struct bench_bidir_report *p = bidir_tail(buf);

	memset(p, 0, BENCH_TAIL);
	p->magic = htobe32(BENCH_MAGIC);
	p->ops = htobe64(b->ops_done);
	p->bytes = htobe64(b->bytes_done);
	p->elapsed_ns = htobe64(b->elapsed_ns);
	p->peak_bps = htobe64(b->peak_bps);
	return bidir_answer_end(fd, ctl, buf,
				timeout_s * 1000ULL + b->elapsed_ns / 1000000,
				timeout_s);
}

/*
 * The server: the run toward the client, its figures in @b: 0, the run's
 * -errno or the protocol's.
 */
int bench_bidir_serve(int fd, const struct bench_bidir_group *bg,
		      struct krdma_bench *b)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->size = sizeof(*b);
	ret = bidir_get_request(fd, bg, b);
	/* UC: the client repeats the request until this answer comes */
	if (!ret && bg->transport == KRDMA_TRANSPORT_UC)
		ret = bidir_send_ready(fd, bg->ctl, bg->timeout_s);
	if (ret)
		return ret;
	b->flags = (bg->flags & BH_NOTIFY ? KRDMA_BENCH_NOTIFY : 0) |
		   (bg->flags & BH_ONE_CPU || bg->num_conns == 1 ?
		    0 : KRDMA_BENCH_PER_CPU);
	b->num_conns = bg->num_conns;
	b->conns_uptr = (uintptr_t)bg->conns;
	b->local_buf = bg->buf->handle;
	b->timeout_ms = bg->timeout_s * 1000;
	/*
	 * A run that failed answers no END (it may have moved the QPs to the
	 * error state): the client's wait for the figures ends, saying so.
	 */
	if (ioctl(fd, KRDMA_BENCH, b))
		return -errno;
	return bidir_answer(fd, bg->ctl, bg->buf, b, bg->timeout_s);
}
