// SPDX-License-Identifier: GPL-2.0
/*
 * krdma work requests: every validation failure of POST and POLL (one
 * test each, the iommufd way) on RC, UC and UD, and flow control: a WR
 * keeps its place in the queue until its completion is polled.
 */
#include "krdma_test.h"

#define POLL_MS 20000

/* ------------------------------------------------------------------------
 * KRDMA_POST
 */

FIXTURE(post)
{
	int fd;
	struct kt_dev dev;
	struct kt_conn a, b;	/* connected to each other */
	struct kt_buf buf;	/* 64 KiB, all access */
	uint32_t ah;
};

FIXTURE_VARIANT(post)
{
	uint32_t transport;
};

FIXTURE_VARIANT_ADD(post, rc) { .transport = KRDMA_TRANSPORT_RC };
FIXTURE_VARIANT_ADD(post, uc) { .transport = KRDMA_TRANSPORT_UC };
FIXTURE_VARIANT_ADD(post, ud) { .transport = KRDMA_TRANSPORT_UD };

static const struct krdma_qp_caps post_caps = {
	.max_send_wr = 16,
	.max_recv_wr = 8,
	.max_send_sge = 2,
	.max_recv_sge = 3,
	.max_inline_data = 64,
};

FIXTURE_SETUP(post)
{
	self->fd = kt_session_open_dev(_metadata, &self->dev);
	if (self->fd < 0)
		return;
	test_cmd_conn_pair(&self->dev, variant->transport, 0, &post_caps,
			   &self->a, &self->b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 65536,
			   &self->buf);
	if (variant->transport == KRDMA_TRANSPORT_UD)
		test_cmd_ah_create(self->a.handle, self->b.gid, &self->ah);
}

FIXTURE_TEARDOWN(post)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* A valid signaled send of @len bytes of the buffer for this transport. */
static void good_send(FIXTURE_DATA(post) *self, struct krdma_wr *wr,
		      uint64_t id, uint32_t len)
{
	kt_wr_init(wr, id, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(wr, self->buf.handle, 0, len);
	if (self->a.transport == KRDMA_TRANSPORT_UD) {
		wr->ah_handle = self->ah;
		wr->remote_qpn = self->b.qp_num;
	}
}

/* Nothing was posted: no completion on either side. */
static void nothing_posted(struct __test_metadata *_metadata,
			   FIXTURE_DATA(post) *self)
{
	struct krdma_wc wc;

	EXPECT_EQ(0, kt_poll_n(self->fd, self->a.handle, &wc, 1, 300)) {
		TH_LOG("a WR of a refused POST completed: wr_id %llu status %u",
		       (unsigned long long)wc.wr_id, wc.status);
	}
	EXPECT_EQ(0, kt_poll_n(self->fd, self->b.handle, &wc, 1, 10));
}

/* POST @wr alone: @err, num_wrs written back as 0, nothing posted. */
#define EXPECT_POST1_ERRNO(err, wr, ...)				\
	do {								\
		uint32_t __acc = 99;					\
		EXPECT_ERRNO(err, kt_post(self->fd, self->a.handle, wr, 1, &__acc), \
			     __VA_ARGS__);				\
		EXPECT_EQ(0u, __acc);					\
	} while (0)

KRDMA_TEST_F(post, num_wrs_zero)
{
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	test_err_post(EINVAL, self->a.handle, &wr, 0, NULL);
}

KRDMA_TEST_F(post, num_wrs_too_many)
{
	uint32_t max = self->a.caps.max_send_wr > self->a.caps.max_recv_wr ?
		       self->a.caps.max_send_wr : self->a.caps.max_recv_wr;
	struct krdma_wr *wrs = calloc(max + 1, sizeof(*wrs));
	uint32_t i;

	ASSERT_NE(NULL, wrs);
	for (i = 0; i <= max; i++)
		good_send(self, &wrs[i], i, 8);
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, max + 1, NULL),
		     "%u WRs, queues of %u/%u", max + 1, self->a.caps.max_send_wr,
		     self->a.caps.max_recv_wr);
	test_err_post(EINVAL, self->a.handle, wrs, UINT32_MAX, NULL);
	nothing_posted(_metadata, self);
	free(wrs);
}

/* Below the first krdma_wr, or above KRDMA_MAX_ENTRY_SIZE: EINVAL. */
KRDMA_TEST_F(post, entry_size_bad)
{
	struct krdma_post p;
	struct krdma_wr wr;
	uint32_t sizes[] = { 0, 1, offsetof(struct krdma_wr, sge),
			     sizeof(struct krdma_wr) - 1,
			     KRDMA_MAX_ENTRY_SIZE + 1, 1u << 20, UINT32_MAX };
	unsigned int i;

	good_send(self, &wr, 1, 8);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		memset(&p, 0, sizeof(p));
		p.size = sizeof(p);
		p.handle = self->a.handle;
		p.num_wrs = 1;
		p.wr_entry_size = sizes[i];
		p.wrs_uptr = (uintptr_t)&wr;
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p),
			     "entry size %u", sizes[i]);
	}
}

/*
 * Two RECVs on b, then two SENDs from a, each a 2-WR POST of entries
 * @stride bytes apart in @e (zeroed here, room for two), all completing.
 */
static void post_strided_pair(struct __test_metadata *_metadata,
			      FIXTURE_DATA(post) *self, void *e, size_t stride)
{
	struct krdma_wr *w0 = e, *w1 = (void *)((char *)e + stride);
	struct krdma_post p;
	struct krdma_wc wc;

	memset(e, 0, 2 * stride);
	kt_wr_init(w0, 3, KRDMA_OP_RECV, 0);
	kt_wr_init(w1, 4, KRDMA_OP_RECV, 0);
	kt_wr_sge(w0, self->buf.handle, 0, 100);
	kt_wr_sge(w1, self->buf.handle, 100, 100);
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = self->b.handle;
	p.num_wrs = 2;
	p.wr_entry_size = stride;
	p.wrs_uptr = (uintptr_t)e;
	test_cmd_ioctl(KRDMA_POST, &p);
	EXPECT_EQ(2u, p.num_wrs);
	memset(e, 0, 2 * stride);
	good_send(self, w0, 5, 0);
	good_send(self, w1, 6, 0);
	p.handle = self->a.handle;
	p.num_wrs = 2;
	test_cmd_ioctl(KRDMA_POST, &p);
	EXPECT_EQ(2u, p.num_wrs);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(5u, wc.wr_id);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(6u, wc.wr_id);
}

/* A longer entry: zero tail is fine, a non-zero tail is E2BIG. */
KRDMA_TEST_F(post, entry_size_large)
{
	struct big {
		struct krdma_wr wr;
		uint8_t tail[40];
	} e[2];
	struct krdma_post p;
	unsigned int at;

	for (at = 0; at < sizeof(e[0].tail); at += 13) {
		memset(e, 0, sizeof(e));
		good_send(self, &e[0].wr, 1, 8);
		good_send(self, &e[1].wr, 2, 8);
		e[1].tail[at] = 1;
		memset(&p, 0, sizeof(p));
		p.size = sizeof(p);
		p.handle = self->a.handle;
		p.num_wrs = 2;
		p.wr_entry_size = sizeof(e[0]);
		p.wrs_uptr = (uintptr_t)e;
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, KRDMA_POST, &p), "tail byte %u", at);
		EXPECT_EQ(1u, p.num_wrs);
	}
	nothing_posted(_metadata, self);
	/* zero tails: accepted */
	post_strided_pair(_metadata, self, e, sizeof(e[0]));
}

/* KRDMA_MAX_ENTRY_SIZE itself, with zero tails, works. */
KRDMA_TEST_F(post, entry_size_max)
{
	char *e = calloc(2, KRDMA_MAX_ENTRY_SIZE);

	ASSERT_NE(NULL, e);
	post_strided_pair(_metadata, self, e, KRDMA_MAX_ENTRY_SIZE);
	free(e);
}

KRDMA_TEST_F(post, flags_reserved)
{
	struct krdma_post p;
	struct krdma_wr wr;
	unsigned int bit;

	good_send(self, &wr, 1, 8);
	for (bit = 0; bit < 32; bit++) {
		if (KRDMA_POST_POLL & (1u << bit))
			continue;
		memset(&p, 0, sizeof(p));
		p.size = sizeof(p);
		p.flags = 1u << bit;
		p.handle = self->a.handle;
		p.num_wrs = 1;
		p.wr_entry_size = sizeof(wr);
		p.wrs_uptr = (uintptr_t)&wr;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_POST, &p), "bit %u", bit);
	}
	p.flags = 0;
	p.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_POST, &p);
	nothing_posted(_metadata, self);
}

/* A POST of @wr with KRDMA_POST_POLL, reaping into @wcs. */
static void post_poll_init(FIXTURE_DATA(post) *self, struct krdma_post *p,
			   struct krdma_wr *wr, struct krdma_wc *wcs,
			   uint32_t num_wcs, uint32_t timeout_ms)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->flags = KRDMA_POST_POLL;
	p->handle = self->a.handle;
	p->num_wrs = 1;
	p->wr_entry_size = sizeof(*wr);
	p->wrs_uptr = (uintptr_t)wr;
	p->num_wcs = num_wcs;
	p->wc_entry_size = sizeof(*wcs);
	p->timeout_ms = timeout_ms;
	p->wcs_uptr = (uintptr_t)wcs;
}

/* The receive @good_send's message needs at b (UD: room for the GRH). */
static void post_peer_recv(struct __test_metadata *_metadata,
			   FIXTURE_DATA(post) *self, uint64_t id)
{
	struct krdma_wr rwr;

	kt_wr_init(&rwr, id, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, self->buf.handle, 32768, 4096);
	test_cmd_post1(self->b.handle, &rwr);
}

/* Without KRDMA_POST_POLL its fields must be zero: EINVAL, nothing posted. */
KRDMA_TEST_F(post, with_poll_fields_need_flag)
{
	struct krdma_wc wc;
	struct krdma_post p;
	struct krdma_wr wr;
	unsigned int field;

	good_send(self, &wr, 1, 8);
	for (field = 0; field < 5; field++) {
		post_poll_init(self, &p, &wr, &wc, 0, 0);
		p.flags = 0;
		p.wcs_uptr = 0;
		switch (field) {
		case 0: p.num_wcs = 1; break;
		case 1: p.wc_entry_size = sizeof(wc); break;
		case 2: p.timeout_ms = 10; break;
		case 3: p.__reserved2 = 1; break;
		case 4: p.wcs_uptr = (uintptr_t)&wc; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p), "field %u", field);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, with_poll_num_wcs_zero)
{
	struct krdma_wc wc;
	struct krdma_post p;
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	post_poll_init(self, &p, &wr, &wc, 0, 10);
	test_err_ioctl(EINVAL, KRDMA_POST, &p);
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, with_poll_entry_size_bad)
{
	uint32_t sizes[] = { 0, 1, sizeof(struct krdma_wc) - 1,
			     KRDMA_MAX_ENTRY_SIZE + 1, UINT32_MAX };
	struct krdma_wc wc;
	struct krdma_post p;
	struct krdma_wr wr;
	unsigned int i;

	good_send(self, &wr, 1, 8);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		post_poll_init(self, &p, &wr, &wc, 1, 10);
		p.wc_entry_size = sizes[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p),
			     "entry size %u", sizes[i]);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, with_poll_reserved)
{
	struct krdma_wc wc;
	struct krdma_post p;
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	post_poll_init(self, &p, &wr, &wc, 1, 10);
	p.__reserved2 = 1;
	test_err_ioctl(EINVAL, KRDMA_POST, &p);
	nothing_posted(_metadata, self);
}

/* A caller built before the poll fields cannot ask for the poll. */
KRDMA_TEST_F(post, with_poll_old_size)
{
	struct krdma_wc wc;
	struct krdma_post p;
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	post_poll_init(self, &p, &wr, &wc, 1, 10);
	p.size = offsetof(struct krdma_post, num_wcs);
	test_err_ioctl(EINVAL, KRDMA_POST, &p);
	nothing_posted(_metadata, self);
}

/* One call posts the send and returns its completion. */
KRDMA_TEST_F(post, with_poll_reaps)
{
	struct krdma_wc wcs[4], rwc;
	struct krdma_post p;
	struct krdma_wr wr;

	post_peer_recv(_metadata, self, 7);
	good_send(self, &wr, 8, 8);
	post_poll_init(self, &p, &wr, wcs, ARRAY_SIZE(wcs), POLL_MS);
	memset(wcs, 0xa5, sizeof(wcs));
	test_cmd_ioctl(KRDMA_POST, &p);
	EXPECT_EQ(1u, p.num_wrs);
	ASSERT_EQ(1u, p.num_wcs);
	EXPECT_EQ(8u, wcs[0].wr_id);
	EXPECT_EQ(0u, wcs[0].status);
	EXPECT_EQ((uint32_t)KRDMA_OP_SEND, wcs[0].opcode);
	/* the entries past num_wcs are the caller's still */
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ull, wcs[1].wr_id);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &rwc, 1, POLL_MS));
	EXPECT_EQ(7u, rwc.wr_id);
	EXPECT_EQ(0u, rwc.status);
	EXPECT_EQ(0, kt_poll(self->fd, self->a.handle, wcs, 1, 0));
}

/* Nothing completed (an unsignaled send) and no wait: success, no WCs. */
KRDMA_TEST_F(post, with_poll_nothing_yet)
{
	struct krdma_wc wc, rwc;
	struct krdma_post p;
	struct krdma_wr wr;

	post_peer_recv(_metadata, self, 9);
	good_send(self, &wr, 10, 8);
	wr.flags &= ~KRDMA_WR_SIGNALED;
	post_poll_init(self, &p, &wr, &wc, 1, 0);
	test_cmd_ioctl(KRDMA_POST, &p);
	EXPECT_EQ(1u, p.num_wrs);
	EXPECT_EQ(0u, p.num_wcs);
	/* it went all the same */
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &rwc, 1, POLL_MS));
	EXPECT_EQ(9u, rwc.wr_id);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * A signal ends the wait as the timeout does: success, no completion (the
 * send went; EINTR would have the caller post it again).
 */
KRDMA_TEST_F(post, with_poll_signal_ends_wait)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct krdma_wc wc, rwc;
	struct timespec t0, t1;
	struct krdma_post p;
	struct krdma_wr wr;
	int ret;

	sigemptyset(&sa.sa_mask);	/* no SA_RESTART */
	ASSERT_OK(sigaction(SIGALRM, &sa, &old));
	post_peer_recv(_metadata, self, 13);
	good_send(self, &wr, 14, 8);
	wr.flags &= ~KRDMA_WR_SIGNALED;	/* nothing will complete */
	post_poll_init(self, &p, &wr, &wc, 1, 60000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_OK(kt_alarm_repeat(1000));
	ret = ioctl(self->fd, KRDMA_POST, &p);
	kt_alarm_stop();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sigaction(SIGALRM, &old, NULL);
	EXPECT_OK(ret);
	EXPECT_EQ(1u, p.num_wrs);
	EXPECT_EQ(0u, p.num_wcs);
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 30);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &rwc, 1, POLL_MS));
	EXPECT_EQ(13u, rwc.wr_id);
}

/*
 * The completions' array faults: EFAULT, after the post, which num_wrs
 * (unchanged) reports and the peer's receive proves.
 */
KRDMA_TEST_F(post, with_poll_efault)
{
	struct krdma_wc rwc;
	struct krdma_post p;
	struct krdma_wr wr;

	post_peer_recv(_metadata, self, 11);
	good_send(self, &wr, 12, 8);
	post_poll_init(self, &p, &wr, NULL, 1, POLL_MS);
	p.wcs_uptr = 1;
	test_err_ioctl(EFAULT, KRDMA_POST, &p);
	EXPECT_EQ(1u, p.num_wrs);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &rwc, 1, POLL_MS));
	EXPECT_EQ(11u, rwc.wr_id);
}

KRDMA_TEST_F(post, unknown_conn)
{
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	test_err_post(ENOENT, 999999, &wr, 1, NULL);
	test_err_post(ENOENT, self->buf.handle, &wr, 1, NULL);
	test_err_post(ENOENT, 0, &wr, 1, NULL);
}

KRDMA_TEST_F(post, efault)
{
	struct krdma_post p = {
		.size = sizeof(p),
		.handle = self->a.handle,
		.num_wrs = 1,
		.wr_entry_size = sizeof(struct krdma_wr),
	};

	test_err_ioctl(EFAULT, KRDMA_POST, &p);
	EXPECT_EQ(0u, p.num_wrs);	/* WR 0 was the one refused */
	p.num_wrs = 1;
	p.wrs_uptr = (uintptr_t)1;
	test_err_ioctl(EFAULT, KRDMA_POST, &p);
}

KRDMA_TEST_F(post, mixed_chain)
{
	struct krdma_wr wrs[2];
	uint32_t acc = 99;

	good_send(self, &wrs[0], 1, 8);
	kt_wr_init(&wrs[1], 2, KRDMA_OP_RECV, 0);
	test_err_post(EINVAL, self->a.handle, wrs, 2, &acc);
	EXPECT_EQ(1u, acc);
	kt_wr_init(&wrs[0], 3, KRDMA_OP_RECV, 0);
	good_send(self, &wrs[1], 4, 8);
	acc = 99;
	test_err_post(EINVAL, self->a.handle, wrs, 2, &acc);
	EXPECT_EQ(1u, acc);
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, opcode_invalid)
{
	uint32_t ops[] = { KRDMA_OP_MAX, KRDMA_OP_MAX + 1, 0x100, UINT32_MAX };
	struct krdma_wr wr;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		good_send(self, &wr, 1, 8);
		wr.opcode = ops[i];
		EXPECT_POST1_ERRNO(EINVAL, &wr, "opcode %u", ops[i]);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, opcode_not_in_transport)
{
	static const uint32_t uc_lacks[] = {
		KRDMA_OP_RDMA_READ, KRDMA_OP_ATOMIC_FETCH_ADD, KRDMA_OP_ATOMIC_CMP_SWP,
	};
	static const uint32_t ud_lacks[] = {
		KRDMA_OP_RDMA_WRITE, KRDMA_OP_RDMA_WRITE_WITH_IMM, KRDMA_OP_RDMA_READ,
		KRDMA_OP_ATOMIC_FETCH_ADD, KRDMA_OP_ATOMIC_CMP_SWP,
	};
	const uint32_t *ops = NULL;
	struct krdma_wr wr;
	unsigned int i, n = 0;

	if (variant->transport == KRDMA_TRANSPORT_UC) {
		ops = uc_lacks;
		n = ARRAY_SIZE(uc_lacks);
	} else if (variant->transport == KRDMA_TRANSPORT_UD) {
		ops = ud_lacks;
		n = ARRAY_SIZE(ud_lacks);
	}
	if (!n)
		SKIP(return, "RC has every opcode");
	for (i = 0; i < n; i++) {
		kt_wr_init(&wr, 1, ops[i], KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, self->buf.handle, 0, 8);
		wr.remote_addr = self->buf.addr;
		wr.rkey = self->buf.rkey;
		EXPECT_POST1_ERRNO(EOPNOTSUPP, &wr, "opcode %u", ops[i]);
	}
	nothing_posted(_metadata, self);
}

/*
 * SEND_WITH_INV is RC only, LOCAL_INV RC and UC; LOCAL_INV names a key of
 * the session's own buffers and carries no SGE.
 */
KRDMA_TEST_F(post, opcode_invalidate)
{
	struct krdma_wr wr;
	struct kt_buf other;
	int ofd;

	good_send(self, &wr, 1, 8);
	wr.opcode = KRDMA_OP_SEND_WITH_INV;
	wr.imm_data = self->buf.rkey;
	if (variant->transport != KRDMA_TRANSPORT_RC)
		EXPECT_POST1_ERRNO(EOPNOTSUPP, &wr, "SEND_WITH_INV");
	kt_wr_init(&wr, 2, KRDMA_OP_LOCAL_INV, KRDMA_WR_SIGNALED);
	wr.imm_data = self->buf.lkey;
	if (variant->transport == KRDMA_TRANSPORT_UD) {
		EXPECT_POST1_ERRNO(EOPNOTSUPP, &wr, "LOCAL_INV on UD");
		nothing_posted(_metadata, self);
		return;
	}
	kt_wr_sge(&wr, self->buf.handle, 0, 8);
	EXPECT_POST1_ERRNO(EINVAL, &wr, "LOCAL_INV with an SGE");
	kt_wr_init(&wr, 2, KRDMA_OP_LOCAL_INV, KRDMA_WR_SIGNALED);
	wr.imm_data = self->buf.lkey ^ 0xff;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "LOCAL_INV of an unknown key");
	/* another session's buffer on the same device and PD */
	ofd = krdma_open();
	ASSERT_LE(0, ofd);
	ASSERT_OK(kt_buf_alloc(ofd, self->dev.dev_index, KT_ACCESS_ALL, 4096,
			       &other));
	wr.imm_data = other.lkey;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "LOCAL_INV of another session's key");
	close(ofd);
	/* a key of the session's that went with its buffer */
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &other);
	test_cmd_destroy(other.handle);
	wr.imm_data = other.lkey;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "LOCAL_INV of a destroyed buffer's key");
	nothing_posted(_metadata, self);
}

/* The fields of struct krdma_wr past its header, for unused_fields_nonzero. */
enum wr_field { WRF_IMM, WRF_RADDR, WRF_RKEY, WRF_ADD, WRF_SWAP, WRF_AH,
		WRF_QPN, WRF_QKEY, WRF_COUNT };

static const char *const wr_field_names[WRF_COUNT] = {
	"imm_data", "remote_addr", "rkey", "compare_add", "swap", "ah_handle",
	"remote_qpn", "remote_qkey",
};

/* Whether @op reads @f on @transport, as uapi/krdma.h lists them. */
static bool wr_field_used(uint32_t op, uint32_t transport, enum wr_field f)
{
	bool rdma = op == KRDMA_OP_RDMA_WRITE ||
		    op == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
		    op == KRDMA_OP_RDMA_READ;
	bool atomic = op == KRDMA_OP_ATOMIC_FETCH_ADD ||
		      op == KRDMA_OP_ATOMIC_CMP_SWP;
	bool send = op == KRDMA_OP_SEND || op == KRDMA_OP_SEND_WITH_IMM;

	switch (f) {
	case WRF_IMM:
		return op == KRDMA_OP_SEND_WITH_IMM ||
		       op == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
		       op == KRDMA_OP_SEND_WITH_INV || op == KRDMA_OP_LOCAL_INV;
	case WRF_RADDR:
	case WRF_RKEY:
		return rdma || atomic;
	case WRF_ADD:
		return atomic;
	case WRF_SWAP:
		return op == KRDMA_OP_ATOMIC_CMP_SWP;
	default:
		return send && transport == KRDMA_TRANSPORT_UD;
	}
}

static void wr_field_set(struct krdma_wr *wr, enum wr_field f)
{
	switch (f) {
	case WRF_IMM: wr->imm_data = 1; break;
	case WRF_RADDR: wr->remote_addr = 8; break;
	case WRF_RKEY: wr->rkey = 1; break;
	case WRF_ADD: wr->compare_add = 1; break;
	case WRF_SWAP: wr->swap = 1; break;
	case WRF_AH: wr->ah_handle = 1; break;
	case WRF_QPN: wr->remote_qpn = 1; break;
	default: wr->remote_qkey = 1; break;
	}
}

/*
 * A field the opcode does not read must be 0: each one set alone on a WR
 * that is otherwise good is EINVAL, and nothing is posted.
 */
KRDMA_TEST_F(post, unused_fields_nonzero)
{
	static const uint32_t ops[] = {
		KRDMA_OP_SEND, KRDMA_OP_SEND_WITH_IMM, KRDMA_OP_RECV,
		KRDMA_OP_RDMA_WRITE, KRDMA_OP_RDMA_WRITE_WITH_IMM,
		KRDMA_OP_RDMA_READ, KRDMA_OP_ATOMIC_FETCH_ADD,
		KRDMA_OP_ATOMIC_CMP_SWP, KRDMA_OP_SEND_WITH_INV,
		KRDMA_OP_LOCAL_INV,
	};
	uint32_t t = variant->transport;
	unsigned int i, checked = 0;
	enum wr_field f, g;
	struct krdma_wr wr;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		bool rdma_or_atomic = wr_field_used(ops[i], t, WRF_RKEY);
		bool atomic = wr_field_used(ops[i], t, WRF_ADD);

		/* what the transport or device lacks is EOPNOTSUPP first */
		if ((t == KRDMA_TRANSPORT_UD &&
		     (rdma_or_atomic || ops[i] == KRDMA_OP_LOCAL_INV)) ||
		    (t != KRDMA_TRANSPORT_RC &&
		     ops[i] == KRDMA_OP_SEND_WITH_INV) ||
		    (t == KRDMA_TRANSPORT_UC &&
		     (atomic || ops[i] == KRDMA_OP_RDMA_READ)) ||
		    kt_dev_lacks_op(&self->dev, ops[i]))
			continue;
		for (f = 0; f < WRF_COUNT; f++) {
			if (wr_field_used(ops[i], t, f))
				continue;
			kt_wr_init(&wr, 1, ops[i], ops[i] == KRDMA_OP_RECV ?
				   0 : KRDMA_WR_SIGNALED);
			if (ops[i] != KRDMA_OP_LOCAL_INV)
				kt_wr_sge(&wr, self->buf.handle, 0, 8);
			/* the fields it does read, good */
			for (g = WRF_IMM; g <= WRF_SWAP; g++)
				if (g != WRF_RADDR && g != WRF_RKEY &&
				    wr_field_used(ops[i], t, g))
					wr_field_set(&wr, g);
			if (rdma_or_atomic) {
				wr.remote_addr = self->buf.addr;
				wr.rkey = self->buf.rkey;
			}
			if (wr_field_used(ops[i], t, WRF_AH)) {
				wr.ah_handle = self->ah;
				wr.remote_qpn = self->b.qp_num;
			}
			/* keys that exist: an unknown one is EINVAL too */
			if (ops[i] == KRDMA_OP_SEND_WITH_INV)
				wr.imm_data = self->buf.rkey;
			if (ops[i] == KRDMA_OP_LOCAL_INV)
				wr.imm_data = self->buf.lkey;
			wr_field_set(&wr, f);
			EXPECT_POST1_ERRNO(EINVAL, &wr, "op %u with %s", ops[i],
					   wr_field_names[f]);
			checked++;
		}
	}
	EXPECT_LT(0u, checked);
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, unknown_wr_flags)
{
	struct krdma_wr wr;
	unsigned int bit;

	for (bit = 4; bit < 32; bit++) {
		good_send(self, &wr, 1, 8);
		wr.flags |= 1u << bit;
		EXPECT_POST1_ERRNO(EOPNOTSUPP, &wr, "flag bit %u", bit);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, recv_flags)
{
	uint32_t flags[] = { KRDMA_WR_SIGNALED, KRDMA_WR_INLINE, KRDMA_WR_FENCE,
			     KRDMA_WR_SOLICITED };
	struct krdma_wr wr;
	unsigned int i;
	uint32_t acc;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		kt_wr_init(&wr, 1, KRDMA_OP_RECV, flags[i]);
		kt_wr_sge(&wr, self->buf.handle, 0, 64);
		acc = 99;
		EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->b.handle, &wr, 1, &acc),
			     "flags 0x%x", flags[i]);
		EXPECT_EQ(0u, acc);
	}
}

KRDMA_TEST_F(post, num_sge_too_many)
{
	struct krdma_wr wr;
	uint32_t nums[] = { self->a.caps.max_send_sge + 1, KRDMA_MAX_SGE + 1,
			    UINT32_MAX };
	unsigned int i;
	uint32_t acc;

	for (i = 0; i < ARRAY_SIZE(nums); i++) {
		good_send(self, &wr, 1, 8);
		wr.num_sge = nums[i];
		EXPECT_POST1_ERRNO(EINVAL, &wr, "num_sge %u (max %u)", nums[i],
				   self->a.caps.max_send_sge);
	}
	/* and for receives, against max_recv_sge */
	kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
	for (i = 0; i <= self->b.caps.max_recv_sge && i < KRDMA_MAX_SGE; i++)
		kt_wr_sge(&wr, self->buf.handle, 64 * i, 64);
	acc = 99;
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->b.handle, &wr, 1, &acc),
		     "recv num_sge %u (max %u)", wr.num_sge,
		     self->b.caps.max_recv_sge);
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, atomic_sge)
{
	struct {
		uint32_t num_sge, len;
	} bad[] = { { 0, 0 }, { 1, 4 }, { 1, 16 }, { 1, 0 }, { 2, 8 } };
	uint32_t op;
	unsigned int i;

	if (variant->transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "atomics are RC");
	for (op = KRDMA_OP_ATOMIC_FETCH_ADD; op <= KRDMA_OP_ATOMIC_CMP_SWP; op++)
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			struct krdma_wr wr;
			uint32_t k;

			kt_wr_init(&wr, 1, op, KRDMA_WR_SIGNALED);
			for (k = 0; k < bad[i].num_sge; k++)
				kt_wr_sge(&wr, self->buf.handle, 8 * k, bad[i].len);
			wr.remote_addr = self->buf.addr;
			wr.rkey = self->buf.rkey;
			EXPECT_POST1_ERRNO(EINVAL, &wr, "op %u num_sge %u length %u",
					   op, bad[i].num_sge, bad[i].len);
		}
	nothing_posted(_metadata, self);
}

/*
 * A failed completion moves the QP to the error state: the session hears of
 * it once, as a CONN_ERROR event naming the connection, with the status;
 * the kernel log says it once too, naming the process.  (The log is rate
 * limited, 10 messages in 5 s: the test starts past any earlier burst.)
 */
KRDMA_TEST_F_TIMEOUT(post, conn_error_event, 60)
{
	struct krdma_event ev[8];
	struct krdma_wr wr;
	struct krdma_wc wc;
	int n, i, for_a = 0;
	int kmsg;

	if (variant->transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "UC drops a write to a bad rkey, UD has no RDMA");
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ASSERT_EQ(0, kc_events(self->fd, ev, ARRAY_SIZE(ev), 0));
	usleep(5200 * 1000);
	kmsg = kt_kmsg_open();
	ASSERT_LE(0, kmsg);
	kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->buf.handle, 0, 8);
	wr.remote_addr = self->buf.addr;
	wr.rkey = self->buf.rkey ^ 0xff;
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, wc.status);
	/* later failures (a flushed WR) tell nothing new */
	wr.wr_id = 2;
	wr.rkey = self->buf.rkey;
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_WR_FLUSH_ERR, wc.status);
	n = kc_events(self->fd, ev, ARRAY_SIZE(ev), 200);
	ASSERT_LE(1, n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ((uint32_t)KRDMA_EVENT_CONN_ERROR, ev[i].type);
		if (ev[i].handle == self->a.handle) {
			for_a++;
			EXPECT_EQ((int)KT_WC_REM_ACCESS_ERR, ev[i].status);
			continue;
		}
		/* a responder the device reports in error: b, asynchronously */
		EXPECT_EQ(self->b.handle, ev[i].handle);
		EXPECT_GT(0, ev[i].status);
	}
	EXPECT_EQ(1, for_a);
	EXPECT_TRUE(kt_kmsg_find(kmsg, "krdma: connection %u of krdma_post[%d] in error: remote access error",
				 self->a.handle, getpid()));
	/* once: the flushed WR said nothing */
	EXPECT_FALSE(kt_kmsg_find(kmsg, "krdma: connection %u of ",
				  self->a.handle));
	close(kmsg);
}

/* The peer's 8 bytes are naturally aligned (IBA 9.4.5), checked at post. */
KRDMA_TEST_F(post, atomic_unaligned)
{
	uint64_t off[] = { 1, 4, 7, 12 };
	uint32_t op;
	unsigned int i;

	if (variant->transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "atomics are RC");
	for (op = KRDMA_OP_ATOMIC_FETCH_ADD; op <= KRDMA_OP_ATOMIC_CMP_SWP; op++)
		for (i = 0; i < ARRAY_SIZE(off); i++) {
			struct krdma_wr wr;

			kt_wr_init(&wr, 1, op, KRDMA_WR_SIGNALED);
			kt_wr_sge(&wr, self->buf.handle, 0, 8);
			wr.remote_addr = self->buf.addr + off[i];
			wr.rkey = self->buf.rkey;
			EXPECT_POST1_ERRNO(EINVAL, &wr, "op %u remote_addr +%llu",
					   op, (unsigned long long)off[i]);
		}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, sge_beyond_buffer)
{
	struct {
		uint64_t off;
		uint32_t len;
	} bad[] = { { 0, 65537 }, { 65536, 1 }, { 65535, 2 }, { 1ull << 32, 1 },
		    { UINT64_MAX, 2 }, { UINT64_MAX - 100, 200 } };
	struct krdma_wr wr;
	unsigned int i;
	uint32_t acc;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		good_send(self, &wr, 1, 0);
		wr.sge[0].offset = bad[i].off;
		wr.sge[0].length = bad[i].len;
		EXPECT_POST1_ERRNO(EINVAL, &wr, "send sge offset 0x%llx length %u",
				   (unsigned long long)bad[i].off, bad[i].len);
		kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, self->buf.handle, bad[i].off, bad[i].len);
		acc = 99;
		EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->b.handle, &wr, 1, &acc),
			     "recv sge offset 0x%llx length %u",
			     (unsigned long long)bad[i].off, bad[i].len);
		EXPECT_EQ(0u, acc);
	}
	/* the second SGE is the bad one */
	good_send(self, &wr, 3, 8);
	if (self->a.caps.max_send_sge >= 2) {
		kt_wr_sge(&wr, self->buf.handle, 65530, 7);
		EXPECT_POST1_ERRNO(EINVAL, &wr, "second sge");
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, sge_unknown_buffer)
{
	struct krdma_wr wr;
	uint32_t handles[] = { 0, 999999, self->a.handle };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(handles); i++) {
		good_send(self, &wr, 1, 8);
		wr.sge[0].buf_handle = handles[i];
		EXPECT_POST1_ERRNO(ENOENT, &wr, "buffer handle %u", handles[i]);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, sge_reserved)
{
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	wr.sge[0].__reserved = 1;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "__reserved");
	good_send(self, &wr, 1, 8);
	wr.sge[0].__reserved2 = 1;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "__reserved2");
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, ud_message_too_big)
{
	uint32_t mtu = self->dev.port.active_mtu;
	struct krdma_wr wr;

	if (variant->transport != KRDMA_TRANSPORT_UD)
		SKIP(return, "UD only");
	good_send(self, &wr, 1, mtu + 1);
	EXPECT_POST1_ERRNO(EMSGSIZE, &wr, "%u bytes, MTU %u", mtu + 1, mtu);
	good_send(self, &wr, 2, 4095);
	EXPECT_POST1_ERRNO(EMSGSIZE, &wr, "4095 bytes");
	/* the sum of the SGEs counts */
	good_send(self, &wr, 3, mtu / 2 + 1);
	kt_wr_sge(&wr, self->buf.handle, 8192, mtu / 2 + 1);
	EXPECT_POST1_ERRNO(EMSGSIZE, &wr, "two SGEs");
	/* inline too */
	good_send(self, &wr, 4, mtu + 1);
	wr.flags |= KRDMA_WR_INLINE;
	test_err_post1(EINVAL, self->a.handle, &wr);
	nothing_posted(_metadata, self);
}

/* A QP number is 24 bits: more is refused, not cut to another QP's */
KRDMA_TEST_F(post, ud_remote_qpn_width)
{
	struct krdma_wr wr;

	if (variant->transport != KRDMA_TRANSPORT_UD)
		SKIP(return, "UD only");
	good_send(self, &wr, 1, 8);
	wr.remote_qpn = self->b.qp_num | 1u << 24;
	EXPECT_POST1_ERRNO(EINVAL, &wr);
	nothing_posted(_metadata, self);
}

/*
 * A POST refused as a whole writes num_wrs 0: an unknown handle, a bad
 * flag.  (With KRDMA_POST_POLL, an ENOENT after the post leaves num_wrs as
 * it was, all posted; the two must differ.)
 */
KRDMA_TEST_F(post, refused_call_writes_zero)
{
	struct krdma_post p;
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = 0xfffff;
	p.num_wrs = 1;
	p.wr_entry_size = sizeof(wr);
	p.wrs_uptr = (uintptr_t)&wr;
	test_err_ioctl(ENOENT, KRDMA_POST, &p);
	EXPECT_EQ(0u, p.num_wrs);
	p.handle = self->a.handle;
	p.num_wrs = 1;
	p.flags = 1u << 9;
	test_err_ioctl(EOPNOTSUPP, KRDMA_POST, &p);
	EXPECT_EQ(0u, p.num_wrs);
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, ud_unknown_ah)
{
	uint32_t handles[] = { 0, 999999, self->buf.handle, self->a.handle };
	struct krdma_wr wr;
	unsigned int i;

	if (variant->transport != KRDMA_TRANSPORT_UD)
		SKIP(return, "UD only");
	for (i = 0; i < ARRAY_SIZE(handles); i++) {
		good_send(self, &wr, 1, 8);
		wr.ah_handle = handles[i];
		EXPECT_POST1_ERRNO(ENOENT, &wr, "ah handle %u", handles[i]);
	}
	nothing_posted(_metadata, self);
}

KRDMA_TEST_F(post, inline_too_big)
{
	uint32_t max = self->a.caps.max_inline_data;
	struct krdma_wr wr;

	good_send(self, &wr, 1, max + 1);
	wr.flags |= KRDMA_WR_INLINE;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "%u inline bytes, max %u", max + 1, max);
	/* split over two SGEs */
	good_send(self, &wr, 2, max / 2 + 1);
	kt_wr_sge(&wr, self->buf.handle, 4096, max / 2 + 1);
	wr.flags |= KRDMA_WR_INLINE;
	EXPECT_POST1_ERRNO(EINVAL, &wr, "two SGEs");
	nothing_posted(_metadata, self);
}

/*
 * A READ or atomic result has to land in a buffer: never inline.  Each goes
 * second in a chain after a good SEND: krdma refuses the chain before it
 * posts anything (a device that checks only as it posts, like rxe, would
 * have sent the SEND).
 */
KRDMA_TEST_F(post, inline_only_sends)
{
	static const uint32_t ops[] = { KRDMA_OP_RDMA_READ,
					KRDMA_OP_ATOMIC_FETCH_ADD,
					KRDMA_OP_ATOMIC_CMP_SWP,
					KRDMA_OP_LOCAL_INV };
	struct krdma_wr wrs[2], rwr;
	unsigned int i;
	uint32_t acc;

	if (variant->transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "READ and atomics are RC only");
	/* a SEND that got out would land here and complete at once */
	kt_wr_init(&rwr, 30, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, self->buf.handle, 0, 4096);
	test_cmd_post(self->b.handle, &rwr, 1, &acc);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		good_send(self, &wrs[0], 1, 8);
		kt_wr_init(&wrs[1], 2, ops[i], KRDMA_WR_SIGNALED | KRDMA_WR_INLINE);
		if (ops[i] == KRDMA_OP_LOCAL_INV) {
			wrs[1].imm_data = self->buf.lkey;
		} else {
			kt_wr_sge(&wrs[1], self->buf.handle, 0, 8);
			wrs[1].remote_addr = self->buf.addr;
			wrs[1].rkey = self->buf.rkey;
		}
		acc = 99;
		/* what the device lacks is EOPNOTSUPP first */
		EXPECT_ERRNO(kt_dev_lacks_op(&self->dev, ops[i]) ? EOPNOTSUPP :
			     EINVAL,
			     kt_post(self->fd, self->a.handle, wrs, 2, &acc),
			     "opcode %u inline", ops[i]);
		EXPECT_EQ(1u, acc);
	}
	nothing_posted(_metadata, self);
}

/*
 * A chain refused at WR @i: num_wrs says @i and nothing of the chain is
 * posted, not even the WRs before it ("refused before anything is posted").
 */
KRDMA_TEST_F(post, error_index)
{
	struct krdma_wr wrs[4], rwr;
	struct krdma_wc wc;
	uint32_t acc = 99, i;

	for (i = 0; i < 4; i++)
		good_send(self, &wrs[i], 10 + i, 8);
	wrs[2].sge[0].buf_handle = 424242;
	test_err_post(ENOENT, self->a.handle, wrs, 4, &acc);
	EXPECT_EQ(2u, acc);
	acc = 99;
	wrs[2].sge[0].buf_handle = self->buf.handle;
	wrs[3].opcode = KRDMA_OP_MAX;
	test_err_post(EINVAL, self->a.handle, wrs, 4, &acc);
	EXPECT_EQ(3u, acc);
	nothing_posted(_metadata, self);

	/* receives: a refused chain leaves no RECV behind */
	kt_wr_init(&wrs[0], 20, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[0], self->buf.handle, 0, 64);
	kt_wr_init(&wrs[1], 21, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[1], 424242, 0, 64);
	acc = 99;
	test_err_post(ENOENT, self->b.handle, wrs, 2, &acc);
	EXPECT_EQ(1u, acc);
	kt_wr_init(&rwr, 22, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, self->buf.handle, 0, 4096);
	test_cmd_post1(self->b.handle, &rwr);
	good_send(self, &wrs[0], 23, 8);
	test_cmd_post1(self->a.handle, &wrs[0]);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(22u, wc.wr_id) {
		TH_LOG("the RECV of the refused chain was posted");
	}
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(23u, wc.wr_id);
}

/* A valid chain of every length up to the queue depth is accepted whole. */
KRDMA_TEST_F(post, chain_lengths)
{
	struct krdma_wr wrs[8];
	struct krdma_wc wcs[8];
	uint32_t n, i, acc;

	for (n = 1; n <= 8 && n <= self->b.caps.max_recv_wr; n++) {
		for (i = 0; i < n; i++) {
			kt_wr_init(&wrs[i], 100 * n + i, KRDMA_OP_RECV, 0);
			kt_wr_sge(&wrs[i], self->buf.handle, 0, 4096);
		}
		test_cmd_post(self->b.handle, wrs, n, &acc);
		EXPECT_EQ(n, acc);
		for (i = 0; i < n; i++)
			good_send(self, &wrs[i], 1000 * n + i, 0);
		test_cmd_post(self->a.handle, wrs, n, &acc);
		EXPECT_EQ(n, acc);
		ASSERT_EQ((int)n, kt_poll_n(self->fd, self->b.handle, wcs, n, POLL_MS));
		for (i = 0; i < n; i++)
			EXPECT_EQ(100 * n + i, wcs[i].wr_id);
		ASSERT_EQ((int)n, kt_poll_n(self->fd, self->a.handle, wcs, n, POLL_MS));
	}
}

/* ------------------------------------------------------------------------
 * Flow control: a WR keeps its place in the queue until its completion is
 * polled, so that the CQ cannot overflow
 */

/*
 * A send of a's that completes with no receive at b: RC and UC write 8
 * bytes into the buffer, UD sends an empty message b drops.
 */
static void quiet_send(FIXTURE_DATA(post) *self, struct krdma_wr *wr,
		       uint64_t id, uint32_t flags)
{
	if (self->a.transport == KRDMA_TRANSPORT_UD) {
		good_send(self, wr, id, 0);
		wr->flags = flags;
		return;
	}
	kt_wr_init(wr, id, KRDMA_OP_RDMA_WRITE, flags);
	kt_wr_sge(wr, self->buf.handle, 0, 8);
	wr->remote_addr = self->buf.addr + 4096;
	wr->rkey = self->buf.rkey;
}

/* Give the device time to complete what was posted, unpolled. */
static void let_complete(void)
{
	usleep(300 * 1000);
}

/* Poll @n completions of @conn, all successful, none more. */
static void reap_ok(struct __test_metadata *_metadata, int fd, uint32_t conn,
		    uint32_t n)
{
	struct krdma_wc wcs[64];
	uint32_t i;

	ASSERT_GE(64u, n);
	ASSERT_EQ((int)n, kt_poll_n(fd, conn, wcs, n, POLL_MS));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0u, wcs[i].status);
	EXPECT_EQ(0, kt_poll(fd, conn, wcs, 1, 0));
}

KRDMA_TEST_F(post, send_queue_full_until_polled)
{
	uint32_t depth = self->a.caps.max_send_wr, i, acc;
	struct krdma_wr wr;

	ASSERT_GE(64u, depth);
	for (i = 0; i < depth; i++) {
		quiet_send(self, &wr, i, KRDMA_WR_SIGNALED);
		test_cmd_post1(self->a.handle, &wr);
	}
	/* done on the device, but the CQ holds their completions */
	let_complete();
	quiet_send(self, &wr, depth, KRDMA_WR_SIGNALED);
	test_err_post(ENOMEM, self->a.handle, &wr, 1, &acc);
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->a.handle, depth);
	test_cmd_post1(self->a.handle, &wr);
	reap_ok(_metadata, self->fd, self->a.handle, 1);
}

/* Unsignaled sends are done once a later signaled one's completion is. */
KRDMA_TEST_F(post, unsignaled_sends_retired_by_signaled)
{
	uint32_t depth = self->a.caps.max_send_wr, half = depth / 2, i, acc;
	struct krdma_wr wrs[64];

	ASSERT_GE(64u, depth);
	ASSERT_LE(2u, half);
	for (i = 0; i < depth; i++)
		quiet_send(self, &wrs[i], i,
			   i == depth - 1 ? KRDMA_WR_SIGNALED : 0);
	test_cmd_post(self->a.handle, wrs, depth, &acc);
	let_complete();
	test_err_post(ENOMEM, self->a.handle, wrs, 1, &acc);
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->a.handle, 1);
	/* all of them done: room for a whole queue again */
	for (i = 0; i < half; i++)
		quiet_send(self, &wrs[i], 100 + i, KRDMA_WR_SIGNALED);
	test_cmd_post(self->a.handle, wrs, half, &acc);
	/* a chain longer than the room left: the part that fits goes */
	for (i = 0; i < depth; i++)
		quiet_send(self, &wrs[i], 200 + i, KRDMA_WR_SIGNALED);
	test_err_post(ENOMEM, self->a.handle, wrs, depth, &acc);
	EXPECT_EQ(depth - half, acc);
	reap_ok(_metadata, self->fd, self->a.handle, depth);
}

KRDMA_TEST_F(post, recv_queue_full_until_polled)
{
	uint32_t depth = self->b.caps.max_recv_wr, i, acc;
	struct krdma_wr wrs[64];

	ASSERT_GE(64u, depth);
	for (i = 0; i < depth; i++) {
		kt_wr_init(&wrs[i], i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], self->buf.handle, 0, 4096);
	}
	test_cmd_post(self->b.handle, wrs, depth, &acc);
	for (i = 0; i < depth; i++)
		good_send(self, &wrs[i], 100 + i, 0);
	test_cmd_post(self->a.handle, wrs, depth, &acc);
	reap_ok(_metadata, self->fd, self->a.handle, depth);
	/* every receive was consumed; their completions wait on b's CQ */
	let_complete();
	kt_wr_init(&wrs[0], 999, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[0], self->buf.handle, 0, 4096);
	test_err_post(ENOMEM, self->b.handle, wrs, 1, &acc);
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->b.handle, depth);
	test_cmd_post1(self->b.handle, &wrs[0]);
}

/* ------------------------------------------------------------------------
 * KRDMA_POLL
 */

KRDMA_TEST_F(post, poll_errors)
{
	struct krdma_poll p;
	struct krdma_wc wc;
	unsigned int bit;

	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = self->a.handle;
	p.num_wcs = 0;
	p.wc_entry_size = sizeof(wc);
	p.wcs_uptr = (uintptr_t)&wc;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POLL, &p), "num_wcs 0");
	p.num_wcs = 1;
	p.wc_entry_size = sizeof(wc) - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POLL, &p), "entry size");
	p.wc_entry_size = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POLL, &p), "entry size 0");
	p.wc_entry_size = KRDMA_MAX_ENTRY_SIZE + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POLL, &p), "entry size max + 1");
	p.wc_entry_size = UINT32_MAX;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POLL, &p), "entry size 4 GiB");
	p.wc_entry_size = sizeof(wc);
	for (bit = 0; bit < 32; bit++) {
		p.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_POLL, &p), "bit %u", bit);
	}
	p.flags = 0;
	p.handle = 999999;
	test_err_ioctl(ENOENT, KRDMA_POLL, &p);
	p.handle = self->buf.handle;
	test_err_ioctl(ENOENT, KRDMA_POLL, &p);
}

/* A larger wc entry: the kernel's fields, then zeros, at the caller's stride. */
KRDMA_TEST_F(post, poll_entry_size_large)
{
	struct big {
		struct krdma_wc wc;
		uint8_t tail[24];
	} e[3];
	struct krdma_poll p;
	struct krdma_wr wr;
	uint32_t i;

	for (i = 0; i < 2; i++) {
		kt_wr_init(&wr, 50 + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, self->buf.handle, 0, 4096);
		test_cmd_post1(self->b.handle, &wr);
		good_send(self, &wr, 60 + i, 0);
		test_cmd_post1(self->a.handle, &wr);
	}
	ASSERT_EQ(2, kt_poll_n(self->fd, self->a.handle, &e[0].wc, 1, POLL_MS) +
		     kt_poll_n(self->fd, self->a.handle, &e[0].wc, 1, POLL_MS));
	/* wait until both receives are there, then take them in one call */
	usleep(200 * 1000);
	memset(e, 0xa5, sizeof(e));
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = self->b.handle;
	p.num_wcs = 3;
	p.wc_entry_size = sizeof(e[0]);
	p.timeout_ms = POLL_MS;
	p.wcs_uptr = (uintptr_t)e;
	test_cmd_ioctl(KRDMA_POLL, &p);
	ASSERT_LE(1u, p.num_wcs);
	for (i = 0; i < p.num_wcs; i++) {
		EXPECT_EQ(50u + i, e[i].wc.wr_id);
		EXPECT_EQ(0u, e[i].wc.status);
		EXPECT_EQ(0u, e[i].wc.__reserved);
		EXPECT_EQ(-1, kt_check_byte(e[i].tail, sizeof(e[i].tail), 0));
	}
	/* entries past num_wcs are not written */
	EXPECT_EQ(-1, kt_check_byte(&e[p.num_wcs], sizeof(e[0]), 0xa5));
}

/* No completion: timeout 0 returns 0 at once, a timeout returns 0 later. */
KRDMA_TEST_F(post, poll_empty)
{
	struct krdma_wc wc;

	EXPECT_EQ(0, kt_poll(self->fd, self->a.handle, &wc, 1, 0));
	EXPECT_EQ(0, kt_poll(self->fd, self->a.handle, &wc, 16, 0));
	EXPECT_EQ(0, kt_poll(self->fd, self->b.handle, &wc, 1, 100));
}

/* A completion that cannot be copied out is EFAULT. */
KRDMA_TEST_F(post, poll_efault)
{
	struct krdma_poll p;
	struct krdma_wr wr;

	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->buf.handle, 0, 4096);
	test_cmd_post1(self->b.handle, &wr);
	good_send(self, &wr, 2, 0);
	test_cmd_post1(self->a.handle, &wr);
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = self->a.handle;
	p.num_wcs = 1;
	p.wc_entry_size = sizeof(struct krdma_wc);
	p.timeout_ms = POLL_MS;
	p.wcs_uptr = 8;
	test_err_ioctl(EFAULT, KRDMA_POLL, &p);
}

TEST_HARNESS_MAIN
