// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel buffers: memory the module allocates, DMA-maps and fast-registers,
 * filled and read by userspace through KRDMA_BUF_RW or mmap(2).
 *
 * The memory is a list of physically contiguous chunks (one chunk per MR
 * page), so a buffer as large as max_fast_reg_page_list_len chunks needs a
 * single MR and a single rkey; user memory of small pages may need several
 * MRs (ubuf.c), each mapping the next max_fast_reg_page_list_len chunks.
 * Every buffer has an MR, local-only ones too: deregistration is what makes
 * an in-flight WR with a stale key fail instead of touching freed memory.
 * The iovas start at 0, so no kernel address ever reaches a user or a peer.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "account.h"
#include "buf.h"
#include "device.h"
#include "ioctl.h"
#include "krdma_compat.h"
#include "object.h"
#include "quirks.h"

#define KRDMA_ACCESS_ALL (KRDMA_ACCESS_LOCAL_WRITE |			\
			  KRDMA_ACCESS_REMOTE_WRITE |			\
			  KRDMA_ACCESS_REMOTE_READ |			\
			  KRDMA_ACCESS_REMOTE_ATOMIC |			\
			  KRDMA_ACCESS_MW_BIND)

size_t krdma_chunk_size(const struct krdma_buf_mem *mem)
{
	return PAGE_SIZE << mem->chunk_order;
}

static unsigned long krdma_mem_pages(const struct krdma_buf_mem *mem)
{
	return (unsigned long)mem->num_chunks << mem->chunk_order;
}

/*
 * Mapped one page at a time (vm_insert_pages()), a chunk's pages need a
 * reference count each; before 5.11 (PG_kmemcg) a buffer is mapped as
 * PFNs instead (krdma_buf_mmap_pages()) and its chunks stay whole.
 */
#ifdef PG_kmemcg
#define KRDMA_SPLIT_CHUNKS false
#else
#define KRDMA_SPLIT_CHUNKS true
#endif

/*
 * A chunk: 2^@order physically contiguous pages, split (split_page()) into
 * pages of their own where they are mapped one by one (the tail pages of
 * an unsplit allocation have no reference count).  The memory cgroup
 * charge is split with them.
 */
static struct page *krdma_chunk_alloc(unsigned int order)
{
	struct page *chunk;

	chunk = alloc_pages(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN,
			    order);
	if (chunk && order && KRDMA_SPLIT_CHUNKS)
		split_page(chunk, order);
	return chunk;
}

/* A mapping or a pin may still hold a page: it goes when they let go. */
static void krdma_chunk_free(struct page *chunk, unsigned int order)
{
	unsigned long i;

	if (!KRDMA_SPLIT_CHUNKS) {
		__free_pages(chunk, order);
		return;
	}
	for (i = 0; i < 1UL << order; i++)
		__free_page(chunk + i);
}

/* A GiB of small pages is 262144: unpinned a batch at a time. */
#define KRDMA_UNPIN_BATCH 4096

static void krdma_unpin(struct krdma_buf_mem *mem)
{
	unsigned int i, n;

	for (i = 0; i < mem->num_pinned; i += n) {
		n = min(mem->num_pinned - i, KRDMA_UNPIN_BATCH);
		unpin_user_pages_dirty_lock(mem->pinned + i, n,
					    mem->writable);
		cond_resched();
	}
}

static void krdma_buf_mem_release(struct kref *kref)
{
	struct krdma_buf_mem *mem =
		container_of(kref, struct krdma_buf_mem, kref);
	/* small pages: the chunks are the pinned array itself */
	bool own_chunks = mem->chunks != mem->pinned;
	unsigned int i;

	if (mem->user) {
		if (mem->pinned)
			krdma_unpin(mem);
		kvfree(mem->pinned);
	} else if (mem->chunks) {	/* NULL: its allocation failed */
		for (i = 0; i < mem->num_chunks; i++)
			if (mem->chunks[i])
				krdma_chunk_free(mem->chunks[i],
						 mem->chunk_order);
	}
	krdma_uncharge_pinned(mem->mm, mem->num_charged);
	mmdrop(mem->mm);
	if (own_chunks)
		kvfree(mem->chunks);
	kfree(mem);
}

void krdma_buf_mem_put(struct krdma_buf_mem *mem)
{
	kref_put(&mem->kref, krdma_buf_mem_release);
}

/* Page slots to allocate an MR with for @pages pages. */
static u64 krdma_mr_pages(const struct krdma_device *kdev, u64 pages)
{
	if (krdma_quirk(kdev->ibdev, KRDMA_QUIRK_MR_SPARE_SLOT) &&
	    pages % 256 == 0)
		return pages + 1;
	return pages;
}

/*
 * Whether one fast registration on @kdev maps @pages MR pages of
 * 2^@order pages each: the device's page list and page sizes, krdma's
 * largest chunk, and what the driver's own page array can hold.
 */
bool krdma_mr_fits(const struct krdma_device *kdev, u64 pages,
		   unsigned int order)
{
	const struct ib_device_attr *attrs = &kdev->ibdev->attrs;

	if (order > KRDMA_BUF_MAX_CHUNK_ORDER || !pages ||
	    !(attrs->page_size_cap & (PAGE_SIZE << order)) ||
	    pages > attrs->max_fast_reg_page_list_len)
		return false;
	return !krdma_quirk(kdev->ibdev, KRDMA_QUIRK_MR_SUBPAGES) ||
	       krdma_mr_pages(kdev, pages) << order <=
	       KMALLOC_MAX_SIZE / KRDMA_SUBPAGE_ENTRY_SIZE;
}

/*
 * The most MR pages of 2^@order pages one fast registration on @kdev maps
 * (0: none of that size); max_mr_size is the caller's to apply.
 */
u64 krdma_mr_max_pages(const struct krdma_device *kdev, unsigned int order)
{
	const struct ib_device_attr *attrs = &kdev->ibdev->attrs;
	u64 pages;

	if (order > KRDMA_BUF_MAX_CHUNK_ORDER ||
	    !(attrs->page_size_cap & (PAGE_SIZE << order)))
		return 0;
	pages = attrs->max_fast_reg_page_list_len;
	if (krdma_quirk(kdev->ibdev, KRDMA_QUIRK_MR_SUBPAGES))
		pages = min_t(u64, pages, (KMALLOC_MAX_SIZE /
				KRDMA_SUBPAGE_ENTRY_SIZE) >> order);
	/* a spare slot may take the last one */
	while (pages && !krdma_mr_fits(kdev, pages, order))
		pages--;
	return pages;
}

/* The longest buffer, in bytes, one MR on @kdev maps. */
u64 krdma_buf_max_length(const struct krdma_device *kdev)
{
	u64 longest = 0;
	unsigned int o;

	for (o = 0; o <= KRDMA_BUF_MAX_CHUNK_ORDER; o++)
		longest = max(longest, krdma_mr_max_pages(kdev, o) <<
					(PAGE_SHIFT + o));
	return min(longest, kdev->ibdev->attrs.max_mr_size);
}

/* The MRs that map @mem's chunks. */
unsigned int krdma_buf_mem_mrs(const struct krdma_buf_mem *mem)
{
	return (mem->num_chunks - 1) / mem->chunks_per_mr + 1;
}

/* The bytes of the buffer's iovas each of its MRs maps. */
u64 krdma_buf_mr_length(const struct krdma_buf_mem *mem)
{
	return (u64)mem->chunks_per_mr << (PAGE_SHIFT + mem->chunk_order);
}

/* Chunks large enough that the buffer fits one MR's page list. */
static int krdma_chunk_order(struct krdma_device *kdev, u64 length,
			     unsigned int *order)
{
	u32 max_pages = kdev->ibdev->attrs.max_fast_reg_page_list_len;
	unsigned int o;

	/* beyond what one MR maps (and clear of overflow below) */
	if (length > (u64)max_pages << (PAGE_SHIFT + KRDMA_BUF_MAX_CHUNK_ORDER))
		return -EINVAL;

	for (o = 0; o <= KRDMA_BUF_MAX_CHUNK_ORDER; o++) {
		if (krdma_mr_fits(kdev, DIV_ROUND_UP_ULL(length, PAGE_SIZE << o),
				  o)) {
			*order = o;
			return 0;
		}
	}
	return -EINVAL;
}

static struct krdma_buf_mem *krdma_buf_mem_alloc(struct krdma_device *kdev,
						 u64 length)
{
	struct krdma_buf_mem *mem;
	unsigned int order, i;
	int ret;

	ret = krdma_chunk_order(kdev, length, &order);
	if (ret)
		return ERR_PTR(ret);
	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	kref_init(&mem->kref);
	mem->chunk_order = order;
	mem->num_chunks = DIV_ROUND_UP_ULL(length, PAGE_SIZE << order);
	mem->chunks_per_mr = mem->num_chunks;
	mem->mm = current->mm;
	mmgrab(mem->mm);
	ret = krdma_charge_pinned(mem->mm, krdma_mem_pages(mem));
	if (ret) {
		mmdrop(mem->mm);
		kfree(mem);
		return ERR_PTR(ret);
	}
	mem->num_charged = krdma_mem_pages(mem);
	/*
	 * Charged to the caller's memory cgroup: the pages count in a
	 * process's RSS only while it maps them (and never before 5.11, see
	 * krdma_buf_mmap_pages()), and RLIMIT_MEMLOCK is all that bounds them
	 * otherwise (often unlimited on RDMA hosts).
	 */
	mem->chunks = kvcalloc(mem->num_chunks, sizeof(*mem->chunks),
			       GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!mem->chunks)
		goto err_put;
	for (i = 0; i < mem->num_chunks; i++) {
		/* up to 2 GiB: a killed caller stops here */
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_put;
		}
		mem->chunks[i] = krdma_chunk_alloc(order);
		if (!mem->chunks[i])
			goto err_put;
	}
	return mem;

err_put:
	krdma_buf_mem_put(mem);
	return ERR_PTR(ret);
}

static void krdma_buf_mr_destroy(struct krdma_buf *buf,
				 struct krdma_buf_mr *bmr)
{
	if (bmr->keyed)
		xa_cmpxchg(&buf->obj.kpd->buf_keys, bmr->key, buf, NULL, 0);
	bmr->keyed = false;
	if (bmr->mr)
		ib_dereg_mr(bmr->mr);
	bmr->mr = NULL;
	if (bmr->mapped)
		ib_dma_unmap_sg(buf->obj.kdev->ibdev, bmr->sgt.sgl,
				bmr->sgt.orig_nents, DMA_BIDIRECTIONAL);
	bmr->mapped = false;
	krdma_rdmacg_uncharge(&bmr->rdmacg);
}

static void krdma_buf_destroy_hw(struct krdma_object *obj)
{
	struct krdma_buf *buf = container_of(obj, struct krdma_buf, obj);
	unsigned int i;

	krdma_object_assert_hw_write(obj);
	for (i = 0; i < buf->num_mrs; i++) {
		krdma_buf_mr_destroy(buf, &buf->mrs[i]);
		cond_resched();		/* up to KRDMA_BUF_REG_MAX_MRS */
	}
}

static void krdma_buf_free(struct krdma_object *obj)
{
	struct krdma_buf *buf = container_of(obj, struct krdma_buf, obj);
	unsigned int i;

	for (i = 0; i < buf->num_mrs; i++) {
		/* destroy_hw took the keys out: nothing finds the buffer now */
		WARN_ON(buf->mrs[i].keyed);
		sg_free_table(&buf->mrs[i].sgt);
	}
	kvfree(buf->mrs);
	if (buf->mem)
		krdma_buf_mem_put(buf->mem);
	kfree(buf);
}

const struct krdma_object_ops krdma_buf_ops = {
	.name = "buffer",
	.destroy_pass = 3,
	.destroy_hw = krdma_buf_destroy_hw,
	.free = krdma_buf_free,
};

int krdma_access_to_ib(u32 access)
{
	int ib = 0;

	if (access & KRDMA_ACCESS_LOCAL_WRITE)
		ib |= IB_ACCESS_LOCAL_WRITE;
	if (access & KRDMA_ACCESS_REMOTE_WRITE)
		ib |= IB_ACCESS_REMOTE_WRITE;
	if (access & KRDMA_ACCESS_REMOTE_READ)
		ib |= IB_ACCESS_REMOTE_READ;
	if (access & KRDMA_ACCESS_REMOTE_ATOMIC)
		ib |= IB_ACCESS_REMOTE_ATOMIC;
	if (access & KRDMA_ACCESS_MW_BIND)
		ib |= IB_ACCESS_MW_BIND;
	return ib;
}

/* The IB rules: remote write or atomic access needs local write access. */
int krdma_check_access(u32 access)
{
	if (access & ~KRDMA_ACCESS_ALL)
		return -EINVAL;
	if ((access & (KRDMA_ACCESS_REMOTE_WRITE |
		       KRDMA_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & KRDMA_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (access & KRDMA_ACCESS_MW_BIND)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Describe the bytes of the buffer MR @index maps, chunk by chunk: from
 * mem->first_offset in the buffer's first chunk to its length in all.
 */
static int krdma_buf_mr_sg(struct krdma_buf *buf, unsigned int index)
{
	struct krdma_buf_mem *mem = buf->mem;
	unsigned int first = index * mem->chunks_per_mr, i;
	unsigned int n = min(mem->chunks_per_mr, mem->num_chunks - first);
	struct sg_table *sgt = &buf->mrs[index].sgt;
	size_t chunk = krdma_chunk_size(mem);
	u64 left = mem->first_offset + buf->length - (u64)first * chunk;
	struct scatterlist *sg;
	int ret;

	/* an entry per page of the user's: charged as the pages are */
	ret = sg_alloc_table(sgt, n, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	for_each_sgtable_sg(sgt, sg, i) {
		size_t off = (first + i) ? 0 : mem->first_offset;
		size_t len = min_t(u64, left, chunk) - off;

		/* from the buffer's own first page: an offset within it */
		sg_set_page(sg, pfn_to_page(page_to_pfn(mem->chunks[first + i]) +
					    (off >> PAGE_SHIFT)),
			    len, offset_in_page(off));
		left -= off + len;
	}
	return 0;
}

/*
 * DMA-map and fast-register MR @index of the buffer in @kpd.  Its iova is
 * where its first byte is in the buffer, counted from the start of the
 * first chunk: peers address the buffer from there, and no kernel address
 * leaves the module.
 */
static int krdma_buf_mr_map(struct krdma_buf *buf, unsigned int index,
			    struct krdma_pd *kpd)
{
	struct krdma_device *kdev = buf->obj.kdev;
	struct krdma_buf_mr *bmr = &buf->mrs[index];
	size_t chunk = krdma_chunk_size(buf->mem);
	int ret, n;

	/* the MRs past the first count in the rdma cgroup as objects */
	if (index && !(current->flags & PF_KTHREAD)) {
		ret = krdma_rdmacg_charge(&bmr->rdmacg, kdev->ibdev,
					  RDMACG_RESOURCE_HCA_OBJECT);
		if (ret)
			return ret;
	}
	ret = krdma_buf_mr_sg(buf, index);
	if (ret)
		return ret;
	n = ib_dma_map_sg(kdev->ibdev, bmr->sgt.sgl, bmr->sgt.orig_nents,
			  DMA_BIDIRECTIONAL);
	if (n <= 0)
		return -ENOMEM;
	bmr->sgt.nents = n;
	bmr->mapped = true;

	bmr->mr = ib_alloc_mr(kpd->pd, IB_MR_TYPE_MEM_REG,
			      krdma_mr_pages(kdev, bmr->sgt.orig_nents));
	if (IS_ERR(bmr->mr)) {
		ret = PTR_ERR(bmr->mr);
		bmr->mr = NULL;
		return ret;
	}
	if (ib_map_mr_sg(bmr->mr, bmr->sgt.sgl, n, NULL, chunk) != n)
		return -EINVAL;
	bmr->mr->iova = (bmr->mr->iova & (chunk - 1)) +
			index * krdma_buf_mr_length(buf->mem);
	/*
	 * Peers find byte n of a buffer of several MRs at addr + n, which
	 * needs each MR's start where it is in the chunks; an IOMMU that
	 * mapped a chunk's head elsewhere in its IOVA page leaves it not so.
	 */
	if (buf->num_mrs > 1 &&
	    (bmr->mr->iova & (chunk - 1)) != (index ? 0 :
					      buf->mem->first_offset))
		return -EINVAL;
	ret = krdma_pd_reg_mr(kpd, bmr->mr, krdma_access_to_ib(buf->access));
	if (ret)
		return ret;
	/* a fast-registered MR has one key, local and remote */
	bmr->key = bmr->mr->lkey;
	ret = xa_insert(&kpd->buf_keys, bmr->key, buf, GFP_KERNEL_ACCOUNT);
	bmr->keyed = !ret;
	return ret;
}

/*
 * DMA-map and fast-register the buffer in the session's PD (the caller is
 * inside krdma_device_enter()), an MR at a time.
 *
 * The mapping lives as long as the buffer and the CPU (BUF_RW, the
 * caller's mmap) reads and writes it while the device may: as ib_umem does
 * for user memory, this relies on cache-coherent DMA without bouncing,
 * which RDMA devices have; there is no point at which ib_dma_sync_*()
 * could be called for a page a peer writes while it is mapped.
 */
int krdma_buf_map(struct krdma_buf *buf)
{
	struct krdma_buf_mem *mem = buf->mem;
	unsigned int num_mrs = krdma_buf_mem_mrs(mem);
	struct krdma_device *kdev = buf->obj.kdev;
	struct krdma_pd *kpd;
	unsigned int i;
	int ret;

	lockdep_assert_held_read(&kdev->usage);
	if (WARN_ON_ONCE(!num_mrs) || num_mrs > KRDMA_BUF_REG_MAX_MRS)
		return -EINVAL;
	buf->mrs = kvcalloc(num_mrs, sizeof(*buf->mrs), GFP_KERNEL_ACCOUNT);
	if (!buf->mrs)
		return -ENOMEM;
	buf->num_mrs = num_mrs;
	kpd = krdma_pd_get(buf->obj.session, kdev);
	if (IS_ERR(kpd))
		return PTR_ERR(kpd);
	buf->obj.kpd = kpd;
	for (i = 0; i < num_mrs; i++) {
		/* a registration per 2 MiB: a killed caller, removal stop here */
		if (fatal_signal_pending(current))
			return -EINTR;
		if (READ_ONCE(kdev->removing))
			return -ENODEV;
		ret = krdma_buf_mr_map(buf, i, kpd);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The buffer of @kpd's session whose key is @key, referenced: a LOCAL_INV
 * may name no other (some devices, rxe among them, do not check the PD of
 * the MR they invalidate).
 */
int krdma_buf_find_key(struct krdma_pd *kpd, u32 key,
		       struct krdma_object **ref)
{
	struct krdma_buf *buf;
	int ret = -EINVAL;

	xa_lock(&kpd->buf_keys);
	buf = xa_load(&kpd->buf_keys, key);
	if (buf && kref_get_unless_zero(&buf->obj.kref)) {
		*ref = &buf->obj;
		ret = 0;
	}
	xa_unlock(&kpd->buf_keys);
	return ret;
}

static int krdma_buf_alloc_check(const struct krdma_buf_alloc *cmd)
{
	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!cmd->length)
		return -EINVAL;
	return krdma_check_access(cmd->access);
}

/*
 * A buffer object on a device over the memory make_mem() provides: mapped,
 * registered and published; keys->handle names it.
 */
int krdma_buf_create(struct krdma_session *session, u32 dev_index,
		     u64 length, u32 access, krdma_buf_mem_ctor make_mem,
		     void *arg, struct krdma_buf_keys *keys)
{
	struct krdma_device *kdev;
	struct krdma_buf *buf;
	int ret;

	ret = krdma_device_enter(session, dev_index, &kdev);
	if (ret)
		return ret;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto err_exit;
	}
	ret = krdma_object_init(&buf->obj, session, &krdma_buf_ops);
	if (ret)
		goto err_free;
	buf->obj.kdev = kdev;
	buf->length = length;
	buf->access = access;

	buf->mem = make_mem(kdev, length, arg);
	if (IS_ERR(buf->mem)) {
		ret = PTR_ERR(buf->mem);
		buf->mem = NULL;
		goto err;
	}
	ret = krdma_buf_map(buf);
	if (ret)
		goto err;
	keys->lkey = buf->mrs[0].key;
	keys->rkey = (access & ~KRDMA_ACCESS_LOCAL_WRITE) ? keys->lkey : 0;
	keys->addr = buf->mrs[0].mr->iova;
	ret = krdma_object_publish(&buf->obj, &keys->handle);
	if (ret)
		goto err;
	keys->obj = &buf->obj;
	krdma_device_exit(kdev);
	return 0;

err:
	/* Unmap and deregister while removal is still held off. */
	krdma_buf_destroy_hw(&buf->obj);
	krdma_device_exit(kdev);
	krdma_object_put(&buf->obj);
	return ret;

err_free:
	kfree(buf);
err_exit:
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return ret;
}

static struct krdma_buf_mem *krdma_kbuf_mem(struct krdma_device *kdev,
					    u64 length, void *arg)
{
	if (length > kdev->ibdev->attrs.max_mr_size)
		return ERR_PTR(-EINVAL);
	return krdma_buf_mem_alloc(kdev, length);
}

int krdma_buf_alloc(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_buf_alloc *cmd = ucmd->cmd;
	struct krdma_buf_keys keys;
	int ret;

	ret = krdma_buf_alloc_check(cmd);
	if (!ret)
		ret = krdma_buf_create(session, cmd->dev_index, cmd->length,
				       cmd->access, krdma_kbuf_mem, NULL, &keys);
	if (ret)
		return ret;
	cmd->handle = keys.handle;
	cmd->lkey = keys.lkey;
	cmd->rkey = keys.rkey;
	cmd->addr = keys.addr;
	cmd->mmap_offset = (u64)keys.handle << PAGE_SHIFT;
	return krdma_object_respond(keys.obj, ucmd, sizeof(*cmd));
}

/*
 * The kernel address of byte @offset of @mem, and the bytes its chunk
 * holds from there: the one place a buffer offset becomes memory.  Pinned
 * user pages are addressed as kernel memory, which needs every page
 * mapped: no HIGHMEM (Kbuild refuses such a kernel).
 */
void *krdma_buf_mem_addr(const struct krdma_buf_mem *mem, u64 offset,
			 size_t *avail)
{
	size_t chunk = krdma_chunk_size(mem);
	u64 off = offset + mem->first_offset;
	unsigned int idx = div_u64(off, chunk);
	size_t in = off - (u64)idx * chunk;

	*avail = chunk - in;
	return page_address(mem->chunks[idx]) + in;
}

/* Copy between the buffer and user memory, a chunk at a time. */
static int krdma_buf_copy(struct krdma_buf_mem *mem, u64 offset,
			  void __user *udata, u64 length, bool to_buf)
{
	while (length) {
		size_t avail;
		void *kaddr = krdma_buf_mem_addr(mem, offset, &avail);
		size_t len = min_t(u64, length, avail);
		unsigned long left;

		if (to_buf)
			left = copy_from_user(kaddr, udata, len);
		else
			left = copy_to_user(udata, kaddr, len);
		if (left)
			return -EFAULT;
		offset += len;
		udata += len;
		length -= len;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

int krdma_buf_rw(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_buf_rw *cmd = ucmd->cmd;
	struct krdma_buf *buf;
	struct krdma_object *obj;
	u64 end;
	int ret;

	if (cmd->flags & ~KRDMA_BUF_RW_WRITE)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	obj = krdma_object_get(session, cmd->handle, &krdma_buf_ops);
	if (!obj)
		return -ENOENT;
	buf = container_of(obj, struct krdma_buf, obj);
	/* the memory outlives removal, but the contract is ENODEV */
	ret = krdma_object_lock_hw(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	krdma_object_unlock_hw(obj);
	if (buf->mem->user ||
	    check_add_overflow(cmd->offset, cmd->length, &end) ||
	    end > buf->length)
		ret = -EINVAL;
	else
		ret = krdma_buf_copy(buf->mem, cmd->offset,
				     u64_to_user_ptr(cmd->data_uptr),
				     cmd->length,
				     cmd->flags & KRDMA_BUF_RW_WRITE);
	krdma_object_put(obj);
	return ret;
}

/*
 * Describe a local range of a buffer as an SGE; takes a buffer reference.
 * The range must lie in one of the buffer's MRs: an SGE has one lkey.
 * @first_end: where (in SGE addresses) the first entry of that MR's page
 * list ends.
 */
static int krdma_buf_sge_mr(const struct krdma_buf *buf,
			    const struct krdma_sge *usge, struct ib_sge *sge,
			    u64 *first_end)
{
	u64 mr_length = krdma_buf_mr_length(buf->mem);
	/* from the head of the first chunk, where MR i starts at i * length */
	u64 pos = buf->mem->first_offset + usge->offset, start;
	size_t chunk = krdma_chunk_size(buf->mem);
	unsigned int index = 0;
	struct ib_mr *mr;

	if (buf->num_mrs > 1) {
		index = div64_u64(pos, mr_length);
		/* an empty SGE at the very end names no byte of any MR */
		if (index >= buf->num_mrs)
			index = buf->num_mrs - 1;
		if (pos + usge->length > (u64)(index + 1) * mr_length)
			return -EINVAL;
	}
	/* addressed by the MR's own iova (krdma_buf_mr_map()) */
	mr = buf->mrs[index].mr;
	start = index ? (u64)index * mr_length : buf->mem->first_offset;
	sge->addr = mr->iova + (pos - start);
	sge->length = usge->length;
	sge->lkey = buf->mrs[index].key;
	*first_end = round_down(mr->iova, chunk) + chunk;
	return 0;
}

int krdma_buf_sge(struct krdma_session *session, const struct krdma_sge *usge,
		  struct ib_sge *sge, struct krdma_object **ref, u64 *first_end)
{
	struct krdma_object *obj;
	struct krdma_buf *buf;
	u64 end;
	int ret;

	if (usge->__reserved || usge->__reserved2)
		return -EINVAL;
	obj = krdma_object_get(session, usge->buf_handle, &krdma_buf_ops);
	if (!obj)
		return -ENOENT;
	buf = container_of(obj, struct krdma_buf, obj);
	if (check_add_overflow(usge->offset, (u64)usge->length, &end) ||
	    end > buf->length) {
		krdma_object_put(obj);
		return -EINVAL;
	}
	ret = krdma_object_lock_hw_nested(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	ret = krdma_buf_sge_mr(buf, usge, sge, first_end);
	krdma_object_unlock_hw(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	*ref = obj;
	return 0;
}

static void krdma_vma_open(struct vm_area_struct *vma)
{
	struct krdma_buf_mem *mem = vma->vm_private_data;

	kref_get(&mem->kref);
}

static void krdma_vma_close(struct vm_area_struct *vma)
{
	krdma_buf_mem_put(vma->vm_private_data);
}

static const struct vm_operations_struct krdma_vm_ops = {
	.open = krdma_vma_open,
	.close = krdma_vma_close,
};

#ifdef PG_kmemcg
/*
 * Before 5.11 a page charged to a memory cgroup is marked so in the field
 * that otherwise counts its mappings (the page type PG_kmemcg): it may not
 * be mapped as an ordinary page (vm_insert_pages() refuses it), so there
 * the buffer is mapped as PFNs, which GUP does not reach and RSS does not
 * count.
 */
static int krdma_buf_mmap_pages(struct vm_area_struct *vma,
				struct krdma_buf_mem *mem)
{
	unsigned long len = vma->vm_end - vma->vm_start, done = 0, n;
	unsigned int i;
	int ret;

	for (i = 0; done < len; i++) {
		n = min_t(unsigned long, len - done, krdma_chunk_size(mem));
		ret = remap_pfn_range(vma, vma->vm_start + done,
				      page_to_pfn(mem->chunks[i]), n,
				      vma->vm_page_prot);
		if (ret)
			return ret;
		done += n;
	}
	return 0;
}
#else
/* Pages vm_insert_pages() is given at a time (an array on the stack). */
#define KRDMA_MMAP_BATCH 32

/* Page @i of @mem: its chunks are split, each page has a reference count. */
static struct page *krdma_mem_page(const struct krdma_buf_mem *mem,
				   unsigned long i)
{
	return mem->chunks[i >> mem->chunk_order] +
	       (i & ((1UL << mem->chunk_order) - 1));
}

/*
 * The buffer's pages, mapped as ordinary pages, not as PFNs: the mapping
 * takes a reference on each, GUP reaches them (/proc/pid/mem, ptrace,
 * O_DIRECT, a user buffer over the mapping) and the mapper's RSS counts
 * them.  An error leaves what was inserted to mmap(2)'s unwinding.
 */
static int krdma_buf_mmap_pages(struct vm_area_struct *vma,
				struct krdma_buf_mem *mem)
{
	unsigned long npages = vma_pages(vma), done, batch, n, i;
	struct page *pages[KRDMA_MMAP_BATCH];
	int ret;

	for (done = 0; done < npages; done += batch) {
		batch = min_t(unsigned long, npages - done, KRDMA_MMAP_BATCH);
		for (i = 0; i < batch; i++)
			pages[i] = krdma_mem_page(mem, done + i);
		n = batch;	/* vm_insert_pages() leaves what it did not */
		ret = vm_insert_pages(vma, vma->vm_start + (done << PAGE_SHIFT),
				      pages, &n);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}
#endif

/*
 * mmap(2) at a buffer's mmap_offset maps its pages; the mapping keeps them.
 * Shared only: in a private mapping a write would copy the page (copy on
 * write), and the copy is neither the buffer nor what the device writes.
 */
int krdma_buf_mmap(struct krdma_session *session, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	struct krdma_object *obj;
	struct krdma_buf_mem *mem;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED) || vma->vm_pgoff > U32_MAX)
		return -EINVAL;
	obj = krdma_object_get(session, vma->vm_pgoff, &krdma_buf_ops);
	if (!obj)
		return -ENOENT;
	mem = container_of(obj, struct krdma_buf, obj)->mem;
	if (mem->user || len > krdma_mem_pages(mem) << PAGE_SHIFT) {
		ret = -EINVAL;
		goto out;
	}
	/* as a PFN mapping has them: not grown by mremap(), not dumped */
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	ret = krdma_buf_mmap_pages(vma, mem);
	if (ret)
		goto out;
	kref_get(&mem->kref);
	vma->vm_private_data = mem;
	vma->vm_ops = &krdma_vm_ops;
out:
	krdma_object_put(obj);
	return ret;
}

/*
 * Inline data is copied by the CPU at post time from kernel addresses, so
 * the SGE names the chunk memory itself, split where a chunk ends.  The
 * pieces go at sges[*num_sges] onwards, up to sges[max_sges - 1].
 */
int krdma_buf_inline_sges(struct krdma_session *session,
			  const struct krdma_sge *usge, struct ib_sge *sges,
			  int max_sges, int *num_sges, struct krdma_object **ref)
{
	struct krdma_object *obj;
	struct krdma_buf_mem *mem;
	u64 offset, end;
	u32 left;

	if (usge->__reserved || usge->__reserved2)
		return -EINVAL;
	obj = krdma_object_get(session, usge->buf_handle, &krdma_buf_ops);
	if (!obj)
		return -ENOENT;
	mem = container_of(obj, struct krdma_buf, obj)->mem;
	if (check_add_overflow(usge->offset, (u64)usge->length, &end) ||
	    end > container_of(obj, struct krdma_buf, obj)->length)
		goto err_inval;
	offset = usge->offset;
	for (left = usge->length; left;) {
		size_t avail;
		void *kaddr = krdma_buf_mem_addr(mem, offset, &avail);
		u32 len = min_t(u64, left, avail);
		struct ib_sge *sge;

		if (*num_sges >= max_sges)
			goto err_inval;
		sge = &sges[(*num_sges)++];
		sge->addr = (uintptr_t)kaddr;
		sge->length = len;
		sge->lkey = 0;
		offset += len;
		left -= len;
	}
	*ref = obj;
	return 0;

err_inval:
	krdma_object_put(obj);
	return -EINVAL;
}
