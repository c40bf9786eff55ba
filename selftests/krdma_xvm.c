// SPDX-License-Identifier: GPL-2.0
/*
 * krdma data path across two hosts (two VMs joined by a wire): every op of
 * every transport that has it, over connections set up by hand and by
 * rdma_cm, at sizes up to the port's largest message, every byte checked
 * where it landed; atomics against one counter from several connections at
 * once; immediate data checked.
 *
 *   krdma_xvm --serve [--port N] [--timeout SECS]
 *	the peer's side (two_vm_peer.sh): a TCP control server; each control
 *	connection is one session (a process with its own /dev/krdma fd) that
 *	creates the server ends of krdma connections, a buffer, posts
 *	receives and answers what landed
 *   krdma_xvm	the tests (two_vm.sh), against $PEER_ADDR (port $XVM_PORT,
 *	default 18620); without PEER_ADDR every case skips
 *
 * The control protocol is fixed-size binary structs (both ends run this
 * binary): a request, then exactly one reply.
 */
#include "krdma_test.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#define XVM_PORT 18620
#define XVM_MAGIC 0x6b78766du
#define XVM_DATA 256		/* bytes READ_BYTES / WRITE_BYTES carry */
#define XVM_MAX_CONNS 16
#define XVM_CM_MS 15000		/* rdma_cm steps: rxe under TCG is slow */
#define XVM_POLL_MS 60000	/* one completion, 8 MiB included */
#define XVM_SOCK_MS 150000	/* one control reply */
#define XVM_SLACK 4096		/* poison checked past every message */
#define XVM_ROFF 4099		/* second messages land this far in */
#define XVM_POISON_BYTE 0xa5
#define XVM_MIB (1024 * 1024)
/*
 * The largest message sent: the ports' max_msg_sz (8 MiB on rxe in 6.1,
 * 2 GiB in 6.12), but no more than this (env XVM_MAX_MSG, 0: no cap): a
 * 1 GiB guest has no room for 2 GiB buffers, and TCG moves some 10 MB/s.
 */
#define XVM_MAX_MSG_CAP (8 * XVM_MIB)
#define XVM_TEST_SECS 300

enum xvm_cmd {
	XVM_HELLO = 1,		/* open the session: transport, setup */
	XVM_BUF,		/* (re)allocate the session's buffer: len */
	XVM_CONN_NEW,		/* a server end; manual: its QP; cm: the port */
	XVM_CONN_CONNECT,	/* manual: RTR/RTS to the client's QP; cm: accepted? */
	XVM_POISON,		/* memset(off, len, byte) */
	XVM_FILL,		/* the pattern @seed at [off, off + len) */
	XVM_CHECK,		/* [off, off + len) the pattern, poison after */
	XVM_POST_RECV,		/* RECV of [off, off + len) (num_sge 0: none) */
	XVM_WAIT_WC,		/* one completion of conn within timeout_ms */
	XVM_READ_BYTES,		/* [off, off + len), len <= XVM_DATA */
	XVM_WRITE_BYTES,
};

static const char *const xvm_cmd_names[] = {
	"?", "HELLO", "BUF", "CONN_NEW", "CONN_CONNECT", "POISON", "FILL",
	"CHECK", "POST_RECV", "WAIT_WC", "READ_BYTES", "WRITE_BYTES",
};

enum { SETUP_MANUAL, SETUP_CM };

struct xvm_req {
	uint32_t magic;
	uint32_t cmd;
	uint32_t conn;		/* index of the server's connection */
	uint32_t transport;
	uint32_t setup;
	uint32_t qp_num, psn, lid;	/* the client's QP (manual) */
	uint8_t gid[16];
	uint64_t off, len;
	uint64_t poison_len;	/* CHECK: poison bytes after the message */
	uint64_t pre_len;	/* CHECK: and at [0, pre_len) */
	uint64_t wr_id;
	uint32_t seed;
	uint32_t timeout_ms;
	uint32_t num_sge;
	uint32_t byte;
	uint8_t data[XVM_DATA];
};

struct xvm_rep {
	uint32_t magic;
	int32_t err;		/* 0 or an errno */
	char msg[160];		/* what failed */
	uint32_t conn;
	uint32_t qp_num, psn, lid;
	uint8_t gid[16];
	uint32_t mtu, max_msg_sz, port, rkey;
	uint64_t addr, len;
	int64_t bad;		/* CHECK: first byte off the pattern, or -1 */
	uint32_t bad_got, bad_want;
	int64_t bad_poison;	/* CHECK: first poison byte changed, or -1 */
	uint32_t poison_got;
	int64_t bad_pre;	/* CHECK: the same before the message */
	uint32_t pre_got;
	int32_t nwc;		/* WAIT_WC: completions returned (0 or 1) */
	struct krdma_wc wc;
	uint32_t state, last_wc_status;	/* WAIT_WC: the QP, when none came */
	uint8_t data[XVM_DATA];
};

/* ------------------------------------------------------------------------
 * Patterns a word at a time: the bytes kt_pattern_byte() gives.
 */

static inline uint64_t xvm_word(uint32_t seed, uint64_t g)
{
	uint64_t x = (g + 1) * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)seed * 0xbf58476d1ce4e5b9ull + seed);

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return x;
}

static void xvm_fill(uint8_t *p, uint64_t len, uint32_t seed)
{
	uint64_t g = 0, i;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; g < len / 8; g++) {
		uint64_t x = xvm_word(seed, g);

		memcpy(p + 8 * g, &x, 8);
	}
#endif
	for (i = 8 * g; i < len; i++)
		p[i] = kt_pattern_byte(seed, i);
}

static int64_t xvm_check(const uint8_t *p, uint64_t len, uint32_t seed)
{
	uint64_t g = 0, i;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; g < len / 8; g++) {
		uint64_t x;

		memcpy(&x, p + 8 * g, 8);
		if (x != xvm_word(seed, g))
			break;
	}
#endif
	for (i = 8 * g; i < len; i++)
		if (p[i] != kt_pattern_byte(seed, i))
			return i;
	return -1;
}

/* ------------------------------------------------------------------------
 * The control socket
 */

static int xvm_sock_full(int s, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? send(s, p, len, MSG_NOSIGNAL) :
				  recv(s, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n) {
			errno = ECONNRESET;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static void xvm_sock_timeouts(int s, uint32_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	int one = 1;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static uint16_t xvm_port(void)
{
	const char *p = getenv("XVM_PORT");

	return p && *p ? (uint16_t)atoi(p) : XVM_PORT;
}

/* ------------------------------------------------------------------------
 * Server: one process per control connection
 */

struct srv {
	int sock, fd;
	uint32_t transport, setup;
	struct kt_dev dev;
	struct kt_buf buf;
	uint8_t *map;
	uint32_t listener;
	uint16_t port;
	uint32_t nconns;
	struct kt_conn conns[XVM_MAX_CONNS];
	int accept_err[XVM_MAX_CONNS];
	char accept_msg[XVM_MAX_CONNS][160];
};

#define srv_fail(rep, e, ...)						\
	do {								\
		(rep)->err = (e) ? (e) : EIO;				\
		snprintf((rep)->msg, sizeof((rep)->msg), __VA_ARGS__);	\
	} while (0)

static bool srv_range(struct srv *s, const struct xvm_req *req,
		      uint64_t extra, struct xvm_rep *rep)
{
	if (!s->map) {
		srv_fail(rep, EINVAL, "no buffer");
		return false;
	}
	if (req->off > s->buf.len || req->len > s->buf.len - req->off ||
	    extra > s->buf.len - req->off - req->len) {
		srv_fail(rep, EINVAL, "range %llu+%llu+%llu outside the %llu-byte buffer",
			 (unsigned long long)req->off,
			 (unsigned long long)req->len,
			 (unsigned long long)extra,
			 (unsigned long long)s->buf.len);
		return false;
	}
	return true;
}

static struct kt_conn *srv_conn(struct srv *s, const struct xvm_req *req,
				struct xvm_rep *rep)
{
	if (req->conn >= s->nconns || !s->conns[req->conn].handle) {
		srv_fail(rep, ENOENT, "no connection %u", req->conn);
		return NULL;
	}
	return &s->conns[req->conn];
}

static void srv_hello(struct srv *s, const struct xvm_req *req,
		      struct xvm_rep *rep)
{
	const char *why = krdma_unavailable();

	if (s->fd >= 0) {
		srv_fail(rep, EINVAL, "HELLO twice");
		return;
	}
	if (why) {
		srv_fail(rep, ENODEV, "%s", why);
		return;
	}
	s->transport = req->transport;
	s->setup = req->setup;
	s->fd = krdma_open();
	if (s->fd < 0) {
		srv_fail(rep, errno, "open: %s", strerror(errno));
		return;
	}
	if (kt_dev_pick(s->fd, NULL, &s->dev)) {
		srv_fail(rep, errno, "no device with an active port");
		return;
	}
	rep->mtu = s->dev.port.active_mtu;
	rep->max_msg_sz = s->dev.port.max_msg_sz;
	memcpy(rep->gid, s->dev.gid, 16);
}

static void srv_buf(struct srv *s, const struct xvm_req *req,
		    struct xvm_rep *rep)
{
	if (s->map) {
		kt_buf_munmap(s->map, &s->buf);
		kt_destroy(s->fd, s->buf.handle);
		s->map = NULL;
	}
	if (kt_buf_alloc(s->fd, s->dev.dev_index, KT_ACCESS_ALL, req->len,
			 &s->buf)) {
		srv_fail(rep, errno, "BUF_ALLOC %llu: %s",
			 (unsigned long long)req->len, strerror(errno));
		return;
	}
	s->map = kt_buf_mmap(s->fd, &s->buf);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		srv_fail(rep, errno, "mmap: %s", strerror(errno));
		return;
	}
	rep->addr = s->buf.addr;
	rep->rkey = s->buf.rkey;
	rep->len = s->buf.len;
}

/* Wait for the CONNECT_REQUEST on our listener and accept it. */
static void srv_accept(struct srv *s, uint32_t idx)
{
	uint64_t end = kt_now_ms() + 2 * XVM_CM_MS;
	struct krdma_cm_accept a;
	struct krdma_event ev;
	int *err = &s->accept_err[idx];
	char *msg = s->accept_msg[idx];

	for (;;) {
		struct krdma_get_events g = {
			.size = sizeof(g),
			.num_events = 1,
			.event_entry_size = sizeof(ev),
			.events_uptr = (uintptr_t)&ev,
		};
		uint64_t now = kt_now_ms();

		if (now >= end) {
			*err = ETIMEDOUT;
			snprintf(msg, 160, "no CONNECT_REQUEST within %u ms",
				 2 * XVM_CM_MS);
			return;
		}
		g.timeout_ms = end - now;
		if (ioctl(s->fd, KRDMA_GET_EVENTS, &g)) {
			if (errno == EINTR)
				continue;
			*err = errno;
			snprintf(msg, 160, "GET_EVENTS: %s", strerror(errno));
			return;
		}
		if (g.num_events == 1 &&
		    ev.type == KRDMA_EVENT_CONNECT_REQUEST &&
		    ev.listener == s->listener)
			break;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.handle = ev.handle;
	a.timeout_ms = XVM_CM_MS;
	if (ioctl(s->fd, KRDMA_CM_ACCEPT, &a)) {
		*err = errno;
		snprintf(msg, 160, "CM_ACCEPT: %s", strerror(errno));
		return;
	}
	s->conns[idx].handle = ev.handle;
	s->conns[idx].qp_num = a.qp_num;
	s->conns[idx].transport = s->transport;
	*err = 0;
}

/* Returns true if an accept must follow the reply. */
static bool srv_conn_new(struct srv *s, const struct xvm_req *req,
			 struct xvm_rep *rep)
{
	struct kt_conn *c;

	if (s->fd < 0) {
		srv_fail(rep, EINVAL, "no HELLO");
		return false;
	}
	if (s->nconns >= XVM_MAX_CONNS) {
		srv_fail(rep, ENOSPC, "%u connections already", s->nconns);
		return false;
	}
	c = &s->conns[s->nconns];
	if (s->setup == SETUP_MANUAL) {
		if (kt_conn_create(s->fd, &s->dev, s->transport, 0, NULL, c)) {
			srv_fail(rep, errno, "CONN_CREATE: %s", strerror(errno));
			return false;
		}
		rep->conn = s->nconns++;
		rep->qp_num = c->qp_num;
		rep->psn = c->psn;
		rep->lid = c->lid;
		memcpy(rep->gid, c->gid, 16);
		return false;
	}
	if (!s->listener) {
		struct krdma_cm_listen l = {
			.size = sizeof(l),
			.transport = s->transport,
		};

		if (kc_sockaddr(&l.addr, kt_test_addr(false), 0) ||
		    ioctl(s->fd, KRDMA_CM_LISTEN, &l)) {
			srv_fail(rep, errno, "CM_LISTEN %s: %s",
				 kt_test_addr(false), strerror(errno));
			return false;
		}
		s->listener = l.handle;
		s->port = l.port;
	}
	memset(c, 0, sizeof(*c));
	rep->conn = s->nconns++;
	rep->port = s->port;
	s->accept_err[rep->conn] = EINPROGRESS;
	return true;
}

static void srv_conn_connect(struct srv *s, const struct xvm_req *req,
			     struct xvm_rep *rep)
{
	struct krdma_conn_modify m;
	struct kt_conn peer = {
		.qp_num = req->qp_num,
		.psn = req->psn,
		.lid = req->lid,
	};

	if (req->conn >= s->nconns) {
		srv_fail(rep, ENOENT, "no connection %u", req->conn);
		return;
	}
	if (s->setup == SETUP_CM) {
		if (s->accept_err[req->conn]) {
			srv_fail(rep, s->accept_err[req->conn], "%s",
				 s->accept_msg[req->conn]);
			return;
		}
		rep->qp_num = s->conns[req->conn].qp_num;
		return;
	}
	memcpy(peer.gid, req->gid, 16);
	kt_modify_init(&m, &s->conns[req->conn],
		       s->transport == KRDMA_TRANSPORT_UD ? NULL : &peer);
	if (ioctl(s->fd, KRDMA_CONN_MODIFY, &m)) {
		srv_fail(rep, errno, "CONN_MODIFY: %s", strerror(errno));
		return;
	}
	rep->qp_num = s->conns[req->conn].qp_num;
}

static void srv_check(struct srv *s, const struct xvm_req *req,
		      struct xvm_rep *rep)
{
	const uint8_t *p;

	if (!srv_range(s, req, req->poison_len, rep))
		return;
	if (req->pre_len > req->off) {
		srv_fail(rep, EINVAL, "poison before of %llu at %llu",
			 (unsigned long long)req->pre_len,
			 (unsigned long long)req->off);
		return;
	}
	rep->bad_pre = kt_check_byte(s->map, req->pre_len, req->byte);
	if (rep->bad_pre >= 0)
		rep->pre_got = s->map[rep->bad_pre];
	p = s->map + req->off;
	rep->bad = xvm_check(p, req->len, req->seed);
	if (rep->bad >= 0) {
		rep->bad_got = p[rep->bad];
		rep->bad_want = kt_pattern_byte(req->seed, rep->bad);
	}
	rep->bad_poison = kt_check_byte(p + req->len, req->poison_len,
					req->byte);
	if (rep->bad_poison >= 0)
		rep->poison_got = p[req->len + rep->bad_poison];
}

static void srv_post_recv(struct srv *s, const struct xvm_req *req,
			  struct xvm_rep *rep)
{
	struct kt_conn *c = srv_conn(s, req, rep);
	struct krdma_wr wr;

	if (!c)
		return;
	kt_wr_init(&wr, req->wr_id, KRDMA_OP_RECV, 0);
	if (req->num_sge) {
		if (!srv_range(s, req, 0, rep))
			return;
		kt_wr_sge(&wr, s->buf.handle, req->off, req->len);
	}
	if (kt_post1(s->fd, c->handle, &wr))
		srv_fail(rep, errno, "POST RECV: %s", strerror(errno));
}

static void srv_wait_wc(struct srv *s, const struct xvm_req *req,
			struct xvm_rep *rep)
{
	struct kt_conn *c = srv_conn(s, req, rep);
	struct krdma_conn_query q;
	int n;

	if (!c)
		return;
	n = kt_poll_n(s->fd, c->handle, &rep->wc, 1, req->timeout_ms);
	if (n < 0) {
		srv_fail(rep, errno, "POLL: %s", strerror(errno));
		return;
	}
	rep->nwc = n;
	if (!kt_conn_query(s->fd, c->handle, &q)) {
		rep->state = q.state;
		rep->last_wc_status = q.last_wc_status;
	}
}

static void srv_request(struct srv *s, const struct xvm_req *req,
			struct xvm_rep *rep, bool *accept)
{
	switch (req->cmd) {
	case XVM_HELLO:
		srv_hello(s, req, rep);
		break;
	case XVM_BUF:
		if (s->fd < 0)
			srv_fail(rep, EINVAL, "no HELLO");
		else
			srv_buf(s, req, rep);
		break;
	case XVM_CONN_NEW:
		*accept = srv_conn_new(s, req, rep);
		break;
	case XVM_CONN_CONNECT:
		srv_conn_connect(s, req, rep);
		break;
	case XVM_POISON:
		if (srv_range(s, req, 0, rep))
			memset(s->map + req->off, req->byte, req->len);
		break;
	case XVM_FILL:
		if (srv_range(s, req, 0, rep))
			xvm_fill(s->map + req->off, req->len, req->seed);
		break;
	case XVM_CHECK:
		srv_check(s, req, rep);
		break;
	case XVM_POST_RECV:
		srv_post_recv(s, req, rep);
		break;
	case XVM_WAIT_WC:
		srv_wait_wc(s, req, rep);
		break;
	case XVM_READ_BYTES:
		if (req->len > XVM_DATA)
			srv_fail(rep, EINVAL, "READ_BYTES of %llu",
				 (unsigned long long)req->len);
		else if (srv_range(s, req, 0, rep))
			memcpy(rep->data, s->map + req->off, req->len);
		break;
	case XVM_WRITE_BYTES:
		if (req->len > XVM_DATA)
			srv_fail(rep, EINVAL, "WRITE_BYTES of %llu",
				 (unsigned long long)req->len);
		else if (srv_range(s, req, 0, rep))
			memcpy(s->map + req->off, req->data, req->len);
		break;
	default:
		srv_fail(rep, EINVAL, "unknown command %u", req->cmd);
	}
}

static int srv_session(int sock, const char *who)
{
	struct srv s = { .sock = sock, .fd = -1 };
	struct xvm_req req;
	struct xvm_rep rep;

	xvm_sock_timeouts(sock, 300 * 1000);
	for (;;) {
		bool accept = false;

		if (xvm_sock_full(sock, &req, sizeof(req), false))
			break;
		if (req.magic != XVM_MAGIC) {
			fprintf(stderr, "krdma_xvm: %s: bad request\n", who);
			break;
		}
		memset(&rep, 0, sizeof(rep));
		rep.magic = XVM_MAGIC;
		srv_request(&s, &req, &rep, &accept);
		if (rep.err)
			fprintf(stderr, "krdma_xvm: %s: %s: %s\n", who,
				req.cmd < ARRAY_SIZE(xvm_cmd_names) ?
				xvm_cmd_names[req.cmd] : "?", rep.msg);
		if (xvm_sock_full(sock, &rep, sizeof(rep), true))
			break;
		if (accept)
			srv_accept(&s, rep.conn);
	}
	/* closing the fd destroys the connections, the listener, the buffer */
	if (s.fd >= 0)
		close(s.fd);
	close(sock);
	return 0;
}

static int xvm_serve(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sigaction sa = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };
	unsigned int lifetime = 900;
	uint16_t port = xvm_port();
	uint64_t end;
	int ls, one = 1, i;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			lifetime = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: krdma_xvm --serve [--port N] [--timeout SECS]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGCHLD, &sa, NULL);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		return 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_port = htons(port);
	if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 16)) {
		fprintf(stderr, "krdma_xvm: port %u: %s\n", port, strerror(errno));
		return 1;
	}
	fprintf(stderr, "krdma_xvm: serving on port %u for %u s\n", port,
		lifetime);
	end = kt_now_ms() + lifetime * 1000ull;
	while (kt_now_ms() < end) {
		struct pollfd p = { .fd = ls, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		char who[64];
		pid_t pid;
		int s;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		s = accept4(ls, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
		if (s < 0)
			continue;
		snprintf(who, sizeof(who), "%s:%u", inet_ntoa(from.sin_addr),
			 ntohs(from.sin_port));
		pid = fork();
		if (!pid) {
			close(ls);
			alarm(lifetime);
			_exit(srv_session(s, who));
		}
		close(s);
	}
	close(ls);
	return 0;
}

/* ------------------------------------------------------------------------
 * Client
 */

/* A client connection and the server's end of it. */
struct xconn {
	int fd;			/* the client session it lives in */
	uint32_t handle, qp_num;
	uint32_t srv_idx, srv_qpn;
	uint32_t ah;		/* UD by hand: the server's address handle */
	uint32_t transport;
	bool cm;
};

/* The server's buffer. */
struct xremote {
	uint64_t addr, len;
	uint32_t rkey;
};

FIXTURE(xvm)
{
	int fd, sock;
	const char *peer;
	struct kt_dev dev;
	uint32_t mtu;		/* the smaller of the two ends' */
	uint64_t port_max_msg;	/* the same */
	uint64_t max_msg;	/* that, capped */
	uint8_t srv_gid[16];
	struct xconn c;
	struct xremote rb;
	struct kt_buf lb;
	uint8_t *lmap;
};

FIXTURE_VARIANT(xvm)
{
	uint32_t transport;
	uint32_t setup;
};

FIXTURE_VARIANT_ADD(xvm, rc_manual)
{
	.transport = KRDMA_TRANSPORT_RC,
	.setup = SETUP_MANUAL,
};

FIXTURE_VARIANT_ADD(xvm, rc_cm)
{
	.transport = KRDMA_TRANSPORT_RC,
	.setup = SETUP_CM,
};

FIXTURE_VARIANT_ADD(xvm, uc_manual)
{
	.transport = KRDMA_TRANSPORT_UC,
	.setup = SETUP_MANUAL,
};

FIXTURE_VARIANT_ADD(xvm, uc_cm)
{
	.transport = KRDMA_TRANSPORT_UC,
	.setup = SETUP_CM,
};

FIXTURE_VARIANT_ADD(xvm, ud_manual)
{
	.transport = KRDMA_TRANSPORT_UD,
	.setup = SETUP_MANUAL,
};

FIXTURE_VARIANT_ADD(xvm, ud_cm)
{
	.transport = KRDMA_TRANSPORT_UD,
	.setup = SETUP_CM,
};

/* One request and its reply: 0, or -1 with errno (the server's, or ours). */
static int xvm_call(int sock, uint32_t cmd, struct xvm_req *req,
		    struct xvm_rep *rep)
{
	req->magic = XVM_MAGIC;
	req->cmd = cmd;
	memset(rep, 0, sizeof(*rep));
	if (xvm_sock_full(sock, req, sizeof(*req), true) ||
	    xvm_sock_full(sock, rep, sizeof(*rep), false)) {
		int err = errno;

		snprintf(rep->msg, sizeof(rep->msg), "control socket: %s",
			 strerror(err));
		rep->err = err;
		errno = err;
		return -1;
	}
	if (rep->magic != XVM_MAGIC) {
		snprintf(rep->msg, sizeof(rep->msg), "bad reply");
		rep->err = EPROTO;
	}
	if (rep->err) {
		errno = rep->err;
		return -1;
	}
	return 0;
}

#define XVM_CALL(sock, cmd, req, rep)					\
	do {								\
		int __r = xvm_call(sock, cmd, req, rep);		\
		ASSERT_EQ(0, __r) {					\
			TH_LOG("server %s: %s", xvm_cmd_names[cmd], (rep)->msg); \
		}							\
	} while (0)

/* When the program started: the server may take 30 s from then to come up. */
static uint64_t xvm_start_ms;

static int xvm_dial(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint64_t end = xvm_start_ms + 30000;
	int s;

	/* a server that never came costs the first case, not each one */
	if (end < kt_now_ms() + 2000)
		end = kt_now_ms() + 2000;

	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -1;
		if (!connect(s, (struct sockaddr *)&sin, sizeof(sin)))
			break;
		close(s);
		if (kt_now_ms() >= end ||
		    (errno != ECONNREFUSED && errno != EHOSTUNREACH &&
		     errno != ETIMEDOUT && errno != ENETUNREACH))
			return -1;
		sleep(1);
	}
	xvm_sock_timeouts(s, XVM_SOCK_MS);
	return s;
}

FIXTURE_SETUP(xvm)
{
	const char *why = krdma_unavailable();
	struct krdma_info info;
	struct xvm_req req = {};
	struct xvm_rep rep;
	uint64_t cap;

	self->fd = self->sock = -1;
	self->peer = getenv("PEER_ADDR");
	if (!self->peer || !*self->peer)
		SKIP(return, "PEER_ADDR not set (a second VM runs krdma_xvm --serve)");
	if (why)
		SKIP(return, "%s", why);
	signal(SIGPIPE, SIG_IGN);
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	ASSERT_OK(krdma_info_get(self->fd, &info));
	if (variant->setup == SETUP_CM &&
	    !(info.features & KRDMA_FEATURE_RDMA_CM))
		SKIP(return, "no KRDMA_FEATURE_RDMA_CM");
	if (variant->setup == SETUP_MANUAL &&
	    !(info.features & KRDMA_FEATURE_MANUAL_CONN))
		SKIP(return, "no KRDMA_FEATURE_MANUAL_CONN");
	if (kt_dev_pick(self->fd, NULL, &self->dev))
		SKIP(return, "no device with an active port");
	self->sock = xvm_dial(self->peer, xvm_port());
	ASSERT_LE(0, self->sock) {
		TH_LOG("control connection to %s:%u: %s", self->peer,
		       xvm_port(), strerror(errno));
	}
	req.transport = variant->transport;
	req.setup = variant->setup;
	XVM_CALL(self->sock, XVM_HELLO, &req, &rep);
	memcpy(self->srv_gid, rep.gid, 16);
	self->mtu = self->dev.port.active_mtu;
	if (rep.mtu < self->mtu)
		self->mtu = rep.mtu;
	self->max_msg = self->dev.port.max_msg_sz;
	if (rep.max_msg_sz < self->max_msg)
		self->max_msg = rep.max_msg_sz;
	self->port_max_msg = self->max_msg;
	cap = getenv("XVM_MAX_MSG") ? strtoull(getenv("XVM_MAX_MSG"), NULL, 0) :
				      XVM_MAX_MSG_CAP;
	if (cap && self->max_msg > cap)
		self->max_msg = cap;
}

FIXTURE_TEARDOWN(xvm)
{
	if (self->lmap && self->lmap != MAP_FAILED)
		kt_buf_munmap(self->lmap, &self->lb);
	if (self->sock >= 0)
		close(self->sock);
	if (self->fd >= 0)
		close(self->fd);
}

/* The server's buffer, @len bytes. */
static void xvm_remote_buf(struct __test_metadata *_metadata,
			   FIXTURE_DATA(xvm) *self, uint64_t len)
{
	struct xvm_req req = { .len = len };
	struct xvm_rep rep;

	XVM_CALL(self->sock, XVM_BUF, &req, &rep);
	self->rb.addr = rep.addr;
	self->rb.len = rep.len;
	self->rb.rkey = rep.rkey;
	ASSERT_EQ(len, rep.len);
}

/* A connection from session @fd to the server, and the server's end. */
static void xconn_open(struct __test_metadata *_metadata,
		       FIXTURE_DATA(xvm) *self,
		       const FIXTURE_VARIANT(xvm) *variant, int fd,
		       struct xconn *c)
{
	struct xvm_req req = {};
	struct xvm_rep rep;
	struct kt_conn kc, srv = {};

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->transport = variant->transport;
	c->cm = variant->setup == SETUP_CM;
	if (!c->cm) {
		ASSERT_OK(kt_conn_create(fd, &self->dev, variant->transport, 0,
					 NULL, &kc));
		c->handle = kc.handle;
		c->qp_num = kc.qp_num;
	}
	XVM_CALL(self->sock, XVM_CONN_NEW, &req, &rep);
	c->srv_idx = rep.conn;
	memset(&req, 0, sizeof(req));
	req.conn = c->srv_idx;
	if (!c->cm) {
		srv.qp_num = rep.qp_num;
		srv.psn = rep.psn;
		srv.lid = rep.lid;
		memcpy(srv.gid, rep.gid, 16);
		c->srv_qpn = rep.qp_num;
		req.qp_num = kc.qp_num;
		req.psn = kc.psn;
		req.lid = kc.lid;
		memcpy(req.gid, kc.gid, 16);
		/* the server's end reaches RTR first: it only receives */
		XVM_CALL(self->sock, XVM_CONN_CONNECT, &req, &rep);
		ASSERT_OK(kt_conn_connect(fd, &kc, &srv));
		if (c->transport == KRDMA_TRANSPORT_UD)
			ASSERT_OK(kt_ah_create(fd, kc.handle, srv.gid, &c->ah));
	} else {
		struct krdma_cm_connect cc = {
			.size = sizeof(cc),
			.transport = variant->transport,
			.timeout_ms = XVM_CM_MS,
		};
		uint64_t t0 = kt_now_ms();
		uint16_t port = rep.port;
		int ret, err;

		ASSERT_OK(kc_sockaddr(&cc.dst, self->peer, port));
		ret = ioctl(fd, KRDMA_CM_CONNECT, &cc);
		err = errno;
		/* the server's accept, whatever happened here */
		if (xvm_call(self->sock, XVM_CONN_CONNECT, &req, &rep))
			TH_LOG("server accept: %s", rep.msg);
		ASSERT_EQ(0, ret) {
			TH_LOG("CM_CONNECT %s:%u: %s (reject_reason %d) after %llu ms",
			       self->peer, port, strerror(err),
			       cc.reject_reason,
			       (unsigned long long)(kt_now_ms() - t0));
		}
		ASSERT_EQ(0, rep.err);
		c->handle = cc.handle;
		c->qp_num = cc.qp_num;
		c->srv_qpn = rep.qp_num;
		ASSERT_NE(0u, c->srv_qpn);
	}
}

/* UD: address the WR to the server (by hand: AH and QPN; CM: its default). */
static void xconn_dest(const struct xconn *c, struct krdma_wr *wr)
{
	if (c->transport != KRDMA_TRANSPORT_UD || c->cm)
		return;
	wr->ah_handle = c->ah;
	wr->remote_qpn = c->srv_qpn;
}

/* Exactly one completion on the client's @c, with @status. */
static void xvm_expect_wc(struct __test_metadata *_metadata,
		      const struct xconn *c, uint64_t wr_id, uint32_t status,
		      struct krdma_wc *wc)
{
	int n;

	memset(wc, 0, sizeof(*wc));
	n = kt_poll_n(c->fd, c->handle, wc, 1, XVM_POLL_MS);
	if (n != 1) {
		struct krdma_conn_query q;

		TH_LOG("no completion for wr_id 0x%llx (%s)",
		       (unsigned long long)wr_id,
		       n < 0 ? strerror(errno) : "timeout");
		if (!kt_conn_query(c->fd, c->handle, &q))
			TH_LOG("conn: state %u qp %u dest %u mtu %u last status %u",
			       q.state, q.qp_num, q.dest_qp_num, q.path_mtu,
			       q.last_wc_status);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(wr_id, wc->wr_id);
	ASSERT_EQ(status, wc->status) {
		TH_LOG("wr_id 0x%llx: status %u vendor_err %u",
		       (unsigned long long)wc->wr_id, wc->status,
		       wc->vendor_err);
	}
}

/* The server posts a RECV of [off, off + len) (len 0: no SGE). */
static void xvm_srv_recv(struct __test_metadata *_metadata,
		     FIXTURE_DATA(xvm) *self, const struct xconn *c,
		     uint64_t wr_id, uint64_t off, uint64_t len)
{
	struct xvm_req req = {
		.conn = c->srv_idx,
		.wr_id = wr_id,
		.off = off,
		.len = len,
		.num_sge = len ? 1 : 0,
	};
	struct xvm_rep rep;

	XVM_CALL(self->sock, XVM_POST_RECV, &req, &rep);
}

/* The server's next completion on @c's end. */
static void xvm_srv_wc(struct __test_metadata *_metadata, FIXTURE_DATA(xvm) *self,
		   const struct xconn *c, uint64_t wr_id, struct krdma_wc *wc)
{
	struct xvm_req req = { .conn = c->srv_idx, .timeout_ms = XVM_POLL_MS };
	struct xvm_rep rep;

	XVM_CALL(self->sock, XVM_WAIT_WC, &req, &rep);
	ASSERT_EQ(1, rep.nwc) {
		TH_LOG("server: no receive completion for wr_id 0x%llx (QP state %u, last status %u)",
		       (unsigned long long)wr_id, rep.state,
		       rep.last_wc_status);
	}
	*wc = rep.wc;
	EXPECT_EQ(wr_id, wc->wr_id);
	ASSERT_EQ(0u, wc->status) {
		TH_LOG("server: receive wr_id 0x%llx: status %u vendor_err %u",
		       (unsigned long long)wc->wr_id, wc->status,
		       wc->vendor_err);
	}
}

/* UC has no acknowledgements: a zero-length SEND behind a WRITE fences it. */
static void xvm_uc_fence(struct __test_metadata *_metadata, FIXTURE_DATA(xvm) *self,
		     const struct xconn *c)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	xvm_srv_recv(_metadata, self, c, 0xfe0ce, 0, 0);
	kt_wr_init(&wr, 0xfe0cf, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	ASSERT_OK(kt_post1(c->fd, c->handle, &wr));
	xvm_expect_wc(_metadata, c, 0xfe0cf, 0, &wc);
	xvm_srv_wc(_metadata, self, c, 0xfe0ce, &wc);
}

/*
 * One message of @size bytes with @op to (or, READ, from) the server,
 * checked byte by byte where it landed (the pattern, then poison) and
 * completion by completion on both ends.
 */
static void xvm_one_transfer(struct __test_metadata *_metadata,
			 FIXTURE_DATA(xvm) *self,
			 const FIXTURE_VARIANT(xvm) *variant, uint32_t op,
			 uint64_t size, uint32_t iter)
{
	const struct xconn *c = &self->c;
	bool ud = c->transport == KRDMA_TRANSPORT_UD;
	uint32_t seed = kt_seed(op + 16 * c->transport + 64 * variant->setup,
				size, iter);
	uint64_t wr_id = (uint64_t)op << 40 | size << 8 | iter;
	uint64_t roff = iter ? XVM_ROFF : 0;	/* where at the server */
	uint64_t at = ud ? KT_GRH_LEN : 0;	/* where its copy starts after it */
	bool two_sided = op == KRDMA_OP_SEND || op == KRDMA_OP_SEND_WITH_IMM ||
			 op == KRDMA_OP_RDMA_WRITE_WITH_IMM;
	uint32_t imm = seed ^ 0x5a5a0000;
	struct xvm_req req = {};
	struct xvm_rep rep;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint64_t t0 = kt_now_ms();
	int64_t bad;

	if (op == KRDMA_OP_RDMA_READ) {
		/* the server's buffer holds the data, ours is poisoned */
		req.off = roff;
		req.len = size;
		req.seed = seed;
		XVM_CALL(self->sock, XVM_FILL, &req, &rep);
		memset(self->lmap, XVM_POISON_BYTE, size + XVM_SLACK);
	} else {
		xvm_fill(self->lmap, size, seed);
		req.len = roff + at + size + XVM_SLACK;
		req.byte = XVM_POISON_BYTE;
		XVM_CALL(self->sock, XVM_POISON, &req, &rep);
	}
	if (two_sided)
		xvm_srv_recv(_metadata, self, c, wr_id | 1ull << 63, roff,
			     op == KRDMA_OP_RDMA_WRITE_WITH_IMM ? 0 :
			     at + size + XVM_SLACK);

	kt_wr_init(&wr, wr_id, op, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->lb.handle, 0, size);
	if (op == KRDMA_OP_SEND_WITH_IMM || op == KRDMA_OP_RDMA_WRITE_WITH_IMM)
		wr.imm_data = imm;
	if (op == KRDMA_OP_RDMA_WRITE || op == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
	    op == KRDMA_OP_RDMA_READ) {
		wr.remote_addr = self->rb.addr + roff;
		wr.rkey = self->rb.rkey;
	}
	xconn_dest(c, &wr);
	ASSERT_OK(kt_post1(c->fd, c->handle, &wr));
	xvm_expect_wc(_metadata, c, wr_id, 0, &wc);
	EXPECT_TRUE(kt_send_wc_opcode_ok(op, wc.opcode)) {
		TH_LOG("%s completed as opcode %u", kt_op_name(op), wc.opcode);
	}

	if (two_sided) {
		xvm_srv_wc(_metadata, self, c, wr_id | 1ull << 63, &wc);
		if (op == KRDMA_OP_RDMA_WRITE_WITH_IMM) {
			EXPECT_EQ((uint32_t)KRDMA_OP_RDMA_WRITE_WITH_IMM,
				  wc.opcode);
			if (wc.byte_len != size)
				TH_LOG("write-with-imm receive byte_len %u (message %llu)",
				       wc.byte_len, (unsigned long long)size);
		} else {
			EXPECT_EQ((uint32_t)KRDMA_OP_RECV, wc.opcode);
			EXPECT_EQ(at + size, wc.byte_len);
		}
		if (op == KRDMA_OP_SEND) {
			EXPECT_EQ(0u, wc.wc_flags & KT_WC_WITH_IMM);
		} else {
			EXPECT_EQ(KT_WC_WITH_IMM, wc.wc_flags & KT_WC_WITH_IMM);
			EXPECT_EQ(imm, wc.imm_data) {
				TH_LOG("%s: imm_data 0x%x, sent 0x%x",
				       kt_op_name(op), wc.imm_data, imm);
			}
		}
		if (ud) {
			EXPECT_EQ(KT_WC_GRH, wc.wc_flags & KT_WC_GRH);
			EXPECT_EQ(c->qp_num, wc.src_qp);
		}
	}
	if (c->transport == KRDMA_TRANSPORT_UC && op == KRDMA_OP_RDMA_WRITE)
		xvm_uc_fence(_metadata, self, c);

	/* Every byte: the pattern where it belongs, poison after it. */
	if (op == KRDMA_OP_RDMA_READ) {
		bad = xvm_check(self->lmap, size, seed);
		EXPECT_EQ(-1, bad) {
			TH_LOG("%s size %llu: byte %lld is 0x%02x, expected 0x%02x",
			       kt_op_name(op), (unsigned long long)size,
			       (long long)bad, self->lmap[bad],
			       kt_pattern_byte(seed, bad));
		}
		bad = kt_check_byte(self->lmap + size, XVM_SLACK, XVM_POISON_BYTE);
		EXPECT_EQ(-1, bad) {
			TH_LOG("%s size %llu: wrote past the message at +%lld",
			       kt_op_name(op), (unsigned long long)size,
			       (long long)bad);
		}
	} else {
		memset(&req, 0, sizeof(req));
		req.off = roff + at;
		req.len = size;
		req.seed = seed;
		req.poison_len = XVM_SLACK;
		req.pre_len = roff;
		req.byte = XVM_POISON_BYTE;
		XVM_CALL(self->sock, XVM_CHECK, &req, &rep);
		EXPECT_EQ(-1, rep.bad) {
			TH_LOG("%s size %llu: server byte %lld is 0x%02x, expected 0x%02x",
			       kt_op_name(op), (unsigned long long)size,
			       (long long)rep.bad, rep.bad_got, rep.bad_want);
		}
		EXPECT_EQ(-1, rep.bad_poison) {
			TH_LOG("%s size %llu: server buffer changed past the message at +%lld (0x%02x)",
			       kt_op_name(op), (unsigned long long)size,
			       (long long)rep.bad_poison, rep.poison_got);
		}
		EXPECT_EQ(-1, rep.bad_pre) {
			TH_LOG("%s size %llu at %llu: server byte %lld before the message changed (0x%02x)",
			       kt_op_name(op), (unsigned long long)size,
			       (unsigned long long)roff,
			       (long long)rep.bad_pre, rep.pre_got);
		}
	}
	TH_LOG("%s %llu bytes at %llu: %llu ms", kt_op_name(op),
	       (unsigned long long)size, (unsigned long long)roff,
	       (unsigned long long)(kt_now_ms() - t0));
}

static void xvm_transfer_matrix(struct __test_metadata *_metadata,
			    FIXTURE_DATA(xvm) *self,
			    const FIXTURE_VARIANT(xvm) *variant, uint32_t op)
{
	uint64_t sizes[5];
	unsigned int n = 0, i, it;
	uint64_t max;

	if (!kt_transport_has(variant->transport, op))
		SKIP(return, "%s is not an op of this transport", kt_op_name(op));
	if (variant->transport == KRDMA_TRANSPORT_UD) {
		sizes[n++] = 1;
		sizes[n++] = self->mtu / 2 + 3;
		sizes[n++] = self->mtu;
	} else {
		static const uint64_t fixed[] = { 1, 4095, 65536, XVM_MIB };

		for (i = 0; i < ARRAY_SIZE(fixed); i++)
			if (fixed[i] < self->max_msg)
				sizes[n++] = fixed[i];
		sizes[n++] = self->max_msg;
	}
	max = sizes[n - 1];
	TH_LOG("mtu %u, largest message %llu (the ports' max_msg_sz %llu%s)",
	       self->mtu, (unsigned long long)max,
	       (unsigned long long)self->port_max_msg,
	       self->max_msg < self->port_max_msg ? ", capped: XVM_MAX_MSG" : "");
	xvm_remote_buf(_metadata, self, XVM_ROFF + max + KT_GRH_LEN + XVM_SLACK);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			   max + KT_GRH_LEN + XVM_SLACK, &self->lb);
	self->lmap = kt_buf_mmap(self->fd, &self->lb);
	ASSERT_NE(MAP_FAILED, self->lmap);
	xconn_open(_metadata, self, variant, self->fd, &self->c);
	/*
	 * two messages of each size, the second at an odd offset of the
	 * server's buffer; one of the largest (it is slow on TCG)
	 */
	for (i = 0; i < n; i++)
		for (it = 0; it < (sizes[i] > XVM_MIB ? 1u : 2u); it++)
			xvm_one_transfer(_metadata, self, variant, op, sizes[i], it);
}

KRDMA_TEST_F_TIMEOUT(xvm, send, XVM_TEST_SECS)
{
	xvm_transfer_matrix(_metadata, self, variant, KRDMA_OP_SEND);
}

KRDMA_TEST_F_TIMEOUT(xvm, send_with_imm, XVM_TEST_SECS)
{
	xvm_transfer_matrix(_metadata, self, variant, KRDMA_OP_SEND_WITH_IMM);
}

KRDMA_TEST_F_TIMEOUT(xvm, rdma_write, XVM_TEST_SECS)
{
	xvm_transfer_matrix(_metadata, self, variant, KRDMA_OP_RDMA_WRITE);
}

KRDMA_TEST_F_TIMEOUT(xvm, rdma_write_with_imm, XVM_TEST_SECS)
{
	xvm_transfer_matrix(_metadata, self, variant, KRDMA_OP_RDMA_WRITE_WITH_IMM);
}

KRDMA_TEST_F_TIMEOUT(xvm, rdma_read, XVM_TEST_SECS)
{
	xvm_transfer_matrix(_metadata, self, variant, KRDMA_OP_RDMA_READ);
}

/* ------------------------------------------------------------------------
 * Atomics: one counter in the server's buffer, several client connections
 * (each a thread with a session of its own) hammering it at once.
 */

#define ATOM_THREADS 4
#define ATOM_FADDS 128		/* fetch-adds per thread */
#define ATOM_BATCH 8		/* in flight per thread */
#define ATOM_CAS 32		/* successful compare-and-swaps per thread */
#define ATOM_WORDS 16		/* words of the server's buffer watched */
#define ATOM_CTR 8		/* the counter's word */

struct athread {
	struct xconn c;
	struct kt_buf res;
	uint64_t *rmap;		/* @res mapped: fetched values */
	uint64_t raddr;		/* the counter */
	uint32_t rkey;
	uint32_t op;
	uint64_t start;		/* CAS: the counter's initial value */
	uint64_t olds[ATOM_FADDS > ATOM_CAS ? ATOM_FADDS : ATOM_CAS];
	uint32_t nolds;
	uint32_t attempts;
	char err[200];
};

static void xvm_atomic_wr(struct athread *t, struct krdma_wr *wr, uint64_t id,
		      uint32_t slot, uint64_t add_or_cmp, uint64_t swap)
{
	kt_wr_init(wr, id, t->op, KRDMA_WR_SIGNALED);
	kt_wr_sge(wr, t->res.handle, 8 * slot, 8);
	wr->remote_addr = t->raddr;
	wr->rkey = t->rkey;
	wr->compare_add = add_or_cmp;
	wr->swap = swap;
}

/* Wait for @n completions @first_id..; the error (if any) into t->err. */
static int xvm_athread_wait(struct athread *t, uint64_t first_id, uint32_t n)
{
	struct krdma_wc wcs[ATOM_BATCH];
	uint32_t i;
	int got = kt_poll_n(t->c.fd, t->c.handle, wcs, n, XVM_POLL_MS);

	if (got != (int)n) {
		snprintf(t->err, sizeof(t->err), "%d of %u completions (%s)",
			 got, n, got < 0 ? strerror(errno) : "timeout");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (wcs[i].wr_id != first_id + i || wcs[i].status ||
		    wcs[i].opcode != t->op) {
			snprintf(t->err, sizeof(t->err),
				 "completion %u: wr_id %llu status %u opcode %u",
				 i, (unsigned long long)wcs[i].wr_id,
				 wcs[i].status, wcs[i].opcode);
			return -1;
		}
	}
	return 0;
}

/* ATOM_FADDS fetch-adds of 1, ATOM_BATCH at a time, each into its slot. */
static void *xvm_fadd_thread(void *arg)
{
	struct athread *t = arg;
	struct krdma_wr wrs[ATOM_BATCH];
	uint32_t i, j;

	for (i = 0; i < ATOM_FADDS; i += ATOM_BATCH) {
		for (j = 0; j < ATOM_BATCH; j++)
			xvm_atomic_wr(t, &wrs[j], i + j, i + j, 1, 0);
		if (kt_post(t->c.fd, t->c.handle, wrs, ATOM_BATCH, NULL)) {
			snprintf(t->err, sizeof(t->err), "POST: %s",
				 strerror(errno));
			return NULL;
		}
		if (xvm_athread_wait(t, i, ATOM_BATCH))
			return NULL;
	}
	for (i = 0; i < ATOM_FADDS; i++)
		t->olds[i] = t->rmap[i];
	t->nolds = ATOM_FADDS;
	return NULL;
}

/* ATOM_CAS increments of the counter by compare-and-swap, retrying. */
static void *xvm_cas_thread(void *arg)
{
	struct athread *t = arg;
	uint64_t expect = t->start;
	struct krdma_wr wr;

	while (t->nolds < ATOM_CAS) {
		uint64_t old;

		if (++t->attempts > 40 * ATOM_CAS) {
			snprintf(t->err, sizeof(t->err),
				 "%u attempts for %u increments", t->attempts,
				 t->nolds);
			return NULL;
		}
		xvm_atomic_wr(t, &wr, t->attempts, 0, expect, expect + 1);
		if (kt_post1(t->c.fd, t->c.handle, &wr)) {
			snprintf(t->err, sizeof(t->err), "POST: %s",
				 strerror(errno));
			return NULL;
		}
		if (xvm_athread_wait(t, t->attempts, 1))
			return NULL;
		old = t->rmap[0];
		if (old == expect) {
			t->olds[t->nolds++] = old;
			expect = old + 1;
		} else {
			expect = old;
		}
	}
	return NULL;
}

static int xvm_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The server's watched words. */
static void xvm_srv_words(struct __test_metadata *_metadata,
		      FIXTURE_DATA(xvm) *self, uint64_t *words)
{
	struct xvm_req req = { .len = 8 * ATOM_WORDS };
	struct xvm_rep rep;

	XVM_CALL(self->sock, XVM_READ_BYTES, &req, &rep);
	memcpy(words, rep.data, 8 * ATOM_WORDS);
}

static void xvm_expect_words(struct __test_metadata *_metadata,
			 FIXTURE_DATA(xvm) *self, const uint64_t *shadow)
{
	uint64_t now[ATOM_WORDS];
	unsigned int i;

	xvm_srv_words(_metadata, self, now);
	for (i = 0; i < ATOM_WORDS; i++) {
		EXPECT_EQ(shadow[i], now[i]) {
			TH_LOG("server word %u: 0x%llx, expected 0x%llx", i,
			       (unsigned long long)now[i],
			       (unsigned long long)shadow[i]);
		}
	}
}

/*
 * The server's buffer with known words around the counter, and
 * ATOM_THREADS connections (the first on the fixture's session, the others
 * on sessions of their own), each with a result buffer.
 */
static void xvm_atomic_setup(struct __test_metadata *_metadata,
			 FIXTURE_DATA(xvm) *self,
			 const FIXTURE_VARIANT(xvm) *variant, uint32_t op,
			 uint64_t ctr, struct athread *t, uint64_t *shadow)
{
	struct xvm_req req = { .len = 8 * ATOM_WORDS };
	struct xvm_rep rep;
	unsigned int i;

	xvm_remote_buf(_metadata, self, 4096);
	for (i = 0; i < ATOM_WORDS; i++)
		shadow[i] = 0x0101010101010101ull * (i + 1) ^ 0x8000000000000000ull;
	shadow[ATOM_CTR] = ctr;
	memcpy(req.data, shadow, 8 * ATOM_WORDS);
	XVM_CALL(self->sock, XVM_WRITE_BYTES, &req, &rep);
	for (i = 0; i < ATOM_THREADS; i++) {
		int fd = i ? krdma_open() : self->fd;

		ASSERT_LE(0, fd);
		xconn_open(_metadata, self, variant, fd, &t[i].c);
		ASSERT_OK(kt_buf_alloc(fd, self->dev.dev_index,
				       KRDMA_ACCESS_LOCAL_WRITE,
				       8 * ATOM_FADDS, &t[i].res));
		t[i].rmap = kt_buf_mmap(fd, &t[i].res);
		ASSERT_NE(MAP_FAILED, t[i].rmap);
		t[i].raddr = self->rb.addr + 8 * ATOM_CTR;
		t[i].rkey = self->rb.rkey;
		t[i].op = op;
		t[i].start = ctr;
	}
	TH_LOG("%u connections to one counter", ATOM_THREADS);
}

static void xvm_atomic_run(struct __test_metadata *_metadata, struct athread *t,
		       void *(*fn)(void *))
{
	pthread_t th[ATOM_THREADS];
	uint64_t t0 = kt_now_ms();
	unsigned int i;

	for (i = 0; i < ATOM_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fn, &t[i]));
	for (i = 0; i < ATOM_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < ATOM_THREADS; i++)
		EXPECT_EQ(0, t[i].err[0]) {
			TH_LOG("thread %u: %s", i, t[i].err);
		}
	TH_LOG("%u threads done in %llu ms", ATOM_THREADS,
	       (unsigned long long)(kt_now_ms() - t0));
}

/*
 * The values fetched, all threads together, are @ctr, @ctr + 1, ... each
 * exactly once (the counter wraps through 2^64 on the way).
 */
static void xvm_expect_all_once(struct __test_metadata *_metadata,
			    struct athread *t, uint64_t ctr, uint32_t per)
{
	uint64_t all[ATOM_THREADS * (ATOM_FADDS > ATOM_CAS ? ATOM_FADDS : ATOM_CAS)];
	uint32_t i, j, n = 0;

	for (i = 0; i < ATOM_THREADS; i++) {
		ASSERT_EQ(per, t[i].nolds);
		for (j = 0; j < per; j++)
			all[n++] = t[i].olds[j] - ctr;
	}
	qsort(all, n, sizeof(all[0]), xvm_cmp_u64);
	for (i = 0; i < n; i++) {
		EXPECT_EQ((uint64_t)i, all[i]) {
			TH_LOG("fetched values: #%u is counter+%lld (duplicate or missing)",
			       i, (long long)all[i]);
			break;
		}
	}
}

KRDMA_TEST_F_TIMEOUT(xvm, atomic_fetch_add, XVM_TEST_SECS)
{
	/* 100 below 2^64: the counter wraps while the threads run */
	const uint64_t ctr = UINT64_MAX - 99;
	struct athread t[ATOM_THREADS] = {};
	uint64_t shadow[ATOM_WORDS], old;
	struct krdma_wr wr;
	struct krdma_wc wc;

	if (!kt_transport_has(variant->transport, KRDMA_OP_ATOMIC_FETCH_ADD))
		SKIP(return, "ATOMIC_FETCH_ADD is not an op of this transport");
	KT_SKIP_RXE_DEFECT(KT_RXE_ATOMIC_RESEND);
	xvm_atomic_setup(_metadata, self, variant, KRDMA_OP_ATOMIC_FETCH_ADD, ctr,
		     t, shadow);
	xvm_atomic_run(_metadata, t, xvm_fadd_thread);
	xvm_expect_all_once(_metadata, t, ctr, ATOM_FADDS);
	shadow[ATOM_CTR] = ctr + ATOM_THREADS * ATOM_FADDS;
	xvm_expect_words(_metadata, self, shadow);

	/* one more, a large addend: the old value is the final count */
	xvm_atomic_wr(&t[0], &wr, 999, 0, 0x8000000100000001ull, 0);
	ASSERT_OK(kt_post1(t[0].c.fd, t[0].c.handle, &wr));
	xvm_expect_wc(_metadata, &t[0].c, 999, 0, &wc);
	EXPECT_EQ((uint32_t)KRDMA_OP_ATOMIC_FETCH_ADD, wc.opcode);
	old = t[0].rmap[0];
	EXPECT_EQ(shadow[ATOM_CTR], old);
	shadow[ATOM_CTR] += 0x8000000100000001ull;
	xvm_expect_words(_metadata, self, shadow);
}

KRDMA_TEST_F_TIMEOUT(xvm, atomic_cmp_swp, XVM_TEST_SECS)
{
	/* increments carry from the low into the high 32 bits */
	const uint64_t ctr = 0x00000001fffffff0ull;
	struct athread t[ATOM_THREADS] = {};
	uint64_t shadow[ATOM_WORDS], cur;
	unsigned int i;

	if (!kt_transport_has(variant->transport, KRDMA_OP_ATOMIC_CMP_SWP))
		SKIP(return, "ATOMIC_CMP_SWP is not an op of this transport");
	KT_SKIP_RXE_DEFECT(KT_RXE_ATOMIC_RESEND);
	xvm_atomic_setup(_metadata, self, variant, KRDMA_OP_ATOMIC_CMP_SWP, ctr,
		     t, shadow);

	/* one connection: swaps that match and that do not (high half off) */
	cur = ctr;
	for (i = 0; i < 12; i++) {
		uint64_t next = 0xabcdef0000000000ull + i * 0x1010101ull;
		bool match = i % 3 != 2;
		uint64_t cmp = match ? cur : cur ^ (1ull << (32 + i));
		struct krdma_wr wr;
		struct krdma_wc wc;

		xvm_atomic_wr(&t[0], &wr, 500 + i, 0, cmp, next);
		ASSERT_OK(kt_post1(t[0].c.fd, t[0].c.handle, &wr));
		xvm_expect_wc(_metadata, &t[0].c, 500 + i, 0, &wc);
		EXPECT_EQ((uint32_t)KRDMA_OP_ATOMIC_CMP_SWP, wc.opcode);
		EXPECT_EQ(cur, t[0].rmap[0]) {
			TH_LOG("swap %u: returned 0x%llx, expected 0x%llx", i,
			       (unsigned long long)t[0].rmap[0],
			       (unsigned long long)cur);
		}
		if (match)
			cur = next;
		shadow[ATOM_CTR] = cur;
		xvm_expect_words(_metadata, self, shadow);
	}

	/* back to the start, then every thread increments by swapping */
	{
		struct xvm_req req = { .off = 8 * ATOM_CTR, .len = 8 };
		struct xvm_rep rep;

		memcpy(req.data, &ctr, 8);
		XVM_CALL(self->sock, XVM_WRITE_BYTES, &req, &rep);
	}
	xvm_atomic_run(_metadata, t, xvm_cas_thread);
	for (i = 0; i < ATOM_THREADS; i++)
		TH_LOG("thread %u: %u attempts for %u increments", i,
		       t[i].attempts, t[i].nolds);
	xvm_expect_all_once(_metadata, t, ctr, ATOM_CAS);
	shadow[ATOM_CTR] = ctr + ATOM_THREADS * ATOM_CAS;
	xvm_expect_words(_metadata, self, shadow);
}

/* main(): the harness, or the server with --serve. */
#define main xvm_harness_main
TEST_HARNESS_MAIN
#undef main

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--serve"))
		return xvm_serve(argc, argv);
	xvm_start_ms = kt_now_ms();
	return xvm_harness_main(argc, argv);
}
