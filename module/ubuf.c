// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy user buffers (KRDMA_BUF_REG_USER): the caller's own pages,
 * pinned long-term and charged to RLIMIT_MEMLOCK as ib_umem_get() does,
 * then DMA-mapped and fast-registered like a kernel buffer.  The peer's
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
				unsigned int gup)
{
	unsigned long start = uaddr & PAGE_MASK;
	int n;

	while (mem->num_pinned < mem->num_chunks) {
		n = pin_user_pages_fast(start +
					((unsigned long)mem->num_pinned << PAGE_SHIFT),
					mem->num_chunks - mem->num_pinned, gup,
					mem->chunks + mem->num_pinned);
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
static int krdma_ubuf_pin(struct krdma_buf_mem *mem, u64 uaddr, bool write)
{
	int ret;

	ret = krdma_ubuf_pin_flags(mem, uaddr, FOLL_LONGTERM | FOLL_WRITE);
	if (!ret || write)
		return ret;
	unpin_user_pages(mem->chunks, mem->num_pinned);
	mem->num_pinned = 0;
	return krdma_ubuf_pin_flags(mem, uaddr, FOLL_LONGTERM);
}

/*
 * The caller's pages of [@uaddr, @uaddr + @length), pinned and charged: at
 * most @max_pages, what one fast registration on the device maps.
 */
static struct krdma_buf_mem *krdma_ubuf_mem(u64 uaddr, u64 length,
					    bool write, u32 max_pages)
{
	u64 first = uaddr & PAGE_MASK, last = PAGE_ALIGN(uaddr + length);
	u64 npages = (last - first) >> PAGE_SHIFT;
	struct krdma_buf_mem *mem;
	int ret;

	if (npages > max_pages)
		return ERR_PTR(-EINVAL);
	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	kref_init(&mem->kref);
	mem->user = true;
	mem->writable = write;
	mem->num_chunks = npages;
	mem->first_offset = uaddr & ~PAGE_MASK;
	mem->mm = current->mm;
	mmgrab(mem->mm);
	ret = krdma_charge_pinned(mem->mm, npages);
	if (ret) {
		mmdrop(mem->mm);
		kfree(mem);
		return ERR_PTR(ret);
	}
	mem->chunks = kvcalloc(npages, sizeof(*mem->chunks), GFP_KERNEL);
	ret = mem->chunks ? krdma_ubuf_pin(mem, uaddr, write) : -ENOMEM;
	if (ret) {
		krdma_buf_mem_put(mem);
		return ERR_PTR(ret);
	}
	return mem;
}

/* The most pages one fast registration maps on device @dev_index. */
static int krdma_ubuf_max_pages(struct krdma_session *session, u32 dev_index,
				u32 *max_pages)
{
	struct krdma_device *kdev;
	int ret;

	ret = krdma_device_enter(session, dev_index, &kdev);
	if (ret)
		return ret;
	*max_pages = kdev->ibdev->attrs.max_fast_reg_page_list_len;
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return 0;
}

/* krdma_buf_create()'s memory: the pages pinned before, a reference more. */
static struct krdma_buf_mem *krdma_ubuf_take(struct krdma_device *kdev,
					     u64 length, void *arg)
{
	struct krdma_buf_mem *mem = arg;

	if (mem->num_chunks > kdev->ibdev->attrs.max_fast_reg_page_list_len)
		return ERR_PTR(-EINVAL);
	kref_get(&mem->kref);
	return mem;
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
	struct krdma_buf_keys keys;
	struct krdma_buf_mem *mem;
	u32 max_pages;
	int ret;

	ret = krdma_ubuf_check(cmd);
	if (!ret)
		ret = krdma_ubuf_max_pages(session, cmd->dev_index, &max_pages);
	if (ret)
		return ret;
	mem = krdma_ubuf_mem(cmd->uaddr, cmd->length, write, max_pages);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	ret = krdma_buf_create(session, cmd->dev_index, cmd->length,
			       cmd->access, krdma_ubuf_take, mem, &keys);
	krdma_buf_mem_put(mem);
	if (ret)
		return ret;
	cmd->handle = keys.handle;
	cmd->lkey = keys.lkey;
	cmd->rkey = keys.rkey;
	cmd->addr = keys.addr;
	return krdma_object_respond(keys.obj, ucmd, sizeof(*cmd));
}
