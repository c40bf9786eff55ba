// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy user buffers (KRDMA_BUF_REG_USER): the caller's own pages,
 * pinned long-term and charged to RLIMIT_MEMLOCK as ib_umem_get() does,
 * then DMA-mapped and fast-registered like a kernel buffer: an MR page per
 * page, or per huge page where small ones would not fit one MR, or else
 * several MRs of small pages behind the one handle.  The peer's bytes land
 * in the user's pages; the pages are unpinned (and marked dirty) only after
 * the MRs are gone.
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
	/* rkeys are written only for a buffer peers may reach */
	if (!(cmd->access & ~KRDMA_ACCESS_LOCAL_WRITE) &&
	    (cmd->rkeys_uptr || cmd->num_rkeys))
		return -EINVAL;
	if (!cmd->length || check_add_overflow(cmd->uaddr, cmd->length, &end) ||
	    end > TASK_SIZE)
		return -EINVAL;
	return krdma_check_access(cmd->access);
}

/*
 * A page of page pointers at a time, as ib_umem_get() pins: a long-term
 * pin allocates an array as long as the call (5.10's a kcalloc(), which
 * past 4 MiB warns), and a GiB of pages is long work a killed caller
 * stops.
 */
#define KRDMA_PIN_BATCH (PAGE_SIZE / sizeof(struct page *))

static int krdma_ubuf_pin_flags(struct krdma_buf_mem *mem, u64 uaddr,
				unsigned long npages, unsigned int gup)
{
	unsigned long start = uaddr & PAGE_MASK;
	int n;

	while (mem->num_pinned < npages) {
		if (fatal_signal_pending(current))
			return -EINTR;
		n = pin_user_pages_fast(start +
					((unsigned long)mem->num_pinned << PAGE_SHIFT),
					min(npages - mem->num_pinned,
					    KRDMA_PIN_BATCH), gup,
					mem->pinned + mem->num_pinned);
		if (n <= 0)
			return n ? n : -EFAULT;
		mem->num_pinned += n;
		cond_resched();
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
		/* a GiB of small pages is 262144; a killed caller stops */
		if (!(i % 4096)) {
			cond_resched();
			if (fatal_signal_pending(current))
				return false;
		}
		pfn = page_to_pfn(mem->pinned[i]);
		if ((pfn & mask) != (vpn & mask) ||
		    (i && (vpn & mask) && pfn != prev + 1))
			return false;
		prev = pfn;
	}
	return true;
}

/* MR pages of 2^@order pages one MR on @kdev maps, within max_mr_size. */
static u64 krdma_ubuf_mr_pages(const struct krdma_device *kdev,
			       unsigned int order)
{
	return min_t(u64, krdma_mr_max_pages(kdev, order),
		     kdev->ibdev->attrs.max_mr_size >> (PAGE_SHIFT + order));
}

/* The runs of 2^@order pages the pinned pages, the first at @vpn, span. */
static unsigned long krdma_ubuf_runs(const struct krdma_buf_mem *mem,
				     unsigned long vpn, unsigned int order)
{
	return ((vpn + mem->num_pinned - 1) >> order) - (vpn >> order) + 1;
}

/*
 * @mem's chunks: the runs of 2^@order pinned pages, an MR page each,
 * @per_mr of them to an MR.  Small pages are the pinned array itself.
 */
static int krdma_ubuf_set_chunks(struct krdma_buf_mem *mem, u64 uaddr,
				 unsigned int order, u64 per_mr)
{
	unsigned long vpn = uaddr >> PAGE_SHIFT, mask = (1UL << order) - 1;
	unsigned long runs = krdma_ubuf_runs(mem, vpn, order), first, i;

	if (!order) {
		/* krdma_buf_mem_release() knows not to free it twice */
		mem->chunks = mem->pinned;
	} else {
		mem->chunks = kvcalloc(runs, sizeof(*mem->chunks),
				       GFP_KERNEL_ACCOUNT);
		if (!mem->chunks)
			return -ENOMEM;
	}
	for (i = 0; order && i < runs; i++) {
		/* the run's first page of the buffer, back to the run's head */
		first = i ? (i << order) - (vpn & mask) : 0;
		mem->chunks[i] = pfn_to_page(page_to_pfn(mem->pinned[first]) -
					     ((vpn + first) & mask));
	}
	mem->num_chunks = runs;
	mem->chunks_per_mr = min_t(u64, per_mr, runs);
	mem->chunk_order = order;
	mem->first_offset = ((vpn & mask) << PAGE_SHIFT) + offset_in_page(uaddr);
	return 0;
}

/*
 * One MR's pages: the smallest page size in which one fast registration on
 * @kdev maps the buffer, if its memory is in runs that large; every larger
 * size needs larger runs still, so there is no other choice.
 */
static int krdma_ubuf_one_mr(struct krdma_buf_mem *mem, u64 uaddr,
			     u64 length, const struct krdma_device *kdev)
{
	unsigned long vpn = uaddr >> PAGE_SHIFT, runs = 0;
	unsigned int order;

	if (length > kdev->ibdev->attrs.max_mr_size)
		return -EINVAL;
	for (order = 0; order <= KRDMA_BUF_MAX_CHUNK_ORDER; order++) {
		runs = krdma_ubuf_runs(mem, vpn, order);
		if (runs <= krdma_mr_max_pages(kdev, order) &&
		    krdma_mr_fits(kdev, runs, order))
			break;
	}
	if (order > KRDMA_BUF_MAX_CHUNK_ORDER ||
	    !krdma_ubuf_has_runs(mem, vpn, order))
		return -EINVAL;
	return krdma_ubuf_set_chunks(mem, uaddr, order, runs);
}

/* The MRs of 2^@order-page MR pages the memory needs on @kdev; 0: none. */
static u64 krdma_ubuf_mrs_of(const struct krdma_buf_mem *mem,
			     unsigned long vpn, const struct krdma_device *kdev,
			     unsigned int order)
{
	u64 per_mr = krdma_ubuf_mr_pages(kdev, order);

	return per_mr ? (krdma_ubuf_runs(mem, vpn, order) - 1) / per_mr + 1 : 0;
}

/*
 * Memory no one MR maps: MRs of the pages the memory is in runs of (huge
 * pages, else small ones) that take the fewest, each mapping as many as
 * one fast registration on @kdev takes.  Runs of a size are runs of every
 * smaller size too.
 */
static int krdma_ubuf_several_mrs(struct krdma_buf_mem *mem, u64 uaddr,
				  const struct krdma_device *kdev)
{
	unsigned long vpn = uaddr >> PAGE_SHIFT;
	unsigned int order, o, best = 0;
	u64 mrs;

	for (order = KRDMA_BUF_MAX_CHUNK_ORDER; order; order--)
		if (krdma_ubuf_mr_pages(kdev, order) &&
		    krdma_ubuf_has_runs(mem, vpn, order))
			break;
	for (o = 1; o <= order; o++) {
		mrs = krdma_ubuf_mrs_of(mem, vpn, kdev, o);
		if (mrs && (!krdma_ubuf_mrs_of(mem, vpn, kdev, best) ||
			    mrs < krdma_ubuf_mrs_of(mem, vpn, kdev, best)))
			best = o;
	}
	mrs = krdma_ubuf_mrs_of(mem, vpn, kdev, best);
	if (!mrs || mrs > KRDMA_BUF_REG_MAX_MRS)
		return -EINVAL;
	return krdma_ubuf_set_chunks(mem, uaddr, best,
				     krdma_ubuf_mr_pages(kdev, best));
}

/* One MR if one maps the memory; else, if the caller takes them, several. */
static int krdma_ubuf_chunks(struct krdma_buf_mem *mem, u64 uaddr,
			     u64 length, const struct krdma_device *kdev,
			     bool several)
{
	int ret = krdma_ubuf_one_mr(mem, uaddr, length, kdev);

	if (ret != -EINVAL || !several)
		return ret;
	return krdma_ubuf_several_mrs(mem, uaddr, kdev);
}

/*
 * The caller's pages of [@uaddr, @uaddr + @length), pinned and charged: no
 * more than the most MRs of a buffer on the device, @max_length, span.
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

/*
 * The longest user buffer on device @dev_index: one MR, or (@several) the
 * most MRs of the largest pages.
 */
static int krdma_ubuf_max_length(struct krdma_session *session, u32 dev_index,
				 bool several, u64 *max_length)
{
	struct krdma_device *kdev;
	unsigned int o;
	u64 pages;
	int ret;

	ret = krdma_device_enter(session, dev_index, &kdev);
	if (ret)
		return ret;
	*max_length = krdma_buf_max_length(kdev);
	for (o = 0; several && o <= KRDMA_BUF_MAX_CHUNK_ORDER; o++) {
		pages = min_t(u64, krdma_ubuf_mr_pages(kdev, o), U32_MAX) *
			KRDMA_BUF_REG_MAX_MRS;
		*max_length = max(*max_length,
				  pages > U64_MAX >> (PAGE_SHIFT + o) ? U64_MAX :
				  pages << (PAGE_SHIFT + o));
	}
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return 0;
}

/**
 * struct krdma_ubuf_pages - krdma_ubuf_take()'s argument
 * @mem: the pinned pages
 * @cmd: the caller's command; out: its MRs' count
 * @several: the caller's struct has room for the MRs' count: the buffer
 *	may be several MRs (else only one, as before there could be more)
 * @no_room: out, the caller has no room for the MRs' rkeys
 */
struct krdma_ubuf_pages {
	struct krdma_buf_mem *mem;
	struct krdma_buf_reg_user *cmd;
	bool several;
	bool no_room;
};

/*
 * krdma_buf_create()'s memory: the pages pinned before, a reference more.
 * Peers need every MR's rkey: a caller with no room for them learns how
 * many there would be before any is made.
 */
static struct krdma_buf_mem *krdma_ubuf_take(struct krdma_device *kdev,
					     u64 length, void *arg)
{
	struct krdma_ubuf_pages *pages = arg;
	struct krdma_buf_reg_user *cmd = pages->cmd;
	struct krdma_buf_mem *mem = pages->mem;
	int ret;

	ret = krdma_ubuf_chunks(mem, cmd->uaddr, length, kdev,
				pages->several);
	if (ret)
		return ERR_PTR(ret);
	cmd->num_mrs = krdma_buf_mem_mrs(mem);
	if (cmd->num_mrs > 1 && (cmd->access & ~KRDMA_ACCESS_LOCAL_WRITE) &&
	    cmd->num_rkeys < cmd->num_mrs) {
		pages->no_room = true;
		return ERR_PTR(-EMSGSIZE);
	}
	kref_get(&mem->kref);
	return mem;
}

/* Every MR's rkey, in order, where the caller asked for them. */
static int krdma_ubuf_put_rkeys(const struct krdma_buf *buf,
				const struct krdma_buf_reg_user *cmd)
{
	u32 __user *rkeys = u64_to_user_ptr(cmd->rkeys_uptr);
	unsigned int i;

	if (!(cmd->access & ~KRDMA_ACCESS_LOCAL_WRITE) ||
	    cmd->num_rkeys < buf->num_mrs)
		return 0;
	for (i = 0; i < buf->num_mrs; i++)
		if (put_user(buf->mrs[i].key, &rkeys[i]))
			return -EFAULT;
	return 0;
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
	struct krdma_ubuf_pages pages = {
		.cmd = cmd,
		.several = ucmd->user_size >=
			   offsetofend(struct krdma_buf_reg_user, num_mrs),
	};
	struct krdma_buf_keys keys;
	struct krdma_buf *buf;
	u64 max_length;
	int ret;

	ret = krdma_ubuf_check(cmd);
	if (!ret)
		ret = krdma_ubuf_max_length(session, cmd->dev_index,
					    pages.several, &max_length);
	if (ret)
		return ret;
	pages.mem = krdma_ubuf_mem(cmd->uaddr, cmd->length, write, max_length);
	if (IS_ERR(pages.mem))
		return PTR_ERR(pages.mem);
	ret = krdma_buf_create(session, cmd->dev_index, cmd->length,
			       cmd->access, krdma_ubuf_take, &pages, &keys);
	krdma_buf_mem_put(pages.mem);
	/* the count alone: the rest of the struct is as the caller wrote it */
	if (pages.no_room && krdma_ucmd_respond(ucmd, sizeof(*cmd)))
		return -EFAULT;
	if (ret)
		return ret;
	buf = container_of(keys.obj, struct krdma_buf, obj);
	ret = krdma_ubuf_put_rkeys(buf, cmd);
	if (ret) {
		krdma_object_erase(keys.obj);
		krdma_object_put(keys.obj);
		return ret;
	}
	cmd->mr_length = krdma_buf_mr_length(buf->mem);
	cmd->handle = keys.handle;
	cmd->lkey = keys.lkey;
	cmd->rkey = keys.rkey;
	cmd->addr = keys.addr;
	return krdma_object_respond(keys.obj, ucmd, sizeof(*cmd));
}
