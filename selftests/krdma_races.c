// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle races and hostile arguments that the other programs
 * do not cover:
 *
 *  1. /dev/krdma opened and closed 10 000 times from parallel threads;
 *  2. the fd closed (or replaced by dup2) while other threads are blocked
 *     in GET_EVENTS, KRDMA_POLL or poll(2), or busy in ioctls; a process
 *     killed while blocked;
 *  3. two threads destroying one handle of every kind (user buffer, AH,
 *     listener, SRQ; buffers and connections are in krdma_destroy): one
 *     wins, the other gets ENOENT; DESTROY racing calls that use the handle;
 *  8. every command's size rules (short, long with a zero or non-zero tail,
 *     absurd), unknown command numbers and encodings, unknown flag bits;
 *  9. lengths, offsets, counts and addresses near 2^32 and 2^64;
 * 11. output structs and arrays written in full: no byte left as the caller
 *     had it or as the kernel's stack had it (string tails, reserved
 *     fields, private data past its length, unused address bytes).
 *
 * Env: KRDMA_RACES_OPENS (default 10000) for case 1.
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>

#include "krdma_test.h"

static bool kr_implemented(const struct krdma_info *info, unsigned int nr)
{
	switch (nr) {
	case KRDMA_CMD_QUERY_DEVICES:
		return info->features & KRDMA_FEATURE_QUERY_DEVICES;
	case KRDMA_CMD_BUF_ALLOC: case KRDMA_CMD_BUF_RW:
		return info->features & KRDMA_FEATURE_BUFFERS;
	case KRDMA_CMD_BUF_REG_USER:
		return info->features & KRDMA_FEATURE_USER_BUFFERS;
	case KRDMA_CMD_CONN_CREATE: case KRDMA_CMD_CONN_MODIFY:
		return info->features & KRDMA_FEATURE_MANUAL_CONN;
	case KRDMA_CMD_CM_LISTEN: case KRDMA_CMD_CM_CONNECT:
	case KRDMA_CMD_CM_ACCEPT: case KRDMA_CMD_CM_REJECT:
	case KRDMA_CMD_CM_DISCONNECT: case KRDMA_CMD_GET_EVENTS:
		return info->features & KRDMA_FEATURE_RDMA_CM;
	case KRDMA_CMD_SRQ_CREATE:
		return info->features & KRDMA_FEATURE_SRQ;
	case KRDMA_CMD_BENCH:
		return info->features & KRDMA_FEATURE_BENCH;
	case KRDMA_CMD_QUERY_SESSIONS:
		return info->features & KRDMA_FEATURE_QUERY_SESSIONS;
	}
	return nr >= KRDMA_CMD_BASE && nr <= KT_CMD_LAST;
}

/*
 * Every command: its number, name, struct size, documented flags, and the
 * shortest size it takes (a struct that grew takes its older size too).
 */
static const struct kr_cmd {
	unsigned int nr;
	const char *name;
	uint32_t size;
	uint32_t flags;
	uint32_t min_size;
} kr_cmds[] = {
#define C(n, s, f) { KRDMA_CMD_##n, #n, sizeof(struct s), f, sizeof(struct s) }
	/* (bench_protocol came in a second version of the struct) */
	{ KRDMA_CMD_GET_INFO, "GET_INFO", sizeof(struct krdma_info), 0,
	  offsetof(struct krdma_info, bench_protocol) },
	C(QUERY_DEVICES, krdma_query_devices, KRDMA_QUERY_DEVICES_ONE),
	C(DESTROY, krdma_destroy, 0),
	C(BUF_ALLOC, krdma_buf_alloc, 0),
	C(BUF_REG_USER, krdma_buf_reg_user, KRDMA_BUF_REG_WINDOW),
	C(BUF_RW, krdma_buf_rw, KRDMA_BUF_RW_WRITE),
	C(CONN_CREATE, krdma_conn_create, KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ),
	C(CONN_MODIFY, krdma_conn_modify, KRDMA_CONN_MODIFY_RC_ATTRS),
	/* (sq_psn and rq_psn came in a second version of the struct) */
	{ KRDMA_CMD_CONN_QUERY, "CONN_QUERY", sizeof(struct krdma_conn_query), 0,
	  offsetof(struct krdma_conn_query, sq_psn) },
	C(CM_LISTEN, krdma_cm_listen, 0),
	{ KRDMA_CMD_CM_CONNECT, "CM_CONNECT", sizeof(struct krdma_cm_connect),
	  KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ | KRDMA_CONN_CM_TIMERS,
	  offsetof(struct krdma_cm_connect, ack_timeout) },
	C(CM_ACCEPT, krdma_cm_accept, KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ),
	C(CM_REJECT, krdma_cm_accept, 0),
	C(CM_DISCONNECT, krdma_cm_disconnect, 0),
	C(GET_EVENTS, krdma_get_events, 0),
	{ KRDMA_CMD_POST, "POST", sizeof(struct krdma_post), KRDMA_POST_POLL,
	  offsetof(struct krdma_post, num_wcs) },
	C(POLL, krdma_poll, 0),
	C(AH_CREATE, krdma_ah_create, 0),
	C(SRQ_CREATE, krdma_srq_create, 0),
	C(BENCH, krdma_bench, KRDMA_BENCH_LATENCY | KRDMA_BENCH_NOTIFY |
			      KRDMA_BENCH_VALIDATE | KRDMA_BENCH_SERVER),
	C(QUERY_SESSIONS, krdma_query_sessions, 0),
#undef C
};
_Static_assert(ARRAY_SIZE(kr_cmds) == KT_CMD_LAST - KRDMA_CMD_BASE + 1,
	       "kr_cmds[] lists every command");

/* The errnos the header documents for every command. */
static bool kr_common_errno(int err)
{
	switch (err) {
	case ENOTTY: case EFAULT: case EINVAL: case E2BIG: case EOPNOTSUPP:
	case ENOENT: case ENODEV: case EPERM: case EMSGSIZE: case ENOMEM:
	case EBUSY: case ENETDOWN:
		return true;
	}
	return false;
}

static bool kr_all_bytes(const void *p, size_t len, uint8_t val)
{
	const uint8_t *b = p;

	while (len--)
		if (*b++ != val)
			return false;
	return true;
}

/* Bytes after the first NUL of a fixed-size string field must be zero. */
#define EXPECT_STR_TAIL_ZERO(field, what, ...)				\
	do {								\
		const char *__nul = memchr((field), 0, sizeof(field));	\
									\
		EXPECT_NE(NULL, __nul) {				\
			TH_LOG(what ": not NUL-terminated", ##__VA_ARGS__); \
		}							\
		if (__nul)						\
			EXPECT_TRUE(kr_all_bytes(__nul, sizeof(field) -	\
					(__nul - (const char *)(field)), 0)) { \
				TH_LOG(what ": bytes after the NUL", ##__VA_ARGS__); \
			}						\
	} while (0)

FIXTURE(races)
{
	int fd;
	struct krdma_info info;
	struct kt_dev dev;
	bool have_dev;
};

FIXTURE_SETUP(races)
{
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(krdma_info_get(self->fd, &self->info));
	self->have_dev = !kt_dev_pick(self->fd, NULL, &self->dev);
}

FIXTURE_TEARDOWN(races)
{
	if (self->fd >= 0)
		close(self->fd);
}

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
 * 1. open/close from parallel threads
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
 * 2. close while another thread is blocked or busy
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
		ASSERT_OK(kt_conn_create(fd, &self->dev, KRDMA_TRANSPORT_RC,
					 KRDMA_CONN_NOTIFY, NULL, &c));
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
			    b.err == EBADF || kr_common_errno(b.err)) {
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
			if (kt_conn_create(b.fd, &self->dev, KRDMA_TRANSPORT_RC,
					   KRDMA_CONN_NOTIFY, NULL, &c))
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
 * 3. double destroy of every kind of handle, and destroy against use
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
	return kc_listen(fd, i % 2 ? kt_rxe0_addr(false) : "0.0.0.0", 0, &h,
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
	 * RECVs on a connection in RESET may be refused (EINVAL).
	 */
	EXPECT_TRUE(!u.bad || u.bad_err == EINVAL) {
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
 * 8. size rules and unknown commands, for every command
 */

KRDMA_TEST_F(races, sizes_every_command)
{
	/* three pages, then a hole: a size past them faults at the hole */
	uint8_t *buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const size_t room = 3 * 4096;
	unsigned int i, checked = 0;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_OK(mprotect(buf + room, 4096, PROT_NONE));

	for (i = 0; i < ARRAY_SIZE(kr_cmds); i++) {
		const struct kr_cmd *c = &kr_cmds[i];
		unsigned long cmd = _IO(KRDMA_TYPE, c->nr);
		uint32_t sz;

		if (!kr_implemented(&self->info, c->nr))
			continue;
		checked++;
		/* size 0 and every size short of the struct: EINVAL */
		for (sz = 0; sz < c->min_size; sz++) {
			memset(buf, 0, room);
			*(uint32_t *)buf = sz;
			EXPECT_ERRNO(EINVAL, ioctl(self->fd, cmd, buf),
				     "KRDMA_%s size %u", c->name, sz);
		}
		/* a non-zero byte past the struct: E2BIG, whatever else */
		for (sz = c->size + 1; sz <= c->size + 64; sz += 7) {
			memset(buf, 0, room);
			*(uint32_t *)buf = sz;
			buf[sz - 1] = 0x80;
			EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
				     "KRDMA_%s size %u, last byte set", c->name, sz);
		}
		memset(buf, 0, room);
		*(uint32_t *)buf = 2 * 4096;
		buf[2 * 4096 - 1] = 1;
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
			     "KRDMA_%s size 8192, last byte set", c->name);
		/* a zero tail that runs past the caller's memory: EFAULT */
		memset(buf, 0, room);
		*(uint32_t *)(buf + room - 2048) = KRDMA_MAX_CMD_SIZE;
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, buf + room - 2048),
			     "KRDMA_%s size %u, its end unmapped", c->name,
			     KRDMA_MAX_CMD_SIZE);
		/* past the cap: E2BIG before the tail is read at all */
		memset(buf, 0, room);
		*(uint32_t *)buf = UINT32_MAX;
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, cmd, buf),
			     "KRDMA_%s size 4 GiB - 1", c->name);
		/* the argument itself unreadable */
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, NULL),
			     "KRDMA_%s NULL argument", c->name);
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, cmd, (void *)-4096L),
			     "KRDMA_%s kernel-half argument", c->name);
	}
	TH_LOG("%u commands", checked);
	munmap(buf, 4 * 4096);
}

/* Every number of the type but the known ones, and the known ones with a
 * direction or size encoded: ENOTTY; another type: ENOTTY. */
KRDMA_TEST_F(races, unknown_command_encodings)
{
	uint8_t buf[512] = {};
	unsigned int nr, dir;

	*(uint32_t *)buf = 64;
	for (nr = 0; nr < 256; nr++) {
		if (nr >= KRDMA_CMD_BASE && nr <= KT_CMD_LAST)
			continue;
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE, nr), buf),
			     "nr 0x%x", nr);
	}
	for (nr = KRDMA_CMD_BASE; nr <= KT_CMD_LAST; nr++) {
		for (dir = 1; dir < 4; dir++)
			EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(dir, KRDMA_TYPE, nr, 64), buf),
				     "nr 0x%x dir %u", nr, dir);
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IOC(0, KRDMA_TYPE, nr, 8), buf),
			     "nr 0x%x size 8", nr);
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE + 1, nr), buf),
			     "type 0x%x nr 0x%x", KRDMA_TYPE + 1, nr);
	}
}

/*
 * Unknown flag bits never succeed; when the call succeeds without them,
 * they make it fail with EOPNOTSUPP.  The arguments are the simplest valid
 * ones this session can make.
 */
KRDMA_TEST_F_TIMEOUT(races, unknown_flags_every_command, 120)
{
	struct kt_buf kb = {};
	struct kt_conn rc = {}, ud = {};
	uint32_t ah = 0, listener = 0;
	uint16_t port = 0;
	unsigned int i, bit;
	static uint8_t data[4096];
	/* QUERY_SESSIONS': more room than a test bed has sessions and conns */
	static struct krdma_session_info sessions[256];
	static struct krdma_conn_info conns[1024];

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &kb);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &rc);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &ud);
	test_cmd_conn_connect(&ud, NULL);
	test_cmd_ah_create(ud.handle, self->dev.gid, &ah);
	if (self->info.features & KRDMA_FEATURE_RDMA_CM)
		ASSERT_OK(kc_listen(self->fd, kt_rxe0_addr(false), 0, &listener, &port));

	for (i = 0; i < ARRAY_SIZE(kr_cmds); i++) {
		const struct kr_cmd *c = &kr_cmds[i];
		union {
			uint8_t raw[2048];
			struct krdma_query_devices q;
			struct krdma_destroy d;
			struct krdma_buf_alloc ba;
			struct krdma_buf_reg_user ru;
			struct krdma_buf_rw rw;
			struct krdma_conn_create cc;
			struct krdma_conn_modify cm;
			struct krdma_conn_query cq;
			struct krdma_cm_listen l;
			struct krdma_cm_connect cn;
			struct krdma_cm_accept ac;
			struct krdma_cm_disconnect dc;
			struct krdma_get_events ge;
			struct krdma_post po;
			struct krdma_poll pl;
			struct krdma_ah_create ahc;
			struct krdma_srq_create sc;
			struct krdma_query_sessions qs;
		} base, arg;
		int base_ret, base_err;

		if (!kr_implemented(&self->info, c->nr) || c->nr == KRDMA_CMD_BENCH)
			continue;
		memset(&base, 0, sizeof(base));
		switch (c->nr) {
		case KRDMA_CMD_QUERY_DEVICES:
			base.q.device_entry_size = sizeof(struct krdma_device_info);
			base.q.port_entry_size = sizeof(struct krdma_port_info);
			base.q.gid_entry_size = sizeof(struct krdma_gid_info);
			break;
		case KRDMA_CMD_DESTROY:
			base.d.handle = 0x7ffffff0;	/* unknown: ENOENT at best */
			break;
		case KRDMA_CMD_BUF_ALLOC:
			base.ba.dev_index = self->dev.dev_index;
			base.ba.length = 64;
			break;
		case KRDMA_CMD_BUF_REG_USER:
			base.ru.dev_index = self->dev.dev_index;
			base.ru.uaddr = (uintptr_t)kr_ureg_mem;
			base.ru.length = 64;
			break;
		case KRDMA_CMD_BUF_RW:
			base.rw.handle = kb.handle;
			base.rw.length = 64;
			base.rw.data_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_CONN_CREATE:
			base.cc.dev_index = self->dev.dev_index;
			base.cc.port_num = self->dev.port_num;
			base.cc.gid_index = self->dev.gid_index;
			break;
		case KRDMA_CMD_CONN_MODIFY:
			base.cm.handle = 0x7ffffff0;
			break;
		case KRDMA_CMD_CONN_QUERY:
			base.cq.handle = rc.handle;
			break;
		case KRDMA_CMD_CM_LISTEN:
			kc_sockaddr(&base.l.addr, kt_rxe0_addr(false), 0);
			break;
		case KRDMA_CMD_CM_CONNECT:
			/* to our own listener: nothing accepts, so it would time out */
			kc_sockaddr(&base.cn.dst, kt_rxe0_addr(false), port);
			base.cn.timeout_ms = 1;
			break;
		case KRDMA_CMD_CM_ACCEPT:
		case KRDMA_CMD_CM_REJECT:
			base.ac.handle = rc.handle;	/* not a request */
			base.ac.timeout_ms = 1;
			break;
		case KRDMA_CMD_CM_DISCONNECT:
			base.dc.handle = rc.handle;
			break;
		case KRDMA_CMD_GET_EVENTS:
			base.ge.event_entry_size = sizeof(struct krdma_event);
			break;
		case KRDMA_CMD_POST:
			base.po.handle = rc.handle;
			base.po.wr_entry_size = sizeof(struct krdma_wr);
			base.po.wrs_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_POLL:
			base.pl.handle = rc.handle;
			base.pl.wc_entry_size = sizeof(struct krdma_wc);
			base.pl.wcs_uptr = (uintptr_t)data;
			break;
		case KRDMA_CMD_AH_CREATE:
			base.ahc.conn_handle = ud.handle;
			memcpy(base.ahc.dest_gid, self->dev.gid, 16);
			break;
		case KRDMA_CMD_SRQ_CREATE:
			base.sc.dev_index = self->dev.dev_index;
			break;
		case KRDMA_CMD_QUERY_SESSIONS:
			/* creates nothing; EMSGSIZE if the arrays are short */
			base.qs.num_sessions = ARRAY_SIZE(sessions);
			base.qs.session_entry_size = sizeof(sessions[0]);
			base.qs.sessions_uptr = (uintptr_t)sessions;
			base.qs.num_conns = ARRAY_SIZE(conns);
			base.qs.conn_entry_size = sizeof(conns[0]);
			base.qs.conns_uptr = (uintptr_t)conns;
			break;
		}
		*(uint32_t *)base.raw = c->size;
		/* the call without unknown flags, undone if it created something */
		arg = base;
		base_ret = ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg);
		base_err = base_ret ? errno : 0;
		if (!base_ret) {
			switch (c->nr) {
			case KRDMA_CMD_BUF_ALLOC: kt_destroy(self->fd, arg.ba.handle); break;
			case KRDMA_CMD_BUF_REG_USER: kt_destroy(self->fd, arg.ru.handle); break;
			case KRDMA_CMD_CONN_CREATE: kt_destroy(self->fd, arg.cc.handle); break;
			case KRDMA_CMD_CM_LISTEN: kt_destroy(self->fd, arg.l.handle); break;
			case KRDMA_CMD_AH_CREATE: kt_destroy(self->fd, arg.ahc.handle); break;
			case KRDMA_CMD_SRQ_CREATE: kt_destroy(self->fd, arg.sc.handle); break;
			}
		}
		for (bit = 0; bit < 32; bit++) {
			if (c->flags & (1u << bit))
				continue;
			arg = base;
			((uint32_t *)arg.raw)[1] = 1u << bit;
			if (!base_ret) {
				EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg),
					     "KRDMA_%s flags 0x%x", c->name, 1u << bit);
			} else {
				int ret = ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &arg);
				int err = errno;

				EXPECT_EQ(-1, ret) {
					TH_LOG("KRDMA_%s flags 0x%x succeeded", c->name, 1u << bit);
				}
				EXPECT_TRUE(err == EOPNOTSUPP || err == base_err) {
					TH_LOG("KRDMA_%s flags 0x%x: %s (without: %s)",
					       c->name, 1u << bit, strerror(err),
					       strerror(base_err));
				}
			}
		}
	}
	kt_destroy(self->fd, ah);
	kt_destroy(self->fd, ud.handle);
	kt_destroy(self->fd, rc.handle);
	kt_destroy(self->fd, kb.handle);
	if (listener)
		kt_destroy(self->fd, listener);
}

/* ------------------------------------------------------------------------
 * 9. values near 2^32 and 2^64
 */

static const uint64_t kr_big[] = {
	0xffffffffull, 0x100000000ull, 0x100000001ull, 0xfffffffffull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffff000ull,
	0xfffffffffffffff8ull, 0xffffffffffffffffull,
};

/* The call must fail with one of the listed errnos (0-terminated). */
#define EXPECT_FAILS_WITH(call, errs, fmt, ...)				\
	do {								\
		const int *__e = (errs);				\
		int __r = (call), __err = errno;			\
		bool __ok = false;					\
									\
		EXPECT_EQ(-1, __r) {					\
			TH_LOG(fmt ": succeeded", ##__VA_ARGS__);	\
		}							\
		if (__r == -1) {					\
			for (; *__e; __e++)				\
				__ok |= *__e == __err;			\
			EXPECT_TRUE(__ok) {				\
				TH_LOG(fmt ": %s", ##__VA_ARGS__, strerror(__err)); \
			}						\
		}							\
	} while (0)

KRDMA_TEST_F_TIMEOUT(races, near_2_32_and_2_64, 300)
{
	static const int einval_enomem[] = { EINVAL, ENOMEM, 0 };
	static const int einval_efault[] = { EINVAL, EFAULT, ENOMEM, 0 };
	static const int einval_efault_msgsize[] = { EINVAL, EFAULT, EMSGSIZE, E2BIG, 0 };
	static uint8_t data[4096];
	struct kt_buf kb;
	struct kt_conn a, b;
	struct rlimit rl = { 64 << 20, 64 << 20 };
	unsigned int i;
	pid_t pid;
	int status;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &kb);

	for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
		uint64_t v = kr_big[i];
		struct krdma_buf_reg_user r = {
			.size = sizeof(r), .dev_index = self->dev.dev_index,
		};
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle,
			.data_uptr = (uintptr_t)data,
		};

		/* offset and length: out of the buffer, or wrapping */
		rw.offset = v;
		rw.length = 1;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW offset 0x%llx", (unsigned long long)v);
		rw.offset = 8;
		rw.length = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW length 0x%llx", (unsigned long long)v);
		rw.offset = 0;
		rw.length = 8;
		rw.data_uptr = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW data_uptr 0x%llx", (unsigned long long)v);
		/* user registrations past the top, or wrapping */
		r.uaddr = (uintptr_t)kr_ureg_mem;
		r.length = v;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_REG_USER, &r), einval_efault,
				  "BUF_REG_USER length 0x%llx", (unsigned long long)v);
		r.uaddr = v;
		r.length = 4096;
		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_REG_USER, &r), einval_efault,
				  "BUF_REG_USER uaddr 0x%llx", (unsigned long long)v);
	}
	/* wrap exactly: offset + length == 2^64 */
	{
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle, .offset = 16,
			.length = (uint64_t)-16, .data_uptr = (uintptr_t)data,
		};

		EXPECT_FAILS_WITH(ioctl(self->fd, KRDMA_BUF_RW, &rw), einval_efault,
				  "BUF_RW offset 16 length 2^64-16");
	}
	/* zero lengths: never a crash; BUF_ALLOC and REG_USER refuse them */
	{
		struct krdma_buf_rw rw = {
			.size = sizeof(rw), .handle = kb.handle, .offset = 4096,
			.data_uptr = (uintptr_t)data,
		};
		int ret = ioctl(self->fd, KRDMA_BUF_RW, &rw);

		EXPECT_TRUE(!ret || errno == EINVAL) {
			TH_LOG("BUF_RW length 0 at the end: %s", strerror(errno));
		}
	}

	/*
	 * Kernel buffers of huge lengths, without CAP_IPC_LOCK and with a
	 * 64 MiB RLIMIT_MEMLOCK: EINVAL (above max_mr_size) or ENOMEM, never
	 * an attempt that exhausts the VM.
	 */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int bad = 0;

		if (kt_drop_cap(14) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
			struct krdma_buf_alloc ba = {
				.size = sizeof(ba), .dev_index = self->dev.dev_index,
				.length = kr_big[i],
			};

			if (!ioctl(self->fd, KRDMA_BUF_ALLOC, &ba) ||
			    (errno != EINVAL && errno != ENOMEM)) {
				fprintf(stderr, "# BUF_ALLOC length 0x%llx: %s\n",
					(unsigned long long)kr_big[i],
					strerror(errno));
				bad = 1;
			}
		}
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	(void)einval_enomem;

	/*
	 * Counts and entry sizes whose product overflows 32 or 64 bits.  The
	 * entries land anywhere in the address space, so a child process
	 * makes the calls and reports.
	 */
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		static const uint32_t counts[] = { 0x10000, 0x10001, 0x80000000u, 0xffffffffu };
		static const uint32_t sizes[] = { 0x10000, 0x80000000u, 0xffffffffu };
		unsigned int j;
		int bad = 0;

		for (i = 0; i < ARRAY_SIZE(counts); i++) {
			for (j = 0; j < ARRAY_SIZE(sizes); j++) {
				struct krdma_post po = {
					.size = sizeof(po), .handle = a.handle,
					.num_wrs = counts[i], .wr_entry_size = sizes[j],
					.wrs_uptr = (uintptr_t)data,
				};
				struct krdma_poll pl = {
					.size = sizeof(pl), .handle = a.handle,
					.num_wcs = counts[i], .wc_entry_size = sizes[j],
					.wcs_uptr = (uintptr_t)data,
				};
				struct krdma_get_events ge = {
					.size = sizeof(ge), .num_events = counts[i],
					.event_entry_size = sizes[j],
					.events_uptr = (uintptr_t)data,
				};
				struct krdma_query_devices q = {
					.size = sizeof(q),
					.num_devices = counts[i], .device_entry_size = sizes[j],
					.num_ports = counts[i], .port_entry_size = sizes[j],
					.num_gids = counts[i], .gid_entry_size = sizes[j],
					.devices_uptr = (uintptr_t)data,
					.ports_uptr = (uintptr_t)data,
					.gids_uptr = (uintptr_t)data,
				};
				struct krdma_query_sessions qs = {
					.size = sizeof(qs),
					.num_sessions = counts[i],
					.session_entry_size = sizes[j],
					.num_conns = counts[i],
					.conn_entry_size = sizes[j],
					.sessions_uptr = (uintptr_t)data,
					.conns_uptr = (uintptr_t)data,
				};
				int ret;

				const int *e;

				ret = ioctl(self->fd, KRDMA_POST, &po);
				for (e = einval_efault_msgsize; *e && *e != errno; e++)
					;
				if (!ret || !*e) {
					fprintf(stderr, "# POST num_wrs 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], ret ? strerror(errno) : "success");
					bad++;
				}
				/* no completions or events: 0 of them is fine */
				ret = ioctl(self->fd, KRDMA_POLL, &pl);
				if (ret && !kr_common_errno(errno)) {
					fprintf(stderr, "# POLL num_wcs 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				ret = ioctl(self->fd, KRDMA_GET_EVENTS, &ge);
				if (ret && !kr_common_errno(errno)) {
					fprintf(stderr, "# GET_EVENTS num 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				ret = ioctl(self->fd, KRDMA_QUERY_DEVICES, &q);
				if (ret && !kr_common_errno(errno)) {
					fprintf(stderr, "# QUERY_DEVICES num 0x%x entry 0x%x: %s\n",
						counts[i], sizes[j], strerror(errno));
					bad++;
				}
				if (kr_implemented(&self->info, KRDMA_CMD_QUERY_SESSIONS)) {
					ret = ioctl(self->fd, KRDMA_QUERY_SESSIONS, &qs);
					if (ret && !kr_common_errno(errno)) {
						fprintf(stderr, "# QUERY_SESSIONS num 0x%x entry 0x%x: %s\n",
							counts[i], sizes[j], strerror(errno));
						bad++;
					}
				}
			}
		}
		_exit(bad > 100 ? 100 : bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("overflowing counts: child status 0x%x", status);
	}
	/* WRs: SGE offsets and lengths, remote addresses near the top */
	for (i = 0; i < ARRAY_SIZE(kr_big); i++) {
		struct krdma_wr wr;
		struct krdma_wc wc[4];
		int ret;

		kt_wr_init(&wr, i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, kr_big[i], 8);
		EXPECT_FAILS_WITH(kt_post1(self->fd, a.handle, &wr), einval_efault,
				  "SGE offset 0x%llx", (unsigned long long)kr_big[i]);
		kt_wr_init(&wr, i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, 8, (uint32_t)kr_big[i]);
		if ((uint32_t)kr_big[i] > 4096 - 8)
			EXPECT_FAILS_WITH(kt_post1(self->fd, a.handle, &wr), einval_efault,
					  "SGE length 0x%x", (uint32_t)kr_big[i]);
		/* a remote address past the peer's buffer: posted, then an
		 * error completion (none where rxe sends no NAK for it, its
		 * requester resending forever); nothing written anywhere */
		if (kt_rxe_defect(KT_RXE_NO_ACCESS_NAK))
			continue;
		kt_wr_init(&wr, 100 + i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, kb.handle, 0, 8);
		wr.remote_addr = kb.addr + kr_big[i];
		wr.rkey = kb.rkey;
		ret = kt_post1(self->fd, a.handle, &wr);
		if (ret) {
			EXPECT_TRUE(kr_common_errno(errno)) {
				TH_LOG("remote_addr +0x%llx: %s",
				       (unsigned long long)kr_big[i], strerror(errno));
			}
			continue;
		}
		ret = kt_poll_n(self->fd, a.handle, wc, 1, 20000);
		ASSERT_EQ(1, ret);
		EXPECT_NE((uint32_t)KT_WC_SUCCESS, wc[0].status) {
			TH_LOG("RDMA WRITE to addr+0x%llx succeeded",
			       (unsigned long long)kr_big[i]);
		}
		/* the QP is in error now: make a fresh pair */
		kt_destroy(self->fd, a.handle);
		kt_destroy(self->fd, b.handle);
		test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a,
				   &b);
	}
	kt_destroy(self->fd, a.handle);
	kt_destroy(self->fd, b.handle);
	kt_destroy(self->fd, kb.handle);
}

/* ------------------------------------------------------------------------
 * 11. outputs written in full
 */

KRDMA_TEST_F(races, get_info_fully_written)
{
	struct krdma_info a, b;

	memset(&a, 0x00, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	a.size = b.size = sizeof(a);
	a.flags = b.flags = 0;
	b.__reserved = 0;
	test_cmd_ioctl(KRDMA_GET_INFO, &a);
	test_cmd_ioctl(KRDMA_GET_INFO, &b);
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a))) {
		TH_LOG("bytes of krdma_info depend on what the caller left there");
	}
	EXPECT_STR_TAIL_ZERO(b.module_version, "module_version");
}

/* Two QUERY_DEVICES into arrays pre-filled with 0x00 and 0xff: identical. */
KRDMA_TEST_F(races, query_devices_fully_written)
{
	struct krdma_snap s;
	struct krdma_query_devices q;
	void *arr[2][3];
	size_t len[3];
	unsigned int k, i;

	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	len[0] = (s.ndev + 1) * sizeof(struct krdma_device_info);
	len[1] = (s.nport + 1) * sizeof(struct krdma_port_info);
	len[2] = (s.ngid + 1) * sizeof(struct krdma_gid_info);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < 3; i++) {
			arr[k][i] = malloc(len[i]);
			ASSERT_NE(NULL, arr[k][i]);
			memset(arr[k][i], k ? 0xff : 0x00, len[i]);
		}
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.num_devices = s.ndev + 1;
		q.num_ports = s.nport + 1;
		q.num_gids = s.ngid + 1;
		q.device_entry_size = sizeof(struct krdma_device_info);
		q.port_entry_size = sizeof(struct krdma_port_info);
		q.gid_entry_size = sizeof(struct krdma_gid_info);
		q.devices_uptr = (uintptr_t)arr[k][0];
		q.ports_uptr = (uintptr_t)arr[k][1];
		q.gids_uptr = (uintptr_t)arr[k][2];
		test_cmd_ioctl(KRDMA_QUERY_DEVICES, &q);
		ASSERT_EQ(s.ndev, q.num_devices);
		ASSERT_EQ(s.nport, q.num_ports);
		ASSERT_EQ(s.ngid, q.num_gids);
	}
	EXPECT_EQ(0, memcmp(arr[0][0], arr[1][0], s.ndev * sizeof(struct krdma_device_info)));
	EXPECT_EQ(0, memcmp(arr[0][1], arr[1][1], s.nport * sizeof(struct krdma_port_info)));
	EXPECT_EQ(0, memcmp(arr[0][2], arr[1][2], s.ngid * sizeof(struct krdma_gid_info)));
	for (i = 0; i < s.ndev; i++) {
		struct krdma_device_info *d = (struct krdma_device_info *)arr[1][0] + i;

		EXPECT_STR_TAIL_ZERO(d->name, "device %u name", i);
	}
	for (i = 0; i < s.nport; i++) {
		struct krdma_port_info *p = (struct krdma_port_info *)arr[1][1] + i;

		EXPECT_STR_TAIL_ZERO(p->netdev, "port %u netdev", i);
		EXPECT_EQ(0u, p->__reserved);
	}
	for (i = 0; i < s.ngid; i++) {
		struct krdma_gid_info *g = (struct krdma_gid_info *)arr[1][2] + i;

		EXPECT_STR_TAIL_ZERO(g->netdev, "gid %u netdev", i);
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < 3; i++)
			free(arr[k][i]);
	krdma_snap_free(&s);
}

/* CONN_QUERY writes every output whatever the caller left in it. */
KRDMA_TEST_F(races, conn_query_fully_written)
{
	struct krdma_conn_query a, b;
	struct kt_conn c;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &c);
	memset(&a, 0x00, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	a.size = b.size = sizeof(a);
	a.flags = b.flags = 0;
	a.handle = b.handle = c.handle;
	a.__reserved = b.__reserved = 0;
	test_cmd_ioctl(KRDMA_CONN_QUERY, &a);
	test_cmd_ioctl(KRDMA_CONN_QUERY, &b);
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	kt_destroy(self->fd, c.handle);
}

/*
 * Completions: the same SEND / RECV / WRITE_WITH_IMM / failed WRITE polled
 * into arrays pre-filled with 0x00 and 0xff give the same bytes.
 */
static void kr_wcs(struct __test_metadata *_metadata, FIXTURE_DATA(races) *self,
		   uint8_t fill, struct krdma_wc *out_send, struct krdma_wc *out_recv)
{
	struct kt_conn a, b;
	struct kt_buf sb, rb;
	struct krdma_wr wr;
	struct krdma_wc wc[8];
	int n;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &sb);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &rb);
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, 4096);
	test_cmd_post1(b.handle, &wr);
	kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, rb.handle, 0, 4096);
	test_cmd_post1(b.handle, &wr);
	kt_wr_init(&wr, 3, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sb.handle, 0, 100);
	test_cmd_post1(a.handle, &wr);
	kt_wr_init(&wr, 4, KRDMA_OP_RDMA_WRITE_WITH_IMM, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sb.handle, 0, 64);
	wr.imm_data = 0x1234;
	wr.remote_addr = rb.addr;
	wr.rkey = rb.rkey;
	test_cmd_post1(a.handle, &wr);

	memset(wc, fill, sizeof(wc));
	n = kt_poll_n(self->fd, a.handle, wc, 2, 20000);
	ASSERT_EQ(2, n);
	memcpy(out_send, wc, 2 * sizeof(*wc));
	memset(wc, fill, sizeof(wc));
	n = kt_poll_n(self->fd, b.handle, wc, 2, 20000);
	ASSERT_EQ(2, n);
	memcpy(out_recv, wc, 2 * sizeof(*wc));
	kt_destroy(self->fd, a.handle);
	kt_destroy(self->fd, b.handle);
	kt_destroy(self->fd, sb.handle);
	kt_destroy(self->fd, rb.handle);
}

KRDMA_TEST_F_TIMEOUT(races, completions_fully_written, 120)
{
	struct krdma_wc s0[2], r0[2], s1[2], r1[2];
	int i;

	if (!self->have_dev)
		SKIP(return, "no device with an active port");
	kr_wcs(_metadata, self, 0x00, s0, r0);
	kr_wcs(_metadata, self, 0xff, s1, r1);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, memcmp(&s0[i], &s1[i], sizeof(s0[i]))) {
			TH_LOG("send completion %d: wr_id %llu status %u opcode %u "
			       "byte_len %u/%u imm %x/%x src_qp %x/%x flags %x/%x "
			       "vendor_err %x/%x reserved %x/%x", i,
			       (unsigned long long)s1[i].wr_id, s1[i].status,
			       s1[i].opcode, s0[i].byte_len, s1[i].byte_len,
			       s0[i].imm_data, s1[i].imm_data, s0[i].src_qp,
			       s1[i].src_qp, s0[i].wc_flags, s1[i].wc_flags,
			       s0[i].vendor_err, s1[i].vendor_err,
			       s0[i].__reserved, s1[i].__reserved);
		}
		/* the QP number differs between the runs */
		r0[i].src_qp = r1[i].src_qp = 0;
		EXPECT_EQ(0, memcmp(&r0[i], &r1[i], sizeof(r0[i]))) {
			TH_LOG("receive completion %d differs between fills", i);
		}
		EXPECT_EQ(0u, s1[i].__reserved);
		EXPECT_EQ(0u, r1[i].__reserved);
	}
}

/*
 * CM events: the private data past its length, the address bytes past the
 * family's, and __reserved are zero, whatever the array held before.
 */
KRDMA_TEST_F_TIMEOUT(races, events_fully_written, 120)
{
	struct krdma_event ev[16];
	struct kc_connect c;
	uint32_t listener = 0;
	uint16_t port;
	uint8_t pd[56];
	int n, i, got = 0, fd2;

	if (!(self->info.features & KRDMA_FEATURE_RDMA_CM))
		SKIP(return, "no rdma_cm");
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	for (i = 0; i < (int)sizeof(pd); i++)
		pd[i] = i + 1;
	ASSERT_OK(kc_listen(fd2, kt_rxe0_addr(false), 0, &listener, &port));
	/* a request the listener rejects, with private data */
	kc_connect_init(&c, self->fd, kt_rxe0_addr(false), port, pd, 20);
	ASSERT_EQ(0, kc_connect_start(&c));
	memset(ev, 0xff, sizeof(ev));
	if (kc_wait_event(fd2, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS, &ev[0])) {
		int err = errno;

		kc_connect_join(&c, CM_MS);
		ASSERT_EQ(0, err) {
			TH_LOG("no CONNECT_REQUEST on port %u: %s; CM_CONNECT: %d (%s)",
			       port, strerror(err), c.ret, strerror(c.err));
		}
	}
	ASSERT_OK(kc_reject(fd2, ev[0].handle, pd, 30));
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	EXPECT_EQ(-1, c.ret);
	/* every event of both sessions, into arrays full of 0xff */
	for (i = 0; i < 2; i++) {
		int fd = i ? fd2 : self->fd;
		int k;

		memset(ev, 0xff, sizeof(ev));
		n = kc_events(fd, ev, 16, 0);
		if (n < 0)
			continue;
		for (k = 0; k < n; k++) {
			struct krdma_event *e = &ev[k];
			size_t alen = e->peer.family == AF_INET ? 4 : 16;

			got++;
			EXPECT_EQ(0u, e->__reserved);
			EXPECT_LE(e->private_data_len, sizeof(e->private_data));
			if (e->private_data_len <= sizeof(e->private_data))
				EXPECT_TRUE(kr_all_bytes(e->private_data + e->private_data_len,
							 sizeof(e->private_data) - e->private_data_len, 0)) {
					TH_LOG("%s: private data past %u bytes not zero",
					       kc_event_name(e->type), e->private_data_len);
				}
			EXPECT_TRUE(e->peer.family == AF_INET || e->peer.family == AF_INET6 ||
				    (!e->peer.family && kr_all_bytes(&e->peer, sizeof(e->peer), 0))) {
				TH_LOG("%s: peer family %u", kc_event_name(e->type), e->peer.family);
			}
			EXPECT_TRUE(kr_all_bytes(e->peer.addr + alen, 16 - alen, 0)) {
				TH_LOG("%s: address bytes past the family's", kc_event_name(e->type));
			}
			if (e->peer.family == AF_INET)
				EXPECT_EQ(0u, e->peer.scope_id);
		}
	}
	TH_LOG("%d events checked", got);
	EXPECT_LT(0, got);
	kt_destroy(fd2, listener);
	close(fd2);
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
