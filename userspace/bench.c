// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench: perftest-style benchmarks whose measuring loop runs in
 * the kernel (KRDMA_BENCH), one ioctl per run.
 *
 *   krdmactl bench [options]                   serve (two-sided ops run in
 *                                              the kernel here too)
 *   krdmactl bench OP HOST[:PORT] [options]    measure OP against it
 *
 * Connections are rdma_cm connections: RC, or UC or UD with -c at both
 * ends (UD resolves its peer with SIDR, and has no disconnect).  The
 * client's CONNECT private data is struct bench_hello (what it is about to
 * run, so the server sizes its queues and buffer); the server's ACCEPT
 * private data is struct bench_adv (its buffer).  For SEND, SEND_WITH_IMM
 * and WRITE_WITH_IMM the server runs KRDMA_BENCH with KRDMA_BENCH_SERVER
 * on all the client's connections at once, which posts its receives, says
 * so with a READY message, and ends at the client's END message (see
 * uapi/krdma.h).
 * Integers on the wire are big-endian.
 *
 * --via-ioctl runs the same loop in this process instead, one KRDMA_POST
 * per operation (in latency mode with KRDMA_POST_POLL, which returns what
 * completed in the same call) and KRDMA_POLL for the rest: the difference
 * is what the ioctl path costs.  A ping-pong's receives go 16 to a POST.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "bench_ib.h"
#include "krdmactl.h"
#include "names.h"
#include "print.h"
#include "xfer.h"

#define BENCH_PORT 18517
#define BENCH_MAGIC 0x4b524442U		/* "KRDB" */
#define BENCH_VERSION 2
#define BENCH_MAX_QPS KRDMA_BENCH_MAX_CONNS
#define BENCH_MAX_CONNS 4096		/* --conns */
#define BENCH_MAX_BUF (64ULL << 20)	/* a side's buffer, unless validating */
#define BENCH_ALL_MAX (8U << 20)	/* -a: 2 B ... 8 MiB */
#define MIB 1048576.0
#define VIA_RECVS 32			/* --via-ioctl ping-pong's receives */
#define VIA_RECV_BATCH 16		/* ... posted this many at a time */
#define UD_ALL_MAX 4096U		/* -a over UD: no more than an MTU */
#define HELLO_REPEAT_MS 200		/* UC, UD: hello, end again after this */
#define RXE_VENDOR_ID 0xffffffU		/* soft-RoCE's (rxe_param.h) */

enum bench_op {
	BOP_NONE = 0,		/* --conns: connect only */
	BOP_SEND,
	BOP_SEND_IMM,
	BOP_WRITE,
	BOP_WRITE_IMM,
	BOP_READ,
	BOP_FADD,
	BOP_CSWAP,
};

enum {
	BH_LATENCY = 1 << 0,
	BH_VALIDATE = 1 << 1,
	BH_NOTIFY = 1 << 2,
	BH_ONE_CPU = 1 << 3,	/* the server keeps one loop as well */
	BH_ALL = 1 << 4,	/* -a: sizes up to max_size (UD: or the MTU) */
};

/* CONNECT private data, 36 bytes */
struct bench_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t op;		/* enum bench_op */
	uint32_t flags;		/* BH_* */
	uint32_t max_size;	/* largest message of the runs */
	uint32_t tx_depth;
	uint16_t qps;		/* connections in the group */
	uint16_t index;		/* this one's index */
	uint32_t group;		/* random, names the group */
	uint32_t timeout_s;
	uint32_t kproto;	/* the client's KRDMA_BENCH_PROTOCOL */
};

/* ACCEPT private data, 32 bytes */
struct bench_adv {
	uint32_t magic;
	uint16_t version;
	uint16_t __reserved;
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint32_t __reserved2;
};

_Static_assert(sizeof(struct bench_hello) == 36, "bench_hello");
_Static_assert(sizeof(struct bench_adv) == 32, "bench_adv");

static const struct {
	const char *name;
	uint32_t opcode;
} bench_ops[] = {
	[BOP_NONE] = { "none", 0 },
	[BOP_SEND] = { "send", KRDMA_OP_SEND },
	[BOP_SEND_IMM] = { "send_imm", KRDMA_OP_SEND_WITH_IMM },
	[BOP_WRITE] = { "write", KRDMA_OP_RDMA_WRITE },
	[BOP_WRITE_IMM] = { "write_imm", KRDMA_OP_RDMA_WRITE_WITH_IMM },
	[BOP_READ] = { "read", KRDMA_OP_RDMA_READ },
	[BOP_FADD] = { "fadd", KRDMA_OP_ATOMIC_FETCH_ADD },
	[BOP_CSWAP] = { "cswap", KRDMA_OP_ATOMIC_CMP_SWP },
};

static bool two_sided(int op)
{
	return op == BOP_SEND || op == BOP_SEND_IMM || op == BOP_WRITE_IMM;
}

static bool is_atomic(int op)
{
	return op == BOP_FADD || op == BOP_CSWAP;
}

static const char bench_usage[] =
	"Usage: " PROG_NAME " bench [OPTIONS]                 serve\n"
	"       " PROG_NAME " bench OP HOST[:PORT] [OPTIONS]  measure\n"
	"OP: send | send_imm | write | write_imm | read | fadd | cswap\n"
	"The measuring loop runs in the kernel (KRDMA_BENCH).\n"
	"\n"
	"  -s, --size N         message bytes (default 65536; --lat 2)\n"
	"  -a, --all            every size 2 B ... 8 MiB\n"
	"  -n, --iters N        operations per QP (default 5000; --lat 1000)\n"
	"  -D, --duration S     run for S seconds instead of -n\n"
	"  -q, --qps N          QPs (connections), 1 ... 256 (bandwidth), shared\n"
	"                       out among one kernel thread per CPU\n"
	"      --one-cpu        every QP in one loop, on one CPU (as perftest)\n"
	"  -t, --tx-depth N     WRs in flight per QP (default 128)\n"
	"  -Q, --cq-mod N       signal one WR in N (default 1; --lat: one\n"
	"                       SEND ping in N, as ib_send_lat's 100)\n"
	"  -I, --inline N       payloads up to N bytes inline\n"
	"  -c, --connection T   rc (default), uc (no read, no atomics) or ud\n"
	"                       (send, send_imm; one packet a message), client\n"
	"                       and server alike\n"
	"  -e, --events         sleep on CQ events instead of busy polling\n"
	"      --bw | --lat     bandwidth (default) or latency\n"
	"      --validate       check payloads at the receiver\n"
	"      --via-ioctl      one KRDMA_POST per operation from userspace\n"
	"                       (--lat: which also reaps, KRDMA_POST_POLL)\n"
	"      --conns N        connection setup scale: N connections, time and\n"
	"                       kernel memory per connection\n"
	"      --run_infinitely bandwidth: a line each -D seconds (1) until\n"
	"                       SIGINT, over the same connections\n"
	"      --report_gbits   bandwidth in Gb/sec instead of MB/sec\n"
	"      --output=bandwidth|latency\n"
	"                       print only BW average (bandwidth) or t_typical\n"
	"                       (--lat), one number a line\n"
	"  -d, --ib-dev DEV     connect from (serve: listen on) an address of\n"
	"                       DEV's netdev; refused if a connection is not\n"
	"                       on DEV\n"
	"  -i, --ib-port N      the same, of port N; refused if a connection\n"
	"                       is on another port\n"
	"  -x, --gid-index N    connect from the address of RoCE v2 GID N;\n"
	"                       refused if a connection's GID is another\n"
	"  -m, --mtu N          refused if a connection's path MTU is not N\n"
	"                       (256 ... 4096: rdma_cm sets it, from the path)\n"
	"  -F, --CPU-freq       accepted and ignored (perftest's; krdma's loop\n"
	"                       times with the kernel's clock)\n"
	"  -V, --version        " PROG_NAME "'s version, as " PROG_NAME " version\n"
	"  -p, --port N         port (default 18517)\n"
	"  -T, --timeout S      give up after S seconds without progress (10)\n"
	"      --once           (serve) exit after the first client\n"
	"                       (a server exits 1 if a run it served failed)\n"
	"  -j                   JSON\n";

enum {
	OPT_BW = 0x100,
	OPT_LAT,
	OPT_VALIDATE,
	OPT_VIA_IOCTL,
	OPT_CONNS,
	OPT_ONCE,
	OPT_CORRUPT,
	OPT_ONE_CPU,
	OPT_PRETTY,
	OPT_GBITS,
	OPT_OUTPUT,
	OPT_RUN_INF,
};

enum { OUT_ALL = 0, OUT_BW, OUT_LAT };	/* --output */

struct bench_opts {
	int op;
	const char *host;
	uint32_t port;
	uint32_t size;
	bool have_size;
	bool all;
	uint64_t iters;
	bool have_iters;
	uint32_t duration_s;
	uint32_t qps;
	uint32_t tx_depth;
	uint32_t cq_mod;
	uint32_t inline_size;
	bool events;
	bool latency;
	bool validate;
	bool via_ioctl;
	bool one_cpu;
	uint32_t conns;
	uint32_t timeout_s;
	bool once;
	bool corrupt;		/* selftests: spoil the source pattern */
	bool copy_only;	/* the guest's memcpy bandwidth */
	uint32_t transport;	/* KRDMA_TRANSPORT_* */
	struct bench_ib_want ib;	/* -d, -i, -x, -m */
	bool report_gbits;
	int output;		/* OUT_* */
	bool run_infinitely;
};

/* The BOP_ of an operation's name; BOP_NONE if it is not one. */
static int bench_op(const char *name)
{
	unsigned int i;

	for (i = 1; i < ARRAY_SIZE(bench_ops); i++)
		if (!strcmp(name, bench_ops[i].name))
			return i;
	return BOP_NONE;
}

/*
 * Options that do not go together, or not with this OP, refused here
 * rather than by the kernel later (or not at all).  @client_opt: the first
 * option given that only a client uses.
 */
static int bench_check_opts(const struct bench_opts *o,
			    const char *client_opt)
{
	const char *why = NULL;

	if (!o->host && !o->copy_only && client_opt[0])
		err_msg("bench: %s is for a client (bench OP HOST); a server "
			"takes -p, -T, -c, -d, --once, -j", client_opt);
	else if (o->host && o->once)
		why = "--once is for a server (bench without OP HOST)";
	else if (o->run_infinitely && (o->latency || o->all ||
				       o->have_iters || o->via_ioctl))
		why = "--run_infinitely measures bandwidth, one size, for -D "
		      "seconds a line (not with --lat, -a, -n, --via-ioctl)";
	else if (o->output == OUT_BW && o->latency)
		why = "--output=bandwidth is for a bandwidth run: "
		      "--output=latency";
	else if (o->output == OUT_LAT && !o->latency)
		why = "--output=latency is for --lat: --output=bandwidth";
	else if (o->output && pr_is_json())
		why = "--output and -j exclude each other";
	else if (o->report_gbits && o->latency)
		why = "--report_gbits is for a bandwidth run";
	else if (o->have_iters && o->duration_s)
		why = "-n and -D exclude each other";
	else if (o->all && o->have_size)
		why = "-a and -s exclude each other";
	else if (o->all && is_atomic(o->op))
		why = "-a: fadd and cswap have one size, 8 bytes";
	else if (o->latency && o->qps > 1)
		why = "--lat measures one QP";
	else if (!o->latency && o->cq_mod > o->tx_depth)
		why = "-Q must not exceed -t";
	else if (o->validate && o->op != BOP_SEND && o->op != BOP_SEND_IMM &&
		 o->op != BOP_READ)
		why = "--validate checks send, send_imm and read payloads";
	else if (o->via_ioctl && (o->qps > 1 || o->validate))
		why = "--via-ioctl drives one QP, without --validate";
	else if (o->host && o->transport == KRDMA_TRANSPORT_UC &&
		 (o->op == BOP_READ || is_atomic(o->op)))
		why = "-c uc: write, write_imm, send and send_imm (UC has no "
		      "READ or atomics)";
	else if (o->host && o->transport == KRDMA_TRANSPORT_UD && !o->conns &&
		 o->op != BOP_SEND && o->op != BOP_SEND_IMM)
		why = "-c ud: send and send_imm only (UD has no RDMA or atomics)";
	else
		return 0;
	if (why)
		err_msg("bench: %s", why);
	return EXIT_USAGE;
}

static int bench_parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option long_opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "qps", required_argument, NULL, 'q' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "cq-mod", required_argument, NULL, 'Q' },
		{ "inline", required_argument, NULL, 'I' },
		{ "connection", required_argument, NULL, 'c' },
		{ "events", no_argument, NULL, 'e' },
		{ "port", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "bw", no_argument, NULL, OPT_BW },
		{ "lat", no_argument, NULL, OPT_LAT },
		{ "validate", no_argument, NULL, OPT_VALIDATE },
		{ "via-ioctl", no_argument, NULL, OPT_VIA_IOCTL },
		{ "conns", required_argument, NULL, OPT_CONNS },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "corrupt", no_argument, NULL, OPT_CORRUPT },
		{ "one-cpu", no_argument, NULL, OPT_ONE_CPU },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "CPU-freq", no_argument, NULL, 'F' },
		{ "version", no_argument, NULL, 'V' },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "run_infinitely", no_argument, NULL, OPT_RUN_INF },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = "bench";
	char client_opt[32] = "";
	int c, ret = 0, longidx;

	o->port = BENCH_PORT;
	o->qps = 1;
	o->tx_depth = 128;
	o->cq_mod = 1;
	o->timeout_s = 10;
	o->ib.gid_index = -1;
	while ((c = getopt_long(argc, argv,
				":s:an:D:q:t:Q:I:c:ep:P:T:hjd:i:x:m:FV",
				long_opts, (longidx = -1, &longidx))) != -1) {
		/*
		 * what a server takes: -p, -T, -c, -d, -F, -V, --once, -j,
		 * --pretty
		 */
		if (!client_opt[0] &&
		    (c >= 0x100 || !strchr(":?hjpPTcdFV", c)) &&
		    c != OPT_ONCE && c != OPT_PRETTY)
			opt_name(c, long_opts, longidx, client_opt,
				 sizeof(client_opt));
		switch (c) {
		case 'h':
			fputs(bench_usage, stdout);
			return -1;
		case 'j':
			opt_common(c);
			break;
		case OPT_PRETTY:
			pr_set_pretty(true);
			break;
		case 's':
			o->have_size = true;
			ret = parse_u32(cmd, "-s/--size", optarg, 1, 1U << 30,
					&o->size);
			break;
		case 'a':
			o->all = true;
			break;
		case 'n':
			o->have_iters = true;
			ret = parse_u64(cmd, "-n/--iters", optarg, 1,
					1ULL << 40, &o->iters);
			break;
		case 'D':
			ret = parse_u32(cmd, "-D/--duration", optarg, 1, 86400,
					&o->duration_s);
			break;
		case 'q':
			ret = parse_u32(cmd, "-q/--qps", optarg, 1,
					BENCH_MAX_QPS, &o->qps);
			break;
		case 't':
			ret = parse_u32(cmd, "-t/--tx-depth", optarg, 1, 8192,
					&o->tx_depth);
			break;
		case 'Q':
			ret = parse_u32(cmd, "-Q/--cq-mod", optarg, 1, 8192,
					&o->cq_mod);
			break;
		case 'I':
			ret = parse_u32(cmd, "-I/--inline", optarg, 0, 65536,
					&o->inline_size);
			break;
		case 'c':
			if (!strcmp(optarg, "rc")) {
				o->transport = KRDMA_TRANSPORT_RC;
			} else if (!strcmp(optarg, "uc")) {
				o->transport = KRDMA_TRANSPORT_UC;
			} else if (!strcmp(optarg, "ud")) {
				o->transport = KRDMA_TRANSPORT_UD;
			} else {
				err_msg("bench: -c %s: rc, uc or ud", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'e':
			o->events = true;
			break;
		case 'p':
		case 'P':
			ret = parse_u32(cmd, "-p/--port", optarg, 1, 65535,
					&o->port);
			break;
		case 'T':
			ret = parse_u32(cmd, "-T/--timeout", optarg, 1, 3600,
					&o->timeout_s);
			break;
		case OPT_BW:
			o->latency = false;
			break;
		case OPT_LAT:
			o->latency = true;
			break;
		case OPT_VALIDATE:
			o->validate = true;
			break;
		case OPT_VIA_IOCTL:
			o->via_ioctl = true;
			break;
		case OPT_CONNS:
			ret = parse_u32(cmd, "--conns", optarg, 1,
					BENCH_MAX_CONNS, &o->conns);
			break;
		case OPT_ONCE:
			o->once = true;
			break;
		case OPT_CORRUPT:
			o->corrupt = true;
			break;
		case OPT_ONE_CPU:
			o->one_cpu = true;
			break;
		case 'd':
			o->ib.dev = optarg;
			break;
		case 'i':
			ret = parse_u32(cmd, "-i/--ib-port", optarg, 1, 255,
					&o->ib.port);
			break;
		case 'x': {
			uint32_t x;

			ret = parse_u32(cmd, "-x/--gid-index", optarg, 0,
					65535, &x);
			o->ib.gid_index = x;
			break;
		}
		case 'm':
			ret = parse_u32(cmd, "-m/--mtu", optarg, 256, 4096,
					&o->ib.mtu);
			if (!ret && (o->ib.mtu & (o->ib.mtu - 1))) {
				err_msg("bench: -m %u: 256, 512, 1024, 2048 or "
					"4096", o->ib.mtu);
				ret = EXIT_USAGE;
			}
			break;
		case 'F':	/* perftest's: no CPU frequency check to skip */
			break;
		case 'V': {
			char *vargv[] = { "version", NULL };

			optind = 0;
			return cmd_version(1, vargv) ? 1 : -1;
		}
		case OPT_GBITS:
			o->report_gbits = true;
			break;
		case OPT_OUTPUT:
			if (!strcmp(optarg, "bandwidth")) {
				o->output = OUT_BW;
			} else if (!strcmp(optarg, "latency")) {
				o->output = OUT_LAT;
			} else {
				err_msg("bench: --output %s: bandwidth or "
					"latency", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_RUN_INF:
			o->run_infinitely = true;
			break;
		default:
			return opt_fail(cmd, c, argv, bench_usage);
		}
		if (ret)
			return ret;
	}
	if (optind < argc && o->conns) {
		if (optind + 1 < argc && bench_op(argv[optind])) {
			err_msg("bench: --conns N HOST takes no OP");
			return EXIT_USAGE;
		}
		o->op = BOP_NONE;
		o->host = argv[optind++];
	} else if (optind < argc && !strcmp(argv[optind], "memcpy")) {
		o->copy_only = true;
		optind++;
	} else if (optind < argc) {
		o->op = bench_op(argv[optind]);
		if (!o->op) {
			err_msg("bench: unknown operation \"%s\"",
				argv[optind]);
			fputs(bench_usage, stderr);
			return EXIT_USAGE;
		}
		optind++;
		if (optind >= argc) {
			err_msg("bench: missing HOST");
			fputs(bench_usage, stderr);
			return EXIT_USAGE;
		}
		o->host = argv[optind++];
	}
	ret = opt_extra_args(cmd, argc, argv, bench_usage);
	if (!ret)
		ret = bench_check_opts(o, client_opt);
	if (ret)
		return ret;
	if (is_atomic(o->op))
		o->size = 8;
	else if (!o->have_size)
		o->size = o->latency ? 2 : 65536;
	if (!o->have_iters)
		o->iters = o->latency ? 1000 : 5000;
	if (o->run_infinitely && !o->duration_s)
		o->duration_s = 1;
	if (o->duration_s)
		o->iters = 0;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

static void fill_pattern(uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = krdma_bench_pattern(i);
}

/*
 * Bytes of the buffer a side needs for messages of @size, and over UD
 * the GRH area at its end, KRDMA_GRH_LEN bytes for each of @qps.
 */
static uint64_t buf_len(uint32_t size, uint32_t depth, bool validate,
			uint32_t transport, uint32_t qps)
{
	uint64_t len = (uint64_t)size * depth;

	if (!validate && len > BENCH_MAX_BUF)
		len = BENCH_MAX_BUF;
	if (len < size)
		len = size;
	if (transport == KRDMA_TRANSPORT_UD)
		len += (uint64_t)qps * KRDMA_GRH_LEN;
	return len;
}

static const char *transport_name(uint32_t transport, bool upper)
{
	switch (transport) {
	case KRDMA_TRANSPORT_UC:
		return upper ? "UC" : "uc";
	case KRDMA_TRANSPORT_UD:
		return upper ? "UD" : "ud";
	default:
		return upper ? "RC" : "rc";
	}
}

/* ---- results ---- */

/* A latency run's figures, made of its samples (ns) here. */
struct bench_lat {
	uint64_t samples;
	double min, max, typical, avg, stdev, p99, p999;
};

struct bench_result {
	uint32_t size;
	struct krdma_bench b;
	struct bench_lat lat;
	int err;
};

static const char bw_line[] =
	"---------------------------------------------------------------------------------------\n";

/* MB/sec (MiB, as perftest's) or, --report_gbits, Gb/sec */
static double bw_unit(const struct bench_opts *o, double bytes_per_s)
{
	return o->report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / MIB;
}

static void print_header(const struct bench_opts *o, const char *dev,
			 bool latency, const struct bench_ib_ends *ends)
{
	uint32_t mtu = ends[0].path_mtu;

	if (pr_is_json() || o->output)
		return;
	printf("%s", bw_line);
	printf("                    %s %s (krdma, %s loop)\n",
	       bench_ops[o->op].name, latency ? "Latency Test" : "BW Test",
	       o->via_ioctl ? "ioctl-per-op" : "in-kernel");
	printf(" Device         : %s\n", dev);
	printf(" Number of qps  : %u\t\tTransport type : IB\n", o->qps);
	printf(" Loop threads   : %s\n", o->one_cpu || o->qps == 1 ? "1" :
	       "one per CPU, up to one per QP");
	printf(" Connection type: %s\t\tUsing SRQ      : OFF\n",
	       transport_name(o->transport, true));
	printf(" TX depth       : %u\n", latency ? 1 : o->tx_depth);
	printf(" CQ Moderation  : %u\n", o->cq_mod);
	printf(" Mtu            : %u[B] (the path's)\n", mtu);
	printf(" Completions    : %s\n", o->events ? "events" : "polling");
	printf(" Max inline data: %u[B]\n", o->inline_size);
	printf(" rdma_cm QPs    : ON\n");
	printf("%s", bw_line);
	bench_ib_print(ends, o->qps);
	printf("%s", bw_line);
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

static void print_row(const struct bench_opts *o,
		      const struct bench_result *r, bool latency)
{
	const struct krdma_bench *b = &r->b;
	const struct bench_lat *l = &r->lat;

	if (o->output) {	/* perftest's --output: the number alone */
		printf("%f\n", latency ? l->typical / 1e3 :
		       bw_unit(o, bw_avg(b)));
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
		} else if (o->report_gbits) {
			pr_fmt_double("bw_peak_gbps", "%f",
				      bw_unit(o, b->peak_bps));
			pr_fmt_double("bw_avg_gbps", "%f",
				      bw_unit(o, bw_avg(b)));
			pr_fmt_double("msg_rate_mpps", "%f", msg_rate(b));
		} else {
			pr_fmt_double("bw_peak_mbps", "%f",
				      bw_unit(o, b->peak_bps));
			pr_fmt_double("bw_avg_mbps", "%f",
				      bw_unit(o, bw_avg(b)));
			pr_fmt_double("msg_rate_mpps", "%f", msg_rate(b));
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
		       bw_unit(o, b->peak_bps), bw_unit(o, bw_avg(b)),
		       msg_rate(b));
	if (b->validate_errors)
		printf(" validation: %" PRIu64 " message(s) did not carry the "
		       "pattern\n", (uint64_t)b->validate_errors);
	fflush(stdout);
}

/* ---- progress ---- */

static struct krdma_bench_progress progress;
static volatile int progress_stop;
static uint32_t progress_size;
static bool progress_gbits;

static void *progress_thread(void *arg)
{
	uint32_t seen = 0;

	(void)arg;
	while (!progress_stop) {
		struct timespec ts = { 0, 100000000 };
		uint32_t u = __atomic_load_n(&progress.updates,
					     __ATOMIC_ACQUIRE);

		nanosleep(&ts, NULL);
		if (u == seen || !progress.elapsed_ns)
			continue;
		seen = u;
		fprintf(stderr, "bench: %u B: %.1f s, %" PRIu64 " ops, "
			"%.2f %s\n", progress_size,
			progress.elapsed_ns / 1e9, (uint64_t)progress.ops_done,
			progress.bytes_done * 1e9 / progress.elapsed_ns /
			(progress_gbits ? 1e9 / 8 : MIB),
			progress_gbits ? "Gb/sec" : "MB/sec");
	}
	return NULL;
}

/* ---- connections ---- */

struct bench_conn {
	uint32_t handle;
	uint32_t dev_index;
	struct bench_adv adv;
	uint32_t via_recvs;	/* receives --via-ioctl has posted, not taken */
	uint32_t qp_num;
};

static int get_adv(int fd, uint32_t conn, struct bench_adv *adv)
{
	struct krdma_event evs[8];
	int64_t deadline = xfer_now_ms() + 2000;
	const struct bench_adv *a;
	int i, n;

	do {
		n = xfer_get_events(fd, evs, ARRAY_SIZE(evs), 100);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (evs[i].type != KRDMA_EVENT_ESTABLISHED ||
			    evs[i].handle != conn)
				continue;
			a = (const void *)evs[i].private_data;
			if (evs[i].private_data_len < sizeof(*a) ||
			    be32toh(a->magic) != BENCH_MAGIC)
				return -EPROTO;
			adv->addr = be64toh(a->addr);
			adv->length = be64toh(a->length);
			adv->rkey = be32toh(a->rkey);
			return 0;
		}
	} while (xfer_now_ms() < deadline);
	return -ETIMEDOUT;
}

/* -a: up to 8 MiB; over UD, one packet (the hello asks for no more). */
static uint32_t bench_all_max(const struct bench_opts *o)
{
	return o->transport == KRDMA_TRANSPORT_UD ? UD_ALL_MAX : BENCH_ALL_MAX;
}

/* The bench protocol the loaded module's runs speak (0: unknown). */
static uint32_t bench_protocol(int fd)
{
	struct krdma_info info = { .size = sizeof(info) };

	return krdma_ioctl_quiet(fd, KRDMA_GET_INFO, &info) ? 0 :
	       info.bench_protocol;
}

/*
 * A run's struct is the ABI's: a module of another ABI would read it
 * otherwise, so refuse that up front (0, or -1 said).
 */
static int bench_check_abi(int fd)
{
	struct krdma_info info = { .size = sizeof(info) };
	int ret = krdma_ioctl_quiet(fd, KRDMA_GET_INFO, &info);

	if (ret) {
		krdma_report(KRDMA_GET_INFO, ret);
		return -1;
	}
	if (info.abi_version != KRDMA_ABI_VERSION) {
		err_msg("bench: krdma.ko speaks ABI %u, " PROG_NAME
			" was built for %u", info.abi_version,
			KRDMA_ABI_VERSION);
		return -1;
	}
	return 0;
}

/* the source address of a client's connections (-d, -i, -x), or family 0 */
static struct krdma_sockaddr bench_src;

static int bench_connect(int fd, const struct bench_opts *o,
			 const struct krdma_sockaddr *dst, uint32_t group,
			 uint32_t index, uint32_t qps, struct bench_conn *c,
			 bool want_adv)
{
	/* latency: room for the unsignaled pings -Q allows */
	uint32_t depth = o->latency ? (o->cq_mod > 4 ? o->cq_mod : 4) :
				      o->tx_depth;
	struct krdma_cm_connect cc = {
		.size = sizeof(cc),
		.flags = o->events ? KRDMA_CONN_NOTIFY : 0,
		.dst = *dst,
		.src = bench_src,
		.transport = o->transport,
		.timeout_ms = o->timeout_s * 1000,
		.caps = { .max_send_wr = o->op ? depth + 2 : 4,
			  .max_recv_wr = o->op ? 8 + (o->via_ioctl ? VIA_RECVS :
							     0) : 4,
			  .max_send_sge = 1,
			  /* UD: the GRH's and the payload's */
			  .max_recv_sge = o->transport ==
					  KRDMA_TRANSPORT_UD ? 2 : 1,
			  .max_inline_data = o->inline_size },
		.private_data_len = sizeof(struct bench_hello),
	};
	struct bench_hello h = {
		.magic = htobe32(BENCH_MAGIC),
		.version = htobe16(BENCH_VERSION),
		.op = htobe16(o->op),
		.flags = htobe32((o->latency ? BH_LATENCY : 0) |
				 (o->validate ? BH_VALIDATE : 0) |
				 (o->events ? BH_NOTIFY : 0) |
				 (o->one_cpu ? BH_ONE_CPU : 0) |
				 (o->all ? BH_ALL : 0)),
		.max_size = htobe32(o->all ? bench_all_max(o) : o->size),
		.tx_depth = htobe32(o->latency ? 1 : o->tx_depth),
		.qps = htobe16(qps),
		.index = htobe16(index),
		.group = htobe32(group),
		.timeout_s = htobe32(o->timeout_s),
		.kproto = htobe32(bench_protocol(fd)),
	};
	int ret;

	memcpy(cc.private_data, &h, sizeof(h));
	ret = krdma_ioctl_quiet(fd, KRDMA_CM_CONNECT, &cc);
	if (ret == -ECONNREFUSED) {
		err_msg("bench: connection refused (reject reason %d): is "
			PROG_NAME " bench running there, with the same -c?",
			cc.reject_reason);
		return ret;
	}
	if (ret == -EINVAL) {
		/* what the kernel checks against the device: the queue */
		err_msg("bench: connect: %s: a QP of %u send WRs and %u bytes "
			"inline (-t, -Q, -I) the device cannot make (see "
			PROG_NAME " devices: max_qp_wr, max_inline_data)",
			strerror(-ret), cc.caps.max_send_wr,
			cc.caps.max_inline_data);
		return ret;
	}
	if (ret) {
		err_msg("bench: connect: %s", strerror(-ret));
		return ret;
	}
	c->handle = cc.handle;
	c->dev_index = cc.dev_index;
	c->qp_num = cc.qp_num;
	/*
	 * The server's READY message needs a receive as soon as can be (UC,
	 * UD: the server waits for the client's hello, after this)
	 */
	if (two_sided(o->op) && o->transport == KRDMA_TRANSPORT_RC) {
		struct krdma_wr wr = { .wr_id = 1, .opcode = KRDMA_OP_RECV };

		ret = xfer_post_one(fd, c->handle, &wr);
		if (ret)
			return ret;
	}
	if (!want_adv)
		return 0;
	ret = get_adv(fd, c->handle, &c->adv);
	if (ret)
		err_msg("bench: no buffer advertised by the server: %s",
			strerror(-ret));
	return ret;
}

/* The server's READY, answering a hello after the one answered first. */
static bool late_ready(const struct krdma_wc *wc)
{
	return wc->opcode == KRDMA_OP_RECV &&
	       (wc->wc_flags & KRDMA_WC_WITH_IMM) &&
	       wc->imm_data == KRDMA_BENCH_READY_IMM;
}

/* A failed completion, said so. */
static bool wc_failed(const struct krdma_wc *wc)
{
	if (!wc->status)
		return false;
	err_msg("bench: completion failed: %s", wc_status_name(wc->status));
	return true;
}

/*
 * Wait for a completion of @want (with immediate data if @with_imm) on
 * @conn, for @timeout_ms from @start_ms; it goes to @out.  Other
 * completions are passed over, a failed one ends the wait.
 */
static int wait_wc(int fd, uint32_t conn, uint32_t want, bool with_imm,
		   int64_t start_ms, uint32_t timeout_ms, struct krdma_wc *out)
{
	int64_t deadline = start_ms + timeout_ms;
	struct krdma_wc wc[4];
	int i, n;

	while (xfer_now_ms() < deadline) {
		n = xfer_poll(fd, conn, wc, ARRAY_SIZE(wc), 100);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (wc_failed(&wc[i]))
				return -EIO;
			if (wc[i].opcode == want &&
			    (!with_imm || wc[i].wc_flags & KRDMA_WC_WITH_IMM)) {
				*out = wc[i];
				return 0;
			}
		}
		if (xfer_stop)
			return -EINTR;
	}
	return -ETIMEDOUT;
}

/*
 * Two-sided: the server answers the END message with the count of payloads
 * that failed its check, 0 unless validating (uapi/krdma.h,
 * KRDMA_BENCH_SERVER); the receive for that answer goes before the END.
 * The answer, not the END's own completion, says the server is done: the
 * END's acknowledgment may be lost when the server's QP leaves RTS.
 */
static int send_end_report(int fd, uint32_t conn, uint32_t timeout_s,
			   uint32_t *bad)
{
	int64_t start = xfer_now_ms();
	struct krdma_wr rwr = { .wr_id = 3, .opcode = KRDMA_OP_RECV };
	struct krdma_wr wr = {
		.wr_id = 2,
		.opcode = KRDMA_OP_SEND_WITH_IMM,
		.flags = KRDMA_WR_SIGNALED,
		.imm_data = KRDMA_BENCH_END_IMM,
	};
	struct krdma_wc wc;
	int ret;

	ret = xfer_post_one(fd, conn, &rwr);
	if (!ret)
		ret = xfer_post_one(fd, conn, &wr);
	if (!ret)
		ret = wait_wc(fd, conn, KRDMA_OP_RECV, true, start,
			      timeout_s * 1000, &wc);
	if (!ret)
		*bad = wc.imm_data;
	return ret;
}

/*
 * UC, UD: a receive for the server's zero-length answer; over UD with room
 * for the GRH in front (the buffer's last KRDMA_GRH_LEN bytes, where the
 * kernel's runs put them too).
 */
static int post_answer_recv(int fd, uint32_t conn, uint32_t transport,
			    const struct xfer_buf *buf, uint64_t wr_id)
{
	struct krdma_wr wr = { .wr_id = wr_id, .opcode = KRDMA_OP_RECV };

	if (transport == KRDMA_TRANSPORT_UD)
		return xfer_post_recv(fd, conn, wr_id, buf->handle,
				      buf->length - KRDMA_GRH_LEN,
				      KRDMA_GRH_LEN);
	return xfer_post_one(fd, conn, &wr);
}

/*
 * UC, UD: a zero-length SEND_WITH_IMM of @imm every HELLO_REPEAT_MS until
 * the server's answer comes (its imm_data to @answer), for -T.  Both drop
 * a message that finds no receive posted: a hello sent before the server's
 * run has posted its receives, an end message that comes when the server
 * has none left, an answer lost.  Every hello's send completion is reaped
 * before the run starts, which would take one for a stranger's (EBUSY).
 */
static int until_answer(int fd, uint32_t conn, const struct bench_opts *o,
			const struct xfer_buf *buf, uint32_t imm,
			uint32_t *answer)
{
	int64_t deadline = xfer_now_ms() + o->timeout_s * 1000LL, next = 0;
	struct krdma_wr wr = {
		.wr_id = 2,
		.opcode = KRDMA_OP_SEND_WITH_IMM,
		.flags = KRDMA_WR_SIGNALED,
		.imm_data = imm,
	};
	uint32_t sent = 0, sends_done = 0;
	bool answered = false;
	struct krdma_wc wc[4];
	int ret, n, i;

	ret = post_answer_recv(fd, conn, o->transport, buf, 3);
	while (!ret && (!answered || sends_done < sent)) {
		if (xfer_stop)
			return -EINTR;
		if (xfer_now_ms() >= deadline)
			return -ETIMEDOUT;
		if (!answered && xfer_now_ms() >= next) {
			ret = xfer_post_one(fd, conn, &wr);
			sent++;
			next = xfer_now_ms() + HELLO_REPEAT_MS;
		}
		n = ret ? 0 : xfer_poll(fd, conn, wc, ARRAY_SIZE(wc), 20);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (wc_failed(&wc[i]))
				return -EIO;
			if (wc[i].opcode != KRDMA_OP_RECV) {
				sends_done++;
				continue;
			}
			/* a late READY, while the end message waits */
			if (late_ready(&wc[i]) != (imm == KRDMA_BENCH_READY_IMM) ||
			    !(wc[i].wc_flags & KRDMA_WC_WITH_IMM)) {
				ret = post_answer_recv(fd, conn, o->transport,
						       buf, 3);
				continue;
			}
			answered = true;
			*answer = wc[i].imm_data;
		}
	}
	return ret;
}

static void disconnect(int fd, uint32_t conn)
{
	struct krdma_cm_disconnect d = { .size = sizeof(d), .handle = conn };

	krdma_ioctl_quiet(fd, KRDMA_CM_DISCONNECT, &d);
	xfer_destroy(fd, conn);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The figures perftest prints, of @n samples (sorted here). */
static void lat_figures(struct bench_lat *l, uint64_t *s, uint64_t n)
{
	double sum = 0, var = 0;
	uint64_t i, k;

	memset(l, 0, sizeof(*l));
	l->samples = n;
	if (!n)
		return;
	qsort(s, n, sizeof(*s), cmp_u64);
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
static uint64_t lat_max_samples(uint64_t iters)
{
	return iters && iters < KRDMA_BENCH_MAX_SAMPLES ? iters :
	       KRDMA_BENCH_MAX_SAMPLES;
}

/* ---- via-ioctl: the same loop in userspace ---- */

struct via {
	int fd;
	uint32_t conn;
	const struct bench_opts *o;
	const struct xfer_buf *buf;
	struct bench_conn *bc;
	struct krdma_bench *b;
	struct bench_lat *lat;
	bool post_poll;		/* KRDMA_POST_POLL works */
	int64_t idle_since_ms;	/* the first of the polls since that had none */
	struct krdma_wr wr;	/* via_post()'s */
};

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
		now = xfer_now_ms();
		if (!v->idle_since_ms)
			v->idle_since_ms = now;
		else if (now - v->idle_since_ms >= v->o->timeout_s * 1000LL)
			return -ETIMEDOUT;
	}
	return via_check_wcs(v, wc, p.num_wcs);
}

static int via_run(struct via *v, uint32_t size)
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
	max_samples = lat_max_samples(iters);
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

		if (xfer_stop) {
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
					if (pingpong && late_ready(&wc[i])) {
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
				n = xfer_stop ? -EINTR :
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
		n = ret ? 0 : via_poll(v, wc, ARRAY_SIZE(wc));
		if (n < 0)
			ret = n;
		for (i = 0; i < n; i++)
			completed = wc[i].wr_id;
		if (n)
			last = now_ns();
	}
	/* what is still in flight: a duration run leaves its tail unsignaled */
	while (!ret && completed < posted && !o->latency) {
		if (posted % o->cq_mod) {
			ret = via_post(v, opcode, posted + 1,
				       is_atomic(o->op) ? 8 : size, true, 0,
				       NULL, 0);
			posted++;
		}
		n = ret ? 0 : via_poll(v, wc, ARRAY_SIZE(wc));
		if (n < 0)
			ret = n;
		for (i = 0; i < n; i++)
			completed = wc[i].wr_id;
		if (n)
			last = now_ns();
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
		lat_figures(v->lat, samples, n_samples);
	free(samples);
	return ret;
}

/* ---- client ---- */

static int bench_run_one(int fd, const struct bench_opts *o,
			 struct bench_conn *conns, const struct xfer_buf *buf,
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

		r->err = via_run(&v, size);
		return r->err;
	}
	b->size = sizeof(*b);
	b->flags = (o->latency ? KRDMA_BENCH_LATENCY : 0) |
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
		b->max_samples = lat_max_samples(o->iters);
		samples = calloc(b->max_samples, sizeof(*samples));
		if (!samples)
			return r->err = -ENOMEM;
		b->samples_uptr = (uintptr_t)samples;
	}
	memset(&progress, 0, sizeof(progress));
	b->progress_uptr = (uintptr_t)&progress;
	progress_size = size;
	progress_gbits = o->report_gbits;
	progress_stop = 0;
	if ((o->duration_s > 1 || o->iters > 100000) && !o->run_infinitely &&
	    !o->output)
		thread = !pthread_create(&tid, NULL, progress_thread, NULL);
	ret = ioctl(fd, KRDMA_BENCH, b) ? -errno : 0;
	if (thread) {
		progress_stop = 1;
		pthread_join(tid, NULL);
	}
	if (samples)
		lat_figures(&r->lat, samples,
			    b->lat_samples < b->max_samples ? b->lat_samples :
							      b->max_samples);
	free(samples);
	r->err = ret;
	return ret;
}

static const char *errno_hint(int err)
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
 * it is dropped too (README, Known problems).  Say so before such a run.
 */
static void uc_write_imm_warn(int fd, uint32_t conn, uint32_t transport,
			      int op, uint32_t vendor_id, uint32_t max_size)
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
			 struct bench_conn *conns, const struct xfer_buf *buf)
{
	struct bench_result r;
	sigset_t set, old;
	int ret = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	while (!xfer_stop) {
		pthread_sigmask(SIG_BLOCK, &set, &old);
		ret = bench_run_one(fd, o, conns, buf, o->size, &r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (ret) {
			err_msg("bench: %u B: %s%s%s", o->size,
				errno_hint(ret), r.b.wc_status ? ": " : "",
				r.b.wc_status ? wc_status_name(r.b.wc_status) :
				"");
			break;
		}
		print_row(o, &r, false);
	}
	/* the signal asked for the end, which goes on (another one ends it) */
	if (!ret)
		xfer_stop = 0;
	return ret;
}

static int bench_client(int fd, const struct bench_opts *o)
{
	struct bench_conn *conns;
	struct krdma_sockaddr dst;
	struct xfer_buf buf = {};
	struct bench_result r;
	struct bench_ib_ends *ends = NULL;
	uint32_t group, i, size, max_size, vendor_id = 0;
	char dev[KRDMA_NAME_MAX] = "?";
	struct dev_snapshot snap;
	struct krdma_wc wc;
	uint64_t server_bad = 0;
	int ret, status = 0;

	ret = xfer_parse_addr("bench", "HOST", o->host, o->port, &dst);
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
	uc_write_imm_warn(fd, conns[0].handle, o->transport, o->op, vendor_id,
			  max_size);
	ret = xfer_buf_alloc(fd, conns[0].dev_index,
			     KRDMA_ACCESS_LOCAL_WRITE,
			     buf_len(max_size, o->latency ? 1 : o->tx_depth,
				     o->validate, o->transport, o->qps), &buf);
	if (ret)
		goto out;
	fill_pattern(buf.mem, buf.length);
	if (o->corrupt)
		buf.mem[0] ^= 0xff;
	for (i = 0; i < o->qps && two_sided(o->op); i++) {
		/* the server's KRDMA_BENCH_READY_IMM */
		if (o->transport != KRDMA_TRANSPORT_RC)
			ret = until_answer(fd, conns[i].handle, o, &buf,
					   KRDMA_BENCH_READY_IMM,
					   &wc.imm_data);
		else
			ret = wait_wc(fd, conns[i].handle, KRDMA_OP_RECV,
				      true, xfer_now_ms(),
				      o->timeout_s * 1000, &wc);
		if (ret) {
			err_msg("bench: the server never said it was ready: %s",
				errno_hint(ret));
			goto out;
		}
	}
	print_header(o, dev, o->latency, ends);
	if (pr_is_json()) {
		pr_str("op", bench_ops[o->op].name);
		pr_str("mode", o->latency ? "lat" : "bw");
		pr_str("transport", transport_name(o->transport, false));
		pr_str("loop", o->via_ioctl ? "ioctl" : "kernel");
		pr_str("device", dev);
		pr_u64("qps", o->qps);
		pr_str("threads", o->one_cpu || o->qps == 1 ? "one" :
		       "per_cpu");
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
		ret = bench_run_one(fd, o, conns, &buf, size, &r);
		if (ret != -EINTR || r.b.ops_done)
			print_row(o, &r, o->latency);
		if (ret) {
			err_msg("bench: %u B: %s%s%s", size, errno_hint(ret),
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

		if (o->transport != KRDMA_TRANSPORT_RC)
			ret = until_answer(fd, conns[i].handle, o, &buf,
					   KRDMA_BENCH_END_IMM, &bad);
		else
			ret = send_end_report(fd, conns[i].handle,
					      o->timeout_s, &bad);
		if (ret) {
			err_msg("bench: no answer from the server to the end "
				"message: %s", errno_hint(ret));
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
		printf("%s", bw_line);
	if (status && !ret) {
		err_msg("bench: --validate: payloads did not carry the "
			"pattern");
		ret = -EIO;
	}
out:
	for (i = 0; i < o->qps; i++)
		if (conns[i].handle)
			disconnect(fd, conns[i].handle);
	xfer_buf_free(fd, &buf);
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
static int bench_conns(int fd, const struct bench_opts *o)
{
	struct bench_conn *conns;
	struct krdma_sockaddr dst;
	long used0, used1, slab0, slab1;
	uint32_t i, done = 0;
	double t0, t1;
	int ret = 0;

	ret = xfer_parse_addr("bench", "HOST", o->host, o->port, &dst);
	if (ret)
		return ret;
	if (bench_ib_source(fd, &o->ib, &dst, &bench_src))
		return 1;
	conns = calloc(o->conns, sizeof(*conns));
	if (!conns)
		return 1;
	used0 = mem_used_kb(&slab0);
	t0 = now_s();
	for (i = 0; i < o->conns && !xfer_stop; i++) {
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
		disconnect(fd, conns[i].handle);
	pr_fmt_double("teardown_s", "teardown %.3f s", now_s() - t0);
	free(conns);
	return done == o->conns && !ret ? 0 : 1;
}

/* ---- server ---- */

struct srv_group {
	bool used;
	uint32_t id;
	int op;
	uint32_t flags;
	uint32_t max_size;
	uint32_t tx_depth;
	uint32_t qps;
	uint32_t joined;
	uint32_t live;
	uint32_t timeout_s;
	uint32_t *handles;
	struct xfer_buf buf;
	bool ran;
	int64_t last_join_ms;
};

#define SRV_MAX_GROUPS 16

struct srv {
	int fd;
	const struct bench_opts *o;
	uint32_t dev_index;
	uint32_t listener;
	uint32_t vendor_id;	/* of the device served */
	uint32_t kproto;	/* KRDMA_BENCH_PROTOCOL of the loaded module */
	struct srv_group groups[SRV_MAX_GROUPS];
	uint32_t *conn_group;	/* handle -> group index + 1 (small table) */
	uint32_t conn_group_len;
	bool finished;
	bool run_failed;	/* a run served failed: the exit status */
};

static void srv_reject(struct srv *s, uint32_t handle)
{
	struct krdma_cm_accept rj = { .size = sizeof(rj), .handle = handle };

	krdma_ioctl_quiet(s->fd, KRDMA_CM_REJECT, &rj);
}

static struct srv_group *srv_group(struct srv *s, uint32_t id,
				   const struct bench_hello *h)
{
	unsigned int i;

	for (i = 0; i < SRV_MAX_GROUPS; i++)
		if (s->groups[i].used && s->groups[i].id == id && id)
			return &s->groups[i];
	for (i = 0; i < SRV_MAX_GROUPS; i++) {
		struct srv_group *g = &s->groups[i];

		if (g->used)
			continue;
		memset(g, 0, sizeof(*g));
		g->used = true;
		g->id = id;
		g->op = be16toh(h->op);
		g->flags = be32toh(h->flags);
		g->max_size = be32toh(h->max_size);
		g->tx_depth = be32toh(h->tx_depth);
		g->qps = be16toh(h->qps);
		g->timeout_s = be32toh(h->timeout_s);
		g->last_join_ms = xfer_now_ms();
		g->handles = calloc(g->qps, sizeof(*g->handles));
		if (!g->handles || g->op >= (int)ARRAY_SIZE(bench_ops) ||
		    !g->tx_depth || !g->max_size) {
			free(g->handles);
			g->used = false;
			return NULL;
		}
		return g;
	}
	return NULL;
}

static void srv_group_free(struct srv *s, struct srv_group *g)
{
	xfer_buf_free(s->fd, &g->buf);
	free(g->handles);
	g->used = false;
}

static void srv_map(struct srv *s, uint32_t handle, uint32_t gi)
{
	if (handle >= s->conn_group_len) {
		uint32_t n = handle * 2 + 16;
		uint32_t *t = realloc(s->conn_group, n * sizeof(*t));

		if (!t)
			return;
		memset(t + s->conn_group_len, 0,
		       (n - s->conn_group_len) * sizeof(*t));
		s->conn_group = t;
		s->conn_group_len = n;
	}
	s->conn_group[handle] = gi;
}

/*
 * UD: a message is one packet.  -a asks for up to UD_ALL_MAX: the run
 * takes up to the MTU.  A client that asked for more with -s has given up
 * (it checks too), without a word, as UD has no disconnect: not a run.
 */
static bool srv_ud_size(struct srv *s, struct srv_group *g, uint32_t *size)
{
	struct krdma_conn_query q = { .size = sizeof(q),
				      .handle = g->handles[0] };

	if (krdma_ioctl_quiet(s->fd, KRDMA_CONN_QUERY, &q) ||
	    q.path_mtu >= *size)
		return true;
	if (g->flags & BH_ALL) {
		*size = q.path_mtu;
		return true;
	}
	warn_msg("bench: a client asked for %u-byte messages, over UD at "
		 "most the MTU, %u: not served", *size, q.path_mtu);
	g->ran = true;
	return false;
}

static void srv_run(struct srv *s, struct srv_group *g)
{
	struct bench_result r = { .size = g->max_size };
	struct krdma_bench *b = &r.b;
	bool lat = g->flags & BH_LATENCY;
	int ret;

	b->size = sizeof(*b);
	b->flags = KRDMA_BENCH_SERVER | (lat ? KRDMA_BENCH_LATENCY : 0) |
		   (g->flags & BH_VALIDATE ? KRDMA_BENCH_VALIDATE : 0) |
		   (g->flags & BH_NOTIFY ? KRDMA_BENCH_NOTIFY : 0) |
		   (g->flags & BH_ONE_CPU || g->qps == 1 ?
		    0 : KRDMA_BENCH_PER_CPU);
	b->opcode = bench_ops[g->op].opcode;
	b->num_conns = g->qps;
	b->conns_uptr = (uintptr_t)g->handles;
	b->local_buf = g->buf.handle;
	b->msg_size = g->max_size;
	if (s->o->transport == KRDMA_TRANSPORT_UD &&
	    !srv_ud_size(s, g, &b->msg_size))
		return;
	b->tx_depth = lat ? 4 : 2 * g->tx_depth;
	/*
	 * A ping-pong's replies are signaled one in as many as may be in
	 * flight, not each (ib_send_lat's server signals as its client does,
	 * one in 100 by default): a completion per reply is work, and a CQE
	 * to poll, that perftest's server does not have.
	 */
	b->signal_every = lat ? b->tx_depth : 1;
	b->timeout_ms = g->timeout_s * 1000;
	ret = ioctl(s->fd, KRDMA_BENCH, b) ? -errno : 0;
	g->ran = true;
	if (ret || b->validate_errors)
		s->run_failed = true;
	if (pr_is_json()) {
		pr_obj_begin(NULL);
		pr_str("event", "served");
		pr_str("op", bench_ops[g->op].name);
		pr_u64("qps", g->qps);
		pr_u64("messages", b->ops_done);
		pr_u64("bytes", b->bytes_done);
		pr_u64("validate_errors", b->validate_errors);
		if (ret)
			pr_str("error", errno_hint(ret));
		if (b->wc_status)
			pr_str("wc_status", wc_status_name(b->wc_status));
		pr_obj_end();
	} else {
		printf("served %s: %u QP(s), %" PRIu64 " messages, %" PRIu64
		       " bytes, %" PRIu64 " failed validation%s%s%s%s\n",
		       bench_ops[g->op].name, g->qps, (uint64_t)b->ops_done,
		       (uint64_t)b->bytes_done, (uint64_t)b->validate_errors,
		       ret ? ": " : "", ret ? errno_hint(ret) : "",
		       b->wc_status ? ": " : "",
		       b->wc_status ? wc_status_name(b->wc_status) : "");
	}
	fflush(stdout);
}

static void srv_disconnected(struct srv *s, uint32_t handle)
{
	struct srv_group *g;
	uint32_t gi;

	xfer_destroy(s->fd, handle);
	if (handle >= s->conn_group_len || !s->conn_group[handle])
		return;
	gi = s->conn_group[handle] - 1;
	s->conn_group[handle] = 0;
	g = &s->groups[gi];
	if (--g->live)
		return;
	/* a client served (not one that left before all its QPs joined) */
	if (g->op && g->joined == g->qps)
		s->finished = true;
	srv_group_free(s, g);
}

/*
 * UD: the group's connections are done, as a disconnect would say over
 * RC and UC; the last one frees the group, and with it its handles.
 */
static void srv_ud_done(struct srv *s, struct srv_group *g)
{
	uint32_t handles[BENCH_MAX_QPS], n = g->joined, i;

	memcpy(handles, g->handles, n * sizeof(*handles));
	for (i = 0; i < n; i++)
		srv_disconnected(s, handles[i]);
}

static void srv_request(struct srv *s, const struct krdma_event *ev)
{
	const struct bench_hello *h = (const void *)ev->private_data;
	struct krdma_cm_accept ac = {
		.size = sizeof(ac),
		.handle = ev->handle,
		.private_data_len = sizeof(struct bench_adv),
		.timeout_ms = s->o->timeout_s * 1000,
	};
	struct bench_adv adv = {
		.magic = htobe32(BENCH_MAGIC),
		.version = htobe16(BENCH_VERSION),
	};
	struct srv_group *g;
	uint32_t depth, index;
	bool lat;
	int ret;

	if (ev->private_data_len < sizeof(*h) ||
	    be32toh(h->magic) != BENCH_MAGIC ||
	    be16toh(h->version) != BENCH_VERSION) {
		srv_reject(s, ev->handle);
		return;
	}
	/* the two ends' kernel runs talk to each other */
	if (be32toh(h->kproto) != s->kproto) {
		warn_msg("bench: refused a client whose krdma.ko speaks bench "
			 "protocol %u (this one's: %u)", be32toh(h->kproto),
			 s->kproto);
		srv_reject(s, ev->handle);
		return;
	}
	/* over UC, what bench_check_opts() lets a client ask */
	if (s->o->transport == KRDMA_TRANSPORT_UC &&
	    (be16toh(h->op) == BOP_READ || is_atomic(be16toh(h->op)))) {
		srv_reject(s, ev->handle);
		return;
	}
	/* over UD: send and send_imm, and --conns */
	if (s->o->transport == KRDMA_TRANSPORT_UD && h->op &&
	    be16toh(h->op) != BOP_SEND && be16toh(h->op) != BOP_SEND_IMM) {
		srv_reject(s, ev->handle);
		return;
	}
	if (!h->op) {	/* --conns: a connection, nothing more */
		ac.caps = (struct krdma_qp_caps){ .max_send_wr = 4,
			.max_recv_wr = 4, .max_send_sge = 1,
			.max_recv_sge = 1 };
		ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
		if (ret)
			err_msg("bench: accept: %s", strerror(-ret));
		/*
		 * UD: the SIDR reply has gone, and no disconnect will come
		 * to end the connection
		 */
		if (ret || s->o->transport == KRDMA_TRANSPORT_UD)
			xfer_destroy(s->fd, ev->handle);
		return;
	}
	g = srv_group(s, be32toh(h->group), h);
	index = be16toh(h->index);
	if (!g || index >= g->qps || g->joined >= g->qps) {
		srv_reject(s, ev->handle);
		return;
	}
	lat = g->flags & BH_LATENCY;
	depth = lat ? 4 : 2 * g->tx_depth;
	if (g->op && !g->buf.handle) {
		ret = xfer_buf_alloc(s->fd, s->dev_index,
				     KRDMA_ACCESS_LOCAL_WRITE |
				     KRDMA_ACCESS_REMOTE_WRITE |
				     KRDMA_ACCESS_REMOTE_READ |
				     KRDMA_ACCESS_REMOTE_ATOMIC,
				     buf_len(g->max_size, depth,
					     g->flags & BH_VALIDATE,
					     s->o->transport, g->qps), &g->buf);
		if (ret) {
			srv_reject(s, ev->handle);
			srv_group_free(s, g);
			return;
		}
		fill_pattern(g->buf.mem, g->buf.length);
	}
	adv.addr = htobe64(g->buf.addr);
	adv.length = htobe64(g->buf.length);
	adv.rkey = htobe32(g->buf.rkey);
	memcpy(ac.private_data, &adv, sizeof(adv));
	ac.flags = g->flags & BH_NOTIFY ? KRDMA_CONN_NOTIFY : 0;
	ac.caps.max_send_wr = g->op ? (lat ? 8 : g->tx_depth + 2) : 4;
	ac.caps.max_recv_wr = g->op && two_sided(g->op) ? depth + 2 : 4;
	ac.caps.max_send_sge = 1;
	/* UD: the GRH's and the payload's */
	ac.caps.max_recv_sge = s->o->transport == KRDMA_TRANSPORT_UD ? 2 : 1;
	ac.caps.max_inline_data = lat ? 64 : 0;
	ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
	if (ret == -EINVAL && ac.caps.max_inline_data) {
		ac.caps.max_inline_data = 0;
		ret = krdma_ioctl_quiet(s->fd, KRDMA_CM_ACCEPT, &ac);
	}
	if (ret) {
		err_msg("bench: accept: %s", strerror(-ret));
		xfer_destroy(s->fd, ev->handle);
		if (!g->joined)
			srv_group_free(s, g);
		return;
	}
	g->handles[g->joined++] = ev->handle;
	g->last_join_ms = xfer_now_ms();
	g->live++;
	srv_map(s, ev->handle, g - s->groups + 1);
	if (g->joined == 1)
		uc_write_imm_warn(s->fd, ev->handle, s->o->transport, g->op,
				  s->vendor_id, g->max_size);
	if (g->joined != g->qps || !g->op || !two_sided(g->op))
		return;
	srv_run(s, g);
	/* UD: no disconnect ends the connections; the run did */
	if (s->o->transport == KRDMA_TRANSPORT_UD)
		srv_ud_done(s, g);
}

/*
 * UD: a group whose client stopped connecting its QPs (it gave up, or
 * died) is let go -T after the last, as a disconnect would have it over RC.
 */
static void srv_ud_sweep(struct srv *s)
{
	int64_t now = xfer_now_ms();
	unsigned int i;

	for (i = 0; i < SRV_MAX_GROUPS; i++) {
		struct srv_group *g = &s->groups[i];

		if (!g->used || g->joined == g->qps ||
		    now - g->last_join_ms <= g->timeout_s * 1000LL)
			continue;
		if (g->joined)
			srv_ud_done(s, g);
		else
			srv_group_free(s, g);
	}
}

static int bench_serve(int fd, const struct bench_opts *o)
{
	struct krdma_cm_listen l = {
		.size = sizeof(l),
		.backlog = 1024,
		.transport = o->transport,
	};
	struct srv s = { .fd = fd, .o = o };
	struct krdma_event evs[16];
	char where[80];
	int ret, n, i;

	/* -d: on an address of that device, whose buffers the runs use */
	if (bench_ib_listen(fd, &o->ib, o->port, &l.addr, &s.dev_index,
			    &s.vendor_id))
		return 1;
	s.kproto = bench_protocol(fd);
	ret = krdma_ioctl_quiet(fd, KRDMA_CM_LISTEN, &l);
	if (ret) {
		xfer_format_addr(&l.addr, where, sizeof(where));
		if (o->ib.dev)
			err_msg("bench: cannot listen on %s: %s", where,
				strerror(-ret));
		else
			err_msg("bench: cannot listen on port %u: %s", o->port,
				strerror(-ret));
		return 1;
	}
	s.listener = l.handle;
	if (pr_is_json()) {
		pr_obj_begin(NULL);
		pr_str("event", "listening");
		pr_u64("port", l.port);
		pr_obj_end();
	} else if (o->ib.dev) {
		l.addr.port = l.port;
		xfer_format_addr(&l.addr, where, sizeof(where));
		printf("bench: listening on port %u (%s, %s)\n", l.port,
		       where, o->ib.dev);
	} else {
		printf("bench: listening on port %u\n", l.port);
	}
	fflush(stdout);
	while (!xfer_stop && !(o->once && s.finished)) {
		if (o->transport == KRDMA_TRANSPORT_UD)
			srv_ud_sweep(&s);
		n = xfer_get_events(fd, evs, ARRAY_SIZE(evs), 200);
		if (n == -EINTR)
			break;
		if (n < 0) {
			err_msg("bench: events: %s", strerror(-n));
			ret = n;
			break;
		}
		for (i = 0; i < n; i++) {
			switch (evs[i].type) {
			case KRDMA_EVENT_CONNECT_REQUEST:
				srv_request(&s, &evs[i]);
				break;
			case KRDMA_EVENT_DISCONNECTED:
			case KRDMA_EVENT_CONN_ERROR:
				srv_disconnected(&s, evs[i].handle);
				break;
			case KRDMA_EVENT_OVERFLOW:
				warn_msg("bench: %d events lost (the event queue was full)",
					 evs[i].status);
				break;
			default:
				break;
			}
		}
	}
	for (i = 0; i < SRV_MAX_GROUPS; i++)
		if (s.groups[i].used)
			srv_group_free(&s, &s.groups[i]);
	free(s.conn_group);
	xfer_destroy(fd, s.listener);
	return ret || s.run_failed ? 1 : 0;
}

/* memcpy of -s bytes between two 64 MiB areas: the copy ceiling. */
static int bench_memcpy(const struct bench_opts *o)
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

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o = {};
	int fd, ret;

	ret = bench_parse(argc, argv, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (o.copy_only) {
		if (pr_is_json())
			pr_obj_begin(NULL);
		ret = bench_memcpy(&o);
		if (pr_is_json())
			pr_obj_end();
		return ret;
	}
	fd = krdma_open();
	if (fd < 0) {
		krdma_report_open(fd);
		return 1;
	}
	if (bench_check_abi(fd)) {
		close(fd);
		return 1;
	}
	xfer_catch_signals();
	/* a server's JSON is a list of events, a client's one object */
	if (pr_is_json() && !o.host)
		pr_arr_begin(NULL);
	else if (pr_is_json())
		pr_obj_begin(NULL);
	if (!o.host)
		ret = bench_serve(fd, &o);
	else if (o.conns)
		ret = bench_conns(fd, &o);
	else
		ret = bench_client(fd, &o);
	if (pr_is_json() && !o.host)
		pr_arr_end();
	else if (pr_is_json())
		pr_obj_end();
	close(fd);
	return ret;
}
