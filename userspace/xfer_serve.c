// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl serve: the server of send / write / read / atomic / copy
 * (protocol in xfer.h).  One listener per transport of -t, all on one
 * port; each client is accepted with the data buffer advertised in the
 * private data, gets a few receives posted for its control messages and is
 * served from one poll(2) loop, so clients may come one after another or at
 * the same time (copies one at a time: they use the data buffer as staging
 * area).  A UD client is answered through an address handle to its
 * address and the QP its messages come from.
 *
 * A copy whose connection is lost is parked, not thrown away: a client
 * that reconnects and asks to resume it (XFER_FILE_RESUME, same name,
 * length and digest) goes on from the bytes saved, even from a connection
 * the server has not seen die yet; a parked copy is dropped after -T of
 * silence or when another copy starts.  Streams (send -n) are counted by
 * sequence number and the tally says exactly which messages never came.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <krdma.h>

#include "addr.h"
#include "krdmactl.h"
#include "loop.h"
#include "names.h"
#include "print.h"
#include "sha256.h"
#include "xfer.h"

#define SV_MAX_CLIENTS 32
#define SV_SLOTS 4			/* receives posted per client */
#define SV_SEND_WRID 100
#define SV_SEND_OFF (SV_SLOTS * XFER_SLOT)
#define SV_DRAIN_MS 2000		/* after DISCONNECTED: for the flush */

enum { OPT_SIZE = 0x100, OPT_SAVE, OPT_FILL, OPT_PRETTY };

#define SV_RC (1U << KRDMA_TRANSPORT_RC)
#define SV_UC (1U << KRDMA_TRANSPORT_UC)

static const char serve_usage[] =
	"Usage: " PROG_NAME " serve [OPTIONS]\n"
	"Serve " PROG_NAME " send, write, read, atomic and copy clients over\n"
	"rdma_cm connections: the data buffer is advertised in the accept's\n"
	"private data; one line is printed per operation seen.  RC serves\n"
	"every command, UC send, write and copy, UD send.\n"
	"\n"
	"  -d, --ib-dev DEV     device of the buffer (default: the one -a is\n"
	"                       on, else the first)\n"
	"  -a, --addr ADDR[:N]  listen on ADDR (default: any IPv4 address),\n"
	"                       on port N if given there\n"
	"  -p, --port N         rdma_cm port (default 18516)\n"
	"  -t, --transport T    rc (default), uc, ud or a list (rc,ud): one\n"
	"                       listener each, on the port of -p; rc and uc\n"
	"                       share the rdma_cm TCP port space, so serve uc\n"
	"                       and rc on two ports (two serves)\n"
	"      --size N         data buffer bytes (default 1048576)\n"
	"      --fill F         pattern (default) or zero: the buffer's\n"
	"                       initial content\n"
	"      --save DIR       accept copies, saving them in DIR\n"
	"  -n, --count N        exit after N clients (default: until Ctrl-C)\n"
	"  -T, --timeout SECS   accept and client idle timeout (default 10)\n"
	"  -j, --json           JSON output\n"
	"      --pretty         pretty-printed JSON (implies -j)\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status 0 if every client was served well, 1 if one failed (a\n"
	"BAD check, a failed copy, a protocol error), 2 on bad usage.\n";

struct sv_opts {
	const char *dev_name;
	const char *addr;
	uint32_t port;
	uint32_t transports;	/* a mask of 1 << KRDMA_TRANSPORT_* */
	uint64_t size;
	uint32_t fill;
	const char *save_dir;
	uint32_t count;
	uint32_t timeout_s;
};

struct sv_client {
	bool used;
	bool bye;
	bool gone;		/* over: flushed, an error, a UD client's BYE */
	bool failed;
	bool superseded;	/* its copy went on over another connection */
	int64_t accepting;	/* when its reply went, until ESTABLISHED; or 0 */
	int64_t disconnected;	/* when the DISCONNECTED event came, or 0 */
	uint32_t conn;
	uint32_t qpn;
	uint32_t transport;
	uint32_t ah;		/* UD: to the client */
	uint32_t peer_qpn;	/* UD: the client's QP, from src_qp */
	uint16_t op;
	uint16_t req_type;	/* the request being answered */
	uint32_t req_seq;
	struct verbs_buf ctrl;
	char peer[80];
	int64_t last;
	/* the reply's @offset and @length (sv_reply clears them) */
	uint64_t rep_offset;
	uint64_t rep_length;
	/* a stream (send -n): a bit per sequence number that arrived */
	uint8_t *seen;
	uint32_t st_recv;	/* distinct ones */
	uint32_t st_dup;	/* again */
	uint32_t st_bad;	/* length or CRC-32 wrong */
	bool st_told;
};

/* The copy in progress (one at a time: the data buffer is its staging) */
struct sv_copy {
	struct sv_client *owner;	/* NULL: none, or parked */
	int fd;				/* the temporary file, or -1 */
	int64_t parked;		/* when its connection was lost, or 0 */
	char tmp[PATH_MAX];
	char final[PATH_MAX];
	char name[XFER_TEXT_MAX];
	uint64_t flen;
	uint64_t got;
	uint32_t seq;
	uint8_t digest[SHA256_DIGEST_SIZE];
};

struct sv {
	const struct sv_opts *o;
	int fd;
	uint32_t dev_index;
	char dev_name[KRDMA_NAME_MAX];
	uint32_t listeners[KRDMA_TRANSPORT_UD + 1];	/* by transport */
	uint32_t ud_mtu;	/* the device's smallest active MTU */
	bool no_imm;		/* iWARP: none comes, the messages say it */
	bool accept_waits;	/* a module without async accepts: ACCEPT waits */
	bool event_dev;		/* a request names its device */
	struct verbs_buf data;
	struct sv_client clients[SV_MAX_CLIENTS];
	struct sv_copy copy;
	uint32_t served;
	uint32_t failures;
	bool device_gone;	/* a listener's device was removed */
};

/* ---- options ---- */

static int sv_parse(int argc, char **argv, struct sv_opts *o)
{
	static const struct option long_opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "transport", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "fill", required_argument, NULL, OPT_FILL },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct stat st;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, ":d:a:p:t:n:T:jh", long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(serve_usage, stdout);
			return -1;
		case 'd':
			o->dev_name = optarg;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'p':
			ret = parse_u32("serve", "-p/--port", optarg, 1, 65535,
					&o->port);
			break;
		case 't':
			ret = xfer_parse_transport("serve", optarg, true,
						   &o->transports);
			break;
		case OPT_SIZE:
			ret = parse_u64("serve", "--size", optarg, 8,
					1ULL << 32, &o->size);
			break;
		case OPT_FILL:
			if (!strcmp(optarg, "pattern"))
				o->fill = XFER_FILL_PATTERN;
			else if (!strcmp(optarg, "zero"))
				o->fill = XFER_FILL_ZERO;
			else {
				err_msg("serve: --fill: \"%s\" is not pattern "
					"or zero", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SAVE:
			if (stat(optarg, &st) || !S_ISDIR(st.st_mode)) {
				err_msg("serve: --save: %s is not a directory",
					optarg);
				return EXIT_USAGE;
			}
			o->save_dir = optarg;
			break;
		case 'n':
			ret = parse_u32("serve", "-n/--count", optarg, 1,
					UINT32_MAX, &o->count);
			break;
		case 'T':
			ret = parse_u32("serve", "-T/--timeout", optarg, 1, 3600,
					&o->timeout_s);
			break;
		case 'j':
			pr_set_json(true);
			break;
		case OPT_PRETTY:
			pr_set_pretty(true);
			break;
		default:
			return opt_fail("serve", c, argv, serve_usage);
		}
		if (ret)
			return ret;
	}
	if ((o->transports & (SV_RC | SV_UC)) == (SV_RC | SV_UC)) {
		err_msg("serve: -t/--transport: rc and uc listeners cannot "
			"share a port (one rdma_cm TCP port space): run a "
			"second serve -t uc on another port");
		return EXIT_USAGE;
	}
	return opt_extra_args("serve", argc, argv, serve_usage);
}

/* ---- output: one object per line in text, an "events" array in JSON ---- */

static void sv_event(const char *what, const struct sv_client *c)
{
	pr_obj_begin(NULL);
	pr_value_str("event", what);
	if (c)
		pr_str("peer", c->peer);
}

static void sv_event_end(void)
{
	pr_obj_end();
	fflush(stdout);
}

/* ---- setup ---- */

/*
 * The buffer must live on the device the clients' connections arrive on,
 * chosen before any comes: -d, else the device the listen address @addr
 * is on, else the first.  A request on another is refused.
 */
static int sv_pick_device(struct sv *s, const struct krdma_sockaddr *addr)
{
	struct dev_snapshot snap;
	uint32_t i, want;
	bool by_addr;
	int ret;

	ret = query_devices(s->fd, false, 0, &snap);
	if (ret)
		return ret;
	by_addr = !s->o->dev_name && addr_device(&snap, addr, &want);
	ret = -ENODEV;
	for (i = 0; i < snap.num_devs; i++) {
		if (s->o->dev_name && strcmp(snap.devs[i].name, s->o->dev_name))
			continue;
		if (by_addr && snap.devs[i].dev_index != want)
			continue;
		s->dev_index = snap.devs[i].dev_index;
		snprintf(s->dev_name, sizeof(s->dev_name), "%s",
			 snap.devs[i].name);
		ret = 0;
		break;
	}
	if (ret)
		err_msg(s->o->dev_name ? "serve: -d/--ib-dev: device \"%s\" "
			"not found" : "serve: no RDMA device%s",
			s->o->dev_name ? s->o->dev_name : "");
	free_snapshot(&snap);
	return ret;
}

static int sv_listen(struct sv *s, struct krdma_sockaddr *addr,
		     uint32_t transport)
{
	struct krdma_cm_listen l = {
		.size = sizeof(l),
		.addr = *addr,
		.transport = transport,
	};
	char where[80];
	int ret;

	ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_LISTEN, &l);
	if (ret) {
		addr_format(addr, where, sizeof(where));
		err_msg("serve: cannot listen on %s for %s: %s", where,
			transport_name(transport), strerror(-ret));
		return ret;
	}
	s->listeners[transport] = l.handle;
	addr->port = l.port;
	return 0;
}

static int sv_setup(struct sv *s, struct krdma_sockaddr *addr)
{
	struct krdma_info info = { .size = sizeof(info) };
	char where[80];
	uint32_t t;
	int ret;

	/* a module older than async accepts: each ACCEPT waits for the end */
	ret = krdma_ioctl(s->fd, KRDMA_GET_INFO, &info);
	s->accept_waits = !(info.features & KRDMA_FEATURE_ACCEPT_ASYNC);
	s->event_dev = info.features & KRDMA_FEATURE_EVENT_DEVICE;
	if (!ret)
		ret = sv_pick_device(s, addr);
	if (!ret)
		s->no_imm = dev_is_iwarp(s->fd, s->dev_index);
	if (!ret && (s->o->transports & 1U << KRDMA_TRANSPORT_UD)) {
		s->ud_mtu = xfer_port_mtu(s->fd, s->dev_index);
		if (!s->ud_mtu)
			ret = -ENODEV;
	}
	if (!ret)
		ret = verbs_buf_alloc(s->fd, s->dev_index,
				      KRDMA_ACCESS_LOCAL_WRITE |
				      KRDMA_ACCESS_REMOTE_WRITE |
				      KRDMA_ACCESS_REMOTE_READ |
				      KRDMA_ACCESS_REMOTE_ATOMIC,
				      s->o->size, &s->data);
	if (ret)
		return ret;
	if (s->o->fill == XFER_FILL_ZERO)
		memset(s->data.mem, 0, s->o->size);
	else
		xfer_pattern_fill(s->data.mem, 0, 0, s->o->size);
	for (t = 0; t < ARRAY_SIZE(s->listeners) && !ret; t++)
		if (s->o->transports & 1U << t)
			ret = sv_listen(s, addr, t);
	if (ret)
		return ret;
	addr_format(addr, where, sizeof(where));
	sv_event("listening", NULL);
	pr_str("addr", where);
	pr_bits("transport", s->o->transports, transport_names,
		nr_transport_names);
	pr_str("device", s->dev_name);
	pr_u64("buffer", s->o->size);
	pr_str("fill", s->o->fill == XFER_FILL_ZERO ? "zero" : "pattern");
	pr_hex("rkey", s->data.rkey);
	if (s->o->save_dir)
		pr_str("save", s->o->save_dir);
	sv_event_end();
	return 0;
}

/* ---- clients ---- */

static struct sv_client *sv_find(struct sv *s, uint32_t conn)
{
	unsigned int i;

	for (i = 0; i < SV_MAX_CLIENTS; i++)
		if (s->clients[i].used && s->clients[i].conn == conn)
			return &s->clients[i];
	return NULL;
}

static void sv_reject(struct sv *s, const struct krdma_event *ev,
		      const char *why)
{
	struct krdma_cm_accept rj = {
		.size = sizeof(rj),
		.handle = ev->handle,
	};
	char peer[80];

	addr_format(&ev->peer, peer, sizeof(peer));
	krdma_ioctl_quiet(s->fd, KRDMA_CM_REJECT, &rj);
	sv_event("reject", NULL);
	pr_str("peer", peer);
	pr_str("reason", why);
	sv_event_end();
}

/* Why the request of @ev is refused (into @buf, or a constant), or NULL. */
static const char *sv_check_request(const struct sv *s,
				    const struct krdma_event *ev, char *buf,
				    size_t len)
{
	const struct xfer_hello *h = (const void *)ev->private_data;
	char name[KRDMA_NAME_MAX + 16];

	if (ev->private_data_len < sizeof(*h) ||
	    be32toh(h->magic) != XFER_MAGIC)
		return "not a krdmactl client";
	if (be16toh(h->version) != XFER_VERSION)
		return "protocol version mismatch";
	/* its work requests could not use the buffers, which are there */
	if (s->event_dev && ev->dev_index != s->dev_index) {
		snprintf(buf, len, "came on another device than the server's: "
			 "on %s, the buffers on %s (-d or -a picks it)",
			 dev_name_of(s->fd, ev->dev_index, name, sizeof(name)),
			 s->dev_name);
		return buf;
	}
	return NULL;
}

static struct sv_client *sv_free_client(struct sv *s)
{
	unsigned int i;

	for (i = 0; i < SV_MAX_CLIENTS; i++)
		if (!s->clients[i].used)
			return &s->clients[i];
	return NULL;
}

static bool sv_is_listener(const struct sv *s, uint32_t handle)
{
	uint32_t t;

	for (t = 0; t < ARRAY_SIZE(s->listeners); t++)
		if (handle && s->listeners[t] == handle)
			return true;
	return false;
}

static uint32_t sv_transport_of(const struct sv *s, uint32_t listener)
{
	uint32_t t;

	for (t = 0; t < ARRAY_SIZE(s->listeners); t++)
		if (s->listeners[t] == listener)
			return t;
	return KRDMA_TRANSPORT_RC;
}

/*
 * Accept with the data buffer advertised: 0 or -errno (reported).  The
 * accept does not wait for the handshake to end (c->accepting until an
 * event tells), so that a client whose last handshake message is lost does
 * not hold up the others for the accept's timeout.
 */
static int sv_accept(struct sv *s, struct sv_client *c)
{
	bool ud = c->transport == KRDMA_TRANSPORT_UD;
	struct krdma_cm_accept ac = {
		.size = sizeof(ac),
		.flags = KRDMA_CONN_NOTIFY,
		.handle = c->conn,
		.caps = { .max_send_wr = 8, .max_recv_wr = SV_SLOTS,
			  .max_send_sge = 1, .max_recv_sge = 1,
			  .cq_depth = 2 * SV_SLOTS + 8 },
		.private_data_len = sizeof(struct xfer_adv),
		.timeout_ms = s->o->timeout_s * 1000,
	};
	struct xfer_adv adv = {
		.magic = htobe32(XFER_MAGIC),
		.version = htobe16(XFER_VERSION),
		.fill = htobe16(s->o->fill),
		.addr = htobe64(s->data.addr),
		.rkey = htobe32(s->data.rkey),
		/* UD: one packet */
		.max_msg = htobe32(ud && s->ud_mtu < XFER_MSG_MAX ?
				   s->ud_mtu : XFER_MSG_MAX),
		.length = htobe64(s->o->size),
	};
	int ret;

	memcpy(ac.private_data, &adv, sizeof(adv));
	if (!s->accept_waits) {
		ac.flags |= KRDMA_CONN_ACCEPT_ASYNC;
		ac.timeout_ms = 0;
	}
	ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
	if (ret)
		err_msg("serve: accepting %s over %s: %s", c->peer,
			transport_name(c->transport), strerror(-ret));
	c->qpn = ac.qp_num;
	/* UD's passive side has no ESTABLISHED: the SIDR reply ends it */
	if (!ret && !s->accept_waits && !ud)
		c->accepting = loop_now_ms();
	return ret;
}

/* The handshake is over: the client is announced; -T counts from here. */
static void sv_established(struct sv_client *c)
{
	c->accepting = 0;
	c->last = loop_now_ms();
	sv_event("connect", c);
	pr_str("transport", transport_name(c->transport));
	pr_u64("qpn", c->qpn);
	sv_event_end();
}

/* What a client holds, released; its slot free again. */
static void sv_release(struct sv *s, struct sv_client *c)
{
	verbs_destroy(s->fd, c->conn);
	if (c->ah)
		verbs_destroy(s->fd, c->ah);
	verbs_buf_free(s->fd, &c->ctrl);
	free(c->seen);
	c->seen = NULL;
	c->used = false;
}

/* The handshake of an accept failed: the client was never served. */
static void sv_accept_failed(struct sv *s, struct sv_client *c, int err)
{
	err_msg("serve: accepting %s over %s: %s", c->peer,
		transport_name(c->transport), strerror(err));
	sv_release(s, c);
	s->failures++;
}

/* An event of a connection still accepting: how its handshake ended. */
static void sv_accept_event(struct sv *s, struct sv_client *c,
			    const struct krdma_event *ev)
{
	switch (ev->type) {
	case KRDMA_EVENT_ESTABLISHED:
		sv_established(c);
		break;
	case KRDMA_EVENT_REJECTED:
		sv_accept_failed(s, c, ECONNREFUSED);
		break;
	case KRDMA_EVENT_UNREACHABLE:
	case KRDMA_EVENT_CONNECT_ERROR:
		sv_accept_failed(s, c, ev->status == -ETIMEDOUT ? ETIMEDOUT :
				 EHOSTUNREACH);
		break;
	case KRDMA_EVENT_DISCONNECTED:
		/*
		 * Only a connected peer disconnects: its answer to the reply
		 * was lost, and its requests may wait in the CQ (drained as
		 * any client's after a disconnect).
		 */
		sv_established(c);
		c->disconnected = loop_now_ms();
		break;
	case KRDMA_EVENT_CONN_ERROR:
		sv_accept_failed(s, c, ECONNRESET);
		break;
	case KRDMA_EVENT_DEVICE_REMOVAL:
		sv_accept_failed(s, c, ENODEV);
		break;
	}
}

/*
 * UD: the connection knows no peer; answers go through an address handle
 * to the client's address (on RoCE v2 an IPv4 address is the IPv4-mapped
 * GID).
 */
static int sv_ud_ah(struct sv *s, struct sv_client *c,
		    const struct krdma_sockaddr *peer)
{
	struct krdma_ah_create ah = {
		.size = sizeof(ah),
		.conn_handle = c->conn,
	};
	int ret;

	if (peer->family == AF_INET) {
		ah.dest_gid[10] = 0xff;
		ah.dest_gid[11] = 0xff;
		memcpy(ah.dest_gid + 12, peer->addr, 4);
	} else {
		memcpy(ah.dest_gid, peer->addr, sizeof(ah.dest_gid));
	}
	ret = krdma_ioctl(s->fd, KRDMA_AH_CREATE, &ah);
	if (ret)
		err_msg("serve: no address handle to %s", c->peer);
	c->ah = ah.handle;
	return ret;
}

static void sv_request(struct sv *s, const struct krdma_event *ev)
{
	const struct xfer_hello *h = (const void *)ev->private_data;
	char why_buf[2 * KRDMA_NAME_MAX + 96];
	const char *why = sv_check_request(s, ev, why_buf, sizeof(why_buf));
	struct sv_client *c = why ? NULL : sv_free_client(s);
	uint32_t i;
	int ret;

	if (!why && !c)
		why = "too many clients";
	if (why) {
		sv_reject(s, ev, why);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->conn = ev->handle;
	c->op = be16toh(h->op);
	c->transport = sv_transport_of(s, ev->listener);
	addr_format(&ev->peer, c->peer, sizeof(c->peer));
	ret = verbs_buf_alloc(s->fd, s->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			      SV_SEND_OFF + XFER_MSG_MAX, &c->ctrl);
	if (ret) {
		sv_reject(s, ev, "out of buffers");
		return;
	}
	ret = sv_accept(s, c);
	if (!ret && c->transport == KRDMA_TRANSPORT_UD)
		ret = sv_ud_ah(s, c, &ev->peer);
	if (ret) {
		sv_release(s, c);
		s->failures++;
		return;
	}
	c->used = true;
	c->last = loop_now_ms();
	for (i = 0; i < SV_SLOTS; i++)
		if (xfer_post_slot(s->fd, c->conn, i + 1, &c->ctrl, i,
				   c->transport))
			c->failed = c->gone = true;
	if (!c->accepting)
		sv_established(c);
}

/* The copy in progress is dropped, its temporary file removed. */
static void sv_copy_abort(struct sv *s)
{
	if (s->copy.fd >= 0) {
		close(s->copy.fd);
		unlink(s->copy.tmp);
		s->copy.fd = -1;
	}
	s->copy.owner = NULL;
	s->copy.parked = 0;
}

static void sv_copy_event(struct sv *s, const struct sv_client *c,
			  const char *result, const char *reason)
{
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	sha256_hex(s->copy.digest, hex);
	sv_event("copy", c);
	pr_str("file", s->copy.name);
	pr_u64("bytes", s->copy.flen);
	pr_str("sha256", hex);
	pr_str("result", result);
	if (reason)
		pr_str("reason", reason);
	sv_event_end();
}

/* A parked copy nobody resumed in time, or one a new copy replaces. */
static void sv_copy_drop_parked(struct sv *s, const char *why)
{
	if (s->copy.fd < 0 || s->copy.owner)
		return;
	sv_copy_event(s, NULL, "ERR", why);
	sv_copy_abort(s);
	s->failures++;
}

static void sv_finish(struct sv *s, struct sv_client *c, const char *why)
{
	/* its connection is lost: keep what was saved for a resume */
	if (s->copy.fd >= 0 && s->copy.owner == c) {
		s->copy.owner = NULL;
		s->copy.parked = loop_now_ms();
		sv_event("park", c);
		pr_str("file", s->copy.name);
		pr_fmt_u64("bytes", "%" PRIu64 " bytes saved", s->copy.got);
		pr_u64("chunks", s->copy.seq);
		sv_event_end();
	}
	if (c->superseded)
		why = "its copy went on over a new connection";
	sv_event("disconnect", c);
	pr_str("result", c->failed ? "failed" : "ok");
	if (why)
		pr_str("reason", why);
	sv_event_end();
	sv_release(s, c);
	s->served++;
	if (c->failed)
		s->failures++;
}

static int sv_reply(struct sv *s, struct sv_client *c, uint32_t type,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int sv_reply(struct sv *s, struct sv_client *c, uint32_t type,
		    const char *fmt, ...)
{
	struct xfer_msg *m = (void *)(c->ctrl.mem + SV_SEND_OFF);
	struct krdma_wr wr = {
		.wr_id = SV_SEND_WRID,
		.opcode = KRDMA_OP_SEND,
		.flags = KRDMA_WR_SIGNALED,
		.ah_handle = c->ah,
		.remote_qpn = c->peer_qpn,
		.num_sge = 1,
		.sge[0] = { .buf_handle = c->ctrl.handle,
			    .offset = SV_SEND_OFF,
			    .length = sizeof(*m) },
	};
	va_list ap;

	xfer_msg_init(m, type);
	m->seq = htobe32(c->req_seq);
	m->arg = htobe64(c->req_type);
	m->offset = htobe64(c->rep_offset);
	m->length = htobe64(c->rep_length);
	c->rep_offset = 0;
	c->rep_length = 0;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(m->text, sizeof(m->text), fmt, ap);
		va_end(ap);
	}
	if (type == XM_BAD || type == XM_ERR)
		c->failed = true;
	if (verbs_post_one(s->fd, c->conn, &wr)) {
		c->failed = c->gone = true;
		return -EIO;
	}
	return 0;
}

static bool printable(const uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

static void sv_on_send(struct sv *s, struct sv_client *c,
		       const struct xfer_msg *m, uint32_t byte_len)
{
	uint64_t len = be64toh(m->length);
	const uint8_t *p = (const void *)(m + 1);
	uint32_t crc = 0;
	const char *bad = NULL;
	char text[68];

	if (len != byte_len - sizeof(*m))
		bad = "length mismatch";
	else if ((crc = xfer_crc32(0, p, len)) != be32toh(m->crc))
		bad = "crc32 mismatch";
	sv_event("recv", NULL);
	pr_fmt_u64("bytes", "%" PRIu64 " bytes", byte_len - sizeof(*m));
	pr_str("from", c->peer);
	pr_hex("crc32", crc);
	pr_str("result", bad ? "BAD" : "OK");
	if (bad)
		pr_str("reason", bad);
	else if (len <= 64 && printable(p, len)) {
		memcpy(text, p, len);
		text[len] = 0;
		pr_str("data", text);
	}
	sv_event_end();
	if (bad)
		sv_reply(s, c, XM_BAD, "%s", bad);
	else
		sv_reply(s, c, XM_OK, "%" PRIu64 " bytes, crc32 0x%08x", len,
			 crc);
}

static void sv_on_written(struct sv *s, struct sv_client *c,
			  const struct xfer_msg *m, const struct krdma_wc *wc)
{
	uint64_t off = be64toh(m->offset), len = be64toh(m->length);
	uint64_t seed = be64toh(m->arg);
	uint32_t crc = 0, want = be32toh(m->crc);
	int64_t at = -1;
	char bad[96] = "";

	if (off > s->o->size || len > s->o->size - off)
		snprintf(bad, sizeof(bad), "range outside the buffer");
	else if ((at = xfer_pattern_check(s->data.mem + off, seed, off, len,
					  false)) >= 0)
		snprintf(bad, sizeof(bad), "pattern mismatch at offset %" PRIu64,
			 off + at);
	else if ((crc = xfer_crc32(0, s->data.mem + off, len)) != want)
		snprintf(bad, sizeof(bad), "crc32 mismatch");
	else if (!s->no_imm && (!(wc->wc_flags & KRDMA_WC_WITH_IMM) ||
				wc->imm_data != want))
		snprintf(bad, sizeof(bad), "immediate data is not the crc32");
	sv_event("write", c);
	pr_fmt_u64("bytes", "%" PRIu64 " bytes", len);
	pr_fmt_u64("offset", "at %" PRIu64, off);
	pr_hex("crc32", crc);
	pr_hex("imm", wc->imm_data);
	pr_str("result", bad[0] ? "BAD" : "OK");
	if (bad[0])
		pr_str("reason", bad);
	sv_event_end();
	if (bad[0])
		sv_reply(s, c, XM_BAD, "%s", bad);
	else
		sv_reply(s, c, XM_OK, "%" PRIu64 " bytes at %" PRIu64
			 " match", len, off);
}

/* XM_FILE with XFER_FILE_RESUME: the copy we hold, if it is this file */
static bool sv_copy_resume(struct sv *s, struct sv_client *c,
			   const struct xfer_msg *m)
{
	struct sv_client *old = s->copy.owner;

	if (!(be64toh(m->arg) & XFER_FILE_RESUME) || s->copy.fd < 0 ||
	    strcmp(s->copy.name, m->text) ||
	    s->copy.flen != be64toh(m->length) ||
	    memcmp(s->copy.digest, m->digest, sizeof(s->copy.digest)))
		return false;
	/* an owner still here has lost its connection without us noticing */
	if (old && old != c) {
		old->superseded = true;
		old->gone = true;
	}
	s->copy.owner = c;
	s->copy.parked = 0;
	sv_event("resume", c);
	pr_str("file", s->copy.name);
	pr_fmt_u64("offset", "at %" PRIu64, s->copy.got);
	pr_u64("chunks", s->copy.seq);
	sv_event_end();
	c->rep_offset = s->copy.got;
	c->rep_length = s->copy.seq;
	sv_reply(s, c, XM_NEXT, "resuming at %" PRIu64, s->copy.got);
	return true;
}

static void sv_on_file(struct sv *s, struct sv_client *c,
		       const struct xfer_msg *m)
{
	struct sv_copy *f = &s->copy;
	char why[200];
	int n;

	if (sv_copy_resume(s, c, m))
		return;
	if (f->owner) {
		sv_event("copy", c);
		pr_str("file", m->text);
		pr_str("result", "ERR");
		pr_str("reason", "another copy in progress");
		sv_event_end();
		sv_reply(s, c, XM_ERR, "busy with another copy");
		return;
	}
	sv_copy_drop_parked(s, "parked copy dropped: another copy starts");
	snprintf(f->name, sizeof(f->name), "%s", m->text);
	f->flen = be64toh(m->length);
	memcpy(f->digest, m->digest, sizeof(f->digest));
	f->got = 0;
	f->seq = 0;
	f->parked = 0;
	if (!s->o->save_dir) {
		sv_copy_event(s, c, "ERR", "no --save directory");
		sv_reply(s, c, XM_ERR, "the server runs without --save");
		return;
	}
	if (!f->name[0] || strchr(f->name, '/') || strstr(f->name, "..")) {
		sv_copy_event(s, c, "ERR", "refused file name");
		sv_reply(s, c, XM_ERR, "refused file name \"%s\"", f->name);
		return;
	}
	n = snprintf(f->final, sizeof(f->final), "%s/%s", s->o->save_dir,
		     f->name);
	snprintf(f->tmp, sizeof(f->tmp), "%s/.%s.XXXXXX", s->o->save_dir,
		 f->name);
	if (n >= (int)sizeof(f->final) || (f->fd = mkstemp(f->tmp)) < 0) {
		snprintf(why, sizeof(why), "cannot create a file in %s: %s",
			 s->o->save_dir, strerror(errno));
		f->fd = -1;
		sv_copy_event(s, c, "ERR", why);
		sv_reply(s, c, XM_ERR, "%s", why);
		return;
	}
	f->owner = c;
	sv_event("file", c);
	pr_str("name", f->name);
	pr_fmt_u64("bytes", "%" PRIu64 " bytes", f->flen);
	sv_event_end();
	sv_reply(s, c, XM_NEXT, NULL);
}

static void sv_on_chunk(struct sv *s, struct sv_client *c,
			const struct xfer_msg *m)
{
	struct sv_copy *f = &s->copy;
	uint64_t len = be64toh(m->length), done = 0;
	uint32_t seq = be32toh(m->seq), crc;
	char why[200];
	ssize_t n;

	if (f->fd < 0 || f->owner != c) {
		sv_reply(s, c, XM_ERR, "CHUNK without FILE");
		return;
	}
	if (seq != f->seq || len > s->o->size || len > f->flen - f->got ||
	    be64toh(m->offset) != f->got) {
		sv_copy_event(s, c, "ERR", "chunk out of sequence");
		sv_copy_abort(s);
		sv_reply(s, c, XM_ERR, "chunk %u out of sequence", seq);
		return;
	}
	crc = xfer_crc32(0, s->data.mem, len);
	if (crc != be32toh(m->crc)) {
		snprintf(why, sizeof(why), "chunk %u: CRC-32 0x%08x, the "
			 "client's 0x%08x", seq, crc, be32toh(m->crc));
		sv_copy_event(s, c, "ERR", why);
		sv_copy_abort(s);
		sv_reply(s, c, XM_ERR, "%s", why);
		return;
	}
	while (done < len) {
		n = pwrite(f->fd, s->data.mem + done, len - done,
			   f->got + done);
		if (n <= 0) {
			snprintf(why, sizeof(why), "write to the file: %s",
				 n < 0 ? strerror(errno) : "no space");
			sv_copy_event(s, c, "ERR", why);
			sv_copy_abort(s);
			sv_reply(s, c, XM_ERR, "%s", why);
			return;
		}
		done += n;
	}
	sv_event("chunk", c);
	pr_u64("seq", seq);
	pr_fmt_u64("bytes", "%" PRIu64 " bytes", len);
	pr_fmt_u64("offset", "at %" PRIu64, f->got);
	pr_hex("crc32", crc);
	sv_event_end();
	f->got += len;
	f->seq++;
	sv_reply(s, c, XM_NEXT, NULL);
}

/* The digest of what is on disk, read back. */
static int sv_file_digest(int fd, uint64_t len, uint8_t *digest)
{
	static uint8_t buf[1 << 16];
	struct sha256_ctx sha;
	uint64_t off = 0;
	ssize_t n;

	sha256_init(&sha);
	while (off < len) {
		n = pread(fd, buf, sizeof(buf), off);
		if (n <= 0)
			return -1;
		sha256_update(&sha, buf, n);
		off += n;
	}
	if (pread(fd, buf, 1, off) != 0)
		return -1;	/* longer than announced */
	sha256_final(&sha, digest);
	return 0;
}

static void sv_on_done(struct sv *s, struct sv_client *c)
{
	struct sv_copy *f = &s->copy;
	uint8_t digest[SHA256_DIGEST_SIZE];
	const char *bad = NULL;
	int dfd;

	if (f->fd < 0 || f->owner != c) {
		sv_reply(s, c, XM_ERR, "DONE without FILE");
		return;
	}
	if (f->got != f->flen)
		bad = "short file";
	else if (fsync(f->fd) || sv_file_digest(f->fd, f->flen, digest))
		bad = "cannot read back the saved file";
	else if (memcmp(digest, f->digest, sizeof(digest)))
		bad = "SHA-256 mismatch";
	else if (fchmod(f->fd, 0644) || rename(f->tmp, f->final))
		bad = "cannot rename the file into place";
	if (bad) {
		sv_copy_event(s, c, "BAD", bad);
		sv_copy_abort(s);
		sv_reply(s, c, XM_BAD, "%s", bad);
		return;
	}
	close(f->fd);
	f->fd = -1;
	f->owner = NULL;
	dfd = open(s->o->save_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	sv_copy_event(s, c, "GOOD", NULL);
	sv_reply(s, c, XM_GOOD, "saved as %s", f->final);
}

/* A stream message: counted by its @seq, not answered. */
static void sv_on_stream(struct sv *s, struct sv_client *c,
			 const struct xfer_msg *m, uint32_t byte_len,
			 const struct krdma_wc *wc)
{
	uint64_t len = be64toh(m->length);
	uint32_t seq = be32toh(m->seq);

	if (len != byte_len - sizeof(*m) || seq >= XFER_STREAM_MAX ||
	    xfer_crc32(0, m + 1, len) != be32toh(m->crc) ||
	    (!s->no_imm && (!(wc->wc_flags & KRDMA_WC_WITH_IMM) ||
			    wc->imm_data != seq))) {
		c->st_bad++;
		return;
	}
	if (!c->seen) {
		c->seen = calloc(XFER_STREAM_MAX / 8 + 1, 1);
		if (!c->seen) {
			c->st_bad++;
			return;
		}
	}
	if (c->seen[seq / 8] & 1U << (seq % 8)) {
		c->st_dup++;
		return;
	}
	c->seen[seq / 8] |= 1U << (seq % 8);
	c->st_recv++;
}

static bool sv_seen(const struct sv_client *c, uint32_t seq)
{
	return c->seen && c->seen[seq / 8] & 1U << (seq % 8);
}

/* XM_TALLY: what arrived of the @length messages sent, and what did not */
static void sv_on_tally(struct sv *s, struct sv_client *c,
			const struct xfer_msg *m)
{
	uint64_t sent = be64toh(m->length);
	uint32_t seq, got = 0, lost;
	char list[XFER_TEXT_MAX];
	size_t at;
	int n;

	if (sent > XFER_STREAM_MAX) {
		sv_reply(s, c, XM_ERR, "a stream has at most %u messages",
			 XFER_STREAM_MAX);
		return;
	}
	for (seq = 0; seq < sent; seq++)
		got += sv_seen(c, seq);
	lost = sent - got;
	n = snprintf(list, sizeof(list), "lost %u of %" PRIu64 ":", lost,
		     sent);
	at = n;
	for (seq = 0; seq < sent && lost; seq++) {
		if (sv_seen(c, seq))
			continue;
		n = snprintf(list + at, sizeof(list) - at, " %u", seq);
		if (n < 0 || at + n >= sizeof(list) - 4) {
			snprintf(list + at, sizeof(list) - at, " ...");
			break;
		}
		at += n;
	}
	if (!c->st_told) {
		c->st_told = true;
		sv_event("stream", c);
		pr_u64("sent", sent);
		pr_u64("received", got);
		pr_u64("lost", lost);
		pr_u64("duplicates", c->st_dup);
		pr_u64("bad", c->st_bad);
		if (lost)
			pr_str("missing", list);
		pr_str("result", lost || c->st_bad ? "LOST" : "OK");
		sv_event_end();
	}
	c->rep_offset = got;
	c->rep_length = lost;
	if (lost)
		sv_reply(s, c, XM_BAD, "%s", list);
	else if (c->st_bad)
		sv_reply(s, c, XM_BAD, "%u messages arrived damaged",
			 c->st_bad);
	else
		sv_reply(s, c, XM_OK, "all %" PRIu64 " arrived", sent);
}

static void sv_on_bye(struct sv_client *c, const struct xfer_msg *m)
{
	c->bye = true;
	sv_event("done", c);
	pr_str("note", m->text);
	sv_event_end();
	/* a UD client has nothing to disconnect */
	if (c->transport == KRDMA_TRANSPORT_UD)
		c->gone = true;
}

static void sv_on_recv(struct sv *s, struct sv_client *c,
		       const struct krdma_wc *wc)
{
	/* the message, copied out so that its slot takes the next at once */
	static uint64_t copy[XFER_MSG_MAX / 8 + 1];
	const struct xfer_msg *m = (const void *)copy, *in;
	uint32_t slot = wc->wr_id - 1, len, type;
	const char *why;

	in = xfer_slot_msg(&c->ctrl, slot, c->transport, wc->byte_len, &len);
	if (len > XFER_MSG_MAX)
		len = XFER_MSG_MAX;
	memcpy(copy, in, len);
	/*
	 * Before the answer: a client that sends again as soon as it is
	 * answered (a stream after its XM_SYNC) finds every receive posted.
	 */
	if (xfer_post_slot(s->fd, c->conn, wc->wr_id, &c->ctrl, slot,
			   c->transport)) {
		c->failed = c->gone = true;
		return;
	}
	why = xfer_msg_check(m, len);
	if (why) {
		sv_event("error", c);
		pr_str("reason", why);
		sv_event_end();
		c->failed = c->gone = true;
		return;
	}
	type = be16toh(m->type);
	c->req_type = type;
	c->req_seq = be32toh(m->seq);
	if (c->transport == KRDMA_TRANSPORT_UD)
		c->peer_qpn = wc->src_qp;
	switch (type) {
	case XM_HELLO:
		sv_reply(s, c, XM_OK, "hello");
		break;
	case XM_SEND:
		if (be64toh(m->arg) & XFER_SEND_STREAM)
			sv_on_stream(s, c, m, len, wc);
		else
			sv_on_send(s, c, m, len);
		break;
	case XM_SYNC:
		c->rep_offset = c->st_recv;
		sv_reply(s, c, XM_OK, NULL);
		break;
	case XM_TALLY:
		sv_on_tally(s, c, m);
		break;
	case XM_WRITTEN:
		sv_on_written(s, c, m, wc);
		break;
	case XM_FILE:
		sv_on_file(s, c, m);
		break;
	case XM_CHUNK:
		sv_on_chunk(s, c, m);
		break;
	case XM_DONE:
		sv_on_done(s, c);
		break;
	case XM_BYE:
		sv_on_bye(c, m);
		break;
	default:
		sv_reply(s, c, XM_ERR, "unknown message type %u", type);
		break;
	}
}

static void sv_poll_client(struct sv *s, struct sv_client *c)
{
	struct krdma_wc wcs[8];
	int i, n;

	for (;;) {
		n = verbs_poll(s->fd, c->conn, wcs, ARRAY_SIZE(wcs), 0);
		if (n == -EINTR)
			return;
		if (n < 0) {
			krdma_report(KRDMA_POLL, n);
			c->failed = c->gone = true;
			return;
		}
		if (!n)
			return;
		c->last = loop_now_ms();
		for (i = 0; i < n; i++) {
			const struct krdma_wc *wc = &wcs[i];

			if (wc->status == 5 /* WR_FLUSH_ERR */) {
				c->gone = true;
				continue;
			}
			if (wc->status) {
				sv_event("error", c);
				pr_str("completion", wc->wr_id == SV_SEND_WRID ?
				       "send" : "receive");
				pr_str("status", wc_status_name(wc->status));
				sv_event_end();
				c->failed = c->gone = true;
				continue;
			}
			/*
			 * A request before ESTABLISHED: the client had the
			 * reply and its answer was lost or is late, as IB's
			 * COMM_EST.  What came before a disconnect still
			 * counts, and a client answered BAD may ask again (a
			 * lost answer).
			 */
			if (wc->wr_id != SV_SEND_WRID && c->accepting)
				sv_established(c);
			if (wc->wr_id != SV_SEND_WRID && !c->gone)
				sv_on_recv(s, c, wc);
		}
	}
}

static void sv_events(struct sv *s)
{
	struct krdma_event evs[16];
	struct sv_client *c;
	int i, n;

	do {
		n = verbs_get_events(s->fd, evs, ARRAY_SIZE(evs), 0);
		if (n < 0) {
			if (n != -EINTR)
				krdma_report(KRDMA_GET_EVENTS, n);
			return;
		}
		for (i = 0; i < n; i++) {
			const struct krdma_event *ev = &evs[i];

			if (ev->type == KRDMA_EVENT_CONNECT_REQUEST) {
				sv_request(s, ev);
				continue;
			}
			/* no more clients can come: stop, as on a signal */
			if (ev->type == KRDMA_EVENT_DEVICE_REMOVAL &&
			    sv_is_listener(s, ev->handle)) {
				err_msg("serve: the RDMA device was removed");
				s->device_gone = true;
				continue;
			}
			if (ev->type == KRDMA_EVENT_OVERFLOW) {
				warn_msg("serve: %d events lost (the event queue was full)",
					 ev->status);
				continue;
			}
			c = sv_find(s, ev->handle);
			if (c && c->accepting) {
				sv_accept_event(s, c, ev);
				continue;
			}
			/*
			 * Receives that completed before a disconnect (the
			 * client's BYE) may still be in the CQ: the flush of
			 * the ones still posted comes after them and ends the
			 * client (SV_DRAIN_MS at most).
			 */
			if (c && ev->type == KRDMA_EVENT_DISCONNECTED &&
			    !c->disconnected)
				c->disconnected = loop_now_ms();
			if (c && (ev->type == KRDMA_EVENT_CONN_ERROR ||
				  ev->type == KRDMA_EVENT_DEVICE_REMOVAL))
				c->gone = true;
		}
	} while (n == ARRAY_SIZE(evs));
}

static void sv_loop(struct sv *s)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
	int64_t idle = (int64_t)s->o->timeout_s * 1000;
	unsigned int i;

	while (!loop_stop && !s->device_gone) {
		if (s->o->count && s->served >= s->o->count)
			break;
		poll(&pfd, 1, 200);
		sv_events(s);
		if (s->copy.parked && loop_now_ms() - s->copy.parked > idle)
			sv_copy_drop_parked(s, "parked copy not resumed in time");
		for (i = 0; i < SV_MAX_CLIENTS; i++) {
			struct sv_client *c = &s->clients[i];

			if (!c->used)
				continue;
			sv_poll_client(s, c);
			/*
			 * A flush before any event: the peer connected and
			 * left (its DISCONNECTED, read first, would say the
			 * same), or a local failure; it ends as any client.
			 */
			if (c->accepting && c->gone)
				sv_established(c);
			if (c->accepting) {
				if (loop_now_ms() - c->accepting > idle)
					sv_accept_failed(s, c, ETIMEDOUT);
				continue;
			}
			if (c->disconnected &&
			    loop_now_ms() - c->disconnected > SV_DRAIN_MS)
				c->gone = true;
			if (c->gone)
				sv_finish(s, c, c->bye ? NULL :
					  "gone without BYE");
			else if (loop_now_ms() - c->last > idle) {
				c->failed = true;
				sv_finish(s, c, "idle timeout");
			}
		}
	}
}

int cmd_serve(int argc, char **argv)
{
	struct sv_opts o = {
		.port = XFER_DEFAULT_PORT,
		.transports = SV_RC,
		.size = XFER_DEFAULT_SIZE,
		.timeout_s = XFER_DEFAULT_TIMEOUT,
	};
	struct sv s = { .o = &o, .copy.fd = -1 };
	struct krdma_sockaddr addr = { .family = AF_INET };
	unsigned int i;
	int ret;

	ret = sv_parse(argc, argv, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	/* -a HOST:PORT: its port, else -p's */
	addr.port = o.port;
	if (o.addr) {
		ret = addr_parse("serve", "-a/--addr", o.addr, o.port,
				 &addr);
		if (ret)
			return ret;
	}
	loop_catch_signals();
	s.fd = krdma_open();
	if (s.fd < 0) {
		krdma_report_open(s.fd);
		return 1;
	}
	pr_obj_begin(NULL);
	pr_arr_begin("events");
	ret = sv_setup(&s, &addr);
	if (!ret)
		sv_loop(&s);
	for (i = 0; i < SV_MAX_CLIENTS; i++) {
		if (!s.clients[i].used)
			continue;
		if (s.clients[i].accepting) {
			sv_accept_failed(&s, &s.clients[i], ECANCELED);
			continue;
		}
		s.clients[i].failed = true;
		sv_finish(&s, &s.clients[i], "server stopping");
	}
	sv_copy_drop_parked(&s, "parked copy dropped: server stopping");
	pr_arr_end();
	if (!ret) {
		pr_u64("served", s.served);
		pr_u64("failed", s.failures);
	}
	pr_obj_end();
	verbs_buf_free(s.fd, &s.data);
	close(s.fd);
	return ret || s.failures || s.device_gone ? 1 : 0;
}
