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
#include <string.h>

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
	case OPT_COMMON_PRETTY:
		pr_set_pretty(true);
		return true;
	}
	return false;
}

/*
 * The option getopt_long() just returned as @c, as the user wrote it:
 * "--name" if it matched @longopts[@longidx] (@longidx -1: it did not),
 * else "-c".
 */
const char *opt_name(int c, const struct option *longopts, int longidx,
		     char *buf, size_t len)
{
	if (longidx >= 0)
		snprintf(buf, len, "--%s", longopts[longidx].name);
	else
		snprintf(buf, len, "-%c", c);
	return buf;
}

/*
 * Reports what getopt_long() refused (it runs with opterr = 0 and a
 * leading ':' in the option string) and prints @usage to stderr.  The
 * element it refused is argv[optind - 1], unless a short option inside a
 * cluster ("-xj") was: only optopt names that one.  A long option that
 * takes no value but was given one comes back as '?' with optopt set.
 */
int opt_fail(const char *cmd, int c, char **argv, const char *usage)
{
	const char *arg = argv[optind - 1];
	bool is_long = !strncmp(arg, "--", 2);
	bool short_opt = optopt > 0 && optopt < 0x80 && isgraph(optopt);
	const char *where = cmd ? cmd : "";
	const char *sep = cmd ? ": " : "";
	int arg_len = strcspn(arg, "=");

	if (c == ':' && is_long)
		err_msg("%s%soption %.*s needs an argument", where, sep,
			arg_len, arg);
	else if (c == ':')
		err_msg("%s%soption -%c needs an argument", where, sep, optopt);
	else if (is_long && optopt && arg[arg_len])
		err_msg("%s%soption %.*s takes no argument", where, sep,
			arg_len, arg);
	else if (short_opt && optopt == 'p')
		err_msg("%s%sunknown option -p (a port, where a command has "
			"one; pretty-printed JSON is --pretty)", where, sep);
	else if (short_opt)
		err_msg("%s%sunknown option -%c", where, sep, optopt);
	else
		err_msg("%s%sunknown option %.*s", where, sep, arg_len, arg);
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
 * A command's getopt_long() loop: -h prints @usage and returns -1 (done);
 * @one(@c, @ctx), if any, takes the command's own options and returns 0,
 * an exit code, or -1 for an option it does not have, which is then
 * either one of COMMON_LONG_OPTS or refused.  Returns 0, -1 or an exit
 * code; what is left of @argv starts at optind.
 */
int parse_opts(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts, const char *usage,
	       int (*one)(int c, void *ctx), void *ctx)
{
	int c, ret;

	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return -1;
		}
		ret = one ? one(c, ctx) : -1;
		if (ret < 0 && opt_common(c))
			continue;
		if (ret < 0)
			return opt_fail(cmd, c, argv, usage);
		if (ret)
			return ret;
	}
	return 0;
}

/* parse_opts() for a command with only COMMON_LONG_OPTS and no arguments. */
int parse_common_opts(const char *cmd, int argc, char **argv,
		      const char *usage)
{
	static const struct option long_opts[] = {
		COMMON_LONG_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	int ret;

	ret = parse_opts(cmd, argc, argv, "+:" COMMON_SHORT_OPTS, long_opts,
			 usage, NULL, NULL);
	return ret ? ret : opt_extra_args(cmd, argc, argv, usage);
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
