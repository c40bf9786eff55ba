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

/* The call must succeed. */
#define ASSERT_OK(cmd)							\
	do {								\
		long __rc = (long)(cmd);				\
		int __err = errno;					\
		ASSERT_EQ(0, __rc) {					\
			TH_LOG("%s failed: %s", #cmd, strerror(__err));	\
		}							\
	} while (0)

#define EXPECT_OK(cmd)							\
	do {								\
		long __rc = (long)(cmd);				\
		int __err = errno;					\
		EXPECT_EQ(0, __rc) {					\
			TH_LOG("%s failed: %s", #cmd, strerror(__err));	\
		}							\
	} while (0)

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

/* sysfs' "IB/RoCE v1" / "RoCE v2" as a krdma_gid_type; -1 if unknown. */
static inline int krdma_gid_type_from_sysfs(const char *s, uint32_t link_layer)
{
	if (!strcmp(s, "RoCE v2"))
		return KRDMA_GID_TYPE_ROCE_UDP_ENCAP;
	if (!strcmp(s, "IB/RoCE v1"))
		return link_layer == KRDMA_LINK_LAYER_ETHERNET ?
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

#endif /* KRDMA_TEST_H */
