// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl rping: RDMA READ/WRITE ping over an rdma_cm connection, wire
 * compatible with rdma-core's rping (librdmacm/examples/rping.c, v44): the
 * same port (7174), the same struct rping_rdma_info advertisements sent
 * with SEND, the same data ("rdma-ping-%d: " and a rotating A..z pattern,
 * NUL at the end) and the same -v lines.
 *
 * One ping, as rping's state machine runs it:
 *
 *   client                                server
 *   SEND adv(start buffer) ------------->  RDMA READ the start buffer
 *                          <-------------  SEND go-ahead (16 zero bytes)
 *   SEND adv(rdma buffer)  ------------->  RDMA WRITE what it read
 *                          <-------------  SEND go-ahead
 *   -V: compare the two buffers
 *
 * The client ends after COUNT pings (0: forever) with a disconnect; the
 * server serves one client until it disconnects.  rping posts its first
 * RECV before accepting, and so must we: iWARP has no RNR retry, and a
 * first advertisement that finds no receive ends the connection.  A krdma
 * connection gets its QP in KRDMA_CM_ACCEPT, so the server's receives go to
 * an SRQ made before it.  Where no SRQ can be had the first one is posted
 * right after the accept: on InfiniBand or RoCE an advertisement that beats
 * it is retried by the peer (RNR, rnr_retry 7); on iWARP it may end the
 * connection, and the server warns of that.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <krdma.h>

#include "addr.h"
#include "krdmactl.h"
#include "loop.h"
#include "names.h"
#include "print.h"
#include "verbs.h"

#define RPING_PORT 7174
#define RPING_DEFAULT_SIZE 64
#define RPING_BUFSIZE (64 * 1024)
#define RPING_MSG_FMT "rdma-ping-%d: "
/* rping's sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT) */
#define RPING_MIN_BUFSIZE (sizeof("2147483647") + sizeof(RPING_MSG_FMT))
#define RPING_SQ_DEPTH 16
#define RPING_DEFAULT_TIMEOUT 10
#define RPING_POLL_BATCH 8
#define RPING_EVENT_BATCH 8
#define RP_WC_WR_FLUSH_ERR 5	/* IB_WC_WR_FLUSH_ERR */

/* rping's struct rping_rdma_info, big endian on the wire */
struct rping_rdma_info {
	uint64_t buf;
	uint32_t rkey;
	uint32_t size;
} __attribute__((packed));

enum {
	RP_WR_RECV = 1,
	RP_WR_SEND,
	RP_WR_READ,
	RP_WR_WRITE,
};

static const char rping_usage[] =
	"Usage: " PROG_NAME " rping [OPTIONS]\n"
	"RDMA READ/WRITE ping over rdma_cm with rdma-core's rping or another\n"
	PROG_NAME " rping: with -s wait for a client, else connect to the\n"
	"server at -a ADDR.\n"
	"\n"
	"  -s, --server           server side\n"
	"  -a, --addr ADDR        server: address to listen on (default any\n"
	"                         IPv4 address); client: the server (needed)\n"
	"  -p, --port N           port (default 7174)\n"
	"  -C, --count N          pings (default 0: forever); the server\n"
	"                         serves until the client disconnects and then\n"
	"                         fails unless it served exactly N\n"
	"  -S, --size N           ping data bytes, 26 ... 65535 (default 64);\n"
	"                         the server reads at most its own size\n"
	"  -V, --validate         client: compare the data written back with\n"
	"                         what it sent; server: check that the data\n"
	"                         read is rping's pattern for that ping\n"
	"  -v, --verbose          print each ping's data, as rping -v\n"
	"  -q, --quiet            no closing summary line\n"
	"  -d, --device NAME      server: the RDMA device the listen address\n"
	"                         belongs to (default: found by the address,\n"
	"                         or the only device)\n"
	"  -T, --timeout SECS     give up after SECS without progress: the\n"
	"                         connection, each message and completion; 0\n"
	"                         waits forever, but for the handshake, which\n"
	"                         the kernel bounds at 5 s (default 10)\n"
	"  -j, --json             JSON output\n"
	"      --pretty           pretty-printed JSON (implies -j)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status 0 when every ping went through (and validated), 1 on any\n"
	"failure, including a completion with an error status.\n";

struct rp_opts {
	bool server;
	const char *addr;
	const char *dev_name;
	uint32_t port;
	uint32_t count;
	bool have_count;
	uint32_t size;
	bool validate;
	bool verbose;
	bool quiet;
	uint32_t timeout_s;
};

struct rp_ctx {
	const struct rp_opts *o;
	int fd;
	struct krdma_sockaddr sa;
	char addr_str[INET6_ADDRSTRLEN + 8];
	uint32_t dev_index;
	uint32_t listener;
	uint32_t conn;
	uint32_t srq;		/* server: where its receives go (0: conn) */
	bool event_dev;		/* server: a request names its device */
	bool dev_pending;	/* server: the device is the request's */
	bool disconnected;
	/* control: RECV at 0, SEND at 16 */
	struct verbs_buf ctrl;
	struct verbs_buf start;	/* client: READ source it advertises */
	struct verbs_buf rdma;	/* client: WRITE sink; server: READ target */
	unsigned int sends_pending;
	/* the peer's last advertisement */
	uint64_t remote_addr;
	uint32_t remote_rkey;
	uint32_t remote_len;
	/* completions fetched, not yet handled */
	struct krdma_wc wcs[RPING_POLL_BATCH];
	unsigned int wc_next;
	unsigned int wc_count;
	uint32_t pings;
	bool at_boundary;	/* server: a disconnect now is the end */
	char *expect;		/* server -V */
};

#define RP_INFO_SIZE sizeof(struct rping_rdma_info)
#define RP_RECV_OFF 0
#define RP_SEND_OFF RP_INFO_SIZE

/* ---- options ---- */

static int parse_rp_opt(int c, void *ctx)
{
	struct rp_opts *o = ctx;

	switch (c) {
	case 's':
		o->server = true;
		return 0;
	case 'a':
		o->addr = optarg;
		return 0;
	case 'd':
		o->dev_name = optarg;
		return 0;
	case 'p':
		return parse_u32("rping", "-p/--port", optarg, 1, 65535,
				 &o->port);
	case 'C':
		o->have_count = true;
		return parse_u32("rping", "-C/--count", optarg, 0, INT32_MAX,
				 &o->count);
	case 'S':
		return parse_u32("rping", "-S/--size", optarg,
				 RPING_MIN_BUFSIZE, RPING_BUFSIZE - 1,
				 &o->size);
	case 'V':
		o->validate = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'T':
		return parse_u32("rping", "-T/--timeout", optarg, 0, 3600,
				 &o->timeout_s);
	}
	return -1;
}

/* Returns 0, -1 when done (help printed), or an exit code. */
static int parse_rping_opts(int argc, char **argv, struct rp_opts *o)
{
	/* -p is the port here, as in rping: --pretty is long */
	static const struct option long_opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "addr", required_argument, NULL, 'a' },
		{ "device", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'C' },
		{ "size", required_argument, NULL, 'S' },
		{ "validate", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, OPT_COMMON_PRETTY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int ret;

	ret = parse_opts("rping", argc, argv, ":sa:d:p:C:S:VvqT:jh", long_opts,
			 rping_usage, parse_rp_opt, o);
	if (ret)
		return ret;
	ret = opt_extra_args("rping", argc, argv, rping_usage);
	if (ret)
		return ret;
	if (!o->server && !o->addr) {
		err_msg("rping: the client needs -a ADDR (or give -s)");
		fputs(rping_usage, stderr);
		return EXIT_USAGE;
	}
	if (!o->server && o->dev_name) {
		err_msg("rping: -d/--device: server only (the client's device "
			"is the one its route takes)");
		return EXIT_USAGE;
	}
	return 0;
}

/* ---- addresses and the device ---- */

static int rp_resolve_addr(struct rp_ctx *ctx)
{
	const struct rp_opts *o = ctx->o;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char host[INET6_ADDRSTRLEN] = "?";
	int ret;

	ctx->sa.port = o->port;
	if (!o->addr) {
		/* rping's default: the IPv4 any-address */
		ctx->sa.family = AF_INET;
		snprintf(ctx->addr_str, sizeof(ctx->addr_str), "0.0.0.0");
		return 0;
	}
	ret = getaddrinfo(o->addr, NULL, &hints, &res);
	if (ret) {
		err_msg("rping: -a/--addr: %s: %s", o->addr, gai_strerror(ret));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			const struct sockaddr_in *sin = (void *)ai->ai_addr;

			ctx->sa.family = AF_INET;
			memcpy(ctx->sa.addr, &sin->sin_addr, 4);
			break;
		}
		if (ai->ai_family == AF_INET6) {
			const struct sockaddr_in6 *sin6 = (void *)ai->ai_addr;

			ctx->sa.family = AF_INET6;
			ctx->sa.scope_id = sin6->sin6_scope_id;
			memcpy(ctx->sa.addr, &sin6->sin6_addr, 16);
			break;
		}
	}
	freeaddrinfo(res);
	if (!ai) {
		err_msg("rping: -a/--addr: %s: no IPv4 or IPv6 address",
			o->addr);
		return -EINVAL;
	}
	inet_ntop(ctx->sa.family, ctx->sa.addr, host, sizeof(host));
	snprintf(ctx->addr_str, sizeof(ctx->addr_str), "%s", host);
	return 0;
}

/*
 * The server's buffers must live on the device of the connection: -d, else
 * the device that owns the listen address as a GID, else the device a port
 * of which is on the address's netdev, else the only device; else (a
 * wildcard address) the device the request comes on, when its event names
 * it.
 */
static int rp_server_device(struct rp_ctx *ctx)
{
	const struct rp_opts *o = ctx->o;
	struct dev_snapshot s;
	uint32_t i;
	int ret;

	ret = query_devices(ctx->fd, false, 0, &s);
	if (ret)
		return ret;
	ret = -ENODEV;
	if (o->dev_name) {
		for (i = 0; i < s.num_devs; i++) {
			if (!strcmp(s.devs[i].name, o->dev_name)) {
				ctx->dev_index = s.devs[i].dev_index;
				ret = 0;
			}
		}
		if (ret)
			err_msg("rping: -d/--device: device \"%s\" not found",
				o->dev_name);
		goto out;
	}
	if (addr_device(&s, &ctx->sa, &ctx->dev_index)) {
		ret = 0;
		goto out;
	}
	if (s.num_devs == 1) {
		ctx->dev_index = s.devs[0].dev_index;
		ret = 0;
	} else if (!s.num_devs) {
		err_msg("rping: no RDMA device");
	} else if (ctx->event_dev) {
		ctx->dev_pending = true;
		ret = 0;
	} else {
		err_msg("rping: %u RDMA devices and none has %s as a GID "
			"or on its netdev: "
			"give -d DEVICE", s.num_devs, ctx->addr_str);
	}
out:
	free_snapshot(&s);
	return ret;
}

/* ---- buffers ---- */

static int rp_buf_alloc(struct rp_ctx *ctx, struct verbs_buf *b, uint64_t len,
			uint32_t access)
{
	int ret;

	ret = verbs_buf_alloc(ctx->fd, ctx->dev_index, access, len, b);
	if (ret)
		return ret;
	memset(b->mem, 0, len);
	return 0;
}

static void rp_buf_unmap(struct verbs_buf *b)
{
	if (b->mem)
		munmap(b->mem, b->map_len);
	b->mem = NULL;
}

/* as rping: the advertised buffers allow what the peer does to them */
static int rp_alloc_bufs(struct rp_ctx *ctx)
{
	uint32_t size = ctx->o->size;
	int ret;

	ret = rp_buf_alloc(ctx, &ctx->ctrl, 2 * RP_INFO_SIZE,
			   KRDMA_ACCESS_LOCAL_WRITE);
	if (ret)
		return ret;
	if (ctx->o->server)
		/* the READ target, never advertised */
		return rp_buf_alloc(ctx, &ctx->rdma, size,
				    KRDMA_ACCESS_LOCAL_WRITE);
	ret = rp_buf_alloc(ctx, &ctx->start, size, KRDMA_ACCESS_REMOTE_READ);
	if (ret)
		return ret;
	return rp_buf_alloc(ctx, &ctx->rdma, size,
			    KRDMA_ACCESS_LOCAL_WRITE |
			    KRDMA_ACCESS_REMOTE_WRITE);
}

/* ---- work requests ---- */

static int rp_post(struct rp_ctx *ctx, struct krdma_wr *wr)
{
	return verbs_post_one(ctx->fd, ctx->conn, wr);
}

static int rp_post_recv(struct rp_ctx *ctx)
{
	struct krdma_wr wr = {
		.wr_id = RP_WR_RECV,
		.opcode = KRDMA_OP_RECV,
		.num_sge = 1,
		.sge[0] = {
			.buf_handle = ctx->ctrl.handle,
			.offset = RP_RECV_OFF,
			.length = RP_INFO_SIZE,
		},
	};

	return verbs_post_one(ctx->fd, ctx->srq ?: ctx->conn, &wr);
}

/*
 * Server: an SRQ of @ctx's device with the first RECV on it, which the
 * connection takes in its accept.  Without one (a device or module without
 * SRQs, a limit reached) the server goes on as before SRQs.
 */
static int rp_srq_prepare(struct rp_ctx *ctx)
{
	struct krdma_srq_create sc = {
		.size = sizeof(sc),
		.dev_index = ctx->dev_index,
		.max_wr = 2,
		.max_sge = 1,
	};
	int ret;

	ret = krdma_ioctl_quiet(ctx->fd, KRDMA_SRQ_CREATE, &sc);
	if (ret) {
		if (dev_is_iwarp(ctx->fd, ctx->dev_index))
			warn_msg("rping: no SRQ (%s): a client's first message may find no receive, which iWARP answers by disconnecting",
				 strerror(-ret));
		return 0;
	}
	ctx->srq = sc.handle;
	return rp_post_recv(ctx);
}

/* The control SEND: an advertisement, or the server's zeroed go-ahead. */
static int rp_post_send(struct rp_ctx *ctx)
{
	struct krdma_wr wr = {
		.wr_id = RP_WR_SEND,
		.opcode = KRDMA_OP_SEND,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
		.sge[0] = {
			.buf_handle = ctx->ctrl.handle,
			.offset = RP_SEND_OFF,
			.length = RP_INFO_SIZE,
		},
	};
	int ret;

	ret = rp_post(ctx, &wr);
	if (!ret)
		ctx->sends_pending++;
	return ret;
}

static int rp_post_rdma(struct rp_ctx *ctx, uint32_t opcode, uint32_t len)
{
	struct krdma_wr wr = {
		.wr_id = opcode == KRDMA_OP_RDMA_READ ? RP_WR_READ :
							RP_WR_WRITE,
		.opcode = opcode,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
		.remote_addr = ctx->remote_addr,
		.rkey = ctx->remote_rkey,
		.sge[0] = {
			.buf_handle = ctx->rdma.handle,
			.length = len,
		},
	};

	return rp_post(ctx, &wr);
}

/* rping_format_send(): advertise one of our buffers. */
static void rp_format_send(struct rp_ctx *ctx, const struct verbs_buf *b)
{
	struct rping_rdma_info info = {
		.buf = htobe64(b->addr),
		.rkey = htobe32(b->rkey),
		.size = htobe32(ctx->o->size),
	};

	memcpy(ctx->ctrl.mem + RP_SEND_OFF, &info, sizeof(info));
}

/* ---- waiting: completions and CM events ---- */

static int rp_reject(struct rp_ctx *ctx, uint32_t handle)
{
	struct krdma_cm_accept rej = {
		.size = sizeof(rej),
		.handle = handle,
	};

	return krdma_ioctl_quiet(ctx->fd, KRDMA_CM_REJECT, &rej);
}

/*
 * A request on another device than the server's buffers is refused: its
 * work requests could not use them.  Without a device chosen, the first
 * request's is taken.
 */
static bool rp_request_on_dev(struct rp_ctx *ctx, const struct krdma_event *ev)
{
	char got[KRDMA_NAME_MAX + 16], ours[KRDMA_NAME_MAX + 16];

	if (ctx->dev_pending) {
		ctx->dev_index = ev->dev_index;
		ctx->dev_pending = false;
		return true;
	}
	if (!ctx->event_dev || ev->dev_index == ctx->dev_index)
		return true;
	warn_msg("rping: refused a client whose request came on another "
		 "device than the server's: on %s, the buffers on %s (-d or "
		 "-a picks it)",
		 dev_name_of(ctx->fd, ev->dev_index, got, sizeof(got)),
		 dev_name_of(ctx->fd, ctx->dev_index, ours, sizeof(ours)));
	return false;
}

/*
 * Takes the queued CM events: notes our connection's end, refuses further
 * clients (rping serves one), and with @request returns the first
 * CONNECT_REQUEST's handle there.  Returns the number of events, or -errno.
 */
static int rp_drain_events(struct rp_ctx *ctx, uint32_t timeout_ms,
			   uint32_t *request)
{
	struct krdma_event evs[RPING_EVENT_BATCH];
	int i, n;

	n = verbs_get_events(ctx->fd, evs, RPING_EVENT_BATCH, timeout_ms);
	if (n == -ETIMEDOUT || n == -EAGAIN || n == -EINTR)
		return 0;
	if (n < 0) {
		krdma_report(KRDMA_GET_EVENTS, n);
		return n;
	}
	for (i = 0; i < n; i++) {
		const struct krdma_event *ev = &evs[i];

		if (ev->type == KRDMA_EVENT_CONNECT_REQUEST) {
			if (request && !*request &&
			    ev->listener == ctx->listener &&
			    rp_request_on_dev(ctx, ev))
				*request = ev->handle;
			else
				rp_reject(ctx, ev->handle);
			continue;
		}
		if (!ctx->conn || ev->handle != ctx->conn)
			continue;
		switch (ev->type) {
		case KRDMA_EVENT_DISCONNECTED:
			ctx->disconnected = true;
			break;
		case KRDMA_EVENT_DEVICE_REMOVAL:
			err_msg("rping: the RDMA device was removed");
			return -ENODEV;
		}
	}
	return n;
}

/* Sleep until the fd has an event or a completion; 0, or -ETIMEDOUT. */
static int rp_wait_fd(struct rp_ctx *ctx, int64_t deadline)
{
	struct pollfd pfd = { .fd = ctx->fd, .events = POLLIN };
	int n, tmo = -1;

	if (deadline) {
		int64_t left = deadline - loop_now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		tmo = left > 1000 ? 1000 : (int)left;
	}
	do {
		n = poll(&pfd, 1, tmo);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		err_msg("rping: poll: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * The next completion, waiting up to -T.  -ECONNRESET once the peer has
 * disconnected and nothing is left to complete.
 */
static int rp_next_wc(struct rp_ctx *ctx, struct krdma_wc *wc)
{
	int64_t deadline = ctx->o->timeout_s ?
			   loop_now_ms() + ctx->o->timeout_s * 1000LL : 0;
	int ret;

	for (;;) {
		if (ctx->wc_next < ctx->wc_count) {
			*wc = ctx->wcs[ctx->wc_next++];
			return 0;
		}
		ret = verbs_poll(ctx->fd, ctx->conn, ctx->wcs, RPING_POLL_BATCH,
				 0);
		if (ret < 0) {
			krdma_report(KRDMA_POLL, ret);
			return ret;
		}
		if (ret) {
			ctx->wc_next = 0;
			ctx->wc_count = ret;
			continue;
		}
		ret = rp_drain_events(ctx, 0, NULL);
		if (ret < 0)
			return ret;
		if (ret)
			continue;	/* a completion may have come too */
		if (ctx->disconnected)
			return -ECONNRESET;
		ret = rp_wait_fd(ctx, deadline);
		if (ret)
			return ret;
	}
}

/*
 * A flushed receive between pings: the client's disconnect moved the QP to
 * the error state, and its DISCONNECTED event follows the flush.
 */
static bool rp_peer_left(struct rp_ctx *ctx)
{
	int64_t deadline = loop_now_ms() + 3000;

	while (!ctx->disconnected && loop_now_ms() < deadline)
		if (rp_drain_events(ctx, 200, NULL) < 0)
			break;
	return ctx->disconnected;
}

static const char *rp_wr_name(uint64_t wr_id)
{
	switch (wr_id) {
	case RP_WR_RECV:
		return "receive";
	case RP_WR_SEND:
		return "send";
	case RP_WR_READ:
		return "RDMA READ";
	case RP_WR_WRITE:
		return "RDMA WRITE";
	}
	return "unknown";
}

/* The peer's message: an advertisement (server) or a go-ahead (client). */
static int rp_handle_recv(struct rp_ctx *ctx, const struct krdma_wc *wc)
{
	struct rping_rdma_info info;

	if (wc->byte_len != RP_INFO_SIZE) {
		err_msg("rping: received bogus data, size %u", wc->byte_len);
		return -EBADMSG;
	}
	memcpy(&info, ctx->ctrl.mem + RP_RECV_OFF, sizeof(info));
	ctx->remote_addr = be64toh(info.buf);
	ctx->remote_rkey = be32toh(info.rkey);
	ctx->remote_len = be32toh(info.size);
	/* as rping: the next receive goes up before the message is used */
	return rp_post_recv(ctx) ? -EIO : 0;
}

/*
 * Wait for the completion of @wr_id (RP_WR_SEND: until no send is
 * pending), counting send completions on the way.
 */
static int rp_wait(struct rp_ctx *ctx, uint64_t wr_id, const char *what)
{
	struct krdma_wc wc;
	int ret;

	if (wr_id == RP_WR_SEND && !ctx->sends_pending)
		return 0;
	for (;;) {
		ret = rp_next_wc(ctx, &wc);
		if (ret == -ETIMEDOUT)
			err_msg("rping: waited %u s for %s: is the peer "
				"still there?", ctx->o->timeout_s, what);
		else if (ret == -ECONNRESET && !ctx->at_boundary)
			err_msg("rping: the %s disconnected while waiting "
				"for %s", ctx->o->server ? "client" : "server",
				what);
		if (ret)
			return ret;
		if (wc.status) {
			if (wc.status == RP_WC_WR_FLUSH_ERR &&
			    ctx->o->server && ctx->at_boundary &&
			    rp_peer_left(ctx))
				return -ECONNRESET;
			err_msg("rping: %s completion failed: %s (status %u, "
				"vendor_err 0x%x)", rp_wr_name(wc.wr_id),
				wc_status_name(wc.status), wc.status,
				wc.vendor_err);
			return -EIO;
		}
		if (wc.wr_id == RP_WR_SEND) {
			ctx->sends_pending--;
			if (wr_id == RP_WR_SEND && !ctx->sends_pending)
				return 0;
			continue;
		}
		if (wc.wr_id != wr_id) {
			err_msg("rping: %s completed while waiting for %s",
				rp_wr_name(wc.wr_id), what);
			return -EPROTO;
		}
		return wc.wr_id == RP_WR_RECV ? rp_handle_recv(ctx, &wc) : 0;
	}
}

/* ---- the ping data ---- */

/* What rping_test_client() puts in the start buffer for ping @ping. */
static void rp_fill(char *buf, uint32_t size, int ping)
{
	unsigned char c, start;
	uint32_t i;
	int cc;

	/* rping's "start" rotates from 65 ('A') through 122 ('z') */
	start = 65 + (unsigned int)ping % 58;
	cc = snprintf(buf, size, RPING_MSG_FMT, ping);
	for (i = cc, c = start; i < size; i++) {
		buf[i] = c;
		c++;
		if (c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

static void rp_print_line(const char *prefix, const char *data)
{
	if (pr_is_json()) {
		pr_value_str(NULL, data);
		return;
	}
	printf("%s%s\n", prefix, data);
	fflush(stdout);
}

/* ---- client ---- */

static int rp_connect(struct rp_ctx *ctx)
{
	struct krdma_cm_connect cc = {
		.size = sizeof(cc),
		.flags = KRDMA_CONN_NOTIFY,
		.dst = ctx->sa,
		.transport = KRDMA_TRANSPORT_RC,
		.timeout_ms = ctx->o->timeout_s * 1000,
		/* rping_create_qp()'s queues */
		.caps = {
			.max_send_wr = RPING_SQ_DEPTH,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.cq_depth = RPING_SQ_DEPTH * 2,
		},
	};
	int ret;

	ret = krdma_ioctl_quiet(ctx->fd, KRDMA_CM_CONNECT, &cc);
	if (ret == -ECONNREFUSED) {
		err_msg("rping: %s port %u refused the connection (reject "
			"reason %d): is a server listening there?",
			ctx->addr_str, ctx->o->port, cc.reject_reason);
		return ret;
	}
	if (ret) {
		krdma_report_field(KRDMA_CM_CONNECT, ret, "%s port %u",
				   ctx->addr_str, ctx->o->port);
		return ret;
	}
	ctx->conn = cc.handle;
	ctx->dev_index = cc.dev_index;
	return 0;
}

/*
 * Client: once the last send is done, advertise @b to the server and wait
 * for its go-ahead (@what names it in a timeout message).
 */
static int rp_advertise(struct rp_ctx *ctx, const struct verbs_buf *b,
			const char *what)
{
	int ret;

	ret = rp_wait(ctx, RP_WR_SEND, "a send completion");
	if (ret)
		return ret;
	rp_format_send(ctx, b);
	ret = rp_post_send(ctx);
	if (ret)
		return ret;
	return rp_wait(ctx, RP_WR_RECV, what);
}

static int rp_run_client(struct rp_ctx *ctx)
{
	const struct rp_opts *o = ctx->o;
	uint32_t size = o->size;
	int ping, ret;

	ret = rp_connect(ctx);
	if (!ret)
		ret = rp_alloc_bufs(ctx);
	if (!ret)
		ret = rp_post_recv(ctx);
	if (ret)
		return ret;
	if (pr_is_json() && o->verbose)
		pr_arr_begin("ping_data");
	for (ping = 0; !o->count || (uint32_t)ping < o->count; ping++) {
		rp_fill((char *)ctx->start.mem, size, ping);

		/* the start buffer: the server READs it */
		ret = rp_advertise(ctx, &ctx->start, "the server's go-ahead "
				   "after its RDMA READ");
		if (ret)
			break;

		/* the sink: the server WRITEs back what it read */
		ret = rp_advertise(ctx, &ctx->rdma, "the server's go-ahead "
				   "after its RDMA WRITE");
		if (ret)
			break;

		if (o->validate &&
		    memcmp(ctx->start.mem, ctx->rdma.mem, size)) {
			err_msg("rping: data mismatch in ping %d", ping);
			ret = -EBADMSG;
			break;
		}
		ctx->pings++;
		if (o->verbose)
			rp_print_line("ping data: ", (char *)ctx->rdma.mem);
	}
	if (pr_is_json() && o->verbose)
		pr_arr_end();
	if (!ret)
		ret = rp_wait(ctx, RP_WR_SEND, "a send completion");
	return ret;
}

/* ---- server ---- */

static int rp_listen(struct rp_ctx *ctx)
{
	struct krdma_cm_listen cl = {
		.size = sizeof(cl),
		.addr = ctx->sa,
		.backlog = 3,	/* rping's */
		.transport = KRDMA_TRANSPORT_RC,
	};
	int ret;

	ret = krdma_ioctl_quiet(ctx->fd, KRDMA_CM_LISTEN, &cl);
	if (ret) {
		krdma_report_field(KRDMA_CM_LISTEN, ret, "%s port %u",
				   ctx->addr_str, ctx->o->port);
		return ret;
	}
	ctx->listener = cl.handle;
	return 0;
}

static int rp_accept(struct rp_ctx *ctx)
{
	int64_t deadline = ctx->o->timeout_s ?
			   loop_now_ms() + ctx->o->timeout_s * 1000LL : 0;
	struct krdma_cm_accept ca = {
		.size = sizeof(ca),
		.flags = KRDMA_CONN_NOTIFY,
		.timeout_ms = ctx->o->timeout_s * 1000,
		.caps = {
			.max_send_wr = RPING_SQ_DEPTH,
			.max_recv_wr = 2,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.cq_depth = RPING_SQ_DEPTH * 2,
		},
	};
	bool bufs = ctx->ctrl.handle;
	uint32_t request = 0;
	int ret;

	while (!request) {
		uint32_t tmo = 1000;

		if (deadline) {
			int64_t left = deadline - loop_now_ms();

			if (left <= 0) {
				err_msg("rping: no client in %u s",
					ctx->o->timeout_s);
				return -ETIMEDOUT;
			}
			if (left < tmo)
				tmo = left;
		}
		ret = rp_drain_events(ctx, tmo, &request);
		if (ret < 0)
			return ret;
	}
	/* the request's device (rp_server_device()), now known */
	ret = bufs ? 0 : rp_alloc_bufs(ctx);
	if (!ret)
		ret = rp_srq_prepare(ctx);
	if (ret)
		return ret;
	if (ctx->srq) {
		ca.flags |= KRDMA_CONN_SRQ;
		ca.srq_handle = ctx->srq;
	}
	ca.handle = request;
	ctx->conn = request;
	ret = krdma_ioctl(ctx->fd, KRDMA_CM_ACCEPT, &ca);
	if (ret || ctx->srq)
		return ret;
	/* right after: see the comment at the top */
	return rp_post_recv(ctx);
}

/* The data a krdmactl or rping client sends in ping @ping. */
static int rp_check_ping(struct rp_ctx *ctx, uint32_t len)
{
	rp_fill(ctx->expect, len, ctx->pings);
	if (memcmp(ctx->expect, ctx->rdma.mem, len)) {
		err_msg("rping: ping %u: the data read is not rping's pattern",
			ctx->pings);
		return -EBADMSG;
	}
	return 0;
}

static int rp_run_server(struct rp_ctx *ctx)
{
	const struct rp_opts *o = ctx->o;
	uint32_t len;
	int ret;

	ctx->event_dev = krdma_features(ctx->fd) & KRDMA_FEATURE_EVENT_DEVICE;
	ret = rp_server_device(ctx);
	if (!ret && !ctx->dev_pending)
		ret = rp_alloc_bufs(ctx);
	if (!ret && o->validate) {
		ctx->expect = malloc(o->size);
		if (!ctx->expect)
			ret = -ENOMEM;
	}
	if (!ret)
		ret = rp_listen(ctx);
	if (!ret)
		ret = rp_accept(ctx);
	if (ret)
		return ret;
	if (pr_is_json() && o->verbose)
		pr_arr_begin("ping_data");
	for (;;) {
		/* the client's start buffer; its disconnect ends the run */
		ctx->at_boundary = true;
		ret = rp_wait(ctx, RP_WR_RECV, "the client's advertisement");
		ctx->at_boundary = false;
		if (ret == -ECONNRESET) {
			ret = 0;
			break;
		}
		if (ret)
			break;
		if (ctx->remote_len > o->size || ctx->remote_len < 1) {
			err_msg("rping: the client's size %u is above ours "
				"(%u): give -S %u", ctx->remote_len, o->size,
				ctx->remote_len);
			ret = -EMSGSIZE;
			break;
		}
		len = ctx->remote_len;
		ret = rp_post_rdma(ctx, KRDMA_OP_RDMA_READ, len);
		if (!ret)
			ret = rp_wait(ctx, RP_WR_READ, "the RDMA READ");
		if (ret)
			break;
		/* rping prints it as a string: keep it one */
		if (len < o->size)
			ctx->rdma.mem[len] = 0;
		ctx->rdma.mem[o->size - 1] = 0;
		if (o->verbose)
			rp_print_line("server ping data: ",
				      (char *)ctx->rdma.mem);
		if (o->validate) {
			ret = rp_check_ping(ctx, len);
			if (ret)
				break;
		}

		/* go ahead: rping's server sends its send buffer, all zero */
		ret = rp_wait(ctx, RP_WR_SEND, "a send completion");
		if (!ret)
			ret = rp_post_send(ctx);
		if (!ret)
			ret = rp_wait(ctx, RP_WR_RECV,
				      "the client's sink advertisement");
		if (ret)
			break;

		/* write back the string, with its NUL, as rping */
		len = strnlen((char *)ctx->rdma.mem, o->size) + 1;
		if (len > ctx->remote_len)
			len = ctx->remote_len;
		ret = rp_post_rdma(ctx, KRDMA_OP_RDMA_WRITE, len);
		if (!ret)
			ret = rp_wait(ctx, RP_WR_WRITE, "the RDMA WRITE");
		if (!ret)
			ret = rp_wait(ctx, RP_WR_SEND, "a send completion");
		if (!ret)
			ret = rp_post_send(ctx);
		if (ret)
			break;
		ctx->pings++;
	}
	if (pr_is_json() && o->verbose)
		pr_arr_end();
	if (!ret && o->have_count && ctx->pings != o->count) {
		err_msg("rping: the client went after %u pings, not %u",
			ctx->pings, o->count);
		ret = -EPROTO;
	}
	return ret;
}

/* ---- the command ---- */

static void rp_disconnect(struct rp_ctx *ctx)
{
	struct krdma_cm_disconnect cd = {
		.size = sizeof(cd),
		.handle = ctx->conn,
	};

	if (ctx->conn)
		krdma_ioctl_quiet(ctx->fd, KRDMA_CM_DISCONNECT, &cd);
}

static void rp_cleanup(struct rp_ctx *ctx)
{
	rp_buf_unmap(&ctx->ctrl);
	rp_buf_unmap(&ctx->start);
	rp_buf_unmap(&ctx->rdma);
	free(ctx->expect);
	/* closing the fd destroys the connection, listener and buffers */
	close(ctx->fd);
}

int cmd_rping(int argc, char **argv)
{
	struct rp_opts opts = {
		.port = RPING_PORT,
		.size = RPING_DEFAULT_SIZE,
		.timeout_s = RPING_DEFAULT_TIMEOUT,
	};
	struct rp_ctx ctx = { .o = &opts };
	int ret;

	ret = parse_rping_opts(argc, argv, &opts);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = rp_resolve_addr(&ctx);
	if (ret)
		return EXIT_USAGE;
	ctx.fd = krdma_open();
	if (ctx.fd < 0) {
		krdma_report_open(ctx.fd);
		return 1;
	}
	if (pr_is_json())
		pr_obj_begin(NULL);
	ret = opts.server ? rp_run_server(&ctx) : rp_run_client(&ctx);
	rp_disconnect(&ctx);
	if (!pr_is_json() && !opts.quiet)
		pr_obj_begin(NULL);
	if (pr_is_json() || !opts.quiet) {
		pr_str("role", opts.server ? "server" : "client");
		pr_str("addr", ctx.addr_str);
		pr_u64("port", opts.port);
		pr_u64("size", opts.size);
		pr_u64("pings", ctx.pings);
		pr_str("result", ret ? "failed" : "ok");
		pr_obj_end();
	}
	rp_cleanup(&ctx);
	return ret ? 1 : 0;
}
