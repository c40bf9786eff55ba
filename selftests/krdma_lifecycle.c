// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading and reloading krdma.ko (from $KRDMA_KO) with RDMA devices
 * present, and unloading while /dev/krdma is open.  Every test leaves the
 * module loaded, also when it fails.  run_tests.sh runs this program last.
 */
#include "krdma_test.h"

static int load_module(const char *ko)
{
	int fd, ret;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, "", 0);
	if (ret) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	close(fd);
	return 0;
}

static int unload_module(void)
{
	return syscall(SYS_delete_module, "krdma", O_NONBLOCK);
}

/*
 * Unload once nothing holds the module any more: the last fput() of an
 * exiting process may still be on its way.
 */
static int unload_module_idle(void)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (!unload_module())
			return 0;
		if (errno != EWOULDBLOCK)
			return -1;
		usleep(100 * 1000);
	}
	return -1;
}

/* /dev/krdma appears once misc_register() ran; allow udev/devtmpfs a moment. */
static int wait_for_node(bool present)
{
	struct stat st;
	int i;

	for (i = 0; i < 100; i++) {
		if (!stat(KRDMA_DEVICE_PATH, &st) == present)
			return 0;
		usleep(50 * 1000);
	}
	return -1;
}

FIXTURE(lifecycle)
{
	const char *ko;
};

FIXTURE_SETUP(lifecycle)
{
	const char *why = krdma_unavailable();

	if (why)
		SKIP(return, "%s", why);
	self->ko = getenv("KRDMA_KO");
	if (!self->ko || access(self->ko, R_OK))
		SKIP(return, "KRDMA_KO does not name a readable krdma.ko");
	if (!krdma_module_loaded())
		SKIP(return, "krdma is built in or not loaded as a module");
}

FIXTURE_TEARDOWN(lifecycle)
{
	if (!self->ko || krdma_module_loaded())
		return;
	if (load_module(self->ko))
		TH_LOG("could not reload %s: %s", self->ko, strerror(errno));
	wait_for_node(true);
}

/* The freshly loaded module serves every device. */
static void check_loaded(struct __test_metadata *_metadata)
{
	char names[64][KRDMA_NAME_MAX];
	struct krdma_info info;
	struct krdma_snap s;
	int fd, n, i;

	ASSERT_TRUE(krdma_module_loaded());
	ASSERT_OK(wait_for_node(true));
	fd = krdma_open();
	ASSERT_LE(0, fd);
	ASSERT_OK(krdma_info_get(fd, &info));
	EXPECT_EQ((__u32)KRDMA_ABI_VERSION, info.abi_version);
	n = krdma_sysfs_names(names, 64);
	EXPECT_EQ(n, (int)info.num_devices);
	EXPECT_LE(info.num_devices, info.num_device_contexts);
	ASSERT_OK(krdma_snap_get(fd, 0, 0, &s));
	ASSERT_EQ(n, (int)s.ndev);
	for (i = 0; i < n && i < 64; i++)
		EXPECT_NE(NULL, krdma_snap_find(&s, names[i])) {
			TH_LOG("%s not listed after reload", names[i]);
		}
	krdma_snap_free(&s);
	close(fd);
}

KRDMA_TEST_F(lifecycle, reload_cycles)
{
	int cycle;

	for (cycle = 0; cycle < 5; cycle++) {
		TH_LOG("cycle %d", cycle);
		ASSERT_OK(unload_module_idle());
		ASSERT_FALSE(krdma_module_loaded());
		ASSERT_OK(load_module(self->ko));
		check_loaded(_metadata);
	}
}

/* The open file holds the module: unloading fails until it is closed. */
KRDMA_TEST_F(lifecycle, unload_busy_while_open)
{
	struct krdma_info info;
	int fd, fd2;

	fd = krdma_open();
	ASSERT_LE(0, fd);
	/* delete_module(O_NONBLOCK) of a module in use: EWOULDBLOCK. */
	EXPECT_ERRNO(EWOULDBLOCK, unload_module());
	ASSERT_TRUE(krdma_module_loaded());
	/* The session still works. */
	EXPECT_OK(krdma_info_get(fd, &info));
	EXPECT_EQ((__u32)KRDMA_ABI_VERSION, info.abi_version);
	/* So does a second one, which holds it too. */
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	close(fd);
	fd = fd2;
	EXPECT_ERRNO(EWOULDBLOCK, unload_module());
	ASSERT_TRUE(krdma_module_loaded());
	close(fd);

	ASSERT_OK(unload_module_idle());
	ASSERT_FALSE(krdma_module_loaded());
	ASSERT_OK(load_module(self->ko));
	check_loaded(_metadata);
}

/* A session open in another process holds the module as well. */
KRDMA_TEST_F(lifecycle, unload_busy_other_process)
{
	int pipefd[2], status;
	pid_t pid;
	char c;

	ASSERT_OK(pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = krdma_open();

		close(pipefd[0]);
		if (write(pipefd[1], fd >= 0 ? "o" : "e", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	EXPECT_EQ('o', c);
	EXPECT_ERRNO(EWOULDBLOCK, unload_module());
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_OK(unload_module_idle());
	ASSERT_OK(load_module(self->ko));
	check_loaded(_metadata);
}

/* Loading it twice is the kernel's EEXIST. */
KRDMA_TEST_F(lifecycle, load_twice_eexist)
{
	EXPECT_ERRNO(EEXIST, load_module(self->ko));
	check_loaded(_metadata);
}

TEST_HARNESS_MAIN
