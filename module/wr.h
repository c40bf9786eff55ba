/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data path every work request and completion takes, whoever posts
 * it (KRDMA_POST in post.c, a KRDMA_BENCH run in bench.c) and whoever
 * reaps it (KRDMA_POLL in poll.c, the run): one send WR layout, one way to
 * fill in what an opcode asks of the peer, one post, one reaper.
 */
#ifndef KRDMA_WR_H
#define KRDMA_WR_H

#include <linux/bottom_half.h>
#include <rdma/ib_verbs.h>

#include "krdma.h"

struct krdma_conn;
struct krdma_poll;

/* One send WR of any opcode; the ib_*_wr types all start with ib_send_wr. */
union krdma_send_wr {
	struct ib_send_wr send;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_ud_wr ud;
};

/* The verbs opcode of each krdma one (KRDMA_OP_RECV has none). */
extern const enum ib_wr_opcode krdma_ib_opcode[KRDMA_OP_MAX];

/**
 * struct krdma_wr_args - what a send WR's opcode asks of the peer
 * @remote_addr: RDMA and atomics: where, in the peer's buffer
 * @compare_add: atomics: the addend, or the value compared
 * @swap: compare-and-swap: the value stored
 * @rkey: RDMA and atomics: the peer's key
 * @imm: the immediate data (host order) of the _WITH_IMM opcodes; the key
 *	SEND_WITH_INV and LOCAL_INV invalidate
 */
struct krdma_wr_args {
	u64 remote_addr;
	u64 compare_add;
	u64 swap;
	u32 rkey;
	u32 imm;
};

/*
 * Fill in @wr's opcode, KRDMA_OP_* @op, and what it asks of the peer; the
 * rest (wr_id, SGEs, flags, a UD address) is the caller's.
 */
static inline void krdma_wr_set_op(union krdma_send_wr *wr, u32 op,
				   const struct krdma_wr_args *a)
{
	wr->send.opcode = krdma_ib_opcode[op];
	switch (op) {
	case KRDMA_OP_SEND_WITH_IMM:
		wr->send.ex.imm_data = cpu_to_be32(a->imm);
		return;
	case KRDMA_OP_RDMA_WRITE_WITH_IMM:
		wr->send.ex.imm_data = cpu_to_be32(a->imm);
		fallthrough;
	case KRDMA_OP_RDMA_WRITE:
	case KRDMA_OP_RDMA_READ:
		wr->rdma.remote_addr = a->remote_addr;
		wr->rdma.rkey = a->rkey;
		return;
	case KRDMA_OP_ATOMIC_FETCH_ADD:
	case KRDMA_OP_ATOMIC_CMP_SWP:
		wr->atomic.remote_addr = a->remote_addr;
		wr->atomic.rkey = a->rkey;
		wr->atomic.compare_add = a->compare_add;
		wr->atomic.swap = a->swap;
		return;
	case KRDMA_OP_SEND_WITH_INV:
	case KRDMA_OP_LOCAL_INV:
		wr->send.ex.invalidate_rkey = a->imm;
		return;
	default:
		return;
	}
}

/* UD: where @wr goes. */
static inline void krdma_wr_set_ud(union krdma_send_wr *wr, struct ib_ah *ah,
				   u32 remote_qpn, u32 remote_qkey)
{
	wr->ud.ah = ah;
	wr->ud.remote_qpn = remote_qpn;
	wr->ud.remote_qkey = remote_qkey;
}

/*
 * Run the softirqs pending on this CPU now: a software device (rxe) does a
 * post's send and receive work in tasklets the post raised, which would
 * otherwise wait for the next interrupt or for ksoftirqd, as a user QP's
 * post does not (it runs its requester in the caller's context).
 */
static inline void krdma_run_softirqs(void)
{
	local_bh_disable();
	local_bh_enable();
}

/*
 * ib_post_send() with bottom halves off.  A software device (rxe) raises its
 * requester's tasklet from the post, and a softirq raised in process context
 * wakes ksoftirqd (raise_softirq_irqoff()): a wakeup and two context switches
 * per post, measured at ~0.7 per round trip of a ping-pong.  Raised with
 * bottom halves off, it runs at local_bh_enable(), in the caller's context,
 * as a user QP's post runs its requester.  Elsewhere it is harmless and
 * costs two preempt count updates: hardware raises no softirq from a post,
 * and siw hands a kernel QP's work to its TX kthread (siw_sq_start()).
 */
static inline int krdma_post_send(struct ib_qp *qp,
				  const struct ib_send_wr *wr,
				  const struct ib_send_wr **bad_wr)
{
	int ret;

	local_bh_disable();
	ret = ib_post_send(qp, wr, bad_wr);
	local_bh_enable();
	return ret;
}

int krdma_conn_reap(struct krdma_conn *conn, struct ib_wc *wc, int n);

/* post.c: what KRDMA_POST takes */
u64 krdma_supported_ops(void);

/* poll.c: KRDMA_POLL on a connection looked up for I/O (KRDMA_POST_POLL) */
int krdma_poll_put(struct krdma_conn *conn, const struct krdma_poll *cmd);

#endif /* KRDMA_WR_H */
