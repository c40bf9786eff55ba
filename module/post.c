// SPDX-License-Identifier: GPL-2.0
/*
 * KRDMA_POST: the caller's WRs become one ib_send_wr or ib_recv_wr chain,
 * refusing what the transport lacks before anything is posted; with
 * KRDMA_POST_POLL the same call then reaps the connection's CQ (poll.c).
 */
#include <linux/capability.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "ah.h"
#include "buf.h"
#include "conn.h"
#include "device.h"
#include "ioctl.h"
#include "krdma_compat.h"
#include "object.h"
#include "quirks.h"
#include "srq.h"
#include "trace.h"
#include "wr.h"

#define KRDMA_POST_ONE_SGES 2

/**
 * struct krdma_post_ctx - a KRDMA_POST being built
 * @conn: the connection posted to, or NULL
 * @srq: the SRQ posted to (receives only), or NULL
 * @kdev: the device of @conn or @srq
 * @send: the send chain (when posting sends)
 * @recv: the receive chain (when posting receives)
 * @sges: room for every WR's SGEs
 * @sges_per_wr: entries of @sges each WR has: the queue's max_sge
 * @refs: buffers and address handles the chain uses, referenced
 * @num_refs: entries of @refs
 * @num_wrs: WRs in the chain
 * @is_recv: the chain is receives
 * @one: room for a chain of one WR of up to %KRDMA_POST_ONE_SGES SGEs, the
 *	 common case, which then needs no allocation
 */
struct krdma_post_ctx {
	struct krdma_conn *conn;
	struct krdma_srq *srq;
	struct krdma_device *kdev;
	union krdma_send_wr *send;
	struct ib_recv_wr *recv;
	struct ib_sge *sges;
	unsigned int sges_per_wr;
	struct krdma_object **refs;
	unsigned int num_refs;
	u32 num_wrs;
	bool is_recv;
	struct {
		union {
			union krdma_send_wr send;
			struct ib_recv_wr recv;
		};
		struct ib_sge sges[2 * KRDMA_POST_ONE_SGES];
		struct krdma_object *refs[KRDMA_POST_ONE_SGES + 1];
	} one;
};

/* Opcodes each transport can post; anything else is -EOPNOTSUPP. */
static const u32 krdma_transport_ops[] = {
	[KRDMA_TRANSPORT_RC] = BIT(KRDMA_OP_SEND) | BIT(KRDMA_OP_SEND_WITH_IMM) |
			       BIT(KRDMA_OP_RECV) | BIT(KRDMA_OP_RDMA_WRITE) |
			       BIT(KRDMA_OP_RDMA_WRITE_WITH_IMM) |
			       BIT(KRDMA_OP_RDMA_READ) |
			       BIT(KRDMA_OP_ATOMIC_FETCH_ADD) |
			       BIT(KRDMA_OP_ATOMIC_CMP_SWP) |
			       BIT(KRDMA_OP_SEND_WITH_INV) |
			       BIT(KRDMA_OP_LOCAL_INV),
	/* the wire has SEND with invalidate for RC only (IBA 9.4.1.1) */
	[KRDMA_TRANSPORT_UC] = BIT(KRDMA_OP_SEND) | BIT(KRDMA_OP_SEND_WITH_IMM) |
			       BIT(KRDMA_OP_RECV) | BIT(KRDMA_OP_RDMA_WRITE) |
			       BIT(KRDMA_OP_RDMA_WRITE_WITH_IMM) |
			       BIT(KRDMA_OP_LOCAL_INV),
	[KRDMA_TRANSPORT_UD] = BIT(KRDMA_OP_SEND) | BIT(KRDMA_OP_SEND_WITH_IMM) |
			       BIT(KRDMA_OP_RECV),
};

/* Opcodes whose SGEs the device gathers a payload from, to send it. */
#define KRDMA_GATHER_OPS (BIT(KRDMA_OP_SEND) | BIT(KRDMA_OP_SEND_WITH_IMM) | \
			  BIT(KRDMA_OP_SEND_WITH_INV) |			\
			  BIT(KRDMA_OP_RDMA_WRITE) |			\
			  BIT(KRDMA_OP_RDMA_WRITE_WITH_IMM))
/* Opcodes whose payload may be inline: the ones that only send it. */
#define KRDMA_INLINE_OPS KRDMA_GATHER_OPS

/* The fields of &struct krdma_wr past its header an opcode reads. */
#define KRDMA_WRF_IMM		BIT(0)	/* imm_data */
#define KRDMA_WRF_REMOTE	BIT(1)	/* remote_addr, rkey */
#define KRDMA_WRF_ADD		BIT(2)	/* compare_add */
#define KRDMA_WRF_SWAP		BIT(3)	/* swap */
#define KRDMA_WRF_UD		BIT(4)	/* ah_handle, remote_qpn, remote_qkey */

static const u8 krdma_wr_fields[KRDMA_OP_MAX] = {
	[KRDMA_OP_SEND] = KRDMA_WRF_UD,
	[KRDMA_OP_SEND_WITH_IMM] = KRDMA_WRF_IMM | KRDMA_WRF_UD,
	[KRDMA_OP_RDMA_WRITE] = KRDMA_WRF_REMOTE,
	[KRDMA_OP_RDMA_WRITE_WITH_IMM] = KRDMA_WRF_IMM | KRDMA_WRF_REMOTE,
	[KRDMA_OP_RDMA_READ] = KRDMA_WRF_REMOTE,
	[KRDMA_OP_ATOMIC_FETCH_ADD] = KRDMA_WRF_REMOTE | KRDMA_WRF_ADD,
	[KRDMA_OP_ATOMIC_CMP_SWP] = KRDMA_WRF_REMOTE | KRDMA_WRF_ADD |
				    KRDMA_WRF_SWAP,
	[KRDMA_OP_SEND_WITH_INV] = KRDMA_WRF_IMM,
	[KRDMA_OP_LOCAL_INV] = KRDMA_WRF_IMM,
};

/*
 * Every field the WR's opcode does not read is 0, as the uAPI header
 * says: a value there is a caller's mistake (a WRITE's rkey on a SEND, an
 * address handle on RC), and may be given a meaning later.
 */
static bool krdma_wr_unused_zero(const struct krdma_post_ctx *ctx,
				 const struct krdma_wr *uwr)
{
	u8 used = krdma_wr_fields[uwr->opcode];

	if (!ctx->conn || ctx->conn->transport != KRDMA_TRANSPORT_UD)
		used &= ~KRDMA_WRF_UD;
	if (!(used & KRDMA_WRF_IMM) && uwr->imm_data)
		return false;
	if (!(used & KRDMA_WRF_REMOTE) && (uwr->remote_addr || uwr->rkey))
		return false;
	if (!(used & KRDMA_WRF_ADD) && uwr->compare_add)
		return false;
	if (!(used & KRDMA_WRF_SWAP) && uwr->swap)
		return false;
	return (used & KRDMA_WRF_UD) ||
	       !(uwr->ah_handle | uwr->remote_qpn | uwr->remote_qkey);
}

u64 krdma_supported_ops(void)
{
	return krdma_transport_ops[KRDMA_TRANSPORT_RC];
}

static void krdma_post_ctx_free(struct krdma_post_ctx *ctx)
{
	unsigned int i;

	for (i = 0; i < ctx->num_refs; i++)
		krdma_object_put(ctx->refs[i]);
	if (ctx->sges == ctx->one.sges)
		return;
	kvfree(ctx->send);
	kvfree(ctx->recv);
	kvfree(ctx->sges);
	kvfree(ctx->refs);
}

/* The most SGEs a WR of the chain may have: the queue's limit. */
static u32 krdma_post_max_sge(const struct krdma_post_ctx *ctx, bool is_recv)
{
	if (ctx->srq)
		return ctx->srq->max_sge;
	return is_recv ? ctx->conn->caps.max_recv_sge :
			 ctx->conn->caps.max_send_sge;
}

/*
 * Room for @num_wrs WRs, sized by the queue's SGE limit rather than
 * %KRDMA_MAX_SGE: the allocator zeroes what it hands out (init_on_alloc),
 * and 16 receives of one SGE would otherwise clear 11 KiB.
 */
static int krdma_post_ctx_alloc(struct krdma_post_ctx *ctx, u32 num_wrs,
				u32 num_sge)
{
	u32 max_sge = max(krdma_post_max_sge(ctx, ctx->is_recv), 1U);

	if (num_wrs == 1 && num_sge <= KRDMA_POST_ONE_SGES) {
		if (ctx->is_recv)
			ctx->recv = &ctx->one.recv;
		else
			ctx->send = &ctx->one.send;
		ctx->sges = ctx->one.sges;
		ctx->sges_per_wr = min_t(u32, max_sge,
					 ARRAY_SIZE(ctx->one.sges));
		ctx->refs = ctx->one.refs;
		return 0;
	}
	ctx->sges_per_wr = max_sge;
	if (ctx->is_recv)
		ctx->recv = kvcalloc(num_wrs, sizeof(*ctx->recv), GFP_KERNEL);
	else
		ctx->send = kvcalloc(num_wrs, sizeof(*ctx->send), GFP_KERNEL);
	ctx->sges = kvcalloc((size_t)num_wrs * ctx->sges_per_wr,
			     sizeof(*ctx->sges), GFP_KERNEL);
	/* each SGE's buffer, and a UD send's address handle */
	ctx->refs = kvcalloc((size_t)num_wrs * (max_sge + 1),
			     sizeof(*ctx->refs), GFP_KERNEL);
	if ((!ctx->recv && !ctx->send) || !ctx->sges || !ctx->refs)
		return -ENOMEM;
	return 0;
}

static bool krdma_is_recv(const struct krdma_wr *uwr)
{
	return uwr->opcode == KRDMA_OP_RECV;
}

static int krdma_check_target(const struct krdma_post_ctx *ctx,
			      const struct krdma_wr *uwr, bool is_recv)
{
	const struct krdma_conn *conn = ctx->conn;

	if (ctx->srq)
		return is_recv ? 0 : -EINVAL;
	/* a QP with an SRQ has no receive queue of its own */
	if (is_recv && conn->srq)
		return -EINVAL;
	if (!(krdma_transport_ops[conn->transport] & BIT(uwr->opcode)))
		return -EOPNOTSUPP;
	return 0;
}

static int krdma_check_wr(const struct krdma_post_ctx *ctx,
			  const struct krdma_wr *uwr, bool is_recv)
{
	u32 max_sge;
	int ret;

	if (uwr->opcode >= KRDMA_OP_MAX)
		return -EINVAL;
	/* one chain is all sends or all receives */
	if (is_recv ^ krdma_is_recv(uwr))
		return -EINVAL;
	ret = krdma_check_target(ctx, uwr, is_recv);
	if (ret)
		return ret;
	max_sge = krdma_post_max_sge(ctx, is_recv);
	if (uwr->flags & ~(KRDMA_WR_SIGNALED | KRDMA_WR_INLINE |
			   KRDMA_WR_FENCE | KRDMA_WR_SOLICITED))
		return -EOPNOTSUPP;
	if (is_recv && uwr->flags)
		return -EINVAL;
	if (uwr->num_sge > max_sge)
		return -EINVAL;
	if (uwr->opcode == KRDMA_OP_ATOMIC_FETCH_ADD ||
	    uwr->opcode == KRDMA_OP_ATOMIC_CMP_SWP) {
		if (uwr->num_sge != 1 || uwr->sge[0].length != sizeof(u64) ||
		    !IS_ALIGNED(uwr->remote_addr, sizeof(u64)))
			return -EINVAL;
		/* else the device would refuse it at post, mid-chain */
		if (ctx->kdev->ibdev->attrs.atomic_cap == IB_ATOMIC_NONE)
			return -EOPNOTSUPP;
	}
	if (uwr->opcode == KRDMA_OP_LOCAL_INV && uwr->num_sge)
		return -EINVAL;
	/* iWARP carries no immediate data (krdma_port_is_iwarp()) */
	if ((uwr->opcode == KRDMA_OP_SEND_WITH_IMM ||
	     uwr->opcode == KRDMA_OP_RDMA_WRITE_WITH_IMM) &&
	    krdma_port_is_iwarp(ctx->kdev, ctx->conn->port_num))
		return -EOPNOTSUPP;
	/* what a READ lands in: 0 is a driver that did not say */
	if (uwr->opcode == KRDMA_OP_RDMA_READ &&
	    ctx->kdev->ibdev->attrs.max_sge_rd &&
	    uwr->num_sge > ctx->kdev->ibdev->attrs.max_sge_rd)
		return -EINVAL;
	/* where it reaches every PD's keys, an administrator's power */
	if (uwr->opcode == KRDMA_OP_SEND_WITH_INV &&
	    krdma_device_inv_crosses_pd(ctx->kdev) && !capable(CAP_NET_ADMIN))
		return -EPERM;
	/* the device copies an inline payload at post: nothing lands there */
	if ((uwr->flags & KRDMA_WR_INLINE) &&
	    !(BIT(uwr->opcode) & KRDMA_INLINE_OPS))
		return -EINVAL;
	/* last: what the device or transport lacks is EOPNOTSUPP first */
	if (!krdma_wr_unused_zero(ctx, uwr))
		return -EINVAL;
	return 0;
}

/* The lock a POST holds (for read) while it builds and posts: its target's. */
static struct rw_semaphore *
krdma_post_target_lock(const struct krdma_post_ctx *ctx)
{
	return ctx->conn ? &ctx->conn->obj.hw_rwsem : &ctx->srq->obj.hw_rwsem;
}

/*
 * Keep a buffer or address handle the chain names until it is posted; one
 * of another device (its keys or AH mean nothing to this QP) is refused.
 */
static int krdma_post_hold(struct krdma_post_ctx *ctx, struct krdma_object *obj)
{
	ctx->num_refs++;	/* ctx->refs[] holds obj: released with ctx */
	return obj->kdev == ctx->kdev ? 0 : -EINVAL;
}

/*
 * Whether a device with %KRDMA_QUIRK_SEND_SGE_ORDER gathers @sge right
 * after @prev, the WR's last SGE before it that has bytes, whose MR's
 * first page-list entry ends at @prev_first_end: from a later place in
 * @prev's MR, or from anywhere after an SGE within that first entry.
 */
static bool krdma_sge_gathers_after(const struct ib_sge *prev,
				    u64 prev_first_end,
				    const struct ib_sge *sge)
{
	u64 prev_end = prev->addr + prev->length;

	if (sge->lkey == prev->lkey && sge->addr >= prev_end)
		return true;
	return prev_end <= prev_first_end;
}

/* Resolve the WR's SGEs into ctx->sges, taking buffer references. */
static int krdma_wr_sges(struct krdma_post_ctx *ctx, const struct krdma_wr *uwr,
			 struct ib_sge *sges, int *num_sge, u64 *total)
{
	struct krdma_session *session = ctx->conn ? ctx->conn->obj.session :
						    ctx->srq->obj.session;
	bool inline_data = uwr->flags & KRDMA_WR_INLINE;
	bool in_order = !inline_data &&
			(BIT(uwr->opcode) & KRDMA_GATHER_OPS) &&
			krdma_quirk(ctx->kdev->ibdev,
				    KRDMA_QUIRK_SEND_SGE_ORDER);
	const struct ib_sge *prev = NULL;
	u64 first_end = 0, prev_first_end = 0;
	unsigned int i;
	int n = 0, ret;

	lockdep_assert_held_read(krdma_post_target_lock(ctx));
	*total = 0;
	for (i = 0; i < uwr->num_sge; i++) {
		struct krdma_object **ref = &ctx->refs[ctx->num_refs];

		/*
		 * An inline SGE split where a chunk ends takes two of the
		 * device's: more than the queue's max_sge in all is refused
		 * here, as the device would refuse it.
		 */
		if (inline_data)
			ret = krdma_buf_inline_sges(session, &uwr->sge[i],
						    sges, ctx->sges_per_wr,
						    &n, ref);
		else
			ret = krdma_buf_sge(session, &uwr->sge[i], &sges[n++],
					    ref, &first_end);
		if (ret)
			return ret;
		ret = krdma_post_hold(ctx, *ref);
		if (ret)
			return ret;
		*total += uwr->sge[i].length;
		if (!in_order)
			continue;
		/* siw would dereference what it never looked up for it */
		if (!uwr->sge[i].length) {
			n--;
			continue;
		}
		if (prev && !krdma_sge_gathers_after(prev, prev_first_end,
						     &sges[n - 1]))
			return -EINVAL;
		prev = &sges[n - 1];
		prev_first_end = first_end;
	}
	*num_sge = n;
	return 0;
}

static int krdma_build_ud(struct krdma_post_ctx *ctx,
			  const struct krdma_wr *uwr, union krdma_send_wr *wr,
			  u64 total)
{
	struct krdma_conn *conn = ctx->conn;
	u32 qkey = uwr->remote_qkey ?: conn->qkey;
	struct krdma_object *ah_obj;
	struct ib_ah *cm_ah, *ah;
	int ret;

	if (total > ib_mtu_enum_to_int(conn->active_mtu))
		return -EMSGSIZE;
	if (uwr->remote_qpn & ~KRDMA_QPN_MASK)
		return -EINVAL;
	/* pairs with the cmpxchg_release() of the CM handler or a bench run */
	cm_ah = smp_load_acquire(&conn->ud_ah);
	if (!uwr->ah_handle && cm_ah) {
		/* the connection's peer, unless the WR names another */
		krdma_wr_set_ud(wr, cm_ah, uwr->remote_qpn ?:
				READ_ONCE(conn->dest_qp_num), qkey);
		return 0;
	}
	ret = krdma_ah_get(conn->obj.session, uwr->ah_handle, &ah, &ah_obj);
	if (ret)
		return ret;
	ctx->refs[ctx->num_refs] = ah_obj;
	ret = krdma_post_hold(ctx, ah_obj);
	if (ret)
		return ret;
	krdma_wr_set_ud(wr, ah, uwr->remote_qpn, qkey);
	return 0;
}

/* LOCAL_INV: only a key of this session's own buffers. */
static int krdma_build_local_inv(struct krdma_post_ctx *ctx,
				 const struct krdma_wr *uwr)
{
	struct krdma_object **ref = &ctx->refs[ctx->num_refs];
	int ret;

	ret = krdma_buf_find_key(ctx->conn->obj.kpd, uwr->imm_data, ref);
	if (ret)
		return ret;
	return krdma_post_hold(ctx, *ref);
}

static int krdma_build_send(struct krdma_post_ctx *ctx, unsigned int i,
			    const struct krdma_wr *uwr)
{
	const struct krdma_wr_args args = {
		.remote_addr = uwr->remote_addr,
		.compare_add = uwr->compare_add,
		.swap = uwr->swap,
		.rkey = uwr->rkey,
		.imm = uwr->imm_data,
	};
	union krdma_send_wr *swr = &ctx->send[i];
	struct ib_send_wr *wr = &swr->send;
	u64 total;
	int ret;

	wr->sg_list = &ctx->sges[(size_t)i * ctx->sges_per_wr];
	ret = krdma_wr_sges(ctx, uwr, wr->sg_list, &wr->num_sge, &total);
	if (ret)
		return ret;
	if ((uwr->flags & KRDMA_WR_INLINE) &&
	    total > ctx->conn->caps.max_inline_data)
		return -EINVAL;
	if (uwr->opcode == KRDMA_OP_LOCAL_INV) {
		ret = krdma_build_local_inv(ctx, uwr);
		if (ret)
			return ret;
	}
	wr->wr_id = uwr->wr_id;
	wr->send_flags = (uwr->flags & KRDMA_WR_SIGNALED ? IB_SEND_SIGNALED : 0) |
			 (uwr->flags & KRDMA_WR_INLINE ? IB_SEND_INLINE : 0) |
			 (uwr->flags & KRDMA_WR_FENCE ? IB_SEND_FENCE : 0) |
			 (uwr->flags & KRDMA_WR_SOLICITED ? IB_SEND_SOLICITED : 0);
	krdma_wr_set_op(swr, uwr->opcode, &args);
	if (i)
		ctx->send[i - 1].send.next = wr;
	if (ctx->conn->transport == KRDMA_TRANSPORT_UD)
		return krdma_build_ud(ctx, uwr, swr, total);
	return 0;
}

static int krdma_build_recv(struct krdma_post_ctx *ctx, unsigned int i,
			    const struct krdma_wr *uwr)
{
	struct ib_recv_wr *wr = &ctx->recv[i];
	u64 total;

	wr->wr_id = uwr->wr_id;
	wr->sg_list = &ctx->sges[(size_t)i * ctx->sges_per_wr];
	if (i)
		ctx->recv[i - 1].next = wr;
	return krdma_wr_sges(ctx, uwr, wr->sg_list, &wr->num_sge, &total);
}

/*
 * WR @i of the caller's array, as copy_struct_from_user() would read it but
 * for the SGEs past its num_sge, which nothing looks at: the header and a
 * one-SGE list are 88 of the 448 bytes, and a user copy is a string copy
 * (rep movsb), byte by byte under emulation (TCG), ~1 us here per WR.
 */
static int krdma_read_wr(const struct krdma_post *cmd, u32 i,
			 struct krdma_wr *uwr)
{
	/* the header and one SGE, then the others if it has more */
	const size_t first = offsetof(struct krdma_wr, sge[1]);
	void __user *src = u64_to_user_ptr(cmd->wrs_uptr) +
			   (size_t)i * cmd->wr_entry_size;
	u32 more;
	int ret;

	if (copy_from_user(uwr, src, first))
		return -EFAULT;
	more = min_t(u32, uwr->num_sge, KRDMA_MAX_SGE);
	if (more > 1 && copy_from_user(&uwr->sge[1], src + first,
				       (more - 1) * sizeof(uwr->sge[0])))
		return -EFAULT;
	/* wr_entry_size >= sizeof(*uwr): a newer caller's tail must be 0 */
	if (cmd->wr_entry_size == sizeof(*uwr))
		return 0;
	ret = check_zeroed_user(src + sizeof(*uwr),
				cmd->wr_entry_size - sizeof(*uwr));
	if (ret < 0)
		return ret;
	return ret ? 0 : -E2BIG;
}

static int krdma_post_build(struct krdma_post_ctx *ctx,
			    struct krdma_post *cmd, u32 *bad_index)
{
	struct krdma_wr uwr;
	u32 i;
	int ret;

	lockdep_assert_held_read(krdma_post_target_lock(ctx));
	for (i = 0; i < cmd->num_wrs; i++) {
		*bad_index = i;
		ret = krdma_read_wr(cmd, i, &uwr);
		if (ret)
			return ret;
		if (!i)
			ctx->is_recv = krdma_is_recv(&uwr);
		if (!i && krdma_post_ctx_alloc(ctx, cmd->num_wrs, uwr.num_sge))
			return -ENOMEM;
		ret = krdma_check_wr(ctx, &uwr, ctx->is_recv);
		if (ret)
			return ret;
		ret = ctx->is_recv ? krdma_build_recv(ctx, i, &uwr) :
				     krdma_build_send(ctx, i, &uwr);
		if (ret)
			return ret;
	}
	return 0;
}

static u32 krdma_post_index(const struct krdma_post_ctx *ctx,
			    const void *bad_wr)
{
	if (!bad_wr)
		return 0;
	if (ctx->is_recv)
		return (const struct ib_recv_wr *)bad_wr - ctx->recv;
	return (const union krdma_send_wr *)bad_wr - ctx->send;
}

/* The connection, or the SRQ, a POST names; its hw lock held for read. */
static int krdma_post_target(struct krdma_session *session, u32 handle,
			     struct krdma_post_ctx *ctx, u32 *max_wrs)
{
	int ret;

	ret = krdma_conn_get_io_locked(session, handle, &ctx->conn);
	if (!ret) {
		ctx->kdev = ctx->conn->obj.kdev;
		*max_wrs = max(ctx->conn->caps.max_send_wr,
			       ctx->conn->caps.max_recv_wr);
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	ret = krdma_srq_get_locked(session, handle, &ctx->srq);
	if (ret)
		return ret;
	ctx->kdev = ctx->srq->obj.kdev;
	*max_wrs = ctx->srq->max_wr;
	return 0;
}

static void krdma_post_target_put(struct krdma_post_ctx *ctx)
{
	struct krdma_object *obj = ctx->conn ? &ctx->conn->obj :
					       &ctx->srq->obj;

	krdma_object_unlock_hw(obj);
	krdma_object_put(obj);
}

/* The chain posted, for krdma:krdma_post: its WRs and their bytes. */
static void krdma_post_trace(const struct krdma_post_ctx *ctx, int ret)
{
	const struct ib_send_wr *s = ctx->srq || ctx->is_recv ? NULL :
				     &ctx->send[0].send;
	const struct ib_recv_wr *r = s ? NULL : ctx->recv;
	u32 handle = ctx->conn ? ctx->conn->obj.handle : ctx->srq->obj.handle;
	u32 qpn = ctx->conn ? ctx->conn->qp->qp_num : 0;
	int opcode = s ? s->opcode : -1;
	u64 bytes = 0;
	u32 n = 0;
	int i;

	for (; s; s = s->next, n++)
		for (i = 0; i < s->num_sge; i++)
			bytes += s->sg_list[i].length;
	for (; r; r = r->next, n++)
		for (i = 0; i < r->num_sge; i++)
			bytes += r->sg_list[i].length;
	trace_krdma_post(handle, qpn, opcode, n, bytes, ret);
}

/* The queue's flow control (flow.c): the connection's, or the SRQ's. */
static struct krdma_flow *krdma_post_flow(struct krdma_post_ctx *ctx)
{
	return ctx->conn ? &ctx->conn->flow : &ctx->srq->flow;
}

/*
 * Cut the chain after its first @n WRs (@n > 0): the queue has room for no
 * more until completions are reaped.
 */
static void krdma_post_cut(struct krdma_post_ctx *ctx, u32 n)
{
	if (ctx->srq || ctx->is_recv)
		ctx->recv[n - 1].next = NULL;
	else
		ctx->send[n - 1].send.next = NULL;
}

/* Hand the chain, or the part flow control lets go, to the queue. */
static int krdma_post_queue(struct krdma_post_ctx *ctx, u32 room,
			    u32 *bad_index)
{
	const struct ib_send_wr *bad_send = NULL;
	const struct ib_recv_wr *bad_recv = NULL;
	int ret;

	*bad_index = 0;
	if (!room)
		return -ENOMEM;		/* as a full queue says it */
	if (room < ctx->num_wrs)
		krdma_post_cut(ctx, room);
	if (ctx->srq) {
		ret = ib_post_srq_recv(ctx->srq->srq, ctx->recv, &bad_recv);
		*bad_index = krdma_post_index(ctx, bad_recv);
	} else if (ctx->is_recv) {
		ret = ib_post_recv(ctx->conn->qp, ctx->recv, &bad_recv);
		*bad_index = krdma_post_index(ctx, bad_recv);
	} else {
		ret = krdma_post_send(ctx->conn->qp, &ctx->send[0].send,
				      &bad_send);
		*bad_index = krdma_post_index(ctx, bad_send);
	}
	if (!ret && room < ctx->num_wrs) {
		*bad_index = room;
		ret = -ENOMEM;
	}
	return ret;
}

/*
 * Post under the queue's flow lock, so that what flow control counts is
 * what the queue holds, in its order.
 */
static int krdma_post_wrs(struct krdma_post_ctx *ctx, u32 *bad_index)
{
	struct krdma_flow *flow = krdma_post_flow(ctx);
	bool recv = ctx->srq || ctx->is_recv;
	u32 room, went;
	int ret;

	lockdep_assert_held_read(krdma_post_target_lock(ctx));
	mutex_lock(&flow->lock);
	room = recv ? krdma_flow_recv_room(flow, ctx->num_wrs) :
		      krdma_flow_send_room(flow, ctx->num_wrs);
	ret = krdma_post_queue(ctx, room, bad_index);
	went = ret ? *bad_index : ctx->num_wrs;
	if (recv)
		krdma_flow_received(flow, went);
	else
		krdma_flow_sent(flow, &ctx->send[0].send, went);
	mutex_unlock(&flow->lock);
	/* an SRQ's receives are no connection's until one consumes them */
	if (ctx->conn)
		krdma_conn_count_posted(ctx->conn, went);
	if (trace_krdma_post_enabled())
		krdma_post_trace(ctx, ret);
	return ret;
}

/*
 * Post the chain built.  A UD send's address handles were looked up with
 * no lock held (the WRs came from user memory meanwhile): the session's
 * ah_post_rwsem, held across the post, keeps their ib_ah, and what was
 * destroyed since is refused here, as at the lookup (nothing is posted).
 */
static int krdma_post_chain(struct krdma_session *session,
			    struct krdma_post_ctx *ctx, u32 *bad_index)
{
	bool ud = ctx->conn && ctx->conn->transport == KRDMA_TRANSPORT_UD &&
		  !ctx->is_recv;
	unsigned int i;
	int ret = 0;

	lockdep_assert_held_read(krdma_post_target_lock(ctx));
	if (ud) {
		down_read(&session->ah_post_rwsem);
		for (i = 0; i < ctx->num_refs && !ret; i++)
			ret = krdma_object_hw_alive(ctx->refs[i]);
	}
	if (!ret)
		ret = krdma_post_wrs(ctx, bad_index);
	else
		*bad_index = 0;		/* none went */
	if (ud)
		up_read(&session->ah_post_rwsem);
	return ret;
}

/* Both halves of a POST are checked before anything is posted. */
static int krdma_post_check(const struct krdma_post *cmd)
{
	if (cmd->flags & ~KRDMA_POST_POLL)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->__reserved2)
		return -EINVAL;
	if (!krdma_entry_size_ok(cmd->wr_entry_size, sizeof(struct krdma_wr)) ||
	    !cmd->num_wrs)
		return -EINVAL;
	if (cmd->flags & KRDMA_POST_POLL)
		return !cmd->num_wcs ||
		       !krdma_entry_size_ok(cmd->wc_entry_size,
					    sizeof(struct krdma_wc)) ? -EINVAL : 0;
	return cmd->num_wcs || cmd->wc_entry_size || cmd->timeout_ms ||
	       cmd->wcs_uptr ? -EINVAL : 0;
}

/* KRDMA_POST_POLL: all posted, now reap; the target's lock and ref go. */
static int krdma_post_poll(struct krdma_ucmd *ucmd, struct krdma_post_ctx *ctx)
{
	struct krdma_post *cmd = ucmd->cmd;
	const struct krdma_poll poll = {
		.handle = cmd->handle,
		.num_wcs = cmd->num_wcs,
		.wc_entry_size = cmd->wc_entry_size,
		.timeout_ms = cmd->timeout_ms,
		.wcs_uptr = cmd->wcs_uptr,
	};
	int ret;

	krdma_post_ctx_free(ctx);
	ret = krdma_poll_put(ctx->conn, &poll);
	/*
	 * A signal, or a BENCH run taking the connection, ends the wait as
	 * the timeout would: the WRs went, and EINTR or EBUSY would have the
	 * caller post them again.
	 */
	if (ret == -EINTR || ret == -EBUSY)
		ret = 0;
	if (ret < 0)
		return ret;
	cmd->num_wcs = ret;
	return krdma_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * A read of WR @i faulted with page faults off: fault WRs @i on in, with
 * nothing held, for the build to start again.  -EFAULT if WR @i itself
 * cannot be read (a hole further on shows when the build gets there);
 * -EINTR on a signal, nothing posted: a caller whose pages keep going
 * (MADV_DONTNEED from another thread) is not retried forever.
 */
static int krdma_post_fault_in(const struct krdma_post *cmd, u32 i)
{
	size_t len = (size_t)(cmd->num_wrs - i) * cmd->wr_entry_size;
	const char __user *src = u64_to_user_ptr(cmd->wrs_uptr) +
				 (size_t)i * cmd->wr_entry_size;

	if (signal_pending(current))
		return -EINTR;
	return fault_in_readable(src, len) > len - cmd->wr_entry_size ?
	       -EFAULT : 0;
}

int krdma_post(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_post *cmd = ucmd->cmd;
	struct krdma_post_ctx ctx;
	u32 bad_index, max_wrs;
	int ret;

	ret = krdma_post_check(cmd);
again:
	memset(&ctx, 0, sizeof(ctx));
	bad_index = 0;
	if (!ret)
		ret = krdma_post_target(session, cmd->handle, &ctx, &max_wrs);
	if (ret)
		goto answer;
	if (cmd->num_wrs > max_wrs ||
	    (cmd->flags & KRDMA_POST_POLL && !ctx.conn)) {
		ret = -EINVAL;
		goto out;
	}
	ctx.num_wrs = cmd->num_wrs;
	/*
	 * The WRs are read under the target's hw lock, which DESTROY and
	 * removal wait for: with page faults off, so that a page that takes
	 * long to come (a FUSE mapping's can take forever) is waited for with
	 * nothing held, and the build starts again.
	 */
	pagefault_disable();
	ret = krdma_post_build(&ctx, cmd, &bad_index);
	pagefault_enable();
	if (ret == -EFAULT) {
		krdma_post_target_put(&ctx);
		krdma_post_ctx_free(&ctx);
		ret = krdma_post_fault_in(cmd, bad_index);
		if (!ret) {
			cond_resched();
			goto again;
		}
		goto answer;
	}
	if (!ret)
		ret = krdma_post_chain(session, &ctx, &bad_index);
	if (!ret && cmd->flags & KRDMA_POST_POLL)
		return krdma_post_poll(ucmd, &ctx);
out:
	krdma_post_target_put(&ctx);
	krdma_post_ctx_free(&ctx);
	if (!ret)
		return 0;
answer:
	/*
	 * On an error num_wrs says how many went (0 when a check failed); the
	 * rest were not posted.  When all went the struct is unchanged, and
	 * a write-back that faults must not report posted work as failed.
	 */
	cmd->num_wrs = bad_index;
	krdma_ucmd_respond(ucmd, sizeof(*cmd));
	return ret;
}
