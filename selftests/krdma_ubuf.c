// SPDX-License-Identifier: GPL-2.0
/*
 * krdma zero-copy user buffers (KRDMA_BUF_REG_USER) on rxe0 loopback: the
 * peer's bytes land in, and are taken from, the caller's own memory (page
 * aligned, unaligned, straddling pages, malloc'ed), checked in place with
 * poison around them.  RDMA WRITE into and out of user memory, RDMA READ
 * user to user, SEND into a user RECV, inline from user memory, atomics.
 * Then every validation failure, the RLIMIT_MEMLOCK charge (VmPin) as an
 * unprivileged user, munmap while registered, fork after registering and a
 * process that exits with its buffers still registered.
 */
#include "krdma_test.h"

#include <sys/resource.h>

#define POLL_MS 20000		/* generous: rxe under TCG is slow */
#define GUARD 4096		/* poison checked on each side */
#define POISON 0xa5
#define MIB (1024 * 1024)

static const uint64_t sizes[] = { 1, 4095, 65536, MIB };

static long psz;

static void __attribute__((constructor)) ubuf_init(void)
{
	psz = sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------------------
 * Helpers
 */

static void reg_init(struct krdma_buf_reg_user *r, uint32_t dev_index,
		     uint32_t access, const void *p, uint64_t len)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->dev_index = dev_index;
	r->access = access;
	r->uaddr = (uintptr_t)p;
	r->length = len;
}

static int ub_reg(int fd, uint32_t dev_index, uint32_t access, const void *p,
		  uint64_t len, struct kt_buf *b)
{
	return kt_buf_reg_user(fd, dev_index, access, p, len, b);
}

/* This process' pinned_vm (VmPin in /proc/self/status), in pages; -1. */
static long vm_pin_pages(void)
{
	long kb = kt_vm_pin_kb();

	return kb < 0 ? -1 : kb / (psz / 1024);
}

/*
 * @len bytes at @misalign past a page boundary inside a private anonymous
 * mapping, at least GUARD bytes of POISON on each side in the same mapping.
 */
struct region {
	uint8_t *map;
	size_t map_len;
	uint8_t *p;
	uint64_t len;
};

static int region_get(struct region *r, uint64_t len, size_t misalign)
{
	size_t guard_pages = (GUARD + psz - 1) / psz;

	r->len = len;
	r->map_len = (guard_pages * psz + misalign + len + GUARD + psz - 1) /
		     psz * psz;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -1;
	}
	/* small pages: the limits tested are theirs (huge_pages: the others) */
	madvise(r->map, r->map_len, MADV_NOHUGEPAGE);
	memset(r->map, POISON, r->map_len);
	r->p = r->map + guard_pages * psz + misalign;
	return 0;
}

/* The frame number of the page mapped at @p; 0 if unknown. */
static uint64_t page_pfn(const void *p)
{
	uint64_t ent;
	int fd, ok;

	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = pread(fd, &ent, 8, (uintptr_t)p / psz * 8) == 8;
	close(fd);
	return ok && ent >> 63 ? ent & ((1ull << 55) - 1) : 0;
}

/*
 * Memory of @r that no MR page larger than a small one maps: fresh memory
 * is often physically contiguous, in runs that the module then maps in
 * larger MR pages (krdma_ubuf_chunks()), and one pair of pages that is not
 * such a run rules them all out.  The second page of the aligned pair at
 * two pages into @r is traded for another page until the two are not one
 * run.  0, or -1 where pagemap shows no frames.
 */
static int region_break_runs(struct region *r)
{
	uint8_t *pair = (uint8_t *)(((uintptr_t)r->p + 2 * psz) &
				    ~(uintptr_t)(2 * psz - 1));
	uint64_t first, second;
	void *page;
	int i;

	for (i = 0; i < 8; i++) {
		first = page_pfn(pair);
		second = page_pfn(pair + psz);
		if (!first || !second)
			return -1;
		if ((first & 1) || second != first + 1)
			return 0;
		page = mmap(NULL, psz, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			return -1;
		memset(page, POISON, psz);
		if (mremap(page, psz, psz, MREMAP_MAYMOVE | MREMAP_FIXED,
			   pair + psz) == MAP_FAILED) {
			munmap(page, psz);
			return -1;
		}
	}
	return -1;
}

/*
 * @r: @len bytes at @misalign of memory that only small MR pages map
 * (region_break_runs()); where pagemap shows no frames, the test skips.
 */
#define REGION_GET_SMALL(r, len, misalign)				\
	do {								\
		ASSERT_OK(region_get(r, len, misalign));		\
		if (region_break_runs(r)) {				\
			region_put(r);					\
			SKIP(return, "no page frames in pagemap: cannot tell memory that only small MR pages map"); \
		}							\
	} while (0)

static void region_put(struct region *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
}

/* Index (relative to the region's p) of the first poison byte changed. */
static bool guards_ok(struct __test_metadata *_metadata, const uint8_t *map,
		      size_t map_len, const uint8_t *p, uint64_t len)
{
	int64_t bad = kt_check_byte(map, p - map, POISON);

	if (bad >= 0) {
		TH_LOG("poison before the buffer changed at %lld: 0x%02x",
		       (long long)(bad - (p - map)), map[bad]);
		return false;
	}
	bad = kt_check_byte(p + len, map + map_len - (p + len), POISON);
	if (bad >= 0) {
		TH_LOG("poison after the buffer changed at +%lld: 0x%02x",
		       (long long)bad, p[len + bad]);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Fixture: an RC pair on the device's loopback path
 */

FIXTURE(ubuf)
{
	int fd;
	struct kt_dev dev;
	struct kt_conn a, b;	/* a initiates, b is the target */
};

static const struct krdma_qp_caps fixture_caps = {
	.max_send_sge = 4,
	.max_recv_sge = 4,
	.max_inline_data = 64,
};

FIXTURE_SETUP(ubuf)
{
	self->fd = kt_session_open_feature(_metadata,
					   KRDMA_FEATURE_USER_BUFFERS,
					   &self->dev);
	if (self->fd < 0)
		return;
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &fixture_caps,
			   &self->a, &self->b);
}

/* vm.nr_hugepages before huge_get() grew it; -1: untouched */
static long huge_pool0 = -1;

static int nr_hugepages_set(long n);

FIXTURE_TEARDOWN(ubuf)
{
	if (self->fd >= 0)
		close(self->fd);
	/* a test that failed on the way: the pool as it was */
	if (huge_pool0 >= 0)
		nr_hugepages_set(huge_pool0);
}

static void expect_wc(struct __test_metadata *_metadata, int fd, uint32_t conn,
		      uint64_t wr_id, uint32_t status, struct krdma_wc *wc)
{
	int n;

	memset(wc, 0, sizeof(*wc));
	n = kt_poll_n(fd, conn, wc, 1, POLL_MS);
	if (n != 1)
		TH_LOG("conn %u: no completion for wr_id %llu (%s)", conn,
		       (unsigned long long)wr_id,
		       n < 0 ? strerror(errno) : "timeout");
	ASSERT_EQ(1, n);
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(status, wc->status) {
		TH_LOG("wr_id %llu: status %u vendor_err %u",
		       (unsigned long long)wc->wr_id, wc->status, wc->vendor_err);
	}
}

/* One signaled one-sided WR from a: @op of @len bytes, local @sge_buf. */
/* After a WRITE that completed well: on iWARP, until b has its data. */
static void write_placed(struct __test_metadata *_metadata,
			 FIXTURE_DATA(ubuf) *self, const struct krdma_wc *wc)
{
	if (!wc->status && kt_dev_iwarp(&self->dev))
		kt_write_fence(_metadata, self->fd, self->a.handle, self->fd,
			       self->b.handle);
}

static void one_sided(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ubuf) *self, uint32_t op, uint64_t wr_id,
		      uint32_t sge_buf, uint64_t sge_off, uint32_t len,
		      uint64_t remote_addr, uint32_t rkey, uint32_t status)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_wr_init(&wr, wr_id, op, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, sge_buf, sge_off, len);
	wr.remote_addr = remote_addr;
	wr.rkey = rkey;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, wr_id, status, &wc);
	if (op == KRDMA_OP_RDMA_WRITE)
		write_placed(_metadata, self, &wc);
}

/* ------------------------------------------------------------------------
 * RDMA WRITE from a kernel buffer into user memory
 */

/*
 * For every size: register @len bytes at @p (with poison in [map, map_len)
 * around it), WRITE a pattern into it from a kernel buffer, once at the
 * start and once at an odd offset, and check the user's memory in place.
 */
static void write_into(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ubuf) *self, uint8_t *map, size_t map_len,
		       uint8_t *p, uint64_t size, uint32_t test)
{
	static const uint64_t offs[] = { 0, 3 };
	struct kt_buf src, dst;
	unsigned int i;
	uint8_t *tmp;

	test_cmd_buf_alloc(self->dev.dev_index, 0, size + 3, &src);
	tmp = malloc(size);
	ASSERT_NE(NULL, tmp);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE,
			 p, size, &dst));
	EXPECT_NE(0u, dst.rkey);
	EXPECT_EQ((uintptr_t)p & (psz - 1), dst.addr);
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		uint64_t off = offs[i], n = size > off ? size - off : size;
		uint32_t seed = kt_seed(test, size, i);
		int64_t bad;

		if (off >= size)
			continue;
		kt_fill(tmp, n, seed);
		test_cmd_buf_write(src.handle, 0, tmp, n);
		/* the CPU writes the pinned pages: they must stay the MR's */
		memset(map, POISON, map_len);
		one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 100 + i,
			  src.handle, 0, n, dst.addr + off, dst.rkey, 0);
		bad = kt_check(p + off, n, seed);
		EXPECT_EQ(-1, bad) {
			TH_LOG("size %llu off %llu (uaddr %p): byte %lld is 0x%02x, expected 0x%02x",
			       (unsigned long long)size, (unsigned long long)off,
			       p, (long long)bad, p[off + bad],
			       kt_pattern_byte(seed, bad));
		}
		EXPECT_EQ(-1, kt_check_byte(p, off, POISON));
		EXPECT_TRUE(guards_ok(_metadata, map, map_len, p, size)) {
			TH_LOG("size %llu off %llu uaddr %p",
			       (unsigned long long)size,
			       (unsigned long long)off, p);
		}
	}
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	EXPECT_OK(kt_destroy(self->fd, src.handle));
	free(tmp);
}

/*
 * Whether @size bytes at page offset @misalign, and the kernel buffer of
 * @size + 3 bytes write_into() copies from, are each one registration on
 * the device: a buffer of more pages than max_fast_reg_page_list_len is
 * EINVAL (siw's 256 pages: 1 MiB).
 */
static bool size_fits(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ubuf) *self, const char *op, uint64_t size,
		      size_t misalign)
{
	uint64_t max = self->dev.info.max_fast_reg_page_list_len;
	uint64_t user = (misalign % psz + size + psz - 1) / psz;
	uint64_t kern = (size + 3 + psz - 1) / psz;

	if (user <= max && kern <= max)
		return true;
	TH_LOG("no %s of %llu at page offset %zu: %s max_fast_reg_page_list_len %llu",
	       op, (unsigned long long)size, misalign, self->dev.info.name,
	       (unsigned long long)max);
	return false;
}

static void write_into_region(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ubuf) *self, size_t misalign,
			      uint32_t test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct region r;

		if (!size_fits(_metadata, self, "WRITE", sizes[i], misalign))
			continue;
		ASSERT_OK(region_get(&r, sizes[i], misalign));
		TH_LOG("WRITE size %llu at page offset %zu",
		       (unsigned long long)sizes[i], misalign);
		write_into(_metadata, self, r.map, r.map_len, r.p, sizes[i],
			   test);
		region_put(&r);
	}
}

KRDMA_TEST_F_TIMEOUT(ubuf, write_to_user_aligned, 180)
{
	write_into_region(_metadata, self, 0, 1);
}

KRDMA_TEST_F_TIMEOUT(ubuf, write_to_user_unaligned, 180)
{
	write_into_region(_metadata, self, 13, 2);
}

/* The buffer starts 3 bytes before a page ends: every size straddles. */
KRDMA_TEST_F_TIMEOUT(ubuf, write_to_user_page_end, 180)
{
	write_into_region(_metadata, self, psz - 3, 3);
}

/* malloc() + 13, the guard bytes in the heap next to it. */
KRDMA_TEST_F_TIMEOUT(ubuf, write_to_user_malloc13, 180)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t map_len = 13 + sizes[i] + GUARD;
		uint8_t *m;

		/* (malloc()'s offset in its page: assume the worst) */
		if (!size_fits(_metadata, self, "WRITE", sizes[i] + 13,
			       psz - 1))
			continue;
		m = malloc(map_len);
		ASSERT_NE(NULL, m);
		memset(m, POISON, map_len);
		TH_LOG("WRITE size %llu at malloc %p + 13",
		       (unsigned long long)sizes[i], m);
		write_into(_metadata, self, m, map_len, m + 13, sizes[i], 4);
		free(m);
	}
}

/* The largest buffer one fast registration maps, written at both ends. */
KRDMA_TEST_F_TIMEOUT(ubuf, write_to_user_max_pages, 120)
{
	uint64_t len = (uint64_t)self->dev.info.max_fast_reg_page_list_len * psz;
	struct kt_buf src, dst;
	struct region r;
	uint8_t pat[64];

	TH_LOG("max_fast_reg_page_list_len %u: %llu bytes",
	       self->dev.info.max_fast_reg_page_list_len,
	       (unsigned long long)len);
	ASSERT_OK(region_get(&r, len, 0));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	kt_fill(pat, 64, 77);
	test_cmd_buf_write(src.handle, 0, pat, 64);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p, len,
			 &dst));
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 64,
		  dst.addr, dst.rkey, 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 2, src.handle, 0, 64,
		  dst.addr + len - 64, dst.rkey, 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 3, src.handle, 0, 64,
		  dst.addr + len / 2 - 32, dst.rkey, 0);
	EXPECT_EQ(-1, kt_check(r.p, 64, 77));
	EXPECT_EQ(-1, kt_check(r.p + len - 64, 64, 77));
	EXPECT_EQ(-1, kt_check(r.p + len / 2 - 32, 64, 77));
	EXPECT_EQ(-1, kt_check_byte(r.p + 64, len / 2 - 96, POISON));
	EXPECT_EQ(-1, kt_check_byte(r.p + len / 2 + 32, len / 2 - 96, POISON));
	EXPECT_TRUE(guards_ok(_metadata, r.map, r.map_len, r.p, len));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	region_put(&r);
}

/* ------------------------------------------------------------------------
 * Huge pages: an MR page per huge page
 */

#define HUGE_SZ (2 * MIB)
#define GIB (1024ull * MIB)

/* A number from /proc (@key's in /proc/meminfo, else the file's), or -1. */
static long proc_long(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!key) {
			v = strtol(line, NULL, 10);
			break;
		}
		if (!strncmp(line, key, strlen(key))) {
			v = strtol(line + strlen(key), NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static int nr_hugepages_set(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%ld\n", n) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/* @len bytes of 2 MiB hugetlbfs pages, the pool grown for them. */
struct huge {
	uint8_t *p;
	size_t len;
	long pool0;
};

/* false, after saying why, where the pool cannot grow (not root, memory) */
static bool huge_get(struct __test_metadata *_metadata, struct huge *h,
		     size_t len)
{
	long want = len / HUGE_SZ;

	h->p = NULL;
	h->len = len;
	h->pool0 = proc_long("/proc/sys/vm/nr_hugepages", NULL);
	if (proc_long("/proc/meminfo", "Hugepagesize:") != HUGE_SZ / 1024 ||
	    h->pool0 < 0) {
		TH_LOG("no 2 MiB hugetlbfs pages here");
		return false;
	}
	huge_pool0 = h->pool0;
	if (nr_hugepages_set(h->pool0 + want) ||
	    proc_long("/proc/sys/vm/nr_hugepages", NULL) < h->pool0 + want) {
		TH_LOG("the huge page pool does not grow by %ld: %s", want,
		       geteuid() ? "not root" : "no memory");
		nr_hugepages_set(h->pool0);
		return false;
	}
	h->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (h->p == MAP_FAILED) {
		TH_LOG("mmap(MAP_HUGETLB, %zu): %s", len, strerror(errno));
		h->p = NULL;
		nr_hugepages_set(h->pool0);
		return false;
	}
	return true;
}

static void huge_put(struct huge *h)
{
	if (h->p)
		munmap(h->p, h->len);
	nr_hugepages_set(h->pool0);
	huge_pool0 = -1;
}

/* One signaled READ of 64 bytes from @remote on @conn, completing @status. */
static void huge_read(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ubuf) *self, uint32_t conn, uint32_t local,
		      uint64_t remote, uint32_t rkey, uint32_t status)
{
	struct krdma_wr wr;
	struct krdma_wc wc;

	kt_wr_init(&wr, remote, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, local, 0, 64);
	wr.remote_addr = remote;
	wr.rkey = rkey;
	test_cmd_post1(conn, &wr);
	expect_wc(_metadata, self->fd, conn, remote, status, &wc);
}

/*
 * The registered huge pages: WRITEs at the start, across huge page
 * boundaries and at the end land there and nowhere near; READs bring them
 * back.  Then a READ a byte before the start and one a byte past the end,
 * each on a connection of its own (a refused READ ends its QP), are
 * refused: the first and last MR pages hold memory that is not the
 * buffer's.
 */
static void huge_traffic(struct __test_metadata *_metadata,
			 FIXTURE_DATA(ubuf) *self, uint8_t *p, uint64_t len,
			 const struct kt_buf *dst)
{
	const uint64_t spot[] = {
		0,
		HUGE_SZ - ((uintptr_t)p & (HUGE_SZ - 1)) - 32,	/* a boundary */
		len / HUGE_SZ / 2 * HUGE_SZ - ((uintptr_t)p & (HUGE_SZ - 1)) - 32,
		len - 64,
	};
	struct kt_conn a2, b2;
	struct kt_buf src, back;
	uint8_t pat[64], got[64];
	const char *why;
	unsigned int i;

	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64, &back);
	for (i = 0; i < ARRAY_SIZE(spot); i++) {
		kt_fill(pat, 64, 90 + i);
		test_cmd_buf_write(src.handle, 0, pat, 64);
		one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, i, src.handle,
			  0, 64, dst->addr + spot[i], dst->rkey, 0);
		EXPECT_EQ(-1, kt_check(p + spot[i], 64, 90 + i)) {
			TH_LOG("WRITE at %llu", (unsigned long long)spot[i]);
		}
		/* nothing else written, a page on each side */
		EXPECT_EQ(-1, kt_check_byte(p + spot[i] - psz, psz, 0));
		EXPECT_EQ(-1, kt_check_byte(p + spot[i] + 64, psz, 0));
		one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 10 + i,
			  back.handle, 0, 64, dst->addr + spot[i], dst->rkey, 0);
		test_cmd_buf_read(back.handle, 0, got, 64);
		EXPECT_EQ(0, memcmp(got, pat, 64)) {
			TH_LOG("READ at %llu", (unsigned long long)spot[i]);
		}
	}
	why = kt_dev_lacks(&self->dev, KT_CAP_REMOTE_ERR_WC);
	if (!why)
		why = kt_rxe_defect(KT_RXE_NO_ACCESS_NAK);
	if (why) {
		TH_LOG("bounds not checked: %s", why);
		return;
	}
	huge_read(_metadata, self, self->a.handle, back.handle, dst->addr - 1,
		  dst->rkey, KT_WC_REM_ACCESS_ERR);
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &fixture_caps,
			   &a2, &b2);
	huge_read(_metadata, self, a2.handle, back.handle, dst->addr + len - 63,
		  dst->rkey, KT_WC_REM_ACCESS_ERR);
}

/*
 * Memory of 2 MiB huge pages registers in 2 MiB MR pages: on rxe's page
 * lists of 512, up to max_mr_size (1022 MiB; 64 MiB where the guest has not
 * the memory), where small pages fit 2 MiB.  The longest buffer, aligned to
 * a huge page, registers; so does one starting 5 pages and 13 bytes into a
 * huge page, whose MR's first page starts before it (huge_traffic()).
 * Both are one MR.  DESTROY unpins: the pool is whole
 * again once the memory is unmapped.
 */
KRDMA_TEST_F_TIMEOUT(ubuf, huge_pages, 300)
{
	const struct krdma_device_info *di = &self->dev.info;
	uint64_t small = (uint64_t)di->max_fast_reg_page_list_len * psz;
	uint64_t len = (uint64_t)di->max_fast_reg_page_list_len * HUGE_SZ;
	const uint64_t off = 5 * psz + 13;
	struct kt_buf dst;
	long free0, avail;
	struct huge h;
	int ret;

	if (!(di->page_size_cap & HUGE_SZ))
		SKIP(return, "%s: no 2 MiB MR pages (page_size_cap 0x%llx)",
		     di->name, (unsigned long long)di->page_size_cap);
	if (len > GIB)
		len = GIB;
	if (len > di->max_mr_size / HUGE_SZ * HUGE_SZ)
		len = di->max_mr_size / HUGE_SZ * HUGE_SZ;
	avail = proc_long("/proc/meminfo", "MemAvailable:") / 1024;
	if (avail < (long)((len + 256 * MIB) / MIB)) {
		TH_LOG("%ld MiB available: 64 MiB of huge pages, not %llu",
		       avail, (unsigned long long)(len / MIB));
		len = 64 * MIB;
	}
	if (len <= small + HUGE_SZ)
		SKIP(return, "%s: small pages already map %llu bytes",
		     di->name, (unsigned long long)small);
	if (!huge_get(_metadata, &h, len))
		SKIP(return, "no %llu MiB of huge pages",
		     (unsigned long long)(len / MIB));
	free0 = proc_long("/proc/meminfo", "HugePages_Free:");
	TH_LOG("%llu bytes of huge pages; small pages map %llu in one MR, max_mr_size %llu",
	       (unsigned long long)len, (unsigned long long)small,
	       (unsigned long long)di->max_mr_size);
	/* all of it, in one MR (small pages would need several) */
	ret = ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, h.p, len,
		     &dst);
	EXPECT_OK(ret);
	if (!ret) {
		EXPECT_EQ(1u, dst.num_mrs);
		EXPECT_OK(kt_destroy(self->fd, dst.handle));
	}
	/* from inside the first huge page to inside the last */
	ret = ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, h.p + off,
		     len - HUGE_SZ, &dst);
	EXPECT_OK(ret);
	if (!ret) {
		EXPECT_EQ(1u, dst.num_mrs);
		huge_traffic(_metadata, self, h.p + off, len - HUGE_SZ, &dst);
		EXPECT_OK(kt_destroy(self->fd, dst.handle));
	}
	munmap(h.p, h.len);
	h.p = NULL;
	/* faulted in (pinned) since: all back in the pool */
	EXPECT_EQ(free0, proc_long("/proc/meminfo", "HugePages_Free:"));
	huge_put(&h);
}

/* ------------------------------------------------------------------------
 * Several MRs: user memory of small pages that one MR does not map
 */

#define MULTI_KEYS 4200		/* the module's 4096 MRs, and to spare */

/*
 * Register @len bytes at @p, which small MR pages alone map (the caller
 * broke its runs), into @r with every rkey in @rkeys; check the MRs' count
 * and length.
 */
static void multi_reg(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ubuf) *self, uint8_t *p, uint64_t len,
		      struct krdma_buf_reg_user *r, uint32_t *rkeys)
{
	uint64_t most = (uint64_t)self->dev.info.max_fast_reg_page_list_len *
			psz;
	uint32_t i;

	reg_init(r, self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE |
		 KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ, p, len);
	r->rkeys_uptr = (uintptr_t)rkeys;
	r->num_rkeys = MULTI_KEYS;
	ASSERT_OK(ioctl(self->fd, KRDMA_BUF_REG_USER, r));
	TH_LOG("%llu bytes at page offset %llu: %u MRs of %llu bytes",
	       (unsigned long long)len, (unsigned long long)r->addr,
	       r->num_mrs, (unsigned long long)r->mr_length);
	ASSERT_EQ((uintptr_t)p % psz, r->addr);
	ASSERT_EQ(0u, r->mr_length % psz);
	ASSERT_LE(r->mr_length, most);
	ASSERT_GE(r->mr_length, most / 2);
	ASSERT_EQ((r->addr + len + r->mr_length - 1) / r->mr_length,
		  r->num_mrs);
	EXPECT_EQ(r->rkey, rkeys[0]);
	for (i = 1; i < r->num_mrs; i++)
		ASSERT_NE(rkeys[i - 1], rkeys[i]);
}

/*
 * Across the boundary between MR @i - 1 and MR @i of @r (at @p): WRITE 32
 * bytes to each side, each with its own MR's rkey; READ them back from
 * each side; and WRITE from each side as a local SGE.  @src and @dst are
 * kernel buffers of 128 bytes.  An SGE across the boundary is refused.
 */
static void multi_boundary(struct __test_metadata *_metadata,
			   FIXTURE_DATA(ubuf) *self,
			   const struct krdma_buf_reg_user *r,
			   const uint32_t *rkeys, uint8_t *p, uint32_t i,
			   const struct kt_buf *src, const struct kt_buf *dst)
{
	uint64_t b = (uint64_t)i * r->mr_length, off = b - r->addr;
	uint8_t pat[64], got[128];
	struct krdma_wr wr;

	kt_fill(pat, sizeof(pat), i);
	test_cmd_buf_write(src->handle, 0, pat, sizeof(pat));
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src->handle, 0, 32,
		  b - 32, rkeys[i - 1], 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 2, src->handle, 32, 32,
		  b, rkeys[i], 0);
	ASSERT_EQ(0, memcmp(p + off - 32, pat, 64)) {
		TH_LOG("boundary %u: WRITEs not in the user's memory", i);
	}
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 3, dst->handle, 0, 32,
		  b - 32, rkeys[i - 1], 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 4, dst->handle, 32, 32,
		  b, rkeys[i], 0);
	/* the user buffer as the local side, an SGE in each MR */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 5, r->handle, off - 32,
		  32, dst->addr + 64, dst->rkey, 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 6, r->handle, off, 32,
		  dst->addr + 96, dst->rkey, 0);
	test_cmd_buf_read(dst->handle, 0, got, sizeof(got));
	ASSERT_EQ(0, memcmp(got, pat, 64)) {
		TH_LOG("boundary %u: READs", i);
	}
	ASSERT_EQ(0, memcmp(got + 64, pat, 64)) {
		TH_LOG("boundary %u: WRITEs from the user's memory", i);
	}
	kt_wr_init(&wr, 7, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, r->handle, off - 1, 2);
	wr.remote_addr = dst->addr;
	wr.rkey = dst->rkey;
	test_err_post1(EINVAL, self->a.handle, &wr);
}

/*
 * A buffer of small pages one MR does not map is several, up to the last
 * byte of the last one: at page offset 100, three MRs' pages and 5000
 * bytes more.  Every boundary carries traffic with each side's keys.
 */
KRDMA_TEST_F_TIMEOUT(ubuf, several_mrs, 180)
{
	uint64_t len = 3ull * self->dev.info.max_fast_reg_page_list_len * psz +
		       5000;
	uint32_t rkeys[MULTI_KEYS], i;
	struct krdma_buf_reg_user r;
	struct kt_buf src, dst;
	struct region reg;
	uint8_t pat[64];

	REGION_GET_SMALL(&reg, len, 100);
	multi_reg(_metadata, self, reg.p, len, &r, rkeys);
	ASSERT_EQ(4u, r.num_mrs);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 128, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 128, &dst);
	for (i = 1; i < r.num_mrs; i++)
		multi_boundary(_metadata, self, &r, rkeys, reg.p, i, &src, &dst);
	/* the last MR's last bytes, the buffer's last */
	kt_fill(pat, sizeof(pat), 99);
	test_cmd_buf_write(src.handle, 0, pat, sizeof(pat));
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 8, src.handle, 0, 64,
		  r.addr + len - 64, rkeys[r.num_mrs - 1], 0);
	EXPECT_EQ(0, memcmp(reg.p + len - 64, pat, 64));
	EXPECT_TRUE(guards_ok(_metadata, reg.map, reg.map_len, reg.p, len));
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	region_put(&reg);
}

/* A peer's WRITE that runs from one MR into the next is refused. */
KRDMA_TEST_F(ubuf, several_mrs_write_across)
{
	uint64_t len = 2ull * self->dev.info.max_fast_reg_page_list_len * psz;
	uint32_t rkeys[MULTI_KEYS];
	struct krdma_buf_reg_user r;
	struct region reg;
	struct kt_buf src;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	REGION_GET_SMALL(&reg, len, 0);
	memset(reg.map, POISON, reg.map_len);
	multi_reg(_metadata, self, reg.p, len, &r, rkeys);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 64,
		  r.mr_length - 32, rkeys[0], KT_WC_REM_ACCESS_ERR);
	EXPECT_EQ(-1, kt_check_byte(reg.map, reg.map_len, POISON));
	region_put(&reg);
}

/*
 * Huge pages past what one MR maps (rxe: 511 of them) are several MRs of
 * huge MR pages, not a thousand MRs of small ones: two here, whose
 * boundary carries traffic.
 */
KRDMA_TEST_F_TIMEOUT(ubuf, several_mrs_huge, 300)
{
	const struct krdma_device_info *di = &self->dev.info;
	uint64_t small = (uint64_t)di->max_fast_reg_page_list_len * psz;
	uint64_t one = di->max_mr_size / HUGE_SZ * HUGE_SZ;
	uint64_t len = one + 2 * HUGE_SZ;
	uint32_t rkeys[MULTI_KEYS];
	struct krdma_buf_reg_user r;
	struct kt_buf src, dst;
	long avail;
	struct huge h;

	if (!(di->page_size_cap & HUGE_SZ))
		SKIP(return, "%s: no 2 MiB MR pages (page_size_cap 0x%llx)",
		     di->name, (unsigned long long)di->page_size_cap);
	avail = proc_long("/proc/meminfo", "MemAvailable:") / 1024;
	if (avail < (long)((len + 256 * MIB) / MIB))
		SKIP(return, "%ld MiB available: not %llu MiB of huge pages",
		     avail, (unsigned long long)(len / MIB));
	if (!huge_get(_metadata, &h, len))
		SKIP(return, "no %llu MiB of huge pages",
		     (unsigned long long)(len / MIB));
	memset(h.p, 0, len);
	reg_init(&r, self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE |
		 KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ, h.p, len);
	r.rkeys_uptr = (uintptr_t)rkeys;
	r.num_rkeys = MULTI_KEYS;
	ASSERT_OK(ioctl(self->fd, KRDMA_BUF_REG_USER, &r));
	TH_LOG("%llu bytes of huge pages: %u MRs of %llu bytes",
	       (unsigned long long)len, r.num_mrs,
	       (unsigned long long)r.mr_length);
	EXPECT_EQ(2u, r.num_mrs);
	EXPECT_EQ(0u, r.mr_length % HUGE_SZ);
	EXPECT_LT(small, r.mr_length);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 128, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 128, &dst);
	if (r.num_mrs == 2)
		multi_boundary(_metadata, self, &r, rkeys, h.p, 1, &src, &dst);
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	huge_put(&h);
}

/* A bench run addresses its slots with one key: a buffer of one MR. */
static int bench_on(FIXTURE_DATA(ubuf) *self, uint32_t local_buf,
		    const struct kt_buf *peer)
{
	uint32_t conn = self->a.handle;
	struct krdma_bench b = {
		.size = sizeof(b),
		.opcode = KRDMA_OP_RDMA_WRITE,
		.num_conns = 1,
		.conns_uptr = (uintptr_t)&conn,
		.local_buf = local_buf,
		.msg_size = 4096,
		.remote_addr = peer->addr,
		.remote_length = peer->len,
		.remote_rkey = peer->rkey,
		.tx_depth = 4,
		.iters = 8,
		.timeout_ms = 20000,
	};

	return ioctl(self->fd, KRDMA_BENCH, &b);
}

KRDMA_TEST_F(ubuf, several_mrs_bench_refused)
{
	uint64_t len = self->dev.info.max_fast_reg_page_list_len * psz;
	uint32_t rkeys[MULTI_KEYS];
	struct krdma_buf_reg_user r;
	struct kt_buf peer, one;
	struct region reg;

	if (!kt_module_has(KRDMA_FEATURE_BENCH))
		SKIP(return, "no KRDMA_FEATURE_BENCH");
	REGION_GET_SMALL(&reg, len + psz, 0);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 65536, &peer);
	/* one MR: the run goes */
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, reg.p,
			 len, &one));
	ASSERT_EQ(1u, one.num_mrs);
	EXPECT_OK(bench_on(self, one.handle, &peer));
	EXPECT_OK(kt_destroy(self->fd, one.handle));
	/* a page more, two MRs: refused */
	multi_reg(_metadata, self, reg.p, len + psz, &r, rkeys);
	EXPECT_ERRNO(EINVAL, bench_on(self, r.handle, &peer));
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	EXPECT_OK(kt_destroy(self->fd, peer.handle));
	region_put(&reg);
}

/*
 * An empty SGE at the very end of a buffer that ends where an MR does
 * names no byte of any MR: it is taken (a zero-length WRITE).
 */
KRDMA_TEST_F(ubuf, several_mrs_empty_sge_at_end)
{
	uint64_t len = 2ull * self->dev.info.max_fast_reg_page_list_len * psz;
	uint32_t rkeys[MULTI_KEYS];
	struct krdma_buf_reg_user r;
	struct region reg;
	struct kt_buf dst;

	REGION_GET_SMALL(&reg, len, 0);
	multi_reg(_metadata, self, reg.p, len, &r, rkeys);
	ASSERT_EQ(0u, len % r.mr_length);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64, &dst);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, r.handle, len, 0,
		  dst.addr, dst.rkey, 0);
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	region_put(&reg);
}

/*
 * A GiB of small pages, zero copy (CAP_IPC_LOCK: RLIMIT_MEMLOCK does not
 * bound root): every boundary between its MRs carries traffic.
 */
KRDMA_TEST_F_TIMEOUT(ubuf, several_mrs_gib, 900)
{
	const uint64_t len = GIB;
	uint32_t *rkeys;
	struct krdma_buf_reg_user r;
	struct kt_buf src, dst;
	struct region reg;
	long avail;
	uint32_t i;

	avail = proc_long("/proc/meminfo", "MemAvailable:") / 1024;
	if (avail < (long)((len + 512 * MIB) / MIB))
		SKIP(return, "%ld MiB available: no room to pin a GiB", avail);
	REGION_GET_SMALL(&reg, len, 4000);
	rkeys = calloc(MULTI_KEYS, sizeof(*rkeys));
	ASSERT_NE(NULL, rkeys);
	multi_reg(_metadata, self, reg.p, len, &r, rkeys);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 128, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 128, &dst);
	for (i = 1; i < r.num_mrs; i++)
		multi_boundary(_metadata, self, &r, rkeys, reg.p, i, &src, &dst);
	EXPECT_TRUE(guards_ok(_metadata, reg.map, reg.map_len, reg.p, len));
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	region_put(&reg);
	free(rkeys);
}

/* ------------------------------------------------------------------------
 * RDMA READ user -> user, user memory as a WRITE's source, SEND/RECV
 */

KRDMA_TEST_F_TIMEOUT(ubuf, read_user_to_user, 180)
{
	unsigned int i, it;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t size = sizes[i];
		struct region rs, rd;
		struct kt_buf src, dst;

		if (!size_fits(_metadata, self, "READ", size, 13))
			continue;
		ASSERT_OK(region_get(&rs, size, 13));
		ASSERT_OK(region_get(&rd, size, 7));
		kt_fill(rs.p, size, kt_seed(10, size, 0));
		/* REMOTE_READ only: pinned without FOLL_WRITE */
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
				 KRDMA_ACCESS_REMOTE_READ, rs.p, size, &src));
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
				 KRDMA_ACCESS_LOCAL_WRITE, rd.p, size, &dst));
		EXPECT_EQ(0u, dst.rkey);
		for (it = 0; it < 2; it++) {
			uint32_t seed = kt_seed(10, size, it);
			int64_t bad;

			TH_LOG("READ size %llu iteration %u",
			       (unsigned long long)size, it);
			/* the second time the source changed after registering */
			if (it)
				kt_fill(rs.p, size, seed);
			memset(rd.map, POISON, rd.map_len);
			one_sided(_metadata, self, KRDMA_OP_RDMA_READ, it,
				  dst.handle, 0, size, src.addr, src.rkey, 0);
			bad = kt_check(rd.p, size, seed);
			EXPECT_EQ(-1, bad) {
				TH_LOG("size %llu: byte %lld is 0x%02x, expected 0x%02x",
				       (unsigned long long)size, (long long)bad,
				       rd.p[bad], kt_pattern_byte(seed, bad));
			}
			EXPECT_TRUE(guards_ok(_metadata, rd.map, rd.map_len,
					      rd.p, size));
			EXPECT_TRUE(guards_ok(_metadata, rs.map, rs.map_len,
					      rs.p, size));
		}
		/* a partial READ from inside the source to inside the target */
		if (size > 100) {
			memset(rd.map, POISON, rd.map_len);
			one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 9,
				  dst.handle, 50, size - 100, src.addr + 40,
				  src.rkey, 0);
			EXPECT_EQ(-1, kt_check_byte(rd.p, 50, POISON));
			EXPECT_EQ(0, memcmp(rd.p + 50, rs.p + 40, size - 100));
			EXPECT_EQ(-1, kt_check_byte(rd.p + size - 50, 50,
						    POISON));
		}
		EXPECT_OK(kt_destroy(self->fd, src.handle));
		EXPECT_OK(kt_destroy(self->fd, dst.handle));
		region_put(&rs);
		region_put(&rd);
	}
}

/* User memory registered with no access at all is a WRITE's source. */
KRDMA_TEST_F_TIMEOUT(ubuf, write_from_user, 180)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t size = sizes[i];
		uint32_t seed = kt_seed(20, size, 0);
		struct kt_buf src, dst;
		uint8_t *m, *dmap;
		int64_t bad;

		/* (malloc()'s offset in its page: assume the worst) */
		if (!size_fits(_metadata, self, "WRITE", size + 13, psz - 1))
			continue;
		m = malloc(size + 13);
		ASSERT_NE(NULL, m);
		kt_fill(m + 13, size, seed);
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, m + 13, size,
				 &src));
		EXPECT_EQ(0u, src.rkey);
		test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL,
				   size + GUARD, &dst);
		dmap = kt_buf_mmap(self->fd, &dst);
		ASSERT_NE(MAP_FAILED, dmap);
		memset(dmap, POISON, size + GUARD);
		one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle,
			  0, size, dst.addr, dst.rkey, 0);
		bad = kt_check(dmap, size, seed);
		EXPECT_EQ(-1, bad) {
			TH_LOG("size %llu: byte %lld is 0x%02x, expected 0x%02x",
			       (unsigned long long)size, (long long)bad,
			       dmap[bad], kt_pattern_byte(seed, bad));
		}
		EXPECT_EQ(-1, kt_check_byte(dmap + size, GUARD, POISON));
		/* and from an offset inside the user buffer */
		if (size > 10) {
			memset(dmap, POISON, size + GUARD);
			one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 2,
				  src.handle, 10, size - 10, dst.addr,
				  dst.rkey, 0);
			EXPECT_EQ(0, memcmp(dmap, m + 13 + 10, size - 10));
			EXPECT_EQ(-1, kt_check_byte(dmap + size - 10, GUARD,
						    POISON));
		}
		kt_buf_munmap(dmap, &dst);
		EXPECT_OK(kt_destroy(self->fd, src.handle));
		EXPECT_OK(kt_destroy(self->fd, dst.handle));
		free(m);
	}
}

/* SEND from user memory into a RECV posted on user memory. */
KRDMA_TEST_F_TIMEOUT(ubuf, send_into_user_recv, 180)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t size = sizes[i];
		uint32_t seed = kt_seed(30, size, 0);
		struct region rs, rd;
		struct kt_buf src, dst;
		struct krdma_wr wr, rwr;
		struct krdma_wc wc;
		int64_t bad;

		if (!size_fits(_metadata, self, "SEND", size + 5 + 100,
			       psz - 1))
			continue;
		TH_LOG("SEND size %llu", (unsigned long long)size);
		ASSERT_OK(region_get(&rs, size, 13));
		ASSERT_OK(region_get(&rd, size + 5 + 100, psz - 1));
		kt_fill(rs.p, size, seed);
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, rs.p, size,
				 &src));
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
				 KRDMA_ACCESS_LOCAL_WRITE, rd.p, rd.len, &dst));
		/* the RECV starts 5 bytes into the user buffer */
		kt_wr_init(&rwr, 50, KRDMA_OP_RECV, 0);
		kt_wr_sge(&rwr, dst.handle, 5, size + 100);
		test_cmd_post1(self->b.handle, &rwr);
		kt_wr_init(&wr, 51, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, src.handle, 0, size);
		test_cmd_post1(self->a.handle, &wr);
		expect_wc(_metadata, self->fd, self->a.handle, 51, 0, &wc);
		expect_wc(_metadata, self->fd, self->b.handle, 50, 0, &wc);
		EXPECT_EQ((__u32)KRDMA_OP_RECV, wc.opcode);
		EXPECT_EQ(size, wc.byte_len);
		EXPECT_EQ(-1, kt_check_byte(rd.p, 5, POISON));
		bad = kt_check(rd.p + 5, size, seed);
		EXPECT_EQ(-1, bad) {
			TH_LOG("size %llu: byte %lld is 0x%02x, expected 0x%02x",
			       (unsigned long long)size, (long long)bad,
			       rd.p[5 + bad], kt_pattern_byte(seed, bad));
		}
		EXPECT_EQ(-1, kt_check_byte(rd.p + 5 + size, 100, POISON));
		EXPECT_TRUE(guards_ok(_metadata, rd.map, rd.map_len, rd.p,
				      rd.len));
		EXPECT_OK(kt_destroy(self->fd, src.handle));
		EXPECT_OK(kt_destroy(self->fd, dst.handle));
		region_put(&rs);
		region_put(&rd);
	}
}

/*
 * Whether krdma refuses, on @d, a send that gathers an SGE after one that
 * ends past its buffer's first chunk (page), unless from later in that
 * same buffer: siw takes such an SGE's bytes from the wrong pages
 * (module/quirks.h, KRDMA_QUIRK_SEND_SGE_ORDER).
 */
static bool kt_dev_gathers_in_order(const struct kt_dev *d)
{
	return d->info.vendor_id == KT_SIW_VENDOR_ID;
}

/*
 * Post @wr (wr_id 2) on a, b's receive (wr_id 1) posted: %EINVAL if
 * @refused, else both complete, the receive with @len bytes.  Whether the
 * SEND went.
 */
static bool send_gathered(struct __test_metadata *_metadata,
			  FIXTURE_DATA(ubuf) *self, struct krdma_wr *wr,
			  bool refused, uint32_t len)
{
	struct krdma_wc wc;

	if (refused) {
		test_err_post1(EINVAL, self->a.handle, wr);
		return false;
	}
	test_cmd_post1(self->a.handle, wr);
	expect_wc(_metadata, self->fd, self->a.handle, 2, 0, &wc);
	expect_wc(_metadata, self->fd, self->b.handle, 1, 0, &wc);
	EXPECT_EQ(len, wc.byte_len);
	return true;
}

/*
 * A SEND gathered from a user buffer of two pages and a kernel buffer of
 * one (the kernel's first if @kernel_first), scattered into two users.
 * Where the device gathers in order only, the user buffer's SGE ends past
 * its first page: the kernel's after it is refused.
 */
static void multi_sge(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ubuf) *self, bool kernel_first)
{
	struct region r1, r2, r3;
	struct kt_buf u1, k, u2, u3;
	struct krdma_wr wr, rwr;
	uint8_t kdata[3000], want[7000];
	size_t ulen = 4000, klen = 3000;

	ASSERT_OK(region_get(&r1, ulen, psz - 100));
	ASSERT_OK(region_get(&r2, 5000, 11));
	ASSERT_OK(region_get(&r3, 5000, 1));
	kt_fill(r1.p, ulen, 41);
	kt_fill(kdata, klen, 42);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, r1.p, ulen, &u1));
	test_cmd_buf_alloc(self->dev.dev_index, 0, klen, &k);
	test_cmd_buf_write(k.handle, 0, kdata, klen);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, r2.p, 5000, &u2));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, r3.p, 5000, &u3));
	kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	if (kernel_first) {
		memcpy(want, kdata, klen);
		memcpy(want + klen, r1.p, ulen);
		kt_wr_sge(&wr, k.handle, 0, klen);
		kt_wr_sge(&wr, u1.handle, 0, ulen);
	} else {
		memcpy(want, r1.p, ulen);
		memcpy(want + ulen, kdata, klen);
		kt_wr_sge(&wr, u1.handle, 0, ulen);
		kt_wr_sge(&wr, k.handle, 0, klen);
	}

	kt_wr_init(&rwr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, u2.handle, 1000, 4000);
	kt_wr_sge(&rwr, u3.handle, 2, 4000);
	test_cmd_post1(self->b.handle, &rwr);
	if (!send_gathered(_metadata, self, &wr, !kernel_first &&
			   kt_dev_gathers_in_order(&self->dev), 7000))
		goto out;
	EXPECT_EQ(0, memcmp(r2.p + 1000, want, 4000));
	EXPECT_EQ(0, memcmp(r3.p + 2, want + 4000, 3000));
	EXPECT_EQ(-1, kt_check_byte(r2.p, 1000, POISON));
	EXPECT_EQ(-1, kt_check_byte(r3.p, 2, POISON));
	EXPECT_EQ(-1, kt_check_byte(r3.p + 3002, 5000 - 3002, POISON));
	EXPECT_TRUE(guards_ok(_metadata, r2.map, r2.map_len, r2.p, 5000));
	EXPECT_TRUE(guards_ok(_metadata, r3.map, r3.map_len, r3.p, 5000));
out:
	region_put(&r1);
	region_put(&r2);
	region_put(&r3);
}

KRDMA_TEST_F(ubuf, multi_sge_user)
{
	multi_sge(_metadata, self, false);
}

KRDMA_TEST_F(ubuf, multi_sge_kernel_first)
{
	multi_sge(_metadata, self, true);
}

/*
 * A SEND whose second SGE starts at the first page of a user buffer of
 * three pages, after an SGE that ends in the second page of another: each
 * SGE's pages are its own buffer's (the bytes arrive as sent), or where
 * the device gathers in order only, it is refused.  The buffer's pages
 * are faulted in again, so that they need not be one physically
 * contiguous run.
 */
KRDMA_TEST_F(ubuf, multi_sge_second_longer)
{
	struct region r1, rb, rd;
	struct kt_buf u1, ub, ud;
	struct krdma_wr wr, rwr;
	uint8_t want[7000];
	int64_t bad;
	int i;

	ASSERT_OK(region_get(&r1, 4000, psz - 100));
	ASSERT_OK(region_get(&rb, 3 * psz, 0));
	ASSERT_OK(region_get(&rd, 7000, 5));
	ASSERT_OK(madvise(rb.p, 3 * psz, MADV_DONTNEED));
	for (i = 2; i >= 0; i--)
		kt_fill(rb.p + i * psz, psz, 50 + i);
	kt_fill(r1.p, 4000, 49);
	memcpy(want, r1.p, 4000);
	memcpy(want + 4000, rb.p, 3000);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, r1.p, 4000, &u1));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, rb.p, 3 * psz, &ub));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, rd.p, 7000, &ud));

	kt_wr_init(&rwr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, ud.handle, 0, 7000);
	test_cmd_post1(self->b.handle, &rwr);
	kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, u1.handle, 0, 4000);
	kt_wr_sge(&wr, ub.handle, 0, 3000);
	if (!send_gathered(_metadata, self, &wr,
			   kt_dev_gathers_in_order(&self->dev), 7000))
		goto out;
	bad = -1;
	for (i = 0; i < 7000 && bad < 0; i++)
		if (rd.p[i] != want[i])
			bad = i;
	EXPECT_EQ(-1, bad) {
		TH_LOG("byte %lld is 0x%02x, sent 0x%02x", (long long)bad,
		       rd.p[bad], want[bad]);
	}
	EXPECT_TRUE(guards_ok(_metadata, rd.map, rd.map_len, rd.p, 7000));
out:
	region_put(&r1);
	region_put(&rb);
	region_put(&rd);
}

/*
 * Two SGEs of one user buffer of three pages, the first crossing into its
 * second page: the second SGE later in the buffer, then earlier.  Both
 * arrive as sent, or where the device gathers in order only, the earlier
 * one is refused (it would be looked up from the first one's page).
 */
KRDMA_TEST_F(ubuf, multi_sge_same_buffer)
{
	const uint64_t off[2][2] = {
		{ psz - 100, 2 * psz + 10 },	/* later */
		{ psz - 100, 20 },		/* earlier */
	};
	struct region rs, rd;
	struct kt_buf us, ud;
	struct krdma_wr wr, rwr;
	struct krdma_wc wc;
	uint8_t want[600];
	unsigned int c;

	ASSERT_OK(region_get(&rs, 3 * psz, 0));
	ASSERT_OK(region_get(&rd, 600, 3));
	/* faulted in again, as in multi_sge_second_longer */
	ASSERT_OK(madvise(rs.p, 3 * psz, MADV_DONTNEED));
	for (c = 3; c-- > 0;)
		kt_fill(rs.p + c * psz, psz, 61 + c);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, rs.p, 3 * psz, &us));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, rd.p, 600, &ud));
	for (c = 0; c < 2; c++) {
		memcpy(want, rs.p + off[c][0], 300);
		memcpy(want + 300, rs.p + off[c][1], 300);
		memset(rd.p, POISON, 600);
		kt_wr_init(&rwr, 10 + c, KRDMA_OP_RECV, 0);
		kt_wr_sge(&rwr, ud.handle, 0, 600);
		test_cmd_post1(self->b.handle, &rwr);
		kt_wr_init(&wr, 20 + c, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, us.handle, off[c][0], 300);
		kt_wr_sge(&wr, us.handle, off[c][1], 300);
		if (c == 1 && kt_dev_gathers_in_order(&self->dev)) {
			test_err_post1(EINVAL, self->a.handle, &wr);
			break;
		}
		test_cmd_post1(self->a.handle, &wr);
		expect_wc(_metadata, self->fd, self->a.handle, 20 + c, 0, &wc);
		expect_wc(_metadata, self->fd, self->b.handle, 10 + c, 0, &wc);
		EXPECT_EQ(600u, wc.byte_len);
		EXPECT_EQ(0, memcmp(rd.p, want, 600)) {
			TH_LOG("%s SGE: the bytes differ",
			       c ? "earlier" : "later");
		}
	}
	region_put(&rs);
	region_put(&rd);
}

/*
 * A SEND of two user buffers' first bytes with an SGE of no bytes between
 * them: the payload is the two, and the empty SGE takes nothing (siw,
 * given one, dereferences a memory object it never looked up).
 */
KRDMA_TEST_F(ubuf, multi_sge_empty_between)
{
	struct region r1, r2, rd;
	struct kt_buf u1, u2, ud;
	struct krdma_wr wr, rwr;
	uint8_t want[200];

	ASSERT_OK(region_get(&r1, 100, 7));
	ASSERT_OK(region_get(&r2, 100, 9));
	ASSERT_OK(region_get(&rd, 200, 3));
	kt_fill(r1.p, 100, 71);
	kt_fill(r2.p, 100, 72);
	memcpy(want, r1.p, 100);
	memcpy(want + 100, r2.p, 100);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, r1.p, 100, &u1));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, r2.p, 100, &u2));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, rd.p, 200, &ud));
	kt_wr_init(&rwr, 1, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, ud.handle, 0, 200);
	test_cmd_post1(self->b.handle, &rwr);
	kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, u1.handle, 0, 100);
	kt_wr_sge(&wr, u1.handle, 50, 0);
	kt_wr_sge(&wr, u2.handle, 0, 100);
	ASSERT_TRUE(send_gathered(_metadata, self, &wr, false, 200));
	EXPECT_EQ(0, memcmp(rd.p, want, 200));
	EXPECT_TRUE(guards_ok(_metadata, rd.map, rd.map_len, rd.p, 200));
	region_put(&r1);
	region_put(&r2);
	region_put(&rd);
}

/* Inline payload copied from user pages, the SGE straddling two pages. */
KRDMA_TEST_F(ubuf, inline_from_user)
{
	struct region rs, rd;
	struct kt_buf src, dst;
	struct krdma_wr wr;
	struct krdma_wc wc;

	if (self->a.caps.max_inline_data < 64)
		SKIP(return, "max_inline_data %u", self->a.caps.max_inline_data);
	ASSERT_OK(region_get(&rs, 128, psz - 64 - 20));
	ASSERT_OK(region_get(&rd, 128, 13));
	kt_fill(rs.p, 128, 61);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, 0, rs.p, 128, &src));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE,
			 rd.p, 128, &dst));
	/* bytes 40 .. 103 of the source: page boundary at 84 */
	kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE,
		   KRDMA_WR_SIGNALED | KRDMA_WR_INLINE);
	kt_wr_sge(&wr, src.handle, 40, 64);
	wr.remote_addr = dst.addr + 7;
	wr.rkey = dst.rkey;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 1, 0, &wc);
	write_placed(_metadata, self, &wc);
	EXPECT_EQ(0, memcmp(rd.p + 7, rs.p + 40, 64));
	EXPECT_EQ(-1, kt_check_byte(rd.p, 7, POISON));
	EXPECT_EQ(-1, kt_check_byte(rd.p + 71, 128 - 71, POISON));
	EXPECT_TRUE(guards_ok(_metadata, rd.map, rd.map_len, rd.p, 128));
	region_put(&rs);
	region_put(&rd);
}

/* Atomics on 8-aligned words of user memory, a page boundary among them. */
KRDMA_TEST_F(ubuf, atomics_on_user)
{
	struct region rt, rr;
	struct kt_buf target, result;
	uint64_t *w, *res, shadow[8];
	unsigned int i, k;

	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	/* words 0..2 end one page, words 3..7 start the next */
	ASSERT_OK(region_get(&rt, 64, psz - 24));
	ASSERT_OK(region_get(&rr, 8, 8));
	w = (uint64_t *)rt.p;
	res = (uint64_t *)rr.p;
	for (i = 0; i < 8; i++)
		w[i] = shadow[i] = 0x1111111111111111ull * i + 0x1000;
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_ATOMIC,
			 rt.p, 64, &target));
	ASSERT_NE(0u, target.rkey);
	EXPECT_EQ(0u, target.addr % 8);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, rr.p, 8, &result));
	for (i = 0; i < 12; i++) {
		bool cas = i % 2;
		uint64_t add = 0x10001ull * (i + 1), next = 0xabcd000000ull + i;
		struct krdma_wr wr;
		struct krdma_wc wc;

		k = (i * 3 + 1) % 8;
		*res = ~shadow[k];
		kt_wr_init(&wr, 200 + i, cas ? KRDMA_OP_ATOMIC_CMP_SWP :
					      KRDMA_OP_ATOMIC_FETCH_ADD,
			   KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, result.handle, 0, 8);
		wr.remote_addr = target.addr + 8 * k;
		wr.rkey = target.rkey;
		wr.compare_add = cas ? shadow[k] : add;
		if (cas)
			wr.swap = next;
		test_cmd_post1(self->a.handle, &wr);
		expect_wc(_metadata, self->fd, self->a.handle, 200 + i, 0, &wc);
		EXPECT_EQ(shadow[k], *res) {
			TH_LOG("op %u word %u: old 0x%llx, expected 0x%llx", i,
			       k, (unsigned long long)*res,
			       (unsigned long long)shadow[k]);
		}
		shadow[k] = cas ? next : shadow[k] + add;
		EXPECT_EQ(0, memcmp(shadow, w, sizeof(shadow))) {
			unsigned int j;

			for (j = 0; j < 8; j++)
				TH_LOG("word %u: 0x%llx, expected 0x%llx", j,
				       (unsigned long long)w[j],
				       (unsigned long long)shadow[j]);
		}
	}
	EXPECT_TRUE(guards_ok(_metadata, rt.map, rt.map_len, rt.p, 64));
	EXPECT_TRUE(guards_ok(_metadata, rr.map, rr.map_len, rr.p, 8));
	region_put(&rt);
	region_put(&rr);
}

/* Two registrations of overlapping memory: both see the same bytes. */
KRDMA_TEST_F(ubuf, overlapping_registrations)
{
	struct region r;
	struct kt_buf u1, u2, src;
	uint8_t pat[100];

	ASSERT_OK(region_get(&r, 3 * psz, 0));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p,
			 2 * psz, &u1));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			 r.p + psz + 50, 2 * psz - 50, &u2));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 100, &src);
	kt_fill(pat, 100, 5);
	test_cmd_buf_write(src.handle, 0, pat, 100);
	/* through u2 at its offset 10: r.p + psz + 60, i.e. u1 + psz + 60 */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 100,
		  u2.addr + 10, u2.rkey, 0);
	EXPECT_EQ(0, memcmp(r.p + psz + 60, pat, 100));
	/* and READ it back through u1 */
	memset(r.p, 0, 100);
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 2, u1.handle, 0, 100,
		  u1.addr + psz + 60, u1.rkey, 0);
	EXPECT_EQ(0, memcmp(r.p, pat, 100));
	EXPECT_OK(kt_destroy(self->fd, u1.handle));
	/* u2 still works after u1 is gone */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 3, src.handle, 0, 100,
		  u2.addr + 2 * psz - 50 - 100, u2.rkey, 0);
	EXPECT_EQ(0, memcmp(r.p + 3 * psz - 100, pat, 100));
	EXPECT_OK(kt_destroy(self->fd, u2.handle));
	region_put(&r);
}

/* Shared memory (memfd): what RDMA WRITEs is seen through the file. */
KRDMA_TEST_F(ubuf, write_to_memfd)
{
	size_t len = 16 * psz;
	struct kt_buf src, dst;
	uint8_t *m, pat[4096], back[4096];
	int mfd;

	mfd = memfd_create("krdma_ubuf", MFD_CLOEXEC);
	ASSERT_LE(0, mfd);
	ASSERT_OK(ftruncate(mfd, len));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, POISON, len);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, m + 100,
			 len - 200, &dst));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	kt_fill(pat, 4096, 9);
	test_cmd_buf_write(src.handle, 0, pat, 4096);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 4096,
		  dst.addr + 5 * psz, dst.rkey, 0);
	ASSERT_EQ(4096, pread(mfd, back, 4096, 100 + 5 * psz));
	EXPECT_EQ(0, memcmp(back, pat, 4096));
	EXPECT_EQ(0, memcmp(m + 100 + 5 * psz, pat, 4096));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	munmap(m, len);
	close(mfd);
}

/* ------------------------------------------------------------------------
 * Remote errors on user buffers
 */

/* A WRITE crossing the registered length: refused, nothing written. */
KRDMA_TEST_F(ubuf, write_past_user_end)
{
	struct kt_buf src, dst;
	struct region r;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ASSERT_OK(region_get(&r, 100, 13));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p, 100,
			 &dst));
	/* exactly up to the end is fine */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 8,
		  dst.addr + 92, dst.rkey, 0);
	EXPECT_TRUE(guards_ok(_metadata, r.map, r.map_len, r.p, 100));
	memset(r.map, POISON, r.map_len);
	/* 4 bytes past it is not, although the page goes on */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 2, src.handle, 0, 8,
		  dst.addr + 96, dst.rkey, KT_WC_REM_ACCESS_ERR);
	EXPECT_EQ(-1, kt_check_byte(r.map, r.map_len, POISON));
	region_put(&r);
}

/* Before the MR's start (the page's first bytes): refused as well. */
KRDMA_TEST_F(ubuf, write_before_user_start)
{
	struct kt_buf src, dst;
	struct region r;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ASSERT_OK(region_get(&r, 100, 13));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p, 100,
			 &dst));
	ASSERT_EQ(13u, dst.addr);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 8,
		  dst.addr - 8, dst.rkey, KT_WC_REM_ACCESS_ERR);
	EXPECT_EQ(-1, kt_check_byte(r.map, r.map_len, POISON));
	region_put(&r);
}

/* After DESTROY the rkey is dead and the memory is the user's alone. */
KRDMA_TEST_F(ubuf, write_after_destroy)
{
	struct kt_buf src, dst;
	struct region r;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ASSERT_OK(region_get(&r, 8192, 0));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p,
			 8192, &dst));
	test_cmd_destroy(dst.handle);
	test_err_destroy(ENOENT, dst.handle);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 64,
		  dst.addr, dst.rkey, KT_WC_REM_ACCESS_ERR);
	EXPECT_EQ(-1, kt_check_byte(r.map, r.map_len, POISON));
	region_put(&r);
}

/* A user buffer without REMOTE_WRITE refuses a WRITE. */
KRDMA_TEST_F(ubuf, write_without_remote_write)
{
	struct kt_buf src, dst;
	struct region r;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	ASSERT_OK(region_get(&r, 4096, 0));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &src);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_READ,
			 r.p, 4096, &dst));
	ASSERT_NE(0u, dst.rkey);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 64,
		  dst.addr, dst.rkey, KT_WC_REM_ACCESS_ERR);
	EXPECT_EQ(-1, kt_check_byte(r.map, r.map_len, POISON));
	region_put(&r);
}

/* ------------------------------------------------------------------------
 * Validation: one failure each, on a session without connections
 */

/* 56 if the address space has 5-level paging, else 47. */
static int user_va_bits(void)
{
	void *p = mmap((void *)(1ull << 50), psz, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int bits = 47;

	if (p != MAP_FAILED) {
		if ((uintptr_t)p >= 1ull << 47)
			bits = 56;
		munmap(p, psz);
	}
	return bits;
}

FIXTURE(ureg)
{
	int fd;
	uint32_t dev_index;
	uint32_t max_pages;
	struct region r;
	long pin0;
};

FIXTURE_SETUP(ureg)
{
	struct kt_dev dev;

	self->fd = kt_session_open_feature(_metadata,
					   KRDMA_FEATURE_USER_BUFFERS, &dev);
	if (self->fd < 0)
		return;
	self->dev_index = dev.dev_index;
	self->max_pages = dev.info.max_fast_reg_page_list_len;
	ASSERT_OK(region_get(&self->r, 16 * psz, 0));
	self->pin0 = vm_pin_pages();
	ASSERT_LE(0, self->pin0);
}

FIXTURE_TEARDOWN(ureg)
{
	region_put(&self->r);
	if (self->fd >= 0)
		close(self->fd);
}

/* The call fails with @err and charges nothing. */
#define EXPECT_REG_FAILS(err, r, ...)					\
	do {								\
		EXPECT_ERRNO(err, ioctl(self->fd, KRDMA_BUF_REG_USER, r), \
			     ##__VA_ARGS__);				\
		EXPECT_EQ(self->pin0, vm_pin_pages());			\
	} while (0)

KRDMA_TEST_F(ureg, length_zero)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, self->r.p, 0);
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, range_wraps)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, 0, NULL, 200);
	r.uaddr = UINT64_MAX - 99;
	EXPECT_REG_FAILS(EINVAL, &r);
	r.uaddr = (uintptr_t)self->r.p;
	r.length = UINT64_MAX - r.uaddr + 1;	/* ends exactly at 2^64 */
	EXPECT_REG_FAILS(EINVAL, &r);
	r.length = UINT64_MAX;
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, beyond_user_space)
{
	struct krdma_buf_reg_user r;

	/* a kernel address (x86-64 direct map) */
	reg_init(&r, self->dev_index, 0, NULL, 4096);
	r.uaddr = 0xffff888000000000ull;
	EXPECT_REG_FAILS(EINVAL, &r);
	/* non-canonical */
	r.uaddr = 1ull << 63;
	EXPECT_REG_FAILS(EINVAL, &r);
	/*
	 * Starting in user space, ending past it: EINVAL, never EFAULT.  The
	 * user space ends a page below 2^47, or below 2^56 with 5-level
	 * paging (qemu -cpu max has la57), which a high mmap hint reveals.
	 */
	r.uaddr = (user_va_bits() == 56 ? 1ull << 56 : 1ull << 47) - psz;
	r.length = 2 * psz;
	EXPECT_REG_FAILS(EINVAL, &r, "uaddr 0x%llx", (unsigned long long)r.uaddr);
	r.length = psz;		/* the last page is never user memory */
	EXPECT_REG_FAILS(EINVAL, &r, "uaddr 0x%llx", (unsigned long long)r.uaddr);
	r.uaddr = (1ull << 56) - psz;
	EXPECT_REG_FAILS(EINVAL, &r);
}

/*
 * Past what one MR maps in small pages the buffer is two MRs; a caller
 * that wants remote access and has no room for both rkeys learns their
 * count and nothing stays pinned.
 */
KRDMA_TEST_F(ureg, pages_past_one_mr)
{
	uint64_t max = (uint64_t)self->max_pages * psz;
	struct krdma_buf_reg_user r;
	uint32_t rkeys[3] = { 0 };
	struct region big;

	REGION_GET_SMALL(&big, max + psz, 0);
	/* exactly max_fast_reg_page_list_len pages: one MR */
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, big.p, max);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(1u, r.num_mrs);
	EXPECT_LE(max, r.mr_length);
	EXPECT_EQ(self->pin0 + (long)self->max_pages, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	/* the same length one byte into a page needs one page more: two */
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, big.p + 1, max);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(2u, r.num_mrs);
	EXPECT_EQ(1u, r.addr);
	EXPECT_EQ(max, r.mr_length);
	EXPECT_EQ(self->pin0 + (long)self->max_pages + 1, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	/*
	 * remote access, room for one rkey: EMSGSIZE, the count written and
	 * nothing else
	 */
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE |
		 KRDMA_ACCESS_REMOTE_WRITE, big.p, max + 1);
	r.handle = r.lkey = r.rkey = ~0u;
	r.addr = r.mr_length = ~0ull;
	memset(rkeys, 0xff, sizeof(rkeys));
	r.rkeys_uptr = (uintptr_t)rkeys;
	r.num_rkeys = 1;
	EXPECT_REG_FAILS(EMSGSIZE, &r);
	EXPECT_EQ(2u, r.num_mrs);
	EXPECT_EQ(~0u, r.handle);
	EXPECT_EQ(~0u, r.lkey);
	EXPECT_EQ(~0u, r.rkey);
	EXPECT_EQ(~0ull, r.addr);
	EXPECT_EQ(~0ull, r.mr_length);
	EXPECT_EQ(~0u, rkeys[0]);
	/* nowhere to write them: EFAULT, and nothing left registered */
	r.rkeys_uptr = 8;
	r.num_rkeys = 3;
	EXPECT_REG_FAILS(EFAULT, &r);	/* unpinned: the buffer is gone */
	r.rkeys_uptr = (uintptr_t)rkeys;
	memset(rkeys, 0, sizeof(rkeys));
	/* room for both */
	r.num_rkeys = 3;
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(2u, r.num_mrs);
	EXPECT_EQ(r.rkey, rkeys[0]);
	EXPECT_NE(0u, rkeys[1]);
	EXPECT_NE(rkeys[0], rkeys[1]);
	EXPECT_EQ(0u, rkeys[2]);
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	/* a caller that knows of one MR only is refused as it was */
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, big.p, max + 1);
	r.size = offsetofend(struct krdma_buf_reg_user, addr);
	EXPECT_REG_FAILS(EINVAL, &r);
	/* rkeys for a buffer no peer reaches: a field nothing reads */
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, big.p, max);
	r.num_rkeys = 1;
	EXPECT_REG_FAILS(EINVAL, &r);
	/* far more than may be registered: refused before any pinning */
	reg_init(&r, self->dev_index, 0, big.p, 1ull << 40);
	EXPECT_REG_FAILS(EINVAL, &r);
	region_put(&big);
}

KRDMA_TEST_F(ureg, flag_window)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, self->r.p, 64);
	r.flags = KRDMA_BUF_REG_WINDOW;
	EXPECT_REG_FAILS(EOPNOTSUPP, &r);
}

KRDMA_TEST_F(ureg, unknown_flags)
{
	struct krdma_buf_reg_user r;
	unsigned int bit;

	for (bit = 1; bit < 32; bit++) {
		reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			 self->r.p, 64);
		r.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BUF_REG_USER, &r),
			     "flag bit %u", bit);
	}
	EXPECT_EQ(self->pin0, vm_pin_pages());
}

KRDMA_TEST_F(ureg, reserved_nonzero)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, self->r.p, 64);
	r.__reserved = 1;
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, size_too_small)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, self->r.p, 64);
	r.size = offsetof(struct krdma_buf_reg_user, length);
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, remote_write_needs_local_write)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_REMOTE_WRITE, self->r.p, 64);
	EXPECT_REG_FAILS(EINVAL, &r);
	r.access = KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ;
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, remote_atomic_needs_local_write)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index, KRDMA_ACCESS_REMOTE_ATOMIC, self->r.p, 64);
	EXPECT_REG_FAILS(EINVAL, &r);
}

KRDMA_TEST_F(ureg, unknown_access)
{
	struct krdma_buf_reg_user r;
	unsigned int bit;

	for (bit = 5; bit < 32; bit++) {
		reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE | 1u << bit,
			 self->r.p, 64);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BUF_REG_USER, &r),
			     "access bit %u", bit);
	}
	EXPECT_EQ(self->pin0, vm_pin_pages());
}

KRDMA_TEST_F(ureg, mw_bind)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index,
		 KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_MW_BIND, self->r.p, 64);
	EXPECT_REG_FAILS(EOPNOTSUPP, &r);
}

KRDMA_TEST_F(ureg, bad_dev_index)
{
	struct krdma_buf_reg_user r;

	reg_init(&r, self->dev_index + 100000, KRDMA_ACCESS_LOCAL_WRITE,
		 self->r.p, 64);
	EXPECT_REG_FAILS(ENODEV, &r);
}

/* Nothing mapped: EFAULT, for any access. */
KRDMA_TEST_F(ureg, unmapped)
{
	struct krdma_buf_reg_user r;
	uint8_t *hole;

	hole = mmap(NULL, 4 * psz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_OK(munmap(hole, 4 * psz));
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, hole + 5,
		 2 * psz);
	EXPECT_REG_FAILS(EFAULT, &r);
	r.access = 0;
	EXPECT_REG_FAILS(EFAULT, &r);
	/* page 0 */
	reg_init(&r, self->dev_index, 0, NULL, 64);
	EXPECT_REG_FAILS(EFAULT, &r);
}

/* Mapped at first, then a hole: EFAULT, the pages pinned so far released. */
KRDMA_TEST_F(ureg, partly_unmapped)
{
	struct krdma_buf_reg_user r;

	/* the region's last 8 pages go */
	ASSERT_OK(munmap(self->r.p + 8 * psz, 8 * psz));
	reg_init(&r, self->dev_index, KT_ACCESS_ALL, self->r.p + 100,
		 12 * psz);
	EXPECT_REG_FAILS(EFAULT, &r);
	r.access = KRDMA_ACCESS_REMOTE_READ;
	EXPECT_REG_FAILS(EFAULT, &r);
	/* and the mapped part alone still registers */
	r.length = 8 * psz - 100;
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(self->pin0 + 8, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	EXPECT_EQ(self->pin0, vm_pin_pages());
	/* teardown unmaps the whole region, which is fine */
}

KRDMA_TEST_F(ureg, prot_none)
{
	struct krdma_buf_reg_user r;

	ASSERT_OK(mprotect(self->r.p, 2 * psz, PROT_NONE));
	reg_init(&r, self->dev_index, 0, self->r.p, 2 * psz);
	EXPECT_REG_FAILS(EFAULT, &r);
	r.access = KRDMA_ACCESS_LOCAL_WRITE;
	EXPECT_REG_FAILS(EFAULT, &r);
}

/* Read-only memory takes read-only access, and refuses any write access. */
KRDMA_TEST_F(ureg, readonly_mapping)
{
	static const uint32_t writes[] = {
		KRDMA_ACCESS_LOCAL_WRITE,
		KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE,
		KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_ATOMIC,
		KT_ACCESS_ALL,
	};
	struct krdma_buf_reg_user r;
	unsigned int i;

	kt_fill(self->r.p, 4 * psz, 3);
	ASSERT_OK(mprotect(self->r.p, 4 * psz, PROT_READ));
	for (i = 0; i < ARRAY_SIZE(writes); i++) {
		reg_init(&r, self->dev_index, writes[i], self->r.p + 1,
			 3 * psz);
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_BUF_REG_USER, &r),
			     "access 0x%x", writes[i]);
		EXPECT_EQ(self->pin0, vm_pin_pages());
	}
	reg_init(&r, self->dev_index, KRDMA_ACCESS_REMOTE_READ, self->r.p + 1,
		 3 * psz);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_NE(0u, r.rkey);
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	reg_init(&r, self->dev_index, 0, self->r.p, 4 * psz);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(0u, r.rkey);
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	EXPECT_EQ(self->pin0, vm_pin_pages());
}

/*
 * A kernel buffer's mmap is ordinary memory (vm_insert_pages()): it can be
 * registered as a user buffer too, which pins its pages for as long as it
 * lives, after the kernel buffer and the mapping are gone.  Before 5.11 it
 * is a PFN mapping: EFAULT.
 */
KRDMA_TEST_F(ureg, kernel_buffer_mapping)
{
	struct krdma_buf_reg_user r;
	struct kt_buf k;
	uint8_t *m;

	/* both are charged as pinned: the kernel buffer, then the pin */
	test_cmd_buf_alloc(self->dev_index, KT_ACCESS_ALL, 4 * psz, &k);
	EXPECT_EQ(self->pin0 + 4, vm_pin_pages());
	m = kt_buf_mmap(self->fd, &k);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x5a, 4 * psz);
	reg_init(&r, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE, m, 4 * psz);
	if (kt_kernel_before(5, 11)) {
		/* mapped as PFNs there (buf.c), which GUP cannot pin */
		test_err_ioctl(EFAULT, KRDMA_BUF_REG_USER, &r);
		EXPECT_EQ(self->pin0 + 4, vm_pin_pages());
		kt_buf_munmap(m, &k);
		EXPECT_OK(kt_destroy(self->fd, k.handle));
		EXPECT_EQ(self->pin0, vm_pin_pages());
		return;
	}
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r);
	EXPECT_EQ(self->pin0 + 8, vm_pin_pages());
	/* the kernel buffer and its mapping go first: the pages stay pinned */
	EXPECT_OK(kt_destroy(self->fd, k.handle));
	kt_buf_munmap(m, &k);
	EXPECT_EQ(self->pin0 + 4, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, r.handle));
	EXPECT_EQ(self->pin0, vm_pin_pages());
}

/* What comes back: keys, the page offset as addr, distinct handles. */
KRDMA_TEST_F(ureg, outputs)
{
	struct krdma_buf_reg_user r1, r2, r3;

	reg_init(&r1, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
		 self->r.p + 1234, 100);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r1);
	EXPECT_EQ(1234u, r1.addr);
	EXPECT_EQ(0u, r1.rkey);
	EXPECT_NE(0u, r1.lkey);
	EXPECT_NE(0u, r1.handle);
	reg_init(&r2, self->dev_index, KRDMA_ACCESS_REMOTE_READ,
		 self->r.p + 1234, 100);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r2);
	EXPECT_EQ(1234u, r2.addr);
	EXPECT_NE(0u, r2.rkey);
	EXPECT_NE(r1.handle, r2.handle);
	EXPECT_NE(r1.lkey, r2.lkey);
	reg_init(&r3, self->dev_index, KT_ACCESS_ALL, self->r.p + 2 * psz,
		 psz);
	test_cmd_ioctl(KRDMA_BUF_REG_USER, &r3);
	EXPECT_EQ(0u, r3.addr);
	EXPECT_NE(0u, r3.rkey);
	EXPECT_EQ(0u, r3.__reserved);
	EXPECT_OK(kt_destroy(self->fd, r1.handle));
	EXPECT_OK(kt_destroy(self->fd, r2.handle));
	EXPECT_OK(kt_destroy(self->fd, r3.handle));
}

KRDMA_TEST_F(ureg, buf_rw_refused)
{
	struct kt_buf u;
	uint8_t b[16] = { 1 };

	ASSERT_OK(ub_reg(self->fd, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			 self->r.p, 64, &u));
	test_err_buf_read(EINVAL, u.handle, 0, b, 16);
	test_err_buf_write(EINVAL, u.handle, 0, b, 16);
	EXPECT_EQ(-1, kt_check_byte(self->r.p, 64, POISON));
	EXPECT_OK(kt_destroy(self->fd, u.handle));
}

KRDMA_TEST_F(ureg, mmap_refused)
{
	struct kt_buf u;
	void *m;

	ASSERT_OK(ub_reg(self->fd, self->dev_index, KT_ACCESS_ALL, self->r.p,
			 psz, &u));
	m = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)u.handle * psz);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	if (m != MAP_FAILED)
		munmap(m, psz);
	EXPECT_OK(kt_destroy(self->fd, u.handle));
}

/* ------------------------------------------------------------------------
 * Pinned-page accounting
 */

/* Root: charged to VmPin all the same, per page touched; DESTROY and close. */
KRDMA_TEST_F(ureg, vm_pin_accounting)
{
	struct kt_buf u1, u2;
	int fd2;

	ASSERT_OK(ub_reg(self->fd, self->dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			 self->r.p + 13, 2 * psz, &u1));
	EXPECT_EQ(self->pin0 + 3, vm_pin_pages());
	ASSERT_OK(ub_reg(self->fd, self->dev_index, 0, self->r.p, 1, &u2));
	EXPECT_EQ(self->pin0 + 4, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, u1.handle));
	EXPECT_EQ(self->pin0 + 1, vm_pin_pages());
	EXPECT_OK(kt_destroy(self->fd, u2.handle));
	EXPECT_EQ(self->pin0, vm_pin_pages());

	/* closing the session releases what it still holds */
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	ASSERT_OK(ub_reg(fd2, self->dev_index, KT_ACCESS_ALL, self->r.p,
			 16 * psz, &u1));
	EXPECT_EQ(self->pin0 + 16, vm_pin_pages());
	close(fd2);
	EXPECT_EQ(self->pin0, vm_pin_pages());
}

/* Child body: exit status 0 on success, else the failing step. */
static int memlock_child(uint32_t dev_index)
{
	const size_t kib32 = 32 * 1024, mib = MIB;
	struct rlimit rl = { 64 * 1024, 64 * 1024 };
	uint8_t *m;
	struct kt_buf u, v, w;
	long base;
	int fd, i;

	m = mmap(NULL, mib + 4 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 10;
	memset(m, 1, mib + psz);
	/* a hole after m + mib + psz */
	if (munmap(m + mib + psz, 3 * psz))
		return 10;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return 11;
	if (kt_become_user(65534))
		return 12;
	fd = krdma_open();
	if (fd < 0) {
		fprintf(stderr, "# child: open %s: %s\n", KRDMA_DEVICE_PATH,
			strerror(errno));
		return 13;
	}
	base = vm_pin_pages();
	if (base != 0)
		fprintf(stderr, "# child: VmPin starts at %ld pages\n", base);

	/* 1 MiB is past 64 KiB */
	if (!ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m, mib, &u)) {
		fprintf(stderr, "# child: 1 MiB registered past RLIMIT_MEMLOCK 64 KiB\n");
		return 20;
	}
	if (errno != ENOMEM) {
		fprintf(stderr, "# child: 1 MiB: %s, expected ENOMEM\n",
			strerror(errno));
		return 21;
	}
	if (vm_pin_pages() != base)
		return 22;
	/* 32 KiB fits, twice (exactly the limit), not a third time */
	if (ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m, kib32, &u)) {
		fprintf(stderr, "# child: 32 KiB: %s\n", strerror(errno));
		return 30;
	}
	if (vm_pin_pages() != base + (long)(kib32 / psz))
		return 31;
	if (ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m + kib32, kib32,
		   &v)) {
		fprintf(stderr, "# child: second 32 KiB: %s\n", strerror(errno));
		return 32;
	}
	if (!ub_reg(fd, dev_index, 0, m + 2 * kib32, psz, &w) ||
	    errno != ENOMEM) {
		fprintf(stderr, "# child: a page past the limit: %s\n",
			strerror(errno));
		return 33;
	}
	/* unaligned 32 KiB touches 9 pages: over by one */
	if (kt_destroy(fd, v.handle))
		return 34;
	if (!ub_reg(fd, dev_index, 0, m + kib32 + 1, kib32, &v) ||
	    errno != ENOMEM) {
		fprintf(stderr, "# child: 9 pages beside 8 under a 16-page limit\n");
		return 35;
	}
	/* destroy: the charge comes back */
	if (kt_destroy(fd, u.handle))
		return 40;
	if (vm_pin_pages() != base)
		return 41;
	if (ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m, kib32, &u)) {
		fprintf(stderr, "# child: 32 KiB after destroy: %s\n",
			strerror(errno));
		return 42;
	}
	if (kt_destroy(fd, u.handle))
		return 43;
	/* a kernel buffer counts against the same limit */
	{
		struct kt_buf k;

		if (!kt_buf_alloc(fd, dev_index, 0, mib, &k) ||
		    errno != ENOMEM) {
			fprintf(stderr, "# child: 1 MiB kernel buffer: %s\n",
				strerror(errno));
			return 44;
		}
	}
	for (i = 0; i < 100; i++) {
		if (ub_reg(fd, dev_index, KT_ACCESS_ALL, m + (i % 7) * 13,
			   kib32 + psz, &u)) {
			fprintf(stderr, "# child: iteration %d: %s\n", i,
				strerror(errno));
			return 50;
		}
		if (kt_destroy(fd, u.handle))
			return 51;
	}
	if (vm_pin_pages() != base) {
		fprintf(stderr, "# child: VmPin %ld after 100 rounds, expected %ld\n",
			vm_pin_pages(), base);
		return 52;
	}
	/* a failed pin (EFAULT) gives back its charge too */
	if (!ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m + mib, 4 * psz,
		    &u) || errno != EFAULT)
		return 53;
	if (vm_pin_pages() != base)
		return 54;
	if (ub_reg(fd, dev_index, KRDMA_ACCESS_LOCAL_WRITE, m, 64 * 1024, &u)) {
		fprintf(stderr, "# child: the full 64 KiB after all that: %s\n",
			strerror(errno));
		return 55;
	}
	close(fd);
	if (vm_pin_pages() != base)
		return 56;
	return 0;
}

/* RLIMIT_MEMLOCK for a user without CAP_IPC_LOCK (uid 65534, 64 KiB). */
KRDMA_TEST_F_TIMEOUT(ureg, memlock_limit, 120)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(self->fd);
		_exit(memlock_child(self->dev_index));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("child failed at step %d", WEXITSTATUS(status));
	}
}

/* ------------------------------------------------------------------------
 * The address space changes under a registration
 */

/*
 * munmap while registered: the pages stay pinned (the peer's WRITE still
 * completes, into pages nobody maps), memory mapped anew at that address is
 * not the buffer, and DESTROY releases the orphaned pages.
 */
KRDMA_TEST_F(ubuf, munmap_while_registered)
{
	size_t len = 64 * 1024;
	struct kt_buf src, dst, kb;
	uint8_t *m, *again, *kmap, pat[4096];
	long pin0;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, POISON, len);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 8192,
			   &kb);
	kmap = kt_buf_mmap(self->fd, &kb);
	ASSERT_NE(MAP_FAILED, kmap);
	pin0 = vm_pin_pages();
	kt_fill(pat, sizeof(pat), 31);
	test_cmd_buf_write(src.handle, 0, pat, sizeof(pat));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, m + 7,
			 len - 7, &dst));
	EXPECT_EQ(pin0 + (long)(len / psz), vm_pin_pages());
	ASSERT_OK(munmap(m, len));
	/* the pages are still the MR's: a WRITE lands, a READ sees it */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 4096,
		  dst.addr + 100, dst.rkey, 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 2, kb.handle, 0, 4096,
		  dst.addr + 100, dst.rkey, 0);
	EXPECT_EQ(0, memcmp(kmap, pat, 4096));
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 3, kb.handle, 4096, 50,
		  dst.addr + 10000, dst.rkey, 0);
	EXPECT_EQ(-1, kt_check_byte(kmap + 4096, 50, POISON));
	/* something else at the same address is not the buffer */
	again = mmap(m, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (again != MAP_FAILED) {
		memset(again, 0x3c, len);
		one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 4, src.handle,
			  0, 4096, dst.addr + 8192, dst.rkey, 0);
		EXPECT_EQ(-1, kt_check_byte(again, len, 0x3c));
		one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 5, kb.handle, 0,
			  4096, dst.addr + 8192, dst.rkey, 0);
		EXPECT_EQ(0, memcmp(kmap, pat, 4096));
	}
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	EXPECT_EQ(pin0, vm_pin_pages());
	if (again != MAP_FAILED)
		munmap(again, len);
	kt_buf_munmap(kmap, &kb);
}

/* munmap, then close the session instead of DESTROY. */
KRDMA_TEST_F(ubuf, munmap_then_close)
{
	size_t len = 256 * 1024;
	struct kt_buf dst;
	uint8_t *m;
	int fd2;
	long pin0 = vm_pin_pages();

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 1, len);
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	ASSERT_OK(ub_reg(fd2, self->dev.dev_index, KT_ACCESS_ALL, m, len, &dst));
	ASSERT_OK(munmap(m, len));
	EXPECT_EQ(pin0 + (long)(len / psz), vm_pin_pages());
	close(fd2);
	EXPECT_EQ(pin0, vm_pin_pages());
}

/* Tell the other side a byte through a pipe, wait for one back. */
static int pipe_tell(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static int pipe_wait(int fd, char want)
{
	char c;

	return read(fd, &c, 1) == 1 && c == want ? 0 : -1;
}

/*
 * fork() after registering: the child's copy is its own (it writes it, the
 * RDMA WRITE does not land there), and the parent keeps the pinned pages
 * even when it writes to them itself after the fork.
 */
KRDMA_TEST_F(ubuf, fork_after_register)
{
	size_t len = 64 * 1024;
	int to_child[2], to_parent[2], status;
	struct kt_buf src, dst;
	uint8_t *m, pat[8192];
	struct region r;
	pid_t pid;

	ASSERT_OK(region_get(&r, len, 13));
	m = r.p;
	test_cmd_buf_alloc(self->dev.dev_index, 0, 8192, &src);
	kt_fill(pat, sizeof(pat), 51);
	test_cmd_buf_write(src.handle, 0, pat, sizeof(pat));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, m, len,
			 &dst));
	ASSERT_OK(pipe(to_child));
	ASSERT_OK(pipe(to_parent));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int bad = 0;

		close(to_child[1]);
		close(to_parent[0]);
		memset(m, 0x77, len);
		if (pipe_tell(to_parent[1], 'w') || pipe_wait(to_child[0], 'd'))
			_exit(2);
		/* the parent's RDMA WRITEs are done: none is here */
		if (kt_check_byte(m, len, 0x77) >= 0)
			bad = 3;
		if (kt_check_byte(r.map, m - r.map, POISON) >= 0)
			bad = 4;
		_exit(bad);
	}
	close(to_child[0]);
	close(to_parent[1]);
	ASSERT_OK(pipe_wait(to_parent[0], 'w'));

	/* the parent's memory is untouched by the child's writes */
	EXPECT_EQ(-1, kt_check_byte(m, len, POISON));
	/* the parent writes its own copy after the fork (no COW away) */
	memset(m, 0x11, len);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 8192,
		  dst.addr + 5, dst.rkey, 0);
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 2, src.handle, 0, 8192,
		  dst.addr + len - 8192, dst.rkey, 0);
	EXPECT_EQ(-1, kt_check_byte(m, 5, 0x11));
	EXPECT_EQ(0, memcmp(m + 5, pat, 8192)) {
		TH_LOG("the RDMA WRITE did not land in the parent's memory");
	}
	EXPECT_EQ(-1, kt_check_byte(m + 5 + 8192, len - 2 * 8192 - 5, 0x11));
	EXPECT_EQ(0, memcmp(m + len - 8192, pat, 8192));
	/* and a READ sees what the parent wrote */
	memset(m + 30000, 0x22, 100);
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 3, dst.handle, 40000, 100,
		  dst.addr + 30000, dst.rkey, 0);
	EXPECT_EQ(-1, kt_check_byte(m + 40000, 100, 0x22));

	ASSERT_OK(pipe_tell(to_child[1], 'd'));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("child: %s", WEXITSTATUS(status) == 3 ?
		       "its copy changed" : "failed");
	}
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	region_put(&r);
}

/* fork() with a child that touches nothing and exits while the parent
 * works: the registration is unaffected. */
KRDMA_TEST_F(ubuf, fork_child_idle)
{
	size_t len = 16 * 1024;
	struct kt_buf src, dst;
	uint8_t pat[4096];
	struct region r;
	int status;
	pid_t pid;

	ASSERT_OK(region_get(&r, len, 0));
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	kt_fill(pat, sizeof(pat), 52);
	test_cmd_buf_write(src.handle, 0, pat, sizeof(pat));
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL, r.p, len,
			 &dst));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(kt_check_byte(r.p, len, POISON) >= 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	r.p[0] = 0;	/* the parent writes after the child is gone */
	one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 1, src.handle, 0, 4096,
		  dst.addr + 1, dst.rkey, 0);
	EXPECT_EQ(0, r.p[0]);
	EXPECT_EQ(0, memcmp(r.p + 1, pat, 4096));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	region_put(&r);
}

/* A process that exits with its buffers registered (and a WRITE done). */
KRDMA_TEST_F(ubuf, exit_while_registered)
{
	int status, i;
	pid_t pid;

	for (i = 0; i < 3; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct kt_buf u, k;
			struct region r;
			struct krdma_wr wr;
			struct krdma_wc wc;

			if (region_get(&r, 256 * 1024, 13) ||
			    ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
				   r.p, r.len, &u) ||
			    kt_buf_alloc(self->fd, self->dev.dev_index, 0, 4096,
					 &k))
				_exit(1);
			kt_wr_init(&wr, 1, KRDMA_OP_RDMA_WRITE,
				   KRDMA_WR_SIGNALED);
			kt_wr_sge(&wr, k.handle, 0, 4096);
			wr.remote_addr = u.addr + 1000;
			wr.rkey = u.rkey;
			if (kt_post1(self->fd, self->a.handle, &wr) ||
			    kt_poll_n(self->fd, self->a.handle, &wc, 1,
				      POLL_MS) != 1 || wc.status)
				_exit(2);
			/* i == 1: unmapped first; i == 2: the fd closed here */
			if (i == 1)
				munmap(r.map, r.map_len);
			if (i == 2)
				close(self->fd);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			TH_LOG("round %d: child status 0x%x", i, status);
		}
	}
	/*
	 * The session (shared with the children) still holds their
	 * registrations, charged to their exited mms; closing it in the
	 * teardown releases them.  A WRITE still works meanwhile.
	 */
	{
		struct kt_buf k, u;
		struct region r;

		ASSERT_OK(region_get(&r, 4096, 0));
		test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &k);
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
				 r.p, 4096, &u));
		one_sided(_metadata, self, KRDMA_OP_RDMA_WRITE, 9, k.handle, 0,
			  64, u.addr, u.rkey, 0);
		EXPECT_EQ(-1, kt_check_byte(r.p, 64, 0));
		region_put(&r);
	}
}

/* /proc/kpageflags bits */
#define KPF_DIRTY 4
#define KPF_ZERO_PAGE 24

/* The kpageflags of the page mapped at @p; -1 if unknown. */
static int page_flags(const void *p, uint64_t *flags)
{
	uint64_t pfn = page_pfn(p);
	int fd, ok;

	if (!pfn)
		return -1;
	fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = pread(fd, flags, 8, pfn * 8) == 8;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * A registration without write access pins read-only; its DESTROY must not
 * mark the pages dirty (ib_umem_release() dirties only writable umems).
 * Seen through /proc/kpageflags on the page pinned: for untouched memory
 * that is the shared zero page (6.1) or the fresh page the kernel unshared
 * it into (6.12); for written memory an anonymous page, which the kernel
 * keeps clean in PG_dirty until it is swapped.
 */
KRDMA_TEST_F(ubuf, readonly_pin_leaves_pages_clean)
{
	static const char *const kinds[] = { "untouched", "written" };
	size_t len = 4 * psz;
	unsigned int k, seen = 0;

	for (k = 0; k < 2; k++) {
		volatile uint8_t *m;
		struct kt_buf u;
		uint64_t before = 0, pinned, after;

		m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, (void *)m);
		if (k)
			memset((void *)m, 1, len);
		else
			(void)m[0];	/* read fault: the zero page */
		page_flags((void *)m, &before);
		ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
				 KRDMA_ACCESS_REMOTE_READ, (void *)m, len, &u));
		ASSERT_OK(page_flags((void *)m, &pinned));
		if (pinned & (1ull << KPF_DIRTY)) {
			TH_LOG("%s: the pinned page is dirty already (kpageflags 0x%llx): nothing to see",
			       kinds[k], (unsigned long long)pinned);
			EXPECT_OK(kt_destroy(self->fd, u.handle));
			munmap((void *)m, len);
			continue;
		}
		seen++;
		test_cmd_destroy(u.handle);
		ASSERT_OK(page_flags((void *)m, &after));
		TH_LOG("%s memory: kpageflags 0x%llx before, 0x%llx pinned, 0x%llx after DESTROY",
		       kinds[k], (unsigned long long)before,
		       (unsigned long long)pinned,
		       (unsigned long long)after);
		EXPECT_FALSE(!!(after & (1ull << KPF_DIRTY))) {
			TH_LOG("%s memory: DESTROY of a read-only registration dirtied the page it pinned (kpageflags 0x%llx -> 0x%llx)",
			       kinds[k], (unsigned long long)pinned,
			       (unsigned long long)after);
		}
		munmap((void *)m, len);
	}
	if (!seen)
		SKIP(return, "no clean page to observe");
}

/*
 * Memory never touched before a read-only registration (REMOTE_READ only),
 * filled afterwards: does the peer READ what the user wrote?  On 6.1 a
 * FOLL_LONGTERM pin without FOLL_WRITE pins the shared zero page for an
 * untouched private page, and the user's later write lands in a fresh copy
 * the MR never sees (the peer reads zeros); 6.12 unshares the zero page
 * before a long-term pin and passes.
 */
KRDMA_TEST_F(ubuf, read_only_registration_before_fill)
{
	size_t len = 4 * 4096;
	struct kt_buf src, dst;
	uint8_t *m, *back;
	int64_t bad;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_REMOTE_READ, m, len, &src));
	kt_fill(m, len, 71);
	back = malloc(len);
	ASSERT_NE(NULL, back);
	memset(back, POISON, len);
	ASSERT_OK(ub_reg(self->fd, self->dev.dev_index,
			 KRDMA_ACCESS_LOCAL_WRITE, back, len, &dst));
	one_sided(_metadata, self, KRDMA_OP_RDMA_READ, 1, dst.handle, 0, len,
		  src.addr, src.rkey, 0);
	bad = kt_check(back, len, 71);
	EXPECT_EQ(-1, bad) {
		uint64_t flags = 0;

		TH_LOG("READ of memory filled after a read-only registration: byte %lld is 0x%02x (expected 0x%02x)",
		       (long long)bad, back[bad], kt_pattern_byte(71, bad));
		if (!page_flags(m, &flags))
			TH_LOG("the page mapped there now: kpageflags 0x%llx; the MR holds the page pinned at registration (the shared zero page if untouched)",
			       (unsigned long long)flags);
	}
	EXPECT_OK(kt_destroy(self->fd, src.handle));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
	munmap(m, len);
	free(back);
}

TEST_HARNESS_MAIN
