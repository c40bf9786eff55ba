// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: drive RDMA devices through the krdma kernel module.
 *
 *   krdmactl [global options] COMMAND [options]
 *
 * Global options apply to every command; a command's own -j/-p/-h behave
 * the same.  Exit code: 0 success, 1 a call failed, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <krdma.h>

#include "krdmactl.h"
#include "print.h"

static int cmd_help(int argc, char **argv);

/* In the order "krdmactl help" lists them. */
static const struct cmd commands[] = {
	{ "atomic", cmd_atomic, "8-byte atomic on a krdmactl serve's buffer" },
	{ "bench", cmd_bench,
	  "perftest-style benchmarks run in the kernel (KRDMA_BENCH)" },
	{ "copy", cmd_copy, "copy a file to krdmactl serve --save (RDMA WRITE)" },
	{ "devices", cmd_devices, "list RDMA devices, their ports and GIDs" },
	{ "help", cmd_help, "show help for krdmactl or for a command" },
	{ "pingpong", cmd_pingpong,
	  "ping-pong SENDs with ibv_{rc,uc,ud}_pingpong or another krdmactl" },
	{ "read", cmd_read, "RDMA READ from a krdmactl serve's buffer" },
	{ "rping", cmd_rping, "RDMA READ/WRITE ping with rdma-core's rping" },
	{ "send", cmd_send, "SEND a message to krdmactl serve" },
	{ "serve", cmd_serve, "serve send/write/read/atomic/copy clients" },
	{ "sessions", cmd_sessions,
	  "list sessions (open /dev/krdma) and their connections" },
	{ "version", cmd_version, "show krdmactl, uAPI and module versions" },
	{ "write", cmd_write, "RDMA WRITE into a krdmactl serve's buffer" },
};

static const struct cmd *find_cmd(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	unsigned int i;

	fputs("Usage: " PROG_NAME " [OPTIONS] COMMAND [COMMAND OPTIONS]\n"
	      "Drive RDMA devices through the krdma kernel module ("
	      "/dev/krdma).\n"
	      "\n"
	      "Options:\n"
	      "  -j, --json      JSON output\n"
	      "      --pretty    pretty-printed JSON (implies -j)\n"
	      "  -V, --version   krdmactl's version and the ABI it speaks\n"
	      "  -h, --help      this help\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-14s  %s\n", commands[i].name, commands[i].help);
	fputs("\nRun \"" PROG_NAME " COMMAND -h\" for a command's options.\n",
	      f);
}

static const char help_usage[] =
	"Usage: " PROG_NAME " help [COMMAND]\n"
	"Show the commands, or the options of COMMAND.\n";

/* "krdmactl help devices" is "krdmactl devices -h". */
static int cmd_help(int argc, char **argv)
{
	char *help_argv[] = { NULL, "--help", NULL };
	const struct cmd *cmd;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		err_msg("help: unexpected argument \"%s\"", argv[2]);
		fputs(help_usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(help_usage, stdout);
		return 0;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		err_msg("help: unknown command \"%s\", try \"" PROG_NAME
			" help\"", argv[1]);
		return EXIT_USAGE;
	}
	if (cmd->func == cmd_help) {
		fputs(help_usage, stdout);
		return 0;
	}
	help_argv[0] = argv[1];
	return cmd->func(2, help_argv);
}

/* Global options: they end at the first non-option, the command. */
static int parse_global_opts(int argc, char **argv)
{
	static const struct option long_opts[] = {
		COMMON_LONG_OPTS,
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:V" COMMON_SHORT_OPTS, long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			/* as iproute2's tools: one line, no module needed */
			printf(PROG_NAME " %s (ABI %u)\n", KRDMACTL_VERSION,
			       KRDMA_ABI_VERSION);
			exit(0);
		default:
			if (opt_common(c))
				break;
			opt_fail(NULL, c, argv, "");
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	return optind;
}

static int run_cmd(int argc, char **argv)
{
	const struct cmd *cmd = find_cmd(argv[0]);

	if (!cmd) {
		err_msg("unknown command \"%s\", try \"" PROG_NAME " help\"",
			argv[0]);
		return EXIT_USAGE;
	}
	/* commands parse their options with getopt_long() from scratch */
	optind = 0;
	opterr = 0;
	return cmd->func(argc, argv);
}

int main(int argc, char **argv)
{
	int first, ret, err;

	first = parse_global_opts(argc, argv);
	if (first >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = run_cmd(argc - first, argv + first);
	err = pr_finish();
	if (err && err != -EPIPE) {
		err_msg("write error: %s", strerror(-err));
		return 1;
	}
	return ret;
}
