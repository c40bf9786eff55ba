// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle races that the other programs do not cover:
 *
 *  - /dev/krdma opened and closed 10 000 times from parallel threads;
 *  - the fd closed (or replaced by dup2) while other threads are blocked
 *    in GET_EVENTS, KRDMA_POLL or poll(2), or busy in ioctls; a process
 *    killed while blocked;
 *  - two threads destroying one handle of every kind (user buffer, AH,
 *    listener, SRQ; buffers and connections are in krdma_destroy): one
 *    wins, the other gets ENOENT; DESTROY racing calls that use the handle;
 *  - a page fault that never ends under POST or POLL, against DESTROY.
 *
 * What every command must refuse, and how, is krdma_contract's.
 *
 * Env: KRDMA_RACES_OPENS (default 10000) for the first.
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>

#include "krdma_test.h"


KT_INFO_FIXTURE(races)

/* Device contexts drop back to one per device once sessions are gone. */
static void kr_expect_contexts_settle(struct __test_metadata *_metadata, int fd)
{
	struct krdma_info info;
	int i;

	for (i = 0; i < 100; i++) {
		ASSERT_OK(krdma_info_get(fd, &info));
		if (info.num_device_contexts == info.num_devices)
			return;
		usleep(50 * 1000);
	}
	EXPECT_EQ(info.num_devices, info.num_device_contexts) {
		TH_LOG("device contexts left over");
	}
}

/* ------------------------------------------------------------------------
 * open/close from parallel threads
 */

#define KR_OPEN_THREADS 8

struct kr_opener {
	unsigned int n;
	unsigned int fails;
	int first_err;
};

static void *kr_opener_fn(void *arg)
{
	struct kr_opener *o = arg;
	unsigned int i;

	for (i = 0; i < o->n; i++) {
		struct krdma_info info;
		int fd = krdma_open();

		if (fd < 0) {
			if (!o->fails++)
				o->first_err = errno;
			continue;
		}
		/* every 8th session does something before it goes */
		if (i % 8 == 0 && krdma_info_get(fd, &info) && !o->fails++)
			o->first_err = errno;
		if (i % 16 == 1) {
			struct kt_buf b;

			kt_buf_alloc(fd, 0, 0, 64, &b);
		}
		close(fd);
	}
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(races, open_close_parallel, 600)
{
	const char *env = getenv("KRDMA_RACES_OPENS");
	unsigned int total = env && *env ? strtoul(env, NULL, 0) : 10000;
	struct kr_opener o[KR_OPEN_THREADS] = {};
	pthread_t t[KR_OPEN_THREADS];
	uint64_t t0 = kt_now_ms();
	int i;

	for (i = 0; i < KR_OPEN_THREADS; i++) {
		o[i].n = total / KR_OPEN_THREADS;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, kr_opener_fn, &o[i]));
	}
	for (i = 0; i < KR_OPEN_THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0u, o[i].fails) {
			TH_LOG("thread %d: %u failures, first: %s", i, o[i].fails,
			       strerror(o[i].first_err));
		}
	}
	TH_LOG("%u opens and closes in %llu ms", total,
	       (unsigned long long)(kt_now_ms() - t0));
	kr_expect_contexts_settle(_metadata, self->fd);
}

/* ------------------------------------------------------------------------
 * close while another thread is blocked or busy
 */

enum kr_block { KR_GET_EVENTS, KR_KPOLL, KR_SYSPOLL };

struct kr_blocked {
	int fd;
	enum kr_block how;
	uint32_t conn;
	uint32_t timeout_ms;
	int ret, err;
	uint64_t ms;
	bool done;
};

static void kr_sigusr1(int sig)
{
	(void)sig;
}

static void *kr_blocked_fn(void *arg)
{
	struct kr_blocked *b = arg;
	uint64_t t0 = kt_now_ms();

	switch (b->how) {
	case KR_GET_EVENTS: {
		struct krdma_event ev[4];

		b->ret = kc_events(b->fd, ev, 4, b->timeout_ms);
		break;
	}
	case KR_KPOLL: {
		struct krdma_wc wc[4];

		b->ret = kt_poll(b->fd, b->conn, wc, 4, b->timeout_ms);
		break;
	}
	case KR_SYSPOLL: {
		struct pollfd p = { .fd = b->fd, .events = POLLIN };

		b->ret = poll(&p, 1, b->timeout_ms);
		break;
	}
	}
	b->err = b->ret < 0 ? errno : 0;
	b->ms = kt_now_ms() - t0;
	__atomic_store_n(&b->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool kr_wait_done(bool *done, uint32_t ms)
{
	uint64_t end = kt_now_ms() + ms;

	while (!__atomic_load_n(done, __ATOMIC_ACQUIRE)) {
		if (kt_now_ms() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

/*
 * A thread blocks for @timeout_ms on a session of its own; the fd is closed
 * under it (and with @reuse its number is taken by a new session at once).
 * The blocked call still ends (at its timeout, or at once with a signal),
 * with success or a documented errno, and the session is freed after it.
 */
static void kr_close_while_blocked(struct __test_metadata *_metadata,
				   FIXTURE_DATA(races) *self, enum kr_block how,
				   bool reuse, bool signal_it)
{
	struct sigaction sa = { .sa_handler = kr_sigusr1 };
	/* a wait a signal ends is given long enough to tell the two apart */
	struct kr_blocked b = { .how = how,
				.timeout_ms = signal_it ? 10000 : 3000 };
	struct kt_conn c;
	pthread_t t;
	int fd, fd2 = -1, i;

	sigaction(SIGUSR1, &sa, NULL);
	fd = krdma_open();
	ASSERT_LE(0, fd);
	if (how == KR_KPOLL) {
		if (!self->have_dev)
			SKIP(return, "no device with an active port");
		ASSERT_OK(kt_conn_rc_any(fd, &self->dev, KRDMA_CONN_NOTIFY,
					 &c));
		b.conn = c.handle;
	}
	b.fd = fd;
	ASSERT_EQ(0, pthread_create(&t, NULL, kr_blocked_fn, &b));
	usleep(300 * 1000);
	EXPECT_FALSE(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	ASSERT_OK(close(fd));
	if (reuse) {
		struct kt_buf kb;

		fd2 = krdma_open();
		ASSERT_EQ(fd, fd2);	/* the lowest free number */
		/* a fresh session: the old one's handles mean nothing here */
		if (how == KR_KPOLL)
			EXPECT_ERRNO(ENOENT, kt_destroy(fd2, b.conn));
		if (self->have_dev)
			EXPECT_OK(kt_buf_alloc(fd2, self->dev.dev_index, 0, 64, &kb));
	}
	/* again until it returns: a stalled guest may not be in the call yet */
	for (i = 0; signal_it && i < 50 && !kr_wait_done(&b.done, 100); i++)
		pthread_kill(t, SIGUSR1);
	ASSERT_TRUE(kr_wait_done(&b.done, b.timeout_ms + 5000)) {
		TH_LOG("the blocked call did not return after close()");
	}
	pthread_join(t, NULL);
	if (b.ret < 0) {
		EXPECT_TRUE(b.err == EINTR || b.err == ETIMEDOUT ||
			    b.err == EBADF || kt_common_errno(b.err)) {
			TH_LOG("blocked call: %s", strerror(b.err));
		}
	}
	if (signal_it)
		EXPECT_GT(b.timeout_ms, b.ms) {
			TH_LOG("a signal did not end the wait (%llu ms)",
			       (unsigned long long)b.ms);
		}
	if (fd2 >= 0)
		close(fd2);
	kr_expect_contexts_settle(_metadata, self->fd);
}

KRDMA_TEST_F_TIMEOUT(races, close_while_in_get_events, 60)
{
	kr_close_while_blocked(_metadata, self, KR_GET_EVENTS, false, false);
}

KRDMA_TEST_F_TIMEOUT(races, close_reuse_while_in_get_events, 60)
{
	kr_close_while_blocked(_metadata, self, KR_GET_EVENTS, true, true);
}

KRDMA_TEST_F_TIMEOUT(races, close_while_in_krdma_poll, 60)
{
	kr_close_while_blocked(_metadata, self, KR_KPOLL, false, false);
}

KRDMA_TEST_F_TIMEOUT(races, close_reuse_while_in_krdma_poll, 60)
{
	kr_close_while_blocked(_metadata, self, KR_KPOLL, true, true);
}

KRDMA_TEST_F_TIMEOUT(races, close_while_in_poll_syscall, 60)
{
	kr_close_while_blocked(_metadata, self, KR_SYSPOLL, false, false);
}

/* A process killed while blocked in GET_EVENTS or KRDMA_POLL dies at once. */
static void kr_killed_while_blocked(struct __test_metadata *_metadata,
				    FIXTURE_DATA(races) *self, enum kr_block how)
{
	int status, i;
	pid_t pid;

	if (how == KR_KPOLL && !self->have_dev)
		SKIP(return, "no device with an active port");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kr_blocked b = { .how = how, .timeout_ms = 600000 };
		struct kt_conn c;

		b.fd = krdma_open();
		if (b.fd < 0)
			_exit(1);
		if (how == KR_KPOLL) {
			if (kt_conn_rc_any(b.fd, &self->dev,
					   KRDMA_CONN_NOTIFY, &c))
				_exit(1);
			b.conn = c.handle;
		}
		kr_blocked_fn(&b);
		_exit(2);
	}
	usleep(500 * 1000);
	ASSERT_EQ(0, waitpid(pid, &status, WNOHANG)) {
		TH_LOG("the child did not block (status 0x%x)", status);
	}
	kill(pid, SIGKILL);
	for (i = 0; i < 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(50 * 1000);
	}
	ASSERT_LT(i, 100) {
		TH_LOG("the killed process did not die within 5 s");
	}
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kr_expect_contexts_settle(_metadata, self->fd);
}

KRDMA_TEST_F_TIMEOUT(races, killed_in_get_events, 60)
{
	kr_killed_while_blocked(_metadata, self, KR_GET_EVENTS);
}

KRDMA_TEST_F_TIMEOUT(races, killed_in_krdma_poll, 60)
{
	kr_killed_while_blocked(_metadata, self, KR_KPOLL);
}

/* Threads hammer a session while its fd is replaced (dup2) and closed. */
struct kr_hammer {
	int fdnum;
	uint32_t dev_index;
	bool stop;
	unsigned long calls, bad;
	int bad_err;
};

static void *kr_hammer_fn(void *arg)
{
	struct kr_hammer *h = arg;
	uint32_t handles[8] = {};
	unsigned int i = 0;

	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		struct krdma_info info;
		struct kt_buf b;
		char data[64];
		int ret;

		switch (i % 4) {
		case 0:
			ret = kt_buf_alloc(h->fdnum, h->dev_index, 0, 4096, &b);
			if (!ret)
				handles[i / 4 % 8] = b.handle;
			break;
		case 1:
			ret = kt_buf_rw(h->fdnum, handles[i % 8], 0, data,
					sizeof(data), i & 8);
			break;
		case 2:
			ret = kt_destroy(h->fdnum, handles[(i + 3) % 8]);
			break;
		default:
			ret = krdma_info_get(h->fdnum, &info);
			break;
		}
		if (ret && errno != EBADF && errno != ENOENT &&
		    !(errno == EINVAL && i % 4 == 1)) {
			if (!h->bad++)
				h->bad_err = errno;
		}
		h->calls++;
		i++;
	}
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(races, replace_fd_under_ioctls, 120)
{
	struct kr_hammer h[4];
	pthread_t t[4];
	int i, round, fdnum = 700;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	for (i = 0; i < 4; i++) {
		h[i] = (struct kr_hammer){ .fdnum = fdnum,
					   .dev_index = self->dev.dev_index };
	}
	i = krdma_open();
	ASSERT_EQ(fdnum, dup2(i, fdnum));
	close(i);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, kr_hammer_fn, &h[i]));
	for (round = 0; round < 200; round++) {
		int fd = krdma_open();

		ASSERT_LE(0, fd);
		usleep(2000);
		if (round % 3 == 0) {
			close(fdnum);
			usleep(500);
		}
		ASSERT_EQ(fdnum, dup2(fd, fdnum));
		close(fd);
	}
	for (i = 0; i < 4; i++) {
		__atomic_store_n(&h[i].stop, true, __ATOMIC_RELEASE);
		pthread_join(t[i], NULL);
		EXPECT_EQ(0ul, h[i].bad) {
			TH_LOG("thread %d: %lu unexpected failures, first %s", i,
			       h[i].bad, strerror(h[i].bad_err));
		}
	}
	close(fdnum);
	TH_LOG("%lu calls", h[0].calls + h[1].calls + h[2].calls + h[3].calls);
	kr_expect_contexts_settle(_metadata, self->fd);
}

/* ------------------------------------------------------------------------
 * double destroy of every kind of handle, and destroy against use
 */

struct kr_racer {
	int fd;
	uint32_t handle;
	pthread_barrier_t *barrier;
	int ret, err;
};

static void *kr_destroy_fn(void *arg)
{
	struct kr_racer *r = arg;

	pthread_barrier_wait(r->barrier);
	r->ret = kt_destroy(r->fd, r->handle);
	r->err = errno;
	return NULL;
}

/* @make creates one object and returns its handle (or -1: skip). */
static void kr_destroy_race(struct __test_metadata *_metadata, int fd,
			    int64_t (*make)(FIXTURE_DATA(races) *, int, int),
			    FIXTURE_DATA(races) *self, int iters)
{
	pthread_barrier_t barrier;
	int i;

	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, 2));
	for (i = 0; i < iters; i++) {
		struct kr_racer r[2];
		int64_t h = make(self, fd, i);
		pthread_t t;

		ASSERT_LE(0, h) {
			TH_LOG("iteration %d: cannot create: %s", i, strerror(errno));
		}
		r[0] = r[1] = (struct kr_racer){ .fd = fd, .handle = (uint32_t)h,
						 .barrier = &barrier };
		ASSERT_EQ(0, pthread_create(&t, NULL, kr_destroy_fn, &r[1]));
		kr_destroy_fn(&r[0]);
		pthread_join(t, NULL);
		ASSERT_TRUE((!r[0].ret && r[1].ret == -1 && r[1].err == ENOENT) ||
			    (!r[1].ret && r[0].ret == -1 && r[0].err == ENOENT)) {
			TH_LOG("iteration %d: %d (%s) / %d (%s)", i, r[0].ret,
			       strerror(r[0].err), r[1].ret, strerror(r[1].err));
		}
		EXPECT_ERRNO(ENOENT, kt_destroy(fd, (uint32_t)h));
	}
	pthread_barrier_destroy(&barrier);
}

static uint8_t kr_ureg_mem[1 << 16] __attribute__((aligned(4096)));

static int64_t kr_make_ubuf(FIXTURE_DATA(races) *self, int fd, int i)
{
	struct krdma_buf_reg_user r = {
		.size = sizeof(r),
		.dev_index = self->dev.dev_index,
		.access = i % 2 ? KT_ACCESS_ALL : 0,
		.uaddr = (uintptr_t)kr_ureg_mem + (i % 7) * 100,
		.length = 1 + (i % 5) * 4000,
	};

	return ioctl(fd, KRDMA_BUF_REG_USER, &r) ? -1 : (int64_t)r.handle;
}

static uint32_t kr_ud_conn;

static int64_t kr_make_ah(FIXTURE_DATA(races) *self, int fd, int i)
{
	uint32_t ah;

	(void)i;
	return kt_ah_create(fd, kr_ud_conn, self->dev.gid, &ah) ? -1 : (int64_t)ah;
}

static int64_t kr_make_listener(FIXTURE_DATA(races) *self, int fd, int i)
{
	uint32_t h;

	(void)self;
	return kc_listen(fd, i % 2 ? kt_test_addr(false) : "0.0.0.0", 0, &h,
			 NULL) ? -1 : (int64_t)h;
}

static int64_t kr_make_srq(FIXTURE_DATA(races) *self, int fd, int i)
{
	struct krdma_srq_create s = {
		.size = sizeof(s),
		.dev_index = self->dev.dev_index,
		.max_wr = 1 + i % 32,
	};

	return ioctl(fd, KRDMA_SRQ_CREATE, &s) ? -1 : (int64_t)s.handle;
}

KRDMA_TEST_F_TIMEOUT(races, destroy_race_user_buffers, 180)
{
	if (!self->have_dev || !(self->info.features & KRDMA_FEATURE_USER_BUFFERS))
		SKIP(return, "no user buffers or no device");
	kr_destroy_race(_metadata, self->fd, kr_make_ubuf, self, 100);
}

KRDMA_TEST_F_TIMEOUT(races, destroy_race_address_handles, 180)
{
	struct kt_conn c;

	if (!self->have_dev || !(self->info.features & KRDMA_FEATURE_MANUAL_CONN))
		SKIP(return, "no manual connections or no device");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &c);
	test_cmd_conn_connect(&c, NULL);
	kr_ud_conn = c.handle;
	kr_destroy_race(_metadata, self->fd, kr_make_ah, self, 100);
}

KRDMA_TEST_F_TIMEOUT(races, destroy_race_listeners, 180)
{
	if (!(self->info.features & KRDMA_FEATURE_RDMA_CM))
		SKIP(return, "no rdma_cm");
	kr_destroy_race(_metadata, self->fd, kr_make_listener, self, 100);
}

KRDMA_TEST_F_TIMEOUT(races, destroy_race_srqs, 180)
{
	if (!self->have_dev || !(self->info.features & KRDMA_FEATURE_SRQ))
		SKIP(return, "no SRQ or no device");
	kr_destroy_race(_metadata, self->fd, kr_make_srq, self, 100);
}

/* DESTROY against BUF_RW, mmap and POST of the same buffer. */
struct kr_user {
	int fd;
	uint32_t buf, conn;
	bool stop;
	unsigned long ok, gone, bad;
	int bad_err;
	const char *bad_op;
};

static void *kr_user_fn(void *arg)
{
	struct kr_user *u = arg;
	char data[256];
	unsigned int i = 0;

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		uint32_t buf = __atomic_load_n(&u->buf, __ATOMIC_ACQUIRE);
		struct krdma_wr wr;
		bool rw = i++ % 2;
		int ret;

		if (rw) {
			ret = kt_buf_rw(u->fd, buf, 0, data, sizeof(data), i & 4);
		} else {
			kt_wr_init(&wr, i, KRDMA_OP_RECV, 0);
			kt_wr_sge(&wr, buf, 0, sizeof(data));
			ret = kt_post1(u->fd, u->conn, &wr);
		}
		if (!ret) {
			u->ok++;
		} else if (errno == ENOENT) {
			u->gone++;
		} else if (!u->bad++) {
			u->bad_err = errno;
			u->bad_op = rw ? "BUF_RW" : "POST";
		}
	}
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(races, destroy_while_in_use, 180)
{
	struct kr_user u = { .fd = self->fd };
	struct kt_conn c;
	pthread_t t[2];
	int i;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0,
			     &(struct krdma_qp_caps){ .max_recv_wr = 1024 },
			     &c);
	u.conn = c.handle;
	ASSERT_EQ(0, pthread_create(&t[0], NULL, kr_user_fn, &u));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, kr_user_fn, &u));
	for (i = 0; i < 300; i++) {
		struct kt_buf b;

		test_cmd_buf_alloc(self->dev.dev_index,
				   KRDMA_ACCESS_LOCAL_WRITE, 4096, &b);
		__atomic_store_n(&u.buf, b.handle, __ATOMIC_RELEASE);
		usleep(1000);
		test_cmd_destroy(b.handle);
	}
	__atomic_store_n(&u.stop, true, __ATOMIC_RELEASE);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	TH_LOG("%lu calls succeeded, %lu found the buffer gone", u.ok, u.gone);
	/*
	 * A call that lost the race to DESTROY finds the handle gone
	 * (ENOENT); the device is still there, so ENODEV would be wrong.
	 * RECVs on a connection in RESET may be refused (EINVAL), or, where
	 * the device takes them (siw), fill its receive queue, which nothing
	 * polls (ENOMEM).
	 */
	EXPECT_TRUE(!u.bad || u.bad_err == EINVAL || u.bad_err == ENOMEM) {
		TH_LOG("%lu unexpected failures, first %s from %s", u.bad,
		       strerror(u.bad_err), u.bad_op);
	}
	EXPECT_OK(kt_destroy(self->fd, c.handle));
}

/*
 * DESTROY of an address handle against UD sends naming it: a POST that
 * found the AH posts with it before DESTROY frees the verbs AH (KASAN in
 * the debug kernel sees a use after free otherwise), a later one is
 * refused (ENOENT), nothing else.  A send the device takes up after the
 * DESTROY may complete in error, which verbs allow (the AH was destroyed
 * with a send of it in flight; rxe 6.12 sends from a work item): counted,
 * and the sender goes on with a new QP, as the error took its QP.
 */
struct kr_ud_sender {
	int fd;
	const struct kt_dev *dev;
	struct kt_conn c;
	uint32_t ah;
	bool stop;
	unsigned long ok, gone, lost, bad;
	int bad_err;
};

static void kr_ud_bad(struct kr_ud_sender *u, int err)
{
	if (!u->bad++)
		u->bad_err = err;
}

/* A UD QP of the sender's own, in place of one an error took. */
static int kr_ud_new_conn(struct kr_ud_sender *u)
{
	if (u->c.handle)
		kt_destroy(u->fd, u->c.handle);
	u->c.handle = 0;
	if (kt_conn_create(u->fd, u->dev, KRDMA_TRANSPORT_UD, 0, NULL, &u->c) ||
	    kt_conn_connect(u->fd, &u->c, NULL))
		return -1;
	return 0;
}

/* The chain's signaled completion; false if the QP is to be replaced. */
static bool kr_ud_reap(struct kr_ud_sender *u)
{
	struct krdma_wc wc;
	int n = kt_poll_n(u->fd, u->c.handle, &wc, 1, 5000);

	if (n == 1 && !wc.status) {
		u->ok++;
		return true;
	}
	if (n == 1)
		u->lost++;
	else
		kr_ud_bad(u, n < 0 ? errno : ETIMEDOUT);
	return false;
}

static void *kr_ud_sender_fn(void *arg)
{
	struct kr_ud_sender *u = arg;
	struct krdma_wr wrs[32];
	unsigned int i, n = ARRAY_SIZE(wrs);

	if (kr_ud_new_conn(u)) {
		kr_ud_bad(u, errno);
		return NULL;
	}
	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		uint32_t ah = __atomic_load_n(&u->ah, __ATOMIC_ACQUIRE);

		/* the last one signaled: its completion frees every slot */
		for (i = 0; i < n; i++) {
			kt_wr_init(&wrs[i], i, KRDMA_OP_SEND,
				   i == n - 1 ? KRDMA_WR_SIGNALED : 0);
			wrs[i].ah_handle = ah;
			wrs[i].remote_qpn = u->c.qp_num;
		}
		if (!kt_post(u->fd, u->c.handle, wrs, n, NULL)) {
			if (!kr_ud_reap(u) && kr_ud_new_conn(u)) {
				kr_ud_bad(u, errno);
				break;
			}
		} else if (errno == ENOENT) {
			u->gone++;
		} else {
			kr_ud_bad(u, errno);
		}
	}
	if (u->c.handle)
		kt_destroy(u->fd, u->c.handle);
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(races, destroy_ah_while_sending, 180)
{
	struct kr_ud_sender u = { .fd = self->fd, .dev = &self->dev };
	struct kt_conn c;	/* the AHs are made on it */
	pthread_t t;
	int i;

	if (!self->have_dev || !(self->info.features & KRDMA_FEATURE_MANUAL_CONN))
		SKIP(return, "no manual connections or no device");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &c);
	test_cmd_conn_connect(&c, NULL);
	test_cmd_ah_create(c.handle, self->dev.gid, &u.ah);
	ASSERT_EQ(0, pthread_create(&t, NULL, kr_ud_sender_fn, &u));
	for (i = 0; i < 300; i++) {
		uint32_t old = u.ah, ah;

		test_cmd_ah_create(c.handle, self->dev.gid, &ah);
		__atomic_store_n(&u.ah, ah, __ATOMIC_RELEASE);
		test_cmd_destroy(old);
		usleep(1000);
	}
	__atomic_store_n(&u.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TH_LOG("%lu chains sent, %lu found their AH gone, %lu completed in error",
	       u.ok, u.gone, u.lost);
	EXPECT_LT(0ul, u.ok);
	EXPECT_EQ(0ul, u.bad) {
		TH_LOG("first unexpected failure: %s", strerror(u.bad_err));
	}
	EXPECT_OK(kt_destroy(self->fd, u.ah));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
}

/*
 * DESTROY of a UD server connection while its KRDMA_BENCH run learns its
 * client: the run makes the client's address handle after the step that
 * took the first hello, outside the connection's lock
 * (krdma_bench_make_peer()), and DESTROY does not wait for a run.  From 0
 * to 2 ms after the hello, in 50 us steps: DESTROY succeeds, the run ends
 * with ENODEV (or ENOENT, had the handle gone before the run began), and
 * a handle it made goes with the connection, or at once if the
 * connection went while it was being made (KASAN, lockdep and kmemleak in
 * the debug kernel watch).
 */
struct kr_ud_server {
	int fd;
	uint32_t conn, buf;
	int err;
	bool done;
};

static void *kr_ud_server_fn(void *arg)
{
	struct kr_ud_server *r = arg;
	struct krdma_bench b = {
		.size = sizeof(b), .flags = KRDMA_BENCH_SERVER,
		.opcode = KRDMA_OP_SEND, .num_conns = 1,
		.conns_uptr = (uintptr_t)&r->conn, .local_buf = r->buf,
		.msg_size = 64, .tx_depth = 4, .timeout_ms = 10000,
	};

	r->err = ioctl(r->fd, KRDMA_BENCH, &b) ? errno : 0;
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

KRDMA_TEST_F_TIMEOUT(races, destroy_ud_server_learning_peer, 180)
{
	struct krdma_qp_caps caps = { .max_send_wr = 8, .max_recv_wr = 8,
				      .max_recv_sge = 2 };
	unsigned int i, enodev = 0;
	struct kt_conn c, u;
	struct kt_buf buf;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint32_t ah;

	if (!self->have_dev ||
	    !(self->info.features & KRDMA_FEATURE_MANUAL_CONN) ||
	    !(self->info.features & KRDMA_FEATURE_BENCH))
		SKIP(return, "no manual connections, BENCH or device");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &c);
	test_cmd_conn_connect(&c, NULL);
	test_cmd_ah_create(c.handle, self->dev.gid, &ah);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);
	for (i = 0; i < 40; i++) {
		struct kr_ud_server r = { .fd = self->fd, .buf = buf.handle };
		pthread_t t;

		test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, &caps,
				     &u);
		test_cmd_conn_connect(&u, NULL);
		r.conn = u.handle;
		ASSERT_EQ(0, pthread_create(&t, NULL, kr_ud_server_fn, &r));
		usleep(20 * 1000);	/* its receives are posted */
		kt_wr_init(&wr, 1, KRDMA_OP_SEND_WITH_IMM, KRDMA_WR_SIGNALED);
		wr.imm_data = KRDMA_BENCH_READY_IMM;
		wr.ah_handle = ah;
		wr.remote_qpn = u.qp_num;
		test_cmd_post1(c.handle, &wr);
		usleep(i * 50);
		EXPECT_OK(kt_destroy(self->fd, u.handle));
		ASSERT_TRUE(kr_wait_done(&r.done, 5000)) {
			TH_LOG("the run did not end after DESTROY (%u us)",
			       i * 50);
		}
		pthread_join(t, NULL);
		EXPECT_TRUE(r.err == ENODEV || r.err == ENOENT) {
			TH_LOG("%u us: the run ended with %s", i * 50,
			       strerror(r.err));
		}
		enodev += r.err == ENODEV;
		/* the hello's send completion */
		EXPECT_EQ(1, kt_poll_n(self->fd, c.handle, &wc, 1, 5000));
	}
	TH_LOG("%u of 40 runs were under way when their connection went",
	       enodev);
	EXPECT_LT(0u, enodev);
	EXPECT_OK(kt_destroy(self->fd, ah));
	EXPECT_OK(kt_destroy(self->fd, buf.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
}

/* ------------------------------------------------------------------------
 * A page fault that never ends, on the memory a POST reads or a POLL
 * writes, must not hold off DESTROY (nor removal): the module serves
 * faults with no lock held.  userfaultfd makes such a page: a missing page
 * of a registered range stays missing until the test supplies it.
 */

struct kr_stall {
	int fd;
	uint32_t conn;
	bool post;		/* else POLL */
	void *mem;		/* the stalled page */
	int ret, err;
	uint32_t count;		/* POST: num_wrs after; POLL: completions */
	bool done;
};

static void *kr_stall_fn(void *arg)
{
	struct kr_stall *st = arg;

	if (st->post) {
		st->ret = kt_post(st->fd, st->conn, st->mem, 1, &st->count);
	} else {
		/* waits for the WRITE's completion, then copies it out */
		st->ret = kt_poll(st->fd, st->conn, st->mem, 1, 20000);
		st->count = st->ret > 0 ? st->ret : 0;
	}
	st->err = st->ret < 0 ? errno : 0;
	__atomic_store_n(&st->done, true, __ATOMIC_RELEASE);
	return NULL;
}

struct kr_destroyer {
	int fd;
	uint32_t handle;
	int ret;
	bool done;
};

static void *kr_destroyer_fn(void *arg)
{
	struct kr_destroyer *d = arg;

	d->ret = kt_destroy(d->fd, d->handle);
	__atomic_store_n(&d->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void kr_stalled_fault(struct __test_metadata *_metadata,
			     FIXTURE_DATA(races) *self, bool post)
{
	struct kr_stall st = { .fd = self->fd, .post = post };
	struct kr_destroyer d = { .fd = self->fd };
	struct kt_conn a, b;
	struct kt_buf buf;
	struct krdma_wr wr;
	struct krdma_wc wc;
	pthread_t t, td;
	int uffd;

	if (!self->have_dev)
		SKIP(return, "no RDMA device");
	st.mem = kt_uffd_page(&uffd);
	if (!st.mem)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);
	/* a WRITE's completion for the POLL to copy out */
	kt_wr_init(&wr, 0x5eed, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf.handle, 0, 64);
	wr.remote_addr = buf.addr + 1024;
	wr.rkey = buf.rkey;
	if (!post)
		test_cmd_post1(a.handle, &wr);
	st.conn = a.handle;
	ASSERT_EQ(0, pthread_create(&t, NULL, kr_stall_fn, &st));
	ASSERT_TRUE(kt_uffd_faulted(uffd)) {
		TH_LOG("the %s never touched the page", post ? "POST" : "POLL");
	}
	/* the call waits in the fault: DESTROY must not wait for it */
	d.handle = a.handle;
	ASSERT_EQ(0, pthread_create(&td, NULL, kr_destroyer_fn, &d));
	EXPECT_TRUE(kr_wait_done(&d.done, 5000)) {
		TH_LOG("DESTROY waited for a %s's page fault",
		       post ? "POST" : "POLL");
	}
	EXPECT_FALSE(__atomic_load_n(&st.done, __ATOMIC_ACQUIRE));
	ASSERT_OK(kt_uffd_supply(uffd, st.mem, &wr, sizeof(wr)));
	ASSERT_TRUE(kr_wait_done(&st.done, 10000));
	pthread_join(t, NULL);
	ASSERT_TRUE(kr_wait_done(&d.done, 10000));
	pthread_join(td, NULL);
	EXPECT_EQ(0, d.ret);
	if (post) {
		/* it starts again once the page is in: the connection is gone */
		EXPECT_EQ(-1, st.ret);
		EXPECT_EQ(ENOENT, st.err);
		EXPECT_EQ(0u, st.count);
	} else {
		/* the completion it had taken reaches the caller */
		EXPECT_EQ(1, st.ret) {
			TH_LOG("POLL: %s", strerror(st.err));
		}
		memcpy(&wc, st.mem, sizeof(wc));
		EXPECT_EQ(0x5eedu, wc.wr_id);
		EXPECT_EQ(0u, wc.status);
	}
	close(uffd);
}

KRDMA_TEST_F_TIMEOUT(races, destroy_during_post_page_fault, 60)
{
	kr_stalled_fault(_metadata, self, true);
}

KRDMA_TEST_F_TIMEOUT(races, destroy_during_poll_page_fault, 60)
{
	kr_stalled_fault(_metadata, self, false);
}

TEST_HARNESS_MAIN
