// SPDX-License-Identifier: GPL-2.0
/*
 * KRDMA_BENCH: a benchmark loop in the kernel.  One ioctl runs a whole
 * measurement over connections the session owns: it builds the WR chains
 * once, posts them as room frees up, polls each connection's CQ directly
 * with ib_poll_cq() (or sleeps on its notification) and keeps the figures,
 * with no system call per operation.
 *
 * With %KRDMA_BENCH_PER_CPU the connections are shared out among threads,
 * the caller's and one kernel thread bound to each other online CPU, each
 * running the same loop over its own connections (each has its own CQ):
 * a software device such as rxe does a connection's work on the CPU that
 * posts to it and polls it, so one loop is one CPU's worth.
 *
 * Locking: the run holds a reference on every connection and on the buffer
 * for its whole length, but takes a connection's hw lock only around one
 * poll-and-post step, so DESTROY and device removal never wait for a run:
 * the next step sees the object dead and the run ends with -ENODEV.  The
 * buffer's memory (used to check payloads and as the source of inline
 * data) lives as long as the reference; a WR still naming the buffer's keys
 * after its MR is gone fails instead of touching freed memory.
 */
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "bench.h"
#include "buf.h"
#include "conn.h"
#include "device.h"
#include "ioctl.h"
#include "object.h"
#include "trace.h"
#include "wr.h"

static bool krdma_bench_is_send(u32 opcode)
{
	return opcode == KRDMA_OP_SEND || opcode == KRDMA_OP_SEND_WITH_IMM;
}

static bool krdma_bench_is_atomic(u32 opcode)
{
	return opcode == KRDMA_OP_ATOMIC_FETCH_ADD ||
	       opcode == KRDMA_OP_ATOMIC_CMP_SWP;
}

/* Opcodes a transport can run. */
static bool krdma_bench_transport_ok(u32 transport, u32 opcode)
{
	switch (transport) {
	case KRDMA_TRANSPORT_RC:
		return true;
	case KRDMA_TRANSPORT_UC:
		return opcode != KRDMA_OP_RDMA_READ &&
		       !krdma_bench_is_atomic(opcode);
	case KRDMA_TRANSPORT_UD:
		return krdma_bench_is_send(opcode);
	default:
		return false;
	}
}

/* Does the @len-byte message at @offset carry the pattern? */
static bool krdma_bench_check(struct krdma_buf *buf, u64 offset, u32 len)
{
	u64 i = 0;

	while (i < len) {
		size_t avail, n, j;
		u8 *p = krdma_buf_mem_addr(buf->mem, offset + i, &avail);

		n = min_t(u64, avail, len - i);
		for (j = 0; j < n; j++)
			if (p[j] != krdma_bench_pattern(i + j))
				return false;
		i += n;
	}
	return true;
}

/* Copy @len bytes at @offset of the buffer to @dst. */
static void krdma_bench_copy_out(struct krdma_buf *buf, u64 offset, void *dst,
				 u32 len)
{
	u32 i = 0;

	while (i < len) {
		size_t avail, n;
		u8 *p = krdma_buf_mem_addr(buf->mem, offset + i, &avail);

		n = min_t(u64, avail, len - i);
		memcpy((u8 *)dst + i, p, n);
		i += n;
	}
}

static void krdma_bench_validate(struct krdma_bench_run *run,
				 struct krdma_bench_conn *bc, u64 slot, u32 len)
{
	if (!krdma_bench_check(run->buf, slot * run->cmd->msg_size, len)) {
		run->cmd->validate_errors++;
		bc->validate_errors++;
	}
}

void krdma_bench_progress(struct krdma_bench_run *run, u64 now)
{
	struct krdma_bench_progress p = {};
	struct krdma_bench_progress __user *up;

	if (!run->cmd->progress_uptr ||
	    now < run->last_progress_ns + NSEC_PER_SEC)
		return;
	up = u64_to_user_ptr(run->cmd->progress_uptr);
	run->last_progress_ns = now;
	if (get_user(p.updates, &up->updates))
		return;
	spin_lock(&run->shared->lock);
	p.ops_done = run->shared->ops;
	p.bytes_done = run->shared->bytes;
	p.elapsed_ns = run->shared->start_ns && now > run->shared->start_ns ?
		       now - run->shared->start_ns : 0;
	spin_unlock(&run->shared->lock);
	p.updates++;
	/* a caller that unmapped it just sees no progress */
	if (copy_to_user(up, &p, sizeof(p)))
		run->cmd->progress_uptr = 0;
}

/* The first post (a server: the first message); the first peak window. */
static void krdma_bench_start(struct krdma_bench_run *run, u64 now)
{
	struct krdma_bench_shared *sh = run->shared;

	run->start_ns = now;
	run->last_event_ns = now;
	spin_lock(&sh->lock);
	if (!sh->window_ns)
		sh->window_ns = now;
	if (!sh->start_ns || now < sh->start_ns)
		sh->start_ns = now;
	sh->last_event_ns = max(sh->last_event_ns, now);
	spin_unlock(&sh->lock);
}

/* Nothing completed on any connection of the run for timeout_ms? */
static bool krdma_bench_idle(struct krdma_bench_run *run, u64 now)
{
	struct krdma_bench_shared *sh = run->shared;
	u64 last;

	spin_lock(&sh->lock);
	last = max(run->last_event_ns, sh->last_event_ns);
	spin_unlock(&sh->lock);
	/* a hello or an end message, which the figures do not count */
	last = max(last, run->last_control_ns);
	return now > last + run->timeout_ns;
}

/*
 * @n more operations of @bytes bytes in all are done.  The run's own
 * counters move now; the shared ones, under their lock, once the step has
 * posted what these completions let it post (krdma_bench_publish()): a
 * ping-pong's next message does not wait for the bookkeeping.
 */
static void krdma_bench_account(struct krdma_bench_run *run,
				struct krdma_bench_conn *bc, u64 n, u64 bytes,
				u64 now)
{
	if (!run->start_ns)
		krdma_bench_start(run, now);
	bc->ops += n;
	bc->bytes += bytes;
	run->ops += n;
	run->bytes += bytes;
	run->last_event_ns = now;
	run->unpublished_ops += n;
	run->unpublished_bytes += bytes;
}

/* Add to @run->shared what krdma_bench_account() counted since last time. */
static void krdma_bench_publish(struct krdma_bench_run *run)
{
	struct krdma_bench_shared *sh = run->shared;
	u64 now = run->last_event_ns;

	if (!run->unpublished_ops)
		return;
	spin_lock(&sh->lock);
	sh->ops += run->unpublished_ops;
	sh->bytes += run->unpublished_bytes;
	sh->last_event_ns = max(sh->last_event_ns, now);
	/* another CPU's clock may be a little behind the window's start */
	if (now >= sh->window_ns + KRDMA_BENCH_PEAK_WINDOW_NS) {
		u64 bps = mul_u64_u64_div_u64(sh->bytes - sh->window_bytes,
					      NSEC_PER_SEC,
					      now - sh->window_ns);

		sh->peak_bps = max(sh->peak_bps, bps);
		sh->window_ns = now;
		sh->window_bytes = sh->bytes;
	}
	spin_unlock(&sh->lock);
	run->unpublished_ops = 0;
	run->unpublished_bytes = 0;
}

static void krdma_bench_sample(struct krdma_bench_run *run, u64 ns)
{
	if (run->num_samples < run->max_samples)
		run->samples[run->num_samples++] = ns;
}

/* Bytes of one operation, as the figures count them. */
static u32 krdma_bench_op_bytes(struct krdma_bench_run *run)
{
	return krdma_bench_is_atomic(run->cmd->opcode) ? sizeof(u64) :
							 run->cmd->msg_size;
}

/* End this thread's loop, and every other thread's: the first @err wins. */
void krdma_bench_stop(struct krdma_bench_run *run, int err)
{
	if (!run->err)
		run->err = err;
	run->phase = KRDMA_BENCH_CLOSE;
	cmpxchg(&run->shared->err, 0, err);
}

/*
 * A failed completion on @bc: the run reports the first real failure and
 * its connection together, or the first flushed connection if none.
 */
static void krdma_bench_wc_failed(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc, u32 status)
{
	struct krdma_bench_shared *sh = run->shared;

	spin_lock(&sh->lock);
	if (status != IB_WC_WR_FLUSH_ERR && !sh->wc_status) {
		sh->wc_status = status;
		sh->failed_conn = bc->conn->obj.handle;
	} else if (!sh->failed_conn) {
		sh->failed_conn = bc->conn->obj.handle;
	}
	spin_unlock(&sh->lock);
	krdma_bench_stop(run, -EIO);
}

/* ---- completions ---- */

static void krdma_bench_send_done(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc,
				  const struct ib_wc *wc, u64 now)
{
	u64 count = wc->wr_id & ~KRDMA_BENCH_SEND_WRID;
	u64 n = count - bc->completed;

	bc->completed = count;
	/* a server's replies, a ping-pong's pings: the receives count */
	if (run->server || run->pingpong)
		return;
	if (run->validate && run->opcode == KRDMA_OP_RDMA_READ) {
		u64 k;

		for (k = bc->completed - n; k < bc->completed; k++)
			krdma_bench_validate(run, bc, k % run->nslots,
					     run->cmd->msg_size);
	}
	krdma_bench_account(run, bc, n, n * krdma_bench_op_bytes(run), now);
	if (run->latency && !run->pingpong) {
		krdma_bench_sample(run, now - run->t0);
		bc->waiting = false;
	}
}

/* UD: where @bc's receives put their GRH. */
static u64 krdma_bench_grh_off(const struct krdma_bench_run *run,
			       const struct krdma_bench_conn *bc)
{
	return run->grh_off + (u64)bc->index * KRDMA_GRH_LEN;
}

/* A receive's payload length: on UD, the GRH in front is not payload. */
static u32 krdma_bench_recv_len(const struct krdma_bench_run *run,
				const struct ib_wc *wc)
{
	if (!run->ud)
		return wc->byte_len;
	return wc->byte_len > KRDMA_GRH_LEN ? wc->byte_len - KRDMA_GRH_LEN : 0;
}

/*
 * UD server without a peer the CM resolved (an accepted connection): the
 * sender of the first hello is the client, and replies go there.  Keep
 * that hello's completion and GRH (which its receive put in the
 * connection's GRH area, where the receives completed with it in the
 * batch put theirs: the client's hellos, as it sends nothing else before
 * the answer, and every message of one sender carries the same
 * addresses) for krdma_bench_make_peer(), after the step.
 */
static void krdma_bench_note_peer(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc,
				  const struct ib_wc *wc)
{
	if (bc->ah || bc->peer_pending)
		return;
	bc->peer_wc = *wc;
	krdma_bench_copy_out(run->buf, krdma_bench_grh_off(run, bc),
			     &bc->peer_grh, sizeof(bc->peer_grh));
	bc->peer_pending = true;
}

/*
 * The address handle of the peer krdma_bench_note_peer() kept, made
 * outside the connection's hw lock: resolving a RoCE peer's MAC may sleep
 * for up to a second, and DESTROY does not wait for a run.  The device's
 * usage lock holds off removal meanwhile, as in KRDMA_AH_CREATE, so the
 * PD stays.  The handle becomes the connection's, as if the CM had
 * resolved it: the connection's teardown (DESTROY, device removal)
 * destroys it with the QP, before the PD.  One the CM resolved meanwhile
 * wins.
 */
static int krdma_bench_make_peer(struct krdma_bench_conn *bc)
{
	struct krdma_conn *conn = bc->conn;
	struct krdma_device *kdev;
	struct ib_ah *ah;
	int ret;

	bc->peer_pending = false;
	ret = krdma_device_enter(conn->obj.session, conn->obj.kdev->id,
				 &kdev);
	if (ret)
		return ret;
	if (conn->obj.kpd->dead) {
		ret = -ENODEV;
		goto out;
	}
	ah = ib_create_ah_from_wc(conn->obj.kpd->pd, &bc->peer_wc,
				  &bc->peer_grh, conn->port_num);
	if (IS_ERR(ah)) {
		ret = -EHOSTUNREACH;
		goto out;
	}
	if (krdma_object_lock_hw(&conn->obj)) {
		/* destroyed meanwhile: dead, as at the next step */
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ret = -ENODEV;
		goto out;
	}
	/*
	 * The QP number before the handle, as the CM handler does: a post's
	 * smp_load_acquire() of the handle pairs with the release.  Only the
	 * CM of a connect still going on could have set them meanwhile.
	 */
	if (!conn->ud_ah)
		WRITE_ONCE(conn->dest_qp_num, bc->peer_wc.src_qp);
	if (cmpxchg_release(&conn->ud_ah, NULL, ah))
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	bc->ah = conn->ud_ah;
	bc->dest_qpn = READ_ONCE(conn->dest_qp_num);
	krdma_object_unlock_hw(&conn->obj);
out:
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return ret;
}

/* A control message (ready, end) rather than a payload? */
static bool krdma_bench_is_imm(const struct ib_wc *wc, u32 imm)
{
	return (wc->wc_flags & IB_WC_WITH_IMM) &&
	       be32_to_cpu(wc->ex.imm_data) == imm;
}

/* Credits: the end message is a zero-length SEND (a payload never is). */
static bool krdma_bench_is_credits_end(const struct krdma_bench_run *run,
				       const struct ib_wc *wc)
{
	return run->credits && run->server && wc->opcode == IB_WC_RECV &&
	       !wc->byte_len;
}

/*
 * Does a server wait for the client's hello before it says it is ready?
 * Over UC and UD, which drop a message that finds no receive: a READY sent
 * unasked may come before the client has posted the receive for it.
 */
static bool krdma_bench_waits_hello(const struct krdma_bench_conn *bc)
{
	return bc->conn->transport != KRDMA_TRANSPORT_RC;
}

/*
 * UC, UD: a hello.  The server answers each that comes before the first
 * payload: the client repeats it until an answer arrives, and an answer
 * too may be lost.  A ping-pong client may see a late answer in a receive
 * it posted for a reply: it posts that receive again.
 */
static void krdma_bench_hello(struct krdma_bench_run *run,
			      struct krdma_bench_conn *bc)
{
	if (!run->server) {
		bc->recv_posted--;
		return;
	}
	bc->recv_other++;
	if (!bc->ops)
		bc->ready = false;
	bc->hello = true;
}

static void krdma_bench_recv_done(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc,
				  const struct ib_wc *wc, u64 now)
{
	u64 slot = wc->wr_id & ~KRDMA_BENCH_RECV_WRID;
	u32 len = krdma_bench_recv_len(run, wc);

	if (krdma_bench_waits_hello(bc) &&
	    krdma_bench_is_imm(wc, KRDMA_BENCH_READY_IMM)) {
		run->last_control_ns = now;
		if (run->ud && run->server)
			krdma_bench_note_peer(run, bc, wc);
		krdma_bench_hello(run, bc);
		return;
	}
	if (krdma_bench_is_imm(wc, KRDMA_BENCH_END_IMM) ||
	    krdma_bench_is_credits_end(run, wc)) {
		run->last_control_ns = now;
		bc->recv_other++;
		bc->done = true;
		bc->ended = true;
		/* UC, UD: a repeat, its answer lost: answer again */
		if (krdma_bench_waits_hello(bc))
			bc->reported = false;
		return;
	}
	/* UC, UD: a server done with @iters keeps receives for end messages */
	if (run->server && bc->done) {
		bc->recv_other++;
		return;
	}
	if (run->validate && wc->opcode == IB_WC_RECV)
		krdma_bench_validate(run, bc, slot, len);
	if (!run->server) {	/* the ping-pong reply */
		krdma_bench_sample(run, (now - run->t0) / 2);
		krdma_bench_account(run, bc, 1, run->cmd->msg_size, now);
		bc->waiting = false;
		return;
	}
	krdma_bench_account(run, bc, 1, wc->opcode == IB_WC_RECV ? len :
			    run->cmd->msg_size, now);
	if (run->cmd->iters && bc->ops >= run->cmd->iters)
		bc->done = true;
	if (run->pingpong) {
		bc->echo[(bc->echo_head + bc->echo_count) % run->depth] =
			(slot << 32) | len;
		bc->echo_count++;
	}
}

/*
 * A completion of a WR this run posted?  Send WRs carry the count of the
 * connection's sends, and complete in order; receives carry a slot of the
 * buffer, and a RECV's length says how much of it to check.  Anything else
 * (a WR posted before the run) ends the run: its wr_id and length index
 * nothing of the run's.
 */
static bool krdma_bench_wc_ours(struct krdma_bench_run *run,
				struct krdma_bench_conn *bc,
				const struct ib_wc *wc)
{
	u64 slot = wc->wr_id & ~KRDMA_BENCH_RECV_WRID;
	u64 count = wc->wr_id & ~KRDMA_BENCH_SEND_WRID;

	if (!(wc->wr_id & KRDMA_BENCH_RECV_WRID))
		return (wc->wr_id & KRDMA_BENCH_SEND_WRID) &&
		       count > bc->completed && count <= bc->posted;
	/* a client posts receives for a ping-pong's replies only */
	if (!run->server && !run->pingpong)
		return false;
	if (wc->status != IB_WC_SUCCESS)
		return true;
	/* (a WRITE_WITH_IMM's length is the WRITE's, not the receive's) */
	return (run->server ? slot < run->nslots : slot == 0) &&
	       (wc->opcode != IB_WC_RECV ||
		krdma_bench_recv_len(run, wc) <= run->cmd->msg_size);
}

/*
 * A server that has sent its report has nothing left to learn on @bc: the
 * client may leave as soon as the report arrives, before its ACK does (a
 * responder delivers before it acknowledges), and its disconnect flushes
 * the report and any receive still posted, or the report's retries run
 * out.  The report is the last send (@bc->posted); a flush, or the
 * report's own failure, says nothing of the run the report ended, and
 * the send counts as complete.  An earlier send's real failure still
 * fails the run.
 */
static bool krdma_bench_wc_after_report(const struct krdma_bench_run *run,
					struct krdma_bench_conn *bc,
					const struct ib_wc *wc)
{
	bool send = !(wc->wr_id & KRDMA_BENCH_RECV_WRID);
	u64 count = wc->wr_id & ~KRDMA_BENCH_SEND_WRID;

	if (!run->server || !bc->reported)
		return false;
	if (wc->status != IB_WC_WR_FLUSH_ERR && !(send && count == bc->posted))
		return false;
	if (send)
		bc->completed = count;
	return true;
}

/* Poll @bc's CQ once; returns how many completions it had. */
static int krdma_bench_poll(struct krdma_bench_run *run,
			    struct krdma_bench_conn *bc)
{
	struct ib_wc *wc = run->wc;
	int n, i;
	u64 now;

	n = krdma_conn_reap(bc->conn, wc, KRDMA_BENCH_POLL_BATCH);
	run->cmd->cq_polls++;
	if (n <= 0) {
		run->cmd->empty_polls++;
		return 0;
	}
	now = krdma_bench_now();
	for (i = 0; i < n; i++) {
		if (!krdma_bench_wc_ours(run, bc, &wc[i])) {
			krdma_bench_stop(run, -EBUSY);
			continue;
		}
		if (wc[i].status != IB_WC_SUCCESS) {
			if (!krdma_bench_wc_after_report(run, bc, &wc[i]))
				krdma_bench_wc_failed(run, bc, wc[i].status);
			continue;
		}
		if (wc[i].wr_id & KRDMA_BENCH_RECV_WRID)
			krdma_bench_recv_done(run, bc, &wc[i], now);
		else
			krdma_bench_send_done(run, bc, &wc[i], now);
	}
	return n;
}

/* ---- posting ---- */

/*
 * Sends go as a POST's do: counted by the connection's flow control
 * (flow.c), which the run's own depth keeps within the queue, and by the
 * listing.
 */
static int krdma_bench_post(struct krdma_conn *conn,
			    const struct ib_send_wr *wr)
{
	/* a driver failing without saying where: none went */
	const struct ib_send_wr *bad = wr, *w;
	u32 went = 0;
	int ret;

	mutex_lock(&conn->flow.lock);
	ret = krdma_post_send(conn->qp, wr, &bad);
	for (w = wr; w && (!ret || w != bad); w = w->next)
		went++;
	krdma_flow_sent(&conn->flow, wr, went);
	mutex_unlock(&conn->flow.lock);
	krdma_conn_count_posted(conn, went);
	return ret;
}

/*
 * Receives, as many as @n: a server's into consecutive slots; a ping-pong
 * client's replies at offset 0, where its pings come from.  A reply carries
 * its ping back, so that rewrites the pattern with itself; in a slot of its
 * own, a reply of one size would overwrite the source of a larger one's
 * pings (-a: a reply of 2 bytes in slot 1 is bytes 2-3 of a 4-byte ping).
 */
static int krdma_bench_post_recvs(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc, u32 n)
{
	const struct ib_recv_wr *bad;
	u32 i, went;
	int ret;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		u64 slot = run->server ? (bc->recv_posted + i) % run->nslots : 0;
		struct ib_sge *sge = run->rwrs[i].sg_list;

		/* UD: the GRH first, to the GRH area; then the payload */
		if (run->ud) {
			sge->addr = run->iova + krdma_bench_grh_off(run, bc);
			sge++;
		}
		sge->addr = run->iova + slot * run->cmd->msg_size;
		run->rwrs[i].wr_id = KRDMA_BENCH_RECV_WRID | slot;
		run->rwrs[i].next = i + 1 < n ? &run->rwrs[i + 1] : NULL;
	}
	run->cmd->post_calls++;
	bad = run->rwrs;	/* a driver failing without saying: none went */
	mutex_lock(&bc->conn->flow.lock);
	ret = ib_post_recv(bc->conn->qp, run->rwrs, &bad);
	went = ret ? bad - run->rwrs : n;
	krdma_flow_received(&bc->conn->flow, went);
	mutex_unlock(&bc->conn->flow.lock);
	krdma_conn_count_posted(bc->conn, went);
	if (ret)
		return ret;
	bc->recv_posted += n;
	return 0;
}

/* UD: where @bc's sends go. */
static void krdma_bench_address(struct krdma_bench_conn *bc,
				union krdma_send_wr *wr)
{
	krdma_wr_set_ud(wr, bc->ah, bc->dest_qpn, bc->conn->qkey);
}

/* Fill in WR @i of the chain for @bc's next operation of @len bytes. */
static void krdma_bench_build(struct krdma_bench_run *run,
			      struct krdma_bench_conn *bc, u32 i, u32 len,
			      bool last)
{
	union krdma_send_wr *wr = &run->wrs[i];
	struct ib_sge *sge = &run->sges[i];
	u64 count = bc->posted + i + 1;
	struct krdma_wr_args args = {
		.remote_addr = run->cmd->remote_addr,
		.rkey = run->cmd->remote_rkey,
		.compare_add = 1,
		.imm = count & S32_MAX,
	};
	u64 laddr = 0;
	void *kaddr = run->inline_addr;
	size_t avail = len;

	if (run->opcode == KRDMA_OP_RDMA_READ)
		laddr = (count - 1) % run->nslots * run->cmd->msg_size;
	if (run->server) {	/* a reply carries what came in */
		laddr = run->echo_off;
		kaddr = krdma_buf_mem_addr(run->buf->mem, laddr, &avail);
	}
	/* RDMA: the peer's slots in turn (atomics have none: one counter) */
	if (run->remote_nslots && !run->validate)
		args.remote_addr += (bc->rslot++ % run->remote_nslots) *
				    run->cmd->msg_size;
	wr->send.wr_id = KRDMA_BENCH_SEND_WRID | count;
	wr->send.next = NULL;
	wr->send.send_flags = 0;
	if (!(count % run->signal_every) || last)
		wr->send.send_flags |= IB_SEND_SIGNALED;
	if (run->inline_send && len <= run->cmd->inline_size &&
	    len <= avail) {
		wr->send.send_flags |= IB_SEND_INLINE;
		sge->addr = (uintptr_t)kaddr;
		sge->lkey = 0;
	} else {
		sge->addr = run->iova + laddr;
		sge->lkey = run->lkey;
	}
	sge->length = len;
	wr->send.num_sge = len ? 1 : 0;
	if (i)
		run->wrs[i - 1].send.next = &wr->send;
	krdma_wr_set_op(wr, run->opcode, &args);
	if (run->ud)
		krdma_bench_address(bc, wr);
}

/* Post @n operations of @len bytes as one chain; @last: the run's last. */
static int krdma_bench_post_sends(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc, u32 n, u32 len,
				  bool last)
{
	u32 i;
	int ret;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	for (i = 0; i < n; i++)
		krdma_bench_build(run, bc, i, len, last && i == n - 1);
	if (!run->start_ns)
		krdma_bench_start(run, krdma_bench_now());
	run->cmd->post_calls++;
	ret = krdma_bench_post(bc->conn, &run->wrs[0].send);
	if (ret)
		return ret;
	bc->posted += n;
	if (run->wrs[n - 1].send.send_flags & IB_SEND_SIGNALED)
		bc->signaled = bc->posted;
	/* the credits the next run, and the caller's end message, have */
	if (bc->ctl)
		WRITE_ONCE(bc->ctl->sent, cpu_to_le64(bc->sent_base + bc->posted));
	return 0;
}

/*
 * Of @want messages, how many a credits client may send now: what the
 * server's credits (receives it has posted) leave of what was sent.  The
 * device writes the credits; a word that is behind only holds the run
 * back a step.  Any other run: @want.
 */
static u32 krdma_bench_credit(struct krdma_bench_run *run,
			      struct krdma_bench_conn *bc, u32 want)
{
	u64 credits, sent;

	if (!bc->ctl)
		return want;
	credits = le64_to_cpu(READ_ONCE(bc->ctl->credits));
	sent = bc->sent_base + bc->posted;
	bc->starved = credits <= sent;
	return bc->starved ? 0 : min_t(u64, want, credits - sent);
}

static u32 krdma_bench_room(struct krdma_bench_conn *bc)
{
	return bc->sq_depth - (u32)(bc->posted - bc->completed);
}

/* Bandwidth client: keep the send queue full. */
static int krdma_bench_fill(struct krdma_bench_run *run,
			    struct krdma_bench_conn *bc)
{
	u32 room = krdma_bench_room(bc), n = room;
	u64 iters = run->cmd->iters;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	if (!room)
		return 0;
	if (run->phase == KRDMA_BENCH_CLOSE) {
		/* unsignaled WRs at the tail: one more, signaled, covers them */
		if (bc->signaled == bc->posted || !krdma_bench_credit(run, bc, 1))
			return 0;
		return krdma_bench_post_sends(run, bc, 1, run->cmd->msg_size,
					      true);
	}
	if (iters) {
		if (bc->posted >= iters)
			return 0;
		n = min_t(u64, n, iters - bc->posted);
	}
	n = krdma_bench_credit(run, bc, n);
	if (!n)
		return 0;
	return krdma_bench_post_sends(run, bc, n, run->cmd->msg_size,
				      iters && bc->posted + n == iters);
}

/*
 * Latency client: the next operation, once the previous one is back.  A
 * ping-pong keeps the receive for the next reply posted one ping ahead:
 * each ping's goes in after the ping itself, while the ping is in flight,
 * not between a reply and the next ping.
 */
static int krdma_bench_next(struct krdma_bench_run *run,
			    struct krdma_bench_conn *bc)
{
	bool ahead = run->pingpong && bc->recv_posted > bc->posted;
	u64 iters = run->cmd->iters;
	bool last;
	int ret;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	/* a late READY took the receive of the awaited reply (UC, UD) */
	if (run->pingpong && bc->waiting && bc->recv_posted <= bc->ops)
		return krdma_bench_post_recvs(run, bc, 1);
	if (bc->waiting || !krdma_bench_room(bc))
		return 0;
	/*
	 * Closing: one more ping, signaled, covers unsignaled ones at the tail
	 * and takes the receive posted ahead for it.
	 */
	if (run->phase == KRDMA_BENCH_CLOSE ?
	    bc->signaled == bc->posted && !ahead :
	    iters && bc->ops >= iters)
		return 0;
	if (!krdma_bench_credit(run, bc, 1))
		return 0;
	last = run->phase == KRDMA_BENCH_CLOSE ||
	       (iters && bc->ops + 1 == iters);
	if (run->pingpong && !ahead) {	/* the first ping's */
		ret = krdma_bench_post_recvs(run, bc, 1);
		if (ret)
			return ret;
	}
	bc->waiting = true;
	run->t0 = krdma_bench_now();
	if (!run->start_ns)
		krdma_bench_start(run, run->t0);
	ret = krdma_bench_post_sends(run, bc, 1, run->cmd->msg_size,
				     last || !run->pingpong);
	if (ret || !run->pingpong || last)
		return ret;
	return krdma_bench_post_recvs(run, bc, 1);
}

/*
 * A server answers the end message, and a validating one also a run that
 * ends on its @iters: the client learns from the answer that the server
 * is done.  It cannot learn that from its end message's completion, which
 * may never come: a responder delivers a message before it acknowledges
 * it, and the server's QP goes to the error state once it has seen it.
 */
static bool krdma_bench_owes_report(const struct krdma_bench_run *run,
				    const struct krdma_bench_conn *bc)
{
	return run->validate || bc->ended || krdma_bench_waits_hello(bc);
}

/* Server: post @wr, a message of the protocol's, signaled. */
static int krdma_bench_post_control(struct krdma_bench_run *run,
				    struct krdma_bench_conn *bc,
				    union krdma_send_wr *wr)
{
	int ret;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	wr->send.wr_id = KRDMA_BENCH_SEND_WRID | (bc->posted + 1);
	wr->send.send_flags |= IB_SEND_SIGNALED;
	if (run->ud)
		krdma_bench_address(bc, wr);
	run->cmd->post_calls++;
	ret = krdma_bench_post(bc->conn, &wr->send);
	if (ret)
		return ret;
	bc->posted++;
	bc->signaled = bc->posted;
	return 0;
}

/*
 * Server: a zero-length SEND_WITH_IMM, saying the receives are posted
 * (%KRDMA_BENCH_READY_IMM) or, validating, how many payloads were bad.
 */
static int krdma_bench_tell(struct krdma_bench_run *run,
			    struct krdma_bench_conn *bc, u32 imm)
{
	const struct krdma_wr_args args = { .imm = imm };
	union krdma_send_wr wr = {};

	krdma_wr_set_op(&wr, KRDMA_OP_SEND_WITH_IMM, &args);
	return krdma_bench_post_control(run, bc, &wr);
}

/*
 * Credits server: an RDMA WRITE of @value to the word at @off of @bc's
 * control area at the client, inline: the WR carries the word.
 */
static int krdma_bench_write_ctl(struct krdma_bench_run *run,
				 struct krdma_bench_conn *bc, size_t off,
				 u64 value)
{
	const struct krdma_wr_args args = {
		.remote_addr = run->cmd->remote_addr + off +
			       (u64)bc->index * sizeof(struct krdma_bench_ctl),
		.rkey = run->cmd->remote_rkey,
	};
	union krdma_send_wr wr = {};
	struct ib_sge sge = {
		.addr = (uintptr_t)&bc->ctl_word,
		.length = sizeof(bc->ctl_word),
	};

	bc->ctl_word = cpu_to_le64(value);
	wr.send.sg_list = &sge;
	wr.send.num_sge = 1;
	wr.send.send_flags = IB_SEND_INLINE;
	krdma_wr_set_op(&wr, KRDMA_OP_RDMA_WRITE, &args);
	return krdma_bench_post_control(run, bc, &wr);
}

/*
 * Credits server: the receives posted since the last credits, once they
 * are a quarter of the ring (or the first): the client, whose sends
 * complete before they are received (iWARP), must not outrun them.
 */
static int krdma_bench_tell_credits(struct krdma_bench_run *run,
				    struct krdma_bench_conn *bc)
{
	u64 fresh = bc->recv_posted - bc->credits_told;
	int ret;

	if (!fresh || (bc->credits_told && fresh < max(run->depth / 4, 1U)) ||
	    !krdma_bench_room(bc))
		return 0;
	ret = krdma_bench_write_ctl(run, bc,
				    offsetof(struct krdma_bench_ctl, credits),
				    bc->recv_posted);
	if (ret)
		return ret;
	bc->credits_told = bc->recv_posted;
	bc->ready = true;
	return 0;
}

/* Server: the answer to the end message (or to @iters, validating). */
static int krdma_bench_report(struct krdma_bench_run *run,
			      struct krdma_bench_conn *bc)
{
	u32 bad = min_t(u64, bc->validate_errors, KRDMA_BENCH_REPORT_MAX);

	if (run->credits)
		return krdma_bench_write_ctl(run, bc,
					     offsetof(struct krdma_bench_ctl,
						      report),
					     KRDMA_BENCH_REPORTED | bad);
	return krdma_bench_tell(run, bc, bad);
}

/*
 * Server: keep receives posted, send the replies latency mode owes.  The
 * receives posted and the replies owed stay within @depth together, the
 * size of the ring that holds the replies.
 */
static int krdma_bench_serve(struct krdma_bench_run *run,
			     struct krdma_bench_conn *bc)
{
	u64 want = bc->ops + bc->recv_other + run->depth - bc->echo_count;
	/* UD: nothing goes out before the client's address handle is made */
	bool can_send = !run->ud || bc->ah;
	int ret;

	lockdep_assert_held_read(&bc->conn->obj.hw_rwsem);
	/* UC, UD: receives stay posted for end messages, repeated */
	if (run->cmd->iters && !krdma_bench_waits_hello(bc))
		want = min(want, run->cmd->iters + bc->recv_other);
	while (can_send && bc->echo_count && krdma_bench_room(bc)) {
		u64 e = bc->echo[bc->echo_head];
		u32 len = lower_32_bits(e);

		run->echo_off = upper_32_bits(e) * run->cmd->msg_size;
		ret = krdma_bench_post_sends(run, bc, 1, len,
					     bc->done && bc->echo_count == 1);
		if (ret)
			return ret;
		bc->echo_head = (bc->echo_head + 1) % run->depth;
		bc->echo_count--;
	}
	/* after the replies, which a ping-pong client waits for */
	if ((!bc->done || krdma_bench_waits_hello(bc)) &&
	    want > bc->recv_posted) {
		ret = krdma_bench_post_recvs(run, bc,
					     min_t(u64, want - bc->recv_posted,
						   run->depth));
		if (ret)
			return ret;
	}
	if (run->credits && !bc->done) {
		ret = krdma_bench_tell_credits(run, bc);
		if (ret)
			return ret;
	}
	/*
	 * Once the first receives are posted; UC, UD: in answer to a hello
	 * (krdma_bench_hello()); with credits, the first credits
	 */
	if (can_send && !bc->ready && !run->credits && krdma_bench_room(bc) &&
	    (!krdma_bench_waits_hello(bc) || bc->hello)) {
		ret = krdma_bench_tell(run, bc, KRDMA_BENCH_READY_IMM);
		if (ret)
			return ret;
		bc->ready = true;
	}
	if (can_send && krdma_bench_owes_report(run, bc) && bc->done &&
	    !bc->reported && !bc->echo_count && krdma_bench_room(bc)) {
		ret = krdma_bench_report(run, bc);
		if (ret)
			return ret;
		bc->reported = true;
		/* within the idle timeout, which the report starts again */
		run->last_control_ns = krdma_bench_now();
		bc->linger_until_ns = run->last_control_ns +
				      min(KRDMA_BENCH_LINGER_NS,
					  run->timeout_ns / 2);
	}
	return 0;
}

/* ---- the loop ---- */

/* Interrupt-driven mode: re-arm a drained CQ (as krdma_conn_rearm()). */
static bool krdma_bench_rearm(struct krdma_bench_run *run,
			      struct krdma_conn *conn)
{
	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (test_and_clear_bit(KRDMA_CONN_CQ_READY, &conn->state))
		atomic_dec(&run->session->ready_conns);
	if (ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0) {
		if (!test_and_set_bit(KRDMA_CONN_CQ_READY, &conn->state))
			atomic_inc(&run->session->ready_conns);
		return true;
	}
	return false;
}

/*
 * One step on one connection under its hw lock: reap completions, post
 * what there is room for.  Returns completions seen, or -errno.
 */
static int krdma_bench_step(struct krdma_bench_run *run,
			    struct krdma_bench_conn *bc, bool *sleep)
{
	struct krdma_conn *conn = bc->conn;
	int n, ret;

	if (krdma_object_lock_hw(&conn->obj))
		return -ENODEV;
	if (READ_ONCE(run->buf->obj.hw_dead)) {
		krdma_object_unlock_hw(&conn->obj);
		return -ENODEV;
	}
	n = krdma_bench_poll(run, bc);
	bc->starved = false;	/* until this step asks for a credit in vain */
	if (run->server)
		ret = krdma_bench_serve(run, bc);
	else if (run->latency)
		ret = krdma_bench_next(run, bc);
	else
		ret = krdma_bench_fill(run, bc);
	krdma_bench_publish(run);
	/* sleep only if every CQ is drained and armed */
	if (run->notify && (n || ret || krdma_bench_rearm(run, conn)))
		*sleep = false;
	if (bc->starved)
		run->starved = true;
	krdma_object_unlock_hw(&conn->obj);
	if (!ret && bc->peer_pending) {
		ret = krdma_bench_make_peer(bc);
		*sleep = false;
	}
	return ret ?: n;
}

static bool krdma_bench_conn_idle(struct krdma_bench_run *run,
				  struct krdma_bench_conn *bc)
{
	if (run->server)
		return bc->done && !bc->echo_count &&
		       (bc->reported || !krdma_bench_owes_report(run, bc)) &&
		       bc->completed == bc->posted &&
		       (!krdma_bench_waits_hello(bc) ||
			krdma_bench_now() >= bc->linger_until_ns);
	return bc->completed == bc->posted && bc->signaled == bc->posted &&
	       !bc->waiting;
}

/* Has every connection done what it was asked? */
static bool krdma_bench_finished(struct krdma_bench_run *run)
{
	u64 iters = run->cmd->iters;
	u32 i;

	for (i = 0; i < run->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];

		if (!krdma_bench_conn_idle(run, bc))
			return false;
		if (run->phase == KRDMA_BENCH_RUN && !run->server &&
		    (!iters || bc->ops < iters))
			return false;
	}
	return true;
}

static bool krdma_bench_woken(struct krdma_bench_run *run)
{
	u32 i;

	if (signal_pending(current) || READ_ONCE(run->shared->err))
		return true;
	for (i = 0; i < run->num_conns; i++) {
		struct krdma_conn *conn = run->bconns[i].conn;

		if (test_bit(KRDMA_CONN_CQ_READY, &conn->state) ||
		    READ_ONCE(conn->obj.hw_dead))
			return true;
	}
	return false;
}

int krdma_bench_loop(struct krdma_bench_run *run)
{
	u32 i;

	for (;;) {
		bool sleep = run->notify;
		int progress = 0, err;
		u64 now;

		run->starved = false;
		for (i = 0; i < run->num_conns; i++) {
			int n = krdma_bench_step(run, &run->bconns[i], &sleep);

			if (n < 0) {
				krdma_bench_stop(run, n);
				return n;
			}
			progress += n;
		}
		if (run->err)
			return run->err;
		/* another thread of the run failed, or its caller was signaled */
		err = READ_ONCE(run->shared->err);
		if (err)
			return err;
		if (krdma_bench_finished(run))
			return 0;
		krdma_run_softirqs();
		now = krdma_bench_now();
		if (run->phase == KRDMA_BENCH_RUN && run->end_ns &&
		    now >= run->end_ns)
			run->phase = KRDMA_BENCH_CLOSE;
		if (signal_pending(current))
			return -EINTR;
		krdma_bench_progress(run, now);
		if (!progress && krdma_bench_idle(run, now))
			return -ETIMEDOUT;
		/*
		 * a credit comes with no completion to wake the run: a
		 * starved one naps instead
		 */
		if (!progress && sleep && run->starved)
			usleep_range(KRDMA_BENCH_NAP_US, 2 * KRDMA_BENCH_NAP_US);
		else if (!progress && sleep)
			wait_event_interruptible_timeout(run->session->wait,
							 krdma_bench_woken(run),
							 HZ / 10);
		else
			cond_resched();
	}
}

/*
 * Empty @conn's CQ; whether anything was there.  A failure that is not a
 * flush still tells the session its connection is in error.
 */
static bool krdma_bench_drain_cq(struct krdma_conn *conn, struct ib_wc *wc)
{
	bool any = false;

	while (krdma_conn_reap(conn, wc, KRDMA_BENCH_POLL_BATCH) > 0)
		any = true;
	return any;
}

/*
 * After a failure or an interruption, or at the end of a server run: move
 * every QP to the error state and reap the flushed WRs, so that nothing
 * the run posted is left behind.
 */
static void krdma_bench_flush(struct krdma_bench_run *run)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	u64 start = krdma_bench_now(), quiet = start;
	u32 i;

	for (i = 0; i < run->num_conns; i++) {
		struct krdma_conn *conn = run->bconns[i].conn;

		if (krdma_object_lock_hw(&conn->obj))
			continue;
		ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
		krdma_object_unlock_hw(&conn->obj);
	}
	for (;;) {
		u64 now = krdma_bench_now();
		bool any = false;

		for (i = 0; i < run->num_conns; i++) {
			struct krdma_conn *conn = run->bconns[i].conn;

			if (krdma_object_lock_hw(&conn->obj))
				continue;
			any |= krdma_bench_drain_cq(conn, run->wc);
			krdma_object_unlock_hw(&conn->obj);
		}
		if (any)
			quiet = now;
		if (now - quiet > KRDMA_BENCH_QUIET_NS ||
		    now - start > KRDMA_BENCH_DRAIN_NS)
			break;
		cond_resched();
	}
}

/* The latency samples to the caller, who makes the figures of them. */
static int krdma_bench_copy_samples(struct krdma_bench_run *run)
{
	struct krdma_bench *cmd = run->cmd;

	if (!run->num_samples)
		return 0;
	if (copy_to_user(u64_to_user_ptr(cmd->samples_uptr), run->samples,
			 array_size(run->num_samples, sizeof(u64))))
		return -EFAULT;
	cmd->lat_samples = run->num_samples;
	return 0;
}

/* ---- setup ---- */

static int krdma_bench_check_cmd(const struct krdma_bench *cmd)
{
	u32 known = KRDMA_BENCH_LATENCY | KRDMA_BENCH_NOTIFY |
		    KRDMA_BENCH_VALIDATE | KRDMA_BENCH_SERVER |
		    KRDMA_BENCH_PER_CPU | KRDMA_BENCH_CREDITS;
	bool credits_server = (cmd->flags & KRDMA_BENCH_CREDITS) &&
			      (cmd->flags & KRDMA_BENCH_SERVER);

	if (cmd->flags & ~known)
		return -EOPNOTSUPP;
	/* the data operations: not RECV, nor the invalidations */
	if (cmd->opcode > KRDMA_OP_ATOMIC_CMP_SWP ||
	    cmd->opcode == KRDMA_OP_RECV)
		return -EINVAL;
	if (!cmd->num_conns || cmd->num_conns > KRDMA_BENCH_MAX_CONNS)
		return -EINVAL;
	if (!cmd->msg_size || (!cmd->iters && !cmd->duration_ms &&
			       !(cmd->flags & KRDMA_BENCH_SERVER)))
		return -EINVAL;
	if (krdma_bench_is_atomic(cmd->opcode) &&
	    (cmd->msg_size != sizeof(u64) || (cmd->remote_addr & 7)))
		return -EINVAL;
	/* what a server does: receive SENDs and WRITE_WITH_IMMs */
	if ((cmd->flags & KRDMA_BENCH_SERVER) &&
	    !krdma_bench_is_send(cmd->opcode) &&
	    cmd->opcode != KRDMA_OP_RDMA_WRITE_WITH_IMM)
		return -EOPNOTSUPP;
	/* a ping-pong or a timed operation is one connection's business */
	if ((cmd->flags & KRDMA_BENCH_LATENCY) &&
	    !(cmd->flags & KRDMA_BENCH_SERVER) && cmd->num_conns != 1)
		return -EINVAL;
	/*
	 * What is validated: what a SEND server receives (a SEND client's
	 * sources are then at offset 0), the replies of a ping-pong, READ
	 * targets.
	 */
	if ((cmd->flags & KRDMA_BENCH_VALIDATE) &&
	    !krdma_bench_is_send(cmd->opcode) &&
	    cmd->opcode != KRDMA_OP_RDMA_READ)
		return -EOPNOTSUPP;
	/* credits: SEND's, the messages the protocol has without immediates */
	if ((cmd->flags & KRDMA_BENCH_CREDITS) &&
	    cmd->opcode != KRDMA_OP_SEND)
		return -EOPNOTSUPP;
	/*
	 * a credits server writes to its client's control areas, and runs
	 * until the end message, whose credit a server done with @iters
	 * would not give
	 */
	if (credits_server &&
	    (cmd->iters || cmd->remote_length < (u64)cmd->num_conns *
						sizeof(struct krdma_bench_ctl)))
		return -EINVAL;
	/* the peer's buffer is a one-sided client's: 0 where nothing reads it */
	if ((krdma_bench_is_send(cmd->opcode) ||
	     (cmd->flags & KRDMA_BENCH_SERVER)) && !credits_server &&
	    (cmd->remote_addr || cmd->remote_length || cmd->remote_rkey))
		return -EINVAL;
	/* samples: a latency client's, an array or none */
	if ((!cmd->samples_uptr != !cmd->max_samples) ||
	    cmd->max_samples > KRDMA_BENCH_MAX_SAMPLES ||
	    (cmd->max_samples && (!(cmd->flags & KRDMA_BENCH_LATENCY) ||
				  (cmd->flags & KRDMA_BENCH_SERVER))))
		return -EINVAL;
	/* not after a whole run: an array that is not user memory at all */
	if (cmd->max_samples &&
	    !access_ok(u64_to_user_ptr(cmd->samples_uptr),
		       cmd->max_samples * sizeof(u64)))
		return -EFAULT;
	return 0;
}

static int krdma_bench_get_buf(struct krdma_bench_run *run)
{
	struct krdma_bench *cmd = run->cmd;
	struct krdma_object *obj;
	struct krdma_buf *buf;
	size_t avail;
	int ret;

	obj = krdma_object_get(run->session, cmd->local_buf, &krdma_buf_ops);
	if (!obj)
		return -ENOENT;
	buf = container_of(obj, struct krdma_buf, obj);
	run->buf = buf;
	ret = krdma_object_lock_hw(obj);
	if (ret)
		return ret;
	run->lkey = buf->mrs[0].key;
	run->iova = buf->mrs[0].mr->iova;
	krdma_object_unlock_hw(obj);
	/* a run's slots are addressed with one key */
	if (cmd->msg_size > buf->length || buf->num_mrs > 1)
		return -EINVAL;
	run->nslots = div64_u64(buf->length, cmd->msg_size);
	run->inline_addr = krdma_buf_mem_addr(buf->mem, 0, &avail);
	if (cmd->inline_size && avail < min(cmd->msg_size, cmd->inline_size))
		return -EINVAL;
	/* the device writes it: receives, READ targets, atomic results */
	if ((run->server || cmd->opcode == KRDMA_OP_RDMA_READ ||
	     run->pingpong || krdma_bench_is_atomic(cmd->opcode)) &&
	    !(buf->access & KRDMA_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* Is the QP ready to send (RTS)? */
static int krdma_bench_qp_ready(struct krdma_conn *conn)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	/*
	 * An iWARP driver's query_qp() need not report the state (siw's
	 * leaves it): there the QP is in RTS from rdma_cm's ESTABLISHED until
	 * it errs or disconnects.
	 */
	if (krdma_port_is_iwarp(conn->obj.kdev, conn->port_num))
		return test_bit(KRDMA_CONN_ESTABLISHED, &conn->state) &&
		       !test_bit(KRDMA_CONN_QP_ERROR, &conn->state) &&
		       !test_bit(KRDMA_CONN_DISCONNECTED, &conn->state) ?
		       0 : -EINVAL;
	ret = ib_query_qp(conn->qp, &attr, IB_QP_STATE, &init);
	if (ret)
		return ret;
	return attr.qp_state == IB_QPS_RTS ? 0 : -EINVAL;
}

/*
 * UD: every connection of the run is UD; a message is one packet; a
 * receive takes two SGEs (the GRH's, the payload's); a client's sends go
 * to the peer the CM resolved, a server's to the sender of the first
 * message.
 */
static int krdma_bench_check_ud(struct krdma_bench_run *run,
				struct krdma_conn *conn)
{
	struct krdma_bench *cmd = run->cmd;

	if (run->num_conns > 1 && !run->ud)
		return -EINVAL;
	run->ud = true;
	if (cmd->msg_size > ib_mtu_enum_to_int(conn->active_mtu))
		return -EINVAL;
	if ((run->server || run->pingpong) && conn->caps.max_recv_sge < 2)
		return -EINVAL;
	/* pairs with the CM handler's cmpxchg_release() */
	if (!run->server && !smp_load_acquire(&conn->ud_ah))
		return -EINVAL;
	return 0;
}

/*
 * UD: the buffer ends in a GRH area of %KRDMA_GRH_LEN bytes per connection,
 * in the order of the run's connections; the slots are before it.  A
 * connection's own area: a server makes its peer's address handle from
 * it (krdma_bench_note_peer()).
 */
static int krdma_bench_ud_slots(struct krdma_bench_run *run)
{
	u64 length = run->buf->length;
	u64 grh_len = (u64)run->num_conns * KRDMA_GRH_LEN;
	u32 i;

	BUILD_BUG_ON(sizeof(struct ib_grh) != KRDMA_GRH_LEN);
	if (length < run->cmd->msg_size + grh_len)
		return -EINVAL;
	run->grh_off = length - grh_len;
	run->nslots = div64_u64(run->grh_off, run->cmd->msg_size);
	for (i = 0; i < run->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];

		/* set by the CM before the connect returned, or NULL */
		bc->ah = smp_load_acquire(&bc->conn->ud_ah);
		bc->dest_qpn = READ_ONCE(bc->conn->dest_qp_num);
	}
	return 0;
}

/*
 * A credits client: the buffer ends in a control area, a &struct
 * krdma_bench_ctl per connection in the order of the run's connections,
 * where the server writes its credits and report and the run keeps what
 * it sent (the caller reads them where it mapped the buffer); the slots
 * are before it.  The server writes there: remote write access.
 */
static int krdma_bench_ctl_slots(struct krdma_bench_run *run)
{
	u64 length = run->buf->length;
	u64 ctl_len = (u64)run->num_conns * sizeof(struct krdma_bench_ctl);
	size_t avail;
	u32 i;

	if (length % sizeof(struct krdma_bench_ctl) ||
	    length < run->cmd->msg_size + ctl_len ||
	    !(run->buf->access & KRDMA_ACCESS_REMOTE_WRITE))
		return -EINVAL;
	run->nslots = div64_u64(length - ctl_len, run->cmd->msg_size);
	for (i = 0; i < run->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];
		u64 off = length - ctl_len + (u64)i * sizeof(*bc->ctl);

		/* its words aligned (user memory may start anywhere), whole */
		bc->ctl = krdma_buf_mem_addr(run->buf->mem, off, &avail);
		if (avail < sizeof(*bc->ctl) ||
		    !IS_ALIGNED((unsigned long)bc->ctl, sizeof(u64)))
			return -EINVAL;
		bc->sent_base = le64_to_cpu(READ_ONCE(bc->ctl->sent));
	}
	return 0;
}

static int krdma_bench_check_conn(struct krdma_bench_run *run,
				  struct krdma_conn *conn)
{
	struct krdma_bench *cmd = run->cmd;
	const struct krdma_qp_caps *caps = &conn->caps;
	u32 queue = run->server ? caps->max_recv_wr : caps->max_send_wr;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (conn->obj.kdev != run->buf->obj.kdev)
		return -EINVAL;
	/* a run that receives counts its own receives: not an SRQ's */
	if (conn->srq && (run->server || run->pingpong))
		return -EINVAL;
	if (!krdma_bench_transport_ok(conn->transport, cmd->opcode))
		return -EOPNOTSUPP;
	/* else the device would refuse the first post */
	if (krdma_bench_is_atomic(cmd->opcode) &&
	    conn->obj.kdev->ibdev->attrs.atomic_cap == IB_ATOMIC_NONE)
		return -EOPNOTSUPP;
	/*
	 * iWARP carries no immediate data, which the protocol's messages are
	 * but with credits
	 */
	if (((run->server && !run->credits) ||
	     cmd->opcode == KRDMA_OP_SEND_WITH_IMM ||
	     cmd->opcode == KRDMA_OP_RDMA_WRITE_WITH_IMM) &&
	    krdma_port_is_iwarp(conn->obj.kdev, conn->port_num))
		return -EOPNOTSUPP;
	if (run->credits && conn->transport != KRDMA_TRANSPORT_RC)
		return -EOPNOTSUPP;
	/* a credits server's words go inline: no buffer of its is theirs */
	if (run->credits && run->server &&
	    caps->max_inline_data < sizeof(__le64))
		return -EINVAL;
	if (run->notify && !conn->notify)
		return -EINVAL;
	if (!cmd->tx_depth)	/* the default, as deep as every queue */
		run->depth = min(run->depth, queue);
	else if (cmd->tx_depth > queue)
		return -EINVAL;
	if (run->inline_send && cmd->inline_size > caps->max_inline_data)
		return -EINVAL;
	if (conn->transport == KRDMA_TRANSPORT_UD) {
		int ret = krdma_bench_check_ud(run, conn);

		if (ret)
			return ret;
	}
	return krdma_bench_qp_ready(conn);
}

static int krdma_bench_get_conns(struct krdma_bench_run *run)
{
	struct krdma_bench *cmd = run->cmd;
	u32 __user *uhandles = u64_to_user_ptr(cmd->conns_uptr);
	u32 i, j, handle;
	int ret;

	run->bconns = kcalloc(cmd->num_conns, sizeof(*run->bconns),
			      GFP_KERNEL);
	if (!run->bconns)
		return -ENOMEM;
	for (i = 0; i < cmd->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];

		if (get_user(handle, &uhandles[i]))
			return -EFAULT;
		for (j = 0; j < i; j++)
			if (run->bconns[j].conn->obj.handle == handle)
				return -EINVAL;
		ret = krdma_conn_get_locked(run->session, handle, &bc->conn);
		if (ret)
			return ret;
		bc->index = i;
		run->num_conns++;
		ret = krdma_bench_check_conn(run, bc->conn);
		/* hold the reference only: the hw lock is taken per step */
		krdma_object_unlock_hw(&bc->conn->obj);
		/* its CQ's completions are the run's: POST and POLL are EBUSY */
		if (!ret)
			ret = krdma_conn_claim(bc->conn);
		bc->held = !ret;
		if (ret)
			return ret;
		/* all UD, or none */
		if (run->ud && bc->conn->transport != KRDMA_TRANSPORT_UD)
			return -EINVAL;
	}
	if (run->ud) {
		ret = krdma_bench_ud_slots(run);
		if (ret)
			return ret;
	}
	if (run->credits && !run->server) {
		ret = krdma_bench_ctl_slots(run);
		if (ret)
			return ret;
	}
	if (cmd->signal_every > run->depth)
		return -EINVAL;
	/* a slot must not be reused while an operation on it is in flight */
	if (run->validate && !run->latency && run->nslots < run->depth)
		return -EINVAL;
	for (i = 0; i < run->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];

		bc->sq_depth = run->server ? bc->conn->caps.max_send_wr :
					     run->depth;
		if (run->server && run->pingpong) {
			bc->echo = kcalloc(run->depth, sizeof(*bc->echo),
					   GFP_KERNEL);
			if (!bc->echo)
				return -ENOMEM;
		}
	}
	return 0;
}

int krdma_bench_alloc(struct krdma_bench_run *run)
{
	u32 n = max(run->depth, 1U);
	u32 nsge = run->ud ? 2 : 1;
	u32 i, j;

	run->wrs = kcalloc(n, sizeof(*run->wrs), GFP_KERNEL);
	run->sges = kcalloc(n, sizeof(*run->sges), GFP_KERNEL);
	run->rwrs = kcalloc(n, sizeof(*run->rwrs), GFP_KERNEL);
	run->rsges = kcalloc(n * nsge, sizeof(*run->rsges), GFP_KERNEL);
	if (!run->wrs || !run->sges || !run->rwrs || !run->rsges)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct ib_sge *rsge = &run->rsges[i * nsge];

		run->wrs[i].send.sg_list = &run->sges[i];
		run->rwrs[i].sg_list = rsge;
		run->rwrs[i].num_sge = nsge;
		for (j = 0; j < nsge; j++) {
			rsge[j].length = j + 1 < nsge ? KRDMA_GRH_LEN :
							run->cmd->msg_size;
			rsge[j].lkey = run->lkey;
		}
	}
	if (!run->cmd->max_samples)
		return 0;
	run->max_samples = run->cmd->iters ?
			   min(run->cmd->iters, run->cmd->max_samples) :
			   run->cmd->max_samples;
	run->samples = kvmalloc_array(run->max_samples, sizeof(u64),
				      GFP_KERNEL);
	return run->samples ? 0 : -ENOMEM;
}

void krdma_bench_free_chains(struct krdma_bench_run *run)
{
	kfree(run->wrs);
	kfree(run->sges);
	kfree(run->rwrs);
	kfree(run->rsges);
}

static void krdma_bench_free(struct krdma_bench_run *run)
{
	u32 i;

	for (i = 0; i < run->num_conns; i++) {
		struct krdma_bench_conn *bc = &run->bconns[i];

		kfree(bc->echo);
		if (bc->held)
			krdma_conn_unclaim(bc->conn);
		krdma_object_put(&bc->conn->obj);
	}
	kfree(run->bconns);
	if (run->buf)
		krdma_object_put(&run->buf->obj);
	kvfree(run->samples);
	krdma_bench_free_chains(run);
}

/* The outputs, from ops_done to failed_conn: inputs may follow them. */
static void krdma_bench_clear_outputs(struct krdma_bench *cmd)
{
	const size_t from = offsetof(struct krdma_bench, ops_done);
	const size_t to = offsetofend(struct krdma_bench, failed_conn);

	memset((u8 *)cmd + from, 0, to - from);
}

int krdma_bench(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_bench *cmd = ucmd->cmd;
	struct krdma_bench_shared shared = {};
	struct krdma_bench_run *run;
	u64 end;
	int ret;

	ret = krdma_bench_check_cmd(cmd);
	if (ret)
		return ret;
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return -ENOMEM;
	krdma_bench_clear_outputs(cmd);
	trace_krdma_bench_start(cmd);
	spin_lock_init(&shared.lock);
	run->cmd = cmd;
	run->session = session;
	run->shared = &shared;
	run->opcode = cmd->opcode;
	run->server = cmd->flags & KRDMA_BENCH_SERVER;
	run->latency = cmd->flags & KRDMA_BENCH_LATENCY;
	run->pingpong = run->latency && krdma_bench_is_send(cmd->opcode);
	run->notify = cmd->flags & KRDMA_BENCH_NOTIFY;
	run->validate = cmd->flags & KRDMA_BENCH_VALIDATE;
	run->credits = cmd->flags & KRDMA_BENCH_CREDITS;
	run->inline_send = cmd->inline_size &&
			   (cmd->opcode == KRDMA_OP_RDMA_WRITE ||
			    cmd->opcode == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
			    krdma_bench_is_send(cmd->opcode));
	run->depth = cmd->tx_depth ?: KRDMA_BENCH_DEFAULT_DEPTH;
	/*
	 * One send WR in this many is signaled, pings too (as ib_send_lat's
	 * CQ moderation): the reply says the ping arrived, and the last one,
	 * signaled, covers those before it.
	 */
	run->signal_every = cmd->signal_every ?: 1;
	run->timeout_ns = (u64)(cmd->timeout_ms ?:
				KRDMA_BENCH_DEFAULT_TIMEOUT_MS) * NSEC_PER_MSEC;

	ret = krdma_bench_get_buf(run);
	if (ret)
		goto out;
	if (cmd->opcode == KRDMA_OP_RDMA_WRITE ||
	    cmd->opcode == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
	    cmd->opcode == KRDMA_OP_RDMA_READ) {
		if (!run->server && cmd->remote_length < cmd->msg_size) {
			ret = -EINVAL;
			goto out;
		}
		run->remote_nslots = max_t(u64, 1,
					   div64_u64(cmd->remote_length,
						     cmd->msg_size));
	}
	ret = krdma_bench_get_conns(run);
	if (!ret)
		ret = krdma_bench_alloc(run);
	if (ret)
		goto out;

	if (cmd->duration_ms && !cmd->iters) {
		end = krdma_bench_now() + (u64)cmd->duration_ms * NSEC_PER_MSEC;
		run->end_ns = end;
	}
	run->last_progress_ns = krdma_bench_now();
	run->last_event_ns = run->last_progress_ns;
	if (cmd->flags & KRDMA_BENCH_PER_CPU) {
		ret = krdma_bench_spawn(run);
		if (ret)
			goto out;
	}
	ret = krdma_bench_loop(run);
	if (ret)
		krdma_bench_stop(run, ret);
	krdma_bench_join(run);
	krdma_bench_merge(run);
	ret = READ_ONCE(shared.err);
	if (ret || run->server)
		krdma_bench_flush(run);
	cmd->peak_bps = shared.peak_bps;
	cmd->wc_status = shared.wc_status;
	cmd->failed_conn = shared.failed_conn;
	cmd->ops_done = run->ops;
	cmd->bytes_done = run->bytes;
	if (run->start_ns && run->last_event_ns > run->start_ns)
		cmd->elapsed_ns = run->last_event_ns - run->start_ns;
	if (!cmd->peak_bps && cmd->elapsed_ns)
		cmd->peak_bps = mul_u64_u64_div_u64(run->bytes, NSEC_PER_SEC,
						    cmd->elapsed_ns);
	if (krdma_bench_copy_samples(run) && !ret)
		ret = -EFAULT;
	if (krdma_ucmd_respond(ucmd, sizeof(*cmd)) && !ret)
		ret = -EFAULT;
out:
	trace_krdma_bench_end(cmd, ret);
	krdma_bench_free(run);
	kfree(run);
	return ret;
}
