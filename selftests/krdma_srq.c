// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: KRDMA_SRQ_CREATE's contract, receives posted to
 * the SRQ's handle consumed by several connections (each completion on the
 * CQ of the connection that took it, every byte checked), the refusals
 * (RECV on a connection that has an SRQ, sends to an SRQ, DESTROY of an SRQ
 * in use: EBUSY), binding through rdma_cm accept, and teardown by close().
 */
#include "krdma_test.h"

#define POLL_MS 20000
#define SRQ_DEPTH 64
#define MSG 1000		/* bytes per message (below every MTU) */
#define NCONN 3

static int srq_create(int fd, uint32_t dev_index, uint32_t max_wr,
		      uint32_t max_sge, struct krdma_srq_create *out)
{
	struct krdma_srq_create c = {
		.size = sizeof(c),
		.dev_index = dev_index,
		.max_wr = max_wr,
		.max_sge = max_sge,
	};
	int ret = ioctl(fd, KRDMA_SRQ_CREATE, &c);

	if (out)
		*out = c;
	return ret;
}

/* A connection that receives from @srq. */
static int srq_conn_create(int fd, const struct kt_dev *dev,
			   uint32_t transport, uint32_t srq, struct kt_conn *c)
{
	return kt_conn_create_srq(fd, dev, transport, KRDMA_CONN_SRQ, srq,
				  NULL, c);
}

FIXTURE(srq)
{
	int fd;
	struct kt_dev dev;
	struct krdma_srq_create srq;
	struct kt_conn tx[NCONN], rx[NCONN];	/* rx[i] receive from srq */
	uint32_t ah[NCONN];			/* UD: tx[i]'s AH for rx[i] */
	struct kt_buf src, dst;			/* dst: SRQ receive buffers */
};

FIXTURE_VARIANT(srq)
{
	uint32_t transport;
};

FIXTURE_VARIANT_ADD(srq, rc) { .transport = KRDMA_TRANSPORT_RC };
FIXTURE_VARIANT_ADD(srq, uc) { .transport = KRDMA_TRANSPORT_UC };
FIXTURE_VARIANT_ADD(srq, ud) { .transport = KRDMA_TRANSPORT_UD };

FIXTURE_SETUP(srq)
{
	int i;

	self->fd = kt_session_open_feature(_metadata, KRDMA_FEATURE_SRQ,
					   &self->dev);
	if (self->fd < 0)
		return;
	KT_NEED(&self->dev, KT_CAP_SRQ);
	KT_NEED_TRANSPORT(&self->dev, variant->transport);
	ASSERT_OK(srq_create(self->fd, self->dev.dev_index, SRQ_DEPTH, 2,
			     &self->srq));
	for (i = 0; i < NCONN; i++) {
		struct kt_conn *t = &self->tx[i], *r = &self->rx[i];

		/* iWARP: rx[i] accepts tx[i]'s connect, with the SRQ */
		if (kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN)) {
			ASSERT_OK(kt_conn_pair_cm_srq(self->fd, &self->dev,
						      variant->transport, 0,
						      self->srq.handle, NULL,
						      t, r));
			continue;
		}
		test_cmd_conn_create(&self->dev, variant->transport, 0, NULL,
				     t);
		ASSERT_OK(srq_conn_create(self->fd, &self->dev,
					  variant->transport,
					  self->srq.handle, r));
		test_cmd_conn_connect(t, r);
		test_cmd_conn_connect(r, t);
		if (variant->transport == KRDMA_TRANSPORT_UD)
			test_cmd_ah_create(t->handle, r->gid, &self->ah[i]);
	}
	test_cmd_buf_alloc(self->dev.dev_index, 0, NCONN * MSG, &self->src);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			   SRQ_DEPTH * (KT_GRH_LEN + MSG), &self->dst);
}

FIXTURE_TEARDOWN(srq)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* RECVs of slots first ... first + n - 1 of dst, on the SRQ. */
static void post_srq_recvs(struct __test_metadata *_metadata,
			   FIXTURE_DATA(srq) *self, uint32_t first,
			   uint32_t n)
{
	struct krdma_wr wrs[SRQ_DEPTH];
	uint32_t i, accepted = 0;

	for (i = 0; i < n; i++) {
		kt_wr_init(&wrs[i], 100 + first + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], self->dst.handle,
			  (uint64_t)(first + i) * (KT_GRH_LEN + MSG),
			  KT_GRH_LEN + MSG);
	}
	test_cmd_post(self->srq.handle, wrs, n, &accepted);
	EXPECT_EQ(n, accepted);
}

/*
 * Whether a message carries its seed as immediate data too; iWARP has
 * none, and the pattern alone names the message.
 */
static bool srq_imm(const struct kt_dev *d)
{
	return !kt_dev_lacks(d, KT_CAP_IMM);
}

/* tx[i] sends MSG pattern bytes of seed @seed. */
static void send_msg(struct __test_metadata *_metadata,
		     FIXTURE_DATA(srq) *self, int i, uint32_t seed)
{
	uint8_t data[MSG];
	struct krdma_wr wr;

	kt_fill(data, MSG, seed);
	test_cmd_buf_write(self->src.handle, (uint64_t)i * MSG, data, MSG);
	kt_wr_init(&wr, 200 + seed, srq_imm(&self->dev) ?
		   KRDMA_OP_SEND_WITH_IMM : KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->src.handle, (uint64_t)i * MSG, MSG);
	if (srq_imm(&self->dev))
		wr.imm_data = seed;
	if (self->tx[i].transport == KRDMA_TRANSPORT_UD) {
		wr.ah_handle = self->ah[i];
		wr.remote_qpn = self->rx[i].qp_num;
	}
	test_cmd_post1(self->tx[i].handle, &wr);
}

/*
 * The receive that took the message of @seed completed on rx[i]'s CQ: its
 * slot holds the bytes.  The slot is marked in @slots_used.
 */
static void expect_srq_recv(struct __test_metadata *_metadata,
			    FIXTURE_DATA(srq) *self, int i, uint32_t seed,
			    bool *slots_used)
{
	bool ud = self->rx[i].transport == KRDMA_TRANSPORT_UD;
	uint32_t at = ud ? KT_GRH_LEN : 0, slot;
	uint8_t got[KT_GRH_LEN + MSG];
	struct krdma_wc wc;

	ASSERT_EQ(1, kt_poll_n(self->fd, self->rx[i].handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ((uint32_t)KRDMA_OP_RECV, wc.opcode);
	EXPECT_EQ(at + MSG, wc.byte_len);
	if (srq_imm(&self->dev))
		EXPECT_EQ(seed, wc.imm_data);
	ASSERT_LE(100u, wc.wr_id);
	slot = wc.wr_id - 100;
	ASSERT_GT((uint32_t)SRQ_DEPTH, slot);
	EXPECT_FALSE(slots_used[slot]);
	slots_used[slot] = true;
	if (ud)
		EXPECT_EQ(self->tx[i].qp_num, wc.src_qp);
	test_cmd_buf_read(self->dst.handle, (uint64_t)slot * (KT_GRH_LEN + MSG),
			  got, at + MSG);
	EXPECT_EQ(-1, kt_check(got + at, MSG, seed));
	/* the sender's own completion */
	ASSERT_EQ(1, kt_poll_n(self->fd, self->tx[i].handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(200 + seed, wc.wr_id);
}

/* Every connection's messages are received from the one SRQ, in rounds. */
KRDMA_TEST_F_TIMEOUT(srq, shared_by_connections, 120)
{
	bool used[SRQ_DEPTH] = {};
	int round, i;

	post_srq_recvs(_metadata, self, 0, 4 * NCONN);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < NCONN; i++)
			send_msg(_metadata, self, i, 1 + round * NCONN + i);
		/* UC/UD: one message each at a time keeps the order simple */
		for (i = 0; i < NCONN; i++)
			expect_srq_recv(_metadata, self, i,
					1 + round * NCONN + i, used);
	}
	for (i = 0; i < 4 * NCONN; i++)
		EXPECT_TRUE(used[i]);
}

/*
 * A receive keeps its place in the SRQ until its completion is polled, on
 * whichever connection took it: the CQs cannot overflow.
 */
KRDMA_TEST_F_TIMEOUT(srq, full_until_polled, 120)
{
	uint32_t depth = self->srq.max_wr, n0 = 0, i, acc;
	struct krdma_wc wcs[1024];
	struct krdma_wr wr;

	if (depth > 1024)
		SKIP(return, "an SRQ of %u receives", depth);
	/* the device may round the depth up: slots are reused, unchecked */
	for (i = 0; i < depth; i += SRQ_DEPTH)
		post_srq_recvs(_metadata, self, 0, depth - i < SRQ_DEPTH ?
						   depth - i : SRQ_DEPTH);
	for (i = 0; i < depth; i++) {
		send_msg(_metadata, self, i % NCONN, 1 + i);
		ASSERT_EQ(1, kt_poll_n(self->fd, self->tx[i % NCONN].handle,
				       wcs, 1, POLL_MS));
		n0 += i % NCONN == 0;
	}
	usleep(300 * 1000);	/* UC, UD: the receiver may still be at it */
	kt_wr_init(&wr, 999, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->dst.handle, 0, KT_GRH_LEN + MSG);
	test_err_post(ENOMEM, self->srq.handle, &wr, 1, &acc);
	EXPECT_EQ(0u, acc);
	/* what rx[0] took is free again once rx[0] polls it, and no more */
	ASSERT_EQ((int)n0, kt_poll_n(self->fd, self->rx[0].handle, wcs, n0,
				     POLL_MS));
	for (i = 0; i < n0; i++)
		test_cmd_post1(self->srq.handle, &wr);
	test_err_post(ENOMEM, self->srq.handle, &wr, 1, &acc);
	for (i = 1; i < NCONN; i++) {
		uint32_t n = (depth + NCONN - 1 - i) / NCONN;

		ASSERT_EQ((int)n, kt_poll_n(self->fd, self->rx[i].handle, wcs,
					    n, POLL_MS));
	}
	test_cmd_post1(self->srq.handle, &wr);
}

KRDMA_TEST_F(srq, create_outputs)
{
	struct krdma_srq_create c;

	EXPECT_NE(0u, self->srq.handle);
	EXPECT_LE((uint32_t)SRQ_DEPTH, self->srq.max_wr);
	EXPECT_GE(self->dev.info.max_srq_wr, self->srq.max_wr);
	EXPECT_LE(2u, self->srq.max_sge);
	ASSERT_OK(srq_create(self->fd, self->dev.dev_index, 0, 0, &c));
	EXPECT_LE(1u, c.max_wr);
	EXPECT_LE(1u, c.max_sge);
	EXPECT_NE(self->srq.handle, c.handle);
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	/* handle is out: what came in is overwritten */
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.dev_index = self->dev.dev_index;
	c.handle = 0xdeadbe;
	test_cmd_ioctl(KRDMA_SRQ_CREATE, &c);
	EXPECT_NE(0xdeadbeu, c.handle);
	EXPECT_OK(kt_destroy(self->fd, c.handle));
}

KRDMA_TEST_F(srq, create_bad_arguments)
{
	const struct krdma_device_info *info = &self->dev.info;
	struct krdma_srq_create c = {
		.size = sizeof(c),
		.dev_index = self->dev.dev_index,
	};

	c.flags = 1;
	test_err_ioctl(EOPNOTSUPP, KRDMA_SRQ_CREATE, &c);
	/* the struct's own checks come before the device's */
	c.dev_index = 0xfffff;
	test_err_ioctl(EOPNOTSUPP, KRDMA_SRQ_CREATE, &c);
	c.dev_index = self->dev.dev_index;
	c.flags = 0;
	c.max_wr = info->max_srq_wr + 1;
	test_err_ioctl(EINVAL, KRDMA_SRQ_CREATE, &c);
	c.max_wr = 0;
	c.max_sge = KRDMA_MAX_SGE + 1;
	test_err_ioctl(EINVAL, KRDMA_SRQ_CREATE, &c);
	c.max_sge = 0;
	c.dev_index = 0xfffff;
	test_err_ioctl(ENODEV, KRDMA_SRQ_CREATE, &c);
	c.dev_index = self->dev.dev_index;
	c.size = offsetof(struct krdma_srq_create, handle);
	test_err_ioctl(EINVAL, KRDMA_SRQ_CREATE, &c);
}

/* A QP with an SRQ has no receive queue; an SRQ takes no sends. */
KRDMA_TEST_F(srq, post_to_the_wrong_queue)
{
	struct krdma_wr wrs[SRQ_DEPTH + 1];
	uint32_t accepted = 99, i;

	kt_wr_init(&wrs[0], 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[0], self->dst.handle, 0, MSG);
	test_err_post1(EINVAL, self->rx[0].handle, &wrs[0]);
	kt_wr_init(&wrs[0], 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wrs[0], self->src.handle, 0, 8);
	test_err_post(EINVAL, self->srq.handle, wrs, 1, &accepted);
	EXPECT_EQ(0u, accepted);
	/* more RECVs than the SRQ holds, in one call */
	for (i = 0; i < self->srq.max_wr + 1 && i < SRQ_DEPTH + 1; i++) {
		kt_wr_init(&wrs[i], i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], self->dst.handle, 0, 8);
	}
	if (self->srq.max_wr == SRQ_DEPTH)
		test_err_post(EINVAL, self->srq.handle, wrs, SRQ_DEPTH + 1,
			      &accepted);
	/* more SGEs than the SRQ was made with */
	kt_wr_init(&wrs[0], 3, KRDMA_OP_RECV, 0);
	for (i = 0; i <= self->srq.max_sge && i < KRDMA_MAX_SGE; i++)
		kt_wr_sge(&wrs[0], self->dst.handle, i * 16, 16);
	if (self->srq.max_sge < KRDMA_MAX_SGE)
		test_err_post1(EINVAL, self->srq.handle, &wrs[0]);
}

/* A RECV for the SRQ reads its wr_id and SGEs: anything else set is EINVAL. */
KRDMA_TEST_F(srq, recv_unused_fields)
{
	struct krdma_wr wr;
	uint32_t accepted;
	unsigned int f;

	for (f = 0; f < 8; f++) {
		kt_wr_init(&wr, 40 + f, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, self->dst.handle, 0, MSG);
		switch (f) {
		case 0: wr.imm_data = 1; break;
		case 1: wr.remote_addr = 8; break;
		case 2: wr.rkey = 1; break;
		case 3: wr.compare_add = 1; break;
		case 4: wr.swap = 1; break;
		case 5: wr.ah_handle = 1; break;
		case 6: wr.remote_qpn = 1; break;
		default: wr.remote_qkey = 1; break;
		}
		accepted = 99;
		EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->srq.handle, &wr, 1,
					     &accepted), "field %u", f);
		EXPECT_EQ(0u, accepted);
	}
	/* and with all of them 0 it is taken */
	kt_wr_init(&wr, 48, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->dst.handle, 0, MSG);
	EXPECT_OK(kt_post1(self->fd, self->srq.handle, &wr));
}

/*
 * KRDMA_POST_POLL reaps a connection's CQ; an SRQ has none of its own:
 * EINVAL, before anything is looked at (the struct comes back unchanged).
 */
KRDMA_TEST_F(srq, post_poll_is_for_connections)
{
	struct krdma_wc wc;
	struct krdma_wr wr;
	struct krdma_post p = {
		.size = sizeof(p),
		.flags = KRDMA_POST_POLL,
		.handle = self->srq.handle,
		.num_wrs = 1,
		.wr_entry_size = sizeof(wr),
		.wrs_uptr = (uintptr_t)&wr,
		.num_wcs = 1,
		.wc_entry_size = sizeof(wc),
		.wcs_uptr = (uintptr_t)&wc,
	};

	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->dst.handle, 0, MSG);
	test_err_ioctl(EINVAL, KRDMA_POST, &p);
	EXPECT_EQ(0u, p.num_wrs);	/* refused as a whole: none went */
	EXPECT_EQ(1u, p.num_wcs);
}

/* An SRQ in use is EBUSY to DESTROY; once its users are gone it goes. */
KRDMA_TEST_F(srq, destroy_in_use_is_busy)
{
	bool used[SRQ_DEPTH] = {};
	int i;

	post_srq_recvs(_metadata, self, 0, 4);
	test_err_destroy(EBUSY, self->srq.handle);
	for (i = 0; i < NCONN - 1; i++)
		EXPECT_OK(kt_destroy(self->fd, self->rx[i].handle));
	test_err_destroy(EBUSY, self->srq.handle);
	/* the last user still receives from it */
	send_msg(_metadata, self, NCONN - 1, 77);
	expect_srq_recv(_metadata, self, NCONN - 1, 77, used);
	EXPECT_OK(kt_destroy(self->fd, self->rx[NCONN - 1].handle));
	EXPECT_OK(kt_destroy(self->fd, self->srq.handle));
	test_err_destroy(ENOENT, self->srq.handle);
}

/* KRDMA_CONN_SRQ needs an SRQ handle of this session and device. */
KRDMA_TEST_F(srq, bind_errors)
{
	struct krdma_srq_create c;
	struct kt_conn conn;
	int ofd;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	EXPECT_ERRNO(ENOENT, srq_conn_create(self->fd, &self->dev,
					     variant->transport,
					     self->src.handle, &conn));
	EXPECT_ERRNO(ENOENT, srq_conn_create(self->fd, &self->dev,
					     variant->transport, 0, &conn));
	EXPECT_ERRNO(ENOENT, srq_conn_create(self->fd, &self->dev,
					     variant->transport, 0x7fffffff,
					     &conn));
	/* an SRQ of another session is not a handle here */
	ofd = krdma_open();
	ASSERT_LE(0, ofd);
	ASSERT_OK(srq_create(ofd, self->dev.dev_index, 8, 1, &c));
	if (c.handle != self->srq.handle)
		EXPECT_ERRNO(ENOENT, srq_conn_create(self->fd, &self->dev,
						     variant->transport,
						     c.handle, &conn));
	EXPECT_ERRNO(ENOENT, srq_conn_create(ofd, &self->dev,
					     variant->transport,
					     c.handle + 1, &conn));
	ASSERT_OK(srq_conn_create(ofd, &self->dev, variant->transport,
				  c.handle, &conn));
	EXPECT_ERRNO(EBUSY, kt_destroy(ofd, c.handle));
	close(ofd);	/* connection before SRQ: no EBUSY, nothing leaks */
}

/* An SRQ on one device cannot serve a connection on another. */
KRDMA_TEST_F(srq, bind_other_device)
{
	const char *other = kt_test_dev2();
	struct kt_dev rxe1;
	struct kt_conn conn;

	if (!other)
		SKIP(return, "%s", kt_no_dev2(false));
	if (kt_dev_pick(self->fd, other, &rxe1))
		SKIP(return, "%s: no %s", self->dev.info.name, other);
	EXPECT_ERRNO(EINVAL, srq_conn_create(self->fd, &rxe1,
					     variant->transport,
					     self->srq.handle, &conn));
}

/*
 * A SEND of MSG bytes of @seed from (cfd, conn), on device @dev; with
 * @seed as immediate data where @dev has it (srq_imm()).
 */
static void cm_send(struct __test_metadata *_metadata, int cfd, uint32_t conn,
		    const struct kt_dev *dev, uint32_t seed)
{
	uint8_t data[MSG];
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct kt_buf b;

	kt_fill(data, MSG, seed);
	ASSERT_OK(kt_buf_alloc(cfd, dev->dev_index, 0, MSG, &b));
	ASSERT_OK(kt_buf_write(cfd, b.handle, 0, data, MSG));
	kt_wr_init(&wr, 9, srq_imm(dev) ? KRDMA_OP_SEND_WITH_IMM :
		   KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, b.handle, 0, MSG);
	if (srq_imm(dev))
		wr.imm_data = seed;
	ASSERT_OK(kt_post1(cfd, conn, &wr));
	ASSERT_EQ(1, kt_poll_n(cfd, conn, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
}

/* rdma_cm: a connection accepted with KRDMA_CONN_SRQ receives from it. */
KRDMA_TEST_F_TIMEOUT(srq, cm_accept_with_srq, 90)
{
	const char *addr = kt_test_addr(false);
	struct krdma_cm_listen l;
	struct krdma_cm_accept a;
	struct krdma_event ev;
	struct krdma_wc wc;
	struct kc_connect c;
	uint8_t got[MSG];
	int cfd;

	if (variant->transport == KRDMA_TRANSPORT_UD)
		SKIP(return, "UD accept: covered by krdma_cm");
	cfd = krdma_open();
	ASSERT_LE(0, cfd);
	kc_listen_init(&l, addr, 0);
	l.transport = variant->transport;
	test_cmd_ioctl(KRDMA_CM_LISTEN, &l);
	kc_connect_init(&c, cfd, addr, l.port, NULL, 0);
	c.cmd.transport = variant->transport;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->fd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	kc_accept_init(&a, ev.handle, NULL, 0);
	a.flags = KRDMA_CONN_SRQ;
	a.srq_handle = self->srq.handle;
	test_cmd_ioctl(KRDMA_CM_ACCEPT, &a);
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret);

	post_srq_recvs(_metadata, self, 0, 1);
	cm_send(_metadata, cfd, c.cmd.handle, &self->dev, 5);
	ASSERT_EQ(1, kt_poll_n(self->fd, ev.handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(100u, wc.wr_id);
	if (srq_imm(&self->dev))
		EXPECT_EQ(5u, wc.imm_data);
	test_cmd_buf_read(self->dst.handle, 0, got, MSG);
	EXPECT_EQ(-1, kt_check(got, MSG, 5));
	test_err_destroy(EBUSY, self->srq.handle);
	close(cfd);
}

TEST_HARNESS_MAIN
