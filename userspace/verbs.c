// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: buffers, posts, polls, CM events and destroys through
 * /dev/krdma's ioctls, for every command's data path.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "krdmactl.h"
#include "verbs.h"

int verbs_buf_alloc(int fd, uint32_t dev_index, uint32_t access,
		    uint64_t length, struct verbs_buf *b)
{
	struct krdma_buf_alloc ba = {
		.size = sizeof(ba),
		.dev_index = dev_index,
		.access = access,
		.length = length,
	};
	long page = sysconf(_SC_PAGESIZE);
	void *mem;
	int ret;

	memset(b, 0, sizeof(*b));
	ret = krdma_ioctl(fd, KRDMA_BUF_ALLOC, &ba);
	if (ret)
		return ret;
	b->handle = ba.handle;
	b->lkey = ba.lkey;
	b->rkey = ba.rkey;
	b->addr = ba.addr;
	b->length = length;
	b->map_len = (length + page - 1) / page * page;
	mem = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   ba.mmap_offset);
	if (mem == MAP_FAILED) {
		ret = -errno;
		err_msg("mmap of a %llu-byte buffer: %s",
			(unsigned long long)length, strerror(-ret));
		verbs_destroy(fd, b->handle);
		b->handle = 0;
		return ret;
	}
	b->mem = mem;
	return 0;
}

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#define HUGE_PAGE (2UL << 20)

/*
 * @length bytes of this process's memory in 2 MiB huge pages (hugetlbfs),
 * registered zero copy (KRDMA_BUF_REG_USER): the module maps it in MR
 * pages as large as needed, up to the huge pages, so that a buffer far
 * longer than small pages allow is one MR.
 */
int verbs_buf_reg_huge(int fd, uint32_t dev_index, uint32_t access,
		       uint64_t length, struct verbs_buf *b)
{
	struct krdma_buf_reg_user r = {
		.size = sizeof(r),
		.dev_index = dev_index,
		.access = access,
		.length = length,
	};
	void *mem;
	int ret;

	memset(b, 0, sizeof(*b));
	b->map_len = (length + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	mem = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB,
		   -1, 0);
	if (mem == MAP_FAILED) {
		ret = -errno;
		err_msg("--use_hugepages: %zu bytes of 2 MiB huge pages: %s "
			"(their pool: /sys/kernel/mm/hugepages/"
			"hugepages-2048kB/nr_hugepages, vm.nr_hugepages where "
			"2 MiB is the default size)", b->map_len,
			strerror(-ret));
		return ret;
	}
	r.uaddr = (uintptr_t)mem;
	ret = krdma_ioctl(fd, KRDMA_BUF_REG_USER, &r);
	if (ret) {
		munmap(mem, b->map_len);
		return ret;
	}
	b->handle = r.handle;
	b->lkey = r.lkey;
	b->rkey = r.rkey;
	b->addr = r.addr;
	b->length = length;
	b->mem = mem;
	return 0;
}

void verbs_buf_free(int fd, struct verbs_buf *b)
{
	if (b->mem)
		munmap(b->mem, b->map_len);
	if (b->handle)
		verbs_destroy(fd, b->handle);
	memset(b, 0, sizeof(*b));
}

int verbs_destroy(int fd, uint32_t handle)
{
	struct krdma_destroy d = { .size = sizeof(d), .handle = handle };

	return krdma_ioctl_quiet(fd, KRDMA_DESTROY, &d);
}

int verbs_post_one(int fd, uint32_t conn, const struct krdma_wr *wr)
{
	struct krdma_post post = {
		.size = sizeof(post),
		.handle = conn,
		.num_wrs = 1,
		.wr_entry_size = sizeof(*wr),
		.wrs_uptr = (uintptr_t)wr,
	};

	return krdma_ioctl(fd, KRDMA_POST, &post);
}

int verbs_post_recv(int fd, uint32_t conn, uint64_t wr_id, uint32_t buf,
		    uint64_t offset, uint32_t length)
{
	struct krdma_wr wr = {
		.wr_id = wr_id,
		.opcode = KRDMA_OP_RECV,
		.num_sge = 1,
		.sge[0] = { .buf_handle = buf, .offset = offset,
			    .length = length },
	};

	return verbs_post_one(fd, conn, &wr);
}

/*
 * Up to @max completions of @conn within @timeout_ms: how many, or -errno
 * (reports nothing).
 */
int verbs_poll(int fd, uint32_t conn, struct krdma_wc *wcs, uint32_t max,
	       uint32_t timeout_ms)
{
	struct krdma_poll p = {
		.size = sizeof(p),
		.handle = conn,
		.num_wcs = max,
		.wc_entry_size = sizeof(*wcs),
		.timeout_ms = timeout_ms,
		.wcs_uptr = (uintptr_t)wcs,
	};
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_POLL, &p);
	return ret ? ret : (int)p.num_wcs;
}

/*
 * Up to @max CM events within @timeout_ms: how many, or -errno (reports
 * nothing).
 */
int verbs_get_events(int fd, struct krdma_event *evs, uint32_t max,
		     uint32_t timeout_ms)
{
	struct krdma_get_events ge = {
		.size = sizeof(ge),
		.num_events = max,
		.event_entry_size = sizeof(*evs),
		.timeout_ms = timeout_ms,
		.events_uptr = (uintptr_t)evs,
	};
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_GET_EVENTS, &ge);
	return ret ? ret : (int)ge.num_events;
}
