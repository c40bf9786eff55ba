/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl: shared declarations.
 */
#ifndef KRDMACTL_H
#define KRDMACTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* krdma's version (scripts/version.sh), given by the Makefile */
#ifndef KRDMACTL_VERSION
#define KRDMACTL_VERSION "unknown"
#endif

#define PROG_NAME "krdmactl"

/* Exit codes: 0 success, 1 a call failed, 2 bad usage. */
#define EXIT_USAGE 2

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define __printf(a, b) __attribute__((format(printf, a, b)))

/*
 * A command: "krdmactl [global options] NAME [options]".  @func gets argv
 * starting at NAME, parses its own options (every command takes -h, -j
 * and -p, see COMMON_OPTS) and returns the exit code.  @help is the one
 * line shown by "krdmactl help".
 */
struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	const char *help;
};

/* Commands (one file each). */
int cmd_version(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_pingpong(int argc, char **argv);
int cmd_rping(int argc, char **argv);
int cmd_serve(int argc, char **argv);	/* xfer_serve.c */
int cmd_send(int argc, char **argv);	/* xfer_client.c, also: */
int cmd_write(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_atomic(int argc, char **argv);
int cmd_copy(int argc, char **argv);
int cmd_bench(int argc, char **argv);	/* bench.c */

/* dev.c: one KRDMA_QUERY_DEVICES answer */
struct krdma_device_info;
struct krdma_port_info;
struct krdma_gid_info;

struct dev_snapshot {
	struct krdma_device_info *devs;
	struct krdma_port_info *ports;
	struct krdma_gid_info *gids;
	uint32_t num_devs;
	uint32_t num_ports;
	uint32_t num_gids;
};

int query_devices(int fd, bool one, uint32_t dev_index,
		  struct dev_snapshot *s);
void free_snapshot(struct dev_snapshot *s);
bool dev_is_iwarp(int fd, uint32_t dev_index);
uint64_t dev_max_buf(int fd, uint32_t dev_index);
uint32_t dev_max_msg(int fd, uint32_t dev_index);
uint32_t dev_vendor_id(int fd, uint32_t dev_index);
const char *dev_name_of(int fd, uint32_t dev_index, char *buf, size_t len);

/* util.c: messages, option parsing */
void __printf(1, 2) err_msg(const char *fmt, ...);
void __printf(1, 2) warn_msg(const char *fmt, ...);

/*
 * getopt_long pieces every command includes.  -p is a port wherever a
 * command has one, so pretty-printing has no short option.
 */
#define OPT_COMMON_PRETTY 0x80
#define COMMON_SHORT_OPTS "hj"
#define COMMON_LONG_OPTS					\
	{ "help", no_argument, NULL, 'h' },			\
	{ "json", no_argument, NULL, 'j' },			\
	{ "pretty", no_argument, NULL, OPT_COMMON_PRETTY }

bool opt_common(int c);
struct option;
const char *opt_name(int c, const struct option *longopts, int longidx,
		     char *buf, size_t len);
int opt_fail(const char *cmd, int c, char **argv, const char *usage);
int opt_extra_args(const char *cmd, int argc, char **argv, const char *usage);
int parse_opts(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts, const char *usage,
	       int (*one)(int c, void *ctx), void *ctx);
int parse_common_opts(const char *cmd, int argc, char **argv,
		      const char *usage);
int parse_u32(const char *cmd, const char *opt, const char *arg,
	      uint32_t min, uint32_t max, uint32_t *val);
int parse_u64(const char *cmd, const char *opt, const char *arg,
	      uint64_t min, uint64_t max, uint64_t *val);

/* ioctl.c: /dev/krdma */
int krdma_open(void);
void krdma_report_open(int err);
int krdma_ioctl_quiet(int fd, unsigned long req, void *arg);
int krdma_ioctl(int fd, unsigned long req, void *arg);
uint64_t krdma_features(int fd);
const char *krdma_req_name(unsigned long req);
void krdma_report(unsigned long req, int err);
void __printf(3, 4) krdma_report_field(unsigned long req, int err,
				       const char *field_fmt, ...);

#endif /* KRDMACTL_H */
