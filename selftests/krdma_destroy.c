// SPDX-License-Identifier: GPL-2.0
/*
 * krdma object destruction: every validation failure of DESTROY, handles
 * racing to be destroyed, and sessions that die with work outstanding.
 */
#include <pthread.h>

#include "krdma_test.h"

#define POLL_MS 20000

KT_OBJ_FIXTURE()

/* ------------------------------------------------------------------------
 * KRDMA_DESTROY
 */

KRDMA_TEST_F(obj, destroy_twice)
{
	struct kt_buf b;
	struct kt_conn c;

	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	test_err_destroy(ENOENT, b.handle);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &c);
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	test_err_destroy(ENOENT, c.handle);
}

KRDMA_TEST_F(obj, destroy_unknown)
{
	uint32_t handles[] = { 0, 1, 999999, 0x7fffffff, 0x80000000u, UINT32_MAX };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(handles); i++)
		EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, handles[i]),
			     "handle %u", handles[i]);
}

KRDMA_TEST_F(obj, destroy_flags)
{
	struct krdma_destroy d;
	struct kt_buf b;
	unsigned int bit;

	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	for (bit = 0; bit < 32; bit++) {
		memset(&d, 0, sizeof(d));
		d.size = sizeof(d);
		d.flags = 1u << bit;
		d.handle = b.handle;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_DESTROY, &d),
			     "flag bit %u", bit);
	}
	/* still there */
	EXPECT_OK(kt_destroy(self->fd, b.handle));
}

KRDMA_TEST_F(obj, destroy_reserved)
{
	struct krdma_destroy d;
	struct kt_buf b;

	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.handle = b.handle;
	d.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_DESTROY, &d);
	EXPECT_OK(kt_destroy(self->fd, b.handle));
}

/* Handles are per session: another fd does not see them. */
KRDMA_TEST_F(obj, destroy_other_session)
{
	struct kt_buf b;
	uint8_t p[8];
	int fd2;

	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	EXPECT_ERRNO(ENOENT, kt_destroy(fd2, b.handle));
	EXPECT_ERRNO(ENOENT, kt_buf_read(fd2, b.handle, 0, p, 8));
	EXPECT_OK(kt_buf_read(self->fd, b.handle, 0, p, 8));
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	close(fd2);
}

struct racer {
	int fd;
	uint32_t handle;
	pthread_barrier_t *barrier;
	int ret, err;
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->barrier);
	r->ret = kt_destroy(r->fd, r->handle);
	r->err = errno;
	return NULL;
}

/* Two threads destroy one handle: exactly one wins, the other gets ENOENT. */
static void destroy_race(struct __test_metadata *_metadata,
			 FIXTURE_DATA(obj) *self, bool conn, int iters)
{
	pthread_barrier_t barrier;
	int i, wins[2] = { 0, 0 };

	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, 2));
	for (i = 0; i < iters; i++) {
		struct racer r[2];
		pthread_t t;
		uint32_t h;

		if (conn) {
			uint32_t t = i % 3;
			struct kt_conn c;

			/* each transport the device has */
			if (kt_dev_lacks_transport(&self->dev, t))
				t = KRDMA_TRANSPORT_RC;
			test_cmd_conn_create(&self->dev, t,
					     i % 2 ? KRDMA_CONN_NOTIFY : 0,
					     NULL, &c);
			h = c.handle;
		} else {
			struct kt_buf b;

			test_cmd_buf_alloc(self->dev.dev_index,
					   i % 2 ? KT_ACCESS_ALL : 0,
					   1 + (i % 7) * 3000, &b);
			h = b.handle;
		}
		r[0] = r[1] = (struct racer){ .fd = self->fd, .handle = h,
					      .barrier = &barrier };
		ASSERT_EQ(0, pthread_create(&t, NULL, racer_fn, &r[1]));
		racer_fn(&r[0]);
		pthread_join(t, NULL);
		ASSERT_TRUE((!r[0].ret && r[1].ret == -1 && r[1].err == ENOENT) ||
			    (!r[1].ret && r[0].ret == -1 && r[0].err == ENOENT)) {
			TH_LOG("iteration %d: %d (%s) / %d (%s)", i, r[0].ret,
			       strerror(r[0].err), r[1].ret, strerror(r[1].err));
		}
		wins[r[0].ret ? 1 : 0]++;
		test_err_destroy(ENOENT, h);
	}
	TH_LOG("%d iterations: main thread won %d, other thread %d", iters,
	       wins[0], wins[1]);
	pthread_barrier_destroy(&barrier);
}

KRDMA_TEST_F_TIMEOUT(obj, destroy_race_buffers, 120)
{
	destroy_race(_metadata, self, false, 300);
}

KRDMA_TEST_F_TIMEOUT(obj, destroy_race_connections, 120)
{
	destroy_race(_metadata, self, true, 150);
}

/*
 * A buffer destroyed under a posted RECV: the receive fails with an error
 * completion instead of writing freed memory.
 */
KRDMA_TEST_F(obj, destroy_buffer_under_posted_recv)
{
	struct kt_conn a, b;
	struct kt_buf src, dst;
	struct krdma_wr wr;
	struct krdma_wc wc;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 4096,
			   &dst);
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, dst.handle, 0, 4096);
	test_cmd_post1(b.handle, &wr);
	test_cmd_destroy(dst.handle);
	/* reuse the memory for something else, with a pattern */
	{
		struct kt_buf other;
		uint8_t p[4096];

		test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &other);
		memset(p, 0x3c, sizeof(p));
		test_cmd_buf_write(other.handle, 0, p, sizeof(p));
		kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, src.handle, 0, 4096);
		test_cmd_post1(a.handle, &wr);
		ASSERT_EQ(1, kt_poll_n(self->fd, b.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(1u, wc.wr_id);
		EXPECT_NE(0u, wc.status);
		TH_LOG("receive into a destroyed buffer: status %u", wc.status);
		ASSERT_EQ(1, kt_poll_n(self->fd, a.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(2u, wc.wr_id);
		/* (iWARP's sender learns of it after, from a TERMINATE) */
		if (!kt_dev_lacks(&self->dev, KT_CAP_REMOTE_ERR_WC))
			EXPECT_NE(0u, wc.status);
		TH_LOG("its send: status %u", wc.status);
		test_cmd_buf_read(other.handle, 0, p, sizeof(p));
		EXPECT_EQ(-1, kt_check_byte(p, sizeof(p), 0x3c));
	}
}

/* Destroying a connection with WRs outstanding, then its buffers. */
KRDMA_TEST_F(obj, destroy_conn_with_outstanding_wrs)
{
	struct kt_conn a, b;
	struct kt_buf big, dst;
	struct krdma_wr wrs[16];
	unsigned int i;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 1 << 20, &big);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 1 << 20, &dst);
	for (i = 0; i < 16; i++) {
		kt_wr_init(&wrs[i], i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], dst.handle, 0, 1 << 20);
	}
	test_cmd_post(b.handle, wrs, 16, NULL);
	for (i = 0; i < 8; i++) {
		kt_wr_init(&wrs[i], 100 + i, i % 2 ? KRDMA_OP_SEND : KRDMA_OP_RDMA_WRITE,
			   KRDMA_WR_SIGNALED);
		kt_wr_sge(&wrs[i], big.handle, 0, 1 << 20);
		if (wrs[i].opcode == KRDMA_OP_RDMA_WRITE) {
			wrs[i].remote_addr = dst.addr;
			wrs[i].rkey = dst.rkey;
		}
	}
	test_cmd_post(a.handle, wrs, 8, NULL);
	/* both ends go while data moves */
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	EXPECT_OK(kt_destroy(self->fd, a.handle));
	EXPECT_OK(kt_destroy(self->fd, big.handle));
	/* the device still works */
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	kt_wr_init(&wrs[0], 7, KRDMA_OP_RECV, 0);
	test_cmd_post1(b.handle, &wrs[0]);
	kt_wr_init(&wrs[0], 8, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	test_cmd_post1(a.handle, &wrs[0]);
	{
		struct krdma_wc wc;

		ASSERT_EQ(1, kt_poll_n(self->fd, b.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(0u, wc.status);
	}
}

/* ------------------------------------------------------------------------
 * Sessions that go away with work outstanding
 */

/* Child: a busy session on @dev, exits (or is killed) without cleaning up. */
static void busy_session(const struct kt_dev *dev, bool block)
{
	struct krdma_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64 };
	struct kt_conn a, b, n1, n2;
	struct kt_buf big, dst;
	struct krdma_wr wrs[32];
	struct krdma_wc wc;
	void *map;
	int fd, i;

	fd = krdma_open();
	if (fd < 0)
		_exit(10);
	if (kt_conn_pair_any(fd, dev, KRDMA_TRANSPORT_RC, 0, &caps, &a, &b))
		_exit(11);
	if (kt_buf_alloc(fd, dev->dev_index, 0, 1 << 20, &big) ||
	    kt_buf_alloc(fd, dev->dev_index, KT_ACCESS_ALL, 1 << 20, &dst))
		_exit(12);
	map = kt_buf_mmap(fd, &dst);
	if (map == MAP_FAILED)
		_exit(13);
	for (i = 0; i < 32; i++) {
		kt_wr_init(&wrs[i], i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], dst.handle, 0, 1 << 20);
	}
	if (kt_post(fd, b.handle, wrs, 32, NULL))
		_exit(14);
	for (i = 0; i < 16; i++) {
		kt_wr_init(&wrs[i], 100 + i,
			   i % 2 ? KRDMA_OP_SEND : KRDMA_OP_RDMA_WRITE,
			   i % 4 ? 0 : KRDMA_WR_SIGNALED);
		kt_wr_sge(&wrs[i], big.handle, 0, 1 << 20);
		if (wrs[i].opcode == KRDMA_OP_RDMA_WRITE) {
			wrs[i].remote_addr = dst.addr;
			wrs[i].rkey = dst.rkey;
		}
	}
	if (kt_post(fd, a.handle, wrs, 16, NULL))
		_exit(15);
	if (!block)
		_exit(0);
	/* a NOTIFY connection nobody will ever complete on: sleep in POLL */
	if (kt_conn_pair_any(fd, dev, KRDMA_TRANSPORT_RC, KRDMA_CONN_NOTIFY,
			     NULL, &n1, &n2))
		_exit(16);
	kt_poll(fd, n1.handle, &wc, 1, 60000);
	_exit(17);
}

/* A fresh RC pair on @dev moves a message. */
static void send_works(struct __test_metadata *_metadata, int fd,
		       const struct kt_dev *dev)
{
	struct kt_conn a, b;
	struct krdma_wr wr;
	struct krdma_wc wc;

	ASSERT_OK(kt_conn_pair_any(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b));
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	ASSERT_OK(kt_post1(fd, b.handle, &wr));
	kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	ASSERT_OK(kt_post1(fd, a.handle, &wr));
	ASSERT_EQ(1, kt_poll_n(fd, b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(0u, wc.status);
	EXPECT_OK(kt_destroy(fd, a.handle));
	EXPECT_OK(kt_destroy(fd, b.handle));
}

static void session_dies(struct __test_metadata *_metadata,
			 FIXTURE_DATA(obj) *self, bool kill_it)
{
	struct krdma_info before, after;
	uint64_t mark = kt_dmesg_mark();
	int bad, status, round;
	pid_t pid;

	ASSERT_OK(krdma_info_get(self->fd, &before));
	for (round = 0; round < 3; round++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			busy_session(&self->dev, kill_it);
		if (kill_it) {
			usleep(1500 * 1000);
			kill(pid, SIGKILL);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (kill_it) {
			EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
				TH_LOG("child status 0x%x", status);
			}
		} else {
			EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
				TH_LOG("child status 0x%x", status);
			}
		}
	}
	/* the device is fine and its contexts are what they were */
	ASSERT_OK(krdma_info_get(self->fd, &after));
	EXPECT_EQ(before.num_devices, after.num_devices);
	EXPECT_EQ(before.num_device_contexts, after.num_device_contexts);
	send_works(_metadata, self->fd, &self->dev);
	bad = kt_dmesg_bad_since(mark);
	EXPECT_EQ(0, bad) {
		TH_LOG("new BUG/WARNING lines in the kernel log");
		krdma_run("dmesg | tail -n 60");
	}
}

KRDMA_TEST_F_TIMEOUT(obj, close_with_outstanding_wrs, 120)
{
	session_dies(_metadata, self, false);
}

KRDMA_TEST_F_TIMEOUT(obj, killed_while_polling, 120)
{
	session_dies(_metadata, self, true);
}

TEST_HARNESS_MAIN
