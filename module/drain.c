// SPDX-License-Identifier: GPL-2.0
/*
 * Draining a connection's QP before it, its CQ and the buffers its WRs
 * name go.  ib_drain_qp() waits for marker WRs whose completions call back
 * through wr_cqe, which a CQ polled for wr_ids (every krdma CQ) cannot
 * give; this is the same wait, polling.  In the error state the QP flushes
 * each WR it holds, and a WR posted after them completes after them: once
 * the markers' completions are reaped the device is done with the
 * connection's WRs.  A QP that never left RESET holds none.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>

#include "conn.h"
#include "srq.h"
#include "trace.h"
#include "wr.h"

/* How long a device may take to flush a QP before krdma says so. */
#define KRDMA_DRAIN_MS 2000
#define KRDMA_DRAIN_BATCH 16

/**
 * struct krdma_drain - a drain in progress
 * @conn: the connection drained
 * @marker: the send marker's wr_id; the receive's is one more.  The
 *	connection's address, which no caller's wr_id can know to collide
 * @pending: markers posted whose completions have not come
 * @flushed: the caller's completions reaped meanwhile
 * @wc: room to reap into
 */
struct krdma_drain {
	struct krdma_conn *conn;
	u64 marker;
	unsigned int pending;
	u32 flushed;
	struct ib_wc wc[KRDMA_DRAIN_BATCH];
};

/* Zero-length: nothing is read or written, on any transport that has it. */
static void krdma_drain_post_send(struct krdma_drain *d, struct ib_qp *qp)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = d->marker,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};

	/*
	 * UD has no WRITE, and a SEND would need an address: its sends are
	 * flushed with no marker, found by an empty CQ after the receive's.
	 */
	if (d->conn->transport == KRDMA_TRANSPORT_UD)
		return;
	if (!krdma_post_send(qp, &wr.wr, NULL))
		d->pending++;
}

static void krdma_drain_post_recv(struct krdma_drain *d, struct ib_qp *qp)
{
	struct ib_recv_wr wr = { .wr_id = d->marker + 1 };

	/* an SRQ's receives are not flushed with the QP */
	if (d->conn->srq)
		return;
	if (!ib_post_recv(qp, &wr, NULL))
		d->pending++;
}

/*
 * Reap what the CQ has; whether it had anything.  An SRQ's receive that
 * completed here gives its place back to the SRQ (flow.c).
 */
static bool krdma_drain_reap(struct krdma_drain *d)
{
	struct krdma_conn *conn = d->conn;
	u32 srq_recvs = 0;
	int got, i;

	got = ib_poll_cq(conn->cq, KRDMA_DRAIN_BATCH, d->wc);
	for (i = 0; i < got; i++) {
		if (d->wc[i].wr_id - d->marker <= 1) {
			d->pending--;
			continue;
		}
		trace_krdma_completion(conn->obj.handle, &d->wc[i]);
		d->flushed++;
		srq_recvs += conn->srq && d->wc[i].status == IB_WC_SUCCESS &&
			     (d->wc[i].opcode & IB_WC_RECV);
	}
	if (srq_recvs)
		krdma_flow_srq_reaped(&conn->srq->flow, srq_recvs);
	return got > 0;
}

/*
 * Move @qp to the error state and reap until the markers' completions
 * came and the CQ is empty.  A device that does not flush in
 * KRDMA_DRAIN_MS is logged, and the QP destroyed anyway, as the verbs
 * allow.  Hw lock held for write: no one else polls.
 */
void krdma_conn_drain(struct krdma_conn *conn, struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned long deadline = jiffies + msecs_to_jiffies(KRDMA_DRAIN_MS);
	struct krdma_drain *d;
	int ret = 0;

	krdma_object_assert_hw_write(&conn->obj);
	if (ib_modify_qp(qp, &attr, IB_QP_STATE))
		return;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return;		/* the verbs still allow the destroy */
	d->conn = conn;
	d->marker = (uintptr_t)conn;
	krdma_drain_post_send(d, qp);
	krdma_drain_post_recv(d, qp);
	while (krdma_drain_reap(d) || d->pending) {
		if (time_after(jiffies, deadline)) {
			ret = -ETIMEDOUT;
			ibdev_warn_ratelimited(qp->device,
					       "krdma: connection %u qpn %u not flushed in %u ms\n",
					       conn->obj.handle, qp->qp_num,
					       KRDMA_DRAIN_MS);
			break;
		}
		if (d->pending)
			usleep_range(50, 200);
	}
	trace_krdma_conn_drain(conn, d->flushed, ret);
	kfree(d);
}
