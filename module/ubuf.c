// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy user buffers (KRDMA_BUF_REG_USER): the caller's own pages,
 * pinned long-term and charged to RLIMIT_MEMLOCK as ib_umem_get() does,
 * then DMA-mapped and fast-registered like a kernel buffer: an MR page per
 * page, or per huge page where small ones would not fit one MR.  The peer's
 * bytes land in the user's pages; the pages are unpinned (and marked dirty)
 * only after the MR is gone.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "account.h"
#include "buf.h"
#include "device.h"
#include "ioctl.h"
#include "object.h"

static int krdma_ubuf_check(const struct krdma_buf_reg_user *cmd)
{
	u64 end;

	if (cmd->flags & KRDMA_BUF_REG_WINDOW)
		return -EOPNOTSUPP;	/* no memory windows for kernel ULPs */
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!cmd->length || check_add_overflow(cmd->uaddr, cmd->length, &end) ||
	    end > TASK_SIZE)
		return -EINVAL;
	return krdma_check_access(cmd->access);
}

static int krdma_ubuf_pin_flags(struct krdma_buf_mem *mem, u64 uaddr,
				unsigned long npages, unsigned int gup)
{
	unsigned long start = uaddr & PAGE_MASK;
	int n;

	while (mem->num_pinned < npages) {
		n = pin_user_pages_fast(start +
					((unsigned long)mem->num_pinned << PAGE_SHIFT),
					npages - mem->num_pinned, gup,
					mem->pinned + mem->num_pinned);
		if (n <= 0)
			return n ? n : -EFAULT;
		mem->num_pinned += n;
	}
	return 0;
}

/*
 * Pin for writing even when the device will only read: a read-only pin of
 * untouched anonymous memory takes the shared zero page (6.1 does not
 * unshare it), and the process's later writes would land on a copy the MR
 * never sees.  Only memory that cannot be written (a read-only mapping) is
 * pinned read-only, and there nothing can diverge.
 */
static int krdma_ubuf_pin(struct krdma_buf_mem *mem, u64 uaddr,
			  unsigned long npages, bool write)
{
	int ret;

	ret = krdma_ubuf_pin_flags(mem, uaddr, npages,
				   FOLL_LONGTERM | FOLL_WRITE);
	if (!ret || write)
		return ret;
	unpin_user_pages(mem->pinned, mem->num_pinned);
	mem->num_pinned = 0;
	return krdma_ubuf_pin_flags(mem, uaddr, npages, FOLL_LONGTERM);
}

/*
 * Whether the pinned pages, the first at virtual page @vpn, lie in runs of
 * 2^@order physically contiguous pages aligned as their addresses are:
 * huge pages, or memory that happens to be so.
 */
static bool krdma_ubuf_has_runs(const struct krdma_buf_mem *mem,
				unsigned long vpn, unsigned int order)
{
	unsigned long mask = (1UL << order) - 1;
	unsigned long pfn, prev = 0;
	unsigned int i;

	for (i = 0; i < mem->num_pinned; i++, vpn++) {
		if (!(i % 4096))	/* a GiB of small pages is 262144 */
			cond_resched();
		pfn = page_to_pfn(mem->pinned[i]);
		if ((pfn & mask) != (vpn & mask) ||
		    (i && (vpn & mask) && pfn != prev + 1))
			return false;
		prev = pfn;
	}
	return true;
}

/*
 * The MR's pages: the smallest page size in which one fast registration on
 * @kdev maps the buffer, if its memory is in runs that large; every larger
 * size needs larger runs still, so there is no other choice.
 */
static int krdma_ubuf_chunks(struct krdma_buf_mem *mem, u64 uaddr,
			     const struct krdma_device *kdev)
{
	unsigned long vpn = uaddr >> PAGE_SHIFT, runs = 0, first, mask;
	unsigned int order, i;

	for (order = 0; order <= KRDMA_BUF_MAX_CHUNK_ORDER; order++) {
		runs = ((vpn + mem->num_pinned - 1) >> order) -
		       (vpn >> order) + 1;
		if (krdma_mr_fits(kdev, runs, order))
			break;
	}
	if (order > KRDMA_BUF_MAX_CHUNK_ORDER ||
	    !krdma_ubuf_has_runs(mem, vpn, order))
		return -EINVAL;
	mem->chunks = kvcalloc(runs, sizeof(*mem->chunks), GFP_KERNEL_ACCOUNT);
	if (!mem->chunks)
		return -ENOMEM;
	mask = (1UL << order) - 1;
	for (i = 0; i < runs; i++) {
		/* the run's first page of the buffer, back to the run's head */
		first = i ? ((unsigned long)i << order) - (vpn & mask) : 0;
		mem->chunks[i] = pfn_to_page(page_to_pfn(mem->pinned[first]) -
					     ((vpn + first) & mask));
	}
	mem->num_chunks = runs;
	mem->chunk_order = order;
	mem->first_offset = ((vpn & mask) << PAGE_SHIFT) + offset_in_page(uaddr);
	return 0;
}

/*
 * The caller's pages of [@uaddr, @uaddr + @length), pinned and charged: no
 * more than the longest MR on the device, @max_length, spans.
 */
static struct krdma_buf_mem *krdma_ubuf_mem(u64 uaddr, u64 length, bool write,
					    u64 max_length)
{
	u64 first = uaddr & PAGE_MASK, last = PAGE_ALIGN(uaddr + length);
	u64 npages = (last - first) >> PAGE_SHIFT;
	struct krdma_buf_mem *mem;
	int ret;

	/* before anything is pinned; and an array of pages kvcalloc() makes */
	if (length > max_length || npages > INT_MAX / sizeof(*mem->pinned))
		return ERR_PTR(-EINVAL);
	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	kref_init(&mem->kref);
	mem->user = true;
	mem->writable = write;
	mem->mm = current->mm;
	mmgrab(mem->mm);
	ret = krdma_charge_pinned(mem->mm, npages);
	if (ret) {
		mmdrop(mem->mm);
		kfree(mem);
		return ERR_PTR(ret);
	}
	mem->num_charged = npages;
	mem->pinned = kvcalloc(npages, sizeof(*mem->pinned),
			       GFP_KERNEL_ACCOUNT);
	ret = mem->pinned ? krdma_ubuf_pin(mem, uaddr, npages, write) : -ENOMEM;
	if (ret) {
		krdma_buf_mem_put(mem);
		return ERR_PTR(ret);
	}
	return mem;
}

/* The longest buffer one MR maps on device @dev_index. */
static int krdma_ubuf_max_length(struct krdma_session *session, u32 dev_index,
				 u64 *max_length)
{
	struct krdma_device *kdev;
	int ret;

	ret = krdma_device_enter(session, dev_index, &kdev);
	if (ret)
		return ret;
	*max_length = krdma_buf_max_length(kdev);
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return 0;
}

/**
 * struct krdma_ubuf_pages - krdma_ubuf_take()'s argument
 * @mem: the pinned pages
 * @uaddr: the buffer's first byte in the caller's memory
 */
struct krdma_ubuf_pages {
	struct krdma_buf_mem *mem;
	u64 uaddr;
};

/* krdma_buf_create()'s memory: the pages pinned before, a reference more. */
static struct krdma_buf_mem *krdma_ubuf_take(struct krdma_device *kdev,
					     u64 length, void *arg)
{
	struct krdma_ubuf_pages *pages = arg;
	int ret;

	ret = krdma_ubuf_chunks(pages->mem, pages->uaddr, kdev);
	if (ret)
		return ERR_PTR(ret);
	kref_get(&pages->mem->kref);
	return pages->mem;
}

/*
 * The pages are pinned before the device is entered: pinning faults them
 * in, and a fault can take forever (a FUSE mapping whose server does not
 * answer, a userfaultfd range), which must not hold the device's usage
 * lock that removal waits for.
 */
int krdma_buf_reg_user(struct krdma_session *session,
		       struct krdma_ucmd *ucmd)
{
	struct krdma_buf_reg_user *cmd = ucmd->cmd;
	bool write = cmd->access & (KRDMA_ACCESS_LOCAL_WRITE |
				    KRDMA_ACCESS_REMOTE_WRITE |
				    KRDMA_ACCESS_REMOTE_ATOMIC);
	struct krdma_ubuf_pages pages = { .uaddr = cmd->uaddr };
	struct krdma_buf_keys keys;
	u64 max_length;
	int ret;

	ret = krdma_ubuf_check(cmd);
	if (!ret)
		ret = krdma_ubuf_max_length(session, cmd->dev_index,
					    &max_length);
	if (ret)
		return ret;
	pages.mem = krdma_ubuf_mem(cmd->uaddr, cmd->length, write, max_length);
	if (IS_ERR(pages.mem))
		return PTR_ERR(pages.mem);
	ret = krdma_buf_create(session, cmd->dev_index, cmd->length,
			       cmd->access, krdma_ubuf_take, &pages, &keys);
	krdma_buf_mem_put(pages.mem);
	if (ret)
		return ret;
	cmd->handle = keys.handle;
	cmd->lkey = keys.lkey;
	cmd->rkey = keys.rkey;
	cmd->addr = keys.addr;
	return krdma_object_respond(keys.obj, ucmd, sizeof(*cmd));
}
