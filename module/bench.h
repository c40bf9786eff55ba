/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The KRDMA_BENCH engine's state, shared by bench.c (the loop, the ioctl)
 * and bench_thread.c (the threads of a %KRDMA_BENCH_PER_CPU run).
 */
#ifndef _KRDMA_BENCH_H
#define _KRDMA_BENCH_H

#include <linux/completion.h>
#include <linux/sched/clock.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "conn.h"
#include "device.h"
#include "object.h"
#include "wr.h"

struct seq_file;

#define KRDMA_BENCH_POLL_BATCH 32
#define KRDMA_BENCH_DEFAULT_DEPTH 128
#define KRDMA_BENCH_DEFAULT_TIMEOUT_MS 5000
#define KRDMA_BENCH_PEAK_WINDOW_NS (10 * NSEC_PER_MSEC)
#define KRDMA_BENCH_DRAIN_NS (2 * NSEC_PER_SEC)
#define KRDMA_BENCH_QUIET_NS (20 * NSEC_PER_MSEC)
/* UC, UD server: how long it answers repeated end messages (or timeout) */
#define KRDMA_BENCH_LINGER_NS (1 * NSEC_PER_SEC)
/* KRDMA_BENCH_NOTIFY, starved of credits: how long between looks */
#define KRDMA_BENCH_NAP_US 20
/* a run's wr_ids: the tag, and a receive's slot or a send's count */
#define KRDMA_BENCH_RECV_WRID BIT_ULL(63)
#define KRDMA_BENCH_SEND_WRID BIT_ULL(62)

/*
 * A run's clock: sched_clock(), the CPU's counter (the TSC) in ns.
 * ktime_get_ns() reads the clocksource, which may be a device: the HPET in
 * a TCG guest, 1.3 us a read and a lock in the emulator, as much again as
 * the loop between two looks at a CQ.  local_clock() reads the counter too,
 * but where it is deemed unstable (TCG) holds still past the next tick's
 * estimate: pings of 0 us were measured with it.  Threads of one run on
 * different CPUs may read it a little apart, which the figures allow for
 * (peak windows, progress).  perftest times with the counter too.
 */
static inline u64 krdma_bench_now(void)
{
	return sched_clock();
}

enum krdma_bench_phase {
	KRDMA_BENCH_RUN,	/* posting */
	KRDMA_BENCH_CLOSE,	/* no new operations; reap what is in flight */
};

/**
 * struct krdma_bench_conn - one connection of a run
 * @conn: the connection, referenced (its hw lock is taken per step)
 * @posted: send WRs posted
 * @completed: send WRs known complete (the wr_id of a signaled WR is the
 *	count of WRs posted up to and including it)
 * @signaled: @posted when the last signaled WR went
 * @ops: operations completed (server: messages received)
 * @bytes: payload bytes of @ops
 * @recv_posted: receives posted
 * @rslot: next remote slot
 * @sq_depth: send WRs in flight at most
 * @echo: server latency mode: replies still to send, slot << 32 | length
 *	(a ring)
 * @echo_head: next entry of @echo to send
 * @echo_count: entries waiting in @echo
 * @validate_errors: payloads of this connection that failed the check
 * @done: a server saw the end message or its @iters messages
 * @ready: a server sent its ready message
 * @ended: a server saw the end message (and owes its report)
 * @reported: a server sent its report
 * @waiting: latency mode: the operation being timed has not completed
 * @held: the run claimed the connection's CQ
 * @ah: UD: where sends go, the connection's address handle (which the CM
 *	resolved, or a server made from the first message's GRH)
 * @dest_qpn: UD: the peer's QP number
 * @index: the connection's place in the run, which picks its GRH area (UD)
 *	or its control area (credits)
 * @peer_pending: UD server: @peer_wc and @peer_grh hold the first
 *	message's, for an address handle to make after the step
 * @peer_wc: its completion
 * @peer_grh: its GRH
 * @linger_until_ns: UC, UD server: answers repeated end messages until then
 * @hello: UC, UD server: the client's hello arrived
 * @recv_other: receives taken by hellos, end messages and, once @done,
 *	payloads (not counted)
 * @ctl: a credits client: the connection's control area, in the buffer
 * @sent_base: a credits client: messages sent on it before this run
 * @credits_told: a credits server: the receives its last credits counted
 * @ctl_word: a credits server: the word being written (an inline source)
 * @starved: a credits client: the last step found no credit to send on
 */
struct krdma_bench_conn {
	struct krdma_conn *conn;
	u64 posted;
	u64 completed;
	u64 signaled;
	u64 ops;
	u64 bytes;
	u64 recv_posted;
	u64 rslot;
	u32 sq_depth;
	u64 *echo;
	u32 echo_head;
	u32 echo_count;
	u64 validate_errors;
	bool done;
	bool ready;
	bool ended;
	bool reported;
	bool waiting;
	bool held;
	struct ib_ah *ah;
	u32 dest_qpn;
	u32 index;
	bool peer_pending;
	struct ib_wc peer_wc;
	struct ib_grh peer_grh;
	u64 linger_until_ns;
	bool hello;
	u64 recv_other;
	struct krdma_bench_ctl *ctl;
	u64 sent_base;
	u64 credits_told;
	__le64 ctl_word;
	bool starved;
};

/**
 * struct krdma_bench_shared - what the threads of one run share
 * @lock: protects every field but @err
 * @ops: operations done by all threads
 * @bytes: bytes done by all threads
 * @start_ns: the run's first post (a server: first message), 0 before
 * @last_event_ns: the run's last completion: the idle timeout is the run's
 * @window_ns: start of the current peak window (0: nothing started)
 * @window_bytes: @bytes when it started
 * @peak_bps: best bandwidth over a window
 * @wc_status: the first failed completion's status (0: none, or flushes)
 * @failed_conn: the connection it came from (or of the first flush)
 * @err: why the run stops early, the first reason any thread had; every
 *	thread ends its loop when it is set (written with cmpxchg())
 */
struct krdma_bench_shared {
	spinlock_t lock;	/* protects all of it but err */
	u64 ops;
	u64 bytes;
	u64 start_ns;
	u64 last_event_ns;
	u64 window_ns;
	u64 window_bytes;
	u64 peak_bps;
	u32 wc_status;
	u32 failed_conn;
	int err;
};

/**
 * struct krdma_bench_run - one KRDMA_BENCH in progress, or one thread's part
 * @cmd: the caller's request, figures written into it (a thread's part:
 *	a copy, its figures summed into the caller's at the end)
 * @session: the caller's session
 * @shared: what all threads of the run share
 * @bconns: the connections (a thread's part: its share of the run's)
 * @num_conns: entries of @bconns
 * @buf: the local buffer, referenced
 * @lkey: its local key
 * @iova: its address for the device
 * @inline_addr: kernel address of its first byte (inline sources)
 * @echo_off: a server's reply being built: where its payload is
 * @nslots: @msg_size slots of the buffer (UD: before the GRH area)
 * @grh_off: UD: the GRH area, %KRDMA_GRH_LEN bytes per connection at the
 *	buffer's end
 * @remote_nslots: @msg_size slots of the peer's buffer
 * @credits: %KRDMA_BENCH_CREDITS
 * @starved: a step of this pass of the loop found no credit to send on
 * @opcode: the KRDMA_OP_* posted
 * @server: %KRDMA_BENCH_SERVER
 * @latency: %KRDMA_BENCH_LATENCY
 * @pingpong: latency mode with a SEND answered by the server
 * @notify: %KRDMA_BENCH_NOTIFY
 * @validate: %KRDMA_BENCH_VALIDATE
 * @inline_send: payloads go inline
 * @ud: the connections are UD: sends name an address, receives take a GRH
 * @depth: tx_depth (a server: receives kept posted)
 * @signal_every: signal one send WR in this many
 * @timeout_ns: idle limit
 * @phase: &enum krdma_bench_phase
 * @err: why the run stopped early (0: it did not)
 * @start_ns: first post
 * @end_ns: @start_ns + duration, or 0
 * @last_event_ns: last completion
 * @last_control_ns: last hello or end message (idle, but not figures)
 * @last_progress_ns: last progress update
 * @ops: operations done by these connections
 * @bytes: bytes done by these connections
 * @unpublished_ops: of @ops, those not yet added to @shared's
 * @unpublished_bytes: of @bytes, those not yet added to @shared's
 * @t0: latency mode: when the operation being timed was posted
 * @samples: latency samples
 * @num_samples: entries of @samples used
 * @max_samples: entries of @samples
 * @wrs: a chain of send WRs, built once
 * @sges: their SGEs
 * @rwrs: a chain of receive WRs
 * @rsges: their SGEs (UD: two each, the GRH's and the payload's)
 * @threads: the kernel threads running the other shares of the run
 * @num_threads: entries of @threads
 * @wc: completions being handled
 */
struct krdma_bench_run {
	struct krdma_bench *cmd;
	struct krdma_session *session;
	struct krdma_bench_shared *shared;
	struct krdma_bench_conn *bconns;
	u32 num_conns;
	struct krdma_buf *buf;
	u32 lkey;
	u64 iova;
	void *inline_addr;
	u64 echo_off;
	u64 nslots;
	u64 grh_off;
	u64 remote_nslots;
	bool credits;
	bool starved;
	u32 opcode;
	bool server;
	bool latency;
	bool pingpong;
	bool notify;
	bool validate;
	bool inline_send;
	bool ud;
	u32 depth;
	u32 signal_every;
	u64 timeout_ns;
	enum krdma_bench_phase phase;
	int err;
	u64 start_ns;
	u64 end_ns;
	u64 last_event_ns;
	u64 last_control_ns;
	u64 last_progress_ns;
	u64 ops;
	u64 bytes;
	u64 unpublished_ops;
	u64 unpublished_bytes;
	u64 t0;
	u64 *samples;
	u64 num_samples;
	u64 max_samples;
	union krdma_send_wr *wrs;
	struct ib_sge *sges;
	struct ib_recv_wr *rwrs;
	struct ib_sge *rsges;
	struct krdma_bench_thread *threads;
	u32 num_threads;
	struct ib_wc wc[KRDMA_BENCH_POLL_BATCH];
};

/**
 * struct krdma_bench_thread - a kernel thread running a share of a run
 * @run: its share: its connections, its own WR chains and figures
 * @cmd: the request as @run sees it, where @run keeps its figures
 * @task: the thread, bound to one CPU
 * @cpu: that CPU, if still online when the thread starts
 * @done: completed when its loop has ended
 */
struct krdma_bench_thread {
	struct krdma_bench_run run;
	struct krdma_bench cmd;
	struct task_struct *task;
	unsigned int cpu;
	struct completion done;
};

int krdma_bench_loop(struct krdma_bench_run *run);
void krdma_bench_stop(struct krdma_bench_run *run, int err);
void krdma_bench_progress(struct krdma_bench_run *run, u64 now);
int krdma_bench_alloc(struct krdma_bench_run *run);
void krdma_bench_free_chains(struct krdma_bench_run *run);

int krdma_bench_spawn(struct krdma_bench_run *run);
void krdma_bench_join(struct krdma_bench_run *run);
void krdma_bench_merge(struct krdma_bench_run *run);
void krdma_bench_threads_show(struct seq_file *m);

#endif /* _KRDMA_BENCH_H */
