// SPDX-License-Identifier: GPL-2.0
/*
 * Network namespaces: a session sees and uses what its opener's namespace
 * may.  rxe cannot move to another namespace (no disassociate_ucontext), so
 * the tests move the caller instead, into a new namespace of its own: in
 * the RDMA core's shared mode it still sees the devices, but none of their
 * RoCE GIDs, which sit on init_net's netdevs; in exclusive mode (rdma
 * system set netns exclusive) it sees no device at all.  A file opened in
 * init_net keeps init_net's view wherever it is used from.
 */
#define _GNU_SOURCE	/* unshare() */
#include <sched.h>

#include "krdma_test.h"

/* how long a dead namespace may keep `rdma system set netns` EBUSY */
#define NETNS_MODE_TRIES 100	/* of 200 ms */

FIXTURE(netns)
{
	int fd;			/* opened in init_net */
	struct kt_dev dev;
	uint32_t ndev;		/* what init_net sees */
	bool exclusive;		/* set by the test: the teardown undoes it */
};

FIXTURE_SETUP(netns)
{
	struct krdma_info info;

	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	if (geteuid())
		SKIP(return, "needs root, for a network namespace of its own");
	if (access("/proc/self/ns/net", F_OK))
		SKIP(return, "no network namespaces (CONFIG_NET_NS)");
	if (kt_dev_pick(self->fd, NULL, &self->dev))
		SKIP(return, "%s", kt_no_dev());
	if (self->dev.port.link_layer != KRDMA_LINK_LAYER_ETHERNET ||
	    kt_dev_iwarp(&self->dev))
		SKIP(return, "%s: not RoCE, its GIDs have no netdev",
		     self->dev.info.name);
	ASSERT_OK(krdma_info_get(self->fd, &info));
	self->ndev = info.num_devices;
}

/* rdma system set netns @mode, again while a dead namespace holds it off. */
static int netns_mode_set(const char *mode)
{
	int i;

	for (i = 0; i < NETNS_MODE_TRIES; i++) {
		if (!krdma_run("rdma system set netns %s 2>/dev/null", mode))
			return 0;
		usleep(200 * 1000);
	}
	return -1;
}

FIXTURE_TEARDOWN(netns)
{
	if (self->exclusive && netns_mode_set("shared"))
		TH_LOG("could not set the RDMA namespaces shared again");
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Run @fn(@self) in a child in a new network namespace: its exit status,
 * 0 when every step passed, else the step that failed.
 */
static int in_new_netns(FIXTURE_DATA(netns) *self,
			int (*fn)(FIXTURE_DATA(netns) *self))
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (unshare(CLONE_NEWNET))
			_exit(99);
		_exit(fn(self));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The GIDs @fd's session lists on @dev_index, -1 on error. */
static int gids_listed(int fd, uint32_t dev_index)
{
	struct krdma_snap s;
	uint32_t i;
	int n = 0;

	if (krdma_snap_get(fd, KRDMA_QUERY_DEVICES_ONE, dev_index, &s))
		return -1;
	for (i = 0; i < s.ngid; i++)
		n += s.gids[i].dev_index == dev_index;
	krdma_snap_free(&s);
	return n;
}

/* A connection on the fixture's device and GID: 0, or -1/errno. */
static int conn_on_gid(int fd, const struct kt_dev *dev)
{
	struct kt_conn c;

	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_RC, 0, NULL, &c))
		return -1;
	return kt_destroy(fd, c.handle);
}

static int exclusive_steps(FIXTURE_DATA(netns) *self)
{
	uint32_t index = self->dev.dev_index;
	struct krdma_srq_create sc = {
		.size = sizeof(sc), .dev_index = index,
		.max_wr = 4, .max_sge = 1,
	};
	static uint8_t mem[4096] __attribute__((aligned(4096)));
	struct krdma_info info;
	struct krdma_snap s;
	struct kt_buf buf;
	uint32_t ndev;
	int fd;

	fd = krdma_open();
	if (fd < 0)
		return 1;
	if (krdma_info_get(fd, &info) || info.num_devices)
		return 2;
	if (krdma_snap_get(fd, 0, 0, &s))
		return 3;
	ndev = s.ndev;
	krdma_snap_free(&s);
	if (ndev)
		return 4;
	/* every command that names the device: as if it did not exist */
	if (!krdma_snap_get(fd, KRDMA_QUERY_DEVICES_ONE, index, &s) ||
	    errno != ENODEV)
		return 5;
	if (!kt_buf_alloc(fd, index, 0, 4096, &buf) || errno != ENODEV)
		return 6;
	if (!kt_buf_reg_user(fd, index, 0, mem, sizeof(mem), &buf) ||
	    errno != ENODEV)
		return 7;
	if (conn_on_gid(fd, &self->dev) != -1 || errno != ENODEV)
		return 8;
	if (!ioctl(fd, KRDMA_SRQ_CREATE, &sc) || errno != ENODEV)
		return 9;
	/* init_net's file still reaches init_net's device */
	if (kt_buf_alloc(self->fd, index, 0, 4096, &buf))
		return 10;
	close(fd);
	return 0;
}

/*
 * Exclusive mode: another namespace's devices are not there at all.  The
 * first test: switching modes while a namespace dies (a test's before it)
 * races the RDMA core's removal of that namespace's compat devices (on
 * 6.1, a use-after-free KASAN reports: docs/known-problems.rst).
 */
KRDMA_TEST_F_TIMEOUT(netns, exclusive_mode_hides_other_devices, 120)
{
	struct krdma_info info;

	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	ASSERT_OK(netns_mode_set("exclusive"));
	self->exclusive = true;
	EXPECT_EQ(0, in_new_netns(self, exclusive_steps));
	ASSERT_OK(krdma_info_get(self->fd, &info));
	EXPECT_EQ(self->ndev, info.num_devices);
	EXPECT_OK(conn_on_gid(self->fd, &self->dev));
}

static int shared_steps(FIXTURE_DATA(netns) *self)
{
	struct krdma_info info;
	struct kt_buf buf;
	int fd;

	fd = krdma_open();
	if (fd < 0)
		return 1;
	/* the devices, as in init_net */
	if (krdma_info_get(fd, &info) || info.num_devices != self->ndev)
		return 2;
	/* but none of init_net's addresses */
	if (gids_listed(fd, self->dev.dev_index) != 0)
		return 3;
	if (conn_on_gid(fd, &self->dev) != -1 || errno != EINVAL)
		return 4;
	/* what needs no address works */
	if (kt_buf_alloc(fd, self->dev.dev_index, 0, 4096, &buf))
		return 5;
	/* init_net's file sees and uses init_net's */
	if (gids_listed(self->fd, self->dev.dev_index) <= 0)
		return 6;
	if (conn_on_gid(self->fd, &self->dev))
		return 7;
	close(fd);
	return 0;
}

/* Shared mode: the devices, without another namespace's GIDs. */
KRDMA_TEST_F(netns, shared_mode_hides_other_gids)
{
	EXPECT_EQ(0, in_new_netns(self, shared_steps));
	/* init_net's view is whole */
	EXPECT_LT(0, gids_listed(self->fd, self->dev.dev_index));
	EXPECT_OK(conn_on_gid(self->fd, &self->dev));
}

TEST_HARNESS_MAIN
