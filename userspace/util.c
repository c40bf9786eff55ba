// SPDX-License-Identifier: GPL-2.0
/*
 * Messages and strict option parsing.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "krdmactl.h"
#include "print.h"

static void __printf(2, 0) vmsg(const char *prefix, const char *fmt,
				 va_list ap)
{
	/* keep stdout and stderr in order on a terminal */
	fflush(stdout);
	fprintf(stderr, "%s: %s", PROG_NAME, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

/* Handles an option of COMMON_LONG_OPTS other than -h; true if @c was one. */
bool opt_common(int c)
{
	switch (c) {
	case 'j':
		pr_set_json(true);
		return true;
	case 'p':
		pr_set_pretty(true);
		return true;
	}
	return false;
}

/*
 * Reports what getopt_long() refused (it runs with opterr = 0 and a
 * leading ':' in the option string) and prints @usage to stderr.
 */
int opt_fail(const char *cmd, int c, char **argv, const char *usage)
{
	const char *where = cmd ? cmd : "";
	const char *sep = cmd ? ": " : "";

	if (c == ':' && optopt)
		err_msg("%s%soption -%c needs an argument", where, sep, optopt);
	else if (c == ':')
		err_msg("%s%soption %s needs an argument", where, sep,
			argv[optind - 1]);
	else if (c == '?' && optopt)
		err_msg("%s%sunknown option -%c", where, sep, optopt);
	else
		err_msg("%s%sunknown option %s", where, sep, argv[optind - 1]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}

int opt_extra_args(const char *cmd, int argc, char **argv, const char *usage)
{
	if (optind >= argc)
		return 0;
	err_msg("%s: unexpected argument \"%s\"", cmd, argv[optind]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}

/*
 * Strict unsigned parsing: decimal, 0x hex or 0 octal, the whole string,
 * no sign, no overflow, within [min, max].  On error reports which option
 * and why, and returns EXIT_USAGE.
 */
int parse_u64(const char *cmd, const char *opt, const char *arg,
	      uint64_t min, uint64_t max, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)arg[0]))
		goto bad;
	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno == ERANGE)
		goto range;
	if (errno || end == arg || *end)
		goto bad;
	if (v < min || v > max)
		goto range;
	*val = v;
	return 0;
bad:
	err_msg("%s: %s: \"%s\" is not a number", cmd, opt, arg);
	return EXIT_USAGE;
range:
	err_msg("%s: %s: %s is out of range %" PRIu64 "..%" PRIu64,
		cmd, opt, arg, min, max);
	return EXIT_USAGE;
}

int parse_u32(const char *cmd, const char *opt, const char *arg,
	      uint32_t min, uint32_t max, uint32_t *val)
{
	uint64_t v;
	int ret;

	ret = parse_u64(cmd, opt, arg, min, max, &v);
	if (!ret)
		*val = (uint32_t)v;
	return ret;
}
