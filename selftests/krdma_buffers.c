// SPDX-License-Identifier: GPL-2.0
/*
 * krdma buffers: every validation failure of BUF_ALLOC and BUF_RW (one
 * test each, the iommufd way), mmap(2) of buffers, RLIMIT_MEMLOCK, the
 * per-user object limit and the rdma cgroup.
 */
#include <sys/resource.h>

#include "krdma_test.h"

KT_OBJ_FIXTURE()

static void buf_alloc_init(struct krdma_buf_alloc *a, uint32_t dev,
			   uint32_t access, uint64_t len)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->dev_index = dev;
	a->access = access;
	a->length = len;
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
		test_cmd_ioctl(KRDMA_BUF_ALLOC, &a);
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
		test_cmd_buf_alloc(self->dev.dev_index, 0, len, &b);
		memset(p, 0xff, len);
		test_cmd_buf_read(b.handle, 0, p, len);
		EXPECT_EQ(-1, kt_check_byte(p, len, 0));
		/* dirty it for the next allocation to maybe reuse */
		memset(p, 0x77, len);
		test_cmd_buf_write(b.handle, 0, p, len);
		test_cmd_destroy(b.handle);
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
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ, 4096);
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
}

KRDMA_TEST_F(obj, buf_alloc_remote_atomic_without_local_write)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_REMOTE_ATOMIC, 4096);
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_REMOTE_ATOMIC | KRDMA_ACCESS_REMOTE_READ, 4096);
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
}

KRDMA_TEST_F(obj, buf_alloc_mw_bind)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index,
		       KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_MW_BIND, 4096);
	test_err_ioctl(EOPNOTSUPP, KRDMA_BUF_ALLOC, &a);
	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_MW_BIND, 4096);
	test_err_ioctl(EOPNOTSUPP, KRDMA_BUF_ALLOC, &a);
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
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
	a.__reserved = 0x80000000u;
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
}

KRDMA_TEST_F(obj, buf_alloc_length_zero)
{
	struct krdma_buf_alloc a;

	buf_alloc_init(&a, self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 0);
	test_err_ioctl(EINVAL, KRDMA_BUF_ALLOC, &a);
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
	/* a connection by hand, where the device has them (not iWARP) */
	bool conns = !kt_dev_lacks(dev, KT_CAP_MANUAL_CONN);
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
	if (conns && (!kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &deep,
				      &c) || errno != ENOMEM))
		return 14;
	if (kt_vm_pin_kb() != base)
		return 15;
	/* 4096 receives */
	if (!ioctl(fd, KRDMA_SRQ_CREATE, &sc) || errno != ENOMEM)
		return 16;
	if (kt_vm_pin_kb() != base)
		return 17;
	/* small queues fit, and are charged until destroyed */
	if (conns && kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &small, &c))
		return 18;
	held = kt_vm_pin_kb();
	if (conns && held <= base)
		return 19;
	sc.max_wr = 16;
	if (ioctl(fd, KRDMA_SRQ_CREATE, &sc))
		return 20;
	if (kt_vm_pin_kb() <= held)
		return 21;
	if (kt_destroy(fd, sc.handle) || kt_vm_pin_kb() != held)
		return 22;
	if (conns && (kt_destroy(fd, c.handle) || kt_vm_pin_kb() != base))
		return 23;
	/* and until their session is closed */
	if (conns && kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, &small, &c))
		return 24;
	if (ioctl(fd, KRDMA_SRQ_CREATE, &sc))
		return 25;
	close(fd);
	if (kt_vm_pin_kb() != base)
		return 26;
	return 0;
}

KRDMA_TEST_F(obj, queues_memlock)
{
	const char *why = kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN);
	pid_t pid;
	int step;

	if (why)
		TH_LOG("SRQs only: %s", why);
	pid = fork();
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
	/* a connection by hand, where the device has them (not iWARP) */
	bool conns = !kt_dev_lacks(dev, KT_CAP_MANUAL_CONN);
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
	if (conns && (!kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL,
				      &c) || errno != EAGAIN))
		return 5;
	if (kt_rdmacg_objects(cg, name) != RDMACG_LIMIT)
		return 6;
	/* one destroyed makes room for one, a connection */
	if (kt_destroy(fd, b[0].handle) ||
	    kt_rdmacg_objects(cg, name) != RDMACG_LIMIT - 1)
		return 7;
	if (conns && kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &c))
		return 8;
	if (!conns && kt_buf_alloc(fd, dev->dev_index, 0, 4096, &b[0]))
		return 8;
	if (kt_rdmacg_objects(cg, name) != RDMACG_LIMIT)
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
 * The child of rdma_cgroup_hca_handle, in cgroup @cg whose rdma.max allows
 * one hca_handle: 0, or its step.
 */
static int rdmacg_handle_child(const struct kt_dev *dev, const char *cg)
{
	const char *name = dev->info.name;
	struct kt_buf a[2], b;
	char path[512];
	int fd, fd2;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (kt_write_file(path, "0"))
		return 1;
	fd = krdma_open();
	fd2 = krdma_open();
	if (fd < 0 || fd2 < 0)
		return 2;
	/* a session's objects on the device share its one hca_handle */
	if (kt_rdmacg_current(cg, name, true) != 0 ||
	    kt_buf_alloc(fd, dev->dev_index, 0, 4096, &a[0]) ||
	    kt_buf_alloc(fd, dev->dev_index, 0, 4096, &a[1]))
		return 3;
	if (kt_rdmacg_current(cg, name, true) != 1 ||
	    kt_rdmacg_objects(cg, name) != 2)
		return 4;
	/* another session's is one more: EAGAIN, nothing charged */
	if (!kt_buf_alloc(fd2, dev->dev_index, 0, 4096, &b) ||
	    errno != EAGAIN)
		return 5;
	if (kt_rdmacg_current(cg, name, true) != 1 ||
	    kt_rdmacg_objects(cg, name) != 2)
		return 6;
	/* the first session's last object gone, its handle goes too */
	if (kt_destroy(fd, a[0].handle) ||
	    kt_rdmacg_current(cg, name, true) != 1 ||
	    kt_destroy(fd, a[1].handle) ||
	    kt_rdmacg_current(cg, name, true) != 0)
		return 7;
	if (kt_buf_alloc(fd2, dev->dev_index, 0, 4096, &b) ||
	    kt_rdmacg_current(cg, name, true) != 1)
		return 8;
	/* and with the session's end */
	close(fd2);
	if (kt_rdmacg_current(cg, name, true) != 0 ||
	    kt_rdmacg_objects(cg, name) != 0)
		return 9;
	close(fd);
	return 0;
}

/*
 * Run @child in cgroup RDMACG_NAME@suffix, whose rdma.max allows @limit of
 * @resource on the test device: it must succeed, and leave nothing
 * charged.
 */
static void rdmacg_run(struct __test_metadata *_metadata,
		       const struct kt_dev *dev, const char *suffix,
		       const char *resource, int limit,
		       int (*child)(const struct kt_dev *dev, const char *cg))
{
	char root[256], cg[320], path[400], max[128];
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root, for a cgroup");
	if (kt_cgroup2_root(root, sizeof(root), "rdma"))
		SKIP(return, "no cgroup v2 with the rdma controller");
	snprintf(cg, sizeof(cg), "%s/%s%s", root, RDMACG_NAME, suffix);
	ASSERT_TRUE(!mkdir(cg, 0755) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/rdma.max", cg);
	snprintf(max, sizeof(max), "%s %s=%d", dev->info.name, resource, limit);
	ASSERT_OK(kt_write_file(path, max));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child(dev, cg));
	EXPECT_EQ(0, child_step(pid));
	EXPECT_EQ(0, kt_rdmacg_current(cg, dev->info.name, true));
	EXPECT_EQ(0, kt_rdmacg_objects(cg, dev->info.name));
	/*
	 * No limit left before the cgroup goes: the kernel frees a device's
	 * pool of a removed cgroup only on an uncharge, and the device's
	 * removal would trip over it (docs/known-problems.rst).
	 */
	snprintf(max, sizeof(max), "%s %s=max", dev->info.name, resource);
	EXPECT_OK(kt_write_file(path, max));
	rmdir(cg);
}

/*
 * The rdma cgroup: each object holding verbs objects on a device is one
 * hca_object of the creating task's cgroup, as uverbs charges; past
 * rdma.max a create is EAGAIN, and what is destroyed is uncharged.
 */
KRDMA_TEST_F_TIMEOUT(obj, rdma_cgroup_hca_object, 60)
{
	rdmacg_run(_metadata, &self->dev, "", "hca_object", RDMACG_LIMIT,
		   rdmacg_child);
}

/*
 * The rdma cgroup: a session's PD on a device is one hca_handle, as uverbs
 * charges a context, charged with its first object and uncharged with its
 * last; past rdma.max, a create is EAGAIN.
 */
KRDMA_TEST_F_TIMEOUT(obj, rdma_cgroup_hca_handle, 60)
{
	rdmacg_run(_metadata, &self->dev, "-handle", "hca_handle", 1,
		   rdmacg_handle_child);
}

/* ------------------------------------------------------------------------
 * KRDMA_BUF_RW
 */

KRDMA_TEST_F(obj, buf_rw_roundtrip)
{
	/*
	 * 3 MiB + 5: more than one MR page list of 4 KiB pages, so 8 KiB
	 * chunks; where one buffer is bounded below that (siw: 1 MiB), the
	 * largest there is
	 */
	const uint64_t len = kt_dev_max_buf(&self->dev) &&
			     kt_dev_max_buf(&self->dev) < (3ull << 20) + 5 ?
			     kt_dev_max_buf(&self->dev) : (3ull << 20) + 5;
	const uint64_t offs[] = { 0, 1, 4095, 8191, 8192, len - 20000, len - 1 };
	struct kt_buf b;
	uint8_t *in, *out;
	unsigned int i;

	in = malloc(len);
	out = malloc(len);
	ASSERT_TRUE(in && out);
	test_cmd_buf_alloc(self->dev.dev_index, 0, len, &b);
	kt_fill(in, len, 1);
	test_cmd_buf_write(b.handle, 0, in, len);
	test_cmd_buf_read(b.handle, 0, out, len);
	EXPECT_EQ(0, memcmp(in, out, len));
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		uint64_t n = len - offs[i] < 20000 ? len - offs[i] : 20000;

		kt_fill(in, n, 100 + i);
		test_cmd_buf_write(b.handle, offs[i], in, n);
		memset(out, 0, n);
		test_cmd_buf_read(b.handle, offs[i], out, n);
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
	test_cmd_buf_alloc(self->dev.dev_index, 0, len, &b);
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

	test_cmd_buf_alloc(self->dev.dev_index, 0, 8192, &b);
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

	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &c);
	test_err_buf_read(ENOENT, c.handle, 0, p, 16);
	test_err_buf_write(ENOENT, c.handle, 0, p, 16);
	test_cmd_ah_create(c.handle, self->dev.gid, &ah);
	test_err_buf_read(ENOENT, ah, 0, p, 16);
}

KRDMA_TEST_F(obj, buf_rw_destroyed_handle)
{
	struct kt_buf b;
	uint8_t p[16];

	test_cmd_buf_alloc(self->dev.dev_index, 0, 16, &b);
	test_cmd_destroy(b.handle);
	test_err_buf_read(ENOENT, b.handle, 0, p, 16);
}

KRDMA_TEST_F(obj, buf_rw_unknown_flags)
{
	struct krdma_buf_rw rw;
	struct kt_buf b;
	uint8_t p[16];
	unsigned int bit;

	test_cmd_buf_alloc(self->dev.dev_index, 0, 16, &b);
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

	test_cmd_buf_alloc(self->dev.dev_index, 0, 16, &b);
	memset(&rw, 0, sizeof(rw));
	rw.size = sizeof(rw);
	rw.handle = b.handle;
	rw.length = 16;
	rw.data_uptr = (uintptr_t)p;
	rw.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_BUF_RW, &rw);
}

KRDMA_TEST_F(obj, buf_rw_efault)
{
	struct kt_buf b;
	void *ro;

	test_cmd_buf_alloc(self->dev.dev_index, 0, 8192, &b);
	test_err_buf_read(EFAULT, b.handle, 0, NULL, 16);
	test_err_buf_write(EFAULT, b.handle, 0, NULL, 16);
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	test_err_buf_read(EFAULT, b.handle, 0, ro, 8192);
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

		/* past what one buffer may be on the device (siw: 1 MiB) */
		if (kt_dev_max_buf(&self->dev) &&
		    len > kt_dev_max_buf(&self->dev))
			continue;
		p = malloc(len);
		ASSERT_NE(NULL, p);
		test_cmd_buf_alloc(self->dev.dev_index,
				   KRDMA_ACCESS_LOCAL_WRITE, len, &b);
		map = kt_buf_mmap(self->fd, &b);
		ASSERT_NE(MAP_FAILED, map) {
			TH_LOG("mmap of %llu bytes: %s", (unsigned long long)len,
			       strerror(errno));
		}
		/* BUF_RW in, mapping out */
		kt_fill(p, len, 10 + i);
		test_cmd_buf_write(b.handle, 0, p, len);
		EXPECT_EQ(-1, kt_check(map, len, 10 + i)) {
			TH_LOG("len %llu: mapping differs from BUF_RW",
			       (unsigned long long)len);
		}
		/* mapping in, BUF_RW out */
		kt_fill(map, len, 20 + i);
		test_cmd_buf_read(b.handle, 0, p, len);
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

	test_cmd_buf_alloc(self->dev.dev_index, 0, 2 * self->psz + 1, &b);
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

	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &c);
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
	uint64_t max = kt_dev_max_buf(&self->dev);
	/* 2 MiB + 1 (more than one chunk), or the device's largest buffer */
	uint64_t big = max && max < (2 << 20) + 1 ? max : (2 << 20) + 1;
	size_t map_len = (big + self->psz - 1) / self->psz * self->psz;
	struct kt_buf b;
	unsigned int i;
	void *p;

	/* one page (one chunk) and a large buffer */
	test_cmd_buf_alloc(self->dev.dev_index, 0, self->psz, &b);
	for (i = 0; i < 2; i++) {
		p = mmap(NULL, self->psz, prots[i], MAP_PRIVATE, self->fd,
			 b.mmap_offset);
		EXPECT_EQ(MAP_FAILED, p);
		EXPECT_EQ(EINVAL, errno);
		if (p != MAP_FAILED)
			munmap(p, self->psz);
	}
	test_cmd_buf_alloc(self->dev.dev_index, 0, big, &b);
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
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

	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, len,
			   &b);
	map = kt_buf_mmap(self->fd, &b);
	ASSERT_NE(MAP_FAILED, map);
	kt_fill(map, len, 77);
	test_cmd_destroy(b.handle);
	test_err_buf_read(ENOENT, b.handle, 0, map, 1);
	test_err_destroy(ENOENT, b.handle);
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
	/*
	 * past 2 MiB: rxe's 512 MR pages make chunks of 4 pages; or the
	 * device's largest buffer (siw: 1 MiB)
	 */
	const uint64_t max = kt_dev_max_buf(&self->dev);
	const uint64_t len = max && max < (5ull << 20) + 7 ? max :
			     (5ull << 20) + 7;
	const long long maplen = (len + self->psz - 1) / self->psz * self->psz;
	struct kt_buf b;
	uint8_t *map, *p;
	int memfd, status;
	pid_t pid;

	if (kt_kernel_before(5, 11))
		SKIP(return, "before 5.11 krdma maps a buffer as PFNs");
	p = malloc(len);
	ASSERT_NE(NULL, p);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, len,
			   &b);
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
	test_cmd_buf_read(b.handle, 0, p, len);
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
	test_cmd_buf_read(b.handle, 0, p, len);
	EXPECT_EQ(-1, kt_check(p, len, 43));
	kt_buf_munmap(map, &b);
	EXPECT_OK(kt_destroy(self->fd, b.handle));
	free(p);
}

TEST_HARNESS_MAIN
