// SPDX-License-Identifier: GPL-2.0
/*
 * krdma device removal: a device removed while a session holds objects
 * on it, works on it or waits on it (a temporary rxe device on a dummy
 * netdev).
 */
#include <pthread.h>

#include "krdma_test.h"

/* ------------------------------------------------------------------------
 * Device removal with live handles (a temporary rxe device on a dummy)
 */

#define TMP_DEV "rxe_t"
#define TMP_NETDEV "krdmat0"

FIXTURE(removal)
{
	int fd;
	bool made_netdev;
	struct kt_dev dev;	/* rxe_t */
	struct kt_dev main;	/* rxe0, for objects that outlive rxe_t */
	struct krdma_info before;	/* before rxe_t came */
	bool have_buf;
};

static bool path_exists(const char *fmt, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), fmt, name);
	return !stat(path, &st);
}

FIXTURE_SETUP(removal)
{
	struct kt_buf b;
	int i;

	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	if (kt_dev_pick(self->fd, NULL, &self->main))
		SKIP(return, "no device with an active port");
	if (path_exists(SYSFS_IB "/%s", TMP_DEV))
		krdma_run("rdma link delete " TMP_DEV);
	ASSERT_OK(krdma_info_get(self->fd, &self->before));
	if (!path_exists("/sys/class/net/%s", TMP_NETDEV)) {
		if (krdma_run("ip link add " TMP_NETDEV " type dummy"))
			SKIP(return, "cannot make a dummy netdev");
		self->made_netdev = true;
	}
	ASSERT_EQ(0, krdma_run("ip link set " TMP_NETDEV " up"));
	ASSERT_EQ(0, krdma_run("rdma link add " TMP_DEV " type rxe netdev " TMP_NETDEV));
	for (i = 0; i < 50; i++) {
		if (!kt_dev_pick(self->fd, TMP_DEV, &self->dev))
			break;
		usleep(100 * 1000);
	}
	ASSERT_EQ(0, kt_dev_pick(self->fd, TMP_DEV, &self->dev)) {
		TH_LOG(TMP_DEV " has no active port with a GID");
	}
	self->have_buf = !kt_buf_alloc(self->fd, self->dev.dev_index,
				       KT_ACCESS_ALL, 4096, &b);
	if (self->have_buf)
		kt_destroy(self->fd, b.handle);
	else
		TH_LOG("no buffers on " TMP_DEV ": %s", strerror(errno));
}

FIXTURE_TEARDOWN(removal)
{
	if (path_exists(SYSFS_IB "/%s", TMP_DEV))
		krdma_run("rdma link delete " TMP_DEV);
	if (self->made_netdev)
		krdma_run("ip link delete " TMP_NETDEV);
	if (self->fd >= 0)
		close(self->fd);
}

static void remove_tmp_dev(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, krdma_run("rdma link delete " TMP_DEV));
	ASSERT_FALSE(path_exists(SYSFS_IB "/%s", TMP_DEV));
}

/* GET_INFO until the device contexts are back to @want (removal is async-ish). */
static int wait_contexts(int fd, uint32_t want, struct krdma_info *info)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (krdma_info_get(fd, info))
			return -1;
		if (info->num_device_contexts == want)
			return 0;
		usleep(100 * 1000);
	}
	return 0;
}

KRDMA_TEST_F_TIMEOUT(removal, live_handles, 120)
{
	struct kt_conn rc, ud, fresh, tconn;
	struct kt_buf buf = {}, tbuf;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct krdma_info info;
	uint8_t *map = NULL;
	uint32_t ah, h;
	uint8_t data[64];

	/* an RC connection to itself with work posted, a UD one with an AH,
	 * one still in RESET, a mapped buffer */
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_RC, NULL, &rc);
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &ud);
	test_cmd_ah_create(ud.handle, self->dev.gid, &ah);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &fresh);
	if (self->have_buf) {
		test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 3 * 4096,
				   &buf);
		map = kt_buf_mmap(self->fd, &buf);
		ASSERT_NE(MAP_FAILED, map);
		kt_fill(map, 3 * 4096, 42);
		kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, buf.handle, 0, 4096);
		test_cmd_post1(rc.handle, &wr);
		kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, buf.handle, 4096, 4096);
		test_cmd_post1(rc.handle, &wr);
	}

	remove_tmp_dev(_metadata);

	/* every use of the handles is ENODEV */
	test_err_conn_query(ENODEV, rc.handle, &q);
	test_err_conn_query(ENODEV, ud.handle, &q);
	kt_wr_init(&wr, 3, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	test_err_post1(ENODEV, rc.handle, &wr);
	kt_wr_init(&wr, 4, KRDMA_OP_RECV, 0);
	test_err_post1(ENODEV, rc.handle, &wr);
	EXPECT_ERRNO(ENODEV, kt_poll(self->fd, rc.handle, &wc, 1, 0));
	EXPECT_ERRNO(ENODEV, kt_poll(self->fd, rc.handle, &wc, 1, 100));
	kt_modify_init(&m, &fresh, &fresh);
	test_err_ioctl(ENODEV, KRDMA_CONN_MODIFY, &m);
	test_err_ah_create(ENODEV, ud.handle, self->dev.gid, &h);
	kt_wr_init(&wr, 5, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr.ah_handle = ah;
	wr.remote_qpn = ud.qp_num;
	test_err_post1(ENODEV, ud.handle, &wr);
	/* new objects on the dead index are ENODEV */
	test_err_buf_alloc(ENODEV, self->dev.dev_index, 0, 64, &tbuf);
	test_err_conn_create(ENODEV, &self->dev, KRDMA_TRANSPORT_RC, 0, NULL,
			     &tconn);
	/*
	 * The mapping still shows the data (the first page may have received
	 * the second one by the SEND to itself, if it went before the removal).
	 */
	if (map) {
		uint64_t i, bad = 0;

		for (i = 4096; i < 3 * 4096; i++)
			bad += map[i] != kt_pattern_byte(42, i);
		EXPECT_EQ(0ull, bad);
		for (i = 0; i < 4096; i++)
			bad += map[i] != kt_pattern_byte(42, i) &&
			       map[i] != kt_pattern_byte(42, i + 4096);
		EXPECT_EQ(0ull, bad);
		kt_buf_munmap(map, &buf);
	}
	(void)data;

	/* DESTROY works on all of them, once */
	EXPECT_OK(kt_destroy(self->fd, rc.handle));
	EXPECT_OK(kt_destroy(self->fd, ah));
	EXPECT_OK(kt_destroy(self->fd, ud.handle));
	EXPECT_OK(kt_destroy(self->fd, fresh.handle));
	if (self->have_buf)
		EXPECT_OK(kt_destroy(self->fd, buf.handle));
	test_err_destroy(ENOENT, rc.handle);
	test_err_destroy(ENOENT, ah);

	ASSERT_OK(wait_contexts(self->fd, self->before.num_device_contexts, &info));
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
	EXPECT_EQ(self->before.num_devices, info.num_devices);
}

/* A KRDMA_BENCH in another thread; @done once it returned. */
struct removal_bench {
	int fd;
	uint32_t handle;
	struct krdma_bench b;
	struct krdma_bench_progress progress;
	int err;
	int done;
};

static void *removal_bench_fn(void *arg)
{
	struct removal_bench *rb = arg;

	rb->err = ioctl(rb->fd, KRDMA_BENCH, &rb->b) ? errno : 0;
	__atomic_store_n(&rb->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void removal_bench_init(struct removal_bench *rb, int fd,
			       uint32_t conn, uint32_t opcode, uint32_t buf,
			       uint32_t msg_size)
{
	memset(rb, 0, sizeof(*rb));
	rb->fd = fd;
	rb->handle = conn;
	rb->b.size = sizeof(rb->b);
	rb->b.opcode = opcode;
	rb->b.num_conns = 1;
	rb->b.conns_uptr = (uintptr_t)&rb->handle;
	rb->b.local_buf = buf;
	rb->b.msg_size = msg_size;
	rb->b.tx_depth = 16;
	rb->b.timeout_ms = 60000;
	rb->b.progress_uptr = (uintptr_t)&rb->progress;
}

/*
 * The device goes while a bench run writes to it: the removal does not
 * wait for the run (which would take a minute), the run ends with ENODEV
 * and what it did, and every handle is then destroyed as usual.
 */
KRDMA_TEST_F_TIMEOUT(removal, during_bench, 120)
{
	struct removal_bench rb;
	struct krdma_info info;
	uint64_t mark, t0;
	struct kt_conn rc;
	struct kt_buf buf;
	pthread_t t;

	if (!self->have_buf)
		SKIP(return, "no buffers on " TMP_DEV);
	mark = kt_dmesg_mark();
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_RC, NULL, &rc);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 1 << 20, &buf);
	removal_bench_init(&rb, self->fd, rc.handle, KRDMA_OP_RDMA_WRITE,
			   buf.handle, 4096);
	rb.b.remote_addr = buf.addr;
	rb.b.remote_length = buf.len;
	rb.b.remote_rkey = buf.rkey;
	rb.b.duration_ms = 60000;
	ASSERT_OK(pthread_create(&t, NULL, removal_bench_fn, &rb));
	/* its first progress report: it is writing */
	for (t0 = kt_now_ms(); kt_now_ms() - t0 < 20000; usleep(50 * 1000))
		if (__atomic_load_n(&rb.progress.updates, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&rb.done, __ATOMIC_ACQUIRE))
			break;
	EXPECT_FALSE(__atomic_load_n(&rb.done, __ATOMIC_ACQUIRE)) {
		TH_LOG("the run ended early: %s", strerror(rb.err));
	}
	t0 = kt_now_ms();
	remove_tmp_dev(_metadata);
	EXPECT_GT(30000u, kt_now_ms() - t0);
	ASSERT_OK(pthread_join(t, NULL));
	EXPECT_EQ(ENODEV, rb.err);
	EXPECT_LT(0u, rb.b.ops_done);
	EXPECT_OK(kt_destroy(self->fd, rc.handle));
	EXPECT_OK(kt_destroy(self->fd, buf.handle));
	ASSERT_OK(wait_contexts(self->fd, self->before.num_device_contexts, &info));
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
	EXPECT_EQ(0, kt_dmesg_bad_since(mark));
}

/*
 * A UD bench server that made an address handle for its client (from the
 * hello's GRH), when the device goes: the handle went with the connection,
 * before the PD (no warning of a PD still in use), the run ends ENODEV.
 */
KRDMA_TEST_F_TIMEOUT(removal, during_ud_bench_server, 120)
{
	struct krdma_qp_caps caps = { .max_recv_wr = 32, .max_recv_sge = 2 };
	struct kt_buf sbuf, cbuf;
	struct removal_bench rb;
	struct krdma_info info;
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct kt_conn u, c;
	uint32_t ah, tries;
	uint64_t mark;
	pthread_t t;
	int n = 0;

	if (!self->have_buf)
		SKIP(return, "no buffers on " TMP_DEV);
	mark = kt_dmesg_mark();
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, &caps, &u);
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &c);
	test_cmd_ah_create(c.handle, self->dev.gid, &ah);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64 * 1024,
			   &sbuf);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &cbuf);
	removal_bench_init(&rb, self->fd, u.handle, KRDMA_OP_SEND, sbuf.handle,
			   256);
	rb.b.flags = KRDMA_BENCH_SERVER;
	ASSERT_OK(pthread_create(&t, NULL, removal_bench_fn, &rb));
	/* the hello, until the server answers */
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, cbuf.handle, 0, KRDMA_GRH_LEN);
	test_cmd_post1(c.handle, &wr);
	for (tries = 0; tries < 100; tries++) {
		kt_wr_init(&wr, 2, KRDMA_OP_SEND_WITH_IMM, KRDMA_WR_SIGNALED);
		wr.imm_data = KRDMA_BENCH_READY_IMM;
		wr.ah_handle = ah;
		wr.remote_qpn = u.qp_num;
		test_cmd_post1(c.handle, &wr);
		while ((n = kt_poll(self->fd, c.handle, &wc, 1, 200)) == 1 &&
		       wc.opcode != KRDMA_OP_RECV)
			;
		if (n == 1)
			break;
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(0u, wc.status);
	EXPECT_EQ(KRDMA_BENCH_READY_IMM, wc.imm_data);
	remove_tmp_dev(_metadata);
	ASSERT_OK(pthread_join(t, NULL));
	EXPECT_EQ(ENODEV, rb.err);
	EXPECT_OK(kt_destroy(self->fd, u.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, ah));
	EXPECT_OK(kt_destroy(self->fd, sbuf.handle));
	EXPECT_OK(kt_destroy(self->fd, cbuf.handle));
	ASSERT_OK(wait_contexts(self->fd, self->before.num_device_contexts, &info));
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
	EXPECT_EQ(0, kt_dmesg_bad_since(mark));
}

/* BUF_RW on a buffer whose device is gone: ENODEV like every other use. */
KRDMA_TEST_F(removal, buf_rw_after_removal)
{
	struct kt_buf buf;
	uint8_t data[64];

	if (!self->have_buf)
		SKIP(return, "no buffers on " TMP_DEV);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64, &buf);
	remove_tmp_dev(_metadata);
	test_err_buf_read(ENODEV, buf.handle, 0, data, 64);
	test_err_buf_write(ENODEV, buf.handle, 0, data, 64);
	EXPECT_OK(kt_destroy(self->fd, buf.handle));
}

/* The fd is closed without DESTROY after the device went. */
KRDMA_TEST_F(removal, close_after_removal)
{
	struct kt_conn rc, ud;
	struct kt_buf buf;
	struct krdma_info info;
	uint32_t ah;
	int fd2;

	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	ASSERT_OK(kt_conn_self(fd2, &self->dev, KRDMA_TRANSPORT_RC, NULL, &rc));
	ASSERT_OK(kt_conn_self(fd2, &self->dev, KRDMA_TRANSPORT_UD, NULL, &ud));
	ASSERT_OK(kt_ah_create(fd2, ud.handle, self->dev.gid, &ah));
	if (self->have_buf)
		ASSERT_OK(kt_buf_alloc(fd2, self->dev.dev_index, 0, 8192, &buf));
	remove_tmp_dev(_metadata);
	/* the removed device's context lives while fd2 references it */
	ASSERT_OK(krdma_info_get(self->fd, &info));
	EXPECT_EQ(self->before.num_devices, info.num_devices);
	EXPECT_EQ(self->before.num_device_contexts + 1, info.num_device_contexts);
	close(fd2);
	ASSERT_OK(wait_contexts(self->fd, self->before.num_device_contexts, &info));
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
}

/*
 * A listener bound to the device's own address: rdma_cm's removal waits
 * until its id is destroyed, so krdma's removal must destroy it (else
 * "rdma link delete" hangs until the fd closes) and say so, an event.
 */
KRDMA_TEST_F_TIMEOUT(removal, bound_listener, 90)
{
	const char *addr = "198.51.100.7";
	struct krdma_event ev;
	uint32_t listener;
	uint64_t t0;

	ASSERT_EQ(0, krdma_run("ip addr add %s/24 dev " TMP_NETDEV, addr));
	ASSERT_EQ(0, kc_listen(self->fd, addr, 0, &listener, NULL)) {
		TH_LOG("listen on %s (" TMP_DEV "): %s", addr, strerror(errno));
	}
	t0 = kt_now_ms();
	remove_tmp_dev(_metadata);
	EXPECT_GT(20000ull, kt_now_ms() - t0);
	ASSERT_OK(kc_wait_event(self->fd, KRDMA_EVENT_DEVICE_REMOVAL, listener,
				5000, &ev));
	EXPECT_EQ(listener, ev.handle);
	EXPECT_EQ(0u, ev.listener);
	EXPECT_OK(kt_destroy(self->fd, listener));
	test_err_destroy(ENOENT, listener);
}

struct sleeper {
	int fd;
	uint32_t conn;
	int ret, err;
	uint64_t ms;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	struct krdma_wc wc;
	uint64_t t0 = kt_now_ms();

	s->ret = kt_poll(s->fd, s->conn, &wc, 1, 100000);
	s->err = errno;
	s->ms = kt_now_ms() - t0;
	return NULL;
}

/* A POLL sleeping on a NOTIFY connection is woken by the removal: ENODEV. */
KRDMA_TEST_F_TIMEOUT(removal, removal_wakes_poller, 90)
{
	struct sleeper s = { .fd = self->fd };
	struct kt_conn n1, n2;
	pthread_t t;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, KRDMA_CONN_NOTIFY,
			   NULL, &n1, &n2);
	s.conn = n1.handle;
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper_fn, &s));
	usleep(500 * 1000);
	remove_tmp_dev(_metadata);
	pthread_join(t, NULL);
	EXPECT_EQ(-1, s.ret);
	EXPECT_EQ(ENODEV, s.err);
	EXPECT_GT(100000ull, s.ms);
	TH_LOG("sleeping POLL returned after %llu ms", (unsigned long long)s.ms);
	EXPECT_OK(kt_destroy(self->fd, n1.handle));
	EXPECT_OK(kt_destroy(self->fd, n2.handle));
}

struct reg_staller {
	int fd;
	uint32_t dev_index;
	void *mem;
	int ret, err;
	bool done;
};

static void *reg_staller_fn(void *arg)
{
	struct reg_staller *r = arg;
	struct kt_buf b;

	r->ret = kt_buf_reg_user(r->fd, r->dev_index, KT_ACCESS_ALL, r->mem,
				 sysconf(_SC_PAGESIZE), &b);
	r->err = r->ret ? errno : 0;
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A registration whose pages fault forever (a userfaultfd page no one
 * serves) does not hold off the device's removal: pinning comes before the
 * device is entered.  Once the page comes, the registration finds the
 * device gone.
 */
KRDMA_TEST_F_TIMEOUT(removal, removal_during_reg_page_fault, 90)
{
	struct reg_staller r = { .fd = self->fd,
				 .dev_index = self->dev.dev_index };
	struct kt_proc del = {};
	uint64_t pattern = 0x5eed;
	pthread_t t;
	int uffd, i;

	r.mem = kt_uffd_page(&uffd);
	if (!r.mem)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&t, NULL, reg_staller_fn, &r));
	if (!kt_uffd_faulted(uffd)) {
		/*
		 * 6.1 pins long-term with no fault retry, which userfaultfd
		 * answers with SIGBUS (EFAULT) rather than waiting
		 */
		pthread_join(t, NULL);
		close(uffd);
		if (r.done && r.ret && r.err == EFAULT)
			SKIP(return, "this kernel's long-term pin does not "
			     "wait on userfaultfd (EFAULT)");
		ASSERT_TRUE(false) {
			TH_LOG("BUF_REG_USER never faulted: %d %s", r.ret,
			       strerror(r.err));
		}
	}
	ASSERT_OK(kt_spawn_for(&del, "krdma_removal", "del", false, 60,
			       "rdma link delete " TMP_DEV));
	for (i = 0; i < 100 && !kt_check_exit(&del); i++)
		usleep(100 * 1000);
	EXPECT_LT(i, 100) {
		TH_LOG("removal waited for a registration's page fault");
	}
	EXPECT_FALSE(__atomic_load_n(&r.done, __ATOMIC_ACQUIRE));
	ASSERT_OK(kt_uffd_supply(uffd, r.mem, &pattern, sizeof(pattern)));
	kt_reap(&del);
	EXPECT_EQ(0, del.status) {
		TH_LOG("%s", del.out);
	}
	pthread_join(t, NULL);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ENODEV, r.err);
	kt_proc_end(&del);
	close(uffd);
}

/* A buffer of the removed device in a WR on a live device's connection. */
KRDMA_TEST_F(removal, dead_buffer_in_live_conn)
{
	struct kt_conn c;
	struct kt_buf buf;
	struct krdma_wr wr;

	if (!self->have_buf)
		SKIP(return, "no buffers on " TMP_DEV);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &buf);
	test_cmd_conn_self(&self->main, KRDMA_TRANSPORT_RC, NULL, &c);
	remove_tmp_dev(_metadata);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf.handle, 0, 64);
	test_err_post1(ENODEV, c.handle, &wr);
}

/*
 * A buffer must belong to the connection's device: its lkey means nothing
 * (or another buffer) on a different device, so the WR must be refused.
 */
KRDMA_TEST_F(removal, buffer_of_other_device)
{
	struct kt_conn a, b;
	struct kt_buf buf;
	struct krdma_wr wr;
	struct krdma_wc wc;

	if (!self->have_buf)
		SKIP(return, "no buffers on " TMP_DEV);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 4096,
			   &buf);
	test_cmd_conn_pair(&self->main, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf.handle, 0, 4096);
	EXPECT_ERRNO(EINVAL, kt_post1(self->fd, a.handle, &wr),
		     "an SGE of " TMP_DEV "'s buffer posted on %s",
		     self->main.info.name);
	if (kt_poll_n(self->fd, a.handle, &wc, 1, 2000) == 1)
		TH_LOG("... and completed with status %u", wc.status);
	kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, buf.handle, 0, 4096);
	test_err_post1(EINVAL, b.handle, &wr);
}

/* Likewise an address handle made on another device's UD connection. */
KRDMA_TEST_F(removal, ah_of_other_device)
{
	struct kt_conn tmp_ud, ud;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint32_t ah;

	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &tmp_ud);
	/* (an AH towards rxe_t itself: rxe0's address is not reachable from it) */
	test_cmd_ah_create(tmp_ud.handle, self->dev.gid, &ah);
	test_cmd_conn_self(&self->main, KRDMA_TRANSPORT_UD, NULL, &ud);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr.ah_handle = ah;
	wr.remote_qpn = ud.qp_num;
	EXPECT_ERRNO(EINVAL, kt_post1(self->fd, ud.handle, &wr),
		     "an AH of " TMP_DEV " used on %s", self->main.info.name);
	if (kt_poll_n(self->fd, ud.handle, &wc, 1, 2000) == 1)
		TH_LOG("... and completed with status %u", wc.status);
}

/*
 * AH_CREATE racing with the removal of its device.  Until 4b7edaa,
 * AH_CREATE held the UD connection's hw lock (read) while taking the
 * device's object lock to publish the AH, and removal holds that lock while
 * it waits for the connection's hw lock (write): an ABBA deadlock that hung
 * `rdma link delete` and the creating thread.  Nothing may hang.
 */
struct ah_spinner {
	int fd;
	uint32_t conn;
	uint8_t gid[16];
	volatile bool stop;
	unsigned long created;
	int last_err;
};

static void *ah_spinner_fn(void *arg)
{
	struct ah_spinner *s = arg;
	uint32_t ah;

	while (!s->stop) {
		if (kt_ah_create(s->fd, s->conn, s->gid, &ah)) {
			s->last_err = errno;
			if (errno == ENODEV)
				break;
			continue;
		}
		s->created++;
		kt_destroy(s->fd, ah);
	}
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(removal, ah_create_vs_removal, 120)
{
	struct ah_spinner s[4];
	pthread_t t[4];
	struct kt_conn ud;
	int i;

	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &ud);
	for (i = 0; i < 4; i++) {
		s[i] = (struct ah_spinner){ .fd = self->fd, .conn = ud.handle };
		memcpy(s[i].gid, self->dev.gid, 16);
		ASSERT_EQ(0, pthread_create(&t[i], NULL, ah_spinner_fn, &s[i]));
	}
	usleep(500 * 1000);
	remove_tmp_dev(_metadata);
	for (i = 0; i < 4; i++) {
		s[i].stop = true;
		pthread_join(t[i], NULL);
		TH_LOG("thread %d: %lu AHs, last error %s", i, s[i].created,
		       strerror(s[i].last_err));
	}
}

TEST_HARNESS_MAIN
