// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading and reloading krdma.ko (from $KRDMA_KO) with RDMA devices
 * present, and unloading while /dev/krdma is open.  Every test leaves the
 * module loaded, also when it fails.  run_tests.sh runs this program last.
 */
#include "krdma_test.h"

/* Load @ko with the parameters @params ("name=value ..."). */
static int load_module_with(const char *ko, const char *params)
{
	int fd, ret;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, params, 0);
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
	char params[64];	/* what it was loaded with */
};

/* Load @ko again as the test bed had it (its dev_mode). */
#define load_module(ko) load_module_with(ko, self->params)

/* The dev_mode parameter of the loaded module into @buf, or -1. */
static int read_dev_mode(char *buf, size_t len)
{
	FILE *f = fopen("/sys/module/krdma/parameters/dev_mode", "r");
	int ret = -1;

	if (!f)
		return -1;
	if (fgets(buf, len, f)) {
		buf[strcspn(buf, "\n")] = 0;
		ret = 0;
	}
	fclose(f);
	return ret;
}

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
	ASSERT_OK(read_dev_mode(self->params + 9, sizeof(self->params) - 9));
	memcpy(self->params, "dev_mode=", 9);
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

/* The node's mode as devtmpfs made it, 07777 bits; or ~0u. */
static unsigned int node_mode(void)
{
	struct stat st;

	if (wait_for_node(true) || stat(KRDMA_DEVICE_PATH, &st))
		return ~0u;
	return st.st_mode & 07777;
}

/* Whether uid 65534 can open the node: 0, or its errno. */
static int nobody_open_errno(void)
{
	int status, fd;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (kt_become_user(65534))
			_exit(255);
		fd = open(KRDMA_DEVICE_PATH, O_RDWR);
		_exit(fd < 0 ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * dev_mode: root's alone unless the administrator says otherwise, in octal,
 * read and write bits only.
 */
KRDMA_TEST_F(lifecycle, dev_mode)
{
	static const char *const bad[] = {
		"dev_mode=0777", "dev_mode=01666", "dev_mode=0100600",
		"dev_mode=rw", "dev_mode=", "dev_mode",
	};
	char got[16];
	unsigned int i;

	ASSERT_OK(unload_module_idle());
	ASSERT_OK(load_module_with(self->ko, ""));
	EXPECT_EQ(0600u, node_mode());
	ASSERT_OK(read_dev_mode(got, sizeof(got)));
	EXPECT_STREQ("0600", got);
	EXPECT_EQ(EACCES, nobody_open_errno());

	ASSERT_OK(unload_module_idle());
	ASSERT_OK(load_module_with(self->ko, "dev_mode=0660"));
	EXPECT_EQ(0660u, node_mode());
	ASSERT_OK(read_dev_mode(got, sizeof(got)));
	EXPECT_STREQ("0660", got);

	ASSERT_OK(unload_module_idle());
	ASSERT_OK(load_module_with(self->ko, "dev_mode=666"));
	EXPECT_EQ(0666u, node_mode());
	EXPECT_EQ(0, nobody_open_errno());

	ASSERT_OK(unload_module_idle());
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_ERRNO(EINVAL, load_module_with(self->ko, bad[i]),
			     "%s", bad[i]);
		EXPECT_FALSE(krdma_module_loaded());
	}
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
