// SPDX-License-Identifier: GPL-2.0
/*
 * krdma rdma_cm: KRDMA_CM_LISTEN / CONNECT / ACCEPT / REJECT / DISCONNECT and
 * the session event queue (KRDMA_GET_EVENTS, poll(2)).
 *
 * Both ends run in the one VM over rxe loopback (connect to $RXE0_ADDR) with
 * a server session and a client session on separate fds.  CONNECT and
 * ACCEPT each block until ESTABLISHED, so the client side always connects
 * from a thread (or a child process) while the test's main thread takes the
 * CONNECT_REQUEST and accepts.  Data is moved over the accepted connections
 * with KRDMA_POST / KRDMA_POLL and every byte is checked.
 *
 * The tests that make the module oops (a command used on a connection that
 * has no QP or CQ yet) are last, each in a child process of its own.
 */
#include "krdma_test.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>

#define CM_MS KC_CM_MS
#define POLL_MS 20000
#define REJ_CONSUMER_DEFINED 28	/* IB_CM_REJ_CONSUMER_DEFINED */
#define CONNECT_PDATA_MAX 56
#define ACCEPT_PDATA_MAX 196
#define REJECT_PDATA_MAX 148

/*
 * The test device's IPv6 address; on rxe0 the bed's 2001:db8::1 when
 * $RXE0_ADDR6 is not set.  NULL: the IPv6 cases skip.
 */
static const char *kc_addr6(void)
{
	return kt_test_addr(true) ?: (kt_test_dev_set() ? NULL : "2001:db8::1");
}

#define KC_NEED_ADDR6(self)						\
	do {								\
		if (!(self)->addr6)					\
			SKIP(return, "%s: no IPv6 address (KRDMA_TEST_ADDR6)", \
			     (self)->dev.info.name);			\
	} while (0)

/*
 * A peer's reject, as CM_CONNECT's reject_reason and the REJECTED event
 * say it: IB_CM_REJ_CONSUMER_DEFINED; on iWARP the iWARP CM's status,
 * -ECONNREFUSED (siw: -ECONNRESET).
 */
static bool kc_consumer_reject(const struct kt_dev *d, int reason)
{
	if (kt_dev_iwarp(d))
		return reason == -ECONNREFUSED || reason == -ECONNRESET;
	return reason == REJ_CONSUMER_DEFINED;
}

static void kc_expect_consumer_reject(struct __test_metadata *_metadata,
				      const struct kt_dev *d, int reason)
{
	EXPECT_TRUE(kc_consumer_reject(d, reason)) {
		TH_LOG("%s: reject reason %d", d->info.name, reason);
	}
}

/*
 * How long a connect that timed out may take to return: on iWARP until
 * the driver ends its MPA exchange (siw's MPAREQ_TIMEOUT, 10 s), which
 * iw_cm waits for before the connection can be destroyed.
 */
static uint32_t kc_connect_end_ms(const struct kt_dev *d)
{
	return kt_dev_iwarp(d) ? CM_MS + 10000 : CM_MS;
}

/* One established connection: both ends and what the handshake carried. */
struct kc_pair {
	uint32_t s, c;			/* server-side, client-side handles */
	uint32_t s_qp;			/* ACCEPT's qp_num */
	struct krdma_event req;		/* the CONNECT_REQUEST */
	struct krdma_cm_connect conn;	/* the client's answer */
};

/*
 * Connect @cfd to @dst:@port from a thread, accept the request on @sfd
 * (which must come from @listener), and wait for both ESTABLISHED events.
 */
static void kc_establish(struct __test_metadata *_metadata, int sfd, int cfd,
			 uint32_t listener, const char *dst, uint16_t port,
			 const void *cpd, uint32_t cplen, const void *apd,
			 uint32_t aplen, struct kc_pair *p)
{
	struct kc_connect c;
	struct krdma_cm_accept a;
	struct krdma_event ev;

	memset(p, 0, sizeof(*p));
	kc_connect_init(&c, cfd, dst, port, cpd, cplen);
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(sfd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS,
				&p->req));
	EXPECT_EQ(listener, p->req.listener);
	ASSERT_OK(kc_accept(sfd, p->req.handle, apd, aplen, &a));
	p->s = p->req.handle;
	p->s_qp = a.qp_num;
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s (reject_reason %d)", strerror(c.err),
		       c.cmd.reject_reason);
	}
	p->conn = c.cmd;
	p->c = c.cmd.handle;
	ASSERT_OK(kc_wait_event(sfd, KRDMA_EVENT_ESTABLISHED, p->s, CM_MS,
				&ev));
	ASSERT_OK(kc_wait_event(cfd, KRDMA_EVENT_ESTABLISHED, p->c, CM_MS,
				&ev));
}

/*
 * A RECV on (@rfd, @rconn) and a SEND of @len pattern bytes from (@tfd,
 * @tconn); the received bytes are checked.  Buffers are on the devices
 * @tdev and @rdev of the two connections.
 */
static void kc_send_check(struct __test_metadata *_metadata, int tfd,
			  uint32_t tconn, uint32_t tdev, int rfd,
			  uint32_t rconn, uint32_t rdev, uint32_t len,
			  uint32_t seed)
{
	struct kt_buf tb, rb;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t *data = malloc(len), *got = calloc(1, len);

	ASSERT_TRUE(data && got);
	kt_fill(data, len, seed);
	ASSERT_OK(kt_buf_alloc(tfd, tdev, KRDMA_ACCESS_LOCAL_WRITE, len, &tb));
	ASSERT_OK(kt_buf_alloc(rfd, rdev, KRDMA_ACCESS_LOCAL_WRITE, len, &rb));
	ASSERT_OK(kt_buf_write(tfd, tb.handle, 0, data, len));

	kt_wr_init(&wr, 0x1000 + seed, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, len);
	ASSERT_OK(kt_post1(rfd, rconn, &wr));
	kt_wr_init(&wr, 0x2000 + seed, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, tb.handle, 0, len);
	ASSERT_OK(kt_post1(tfd, tconn, &wr));

	memset(&wc, 0, sizeof(wc));
	ASSERT_EQ(1, kt_poll_n(tfd, tconn, &wc, 1, POLL_MS));
	EXPECT_EQ(0x2000 + seed, wc.wr_id);
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	memset(&wc, 0, sizeof(wc));
	ASSERT_EQ(1, kt_poll_n(rfd, rconn, &wc, 1, POLL_MS));
	EXPECT_EQ(0x1000 + seed, wc.wr_id);
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ((uint32_t)KRDMA_OP_RECV, wc.opcode);
	EXPECT_EQ(len, wc.byte_len);
	ASSERT_OK(kt_buf_read(rfd, rb.handle, 0, got, len));
	EXPECT_EQ(-1, kt_check(got, len, seed)) {
		TH_LOG("%u-byte SEND: first bad byte at %lld", len,
		       (long long)kt_check(got, len, seed));
	}
	EXPECT_OK(kt_destroy(tfd, tb.handle));
	EXPECT_OK(kt_destroy(rfd, rb.handle));
	free(data);
	free(got);
}

/* No handle 1 ... @n is left in the session. */
static void kc_expect_no_handles(struct __test_metadata *_metadata, int fd,
				 uint32_t n)
{
	uint32_t h;

	for (h = 1; h <= n; h++)
		EXPECT_ERRNO(ENOENT, kt_destroy(fd, h), "handle %u", h);
}

/* The dev_index of the device called @name, or -1. */
static int64_t kc_dev_index(int fd, const char *name)
{
	struct kt_dev d;

	if (kt_dev_pick(fd, name, &d))
		return -1;
	return d.dev_index;
}

#define KC_MAX_EVENTS "/sys/module/krdma/parameters/max_events"

FIXTURE(cm)
{
	int sfd, cfd;		/* server and client sessions */
	struct kt_dev dev;	/* the test device, kt_test_dev() */
	const char *addr, *addr6;
	uint32_t listener;	/* on kt_test_addr():port, in sfd */
	uint16_t port;
	char max_events[32];	/* the module parameter, to restore, or "" */
};

FIXTURE_SETUP(cm)
{
	self->cfd = -1;
	self->sfd = kt_session_open_feature(_metadata, KRDMA_FEATURE_RDMA_CM,
					    &self->dev);
	if (self->sfd < 0)
		return;
	self->cfd = krdma_open();
	ASSERT_LE(0, self->cfd);
	self->addr = kt_test_addr(false);
	self->addr6 = kc_addr6();
	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &self->listener,
			    &self->port));
	ASSERT_NE(0, self->port);
}

FIXTURE_TEARDOWN(cm)
{
	if (self->max_events[0])
		kt_write_file(KC_MAX_EVENTS, self->max_events);
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->sfd >= 0)
		close(self->sfd);
}

/* ------------------------------------------------------------------------
 * LISTEN
 */

KRDMA_TEST_F(cm, listen_flags_and_transport)
{
	struct krdma_cm_listen l;

	kc_listen_init(&l, self->addr, 0);
	l.flags = 1;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));
	l.flags = 1u << 31;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));

	kc_listen_init(&l, self->addr, 0);
	l.transport = KRDMA_TRANSPORT_UD + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));
	l.transport = 0xffffffff;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));

	/* rdma_listen() takes an int: no backlog turns negative */
	kc_listen_init(&l, self->addr, 0);
	l.backlog = 1u << 31;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));
	l.backlog = 0xffffffff;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));
	/* Only the fixture's listener exists in sfd. */
	kc_expect_no_handles(_metadata, self->sfd, 0);
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, self->listener + 1));
}

KRDMA_TEST_F(cm, listen_bad_family)
{
	static const uint16_t families[] = { 0, AF_UNIX, AF_PACKET, 0xffff };
	struct krdma_cm_listen l;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(families); i++) {
		kc_listen_init(&l, self->addr, 0);
		l.addr.family = families[i];
		EXPECT_ERRNO(EAFNOSUPPORT, ioctl(self->sfd, KRDMA_CM_LISTEN, &l),
			     "family %u", families[i]);
	}
}

/* AF_INET: only 4 address bytes, no scope id. */
KRDMA_TEST_F(cm, listen_inet_trailing_bytes)
{
	struct krdma_cm_listen l;
	unsigned int i;

	for (i = 4; i < 16; i++) {
		kc_listen_init(&l, self->addr, 0);
		l.addr.addr[i] = 1;
		EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l),
			     "addr[%u]", i);
	}
	kc_listen_init(&l, self->addr, 0);
	l.addr.scope_id = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_LISTEN, &l));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, self->listener + 1));
}

KRDMA_TEST_F(cm, listen_ephemeral_and_fixed_port)
{
	uint32_t h1, h2, h3;
	uint16_t p1, p2, p3;

	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &h1, &p1));
	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &h2, &p2));
	EXPECT_NE(0, p1);
	EXPECT_NE(0, p2);
	EXPECT_NE(p1, p2);
	EXPECT_NE(p1, self->port);
	EXPECT_NE(h1, h2);
	EXPECT_NE(h1, self->listener);
	/* A fixed port is reported back as it was asked for. */
	ASSERT_OK(kt_destroy(self->sfd, h1));
	ASSERT_OK(kc_listen(self->sfd, self->addr, p1, &h3, &p3));
	EXPECT_EQ(p1, p3);
	EXPECT_OK(kt_destroy(self->sfd, h3));
	EXPECT_OK(kt_destroy(self->sfd, h2));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, h2));
}

KRDMA_TEST_F(cm, listen_addrinuse)
{
	uint32_t h;
	uint16_t p;

	EXPECT_ERRNO(EADDRINUSE, kc_listen(self->sfd, self->addr, self->port,
					   &h, &p));
	/* Another session cannot take it either. */
	EXPECT_ERRNO(EADDRINUSE, kc_listen(self->cfd, self->addr, self->port,
					   &h, &p));
	/* Nothing was left behind by the failures. */
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, self->listener + 1));
	kc_expect_no_handles(_metadata, self->cfd, 4);
	/* Free again once the listener is destroyed. */
	ASSERT_OK(kt_destroy(self->sfd, self->listener));
	ASSERT_OK(kc_listen(self->cfd, self->addr, self->port, &h, &p));
	EXPECT_EQ(self->port, p);
	EXPECT_OK(kt_destroy(self->cfd, h));
}

KRDMA_TEST_F(cm, listen_ipv6)
{
	uint32_t h, h2;
	uint16_t p, p2;

	KC_NEED_ADDR6(self);
	ASSERT_OK(kc_listen(self->sfd, self->addr6, 0, &h, &p));
	EXPECT_NE(0, p);
	EXPECT_ERRNO(EADDRINUSE, kc_listen(self->sfd, self->addr6, p, &h2,
					   &p2));
	EXPECT_OK(kt_destroy(self->sfd, h));
}

/* An address no local interface has cannot be bound. */
KRDMA_TEST_F(cm, listen_foreign_address)
{
	uint32_t h;
	uint16_t p;
	int ret = kc_listen(self->sfd, "198.51.100.1", 0, &h, &p);
	int err = errno;

	EXPECT_EQ(-1, ret);
	EXPECT_TRUE(err == EADDRNOTAVAIL || err == ENODEV) {
		TH_LOG("LISTEN on 198.51.100.1: %s", strerror(err));
	}
}

/* ------------------------------------------------------------------------
 * CONNECT argument checks (nothing is sent)
 */

KRDMA_TEST_F(cm, connect_bad_arguments)
{
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL,
			CONNECT_PDATA_MAX + 1);
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd),
		     "private_data_len 57");
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.private_data_len = 0xffffffff;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.transport = KRDMA_TRANSPORT_UD + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.flags = 1u << 7;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	/* Source and destination of different families. */
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	kc_sockaddr(&c.cmd.src, self->addr6 ?: "2001:db8::1", 0);
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	/* Bad destination addresses. */
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.dst.family = 0;
	EXPECT_ERRNO(EAFNOSUPPORT, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.dst.family = AF_UNIX;
	EXPECT_ERRNO(EAFNOSUPPORT, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.dst.addr[8] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));

	/* None of that left a handle, an event, or a pending request. */
	kc_expect_no_handles(_metadata, self->cfd, 8);
	{
		struct krdma_event ev;

		EXPECT_EQ(0, kc_events(self->cfd, &ev, 1, 0));
		EXPECT_EQ(0, kc_events(self->sfd, &ev, 1, 200));
	}
}

/* KRDMA_CONN_CM_TIMERS: each field in range, RC only, all 0 without it. */
KRDMA_TEST_F(cm, connect_timer_arguments)
{
	static const struct {
		const char *what;
		uint32_t flags, transport;
		uint8_t ack, retry, rnr, min_rnr;
		uint32_t reserved;
	} bad[] = {
		{ "retry_cnt without the flag", 0, KRDMA_TRANSPORT_RC, 0, 3, 0, 0, 0 },
		{ "ack_timeout without the flag", 0, KRDMA_TRANSPORT_RC, 14, 0, 0, 0, 0 },
		{ "the flag on UC", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_UC, 14, 3, 7, 12, 0 },
		{ "the flag on UD", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_UD, 14, 3, 7, 12, 0 },
		{ "ack_timeout 0", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_RC, 0, 3, 7, 12, 0 },
		{ "ack_timeout 32", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_RC, 32, 3, 7, 12, 0 },
		{ "retry_cnt 8", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_RC, 14, 8, 7, 12, 0 },
		{ "rnr_retry 8", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_RC, 14, 3, 8, 12, 0 },
		{ "min_rnr_timer 32", KRDMA_CONN_CM_TIMERS, KRDMA_TRANSPORT_RC, 14, 3, 7, 32, 0 },
		{ "__reserved", 0, KRDMA_TRANSPORT_RC, 0, 0, 0, 0, 1 },
	};
	struct kc_connect c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
		c.cmd.flags = bad[i].flags;
		c.cmd.transport = bad[i].transport;
		c.cmd.ack_timeout = bad[i].ack;
		c.cmd.retry_cnt = bad[i].retry;
		c.cmd.rnr_retry = bad[i].rnr;
		c.cmd.min_rnr_timer = bad[i].min_rnr;
		c.cmd.__reserved = bad[i].reserved;
		EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd),
			     "%s", bad[i].what);
	}
	kc_expect_no_handles(_metadata, self->cfd, 8);
	{
		struct krdma_event ev;

		EXPECT_EQ(0, kc_events(self->sfd, &ev, 1, 200));
	}
}

/* Connect @c (prepared by the caller), accept, and send both ways. */
static void kc_connect_send(struct __test_metadata *_metadata,
			    FIXTURE_DATA(cm) *self, struct kc_connect *c)
{
	uint32_t rxe0 = self->dev.dev_index;
	struct krdma_cm_accept a;
	struct krdma_event req;

	ASSERT_EQ(0, kc_connect_start(c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &req));
	ASSERT_OK(kc_accept(self->sfd, req.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(c, CM_MS));
	ASSERT_EQ(0, c->ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c->err));
	}
	kc_send_check(_metadata, self->cfd, c->cmd.handle, rxe0, self->sfd,
		      req.handle, rxe0, 4096, kt_seed(3, 4096, 0));
	kc_send_check(_metadata, self->sfd, req.handle, rxe0, self->cfd,
		      c->cmd.handle, rxe0, 4096, kt_seed(4, 4096, 0));
	EXPECT_OK(kt_destroy(self->cfd, c->cmd.handle));
	EXPECT_OK(kt_destroy(self->sfd, req.handle));
}

/*
 * Timers given with the flag connect and carry data; a caller built
 * against the header before the timer fields (a shorter size) gets the
 * defaults, whatever lies past its struct.
 */
KRDMA_TEST_F_TIMEOUT(cm, connect_timers_given_and_old_size, 90)
{
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.flags = KRDMA_CONN_CM_TIMERS;
	c.cmd.ack_timeout = 16;
	c.cmd.retry_cnt = 3;
	c.cmd.rnr_retry = 5;
	c.cmd.min_rnr_timer = 14;
	kc_connect_send(_metadata, self, &c);

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.size = offsetof(struct krdma_cm_connect, ack_timeout);
	c.cmd.retry_cnt = 9;	/* beyond the old size: not read */
	c.cmd.__reserved = 1;
	kc_connect_send(_metadata, self, &c);
}

/* ------------------------------------------------------------------------
 * Handshake, events and data
 */

KRDMA_TEST_F(cm, connect_accept_events)
{
	uint8_t cpd[CONNECT_PDATA_MAX], apd[ACCEPT_PDATA_MAX];
	struct krdma_event ev[8], req;
	struct krdma_cm_accept a;
	struct kc_connect c;
	int64_t rxe0 = kc_dev_index(self->sfd, self->dev.info.name);
	int n;

	kt_fill(cpd, sizeof(cpd), 1);
	kt_fill(apd, sizeof(apd), 2);
	kc_connect_init(&c, self->cfd, self->addr, self->port, cpd,
			sizeof(cpd));
	ASSERT_EQ(0, kc_connect_start(&c));

	/* The request, on the listener's session, nothing before it. */
	n = kc_events(self->sfd, &req, 1, CM_MS);
	ASSERT_EQ(1, n);
	ASSERT_EQ((uint32_t)KRDMA_EVENT_CONNECT_REQUEST, req.type) {
		TH_LOG("first server event %s", kc_event_name(req.type));
	}
	EXPECT_EQ(0, req.status);
	EXPECT_EQ(self->listener, req.listener);
	EXPECT_NE(0u, req.handle);
	EXPECT_NE(self->listener, req.handle);
	EXPECT_EQ(AF_INET, req.peer.family);
	EXPECT_TRUE(kc_sockaddr_is(&req.peer, self->addr)) {
		TH_LOG("peer %u.%u.%u.%u", req.peer.addr[0], req.peer.addr[1],
		       req.peer.addr[2], req.peer.addr[3]);
	}
	EXPECT_NE(0, req.peer.port);
	EXPECT_EQ(rxe0, req.dev_index);
	ASSERT_LE(sizeof(cpd), req.private_data_len);
	EXPECT_EQ(0, memcmp(req.private_data, cpd, sizeof(cpd)));

	/* The CONNECT is still blocked: it waits for the accept. */
	usleep(200 * 1000);
	EXPECT_EQ(EINPROGRESS, c.err);

	ASSERT_OK(kc_accept(self->sfd, req.handle, apd, sizeof(apd), &a));
	EXPECT_NE(0u, a.qp_num);
	EXPECT_NE(0u, a.caps.max_send_wr);
	EXPECT_NE(0u, a.caps.max_recv_wr);
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	EXPECT_NE(0u, c.cmd.handle);
	EXPECT_NE(0u, c.cmd.qp_num);
	EXPECT_NE(a.qp_num, c.cmd.qp_num);
	EXPECT_EQ(rxe0, c.cmd.dev_index);
	EXPECT_EQ(0, c.cmd.reject_reason);
	EXPECT_NE(0u, c.cmd.caps.max_send_wr);

	/* Server: ESTABLISHED on the accepted handle, then nothing. */
	n = kc_events(self->sfd, ev, ARRAY_SIZE(ev), CM_MS);
	ASSERT_EQ(1, n);
	EXPECT_EQ((uint32_t)KRDMA_EVENT_ESTABLISHED, ev[0].type) {
		TH_LOG("server event %s", kc_event_name(ev[0].type));
	}
	EXPECT_EQ(req.handle, ev[0].handle);
	EXPECT_EQ(0u, ev[0].listener);
	EXPECT_EQ(0, ev[0].status);
	EXPECT_TRUE(kc_sockaddr_is(&ev[0].peer, self->addr));

	/* Client: the three steps of the connect, in order, on its handle. */
	n = kc_events(self->cfd, ev, ARRAY_SIZE(ev), 0);
	ASSERT_EQ(3, n);
	EXPECT_EQ((uint32_t)KRDMA_EVENT_ADDR_RESOLVED, ev[0].type);
	EXPECT_EQ((uint32_t)KRDMA_EVENT_ROUTE_RESOLVED, ev[1].type);
	EXPECT_EQ((uint32_t)KRDMA_EVENT_ESTABLISHED, ev[2].type);
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(c.cmd.handle, ev[i].handle);
		EXPECT_EQ(0, ev[i].status);
		EXPECT_EQ(0u, ev[i].listener);
		EXPECT_TRUE(kc_sockaddr_is(&ev[i].peer, self->addr));
		EXPECT_EQ(self->port, ev[i].peer.port);
	}
	/* The accept's private data reaches the client. */
	ASSERT_LE(sizeof(apd), ev[2].private_data_len);
	EXPECT_EQ(0, memcmp(ev[2].private_data, apd, sizeof(apd)));

	/* Queues are empty now. */
	EXPECT_EQ(0, kc_events(self->cfd, ev, 1, 0));
	EXPECT_EQ(0, kc_events(self->sfd, ev, 1, 0));
}

/* Both connection handles report an RC connection in RTS to the peer QP. */
KRDMA_TEST_F(cm, conn_query_cm_connection)
{
	struct krdma_conn_query qs, qc;
	struct kc_pair p;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_OK(kt_conn_query(self->sfd, p.s, &qs));
	ASSERT_OK(kt_conn_query(self->cfd, p.c, &qc));
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, qs.state);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, qc.state);
	EXPECT_EQ((uint32_t)KRDMA_TRANSPORT_RC, qs.transport);
	EXPECT_EQ((uint32_t)KRDMA_TRANSPORT_RC, qc.transport);
	EXPECT_EQ(p.s_qp, qs.qp_num);
	EXPECT_EQ(p.conn.qp_num, qc.qp_num);
	/* "@dest_qp_num: out, the peer's QP number ...; always 0 on iWARP" */
	EXPECT_EQ(kt_peer_qpn(&self->dev, p.conn.qp_num), qs.dest_qp_num);
	EXPECT_EQ(kt_peer_qpn(&self->dev, p.s_qp), qc.dest_qp_num);
	/* "@path_mtu: out, bytes" */
	EXPECT_NE(0u, qs.path_mtu);
	EXPECT_NE(0u, qc.path_mtu);
}

/*
 * KRDMA_QUERY_SESSIONS shows an rdma_cm connection as such: established,
 * with its peer's address, and disconnected once it is; `rdma resource
 * show qp` has its QPN.
 */
KRDMA_TEST_F(cm, sessions_lists_cm_connection)
{
	const struct krdma_conn_info *ci;
	struct kt_sessions ks = {};
	struct kt_proc rdma = {};
	struct krdma_event ev;
	struct kc_pair p;
	char cmd[64], want[64];

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_OK(kt_sessions_get(self->cfd, &ks));
	ci = kt_sessions_conn(&ks, p.conn.qp_num);
	ASSERT_NE(NULL, ci);
	EXPECT_EQ(p.c, ci->handle);
	EXPECT_EQ((uint32_t)(KRDMA_CONN_INFO_CM | KRDMA_CONN_INFO_ESTABLISHED),
		  ci->flags);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, ci->state);
	EXPECT_EQ(kt_peer_qpn(&self->dev, p.s_qp), ci->dest_qp_num);
	EXPECT_TRUE(kc_sockaddr_is(&ci->peer, self->addr));
	EXPECT_EQ(self->port, ci->peer.port);
	ci = kt_sessions_conn(&ks, p.s_qp);
	ASSERT_NE(NULL, ci);
	EXPECT_EQ(p.s, ci->handle);
	EXPECT_TRUE(kc_sockaddr_is(&ci->peer, self->addr));

	if (krdma_have_cmd("rdma")) {
		snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u",
			 p.conn.qp_num);
		ASSERT_OK(kt_spawn(&rdma, "krdma_cm", "rdma", false, cmd));
		kt_reap(&rdma);
		snprintf(want, sizeof(want), "lqpn %u ", p.conn.qp_num);
		EXPECT_NE(NULL, strstr(kt_out(&rdma), want));
		/* rdma_cm's, or on older kernels (5.10) its caller's */
		EXPECT_TRUE(strstr(kt_out(&rdma), "comm [rdma_cm]") ||
			    strstr(kt_out(&rdma), "comm [krdma]"))
			TH_LOG("%s", kt_out(&rdma));
		kt_proc_end(&rdma);
	}

	ASSERT_OK(kc_disconnect(self->cfd, p.c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, p.s,
				CM_MS, &ev));
	ASSERT_OK(kt_sessions_get(self->sfd, &ks));
	ci = kt_sessions_conn(&ks, p.conn.qp_num);
	ASSERT_NE(NULL, ci);
	EXPECT_TRUE(!!(ci->flags & KRDMA_CONN_INFO_DISCONNECTED));
	ci = kt_sessions_conn(&ks, p.s_qp);
	ASSERT_NE(NULL, ci);
	EXPECT_TRUE(!!(ci->flags & KRDMA_CONN_INFO_DISCONNECTED));
	kt_sessions_free(&ks);
}

KRDMA_TEST_F_TIMEOUT(cm, send_recv_both_ways, 120)
{
	static const uint32_t sizes[] = { 1, 4096, 65536 };
	uint32_t rxe0 = self->dev.dev_index;
	struct kc_pair p;
	unsigned int i;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_EQ(rxe0, p.conn.dev_index);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		kc_send_check(_metadata, self->cfd, p.c, rxe0, self->sfd, p.s,
			      rxe0, sizes[i], kt_seed(1, sizes[i], 0));
		kc_send_check(_metadata, self->sfd, p.s, rxe0, self->cfd, p.c,
			      rxe0, sizes[i], kt_seed(2, sizes[i], 0));
	}
}

/*
 * Start a connect from the client session to the fixture's listener (its
 * own wait @timeout_ms, 0 for the default); 0 once its CONNECT_REQUEST is
 * in @ev (the connect waits in @c's thread).
 */
static int cm_request(FIXTURE_DATA(cm) *self, struct kc_connect *c,
		      uint32_t timeout_ms, struct krdma_event *ev)
{
	int err;

	kc_connect_init(c, self->cfd, self->addr, self->port, NULL, 0);
	if (timeout_ms)
		c->cmd.timeout_ms = timeout_ms;
	err = kc_connect_start(c);
	if (err) {
		errno = err;
		return -1;
	}
	return kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS,
			     ev);
}

/* The server's buffer rkey/addr travel in the accept's private data. */
KRDMA_TEST_F_TIMEOUT(cm, rdma_write_read_rkey_in_private_data, 120)
{
	const uint32_t len = 32768;
	uint32_t rxe0 = self->dev.dev_index, srv;
	struct { uint64_t addr; uint32_t rkey, len; } adv, got_adv;
	struct kt_buf target, local;
	struct krdma_event ev;
	struct krdma_cm_accept a;
	struct kc_connect c;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t *buf = malloc(len);

	ASSERT_TRUE(buf != NULL);
	ASSERT_OK(kt_buf_alloc(self->sfd, rxe0, KRDMA_ACCESS_LOCAL_WRITE |
			       KRDMA_ACCESS_REMOTE_WRITE |
			       KRDMA_ACCESS_REMOTE_READ, 2 * len, &target));
	ASSERT_NE(0u, target.rkey);
	adv.addr = target.addr;
	adv.rkey = target.rkey;
	adv.len = 2 * len;
	/* The second half is what the client will READ. */
	kt_fill(buf, len, 77);
	ASSERT_OK(kt_buf_write(self->sfd, target.handle, len, buf, len));

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	srv = ev.handle;
	ASSERT_OK(kc_accept(self->sfd, srv, &adv, sizeof(adv), &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_ESTABLISHED,
				c.cmd.handle, CM_MS, &ev));
	ASSERT_LE(sizeof(got_adv), ev.private_data_len);
	memcpy(&got_adv, ev.private_data, sizeof(got_adv));
	ASSERT_EQ(adv.rkey, got_adv.rkey);
	ASSERT_EQ(adv.addr, got_adv.addr);

	/* WRITE the first half. */
	ASSERT_OK(kt_buf_alloc(self->cfd, c.cmd.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, len, &local));
	kt_fill(buf, len, 55);
	ASSERT_OK(kt_buf_write(self->cfd, local.handle, 0, buf, len));
	kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, local.handle, 0, len);
	wr.remote_addr = got_adv.addr;
	wr.rkey = got_adv.rkey;
	ASSERT_OK(kt_post1(self->cfd, c.cmd.handle, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c.cmd.handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ((uint32_t)KRDMA_OP_RDMA_WRITE, wc.opcode);
	if (kt_dev_iwarp(&self->dev))
		kt_write_fence(_metadata, self->cfd, c.cmd.handle, self->sfd,
			       srv);
	memset(buf, 0, len);
	ASSERT_OK(kt_buf_read(self->sfd, target.handle, 0, buf, len));
	EXPECT_EQ(-1, kt_check(buf, len, 55));

	/* READ the second half over the local buffer. */
	kt_wr_init(&wr, 2, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, local.handle, 0, len);
	wr.remote_addr = got_adv.addr + len;
	wr.rkey = got_adv.rkey;
	ASSERT_OK(kt_post1(self->cfd, c.cmd.handle, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c.cmd.handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ((uint32_t)KRDMA_OP_RDMA_READ, wc.opcode);
	memset(buf, 0, len);
	ASSERT_OK(kt_buf_read(self->cfd, local.handle, 0, buf, len));
	EXPECT_EQ(-1, kt_check(buf, len, 77));
	free(buf);
}

KRDMA_TEST_F_TIMEOUT(cm, ipv6_connect, 60)
{
	struct kc_pair p;
	uint32_t h;
	uint16_t port;

	KC_NEED_ADDR6(self);
	ASSERT_OK(kc_listen(self->sfd, self->addr6, 0, &h, &port));
	kc_establish(_metadata, self->sfd, self->cfd, h, self->addr6, port,
		     "v6", 3, NULL, 0, &p);
	EXPECT_EQ(AF_INET6, p.req.peer.family);
	EXPECT_TRUE(kc_sockaddr_is(&p.req.peer, self->addr6));
	EXPECT_EQ(0, memcmp(p.req.private_data, "v6", 3));
	kc_send_check(_metadata, self->cfd, p.c, p.conn.dev_index, self->sfd,
		      p.s, self->dev.dev_index, 4096, 6);
}

/* The any-address listens on every device. */
KRDMA_TEST_F_TIMEOUT(cm, any_address_listener, 60)
{
	struct kc_pair p;
	uint32_t h;
	uint16_t port;

	ASSERT_OK(kc_listen(self->sfd, "0.0.0.0", 0, &h, &port));
	ASSERT_NE(0, port);
	kc_establish(_metadata, self->sfd, self->cfd, h, self->addr, port,
		     NULL, 0, NULL, 0, &p);
	kc_send_check(_metadata, self->cfd, p.c, p.conn.dev_index, self->sfd,
		      p.s, self->dev.dev_index, 100, 9);
}

/* Connect with KRDMA_CONN_NOTIFY: completions make the fd readable. */
KRDMA_TEST_F_TIMEOUT(cm, connect_notify_poll, 60)
{
	struct kt_buf tb, rb;
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct pollfd pfd;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.flags = KRDMA_CONN_NOTIFY;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret);
	/* Drain the client's CM events so only the completion can wake. */
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_ESTABLISHED,
				c.cmd.handle, CM_MS, NULL));
	ASSERT_OK(kt_buf_alloc(self->cfd, c.cmd.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 64, &rb));
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 64, &tb));
	kt_wr_init(&wr, 7, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, 64);
	ASSERT_OK(kt_post1(self->cfd, c.cmd.handle, &wr));
	pfd.fd = self->cfd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	kt_wr_init(&wr, 8, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, tb.handle, 0, 64);
	ASSERT_OK(kt_post1(self->sfd, ev.handle, &wr));
	ASSERT_EQ(1, poll(&pfd, 1, POLL_MS));
	EXPECT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(1, kt_poll_n(self->cfd, c.cmd.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(7u, wc.wr_id);
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
}

/* ------------------------------------------------------------------------
 * Failing connects
 */

/* Nobody listens on the port: refused (rdma_cm's REJ) or unreachable. */
KRDMA_TEST_F(cm, connect_no_listener)
{
	struct kc_connect c;
	uint32_t h;
	uint16_t port;

	/* A port that was just free and is free again. */
	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &h, &port));
	ASSERT_OK(kt_destroy(self->sfd, h));
	kc_connect_init(&c, self->cfd, self->addr, port, "x", 1);
	c.cmd.timeout_ms = 3000;
	kc_connect_run(&c);
	ASSERT_EQ(-1, c.ret);
	EXPECT_TRUE(c.err == ECONNREFUSED || c.err == EHOSTUNREACH ||
		    c.err == ETIMEDOUT) {
		TH_LOG("CM_CONNECT to a dead port: %s", strerror(c.err));
	}
	TH_LOG("%s after %llu ms, reject_reason %d", strerror(c.err),
	       (unsigned long long)c.ms, c.cmd.reject_reason);
	if (c.err == ECONNREFUSED) {
		/* on iWARP, TCP's refusal has no reject reason */
		if (!kt_dev_iwarp(&self->dev))
			EXPECT_NE(0, c.cmd.reject_reason);
		EXPECT_EQ(0u, c.cmd.handle);
	}
	EXPECT_GT((uint64_t)(3000 * 3 + 2000), c.ms);
	kc_expect_no_handles(_metadata, self->cfd, 8);
	/* The server saw nothing. */
	{
		struct krdma_event ev;

		EXPECT_EQ(0, kc_events(self->sfd, &ev, 1, 0));
	}
}

/* 198.51.100.1 (TEST-NET-2) is never a host here: resolution fails. */
KRDMA_TEST_F(cm, connect_unroutable)
{
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, "198.51.100.1", 4791, NULL, 0);
	c.cmd.timeout_ms = 1000;
	kc_connect_run(&c);
	ASSERT_EQ(-1, c.ret);
	EXPECT_TRUE(c.err == EHOSTUNREACH || c.err == ETIMEDOUT ||
		    c.err == ENETUNREACH) {
		TH_LOG("CM_CONNECT to 198.51.100.1: %s", strerror(c.err));
	}
	TH_LOG("%s after %llu ms", strerror(c.err), (unsigned long long)c.ms);
	/* address + route resolution, each bounded by timeout_ms */
	EXPECT_GT((uint64_t)(2 * 1000 + 2000), c.ms);
	kc_expect_no_handles(_metadata, self->cfd, 8);
}

/*
 * A wildcard or loopback destination on RoCE: EADDRNOTAVAIL once the
 * address resolves, and nothing is sent.  rdma_cm would address its REQ to
 * that IP, and rxe fails the send on its QP1 ("no route to ::"), which
 * moves QP1 to the error state for good; so the check that matters is the
 * last one: the device still connects afterwards.
 */
KRDMA_TEST_F_TIMEOUT(cm, connect_local_only_refused, 120)
{
	static const struct {
		const char *dst, *src;
	} cases[] = {
		{ "::", "2001:db8::1" }, { "::1", "2001:db8::1" },
		{ "::", NULL },
		{ "127.0.0.1", "192.0.2.1" }, { "127.0.0.2", NULL },
		{ "0.0.0.0", "192.0.2.1" }, { "0.0.0.0", NULL },
	};
	struct kc_connect c;

	/* iWARP's TCP has a loopback (siw runs on lo), and krdma keeps it */
	if (kt_dev_iwarp(&self->dev))
		SKIP(return, "%s: the refusal is RoCE's; iWARP connects over TCP",
		     self->dev.info.name);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *src = cases[i].src;

		if (src && strchr(src, ':') && !self->addr6)
			continue;	/* no IPv6 source on this device */
		if (src && strchr(src, ':'))
			src = self->addr6;
		else if (src)
			src = self->addr;
		kc_connect_init(&c, self->cfd, cases[i].dst, self->port,
				NULL, 0);
		if (src)
			ASSERT_OK(kc_sockaddr(&c.cmd.src, src, 0));
		kc_connect_run(&c);
		EXPECT_EQ(-1, c.ret);
		EXPECT_EQ(EADDRNOTAVAIL, c.err) {
			TH_LOG("CM_CONNECT to %s from %s: %s", cases[i].dst,
			       src ? src : "(any)", strerror(c.err));
		}
	}
	kc_expect_no_handles(_metadata, self->cfd, 8);
	/* The server saw nothing, */
	{
		struct krdma_event ev;

		EXPECT_EQ(0, kc_events(self->sfd, &ev, 1, 0));
	}
	/* and rxe0's CM still works. */
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	kc_connect_send(_metadata, self, &c);
}

/* ------------------------------------------------------------------------
 * REJECT and ACCEPT on the wrong handles
 */

KRDMA_TEST_F(cm, reject_with_private_data)
{
	uint8_t rpd[REJECT_PDATA_MAX];
	struct krdma_event ev, rej;
	struct kc_connect c;
	bool found = false;
	int n;

	kt_fill(rpd, sizeof(rpd), 3);
	kc_connect_init(&c, self->cfd, self->addr, self->port, "hello", 5);
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	ASSERT_OK(kc_reject(self->sfd, ev.handle, rpd, sizeof(rpd)));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	kc_expect_consumer_reject(_metadata, &self->dev, c.cmd.reject_reason);
	EXPECT_EQ(0u, c.cmd.handle);

	/* The REJECTED event carries the reject's private data. */
	while ((n = kc_events(self->cfd, &rej, 1, 1000)) == 1) {
		if (rej.type != KRDMA_EVENT_REJECTED)
			continue;
		found = true;
		break;
	}
	ASSERT_TRUE(found);
	kc_expect_consumer_reject(_metadata, &self->dev, rej.status);
	/* siw's -ECONNRESET is no consumer reject to rdma_cm: no data */
	if (kt_dev_iwarp(&self->dev) && rej.status == -ECONNRESET) {
		TH_LOG("%s: a reject of status %d carries no private data",
		       self->dev.info.name, rej.status);
		EXPECT_EQ(0u, rej.private_data_len);
	} else {
		ASSERT_LE(sizeof(rpd), rej.private_data_len);
		EXPECT_EQ(0, memcmp(rej.private_data, rpd, sizeof(rpd)));
	}
	EXPECT_TRUE(kc_sockaddr_is(&rej.peer, self->addr));

	/* The rejected request is gone on the server; the client kept none. */
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, ev.handle));
	EXPECT_ERRNO(ENOENT, kc_reject(self->sfd, ev.handle, NULL, 0));
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	kc_expect_no_handles(_metadata, self->cfd, 8);
	/* The listener still works. */
	{
		struct kc_pair p;

		kc_establish(_metadata, self->sfd, self->cfd, self->listener,
			     self->addr, self->port, NULL, 0, NULL, 0, &p);
	}
}

/* Over-long private data is refused and leaves the request pending. */
KRDMA_TEST_F(cm, accept_reject_private_data_too_long)
{
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	kc_accept_init(&a, ev.handle, NULL, 0);
	a.timeout_ms = 0;	/* a reject's must be */
	a.private_data_len = REJECT_PDATA_MAX + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a));
	a.private_data_len = REJECT_PDATA_MAX;
	a.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a));
	a.__reserved = 0;
	a.private_data_len = ACCEPT_PDATA_MAX + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	kc_accept_init(&a, ev.handle, NULL, 0);
	a.flags = KRDMA_CONN_SRQ;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_CM_REJECT, &a));
	kc_accept_init(&a, ev.handle, NULL, 0);
	a.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	/* what only an accept uses, in a reject */
	kc_accept_init(&a, ev.handle, NULL, 0);
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a),
		     "reject with timeout_ms");
	a.timeout_ms = 0;
	a.srq_handle = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a),
		     "reject with srq_handle");
	a.srq_handle = 0;
	a.caps.max_send_wr = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a),
		     "reject with caps");

	/* Still pending: accept it; qp_num is out, whatever came in. */
	kc_accept_init(&a, ev.handle, NULL, 0);
	a.qp_num = 0xdeadbe;
	ASSERT_OK(ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	EXPECT_NE(0xdeadbeu, a.qp_num);
	EXPECT_NE(0u, a.qp_num);
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
}

/*
 * A CM_CONNECT's out fields are written, whatever came in: the struct a
 * refused connect returned (its reject reason set) can be passed again.
 */
KRDMA_TEST_F(cm, connect_out_fields_ignored)
{
	struct krdma_event ev;
	struct kc_connect c;

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	ASSERT_OK(kc_reject(self->sfd, ev.handle, NULL, 0));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(ECONNREFUSED, c.err);
	kc_expect_consumer_reject(_metadata, &self->dev, c.cmd.reject_reason);

	c.cmd.handle = 0xdeadbe;
	c.cmd.qp_num = 0xdeadbe;
	c.cmd.dev_index = 0xdeadbe;
	c.ret = -1;
	c.err = EINPROGRESS;
	c.finished = false;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT again: %s", strerror(c.err));
	}
	EXPECT_EQ(0, c.cmd.reject_reason);
	EXPECT_EQ(self->dev.dev_index, c.cmd.dev_index);
	EXPECT_NE(0xdeadbeu, c.cmd.handle);
	EXPECT_NE(0xdeadbeu, c.cmd.qp_num);
	EXPECT_OK(kt_destroy(self->cfd, c.cmd.handle));
}

KRDMA_TEST_F(cm, accept_reject_not_a_request)
{
	struct kt_conn manual;
	struct kt_buf buf;
	struct kc_pair p;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	/* Twice, and on the established ends. */
	EXPECT_ERRNO(EINVAL, kc_accept(self->sfd, p.s, NULL, 0, NULL));
	EXPECT_ERRNO(EINVAL, kc_reject(self->sfd, p.s, NULL, 0));
	EXPECT_ERRNO(EINVAL, kc_accept(self->cfd, p.c, NULL, 0, NULL));
	EXPECT_ERRNO(EINVAL, kc_reject(self->cfd, p.c, NULL, 0));
	/* A connection set up by hand. */
	/* (iWARP has none) */
	if (kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN)) {
		TH_LOG("%s", kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN));
		return;
	}
	ASSERT_OK(kt_conn_create(self->sfd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				 NULL, &manual));
	EXPECT_ERRNO(EINVAL, kc_accept(self->sfd, manual.handle, NULL, 0,
				       NULL));
	EXPECT_ERRNO(EINVAL, kc_reject(self->sfd, manual.handle, NULL, 0));
	/* Not connections at all. */
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 64, &buf));
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, buf.handle, NULL, 0, NULL));
	EXPECT_ERRNO(ENOENT, kc_reject(self->sfd, buf.handle, NULL, 0));
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, self->listener, NULL, 0,
				       NULL));
	EXPECT_ERRNO(ENOENT, kc_reject(self->sfd, self->listener, NULL, 0));
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, 0, NULL, 0, NULL));
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, 0x7fffffff, NULL, 0, NULL));
	/* Another session's request handle means nothing here. */
	EXPECT_ERRNO(ENOENT, kc_accept(self->cfd, p.s + 1000, NULL, 0, NULL));
	/* The connection still works after all that. */
	kc_send_check(_metadata, self->cfd, p.c, p.conn.dev_index, self->sfd,
		      p.s, self->dev.dev_index, 512, 19);
}

/*
 * A client CONNECT (5 s timeout) under way, its CONNECT_REQUEST at the
 * server in @ev, and @a an ACCEPT for it for the test to spoil.
 */
static void kc_bad_caps_request(struct __test_metadata *_metadata,
				FIXTURE_DATA(cm) *self, struct kc_connect *c,
				struct krdma_event *ev,
				struct krdma_cm_accept *a)
{
	kc_connect_init(c, self->cfd, self->addr, self->port, NULL, 0);
	c->cmd.timeout_ms = 5000;
	ASSERT_EQ(0, kc_connect_start(c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, ev));
	kc_accept_init(a, ev->handle, NULL, 0);
}

/*
 * An ACCEPT refused for its arguments (queue sizes the device cannot give)
 * must leave the request answerable: REJECT (or a corrected ACCEPT) works.
 */
KRDMA_TEST_F(cm, accept_bad_caps_then_reject)
{
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;

	kc_bad_caps_request(_metadata, self, &c, &ev, &a);
	a.caps.max_send_wr = 1u << 30;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	EXPECT_OK(kc_reject(self->sfd, ev.handle, "no", 2));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err) {
		TH_LOG("CM_CONNECT: %s after %llu ms (reject_reason %d)",
		       strerror(c.err), (unsigned long long)c.ms,
		       c.cmd.reject_reason);
	}
	kc_expect_consumer_reject(_metadata, &self->dev, c.cmd.reject_reason);
}

KRDMA_TEST_F(cm, accept_bad_caps_then_accept)
{
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;

	kc_bad_caps_request(_metadata, self, &c, &ev, &a);
	a.caps.max_send_sge = 1000;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	EXPECT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s after %llu ms", strerror(c.err),
		       (unsigned long long)c.ms);
	}
}

/*
 * The connection of an incoming request is charged to the rdma cgroup of
 * the task that accepts it, when the accept builds its QP: past rdma.max
 * the ACCEPT is EAGAIN, and the request can still be accepted.
 */
KRDMA_TEST_F_TIMEOUT(cm, accept_charged_to_rdma_cgroup, 60)
{
	char root[256], cg[320], path[400], max[128];
	const char *name = self->dev.info.name;
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;

	if (geteuid())
		SKIP(return, "needs root, for a cgroup");
	if (kt_cgroup2_root(root, sizeof(root), "rdma"))
		SKIP(return, "no cgroup v2 with the rdma controller");
	snprintf(cg, sizeof(cg), "%s/krdma-test-accept", root);
	ASSERT_TRUE(!mkdir(cg, 0755) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/rdma.max", cg);
	snprintf(max, sizeof(max), "%s hca_object=1", name);
	ASSERT_OK(kt_write_file(path, max));
	/* this test's process: the client's connect, charged, runs in it too */
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	ASSERT_OK(kt_write_file(path, "0"));
	kc_bad_caps_request(_metadata, self, &c, &ev, &a);
	EXPECT_EQ(1, kt_rdmacg_objects(cg, name));
	EXPECT_ERRNO(EAGAIN, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	EXPECT_EQ(1, kt_rdmacg_objects(cg, name));
	snprintf(path, sizeof(path), "%s/rdma.max", cg);
	snprintf(max, sizeof(max), "%s hca_object=2", name);
	ASSERT_OK(kt_write_file(path, max));
	EXPECT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	/* the accepted connection and the client's */
	EXPECT_EQ(2, kt_rdmacg_objects(cg, name));
	close(self->cfd);
	close(self->sfd);
	self->cfd = self->sfd = -1;
	EXPECT_EQ(0, kt_rdmacg_objects(cg, name));
}

/* ------------------------------------------------------------------------
 * ACCEPT that does not wait for the handshake (KRDMA_CONN_ACCEPT_ASYNC)
 */

static void kc_accept_async_init(struct krdma_cm_accept *a, uint32_t handle)
{
	kc_accept_init(a, handle, NULL, 0);
	a->flags = KRDMA_CONN_ACCEPT_ASYNC;
	a->timeout_ms = 0;
}

/* The flag is ACCEPT's alone, and an accept that does not wait has no timeout. */
KRDMA_TEST_F(cm, accept_async_bad_arguments)
{
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.flags = KRDMA_CONN_ACCEPT_ASYNC;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->cfd, KRDMA_CM_CONNECT, &c.cmd));
	kc_expect_no_handles(_metadata, self->cfd, 8);

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	kc_accept_async_init(&a, ev.handle);
	a.timeout_ms = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	kc_accept_async_init(&a, ev.handle);
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_CM_REJECT, &a));
	/* both refused before anything was sent: the request still pends */
	EXPECT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
}

/* The accept returns with the QP ready; ESTABLISHED follows as an event. */
KRDMA_TEST_F(cm, accept_async_established)
{
	static const char pdata[] = "async";
	struct krdma_event ev, est;
	struct krdma_cm_accept a;
	struct kc_connect c;

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	kc_accept_async_init(&a, ev.handle);
	a.private_data_len = sizeof(pdata);
	memcpy(a.private_data, pdata, sizeof(pdata));
	ASSERT_OK(ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	EXPECT_NE(0u, a.qp_num);
	/* a second answer to the same request still loses */
	EXPECT_ERRNO(EINVAL, kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	EXPECT_ERRNO(EINVAL, kc_reject(self->sfd, ev.handle, NULL, 0));

	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_ESTABLISHED, ev.handle,
				CM_MS, &est));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	kc_send_check(_metadata, self->cfd, c.cmd.handle, c.cmd.dev_index,
		      self->sfd, ev.handle, self->dev.dev_index, 1000, 23);
	kc_send_check(_metadata, self->sfd, ev.handle, self->dev.dev_index,
		      self->cfd, c.cmd.handle, c.cmd.dev_index, 1000, 29);
}

/*
 * A peer gone before the reply (its CONNECT timed out, which destroys its
 * id and rejects): the accept fails at once with EINVAL (the REJ came
 * first), or returns and the failure comes as an event; never ESTABLISHED,
 * and the handle is the caller's to destroy either way.
 */
KRDMA_TEST_F_TIMEOUT(cm, accept_async_peer_gone, 60)
{
	struct krdma_cm_accept a;
	struct krdma_event ev, out;
	bool outcome = false;
	struct kc_connect c;
	uint64_t end;
	int ret, err;

	ASSERT_OK(cm_request(self, &c, 1000, &ev));
	ASSERT_EQ(0, kc_connect_join(&c, kc_connect_end_ms(&self->dev)));
	ASSERT_EQ(-1, c.ret);
	kc_expect_no_handles(_metadata, self->cfd, 8);

	kc_accept_async_init(&a, ev.handle);
	ret = ioctl(self->sfd, KRDMA_CM_ACCEPT, &a);
	err = errno;
	TH_LOG("async ACCEPT for a peer gone: %s",
	       ret ? strerror(err) : "sent");
	if (ret) {
		/* iWARP: the peer's TCP connection is gone */
		EXPECT_EQ(kt_dev_iwarp(&self->dev) ? ECONNRESET : EINVAL, err);
		outcome = true;
	}
	end = kt_now_ms() + CM_MS;
	while (!outcome) {
		uint64_t now = kt_now_ms();

		/* the REJECTED the reply drew */
		if (now >= end)
			break;
		if (kc_events(self->sfd, &out, 1, (uint32_t)(end - now)) != 1 ||
		    out.handle != ev.handle)
			continue;
		TH_LOG("event %s", kc_event_name(out.type));
		/*
		 * iWARP: an accept before siw has seen the peer's TCP close
		 * establishes, and the close then disconnects it
		 */
		if (kt_dev_iwarp(&self->dev) &&
		    out.type == KRDMA_EVENT_ESTABLISHED)
			continue;
		EXPECT_NE((uint32_t)KRDMA_EVENT_ESTABLISHED, out.type);
		outcome = out.type == KRDMA_EVENT_REJECTED ||
			  out.type == KRDMA_EVENT_UNREACHABLE ||
			  out.type == KRDMA_EVENT_CONNECT_ERROR ||
			  (kt_dev_iwarp(&self->dev) &&
			   out.type == KRDMA_EVENT_DISCONNECTED);
	}
	EXPECT_TRUE(outcome) {
		TH_LOG("no outcome of the async accept in %u ms", CM_MS);
	}
	EXPECT_OK(kt_destroy(self->sfd, ev.handle));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, ev.handle));
}

/*
 * A reject of a request whose peer already withdrew (its connect timed
 * out, its CM sent a REJ): the CM has ended the request, whatever the
 * reject returns, and so is the handle.  (It stayed, with CONNECTED
 * cleared, so an ACCEPT went on to build a QP for nobody.)
 */
KRDMA_TEST_F_TIMEOUT(cm, reject_peer_gone_ends_handle, 60)
{
	struct krdma_event ev, out;
	struct kc_connect c;
	int ret;

	ASSERT_OK(cm_request(self, &c, 1000, &ev));
	ASSERT_EQ(0, kc_connect_join(&c, kc_connect_end_ms(&self->dev)));
	ASSERT_EQ(-1, c.ret);
	/*
	 * the peer's REJ, so that the reject meets a request already over
	 * (iWARP's CM tells the passive side nothing: its peer's TCP
	 * connection is gone by now)
	 */
	if (!kt_dev_iwarp(&self->dev))
		ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_REJECTED,
					ev.handle, CM_MS, &out));
	ret = kc_reject(self->sfd, ev.handle, NULL, 0);
	TH_LOG("REJECT after the peer's REJ: %s",
	       ret ? strerror(errno) : "sent");
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, ev.handle));
}

/* ------------------------------------------------------------------------
 * DISCONNECT
 */

/* After a disconnect, a post fails or completes in error: never hangs. */
static void kc_post_after_disconnect(struct __test_metadata *_metadata,
				     int fd, uint32_t conn, uint32_t dev)
{
	struct kt_buf b;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint64_t t0 = kt_now_ms();
	int n;

	ASSERT_OK(kt_buf_alloc(fd, dev, KRDMA_ACCESS_LOCAL_WRITE, 64, &b));
	kt_wr_init(&wr, 42, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, b.handle, 0, 64);
	if (kt_post1(fd, conn, &wr) == 0) {
		memset(&wc, 0, sizeof(wc));
		n = kt_poll_n(fd, conn, &wc, 1, POLL_MS);
		ASSERT_EQ(1, n);
		EXPECT_NE((uint32_t)KT_WC_SUCCESS, wc.status);
		EXPECT_EQ(42u, wc.wr_id);
	}
	kt_wr_init(&wr, 43, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, b.handle, 0, 64);
	if (kt_post1(fd, conn, &wr) == 0) {
		memset(&wc, 0, sizeof(wc));
		n = kt_poll_n(fd, conn, &wc, 1, POLL_MS);
		ASSERT_EQ(1, n);
		EXPECT_EQ((uint32_t)KT_WC_WR_FLUSH_ERR, wc.status);
		EXPECT_EQ(43u, wc.wr_id);
	}
	EXPECT_GT((uint64_t)POLL_MS, kt_now_ms() - t0);
}

KRDMA_TEST_F_TIMEOUT(cm, disconnect_client_side, 90)
{
	struct krdma_event ev;
	struct kc_pair p;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_OK(kc_disconnect(self->cfd, p.c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, p.s,
				CM_MS, &ev));
	EXPECT_EQ(0u, ev.listener);
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_DISCONNECTED, p.c,
				CM_MS, &ev));
	kc_post_after_disconnect(_metadata, self->cfd, p.c, p.conn.dev_index);
	kc_post_after_disconnect(_metadata, self->sfd, p.s,
				 self->dev.dev_index);
	/* A second disconnect does not hang; then both ends go. */
	kc_disconnect(self->cfd, p.c);
	kc_disconnect(self->sfd, p.s);
	EXPECT_OK(kt_destroy(self->cfd, p.c));
	EXPECT_OK(kt_destroy(self->sfd, p.s));
}

KRDMA_TEST_F_TIMEOUT(cm, disconnect_server_side_timewait, 90)
{
	struct krdma_event ev;
	struct kc_pair p;
	int n;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_OK(kc_disconnect(self->sfd, p.s));
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_DISCONNECTED, p.c,
				CM_MS, &ev));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, p.s,
				CM_MS, &ev));
	/* Whatever follows (TIMEWAIT_EXIT) is about these two handles. */
	while ((n = kc_events(self->sfd, &ev, 1, 3000)) == 1) {
		EXPECT_EQ(p.s, ev.handle);
		TH_LOG("server: %s", kc_event_name(ev.type));
	}
	EXPECT_EQ(0, n);
	kc_post_after_disconnect(_metadata, self->sfd, p.s,
				 self->dev.dev_index);
}

KRDMA_TEST_F(cm, disconnect_wrong_handles)
{
	const char *no_manual = kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN);
	struct krdma_cm_disconnect d = { .size = sizeof(d) };
	struct kt_conn manual = {};
	struct kt_buf buf;

	/* a connection made by hand (iWARP has none) */
	if (no_manual) {
		TH_LOG("%s", no_manual);
	} else {
		ASSERT_OK(kt_conn_create(self->sfd, &self->dev,
					 KRDMA_TRANSPORT_RC, 0, NULL, &manual));
		EXPECT_ERRNO(EINVAL, kc_disconnect(self->sfd, manual.handle));
	}
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 64, &buf));
	EXPECT_ERRNO(ENOENT, kc_disconnect(self->sfd, buf.handle));
	EXPECT_ERRNO(ENOENT, kc_disconnect(self->sfd, self->listener));
	EXPECT_ERRNO(ENOENT, kc_disconnect(self->sfd, 0));
	EXPECT_ERRNO(ENOENT, kc_disconnect(self->sfd, 0x7fffffff));
	/* the struct's own checks come before the handle's */
	d.handle = no_manual ? self->listener : manual.handle;
	d.flags = 1;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_CM_DISCONNECT, &d));
	d.flags = 0;
	d.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_DISCONNECT, &d));
}

/* ------------------------------------------------------------------------
 * GET_EVENTS and poll(2)
 */

KRDMA_TEST_F(cm, get_events_empty)
{
	uint64_t t0, ms, min0 = UINT64_MAX, min300 = UINT64_MAX;
	struct krdma_event ev;
	int i;

	/* the fastest of three: a TCG guest can stall any one of them */
	for (i = 0; i < 3; i++) {
		t0 = kt_now_ms();
		EXPECT_EQ(0, kc_events(self->cfd, &ev, 1, 0));
		ms = kt_now_ms() - t0;
		min0 = ms < min0 ? ms : min0;
		t0 = kt_now_ms();
		EXPECT_EQ(0, kc_events(self->cfd, &ev, 1, 300));
		ms = kt_now_ms() - t0;
		EXPECT_LE(250u, ms);
		min300 = ms < min300 ? ms : min300;
	}
	EXPECT_GT(500u, min0);
	EXPECT_GT(3000u, min300);
	/* The listener alone queues nothing. */
	EXPECT_EQ(0, kc_events(self->sfd, &ev, 1, 0));
}

KRDMA_TEST_F(cm, get_events_bad_arguments)
{
	struct krdma_event ev[2];
	struct krdma_get_events g;

	kc_get_events_init(&g, ev, 1, 0);
	g.event_entry_size = sizeof(ev[0]) - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	g.event_entry_size = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	g.event_entry_size = KRDMA_MAX_ENTRY_SIZE + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	g.event_entry_size = UINT32_MAX;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	kc_get_events_init(&g, ev, 0, 0);
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	kc_get_events_init(&g, ev, 1, 0);
	g.flags = 1;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	kc_get_events_init(&g, ev, 1, 0);
	g.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	/* An empty queue does not touch the array: no EFAULT. */
	kc_get_events_init(&g, NULL, 1, 0);
	EXPECT_OK(ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
	EXPECT_EQ(0u, g.num_events);
}

/* Events come out in order, one per call if asked, with larger entries. */
KRDMA_TEST_F(cm, get_events_order_partial_and_entry_size)
{
	const size_t esz = sizeof(struct krdma_event) + 40;
	uint8_t big[2 * (sizeof(struct krdma_event) + 40)];
	struct krdma_event ev, *e;
	struct krdma_get_events g;
	unsigned int i;

	{
		struct kc_connect c;
		struct krdma_event req;

		kc_connect_init(&c, self->cfd, self->addr, self->port, NULL,
				0);
		ASSERT_EQ(0, kc_connect_start(&c));
		ASSERT_OK(kc_wait_event(self->sfd,
					KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS,
					&req));
		ASSERT_OK(kc_accept(self->sfd, req.handle, NULL, 0, NULL));
		ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
		ASSERT_EQ(0, c.ret);

		/* One at a time: ADDR_RESOLVED first. */
		ASSERT_EQ(1, kc_events(self->cfd, &ev, 1, 0));
		EXPECT_EQ((uint32_t)KRDMA_EVENT_ADDR_RESOLVED, ev.type);
		EXPECT_EQ(c.cmd.handle, ev.handle);
		/* The other two through 40-byte-larger entries. */
		memset(big, 0xee, sizeof(big));
		kc_get_events_init(&g, (void *)big, 2, 0);
		g.event_entry_size = esz;
		ASSERT_OK(ioctl(self->cfd, KRDMA_GET_EVENTS, &g));
		ASSERT_EQ(2u, g.num_events);
		for (i = 0; i < 2; i++) {
			e = (struct krdma_event *)(big + i * esz);
			EXPECT_EQ((uint32_t)(i ? KRDMA_EVENT_ESTABLISHED :
				  KRDMA_EVENT_ROUTE_RESOLVED), e->type);
			EXPECT_EQ(c.cmd.handle, e->handle);
			EXPECT_EQ(-1, kt_check_byte(big + i * esz +
						    sizeof(*e), 40, 0)) {
				TH_LOG("entry %u: tail not zero-filled", i);
			}
		}
		EXPECT_EQ(0, kc_events(self->cfd, &ev, 1, 0));
	}
}

/* A buffer on @fd's rxe0, its handle; destroyed at once. */
static uint32_t kc_next_handle(struct __test_metadata *_metadata, int fd,
			       uint32_t dev_index)
{
	struct kt_buf b;

	if (kt_buf_alloc(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, 4096, &b))
		return 0;
	EXPECT_OK(kt_destroy(fd, b.handle));
	return b.handle;
}

/* Fetch every queued event of @fd; whether one names @handle. */
static bool kc_drain_names(int fd, uint32_t handle, int *count)
{
	struct krdma_event ev[16];
	bool named = false;
	int n, i;

	*count = 0;
	while ((n = kc_events(fd, ev, ARRAY_SIZE(ev), 0)) > 0) {
		for (i = 0; i < n; i++)
			named |= ev[i].handle == handle ||
				 ev[i].listener == handle;
		*count += n;
	}
	return named;
}

/*
 * A failed connect leaves its events (their handle's object is gone): no
 * new object gets that handle until they are fetched.  The client session
 * is empty, so the connect had handle 1, the lowest.
 */
KRDMA_TEST_F(cm, handle_kept_for_failed_connect_events)
{
	struct kc_connect c;
	uint32_t h, other;
	uint16_t port;
	int n;

	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &h, &port));
	ASSERT_OK(kt_destroy(self->sfd, h));
	kc_connect_init(&c, self->cfd, self->addr, port, NULL, 0);
	c.cmd.timeout_ms = 3000;
	kc_connect_run(&c);
	ASSERT_EQ(-1, c.ret);
	other = kc_next_handle(_metadata, self->cfd, self->dev.dev_index);
	ASSERT_NE(0u, other);
	EXPECT_NE(1u, other);
	EXPECT_TRUE(kc_drain_names(self->cfd, 1, &n)) {
		TH_LOG("%d events, none names handle 1 (%s)", n,
		       strerror(c.err));
	}
	EXPECT_FALSE(kc_drain_names(self->cfd, other, &n));
	/* fetched: the handle is free again */
	EXPECT_EQ(1u, kc_next_handle(_metadata, self->cfd, self->dev.dev_index));
}

/* Whether @fd has an event (or completion) queued within @ms. */
static bool kc_pending(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/* The same for a DESTROY of a connection whose events were not fetched. */
KRDMA_TEST_F(cm, handle_kept_for_destroyed_connection_events)
{
	struct kc_pair p;
	uint32_t other;
	int n;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	ASSERT_EQ(1u, p.c);
	kc_drain_names(self->cfd, 0, &n);
	/* the server goes: the client's DISCONNECTED, left queued */
	ASSERT_OK(kt_destroy(self->sfd, p.s));
	ASSERT_TRUE(kc_pending(self->cfd, CM_MS));
	ASSERT_OK(kt_destroy(self->cfd, p.c));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->cfd, p.c));
	other = kc_next_handle(_metadata, self->cfd, self->dev.dev_index);
	ASSERT_NE(0u, other);
	EXPECT_NE(p.c, other);
	EXPECT_TRUE(kc_drain_names(self->cfd, p.c, &n));
	EXPECT_EQ(p.c, kc_next_handle(_metadata, self->cfd, self->dev.dev_index));
}

/*
 * And for a listener destroyed with a CONNECT_REQUEST unfetched: the event
 * names it (as @listener) and the request's connection.
 */
KRDMA_TEST_F(cm, handle_kept_for_destroyed_listener_events)
{
	struct krdma_event ev;
	struct kc_connect c;
	uint32_t other;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_TRUE(kc_pending(self->sfd, CM_MS));
	ASSERT_OK(kt_destroy(self->sfd, self->listener));
	other = kc_next_handle(_metadata, self->sfd, self->dev.dev_index);
	ASSERT_NE(0u, other);
	EXPECT_NE(self->listener, other);
	ASSERT_EQ(1, kc_events(self->sfd, &ev, 1, 0));
	EXPECT_EQ((uint32_t)KRDMA_EVENT_CONNECT_REQUEST, ev.type);
	EXPECT_EQ(self->listener, ev.listener);
	EXPECT_NE(ev.handle, other);
	EXPECT_EQ(self->listener,
		  kc_next_handle(_metadata, self->sfd, self->dev.dev_index));
	/* the request itself is still there to answer */
	ASSERT_OK(kt_destroy(self->sfd, ev.handle));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
}

/* Fetch up to @max events of @fd: their types must be @want, in order. */
static void kc_expect_events(struct __test_metadata *_metadata, int fd,
			     const uint32_t *want, int n, int max,
			     struct krdma_event *ev)
{
	int got = kc_events(fd, ev, max, 0), i;

	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(want[i], ev[i].type) {
			TH_LOG("event %d: %s, not %s", i,
			       kc_event_name(ev[i].type),
			       kc_event_name(want[i]));
		}
	}
}

/*
 * Connect the client to the fixture's listener and accept; the client's
 * handle.  The server's events are fetched, the client's left queued.
 */
static uint32_t kc_connect_accepted(struct __test_metadata *_metadata,
				    FIXTURE_DATA(cm) *self)
{
	struct krdma_event req, ev[8];
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	if (kc_connect_start(&c))
		return 0;
	if (kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS,
			  &req)) {
		EXPECT_TRUE(false) {
			TH_LOG("no CONNECT_REQUEST: %s", strerror(errno));
		}
		kc_connect_join(&c, CM_MS);
		return 0;
	}
	EXPECT_OK(kc_accept(self->sfd, req.handle, NULL, 0, NULL));
	EXPECT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret);
	/* the server's ESTABLISHED: keep its queue short */
	while (kc_events(self->sfd, ev, ARRAY_SIZE(ev), 0) > 0)
		;
	return c.ret ? 0 : c.cmd.handle;
}

/*
 * Past max_events, events are lost and counted: an OVERFLOW event where
 * the first lost one would have been, its status the number lost while it
 * is the newest entry (an event queued after it starts a new count).  Each
 * connect queues ADDR_RESOLVED, ROUTE_RESOLVED and ESTABLISHED on the
 * client, which fetches only where the test says.
 */
KRDMA_TEST_F(cm, get_events_overflow_counted)
{
	enum { A = KRDMA_EVENT_ADDR_RESOLVED, R = KRDMA_EVENT_ROUTE_RESOLVED,
	       E = KRDMA_EVENT_ESTABLISHED, O = KRDMA_EVENT_OVERFLOW };
	static const uint32_t first2[] = { A, R };
	static const uint32_t rest[] = { E, A, O, A, O };
	static const uint32_t clean[] = { A, R, E };
	struct krdma_event ev[16];
	uint32_t conn[5];
	int i;

	ASSERT_OK(kt_read_file(KC_MAX_EVENTS, self->max_events,
			       sizeof(self->max_events)));
	/* the parameter's range: 1 ... 65536 */
	EXPECT_ERRNO(EINVAL, kt_write_file(KC_MAX_EVENTS, "0"));
	EXPECT_ERRNO(EINVAL, kt_write_file(KC_MAX_EVENTS, "65537"));
	ASSERT_OK(kt_write_file(KC_MAX_EVENTS, "4"));
	for (i = 0; i < 5; i++) {
		conn[i] = kc_connect_accepted(_metadata, self);
		ASSERT_NE(0u, conn[i]);
		if (i == 2) {
			/* 9 events: A R E A queued, 5 counted; take two */
			kc_expect_events(_metadata, self->cfd, first2, 2, 2, ev);
			EXPECT_EQ(conn[0], ev[0].handle);
		}
	}
	/*
	 * The fourth connect's A fit behind the marker, its R and E went in
	 * a second one; the fifth's three were lost with them.
	 */
	kc_expect_events(_metadata, self->cfd, rest, ARRAY_SIZE(rest),
			 ARRAY_SIZE(ev), ev);
	EXPECT_EQ(conn[0], ev[0].handle);
	EXPECT_EQ(conn[1], ev[1].handle);
	EXPECT_EQ(5, ev[2].status);
	EXPECT_EQ(0u, ev[2].handle);
	EXPECT_EQ(conn[3], ev[3].handle);
	EXPECT_EQ(5, ev[4].status);
	/* room again: a connect's three, nothing lost */
	conn[0] = kc_connect_accepted(_metadata, self);
	ASSERT_NE(0u, conn[0]);
	kc_expect_events(_metadata, self->cfd, clean, 3, ARRAY_SIZE(ev), ev);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(conn[0], ev[i].handle);
}

/*
 * A GET_EVENTS whose answer cannot be written back (its argument is
 * readable, not writable) delivered nothing: the events go back, and the
 * OVERFLOW marker among them, the newest entry again, still counts the
 * next losses rather than a second marker starting.
 */
KRDMA_TEST_F(cm, get_events_efault_keeps_overflow_count)
{
	enum { A = KRDMA_EVENT_ADDR_RESOLVED, R = KRDMA_EVENT_ROUTE_RESOLVED,
	       E = KRDMA_EVENT_ESTABLISHED, O = KRDMA_EVENT_OVERFLOW };
	static const uint32_t want[] = { A, R, E, A, O };
	long psz = sysconf(_SC_PAGESIZE);
	struct krdma_get_events *g;
	struct krdma_event ev[16];
	uint32_t conn[3];
	int i;

	ASSERT_OK(kt_read_file(KC_MAX_EVENTS, self->max_events,
			       sizeof(self->max_events)));
	ASSERT_OK(kt_write_file(KC_MAX_EVENTS, "4"));
	/* A R E A queued, the second connect's R and E counted: 2 */
	for (i = 0; i < 2; i++) {
		conn[i] = kc_connect_accepted(_metadata, self);
		ASSERT_NE(0u, conn[i]);
	}
	g = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, g);
	kc_get_events_init(g, ev, ARRAY_SIZE(ev), 0);
	ASSERT_OK(mprotect(g, psz, PROT_READ));
	EXPECT_ERRNO(EFAULT, ioctl(self->cfd, KRDMA_GET_EVENTS, g));
	munmap(g, psz);
	/* the third connect's three: lost, into the same count */
	conn[2] = kc_connect_accepted(_metadata, self);
	ASSERT_NE(0u, conn[2]);
	kc_expect_events(_metadata, self->cfd, want, ARRAY_SIZE(want),
			 ARRAY_SIZE(ev), ev);
	EXPECT_EQ(conn[0], ev[0].handle);
	EXPECT_EQ(conn[1], ev[3].handle);
	EXPECT_EQ(5, ev[4].status);
}

/* An event that cannot be copied out stays queued. */
KRDMA_TEST_F(cm, get_events_efault_keeps_event)
{
	struct krdma_get_events g;
	struct krdma_event ev;
	struct kc_connect c;
	long psz = sysconf(_SC_PAGESIZE);
	void *ro;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	ASSERT_EQ(0, kc_connect_start(&c));
	/* The server's request: try to fetch it into unwritable memory. */
	ro = mmap(NULL, psz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	kc_get_events_init(&g, ro, 1, CM_MS);
	EXPECT_ERRNO(EFAULT, ioctl(self->sfd, KRDMA_GET_EVENTS, &g));
	kc_get_events_init(&g, (void *)8, 1, 0);
	EXPECT_ERRNO(EFAULT, ioctl(self->sfd, KRDMA_GET_EVENTS, &g));
	munmap(ro, psz);
	ASSERT_EQ(1, kc_events(self->sfd, &ev, 1, 0));
	EXPECT_EQ((uint32_t)KRDMA_EVENT_CONNECT_REQUEST, ev.type);
	EXPECT_EQ(self->listener, ev.listener);
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(0, c.ret);
}

KRDMA_TEST_F(cm, poll_reports_queued_events)
{
	struct pollfd pfd = { .fd = self->sfd, .events = POLLIN };
	struct krdma_event ev;
	struct kc_connect c;
	uint64_t t0;

	EXPECT_EQ(0, poll(&pfd, 1, 0));
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	ASSERT_EQ(0, kc_connect_start(&c));
	/* poll sleeps until the request arrives. */
	t0 = kt_now_ms();
	ASSERT_EQ(1, poll(&pfd, 1, CM_MS));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_GT((uint64_t)CM_MS, kt_now_ms() - t0);
	/* Still readable until it is fetched. */
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	ASSERT_EQ(1, kc_events(self->sfd, &ev, 1, 0));
	ASSERT_EQ((uint32_t)KRDMA_EVENT_CONNECT_REQUEST, ev.type);
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret);
	/* The ESTABLISHED makes it readable again. */
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, CM_MS));
	ASSERT_EQ(1, kc_events(self->sfd, &ev, 1, 0));
	EXPECT_EQ((uint32_t)KRDMA_EVENT_ESTABLISHED, ev.type);
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* The client's fd has its three events queued. */
	pfd.fd = self->cfd;
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
}

static void kc_sigusr1(int sig)
{
}

struct kc_getter {
	int fd;
	int ret, err;
	uint64_t ms;
	int done;
};

static void *kc_getter_fn(void *arg)
{
	struct kc_getter *g = arg;
	struct krdma_event ev;
	uint64_t t0 = kt_now_ms();

	g->ret = kc_events(g->fd, &ev, 1, 20000);
	g->err = errno;
	g->ms = kt_now_ms() - t0;
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

KRDMA_TEST_F(cm, get_events_interrupted)
{
	struct sigaction sa = { .sa_handler = kc_sigusr1 };
	struct kc_getter g = { .fd = self->cfd };
	pthread_t t;

	ASSERT_OK(sigaction(SIGUSR1, &sa, NULL));	/* no SA_RESTART */
	ASSERT_EQ(0, pthread_create(&t, NULL, kc_getter_fn, &g));
	kt_signal_until_done(t, SIGUSR1, &g.done);
	pthread_join(t, NULL);
	EXPECT_EQ(-1, g.ret);
	EXPECT_EQ(EINTR, g.err);
	EXPECT_GT(10000u, g.ms);
}

/* ------------------------------------------------------------------------
 * Many connections, listener and session teardown
 */

#define NCONN 8

KRDMA_TEST_F_TIMEOUT(cm, many_connections_one_listener, 240)
{
	struct kc_connect c[NCONN];
	uint32_t srv[NCONN] = { 0 };
	struct krdma_event ev;
	unsigned int i, got = 0;

	for (i = 0; i < NCONN; i++) {
		uint32_t idx = i;

		kc_connect_init(&c[i], self->cfd, self->addr, self->port,
				&idx, sizeof(idx));
		c[i].cmd.timeout_ms = 60000;
		ASSERT_EQ(0, kc_connect_start(&c[i]));
	}
	while (got < NCONN) {
		uint32_t idx;

		ASSERT_EQ(0, kc_wait_event(self->sfd,
					   KRDMA_EVENT_CONNECT_REQUEST, 0,
					   60000, &ev)) {
			TH_LOG("%u of %u requests", got, NCONN);
		}
		EXPECT_EQ(self->listener, ev.listener);
		memcpy(&idx, ev.private_data, sizeof(idx));
		ASSERT_GT((uint32_t)NCONN, idx);
		ASSERT_EQ(0u, srv[idx]);
		srv[idx] = ev.handle;
		ASSERT_EQ(0, kc_accept(self->sfd, ev.handle, NULL, 0, NULL)) {
			TH_LOG("accept of request %u: %s", idx,
			       strerror(errno));
		}
		got++;
	}
	for (i = 0; i < NCONN; i++) {
		ASSERT_EQ(0, kc_connect_join(&c[i], 60000));
		ASSERT_EQ(0, c[i].ret) {
			TH_LOG("client %u: %s", i, strerror(c[i].err));
		}
	}
	for (i = 0; i < NCONN; i++) {
		kc_send_check(_metadata, self->cfd, c[i].cmd.handle,
			      c[i].cmd.dev_index, self->sfd, srv[i],
			      self->dev.dev_index, 1000 + i, 100 + i);
		kc_send_check(_metadata, self->sfd, srv[i],
			      self->dev.dev_index, self->cfd, c[i].cmd.handle,
			      c[i].cmd.dev_index, 2000 + i, 200 + i);
	}
	/* Every connection has its own handle on each side. */
	for (i = 0; i < NCONN; i++)
		for (unsigned int j = i + 1; j < NCONN; j++) {
			EXPECT_NE(srv[i], srv[j]);
			EXPECT_NE(c[i].cmd.handle, c[j].cmd.handle);
		}
}

/* The listener goes; its pending request stays acceptable. */
KRDMA_TEST_F(cm, destroy_listener_with_pending_request)
{
	struct krdma_event ev;
	struct kc_connect c, c2;

	ASSERT_OK(cm_request(self, &c, 0, &ev));
	ASSERT_OK(kt_destroy(self->sfd, self->listener));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->sfd, self->listener));
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	kc_send_check(_metadata, self->cfd, c.cmd.handle, c.cmd.dev_index,
		      self->sfd, ev.handle, self->dev.dev_index, 300, 30);
	/* Nobody listens there any more. */
	kc_connect_init(&c2, self->cfd, self->addr, self->port, NULL, 0);
	c2.cmd.timeout_ms = 2000;
	kc_connect_run(&c2);
	EXPECT_EQ(-1, c2.ret);
}

/* DESTROY of a request answers the peer: refused, promptly. */
KRDMA_TEST_F(cm, destroy_pending_request)
{
	struct krdma_event ev;
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	/* "promptly": well before a timeout far above a stalled guest's delays */
	c.cmd.timeout_ms = 20000;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	ASSERT_OK(kt_destroy(self->sfd, ev.handle));
	ASSERT_EQ(0, kc_connect_join(&c, 2 * CM_MS));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err) {
		TH_LOG("CM_CONNECT: %s after %llu ms", strerror(c.err),
		       (unsigned long long)c.ms);
	}
	EXPECT_GT(10000u, c.ms);
	EXPECT_ERRNO(ENOENT, kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
}

/* Wait for @pid for up to @ms; its wait status, or -1 if it still runs. */
static int kc_waitpid(pid_t pid, uint32_t ms)
{
	uint64_t end = kt_now_ms() + ms;
	int status;

	while (kt_now_ms() < end) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		usleep(20 * 1000);
	}
	return -1;
}

/*
 * A child connects to us, leaves its events unread and a RECV posted, and
 * exits without any cleanup: its close() tears the connection down and we
 * get DISCONNECTED.
 */
KRDMA_TEST_F_TIMEOUT(cm, client_exits_with_connection, 90)
{
	struct krdma_event ev;
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kc_connect c;
		struct kt_buf b;
		struct krdma_wr wr;
		int fd = krdma_open();

		if (fd < 0)
			_exit(10);
		kc_connect_init(&c, fd, self->addr, self->port, NULL, 0);
		kc_connect_run(&c);
		if (c.ret)
			_exit(11);
		if (kt_buf_alloc(fd, c.cmd.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
				 64, &b))
			_exit(12);
		kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, b.handle, 0, 64);
		if (kt_post1(fd, c.cmd.handle, &wr))
			_exit(13);
		_exit(0);
	}
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, NULL));
	status = kc_waitpid(pid, 30000);
	ASSERT_NE(-1, status) {
		TH_LOG("the child did not exit");
		kill(pid, SIGKILL);
	}
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, ev.handle,
				CM_MS, NULL));
	kc_post_after_disconnect(_metadata, self->sfd, ev.handle,
				 self->dev.dev_index);
}

/*
 * The server closes its fd with a listener, an established connection with
 * events queued and a pending request: the established peer gets
 * DISCONNECTED, the pending one is refused.
 */
KRDMA_TEST_F_TIMEOUT(cm, server_close_with_connections, 90)
{
	struct krdma_event ev;
	struct kc_connect c;
	struct kc_pair p;
	uint64_t t0;
	int c2fd;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	/* A request that stays pending. */
	c2fd = krdma_open();
	ASSERT_LE(0, c2fd);
	kc_connect_init(&c, c2fd, self->addr, self->port, NULL, 0);
	c.cmd.timeout_ms = 8000;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	/* Something still queued at close. */
	ASSERT_OK(kc_disconnect(self->cfd, p.c));
	usleep(200 * 1000);
	t0 = kt_now_ms();
	close(self->sfd);
	self->sfd = -1;
	EXPECT_GT(5000u, kt_now_ms() - t0);

	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err) {
		TH_LOG("pending CM_CONNECT: %s after %llu ms", strerror(c.err),
		       (unsigned long long)c.ms);
	}
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_DISCONNECTED, p.c,
				CM_MS, NULL));
	close(c2fd);
}

/* Closing an fd that holds only an established connection. */
KRDMA_TEST_F_TIMEOUT(cm, server_close_established_only, 90)
{
	struct kc_pair p;

	kc_establish(_metadata, self->sfd, self->cfd, self->listener,
		     self->addr, self->port, NULL, 0, NULL, 0, &p);
	close(self->sfd);
	self->sfd = -1;
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_DISCONNECTED, p.c,
				CM_MS, NULL));
	kc_post_after_disconnect(_metadata, self->cfd, p.c, p.conn.dev_index);
}

/* ------------------------------------------------------------------------
 * rxe1 -> rxe0 across the veth (the test device's second, kt_test_dev2(),
 * to it), and back
 */

/*
 * From @src, an address of device @src_dev, to @dst, one of @dst_dev: the
 * connection is on each end's device, and the request names the server's.
 */
static void kc_cross(struct __test_metadata *_metadata,
		     FIXTURE_DATA(cm) *self, const char *src_dev,
		     const char *src, const char *dst_dev, const char *dst)
{
	int64_t dst_index = kc_dev_index(self->sfd, dst_dev);
	int64_t src_index = kc_dev_index(self->sfd, src_dev);
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;
	uint32_t h;
	uint16_t port;

	ASSERT_LE(0, dst_index);
	ASSERT_LE(0, src_index);
	/* a wildcard listener hears both devices: only the event tells */
	ASSERT_OK(kc_listen(self->sfd, strchr(dst, ':') ? "::" : "0.0.0.0", 0,
			    &h, &port));
	kc_connect_init(&c, self->cfd, dst, port, "x", 1);
	kc_sockaddr(&c.cmd.src, src, 0);
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	EXPECT_TRUE(kc_sockaddr_is(&ev.peer, src));
	EXPECT_EQ(dst_index, ev.dev_index);
	ASSERT_OK(kc_accept(self->sfd, ev.handle, NULL, 0, &a));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT %s -> %s: %s", src, dst, strerror(c.err));
	}
	EXPECT_EQ(src_index, c.cmd.dev_index);
	kc_send_check(_metadata, self->cfd, c.cmd.handle, src_index, self->sfd,
		      ev.handle, dst_index, 8192, 41);
	kc_send_check(_metadata, self->sfd, ev.handle, dst_index, self->cfd,
		      c.cmd.handle, src_index, 8192, 42);
	EXPECT_OK(kc_disconnect(self->cfd, c.cmd.handle));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, ev.handle,
				CM_MS, NULL));
}

/*
 * UC and UD over rdma_cm.  UC connects like RC (CM REQ/REP in the TCP port
 * space); UD resolves its peer with SIDR in the UDP port space: the connect
 * returns once the reply names the server's QP, and sends that name no
 * address handle go there.
 */

static void kc_listen_transport(struct __test_metadata *_metadata, int fd,
				const char *addr, uint32_t transport,
				uint32_t *handle, uint16_t *port)
{
	struct krdma_cm_listen l;

	kc_listen_init(&l, addr, 0);
	l.transport = transport;
	ASSERT_OK(ioctl(fd, KRDMA_CM_LISTEN, &l));
	ASSERT_NE(0u, l.port);
	*handle = l.handle;
	*port = l.port;
}

/* Connect @transport from a thread, accept on sfd; UD sees no ESTABLISHED. */
static void kc_establish_transport(struct __test_metadata *_metadata,
				   FIXTURE_DATA(cm) *self, uint32_t transport,
				   uint16_t port, struct kc_pair *p)
{
	struct kc_connect c;
	struct krdma_cm_accept a;
	uint32_t cpd = 0x75647564;

	memset(p, 0, sizeof(*p));
	kc_connect_init(&c, self->cfd, self->addr, port, &cpd, sizeof(cpd));
	c.cmd.transport = transport;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &p->req));
	EXPECT_EQ(0, memcmp(p->req.private_data, &cpd, sizeof(cpd)));
	ASSERT_OK(kc_accept(self->sfd, p->req.handle, NULL, 0, &a));
	p->s = p->req.handle;
	p->s_qp = a.qp_num;
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s (reject_reason %d)", strerror(c.err),
		       c.cmd.reject_reason);
	}
	p->conn = c.cmd;
	p->c = c.cmd.handle;
	ASSERT_OK(kc_wait_event(self->cfd, KRDMA_EVENT_ESTABLISHED, p->c,
				CM_MS, NULL));
	if (transport != KRDMA_TRANSPORT_UD)
		ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_ESTABLISHED,
					p->s, CM_MS, NULL));
}

static void kc_expect_transport(struct __test_metadata *_metadata, int fd,
				uint32_t conn, uint32_t transport)
{
	struct krdma_conn_query q;

	ASSERT_OK(kt_conn_query(fd, conn, &q));
	EXPECT_EQ(transport, q.transport);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, q.state);
}

KRDMA_TEST_F_TIMEOUT(cm, uc_connect_send_and_write, 90)
{
	uint8_t data[4096], got[4096];
	struct kt_buf src, dst;
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct kc_pair p;
	uint16_t port;
	uint32_t l;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UC);
	kc_listen_transport(_metadata, self->sfd, self->addr,
			    KRDMA_TRANSPORT_UC, &l, &port);
	kc_establish_transport(_metadata, self, KRDMA_TRANSPORT_UC, port, &p);
	kc_expect_transport(_metadata, self->sfd, p.s, KRDMA_TRANSPORT_UC);
	kc_expect_transport(_metadata, self->cfd, p.c, KRDMA_TRANSPORT_UC);
	kc_send_check(_metadata, self->cfd, p.c, self->dev.dev_index,
		      self->sfd, p.s, self->dev.dev_index, 3000, 7);

	/* a WRITE, then a SEND behind it (UC has no ACK to wait for) */
	ASSERT_OK(kt_buf_alloc(self->cfd, self->dev.dev_index, 0,
			       sizeof(data), &src));
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE |
			       KRDMA_ACCESS_REMOTE_WRITE, sizeof(got), &dst));
	kt_fill(data, sizeof(data), 11);
	ASSERT_OK(kt_buf_write(self->cfd, src.handle, 0, data, sizeof(data)));
	kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, src.handle, 0, sizeof(data));
	wr.remote_addr = dst.addr;
	wr.rkey = dst.rkey;
	ASSERT_OK(kt_post1(self->cfd, p.c, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, p.c, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	kc_send_check(_metadata, self->cfd, p.c, self->dev.dev_index,
		      self->sfd, p.s, self->dev.dev_index, 8, 8);
	ASSERT_OK(kt_buf_read(self->sfd, dst.handle, 0, got, sizeof(got)));
	EXPECT_EQ(-1, kt_check(got, sizeof(got), 11));

	/* READ and atomics are RC only */
	kt_wr_init(&wr, 2, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, dst.handle, 0, 8);
	EXPECT_ERRNO(EOPNOTSUPP, kt_post1(self->sfd, p.s, &wr));
	EXPECT_OK(kc_disconnect(self->cfd, p.c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_DISCONNECTED, p.s,
				CM_MS, NULL));
}

/* A UC request at an RC listener is refused, and the other way round. */
KRDMA_TEST_F(cm, uc_rc_listener_mismatch)
{
	struct kc_connect c;
	uint16_t port;
	uint32_t l;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UC);
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.transport = KRDMA_TRANSPORT_UC;
	kc_connect_run(&c);
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err);
	TH_LOG("UC at an RC listener: %s, reason %d", strerror(c.err),
	       c.cmd.reject_reason);

	kc_listen_transport(_metadata, self->sfd, self->addr,
			    KRDMA_TRANSPORT_UC, &l, &port);
	kc_connect_init(&c, self->cfd, self->addr, port, NULL, 0);
	kc_connect_run(&c);
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err);
	kc_expect_no_handles(_metadata, self->cfd, 8);
}

/* A UD message of @len from (fd, conn, buf) with @wr's addressing. */
static void kc_ud_send(struct __test_metadata *_metadata, int fd,
		       uint32_t conn, uint32_t buf, uint32_t len,
		       struct krdma_wr *wr)
{
	struct krdma_wc wc;

	wr->opcode = KRDMA_OP_SEND_WITH_IMM;
	wr->flags = KRDMA_WR_SIGNALED;
	wr->imm_data = 0xcafe;
	kt_wr_sge(wr, buf, 0, len);
	ASSERT_OK(kt_post1(fd, conn, wr));
	ASSERT_EQ(1, kt_poll_n(fd, conn, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
}

/* A UD receive of @len pattern-@seed bytes from @src_qp on (fd, conn). */
static void kc_ud_recv_check(struct __test_metadata *_metadata, int fd,
			     uint32_t conn, uint32_t buf, uint32_t len,
			     uint32_t src_qp, uint32_t seed)
{
	uint8_t got[KT_GRH_LEN + 1024];
	struct krdma_wc wc;

	ASSERT_EQ(1, kt_poll_n(fd, conn, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(KT_GRH_LEN + len, wc.byte_len);
	EXPECT_EQ(src_qp, wc.src_qp);
	EXPECT_EQ(0xcafeu, wc.imm_data);
	ASSERT_OK(kt_buf_read(fd, buf, 0, got, KT_GRH_LEN + len));
	EXPECT_EQ(-1, kt_check(got + KT_GRH_LEN, len, seed));
}

static void kc_ud_post_recv(struct __test_metadata *_metadata, int fd,
			    uint32_t conn, uint32_t buf)
{
	struct krdma_wr wr;

	kt_wr_init(&wr, 10, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, buf, 0, KT_GRH_LEN + 1024);
	ASSERT_OK(kt_post1(fd, conn, &wr));
}

/* UD: the client sends with no AH to the CM peer; the server names one. */
/*
 * A transport the device lacks (UC and UD on iWARP) is refused up front,
 * EPROTONOSUPPORT, and leaves no handle behind.
 */
KRDMA_TEST_F(cm, transport_lacking_refused)
{
	uint32_t t, n = 0;
	struct kc_connect c;

	for (t = KRDMA_TRANSPORT_UC; t <= KRDMA_TRANSPORT_UD; t++) {
		if (!kt_dev_lacks_transport(&self->dev, t))
			continue;
		n++;
		kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
		c.cmd.transport = t;
		kc_connect_run(&c);
		EXPECT_EQ(-1, c.ret);
		EXPECT_EQ(EPROTONOSUPPORT, c.err) {
			TH_LOG("%s: CM_CONNECT: %s",
			       kt_dev_lacks_transport(&self->dev, t),
			       strerror(c.err));
		}
	}
	if (!n)
		SKIP(return, "%s has every transport", self->dev.info.name);
	kc_expect_no_handles(_metadata, self->cfd, 8);
}

KRDMA_TEST_F_TIMEOUT(cm, ud_connect_send_both_ways, 90)
{
	uint8_t data[512];
	struct kt_buf sb, cb;
	struct krdma_wr wr;
	struct kc_pair p;
	uint32_t l, ah;
	uint16_t port;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	kc_listen_transport(_metadata, self->sfd, self->addr,
			    KRDMA_TRANSPORT_UD, &l, &port);
	kc_establish_transport(_metadata, self, KRDMA_TRANSPORT_UD, port, &p);
	kc_expect_transport(_metadata, self->sfd, p.s, KRDMA_TRANSPORT_UD);
	kc_expect_transport(_metadata, self->cfd, p.c, KRDMA_TRANSPORT_UD);
	EXPECT_EQ(l, p.req.listener);
	EXPECT_NE(0u, p.s_qp);
	/* the accepted connection does not need its listener */
	ASSERT_OK(kt_destroy(self->sfd, l));
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, KT_GRH_LEN + 1024,
			       &sb));
	ASSERT_OK(kt_buf_alloc(self->cfd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, KT_GRH_LEN + 1024,
			       &cb));

	kt_fill(data, sizeof(data), 21);
	ASSERT_OK(kt_buf_write(self->cfd, cb.handle, 0, data, sizeof(data)));
	kc_ud_post_recv(_metadata, self->sfd, p.s, sb.handle);
	kt_wr_init(&wr, 11, KRDMA_OP_SEND, 0);
	kc_ud_send(_metadata, self->cfd, p.c, cb.handle, sizeof(data), &wr);
	kc_ud_recv_check(_metadata, self->sfd, p.s, sb.handle, sizeof(data),
			 p.conn.qp_num, 21);

	/* The server learnt no peer: a send must name one. */
	kt_wr_init(&wr, 12, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sb.handle, 0, 8);
	EXPECT_ERRNO(ENOENT, kt_post1(self->sfd, p.s, &wr));
	ASSERT_OK(kt_ah_create(self->sfd, p.s, self->dev.gid, &ah));
	kt_fill(data, sizeof(data), 22);
	ASSERT_OK(kt_buf_write(self->sfd, sb.handle, 0, data, sizeof(data)));
	kc_ud_post_recv(_metadata, self->cfd, p.c, cb.handle);
	kt_wr_init(&wr, 13, KRDMA_OP_SEND, 0);
	wr.ah_handle = ah;
	wr.remote_qpn = p.conn.qp_num;
	kc_ud_send(_metadata, self->sfd, p.s, sb.handle, sizeof(data), &wr);
	kc_ud_recv_check(_metadata, self->cfd, p.c, cb.handle, sizeof(data),
			 p.s_qp, 22);

	/* Nothing to disconnect on a datagram transport. */
	EXPECT_ERRNO(EOPNOTSUPP, kc_disconnect(self->cfd, p.c));
	EXPECT_OK(kt_destroy(self->cfd, p.c));
	EXPECT_OK(kt_destroy(self->sfd, p.s));
}

/* SIDR refusals: a reject (reason 2), and no UD listener (reason 1). */
KRDMA_TEST_F_TIMEOUT(cm, ud_reject_and_no_listener, 60)
{
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;
	uint16_t port;
	uint32_t l;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	kc_listen_transport(_metadata, self->sfd, self->addr,
			    KRDMA_TRANSPORT_UD, &l, &port);
	kc_connect_init(&c, self->cfd, self->addr, port, NULL, 0);
	c.cmd.transport = KRDMA_TRANSPORT_UD;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	/*
	 * A SIDR reply carries 136 bytes: more is EINVAL before anything is
	 * sent, and the request can still be answered.
	 */
	kc_accept_init(&a, ev.handle, NULL, 137);
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_ACCEPT, &a));
	a.timeout_ms = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->sfd, KRDMA_CM_REJECT, &a));
	ASSERT_OK(kc_reject(self->sfd, ev.handle, "no", 2));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(ECONNREFUSED, c.err);
	EXPECT_EQ(2, c.cmd.reject_reason);
	EXPECT_EQ(0u, c.cmd.handle);

	/* the RC listener's port has no UD listener */
	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.transport = KRDMA_TRANSPORT_UD;
	c.cmd.timeout_ms = 3000;
	kc_connect_run(&c);
	EXPECT_EQ(-1, c.ret);
	EXPECT_TRUE(c.err == ECONNREFUSED || c.err == ETIMEDOUT) {
		TH_LOG("UD connect without a UD listener: %s",
		       strerror(c.err));
	}
	kc_expect_no_handles(_metadata, self->cfd, 8);
}

KRDMA_TEST_F_TIMEOUT(cm, rxe1_to_rxe0_ipv4, 90)
{
	const char *src = kt_test_addr2(false);

	if (!src)
		SKIP(return, "%s", kt_no_dev2(false));
	kc_cross(_metadata, self, kt_test_dev2(), src, kt_test_dev(),
		 self->addr);
}

KRDMA_TEST_F_TIMEOUT(cm, rxe0_to_rxe1_ipv4, 90)
{
	const char *dst = kt_test_addr2(false);

	if (!dst)
		SKIP(return, "%s", kt_no_dev2(false));
	kc_cross(_metadata, self, kt_test_dev(), self->addr, kt_test_dev2(),
		 dst);
}

KRDMA_TEST_F_TIMEOUT(cm, rxe1_to_rxe0_ipv6, 90)
{
	const char *src = kt_test_addr2(true);

	if (!src)
		SKIP(return, "%s", kt_no_dev2(true));
	KC_NEED_ADDR6(self);
	kc_cross(_metadata, self, kt_test_dev2(), src, kt_test_dev(),
		 self->addr6);
}

KRDMA_TEST_F_TIMEOUT(cm, rxe0_to_rxe1_ipv6, 90)
{
	const char *dst = kt_test_addr2(true);

	if (!dst)
		SKIP(return, "%s", kt_no_dev2(true));
	KC_NEED_ADDR6(self);
	kc_cross(_metadata, self, kt_test_dev(), self->addr6, kt_test_dev2(),
		 dst);
}

/* ------------------------------------------------------------------------
 * Commands on a connection with no QP yet.  Last: when the module oopses
 * the child doing it never finishes exiting (the oops leaves the
 * connection's hw lock held), so it runs in a child we do not wait for
 * beyond a bound.
 */

enum kc_on_request {
	KC_POST,
	KC_POLL,
	KC_QUERY,
	KC_POLL_AFTER_BAD_ACCEPT,
};

/*
 * In a child with sessions of its own: a request reaches our listener and,
 * before it is accepted, @what is tried on its handle.  The child writes
 * one byte to @out when the command returned: 0 if it failed cleanly, 1 if
 * it succeeded; 2 on a setup failure.  An oops means no byte at all (the
 * oopsing thread dies inside the ioctl).
 */
static void kc_on_request_child(FIXTURE_DATA(cm) *self,
				enum kc_on_request what, int out)
{
	int sfd = krdma_open(), cfd = krdma_open();
	struct krdma_conn_query q;
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct kc_connect c;
	struct krdma_wc wc;
	struct krdma_wr wr;
	uint8_t res = 2;
	uint32_t l;
	uint16_t port;
	int ret;

	if (sfd < 0 || cfd < 0 || kc_listen(sfd, self->addr, 0, &l, &port))
		goto out;
	kc_connect_init(&c, cfd, self->addr, port, NULL, 0);
	c.cmd.timeout_ms = 3000;
	if (kc_connect_start(&c) ||
	    kc_wait_event(sfd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS, &ev))
		goto out;
	switch (what) {
	case KC_POST:
		kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_INLINE);
		ret = kt_post1(sfd, ev.handle, &wr);
		break;
	case KC_POLL:
		ret = kt_poll(sfd, ev.handle, &wc, 1, 0);
		break;
	case KC_QUERY:
		ret = kt_conn_query(sfd, ev.handle, &q);
		break;
	case KC_POLL_AFTER_BAD_ACCEPT:
		kc_accept_init(&a, ev.handle, NULL, 0);
		a.caps.max_send_wr = 1u << 30;
		ioctl(sfd, KRDMA_CM_ACCEPT, &a);
		ret = kt_poll(sfd, ev.handle, &wc, 1, 0);
		break;
	default:
		goto out;
	}
	fprintf(stderr, "# child: command %d on request %u: %s\n", what,
		ev.handle, ret < 0 ? strerror(errno) : "succeeded");
	res = ret < 0 ? 0 : 1;
out:
	if (write(out, &res, 1) != 1)
		_exit(3);
	_exit(0);
}

static void kc_on_request(struct __test_metadata *_metadata,
			  FIXTURE_DATA(cm) *self, enum kc_on_request what)
{
	uint64_t mark = kt_dmesg_mark();
	struct pollfd pfd;
	uint8_t res = 0xff;
	int pipefd[2];
	pid_t pid;

	ASSERT_OK(pipe(pipefd));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(pipefd[0]);
		kc_on_request_child(self, what, pipefd[1]);
	}
	close(pipefd[1]);
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 25000) == 1 && read(pipefd[0], &res, 1) != 1)
		res = 0xff;
	close(pipefd[0]);
	/* Reap it if it can be; an oopsed child may never finish exiting. */
	kc_waitpid(pid, 5000);
	EXPECT_EQ(0, kt_dmesg_bad_since(mark)) {
		TH_LOG("new BUG/Oops lines in the kernel log");
	}
	ASSERT_NE(0xff, res) {
		TH_LOG("the command never returned (oops?): see the kernel log");
	}
	ASSERT_NE(2, res) {
		TH_LOG("setup failed in the child");
	}
	EXPECT_EQ(0, res) {
		TH_LOG("the command succeeded on a request with no QP");
	}
}

KRDMA_TEST_F_TIMEOUT(cm, zz_post_on_pending_request, 40)
{
	kc_on_request(_metadata, self, KC_POST);
}

KRDMA_TEST_F_TIMEOUT(cm, zz_query_on_pending_request, 40)
{
	kc_on_request(_metadata, self, KC_QUERY);
}

KRDMA_TEST_F_TIMEOUT(cm, zz_poll_on_pending_request, 40)
{
	kc_on_request(_metadata, self, KC_POLL);
}

KRDMA_TEST_F_TIMEOUT(cm, zz_poll_after_failed_accept, 40)
{
	kc_on_request(_metadata, self, KC_POLL_AFTER_BAD_ACCEPT);
}

TEST_HARNESS_MAIN
