// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench: a run's figures (the latency figures made of its
 * samples), its header and lines as perftest prints them or as JSON,
 * what a run's error means, and the progress shown while a long run goes.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "print.h"

/* ---- results ---- */

const char bench_bw_line[] =
	"---------------------------------------------------------------------------------------\n";

/* MB/sec (MiB, as perftest's) or, --report_gbits, Gb/sec */
double bench_bw_unit(const struct bench_opts *o, double bytes_per_s)
{
	return o->report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / MIB;
}

void bench_print_header(const struct bench_opts *o, const char *dev,
			bool latency, const struct bench_ib_ends *ends)
{
	uint32_t mtu = ends[0].path_mtu;

	if (pr_is_json() || o->output)
		return;
	printf("%s", bench_bw_line);
	printf("                    %s %s (krdma, %s loop)\n",
	       bench_ops[o->op].name, latency ? "Latency Test" : "BW Test",
	       o->via_ioctl ? "ioctl-per-op" : "in-kernel");
	printf(" Device         : %s\n", dev);
	/* perftest's names: IB for InfiniBand and RoCE, IW for iWARP */
	printf(" Number of qps  : %u\t\tTransport type : %s\n", o->qps,
	       ends[0].iwarp ? "IW" : "IB");
	printf(" Loop threads   : %s\n", o->one_cpu || o->qps == 1 ? "1" :
	       "one per CPU, up to one per QP");
	printf(" Connection type: %s\t\tUsing SRQ      : OFF\n",
	       bench_transport_name(o->transport, true));
	/* -b: perftest's figures are both directions' sums */
	if (o->bidir)
		printf(" Bidirectional  : ON (both directions summed)\n");
	printf(" TX depth       : %u\n", latency ? 1 : o->tx_depth);
	printf(" CQ Moderation  : %u\n", o->cq_mod);
	printf(" Mtu            : %u[B] (the path's)\n", mtu);
	printf(" Completions    : %s\n", o->events ? "events" : "polling");
	printf(" Max inline data: %u[B]\n", o->inline_size);
	printf(" rdma_cm QPs    : ON\n");
	printf("%s", bench_bw_line);
	bench_ib_print(ends, o->qps);
	printf("%s", bench_bw_line);
	if (latency)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
		       "99%% percentile[usec]   99.9%% percentile[usec] \n");
	else
		printf(" #bytes     #iterations    BW peak[%s]    "
		       "BW average[%s]   MsgRate[Mpps]\n",
		       o->report_gbits ? "Gb/sec" : "MB/sec",
		       o->report_gbits ? "Gb/sec" : "MB/sec");
}

/* bytes per second */
static double bw_avg(const struct krdma_bench *b)
{
	return b->elapsed_ns ? b->bytes_done * 1e9 / b->elapsed_ns : 0;
}

static double msg_rate(const struct krdma_bench *b)
{
	return b->elapsed_ns ? b->ops_done * 1e3 / b->elapsed_ns : 0;
}

/*
 * A bandwidth row's figures: this host's run, and with -b the server's
 * toward it added, as perftest -b adds the two ends' (each run's own
 * average over its own time).
 */
struct bw_figures {
	double peak, avg, rate;
};

static struct bw_figures bw_figures(const struct bench_result *r)
{
	struct bw_figures f = { r->b.peak_bps, bw_avg(&r->b),
				msg_rate(&r->b) };

	if (r->bidir) {
		f.peak += r->remote.peak_bps;
		f.avg += bw_avg(&r->remote);
		f.rate += msg_rate(&r->remote);
	}
	return f;
}

void bench_print_row(const struct bench_opts *o,
		     const struct bench_result *r, bool latency)
{
	const struct krdma_bench *b = &r->b;
	const struct bench_lat *l = &r->lat;
	struct bw_figures f = bw_figures(r);

	if (o->output) {	/* perftest's --output: the number alone */
		printf("%f\n", latency ? l->typical / 1e3 :
		       bench_bw_unit(o, f.avg));
		fflush(stdout);
		return;
	}
	if (pr_is_json()) {
		pr_obj_begin(NULL);
		pr_u64("bytes", r->size);
		pr_u64("iterations", b->ops_done);
		pr_fmt_double("elapsed_s", "%f", b->elapsed_ns / 1e9);
		if (latency) {
			pr_fmt_double("t_min_us", "%f", l->min / 1e3);
			pr_fmt_double("t_max_us", "%f", l->max / 1e3);
			pr_fmt_double("t_typical_us", "%f", l->typical / 1e3);
			pr_fmt_double("t_avg_us", "%f", l->avg / 1e3);
			pr_fmt_double("t_stdev_us", "%f", l->stdev / 1e3);
			pr_fmt_double("p99_us", "%f", l->p99 / 1e3);
			pr_fmt_double("p999_us", "%f", l->p999 / 1e3);
			pr_u64("samples", l->samples);
		} else {
			bool g = o->report_gbits;

			pr_fmt_double(g ? "bw_peak_gbps" : "bw_peak_mbps", "%f",
				      bench_bw_unit(o, f.peak));
			pr_fmt_double(g ? "bw_avg_gbps" : "bw_avg_mbps", "%f",
				      bench_bw_unit(o, f.avg));
			pr_fmt_double("msg_rate_mpps", "%f", f.rate);
			/* -b: each direction's own, this host's and the server's */
			if (r->bidir) {
				pr_fmt_double(g ? "bw_avg_local_gbps" :
					      "bw_avg_local_mbps", "%f",
					      bench_bw_unit(o, bw_avg(b)));
				pr_fmt_double(g ? "bw_avg_remote_gbps" :
					      "bw_avg_remote_mbps", "%f",
					      bench_bw_unit(o,
							    bw_avg(&r->remote)));
				pr_u64("remote_iterations",
				       r->remote.ops_done);
			}
		}
		pr_u64("cq_polls", b->cq_polls);
		pr_u64("empty_polls", b->empty_polls);
		pr_u64("post_calls", b->post_calls);
		pr_u64("validate_errors", b->validate_errors);
		if (r->err)
			pr_str("error", strerror(-r->err));
		pr_obj_end();
		return;
	}
	if (latency)
		printf(" %-7u %-10" PRIu64 "   %-7.2f        %-7.2f      "
		       "%-7.2f            %-7.2f        %-7.2f          "
		       "%-7.2f                %-7.2f\n",
		       r->size, (uint64_t)b->ops_done, l->min / 1e3,
		       l->max / 1e3, l->typical / 1e3, l->avg / 1e3,
		       l->stdev / 1e3, l->p99 / 1e3, l->p999 / 1e3);
	else
		printf(" %-10u %-10" PRIu64 "       %-9.2f          %-9.2f"
		       "            %.6f\n", r->size, (uint64_t)b->ops_done,
		       bench_bw_unit(o, f.peak), bench_bw_unit(o, f.avg),
		       f.rate);
	if (b->validate_errors)
		printf(" validation: %" PRIu64 " message(s) did not carry the "
		       "pattern\n", (uint64_t)b->validate_errors);
	fflush(stdout);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* -H, -U: every latency, one a line, as perftest prints them */
static void print_samples(const uint64_t *s, uint64_t n)
{
	uint64_t i;

	printf("#, usec\n");
	for (i = 0; i < n; i++)
		printf("%" PRIu64 ", %g\n", i + 1, s[i] / 1e3);
}

/*
 * The figures perftest prints, of @n samples (sorted here); with -U the
 * samples before, with -H after they are sorted.
 */
void bench_lat_figures(const struct bench_opts *o, struct bench_lat *l,
		       uint64_t *s, uint64_t n)
{
	double sum = 0, var = 0;
	uint64_t i, k;

	memset(l, 0, sizeof(*l));
	l->samples = n;
	if (!n)
		return;
	if (o->unsorted)
		print_samples(s, n);
	qsort(s, n, sizeof(*s), cmp_u64);
	if (o->histogram)
		print_samples(s, n);
	for (i = 0; i < n; i++)
		sum += s[i];
	l->avg = sum / n;
	for (i = 0; i < n; i++)
		var += (s[i] - l->avg) * (s[i] - l->avg);
	l->stdev = sqrt(var / n);
	l->min = s[0];
	l->max = s[n - 1];
	l->typical = s[n / 2];
	k = (n * 990 + 999) / 1000;
	l->p99 = s[k ? k - 1 : 0];
	k = (n * 999 + 999) / 1000;
	l->p999 = s[k ? k - 1 : 0];
}

/* The samples a latency run of @iters operations returns (0: timed). */
uint64_t bench_lat_max_samples(uint64_t iters)
{
	return iters && iters < KRDMA_BENCH_MAX_SAMPLES ? iters :
	       KRDMA_BENCH_MAX_SAMPLES;
}

const char *bench_errno_hint(int err)
{
	switch (err) {
	case -EINTR:
		return "interrupted";
	case -ETIMEDOUT:
		return "nothing completed within the timeout";
	case -EIO:
		return "a completion failed";
	case -EBUSY:
		return "the connection had work the run did not post";
	case -EAGAIN:
		return "other runs hold the kernel threads krdma allows "
		       "(its bench_max_threads parameter): --one-cpu, or fewer -q";
	case -EPERM:
		return "on this kernel krdma's threads would escape your "
		       "cgroup's CPU limit, which needs CAP_SYS_ADMIN: --one-cpu";
	default:
		return strerror(-err);
	}
}

/* ---- progress ---- */

struct krdma_bench_progress bench_progress;
volatile int bench_progress_stop;
uint32_t bench_progress_size;
bool bench_progress_gbits;

void *bench_progress_thread(void *arg)
{
	uint32_t seen = 0;

	(void)arg;
	while (!bench_progress_stop) {
		struct timespec ts = { 0, 100000000 };
		uint32_t u = __atomic_load_n(&bench_progress.updates,
					     __ATOMIC_ACQUIRE);

		nanosleep(&ts, NULL);
		if (u == seen || !bench_progress.elapsed_ns)
			continue;
		seen = u;
		fprintf(stderr, "bench: %u B: %.1f s, %" PRIu64 " ops, "
			"%.2f %s\n", bench_progress_size,
			bench_progress.elapsed_ns / 1e9,
			(uint64_t)bench_progress.ops_done,
			bench_progress.bytes_done * 1e9 /
			bench_progress.elapsed_ns /
			(bench_progress_gbits ? 1e9 / 8 : MIB),
			bench_progress_gbits ? "Gb/sec" : "MB/sec");
	}
	return NULL;
}

