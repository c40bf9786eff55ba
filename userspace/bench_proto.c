// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench: the wire protocol between a client and a server.  The
 * client's CONNECT carries struct bench_hello, the server's ACCEPT struct
 * bench_adv; READY and END are zero-length SEND_WITH_IMMs (uapi/krdma.h,
 * KRDMA_BENCH_SERVER), repeated over UC and UD until answered.  Also the
 * buffer a side needs and the pattern it carries.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "bench.h"
#include "names.h"

#define BENCH_MAX_BUF (64ULL << 20)	/* a side's buffer, unless validating */
#define BENCH_ALL_MAX (8U << 20)	/* -a: 2 B ... 8 MiB */
#define HELLO_REPEAT_MS 200		/* UC, UD: hello, end again after this */
#define ANSWER_WRID 3			/* the receive for the server's answer */

void bench_fill_pattern(uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = krdma_bench_pattern(i);
}

/*
 * The area at the end of a side's buffer: over UD the GRHs', KRDMA_GRH_LEN
 * bytes for each of @qps; a credits client's control areas, a struct
 * krdma_bench_ctl each.
 */
uint64_t bench_tail_len(uint32_t transport, bool credits, uint32_t qps)
{
	if (transport == KRDMA_TRANSPORT_UD)
		return (uint64_t)qps * KRDMA_GRH_LEN;
	return credits ? qps * sizeof(struct krdma_bench_ctl) : 0;
}

/* A credits client's control areas: the end of @buf (bench_tail_len()) */
struct krdma_bench_ctl *bench_ctl_area(const struct verbs_buf *buf,
				       uint32_t qps)
{
	return (struct krdma_bench_ctl *)(buf->mem + buf->length -
					  qps * sizeof(struct krdma_bench_ctl));
}

/*
 * Bytes of the buffer a side needs for messages of @size, and @tail at its
 * end (bench_tail_len()).  A
 * slot per WR in flight, unless validating no more than BENCH_MAX_BUF nor
 * @dev_max (the device's largest buffer, dev_max_buf(); 0: unknown) in
 * whole slots: the loop takes slots in turn, and fewer of them only share
 * one more often.
 */
uint64_t bench_buf_len(uint32_t size, uint32_t depth, bool validate,
		       uint64_t tail, uint64_t dev_max)
{
	uint64_t grh = tail;
	uint64_t len = (uint64_t)size * depth;

	if (!validate && len > BENCH_MAX_BUF)
		len = BENCH_MAX_BUF;
	if (!validate && dev_max > grh && len > dev_max - grh)
		len = (dev_max - grh) - (dev_max - grh) % size;
	if (len < size)
		len = size;
	return len + grh;
}

/*
 * A side's buffer of @len bytes: the module's (mapped), or with
 * --use_hugepages (@huge) this process's huge pages, registered zero copy.
 */
int bench_buf_get(int fd, uint32_t dev_index, uint32_t access, uint64_t len,
		  bool huge, struct verbs_buf *b)
{
	if (huge)
		return verbs_buf_reg_huge(fd, dev_index, access, len, b);
	return verbs_buf_alloc(fd, dev_index, access, len, b);
}

static int get_adv(int fd, uint32_t conn, struct bench_adv *adv)
{
	struct krdma_event evs[8];
	int64_t deadline = loop_now_ms() + 2000;
	const struct bench_adv *a;
	int i, n;

	do {
		n = verbs_get_events(fd, evs, ARRAY_SIZE(evs), 100);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (evs[i].type != KRDMA_EVENT_ESTABLISHED ||
			    evs[i].handle != conn)
				continue;
			a = (const void *)evs[i].private_data;
			if (evs[i].private_data_len < sizeof(*a) ||
			    be32toh(a->magic) != BENCH_MAGIC)
				return -EPROTO;
			adv->addr = be64toh(a->addr);
			adv->length = be64toh(a->length);
			adv->rkey = be32toh(a->rkey);
			adv->ctl_addr = be64toh(a->ctl_addr);
			adv->ctl_rkey = be32toh(a->ctl_rkey);
			return 0;
		}
	} while (loop_now_ms() < deadline);
	return -ETIMEDOUT;
}

/* -a: up to 8 MiB; over UD, one packet (the hello asks for no more). */
uint32_t bench_all_max(const struct bench_opts *o)
{
	return o->transport == KRDMA_TRANSPORT_UD ? UD_ALL_MAX : BENCH_ALL_MAX;
}

/* The bench protocol the loaded module's runs speak (0: unknown). */
uint32_t bench_protocol(int fd)
{
	struct krdma_info info = { .size = sizeof(info) };

	return krdma_ioctl_quiet(fd, KRDMA_GET_INFO, &info) ? 0 :
	       info.bench_protocol;
}

/* the source address of a client's connections (-d, -i, -x), or family 0 */
struct krdma_sockaddr bench_src;

int bench_connect(int fd, const struct bench_opts *o,
		  const struct krdma_sockaddr *dst, uint32_t group,
		  uint32_t index, uint32_t qps, struct bench_conn *c,
		  bool want_adv)
{
	/* latency: room for the unsignaled pings -Q allows */
	uint32_t depth = o->latency ? (o->cq_mod > 4 ? o->cq_mod : 4) :
				      o->tx_depth;
	struct krdma_cm_connect cc = {
		.size = sizeof(cc),
		.flags = o->events ? KRDMA_CONN_NOTIFY : 0,
		.dst = *dst,
		.src = bench_src,
		.transport = o->transport,
		.timeout_ms = o->timeout_s * 1000,
		.caps = { .max_send_wr = o->op ? depth + 2 : 4,
			  .max_recv_wr = o->op ? 8 + (o->via_ioctl ? VIA_RECVS :
							     0) : 4,
			  .max_send_sge = 1,
			  /* UD: the GRH's and the payload's */
			  .max_recv_sge = o->transport ==
					  KRDMA_TRANSPORT_UD ? 2 : 1,
			  .max_inline_data = o->inline_size },
		.private_data_len = sizeof(struct bench_hello),
	};
	struct bench_hello h = {
		.magic = htobe32(BENCH_MAGIC),
		.version = htobe16(BENCH_VERSION),
		.op = htobe16(o->op),
		.flags = htobe32((o->latency ? BH_LATENCY : 0) |
				 (o->validate ? BH_VALIDATE : 0) |
				 (o->events ? BH_NOTIFY : 0) |
				 (o->one_cpu ? BH_ONE_CPU : 0) |
				 (o->all ? BH_ALL : 0) |
				 (o->bidir ? BH_BIDIR : 0)),
		.max_size = htobe32(o->all ? bench_all_max(o) : o->size),
		.tx_depth = htobe32(o->latency ? 1 : o->tx_depth),
		.qps = htobe16(qps),
		.index = htobe16(index),
		.group = htobe32(group),
		.timeout_s = htobe32(o->timeout_s),
		.kproto = htobe32(bench_protocol(fd)),
	};
	int ret;

	memcpy(cc.private_data, &h, sizeof(h));
	ret = krdma_ioctl_quiet(fd, KRDMA_CM_CONNECT, &cc);
	if (ret == -ECONNREFUSED) {
		err_msg("bench: connection refused (reject reason %d): is "
			PROG_NAME " bench running there, with the same -c?",
			cc.reject_reason);
		return ret;
	}
	if (ret == -EINVAL) {
		/* what the kernel checks against the device: the queue */
		err_msg("bench: connect: %s: a QP of %u send WRs and %u bytes "
			"inline (-t, -Q, -I) the device cannot make (see "
			PROG_NAME " devices: max_qp_wr, max_inline_data)",
			strerror(-ret), cc.caps.max_send_wr,
			cc.caps.max_inline_data);
		return ret;
	}
	if (ret) {
		err_msg("bench: connect: %s", strerror(-ret));
		return ret;
	}
	c->handle = cc.handle;
	c->dev_index = cc.dev_index;
	c->qp_num = cc.qp_num;
	/*
	 * The server's READY message needs a receive as soon as can be (UC,
	 * UD: the server waits for the client's hello, after this).  SEND
	 * over iWARP speaks with credits: no message of the server's comes.
	 */
	if (two_sided(o->op) && o->transport == KRDMA_TRANSPORT_RC &&
	    !(o->op == BOP_SEND && dev_is_iwarp(fd, c->dev_index))) {
		struct krdma_wr wr = { .wr_id = 1, .opcode = KRDMA_OP_RECV };

		ret = verbs_post_one(fd, c->handle, &wr);
		if (ret)
			return ret;
	}
	if (!want_adv)
		return 0;
	ret = get_adv(fd, c->handle, &c->adv);
	if (ret)
		err_msg("bench: no buffer advertised by the server: %s",
			strerror(-ret));
	return ret;
}

/* The server's READY, answering a hello after the one answered first. */
bool bench_late_ready(const struct krdma_wc *wc)
{
	return wc->opcode == KRDMA_OP_RECV &&
	       (wc->wc_flags & KRDMA_WC_WITH_IMM) &&
	       wc->imm_data == KRDMA_BENCH_READY_IMM;
}

/* A failed completion, said so. */
static bool wc_failed(const struct krdma_wc *wc)
{
	if (!wc->status)
		return false;
	err_msg("bench: completion failed: %s", wc_status_name(wc->status));
	return true;
}

/*
 * Wait for a completion of @want (with immediate data if @with_imm) on
 * @conn, for @timeout_ms from @start_ms; it goes to @out.  Other
 * completions are passed over, a failed one ends the wait.
 */
int bench_wait_wc(int fd, uint32_t conn, uint32_t want, bool with_imm,
		  int64_t start_ms, uint32_t timeout_ms, struct krdma_wc *out)
{
	int64_t deadline = start_ms + timeout_ms;
	struct krdma_wc wc[4];
	int i, n;

	while (loop_now_ms() < deadline) {
		n = verbs_poll(fd, conn, wc, ARRAY_SIZE(wc), 100);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (wc_failed(&wc[i]))
				return -EIO;
			if (wc[i].opcode == want &&
			    (!with_imm || wc[i].wc_flags & KRDMA_WC_WITH_IMM)) {
				*out = wc[i];
				return 0;
			}
		}
		if (loop_stop)
			return -EINTR;
	}
	return -ETIMEDOUT;
}

/*
 * Two-sided: the server answers the END message with the count of payloads
 * that failed its check, 0 unless validating (uapi/krdma.h,
 * KRDMA_BENCH_SERVER); the receive for that answer goes before the END.
 * The answer, not the END's own completion, says the server is done: the
 * END's acknowledgment may be lost when the server's QP leaves RTS.
 */
int bench_send_end_report(int fd, uint32_t conn, uint32_t timeout_s,
			  uint32_t *bad)
{
	int64_t start = loop_now_ms();
	struct krdma_wr rwr = { .wr_id = ANSWER_WRID, .opcode = KRDMA_OP_RECV };
	struct krdma_wr wr = {
		.wr_id = 2,
		.opcode = KRDMA_OP_SEND_WITH_IMM,
		.flags = KRDMA_WR_SIGNALED,
		.imm_data = KRDMA_BENCH_END_IMM,
	};
	struct krdma_wc wc;
	int ret;

	ret = verbs_post_one(fd, conn, &rwr);
	if (!ret)
		ret = verbs_post_one(fd, conn, &wr);
	if (!ret)
		ret = bench_wait_wc(fd, conn, KRDMA_OP_RECV, true, start,
				    timeout_s * 1000, &wc);
	if (!ret)
		*bad = wc.imm_data;
	return ret;
}

/* UC, UD: a message repeated until the server answers it */
struct bench_ask {
	struct krdma_wr wr;	/* the message, signaled */
	bool answer_ready;	/* the answer is a READY (or not) */
	uint32_t timeout_ms;
};

/*
 * UC, UD: a receive for the server's answer: zero-length; over UD with room
 * for the GRH in front (the buffer's last KRDMA_GRH_LEN bytes, where the
 * kernel's runs put them too).
 */
static int post_answer_recv(int fd, uint32_t conn, uint32_t transport,
			    const struct verbs_buf *buf)
{
	struct krdma_wr wr = { .wr_id = ANSWER_WRID, .opcode = KRDMA_OP_RECV };

	if (transport == KRDMA_TRANSPORT_UD)
		return verbs_post_recv(fd, conn, wr.wr_id, buf->handle,
				       buf->length - KRDMA_GRH_LEN,
				       KRDMA_GRH_LEN);
	return verbs_post_one(fd, conn, &wr);
}

/* The answer @a waits for, not a stranger's (a late READY, say)? */
static bool is_answer(const struct bench_ask *a, const struct krdma_wc *wc)
{
	return (wc->wc_flags & KRDMA_WC_WITH_IMM) &&
	       bench_late_ready(wc) == a->answer_ready;
}

/*
 * UC, UD: @a's message every HELLO_REPEAT_MS until the server's answer
 * comes (its imm_data to @answer), for @a's timeout.  Both drop a message
 * that finds no receive posted: a hello sent before the server's run has
 * posted its receives, an end message that comes when the server has none
 * left, an answer lost.  Every send completion is reaped before the run
 * starts, which would take one for a stranger's (EBUSY).  What has come is
 * looked at before a repeat goes: none goes once the answer is in, to
 * meet a receive the server has since posted for something else.
 */
static int ask_until_answer(int fd, uint32_t conn, uint32_t transport,
			    const struct verbs_buf *buf,
			    const struct bench_ask *a, uint32_t *answer)
{
	int64_t deadline = loop_now_ms() + a->timeout_ms, next = 0;
	uint32_t sent = 0, sends_done = 0;
	bool answered = false;
	struct krdma_wc wc[4];
	int ret, n, i;

	ret = post_answer_recv(fd, conn, transport, buf);
	while (!ret && (!answered || sends_done < sent)) {
		if (loop_stop)
			return -EINTR;
		if (loop_now_ms() >= deadline)
			return -ETIMEDOUT;
		n = verbs_poll(fd, conn, wc, ARRAY_SIZE(wc), sent ? 20 : 0);
		if (n < 0)
			return n;
		for (i = 0; i < n && !ret; i++) {
			if (wc_failed(&wc[i]))
				return -EIO;
			if (wc[i].opcode != KRDMA_OP_RECV) {
				sends_done++;
				continue;
			}
			if (!is_answer(a, &wc[i])) {
				ret = post_answer_recv(fd, conn, transport,
						       buf);
				continue;
			}
			answered = true;
			*answer = wc[i].imm_data;
		}
		if (!ret && !answered && loop_now_ms() >= next) {
			ret = verbs_post_one(fd, conn, &a->wr);
			sent++;
			next = loop_now_ms() + HELLO_REPEAT_MS;
		}
	}
	return ret;
}

/* UC, UD: a zero-length SEND_WITH_IMM of @imm (a hello, an END), asked. */
int bench_until_answer(int fd, uint32_t conn, const struct bench_opts *o,
		       const struct verbs_buf *buf, uint32_t imm,
		       uint32_t *answer)
{
	const struct bench_ask a = {
		.wr = { .wr_id = 2, .opcode = KRDMA_OP_SEND_WITH_IMM,
			.flags = KRDMA_WR_SIGNALED, .imm_data = imm },
		/* a hello's answer is the READY; an END's is not */
		.answer_ready = imm == KRDMA_BENCH_READY_IMM,
		.timeout_ms = o->timeout_s * 1000,
	};

	return ask_until_answer(fd, conn, o->transport, buf, &a, answer);
}

/* Disconnect @conn; it stays until its DISCONNECTED event destroys it. */
void bench_cm_disconnect(int fd, uint32_t conn)
{
	struct krdma_cm_disconnect d = { .size = sizeof(d), .handle = conn };

	krdma_ioctl_quiet(fd, KRDMA_CM_DISCONNECT, &d);
}

void bench_disconnect(int fd, uint32_t conn)
{
	bench_cm_disconnect(fd, conn);
	verbs_destroy(fd, conn);
}

