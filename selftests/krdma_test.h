/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the krdma selftests: skip checks, ioctl wrappers, a
 * QUERY_DEVICES snapshot, sysfs readers and command runners.
 */
#ifndef KRDMA_TEST_H
#define KRDMA_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "krdma.h"

#define SYSFS_IB "/sys/class/infiniband"

#ifndef offsetofend
#define offsetofend(TYPE, MEMBER) \
	(offsetof(TYPE, MEMBER) + sizeof(((TYPE *)0)->MEMBER))
#endif

/*
 * The 6.1 harness runs the test body even when FIXTURE_SETUP() called
 * SKIP(), so every fixture test here is a KRDMA_TEST_F, which does not run
 * its body once the setup skipped.
 */
#define KRDMA_TEST_F(fixture, name)					\
	static void fixture##_##name##_body(				\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture) *self,				\
		const FIXTURE_VARIANT(fixture) *variant);		\
	TEST_F(fixture, name)						\
	{								\
		if (!_metadata->skip)					\
			fixture##_##name##_body(_metadata, self, variant); \
	}								\
	static void fixture##_##name##_body(				\
		struct __test_metadata __attribute__((unused)) *_metadata, \
		FIXTURE_DATA(fixture) __attribute__((unused)) *self,	\
		const FIXTURE_VARIANT(fixture) __attribute__((unused)) *variant)

/*
 * The call must fail with exactly @expected_errno; optional printf-style
 * context follows: EXPECT_ERRNO(EINVAL, ioctl(...), "size %u", sz).
 */
#define EXPECT_ERRNO(expected_errno, cmd, ...)				\
	__EXPECT_ERRNO(expected_errno, cmd, " " __VA_ARGS__)
#define __EXPECT_ERRNO(expected_errno, cmd, fmt, ...)			\
	do {								\
		long __rc = (long)(cmd);				\
		int __err = errno;					\
		char __ctx[160];					\
									\
		snprintf(__ctx, sizeof(__ctx), fmt, ##__VA_ARGS__);	\
		EXPECT_EQ(-1, __rc) {					\
			TH_LOG("%s:%s succeeded, expected %s", #cmd,	\
			       __ctx, strerror(expected_errno));	\
		}							\
		if (__rc == -1) {					\
			EXPECT_EQ(expected_errno, __err) {		\
				TH_LOG("%s:%s errno %d (%s), expected %s", \
				       #cmd, __ctx, __err, strerror(__err), \
				       strerror(expected_errno));	\
			}						\
		}							\
	} while (0)

/*
 * The call must succeed: @check is ASSERT_EQ or EXPECT_EQ; @text is the
 * call as written (stringified before its macros expand).
 */
#define __KT_OK(check, cmd, text)					\
	do {								\
		long __rc = (long)(cmd);				\
		int __err = errno;					\
		check(0, __rc) {					\
			TH_LOG("%s failed: %s", text, strerror(__err));	\
		}							\
	} while (0)
#define ASSERT_OK(cmd) __KT_OK(ASSERT_EQ, cmd, #cmd)
#define EXPECT_OK(cmd) __KT_OK(EXPECT_EQ, cmd, #cmd)

/* ------------------------------------------------------------------------
 * sysfs
 */

/* Read a sysfs file into @buf without the trailing newline; -errno. */
static inline int __attribute__((format(printf, 3, 4)))
krdma_read_file(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* Entries of a directory other than . and ..; -1 if it cannot be read. */
static inline int __attribute__((format(printf, 1, 2)))
krdma_count_dir(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct dirent *de;
	va_list ap;
	DIR *dir;
	int n = 0;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dir);
	return n;
}

static inline int krdma_cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * Names of /sys/class/infiniband/ (sorted) into @names (room for @max);
 * returns how many there are (may exceed @max), 0 if the class is missing.
 */
static inline int krdma_sysfs_names(char (*names)[KRDMA_NAME_MAX], int max)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir(SYSFS_IB);
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (n < max) {
			size_t len = strnlen(de->d_name, KRDMA_NAME_MAX - 1);

			memcpy(names[n], de->d_name, len);
			names[n][len] = 0;
		}
		n++;
	}
	closedir(dir);
	if (names)
		qsort(names, n < max ? n : max, KRDMA_NAME_MAX, krdma_cmp_name);
	return n;
}

static inline int krdma_sysfs_num_devices(void)
{
	return krdma_sysfs_names(NULL, 0);
}

/* "xxxx:xxxx:xxxx:xxxx" (big-endian GUID) to the host-order u64. */
static inline int krdma_parse_guid(const char *s, uint64_t *guid)
{
	unsigned int a, b, c, d;
	int end = 0;

	if (sscanf(s, "%4x:%4x:%4x:%4x%n", &a, &b, &c, &d, &end) != 4 ||
	    end != 19 || s[end])
		return -1;
	*guid = (uint64_t)a << 48 | (uint64_t)b << 32 | (uint64_t)c << 16 | d;
	return 0;
}

/* "4: ACTIVE" and similar: the leading number. */
static inline int krdma_parse_leading_uint(const char *s, uint32_t *val)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s)
		return -1;
	*val = v;
	return 0;
}

/*
 * sysfs' "IB/RoCE v1" / "RoCE v2" as a krdma_gid_type; -1 if unknown.  The
 * first is RoCE v1 on an Ethernet port but for iWARP's (node type RNIC),
 * whose GIDs (its MACs) are of type IB.
 */
static inline int krdma_gid_type_from_sysfs(const char *s, uint32_t link_layer,
					    uint32_t node_type)
{
	if (!strcmp(s, "RoCE v2"))
		return KRDMA_GID_TYPE_ROCE_UDP_ENCAP;
	if (!strcmp(s, "IB/RoCE v1"))
		return link_layer == KRDMA_LINK_LAYER_ETHERNET &&
		       node_type != KRDMA_NODE_RNIC ?
			KRDMA_GID_TYPE_ROCE : KRDMA_GID_TYPE_IB;
	return -1;
}

static inline int krdma_link_layer_from_sysfs(const char *s)
{
	if (!strcmp(s, "Ethernet"))
		return KRDMA_LINK_LAYER_ETHERNET;
	if (!strcmp(s, "InfiniBand"))
		return KRDMA_LINK_LAYER_INFINIBAND;
	return KRDMA_LINK_LAYER_UNSPECIFIED;
}

static inline bool krdma_module_loaded(void)
{
	struct stat st;

	return stat("/sys/module/krdma", &st) == 0;
}

/* Write @s to a sysfs/procfs file; 0 or -1 with errno. */
static inline int kt_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* The first line of a file, without its newline; 0 or -1 with errno. */
static inline int kt_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

#include <sys/mount.h>

/*
 * cgroup2's root (mounted if it is not) in @root, with @controller ("cpu",
 * "rdma") enabled for its children; -1 without it (not built, or bound to
 * a cgroup v1 hierarchy).
 */
static inline int kt_cgroup2_root(char *root, size_t len,
				  const char *controller)
{
	char line[512], dev[64], dir[256], type[64], ctl[256] = "";
	FILE *f = fopen("/proc/mounts", "r");

	*root = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %255s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(root, len, "%s", dir);
			break;
		}
	if (f)
		fclose(f);
	if (!*root) {
		snprintf(root, len, "/sys/fs/cgroup");
		if (mount("none", root, "cgroup2", 0, NULL))
			return -1;
	}
	snprintf(line, sizeof(line), "%s/cgroup.controllers", root);
	if (kt_read_file(line, ctl, sizeof(ctl)) || !strstr(ctl, controller))
		return -1;
	snprintf(line, sizeof(line), "%s/cgroup.subtree_control", root);
	snprintf(ctl, sizeof(ctl), "+%s", controller);
	return kt_write_file(line, ctl);
}

/*
 * @dev's hca_handle (@handles) or hca_object in the rdma.current of cgroup
 * @cg, or -1.
 */
static inline long kt_rdmacg_current(const char *cg, const char *dev,
				     bool handles)
{
	char path[512], line[256], name[64];
	long h, o, n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/rdma.current", cg);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s hca_handle=%ld hca_object=%ld", name,
			   &h, &o) == 3 && !strcmp(name, dev)) {
			n = handles ? h : o;
			break;
		}
	if (f)
		fclose(f);
	return n;
}

/* @dev's hca_object in the rdma.current of cgroup @cg, or -1. */
static inline long kt_rdmacg_objects(const char *cg, const char *dev)
{
	return kt_rdmacg_current(cg, dev, false);
}

/* ------------------------------------------------------------------------
 * Skips and the device
 */

/* Why the tests cannot run here, or NULL. */
static inline const char *krdma_unavailable(void)
{
	struct stat st;

	if (geteuid() != 0)
		return "not root";
	if (stat(KRDMA_DEVICE_PATH, &st))
		return "no " KRDMA_DEVICE_PATH " (krdma.ko not loaded)";
	if (krdma_sysfs_num_devices() <= 0)
		return "no RDMA device in " SYSFS_IB;
	return NULL;
}

/* The highest command number in uapi/krdma.h: tables and ranges end here */
#define KT_CMD_LAST KRDMA_CMD_QUERY_SESSIONS

static inline int krdma_open(void)
{
	return open(KRDMA_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

static inline int krdma_info_get(int fd, struct krdma_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return ioctl(fd, KRDMA_GET_INFO, info);
}

/* ------------------------------------------------------------------------
 * QUERY_DEVICES snapshot
 */

struct krdma_snap {
	uint32_t ndev, nport, ngid;
	struct krdma_device_info *devs;
	struct krdma_port_info *ports;
	struct krdma_gid_info *gids;
};

static inline void krdma_snap_free(struct krdma_snap *s)
{
	free(s->devs);
	free(s->ports);
	free(s->gids);
	memset(s, 0, sizeof(*s));
}

/* Sizing call then the real one (again if something appeared). */
static inline int krdma_snap_get(int fd, uint32_t flags, uint32_t dev_index,
				 struct krdma_snap *s)
{
	int tries;

	memset(s, 0, sizeof(*s));
	for (tries = 0; tries < 10; tries++) {
		struct krdma_query_devices q = {
			.size = sizeof(q),
			.flags = flags,
			.dev_index = dev_index,
		};
		int err;

		if (!ioctl(fd, KRDMA_QUERY_DEVICES, &q))
			return 0;	/* nothing to report */
		if (errno != EMSGSIZE)
			return -1;
		s->devs = calloc(q.num_devices + 1, sizeof(*s->devs));
		s->ports = calloc(q.num_ports + 1, sizeof(*s->ports));
		s->gids = calloc(q.num_gids + 1, sizeof(*s->gids));
		if (!s->devs || !s->ports || !s->gids) {
			krdma_snap_free(s);
			errno = ENOMEM;
			return -1;
		}
		q.device_entry_size = sizeof(*s->devs);
		q.port_entry_size = sizeof(*s->ports);
		q.gid_entry_size = sizeof(*s->gids);
		q.devices_uptr = (uintptr_t)s->devs;
		q.ports_uptr = (uintptr_t)s->ports;
		q.gids_uptr = (uintptr_t)s->gids;
		if (!ioctl(fd, KRDMA_QUERY_DEVICES, &q)) {
			s->ndev = q.num_devices;
			s->nport = q.num_ports;
			s->ngid = q.num_gids;
			return 0;
		}
		err = errno;
		krdma_snap_free(s);
		errno = err;
		if (err != EMSGSIZE)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

static inline struct krdma_device_info *
krdma_snap_find(struct krdma_snap *s, const char *name)
{
	uint32_t i;

	for (i = 0; i < s->ndev; i++)
		if (!strncmp(s->devs[i].name, name, KRDMA_NAME_MAX))
			return &s->devs[i];
	return NULL;
}

static inline struct krdma_device_info *
krdma_snap_find_index(struct krdma_snap *s, uint32_t dev_index)
{
	uint32_t i;

	for (i = 0; i < s->ndev; i++)
		if (s->devs[i].dev_index == dev_index)
			return &s->devs[i];
	return NULL;
}

/* A dev_index that no listed device has (and larger than all of them). */
static inline uint32_t krdma_snap_unused_index(struct krdma_snap *s)
{
	uint32_t i, max = 0;

	for (i = 0; i < s->ndev; i++)
		if (s->devs[i].dev_index > max)
			max = s->devs[i].dev_index;
	return max + 1000;
}

/* ------------------------------------------------------------------------
 * Commands
 */

/* Run a shell command with its stdout sent to stderr; its exit status. */
static inline int __attribute__((format(printf, 1, 2)))
krdma_run(const char *fmt, ...)
{
	char cmd[1024], full[1100];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "{ %s ; } 1>&2", cmd);
	fflush(stdout);
	fflush(stderr);
	status = system(full);
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static inline bool krdma_have_cmd(const char *name)
{
	return krdma_run("command -v %s >/dev/null 2>&1", name) == 0;
}

/*
 * A test's own rxe device @ibdev on a new dummy netdev @netdev, up, with
 * the address @addr (NULL: none) before rxe sees it; first removes what a
 * run that failed half-way left.  0, or -1 with no dummy netdev to be had
 * (the test skips); the rest asserts.
 */
static inline int kt_rxe_dummy_add(struct __test_metadata *_metadata,
				   const char *ibdev, const char *netdev,
				   const char *addr)
{
	krdma_run("rdma link delete %s 2>/dev/null", ibdev);
	krdma_run("ip link delete %s 2>/dev/null", netdev);
	if (krdma_run("ip link add %s type dummy", netdev))
		return -1;
	ASSERT_EQ(0, krdma_run("ip link set %s up", netdev));
	if (addr)
		ASSERT_EQ(0, krdma_run("ip addr add %s dev %s", addr, netdev));
	ASSERT_EQ(0, krdma_run("rdma link add %s type rxe netdev %s", ibdev,
			       netdev));
	return 0;
}

/* ------------------------------------------------------------------------
 * Defects of the kernel's soft-RoCE driver (rxe) that a test would meet
 * instead of what it checks, each with the kernels that have it, read from
 * their rxe source (README, "Known problems").  Such a test skips, naming
 * the defect.
 */
#include <sys/utsname.h>

/* rxe's vendor ID (RXE_VENDOR_ID): how a test knows the device is rxe */
#define KT_RXE_VENDOR_ID 0xffffff
/* siw's (SIW_VENDOR_ID), for the tests of what krdma knows of it */
#define KT_SIW_VENDOR_ID 0x626d74

enum kt_rxe_defect {
	/*
	 * An RDMA WRITE or READ the responder refuses (rkey, access, range)
	 * is not NAKed: do_complete() returns before acknowledge() when the
	 * request took no receive WQE, so the requester resends until retry_cnt runs
	 * out (never, at 7).  5.10 has it; 6.1 and later acknowledge.
	 */
	KT_RXE_NO_ACCESS_NAK,
	/*
	 * A request NAKed for want of a receive (RNR) is sent again at once
	 * by the requester loop that sent it, not when the RNR timer fires:
	 * between two QPs of one device, whose packets rxe handles inline,
	 * with rnr_retry 7 and no receive ever posted, that loop never ends
	 * and the CPU locks up in softirq.  5.10 has it; 6.1 and later wait
	 * for the timer (wait_for_rnr_timer).
	 */
	KT_RXE_RNR_SPIN,
	/*
	 * A resent atomic request is answered with the first answer's skb,
	 * sent again though the IP layer has had it: between two hosts the
	 * output path can fragment it and __icmp_send() overrun its stack,
	 * a panic.  5.10 has it; 6.1 builds the answer again.
	 */
	KT_RXE_ATOMIC_RESEND,
};

/* Is the running kernel older than @major.@minor?  (No if unknown.) */
static inline bool kt_kernel_before(unsigned int major, unsigned int minor)
{
	unsigned int ma, mi;
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/* The reason to skip if the running kernel's rxe has @d, else NULL. */
static inline const char *kt_rxe_defect(enum kt_rxe_defect d)
{
	static const char *const what[] = {
		[KT_RXE_NO_ACCESS_NAK] = "sends no NAK for a refused RDMA WRITE or READ",
		[KT_RXE_RNR_SPIN] = "retries an RNR NAK at once, spinning in softirq",
		[KT_RXE_ATOMIC_RESEND] = "resends a sent skb for a resent atomic (panics)",
	};
	static char reason[128];
	struct utsname u;
	unsigned int major, minor;

	/* the tests run on rxe; a kernel without it has none of its defects */
	if (access("/sys/module/rdma_rxe", F_OK) || !kt_kernel_before(6, 1))
		return NULL;
	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return NULL;
	snprintf(reason, sizeof(reason), "rxe of Linux %u.%u %s", major, minor,
		 what[d]);
	return reason;
}

#define KT_SKIP_RXE_DEFECT(d)						\
	do {								\
		const char *__why = kt_rxe_defect(d);			\
									\
		if (__why)						\
			SKIP(return, "%s", __why);			\
	} while (0)

/* ------------------------------------------------------------------------
 * Data path: a device to run on, buffers, connections, WRs, completions
 * (krdma_transfer, krdma_post and the others).  Helpers return 0 or -1 with
 * errno set.
 */

#include <time.h>

#define KT_ACCESS_RC (KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ | \
		      KRDMA_ACCESS_REMOTE_ATOMIC)
#define KT_ACCESS_ALL (KRDMA_ACCESS_LOCAL_WRITE | KT_ACCESS_RC)

/* IB_WC_* status numbers (enum ib_wc_status) and wc_flags */
enum {
	KT_WC_SUCCESS = 0,
	KT_WC_LOC_LEN_ERR = 1,
	KT_WC_LOC_QP_OP_ERR = 2,
	KT_WC_LOC_PROT_ERR = 4,
	KT_WC_WR_FLUSH_ERR = 5,
	KT_WC_REM_INV_REQ_ERR = 9,
	KT_WC_REM_ACCESS_ERR = 10,
	KT_WC_REM_OP_ERR = 11,
	KT_WC_RETRY_EXC_ERR = 12,
	KT_WC_RNR_RETRY_EXC_ERR = 13,
};
#define KT_WC_GRH 1u
#define KT_WC_WITH_IMM 2u
#define KT_WC_WITH_INVALIDATE 4u
_Static_assert(KT_WC_GRH == KRDMA_WC_GRH &&
	       KT_WC_WITH_IMM == KRDMA_WC_WITH_IMM &&
	       KT_WC_WITH_INVALIDATE == KRDMA_WC_WITH_INVALIDATE,
	       "the uAPI's completion flags are verbs' IB_WC_* values");
#define KT_GRH_LEN 40u

/* An opcode's name (KRDMA_OP_*), for the logs. */
static inline const char *kt_op_name(uint32_t op)
{
	static const char *const names[] = {
		"SEND", "SEND_WITH_IMM", "RECV", "RDMA_WRITE",
		"RDMA_WRITE_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_ADD",
		"ATOMIC_CMP_SWP", "SEND_WITH_INV", "LOCAL_INV",
	};

	return op < ARRAY_SIZE(names) ? names[op] : "?";
}

/* Whether @transport (KRDMA_TRANSPORT_*) has the work request @op. */
static inline bool kt_transport_has(uint32_t transport, uint32_t op)
{
	switch (op) {
	case KRDMA_OP_SEND:
	case KRDMA_OP_SEND_WITH_IMM:
	case KRDMA_OP_RECV:
		return true;
	case KRDMA_OP_RDMA_WRITE:
	case KRDMA_OP_RDMA_WRITE_WITH_IMM:
		return transport != KRDMA_TRANSPORT_UD;
	case KRDMA_OP_RDMA_READ:
	case KRDMA_OP_ATOMIC_FETCH_ADD:
	case KRDMA_OP_ATOMIC_CMP_SWP:
		return transport == KRDMA_TRANSPORT_RC;
	default:
		return false;
	}
}

/* Sender-side completion opcode: IB reports sends with imm as SEND etc. */
static inline bool kt_send_wc_opcode_ok(uint32_t wr_op, uint32_t wc_op)
{
	if (wc_op == wr_op)
		return true;
	if (wr_op == KRDMA_OP_SEND_WITH_IMM)
		return wc_op == KRDMA_OP_SEND;
	if (wr_op == KRDMA_OP_RDMA_WRITE_WITH_IMM)
		return wc_op == KRDMA_OP_RDMA_WRITE;
	return false;
}

/* One port of one device and the source GID connections there use. */
struct kt_dev {
	uint32_t dev_index;
	uint32_t port_num;
	uint32_t gid_index;
	uint32_t gid_type;
	uint8_t gid[16];
	struct krdma_device_info info;
	struct krdma_port_info port;
};

/* Is @gid IPv4-mapped (of @addr, unless NULL)? */
static inline bool kt_gid_is_v4mapped(const uint8_t *gid, const char *addr)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };
	struct in_addr in;

	if (memcmp(gid, prefix, sizeof(prefix)))
		return false;
	if (!addr)
		return true;
	return inet_pton(AF_INET, addr, &in) == 1 && !memcmp(gid + 12, &in, 4);
}

/*
 * Why krdmactl cannot be tested here (with @rxe: on that device), or NULL.
 */
static inline const char *kt_krdmactl_unavailable(const char *rxe)
{
	static char why[80];
	const char *w = krdma_unavailable();

	if (w)
		return w;
	if (rxe) {
		snprintf(why, sizeof(why), SYSFS_IB "/%s", rxe);
		if (access(why, F_OK)) {
			snprintf(why, sizeof(why), "no %s", rxe);
			return why;
		}
	}
	if (!krdma_have_cmd("krdmactl"))
		return "no krdmactl in PATH";
	return NULL;
}

/*
 * The device the suite runs on: $KRDMA_TEST_DEV, else rxe0.  Every fixture
 * and helper takes its device and address from here, so that the one suite
 * runs on another driver (siw0) as it does on rxe.
 */
static inline const char *kt_test_dev(void)
{
	const char *dev = getenv("KRDMA_TEST_DEV");

	return dev && *dev ? dev : "rxe0";
}

/* Whether the device was chosen by $KRDMA_TEST_DEV (not rxe0 by default). */
static inline bool kt_test_dev_set(void)
{
	const char *dev = getenv("KRDMA_TEST_DEV");

	return dev && *dev;
}

/*
 * The test device's address: $KRDMA_TEST_ADDR (with @v6 $KRDMA_TEST_ADDR6),
 * else $RXE0_ADDR (192.0.2.1) and $RXE0_ADDR6 (NULL).
 */
static inline const char *kt_test_addr(bool v6)
{
	const char *addr = getenv(v6 ? "KRDMA_TEST_ADDR6" : "KRDMA_TEST_ADDR");

	if (addr && *addr)
		return addr;
	addr = getenv(v6 ? "RXE0_ADDR6" : "RXE0_ADDR");
	if (addr && *addr)
		return addr;
	return v6 ? NULL : "192.0.2.1";
}

/*
 * A second device of the test device's driver, reachable from it, for the
 * tests between two devices: $KRDMA_TEST_DEV2 at $KRDMA_TEST_ADDR2 (with
 * @v6 $KRDMA_TEST_ADDR2_6); for rxe0, rxe1 at $RXE1_ADDR and $RXE1_ADDR6
 * (the one VM's veth peer).  NULL when there is none.
 */
static inline const char *kt_test_dev2(void)
{
	const char *dev = getenv("KRDMA_TEST_DEV2");

	if (dev && *dev)
		return dev;
	return strcmp(kt_test_dev(), "rxe0") ? NULL : "rxe1";
}

static inline const char *kt_test_addr2(bool v6)
{
	const char *addr = getenv(v6 ? "KRDMA_TEST_ADDR2_6" :
				  "KRDMA_TEST_ADDR2");

	if (!(addr && *addr) && !strcmp(kt_test_dev(), "rxe0"))
		addr = getenv(v6 ? "RXE1_ADDR6" : "RXE1_ADDR");
	return addr && *addr ? addr : NULL;
}

/* Why there is no kt_test_addr2(@v6), for a skip. */
static inline const char *kt_no_dev2(bool v6)
{
	static char why[2 * KRDMA_NAME_MAX + 48];

	if (!kt_test_dev2())
		snprintf(why, sizeof(why),
			 "%s: no second device (KRDMA_TEST_DEV2 not set)",
			 kt_test_dev());
	else
		snprintf(why, sizeof(why), "%s: no %s address of %s",
			 kt_test_dev(), v6 ? "IPv6" : "IPv4", kt_test_dev2());
	return why;
}

/*
 * The device named @name (NULL: the test device, kt_test_dev(); when that
 * is rxe0 by default and missing, the first one with an active port), its
 * first active port, and a GID there: the RoCE v2 GID of kt_test_addr(),
 * else any IPv4-mapped RoCE v2 GID, else any RoCE v2 GID, else the first
 * one (iWARP's).  -1 with errno ENODEV if there is none.
 */
static inline int kt_dev_pick(int fd, const char *name, struct kt_dev *d)
{
	const char *addr = kt_test_addr(false);
	struct krdma_snap s;
	uint32_t i, p, g;
	int best = -1, best_score = -1;

	memset(d, 0, sizeof(*d));
	if (krdma_snap_get(fd, 0, 0, &s))
		return -1;
	for (i = 0; i < s.ndev && best < 0; i++) {
		struct krdma_device_info *di = &s.devs[i];

		if (!name && (kt_test_dev_set() ||
			      krdma_snap_find(&s, kt_test_dev())))
			name = kt_test_dev();
		if (name && strcmp(di->name, name))
			continue;
		for (p = 0; p < di->phys_port_cnt && best < 0; p++) {
			struct krdma_port_info *pi = &s.ports[di->first_port + p];

			if (pi->state != KRDMA_PORT_ACTIVE)
				continue;
			for (g = 0; g < pi->num_gids; g++) {
				struct krdma_gid_info *gi = &s.gids[pi->first_gid + g];
				bool v2 = gi->gid_type == KRDMA_GID_TYPE_ROCE_UDP_ENCAP;
				int score = 0;

				if (v2 && kt_gid_is_v4mapped(gi->gid, addr))
					score = 3;
				else if (v2 && kt_gid_is_v4mapped(gi->gid, NULL))
					score = 2;
				else if (v2)
					score = 1;
				if (score > best_score) {
					best_score = score;
					d->info = *di;
					d->port = *pi;
					d->dev_index = di->dev_index;
					d->port_num = pi->port_num;
					d->gid_index = gi->gid_index;
					d->gid_type = gi->gid_type;
					memcpy(d->gid, gi->gid, 16);
				}
			}
			if (best_score >= 0)
				best = 0;
		}
	}
	krdma_snap_free(&s);
	if (best < 0) {
		errno = ENODEV;
		return -1;
	}
	return 0;
}

/*
 * What a test needs of its device beyond RC over a connection of rdma_cm,
 * for kt_dev_lacks().  krdma refuses what a device lacks up front with the
 * errno uapi/krdma.h documents; a test that needs it skips instead, naming
 * the device and the capability it lacks, so that a run on another driver
 * (siw) says what it did not cover.
 */
enum kt_cap {
	KT_CAP_MANUAL_CONN,	/* CONN_CREATE/CONN_MODIFY: not on iWARP */
	KT_CAP_UC,
	KT_CAP_UD,
	KT_CAP_ATOMIC,		/* atomic_cap not NONE */
	KT_CAP_IMM,		/* immediate data: not on iWARP */
	KT_CAP_SRQ,		/* max_srq */
	KT_CAP_SGE_RD,		/* max_sge_rd > 1 */
	KT_CAP_PSN,		/* PSNs: not on iWARP, a TCP stream */
	KT_CAP_REMOTE_ERR_WC,	/* a remote error in the sender's completion */
};

static inline bool kt_dev_iwarp(const struct kt_dev *d)
{
	return d->info.node_type == KRDMA_NODE_RNIC;
}

/* The peer's QP number @qp_num as CONN_QUERY reports it: 0 on iWARP. */
static inline uint32_t kt_peer_qpn(const struct kt_dev *d, uint32_t qp_num)
{
	return kt_dev_iwarp(d) ? 0 : qp_num;
}

/*
 * Why the device @d cannot run a test that needs @cap ("siw0: atomic_cap
 * none"), or NULL if it can.
 */
static inline const char *kt_dev_lacks(const struct kt_dev *d, enum kt_cap cap)
{
	static char why[KRDMA_NAME_MAX + 64];
	const char *name = d->info.name;
	const char *miss = NULL;

	switch (cap) {
	case KT_CAP_MANUAL_CONN:
		if (kt_dev_iwarp(d))
			miss = "iWARP connects only through rdma_cm";
		break;
	case KT_CAP_UC:
		if (kt_dev_iwarp(d))
			miss = "iWARP has no UC";
		break;
	case KT_CAP_UD:
		if (kt_dev_iwarp(d))
			miss = "iWARP has no UD";
		break;
	case KT_CAP_ATOMIC:
		if (d->info.atomic_cap == KRDMA_ATOMIC_NONE)
			miss = "atomic_cap none";
		break;
	case KT_CAP_IMM:
		if (kt_dev_iwarp(d))
			miss = "iWARP has no immediate data";
		break;
	case KT_CAP_SRQ:
		if (!d->info.max_srq)
			miss = "max_srq 0";
		break;
	case KT_CAP_PSN:
		if (kt_dev_iwarp(d))
			miss = "iWARP keeps no PSN";
		break;
	case KT_CAP_REMOTE_ERR_WC:
		/* complete once TCP has it; a TERMINATE follows */
		if (kt_dev_iwarp(d))
			miss = "iWARP's sender completes before the remote error";
		break;
	case KT_CAP_SGE_RD:
		if (d->info.max_sge_rd < 2) {
			snprintf(why, sizeof(why), "%s: max_sge_rd %u", name,
				 d->info.max_sge_rd);
			return why;
		}
		break;
	}
	if (!miss)
		return NULL;
	snprintf(why, sizeof(why), "%s: %s", name, miss);
	return why;
}

/*
 * The largest buffer one registration covers on @d, as uapi/krdma.h bounds
 * BUF_ALLOC: max_fast_reg_page_list_len pages of the largest page size in
 * page_size_cap (siw: 1 MiB); 0 when that is no bound a test meets.
 */
static inline uint64_t kt_dev_max_buf(const struct kt_dev *d)
{
	uint64_t cap = d->info.page_size_cap;
	unsigned int shift;

	if (!cap || !d->info.max_fast_reg_page_list_len)
		return 0;
	shift = 63 - __builtin_clzll(cap);
	if (shift >= 32)
		return 0;
	return (uint64_t)d->info.max_fast_reg_page_list_len << shift;
}

/* The transport's own capability (RC needs none). */
static inline const char *kt_dev_lacks_transport(const struct kt_dev *d,
						 uint32_t transport)
{
	if (transport == KRDMA_TRANSPORT_UC)
		return kt_dev_lacks(d, KT_CAP_UC);
	if (transport == KRDMA_TRANSPORT_UD)
		return kt_dev_lacks(d, KT_CAP_UD);
	return NULL;
}

/*
 * Why connections of @transport cannot be made and connected by hand
 * (kt_conn_self(), kt_conn_pair()) on @d, or NULL.
 */
static inline const char *kt_dev_lacks_conn(const struct kt_dev *d,
					    uint32_t transport)
{
	return kt_dev_lacks_transport(d, transport) ?:
	       kt_dev_lacks(d, KT_CAP_MANUAL_CONN);
}

/* Why @op (KRDMA_OP_*) cannot be tested on @d, or NULL. */
static inline const char *kt_dev_lacks_op(const struct kt_dev *d, uint32_t op)
{
	switch (op) {
	case KRDMA_OP_ATOMIC_FETCH_ADD:
	case KRDMA_OP_ATOMIC_CMP_SWP:
		return kt_dev_lacks(d, KT_CAP_ATOMIC);
	case KRDMA_OP_SEND_WITH_IMM:
	case KRDMA_OP_RDMA_WRITE_WITH_IMM:
		return kt_dev_lacks(d, KT_CAP_IMM);
	}
	return NULL;
}

/*
 * In a test or FIXTURE_SETUP: skip (and return) unless the device @d has
 * what the test needs; the skip says the device and what it lacks.
 */
#define __KT_NEED(why_expr)						\
	do {								\
		const char *__why = (why_expr);				\
									\
		if (__why)						\
			SKIP(return, "%s", __why);			\
	} while (0)
#define KT_NEED(d, cap) __KT_NEED(kt_dev_lacks(d, cap))
#define KT_NEED_TRANSPORT(d, transport)					\
	__KT_NEED(kt_dev_lacks_transport(d, transport))
#define KT_NEED_CONN(d, transport) __KT_NEED(kt_dev_lacks_conn(d, transport))
#define KT_NEED_OP(d, op) __KT_NEED(kt_dev_lacks_op(d, op))

/* Buffers */

struct kt_buf {
	uint32_t handle, lkey, rkey;
	uint64_t len, addr, mmap_offset;
	uint32_t num_mrs;	/* a user buffer's MRs */
};

static inline int kt_buf_alloc(int fd, uint32_t dev_index, uint32_t access,
			       uint64_t len, struct kt_buf *b)
{
	struct krdma_buf_alloc a = {
		.size = sizeof(a),
		.dev_index = dev_index,
		.access = access,
		.length = len,
	};

	memset(b, 0, sizeof(*b));
	if (ioctl(fd, KRDMA_BUF_ALLOC, &a))
		return -1;
	b->handle = a.handle;
	b->lkey = a.lkey;
	b->rkey = a.rkey;
	b->len = len;
	b->addr = a.addr;
	b->mmap_offset = a.mmap_offset;
	return 0;
}

/* A zero-copy buffer over the caller's memory (KRDMA_BUF_REG_USER). */
static inline int kt_buf_reg_user(int fd, uint32_t dev_index, uint32_t access,
				  const void *p, uint64_t len, struct kt_buf *b)
{
	struct krdma_buf_reg_user r = {
		.size = sizeof(r),
		.dev_index = dev_index,
		.access = access,
		.uaddr = (uintptr_t)p,
		.length = len,
	};

	memset(b, 0, sizeof(*b));
	if (ioctl(fd, KRDMA_BUF_REG_USER, &r))
		return -1;
	b->handle = r.handle;
	b->lkey = r.lkey;
	b->rkey = r.rkey;
	b->len = len;
	b->addr = r.addr;
	b->num_mrs = r.num_mrs;
	return 0;
}

static inline int kt_destroy(int fd, uint32_t handle)
{
	struct krdma_destroy d = { .size = sizeof(d), .handle = handle };

	return ioctl(fd, KRDMA_DESTROY, &d);
}

static inline int kt_buf_rw(int fd, uint32_t handle, uint64_t off, void *p,
			    uint64_t len, bool write)
{
	struct krdma_buf_rw rw = {
		.size = sizeof(rw),
		.flags = write ? KRDMA_BUF_RW_WRITE : 0,
		.handle = handle,
		.offset = off,
		.length = len,
		.data_uptr = (uintptr_t)p,
	};

	return ioctl(fd, KRDMA_BUF_RW, &rw);
}

static inline int kt_buf_write(int fd, uint32_t handle, uint64_t off,
			       const void *p, uint64_t len)
{
	return kt_buf_rw(fd, handle, off, (void *)p, len, true);
}

static inline int kt_buf_read(int fd, uint32_t handle, uint64_t off, void *p,
			      uint64_t len)
{
	return kt_buf_rw(fd, handle, off, p, len, false);
}

/* mmap(2) a whole buffer (rounded up to pages); MAP_FAILED on error. */
static inline void *kt_buf_mmap(int fd, const struct kt_buf *b)
{
	long psz = sysconf(_SC_PAGESIZE);
	size_t len = (b->len + psz - 1) / psz * psz;

	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    b->mmap_offset);
}

static inline void kt_buf_munmap(void *p, const struct kt_buf *b)
{
	long psz = sysconf(_SC_PAGESIZE);

	munmap(p, (b->len + psz - 1) / psz * psz);
}

/* Patterns: byte i of the pattern @seed; tests derive seeds from what runs. */
static inline uint8_t kt_pattern_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i / 8 + 1) * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)seed * 0xbf58476d1ce4e5b9ull + seed);

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return x >> (8 * (i % 8));
}

static inline uint32_t kt_seed(uint32_t test, uint64_t size, uint32_t iter)
{
	return test * 0x01000193u ^ (uint32_t)size * 0x9e3779b1u ^ iter * 0x85ebca77u;
}

static inline void kt_fill(void *p, uint64_t len, uint32_t seed)
{
	uint8_t *b = p;
	uint64_t i;

	for (i = 0; i < len; i++)
		b[i] = kt_pattern_byte(seed, i);
}

/* Index of the first byte that is not the pattern, or -1. */
static inline int64_t kt_check(const void *p, uint64_t len, uint32_t seed)
{
	const uint8_t *b = p;
	uint64_t i;

	for (i = 0; i < len; i++)
		if (b[i] != kt_pattern_byte(seed, i))
			return i;
	return -1;
}

/* Index of the first byte that is not @val, or -1. */
static inline int64_t kt_check_byte(const void *p, uint64_t len, uint8_t val)
{
	const uint8_t *b = p;
	uint64_t i;

	for (i = 0; i < len; i++)
		if (b[i] != val)
			return i;
	return -1;
}

/* Sessions: KRDMA_QUERY_SESSIONS, whole */

struct kt_sessions {
	struct krdma_query_sessions q;	/* the last answer's counts */
	struct krdma_session_info *s;
	struct krdma_conn_info *c;
};

static inline void kt_sessions_free(struct kt_sessions *ks)
{
	free(ks->s);
	free(ks->c);
	memset(ks, 0, sizeof(*ks));
}

/*
 * Everything @fd may list, sized as the uAPI says (zero capacities, then
 * the counts EMSGSIZE wrote): 0, or -1 with errno.  Free with
 * kt_sessions_free(); @ks starts zeroed or freed.
 */
static inline int kt_sessions_get(int fd, struct kt_sessions *ks)
{
	struct krdma_query_sessions *q = &ks->q;
	int tries;

	for (tries = 0; tries < 10; tries++) {
		kt_sessions_free(ks);
		q->size = sizeof(*q);
		q->session_entry_size = sizeof(*ks->s);
		q->conn_entry_size = sizeof(*ks->c);
		if (!ioctl(fd, KRDMA_QUERY_SESSIONS, q)) {
			errno = EPROTO;	/* never: the caller's is listed */
			return -1;
		}
		if (errno != EMSGSIZE)
			return -1;
		q->num_sessions += 2;	/* room for newcomers */
		q->num_conns += 8;
		ks->s = calloc(q->num_sessions, sizeof(*ks->s));
		ks->c = calloc(q->num_conns, sizeof(*ks->c));
		if (!ks->s || !ks->c)
			return -1;
		q->sessions_uptr = (uintptr_t)ks->s;
		q->conns_uptr = (uintptr_t)ks->c;
		if (!ioctl(fd, KRDMA_QUERY_SESSIONS, q))
			return 0;
		if (errno != EMSGSIZE)
			return -1;
	}
	return -1;
}

/* The listed connection with local QP number @qpn, or NULL. */
static inline const struct krdma_conn_info *
kt_sessions_conn(const struct kt_sessions *ks, uint32_t qpn)
{
	for (uint32_t i = 0; i < ks->q.num_conns; i++)
		if (ks->c[i].qp_num == qpn &&
		    !(ks->c[i].flags & KRDMA_CONN_INFO_GONE))
			return &ks->c[i];
	return NULL;
}

/* Connections */

struct kt_conn {
	const struct kt_dev *dev;	/* the device it was created on */
	uint32_t handle, qp_num, psn, lid, transport;
	uint8_t gid[16];
	struct krdma_qp_caps caps;
};

/* A connection; with KRDMA_CONN_SRQ in @flags it receives from @srq. */
static inline int kt_conn_create_srq(int fd, const struct kt_dev *d,
				     uint32_t transport, uint32_t flags,
				     uint32_t srq,
				     const struct krdma_qp_caps *caps,
				     struct kt_conn *c)
{
	struct krdma_conn_create cc = {
		.size = sizeof(cc),
		.flags = flags,
		.dev_index = d->dev_index,
		.port_num = d->port_num,
		.gid_index = d->gid_index,
		.transport = transport,
		.srq_handle = srq,
	};

	memset(c, 0, sizeof(*c));
	if (caps)
		cc.caps = *caps;
	if (ioctl(fd, KRDMA_CONN_CREATE, &cc))
		return -1;
	c->dev = d;
	c->handle = cc.handle;
	c->qp_num = cc.qp_num;
	c->psn = cc.psn;
	c->lid = cc.lid;
	c->transport = transport;
	memcpy(c->gid, cc.gid, 16);
	c->caps = cc.caps;
	return 0;
}

static inline int kt_conn_create(int fd, const struct kt_dev *d,
				 uint32_t transport, uint32_t flags,
				 const struct krdma_qp_caps *caps,
				 struct kt_conn *c)
{
	return kt_conn_create_srq(fd, d, transport, flags, 0, caps, c);
}

/* A CONN_MODIFY of @c towards @peer (NULL for UD), default attributes. */
static inline void kt_modify_init(struct krdma_conn_modify *m,
				  const struct kt_conn *c,
				  const struct kt_conn *peer)
{
	memset(m, 0, sizeof(*m));
	m->size = sizeof(*m);
	m->handle = c->handle;
	if (peer) {
		m->dest_qp_num = peer->qp_num;
		m->dest_psn = peer->psn;
		m->dest_lid = peer->lid;
		memcpy(m->dest_gid, peer->gid, 16);
	}
}

static inline int kt_conn_connect(int fd, const struct kt_conn *c,
				  const struct kt_conn *peer)
{
	struct krdma_conn_modify m;

	kt_modify_init(&m, c, c->transport == KRDMA_TRANSPORT_UD ? NULL : peer);
	return ioctl(fd, KRDMA_CONN_MODIFY, &m);
}

/* A connection of @transport, connected to itself (RC/UC) or ready (UD). */
static inline int kt_conn_self(int fd, const struct kt_dev *d,
			       uint32_t transport,
			       const struct krdma_qp_caps *caps,
			       struct kt_conn *c)
{
	return kt_conn_create(fd, d, transport, 0, caps, c) ?:
	       kt_conn_connect(fd, c, c);
}

/* Two connections of @transport connected to each other. */
static inline int kt_conn_pair(int fd, const struct kt_dev *d,
			       uint32_t transport, uint32_t flags,
			       const struct krdma_qp_caps *caps,
			       struct kt_conn *a, struct kt_conn *b)
{
	return kt_conn_create(fd, d, transport, flags, caps, a) ?:
	       kt_conn_create(fd, d, transport, flags, caps, b) ?:
	       kt_conn_connect(fd, a, b) ?: kt_conn_connect(fd, b, a);
}

static inline int kt_conn_query(int fd, uint32_t handle,
				struct krdma_conn_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return ioctl(fd, KRDMA_CONN_QUERY, q);
}

static inline int kt_ah_create(int fd, uint32_t conn, const uint8_t *gid,
			       uint32_t *ah)
{
	struct krdma_ah_create a = { .size = sizeof(a), .conn_handle = conn };

	memcpy(a.dest_gid, gid, 16);
	if (ioctl(fd, KRDMA_AH_CREATE, &a))
		return -1;
	*ah = a.handle;
	return 0;
}

/* Work requests and completions */

static inline void kt_wr_init(struct krdma_wr *wr, uint64_t wr_id,
			      uint32_t opcode, uint32_t flags)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = opcode;
	wr->flags = flags;
}

/* Append an SGE. */
static inline void kt_wr_sge(struct krdma_wr *wr, uint32_t buf, uint64_t off,
			     uint32_t len)
{
	struct krdma_sge *sge = &wr->sge[wr->num_sge++];

	sge->buf_handle = buf;
	sge->offset = off;
	sge->length = len;
}

/* POST @n WRs; *@accepted (if given) gets num_wrs as written back. */
static inline int kt_post(int fd, uint32_t conn, const struct krdma_wr *wrs,
			  uint32_t n, uint32_t *accepted)
{
	struct krdma_post p = {
		.size = sizeof(p),
		.handle = conn,
		.num_wrs = n,
		.wr_entry_size = sizeof(*wrs),
		.wrs_uptr = (uintptr_t)wrs,
	};
	int ret = ioctl(fd, KRDMA_POST, &p);
	int err = errno;

	if (accepted)
		*accepted = p.num_wrs;
	errno = err;
	return ret;
}

static inline int kt_post1(int fd, uint32_t conn, const struct krdma_wr *wr)
{
	return kt_post(fd, conn, wr, 1, NULL);
}

/* One POLL: the number of completions, or -1. */
static inline int kt_poll(int fd, uint32_t conn, struct krdma_wc *wcs,
			  uint32_t n, uint32_t timeout_ms)
{
	struct krdma_poll p = {
		.size = sizeof(p),
		.handle = conn,
		.num_wcs = n,
		.wc_entry_size = sizeof(*wcs),
		.timeout_ms = timeout_ms,
		.wcs_uptr = (uintptr_t)wcs,
	};

	if (ioctl(fd, KRDMA_POLL, &p))
		return -1;
	return p.num_wcs;
}

static inline uint64_t kt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The kernel log from now on: a /dev/kmsg reader at its end, for
 * kt_kmsg_find(); -1 if there is none.
 */
static inline int kt_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Is there a record with @fmt's text in the log since kt_kmsg_open() (or
 * since the last record this found)?  Waits up to 2 s for it.
 */
static inline bool kt_kmsg_find(int fd, const char *fmt, ...)
{
	uint64_t end = kt_now_ms() + 2000;
	char want[256], rec[8192];
	va_list ap;
	ssize_t n;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	while (fd >= 0) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n > 0) {
			rec[n] = 0;
			if (strstr(rec, want))
				return true;
			continue;
		}
		/* EPIPE: records overwritten before read; read on */
		if (n < 0 && errno == EPIPE)
			continue;
		if (kt_now_ms() >= end)
			break;
		usleep(20 * 1000);
	}
	return false;
}

/*
 * CONN_QUERY of a connection whose QP is going to ERR: an error completion
 * can be polled before the QP's state says so (rxe posts the completion,
 * then moves the QP), so this asks again for up to 2 s while the state is
 * not ERR yet.  As kt_conn_query(); @q holds the last answer.
 */
static inline int kt_conn_query_err(int fd, uint32_t handle,
				    struct krdma_conn_query *q)
{
	uint64_t end = kt_now_ms() + 2000;
	int ret;

	while (!(ret = kt_conn_query(fd, handle, q)) &&
	       q->state != KRDMA_CONN_ERR && kt_now_ms() < end)
		usleep(1000);
	return ret;
}

/*
 * Collect @n completions within @timeout_ms in all: how many arrived, or -1
 * if a POLL failed.
 */
static inline int kt_poll_n(int fd, uint32_t conn, struct krdma_wc *wcs,
			    uint32_t n, uint32_t timeout_ms)
{
	uint64_t end = kt_now_ms() + timeout_ms;
	uint32_t got = 0;

	while (got < n) {
		uint64_t now = kt_now_ms();
		int r;

		if (now >= end)
			break;
		r = kt_poll(fd, conn, wcs + got, n - got,
			    (uint32_t)(end - now));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return got ? (int)got : -1;
		}
		got += r;
	}
	return got;
}

/*
 * A signaled RDMA WRITE on @conn of @buf's first @len bytes to @remote_off
 * in @buf with @rkey (a connection to itself or its pair's: the buffer is
 * both ends), and its completion with @status within 5 s.
 */
static inline void kt_write_wait(struct __test_metadata *_metadata, int fd,
				 uint32_t conn, uint64_t wr_id,
				 const struct kt_buf *buf, uint32_t len,
				 uint64_t remote_off, uint32_t rkey,
				 uint32_t status)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_wr_init(&wr, wr_id, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, buf->handle, 0, len);
	wr.remote_addr = buf->addr + remote_off;
	wr.rkey = rkey;
	ASSERT_OK(kt_post1(fd, conn, &wr));
	ASSERT_EQ(1, kt_poll_n(fd, conn, &wc, 1, 5000));
	ASSERT_EQ(status, wc.status);
}

/*
 * Waits until the RDMA WRITEs posted on @a (of session @afd) have reached
 * its peer @b (of @bfd): @b receives a zero-length SEND posted behind them,
 * which one connection delivers in order.  On RC they are then in @b's
 * memory; on UC placed or dropped.  A WRITE's own completion does not say
 * it on UC, which sends no acknowledgement, nor on iWARP, where it may say
 * only that the data left.  @b has no RECV posted and no SRQ, @a no
 * completion unreaped, and @a is not @b.
 */
static inline void kt_write_fence(struct __test_metadata *_metadata, int afd,
				  uint32_t a, int bfd, uint32_t b)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_wr_init(&wr, 0xfe0ce, KRDMA_OP_RECV, 0);
	ASSERT_OK(kt_post1(bfd, b, &wr));
	kt_wr_init(&wr, 0xfe0cf, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	ASSERT_OK(kt_post1(afd, a, &wr));
	ASSERT_EQ(1, kt_poll_n(afd, a, &wc, 1, 5000));
	ASSERT_EQ(0xfe0cfull, wc.wr_id);
	ASSERT_EQ(0u, wc.status);
	ASSERT_EQ(1, kt_poll_n(bfd, b, &wc, 1, 5000));
	ASSERT_EQ(0xfe0ceull, wc.wr_id);
	ASSERT_EQ(0u, wc.status);
}

/*
 * lockdep's report of siw's sk_callback_lock, a kernel bug
 * (docs/known-problems.rst), is not krdma's: known when, within the 200
 * records after its first, it names siw's callback and the socket lock
 * (as the VM runner decides).  One report being read: @left records still
 * to look at (0: none open).
 */
#define KT_SIW_LOCKDEP "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected"
struct kt_siw_lockdep {
	unsigned int left;
	bool siw, clock;
};

/* 1 if the report open in @k ended (at @rec, or the log's end: NULL) unknown. */
static inline int kt_siw_lockdep_step(struct kt_siw_lockdep *k,
				      const char *rec)
{
	if (!k->left)
		return 0;
	if (rec) {
		k->siw |= strstr(rec, "siw_cm_llp_data_ready") ||
			  strstr(rec, "siw_cm_llp_state_change");
		k->clock |= !!strstr(rec, "(clock-AF_INET)");
	}
	if (k->siw && k->clock) {
		k->left = 0;
		return 0;
	}
	if (rec && --k->left)
		return 0;
	k->left = 0;
	return 1;
}

/*
 * Kernel log records after @mark (a sequence number from kt_dmesg_mark())
 * that report a kernel problem (the VM runner's list of patterns), read
 * from /dev/kmsg, with the next sequence number in @last: counting lines of
 * dmesg before and after instead miscounts once the ring wraps.  -1 if
 * the log cannot be read.  @mark = 0 counts every record still there.
 */
static inline int kt_dmesg_scan(uint64_t mark, uint64_t *last)
{
	struct kt_siw_lockdep k = { 0 };
	static const char *const pats[] = {
		"BUG:", "WARNING:", "Oops", "KASAN", "UBSAN", "refcount_t",
		"hung_task", "blocked for more than", "soft lockup",
		"rcu_sched self-detected", "kmemleak",
	};
	char rec[8192];
	unsigned long long seq;
	unsigned int i;
	int fd, n = 0;
	ssize_t len;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	*last = mark;
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten while we read: skip it */
		if (len <= 0)
			break;
		rec[len] = 0;
		if (sscanf(rec, "%*u,%llu,", &seq) != 1 || seq < mark)
			continue;
		*last = seq + 1;
		if (strstr(rec, KT_SIW_LOCKDEP)) {
			n += kt_siw_lockdep_step(&k, NULL);
			k = (struct kt_siw_lockdep){ .left = 200 };
			continue;
		}
		n += kt_siw_lockdep_step(&k, rec);
		for (i = 0; i < ARRAY_SIZE(pats); i++)
			if (strstr(rec, pats[i])) {
				n++;
				break;
			}
	}
	close(fd);
	return n + kt_siw_lockdep_step(&k, NULL);
}

/* Where the kernel log is now (0 if it cannot be read). */
static inline uint64_t kt_dmesg_mark(void)
{
	uint64_t last = 0;

	kt_dmesg_scan(0, &last);
	return last;
}

/* Problem reports (BUG, WARNING, KASAN, ...) logged since @mark. */
static inline int kt_dmesg_bad_since(uint64_t mark)
{
	uint64_t last;

	return kt_dmesg_scan(mark, &last);
}

/* Become @uid (and gid @uid, no supplementary groups): no capability left. */
static inline int kt_become_user(uid_t uid)
{
	return setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	       setresuid(uid, uid, uid) ? -1 : 0;
}

/* This process' pinned memory (VmPin of /proc/self/status) in kB, or -1. */
static inline long kt_vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Drop @cap from this process' effective, permitted and inheritable sets. */
static inline int kt_drop_cap(int cap)
{
	struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };
	struct { uint32_t effective, permitted, inheritable; } data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[cap / 32].effective &= ~(1u << (cap % 32));
	data[cap / 32].permitted &= ~(1u << (cap % 32));
	data[cap / 32].inheritable &= ~(1u << (cap % 32));
	return syscall(SYS_capset, &hdr, data);
}

/* ------------------------------------------------------------------------
 * Fixtures: a session, a device, and the commands on the session.
 */

/*
 * In a FIXTURE_SETUP: a session on /dev/krdma, or -1 with the test skipped
 * saying why (the setup returns then).
 */
static inline int kt_session_open(struct __test_metadata *_metadata)
{
	const char *why = krdma_unavailable();
	int fd;

	if (why)
		SKIP(return -1, "%s", why);
	fd = krdma_open();
	ASSERT_LE(0, fd) {
		TH_LOG("open %s: %s", KRDMA_DEVICE_PATH, strerror(errno));
	}
	return fd;
}

/* Why kt_dev_pick(fd, NULL, ...) found no device, for a skip. */
static inline const char *kt_no_dev(void)
{
	static char why[KRDMA_NAME_MAX + 48];

	if (!kt_test_dev_set())
		return "no device with an active port";
	snprintf(why, sizeof(why), "%s: no such device with an active port",
		 kt_test_dev());
	return why;
}

/*
 * kt_session_open() and a device with an active port in @dev (the test
 * device, kt_test_dev()): the session, or -1 with the test skipped.
 */
static inline int kt_session_open_dev(struct __test_metadata *_metadata,
				      struct kt_dev *dev)
{
	int fd = kt_session_open(_metadata);

	if (fd >= 0 && kt_dev_pick(fd, NULL, dev)) {
		close(fd);
		SKIP(return -1, "%s", kt_no_dev());
	}
	return fd;
}

/* Does the loaded module have @feature (KRDMA_FEATURE_*)? */
static inline bool kt_module_has(uint64_t feature)
{
	struct krdma_info info;
	int fd = krdma_open();
	bool has;

	if (fd < 0)
		return false;
	has = !krdma_info_get(fd, &info) && (info.features & feature);
	close(fd);
	return has;
}

/*
 * kt_session_open_dev() for tests of a feature (KRDMA_FEATURE_*): the
 * session, or -1 with the test skipped if the module lacks it.
 */
#define kt_session_open_feature(_metadata, feature, dev)		\
	__kt_session_open_feature(_metadata, feature, #feature, dev)
static inline int __kt_session_open_feature(struct __test_metadata *_metadata,
					    uint64_t feature, const char *name,
					    struct kt_dev *dev)
{
	struct krdma_info info;
	int fd = kt_session_open(_metadata);

	if (fd < 0)
		return -1;
	ASSERT_OK(krdma_info_get(fd, &info));
	if (!(info.features & feature)) {
		close(fd);
		SKIP(return -1, "no %s", name);
	}
	if (kt_dev_pick(fd, NULL, dev)) {
		close(fd);
		SKIP(return -1, "%s", kt_no_dev());
	}
	return fd;
}

/*
 * The fixture `obj` of the tests of one object kind (krdma_ah, krdma_buffers,
 * krdma_destroy, krdma_qp): a session with a device, and the snapshot the
 * tests check their objects against. A macro, as the harness's FIXTURE()
 * defines the struct and functions in the test file; the fixture keeps the
 * name obj so the tests stay obj.*.
 */
#define KT_OBJ_FIXTURE()						\
	FIXTURE(obj)							\
	{								\
		int fd;							\
		struct kt_dev dev;					\
		struct krdma_snap snap;					\
		long psz;						\
	};								\
									\
	FIXTURE_SETUP(obj)						\
	{								\
		self->psz = sysconf(_SC_PAGESIZE);			\
		self->fd = kt_session_open_dev(_metadata, &self->dev);	\
		if (self->fd < 0)					\
			return;						\
		ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &self->snap));	\
	}								\
									\
	FIXTURE_TEARDOWN(obj)						\
	{								\
		krdma_snap_free(&self->snap);				\
		if (self->fd >= 0)					\
			close(self->fd);				\
	}

/*
 * A session, GET_INFO's answer and, where there is one, a device with an
 * active port (have_dev): the fixture @name of the programs that try every
 * command (krdma_contract) or race them (krdma_races).
 */
#define KT_INFO_FIXTURE(name)						\
	FIXTURE(name)							\
	{								\
		int fd;							\
		struct krdma_info info;					\
		struct kt_dev dev;					\
		bool have_dev;						\
	};								\
									\
	FIXTURE_SETUP(name)						\
	{								\
		self->fd = kt_session_open(_metadata);			\
		if (self->fd < 0)					\
			return;						\
		ASSERT_OK(krdma_info_get(self->fd, &self->info));	\
		self->have_dev = !kt_dev_pick(self->fd, NULL, &self->dev); \
	}								\
									\
	FIXTURE_TEARDOWN(name)						\
	{								\
		if (self->fd >= 0)					\
			close(self->fd);				\
	}

/* The errnos uapi/krdma.h documents for every command. */
static inline bool kt_common_errno(int err)
{
	switch (err) {
	case ENOTTY: case EFAULT: case EINVAL: case E2BIG: case EOPNOTSUPP:
	case ENOENT: case ENODEV: case EPERM: case EMSGSIZE: case ENOMEM:
	case EBUSY: case ENETDOWN:
		return true;
	}
	return false;
}

/*
 * The commands on a fixture's session (self->fd), as the iommufd selftests
 * have them: test_cmd_X(args) asserts that kt_X(self->fd, args) succeeds;
 * test_err_X(errno, args) expects it to fail with exactly that errno.
 * test_cmd_ioctl()/test_err_ioctl() are the same for a bare ioctl.
 */
#define test_cmd_ioctl(cmd, arg) ASSERT_OK(ioctl(self->fd, cmd, arg))
#define test_err_ioctl(_errno, cmd, arg)				\
	EXPECT_ERRNO(_errno, ioctl(self->fd, cmd, arg))

#define test_cmd_buf_alloc(...) ASSERT_OK(kt_buf_alloc(self->fd, __VA_ARGS__))
#define test_err_buf_alloc(_errno, ...)					\
	EXPECT_ERRNO(_errno, kt_buf_alloc(self->fd, __VA_ARGS__))
#define test_cmd_buf_write(...) ASSERT_OK(kt_buf_write(self->fd, __VA_ARGS__))
#define test_err_buf_write(_errno, ...)					\
	EXPECT_ERRNO(_errno, kt_buf_write(self->fd, __VA_ARGS__))
#define test_cmd_buf_read(...) ASSERT_OK(kt_buf_read(self->fd, __VA_ARGS__))
#define test_err_buf_read(_errno, ...)					\
	EXPECT_ERRNO(_errno, kt_buf_read(self->fd, __VA_ARGS__))
#define test_cmd_destroy(handle) ASSERT_OK(kt_destroy(self->fd, handle))
#define test_err_destroy(_errno, handle)				\
	EXPECT_ERRNO(_errno, kt_destroy(self->fd, handle))

/*
 * The creates and connects skip first where the device lacks the transport
 * or a connection by hand (kt_dev_lacks_conn(): iWARP's QPs come from
 * rdma_cm alone, CONN_CREATE is refused there).
 */
#define test_cmd_conn_create(d, transport, ...)				\
	do {								\
		KT_NEED_CONN(d, transport);				\
		ASSERT_OK(kt_conn_create(self->fd, d, transport,	\
					 __VA_ARGS__));			\
	} while (0)
#define test_err_conn_create(_errno, ...)				\
	EXPECT_ERRNO(_errno, kt_conn_create(self->fd, __VA_ARGS__))
#define test_cmd_conn_connect(c, peer)					\
	do {								\
		if ((c)->dev)						\
			KT_NEED_CONN((c)->dev, (c)->transport);		\
		ASSERT_OK(kt_conn_connect(self->fd, c, peer));		\
	} while (0)
#define test_err_conn_connect(_errno, c, peer)				\
	EXPECT_ERRNO(_errno, kt_conn_connect(self->fd, c, peer))
#define test_cmd_conn_self(d, transport, ...)				\
	do {								\
		KT_NEED_CONN(d, transport);				\
		ASSERT_OK(kt_conn_self(self->fd, d, transport,		\
				       __VA_ARGS__));			\
	} while (0)
/*
 * test_cmd_conn_pair(): through rdma_cm where the device connects only so
 * (kt_conn_pair_any()): a test that needs a pair made by hand uses
 * kt_conn_pair() after KT_NEED_CONN().
 */
#define test_cmd_conn_pair(d, transport, ...)				\
	do {								\
		KT_NEED_TRANSPORT(d, transport);			\
		ASSERT_OK(kt_conn_pair_any(self->fd, d, transport,	\
					   __VA_ARGS__));		\
	} while (0)
#define test_cmd_conn_query(handle, q)					\
	ASSERT_OK(kt_conn_query(self->fd, handle, q))
#define test_err_conn_query(_errno, handle, q)				\
	EXPECT_ERRNO(_errno, kt_conn_query(self->fd, handle, q))
#define test_cmd_ah_create(...) ASSERT_OK(kt_ah_create(self->fd, __VA_ARGS__))
#define test_err_ah_create(_errno, ...)					\
	EXPECT_ERRNO(_errno, kt_ah_create(self->fd, __VA_ARGS__))

#define test_cmd_post(...) ASSERT_OK(kt_post(self->fd, __VA_ARGS__))
#define test_err_post(_errno, ...)					\
	EXPECT_ERRNO(_errno, kt_post(self->fd, __VA_ARGS__))
#define test_cmd_post1(conn, wr) ASSERT_OK(kt_post1(self->fd, conn, wr))
#define test_err_post1(_errno, conn, wr)				\
	EXPECT_ERRNO(_errno, kt_post1(self->fd, conn, wr))

/* ------------------------------------------------------------------------
 * Background programs: spawn under timeout(1), wait, capture the output.
 */

#define KT_PROC_TIMEOUT 60	/* timeout(1) around each program */

struct kt_proc {
	pid_t pid;
	int status;		/* exit code, -1 if it did not exit */
	bool split_err;		/* stderr into path.err, not into path */
	char path[80];		/* its stdout (and stderr unless split_err) */
	char *out;		/* stdout, then stderr; "" until it ended */
};

/* p->out, or "" while there is none. */
static inline const char *kt_out(const struct kt_proc *p)
{
	return p->out ? p->out : "";
}

/*
 * Runs "timeout @secs @cmd" through sh in the background, its output into
 * /tmp/@prefix.PID.SEQ[.@tag]; with @split_err its stderr goes to a file of
 * its own (a program whose stdout is buffered would otherwise have its
 * stderr land mid-line).
 */
static inline int kt_spawn_for(struct kt_proc *p, const char *prefix,
			       const char *tag, bool split_err, int secs,
			       const char *cmd)
{
	static int seq;
	char full[1100], err[96];
	int fd, efd = -1;

	free(p->out);
	memset(p, 0, sizeof(*p));
	p->status = -1;
	p->split_err = split_err;
	snprintf(p->path, sizeof(p->path), "/tmp/%s.%d.%d%s%s", prefix,
		 getpid(), seq++, tag ? "." : "", tag ? tag : "");
	snprintf(full, sizeof(full), "exec timeout %d %s", secs, cmd);
	p->out = strdup("");
	fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (split_err) {
		snprintf(err, sizeof(err), "%s.err", p->path);
		efd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	}
	if (fd < 0 || (split_err && efd < 0))
		goto err;
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	if (p->pid < 0)
		goto err;
	if (!p->pid) {
		dup2(fd, STDOUT_FILENO);
		dup2(split_err ? efd : fd, STDERR_FILENO);
		execl("/bin/sh", "sh", "-c", full, (char *)NULL);
		_exit(127);
	}
	close(fd);
	if (efd >= 0)
		close(efd);
	return 0;
err:
	if (fd >= 0)
		close(fd);
	if (efd >= 0)
		close(efd);
	return -1;
}

/* kt_spawn_for() with KT_PROC_TIMEOUT: a program that ends by itself. */
static inline int kt_spawn(struct kt_proc *p, const char *prefix,
			   const char *tag, bool split_err, const char *cmd)
{
	return kt_spawn_for(p, prefix, tag, split_err, KT_PROC_TIMEOUT, cmd);
}

/* Appends the file @path to p->out and removes it. */
static inline void kt_slurp(struct kt_proc *p, const char *path)
{
	size_t used = p->out ? strlen(p->out) : 0;
	struct stat st;
	char *out;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !(out = realloc(p->out, used + st.st_size + 1))) {
		close(fd);
		return;
	}
	p->out = out;
	n = read(fd, p->out + used, st.st_size);
	p->out[used + (n > 0 ? n : 0)] = 0;
	close(fd);
	unlink(path);
}

/* Collects the output files into p->out (never NULL after this). */
static inline void kt_read_output(struct kt_proc *p)
{
	char err[96];

	free(p->out);
	p->out = strdup("");
	kt_slurp(p, p->path);
	if (p->split_err) {
		snprintf(err, sizeof(err), "%s.err", p->path);
		kt_slurp(p, err);
	}
}

/* Records the end of the program, from waitpid()'s @status. */
static inline void kt_exited(struct kt_proc *p, int status)
{
	p->pid = 0;
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	kt_read_output(p);
}

/* Has the program ended?  Then collects its status and output. */
static inline bool kt_check_exit(struct kt_proc *p)
{
	int status;

	if (p->pid <= 0 || waitpid(p->pid, &status, WNOHANG) != p->pid)
		return false;
	kt_exited(p, status);
	return true;
}

/* Waits for the program (timeout(1) bounds it) and collects its output. */
static inline void kt_reap(struct kt_proc *p)
{
	int status;

	if (p->pid <= 0)
		return;
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	kt_exited(p, status);
}

/* Kills the program if it still runs, reaps it and frees its output. */
static inline void kt_proc_end(struct kt_proc *p)
{
	if (p->pid > 0)
		kill(p->pid, SIGKILL);
	kt_reap(p);
	free(p->out);
	p->out = NULL;
}

/*
 * Waits for both programs; once one has failed, the other (which may wait
 * forever for a peer) gets @grace seconds, then SIGTERM (again every 20
 * seconds), so a broken case costs seconds, not the full timeout.
 */
static inline void kt_reap_pair(struct kt_proc *a, struct kt_proc *b,
				int grace)
{
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	struct kt_proc *procs[2] = { a, b };
	int i, kill_at = -1, ticks = 0;

	while (a->pid > 0 || b->pid > 0) {
		for (i = 0; i < 2; i++)
			if (kt_check_exit(procs[i]) && procs[i]->status &&
			    kill_at < 0)
				kill_at = ticks + grace * 20;
		if (kill_at >= 0 && ticks >= kill_at) {
			for (i = 0; i < 2; i++)
				if (procs[i]->pid > 0)
					kill(procs[i]->pid, SIGTERM);
			kill_at = ticks + 20 * 20;
		}
		nanosleep(&delay, NULL);
		ticks++;
	}
}

/* Arguments a program refuses as bad usage, and what it says about them. */
struct kt_usage {
	const char *args;
	const char *says;
};

/*
 * "@cmd @bad[i].args" for each of @n, run as kt_spawn() runs it in @p:
 * each must exit 2 (bad usage), saying @bad[i].says.
 */
static inline void kt_expect_usage(struct __test_metadata *_metadata,
				   struct kt_proc *p, const char *prefix,
				   bool split_err, const char *cmd,
				   const struct kt_usage *bad, unsigned int n)
{
	char line[256];
	unsigned int i;

	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%s %s", cmd, bad[i].args);
		ASSERT_OK(kt_spawn(p, prefix, "bad", split_err, line));
		kt_reap(p);
		EXPECT_EQ(2, p->status) {
			TH_LOG("%s: exit %d", line, p->status);
		}
		EXPECT_NE(NULL, strstr(kt_out(p), bad[i].says)) {
			TH_LOG("%s:\n%s", line, kt_out(p));
		}
	}
}

/*
 * rdma_cm helpers: addresses, listeners, events, accept, and a CM_CONNECT
 * run from a thread (CONNECT and ACCEPT both block until the handshake ends,
 * so one side of a loopback test must run elsewhere).
 */
#include <pthread.h>
#include <time.h>

#define KC_CM_MS 10000		/* handshake and event waits: rxe under TCG */
#define CM_MS KC_CM_MS

/*
 * Signal thread @t with @sig every 100 ms, the first time after 300 ms,
 * until *@done is set or 5 s passed: it should be blocked in a call the
 * signal ends by then, but a stalled guest may not have let it reach the
 * call yet, and a signal that comes before the call only runs the handler.
 * A call no signal ends is left to its caller's timeout checks.
 */
static inline void kt_signal_until_done(pthread_t t, int sig, const int *done)
{
	int i;

	usleep(300 * 1000);
	for (i = 0; i < 50 && !__atomic_load_n(done, __ATOMIC_ACQUIRE); i++) {
		pthread_kill(t, sig);
		usleep(100 * 1000);
	}
}

/*
 * SIGALRM after @ms, and every @ms after that until kt_alarm_stop(): for a
 * blocking call a signal should end, made right after.  A single alarm()
 * could fire before the call when the guest stalls between the two, and
 * only run the handler; the next one finds the call, @ms into it.
 */
static inline int kt_alarm_repeat(unsigned int ms)
{
	struct timeval every = { ms / 1000, (ms % 1000) * 1000 };
	struct itimerval it = { .it_value = every, .it_interval = every };

	return setitimer(ITIMER_REAL, &it, NULL);
}

static inline void kt_alarm_stop(void)
{
	struct itimerval off = { 0 };

	setitimer(ITIMER_REAL, &off, NULL);
}

/* @addr (IPv4 or IPv6 text, NULL or "" for family 0) and @port. */
static inline int kc_sockaddr(struct krdma_sockaddr *sa, const char *addr,
			      uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (!addr || !*addr)
		return 0;
	sa->port = port;
	if (inet_pton(AF_INET, addr, sa->addr) == 1) {
		sa->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, sa->addr) == 1) {
		sa->family = AF_INET6;
		return 0;
	}
	errno = EINVAL;
	return -1;
}

static inline bool kc_sockaddr_is(const struct krdma_sockaddr *sa, const char *addr)
{
	struct krdma_sockaddr want;

	if (kc_sockaddr(&want, addr, 0))
		return false;
	return sa->family == want.family &&
	       !memcmp(sa->addr, want.addr, sizeof(want.addr));
}

static inline void kc_listen_init(struct krdma_cm_listen *l, const char *addr,
				  uint16_t port)
{
	memset(l, 0, sizeof(*l));
	l->size = sizeof(*l);
	kc_sockaddr(&l->addr, addr, port);
}

static inline int kc_listen(int fd, const char *addr, uint16_t port,
			    uint32_t *handle, uint16_t *bound)
{
	struct krdma_cm_listen l;

	kc_listen_init(&l, addr, port);
	if (ioctl(fd, KRDMA_CM_LISTEN, &l))
		return -1;
	*handle = l.handle;
	if (bound)
		*bound = l.port;
	return 0;
}

static inline void kc_get_events_init(struct krdma_get_events *g,
				      struct krdma_event *ev, uint32_t n,
				      uint32_t timeout_ms)
{
	memset(g, 0, sizeof(*g));
	g->size = sizeof(*g);
	g->num_events = n;
	g->event_entry_size = sizeof(*ev);
	g->timeout_ms = timeout_ms;
	g->events_uptr = (uintptr_t)ev;
}

/* Up to @n events, waiting @timeout_ms for the first: how many, or -1. */
static inline int kc_events(int fd, struct krdma_event *ev, uint32_t n,
			    uint32_t timeout_ms)
{
	struct krdma_get_events g;

	kc_get_events_init(&g, ev, n, timeout_ms);
	if (ioctl(fd, KRDMA_GET_EVENTS, &g))
		return -1;
	return g.num_events;
}

/*
 * The next event of @type (on @handle unless 0) within @timeout_ms; events
 * before it are dropped.  0, or -1 with errno (ETIMEDOUT if none came).
 */
static inline int kc_wait_event(int fd, uint32_t type, uint32_t handle,
				uint32_t timeout_ms, struct krdma_event *out)
{
	uint64_t end = kt_now_ms() + timeout_ms;
	struct krdma_event ev;

	for (;;) {
		uint64_t now = kt_now_ms();
		int n;

		if (now >= end) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = kc_events(fd, &ev, 1, (uint32_t)(end - now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 1 && ev.type == type && (!handle || ev.handle == handle)) {
			if (out)
				*out = ev;
			return 0;
		}
	}
}

static inline const char *kc_event_name(uint32_t type)
{
	static const char *const names[] = {
		"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
		"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR",
		"UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED",
		"DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR",
		"ADDR_CHANGE", "TIMEWAIT_EXIT",
	};

	if (type < ARRAY_SIZE(names))
		return names[type];
	if (type == KRDMA_EVENT_CONN_ERROR)
		return "CONN_ERROR";
	return type == KRDMA_EVENT_OVERFLOW ? "OVERFLOW" : "?";
}

static inline void kc_accept_init(struct krdma_cm_accept *a, uint32_t handle,
				  const void *pdata, uint32_t plen)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->handle = handle;
	a->timeout_ms = CM_MS;
	a->private_data_len = plen;
	if (pdata)
		memcpy(a->private_data, pdata, plen);
}

static inline int kc_accept(int fd, uint32_t handle, const void *pdata,
			    uint32_t plen, struct krdma_cm_accept *out)
{
	struct krdma_cm_accept a;
	int ret;

	kc_accept_init(&a, handle, pdata, plen);
	ret = ioctl(fd, KRDMA_CM_ACCEPT, &a);
	if (out)
		*out = a;
	return ret;
}

static inline int kc_reject(int fd, uint32_t handle, const void *pdata,
			    uint32_t plen)
{
	struct krdma_cm_accept a;

	kc_accept_init(&a, handle, pdata, plen);
	a.timeout_ms = 0;
	return ioctl(fd, KRDMA_CM_REJECT, &a);
}

static inline int kc_disconnect(int fd, uint32_t handle)
{
	struct krdma_cm_disconnect d = { .size = sizeof(d), .handle = handle };

	return ioctl(fd, KRDMA_CM_DISCONNECT, &d);
}

/* A CM_CONNECT run in a thread of its own. */
struct kc_connect {
	int fd;
	struct krdma_cm_connect cmd;
	int ret, err;
	uint64_t ms;		/* how long the ioctl took */
	pthread_t thread;
	bool started;
	bool finished;		/* the ioctl returned (set by the thread) */
};

static inline void kc_connect_init(struct kc_connect *c, int fd, const char *dst,
				   uint16_t port, const void *pdata, uint32_t plen)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->cmd.size = sizeof(c->cmd);
	c->cmd.transport = KRDMA_TRANSPORT_RC;
	c->cmd.timeout_ms = CM_MS;
	kc_sockaddr(&c->cmd.dst, dst, port);
	c->cmd.private_data_len = plen;
	if (pdata)
		memcpy(c->cmd.private_data, pdata, plen);
	c->ret = -1;
	c->err = EINPROGRESS;
}

static inline void kc_connect_run(struct kc_connect *c)
{
	uint64_t t0 = kt_now_ms();

	c->ret = ioctl(c->fd, KRDMA_CM_CONNECT, &c->cmd);
	c->err = c->ret ? errno : 0;
	c->ms = kt_now_ms() - t0;
	__atomic_store_n(&c->finished, true, __ATOMIC_RELEASE);
}

static inline void *kc_connect_fn(void *arg)
{
	kc_connect_run(arg);
	return NULL;
}

static inline int kc_connect_start(struct kc_connect *c)
{
	int ret = pthread_create(&c->thread, NULL, kc_connect_fn, c);

	c->started = !ret;
	return ret;
}

/* Join within @ms: 0, or ETIMEDOUT if the CONNECT still runs. */
static inline int kc_connect_join(struct kc_connect *c, uint32_t ms)
{
	uint64_t end = kt_now_ms() + ms;

	if (!c->started)
		return 0;
	while (!__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) {
		if (kt_now_ms() >= end)
			return ETIMEDOUT;
		usleep(1000);
	}
	pthread_join(c->thread, NULL);
	c->started = false;
	return 0;
}

/*
 * Two connections of @transport on @d connected to each other through
 * rdma_cm at kt_test_addr(), in the one session @fd: @a connected, @b
 * accepted (receiving from the SRQ @b_srq unless 0), the listener gone and
 * the handshake's events taken.  0, or -1 with errno.
 */
static inline int kt_conn_pair_cm_srq(int fd, const struct kt_dev *d,
				      uint32_t transport, uint32_t flags,
				      uint32_t b_srq,
				      const struct krdma_qp_caps *caps,
				      struct kt_conn *a, struct kt_conn *b)
{
	const char *addr = kt_test_addr(false);
	struct krdma_cm_accept acc;
	struct krdma_cm_listen l;
	struct krdma_event ev;
	struct kc_connect c;
	int ret, err;

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	kc_listen_init(&l, addr, 0);
	l.transport = transport;
	if (ioctl(fd, KRDMA_CM_LISTEN, &l))
		return -1;
	kc_connect_init(&c, fd, addr, l.port, NULL, 0);
	c.cmd.transport = transport;
	c.cmd.flags = flags;
	if (caps)
		c.cmd.caps = *caps;
	ret = kc_connect_start(&c);
	if (ret) {
		kt_destroy(fd, l.handle);
		errno = ret;
		return -1;
	}
	ret = kc_wait_event(fd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS, &ev);
	if (!ret) {
		kc_accept_init(&acc, ev.handle, NULL, 0);
		acc.flags = flags | (b_srq ? KRDMA_CONN_SRQ : 0);
		acc.srq_handle = b_srq;
		if (caps)
			acc.caps = *caps;
		ret = ioctl(fd, KRDMA_CM_ACCEPT, &acc);
	}
	err = errno;
	/* the CONNECT ends by its own timeout: wait for it, it uses @c */
	if (kc_connect_join(&c, 3 * CM_MS)) {
		pthread_join(c.thread, NULL);
		c.started = false;
	}
	kt_destroy(fd, l.handle);
	if (ret || c.ret) {
		errno = ret ? err : c.err;
		return -1;
	}
	a->dev = d;
	b->dev = d;
	a->transport = transport;
	b->transport = transport;
	a->handle = c.cmd.handle;
	a->qp_num = c.cmd.qp_num;
	a->caps = c.cmd.caps;
	b->handle = ev.handle;
	b->qp_num = acc.qp_num;
	b->caps = acc.caps;
	memcpy(a->gid, d->gid, 16);
	memcpy(b->gid, d->gid, 16);
	/* the handshake's events would keep the session readable */
	while (kc_events(fd, &ev, 1, 0) > 0)
		;
	return 0;
}

static inline int kt_conn_pair_cm(int fd, const struct kt_dev *d,
				  uint32_t transport, uint32_t flags,
				  const struct krdma_qp_caps *caps,
				  struct kt_conn *a, struct kt_conn *b)
{
	return kt_conn_pair_cm_srq(fd, d, transport, flags, 0, caps, a, b);
}

/*
 * An RC connection of @flags on @d, to post or wait on: made by hand, or
 * where the device connects only through rdma_cm (iWARP) the connected
 * end of a kt_conn_pair_cm(), whose peer stays in the session.
 */
static inline int kt_conn_rc_any(int fd, const struct kt_dev *d,
				 uint32_t flags, struct kt_conn *c)
{
	struct kt_conn peer;

	if (kt_dev_lacks(d, KT_CAP_MANUAL_CONN))
		return kt_conn_pair_cm(fd, d, KRDMA_TRANSPORT_RC, flags, NULL,
				       c, &peer);
	return kt_conn_create(fd, d, KRDMA_TRANSPORT_RC, flags, NULL, c);
}

/*
 * kt_conn_pair(), or on a device that connects only through rdma_cm
 * (iWARP) kt_conn_pair_cm(): a connected pair wherever there can be one.
 */
static inline int kt_conn_pair_any(int fd, const struct kt_dev *d,
				   uint32_t transport, uint32_t flags,
				   const struct krdma_qp_caps *caps,
				   struct kt_conn *a, struct kt_conn *b)
{
	if (kt_dev_lacks(d, KT_CAP_MANUAL_CONN))
		return kt_conn_pair_cm(fd, d, transport, flags, caps, a, b);
	return kt_conn_pair(fd, d, transport, flags, caps, a, b);
}

/* KRDMA_TEST_F with the harness timeout given in seconds. */
#define KRDMA_TEST_F_TIMEOUT(fixture, name, secs)			\
	static void fixture##_##name##_body(				\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture) *self,				\
		const FIXTURE_VARIANT(fixture) *variant);		\
	TEST_F_TIMEOUT(fixture, name, secs)				\
	{								\
		if (!_metadata->skip)					\
			fixture##_##name##_body(_metadata, self, variant); \
	}								\
	static void fixture##_##name##_body(				\
		struct __test_metadata __attribute__((unused)) *_metadata, \
		FIXTURE_DATA(fixture) __attribute__((unused)) *self,	\
		const FIXTURE_VARIANT(fixture) __attribute__((unused)) *variant)

/*
 * userfaultfd: a page whose first access, the kernel's too, waits until the
 * test supplies it, to stall a call in a page fault that does not end.
 */
#include <poll.h>
#include <linux/userfaultfd.h>

/* A page of @uffd's, missing: the first access to it waits for the test. */
static inline void *kt_uffd_page(int *uffd)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	long page = sysconf(_SC_PAGESIZE);
	void *mem;

	*uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (*uffd < 0)
		return NULL;
	if (ioctl(*uffd, UFFDIO_API, &api)) {
		close(*uffd);
		*uffd = -1;
		return NULL;
	}
	mem = mmap(NULL, page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	reg.range.start = (uintptr_t)mem;
	reg.range.len = page;
	if (ioctl(*uffd, UFFDIO_REGISTER, &reg)) {
		munmap(mem, page);
		return NULL;
	}
	return mem;
}

/* Wait up to 10 s for the page fault the call takes in the kernel. */
static inline bool kt_uffd_faulted(int uffd)
{
	struct pollfd p = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	/* (the fd is O_NONBLOCK: on a blocking one poll() says POLLERR) */
	if (poll(&p, 1, 10000) != 1 || !(p.revents & POLLIN))
		return false;
	return read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
	       msg.event == UFFD_EVENT_PAGEFAULT;
}

/* Supply the page, with @src's bytes at its start. */
static inline int kt_uffd_supply(int uffd, void *mem, const void *src,
				 size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	char *buf = aligned_alloc(page, page);
	struct uffdio_copy c = {
		.dst = (uintptr_t)mem,
		.len = page,
	};
	int ret;

	if (!buf)
		return -1;
	memset(buf, 0, page);
	memcpy(buf, src, len);
	c.src = (uintptr_t)buf;
	ret = ioctl(uffd, UFFDIO_COPY, &c);
	free(buf);
	return ret;
}

#endif /* KRDMA_TEST_H */
