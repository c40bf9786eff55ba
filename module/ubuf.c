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

#include "buf.h"
#include "krdma_priv.h"

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

/* Where the caller's memory is, and whether it will be written. */
struct krdma_ubuf_range {
	u64 uaddr;
	bool write;
};

static struct krdma_buf_mem *krdma_ubuf_mem(struct krdma_device *kdev,
					    u64 length, const void *arg)
{
	const struct krdma_ubuf_range *range = arg;
	u64 uaddr = range->uaddr;
	u64 first = uaddr & PAGE_MASK, last = PAGE_ALIGN(uaddr + length);
	u64 npages = (last - first) >> PAGE_SHIFT;
	struct krdma_buf_mem *mem;
	int ret;

	/* One fast registration maps the whole buffer. */
	if (npages > kdev->ibdev->attrs.max_fast_reg_page_list_len)
		return ERR_PTR(-EINVAL);
	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	kref_init(&mem->kref);
	mem->user = true;
	mem->writable = range->write;
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
	ret = mem->chunks ? krdma_ubuf_pin(mem, uaddr, range->write) : -ENOMEM;
	if (ret) {
		krdma_buf_mem_put(mem);
		return ERR_PTR(ret);
	}
	return mem;
}

int krdma_buf_reg_user(struct krdma_session *session,
		       struct krdma_ucmd *ucmd)
{
	struct krdma_buf_reg_user *cmd = ucmd->cmd;
	struct krdma_ubuf_range range = {
		.uaddr = cmd->uaddr,
		.write = cmd->access & (KRDMA_ACCESS_LOCAL_WRITE |
					KRDMA_ACCESS_REMOTE_WRITE |
					KRDMA_ACCESS_REMOTE_ATOMIC),
	};
	struct krdma_buf_keys keys;
	int ret;

	ret = krdma_ubuf_check(cmd);
	if (!ret)
		ret = krdma_buf_create(session, cmd->dev_index, cmd->length,
				       cmd->access, krdma_ubuf_mem, &range,
				       &keys);
	if (ret)
		return ret;
	cmd->handle = keys.handle;
	cmd->lkey = keys.lkey;
	cmd->rkey = keys.rkey;
	cmd->addr = keys.addr;
	return krdma_object_respond(keys.obj, ucmd, sizeof(*cmd));
}
