// SPDX-License-Identifier: GPL-2.0
/*
 * Revoking a remote key: LOCAL_INV of one of the session's buffers, and a
 * peer's SEND_WITH_INV.  Before, the peer's RDMA WRITE lands; after, the
 * same WRITE ends in a remote access error and the buffer (kernel or
 * zero-copy user memory) keeps what it held, guard bytes included.  The
 * buffer's key is dead locally too, and the buffer can still be destroyed.
 * And another session's rkey is void here: a PD per session.
 */
#include "krdma_test.h"

#define POLL_MS 20000
#define LEN 8192
#define GUARD 4096		/* the buffer is GUARD + LEN + GUARD */

FIXTURE(inval)
{
	int fd;
	struct kt_dev dev;
	struct kt_conn a, b;	/* a writes into b's buffer */
	struct kt_buf src, dst, scratch;
	uint8_t *user;		/* dst's memory, for the user variant */
};

FIXTURE_VARIANT(inval)
{
	bool user;		/* dst is a zero-copy user buffer */
};

FIXTURE_VARIANT_ADD(inval, kernel_buffer) { .user = false };
FIXTURE_VARIANT_ADD(inval, user_buffer) { .user = true };

FIXTURE_SETUP(inval)
{
	uint32_t len = GUARD + LEN + GUARD;

	self->user = NULL;
	self->fd = kt_session_open_dev(_metadata, &self->dev);
	if (self->fd < 0)
		return;
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &self->a,
			   &self->b);
	test_cmd_buf_alloc(self->dev.dev_index, 0, LEN, &self->src);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 4096,
			   &self->scratch);
	if (variant->user) {
		self->user = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, self->user);
		ASSERT_OK(kt_buf_reg_user(self->fd, self->dev.dev_index,
					  KT_ACCESS_ALL, self->user, len,
					  &self->dst));
	} else {
		test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, len,
				   &self->dst);
	}
	EXPECT_EQ(self->dst.lkey, self->dst.rkey);
}

FIXTURE_TEARDOWN(inval)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->user && self->user != MAP_FAILED)
		munmap(self->user, GUARD + LEN + GUARD);
}

/* dst's bytes, however it is backed. */
static void dst_read(struct __test_metadata *_metadata,
		     FIXTURE_DATA(inval) *self, uint8_t *out)
{
	if (self->user)
		memcpy(out, self->user, GUARD + LEN + GUARD);
	else
		test_cmd_buf_read(self->dst.handle, 0, out,
				  GUARD + LEN + GUARD);
}

/* dst: guards of @guard, the middle pattern @seed (0: @guard too). */
static void dst_expect(struct __test_metadata *_metadata,
		       FIXTURE_DATA(inval) *self, uint8_t guard, uint32_t seed)
{
	static uint8_t got[GUARD + LEN + GUARD];

	dst_read(_metadata, self, got);
	EXPECT_EQ(-1, kt_check_byte(got, GUARD, guard));
	if (seed) {
		EXPECT_EQ(-1, kt_check(got + GUARD, LEN, seed));
	} else {
		EXPECT_EQ(-1, kt_check_byte(got + GUARD, LEN, guard));
	}
	EXPECT_EQ(-1, kt_check_byte(got + GUARD + LEN, GUARD, guard));
}

static void dst_fill(struct __test_metadata *_metadata,
		     FIXTURE_DATA(inval) *self, uint8_t val)
{
	static uint8_t buf[GUARD + LEN + GUARD];

	memset(buf, val, sizeof(buf));
	if (self->user)
		memcpy(self->user, buf, sizeof(buf));
	else
		test_cmd_buf_write(self->dst.handle, 0, buf, sizeof(buf));
}

/* a RDMA-WRITEs LEN bytes of @seed into dst's middle; the status. */
static uint32_t write_dst(struct __test_metadata *_metadata,
			  FIXTURE_DATA(inval) *self, uint32_t seed)
{
	static uint8_t data[LEN];
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_fill(data, LEN, seed);
	EXPECT_OK(kt_buf_write(self->fd, self->src.handle, 0, data, LEN));
	kt_wr_init(&wr, seed, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->src.handle, 0, LEN);
	wr.remote_addr = self->dst.addr + GUARD;
	wr.rkey = self->dst.rkey;
	EXPECT_OK(kt_post1(self->fd, self->a.handle, &wr));
	memset(&wc, 0, sizeof(wc));
	EXPECT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(seed, wc.wr_id);
	return wc.status;
}

/* b invalidates dst's key; the completion says LOCAL_INV. */
static void local_inv(struct __test_metadata *_metadata,
		      FIXTURE_DATA(inval) *self)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_wr_init(&wr, 0x1111, KRDMA_OP_LOCAL_INV, KRDMA_WR_SIGNALED);
	wr.imm_data = self->dst.rkey;
	test_cmd_post1(self->b.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x1111u, wc.wr_id);
	EXPECT_EQ((uint32_t)KRDMA_OP_LOCAL_INV, wc.opcode);
}

KRDMA_TEST_F_TIMEOUT(inval, local_inv_revokes_remote_write, 60)
{
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	dst_fill(_metadata, self, 0x5c);
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, write_dst(_metadata, self, 1));
	dst_expect(_metadata, self, 0x5c, 1);
	local_inv(_metadata, self);
	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR,
		  write_dst(_metadata, self, 2));
	dst_expect(_metadata, self, 0x5c, 1);
	EXPECT_OK(kt_destroy(self->fd, self->dst.handle));
}

/* The invalidated key is dead for local use as well. */
KRDMA_TEST_F_TIMEOUT(inval, local_inv_kills_the_lkey, 60)
{
	struct krdma_conn_query q;
	struct krdma_wr wr;
	struct krdma_wc wc;

	local_inv(_metadata, self);
	kt_wr_init(&wr, 0x2222, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->scratch.handle, 0, 64);
	test_cmd_post1(self->a.handle, &wr);
	kt_wr_init(&wr, 0x3333, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->dst.handle, GUARD, 64);
	test_cmd_post1(self->b.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(0x3333u, wc.wr_id);
	/*
	 * The IBA says LOC_PROT_ERR; 6.1's rxe says LOC_QP_OP_ERR, 6.12's
	 * moves the QP to error and flushes the WR.  Never success.
	 */
	EXPECT_TRUE(wc.status == KT_WC_LOC_PROT_ERR ||
		    wc.status == KT_WC_LOC_QP_OP_ERR ||
		    wc.status == KT_WC_WR_FLUSH_ERR) {
		TH_LOG("send from an invalidated key: status %u", wc.status);
	}
	ASSERT_OK(kt_conn_query_err(self->fd, self->b.handle, &q));
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, q.state);
	/* nothing reached a: its receive is flushed, if anything */
	if (kt_poll_n(self->fd, self->a.handle, &wc, 1, 500) == 1)
		EXPECT_NE((uint32_t)KT_WC_SUCCESS, wc.status);
}

/* The peer invalidates with its SEND: the receive completion says so. */
KRDMA_TEST_F_TIMEOUT(inval, send_with_inv_revokes_remote_write, 60)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	dst_fill(_metadata, self, 0x3a);
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, write_dst(_metadata, self, 3));
	kt_wr_init(&wr, 0x4444, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->scratch.handle, 0, 64);
	test_cmd_post1(self->b.handle, &wr);
	kt_wr_init(&wr, 0x5555, KRDMA_OP_SEND_WITH_INV, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->src.handle, 0, 16);
	wr.imm_data = self->dst.rkey;
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x4444u, wc.wr_id);
	EXPECT_EQ(16u, wc.byte_len);
	EXPECT_EQ(KT_WC_WITH_INVALIDATE, wc.wc_flags & KT_WC_WITH_INVALIDATE);
	EXPECT_EQ(self->dst.rkey, wc.imm_data);

	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR,
		  write_dst(_metadata, self, 4));
	dst_expect(_metadata, self, 0x3a, 3);
	EXPECT_OK(kt_destroy(self->fd, self->dst.handle));
}

/* Invalidating one buffer leaves the others' keys working. */
KRDMA_TEST_F_TIMEOUT(inval, other_buffers_unaffected, 60)
{
	struct kt_buf other;
	struct krdma_wr wr;
	struct krdma_wc wc;

	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, LEN, &other);
	local_inv(_metadata, self);
	kt_wr_init(&wr, 0x6666, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->src.handle, 0, LEN);
	wr.remote_addr = other.addr;
	wr.rkey = other.rkey;
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
}

/*
 * Another session's buffer, on the same device, registered for remote
 * write: its rkey is void on this session's QPs (each session has its own
 * PD), so a peer of ours cannot reach it.
 */
KRDMA_TEST_F_TIMEOUT(inval, other_session_rkey_refused, 60)
{
	static uint8_t got[LEN];
	struct kt_buf other;
	struct krdma_wr wr;
	struct krdma_wc wc;
	int ofd;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ofd = krdma_open();
	ASSERT_LE(0, ofd);
	ASSERT_OK(kt_buf_alloc(ofd, self->dev.dev_index, KT_ACCESS_ALL, LEN,
			       &other));
	kt_wr_init(&wr, 0x7777, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->src.handle, 0, LEN);
	wr.remote_addr = other.addr;
	wr.rkey = other.rkey;
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, wc.status);
	ASSERT_OK(kt_buf_read(ofd, other.handle, 0, got, LEN));
	EXPECT_EQ(-1, kt_check_byte(got, LEN, 0));	/* still zeroed */
	close(ofd);
}

/* Whether the fixture's device is rxe (its node description says so). */
static bool dev_is_rxe(const struct kt_dev *dev)
{
	char path[128], desc[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_desc",
		 dev->info.name);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(desc, sizeof(desc), f))
		desc[0] = 0;
	fclose(f);
	return !strncmp(desc, "rxe", 3);
}

/*
 * Uid 65534, with no capability, sends a SEND_WITH_INV of @rkey between
 * two connections of its own session: the POST's errno, 0 if it went
 * through, or 100 + a setup step that failed.
 */
static int nobody_send_with_inv(const struct kt_dev *dev, uint32_t rkey)
{
	struct kt_conn a, b;
	struct kt_buf buf;
	struct krdma_wr wr;
	struct krdma_wc wc;
	int fd;

	if (kt_become_user(65534))
		return 101;
	fd = krdma_open();
	if (fd < 0)
		return 102;
	if (kt_conn_pair_any(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b))
		return 103;
	if (kt_buf_alloc(fd, dev->dev_index, KRDMA_ACCESS_LOCAL_WRITE, 64,
			 &buf))
		return 104;
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, buf.handle, 0, 64);
	if (kt_post1(fd, b.handle, &wr))
		return 105;
	kt_wr_init(&wr, 2, KRDMA_OP_SEND_WITH_INV, KRDMA_WR_SIGNALED);
	wr.imm_data = rkey;
	if (kt_post1(fd, a.handle, &wr))
		return errno;
	kt_poll_n(fd, a.handle, &wc, 1, POLL_MS);
	kt_poll_n(fd, b.handle, &wc, 1, POLL_MS);
	return 0;
}

/*
 * rxe invalidates whatever MR a SEND_WITH_INV names, of any PD: a user
 * without CAP_NET_ADMIN may not send one there, and another session's
 * buffer keeps its key.
 */
KRDMA_TEST_F_TIMEOUT(inval, send_with_inv_of_other_session_refused, 60)
{
	int status;
	pid_t pid;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	if (!dev_is_rxe(&self->dev))
		SKIP(return, "%s is not rxe: its invalidation keeps to the PD",
		     self->dev.info.name);
	if (geteuid())
		SKIP(return, "needs root, to become uid 65534");
	dst_fill(_metadata, self, 0x2b);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(nobody_send_with_inv(&self->dev, self->dst.rkey));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 102)
		SKIP(return, "uid 65534 cannot open %s", KRDMA_DEVICE_PATH);
	EXPECT_EQ(EPERM, WEXITSTATUS(status));
	/* dst's key still works */
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, write_dst(_metadata, self, 5));
	dst_expect(_metadata, self, 0x2b, 5);
}

TEST_HARNESS_MAIN
