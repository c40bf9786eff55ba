/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Buffers, shared by kernel buffers (buf.c) and zero-copy user buffers
 * (ubuf.c): the memory, its DMA mapping and its fast-registered MR.
 */
#ifndef KRDMA_BUF_H
#define KRDMA_BUF_H

#include <linux/kref.h>
#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>

#include "account.h"
#include "object.h"

struct krdma_device;
struct krdma_pd;
struct mm_struct;
struct vm_area_struct;

#define KRDMA_BUF_MAX_CHUNK_ORDER 10	/* 4 MiB chunks at most */

/**
 * struct krdma_buf_mem - a buffer's pages, shared with its mappings
 * @kref: the buffer's reference plus one per VMA mapping it
 * @chunks: the chunks, each 2^@chunk_order physically contiguous pages
 *	(one MR page each); a user buffer's first and last may hold pages
 *	before and after its own, which it never addresses
 * @num_chunks: entries of @chunks
 * @chunks_per_mr: chunks one MR maps (the last MR may map fewer)
 * @pinned: user buffers: the pages, in order, pinned
 * @num_pinned: user buffers: entries of @pinned pinned so far
 * @num_charged: pages charged to @mm (RLIMIT_MEMLOCK)
 * @chunk_order: page order of each chunk
 * @first_offset: where the buffer starts in the first chunk
 * @user: pinned user pages (else pages the module allocated)
 * @writable: user pages pinned for writing: dirty them on unpin
 * @mm: the mm charged for the pages, grabbed
 */
struct krdma_buf_mem {
	struct kref kref;
	struct page **chunks;
	unsigned int num_chunks;
	unsigned int chunks_per_mr;
	struct page **pinned;
	unsigned int num_pinned;
	unsigned long num_charged;
	unsigned int chunk_order;
	unsigned int first_offset;
	bool user;
	bool writable;
	struct mm_struct *mm;
};

/**
 * struct krdma_buf_mr - one fast-registered MR of a buffer
 * @sgt: the chunks it maps, DMA mapped while @mapped
 * @mapped: @sgt is DMA mapped
 * @mr: the MR
 * @key: @mr's key as registered (lkey and rkey alike); never changes, so
 *	it may be read under the session's xarray lock alone
 * @keyed: @key is in the PD's buf_keys
 * @rdmacg: the hca_object an MR after the first is charged as (the first
 *	is the buffer object's own)
 */
struct krdma_buf_mr {
	struct sg_table sgt;
	bool mapped;
	struct ib_mr *mr;
	u32 key;
	bool keyed;
	struct krdma_rdmacg_charge rdmacg;
};

/**
 * struct krdma_buf - a buffer object
 * @obj: the handle; @obj.hw_rwsem protects the MRs and their DMA mappings
 * @mem: the pages
 * @length: the length the user asked for
 * @access: &enum krdma_access
 * @mrs: the MRs, in order: MR i maps @mem's chunks from
 *	i * @mem->chunks_per_mr on, at the iova where they start in the
 *	buffer (MR 0 from the buffer's first byte, @mem->first_offset): the
 *	buffer's iovas run on across its MRs
 * @num_mrs: entries of @mrs, one unless a user buffer needs more
 */
struct krdma_buf {
	struct krdma_object obj;
	struct krdma_buf_mem *mem;
	u64 length;
	u32 access;
	struct krdma_buf_mr *mrs;
	unsigned int num_mrs;
};

extern const struct krdma_object_ops krdma_buf_ops;

size_t krdma_chunk_size(const struct krdma_buf_mem *mem);
bool krdma_mr_fits(const struct krdma_device *kdev, u64 pages,
		   unsigned int order);
u64 krdma_mr_max_pages(const struct krdma_device *kdev, unsigned int order);
u64 krdma_buf_max_length(const struct krdma_device *kdev);
unsigned int krdma_buf_mem_mrs(const struct krdma_buf_mem *mem);
u64 krdma_buf_mr_length(const struct krdma_buf_mem *mem);
void *krdma_buf_mem_addr(const struct krdma_buf_mem *mem, u64 offset,
			 size_t *avail);
void krdma_buf_mem_put(struct krdma_buf_mem *mem);
int krdma_buf_map(struct krdma_buf *buf);
/**
 * struct krdma_buf_keys - what a new buffer's creator hands back
 * @obj: the buffer, referenced for krdma_object_respond()
 * @handle: the buffer's handle
 * @lkey: local key
 * @rkey: remote key, 0 without remote access
 * @addr: the address peers use with @rkey
 */
struct krdma_buf_keys {
	struct krdma_object *obj;
	u32 handle;
	u32 lkey;
	u32 rkey;
	u64 addr;
};

typedef struct krdma_buf_mem *(*krdma_buf_mem_ctor)(struct krdma_device *kdev,
						    u64 length,
						    void *arg);

int krdma_buf_create(struct krdma_session *session, u32 dev_index,
		     u64 length, u32 access, krdma_buf_mem_ctor make_mem,
		     void *arg, struct krdma_buf_keys *keys);

int krdma_access_to_ib(u32 access);
int krdma_check_access(u32 access);
int krdma_buf_sge(struct krdma_session *session, const struct krdma_sge *usge,
		  struct ib_sge *sge, struct krdma_object **ref, u64 *first_end);
int krdma_buf_inline_sges(struct krdma_session *session,
			  const struct krdma_sge *usge, struct ib_sge *sges,
			  int max_sges, int *num_sges, struct krdma_object **ref);
int krdma_buf_mmap(struct krdma_session *session, struct vm_area_struct *vma);
int krdma_buf_find_key(struct krdma_pd *kpd, u32 key,
		       struct krdma_object **ref);

#endif /* KRDMA_BUF_H */
