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
 *
 * bench.h says which file holds what.
 */

#include <unistd.h>

#include "bench.h"
#include "print.h"

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
	loop_catch_signals();
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
