// SPDX-License-Identifier: GPL-2.0
/*
 * Flow control of a connection's queues against its CQ.
 *
 * A device frees a queue slot when its WR completes, not when the
 * completion is polled: a caller that posts as fast as the queues take
 * WRs and never polls would overrun the CQ, sized to hold both queues
 * (conn.c).  So a WR here counts against its queue until its completion is
 * reaped, as a verbs application counts its own.  A send posted without
 * IB_SEND_SIGNALED has no completion: it is known done when a later
 * signaled send's completion is reaped (a send queue completes in order),
 * which @signaled records.  Once a completion has failed, the QP flushes
 * everything: from then each WR counts once against both queues together,
 * since a flushed completion need not say which queue it came from.
 */
#include <linux/lockdep.h>
#include <linux/slab.h>

#include "flow.h"

int krdma_flow_init(struct krdma_flow *flow, u32 max_sends, u32 max_recvs)
{
	memset(flow, 0, sizeof(*flow));
	mutex_init(&flow->lock);
	flow->max_sends = max_sends;
	flow->max_recvs = max_recvs;
	if (!max_sends)
		return 0;
	flow->signaled = kvmalloc_array(max_sends, sizeof(*flow->signaled),
					GFP_KERNEL_ACCOUNT);
	return flow->signaled ? 0 : -ENOMEM;
}

void krdma_flow_destroy(struct krdma_flow *flow)
{
	kvfree(flow->signaled);
	flow->signaled = NULL;
	mutex_destroy(&flow->lock);
}

/* Of @n WRs, how many fit when @used of @max are taken. */
static u32 krdma_flow_fit(u32 used, u32 max, u32 n)
{
	return used >= max ? 0 : min(n, max - used);
}

/* Of a chain of @n sends, how many may go now; the lock held. */
u32 krdma_flow_send_room(struct krdma_flow *flow, u32 n)
{
	lockdep_assert_held(&flow->lock);
	if (flow->errored)
		return krdma_flow_fit(flow->pending,
				      flow->max_sends + flow->max_recvs, n);
	return krdma_flow_fit(flow->send_seq - flow->retired_seq,
			      flow->max_sends, n);
}

/*
 * The first failed completion (or a ring that lost track): from now on each
 * WR counts once against both queues until a completion comes for it; the
 * unsignaled sends already done are never given back (the QP is dead).
 */
static void krdma_flow_error(struct krdma_flow *flow)
{
	flow->errored = true;
	flow->pending = flow->send_seq - flow->retired_seq + flow->recvs;
	flow->num_signaled = 0;
}

/* The first @n sends of chain @wr went to the QP; the lock held. */
void krdma_flow_sent(struct krdma_flow *flow, const struct ib_send_wr *wr,
		     u32 n)
{
	lockdep_assert_held(&flow->lock);
	if (flow->errored) {
		flow->pending += n;
		return;
	}
	for (; n && wr; n--, wr = wr->next) {
		u32 tail;

		flow->send_seq++;
		if (!(wr->send_flags & IB_SEND_SIGNALED))
			continue;
		/*
		 * POST keeps at most max_sends outstanding; a bench run keeps
		 * its own count, past WRs a POST may have left.  Should the
		 * ring still be full, counting goes on as after an error,
		 * which never gives back a place early.
		 */
		if (flow->num_signaled == flow->max_sends) {
			krdma_flow_error(flow);	/* counts this one */
			flow->pending += n - 1;
			return;
		}
		tail = (flow->head + flow->num_signaled) % flow->max_sends;
		flow->signaled[tail] = flow->send_seq;
		flow->num_signaled++;
	}
}

/* Of a chain of @n receives, how many may go now; the lock held. */
u32 krdma_flow_recv_room(struct krdma_flow *flow, u32 n)
{
	lockdep_assert_held(&flow->lock);
	if (flow->errored)
		return krdma_flow_fit(flow->pending,
				      flow->max_sends + flow->max_recvs, n);
	return krdma_flow_fit(flow->recvs, flow->max_recvs, n);
}

/* @n receives went; the lock held. */
void krdma_flow_received(struct krdma_flow *flow, u32 n)
{
	lockdep_assert_held(&flow->lock);
	if (flow->errored)
		flow->pending += n;
	else
		flow->recvs += n;
}

/* A signaled send completed: it and every send before it are done. */
static void krdma_flow_retire(struct krdma_flow *flow)
{
	if (!flow->num_signaled)
		return;
	flow->retired_seq = flow->signaled[flow->head];
	flow->head = (flow->head + 1) % flow->max_sends;
	flow->num_signaled--;
}

/*
 * @n completions were reaped from the connection's CQ; @srq: it receives
 * from an SRQ.  Returns how many were the SRQ's receives, for
 * krdma_flow_srq_reaped().  Takes the lock.
 */
u32 krdma_flow_reaped(struct krdma_flow *flow, const struct ib_wc *wc, int n,
		      bool srq)
{
	u32 srq_recvs = 0;
	int i;

	mutex_lock(&flow->lock);
	for (i = 0; i < n; i++) {
		/* a failed completion's opcode is undefined */
		bool recv = wc[i].status == IB_WC_SUCCESS &&
			    (wc[i].opcode & IB_WC_RECV);

		if (wc[i].status != IB_WC_SUCCESS) {
			if (!flow->errored)
				krdma_flow_error(flow);
			/* the SRQ's only once none of ours can be left */
			if (flow->pending)
				flow->pending--;
			else if (srq)
				srq_recvs++;
		} else if (recv && srq) {
			srq_recvs++;
		} else if (flow->errored) {
			flow->pending -= !!flow->pending;
		} else if (recv) {
			flow->recvs -= !!flow->recvs;
		} else {
			krdma_flow_retire(flow);
		}
	}
	mutex_unlock(&flow->lock);
	return srq_recvs;
}

/* @n of an SRQ's receives were reaped, on some connection. */
void krdma_flow_srq_reaped(struct krdma_flow *flow, u32 n)
{
	mutex_lock(&flow->lock);
	flow->recvs -= min(n, flow->recvs);
	mutex_unlock(&flow->lock);
}

/* The QP went back to RESET, which drops what its queues held. */
void krdma_flow_reset(struct krdma_flow *flow)
{
	mutex_lock(&flow->lock);
	flow->retired_seq = flow->send_seq;
	flow->recvs = 0;
	flow->head = 0;
	flow->num_signaled = 0;
	flow->errored = false;
	flow->pending = 0;
	mutex_unlock(&flow->lock);
}
