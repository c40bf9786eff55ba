/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flow control of a connection's queues against its CQ (flow.c).
 */
#ifndef KRDMA_FLOW_H
#define KRDMA_FLOW_H

#include <linux/mutex.h>
#include <rdma/ib_verbs.h>

/**
 * struct krdma_flow - the WRs a queue holds until their completions are reaped
 * @lock: serialises posting with reaping, so that @signaled is in the send
 *	queue's order
 * @max_sends: send WRs that may be outstanding (the QP's max_send_wr)
 * @max_recvs: receive WRs that may be outstanding (max_recv_wr, or an SRQ's
 *	max_wr; 0 for a connection that receives from an SRQ)
 * @send_seq: send WRs posted
 * @retired_seq: send WRs known done: those up to the last signaled one reaped
 * @recvs: receives posted and not reaped
 * @signaled: ring of @max_sends entries: @send_seq after each signaled send
 *	not yet reaped, oldest at @head
 * @head: @signaled's oldest entry
 * @num_signaled: entries of @signaled in use
 * @errored: a completion failed: every WR still queued completes, flushed,
 *	each with a completion whose opcode the device need not set
 * @pending: once @errored, the completions that may still come, of both
 *	queues
 */
struct krdma_flow {
	struct mutex lock;	/* posting vs. reaping: the counts below */
	u32 max_sends;
	u32 max_recvs;
	u32 send_seq;
	u32 retired_seq;
	u32 recvs;
	u32 *signaled;
	u32 head;
	u32 num_signaled;
	bool errored;
	u32 pending;
};

int krdma_flow_init(struct krdma_flow *flow, u32 max_sends, u32 max_recvs);
void krdma_flow_destroy(struct krdma_flow *flow);
u32 krdma_flow_send_room(struct krdma_flow *flow, u32 n);
void krdma_flow_sent(struct krdma_flow *flow, const struct ib_send_wr *wr,
		     u32 n);
u32 krdma_flow_recv_room(struct krdma_flow *flow, u32 n);
void krdma_flow_received(struct krdma_flow *flow, u32 n);
u32 krdma_flow_reaped(struct krdma_flow *flow, const struct ib_wc *wc, int n,
		      bool srq);
void krdma_flow_srq_reaped(struct krdma_flow *flow, u32 n);
void krdma_flow_reset(struct krdma_flow *flow);

#endif /* KRDMA_FLOW_H */
