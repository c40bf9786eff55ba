// SPDX-License-Identifier: GPL-2.0
/*
 * krdma objects: every validation failure of BUF_ALLOC, BUF_RW, DESTROY,
 * CONN_CREATE/MODIFY/QUERY, AH_CREATE, POST and POLL (one test each, the
 * iommufd way), handles racing to be destroyed, mmap(2) of buffers,
 * RLIMIT_MEMLOCK and the per-user object limit, sessions that die with work
 * outstanding, and a device removed while a session holds objects on it.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>

#include "krdma_test.h"

#define POLL_MS 20000

FIXTURE(obj)
{
	int fd;
	struct kt_dev dev;
	struct krdma_snap snap;
	long psz;
};

FIXTURE_SETUP(obj)
{
	const char *why = krdma_unavailable();

	self->fd = -1;
	self->psz = sysconf(_SC_PAGESIZE);
	if (why)
		SKIP(return, "%s", why);
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	if (kt_dev_pick(self->fd, NULL, &self->dev))
		SKIP(return, "no device with an active port");
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &self->snap));
}

FIXTURE_TEARDOWN(obj)
{
	krdma_snap_free(&self->snap);
	if (self->fd >= 0)
		close(self->fd);
}

static void buf_alloc_init(struct krdma_buf_alloc *a, uint32_t dev,
			   uint32_t access, uint64_t len)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->dev_index = dev;
	a->access = access;
	a->length = len;
}

/* A connection of @transport, connected to itself (RC/UC) or ready (UD). */
static void self_conn(struct __test_metadata *_metadata, int fd,
		      const struct kt_dev *dev, uint32_t transport,
		      const struct krdma_qp_caps *caps, struct kt_conn *c)
{
	ASSERT_OK(kt_conn_create(fd, dev, transport, 0, caps, c));
	ASSERT_OK(kt_conn_connect(fd, c, c));
}

/* Two connections connected to each other. */
static void conn_pair(struct __test_metadata *_metadata, int fd,
		      const struct kt_dev *dev, uint32_t transport,
		      const struct krdma_qp_caps *caps, struct kt_conn *a,
		      struct kt_conn *b)
{
	ASSERT_OK(kt_conn_create(fd, dev, transport, 0, caps, a));
	ASSERT_OK(kt_conn_create(fd, dev, transport, 0, caps, b));
	ASSERT_OK(kt_conn_connect(fd, a, b));
	ASSERT_OK(kt_conn_connect(fd, b, a));
}

/* ------------------------------------------------------------------------
 * KRDMA_BUF_ALLOC
 */

KRDMA_TEST_F(obj, buf_alloc_outputs)
{
	static const uint32_t accesses[] = {
		0, KRDMA_ACCESS_LOCAL_WRITE, KRDMA_ACCESS_REMOTE_READ,
		KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE,
		KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_ATOMIC,
		KT_ACCESS_ALL,
	};
	uint32_t handles[ARRAY_SIZE(accesses)];
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(accesses); i++) {
		struct krdma_buf_alloc a;

		buf_alloc_init(&a, self->dev.dev_index, accesses[i], 100 + i);
		a.handle = a.lkey = a.rkey = 0xdeadbeef;
		a.addr = a.mmap_offset = 0xdeadbeef;
		ASSERT_OK(ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
		handles[i] = a.handle;
		EXPECT_NE(0u, a.handle);
		EXPECT_NE(0xdeadbeefu, a.lkey);
		if (accesses[i] & ~KRDMA_ACCESS_LOCAL_WRITE) {
			EXPECT_NE(0u, a.rkey);
		} else {
			EXPECT_EQ(0u, a.rkey);
		}
		EXPECT_EQ(0ull, a.addr);
		EXPECT_EQ(0ull, a.mmap_offset % self->psz);
		EXPECT_EQ(0u, a.__reserved);
		EXPECT_EQ(100ull + i, a.length);
		for (j = 0; j < i; j++)
			EXPECT_NE(handles[j], a.handle);
	}
	for (i = 0; i < ARRAY_SIZE(accesses); i++)
		EXPECT_OK(kt_destroy(self->fd, handles[i]));
}

/* New memory reads back as zeros, also past what the caller wrote. */
KRDMA_TEST_F(obj, buf_alloc_zeroed)
{
	const uint64_t len = 3 * 4096 + 5;
	struct kt_buf b;
	uint8_t *p;
	int round;

	p = malloc(len);
	ASSERT_NE(NULL, p);
	for (round = 0; round < 3; round++) {
		ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, len, &b));
		memset(p, 0xff, len);
		ASSERT_OK(kt_buf_read(self->fd, b.handle, 0, p, len));
		EXPECT_EQ(-1, kt_check_byte(p, len, 0));
		/* dirty it for the next allocation to maybe reuse */
		memset(p, 0x77, len);
		ASSERT_OK(kt_buf_write(self->fd, b.handle, 0, p, len));
		ASSERT_OK(kt_destroy(self->fd, b.handle));
	}
	free(p);
}

KRDMA_TEST_F(obj, buf_alloc_unknown_access)
{
	struct krdma_buf_alloc a;
	unsigned int bit;

	for (bit = 5; bit < 32; bit++) {
		buf_alloc_init(&a, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE | 1u << bit, 4096);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a),
			     "access bit %u", bit);
	}
}

KRDMA_TEST_F(obj, buf_alloc_remote_write_without_local_write)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_REMOTE_WRITE, 4096);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ, 4096);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
}

KRDMA_TEST_F(obj, buf_alloc_remote_atomic_without_local_write)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_REMOTE_ATOMIC, 4096);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_REMOTE_ATOMIC | KRDMA_ACCESS_REMOTE_READ, 4096);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
}

KRDMA_TEST_F(obj, buf_alloc_mw_bind)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_MW_BIND, 4096);
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_MW_BIND, 4096);
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
}

KRDMA_TEST_F(obj, buf_alloc_flags)
{
	struct krdma_buf_alloc a;
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		buf_alloc_init(&a, self->dev.dev_index, 0, 4096);
		a.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BUF_ALLOC, &a),
			     "flag bit %u", bit);
	}
}

KRDMA_TEST_F(obj, buf_alloc_reserved)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, 0, 4096);
	a.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
	a.__reserved = 0x80000000u;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
}

KRDMA_TEST_F(obj, buf_alloc_length_zero)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 0);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_ALLOC, &a));
}

/* More than max_mr_size, or than one MR can map: EINVAL (or ENOMEM). */
KRDMA_TEST_F(obj, buf_alloc_length_huge)
{
	uint64_t one_mr = (uint64_t)self->dev.info.max_fast_reg_page_list_len *
			  (4ull << 20);
	uint64_t lens[] = { UINT64_MAX, UINT64_MAX - 4095, 1ull << 62, 1ull << 40,
			    one_mr + 1, 0 };
	struct krdma_buf_alloc a;
	unsigned int i;
	int n = ARRAY_SIZE(lens) - 1;

	if (self->dev.info.max_mr_size < UINT64_MAX)
		lens[n++] = self->dev.info.max_mr_size + 1;
	TH_LOG("max_mr_size 0x%llx, one MR maps up to 0x%llx",
	       (unsigned long long)self->dev.info.max_mr_size,
	       (unsigned long long)one_mr);
	for (i = 0; i < (unsigned int)n; i++) {
		int rc, err;

		buf_alloc_init(&a, self->dev.dev_index, 0, lens[i]);
		rc = ioctl(self->fd, KRDMA_BUF_ALLOC, &a);
		err = errno;
		EXPECT_EQ(-1, rc) {
			TH_LOG("length 0x%llx succeeded", (unsigned long long)lens[i]);
			kt_destroy(self->fd, a.handle);
		}
		if (rc) {
			EXPECT_TRUE(err == EINVAL || err == ENOMEM) {
				TH_LOG("length 0x%llx: %s", (unsigned long long)lens[i],
				       strerror(err));
			}
		}
	}
}

KRDMA_TEST_F(obj, buf_alloc_enodev)
{
	uint32_t idx[] = { krdma_snap_unused_index(&self->snap), UINT32_MAX };
	struct krdma_buf_alloc a;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(idx); i++) {
		buf_alloc_init(&a, idx[i], KRDMA_ACCESS_LOCAL_WRITE, 4096);
		EXPECT_ERRNO(ENODEV, ioctl(self->fd, KRDMA_BUF_ALLOC, &a),
			     "dev_index %u", idx[i]);
	}
}

/*
 * RLIMIT_MEMLOCK without CAP_IPC_LOCK: buffers are charged page by page,
 * DESTROY uncharges, and a mapping keeps the charge until munmap.
 */
/*
 * A session of a caller without CAP_IPC_LOCK, at a 64 KiB RLIMIT_MEMLOCK:
 * its fd, or minus the step that failed (10-12).
 */
static int memlock_open(void)
{
	struct rlimit rl = { 64 * 1024, 64 * 1024 };
	int fd;

	if (kt_drop_cap(14 /* CAP_IPC_LOCK */))
		return -10;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return -11;
	fd = krdma_open();
	return fd < 0 ? -12 : fd;
}

static int memlock_child(uint32_t dev_index)
{
	struct kt_buf a, b, c;
	void *map;
	int fd;

	fd = memlock_open();
	if (fd < 0)
		return -fd;
	if (!kt_buf_alloc(fd, dev_index, 0, 1 << 20, &a) || errno != ENOMEM)
		return 13;
	if (kt_buf_alloc(fd, dev_index, 0, 32 * 1024, &a))
		return 14;
	if (kt_buf_alloc(fd, dev_index, 0, 32 * 1024, &b))
		return 15;
	/* 64 KiB charged: one more page is over */
	if (!kt_buf_alloc(fd, dev_index, 0, 1, &c) || errno != ENOMEM)
		return 16;
	if (kt_destroy(fd, b.handle))
		return 17;
	if (kt_buf_alloc(fd, dev_index, 0, 32 * 1024, &b))
		return 18;
	/* a mapped buffer stays charged after DESTROY, until munmap */
	map = kt_buf_mmap(fd, &b);
	if (map == MAP_FAILED)
		return 19;
	if (kt_destroy(fd, b.handle))
		return 20;
	if (!kt_buf_alloc(fd, dev_index, 0, 32 * 1024, &c) || errno != ENOMEM)
		return 21;
	kt_buf_munmap(map, &b);
	if (kt_buf_alloc(fd, dev_index, 0, 32 * 1024, &c))
		return 22;
	/* closing the fd uncharges everything */
	close(fd);
	fd = krdma_open();
	if (fd < 0)
		return 23;
	if (kt_buf_alloc(fd, dev_index, 0, 64 * 1024, &a))
		return 24;
	close(fd);
	return 0;
}

/* The status of child @pid: 0 if it exited 0, else its step (or -1). */
static int child_step(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

KRDMA_TEST_F(obj, buf_alloc_memlock)
{
	pid_t pid = fork();
	int step;

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_child(self->dev.dev_index));
	step = child_step(pid);
	EXPECT_EQ(0, step) TH_LOG("child failed at step %d", step);
}

/*
 * Queue memory is charged as buffers are: a connection's (its QP's send
 * and receive queues and its CQ) and an SRQ's, estimated from the depths
 * the device granted, against RLIMIT_MEMLOCK without CAP_IPC_LOCK.  A
 * create past it is ENOMEM and leaves nothing charged; DESTROY and close
 * uncharge.
 */
static int queues_memlock_child(const struct kt_dev *dev)
{
	struct krdma_qp_caps deep = { .max_send_wr = 4096, .max_recv_wr = 4096 };
	struct krdma_qp_caps small = { .max_send_wr = 16, .max_recv_wr = 16 };
	struct krdma_srq_create sc = {
		.size = sizeof(sc), .dev_index = dev->dev_index,
		.max_wr = 4096, .max_sge = 1,
	};
	struct kt_conn c;
	long base, held;
	int fd;

	fd = memlock_open();
	if (fd < 0)
		return -fd;
	base = kt_vm_pin_kb();
	if (base < 0)
		return 13;
	/* 4096 + 4096 work requests and their CQ: far more than 64 KiB */
	if (!kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &deep, &c) ||
	    errno != ENOMEM)
		return 14;
	if (kt_vm_pin_kb() != base)
		return 15;
	/* 4096 receives */
	if (!ioctl(fd, KRDMA_SRQ_CREATE, &sc) || errno != ENOMEM)
		return 16;
	if (kt_vm_pin_kb() != base)
		return 17;
	/* small queues fit, and are charged until destroyed */
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &small, &c))
		return 18;
	held = kt_vm_pin_kb();
	if (held <= base)
		return 19;
	sc.max_wr = 16;
	if (ioctl(fd, KRDMA_SRQ_CREATE, &sc))
		return 20;
	if (kt_vm_pin_kb() <= held)
		return 21;
	if (kt_destroy(fd, sc.handle) || kt_vm_pin_kb() != held)
		return 22;
	if (kt_destroy(fd, c.handle) || kt_vm_pin_kb() != base)
		return 23;
	/* and until their session is closed */
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &small, &c))
		return 24;
	close(fd);
	if (kt_vm_pin_kb() != base)
		return 25;
	return 0;
}

KRDMA_TEST_F(obj, queues_memlock)
{
	pid_t pid = fork();
	int step;

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(queues_memlock_child(&self->dev));
	step = child_step(pid);
	EXPECT_EQ(0, step) TH_LOG("child failed at step %d", step);
}

#define MAX_OBJECTS_PER_USER "/sys/module/krdma/parameters/max_objects_per_user"
#define OBJECTS_LIMIT 4

/*
 * As @uid, up to the limit of objects (buffers) over two sessions; past
 * it, every create is EDQUOT; DESTROY and close give objects back.  Once
 * at the limit, says so on @ready and holds it until @hold is closed.
 * 0, or the step that failed.
 */
static int objects_child(uid_t uid, const struct kt_dev *dev, int ready,
			 int hold)
{
	struct krdma_srq_create sc = {
		.size = sizeof(sc), .dev_index = dev->dev_index,
	};
	struct kt_buf b[OBJECTS_LIMIT], x;
	struct kt_conn c;
	int fd[2], i;
	char byte;

	if (kt_become_user(uid))
		return 10;
	fd[0] = krdma_open();
	fd[1] = krdma_open();
	if (fd[0] < 0 || fd[1] < 0)
		return 11;
	for (i = 0; i < OBJECTS_LIMIT; i++)
		if (kt_buf_alloc(fd[i % 2], dev->dev_index, 0, 4096, &b[i]))
			return 12;
	/* the user's, in either session, of any type */
	if (!kt_buf_alloc(fd[0], dev->dev_index, 0, 4096, &x) ||
	    errno != EDQUOT)
		return 13;
	if (!kt_buf_alloc(fd[1], dev->dev_index, 0, 4096, &x) ||
	    errno != EDQUOT)
		return 14;
	if (!ioctl(fd[0], KRDMA_SRQ_CREATE, &sc) || errno != EDQUOT)
		return 15;
	if (!kt_conn_create(fd[1], dev, KRDMA_TRANSPORT_RC, 0, NULL, &c) ||
	    errno != EDQUOT)
		return 16;
	/* one destroyed, one more may be made */
	if (kt_destroy(fd[0], b[0].handle))
		return 17;
	if (kt_buf_alloc(fd[1], dev->dev_index, 0, 4096, &b[0]))
		return 18;
	if (ready >= 0) {
		if (write(ready, "r", 1) != 1)
			return 19;
		if (read(hold, &byte, 1) != 0)
			return 20;
	}
	/* fd[0] held one: closed, it gives it back */
	close(fd[0]);
	if (kt_buf_alloc(fd[1], dev->dev_index, 0, 4096, &x))
		return 21;
	if (!kt_buf_alloc(fd[1], dev->dev_index, 0, 4096, &x) ||
	    errno != EDQUOT)
		return 22;
	close(fd[1]);
	return 0;
}

/*
 * max_objects_per_user: each user's objects, over all its sessions, are
 * limited (EDQUOT past it), another user's count apart, and a session
 * opened with CAP_SYS_ADMIN is not limited.
 */
KRDMA_TEST_F_TIMEOUT(obj, objects_per_user_limit, 60)
{
	char old[16] = "", byte;
	struct kt_buf b[2 * OBJECTS_LIMIT];
	int ready[2], hold[2], i;
	pid_t a, other;

	if (geteuid())
		SKIP(return, "needs root, to act as two other users");
	ASSERT_OK(kt_read_file(MAX_OBJECTS_PER_USER, old, sizeof(old)));
	ASSERT_OK(pipe(ready));
	ASSERT_OK(pipe(hold));
	ASSERT_OK(kt_write_file(MAX_OBJECTS_PER_USER, "4"));
	a = fork();
	if (!a) {
		close(ready[0]);
		close(hold[1]);
		_exit(objects_child(65534, &self->dev, ready[1], hold[0]));
	}
	close(ready[1]);
	close(hold[0]);
	/* one user at its limit: not another's */
	EXPECT_EQ(1, read(ready[0], &byte, 1));
	other = fork();
	if (!other)
		_exit(objects_child(65533, &self->dev, -1, -1));
	EXPECT_EQ(0, child_step(other));
	/* nor a CAP_SYS_ADMIN opener's */
	for (i = 0; i < 2 * OBJECTS_LIMIT; i++)
		EXPECT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 4096,
				       &b[i]));
	close(hold[1]);
	EXPECT_EQ(0, child_step(a));
	close(ready[0]);
	EXPECT_OK(kt_write_file(MAX_OBJECTS_PER_USER, old));
	for (i = 0; i < 2 * OBJECTS_LIMIT; i++)
		EXPECT_OK(kt_destroy(self->fd, b[i].handle));
}

#define RDMACG_NAME "krdma-test-rdma"
#define RDMACG_LIMIT 3

/* The child of rdma_cgroup_hca_object, in cgroup @cg: 0, or its step. */
static int rdmacg_child(const struct kt_dev *dev, const char *cg)
{
	const char *name = dev->info.name;
	struct kt_buf b[RDMACG_LIMIT + 1], x;
	char path[512], max[128];
	struct kt_conn c;
	int fd, i;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (kt_write_file(path, "0"))
		return 1;
	fd = krdma_open();
	if (fd < 0)
		return 2;
	for (i = 0; i < RDMACG_LIMIT; i++)
		if (kt_buf_alloc(fd, dev->dev_index, 0, 4096, &b[i]))
			return 3;
	/* one past rdma.max, a buffer or a connection: nothing is made */
	if (!kt_buf_alloc(fd, dev->dev_index, 0, 4096, &x) || errno != EAGAIN)
		return 4;
	if (!kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &c) ||
	    errno != EAGAIN)
		return 5;
	if (kt_rdmacg_objects(cg, name) != RDMACG_LIMIT)
		return 6;
	/* one destroyed makes room for one, a connection */
	if (kt_destroy(fd, b[0].handle) ||
	    kt_rdmacg_objects(cg, name) != RDMACG_LIMIT - 1)
		return 7;
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &c) ||
	    kt_rdmacg_objects(cg, name) != RDMACG_LIMIT)
		return 8;
	if (!kt_buf_alloc(fd, dev->dev_index, 0, 4096, &x) || errno != EAGAIN)
		return 9;
	/* the session's end uncharges them all */
	close(fd);
	if (kt_rdmacg_objects(cg, name) != 0)
		return 10;
	/* a higher limit lets more be made */
	snprintf(path, sizeof(path), "%s/rdma.max", cg);
	snprintf(max, sizeof(max), "%s hca_object=%d", name, RDMACG_LIMIT + 1);
	if (kt_write_file(path, max))
		return 11;
	fd = krdma_open();
	if (fd < 0)
		return 12;
	for (i = 0; i < RDMACG_LIMIT + 1; i++)
		if (kt_buf_alloc(fd, dev->dev_index, 0, 4096, &b[i]))
			return 13;
	if (kt_rdmacg_objects(cg, name) != RDMACG_LIMIT + 1)
		return 14;
	for (i = 0; i < RDMACG_LIMIT + 1; i++)
		if (kt_destroy(fd, b[i].handle))
			return 15;
	if (kt_rdmacg_objects(cg, name) != 0)
		return 16;
	close(fd);
	return 0;
}

/*
 * The rdma cgroup: each object holding verbs objects on a device is one
 * hca_object of the creating task's cgroup, as uverbs charges; past
 * rdma.max a create is EAGAIN, and what is destroyed is uncharged.
 */
KRDMA_TEST_F_TIMEOUT(obj, rdma_cgroup_hca_object, 60)
{
	char root[256], cg[320], path[400], max[128];
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root, for a cgroup");
	if (kt_cgroup2_root(root, sizeof(root), "rdma"))
		SKIP(return, "no cgroup v2 with the rdma controller");
	snprintf(cg, sizeof(cg), "%s/%s", root, RDMACG_NAME);
	ASSERT_TRUE(!mkdir(cg, 0755) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/rdma.max", cg);
	snprintf(max, sizeof(max), "%s hca_object=%d", self->dev.info.name,
		 RDMACG_LIMIT);
	ASSERT_OK(kt_write_file(path, max));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(rdmacg_child(&self->dev, cg));
	EXPECT_EQ(0, child_step(pid));
	EXPECT_EQ(0, kt_rdmacg_objects(cg, self->dev.info.name));
	rmdir(cg);
}

/* ------------------------------------------------------------------------
 * KRDMA_BUF_RW
 */

KRDMA_TEST_F(obj, buf_rw_roundtrip)
{
	/* 3 MiB + 5: more than one MR page list of 4 KiB pages, so 8 KiB chunks */
	const uint64_t len = (3ull << 20) + 5;
	const uint64_t offs[] = { 0, 1, 4095, 8191, 8192, len - 20000, len - 1 };
	struct kt_buf b;
	uint8_t *in, *out;
	unsigned int i;

	in = malloc(len);
	out = malloc(len);
	ASSERT_TRUE(in && out);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, len, &b));
	kt_fill(in, len, 1);
	ASSERT_OK(kt_buf_write(self->fd, b.handle, 0, in, len));
	ASSERT_OK(kt_buf_read(self->fd, b.handle, 0, out, len));
	EXPECT_EQ(0, memcmp(in, out, len));
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		uint64_t n = len - offs[i] < 20000 ? len - offs[i] : 20000;

		kt_fill(in, n, 100 + i);
		ASSERT_OK(kt_buf_write(self->fd, b.handle, offs[i], in, n));
		memset(out, 0, n);
		ASSERT_OK(kt_buf_read(self->fd, b.handle, offs[i], out, n));
		EXPECT_EQ(0, memcmp(in, out, n)) {
			TH_LOG("offset %llu", (unsigned long long)offs[i]);
		}
	}
	/* zero bytes at the very end is fine */
	EXPECT_OK(kt_buf_read(self->fd, b.handle, len, out, 0));
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	free(in);
	free(out);
}

KRDMA_TEST_F(obj, buf_rw_beyond_end)
{
	const uint64_t len = 5000;
	struct {
		uint64_t off, n;
	} bad[] = { { 0, len + 1 }, { len, 1 }, { len + 1, 0 }, { 4096, 905 },
		    { 1ull << 32, 1 }, { 1, len } };
	struct kt_buf b;
	uint8_t *p;
	unsigned int i, w;

	p = calloc(1, 2 * len);
	ASSERT_NE(NULL, p);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, len, &b));
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		for (w = 0; w < 2; w++)
			EXPECT_ERRNO(EINVAL, kt_buf_rw(self->fd, b.handle, bad[i].off,
						       p, bad[i].n, w),
				     "offset %llu length %llu %s",
				     (unsigned long long)bad[i].off,
				     (unsigned long long)bad[i].n, w ? "write" : "read");
	free(p);
}

KRDMA_TEST_F(obj, buf_rw_overflow)
{
	struct {
		uint64_t off, n;
	} bad[] = { { UINT64_MAX, 2 }, { 1, UINT64_MAX }, { UINT64_MAX, UINT64_MAX },
		    { 4096, UINT64_MAX - 4095 }, { UINT64_MAX - 4095, 4096 } };
	struct kt_buf b;
	uint8_t p[16];
	unsigned int i, w;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 8192, &b));
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		for (w = 0; w < 2; w++)
			EXPECT_ERRNO(EINVAL, kt_buf_rw(self->fd, b.handle, bad[i].off,
						       p, bad[i].n, w),
				     "offset 0x%llx length 0x%llx",
				     (unsigned long long)bad[i].off,
				     (unsigned long long)bad[i].n);
}

KRDMA_TEST_F(obj, buf_rw_unknown_handle)
{
	uint32_t handles[] = { 0, 12345, 0x7fffffff, UINT32_MAX };
	uint8_t p[16];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(handles); i++)
		EXPECT_ERRNO(ENOENT, kt_buf_read(self->fd, handles[i], 0, p, 16),
			     "handle %u", handles[i]);
}

KRDMA_TEST_F(obj, buf_rw_conn_handle)
{
	struct kt_conn c;
	uint32_t ah;
	uint8_t p[16];

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UD, 0,
				 NULL, &c));
	EXPECT_ERRNO(ENOENT, kt_buf_read(self->fd, c.handle, 0, p, 16));
	EXPECT_ERRNO(ENOENT, kt_buf_write(self->fd, c.handle, 0, p, 16));
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah));
	EXPECT_ERRNO(ENOENT, kt_buf_read(self->fd, ah, 0, p, 16));
}

KRDMA_TEST_F(obj, buf_rw_destroyed_handle)
{
	struct kt_buf b;
	uint8_t p[16];

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 16, &b));
	ASSERT_OK(kt_destroy(self->fd, b.handle));
	EXPECT_ERRNO(ENOENT, kt_buf_read(self->fd, b.handle, 0, p, 16));
}

KRDMA_TEST_F(obj, buf_rw_unknown_flags)
{
	struct krdma_buf_rw rw;
	struct kt_buf b;
	uint8_t p[16];
	unsigned int bit;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 16, &b));
	for (bit = 1; bit < 32; bit++) {
		memset(&rw, 0, sizeof(rw));
		rw.size = sizeof(rw);
		rw.flags = 1u << bit;
		rw.handle = b.handle;
		rw.length = 16;
		rw.data_uptr = (uintptr_t)p;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BUF_RW, &rw),
			     "flag bit %u", bit);
	}
}

KRDMA_TEST_F(obj, buf_rw_reserved)
{
	struct krdma_buf_rw rw;
	struct kt_buf b;
	uint8_t p[16];

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 16, &b));
	memset(&rw, 0, sizeof(rw));
	rw.size = sizeof(rw);
	rw.handle = b.handle;
	rw.length = 16;
	rw.data_uptr = (uintptr_t)p;
	rw.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_RW, &rw));
}

KRDMA_TEST_F(obj, buf_rw_efault)
{
	struct kt_buf b;
	void *ro;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 8192, &b));
	EXPECT_ERRNO(EFAULT, kt_buf_read(self->fd, b.handle, 0, NULL, 16));
	EXPECT_ERRNO(EFAULT, kt_buf_write(self->fd, b.handle, 0, NULL, 16));
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_ERRNO(EFAULT, kt_buf_read(self->fd, b.handle, 0, ro, 8192));
	EXPECT_OK(kt_buf_write(self->fd, b.handle, 0, ro, 8192));
	munmap(ro, 8192);
}

/* ------------------------------------------------------------------------
 * mmap(2)
 */

/* BUF_RW and the mapping see the same bytes, chunk boundaries included. */
KRDMA_TEST_F(obj, mmap_coherent)
{
	const uint64_t lens[] = { 1, 4096, 3 * 4096 + 1, (3ull << 20) + 5 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		uint64_t len = lens[i];
		struct kt_buf b;
		uint8_t *map, *p;

		p = malloc(len);
		ASSERT_NE(NULL, p);
		ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
				       KRDMA_ACCESS_LOCAL_WRITE, len, &b));
		map = kt_buf_mmap(self->fd, &b);
		ASSERT_NE(MAP_FAILED, map) {
			TH_LOG("mmap of %llu bytes: %s", (unsigned long long)len,
			       strerror(errno));
		}
		/* BUF_RW in, mapping out */
		kt_fill(p, len, 10 + i);
		ASSERT_OK(kt_buf_write(self->fd, b.handle, 0, p, len));
		EXPECT_EQ(-1, kt_check(map, len, 10 + i)) {
			TH_LOG("len %llu: mapping differs from BUF_RW",
			       (unsigned long long)len);
		}
		/* mapping in, BUF_RW out */
		kt_fill(map, len, 20 + i);
		ASSERT_OK(kt_buf_read(self->fd, b.handle, 0, p, len));
		EXPECT_EQ(-1, kt_check(p, len, 20 + i)) {
			TH_LOG("len %llu: BUF_RW differs from the mapping",
			       (unsigned long long)len);
		}
		/* a second mapping of the same buffer is the same memory */
		{
			uint8_t *map2 = kt_buf_mmap(self->fd, &b);

			ASSERT_NE(MAP_FAILED, map2);
			map2[len - 1] ^= 0xff;
			EXPECT_EQ(map[len - 1], map2[len - 1]);
			kt_buf_munmap(map2, &b);
		}
		kt_buf_munmap(map, &b);
		EXPECT_OK(kt_destroy(self->fd, b.handle));
		free(p);
	}
}

KRDMA_TEST_F(obj, mmap_beyond_buffer)
{
	struct kt_buf b;
	void *p;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0,
			       2 * self->psz + 1, &b));
	/* 3 pages hold it: 4 pages is past the end */
	p = mmap(NULL, 4 * self->psz, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, b.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	if (p == MAP_FAILED) {
		EXPECT_EQ(EINVAL, errno);
	} else {
		munmap(p, 4 * self->psz);
	}
	p = mmap(NULL, 64 * self->psz, PROT_READ, MAP_SHARED, self->fd,
		 b.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	if (p == MAP_FAILED)
		EXPECT_EQ(EINVAL, errno);
	/* a part of it, from its start, is fine */
	p = mmap(NULL, self->psz, PROT_READ, MAP_SHARED, self->fd, b.mmap_offset);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, self->psz);
}

/* Offsets that name no buffer cannot be mapped. */
KRDMA_TEST_F(obj, mmap_not_a_buffer)
{
	struct kt_conn c;
	void *p;

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				 NULL, &c));
	p = mmap(NULL, self->psz, PROT_READ, MAP_SHARED, self->fd,
		 (off_t)c.handle * self->psz);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENOENT, errno);
	p = mmap(NULL, self->psz, PROT_READ, MAP_SHARED, self->fd,
		 (off_t)0x7ffff * self->psz);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENOENT, errno);
}

/* A private (copy-on-write) mapping would not see the device's writes. */
KRDMA_TEST_F(obj, mmap_private_refused)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE };
	struct kt_buf b;
	unsigned int i;
	void *p;

	/* one page (one chunk) and 2 MiB + 1 (more than one chunk) */
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, self->psz, &b));
	for (i = 0; i < 2; i++) {
		p = mmap(NULL, self->psz, prots[i], MAP_PRIVATE, self->fd,
			 b.mmap_offset);
		EXPECT_EQ(MAP_FAILED, p);
		EXPECT_EQ(EINVAL, errno);
		if (p != MAP_FAILED)
			munmap(p, self->psz);
	}
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0,
			       (2 << 20) + 1, &b));
	p = mmap(NULL, (2 << 20) + self->psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE, self->fd, b.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* the same offset shared still maps */
	p = mmap(NULL, self->psz, PROT_READ, MAP_SHARED, self->fd, b.mmap_offset);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, self->psz);
}

/*
 * The mapping keeps the pages: DESTROY of the buffer leaves the data
 * readable and writable through it until munmap, and nothing crashes.
 */
KRDMA_TEST_F(obj, mmap_survives_destroy)
{
	const uint64_t len = 5 * 4096 + 3;
	struct kt_buf b;
	uint8_t *map;
	int status;
	pid_t pid;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, len, &b));
	map = kt_buf_mmap(self->fd, &b);
	ASSERT_NE(MAP_FAILED, map);
	kt_fill(map, len, 77);
	ASSERT_OK(kt_destroy(self->fd, b.handle));
	EXPECT_ERRNO(ENOENT, kt_buf_read(self->fd, b.handle, 0, map, 1));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, b.handle));
	EXPECT_EQ(-1, kt_check(map, len, 77));
	kt_fill(map, len, 78);
	EXPECT_EQ(-1, kt_check(map, len, 78));

	/* a forked child shares the mapping, and still after the fd is closed */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(kt_check(map, len, 78) == -1 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(-1, kt_check(map, len, 78));
	/* munmap a part first, then the rest */
	munmap(map, self->psz);
	{
		uint64_t i, bad = 0;

		for (i = self->psz; i < len; i++)
			bad += map[i] != kt_pattern_byte(78, i);
		EXPECT_EQ(0ull, bad);
	}
	munmap(map + self->psz, len - self->psz);
}

/* The Rss of the mapping at @addr, from /proc/self/smaps, in bytes; or -1. */
static long long smaps_rss(const void *addr)
{
	unsigned long start, end;
	unsigned long long kb;
	long long rss = -1;
	bool in = false;
	char line[512];
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -1;
	while (rss < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start == (uintptr_t)addr;
		else if (in && sscanf(line, "Rss: %llu kB", &kb) == 1)
			rss = kb * 1024;
	}
	fclose(f);
	return rss;
}

/*
 * The mapping is of ordinary pages, not of PFNs: /proc/self/mem (GUP, as
 * ptrace and O_DIRECT) reads and writes the buffer through it, the
 * process's RSS counts it, and a forked child writes the same pages.
 */
KRDMA_TEST_F(obj, mmap_ordinary_pages)
{
	/* past 2 MiB: rxe's 512 MR pages make chunks of 4 pages */
	const uint64_t len = (5ull << 20) + 7;
	const long long maplen = (len + self->psz - 1) / self->psz * self->psz;
	struct kt_buf b;
	uint8_t *map, *p;
	int memfd, status;
	pid_t pid;

	if (kt_kernel_before(5, 11))
		SKIP(return, "before 5.11 krdma maps a buffer as PFNs");
	p = malloc(len);
	ASSERT_NE(NULL, p);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, len, &b));
	map = kt_buf_mmap(self->fd, &b);
	ASSERT_NE(MAP_FAILED, map);
	memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, memfd);

	/* the mapping in, /proc/self/mem out */
	kt_fill(map, len, 41);
	EXPECT_EQ((ssize_t)len, pread(memfd, p, len, (uintptr_t)map)) {
		TH_LOG("read of the mapping by /proc/self/mem: %s",
		       strerror(errno));
	}
	EXPECT_EQ(-1, kt_check(p, len, 41));
	/* /proc/self/mem in, BUF_RW and the mapping out */
	kt_fill(p, len, 42);
	EXPECT_EQ((ssize_t)len, pwrite(memfd, p, len, (uintptr_t)map)) {
		TH_LOG("write of the mapping by /proc/self/mem: %s",
		       strerror(errno));
	}
	memset(p, 0, len);
	ASSERT_OK(kt_buf_read(self->fd, b.handle, 0, p, len));
	EXPECT_EQ(-1, kt_check(p, len, 42));
	EXPECT_EQ(-1, kt_check(map, len, 42));
	close(memfd);
	/* every page is mapped from mmap(2) on */
	EXPECT_EQ(maplen, smaps_rss(map));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		kt_fill(map, len, 43);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_OK(kt_buf_read(self->fd, b.handle, 0, p, len));
	EXPECT_EQ(-1, kt_check(p, len, 43));
	kt_buf_munmap(map, &b);
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	free(p);
}

/* ------------------------------------------------------------------------
 * KRDMA_DESTROY
 */

KRDMA_TEST_F(obj, destroy_twice)
{
	struct kt_buf b;
	struct kt_conn c;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, b.handle));
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				 NULL, &c));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, c.handle));
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

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
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

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.handle = b.handle;
	d.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_DESTROY, &d));
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
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
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
			struct kt_conn c;

			ASSERT_OK(kt_conn_create(self->fd, &self->dev,
						 i % 3, i % 2 ? KRDMA_CONN_NOTIFY : 0,
						 NULL, &c));
			h = c.handle;
		} else {
			struct kt_buf b;

			ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
					       i % 2 ? KT_ACCESS_ALL : 0,
					       1 + (i % 7) * 3000, &b));
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
		EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, h));
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

	conn_pair(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_RC, NULL,
		  &a, &b);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 4096, &src));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 4096, &dst));
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, dst.handle, 0, 4096);
	ASSERT_OK(kt_post1(self->fd, b.handle, &wr));
	ASSERT_OK(kt_destroy(self->fd, dst.handle));
	/* reuse the memory for something else, with a pattern */
	{
		struct kt_buf other;
		uint8_t p[4096];

		ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 4096, &other));
		memset(p, 0x3c, sizeof(p));
		ASSERT_OK(kt_buf_write(self->fd, other.handle, 0, p, sizeof(p)));
		kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, src.handle, 0, 4096);
		ASSERT_OK(kt_post1(self->fd, a.handle, &wr));
		ASSERT_EQ(1, kt_poll_n(self->fd, b.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(1u, wc.wr_id);
		EXPECT_NE(0u, wc.status);
		TH_LOG("receive into a destroyed buffer: status %u", wc.status);
		ASSERT_EQ(1, kt_poll_n(self->fd, a.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(2u, wc.wr_id);
		EXPECT_NE(0u, wc.status);
		TH_LOG("its send: status %u", wc.status);
		ASSERT_OK(kt_buf_read(self->fd, other.handle, 0, p, sizeof(p)));
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

	conn_pair(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_RC, NULL,
		  &a, &b);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 1 << 20, &big));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       1 << 20, &dst));
	for (i = 0; i < 16; i++) {
		kt_wr_init(&wrs[i], i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], dst.handle, 0, 1 << 20);
	}
	ASSERT_OK(kt_post(self->fd, b.handle, wrs, 16, NULL));
	for (i = 0; i < 8; i++) {
		kt_wr_init(&wrs[i], 100 + i, i % 2 ? KRDMA_OP_SEND : KRDMA_OP_RDMA_WRITE,
			   KRDMA_WR_SIGNALED);
		kt_wr_sge(&wrs[i], big.handle, 0, 1 << 20);
		if (wrs[i].opcode == KRDMA_OP_RDMA_WRITE) {
			wrs[i].remote_addr = dst.addr;
			wrs[i].rkey = dst.rkey;
		}
	}
	ASSERT_OK(kt_post(self->fd, a.handle, wrs, 8, NULL));
	/* both ends go while data moves */
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	EXPECT_OK(kt_destroy(self->fd, a.handle));
	EXPECT_OK(kt_destroy(self->fd, big.handle));
	/* the device still works */
	conn_pair(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_RC, NULL,
		  &a, &b);
	kt_wr_init(&wrs[0], 7, KRDMA_OP_RECV, 0);
	ASSERT_OK(kt_post1(self->fd, b.handle, &wrs[0]));
	kt_wr_init(&wrs[0], 8, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	ASSERT_OK(kt_post1(self->fd, a.handle, &wrs[0]));
	{
		struct krdma_wc wc;

		ASSERT_EQ(1, kt_poll_n(self->fd, b.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(0u, wc.status);
	}
}

/* ------------------------------------------------------------------------
 * KRDMA_CONN_CREATE
 */

static void conn_create_init(struct krdma_conn_create *c, const struct kt_dev *d,
			     uint32_t transport)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->dev_index = d->dev_index;
	c->port_num = d->port_num;
	c->gid_index = d->gid_index;
	c->transport = transport;
}

KRDMA_TEST_F(obj, conn_create_outputs)
{
	struct krdma_conn_create c;
	struct krdma_conn_query q;
	uint32_t t;

	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		conn_create_init(&c, &self->dev, t);
		c.handle = c.qp_num = c.psn = c.lid = 0xdeadbeef;
		ASSERT_OK(ioctl(self->fd, KRDMA_CONN_CREATE, &c));
		EXPECT_NE(0u, c.handle);
		EXPECT_NE(0u, c.qp_num);
		EXPECT_GT(1u << 24, c.qp_num);
		EXPECT_GT(1u << 24, c.psn);
		if (self->dev.port.link_layer == KRDMA_LINK_LAYER_ETHERNET)
			EXPECT_EQ(0u, c.lid);
		EXPECT_EQ(0, memcmp(c.gid, self->dev.gid, 16));
		/* defaults filled in */
		EXPECT_LE(1u, c.caps.max_send_wr);
		EXPECT_LE(1u, c.caps.max_recv_wr);
		EXPECT_LE(1u, c.caps.max_send_sge);
		EXPECT_LE(1u, c.caps.max_recv_sge);
		EXPECT_LE(c.caps.max_send_wr + c.caps.max_recv_wr, c.caps.cq_depth);
		EXPECT_EQ(0u, c.srq_handle);

		ASSERT_OK(kt_conn_query(self->fd, c.handle, &q));
		EXPECT_EQ((__u32)KRDMA_CONN_RESET, q.state);
		EXPECT_EQ(t, q.transport);
		EXPECT_EQ(c.qp_num, q.qp_num);
		EXPECT_EQ(0u, q.dest_qp_num);
		/* no path before RTR; UD: the port's MTU bounds each message */
		EXPECT_EQ(t == KRDMA_TRANSPORT_UD ?
			  self->dev.port.active_mtu : 0u, q.path_mtu);
		EXPECT_EQ(0u, q.last_wc_status);
	}
}

/* What was asked for is granted (at least). */
KRDMA_TEST_F(obj, conn_create_caps_granted)
{
	struct krdma_conn_create c;

	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.caps.max_send_wr = 17;
	c.caps.max_recv_wr = 9;
	c.caps.max_send_sge = 3;
	c.caps.max_recv_sge = 2;
	c.caps.max_inline_data = 64;
	c.caps.cq_depth = 40;
	ASSERT_OK(ioctl(self->fd, KRDMA_CONN_CREATE, &c));
	EXPECT_LE(17u, c.caps.max_send_wr);
	EXPECT_LE(9u, c.caps.max_recv_wr);
	EXPECT_LE(3u, c.caps.max_send_sge);
	EXPECT_LE(2u, c.caps.max_recv_sge);
	EXPECT_LE(64u, c.caps.max_inline_data);
	EXPECT_LE(40u, c.caps.cq_depth);
	EXPECT_GE((__u32)KRDMA_MAX_SGE, c.caps.max_send_sge);
	TH_LOG("granted send_wr %u recv_wr %u send_sge %u recv_sge %u inline %u cq %u",
	       c.caps.max_send_wr, c.caps.max_recv_wr, c.caps.max_send_sge,
	       c.caps.max_recv_sge, c.caps.max_inline_data, c.caps.cq_depth);
}

KRDMA_TEST_F(obj, conn_create_bad_gid_index)
{
	struct krdma_port_info *p = &self->dev.port;
	struct krdma_conn_create c;
	uint32_t idx[4] = { p->gid_tbl_len, p->gid_tbl_len + 1000, UINT32_MAX };
	unsigned int i, n = 3;
	uint32_t k;

	/* and an empty slot inside the table, if there is one */
	for (k = 0; k < p->gid_tbl_len && n == 3; k++) {
		uint32_t g;
		bool used = false;

		for (g = 0; g < p->num_gids; g++)
			if (self->snap.gids[p->first_gid + g].gid_index == k)
				used = true;
		if (!used)
			idx[n++] = k;
	}
	for (i = 0; i < n; i++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.gid_index = idx[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "gid_index %u (table of %u)", idx[i], p->gid_tbl_len);
	}
}

KRDMA_TEST_F(obj, conn_create_bad_port)
{
	uint32_t ports[] = { 0, self->dev.info.phys_port_cnt + 1, 255, UINT32_MAX };
	struct krdma_conn_create c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ports); i++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.port_num = ports[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "port %u", ports[i]);
	}
}

KRDMA_TEST_F(obj, conn_create_bad_transport)
{
	uint32_t t[] = { 3, 4, 0x100, UINT32_MAX };
	struct krdma_conn_create c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		conn_create_init(&c, &self->dev, t[i]);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "transport %u", t[i]);
	}
}

KRDMA_TEST_F(obj, conn_create_caps_too_big)
{
	struct krdma_device_info *d = &self->dev.info;
	uint32_t max_ssge = d->max_send_sge < KRDMA_MAX_SGE ? d->max_send_sge : KRDMA_MAX_SGE;
	uint32_t max_rsge = d->max_recv_sge < KRDMA_MAX_SGE ? d->max_recv_sge : KRDMA_MAX_SGE;
	struct krdma_conn_create c;
	unsigned int f;

	for (f = 0; f < 6; f++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		switch (f) {
		case 0: c.caps.max_send_wr = d->max_qp_wr + 1; break;
		case 1: c.caps.max_recv_wr = d->max_qp_wr + 1; break;
		case 2: c.caps.max_send_sge = max_ssge + 1; break;
		case 3: c.caps.max_recv_sge = max_rsge + 1; break;
		case 4: c.caps.max_inline_data = d->max_inline_data + 1; break;
		case 5: c.caps.cq_depth = d->max_cqe + 1; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "caps field %u", f);
	}
	/* UINT32_MAX everywhere too */
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_UD);
	c.caps.max_send_wr = UINT32_MAX;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_UD);
	c.caps.max_send_sge = KRDMA_MAX_SGE + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
}

KRDMA_TEST_F(obj, conn_create_unknown_flags)
{
	struct krdma_conn_create c;
	unsigned int bit;

	for (bit = 2; bit < 32; bit++) {	/* NOTIFY, SRQ are known */
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "flag bit %u", bit);
	}
}

KRDMA_TEST_F(obj, conn_create_srq_handle)
{
	struct krdma_conn_create c;
	struct kt_buf b;

	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.srq_handle = b.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
	c.srq_handle = 12345;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
}

KRDMA_TEST_F(obj, conn_create_reserved)
{
	struct krdma_conn_create c;

	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
}

KRDMA_TEST_F(obj, conn_create_enodev)
{
	struct krdma_conn_create c;

	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.dev_index = krdma_snap_unused_index(&self->snap);
	EXPECT_ERRNO(ENODEV, ioctl(self->fd, KRDMA_CONN_CREATE, &c));
}

/* ------------------------------------------------------------------------
 * KRDMA_CONN_MODIFY / KRDMA_CONN_QUERY
 */

/* A fresh connection and a MODIFY towards itself, to be spoilt by the test. */
static void modify_setup(struct __test_metadata *_metadata,
			 FIXTURE_DATA(obj) *self, uint32_t transport,
			 struct kt_conn *c, struct krdma_conn_modify *m)
{
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, transport, 0, NULL, c));
	kt_modify_init(m, c, c);
}

static void rc_attrs(struct krdma_conn_modify *m, uint32_t access)
{
	m->flags = KRDMA_CONN_MODIFY_RC_ATTRS;
	m->timeout = 14;
	m->retry_cnt = 7;
	m->rnr_retry = 7;
	m->min_rnr_timer = 12;
	m->access = access;
}

/* After a refused MODIFY the connection is still in RESET and can connect. */
static void modify_still_usable(struct __test_metadata *_metadata,
				FIXTURE_DATA(obj) *self, struct kt_conn *c)
{
	struct krdma_conn_query q;

	ASSERT_OK(kt_conn_query(self->fd, c->handle, &q));
	EXPECT_EQ((__u32)KRDMA_CONN_RESET, q.state);
	EXPECT_OK(kt_conn_connect(self->fd, c, c));
	ASSERT_OK(kt_conn_query(self->fd, c->handle, &q));
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
}

KRDMA_TEST_F(obj, conn_modify_query_rts)
{
	struct kt_conn a, b;
	struct krdma_conn_query q;
	uint32_t t;

	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		conn_pair(_metadata, self->fd, &self->dev, t, NULL, &a, &b);
		ASSERT_OK(kt_conn_query(self->fd, a.handle, &q));
		EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
		EXPECT_EQ(t, q.transport);
		EXPECT_EQ(a.qp_num, q.qp_num);
		/* UD has no peer; its MTU is the port's */
		EXPECT_EQ(self->dev.port.active_mtu, q.path_mtu);
		if (t != KRDMA_TRANSPORT_UD) {
			EXPECT_EQ(b.qp_num, q.dest_qp_num);
		} else {
			EXPECT_EQ(0u, q.dest_qp_num);
		}
		EXPECT_EQ(0u, q.last_wc_status);
	}
}

KRDMA_TEST_F(obj, conn_modify_twice)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	ASSERT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	ASSERT_OK(kt_conn_query(self->fd, c.handle, &q));
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	ASSERT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

KRDMA_TEST_F(obj, conn_modify_path_mtu_invalid)
{
	uint32_t mtus[] = { 1, 100, 255, 257, 300, 1000, 1500, 3000, 8192, UINT32_MAX };
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int i;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (i = 0; i < ARRAY_SIZE(mtus); i++) {
		m.path_mtu = mtus[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "path_mtu %u", mtus[i]);
	}
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_path_mtu_above_active)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	uint32_t mtu;
	int n = 0;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (mtu = self->dev.port.active_mtu * 2; mtu <= 4096; mtu *= 2, n++) {
		m.path_mtu = mtu;
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "path_mtu %u over active %u", mtu,
			     self->dev.port.active_mtu);
	}
	if (!n)
		SKIP(return, "active MTU is 4096");
	modify_still_usable(_metadata, self, &c);
}

/* Every valid MTU up to the active one is taken and reported. */
KRDMA_TEST_F(obj, conn_modify_path_mtu_valid)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;
	uint32_t mtu;

	for (mtu = 256; mtu <= self->dev.port.active_mtu; mtu *= 2) {
		modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
		m.path_mtu = mtu;
		ASSERT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
		ASSERT_OK(kt_conn_query(self->fd, c.handle, &q));
		EXPECT_EQ(mtu, q.path_mtu);
		kt_destroy(self->fd, c.handle);
	}
}

KRDMA_TEST_F(obj, conn_modify_rc_attrs_without_flag)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 5; f++) {
		kt_modify_init(&m, &c, &c);
		switch (f) {
		case 0: m.timeout = 14; break;
		case 1: m.retry_cnt = 7; break;
		case 2: m.rnr_retry = 7; break;
		case 3: m.min_rnr_timer = 12; break;
		case 4: m.access = KRDMA_ACCESS_REMOTE_READ; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "field %u without RC_ATTRS", f);
	}
	modify_still_usable(_metadata, self, &c);
}

/* 24-bit QP numbers and PSNs, a 16-bit LID: more is refused, not cut */
KRDMA_TEST_F(obj, conn_modify_field_widths)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 4; f++) {
		kt_modify_init(&m, &c, &c);
		switch (f) {
		case 0: m.dest_qp_num = c.qp_num | 1u << 24; break;
		case 1: m.dest_psn = 1u << 24; break;
		case 2: m.dest_psn = UINT32_MAX; break;
		case 3: m.dest_lid = 1u << 16; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "case %u", f);
	}
	modify_still_usable(_metadata, self, &c);
}

/* The struct's own checks come before the handle's lookup. */
KRDMA_TEST_F(obj, conn_modify_checks_before_lookup)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.handle = 0xfffff;
	m.flags = 1u << 7;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	m.flags = 0;
	m.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	m.__reserved = 0;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_timeout_zero)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	rc_attrs(&m, KT_ACCESS_RC);
	m.timeout = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_rc_attrs_range)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 8; f++) {
		kt_modify_init(&m, &c, &c);
		rc_attrs(&m, KT_ACCESS_RC);
		switch (f) {
		case 0: m.timeout = 32; break;
		case 1: m.timeout = 255; break;
		case 2: m.retry_cnt = 8; break;
		case 3: m.retry_cnt = 255; break;
		case 4: m.rnr_retry = 8; break;
		case 5: m.rnr_retry = 255; break;
		case 6: m.min_rnr_timer = 32; break;
		case 7: m.min_rnr_timer = 255; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "case %u", f);
	}
	/* the edges are fine */
	kt_modify_init(&m, &c, &c);
	rc_attrs(&m, KT_ACCESS_RC);
	m.timeout = 31;
	m.retry_cnt = 0;
	m.rnr_retry = 0;
	m.min_rnr_timer = 31;
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

KRDMA_TEST_F(obj, conn_modify_access_beyond_transport)
{
	struct {
		uint32_t transport, access;
	} bad[] = {
		{ KRDMA_TRANSPORT_RC, KRDMA_ACCESS_LOCAL_WRITE },
		{ KRDMA_TRANSPORT_RC, KRDMA_ACCESS_MW_BIND },
		{ KRDMA_TRANSPORT_RC, 1u << 5 },
		{ KRDMA_TRANSPORT_RC, UINT32_MAX },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_READ },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_ATOMIC },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ },
		{ KRDMA_TRANSPORT_UD, KRDMA_ACCESS_REMOTE_WRITE },
		{ KRDMA_TRANSPORT_UD, KRDMA_ACCESS_REMOTE_READ },
	};
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		modify_setup(_metadata, self, bad[i].transport, &c, &m);
		rc_attrs(&m, bad[i].access);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "transport %u access 0x%x", bad[i].transport,
			     bad[i].access);
		kt_destroy(self->fd, c.handle);
	}
	/* what each transport has is fine */
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UC, &c, &m);
	rc_attrs(&m, KRDMA_ACCESS_REMOTE_WRITE);
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	rc_attrs(&m, 0);
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

KRDMA_TEST_F(obj, conn_modify_rd_atomic_too_big)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.max_rd_atomic = self->dev.info.max_qp_init_rd_atom + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	kt_modify_init(&m, &c, &c);
	m.max_dest_rd_atomic = self->dev.info.max_qp_rd_atom + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_unknown_flags)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int bit;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (bit = 1; bit < 32; bit++) {
		kt_modify_init(&m, &c, &c);
		m.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "flag bit %u", bit);
	}
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_reserved)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_unknown_handle)
{
	struct kt_conn c = {};
	struct krdma_conn_modify m;
	struct kt_buf b;

	kt_modify_init(&m, &c, &c);
	m.handle = 424242;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	m.handle = b.handle;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

/* UD ignores the destination fields. */
KRDMA_TEST_F(obj, conn_modify_ud_ignores_dest)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	m.dest_qp_num = 0xffffff;
	m.dest_psn = UINT32_MAX;
	m.dest_lid = 77;
	memset(m.dest_gid, 0xee, 16);
	ASSERT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	ASSERT_OK(kt_conn_query(self->fd, c.handle, &q));
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
}

/* A controlled Q_Key (bit 31) needs CAP_NET_RAW. */
static int qkey_child(const struct kt_dev *dev)
{
	struct krdma_conn_modify m;
	struct kt_conn c;
	int fd;

	if (kt_drop_cap(13 /* CAP_NET_RAW */))
		return 10;
	fd = krdma_open();
	if (fd < 0)
		return 11;
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_UD, 0, NULL, &c))
		return 12;
	kt_modify_init(&m, &c, NULL);
	m.qkey = 0x80000001u;
	if (!ioctl(fd, KRDMA_CONN_MODIFY, &m))
		return 13;
	if (errno != EPERM)
		return 14;
	m.qkey = 0x7fffffff;
	if (ioctl(fd, KRDMA_CONN_MODIFY, &m))
		return 15;
	close(fd);
	return 0;
}

KRDMA_TEST_F(obj, conn_modify_qkey_needs_cap_net_raw)
{
	struct krdma_conn_modify m;
	struct kt_conn c;
	int status;
	pid_t pid;

	/* root may */
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	m.qkey = 0x80000001u;
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(qkey_child(&self->dev));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("qkey child failed at step %d", WEXITSTATUS(status));
	}
}

KRDMA_TEST_F(obj, conn_query_errors)
{
	struct krdma_conn_query q;
	struct kt_conn c;
	struct kt_buf b;
	unsigned int bit;

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				 NULL, &c));
	for (bit = 0; bit < 32; bit++) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.handle = c.handle;
		q.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_QUERY, &q));
	}
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.handle = c.handle;
	q.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_QUERY, &q));
	EXPECT_ERRNO(ENOENT, kt_conn_query(self->fd, 999999, &q));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	EXPECT_ERRNO(ENOENT, kt_conn_query(self->fd, b.handle, &q));
}

/* ------------------------------------------------------------------------
 * KRDMA_AH_CREATE
 */

KRDMA_TEST_F(obj, ah_create_not_ud)
{
	struct kt_conn c;
	uint32_t ah, t;

	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UC; t++) {
		ASSERT_OK(kt_conn_create(self->fd, &self->dev, t, 0, NULL, &c));
		EXPECT_ERRNO(EINVAL, kt_ah_create(self->fd, c.handle, self->dev.gid, &ah),
			     "transport %u", t);
	}
}

KRDMA_TEST_F(obj, ah_create_unknown_conn)
{
	struct kt_buf b;
	uint32_t ah;

	EXPECT_ERRNO(ENOENT, kt_ah_create(self->fd, 0, self->dev.gid, &ah));
	EXPECT_ERRNO(ENOENT, kt_ah_create(self->fd, 777777, self->dev.gid, &ah));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &b));
	EXPECT_ERRNO(ENOENT, kt_ah_create(self->fd, b.handle, self->dev.gid, &ah));
}

KRDMA_TEST_F(obj, ah_create_flags_reserved)
{
	struct krdma_ah_create a;
	struct kt_conn c;
	unsigned int bit;

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UD, 0,
				 NULL, &c));
	for (bit = 0; bit < 32; bit++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.conn_handle = c.handle;
		memcpy(a.dest_gid, self->dev.gid, 16);
		a.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_AH_CREATE, &a),
			     "flag bit %u", bit);
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.conn_handle = c.handle;
	memcpy(a.dest_gid, self->dev.gid, 16);
	a.__reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_AH_CREATE, &a));
	/* a LID is 16 bits: more is refused, not cut */
	a.__reserved = 0;
	a.dest_lid = 1u << 16;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_AH_CREATE, &a));
}

/* An AH is a handle of its own: destroyed, posting with it is ENOENT. */
KRDMA_TEST_F(obj, ah_create_destroy)
{
	struct kt_conn c;
	struct krdma_wr wr;
	uint32_t ah, ah2;

	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL, &c);
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah));
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah2));
	EXPECT_NE(ah, ah2);
	EXPECT_NE(c.handle, ah);
	ASSERT_OK(kt_destroy(self->fd, ah));
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr.ah_handle = ah;
	wr.remote_qpn = c.qp_num;
	EXPECT_ERRNO(ENOENT, kt_post1(self->fd, c.handle, &wr));
	/* an AH outlives the connection it was made on */
	ASSERT_OK(kt_destroy(self->fd, c.handle));
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL, &c);
	wr.ah_handle = ah2;
	wr.remote_qpn = c.qp_num;
	EXPECT_OK(kt_post1(self->fd, c.handle, &wr));
	{
		struct krdma_wc wc;

		ASSERT_EQ(1, kt_poll_n(self->fd, c.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(0u, wc.status);
	}
}

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
	const char *why = krdma_unavailable();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	if (kt_dev_pick(self->fd, NULL, &self->dev))
		SKIP(return, "no device with an active port");
	conn_pair(_metadata, self->fd, &self->dev, variant->transport,
		  &post_caps, &self->a, &self->b);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       65536, &self->buf));
	if (variant->transport == KRDMA_TRANSPORT_UD)
		ASSERT_OK(kt_ah_create(self->fd, self->a.handle, self->b.gid,
				       &self->ah));
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
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, &wr, 0, NULL));
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
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, UINT32_MAX, NULL));
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
	ASSERT_OK(ioctl(self->fd, KRDMA_POST, &p));
	EXPECT_EQ(2u, p.num_wrs);
	memset(e, 0, 2 * stride);
	good_send(self, w0, 5, 0);
	good_send(self, w1, 6, 0);
	p.handle = self->a.handle;
	p.num_wrs = 2;
	ASSERT_OK(ioctl(self->fd, KRDMA_POST, &p));
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
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p));
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
	ASSERT_OK(kt_post1(self->fd, self->b.handle, &rwr));
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
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p));
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
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p));
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
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_POST, &p));
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
	ASSERT_OK(ioctl(self->fd, KRDMA_POST, &p));
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
	ASSERT_OK(ioctl(self->fd, KRDMA_POST, &p));
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
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_POST, &p));
	EXPECT_EQ(1u, p.num_wrs);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &rwc, 1, POLL_MS));
	EXPECT_EQ(11u, rwc.wr_id);
}

KRDMA_TEST_F(post, unknown_conn)
{
	struct krdma_wr wr;

	good_send(self, &wr, 1, 8);
	EXPECT_ERRNO(ENOENT, kt_post(self->fd, 999999, &wr, 1, NULL));
	EXPECT_ERRNO(ENOENT, kt_post(self->fd, self->buf.handle, &wr, 1, NULL));
	EXPECT_ERRNO(ENOENT, kt_post(self->fd, 0, &wr, 1, NULL));
}

KRDMA_TEST_F(post, efault)
{
	struct krdma_post p = {
		.size = sizeof(p),
		.handle = self->a.handle,
		.num_wrs = 1,
		.wr_entry_size = sizeof(struct krdma_wr),
	};

	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_POST, &p));
	EXPECT_EQ(0u, p.num_wrs);	/* WR 0 was the one refused */
	p.num_wrs = 1;
	p.wrs_uptr = (uintptr_t)1;
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_POST, &p));
}

KRDMA_TEST_F(post, mixed_chain)
{
	struct krdma_wr wrs[2];
	uint32_t acc = 99;

	good_send(self, &wrs[0], 1, 8);
	kt_wr_init(&wrs[1], 2, KRDMA_OP_RECV, 0);
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, 2, &acc));
	EXPECT_EQ(1u, acc);
	kt_wr_init(&wrs[0], 3, KRDMA_OP_RECV, 0);
	good_send(self, &wrs[1], 4, 8);
	acc = 99;
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, 2, &acc));
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
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       4096, &other));
	ASSERT_OK(kt_destroy(self->fd, other.handle));
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
		    (atomic && self->dev.info.atomic_cap == KRDMA_ATOMIC_NONE))
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
	ASSERT_EQ(0, kc_events(self->fd, ev, ARRAY_SIZE(ev), 0));
	usleep(5200 * 1000);
	kmsg = kt_kmsg_open();
	ASSERT_LE(0, kmsg);
	kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->buf.handle, 0, 8);
	wr.remote_addr = self->buf.addr;
	wr.rkey = self->buf.rkey ^ 0xff;
	ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, wc.status);
	/* later failures (a flushed WR) tell nothing new */
	wr.wr_id = 2;
	wr.rkey = self->buf.rkey;
	ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
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
	EXPECT_TRUE(kt_kmsg_find(kmsg, "krdma: connection %u of krdma_objects[%d] in error: remote access error",
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
	EXPECT_ERRNO(EINVAL, kt_post1(self->fd, self->a.handle, &wr));
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
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_POST, &p));
	EXPECT_EQ(0u, p.num_wrs);
	p.handle = self->a.handle;
	p.num_wrs = 1;
	p.flags = 1u << 9;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_POST, &p));
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
	ASSERT_OK(kt_post(self->fd, self->b.handle, &rwr, 1, &acc));
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
		EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, 2, &acc),
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
	EXPECT_ERRNO(ENOENT, kt_post(self->fd, self->a.handle, wrs, 4, &acc));
	EXPECT_EQ(2u, acc);
	acc = 99;
	wrs[2].sge[0].buf_handle = self->buf.handle;
	wrs[3].opcode = KRDMA_OP_MAX;
	EXPECT_ERRNO(EINVAL, kt_post(self->fd, self->a.handle, wrs, 4, &acc));
	EXPECT_EQ(3u, acc);
	nothing_posted(_metadata, self);

	/* receives: a refused chain leaves no RECV behind */
	kt_wr_init(&wrs[0], 20, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[0], self->buf.handle, 0, 64);
	kt_wr_init(&wrs[1], 21, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[1], 424242, 0, 64);
	acc = 99;
	EXPECT_ERRNO(ENOENT, kt_post(self->fd, self->b.handle, wrs, 2, &acc));
	EXPECT_EQ(1u, acc);
	kt_wr_init(&rwr, 22, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, self->buf.handle, 0, 4096);
	ASSERT_OK(kt_post1(self->fd, self->b.handle, &rwr));
	good_send(self, &wrs[0], 23, 8);
	ASSERT_OK(kt_post1(self->fd, self->a.handle, &wrs[0]));
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
		ASSERT_OK(kt_post(self->fd, self->b.handle, wrs, n, &acc));
		EXPECT_EQ(n, acc);
		for (i = 0; i < n; i++)
			good_send(self, &wrs[i], 1000 * n + i, 0);
		ASSERT_OK(kt_post(self->fd, self->a.handle, wrs, n, &acc));
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
		ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
	}
	/* done on the device, but the CQ holds their completions */
	let_complete();
	quiet_send(self, &wr, depth, KRDMA_WR_SIGNALED);
	EXPECT_ERRNO(ENOMEM, kt_post(self->fd, self->a.handle, &wr, 1, &acc));
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->a.handle, depth);
	ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
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
	ASSERT_OK(kt_post(self->fd, self->a.handle, wrs, depth, &acc));
	let_complete();
	EXPECT_ERRNO(ENOMEM, kt_post(self->fd, self->a.handle, wrs, 1, &acc));
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->a.handle, 1);
	/* all of them done: room for a whole queue again */
	for (i = 0; i < half; i++)
		quiet_send(self, &wrs[i], 100 + i, KRDMA_WR_SIGNALED);
	ASSERT_OK(kt_post(self->fd, self->a.handle, wrs, half, &acc));
	/* a chain longer than the room left: the part that fits goes */
	for (i = 0; i < depth; i++)
		quiet_send(self, &wrs[i], 200 + i, KRDMA_WR_SIGNALED);
	EXPECT_ERRNO(ENOMEM, kt_post(self->fd, self->a.handle, wrs, depth,
				     &acc));
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
	ASSERT_OK(kt_post(self->fd, self->b.handle, wrs, depth, &acc));
	for (i = 0; i < depth; i++)
		good_send(self, &wrs[i], 100 + i, 0);
	ASSERT_OK(kt_post(self->fd, self->a.handle, wrs, depth, &acc));
	reap_ok(_metadata, self->fd, self->a.handle, depth);
	/* every receive was consumed; their completions wait on b's CQ */
	let_complete();
	kt_wr_init(&wrs[0], 999, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wrs[0], self->buf.handle, 0, 4096);
	EXPECT_ERRNO(ENOMEM, kt_post(self->fd, self->b.handle, wrs, 1, &acc));
	EXPECT_EQ(0u, acc);
	reap_ok(_metadata, self->fd, self->b.handle, depth);
	ASSERT_OK(kt_post1(self->fd, self->b.handle, &wrs[0]));
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
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_POLL, &p));
	p.handle = self->buf.handle;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_POLL, &p));
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
		ASSERT_OK(kt_post1(self->fd, self->b.handle, &wr));
		good_send(self, &wr, 60 + i, 0);
		ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
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
	ASSERT_OK(ioctl(self->fd, KRDMA_POLL, &p));
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
	ASSERT_OK(kt_post1(self->fd, self->b.handle, &wr));
	good_send(self, &wr, 2, 0);
	ASSERT_OK(kt_post1(self->fd, self->a.handle, &wr));
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.handle = self->a.handle;
	p.num_wcs = 1;
	p.wc_entry_size = sizeof(struct krdma_wc);
	p.timeout_ms = POLL_MS;
	p.wcs_uptr = 8;
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_POLL, &p));
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
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &caps, &a) ||
	    kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &caps, &b) ||
	    kt_conn_connect(fd, &a, &b) || kt_conn_connect(fd, &b, &a))
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
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, KRDMA_CONN_NOTIFY, NULL, &n1) ||
	    kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, KRDMA_CONN_NOTIFY, NULL, &n2) ||
	    kt_conn_connect(fd, &n1, &n2) || kt_conn_connect(fd, &n2, &n1))
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

	conn_pair(_metadata, fd, dev, KRDMA_TRANSPORT_RC, NULL, &a, &b);
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
	const char *why = krdma_unavailable();
	struct kt_buf b;
	int i;

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
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
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_RC, NULL, &rc);
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL, &ud);
	ASSERT_OK(kt_ah_create(self->fd, ud.handle, self->dev.gid, &ah));
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				 NULL, &fresh));
	if (self->have_buf) {
		ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
				       3 * 4096, &buf));
		map = kt_buf_mmap(self->fd, &buf);
		ASSERT_NE(MAP_FAILED, map);
		kt_fill(map, 3 * 4096, 42);
		kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, buf.handle, 0, 4096);
		ASSERT_OK(kt_post1(self->fd, rc.handle, &wr));
		kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, buf.handle, 4096, 4096);
		ASSERT_OK(kt_post1(self->fd, rc.handle, &wr));
	}

	remove_tmp_dev(_metadata);

	/* every use of the handles is ENODEV */
	EXPECT_ERRNO(ENODEV, kt_conn_query(self->fd, rc.handle, &q));
	EXPECT_ERRNO(ENODEV, kt_conn_query(self->fd, ud.handle, &q));
	kt_wr_init(&wr, 3, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	EXPECT_ERRNO(ENODEV, kt_post1(self->fd, rc.handle, &wr));
	kt_wr_init(&wr, 4, KRDMA_OP_RECV, 0);
	EXPECT_ERRNO(ENODEV, kt_post1(self->fd, rc.handle, &wr));
	EXPECT_ERRNO(ENODEV, kt_poll(self->fd, rc.handle, &wc, 1, 0));
	EXPECT_ERRNO(ENODEV, kt_poll(self->fd, rc.handle, &wc, 1, 100));
	kt_modify_init(&m, &fresh, &fresh);
	EXPECT_ERRNO(ENODEV, ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	EXPECT_ERRNO(ENODEV, kt_ah_create(self->fd, ud.handle, self->dev.gid, &h));
	kt_wr_init(&wr, 5, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr.ah_handle = ah;
	wr.remote_qpn = ud.qp_num;
	EXPECT_ERRNO(ENODEV, kt_post1(self->fd, ud.handle, &wr));
	/* new objects on the dead index are ENODEV */
	EXPECT_ERRNO(ENODEV, kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &tbuf));
	EXPECT_ERRNO(ENODEV, kt_conn_create(self->fd, &self->dev,
					    KRDMA_TRANSPORT_RC, 0, NULL, &tconn));
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
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, rc.handle));
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, ah));

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
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_RC, NULL, &rc);
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       1 << 20, &buf));
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
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, &caps,
		  &u);
	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL,
		  &c);
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       64 * 1024, &sbuf));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       4096, &cbuf));
	removal_bench_init(&rb, self->fd, u.handle, KRDMA_OP_SEND, sbuf.handle,
			   256);
	rb.b.flags = KRDMA_BENCH_SERVER;
	ASSERT_OK(pthread_create(&t, NULL, removal_bench_fn, &rb));
	/* the hello, until the server answers */
	kt_wr_init(&wr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, cbuf.handle, 0, KRDMA_GRH_LEN);
	ASSERT_OK(kt_post1(self->fd, c.handle, &wr));
	for (tries = 0; tries < 100; tries++) {
		kt_wr_init(&wr, 2, KRDMA_OP_SEND_WITH_IMM, KRDMA_WR_SIGNALED);
		wr.imm_data = KRDMA_BENCH_READY_IMM;
		wr.ah_handle = ah;
		wr.remote_qpn = u.qp_num;
		ASSERT_OK(kt_post1(self->fd, c.handle, &wr));
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
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       64, &buf));
	remove_tmp_dev(_metadata);
	EXPECT_ERRNO(ENODEV, kt_buf_read(self->fd, buf.handle, 0, data, 64));
	EXPECT_ERRNO(ENODEV, kt_buf_write(self->fd, buf.handle, 0, data, 64));
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
	self_conn(_metadata, fd2, &self->dev, KRDMA_TRANSPORT_RC, NULL, &rc);
	self_conn(_metadata, fd2, &self->dev, KRDMA_TRANSPORT_UD, NULL, &ud);
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
	EXPECT_ERRNO(ENOENT, kt_destroy(self->fd, listener));
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

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC,
				 KRDMA_CONN_NOTIFY, NULL, &n1));
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC,
				 KRDMA_CONN_NOTIFY, NULL, &n2));
	ASSERT_OK(kt_conn_connect(self->fd, &n1, &n2));
	ASSERT_OK(kt_conn_connect(self->fd, &n2, &n1));
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
	ASSERT_OK(kt_spawn_for(&del, "krdma_objects", "del", false, 60,
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
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, 64, &buf));
	self_conn(_metadata, self->fd, &self->main, KRDMA_TRANSPORT_RC, NULL, &c);
	remove_tmp_dev(_metadata);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf.handle, 0, 64);
	EXPECT_ERRNO(ENODEV, kt_post1(self->fd, c.handle, &wr));
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
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, 4096, &buf));
	conn_pair(_metadata, self->fd, &self->main, KRDMA_TRANSPORT_RC, NULL, &a, &b);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf.handle, 0, 4096);
	EXPECT_ERRNO(EINVAL, kt_post1(self->fd, a.handle, &wr),
		     "an SGE of " TMP_DEV "'s buffer posted on %s",
		     self->main.info.name);
	if (kt_poll_n(self->fd, a.handle, &wc, 1, 2000) == 1)
		TH_LOG("... and completed with status %u", wc.status);
	kt_wr_init(&wr, 2, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, buf.handle, 0, 4096);
	EXPECT_ERRNO(EINVAL, kt_post1(self->fd, b.handle, &wr));
}

/* Likewise an address handle made on another device's UD connection. */
KRDMA_TEST_F(removal, ah_of_other_device)
{
	struct kt_conn tmp_ud, ud;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint32_t ah;

	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL, &tmp_ud);
	/* (an AH towards rxe_t itself: rxe0's address is not reachable from it) */
	ASSERT_OK(kt_ah_create(self->fd, tmp_ud.handle, self->dev.gid, &ah));
	self_conn(_metadata, self->fd, &self->main, KRDMA_TRANSPORT_UD, NULL, &ud);
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

	self_conn(_metadata, self->fd, &self->dev, KRDMA_TRANSPORT_UD, NULL, &ud);
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
