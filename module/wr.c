// SPDX-License-Identifier: GPL-2.0
/*
 * The data path's shared half (wr.h): the opcode table, and the reaper
 * every completion of a connection's CQ goes through, for KRDMA_POLL and a
 * KRDMA_BENCH run alike.
 */
#include <linux/lockdep.h>

#include "conn.h"
#include "srq.h"
#include "trace.h"
#include "wr.h"

const enum ib_wr_opcode krdma_ib_opcode[KRDMA_OP_MAX] = {
	[KRDMA_OP_SEND] = IB_WR_SEND,
	[KRDMA_OP_SEND_WITH_IMM] = IB_WR_SEND_WITH_IMM,
	[KRDMA_OP_RDMA_WRITE] = IB_WR_RDMA_WRITE,
	[KRDMA_OP_RDMA_WRITE_WITH_IMM] = IB_WR_RDMA_WRITE_WITH_IMM,
	[KRDMA_OP_RDMA_READ] = IB_WR_RDMA_READ,
	[KRDMA_OP_ATOMIC_FETCH_ADD] = IB_WR_ATOMIC_FETCH_AND_ADD,
	[KRDMA_OP_ATOMIC_CMP_SWP] = IB_WR_ATOMIC_CMP_AND_SWP,
	[KRDMA_OP_SEND_WITH_INV] = IB_WR_SEND_WITH_INV,
	[KRDMA_OP_LOCAL_INV] = IB_WR_LOCAL_INV,
};

/*
 * Up to @n completions of @conn's CQ into @wc; how many, or -errno.  What
 * every completion tells the connection is noted here, whoever reaps it:
 * a failure that is not a flush is the QP's error (its status kept for
 * KRDMA_CONN_QUERY, the session told once), and a receive means the peer
 * is there, which rdma_cm may not know yet (krdma_cm_comm_est()).  Hw
 * lock held.
 */
int krdma_conn_reap(struct krdma_conn *conn, struct ib_wc *wc, int n)
{
	bool received = false;
	u32 srq_recvs;
	int got, i;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	got = ib_poll_cq(conn->cq, n, wc);
	if (got <= 0)
		return got;
	atomic64_add(got, &conn->wcs_reaped);
	srq_recvs = krdma_flow_reaped(&conn->flow, wc, got, conn->srq);
	if (srq_recvs)
		krdma_flow_srq_reaped(&conn->srq->flow, srq_recvs);
	for (i = 0; i < got; i++) {
		trace_krdma_completion(conn->obj.handle, &wc[i]);
		if (wc[i].status == IB_WC_SUCCESS) {
			received |= !!(wc[i].opcode & IB_WC_RECV);
			continue;
		}
		if (wc[i].status != IB_WC_WR_FLUSH_ERR) {
			WRITE_ONCE(conn->last_wc_status, wc[i].status);
			krdma_conn_error(conn, conn->cq->device,
					 wc[i].status);
		}
	}
	if (received || test_bit(KRDMA_CONN_COMM_EST, &conn->state))
		krdma_cm_comm_est(conn);
	return got;
}
