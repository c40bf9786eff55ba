// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench -b: both directions at once, as perftest's -b.  The
 * server runs the client's one-sided OP toward the client's buffer, in its
 * own kernel, while the client's run goes toward the server's.
 *
 * The client's hello says BH_BIDIR, and each side has a control buffer of
 * BENCH_CTL_LEN bytes beside the slots its runs use (the server's in its
 * adv, the client's in its REQ).  The two sides speak by RDMA WRITEs into
 * each other's control buffer (bench.h), which take no receive: nothing
 * the runs post meets them, an early one waits in no RNR retries (on which
 * 5.10's rxe spins, starving the run it waits for), and iWARP, which has
 * no immediate data, carries them.  Once its buffers exist the client
 * writes its REQ (a struct bench_bidir_req) and waits for the server's
 * READY; the server answers the REQ with READY and starts its run, the
 * client starts its own on READY.  After its run the client writes END and
 * waits for the server's REPORT, which the server writes once both its own
 * run is over and END has come.  Over RC the REPORT is the last word:
 * once its completion is in, the server disconnects, and the client,
 * which waits for that, tears its side down only then.  The other way
 * round the client's teardown could fail the REPORT's completion (its
 * acknowledgement, or over iWARP its last bytes, still on the way).  Over
 * UC, whose completion waits for nothing of the peer's, the client ends
 * as it likes (a disconnect there, which goes on QP1, could overtake the
 * REPORT and drop it).
 *
 * Over UC a write may be lost, unnoticed: there the client repeats REQ
 * every BIDIR_REPEAT_MS until READY comes, and END until REPORT does.  A
 * repeat writes the same bytes to the same place.  The server writes
 * each answer once: a lost one fails the client's wait.  A side's wait
 * also ends once its connection fails (the peer disconnected or died).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bench.h"

#define BIDIR_WRITE_WRID 4
#define BIDIR_REPEAT_MS 200	/* UC: REQ, END again after this */
#define BIDIR_POLL_US 1000	/* the control buffer looked at again */
#define BIDIR_ALIVE_MS 100	/* and the connection */
#define BIDIR_MAX_ITERS (1ULL << 40)	/* what a client's -n takes */
#define BIDIR_MAX_MS (86400U * 1000)	/* and -D */

/* Where a side writes to: the peer's control buffer, over @conn */
struct bidir_peer {
	uint32_t conn;
	uint32_t transport;
	uint64_t addr;
	uint32_t rkey;
};

/* A message as it lands: a REQ, a REPORT, or a READY or END (kinds alone) */
union bidir_msg {
	struct bench_bidir_req req;
	struct bench_bidir_report report;
};

/* The peer's message: the first half of this side's control buffer */
static uint8_t *bidir_in(const struct verbs_buf *ctl)
{
	return ctl->mem;
}

/* This side's message, as it leaves: the second half */
static union bidir_msg *bidir_out(const struct verbs_buf *ctl)
{
	return (union bidir_msg *)(ctl->mem + BENCH_BIDIR_MSG);
}

/* A message of @kind alone (READY, END) in the out half; the rest zero */
static void bidir_set_out(const struct verbs_buf *ctl, uint32_t kind)
{
	union bidir_msg *m = bidir_out(ctl);

	memset(m, 0, BENCH_BIDIR_MSG);
	m->report.kind = htobe32(kind);
	m->report.kind_end = htobe32(kind);
}

/* Write the out half to the peer's in half; its completion is reaped. */
static int bidir_write(int fd, const struct bidir_peer *p,
		       const struct verbs_buf *ctl, uint32_t timeout_ms)
{
	struct krdma_wr wr = {
		.wr_id = BIDIR_WRITE_WRID,
		.opcode = KRDMA_OP_RDMA_WRITE,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
		.sge[0] = { .buf_handle = ctl->handle,
			    .offset = BENCH_BIDIR_MSG,
			    .length = BENCH_BIDIR_MSG },
		.remote_addr = p->addr,
		.rkey = p->rkey,
	};
	struct krdma_wc wc;
	int ret;

	ret = verbs_post_one(fd, p->conn, &wr);
	if (!ret)
		ret = bench_wait_wc(fd, p->conn, KRDMA_OP_RDMA_WRITE, false,
				    loop_now_ms(), timeout_ms, &wc);
	return ret;
}

/*
 * -ECONNRESET once @conn's QP is in the error state: the peer
 * disconnected (or went away, on iWARP), so no message of its will come.
 */
static int bidir_conn_up(int fd, uint32_t conn)
{
	struct krdma_conn_query q = { .size = sizeof(q), .handle = conn };
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_CONN_QUERY, &q);
	if (!ret && q.state == KRDMA_CONN_ERR)
		ret = -ECONNRESET;
	return ret;
}

/*
 * Is the peer's message of @kind in, whole?  A copy of it to @m.  The
 * device writes the in half: its last word is read first, then the whole
 * message, whose first word must match too (a message still landing is
 * not in yet).
 */
static bool bidir_have(const struct verbs_buf *ctl, uint32_t kind,
		       union bidir_msg *m)
{
	const uint32_t *last = (const uint32_t *)(bidir_in(ctl) +
						  BENCH_BIDIR_MSG - 4);

	if (be32toh(__atomic_load_n(last, __ATOMIC_ACQUIRE)) != kind)
		return false;
	memcpy(m, bidir_in(ctl), sizeof(*m));
	return be32toh(m->report.kind) == kind &&
	       be32toh(m->report.kind_end) == kind;
}

/*
 * Wait until @landed(@arg) says what the peer writes is in, until
 * @deadline_ms, or until @conn fails (what landed before it did still
 * counts: the server disconnects right after its REPORT).
 */
static int bidir_poll(int fd, uint32_t conn, int64_t deadline_ms,
		      bool (*landed)(void *arg), void *arg)
{
	int64_t look = loop_now_ms() + BIDIR_ALIVE_MS;
	int ret;

	for (;;) {
		if (landed(arg))
			return 0;
		if (loop_stop)
			return -EINTR;
		if (loop_now_ms() >= deadline_ms)
			return -ETIMEDOUT;
		if (loop_now_ms() >= look) {
			ret = bidir_conn_up(fd, conn);
			if (ret)
				return landed(arg) ? 0 : ret;
			look = loop_now_ms() + BIDIR_ALIVE_MS;
		}
		usleep(BIDIR_POLL_US);
	}
}

/* The peer's message of @kind, awaited, and where its copy goes */
struct bidir_await {
	const struct verbs_buf *ctl;
	uint32_t kind;
	union bidir_msg *m;
};

static bool bidir_landed(void *arg)
{
	struct bidir_await *a = arg;

	return bidir_have(a->ctl, a->kind, a->m);
}

/*
 * Wait until the peer's message of @kind is in, until @deadline_ms, or
 * until @conn fails (bidir_poll()); a copy of it to @m.
 */
static int bidir_wait(int fd, uint32_t conn, const struct verbs_buf *ctl,
		      uint32_t kind, int64_t deadline_ms, union bidir_msg *m)
{
	struct bidir_await a = { .ctl = ctl, .kind = kind, .m = m };

	return bidir_poll(fd, conn, deadline_ms, bidir_landed, &a);
}

/*
 * The client: write the out half and wait for the server's @answer, for
 * @timeout_ms; over UC the write again every BIDIR_REPEAT_MS until it
 * comes.  Whatever the in half held before is cleared first.
 */
static int bidir_ask(int fd, const struct bidir_peer *p,
		     const struct verbs_buf *ctl, uint32_t answer,
		     uint32_t timeout_ms, union bidir_msg *m)
{
	int64_t deadline = loop_now_ms() + timeout_ms, until;
	int ret;

	memset(bidir_in(ctl), 0, BENCH_BIDIR_MSG);
	do {
		ret = bidir_write(fd, p, ctl, deadline - loop_now_ms() + 1);
		/* RC: its acknowledgement lost, the answer came, then the close */
		if (ret)
			return bidir_have(ctl, answer, m) ? 0 : ret;
		until = deadline;
		if (p->transport == KRDMA_TRANSPORT_UC &&
		    loop_now_ms() + BIDIR_REPEAT_MS < deadline)
			until = loop_now_ms() + BIDIR_REPEAT_MS;
		ret = bidir_wait(fd, p->conn, ctl, answer, until, m);
	} while (ret == -ETIMEDOUT && until < deadline);
	return ret;
}

/*
 * The client, the REPORT in: wait, for @timeout_ms at most, until the
 * server has disconnected @conn (or it failed otherwise).
 */
static void bidir_wait_closed(int fd, uint32_t conn, uint32_t timeout_ms)
{
	int64_t deadline = loop_now_ms() + timeout_ms;

	while (!loop_stop && loop_now_ms() < deadline &&
	       !bidir_conn_up(fd, conn))
		usleep(BIDIR_POLL_US);
}

/* The client: the server's control buffer, over its first connection */
static struct bidir_peer bidir_server(const struct bench_opts *o,
				      const struct bench_conn *c)
{
	/* the adv is in host order here (bench_connect()) */
	return (struct bidir_peer){
		.conn = c->handle,
		.transport = o->transport,
		.addr = c->adv.ctl_addr,
		.rkey = c->adv.ctl_rkey,
	};
}

/* The client: ask for the server's run of @size-byte messages. */
int bench_bidir_request(int fd, const struct bench_opts *o,
			const struct bench_conn *c, const struct verbs_buf *buf,
			const struct verbs_buf *ctl, uint32_t size)
{
	struct bench_bidir_req *q = &bidir_out(ctl)->req;
	struct bidir_peer p = bidir_server(o, c);
	union bidir_msg m;
	int ret;

	memset(q, 0, sizeof(*q));
	q->kind = htobe32(BIDIR_REQ);
	q->size = htobe32(size);
	q->addr = htobe64(buf->addr);
	q->length = htobe64(buf->length);
	q->rkey = htobe32(buf->rkey);
	q->tx_depth = htobe32(o->tx_depth);
	q->cq_mod = htobe32(o->cq_mod);
	q->duration_ms = htobe32(o->duration_s * 1000);
	q->iters = htobe64(o->iters);
	q->ctl_addr = htobe64(ctl->addr);
	q->ctl_rkey = htobe32(ctl->rkey);
	q->kind_end = q->kind;
	ret = bidir_ask(fd, &p, ctl, BIDIR_READY, o->timeout_s * 1000, &m);
	if (ret)
		err_msg("bench: -b: the request for the server's run: %s",
			bench_errno_hint(ret));
	return ret;
}

/* The client, after its run: the server's figures, in r->remote. */
int bench_bidir_report(int fd, const struct bench_opts *o,
		       const struct bench_conn *c, const struct verbs_buf *ctl,
		       struct bench_result *r)
{
	struct bidir_peer p = bidir_server(o, c);
	struct krdma_bench *rb = &r->remote;
	/*
	 * The server's run may go on after this one: wait as long again as
	 * this one took, and -T more
	 */
	uint32_t wait_s = o->timeout_s + r->b.elapsed_ns / 1000000000 + 1;
	union bidir_msg m;
	int ret;

	bidir_set_out(ctl, BIDIR_END);
	ret = bidir_ask(fd, &p, ctl, BIDIR_REPORT, wait_s * 1000, &m);
	if (ret) {
		err_msg("bench: -b: no figures from the server's run: %s",
			bench_errno_hint(ret));
		return ret;
	}
	memset(rb, 0, sizeof(*rb));
	rb->ops_done = be64toh(m.report.ops);
	rb->bytes_done = be64toh(m.report.bytes);
	rb->elapsed_ns = be64toh(m.report.elapsed_ns);
	rb->peak_bps = be64toh(m.report.peak_bps);
	r->bidir = true;
	if (p.transport != KRDMA_TRANSPORT_UC)
		bidir_wait_closed(fd, p.conn, o->timeout_s * 1000);
	return 0;
}

/*
 * The server: the client's request, checked against what the hello asked
 * for (the buffer's slots, the QPs' depth); its control buffer, in @p.
 */
static int bidir_get_request(int fd, const struct bench_bidir_group *bg,
			     struct krdma_bench *b, struct bidir_peer *p)
{
	const struct bench_bidir_req *q;
	union bidir_msg m;
	int ret;

	ret = bidir_wait(fd, bg->conn_ctl, bg->ctl, BIDIR_REQ,
			 loop_now_ms() + bg->timeout_s * 1000, &m);
	if (ret)
		return ret;
	q = &m.req;
	if (!be32toh(q->size) || be32toh(q->size) > bg->max_size ||
	    be32toh(q->tx_depth) > bg->tx_depth ||
	    be32toh(q->cq_mod) > be32toh(q->tx_depth) ||
	    be64toh(q->iters) > BIDIR_MAX_ITERS ||
	    be32toh(q->duration_ms) > BIDIR_MAX_MS) {
		warn_msg("bench: -b: the client's request was not one");
		return -EPROTO;
	}
	b->opcode = bench_ops[bg->op].opcode;
	b->msg_size = be32toh(q->size);
	b->remote_addr = be64toh(q->addr);
	b->remote_length = be64toh(q->length);
	b->remote_rkey = be32toh(q->rkey);
	b->tx_depth = be32toh(q->tx_depth);
	b->signal_every = be32toh(q->cq_mod);
	b->duration_ms = be32toh(q->duration_ms);
	b->iters = be64toh(q->iters);
	*p = (struct bidir_peer){ .conn = bg->conn_ctl,
				  .transport = bg->transport,
				  .addr = be64toh(q->ctl_addr),
				  .rkey = be32toh(q->ctl_rkey) };
	return 0;
}

/*
 * The server: wait for the client's END, and answer it with @b's figures.
 * The client's run may go on after this one: wait as long again as this
 * one took, and -T more.
 */
static int bidir_answer(int fd, const struct bench_bidir_group *bg,
			const struct bidir_peer *p, const struct krdma_bench *b)
{
	struct bench_bidir_report *r = &bidir_out(bg->ctl)->report;
	uint32_t timeout_ms = bg->timeout_s * 1000;
	union bidir_msg m;
	int ret;

	ret = bidir_wait(fd, p->conn, bg->ctl, BIDIR_END,
			 loop_now_ms() + timeout_ms + b->elapsed_ns / 1000000,
			 &m);
	if (ret)
		return ret;
	memset(r, 0, sizeof(*r));
	r->kind = htobe32(BIDIR_REPORT);
	r->ops = htobe64(b->ops_done);
	r->bytes = htobe64(b->bytes_done);
	r->elapsed_ns = htobe64(b->elapsed_ns);
	r->peak_bps = htobe64(b->peak_bps);
	r->kind_end = r->kind;
	return bidir_write(fd, p, bg->ctl, timeout_ms);
}

/*
 * The server: the run toward the client, its figures in @b: 0, the run's
 * -errno or the protocol's.  Over RC the caller then disconnects the
 * client's connections: on 0 the REPORT's completion is in, and the
 * client waits for that; else it learns sooner that no REPORT comes.
 */
int bench_bidir_serve(int fd, const struct bench_bidir_group *bg,
		      struct krdma_bench *b)
{
	struct bidir_peer p;
	int ret;

	memset(b, 0, sizeof(*b));
	b->size = sizeof(*b);
	ret = bidir_get_request(fd, bg, b, &p);
	if (ret)
		return ret;
	/* its completion reaped before the run, which would take it */
	bidir_set_out(bg->ctl, BIDIR_READY);
	ret = bidir_write(fd, &p, bg->ctl, bg->timeout_s * 1000);
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
	return bidir_answer(fd, bg, &p, b);
}

/*
 * SEND over iWARP, which has neither immediate data nor RNR retries, speaks
 * with credits (uapi/krdma.h, "Benchmark wire protocol"): the server's
 * kernel run writes them, and its report, into the client's control areas
 * at the end of the client's buffer.  The client says where those are with
 * a CREDITS message, a REQ of that kind, into the server's control buffer
 * (its adv), and the server's caller passes them on to its run.
 */

/* A word of a control area, which the peer's device writes */
static uint64_t credits_word(const volatile __le64 *w)
{
	return le64toh(__atomic_load_n(w, __ATOMIC_ACQUIRE));
}

/* A word of a control area awaited above @above, and its value */
struct credits_await {
	const volatile __le64 *word;
	uint64_t above;
	uint64_t value;
};

static bool credits_landed(void *arg)
{
	struct credits_await *a = arg;

	a->value = credits_word(a->word);
	return a->value > a->above;
}

/*
 * Wait until @word of @conn's area exceeds @above, until @deadline_ms or
 * until @conn fails (bidir_poll()); its value to @out.
 */
static int credits_wait(int fd, uint32_t conn, const volatile __le64 *word,
			uint64_t above, int64_t deadline_ms, uint64_t *out)
{
	struct credits_await a = { .word = word, .above = above };
	int ret;

	ret = bidir_poll(fd, conn, deadline_ms, credits_landed, &a);
	*out = a.value;
	return ret;
}

/*
 * The client: its control areas (the end of @buf) to the server, over the
 * first connection, and each connection's first credits, the server's
 * READY.
 */
int bench_credits_request(int fd, const struct bench_opts *o,
			  const struct bench_conn *conns,
			  const struct verbs_buf *buf,
			  const struct verbs_buf *ctl)
{
	struct krdma_bench_ctl *area = bench_ctl_area(buf, o->qps);
	struct bench_bidir_req *q = &bidir_out(ctl)->req;
	struct bidir_peer p = bidir_server(o, &conns[0]);
	int64_t deadline = loop_now_ms() + o->timeout_s * 1000;
	uint64_t credits;
	uint32_t i;
	int ret;

	memset(area, 0, o->qps * sizeof(*area));
	memset(q, 0, sizeof(*q));
	q->kind = htobe32(BIDIR_CREDITS);
	q->ctl_addr = htobe64(buf->addr + ((uint8_t *)area - buf->mem));
	q->ctl_rkey = htobe32(buf->rkey);
	q->kind_end = q->kind;
	ret = bidir_write(fd, &p, ctl, o->timeout_s * 1000);
	for (i = 0; i < o->qps && !ret; i++)
		ret = credits_wait(fd, conns[i].handle, &area[i].credits, 0,
				   deadline, &credits);
	return ret;
}

/*
 * The client, after its runs: the end message on @conn, once a credit
 * allows it, and the server's report, the count of payloads that failed
 * its check, in @bad.
 */
int bench_credits_end(int fd, uint32_t conn, struct krdma_bench_ctl *c,
		      uint32_t timeout_s, uint32_t *bad)
{
	struct krdma_wr wr = {
		.wr_id = BIDIR_WRITE_WRID,
		.opcode = KRDMA_OP_SEND,
		.flags = KRDMA_WR_SIGNALED,
	};
	int64_t deadline = loop_now_ms() + timeout_s * 1000;
	uint64_t sent = credits_word(&c->sent), v;
	int ret;

	ret = credits_wait(fd, conn, &c->credits, sent, deadline, &v);
	if (!ret)
		ret = verbs_post_one(fd, conn, &wr);
	if (ret)
		return ret;
	c->sent = htole64(sent + 1);
	/*
	 * the report has KRDMA_BENCH_REPORTED, its top bit, set; one that
	 * landed before the server closed still counts
	 */
	ret = credits_wait(fd, conn, &c->report, KRDMA_BENCH_REPORTED - 1,
			   deadline, &v);
	if (!ret)
		*bad = (uint32_t)(v & ~KRDMA_BENCH_REPORTED);
	return ret;
}

/*
 * The server: where the client's control areas are, from its CREDITS
 * message, for the run on @b.
 */
int bench_credits_get(int fd, const struct bench_bidir_group *bg,
		      struct krdma_bench *b)
{
	union bidir_msg m;
	int ret;

	ret = bidir_wait(fd, bg->conn_ctl, bg->ctl, BIDIR_CREDITS,
			 loop_now_ms() + bg->timeout_s * 1000, &m);
	if (ret)
		return ret;
	b->remote_addr = be64toh(m.req.ctl_addr);
	b->remote_rkey = be32toh(m.req.ctl_rkey);
	b->remote_length = bg->num_conns * sizeof(struct krdma_bench_ctl);
	return 0;
}
