// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl send / write / read / atomic / copy: the clients of
 * "krdmactl serve" (protocol in xfer.h).  Each connects with
 * KRDMA_CM_CONNECT over the transport of -t, learns the server's buffer
 * from the accept's private data, does its operation, tells the server what
 * it did (XM_BYE) and disconnects.  Every wait is bounded by -T.  Over UC
 * and UD, where nothing is acknowledged, success is what the server
 * answers, never what the local completions say.
 *
 * send -n N sends a stream of N messages numbered by sequence and ends
 * with the server's tally: a message lost on the way is counted and named,
 * and the command fails.  copy survives a lost connection: it connects
 * again (--reconnect times, each within -T) and asks the server to resume
 * the file from the bytes it saved; the final SHA-256 check is the same.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <krdma.h>

#include "addr.h"
#include "krdmactl.h"
#include "loop.h"
#include "names.h"
#include "print.h"
#include "sha256.h"
#include "xfer.h"

enum {
	XC_RECV_WRID = 1,
	XC_SEND_WRID = 2,
	XC_RDMA_WRID = 4,
};

enum {
	OPT_DATA = 0x100,
	OPT_ADD,
	OPT_COMPARE,
	OPT_SWAP,
	OPT_RECONNECT,
	OPT_PROGRESS,
	OPT_RETRY,
	OPT_ZERO_COPY,
};

/* the buffer: XC_SLOTS receive slots, the send slot, the data */
#define XC_SLOTS 4
#define XC_SEND_OFF (XC_SLOTS * XFER_SLOT)
#define XC_DATA_OFF (XC_SEND_OFF + XFER_MSG_MAX)

struct xc_opts {
	const char *cmd;
	const char *usage;
	const char *host;
	const char *op_name;	/* atomic: fadd, cswap */
	const char *file;	/* copy: FILE; send: -f */
	const char *data;	/* send --data */
	uint64_t size;
	bool have_size;
	uint64_t offset;
	uint64_t add;
	bool have_add;
	uint64_t compare;
	bool have_compare;
	uint64_t swap;
	bool have_swap;
	uint32_t count;
	uint32_t port;		/* -p: HOST's port unless HOST names one */
	uint32_t reconnect;	/* copy: connections after the first */
	uint32_t retry;		/* RC: the QPs' retry_cnt (--retry) */
	bool have_retry;
	bool progress;		/* copy: a line on stderr per chunk */
	bool zero_copy;		/* copy: WRITE from the file's own pages */
	uint32_t timeout_s;
	uint32_t transport;
	uint32_t transports;	/* the ones the command can use, a mask */
	const char *needs;	/* what the others lack */
};

struct xc {
	const struct xc_opts *o;
	int fd;
	struct krdma_sockaddr dst;
	char peer[80];
	uint32_t conn;
	uint32_t dev_index;
	bool no_imm;		/* iWARP: the messages alone say it */
	struct xfer_adv adv;	/* host order */
	struct verbs_buf buf;
	uint64_t data_len;
	uint32_t max_msg;	/* bytes one control message may have */
	uint32_t wr_max;	/* --zero-copy: bytes one WRITE carries */
	unsigned int done;	/* XC_SEND_WRID, XC_RDMA_WRID completions seen */
	int64_t posted;		/* when the last WR was posted */
	bool shown;		/* the server's details printed (reconnects) */
	/* receives complete in the order they were posted, slot after slot */
	uint32_t recv_next;	/* the slot of the oldest unread reply */
	uint32_t recv_ready;	/* replies received, not read yet */
	uint32_t recv_len[XC_SLOTS];
	struct xfer_msg reply;
};

/* ---- options ---- */

static int xc_parse(int argc, char **argv, struct xc_opts *o,
		    const char *allowed, int npos)
{
	static const struct option long_opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "offset", required_argument, NULL, 'o' },
		{ "data", required_argument, NULL, OPT_DATA },
		{ "file", required_argument, NULL, 'f' },
		{ "add", required_argument, NULL, OPT_ADD },
		{ "compare", required_argument, NULL, OPT_COMPARE },
		{ "swap", required_argument, NULL, OPT_SWAP },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "transport", required_argument, NULL, 't' },
		{ "port", required_argument, NULL, 'p' },
		{ "reconnect", required_argument, NULL, OPT_RECONNECT },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "zero-copy", no_argument, NULL, OPT_ZERO_COPY },
		{ "retry", required_argument, NULL, OPT_RETRY },
		COMMON_LONG_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = o->cmd;
	int c, ret = 0, longidx;
	uint32_t mask;
	char name[32];

	while ((c = getopt_long(argc, argv, ":s:o:f:n:T:t:p:hj", long_opts,
				(longidx = -1, &longidx))) != -1) {
		if (c == 'h') {
			fputs(o->usage, stdout);
			return -1;
		}
		/* -p: every client connects to a port */
		if (c != ':' && c != '?' && c != 'p' && !opt_common(c) &&
		    !strchr(allowed, c < 0x100 ? c : 'A' + (c - OPT_DATA))) {
			err_msg("%s: option %s is not used by this command", cmd,
				opt_name(c, long_opts, longidx, name,
					 sizeof(name)));
			fputs(o->usage, stderr);
			return EXIT_USAGE;
		}
		switch (c) {
		case 'j':
		case OPT_COMMON_PRETTY:
			break;
		case 'p':
			ret = parse_u32(cmd, "-p/--port", optarg, 1, 65535,
					&o->port);
			break;
		case 's':
			o->have_size = true;
			/* one SGE's length, a __u32 */
			ret = parse_u64(cmd, "-s/--size", optarg, 1, UINT32_MAX,
					&o->size);
			break;
		case 'o':
			ret = parse_u64(cmd, "-o/--offset", optarg, 0,
					1ULL << 40, &o->offset);
			break;
		case OPT_DATA:
			o->data = optarg;
			break;
		case 'f':
			o->file = optarg;
			break;
		case OPT_ADD:
			o->have_add = true;
			ret = parse_u64(cmd, "--add", optarg, 0, UINT64_MAX,
					&o->add);
			break;
		case OPT_COMPARE:
			o->have_compare = true;
			ret = parse_u64(cmd, "--compare", optarg, 0,
					UINT64_MAX, &o->compare);
			break;
		case OPT_SWAP:
			o->have_swap = true;
			ret = parse_u64(cmd, "--swap", optarg, 0, UINT64_MAX,
					&o->swap);
			break;
		case 'n':
			ret = parse_u32(cmd, "-n/--count", optarg, 1, 1000000,
					&o->count);
			break;
		case 'T':
			ret = parse_u32(cmd, "-T/--timeout", optarg, 1, 3600,
					&o->timeout_s);
			break;
		case OPT_RECONNECT:
			ret = parse_u32(cmd, "--reconnect", optarg, 0, 100,
					&o->reconnect);
			break;
		case OPT_PROGRESS:
			o->progress = true;
			break;
		case OPT_ZERO_COPY:
			o->zero_copy = true;
			break;
		case OPT_RETRY:
			o->have_retry = true;
			ret = parse_u32(cmd, "--retry", optarg, 0, 7, &o->retry);
			break;
		case 't':
			ret = xfer_parse_transport(cmd, optarg, false, &mask);
			if (!ret)
				o->transport = ffs(mask) - 1;
			break;
		default:
			return opt_fail(cmd, c, argv, o->usage);
		}
		if (ret)
			return ret;
	}
	if (argc - optind < npos) {
		err_msg("%s: missing %s", cmd, npos == 2 && argc - optind == 0 ?
			(*o->file ? "OPERATION and HOST" : "FILE and HOST") :
			"HOST");
		fputs(o->usage, stderr);
		return EXIT_USAGE;
	}
	if (npos == 2) {
		o->op_name = argv[optind++];
		if (o->file && !*o->file)
			o->file = o->op_name;	/* copy */
	}
	o->host = argv[optind++];
	return opt_extra_args(cmd, argc, argv, o->usage);
}

/* ---- connection ---- */

static int xc_fail(struct xc *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int xc_fail(struct xc *x, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err_msg("%s: %s", x->o->cmd, msg);
	return -EIO;
}

static bool xc_is(const struct xc *x, uint32_t transport)
{
	return x->o->transport == transport;
}

/*
 * The server's accept private data, from our ESTABLISHED event (UD: the
 * SIDR reply's).
 */
static int xc_get_adv(struct xc *x)
{
	struct krdma_event evs[8];
	const struct xfer_adv *a;
	int64_t deadline = loop_now_ms() + 1000;
	int i, n;

	do {
		n = verbs_get_events(x->fd, evs, ARRAY_SIZE(evs), 100);
		if (n < 0) {
			krdma_report(KRDMA_GET_EVENTS, n);
			return n;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].type != KRDMA_EVENT_ESTABLISHED ||
			    evs[i].handle != x->conn)
				continue;
			a = (const void *)evs[i].private_data;
			if (evs[i].private_data_len < sizeof(*a) ||
			    be32toh(a->magic) != XFER_MAGIC)
				return xc_fail(x, "%s is not a krdmactl serve "
					       "(no buffer advertised)",
					       x->peer);
			if (be16toh(a->version) != XFER_VERSION)
				return xc_fail(x, "%s speaks protocol version "
					       "%u, not %u", x->peer,
					       be16toh(a->version),
					       XFER_VERSION);
			x->adv.fill = be16toh(a->fill);
			x->adv.addr = be64toh(a->addr);
			x->adv.rkey = be32toh(a->rkey);
			x->adv.max_msg = be32toh(a->max_msg);
			x->adv.length = be64toh(a->length);
			return 0;
		}
	} while (loop_now_ms() < deadline);
	return xc_fail(x, "no ESTABLISHED event for the connection");
}

static const char *xc_wrid_name(uint64_t wr_id)
{
	switch (wr_id) {
	case XC_RECV_WRID: return "receive";
	case XC_SEND_WRID: return "send";
	case XC_RDMA_WRID: return "rdma";
	}
	return "unknown";
}

/*
 * RETRY_EXC_ERR: how long the QP waited for an ACK, next to what its
 * attributes allow: (retry_cnt + 1) local ACK timeouts of 4.096 us *
 * 2^timeout (krdma's rdma_cm RC attributes, see XFER_CM_*).
 */
static void xc_retry_bound(const struct xc *x, const struct krdma_wc *wc)
{
	uint32_t retry = x->o->have_retry ? x->o->retry : XFER_CM_RETRY_CNT;
	uint64_t one_us = (4096ULL << XFER_CM_ACK_TIMEOUT) / 1000;
	uint64_t bound_us = (retry + 1) * one_us;

	err_msg("%s: the %s failed %lld ms after it was posted; the QP's "
		"bound: (retry_cnt %u + 1) x 4.096 us x 2^%u (timeout) = %llu "
		"ms", x->o->cmd, xc_wrid_name(wc->wr_id),
		(long long)(loop_now_ms() - x->posted), retry,
		XFER_CM_ACK_TIMEOUT, (unsigned long long)bound_us / 1000);
}

static int xc_take_wc(struct xc *x, const struct krdma_wc *wc)
{
	if (wc->status == 12 /* RETRY_EXC_ERR */ &&
	    xc_is(x, KRDMA_TRANSPORT_RC))
		xc_retry_bound(x, wc);
	if (wc->status)
		return xc_fail(x, "%s completion failed: %s (status %u, "
			       "vendor_err 0x%x)", xc_wrid_name(wc->wr_id),
			       wc_status_name(wc->status), wc->status,
			       wc->vendor_err);
	if (wc->wr_id != XC_RECV_WRID) {
		x->done |= wc->wr_id;
		return 0;
	}
	if (x->recv_ready >= XC_SLOTS)
		return xc_fail(x, "more receives completed than posted");
	x->recv_len[(x->recv_next + x->recv_ready) % XC_SLOTS] = wc->byte_len;
	x->recv_ready++;
	return 0;
}

static bool xc_have(const struct xc *x, unsigned int want)
{
	if ((want & XC_RECV_WRID) && !x->recv_ready)
		return false;
	want &= ~XC_RECV_WRID;
	return (x->done & want) == want;
}

/*
 * Wait until every bit of @want has completed (successfully), a receive
 * meaning one reply not read yet: 0, 1 when @deadline passed first (not
 * reported), or -errno.
 */
static int xc_wait_until(struct xc *x, unsigned int want, int64_t deadline)
{
	struct krdma_wc wcs[8];
	int64_t left;
	int i, n, ret;

	while (!xc_have(x, want)) {
		left = deadline - loop_now_ms();
		if (loop_stop)
			return xc_fail(x, "interrupted");
		if (left <= 0)
			return 1;
		n = verbs_poll(x->fd, x->conn, wcs, ARRAY_SIZE(wcs), left);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			krdma_report(KRDMA_POLL, n);
			return n;
		}
		for (i = 0; i < n; i++) {
			ret = xc_take_wc(x, &wcs[i]);
			if (ret)
				return ret;
		}
	}
	x->done &= ~want;
	return 0;
}

static int64_t xc_deadline(const struct xc *x)
{
	return loop_now_ms() + x->o->timeout_s * 1000;
}

static int xc_timed_out(struct xc *x, const char *what)
{
	return xc_fail(x, "timeout: no %s from %s in %u s%s", what, x->peer,
		       x->o->timeout_s, xc_is(x, KRDMA_TRANSPORT_RC) ? "" :
		       " (UC and UD messages may be lost)");
}

static int xc_wait(struct xc *x, unsigned int want)
{
	int ret = xc_wait_until(x, want, xc_deadline(x));

	return ret > 0 ? xc_timed_out(x, "completion") : ret;
}

static struct xfer_msg *xc_send_msg(struct xc *x)
{
	return (struct xfer_msg *)(x->buf.mem + XC_SEND_OFF);
}

/* Send the message in the send slot (plus @extra payload bytes). */
static int xc_send(struct xc *x, uint32_t extra, bool with_imm, uint32_t imm)
{
	struct krdma_wr wr = {
		.wr_id = XC_SEND_WRID,
		.opcode = with_imm ? KRDMA_OP_SEND_WITH_IMM : KRDMA_OP_SEND,
		.flags = KRDMA_WR_SIGNALED,
		.imm_data = with_imm ? imm : 0,
		.num_sge = 1,
		.sge[0] = { .buf_handle = x->buf.handle,
			    .offset = XC_SEND_OFF,
			    .length = sizeof(struct xfer_msg) + extra },
	};

	x->posted = loop_now_ms();
	if (verbs_post_one(x->fd, x->conn, &wr))
		return -EIO;
	return xc_wait(x, XC_SEND_WRID);
}

/* The oldest reply not read yet into x->reply, its slot reposted. */
static int xc_read_reply(struct xc *x)
{
	uint32_t slot = x->recv_next, len;
	const struct xfer_msg *r;
	const char *why;

	r = xfer_slot_msg(&x->buf, slot, x->o->transport, x->recv_len[slot],
			  &len);
	why = xfer_msg_check(r, len);
	if (why)
		return xc_fail(x, "%s", why);
	x->reply = *r;
	x->recv_next = (slot + 1) % XC_SLOTS;
	x->recv_ready--;
	if (xfer_post_slot(x->fd, x->conn, XC_RECV_WRID, &x->buf, slot,
			   x->o->transport))
		return -EIO;
	return 0;
}

/*
 * The reply to the request in the send slot, by @deadline: its type (in
 * x->reply, host order), 0 when @deadline passed first, or -errno.
 * Replies to other requests (late answers to an XM_HELLO sent again) are
 * dropped; any answer to an XM_HELLO will do.
 */
static int xc_await(struct xc *x, int64_t deadline)
{
	const struct xfer_msg *m = xc_send_msg(x);
	int ret;

	for (;;) {
		ret = xc_wait_until(x, XC_RECV_WRID, deadline);
		if (ret)
			return ret > 0 ? 0 : ret;
		ret = xc_read_reply(x);
		if (ret)
			return ret;
		if (be64toh(x->reply.arg) == be16toh(m->type) &&
		    (x->reply.seq == m->seq || m->type == htobe16(XM_HELLO)))
			return be16toh(x->reply.type);
	}
}

/* Send a request, wait for the reply (in x->reply, host-order type). */
static int xc_request(struct xc *x, uint32_t extra, bool with_imm,
		      uint32_t imm)
{
	int ret;

	ret = xc_send(x, extra, with_imm, imm);
	if (!ret)
		ret = xc_await(x, xc_deadline(x));
	return ret ? ret : xc_timed_out(x, "answer");
}

/*
 * The request in the send slot, answered: over UC and UD, where it or its
 * answer may be lost, sent again every XFER_RETRY_MS until an answer comes
 * (within -T).  The answer's type (x->reply), or -errno.
 */
static int xc_ask(struct xc *x, const char *what)
{
	int64_t deadline = xc_deadline(x), next;
	int ret;

	if (xc_is(x, KRDMA_TRANSPORT_RC))
		return xc_request(x, 0, false, 0);
	while (loop_now_ms() < deadline) {
		ret = xc_send(x, 0, false, 0);
		if (ret)
			return ret;
		next = loop_now_ms() + XFER_RETRY_MS;
		ret = xc_await(x, next < deadline ? next : deadline);
		if (ret)
			return ret;
	}
	return xc_timed_out(x, what);
}

/*
 * UC and UD: the server posts its receives once the accept has returned,
 * and a message that finds none is dropped: say hello until it answers.
 */
static int xc_hello(struct xc *x)
{
	struct xfer_msg *m = xc_send_msg(x);
	int64_t deadline = xc_deadline(x), next;
	uint32_t seq;
	int ret;

	for (seq = 0; loop_now_ms() < deadline; seq++) {
		xfer_msg_init(m, XM_HELLO);
		m->seq = htobe32(seq);
		ret = xc_send(x, 0, false, 0);
		next = loop_now_ms() + XFER_RETRY_MS;
		if (!ret)
			ret = xc_await(x, next < deadline ? next : deadline);
		if (ret > 0 && ret != XM_OK)
			return xc_fail(x, "%s answers %s to a hello: %s",
				       x->peer, xfer_msg_name(ret),
				       x->reply.text);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return xc_fail(x, "no answer from %s in %u s: is \"" PROG_NAME
		       " serve -t %s\" running there?", x->peer,
		       x->o->timeout_s, transport_name(x->o->transport));
}

/* The largest control message: the server's, and over UD the path MTU. */
static int xc_max_msg(struct xc *x)
{
	uint32_t mtu;

	x->max_msg = x->adv.max_msg;
	if (xc_is(x, KRDMA_TRANSPORT_UD)) {
		mtu = xfer_port_mtu(x->fd, x->dev_index);
		if (!mtu)
			return -ENODEV;
		if (mtu < x->max_msg)
			x->max_msg = mtu;
	}
	if (x->max_msg < sizeof(struct xfer_msg))
		return xc_fail(x, "messages of %u bytes cannot carry the "
			       "%zu-byte header", x->max_msg,
			       sizeof(struct xfer_msg));
	return 0;
}

static int xc_cm_connect(struct xc *x, uint16_t op)
{
	struct krdma_cm_connect cc = {
		.size = sizeof(cc),
		.flags = KRDMA_CONN_NOTIFY,
		.dst = x->dst,
		.transport = x->o->transport,
		.timeout_ms = x->o->timeout_s * 1000,
		.caps = { .max_send_wr = 8, .max_recv_wr = XC_SLOTS,
			  .max_send_sge = 1, .max_recv_sge = 1,
			  .cq_depth = 16 },
		.private_data_len = sizeof(struct xfer_hello),
	};
	struct xfer_hello hello = {
		.magic = htobe32(XFER_MAGIC),
		.version = htobe16(XFER_VERSION),
		.op = htobe16(op),
	};
	const char *t = transport_name(x->o->transport);
	int ret;

	memcpy(cc.private_data, &hello, sizeof(hello));
	if (x->o->have_retry) {
		/* the default 7 is "forever" on rxe: see uapi/krdma.h */
		cc.flags |= KRDMA_CONN_CM_TIMERS;
		cc.ack_timeout = XFER_CM_ACK_TIMEOUT;
		cc.retry_cnt = x->o->retry;
		cc.rnr_retry = XFER_CM_RNR_RETRY;
		cc.min_rnr_timer = XFER_CM_MIN_RNR_TIMER;
	}
	ret = krdma_ioctl_quiet(x->fd, KRDMA_CM_CONNECT, &cc);
	if (ret == -ECONNREFUSED)
		return xc_fail(x, "connection to %s refused (reject reason "
			       "%d): is \"" PROG_NAME " serve -t %s\" running "
			       "there?", x->peer, cc.reject_reason, t);
	if (ret)
		return xc_fail(x, "cannot connect to %s over %s: %s", x->peer,
			       t, strerror(-ret));
	x->conn = cc.handle;
	x->dev_index = cc.dev_index;
	return 0;
}

static int xc_check_range(struct xc *x, uint64_t off, uint64_t len)
{
	if (off > x->adv.length || len > x->adv.length - off)
		return xc_fail(x, "%" PRIu64 " bytes at offset %" PRIu64
			       " do not fit in the server's %" PRIu64
			       "-byte buffer", len, off, x->adv.length);
	return 0;
}

static int xc_connect(struct xc *x, uint16_t op, uint64_t data_len)
{
	uint64_t max_buf;
	uint32_t i;
	int ret;

	ret = xc_cm_connect(x, op);
	if (!ret)
		ret = xc_get_adv(x);
	if (!ret)
		ret = xc_max_msg(x);
	/* one-sided: what does not fit the server's buffer allocates nothing */
	if (!ret && (op == XFER_OP_WRITE || op == XFER_OP_READ ||
		     op == XFER_OP_ATOMIC))
		ret = xc_check_range(x, x->o->offset, data_len);
	if (ret)
		return ret;
	/* a copy's chunk is its own choice: one the device can register */
	if (op == XFER_OP_COPY) {
		max_buf = dev_max_buf(x->fd, x->dev_index);
		if (max_buf > XC_DATA_OFF && data_len > max_buf - XC_DATA_OFF)
			data_len = max_buf - XC_DATA_OFF;
	}
	x->data_len = data_len;
	x->no_imm = dev_is_iwarp(x->fd, x->dev_index);
	ret = verbs_buf_alloc(x->fd, x->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			      XC_DATA_OFF + (data_len ? data_len : 8), &x->buf);
	if (ret)
		return ret;
	for (i = 0; i < XC_SLOTS; i++)
		if (xfer_post_slot(x->fd, x->conn, XC_RECV_WRID, &x->buf, i,
				   x->o->transport))
			return -EIO;
	if (!x->shown) {
		x->shown = true;
		pr_str("server", x->peer);
		pr_str("transport", transport_name(x->o->transport));
		pr_u64("buffer_size", x->adv.length);
		pr_str("fill", x->adv.fill == XFER_FILL_ZERO ? "zero" :
		       "pattern");
	}
	return xc_is(x, KRDMA_TRANSPORT_RC) ? 0 : xc_hello(x);
}

/* Tell the server what we did, then disconnect (UD: nothing to end). */
static int xc_bye(struct xc *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int xc_bye(struct xc *x, const char *fmt, ...)
{
	struct krdma_cm_disconnect d = { .size = sizeof(d), .handle = x->conn };
	struct xfer_msg *m = xc_send_msg(x);
	va_list ap;
	int ret;

	xfer_msg_init(m, XM_BYE);
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
	ret = xc_send(x, 0, false, 0);
	if (!xc_is(x, KRDMA_TRANSPORT_UD))
		krdma_ioctl_quiet(x->fd, KRDMA_CM_DISCONNECT, &d);
	return ret;
}

/* One one-sided WR at @roff of the server's buffer, waited for. */
static int xc_rdma_sge(struct xc *x, uint32_t opcode,
		       const struct krdma_sge *sge, uint64_t roff,
		       uint64_t cmp_add, uint64_t swap)
{
	struct krdma_wr wr = {
		.wr_id = XC_RDMA_WRID,
		.opcode = opcode,
		.flags = KRDMA_WR_SIGNALED,
		.remote_addr = x->adv.addr + roff,
		.rkey = x->adv.rkey,
		.compare_add = cmp_add,
		.swap = swap,
		.num_sge = 1,
		.sge[0] = *sge,
	};

	x->posted = loop_now_ms();
	if (verbs_post_one(x->fd, x->conn, &wr))
		return -EIO;
	return xc_wait(x, XC_RDMA_WRID);
}

/* The same from @loff of the data in our own buffer. */
static int xc_rdma(struct xc *x, uint32_t opcode, uint64_t loff,
		   uint64_t roff, uint64_t len, uint64_t cmp_add,
		   uint64_t swap)
{
	struct krdma_sge sge = { .buf_handle = x->buf.handle,
				 .offset = XC_DATA_OFF + loff, .length = len };

	return xc_rdma_sge(x, opcode, &sge, roff, cmp_add, swap);
}

/*
 * --zero-copy: @len bytes of the file's mapping at @p, registered in place
 * (KRDMA_BUF_REG_USER; the device only reads them) and RDMA-written to the
 * start of the server's buffer, a WRITE per MR of the registration (a WR's
 * local bytes lie in one) and per max_msg_sz.  Unregistered at once: no
 * more than a chunk is pinned at a time (RLIMIT_MEMLOCK).  @num_mrs: out,
 * the MRs the registration was.
 */
static int xc_write_in_place(struct xc *x, const uint8_t *p, uint64_t len,
			     uint32_t *num_mrs)
{
	struct krdma_buf_reg_user r = {
		.size = sizeof(r),
		.dev_index = x->dev_index,
		.uaddr = (uintptr_t)p,
		.length = len,
	};
	struct krdma_sge sge = { 0 };
	uint64_t off, seg;
	int ret;

	if (!x->wr_max)
		x->wr_max = dev_max_msg(x->fd, x->dev_index) ?: 1U << 30;
	ret = krdma_ioctl(x->fd, KRDMA_BUF_REG_USER, &r);
	if (ret)
		return -EPROTO;	/* reported; connecting again would not help */
	*num_mrs = r.num_mrs;
	sge.buf_handle = r.handle;
	for (off = 0; off < len && !ret; off += seg) {
		seg = len - off;
		/* a WR's local bytes lie in one MR */
		if (r.num_mrs > 1 &&
		    seg > r.mr_length - (r.addr + off) % r.mr_length)
			seg = r.mr_length - (r.addr + off) % r.mr_length;
		if (seg > x->wr_max)
			seg = x->wr_max;
		sge.offset = off;
		sge.length = seg;
		ret = xc_rdma_sge(x, KRDMA_OP_RDMA_WRITE, &sge, off, 0, 0);
	}
	verbs_destroy(x->fd, r.handle);
	return ret;
}

static uint8_t *xc_data(struct xc *x)
{
	return x->buf.mem + XC_DATA_OFF;
}

/* ---- the operations ---- */

/*
 * The whole of a regular file, read to its end: a /proc file says a size
 * of 0 and has more.
 */
static int xc_read_file(struct xc *x, const char *path, uint8_t **data,
			uint64_t *len)
{
	size_t got = 0, room = XFER_MAX_PAYLOAD + 1;
	struct stat st;
	ssize_t n = 0;
	uint8_t *p;
	int fd, err;

	fd = xfer_open_file(x->o->cmd, path, &st);
	if (fd < 0)
		return fd;
	p = malloc(room);
	while (p && got < room) {
		n = read(fd, p + got, room - got);
		if (n < 0 && errno == EINTR && !loop_stop)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	err = n < 0 ? errno : p ? 0 : ENOMEM;
	close(fd);
	if (err || got > XFER_MAX_PAYLOAD) {
		free(p);
		if (err) {
			err_msg("%s: %s: %s", x->o->cmd, path, strerror(err));
			return -err;
		}
		err_msg("%s: %s: more than one message carries (%u bytes)",
			x->o->cmd, path, XFER_MAX_PAYLOAD);
		return -EMSGSIZE;
	}
	*data = p;
	*len = got;
	return 0;
}

/*
 * Does a message of @len payload bytes fit?  Over UD it must fit one packet
 * of the path MTU: a usage error (EXIT_USAGE) the server is told about.
 */
static int xc_check_msg(struct xc *x, uint64_t len)
{
	uint32_t max = x->max_msg - sizeof(struct xfer_msg);

	if (len <= max)
		return 0;
	if (!xc_is(x, KRDMA_TRANSPORT_UD))
		return xc_fail(x, "%" PRIu64 " bytes: the server takes at "
			       "most %u per message", len, max);
	err_msg("%s: -t ud: %" PRIu64 " bytes do not fit one UD message: "
		"the path MTU is %u bytes, %zu of them the header, so at most "
		"%u", x->o->cmd, len, x->max_msg, sizeof(struct xfer_msg),
		max);
	xc_bye(x, "nothing sent: %" PRIu64 " bytes are over the path MTU",
	       len);
	return EXIT_USAGE;
}

/*
 * send -n N: N messages of @len bytes (pattern seed = their seq), an
 * XM_SYNC after every XFER_STREAM_WINDOW, then the server's tally.  Any
 * message missing or damaged fails the command.
 */
static int xc_stream(struct xc *x, uint64_t len)
{
	uint32_t n = x->o->count, seq, crc;
	uint64_t got, lost;
	struct xfer_msg *m;
	int ret, type;

	for (seq = 0; seq < n; seq++) {
		m = xc_send_msg(x);
		xfer_msg_init(m, XM_SEND);
		m->seq = htobe32(seq);
		m->arg = htobe64(XFER_SEND_STREAM);
		xfer_pattern_fill((uint8_t *)(m + 1), seq, 0, len);
		crc = xfer_crc32(0, m + 1, len);
		m->length = htobe64(len);
		m->crc = htobe32(crc);
		ret = xc_send(x, len, !x->no_imm, seq);
		if (ret)
			return ret;
		if ((seq + 1) % XFER_STREAM_WINDOW && seq + 1 < n)
			continue;
		/* the server has taken these: its receives are posted again */
		m = xc_send_msg(x);
		xfer_msg_init(m, XM_SYNC);
		m->seq = htobe32(seq);
		type = xc_ask(x, "answer to a sync");
		if (type < 0)
			return type;
		if (type != XM_OK)
			return xc_fail(x, "%s answers %s to a sync: %s",
				       x->peer, xfer_msg_name(type),
				       x->reply.text);
	}
	m = xc_send_msg(x);
	xfer_msg_init(m, XM_TALLY);
	m->seq = htobe32(n);
	m->length = htobe64(n);
	type = xc_ask(x, "tally");
	if (type < 0)
		return type;
	got = be64toh(x->reply.offset);
	lost = be64toh(x->reply.length);
	pr_obj_begin("stream");
	pr_u64("messages", n);
	pr_u64("bytes_each", len);
	pr_u64("received", got);
	pr_u64("lost", lost);
	pr_str("result", xfer_msg_name(type));
	if (x->reply.text[0])
		pr_str("reply", x->reply.text);
	pr_obj_end();
	if (type != XM_OK) {
		err_msg("%s: the server reports %s: %s", x->o->cmd,
			xfer_msg_name(type), x->reply.text);
		return -EBADMSG;
	}
	if (got != n || lost)
		return xc_fail(x, "the server says OK but counts %" PRIu64
			       " of %u", got, n);
	return xc_bye(x, "stream of %u messages of %" PRIu64 " bytes done",
		      n, len);
}

static int xc_do_send(struct xc *x)
{
	const struct xc_opts *o = x->o;
	uint8_t *payload = NULL;
	struct xfer_msg *m;
	uint64_t len = o->have_size ? o->size : 64;
	uint32_t crc;
	int ret, type;

	if (o->data) {
		len = strlen(o->data);
	} else if (o->file) {
		ret = xc_read_file(x, o->file, &payload, &len);
		if (ret)
			return ret;
	}
	ret = xc_connect(x, XFER_OP_SEND, 0);
	if (!ret)
		ret = xc_check_msg(x, len);
	if (ret)
		goto out;
	if (o->count > 1) {
		ret = xc_stream(x, len);
		goto out;
	}
	m = xc_send_msg(x);
	xfer_msg_init(m, XM_SEND);
	if (o->data)
		memcpy(m + 1, o->data, len);
	else if (payload)
		memcpy(m + 1, payload, len);
	else
		xfer_pattern_fill((uint8_t *)(m + 1), 0, 0, len);
	crc = xfer_crc32(0, m + 1, len);
	m->length = htobe64(len);
	m->crc = htobe32(crc);
	type = xc_request(x, len, false, 0);
	if (type < 0) {
		ret = type;
		goto out;
	}
	pr_obj_begin("send");
	pr_u64("bytes", len);
	pr_hex("crc32", crc);
	pr_str("result", xfer_msg_name(type));
	if (x->reply.text[0])
		pr_str("reply", x->reply.text);
	pr_obj_end();
	ret = type == XM_OK ? 0 : -EBADMSG;
	if (!ret)
		ret = xc_bye(x, "send of %" PRIu64 " bytes done", len);
out:
	free(payload);
	return ret;
}

static int xc_do_write(struct xc *x)
{
	const struct xc_opts *o = x->o;
	uint64_t len = o->have_size ? o->size : 4096;
	uint64_t seed;
	struct xfer_msg *m;
	uint32_t crc;
	int ret, type;

	ret = xc_connect(x, XFER_OP_WRITE, len);
	if (ret)
		return ret;
	seed = ((uint64_t)getpid() << 32 ^ (uint64_t)loop_now_ms()) | 1;
	xfer_pattern_fill(xc_data(x), seed, o->offset, len);
	crc = xfer_crc32(0, xc_data(x), len);
	ret = xc_rdma(x, KRDMA_OP_RDMA_WRITE, 0, o->offset, len, 0, 0);
	if (ret)
		return ret;
	m = xc_send_msg(x);
	xfer_msg_init(m, XM_WRITTEN);
	m->offset = htobe64(o->offset);
	m->length = htobe64(len);
	m->arg = htobe64(seed);
	m->crc = htobe32(crc);
	type = xc_request(x, 0, !x->no_imm, crc);
	if (type < 0)
		return type;
	pr_obj_begin("write");
	pr_u64("bytes", len);
	pr_u64("offset", o->offset);
	pr_hex("crc32", crc);
	pr_str("result", xfer_msg_name(type));
	if (x->reply.text[0])
		pr_str("reply", x->reply.text);
	pr_obj_end();
	if (type != XM_OK)
		return -EBADMSG;
	return xc_bye(x, "write of %" PRIu64 " bytes at %" PRIu64 " done",
		      len, o->offset);
}

static int xc_do_read(struct xc *x)
{
	const struct xc_opts *o = x->o;
	uint64_t len = o->have_size ? o->size : 4096;
	bool zero;
	int64_t bad;
	uint32_t crc;
	int ret;

	ret = xc_connect(x, XFER_OP_READ, len);
	if (ret)
		return ret;
	memset(xc_data(x), 0xa5, len);
	ret = xc_rdma(x, KRDMA_OP_RDMA_READ, 0, o->offset, len, 0, 0);
	if (ret)
		return ret;
	zero = x->adv.fill == XFER_FILL_ZERO;
	bad = xfer_pattern_check(xc_data(x), 0, o->offset, len, zero);
	crc = xfer_crc32(0, xc_data(x), len);
	pr_obj_begin("read");
	pr_u64("bytes", len);
	pr_u64("offset", o->offset);
	pr_hex("crc32", crc);
	pr_str("result", bad < 0 ? "OK" : "BAD");
	if (bad >= 0) {
		pr_u64("mismatch_at", o->offset + bad);
		pr_hex("got", xc_data(x)[bad]);
		pr_hex("want", zero ? 0 :
		       xfer_pattern_byte(0, o->offset + bad));
	}
	pr_obj_end();
	ret = xc_bye(x, "read of %" PRIu64 " bytes at %" PRIu64 ": %s", len,
		     o->offset, bad < 0 ? "OK" : "BAD");
	if (bad >= 0)
		err_msg("%s: the data read differs from the server's fill at "
			"offset %" PRIu64, o->cmd, o->offset + bad);
	return bad >= 0 ? -EBADMSG : ret;
}

static int xc_do_atomic(struct xc *x)
{
	const struct xc_opts *o = x->o;
	bool fadd = !strcmp(o->op_name, "fadd");
	uint64_t first = 0, old = 0;
	uint32_t i, swapped = 0;
	int ret;

	ret = xc_connect(x, XFER_OP_ATOMIC, 8);
	if (ret)
		return ret;
	for (i = 0; i < o->count; i++) {
		ret = xc_rdma(x, fadd ? KRDMA_OP_ATOMIC_FETCH_ADD :
			      KRDMA_OP_ATOMIC_CMP_SWP, 0, o->offset, 8,
			      fadd ? o->add : o->compare, o->swap);
		if (ret)
			return ret;
		memcpy(&old, xc_data(x), 8);
		if (!i)
			first = old;
		if (!fadd && old == o->compare)
			swapped++;
	}
	pr_obj_begin(o->op_name);
	pr_u64("offset", o->offset);
	if (fadd)
		pr_u64_str("add", o->add);
	else {
		pr_u64_str("compare", o->compare);
		pr_u64_str("swap", o->swap);
	}
	pr_u64("count", o->count);
	pr_u64_str("old", first);
	if (o->count > 1)
		pr_u64_str("last_old", old);
	if (!fadd)
		pr_str("swapped", swapped == o->count ? "yes" :
		       swapped ? "partly" : "no");
	pr_obj_end();
	return xc_bye(x, "%s x%u at %" PRIu64 ": old %" PRIu64, o->op_name,
		      o->count, o->offset, first);
}

struct xc_file {
	int fd;
	const char *base;
	uint64_t size;
	const uint8_t *map;	/* --zero-copy: the file, mapped */
	uint8_t digest[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	uint32_t chunks;	/* written over the last connection */
	uint64_t resumed_at;	/* where the server told us to go on */
};

/*
 * Bytes [@done, @done + @len) of the file to the server's buffer; @num_mrs:
 * out, the MRs a zero-copy chunk was (0: staged).
 */
static int xc_write_chunk(struct xc *x, const struct xc_file *f,
			  uint64_t done, uint64_t len, uint32_t *num_mrs)
{
	struct stat st;
	ssize_t n;

	*num_mrs = 0;
	if (f->map) {
		/* past a shrunk file's end the mapping is SIGBUS */
		if (fstat(f->fd, &st) || (uint64_t)st.st_size != f->size) {
			xc_fail(x, "%s: changed during the copy", x->o->file);
			return -EPROTO;
		}
		return xc_write_in_place(x, f->map + done, len, num_mrs);
	}
	n = pread(f->fd, xc_data(x), len, done);
	if (n != (ssize_t)len) {
		xc_fail(x, "%s: read failed", x->o->file);
		return -EPROTO;
	}
	return xc_rdma(x, KRDMA_OP_RDMA_WRITE, 0, 0, len, 0, 0);
}

/*
 * The copy over one connection: the server's XM_DONE answer (XM_GOOD,
 * XM_BAD), -EPROTO when the server refused something (connecting again
 * would not help) or another -errno when the connection failed.  It asks
 * to resume: the server says where it stands.
 */
static int xc_copy_once(struct xc *x, struct xc_file *f)
{
	const struct xc_opts *o = x->o;
	uint64_t done, chunk_max, len;
	struct xfer_msg *m;
	uint32_t seq, num_mrs;
	int ret, type;

	/*
	 * local staging of one chunk: at most the server's buffer; in place
	 * (--zero-copy), all of the server's buffer and no staging
	 */
	chunk_max = f->size < XFER_DEFAULT_SIZE ? f->size : XFER_DEFAULT_SIZE;
	ret = xc_connect(x, XFER_OP_COPY, chunk_max && !f->map ? chunk_max : 1);
	if (ret)
		return ret;
	if (f->map)
		chunk_max = f->size;
	if (chunk_max > x->adv.length)
		chunk_max = x->adv.length;
	if (chunk_max > x->data_len && !f->map)
		chunk_max = x->data_len;
	m = xc_send_msg(x);
	xfer_msg_init(m, XM_FILE);
	m->length = htobe64(f->size);
	m->arg = htobe64(XFER_FILE_RESUME);
	memcpy(m->digest, f->digest, sizeof(f->digest));
	xfer_msg_text(m, "%s", f->base);
	type = xc_request(x, 0, false, 0);
	if (type < 0)
		return type;
	if (type != XM_NEXT) {
		xc_fail(x, "server refused %s: %s", f->base, x->reply.text);
		return -EPROTO;
	}
	done = be64toh(x->reply.offset);
	seq = be64toh(x->reply.length);
	if (done > f->size) {
		xc_fail(x, "the server holds %" PRIu64 " bytes of a %" PRIu64
			"-byte file", done, f->size);
		return -EPROTO;
	}
	if (done || seq) {
		f->resumed_at = done;
		fprintf(stderr, "%s: resuming %s at byte %" PRIu64 " (chunk "
			"%u), as the server says\n", o->cmd, f->base, done,
			seq);
	}
	f->chunks = seq;
	while (done < f->size) {
		len = f->size - done < chunk_max ? f->size - done : chunk_max;
		ret = xc_write_chunk(x, f, done, len, &num_mrs);
		if (ret)
			return ret;
		m = xc_send_msg(x);
		xfer_msg_init(m, XM_CHUNK);
		m->seq = htobe32(seq);
		m->offset = htobe64(done);
		m->length = htobe64(len);
		m->crc = htobe32(xfer_crc32(0, f->map ? f->map + done :
					    xc_data(x), len));
		type = xc_request(x, 0, false, 0);
		if (type < 0)
			return type;
		if (type != XM_NEXT) {
			xc_fail(x, "server stopped at chunk %u: %s", seq,
				x->reply.text);
			return -EPROTO;
		}
		done += len;
		seq++;
		f->chunks = seq;
		if (o->progress && num_mrs)
			fprintf(stderr, "%s: chunk %u done, %" PRIu64 " of %"
				PRIu64 " bytes, zero copy in %u MRs\n", o->cmd,
				seq - 1, done, f->size, num_mrs);
		else if (o->progress)
			fprintf(stderr, "%s: chunk %u done, %" PRIu64 " of %"
				PRIu64 " bytes\n", o->cmd, seq - 1, done,
				f->size);
	}
	m = xc_send_msg(x);
	xfer_msg_init(m, XM_DONE);
	m->length = htobe64(f->size);
	return xc_request(x, 0, false, 0);
}

/* After a lost connection: nothing of it left, ready to connect again. */
static void xc_reset(struct xc *x)
{
	struct krdma_event evs[8];

	verbs_buf_free(x->fd, &x->buf);
	if (x->conn)
		verbs_destroy(x->fd, x->conn);
	x->conn = 0;
	while (verbs_get_events(x->fd, evs, ARRAY_SIZE(evs), 0) > 0)
		;
	x->done = 0;
	x->recv_next = 0;
	x->recv_ready = 0;
}

/*
 * --zero-copy: the file mapped shared and read-only, so that its pages in
 * the page cache are what the device reads.  Its digest was read through
 * the same cache: a file that changes during the copy fails the check.
 */
static int xc_map_file(struct xc *x, struct xc_file *f)
{
	const struct xc_opts *o = x->o;
	void *map;

	if (!(krdma_features(x->fd) & KRDMA_FEATURE_BUFFER_MRS)) {
		err_msg("%s: --zero-copy: this krdma.ko registers no user "
			"buffer of several MRs (see \"" PROG_NAME " version\")",
			o->cmd);
		return -EOPNOTSUPP;
	}
	map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (map == MAP_FAILED) {
		err_msg("%s: --zero-copy: cannot map %s: %s", o->cmd, o->file,
			strerror(errno));
		return -errno;
	}
	f->map = map;
	return 0;
}

static int xc_do_copy(struct xc *x)
{
	const struct xc_opts *o = x->o;
	struct xc_file f = { .fd = -1 };
	struct sha256_ctx sha;
	struct stat st;
	uint32_t again = 0;
	uint64_t hashed = 0;
	ssize_t n = 0;
	int ret;
	uint8_t *tmp;

	f.base = strrchr(o->file, '/');
	f.base = f.base ? f.base + 1 : o->file;
	if (!*f.base || strlen(f.base) >= XFER_TEXT_MAX) {
		err_msg("%s: %s: no usable file name", o->cmd, o->file);
		return -EINVAL;
	}
	f.fd = xfer_open_file(o->cmd, o->file, &st);
	if (f.fd < 0)
		return f.fd;
	f.size = st.st_size;
	/* the digest first: what the receiver must end up with */
	tmp = malloc(1 << 16);
	if (!tmp) {
		close(f.fd);
		return -ENOMEM;
	}
	sha256_init(&sha);
	while (!loop_stop && (n = read(f.fd, tmp, 1 << 16)) > 0) {
		sha256_update(&sha, tmp, n);
		hashed += n;
	}
	ret = loop_stop ? -EINTR : n < 0 ? -errno : 0;
	free(tmp);
	if (ret) {
		err_msg("%s: %s: %s", o->cmd, o->file, loop_stop ?
			"interrupted" : strerror(-ret));
		close(f.fd);
		return ret;
	}
	/* the copy goes by the size: a file that says another has none */
	if (hashed != f.size) {
		err_msg("%s: %s: %" PRIu64 " bytes read, its size says %" PRIu64
			" (it changed, or is not a file of data)", o->cmd,
			o->file, hashed, f.size);
		close(f.fd);
		return -EIO;
	}
	sha256_final(&sha, f.digest);
	sha256_hex(f.digest, f.hex);
	if (o->zero_copy && f.size) {
		ret = xc_map_file(x, &f);
		if (ret) {
			close(f.fd);
			return ret;
		}
	}

	for (;;) {
		ret = xc_copy_once(x, &f);
		if (ret >= 0 || ret == -EPROTO || loop_stop ||
		    again >= o->reconnect)
			break;
		again++;
		fprintf(stderr, "%s: the connection to %s is lost; connecting "
			"again (%u of %u)\n", o->cmd, x->peer, again,
			o->reconnect);
		xc_reset(x);
	}
	if (ret < 0) {
		if (ret != -EPROTO && again)
			err_msg("%s: %s not copied: the connection was lost "
				"and %u new ones did not finish it", o->cmd,
				f.base, again);
		goto out;
	}
	pr_obj_begin("copy");
	pr_str("file", f.base);
	pr_u64("bytes", f.size);
	pr_u64("chunks", f.chunks);
	pr_str("buffer", f.map ? "zero-copy" : "staged");
	pr_u64("reconnects", again);
	if (again)
		pr_u64("resumed_at", f.resumed_at);
	pr_str("sha256", f.hex);
	pr_str("result", xfer_msg_name(ret));
	if (x->reply.text[0])
		pr_str("reply", x->reply.text);
	pr_obj_end();
	if (ret != XM_GOOD) {
		err_msg("%s: the server reports %s: %s", o->cmd,
			xfer_msg_name(ret), x->reply.text);
		ret = -EBADMSG;
		goto out;
	}
	ret = xc_bye(x, "copy of %s done", f.base);
out:
	if (f.map)
		munmap((void *)f.map, f.size);
	close(f.fd);
	return ret;
}

/* ---- the commands ---- */

/* What the command does is not there over -t: refused before connecting. */
static int xc_check_transport(const struct xc_opts *o)
{
	if (o->transports & 1U << o->transport)
		return 0;
	err_msg("%s: no %s over -t %s: %s only", o->cmd, o->needs,
		transport_name(o->transport),
		o->transports & 1U << KRDMA_TRANSPORT_UC ? "RC and UC" : "RC");
	return EXIT_USAGE;
}

static int xc_run(struct xc_opts *o, int argc, char **argv,
		  const char *allowed, int npos, int (*fn)(struct xc *))
{
	struct xc x = { .o = o };
	int ret;

	o->timeout_s = XFER_DEFAULT_TIMEOUT;
	o->count = 1;
	ret = xc_parse(argc, argv, o, allowed, npos);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = xc_check_transport(o);
	if (ret)
		return ret;
	if (o->have_retry && o->transport != KRDMA_TRANSPORT_RC) {
		err_msg("%s: --retry is for -t rc (%s has no retries)", o->cmd,
			transport_name(o->transport));
		return EXIT_USAGE;
	}
	if (fn == xc_do_atomic) {
		if (strcmp(o->op_name, "fadd") && strcmp(o->op_name, "cswap")) {
			err_msg("%s: \"%s\" is not fadd or cswap", o->cmd,
				o->op_name);
			return EXIT_USAGE;
		}
		if (o->offset & 7) {
			err_msg("%s: -o/--offset: %" PRIu64 " is not 8-byte "
				"aligned", o->cmd, o->offset);
			return EXIT_USAGE;
		}
		if (!strcmp(o->op_name, "fadd") &&
		    (o->have_compare || o->have_swap)) {
			err_msg("%s: --compare/--swap: only for cswap", o->cmd);
			return EXIT_USAGE;
		}
		if (!strcmp(o->op_name, "cswap") && o->have_add) {
			err_msg("%s: --add: only for fadd", o->cmd);
			return EXIT_USAGE;
		}
		if (!strcmp(o->op_name, "cswap") &&
		    (!o->have_compare || !o->have_swap)) {
			err_msg("%s: cswap needs --compare and --swap", o->cmd);
			return EXIT_USAGE;
		}
		if (!o->have_add)
			o->add = 1;
	}
	if (fn == xc_do_send) {
		if ((o->data != NULL) + (o->file != NULL) + o->have_size > 1) {
			err_msg("%s: -s/--size, --data and -f/--file exclude "
				"each other", o->cmd);
			return EXIT_USAGE;
		}
		if (o->have_size && o->size > XFER_MAX_PAYLOAD) {
			err_msg("%s: -s/--size: %" PRIu64 " is out of range "
				"1..%u", o->cmd, o->size, XFER_MAX_PAYLOAD);
			return EXIT_USAGE;
		}
		if (o->data && strlen(o->data) > XFER_MAX_PAYLOAD) {
			err_msg("%s: --data: longer than %u bytes", o->cmd,
				XFER_MAX_PAYLOAD);
			return EXIT_USAGE;
		}
		/* a stream's messages carry a pattern the server checks */
		if (o->count > 1 && (o->data || o->file)) {
			err_msg("%s: -n/--count sends a stream of pattern "
				"messages; --data and -f/--file send one",
				o->cmd);
			return EXIT_USAGE;
		}
	}
	ret = addr_parse(o->cmd, "HOST", o->host,
			 o->port ?: XFER_DEFAULT_PORT, &x.dst);
	if (ret)
		return ret;
	addr_format(&x.dst, x.peer, sizeof(x.peer));
	loop_catch_signals();
	x.fd = krdma_open();
	if (x.fd < 0) {
		krdma_report_open(x.fd);
		return 1;
	}
	pr_obj_begin(NULL);
	ret = fn(&x);
	pr_obj_end();
	verbs_buf_free(x.fd, &x.buf);
	/* closing the fd destroys the connection */
	close(x.fd);
	return ret == EXIT_USAGE ? EXIT_USAGE : ret ? 1 : 0;
}

#define XC_COMMON_HELP							\
	"  -T, --timeout SECS   give up after SECS: connect, each completion\n" \
	"                       (default 10)\n"				\
	"      --retry N        rc: transport retries of both QPs, 0-7\n"	\
	"                       (default 7, which rxe retries forever)\n"	\
	"  -p, --port N         the server's port when HOST names none\n" \
	"                       (default 18516)\n"			\
	"  -j, --json           JSON output\n"				\
	"      --pretty         pretty-printed JSON\n"			\
	"  -h, --help           this help\n"				\
	"\n"								\
	"HOST[:PORT] is where \"" PROG_NAME " serve -t T\" listens (default\n" \
	"port 18516).  Over uc and ud nothing is acknowledged: the client\n" \
	"says hello until the server answers, and succeeds only on the\n" \
	"server's answer.  Exit status 0 on success, 1 on any failure, 2 on\n" \
	"bad usage (an operation the transport lacks included).\n"

/* -t, with the transports the command can use */
#define XC_T_HELP(which)						\
	"  -t, --transport T    rdma_cm transport: " which "\n"

static const char send_usage[] =
	"Usage: " PROG_NAME " send [OPTIONS] HOST[:PORT]\n"
	"SEND one message to " PROG_NAME " serve, which checks its length and\n"
	"CRC-32 and answers OK or BAD.\n"
	"\n"
	"  -s, --size N         N bytes of the known pattern (default 64,\n"
	"                       at most 65536)\n"
	"      --data STRING    send STRING instead\n"
	"  -f, --file FILE      send FILE's contents instead (<= 65536 bytes)\n"
	"  -n, --count N        a stream of N messages (-s bytes each,\n"
	"                       numbered): the server counts what arrives by\n"
	"                       sequence number and tells which never came;\n"
	"                       any loss fails the command\n"
	XC_T_HELP("rc (default), uc or ud; over ud\n"
		  "                       the payload and a 200-byte header must\n"
		  "                       fit the path MTU (else exit 2)")
	XC_COMMON_HELP;

static const char write_usage[] =
	"Usage: " PROG_NAME " write [OPTIONS] HOST[:PORT]\n"
	"RDMA WRITE a known pattern into the buffer of " PROG_NAME " serve, then\n"
	"SEND_WITH_IMM what was written; the server checks it, answers OK or\n"
	"BAD.\n"
	"\n"
	"  -s, --size N         bytes (default 4096)\n"
	"  -o, --offset N       offset in the server's buffer (default 0)\n"
	XC_T_HELP("rc (default) or uc")
	XC_COMMON_HELP;

static const char read_usage[] =
	"Usage: " PROG_NAME " read [OPTIONS] HOST[:PORT]\n"
	"RDMA READ from the buffer of " PROG_NAME " serve and check it holds\n"
	"what the server filled it with at start.\n"
	"\n"
	"  -s, --size N         bytes (default 4096)\n"
	"  -o, --offset N       offset in the server's buffer (default 0)\n"
	XC_T_HELP("rc only")
	XC_COMMON_HELP;

static const char atomic_usage[] =
	"Usage: " PROG_NAME " atomic fadd|cswap [OPTIONS] HOST[:PORT]\n"
	"An 8-byte atomic on the buffer of " PROG_NAME " serve; prints the old\n"
	"value (host byte order).\n"
	"\n"
	"      --add N          fadd: the addend (default 1)\n"
	"      --compare C      cswap: the expected value\n"
	"      --swap S         cswap: the value stored if it matched\n"
	"  -o, --offset N       offset, 8-byte aligned (default 0)\n"
	"  -n, --count N        repeat N times (default 1); prints the first\n"
	"                       and last old value\n"
	XC_T_HELP("rc only")
	XC_COMMON_HELP;

static const char copy_usage[] =
	"Usage: " PROG_NAME " copy [OPTIONS] FILE HOST[:PORT]\n"
	"Copy FILE to " PROG_NAME " serve --save DIR: a header with the name,\n"
	"length and SHA-256, then RDMA WRITEs of at most the server's buffer\n"
	"each, then DONE; the server checks the digest of what it saved and\n"
	"answers GOOD (exit 0) or BAD (exit 1).  A lost connection (a failed\n"
	"completion, no answer within -T) is made again and the copy resumes\n"
	"from the bytes the server saved; the digest check is the same.\n"
	"\n"
	"      --reconnect N    connect again at most N times (default 3)\n"
	"      --progress       a line on stderr per chunk\n"
	"      --zero-copy      RDMA WRITE from the file's own pages, mapped and\n"
	"                       registered a chunk at a time, a chunk being all\n"
	"                       of the server's buffer (pinned: RLIMIT_MEMLOCK,\n"
	"                       ulimit -l, must allow that much)\n"
	XC_T_HELP("rc (default) or uc")
	XC_COMMON_HELP;

#define XC_RC (1U << KRDMA_TRANSPORT_RC)
#define XC_UC (1U << KRDMA_TRANSPORT_UC)
#define XC_UD (1U << KRDMA_TRANSPORT_UD)

/* allowed: option letters; long-only ones as 'A' + (OPT_x - OPT_DATA) */
int cmd_send(int argc, char **argv)
{
	struct xc_opts o = { .cmd = "send", .usage = send_usage,
			     .transports = XC_RC | XC_UC | XC_UD };

	return xc_run(&o, argc, argv, "sfATtnG", 1, xc_do_send);
}

int cmd_write(int argc, char **argv)
{
	struct xc_opts o = { .cmd = "write", .usage = write_usage,
			     .transports = XC_RC | XC_UC,
			     .needs = "RDMA WRITE" };

	return xc_run(&o, argc, argv, "soTtG", 1, xc_do_write);
}

int cmd_read(int argc, char **argv)
{
	struct xc_opts o = { .cmd = "read", .usage = read_usage,
			     .transports = XC_RC, .needs = "RDMA READ" };

	return xc_run(&o, argc, argv, "soTtG", 1, xc_do_read);
}

int cmd_atomic(int argc, char **argv)
{
	/* .file "-": marks the first argument as OPERATION, not FILE */
	struct xc_opts o = { .cmd = "atomic", .usage = atomic_usage,
			     .file = "-", .transports = XC_RC,
			     .needs = "atomics" };

	return xc_run(&o, argc, argv, "BCDonTtG", 2, xc_do_atomic);
}

int cmd_copy(int argc, char **argv)
{
	struct xc_opts o = { .cmd = "copy", .usage = copy_usage,
			     .file = "", .reconnect = 3,
			     .transports = XC_RC | XC_UC,
			     .needs = "RDMA WRITE" };

	return xc_run(&o, argc, argv, "TtEFGH", 2, xc_do_copy);
}
