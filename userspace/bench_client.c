// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench OP HOST: a client's connections and runs, one size or
 * -a's, --run_infinitely; --conns, connection setup at scale; and the
 * guest's memcpy bandwidth, the copy ceiling.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "bench.h"
#include "names.h"
#include "print.h"

#define RXE_VENDOR_ID 0xffffffU		/* soft-RoCE's (rxe_param.h) */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench_run_one(int fd, const struct bench_opts *o,
			 struct bench_conn *conns, const struct verbs_buf *buf,
			 uint32_t size, struct bench_result *r)
{
	uint32_t handles[BENCH_MAX_QPS];
	struct krdma_bench *b = &r->b;
	uint64_t *samples = NULL;
	pthread_t tid;
	bool thread = false;
	uint32_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	r->size = size;
	for (i = 0; i < o->qps; i++)
		handles[i] = conns[i].handle;
	if (o->via_ioctl) {
		struct via v = { .fd = fd, .conn = conns[0].handle, .o = o,
				 .buf = buf, .bc = &conns[0], .b = b,
				 .lat = &r->lat, .post_poll = true };

		r->err = bench_via_run(&v, size);
		return r->err;
	}
	b->size = sizeof(*b);
	b->flags = (o->latency ? KRDMA_BENCH_LATENCY : 0) |
		   (conns[0].credits ? KRDMA_BENCH_CREDITS : 0) |
		   (o->events ? KRDMA_BENCH_NOTIFY : 0) |
		   (o->validate ? KRDMA_BENCH_VALIDATE : 0) |
		   (o->one_cpu || o->qps == 1 ? 0 : KRDMA_BENCH_PER_CPU);
	b->opcode = bench_ops[o->op].opcode;
	b->num_conns = o->qps;
	b->conns_uptr = (uintptr_t)handles;
	b->local_buf = buf->handle;
	b->msg_size = size;
	if (o->op != BOP_SEND && o->op != BOP_SEND_IMM) {	/* one-sided */
		b->remote_addr = conns[0].adv.addr;
		b->remote_length = conns[0].adv.length;
		b->remote_rkey = conns[0].adv.rkey;
	}
	b->tx_depth = o->latency ? 0 : o->tx_depth;
	b->iters = o->iters;
	b->duration_ms = o->duration_s * 1000;
	b->signal_every = o->cq_mod;
	b->inline_size = o->inline_size;
	b->timeout_ms = o->timeout_s * 1000;
	if (o->latency) {
		b->max_samples = bench_lat_max_samples(o->iters);
		samples = calloc(b->max_samples, sizeof(*samples));
		if (!samples)
			return r->err = -ENOMEM;
		b->samples_uptr = (uintptr_t)samples;
	}
	memset(&bench_progress, 0, sizeof(bench_progress));
	b->progress_uptr = (uintptr_t)&bench_progress;
	bench_progress_size = size;
	bench_progress_gbits = o->report_gbits;
	bench_progress_stop = 0;
	if ((o->duration_s > 1 || o->iters > 100000) && !o->run_infinitely &&
	    !o->output)
		thread = !pthread_create(&tid, NULL, bench_progress_thread,
					 NULL);
	ret = ioctl(fd, KRDMA_BENCH, b) ? -errno : 0;
	if (thread) {
		bench_progress_stop = 1;
		pthread_join(tid, NULL);
	}
	if (samples)
		bench_lat_figures(o, &r->lat, samples,
				  b->lat_samples < b->max_samples ?
				  b->lat_samples : b->max_samples);
	free(samples);
	r->err = ret;
	return ret;
}

/* The path MTU of @conn, in bytes. */
static int conn_path_mtu(int fd, uint32_t conn, uint32_t *mtu)
{
	struct krdma_conn_query q = { .size = sizeof(q), .handle = conn };
	int ret;

	ret = krdma_ioctl_quiet(fd, KRDMA_CONN_QUERY, &q);
	if (ret)
		err_msg("bench: query the connection: %s", strerror(-ret));
	*mtu = q.path_mtu;
	return ret;
}

/*
 * UD: a message is one packet, of the port's MTU at most; -a stops there,
 * and -s beyond it is refused (the server, which checks too, runs nothing).
 */
static int ud_max_size(int fd, uint32_t conn, const struct bench_opts *o,
		       uint32_t *max_size)
{
	uint32_t mtu;
	int ret;

	ret = conn_path_mtu(fd, conn, &mtu);
	if (ret)
		return ret;
	if (o->all) {
		if (*max_size > mtu)
			*max_size = mtu;
		return 0;
	}
	if (*max_size > mtu) {
		err_msg("bench: -s %u: over UD a message is one packet, at "
			"most the MTU, %u bytes", *max_size, mtu);
		return -EMSGSIZE;
	}
	return 0;
}

/*
 * rxe (its vendor ID) wedges a UC QP that drops the last packet of a
 * WRITE_WITH_IMM of several for want of a receive: every later message to
 * it is dropped too (README, Known problems).  Say so before such a run on
 * @conn, whose device's vendor is @vendor_id.
 */
void bench_uc_write_imm_warn(int fd, uint32_t conn, uint32_t vendor_id,
			     uint32_t transport, int op, uint32_t max_size)
{
	uint32_t mtu;

	if (transport != KRDMA_TRANSPORT_UC || op != BOP_WRITE_IMM ||
	    vendor_id != RXE_VENDOR_ID || conn_path_mtu(fd, conn, &mtu) ||
	    max_size <= mtu)
		return;
	warn_msg("bench: -c uc write_imm over %u bytes (the MTU) on rxe: one "
		 "that finds no receive at the server wedges its QP, and the "
		 "run then ends with a timeout", mtu);
}

/*
 * --run_infinitely: runs of -D seconds (1) over the same connections, a
 * line each, until SIGINT or SIGTERM.  The signal is held while a run
 * goes, so that it ends the next run's start, not a run (an interrupted
 * run leaves the QPs in the error state, with no end message to send);
 * then the end message goes as after any run, unless another signal comes.
 */
static int bench_forever(int fd, const struct bench_opts *o,
			 struct bench_conn *conns, const struct verbs_buf *buf)
{
	struct bench_result r;
	sigset_t set, old;
	int ret = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	while (!loop_stop) {
		pthread_sigmask(SIG_BLOCK, &set, &old);
		ret = bench_run_one(fd, o, conns, buf, o->size, &r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (ret) {
			err_msg("bench: %u B: %s%s%s", o->size,
				bench_errno_hint(ret),
				r.b.wc_status ? ": " : "",
				r.b.wc_status ? wc_status_name(r.b.wc_status) :
				"");
			break;
		}
		bench_print_row(o, &r, false);
	}
	/* the signal asked for the end, which goes on (another one ends it) */
	if (!ret)
		loop_stop = 0;
	return ret;
}

int bench_client(int fd, const struct bench_opts *o)
{
	struct bench_conn *conns;
	struct krdma_sockaddr dst;
	struct verbs_buf buf = {}, ctl = {};
	struct bench_result r;
	struct bench_ib_ends *ends = NULL;
	uint32_t group, i, size, max_size, vendor_id = 0;
	char dev[KRDMA_NAME_MAX] = "?";
	struct dev_snapshot snap;
	struct krdma_wc wc;
	uint64_t server_bad = 0, len;
	bool credits;
	int ret, status = 0;

	ret = addr_parse("bench", "HOST", o->host, o->port, &dst);
	if (ret)
		return ret;
	conns = calloc(o->qps, sizeof(*conns));
	if (!conns)
		return 1;
	ends = calloc(o->qps, sizeof(*ends));
	if (!ends) {
		free(conns);
		return 1;
	}
	ret = bench_ib_source(fd, &o->ib, &dst, &bench_src) ? -EINVAL : 0;
	if (ret)
		goto out;
	srand(getpid() ^ time(NULL));
	group = rand();
	for (i = 0; i < o->qps; i++) {
		ret = bench_connect(fd, o, &dst, group, i, o->qps, &conns[i],
				    true);
		if (ret)
			goto out;
		/* -d, -i, -x, -m: on what was asked, or not at all */
		if (bench_ib_check(fd, &o->ib, conns[i].handle,
				   conns[i].dev_index, conns[i].qp_num,
				   &bench_src, &dst, &ends[i])) {
			ret = -EINVAL;
			goto out;
		}
	}
	/*
	 * A server's side of a two-sided run speaks with immediate data
	 * (uapi/krdma.h, "Benchmark wire protocol"), which iWARP has not:
	 * refused here, rather than a wait for a READY that cannot come.
	 * SEND there speaks with credits, which the kernel's run keeps to.
	 */
	if (ends[0].iwarp && two_sided(o->op) && o->op != BOP_SEND) {
		err_msg("bench: %s: the server's side of the run speaks with "
			"immediate data, which iWARP has not",
			bench_ops[o->op].name);
		ret = -EOPNOTSUPP;
		goto out;
	}
	credits = ends[0].iwarp && o->op == BOP_SEND;
	if (credits && o->via_ioctl) {
		err_msg("bench: send --via-ioctl over iWARP: the credits a "
			"SEND run there keeps to are the kernel loop's");
		ret = -EOPNOTSUPP;
		goto out;
	}
	for (i = 0; i < o->qps; i++)
		conns[i].credits = credits;
	if (!query_devices(fd, true, conns[0].dev_index, &snap)) {
		if (snap.num_devs) {
			snprintf(dev, sizeof(dev), "%s", snap.devs[0].name);
			vendor_id = snap.devs[0].vendor_id;
		}
		free_snapshot(&snap);
	}
	max_size = o->all ? bench_all_max(o) : o->size;
	if (o->transport == KRDMA_TRANSPORT_UD) {
		ret = ud_max_size(fd, conns[0].handle, o, &max_size);
		if (ret)
			goto out;
	}
	bench_uc_write_imm_warn(fd, conns[0].handle, vendor_id, o->transport,
				o->op, max_size);
	len = bench_buf_len(max_size, o->latency ? 1 : o->tx_depth,
			    o->validate,
			    bench_tail_len(o->transport, credits, o->qps),
			    dev_max_buf(fd, conns[0].dev_index));
	/* credits: a whole number of control areas (uapi/krdma.h) */
	if (credits)
		len = (len + sizeof(struct krdma_bench_ctl) - 1) /
		      sizeof(struct krdma_bench_ctl) *
		      sizeof(struct krdma_bench_ctl);
	/* -b: the server's run comes here too; credits: its words */
	ret = bench_buf_get(fd, conns[0].dev_index,
			    KRDMA_ACCESS_LOCAL_WRITE |
			    (o->bidir ? KRDMA_ACCESS_REMOTE_WRITE |
			     KRDMA_ACCESS_REMOTE_READ : 0) |
			    (credits ? KRDMA_ACCESS_REMOTE_WRITE : 0),
			    len, o->hugepages, &buf);
	/* -b, credits: the server's messages, apart from the runs' slots */
	if (!ret && (o->bidir || credits))
		ret = verbs_buf_alloc(fd, conns[0].dev_index,
				      KRDMA_ACCESS_LOCAL_WRITE |
				      KRDMA_ACCESS_REMOTE_WRITE,
				      BENCH_CTL_LEN, &ctl);
	if (ret)
		goto out;
	bench_fill_pattern(buf.mem, buf.length);
	if (o->corrupt)
		buf.mem[0] ^= 0xff;
	/* credits: the server's first credits are its READY */
	if (credits) {
		ret = bench_credits_request(fd, o, conns, &buf, &ctl);
		if (ret) {
			err_msg("bench: the server never said it was ready: %s",
				bench_errno_hint(ret));
			goto out;
		}
	}
	for (i = 0; i < o->qps && two_sided(o->op) && !credits; i++) {
		/* the server's KRDMA_BENCH_READY_IMM */
		if (o->transport != KRDMA_TRANSPORT_RC)
			ret = bench_until_answer(fd, conns[i].handle, o, &buf,
						 KRDMA_BENCH_READY_IMM,
						 &wc.imm_data);
		else
			ret = bench_wait_wc(fd, conns[i].handle, KRDMA_OP_RECV,
					    true, loop_now_ms(),
					    o->timeout_s * 1000, &wc);
		if (ret) {
			err_msg("bench: the server never said it was ready: %s",
				bench_errno_hint(ret));
			goto out;
		}
	}
	bench_print_header(o, dev, o->latency, ends);
	if (pr_is_json()) {
		pr_str("op", bench_ops[o->op].name);
		pr_str("mode", o->latency ? "lat" : "bw");
		pr_str("transport", bench_transport_name(o->transport, false));
		pr_str("loop", o->via_ioctl ? "ioctl" : "kernel");
		pr_str("device", dev);
		pr_u64("qps", o->qps);
		pr_str("threads", o->one_cpu || o->qps == 1 ? "one" :
		       "per_cpu");
		pr_str("directions", o->bidir ? "both" : "to_server");
		pr_u64("tx_depth", o->latency ? 1 : o->tx_depth);
		pr_u64("cq_mod", o->cq_mod);
		pr_u64("inline", o->inline_size);
		pr_str("completions", o->events ? "events" : "polling");
		pr_u64("path_mtu", ends[0].path_mtu);
		pr_str("bw_unit", o->report_gbits ? "Gb/sec" : "MB/sec");
	}
	if (pr_is_json()) {
		bench_ib_print(ends, o->qps);
		pr_arr_begin("results");
	}
	fflush(stdout);
	if (o->run_infinitely)
		ret = bench_forever(fd, o, conns, &buf);
	for (size = o->all ? 2 : o->size; size <= max_size &&
	     !o->run_infinitely; size *= 2) {
		memset(&r, 0, sizeof(r));
		ret = o->bidir ? bench_bidir_request(fd, o, &conns[0], &buf,
						     &ctl, size) : 0;
		if (!ret)
			ret = bench_run_one(fd, o, conns, &buf, size, &r);
		if (!ret && o->bidir)
			ret = bench_bidir_report(fd, o, &conns[0], &ctl, &r);
		/* -b: no row of one direction, where both were asked for */
		if ((ret != -EINTR || r.b.ops_done) && r.bidir == o->bidir)
			bench_print_row(o, &r, o->latency);
		if (ret) {
			err_msg("bench: %u B: %s%s%s", size,
				bench_errno_hint(ret),
				r.b.wc_status ? ": " : "",
				r.b.wc_status ? wc_status_name(r.b.wc_status) :
				"");
			break;
		}
		if (r.b.validate_errors)
			status = 1;
		if (!o->all)
			break;
	}
	if (pr_is_json())
		pr_arr_end();
	for (i = 0; i < o->qps && !ret && two_sided(o->op); i++) {
		uint32_t bad = 0;

		if (credits)
			ret = bench_credits_end(fd, conns[i].handle,
						&bench_ctl_area(&buf, o->qps)[i],
						o->timeout_s, &bad);
		else if (o->transport != KRDMA_TRANSPORT_RC)
			ret = bench_until_answer(fd, conns[i].handle, o, &buf,
						 KRDMA_BENCH_END_IMM, &bad);
		else
			ret = bench_send_end_report(fd, conns[i].handle,
						    o->timeout_s, &bad);
		if (ret) {
			err_msg("bench: no answer from the server to the end "
				"message: %s", bench_errno_hint(ret));
			break;
		}
		server_bad += bad;
	}
	if (o->validate && two_sided(o->op) && !ret && !o->output) {
		if (pr_is_json()) {
			pr_u64("server_validate_errors", server_bad);
		} else {
			printf(" validation at the server: %" PRIu64
			       " message(s) did not carry the pattern\n",
			       server_bad);
			fflush(stdout);
		}
		if (server_bad)
			status = 1;
	}
	if (!pr_is_json() && !o->output)
		printf("%s", bench_bw_line);
	if (status && !ret) {
		err_msg("bench: --validate: payloads did not carry the "
			"pattern");
		ret = -EIO;
	}
out:
	for (i = 0; i < o->qps; i++)
		if (conns[i].handle)
			bench_disconnect(fd, conns[i].handle);
	verbs_buf_free(fd, &buf);
	verbs_buf_free(fd, &ctl);
	free(conns);
	free(ends);
	return ret ? 1 : 0;
}

/* /proc/meminfo: the kernel memory in use, in kB (MemTotal - MemAvailable) */
static long mem_used_kb(long *slab)
{
	char line[128];
	long total = 0, avail = 0, v;
	FILE *f = fopen("/proc/meminfo", "r");

	*slab = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %ld", &v) == 1)
			total = v;
		else if (sscanf(line, "MemAvailable: %ld", &v) == 1)
			avail = v;
		else if (sscanf(line, "Slab: %ld", &v) == 1)
			*slab = v;
	}
	fclose(f);
	return total - avail;
}

/* --conns N: set N connections up, then take them down. */
int bench_conns(int fd, const struct bench_opts *o)
{
	struct bench_conn *conns;
	struct krdma_sockaddr dst;
	long used0, used1, slab0, slab1;
	uint32_t i, done = 0;
	double t0, t1;
	int ret = 0;

	ret = addr_parse("bench", "HOST", o->host, o->port, &dst);
	if (ret)
		return ret;
	if (bench_ib_source(fd, &o->ib, &dst, &bench_src))
		return 1;
	conns = calloc(o->conns, sizeof(*conns));
	if (!conns)
		return 1;
	used0 = mem_used_kb(&slab0);
	t0 = now_s();
	for (i = 0; i < o->conns && !loop_stop; i++) {
		ret = bench_connect(fd, o, &dst, 0, i, o->conns, &conns[i],
				    false);
		if (ret)
			break;
		done++;
	}
	t1 = now_s();
	used1 = mem_used_kb(&slab1);
	/* -d, -i, -x, -m: checked after the timing */
	for (i = 0; i < done && (o->ib.dev || o->ib.port || o->ib.mtu ||
				 o->ib.gid_index >= 0); i++) {
		struct bench_ib_ends e;

		if (bench_ib_check(fd, &o->ib, conns[i].handle,
				   conns[i].dev_index, conns[i].qp_num,
				   &bench_src, &dst, &e)) {
			ret = 1;
			break;
		}
	}
	pr_u64("conns", o->conns);
	pr_u64("connected", done);
	pr_fmt_double("setup_s", "setup %.3f s", t1 - t0);
	pr_fmt_double("per_conn_ms", "(%.3f ms per connection)",
		      done ? (t1 - t0) * 1e3 / done : 0);
	pr_fmt_double("mem_per_conn_kb", "memory %.1f kB per connection",
		      done ? (double)(used1 - used0) / done : 0);
	pr_fmt_double("slab_per_conn_kb", "(slab %.1f kB)",
		      done ? (double)(slab1 - slab0) / done : 0);
	pr_nl();
	t0 = now_s();
	for (i = 0; i < done; i++)
		bench_disconnect(fd, conns[i].handle);
	pr_fmt_double("teardown_s", "teardown %.3f s", now_s() - t0);
	free(conns);
	return done == o->conns && !ret ? 0 : 1;
}

/* memcpy of -s bytes between two 64 MiB areas: the copy ceiling. */
int bench_memcpy(const struct bench_opts *o)
{
	size_t area = 64 << 20, n = area / o->size, i;
	uint8_t *src, *dst;
	uint64_t iters = o->have_iters ? o->iters : 20000, k;
	double t0, t;

	if (!n) {
		err_msg("bench memcpy: -s: at most %zu bytes", area);
		return EXIT_USAGE;
	}
	src = malloc(area);
	dst = malloc(area);
	if (!src || !dst) {
		err_msg("bench memcpy: %s", strerror(ENOMEM));
		free(src);
		free(dst);
		return 1;
	}
	memset(src, 1, area);
	memset(dst, 2, area);
	t0 = now_s();
	for (k = 0; k < iters; k++) {
		i = k % n;
		memcpy(dst + i * o->size, src + (n - 1 - i) * o->size,
		       o->size);
	}
	t = now_s() - t0;
	pr_u64("bytes", o->size);
	pr_u64("iterations", iters);
	pr_fmt_double("memcpy_mbps", "memcpy %.2f MB/sec",
		      iters * (double)o->size / MIB / t);
	pr_nl();
	free(src);
	free(dst);
	return 0;
}
