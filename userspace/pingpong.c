// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl pingpong: SEND ping-pong over an RC, UC or UD connection, wire
 * compatible with rdma-core's ibv_rc_pingpong, ibv_uc_pingpong and
 * ibv_ud_pingpong (libibverbs/examples, v44): the same TCP address exchange
 * (pp_exch.c), the same message flow, the same -c check and the same
 * closing figures.
 *
 * The flow, as the originals: each side keeps rx_depth receives posted into
 * its one buffer; the client sends first; a side sends again once both its
 * last send and a receive have completed, until it has sent and received
 * ITERS messages.  UD receives carry the 40-byte GRH in front, so the UD
 * buffer is SIZE + 40 and sends go from offset 40.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <krdma.h>

#include "krdmactl.h"
#include "loop.h"
#include "names.h"
#include "pingpong.h"
#include "print.h"
#include "verbs.h"

#define PP_DEFAULT_PORT 18515
#define PP_DEFAULT_SIZE 4096
#define PP_DEFAULT_UD_SIZE 2048
#define PP_DEFAULT_MTU 1024
#define PP_DEFAULT_RX_DEPTH 500
#define PP_DEFAULT_ITERS 1000
#define PP_DEFAULT_TIMEOUT 10
#define PP_GRH_SIZE 40
#define PP_QKEY 0x11111111
#define PP_FILL 0x7b		/* what the originals memset their buffer to */
#define PP_RECV_BATCH 64	/* receives per KRDMA_POST */
#define PP_POLL_BATCH 16

enum {
	PP_RECV_WRID = 1,
	PP_SEND_WRID = 2,
};

static const char pingpong_usage[] =
	"Usage: " PROG_NAME " pingpong [OPTIONS] [HOST]\n"
	"Ping-pong SEND messages with ibv_rc_pingpong, ibv_uc_pingpong,\n"
	"ibv_ud_pingpong (rdma-core) or another " PROG_NAME " pingpong: without\n"
	"HOST wait for a client, with HOST connect to the server there.\n"
	"\n"
	"  -d, --ib-dev DEV       device (default: the first one)\n"
	"  -i, --ib-port N        port of the device (default 1)\n"
	"  -g, --gid-idx N        local GID index; on RoCE the default is the\n"
	"                         port's first RoCEv2 GID (IPv4-mapped first):\n"
	"                         then give the ibv_*_pingpong peer -g too, as\n"
	"                         without it it sends GID 0, which RoCE cannot\n"
	"                         use\n"
	"  -t, --transport T      rc (default), uc or ud\n"
	"  -s, --size N           message bytes (default 4096; ud: 2048, or the\n"
	"                         port's active MTU if smaller, which is also\n"
	"                         the ud limit)\n"
	"  -n, --iters N          messages each way (default 1000)\n"
	"  -r, --rx-depth N       receives kept posted (default 500)\n"
	"  -p, --port N           TCP port (default 18515)\n"
	"  -m, --mtu N            path MTU, 256 ... 4096 (default 1024; not ud)\n"
	"  -c, --chk              mark each page of the message (client) and\n"
	"                         check the marks at the end (server), as the\n"
	"                         originals' -c\n"
	"  -e, --events           sleep in poll(2) on completion events instead\n"
	"                         of busy polling\n"
	"  -T, --timeout SECS     give up after SECS idle: TCP connect, accept\n"
	"                         and exchange, each completion (default 10)\n"
	"  -j, --json             JSON output\n"
	"      --pretty           pretty-printed JSON (implies -j)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status 0 when every message went both ways, 1 on any failure,\n"
	"including a completion with an error status or a failed -c check.\n";

struct pp_opts {
	const char *dev_name;
	const char *host;
	uint32_t port_num;
	uint32_t gid_index;
	bool have_gid;
	uint32_t transport;
	uint32_t size;
	bool have_size;
	uint32_t iters;
	uint32_t rx_depth;
	uint32_t tcp_port;
	uint32_t mtu;
	bool have_mtu;
	bool validate;
	bool events;
	uint32_t timeout_s;
};

struct pp_ctx {
	const struct pp_opts *o;
	int fd;
	uint32_t dev_index;
	uint32_t link_layer;
	uint32_t active_mtu;	/* bytes */
	uint32_t size;
	uint32_t buf;		/* handles */
	uint32_t conn;
	uint32_t ah;
	uint8_t *mem;		/* the buffer, mmap()ed */
	size_t map_len;
	uint64_t buf_len;
	uint64_t send_offset;	/* PP_GRH_SIZE on UD */
	struct pp_dest local;
	struct pp_dest remote;
	/* the loop, as the originals count */
	uint32_t routs;
	uint32_t rcnt;
	uint32_t scnt;
	unsigned int pending;
	struct krdma_wr *recv_wrs;
};

/* ---- options ---- */

static int parse_transport(const char *arg, uint32_t *transport)
{
	uint32_t i;

	for (i = 0; i < nr_transport_names; i++) {
		if (transport_names[i] && !strcmp(arg, transport_names[i])) {
			*transport = i;
			return 0;
		}
	}
	err_msg("pingpong: -t/--transport: \"%s\" is not rc, uc or ud", arg);
	return EXIT_USAGE;
}

static int parse_mtu(const char *arg, uint32_t *mtu)
{
	if (parse_u32("pingpong", "-m/--mtu", arg, 256, 4096, mtu))
		return EXIT_USAGE;
	if (*mtu & (*mtu - 1)) {
		err_msg("pingpong: -m/--mtu: %s is not 256, 512, 1024, 2048 or "
			"4096", arg);
		return EXIT_USAGE;
	}
	return 0;
}

static int parse_pp_opt(int c, void *ctx)
{
	struct pp_opts *o = ctx;

	switch (c) {
	case 'd':
		o->dev_name = optarg;
		return 0;
	case 'i':
		return parse_u32("pingpong", "-i/--ib-port", optarg, 1, 255,
				 &o->port_num);
	case 'g':
		o->have_gid = true;
		return parse_u32("pingpong", "-g/--gid-idx", optarg, 0, 65535,
				 &o->gid_index);
	case 't':
		return parse_transport(optarg, &o->transport);
	case 's':
		o->have_size = true;
		return parse_u32("pingpong", "-s/--size", optarg, 1,
				 INT32_MAX - PP_GRH_SIZE, &o->size);
	case 'n':
		return parse_u32("pingpong", "-n/--iters", optarg, 1, INT32_MAX,
				 &o->iters);
	case 'r':
		return parse_u32("pingpong", "-r/--rx-depth", optarg, 1,
				 1 << 20, &o->rx_depth);
	case 'p':
		return parse_u32("pingpong", "-p/--port", optarg, 1, 65535,
				 &o->tcp_port);
	case 'm':
		o->have_mtu = true;
		return parse_mtu(optarg, &o->mtu);
	case 'T':
		return parse_u32("pingpong", "-T/--timeout", optarg, 1, 3600,
				 &o->timeout_s);
	case 'c':
		o->validate = true;
		return 0;
	case 'e':
		o->events = true;
		return 0;
	}
	return -1;
}

/* Returns 0, -1 when done (help printed), or an exit code. */
static int parse_pingpong_opts(int argc, char **argv, struct pp_opts *o)
{
	/* -p is the TCP port here, as in the originals: --pretty is long */
	static const struct option long_opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "transport", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "port", required_argument, NULL, 'p' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "chk", no_argument, NULL, 'c' },
		{ "events", no_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, OPT_COMMON_PRETTY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int ret;

	ret = parse_opts("pingpong", argc, argv, ":d:i:g:t:s:n:r:p:m:T:cejh",
			 long_opts, pingpong_usage, parse_pp_opt, o);
	if (ret)
		return ret;
	if (optind < argc)
		o->host = argv[optind++];
	ret = opt_extra_args("pingpong", argc, argv, pingpong_usage);
	if (ret)
		return ret;
	if (o->have_mtu && o->transport == KRDMA_TRANSPORT_UD) {
		err_msg("pingpong: -m/--mtu: not used with -t ud, whose "
			"messages are limited by the port's active MTU");
		return EXIT_USAGE;
	}
	return 0;
}

/* ---- device, port and GID ---- */

static const struct krdma_device_info *
pp_find_device(const struct dev_snapshot *s, const char *name)
{
	uint32_t i;

	if (!s->num_devs) {
		err_msg("pingpong: no RDMA device");
		return NULL;
	}
	if (!name)
		return &s->devs[0];
	for (i = 0; i < s->num_devs; i++)
		if (!strcmp(s->devs[i].name, name))
			return &s->devs[i];
	err_msg("pingpong: -d/--ib-dev: device \"%s\" not found", name);
	return NULL;
}

static const struct krdma_port_info *
pp_find_port(const struct dev_snapshot *s, const struct krdma_device_info *d,
	     uint32_t port_num)
{
	uint32_t i;

	for (i = 0; i < s->num_ports; i++)
		if (s->ports[i].dev_index == d->dev_index &&
		    s->ports[i].port_num == port_num)
			return &s->ports[i];
	err_msg("pingpong: -i/--ib-port: %s has no port %u", d->name,
		port_num);
	return NULL;
}

static bool gid_v4_mapped(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, sizeof(prefix));
}

/* RoCE default: the first RoCEv2 GID, IPv4-mapped ones first, else any. */
static int gid_rank(const struct krdma_gid_info *g)
{
	if (g->gid_type != KRDMA_GID_TYPE_ROCE_UDP_ENCAP)
		return 1;
	return gid_v4_mapped(g->gid) ? 3 : 2;
}

static const struct krdma_gid_info *
pp_find_gid(const struct dev_snapshot *s, const struct krdma_port_info *p,
	    const struct pp_opts *o)
{
	const struct krdma_gid_info *best = NULL, *g;
	uint32_t i;

	for (i = 0; i < s->num_gids; i++) {
		g = &s->gids[i];
		if (g->dev_index != p->dev_index || g->port_num != p->port_num)
			continue;
		if (o->have_gid && g->gid_index == o->gid_index)
			return g;
		if (!o->have_gid && (!best || gid_rank(g) > gid_rank(best)))
			best = g;
	}
	if (o->have_gid)
		err_msg("pingpong: -g/--gid-idx: port %u has no valid GID at "
			"index %u", p->port_num, o->gid_index);
	else if (!best)
		err_msg("pingpong: port %u has no valid GID", p->port_num);
	return best;
}

static void pp_note_default_gid(const struct krdma_gid_info *g)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET6, g->gid, addr, sizeof(addr));
	warn_msg("pingpong: no -g on a RoCE port: using GID index %u (%s, %s); "
		 "an ibv_*_pingpong peer needs -g as well",
		 g->gid_index, addr, gid_type_name(g->gid_type));
}

/* The size the transport allows, and the default one. */
static int pp_check_size(struct pp_ctx *ctx, const struct krdma_port_info *p)
{
	const struct pp_opts *o = ctx->o;

	ctx->size = o->size;
	if (o->transport != KRDMA_TRANSPORT_UD) {
		if (!o->have_size)
			ctx->size = PP_DEFAULT_SIZE;
		if (o->mtu > p->active_mtu) {
			err_msg("pingpong: -m/--mtu %u is above the active MTU "
				"(%u) of port %u", o->mtu, p->active_mtu,
				p->port_num);
			return -EINVAL;
		}
		if (p->max_msg_sz && ctx->size > p->max_msg_sz) {
			err_msg("pingpong: -s/--size %u is above the port's "
				"max_msg_sz %u", ctx->size, p->max_msg_sz);
			return -EMSGSIZE;
		}
		return 0;
	}
	if (!o->have_size)
		ctx->size = PP_DEFAULT_UD_SIZE < p->active_mtu ?
			    PP_DEFAULT_UD_SIZE : p->active_mtu;
	if (ctx->size > p->active_mtu) {
		err_msg("pingpong: -s/--size %u: a UD message is at most the "
			"port's active MTU (%u)", ctx->size, p->active_mtu);
		return -EMSGSIZE;
	}
	return 0;
}

/* Fills in the device, port, GID and size; reports failures. */
static int pp_setup_device(struct pp_ctx *ctx, struct krdma_conn_create *cc)
{
	const struct pp_opts *o = ctx->o;
	const struct krdma_device_info *d;
	const struct krdma_port_info *p = NULL;
	const struct krdma_gid_info *g = NULL;
	struct dev_snapshot s;
	int ret;

	ret = query_devices(ctx->fd, false, 0, &s);
	if (ret)
		return ret;
	d = pp_find_device(&s, o->dev_name);
	if (d)
		p = pp_find_port(&s, d, o->port_num);
	if (p)
		g = pp_find_gid(&s, p, o);
	ret = g ? pp_check_size(ctx, p) : -ENOENT;
	if (!ret && p->link_layer != KRDMA_LINK_LAYER_ETHERNET && !p->lid) {
		err_msg("pingpong: %s port %u has no LID (is a subnet manager "
			"running?)", d->name, p->port_num);
		ret = -ENETDOWN;
	}
	if (!ret && o->rx_depth > d->max_qp_wr) {
		err_msg("pingpong: -r/--rx-depth %u is above the device's "
			"max_qp_wr %u", o->rx_depth, d->max_qp_wr);
		ret = -EINVAL;
	}
	if (!ret) {
		ctx->dev_index = d->dev_index;
		ctx->link_layer = p->link_layer;
		ctx->active_mtu = p->active_mtu;
		cc->dev_index = d->dev_index;
		cc->port_num = p->port_num;
		cc->gid_index = g->gid_index;
		if (!o->have_gid && p->link_layer == KRDMA_LINK_LAYER_ETHERNET)
			pp_note_default_gid(g);
	}
	free_snapshot(&s);
	return ret;
}

/* ---- work requests ---- */

/* Post @n receives into the whole buffer; returns how many went. */
static uint32_t pp_post_recv(struct pp_ctx *ctx, uint32_t n)
{
	struct krdma_post post = {
		.size = sizeof(post),
		.handle = ctx->conn,
		.wr_entry_size = sizeof(struct krdma_wr),
		.wrs_uptr = (uintptr_t)ctx->recv_wrs,
	};
	uint32_t done = 0, chunk;
	int ret;

	while (done < n) {
		chunk = n - done < PP_RECV_BATCH ? n - done : PP_RECV_BATCH;
		post.num_wrs = chunk;
		ret = krdma_ioctl_quiet(ctx->fd, KRDMA_POST, &post);
		if (ret) {
			krdma_report(KRDMA_POST, ret);
			return done + (post.num_wrs < chunk ? post.num_wrs : 0);
		}
		done += chunk;
	}
	return done;
}

static int pp_init_recv_wrs(struct pp_ctx *ctx)
{
	unsigned int i;

	ctx->recv_wrs = calloc(PP_RECV_BATCH, sizeof(*ctx->recv_wrs));
	if (!ctx->recv_wrs) {
		err_msg("pingpong: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < PP_RECV_BATCH; i++) {
		struct krdma_wr *wr = &ctx->recv_wrs[i];

		wr->wr_id = PP_RECV_WRID;
		wr->opcode = KRDMA_OP_RECV;
		wr->num_sge = 1;
		wr->sge[0].buf_handle = ctx->buf;
		wr->sge[0].length = ctx->buf_len;
	}
	return 0;
}

static int pp_post_send(struct pp_ctx *ctx)
{
	struct krdma_wr wr = {
		.wr_id = PP_SEND_WRID,
		.opcode = KRDMA_OP_SEND,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
		.sge[0] = {
			.buf_handle = ctx->buf,
			.offset = ctx->send_offset,
			.length = ctx->size,
		},
	};
	struct krdma_post post = {
		.size = sizeof(post),
		.handle = ctx->conn,
		.num_wrs = 1,
		.wr_entry_size = sizeof(wr),
		.wrs_uptr = (uintptr_t)&wr,
	};

	if (ctx->o->transport == KRDMA_TRANSPORT_UD) {
		wr.ah_handle = ctx->ah;
		wr.remote_qpn = ctx->remote.qpn;
		wr.remote_qkey = PP_QKEY;
	}
	return krdma_ioctl(ctx->fd, KRDMA_POST, &post);
}

/* ---- buffer, connection ---- */

static int pp_alloc_buf(struct pp_ctx *ctx)
{
	struct verbs_buf b;
	int ret;

	ctx->send_offset = ctx->o->transport == KRDMA_TRANSPORT_UD ?
			   PP_GRH_SIZE : 0;
	ctx->buf_len = ctx->size + ctx->send_offset;
	ret = verbs_buf_alloc(ctx->fd, ctx->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			      ctx->buf_len, &b);
	if (ret)
		return ret;
	ctx->buf = b.handle;
	ctx->map_len = b.map_len;
	ctx->mem = b.mem;
	memset(ctx->mem, PP_FILL, ctx->buf_len);
	return 0;
}

static int pp_create_conn(struct pp_ctx *ctx, struct krdma_conn_create *cc)
{
	int ret;

	cc->size = sizeof(*cc);
	cc->flags = ctx->o->events ? KRDMA_CONN_NOTIFY : 0;
	cc->transport = ctx->o->transport;
	/* as the originals: one send, rx_depth receives, a CQ for both */
	cc->caps.max_send_wr = 1;
	cc->caps.max_recv_wr = ctx->o->rx_depth;
	cc->caps.max_send_sge = 1;
	cc->caps.max_recv_sge = 1;
	cc->caps.cq_depth = ctx->o->rx_depth + 1;
	ret = krdma_ioctl(ctx->fd, KRDMA_CONN_CREATE, cc);
	if (ret)
		return ret;
	ctx->conn = cc->handle;
	ctx->local.lid = cc->lid;
	ctx->local.qpn = cc->qp_num;
	ctx->local.psn = cc->psn;
	/* what the originals send: GID 0 unless -g (IB only; RoCE needs it) */
	if (ctx->o->have_gid || ctx->link_layer == KRDMA_LINK_LAYER_ETHERNET)
		memcpy(ctx->local.gid, cc->gid, sizeof(ctx->local.gid));
	return 0;
}

/* The originals use the GRH only when the GID's interface id is set. */
static bool gid_is_global(const uint8_t *gid)
{
	static const uint8_t zero[8];

	return memcmp(gid + 8, zero, sizeof(zero)) != 0;
}

static int pp_check_remote(const struct pp_ctx *ctx)
{
	if (ctx->link_layer == KRDMA_LINK_LAYER_ETHERNET &&
	    !gid_is_global(ctx->remote.gid)) {
		err_msg("pingpong: the peer sent no GID, which RoCE needs: "
			"run it with -g (gid index)");
		return -EINVAL;
	}
	return 0;
}

/*
 * The originals post their receives in INIT, before the exchange; a krdma
 * connection goes from RESET (where receives are refused) to RTS in one
 * step, so ours go right after it: the server's before it answers the
 * client, the client's before its first send, so none is missing when the
 * peer's first message arrives.
 */
static int pp_post_first_recvs(struct pp_ctx *ctx)
{
	ctx->routs = pp_post_recv(ctx, ctx->o->rx_depth);
	if (ctx->routs < ctx->o->rx_depth) {
		err_msg("pingpong: cannot post receives (%u posted)",
			ctx->routs);
		return -EIO;
	}
	return 0;
}

/*
 * Move to RTS with the peer's address (UD: and create the address handle),
 * then post the receives.
 */
static int pp_connect(struct pp_ctx *ctx)
{
	const struct pp_opts *o = ctx->o;
	struct krdma_conn_modify cm = {
		.size = sizeof(cm),
		.handle = ctx->conn,
		.dest_qp_num = ctx->remote.qpn,
		.dest_psn = ctx->remote.psn,
		.dest_lid = ctx->remote.lid,
		.path_mtu = o->transport == KRDMA_TRANSPORT_UD ? 0 : o->mtu,
		.qkey = o->transport == KRDMA_TRANSPORT_UD ? PP_QKEY : 0,
	};
	struct krdma_ah_create ac = {
		.size = sizeof(ac),
		.conn_handle = ctx->conn,
		.dest_lid = ctx->remote.lid,
	};
	int ret;

	if (o->transport != KRDMA_TRANSPORT_UD) {
		/* the originals' timers, and no remote access: SENDs only */
		cm.flags = KRDMA_CONN_MODIFY_RC_ATTRS;
		cm.timeout = 14;
		cm.retry_cnt = 7;
		cm.rnr_retry = 7;
		cm.min_rnr_timer = 12;
		if (o->transport == KRDMA_TRANSPORT_RC) {
			cm.max_rd_atomic = 1;
			cm.max_dest_rd_atomic = 1;
		}
	}
	if (gid_is_global(ctx->remote.gid))
		memcpy(cm.dest_gid, ctx->remote.gid, sizeof(cm.dest_gid));
	ret = krdma_ioctl(ctx->fd, KRDMA_CONN_MODIFY, &cm);
	if (ret)
		return ret;
	if (o->transport == KRDMA_TRANSPORT_UD) {
		memcpy(ac.dest_gid, cm.dest_gid, sizeof(ac.dest_gid));
		ret = krdma_ioctl(ctx->fd, KRDMA_AH_CREATE, &ac);
		if (ret)
			return ret;
		ctx->ah = ac.handle;
	}
	return pp_post_first_recvs(ctx);
}

/* ---- the loop ---- */

static int pp_wc_failed(const struct krdma_wc *wc)
{
	err_msg("pingpong: %s completion failed: %s (status %u, vendor_err "
		"0x%x)",
		wc->wr_id == PP_SEND_WRID ? "send" :
		wc->wr_id == PP_RECV_WRID ? "receive" : "unknown",
		wc_status_name(wc->status), wc->status, wc->vendor_err);
	return -EIO;
}

/* The originals' parse_single_wc(). */
static int pp_handle_wc(struct pp_ctx *ctx, const struct krdma_wc *wc)
{
	uint32_t want;

	if (wc->status)
		return pp_wc_failed(wc);
	switch (wc->wr_id) {
	case PP_SEND_WRID:
		ctx->scnt++;
		break;
	case PP_RECV_WRID:
		if (--ctx->routs <= 1) {
			want = ctx->o->rx_depth - ctx->routs;
			ctx->routs += pp_post_recv(ctx, want);
			if (ctx->routs < ctx->o->rx_depth) {
				err_msg("pingpong: cannot post receives (%u "
					"posted)", ctx->routs);
				return -EIO;
			}
		}
		ctx->rcnt++;
		break;
	default:
		err_msg("pingpong: completion for unknown wr_id %" PRIu64,
			(uint64_t)wc->wr_id);
		return -EIO;
	}
	ctx->pending &= ~(unsigned int)wc->wr_id;
	if (ctx->scnt < ctx->o->iters && !ctx->pending) {
		if (pp_post_send(ctx))
			return -EIO;
		ctx->pending = PP_RECV_WRID | PP_SEND_WRID;
	}
	return 0;
}

/* -e: sleep in poll(2) until the connection has a completion. */
static int pp_wait_event(struct pp_ctx *ctx, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->fd, .events = POLLIN };
	int n;

	do {
		n = poll(&pfd, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		err_msg("pingpong: poll: %s", strerror(errno));
		return -errno;
	}
	return n ? 0 : -ETIMEDOUT;
}

/* Up to @max completions; 0 when none came within the timeout. */
static int pp_poll(struct pp_ctx *ctx, struct krdma_wc *wcs, uint32_t max)
{
	int timeout_ms = ctx->o->timeout_s * 1000;
	int ret;

	if (ctx->o->events) {
		ret = pp_wait_event(ctx, timeout_ms);
		if (ret)
			return ret == -ETIMEDOUT ? 0 : ret;
	}
	ret = verbs_poll(ctx->fd, ctx->conn, wcs, max,
			 ctx->o->events ? 0 : timeout_ms);
	if (ret < 0)
		krdma_report(KRDMA_POLL, ret);
	return ret;
}

static int pp_loop(struct pp_ctx *ctx)
{
	int64_t idle_limit = (int64_t)ctx->o->timeout_s * 1000;
	int64_t last = loop_now_ms();
	struct krdma_wc wcs[PP_POLL_BATCH];
	int n, i, ret;

	while (ctx->rcnt < ctx->o->iters || ctx->scnt < ctx->o->iters) {
		n = pp_poll(ctx, wcs, PP_POLL_BATCH);
		if (n < 0)
			return n;
		if (!n && loop_now_ms() - last >= idle_limit) {
			err_msg("pingpong: no completion in %u s (sent %u, "
				"received %u of %u): is the peer still there?",
				ctx->o->timeout_s, ctx->scnt, ctx->rcnt,
				ctx->o->iters);
			return -ETIMEDOUT;
		}
		if (n)
			last = loop_now_ms();
		for (i = 0; i < n; i++) {
			ret = pp_handle_wc(ctx, &wcs[i]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- -c: the originals mark the first byte of each page ---- */

static void pp_mark_pages(struct pp_ctx *ctx)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t i;

	for (i = 0; i < ctx->size; i += page)
		ctx->mem[ctx->send_offset + i] = 0;	/* i / page % 1 */
}

static int pp_check_pages(struct pp_ctx *ctx)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t i, bad = 0;

	for (i = 0; i < ctx->size; i += page) {
		if (ctx->mem[ctx->send_offset + i] == 0)
			continue;
		err_msg("pingpong: invalid data in page %ld", i / page);
		bad++;
	}
	return bad ? -EBADMSG : 0;
}

/* ---- output ---- */

static void pp_print_dest(const char *key, const struct pp_dest *d)
{
	char gid[INET6_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET6, d->gid, gid, sizeof(gid));
	pr_obj_begin(key);
	pr_fmt_u64("lid", "lid 0x%04" PRIx64, d->lid);
	pr_fmt_u64("qpn", "qpn 0x%06" PRIx64, d->qpn);
	pr_fmt_u64("psn", "psn 0x%06" PRIx64, d->psn);
	pr_str("gid", gid);
	pr_obj_end();
}

/* The originals' two closing lines. */
static void pp_print_figures(const struct pp_ctx *ctx, double usec)
{
	uint64_t iters = ctx->o->iters;
	uint64_t bytes = (uint64_t)ctx->size * iters * 2;

	pr_nl();
	pr_fmt_u64("bytes", "%" PRIu64 " bytes", bytes);
	pr_fmt_double("seconds", "in %.2f seconds", usec / 1000000.);
	pr_fmt_double("mbit_per_sec", "= %.2f Mbit/sec", bytes * 8. / usec);
	pr_nl();
	pr_fmt_u64("iters", "%" PRIu64 " iters", iters);
	pr_fmt_double(NULL, "in %.2f seconds", usec / 1000000.);
	pr_fmt_double("usec_per_iter", "= %.2f usec/iter", usec / iters);
}

static void pp_print_setup(const struct pp_ctx *ctx)
{
	pr_str("role", ctx->o->host ? "client" : "server");
	pr_str("transport", transport_names[ctx->o->transport]);
	pr_u64("size", ctx->size);
}

/* ---- the command ---- */

static int pp_prepare(struct pp_ctx *ctx)
{
	struct krdma_conn_create cc = { 0 };
	int ret;

	ret = pp_setup_device(ctx, &cc);
	if (!ret)
		ret = pp_alloc_buf(ctx);
	if (!ret)
		ret = pp_create_conn(ctx, &cc);
	if (!ret)
		ret = pp_init_recv_wrs(ctx);
	return ret;
}

/* Client: send ours, get theirs, "done", then connect. */
static int pp_exchange_client(struct pp_ctx *ctx)
{
	int tmo = ctx->o->timeout_s * 1000;
	int sock, ret;

	sock = pp_tcp_connect(ctx->o->host, ctx->o->tcp_port, tmo);
	if (sock < 0)
		return sock;
	ret = pp_send_dest(sock, &ctx->local);
	if (!ret)
		ret = pp_recv_dest(sock, tmo, &ctx->remote);
	if (!ret)
		ret = pp_send_done(sock);
	close(sock);
	if (!ret)
		ret = pp_check_remote(ctx);
	if (!ret)
		ret = pp_connect(ctx);
	return ret;
}

/* Server: get theirs, connect, send ours, wait for "done". */
static int pp_exchange_server(struct pp_ctx *ctx)
{
	int tmo = ctx->o->timeout_s * 1000;
	int sock, ret;

	sock = pp_tcp_accept(ctx->o->tcp_port, tmo);
	if (sock < 0)
		return sock;
	ret = pp_recv_dest(sock, tmo, &ctx->remote);
	if (!ret)
		ret = pp_check_remote(ctx);
	if (!ret)
		ret = pp_connect(ctx);
	if (!ret)
		ret = pp_send_dest(sock, &ctx->local);
	if (!ret)
		ret = pp_recv_done(sock, tmo);
	close(sock);
	return ret;
}

static double pp_usec_since(const struct timespec *start)
{
	struct timespec end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	return (end.tv_sec - start->tv_sec) * 1000000. +
	       (end.tv_nsec - start->tv_nsec) / 1000.;
}

static int pp_run(struct pp_ctx *ctx)
{
	struct timespec start;
	double usec;
	int ret;

	ret = ctx->o->host ? pp_exchange_client(ctx) : pp_exchange_server(ctx);
	if (ret)
		return ret;
	pp_print_dest("remote", &ctx->remote);

	ctx->pending = PP_RECV_WRID;
	if (ctx->o->host) {
		if (ctx->o->validate)
			pp_mark_pages(ctx);
		if (pp_post_send(ctx))
			return -EIO;
		ctx->pending |= PP_SEND_WRID;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	ret = pp_loop(ctx);
	if (ret)
		return ret;
	usec = pp_usec_since(&start);
	pp_print_figures(ctx, usec);
	/* like the originals, only the server checks (the client's marks) */
	if (ctx->o->validate && !ctx->o->host)
		ret = pp_check_pages(ctx);
	return ret;
}

static void pp_cleanup(struct pp_ctx *ctx)
{
	free(ctx->recv_wrs);
	if (ctx->mem)
		munmap(ctx->mem, ctx->map_len);
	/* closing the fd destroys the connection, AH and buffer */
	close(ctx->fd);
}

int cmd_pingpong(int argc, char **argv)
{
	struct pp_opts opts = {
		.port_num = 1,
		.transport = KRDMA_TRANSPORT_RC,
		.iters = PP_DEFAULT_ITERS,
		.rx_depth = PP_DEFAULT_RX_DEPTH,
		.tcp_port = PP_DEFAULT_PORT,
		.mtu = PP_DEFAULT_MTU,
		.timeout_s = PP_DEFAULT_TIMEOUT,
	};
	struct pp_ctx ctx = { .o = &opts };
	int ret;

	ret = parse_pingpong_opts(argc, argv, &opts);
	if (ret)
		return ret < 0 ? 0 : ret;
	ctx.fd = krdma_open();
	if (ctx.fd < 0) {
		krdma_report_open(ctx.fd);
		return 1;
	}
	pr_obj_begin(NULL);
	ret = pp_prepare(&ctx);
	if (!ret) {
		pp_print_setup(&ctx);
		pp_print_dest("local", &ctx.local);
		/* the local address goes out before the wait for the peer */
		fflush(stdout);
		ret = pp_run(&ctx);
	}
	pr_obj_end();
	pp_cleanup(&ctx);
	return ret ? 1 : 0;
}
