// SPDX-License-Identifier: GPL-2.0
/*
 * KRDMA_POLL: a connection's completions to the caller, busy-polling or
 * sleeping on the CQ's notification as the connection was created; they
 * leave the CQ through the data path's reaper (wr.c).
 */
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "ioctl.h"
#include "object.h"
#include "wr.h"

#define KRDMA_POLL_BATCH 16

static u32 krdma_wc_opcode(enum ib_wc_opcode opcode)
{
	switch (opcode) {
	case IB_WC_SEND:
		return KRDMA_OP_SEND;
	case IB_WC_RDMA_WRITE:
		return KRDMA_OP_RDMA_WRITE;
	case IB_WC_RDMA_READ:
		return KRDMA_OP_RDMA_READ;
	case IB_WC_COMP_SWAP:
		return KRDMA_OP_ATOMIC_CMP_SWP;
	case IB_WC_FETCH_ADD:
		return KRDMA_OP_ATOMIC_FETCH_ADD;
	case IB_WC_RECV_RDMA_WITH_IMM:
		return KRDMA_OP_RDMA_WRITE_WITH_IMM;
	case IB_WC_LOCAL_INV:
		return KRDMA_OP_LOCAL_INV;
	default:
		return KRDMA_OP_RECV;
	}
}

static void krdma_wc_to_user(const struct ib_wc *wc, struct krdma_wc *uwc)
{
	memset(uwc, 0, sizeof(*uwc));
	uwc->wr_id = wc->wr_id;
	uwc->status = wc->status;
	uwc->opcode = krdma_wc_opcode(wc->opcode);
	uwc->byte_len = wc->byte_len;
	if (wc->wc_flags & IB_WC_WITH_IMM)
		uwc->imm_data = be32_to_cpu(wc->ex.imm_data);
	else if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		uwc->imm_data = wc->ex.invalidate_rkey;
	uwc->src_qp = wc->src_qp;
	uwc->wc_flags = (wc->wc_flags & IB_WC_GRH ? KRDMA_WC_GRH : 0) |
			(wc->wc_flags & IB_WC_WITH_IMM ? KRDMA_WC_WITH_IMM : 0) |
			(wc->wc_flags & IB_WC_WITH_INVALIDATE ?
			 KRDMA_WC_WITH_INVALIDATE : 0);
	uwc->vendor_err = wc->vendor_err;
}

/*
 * Copy completion @uwc out, as entry @done of @cmd's array.  Under the
 * connection's hw lock page faults are off: a fault is served with the
 * lock dropped, for DESTROY and removal wait for it and a page can take
 * forever to come (a FUSE mapping's).  *@unlocked: the lock could not be
 * taken back (the connection or its device went) and is not held.
 */
static int krdma_poll_copy(struct krdma_conn *conn,
			   const struct krdma_poll *cmd, u32 done,
			   const struct krdma_wc *uwc, bool *unlocked)
{
	u64 uptr = cmd->wcs_uptr + (u64)done * cmd->wc_entry_size;
	int ret;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	pagefault_disable();
	ret = krdma_copy_entries(uptr, cmd->wc_entry_size, uwc, sizeof(*uwc),
				 1);
	pagefault_enable();
	if (!ret)
		return 0;
	krdma_object_unlock_hw(&conn->obj);
	ret = krdma_copy_entries(uptr, cmd->wc_entry_size, uwc, sizeof(*uwc),
				 1);
	*unlocked = krdma_object_lock_hw(&conn->obj) != 0;
	return ret;
}

/*
 * Move up to cmd->num_wcs completions to the caller, by way of @wc (room
 * for %KRDMA_POLL_BATCH); returns how many (see krdma_poll_copy() for
 * @unlocked).
 */
static int krdma_poll_cq(struct krdma_conn *conn, const struct krdma_poll *cmd,
			 struct ib_wc *wc, u32 done, bool *unlocked)
{
	struct krdma_wc uwc;
	int want, n, i, ret;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	/* (a BENCH run may take the connection while a copy drops the lock) */
	while (done < cmd->num_wcs &&
	       !test_bit(KRDMA_CONN_BENCH, &conn->state)) {
		want = min_t(u32, cmd->num_wcs - done, KRDMA_POLL_BATCH);
		n = krdma_conn_reap(conn, wc, want);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			krdma_wc_to_user(&wc[i], &uwc);
			ret = krdma_poll_copy(conn, cmd, done, &uwc, unlocked);
			if (ret)
				return ret;
			done++;
			/* gone with the lock: the rest of the batch with it */
			if (*unlocked)
				return done;
		}
		/*
		 * A short batch emptied the CQ: one more look would be a lock
		 * round trip between a ping-pong's reply and its next ping.
		 */
		if (n < want)
			break;
	}
	return done;
}

/*
 * Interrupt-driven mode: the CQ is drained, so re-arm it; a completion that
 * slipped in before the arm shows up as a missed event.
 */
static void krdma_conn_rearm(struct krdma_conn *conn)
{
	struct krdma_session *session = conn->obj.session;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (test_and_clear_bit(KRDMA_CONN_CQ_READY, &conn->state))
		atomic_dec(&session->ready_conns);
	if (ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0 &&
	    !test_and_set_bit(KRDMA_CONN_CQ_READY, &conn->state))
		atomic_inc(&session->ready_conns);
}

static bool krdma_conn_woken(struct krdma_conn *conn)
{
	return test_bit(KRDMA_CONN_CQ_READY, &conn->state) ||
	       READ_ONCE(conn->obj.hw_dead);
}

/* A busy-polled CQ between two looks: a software device's work first. */
static void krdma_poll_yield(void)
{
	krdma_run_softirqs();
	cond_resched();
}

/*
 * Wait for a completion without holding the connection's hw lock, so that
 * device removal never waits for a sleeper.
 */
static int krdma_poll_wait(struct krdma_conn *conn, unsigned long deadline)
{
	struct krdma_object *obj = &conn->obj;
	long left = (long)(deadline - jiffies);
	int ret = 0;

	lockdep_assert_held_read(&obj->hw_rwsem);
	if (left <= 0)
		return -ETIMEDOUT;
	krdma_object_unlock_hw(obj);
	if (conn->notify)
		left = wait_event_interruptible_timeout(obj->session->wait,
							krdma_conn_woken(conn),
							left);
	else if (signal_pending(current))
		left = -ERESTARTSYS;
	else
		krdma_poll_yield();
	if (left < 0)
		ret = -EINTR;
	/* dead (-ENODEV, or -ENOENT if destroyed): the lock is not held */
	return krdma_object_lock_hw(obj) ?: ret;
}

/*
 * Poll @conn as @cmd says: completions into its array, waiting up to its
 * timeout for the first; returns how many, or -errno.  Takes over the
 * caller's reference and hw lock on @conn and drops them.
 */
int krdma_poll_put(struct krdma_conn *conn, const struct krdma_poll *cmd)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(cmd->timeout_ms);
	/* here, not per look: a stack this size is cleared on each entry */
	struct ib_wc wc[KRDMA_POLL_BATCH];
	bool unlocked = false;
	int ret = 0, done = 0;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	for (;;) {
		done = krdma_poll_cq(conn, cmd, wc, done, &unlocked);
		if (unlocked) {
			/* the lock is not held: put the object alone */
			krdma_object_put(&conn->obj);
			return done;
		}
		if (done < 0 || done == cmd->num_wcs)
			break;
		if (conn->notify)
			krdma_conn_rearm(conn);
		if (done || !cmd->timeout_ms)
			break;
		ret = krdma_poll_wait(conn, deadline);
		if (ret == -ENODEV || ret == -ENOENT) {
			/* the lock is not held: put the object alone */
			krdma_object_put(&conn->obj);
			return ret;
		}
		if (ret == -ETIMEDOUT) {
			ret = 0;
			break;
		}
		/* a BENCH run took the connection while the lock was dropped */
		if (!ret && test_bit(KRDMA_CONN_BENCH, &conn->state))
			ret = -EBUSY;
		if (ret)
			break;
	}
	krdma_conn_unlock_put(conn);
	/* (a wait that failed found nothing: done is 0 then) */
	return done ?: ret;
}

int krdma_poll(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_poll *cmd = ucmd->cmd;
	struct krdma_conn *conn;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (!cmd->num_wcs ||
	    !krdma_entry_size_ok(cmd->wc_entry_size, sizeof(struct krdma_wc)))
		return -EINVAL;
	ret = krdma_conn_get_io_locked(session, cmd->handle, &conn);
	if (ret)
		return ret;
	ret = krdma_poll_put(conn, cmd);
	if (ret < 0)
		return ret;
	cmd->num_wcs = ret;
	return krdma_ucmd_respond(ucmd, sizeof(*cmd));
}
