// SPDX-License-Identifier: GPL-2.0
/*
 * krdma ioctl contract: command dispatch, the iommufd-style size/flags/
 * reserved validation of every command, KRDMA_GET_INFO and the sizing,
 * filling and error rules of KRDMA_QUERY_DEVICES.
 */
#include "krdma_test.h"

FIXTURE(krdma)
{
	int fd;
	struct krdma_info info;
	struct krdma_snap snap;
};

FIXTURE_SETUP(krdma)
{
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(krdma_info_get(self->fd, &self->info));
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &self->snap));
	ASSERT_LT(0u, self->snap.ndev);
}

FIXTURE_TEARDOWN(krdma)
{
	krdma_snap_free(&self->snap);
	if (self->fd >= 0)
		close(self->fd);
}

/* A page followed by an inaccessible one, for EFAULT tests. */
static char *map_guarded_page(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	char *p;

	p = mmap(NULL, 2 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + psz, psz, PROT_NONE)) {
		munmap(p, 2 * psz);
		return NULL;
	}
	memset(p, 0, psz);
	return p;
}

static void unmap_guarded_page(char *p)
{
	munmap(p, 2 * sysconf(_SC_PAGESIZE));
}

/* ------------------------------------------------------------------------
 * The device node and command dispatch
 */

KRDMA_TEST_F(krdma, device_node_is_char_device)
{
	struct stat st;

	ASSERT_OK(stat(KRDMA_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_OK(fstat(self->fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
}

/* Numbers outside the command range, and a wrong type byte. */
KRDMA_TEST_F(krdma, unknown_command_enotty)
{
	static const unsigned int nrs[] = {
		0x00, 0x01, KRDMA_CMD_BASE - 1, KT_CMD_LAST + 1,
		0xa0, 0xfe, 0xff,
	};
	union {
		struct krdma_info info;
		char raw[4096];
	} buf;
	unsigned int i;

	memset(&buf, 0, sizeof(buf));
	buf.info.size = sizeof(buf);
	for (i = 0; i < ARRAY_SIZE(nrs); i++) {
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE, nrs[i]), &buf),
			     "nr 0x%02x", nrs[i]);
	}
	/* The right numbers under another ioctl type. */
	test_err_ioctl(ENOTTY, _IO(KRDMA_TYPE + 1, KRDMA_CMD_GET_INFO), &buf);
	test_err_ioctl(ENOTTY, _IO(KRDMA_TYPE - 1, KRDMA_CMD_QUERY_DEVICES),
		       &buf);
	test_err_ioctl(ENOTTY, _IO(0, KRDMA_CMD_GET_INFO), &buf);
	/* A tty ioctl, which the vfs passes to the driver. */
	test_err_ioctl(ENOTTY, TCGETS, &buf);
}

struct cmd_feature {
	unsigned int nr;
	const char *name;
	uint64_t features;	/* implemented if any of these is set */
};

#define OBJ_FEATURES (KRDMA_FEATURE_BUFFERS | KRDMA_FEATURE_USER_BUFFERS | \
		      KRDMA_FEATURE_MANUAL_CONN | KRDMA_FEATURE_RDMA_CM | \
		      KRDMA_FEATURE_SRQ)
#define CONN_FEATURES (KRDMA_FEATURE_MANUAL_CONN | KRDMA_FEATURE_RDMA_CM)

static const struct cmd_feature cmd_features[] = {
	{ KRDMA_CMD_DESTROY, "DESTROY", OBJ_FEATURES },
	{ KRDMA_CMD_BUF_ALLOC, "BUF_ALLOC", KRDMA_FEATURE_BUFFERS },
	{ KRDMA_CMD_BUF_REG_USER, "BUF_REG_USER", KRDMA_FEATURE_USER_BUFFERS },
	{ KRDMA_CMD_BUF_RW, "BUF_RW", KRDMA_FEATURE_BUFFERS | KRDMA_FEATURE_USER_BUFFERS },
	{ KRDMA_CMD_CONN_CREATE, "CONN_CREATE", KRDMA_FEATURE_MANUAL_CONN },
	{ KRDMA_CMD_CONN_MODIFY, "CONN_MODIFY", KRDMA_FEATURE_MANUAL_CONN },
	{ KRDMA_CMD_CONN_QUERY, "CONN_QUERY", CONN_FEATURES },
	{ KRDMA_CMD_CM_LISTEN, "CM_LISTEN", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_CM_CONNECT, "CM_CONNECT", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_CM_ACCEPT, "CM_ACCEPT", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_CM_REJECT, "CM_REJECT", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_CM_DISCONNECT, "CM_DISCONNECT", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_GET_EVENTS, "GET_EVENTS", KRDMA_FEATURE_RDMA_CM },
	{ KRDMA_CMD_POST, "POST", CONN_FEATURES },
	{ KRDMA_CMD_POLL, "POLL", CONN_FEATURES },
	{ KRDMA_CMD_AH_CREATE, "AH_CREATE", CONN_FEATURES },
	{ KRDMA_CMD_SRQ_CREATE, "SRQ_CREATE", KRDMA_FEATURE_SRQ },
	{ KRDMA_CMD_BENCH, "BENCH", KRDMA_FEATURE_BENCH },
	{ KRDMA_CMD_QUERY_SESSIONS, "QUERY_SESSIONS", KRDMA_FEATURE_QUERY_SESSIONS },
};

/* A command whose feature bit is clear is ENOTTY. */
KRDMA_TEST_F(krdma, unimplemented_command_enotty)
{
	union {
		struct krdma_bench bench;
		char raw[4096];
	} buf;
	unsigned int i, checked = 0;

	/* Every defined command number is in the table. */
	ASSERT_EQ((size_t)(KT_CMD_LAST - KRDMA_CMD_DESTROY + 1),
		  ARRAY_SIZE(cmd_features));
	for (i = 0; i < ARRAY_SIZE(cmd_features); i++) {
		const struct cmd_feature *c = &cmd_features[i];

		if (self->info.features & c->features)
			continue;
		memset(&buf, 0, sizeof(buf));
		buf.bench.size = sizeof(buf);
		EXPECT_ERRNO(ENOTTY, ioctl(self->fd, _IO(KRDMA_TYPE, c->nr), &buf),
				 "KRDMA_%s (features 0x%llx)", c->name,
				 (unsigned long long)self->info.features);
		checked++;
	}
	if (!checked)
		SKIP(return, "every command is implemented");
}

/* ------------------------------------------------------------------------
 * Length rules (include/uapi/linux/iommufd.h): one test per failure.
 */

/* (@_first: the size of the struct's first version, the least taken) */
#define TEST_LENGTH(_struct, _ioctl, _first)				\
KRDMA_TEST_F(krdma, _struct##_size_zero)				\
{									\
	struct { struct _struct cmd; uint8_t extra[64]; } buf = {};	\
									\
	buf.cmd.size = 0;						\
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, _ioctl, &buf));		\
}									\
KRDMA_TEST_F(krdma, _struct##_size_short)				\
{									\
	struct { struct _struct cmd; uint8_t extra[64]; } buf;		\
	uint32_t sz;							\
									\
	for (sz = 1; sz < (_first); sz++) {				\
		memset(&buf, 0, sizeof(buf));				\
		buf.cmd.size = sz;					\
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, _ioctl, &buf),	\
			     "size %u", sz);				\
	}								\
}									\
KRDMA_TEST_F(krdma, _struct##_size_long_nonzero)			\
{									\
	struct { struct _struct cmd; uint8_t extra[64]; } buf;		\
	unsigned int i;							\
									\
	/* The first, a middle and the last byte past the struct. */	\
	static const unsigned int at[] = { 0, 7, 63 };			\
	for (i = 0; i < ARRAY_SIZE(at); i++) {				\
		memset(&buf, 0, sizeof(buf));				\
		buf.cmd.size = sizeof(buf);				\
		buf.extra[at[i]] = 1;					\
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, _ioctl, &buf),	\
			     "non-zero byte at +%u", at[i]);		\
	}								\
	memset(&buf, 0, sizeof(buf));					\
	buf.cmd.size = sizeof(struct _struct) + 1;			\
	buf.extra[0] = UINT8_MAX;					\
	EXPECT_ERRNO(E2BIG, ioctl(self->fd, _ioctl, &buf));		\
}									\
KRDMA_TEST_F(krdma, _struct##_size_long_zero)				\
{									\
	struct { struct _struct cmd; uint8_t extra[8192]; } *buf;	\
	struct _struct exact = { .size = sizeof(exact) };		\
	int rc, err, rc2, err2;						\
	uint32_t sizes[] = { sizeof(struct _struct) + 1,		\
			     sizeof(struct _struct) + 8,		\
			     KRDMA_MAX_CMD_SIZE };			\
	unsigned int i;							\
									\
	buf = calloc(1, sizeof(*buf));					\
	ASSERT_NE(NULL, buf);						\
	rc = ioctl(self->fd, _ioctl, &exact);				\
	err = rc ? errno : 0;						\
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {			\
		memset(buf, 0, sizeof(*buf));				\
		buf->cmd.size = sizes[i];				\
		/* Bytes past @size are not the kernel's business. */	\
		if (sizes[i] < sizeof(*buf))				\
			memset((char *)buf + sizes[i], 0xa5,		\
			       sizeof(*buf) - sizes[i]);		\
		rc2 = ioctl(self->fd, _ioctl, buf);			\
		err2 = rc2 ? errno : 0;					\
		EXPECT_EQ(rc, rc2) {					\
			TH_LOG("size %u: rc %d (%s), exact: rc %d",	\
			       sizes[i], rc2, strerror(err2), rc);	\
		}							\
		EXPECT_EQ(err, err2) {					\
			TH_LOG("size %u: errno %s, exact: %s",		\
			       sizes[i], strerror(err2), strerror(err)); \
		}							\
	}								\
	free(buf);							\
}									\
KRDMA_TEST_F(krdma, _struct##_size_over_cap)				\
{									\
	struct { struct _struct cmd; uint8_t extra[8192]; } *buf;	\
	uint32_t sizes[] = { KRDMA_MAX_CMD_SIZE + 1, sizeof(*buf),	\
			     UINT32_MAX };				\
	unsigned int i;							\
									\
	/* zero tails, the last one past the caller's memory: E2BIG */	\
	buf = calloc(1, sizeof(*buf));					\
	ASSERT_NE(NULL, buf);						\
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {			\
		buf->cmd.size = sizes[i];				\
		EXPECT_ERRNO(E2BIG, ioctl(self->fd, _ioctl, buf),	\
			     "size %u", sizes[i]);			\
	}								\
	free(buf);							\
}

TEST_LENGTH(krdma_info, KRDMA_GET_INFO,
	    offsetof(struct krdma_info, bench_protocol))
TEST_LENGTH(krdma_query_devices, KRDMA_QUERY_DEVICES,
	    sizeof(struct krdma_query_devices))

/* A caller of the first version gets its fields, and nothing past them. */
KRDMA_TEST_F(krdma, get_info_first_version)
{
	const uint32_t first = offsetof(struct krdma_info, bench_protocol);
	struct krdma_info info;

	memset(&info, 0xa5, sizeof(info));
	info.size = first;
	info.flags = 0;
	test_cmd_ioctl(KRDMA_GET_INFO, &info);
	EXPECT_EQ((__u32)KRDMA_ABI_VERSION, info.abi_version);
	EXPECT_STREQ(self->info.module_version, info.module_version);
	EXPECT_EQ(0xa5a5a5a5u, info.bench_protocol);
	EXPECT_EQ(0xa5a5a5a5u, info.__reserved);
}

/* ------------------------------------------------------------------------
 * KRDMA_GET_INFO
 */

KRDMA_TEST_F(krdma, get_info)
{
	struct krdma_info *info = &self->info;

	EXPECT_EQ((__u32)KRDMA_ABI_VERSION, info->abi_version);
	EXPECT_TRUE(!!(info->features & KRDMA_FEATURE_QUERY_DEVICES));
	EXPECT_EQ(krdma_sysfs_num_devices(), (int)info->num_devices);
	EXPECT_EQ(self->snap.ndev, info->num_devices);
	EXPECT_LE(info->num_devices, info->num_device_contexts);
	ASSERT_NE(NULL, memchr(info->module_version, 0, sizeof(info->module_version)));
	EXPECT_NE(0, info->module_version[0]);
	TH_LOG("module %s abi %u features 0x%llx devices %u contexts %u",
	       info->module_version, info->abi_version,
	       (unsigned long long)info->features, info->num_devices,
	       info->num_device_contexts);
}

/* No feature bit beyond those enum krdma_feature defines. */
KRDMA_TEST_F(krdma, get_info_known_features)
{
	uint64_t known = KRDMA_FEATURE_QUERY_DEVICES | KRDMA_FEATURE_BUFFERS |
		KRDMA_FEATURE_USER_BUFFERS | KRDMA_FEATURE_MANUAL_CONN |
		KRDMA_FEATURE_RDMA_CM | KRDMA_FEATURE_SRQ |
		KRDMA_FEATURE_MEMORY_WINDOWS | KRDMA_FEATURE_BENCH |
		KRDMA_FEATURE_POST_POLL | KRDMA_FEATURE_ACCEPT_ASYNC |
		KRDMA_FEATURE_QUERY_SESSIONS | KRDMA_FEATURE_EVENT_DEVICE |
		KRDMA_FEATURE_BUFFER_MRS;

	EXPECT_EQ(0ull, self->info.features & ~known);
	EXPECT_EQ(0ull, self->info.ops & ~((1ULL << KRDMA_OP_MAX) - 1));
	EXPECT_EQ(0u, self->info.transports & ~0x7u);
}

/* Output fields are written whatever the caller left in them. */
KRDMA_TEST_F(krdma, get_info_overwrites_outputs)
{
	struct krdma_info info;

	memset(&info, 0xff, sizeof(info));
	info.size = sizeof(info);
	info.flags = 0;
	info.__reserved = 0;
	test_cmd_ioctl(KRDMA_GET_INFO, &info);
	EXPECT_EQ((__u32)sizeof(info), info.size);
	EXPECT_EQ((__u32)KRDMA_ABI_VERSION, info.abi_version);
	EXPECT_EQ((__u32)KRDMA_BENCH_PROTOCOL, info.bench_protocol);
	EXPECT_EQ(self->info.num_devices, info.num_devices);
	EXPECT_EQ(self->info.features, info.features);
	EXPECT_EQ(self->info.ops, info.ops);
	EXPECT_EQ(self->info.transports, info.transports);
	ASSERT_NE(NULL, memchr(info.module_version, 0, sizeof(info.module_version)));
	EXPECT_STREQ(self->info.module_version, info.module_version);
}

/* A reserved field must be 0, so that it can mean something later. */
KRDMA_TEST_F(krdma, get_info_reserved_nonzero)
{
	struct krdma_info info = { .size = sizeof(info), .__reserved = 1 };

	test_err_ioctl(EINVAL, KRDMA_GET_INFO, &info);
}

KRDMA_TEST_F(krdma, get_info_unknown_flags)
{
	struct krdma_info info;
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		info.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_GET_INFO, &info),
			"flag bit %u", bit);
	}
}

KRDMA_TEST_F(krdma, get_info_efault_null)
{
	test_err_ioctl(EFAULT, KRDMA_GET_INFO, NULL);
	test_err_ioctl(EFAULT, KRDMA_GET_INFO, (void *)1);
}

/* The struct runs into an unmapped page: its size is readable, not all. */
KRDMA_TEST_F(krdma, get_info_efault_partial)
{
	long psz = sysconf(_SC_PAGESIZE);
	char *page = map_guarded_page();
	struct krdma_info *info;

	ASSERT_NE(NULL, page);
	info = (struct krdma_info *)(page + psz - 8);
	info->size = sizeof(*info);
	info->flags = 0;
	test_err_ioctl(EFAULT, KRDMA_GET_INFO, info);
	test_err_ioctl(EFAULT, KRDMA_GET_INFO, page + psz);
	unmap_guarded_page(page);
}

/* Readable but not writable: the answer cannot be copied out. */
KRDMA_TEST_F(krdma, get_info_efault_readonly)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct krdma_info *info;
	char *page;

	page = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	info = (struct krdma_info *)page;
	info->size = sizeof(*info);
	ASSERT_OK(mprotect(page, psz, PROT_READ));
	test_err_ioctl(EFAULT, KRDMA_GET_INFO, info);
	munmap(page, psz);
}

/* ------------------------------------------------------------------------
 * KRDMA_QUERY_DEVICES: validation
 */

static void query_init(struct krdma_query_devices *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
}

KRDMA_TEST_F(krdma, query_devices_unknown_flags)
{
	struct krdma_query_devices q;
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1u << bit) & KRDMA_QUERY_DEVICES_ONE)
			continue;
		query_init(&q);
		q.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_QUERY_DEVICES, &q),
			"flag bit %u", bit);
		/* Also next to the known one, on an existing device. */
		query_init(&q);
		q.flags = 1u << bit | KRDMA_QUERY_DEVICES_ONE;
		q.dev_index = self->snap.devs[0].dev_index;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_QUERY_DEVICES, &q),
			"flag bit %u with ONE", bit);
	}
}

KRDMA_TEST_F(krdma, query_devices_reserved)
{
	static const uint32_t vals[] = { 1, 0x80, 0x80000000u, UINT32_MAX };
	struct krdma_query_devices q;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		query_init(&q);
		q.__reserved = vals[i];
		test_err_ioctl(EINVAL, KRDMA_QUERY_DEVICES, &q);
	}
}

KRDMA_TEST_F(krdma, query_devices_dev_index_without_one)
{
	struct krdma_query_devices q;
	uint32_t idx[] = { self->snap.devs[0].dev_index, 1,
			   krdma_snap_unused_index(&self->snap), UINT32_MAX };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(idx); i++) {
		if (!idx[i])
			continue;
		query_init(&q);
		q.dev_index = idx[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_QUERY_DEVICES, &q),
			"dev_index %u", idx[i]);
	}
}

KRDMA_TEST_F(krdma, query_devices_efault_arg)
{
	long psz = sysconf(_SC_PAGESIZE);
	char *page = map_guarded_page();
	struct krdma_query_devices *q;

	test_err_ioctl(EFAULT, KRDMA_QUERY_DEVICES, NULL);
	ASSERT_NE(NULL, page);
	q = (struct krdma_query_devices *)(page + psz - 8);
	q->size = sizeof(*q);
	q->flags = 0;
	test_err_ioctl(EFAULT, KRDMA_QUERY_DEVICES, q);
	unmap_guarded_page(page);
}

/* Enough capacity everywhere, arrays at the caller's buffers. */
static void query_full(struct krdma_query_devices *q, struct krdma_snap *s,
		       void *devs, void *ports, void *gids)
{
	query_init(q);
	q->num_devices = s->ndev;
	q->num_ports = s->nport;
	q->num_gids = s->ngid;
	q->device_entry_size = sizeof(struct krdma_device_info);
	q->port_entry_size = sizeof(struct krdma_port_info);
	q->gid_entry_size = sizeof(struct krdma_gid_info);
	q->devices_uptr = (uintptr_t)devs;
	q->ports_uptr = (uintptr_t)ports;
	q->gids_uptr = (uintptr_t)gids;
}

enum which_array { DEVICES, PORTS, GIDS };

static uint32_t *q_num(struct krdma_query_devices *q, enum which_array w)
{
	return w == DEVICES ? &q->num_devices : w == PORTS ? &q->num_ports : &q->num_gids;
}

static uint32_t *q_entry_size(struct krdma_query_devices *q, enum which_array w)
{
	return w == DEVICES ? &q->device_entry_size :
		w == PORTS ? &q->port_entry_size : &q->gid_entry_size;
}

static __u64 *q_uptr(struct krdma_query_devices *q, enum which_array w)
{
	return w == DEVICES ? &q->devices_uptr : w == PORTS ? &q->ports_uptr : &q->gids_uptr;
}

static uint32_t snap_count(struct krdma_snap *s, enum which_array w)
{
	return w == DEVICES ? s->ndev : w == PORTS ? s->nport : s->ngid;
}

static const char *const array_name[] = { "devices", "ports", "gids" };

struct big_arrays {
	struct krdma_device_info devs[64];
	struct krdma_port_info ports[256];
	struct krdma_gid_info gids[2048];
};

static struct big_arrays *big_arrays_new(struct krdma_snap *s)
{
	struct big_arrays *b;

	if (s->ndev > 64 || s->nport > 256 || s->ngid > 2048)
		return NULL;
	b = malloc(sizeof(*b));
	if (b)
		memset(b, 0xa5, sizeof(*b));
	return b;
}

static bool all_bytes(const void *p, size_t len, uint8_t val)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != val)
			return false;
	return true;
}

static void entry_size_bad(struct __test_metadata *_metadata, int fd,
			   struct krdma_snap *s, enum which_array w)
{
	static const uint32_t bad[] = { 0, 1, 4, KRDMA_MAX_ENTRY_SIZE + 1,
					UINT32_MAX };
	struct krdma_query_devices q;
	struct big_arrays *b = big_arrays_new(s);
	uint32_t full_size;
	unsigned int i;

	ASSERT_NE(NULL, b);
	if (!snap_count(s, w)) {
		free(b);
		SKIP(return, "no %s to report", array_name[w]);
	}
	query_full(&q, s, b->devs, b->ports, b->gids);
	full_size = *q_entry_size(&q, w);
	for (i = 0; i <= ARRAY_SIZE(bad); i++) {
		query_full(&q, s, b->devs, b->ports, b->gids);
		*q_entry_size(&q, w) = i < ARRAY_SIZE(bad) ? bad[i] : full_size - 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, KRDMA_QUERY_DEVICES, &q),
			"%s entry size %u", array_name[w], *q_entry_size(&q, w));
	}
	free(b);
}

KRDMA_TEST_F(krdma, query_devices_device_entry_size_bad)
{
	entry_size_bad(_metadata, self->fd, &self->snap, DEVICES);
}

KRDMA_TEST_F(krdma, query_devices_port_entry_size_bad)
{
	entry_size_bad(_metadata, self->fd, &self->snap, PORTS);
}

KRDMA_TEST_F(krdma, query_devices_gid_entry_size_bad)
{
	entry_size_bad(_metadata, self->fd, &self->snap, GIDS);
}

/* A bad array pointer with enough capacity is EFAULT. */
static void bad_uptr(struct __test_metadata *_metadata, int fd,
		     struct krdma_snap *s, enum which_array w)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct krdma_query_devices q;
	struct big_arrays *b = big_arrays_new(s);
	char *guard, *ro;
	uint64_t bad[4];
	unsigned int i;

	ASSERT_NE(NULL, b);
	if (!snap_count(s, w)) {
		free(b);
		SKIP(return, "no %s to report", array_name[w]);
	}
	guard = map_guarded_page();
	ASSERT_NE(NULL, guard);
	ro = mmap(NULL, 16 * psz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	bad[0] = 0;				/* NULL */
	bad[1] = (uintptr_t)guard + psz;	/* inaccessible */
	bad[2] = (uintptr_t)ro;			/* not writable */
	bad[3] = (uintptr_t)guard + psz - 1;	/* runs into the guard */
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		query_full(&q, s, b->devs, b->ports, b->gids);
		*q_uptr(&q, w) = bad[i];
		EXPECT_ERRNO(EFAULT, ioctl(fd, KRDMA_QUERY_DEVICES, &q),
			"%s_uptr case %u", array_name[w], i);
	}
	munmap(ro, 16 * psz);
	unmap_guarded_page(guard);
	free(b);
}

KRDMA_TEST_F(krdma, query_devices_devices_efault)
{
	bad_uptr(_metadata, self->fd, &self->snap, DEVICES);
}

KRDMA_TEST_F(krdma, query_devices_ports_efault)
{
	bad_uptr(_metadata, self->fd, &self->snap, PORTS);
}

KRDMA_TEST_F(krdma, query_devices_gids_efault)
{
	bad_uptr(_metadata, self->fd, &self->snap, GIDS);
}

/* ------------------------------------------------------------------------
 * KRDMA_QUERY_DEVICES: sizing and filling
 */

/* Zero capacities: EMSGSIZE, the three counts, nothing else written. */
KRDMA_TEST_F(krdma, query_devices_zero_capacity)
{
	struct big_arrays *b = big_arrays_new(&self->snap);
	struct krdma_query_devices q, before;
	int sysfs_ports = 0, n, i;
	char names[64][KRDMA_NAME_MAX];

	ASSERT_NE(NULL, b);
	query_full(&q, &self->snap, b->devs, b->ports, b->gids);
	q.num_devices = q.num_ports = q.num_gids = 0;
	before = q;
	test_err_ioctl(EMSGSIZE, KRDMA_QUERY_DEVICES, &q);
	EXPECT_EQ(self->snap.ndev, q.num_devices);
	EXPECT_EQ(self->snap.nport, q.num_ports);
	EXPECT_EQ(self->snap.ngid, q.num_gids);
	q.num_devices = q.num_ports = q.num_gids = 0;
	EXPECT_EQ(0, memcmp(&before, &q, sizeof(q)));
	EXPECT_TRUE(all_bytes(b, sizeof(*b), 0xa5));

	/* The sizing call of a caller that has no arrays yet. */
	query_init(&q);
	test_err_ioctl(EMSGSIZE, KRDMA_QUERY_DEVICES, &q);
	EXPECT_EQ(self->snap.ndev, q.num_devices);
	EXPECT_EQ(self->snap.nport, q.num_ports);
	EXPECT_EQ(self->snap.ngid, q.num_gids);
	EXPECT_EQ(0u, q.device_entry_size);
	EXPECT_EQ(0ull, q.devices_uptr);

	/* The counts agree with sysfs. */
	n = krdma_sysfs_names(names, 64);
	ASSERT_GE(64, n);
	EXPECT_EQ(n, (int)q.num_devices);
	for (i = 0; i < n; i++)
		sysfs_ports += krdma_count_dir(SYSFS_IB "/%s/ports", names[i]);
	EXPECT_EQ(sysfs_ports, (int)q.num_ports);
	free(b);
}

static void short_by_one(struct __test_metadata *_metadata, int fd,
			 struct krdma_snap *s, enum which_array w)
{
	struct big_arrays *b = big_arrays_new(s);
	struct krdma_query_devices q, before;

	ASSERT_NE(NULL, b);
	query_full(&q, s, b->devs, b->ports, b->gids);
	if (!*q_num(&q, w)) {
		free(b);
		SKIP(return, "no %s to report", array_name[w]);
	}
	(*q_num(&q, w))--;
	before = q;
	EXPECT_ERRNO(EMSGSIZE, ioctl(fd, KRDMA_QUERY_DEVICES, &q));
	EXPECT_EQ(s->ndev, q.num_devices);
	EXPECT_EQ(s->nport, q.num_ports);
	EXPECT_EQ(s->ngid, q.num_gids);
	q.num_devices = before.num_devices;
	q.num_ports = before.num_ports;
	q.num_gids = before.num_gids;
	EXPECT_EQ(0, memcmp(&before, &q, sizeof(q)));
	EXPECT_TRUE(all_bytes(b, sizeof(*b), 0xa5)) {
		TH_LOG("EMSGSIZE wrote into the arrays");
	}
	free(b);
}

KRDMA_TEST_F(krdma, query_devices_devices_short_by_one)
{
	short_by_one(_metadata, self->fd, &self->snap, DEVICES);
}

KRDMA_TEST_F(krdma, query_devices_ports_short_by_one)
{
	short_by_one(_metadata, self->fd, &self->snap, PORTS);
}

KRDMA_TEST_F(krdma, query_devices_gids_short_by_one)
{
	short_by_one(_metadata, self->fd, &self->snap, GIDS);
}

/* Exact and larger capacities: success, counts, nothing past them. */
KRDMA_TEST_F(krdma, query_devices_fill)
{
	struct big_arrays *b = big_arrays_new(&self->snap);
	struct krdma_query_devices q;
	struct krdma_snap *s = &self->snap;
	unsigned int extra;

	ASSERT_NE(NULL, b);
	for (extra = 0; extra <= 3; extra += 3) {
		memset(b, 0xa5, sizeof(*b));
		query_full(&q, s, b->devs, b->ports, b->gids);
		q.num_devices += extra;
		q.num_ports += extra;
		q.num_gids += extra;
		test_cmd_ioctl(KRDMA_QUERY_DEVICES, &q);
		EXPECT_EQ((__u32)sizeof(q), q.size);
		EXPECT_EQ(s->ndev, q.num_devices);
		EXPECT_EQ(s->nport, q.num_ports);
		EXPECT_EQ(s->ngid, q.num_gids);
		EXPECT_EQ(0, memcmp(b->devs, s->devs, s->ndev * sizeof(*s->devs)));
		EXPECT_TRUE(all_bytes(&b->devs[s->ndev], sizeof(b->devs[0]) * extra, 0xa5));
		EXPECT_TRUE(all_bytes(&b->ports[s->nport], sizeof(b->ports[0]) * extra, 0xa5));
		EXPECT_TRUE(all_bytes(&b->gids[s->ngid], sizeof(b->gids[0]) * extra, 0xa5));
	}
	free(b);
}

/*
 * Larger entry sizes: entries at the caller's stride, the first
 * sizeof(struct) bytes as usual, the rest zeroed by the kernel.
 */
KRDMA_TEST_F(krdma, query_devices_entry_size_large)
{
	struct krdma_snap *s = &self->snap;
	const size_t pad = 24;
	size_t dsz = sizeof(struct krdma_device_info) + pad;
	size_t psz = sizeof(struct krdma_port_info) + pad;
	size_t gsz = sizeof(struct krdma_gid_info) + pad;
	struct krdma_query_devices q;
	char *devs, *ports, *gids;
	uint32_t i;

	devs = malloc(dsz * (s->ndev + 1));
	ports = malloc(psz * (s->nport + 1));
	gids = malloc(gsz * (s->ngid + 1));
	ASSERT_TRUE(devs && ports && gids);
	memset(devs, 0xa5, dsz * (s->ndev + 1));
	memset(ports, 0xa5, psz * (s->nport + 1));
	memset(gids, 0xa5, gsz * (s->ngid + 1));
	query_full(&q, s, devs, ports, gids);
	q.device_entry_size = dsz;
	q.port_entry_size = psz;
	q.gid_entry_size = gsz;
	test_cmd_ioctl(KRDMA_QUERY_DEVICES, &q);
	ASSERT_EQ(s->ndev, q.num_devices);
	ASSERT_EQ(s->nport, q.num_ports);
	ASSERT_EQ(s->ngid, q.num_gids);
	EXPECT_EQ((__u32)dsz, q.device_entry_size);
	for (i = 0; i < s->ndev; i++) {
		char *e = devs + i * dsz;

		EXPECT_EQ(0, memcmp(e, &s->devs[i], sizeof(s->devs[i])));
		EXPECT_TRUE(all_bytes(e + sizeof(s->devs[i]), pad, 0)) {
			TH_LOG("device %u: tail not zeroed", i);
		}
	}
	for (i = 0; i < s->nport; i++) {
		struct krdma_port_info *p = (void *)(ports + i * psz);

		EXPECT_EQ(s->ports[i].dev_index, p->dev_index);
		EXPECT_EQ(s->ports[i].port_num, p->port_num);
		EXPECT_EQ(s->ports[i].first_gid, p->first_gid);
		EXPECT_EQ(s->ports[i].num_gids, p->num_gids);
		EXPECT_TRUE(all_bytes((char *)p + sizeof(*p), pad, 0)) {
			TH_LOG("port %u: tail not zeroed", i);
		}
	}
	for (i = 0; i < s->ngid; i++) {
		char *e = gids + i * gsz;

		EXPECT_EQ(0, memcmp(e, &s->gids[i], sizeof(s->gids[i])));
		EXPECT_TRUE(all_bytes(e + sizeof(s->gids[i]), pad, 0)) {
			TH_LOG("gid %u: tail not zeroed", i);
		}
	}
	EXPECT_TRUE(all_bytes(devs + s->ndev * dsz, dsz, 0xa5));
	EXPECT_TRUE(all_bytes(ports + s->nport * psz, psz, 0xa5));
	EXPECT_TRUE(all_bytes(gids + s->ngid * gsz, gsz, 0xa5));
	free(devs);
	free(ports);
	free(gids);
}

/* Indices tie the three arrays together. */
KRDMA_TEST_F(krdma, query_devices_consistent)
{
	struct krdma_snap *s = &self->snap;
	uint32_t i, j, k, ports_seen = 0, gids_seen = 0;

	for (i = 0; i < s->ndev; i++) {
		struct krdma_device_info *d = &s->devs[i];

		ASSERT_NE(NULL, memchr(d->name, 0, sizeof(d->name)));
		EXPECT_NE('\0', d->name[0]);
		for (j = 0; j < i; j++) {
			EXPECT_NE(s->devs[j].dev_index, d->dev_index);
			EXPECT_STRNE(s->devs[j].name, d->name);
		}
		EXPECT_LE(1u, d->phys_port_cnt);
		ASSERT_LE(d->first_port + d->phys_port_cnt, s->nport) {
			TH_LOG("%s: ports %u+%u of %u", d->name, d->first_port,
			       d->phys_port_cnt, s->nport);
		}
		for (j = 0; j < d->phys_port_cnt; j++) {
			struct krdma_port_info *p = &s->ports[d->first_port + j];

			EXPECT_EQ(d->dev_index, p->dev_index);
			EXPECT_EQ(j + 1, p->port_num);
			EXPECT_EQ(0u, p->__reserved);
			ASSERT_NE(NULL, memchr(p->netdev, 0, sizeof(p->netdev)));
			EXPECT_GE(p->gid_tbl_len, p->num_gids);
			ASSERT_LE(p->first_gid + p->num_gids, s->ngid);
			for (k = 0; k < p->num_gids; k++) {
				struct krdma_gid_info *g = &s->gids[p->first_gid + k];

				EXPECT_EQ(p->dev_index, g->dev_index);
				EXPECT_EQ(p->port_num, g->port_num);
				EXPECT_GT(p->gid_tbl_len, g->gid_index);
				ASSERT_NE(NULL, memchr(g->netdev, 0, sizeof(g->netdev)));
				if (k)
					EXPECT_NE(s->gids[p->first_gid + k - 1].gid_index,
						  g->gid_index);
			}
			gids_seen += p->num_gids;
		}
		ports_seen += d->phys_port_cnt;
	}
	/* Every entry belongs to exactly one device / port. */
	EXPECT_EQ(s->nport, ports_seen);
	EXPECT_EQ(s->ngid, gids_seen);
}

KRDMA_TEST_F(krdma, query_devices_device_caps)
{
	struct krdma_snap *s = &self->snap;
	uint32_t i;

	for (i = 0; i < s->ndev; i++) {
		struct krdma_device_info *d = &s->devs[i];

		TH_LOG("%s", d->name);
		EXPECT_NE(0u, d->max_qp);
		EXPECT_NE(0u, d->max_qp_wr);
		EXPECT_NE(0u, d->max_send_sge);
		EXPECT_NE(0u, d->max_recv_sge);
		EXPECT_NE(0u, d->max_cq);
		EXPECT_NE(0u, d->max_cqe);
		EXPECT_NE(0u, d->max_mr);
		EXPECT_NE(0u, d->max_pd);
		EXPECT_NE(0u, d->max_mr_size);
		EXPECT_NE(0u, d->page_size_cap);
		EXPECT_GE((__u32)KRDMA_NODE_UNSPECIFIED, d->node_type);
		EXPECT_GE((__u32)KRDMA_ATOMIC_GLOB, d->atomic_cap);
	}
	for (i = 0; i < s->nport; i++) {
		struct krdma_port_info *p = &s->ports[i];
		uint32_t mtu = p->active_mtu;

		EXPECT_TRUE(mtu == 256 || mtu == 512 || mtu == 1024 ||
			    mtu == 2048 || mtu == 4096) {
			TH_LOG("port %u/%u active_mtu %u", p->dev_index, p->port_num, mtu);
		}
		EXPECT_LE(p->active_mtu, p->max_mtu);
		EXPECT_GE(4096u, p->max_mtu);
		EXPECT_GE((__u32)KRDMA_PORT_ACTIVE_DEFER, p->state);
		EXPECT_GE((__u32)KRDMA_LINK_LAYER_ETHERNET, p->link_layer);
	}
	for (i = 0; i < s->ngid; i++)
		EXPECT_GE((__u32)KRDMA_GID_TYPE_ROCE_UDP_ENCAP, s->gids[i].gid_type);
}

/* ------------------------------------------------------------------------
 * KRDMA_QUERY_DEVICES_ONE
 */

KRDMA_TEST_F(krdma, query_devices_one)
{
	struct krdma_snap *s = &self->snap;
	uint32_t i, j;

	for (i = 0; i < s->ndev; i++) {
		struct krdma_device_info *d = &s->devs[i];
		struct krdma_query_devices q;
		struct krdma_snap one;

		TH_LOG("%s (index %u)", d->name, d->dev_index);
		/* Sizing for one device. */
		query_init(&q);
		q.flags = KRDMA_QUERY_DEVICES_ONE;
		q.dev_index = d->dev_index;
		test_err_ioctl(EMSGSIZE, KRDMA_QUERY_DEVICES, &q);
		EXPECT_EQ(1u, q.num_devices);
		EXPECT_EQ(d->phys_port_cnt, q.num_ports);

		ASSERT_OK(krdma_snap_get(self->fd, KRDMA_QUERY_DEVICES_ONE,
					 d->dev_index, &one));
		ASSERT_EQ(1u, one.ndev);
		EXPECT_EQ(d->dev_index, one.devs[0].dev_index);
		EXPECT_STREQ(d->name, one.devs[0].name);
		EXPECT_EQ(d->node_guid, one.devs[0].node_guid);
		EXPECT_EQ(d->phys_port_cnt, one.devs[0].phys_port_cnt);
		EXPECT_EQ(d->max_qp, one.devs[0].max_qp);
		EXPECT_EQ(0u, one.devs[0].first_port);
		ASSERT_EQ(d->phys_port_cnt, one.nport);
		for (j = 0; j < one.nport; j++) {
			struct krdma_port_info *p = &one.ports[j];
			struct krdma_port_info *full = &s->ports[d->first_port + j];

			EXPECT_EQ(d->dev_index, p->dev_index);
			EXPECT_EQ(full->port_num, p->port_num);
			EXPECT_EQ(full->num_gids, p->num_gids);
			EXPECT_EQ(full->link_layer, p->link_layer);
		}
		for (j = 0; j < one.ngid; j++)
			EXPECT_EQ(d->dev_index, one.gids[j].dev_index);
		EXPECT_EQ(q.num_gids, one.ngid);
		krdma_snap_free(&one);
	}
}

KRDMA_TEST_F(krdma, query_devices_one_enodev)
{
	struct big_arrays *b = big_arrays_new(&self->snap);
	uint32_t idx[] = { krdma_snap_unused_index(&self->snap), UINT32_MAX - 1,
			   UINT32_MAX, 0 };
	struct krdma_query_devices q;
	unsigned int i;

	ASSERT_NE(NULL, b);
	for (i = 0; i < ARRAY_SIZE(idx); i++) {
		if (krdma_snap_find_index(&self->snap, idx[i]))
			continue;	/* 0 may be a real index */
		query_full(&q, &self->snap, b->devs, b->ports, b->gids);
		q.flags = KRDMA_QUERY_DEVICES_ONE;
		q.dev_index = idx[i];
		EXPECT_ERRNO(ENODEV, ioctl(self->fd, KRDMA_QUERY_DEVICES, &q),
			"dev_index %u", idx[i]);
	}
	EXPECT_TRUE(all_bytes(b, sizeof(*b), 0xa5));
	free(b);
}

/* ------------------------------------------------------------------------
 * Without privilege
 */

static int unprivileged_child(uint32_t ndev)
{
	struct krdma_info info;
	struct krdma_snap s;
	int fd;

	if (kt_become_user(65534))
		return 10;
	if (geteuid() != 65534)
		return 11;
	fd = krdma_open();
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		fd = open(KRDMA_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (errno == EACCES || errno == EPERM) ? KSFT_SKIP : 12;
	if (krdma_info_get(fd, &info))
		return 13;
	if (info.abi_version != KRDMA_ABI_VERSION || info.num_devices != ndev)
		return 14;
	if (krdma_snap_get(fd, 0, 0, &s))
		return 15;
	if (s.ndev != ndev)
		return 16;
	if (krdma_snap_get(fd, KRDMA_QUERY_DEVICES_ONE, s.devs[0].dev_index, &s))
		return 17;
	close(fd);
	return 0;
}

KRDMA_TEST_F(krdma, unprivileged)
{
	struct stat st;
	int status;
	pid_t pid;

	ASSERT_OK(stat(KRDMA_DEVICE_PATH, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	TH_LOG("%s mode %04o uid %u gid %u", KRDMA_DEVICE_PATH,
	       (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid,
	       (unsigned int)st.st_gid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unprivileged_child(self->snap.ndev));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == KSFT_SKIP)
		SKIP(return, "nobody cannot open %s (mode %04o)", KRDMA_DEVICE_PATH,
		     (unsigned int)(st.st_mode & 07777));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("unprivileged child failed at step %d", WEXITSTATUS(status));
	}
}

TEST_HARNESS_MAIN
