// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench --via-ioctl: the kernel's measuring loop run in this
 * process instead, one KRDMA_POST per operation and KRDMA_POLL for the
 * rest, timed with the CPU's counter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>

#include "bench.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* VIA_RECVS posted this many at a time */
#define VIA_RECV_BATCH 16

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * --via-ioctl times its pings with the CPU's counter, as perftest does and
 * as the kernel's loop does (sched_clock()): where the clocksource is a
 * device (the HPET under TCG) clock_gettime() is a system call and a device
 * read, 2.6 us there, as much as a KRDMA_POST.  The counter's rate is
 * taken against CLOCK_MONOTONIC over the run (counter_scale()).
 */
static uint64_t counter(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return now_ns();
#endif
}

/* Nanoseconds per counter tick between two (counter, CLOCK_MONOTONIC) pairs. */
static double counter_scale(uint64_t c0, uint64_t ns0, uint64_t c1,
			    uint64_t ns1)
{
	return c1 > c0 && ns1 > ns0 ? (double)(ns1 - ns0) / (c1 - c0) : 1.0;
}

/* Completions a poll returned: @n, or -EIO at the first that failed. */
static int via_check_wcs(struct via *v, const struct krdma_wc *wc, uint32_t n)
{
	uint32_t i;

	v->b->cq_polls++;
	if (!n)
		v->b->empty_polls++;
	else
		v->idle_since_ms = 0;
	for (i = 0; i < n; i++) {
		if (wc[i].status) {
			v->b->wc_status = wc[i].status;
			v->b->failed_conn = v->conn;
			return -EIO;
		}
	}
	return n;
}

/*
 * KRDMA_POST of @wrs; with @wc, KRDMA_POST_POLL, which also returns in
 * the same call what completed, as KRDMA_POLL would (up to 100 ms for the
 * first): returns completions, or -errno.
 */
static int via_post_wrs(struct via *v, struct krdma_wr *wrs, uint32_t n,
			struct krdma_wc *wc, uint32_t max)
{
	struct krdma_post post = {
		.size = sizeof(post),
		.handle = v->conn,
		.num_wrs = n,
		.wr_entry_size = sizeof(*wrs),
		.wrs_uptr = (uintptr_t)wrs,
	};
	int ret;

	if (wc && v->post_poll) {
		post.flags = KRDMA_POST_POLL;
		post.num_wcs = max;
		post.wc_entry_size = sizeof(*wc);
		post.timeout_ms = 100;
		post.wcs_uptr = (uintptr_t)wc;
	}
	ret = ioctl(v->fd, KRDMA_POST, &post) ? -errno : 0;
	if (ret == -EOPNOTSUPP && post.flags) {
		/* an older krdma.ko, which posted nothing: post, poll apart */
		v->post_poll = false;
		return via_post_wrs(v, wrs, n, NULL, 0);
	}
	v->b->post_calls++;
	if (ret || !post.flags)
		return ret;
	return via_check_wcs(v, wc, post.num_wcs);
}

/*
 * A ping-pong's receives, VIA_RECV_BATCH to a KRDMA_POST once as many are
 * taken, as ib_send_lat keeps rx_depth of them posted: one ioctl per ping
 * for the ping itself, not a second one for its receive.  Each spans the
 * whole buffer, so what is left posted after one size fits the next.
 */
static int via_post_recvs(struct via *v)
{
	struct krdma_wr wrs[VIA_RECV_BATCH];
	uint32_t i;
	int ret;

	if (v->bc->via_recvs > VIA_RECVS - VIA_RECV_BATCH)
		return 0;
	for (i = 0; i < VIA_RECV_BATCH; i++)
		wrs[i] = (struct krdma_wr){
			.wr_id = 1 << 20,
			.opcode = KRDMA_OP_RECV,
			.num_sge = 1,
			.sge[0] = { .buf_handle = v->buf->handle,
				    .length = (uint32_t)v->buf->length },
		};
	ret = via_post_wrs(v, wrs, VIA_RECV_BATCH, NULL, 0);
	if (!ret)
		v->bc->via_recvs += VIA_RECV_BATCH;
	return ret;
}

/*
 * One WR; with @wc, also what completed (via_post_wrs()).  The WR is the
 * run's, zeroed once: only the fields an operation sets change.
 */
static int via_post(struct via *v, uint32_t opcode, uint64_t wr_id,
		    uint32_t size, bool signaled, uint64_t roff,
		    struct krdma_wc *wc, uint32_t max)
{
	struct krdma_wr *wr = &v->wr;

	wr->wr_id = wr_id;
	wr->opcode = opcode;
	wr->flags = (signaled ? KRDMA_WR_SIGNALED : 0) |
		    (opcode != KRDMA_OP_RECV && size <= v->o->inline_size &&
		     opcode != KRDMA_OP_RDMA_READ &&
		     opcode != KRDMA_OP_ATOMIC_FETCH_ADD &&
		     opcode != KRDMA_OP_ATOMIC_CMP_SWP ? KRDMA_WR_INLINE : 0);
	wr->num_sge = 1;
	/* what the opcode does not use stays 0: the kernel refuses it else */
	if (opcode != KRDMA_OP_SEND && opcode != KRDMA_OP_SEND_WITH_IMM) {
		wr->remote_addr = v->bc->adv.addr + roff;
		wr->rkey = v->bc->adv.rkey;
	}
	if (opcode == KRDMA_OP_ATOMIC_FETCH_ADD ||
	    opcode == KRDMA_OP_ATOMIC_CMP_SWP)
		wr->compare_add = 1;
	wr->sge[0].buf_handle = v->buf->handle;
	wr->sge[0].length = size;
	return via_post_wrs(v, wr, 1, wc, max);
}

/*
 * One batch, as soon as there is one; returns completions (0 after 100 ms
 * with none), -ETIMEDOUT once none came for -T (a message UC or UD lost:
 * the kernel's loop ends there too), or -errno.  KRDMA_POLL waits in the
 * kernel, busy-polling the CQ (or, with -e, asleep on its notification):
 * one ioctl per batch rather than one per empty look at the CQ.  The clock
 * is read only when a poll came back empty, after its 100 ms.
 */
static int via_poll(struct via *v, struct krdma_wc *wc, uint32_t max)
{
	struct krdma_poll p = {
		.size = sizeof(p),
		.handle = v->conn,
		.num_wcs = max,
		.wc_entry_size = sizeof(*wc),
		.timeout_ms = 100,
		.wcs_uptr = (uintptr_t)wc,
	};
	int64_t now;

	if (ioctl(v->fd, KRDMA_POLL, &p))
		return -errno;
	if (!p.num_wcs) {
		now = loop_now_ms();
		if (!v->idle_since_ms)
			v->idle_since_ms = now;
		else if (now - v->idle_since_ms >= v->o->timeout_s * 1000LL)
			return -ETIMEDOUT;
	}
	return via_check_wcs(v, wc, p.num_wcs);
}

/*
 * via_poll() for the bandwidth loop, whose signaled WRs complete in order:
 * @completed becomes the wr_id (the count) of the last completion, @last
 * the time a poll came back with something.
 */
static int via_reap(struct via *v, struct krdma_wc *wc, uint32_t max,
		    uint64_t *completed, uint64_t *last)
{
	int n = via_poll(v, wc, max), i;

	for (i = 0; i < n; i++)
		*completed = wc[i].wr_id;
	if (n)
		*last = now_ns();
	return n;
}

int bench_via_run(struct via *v, uint32_t size)
{
	const struct bench_opts *o = v->o;
	uint32_t opcode = bench_ops[o->op].opcode;
	uint64_t iters = o->iters, posted = 0, completed = 0, *samples = NULL;
	uint64_t n_samples = 0, max_samples, deadline = 0, start, last = 0;
	uint64_t c_start, k;
	uint64_t remote_slots = v->bc->adv.length / size;
	struct krdma_wc wc[32];
	bool pingpong = o->latency && two_sided(o->op);
	int ret = 0, n, i;

	if (!remote_slots)
		remote_slots = 1;
	/* as the kernel's loop: the first KRDMA_BENCH_MAX_SAMPLES */
	max_samples = bench_lat_max_samples(iters);
	if (o->latency) {
		samples = calloc(max_samples, sizeof(*samples));
		if (!samples)
			return -ENOMEM;
	}
	start = now_ns();
	c_start = counter();
	if (!iters)
		deadline = start + o->duration_s * 1000000000ULL;
	while (!ret) {
		uint64_t t0, now;

		if (loop_stop) {
			ret = -EINTR;
			break;
		}
		if (iters ? posted >= iters : now_ns() >= deadline)
			break;
		if (o->latency) {
			if (pingpong)
				ret = via_post_recvs(v);
			t0 = counter();
			/* pings are signaled one in -Q, as in the kernel */
			posted++;
			/* the op, and in the same call what completed */
			n = ret ? ret :
			    via_post(v, opcode, posted, size,
				     !pingpong || !(posted % o->cq_mod) ||
				     posted == iters, 0, wc, ARRAY_SIZE(wc));
			/* until the reply (ping-pong) or the completion */
			while (n >= 0) {
				for (i = 0; i < n; i++) {
					/* UC: an answer to a repeated hello */
					if (pingpong &&
					    bench_late_ready(&wc[i])) {
						v->bc->via_recvs--;
						continue;
					}
					if (pingpong ?
					    wc[i].opcode == KRDMA_OP_RECV :
					    wc[i].wr_id == posted)
						break;
				}
				if (i < n)
					break;
				n = loop_stop ? -EINTR :
				    via_poll(v, wc, ARRAY_SIZE(wc));
			}
			if (n < 0) {
				ret = n;
				break;
			}
			now = counter();
			/* (a process moved to another CPU may see it behind) */
			now = now > t0 ? now - t0 : 0;
			if (n_samples < max_samples)
				samples[n_samples++] = pingpong ? now / 2 : now;
			completed++;
			if (pingpong)
				v->bc->via_recvs--;
			continue;
		}
		/* bandwidth: one WR per KRDMA_POST while there is room */
		while (posted - completed < o->tx_depth &&
		       (iters ? posted < iters : now_ns() < deadline)) {
			bool sig = !((posted + 1) % o->cq_mod) ||
				   posted + 1 == iters;

			ret = via_post(v, opcode, posted + 1,
				       is_atomic(o->op) ? 8 : size, sig,
				       is_atomic(o->op) ? 0 :
				       posted % remote_slots * size, NULL, 0);
			if (ret)
				break;
			posted++;
		}
		n = ret ? 0 : via_reap(v, wc, ARRAY_SIZE(wc), &completed,
				       &last);
		if (n < 0)
			ret = n;
	}
	/* what is still in flight: a duration run leaves its tail unsignaled */
	while (!ret && completed < posted && !o->latency) {
		if (posted % o->cq_mod) {
			ret = via_post(v, opcode, posted + 1,
				       is_atomic(o->op) ? 8 : size, true, 0,
				       NULL, 0);
			posted++;
		}
		n = ret ? 0 : via_reap(v, wc, ARRAY_SIZE(wc), &completed,
				       &last);
		if (n < 0)
			ret = n;
	}
	if (o->latency && completed) {
		double scale;

		last = now_ns();
		scale = counter_scale(c_start, start, counter(), last);
		for (k = 0; k < n_samples; k++)
			samples[k] = samples[k] * scale;
	}
	v->b->ops_done = completed;
	v->b->bytes_done = completed * (is_atomic(o->op) ? 8 : size);
	v->b->elapsed_ns = last > start ? last - start : 0;
	if (v->b->elapsed_ns)
		v->b->peak_bps = v->b->bytes_done * 1e9 / v->b->elapsed_ns;
	if (samples)
		bench_lat_figures(o, v->lat, samples, n_samples);
	free(samples);
	return ret;
}

