// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl bench: its options, their defaults, and the combinations
 * refused before anything runs; the names of operations and transports.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "print.h"

#define BENCH_PORT 18517
#define BENCH_MAX_CONNS 4096		/* --conns */

const struct bench_op_info bench_ops[BOP_CSWAP + 1] = {
	[BOP_NONE] = { "none", 0 },
	[BOP_SEND] = { "send", KRDMA_OP_SEND },
	[BOP_SEND_IMM] = { "send_imm", KRDMA_OP_SEND_WITH_IMM },
	[BOP_WRITE] = { "write", KRDMA_OP_RDMA_WRITE },
	[BOP_WRITE_IMM] = { "write_imm", KRDMA_OP_RDMA_WRITE_WITH_IMM },
	[BOP_READ] = { "read", KRDMA_OP_RDMA_READ },
	[BOP_FADD] = { "fadd", KRDMA_OP_ATOMIC_FETCH_ADD },
	[BOP_CSWAP] = { "cswap", KRDMA_OP_ATOMIC_CMP_SWP },
};

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
	"  -b, --bidirectional  write (RC, UC), read (RC): the server runs the\n"
	"                       same toward this host meanwhile; both\n"
	"                       directions summed\n"
	"      --validate       check payloads at the receiver\n"
	"      --via-ioctl      one KRDMA_POST per operation from userspace\n"
	"                       (--lat: which also reaps, KRDMA_POST_POLL)\n"
	"      --conns N        connection setup scale: N connections, time and\n"
	"                       kernel memory per connection\n"
	"      --run_infinitely bandwidth: a line each -D seconds (1) until\n"
	"                       SIGINT, over the same connections\n"
	"      --report_gbits   bandwidth in Gb/sec instead of MB/sec\n"
	"      --use_hugepages  the buffer in this process's 2 MiB huge pages\n"
	"                       (vm.nr_hugepages), registered zero copy,\n"
	"                       client and server alike\n"
	"      --output=bandwidth|latency\n"
	"                       print only BW average (bandwidth) or t_typical\n"
	"                       (--lat), one number a line\n"
	"  -H, --report-histogram\n"
	"                       --lat: every latency, sorted, before the figures\n"
	"  -U, --report-unsorted\n"
	"                       --lat: every latency, in the order measured\n"
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
	"  -j, --json           JSON\n"
	"      --pretty         pretty-printed JSON (implies -j)\n";

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
	OPT_HUGEPAGES,
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
			"takes -p, -T, -c, -d, --once, -j, --use_hugepages",
			client_opt);
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
	else if ((o->histogram || o->unsorted) && !o->latency)
		why = "-H and -U print a latency run's samples: --lat";
	else if ((o->histogram || o->unsorted) && (pr_is_json() || o->output))
		why = "-H and -U print text (not with -j or --output)";
	else if (o->bidir && o->op != BOP_WRITE && o->op != BOP_READ)
		why = "-b runs write and read: the server's run toward this "
		      "host is one-sided";
	else if (o->bidir && o->transport == KRDMA_TRANSPORT_UD)
		why = "-b runs over RC or UC (-c rc, -c uc)";
	else if (o->bidir && (o->latency || o->all || o->run_infinitely ||
			      o->via_ioctl || o->validate))
		why = "-b measures bandwidth of one size (not with --lat, -a, "
		      "--run_infinitely, --via-ioctl, --validate)";
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

int bench_parse(int argc, char **argv, struct bench_opts *o)
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
		{ "use_hugepages", no_argument, NULL, OPT_HUGEPAGES },
		{ "report-histogram", no_argument, NULL, 'H' },
		{ "report-unsorted", no_argument, NULL, 'U' },
		{ "bidirectional", no_argument, NULL, 'b' },
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
				":s:an:D:q:t:Q:I:c:ep:P:T:hjd:i:x:m:FVHUb",
				long_opts, (longidx = -1, &longidx))) != -1) {
		/*
		 * what a server takes: -p, -T, -c, -d, -F, -V, --once, -j,
		 * --pretty, --use_hugepages
		 */
		if (!client_opt[0] &&
		    (c >= 0x100 || !strchr(":?hjpPTcdFV", c)) &&
		    c != OPT_ONCE && c != OPT_PRETTY && c != OPT_HUGEPAGES)
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
		case 'b':
			o->bidir = true;
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
		case 'H':
			o->histogram = true;
			break;
		case 'U':
			o->unsorted = true;
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
		case OPT_HUGEPAGES:
			o->hugepages = true;
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

const char *bench_transport_name(uint32_t transport, bool upper)
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

