// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krdma: open it, issue commands, explain failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <krdma.h>

#include "krdmactl.h"

#define REQ_NAME(cmd)	[KRDMA_CMD_##cmd - KRDMA_CMD_BASE] = "KRDMA_" #cmd

static const char *const krdma_req_names[] = {
	REQ_NAME(GET_INFO),
	REQ_NAME(QUERY_DEVICES),
	REQ_NAME(DESTROY),
	REQ_NAME(BUF_ALLOC),
	REQ_NAME(BUF_REG_USER),
	REQ_NAME(BUF_RW),
	REQ_NAME(CONN_CREATE),
	REQ_NAME(CONN_MODIFY),
	REQ_NAME(CONN_QUERY),
	REQ_NAME(CM_LISTEN),
	REQ_NAME(CM_CONNECT),
	REQ_NAME(CM_ACCEPT),
	REQ_NAME(CM_REJECT),
	REQ_NAME(CM_DISCONNECT),
	REQ_NAME(GET_EVENTS),
	REQ_NAME(POST),
	REQ_NAME(POLL),
	REQ_NAME(AH_CREATE),
	REQ_NAME(SRQ_CREATE),
	REQ_NAME(BENCH),
	REQ_NAME(QUERY_SESSIONS),
};

const char *krdma_req_name(unsigned long req)
{
	unsigned int nr = (unsigned int)_IOC_NR(req) - KRDMA_CMD_BASE;

	if (_IOC_TYPE(req) != KRDMA_TYPE || nr >= ARRAY_SIZE(krdma_req_names) ||
	    !krdma_req_names[nr])
		return "ioctl";
	return krdma_req_names[nr];
}

/* Returns the fd, or -errno (nothing printed: see krdma_report_open()). */
int krdma_open(void)
{
	int fd = open(KRDMA_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void krdma_report_open(int err)
{
	const char *hint = "";

	if (err == -ENOENT || err == -ENODEV || err == -ENXIO)
		hint = " (is krdma.ko loaded?)";
	else if (err == -EACCES)
		hint = " (root's and the krdma group's: usermod -aG krdma USER)";
	err_msg("cannot open %s: %s%s", KRDMA_DEVICE_PATH, strerror(-err),
		hint);
}

/* Returns 0 or -errno; reports nothing. */
int krdma_ioctl_quiet(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

/* The loaded module's KRDMA_FEATURE_* bits; 0 if it cannot tell. */
uint64_t krdma_features(int fd)
{
	struct krdma_info info = { .size = sizeof(info) };

	return krdma_ioctl_quiet(fd, KRDMA_GET_INFO, &info) ? 0 :
	       info.features;
}

/* Returns 0 or -errno; a failure is reported with krdma_report(). */
int krdma_ioctl(int fd, unsigned long req, void *arg)
{
	int ret = krdma_ioctl_quiet(fd, req, arg);

	if (ret)
		krdma_report(req, ret);
	return ret;
}

/* Does @req make what is charged to RLIMIT_MEMLOCK (buffers, queues)? */
static bool krdma_req_charges_memlock(unsigned long req)
{
	return req == KRDMA_BUF_ALLOC || req == KRDMA_BUF_REG_USER ||
	       req == KRDMA_CONN_CREATE || req == KRDMA_SRQ_CREATE ||
	       req == KRDMA_CM_CONNECT || req == KRDMA_CM_ACCEPT;
}

/* What an errno means for krdma command @req, beyond strerror(). */
static const char *krdma_errno_hint(unsigned long req, int err)
{
	switch (err) {
	case -ENOTTY:
		return " (not implemented by this krdma.ko, see \"" PROG_NAME
		       " version\")";
	case -E2BIG:
		return " (krdma.ko is older than " PROG_NAME
		       " and lacks a field it set)";
	case -EMSGSIZE:
		return req == KRDMA_BUF_REG_USER ?
		       " (memory one MR does not map is several, and this "
		       "use takes one MR: a shorter buffer)" : "";
	case -EDQUOT:
		return " (your objects, over all your sessions, are at krdma's "
		       "max_objects_per_user)";
	case -ENOMEM:
		if (req == KRDMA_POST)
			return " (the queue is full until its completions are "
			       "polled)";
		return krdma_req_charges_memlock(req) ?
		       " (or past RLIMIT_MEMLOCK, which buffers and queues are "
		       "charged to: ulimit -l)" : "";
	default:
		return "";
	}
}

/* "krdmactl: KRDMA_X: strerror (hint)" */
void krdma_report(unsigned long req, int err)
{
	err_msg("%s: %s%s", krdma_req_name(req), strerror(-err),
		krdma_errno_hint(req, err));
}

/* "krdmactl: KRDMA_X: FIELD: strerror (hint)", when the field is known. */
void krdma_report_field(unsigned long req, int err, const char *field_fmt, ...)
{
	char field[128];
	va_list ap;

	va_start(ap, field_fmt);
	vsnprintf(field, sizeof(field), field_fmt, ap);
	va_end(ap);
	err_msg("%s: %s: %s%s", krdma_req_name(req), field, strerror(-err),
		krdma_errno_hint(req, err));
}
