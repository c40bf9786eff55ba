// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl sessions: who has /dev/krdma open, and with what connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <krdma.h>

#include "addr.h"
#include "krdmactl.h"
#include "names.h"
#include "print.h"

/* A session that opens or closes between sizing and fetching costs a try. */
#define QUERY_SESSIONS_TRIES 5

static const char sessions_usage[] =
	"Usage: " PROG_NAME " sessions [OPTIONS]\n"
	"List the krdma sessions (each an open /dev/krdma) the caller may\n"
	"see, with their connections: device, port, transport, QP state and\n"
	"numbers, rdma_cm peer.\n"
	"\n"
	"  -j, --json          JSON output\n"
	"      --pretty        pretty-printed JSON (implies -j)\n"
	"  -h, --help          this help\n";

/* One KRDMA_QUERY_SESSIONS answer. */
struct sess_snapshot {
	struct krdma_session_info *sessions;
	struct krdma_conn_info *conns;
	uint32_t num_sessions;
	uint32_t num_conns;
};

static void free_sess_snapshot(struct sess_snapshot *s)
{
	free(s->sessions);
	free(s->conns);
	memset(s, 0, sizeof(*s));
}

/* Room for the counts in @s->num_*; the old contents are dropped. */
static int alloc_sess_snapshot(struct sess_snapshot *s)
{
	struct sess_snapshot n = {
		.num_sessions = s->num_sessions,
		.num_conns = s->num_conns,
	};

	free_sess_snapshot(s);
	if (n.num_sessions)
		n.sessions = calloc(n.num_sessions, sizeof(*n.sessions));
	if (n.num_conns)
		n.conns = calloc(n.num_conns, sizeof(*n.conns));
	*s = n;
	if ((n.num_sessions && !n.sessions) || (n.num_conns && !n.conns)) {
		free_sess_snapshot(s);
		return -ENOMEM;
	}
	return 0;
}

/* Strings from the kernel are NUL-terminated; make sure of it. */
static void terminate_sess_strings(struct sess_snapshot *s)
{
	uint32_t i;

	for (i = 0; i < s->num_sessions; i++)
		s->sessions[i].comm[sizeof(s->sessions[i].comm) - 1] = '\0';
}

static void fill_sess_query(struct krdma_query_sessions *q,
			    const struct sess_snapshot *s)
{
	*q = (struct krdma_query_sessions){
		.size = sizeof(*q),
		.num_sessions = s->num_sessions,
		.session_entry_size = sizeof(*s->sessions),
		.num_conns = s->num_conns,
		.conn_entry_size = sizeof(*s->conns),
		.sessions_uptr = (uintptr_t)s->sessions,
		.conns_uptr = (uintptr_t)s->conns,
	};
}

/* A krdma.ko without the command: say so, and which one is loaded. */
static void report_no_sessions(int fd)
{
	struct krdma_info info = { .size = sizeof(info) };
	char loaded[sizeof(info.module_version) + 32] = "";

	if (!krdma_ioctl_quiet(fd, KRDMA_GET_INFO, &info)) {
		info.module_version[sizeof(info.module_version) - 1] = '\0';
		snprintf(loaded, sizeof(loaded), " (krdma.ko %s is loaded)",
			 info.module_version);
	}
	err_msg("sessions: the krdma module is older than this tool: it has no %s%s",
		krdma_req_name(KRDMA_QUERY_SESSIONS), loaded);
}

/*
 * KRDMA_QUERY_SESSIONS, sized as KRDMA_QUERY_DEVICES is: zero capacities
 * first, EMSGSIZE writes back the counts needed, allocate those and ask
 * again.  Reports failures; returns 0 or -errno.
 */
static int query_sessions(int fd, struct sess_snapshot *s)
{
	struct krdma_query_sessions q;
	int try, ret, err;

	memset(s, 0, sizeof(*s));
	for (try = 0; try < QUERY_SESSIONS_TRIES; try++) {
		fill_sess_query(&q, s);
		ret = krdma_ioctl_quiet(fd, KRDMA_QUERY_SESSIONS, &q);
		if (ret != -EMSGSIZE)
			break;
		s->num_sessions = q.num_sessions;
		s->num_conns = q.num_conns;
		err = alloc_sess_snapshot(s);
		if (err) {
			err_msg("sessions: %s", strerror(-err));
			return err;
		}
	}
	if (ret == -ENOTTY) {
		report_no_sessions(fd);
		free_sess_snapshot(s);
		return ret;
	}
	if (ret && ret != -EMSGSIZE) {
		krdma_report(KRDMA_QUERY_SESSIONS, ret);
		free_sess_snapshot(s);
		return ret;
	}
	if (ret) {
		err_msg("%s: %s (the sessions kept changing)",
			krdma_req_name(KRDMA_QUERY_SESSIONS), strerror(-ret));
		free_sess_snapshot(s);
		return ret;
	}
	if (q.num_sessions > s->num_sessions || q.num_conns > s->num_conns) {
		err_msg("%s: reported more entries than there was room for",
			krdma_req_name(KRDMA_QUERY_SESSIONS));
		free_sess_snapshot(s);
		return -EPROTO;
	}
	s->num_sessions = q.num_sessions;
	s->num_conns = q.num_conns;
	terminate_sess_strings(s);
	return 0;
}

static const char *dev_name(const struct dev_snapshot *devs,
			    uint32_t dev_index)
{
	uint32_t i;

	for (i = 0; i < devs->num_devs; i++)
		if (devs->devs[i].dev_index == dev_index)
			return devs->devs[i].name;
	return NULL;
}

/*
 * "conn 1 dev rxe0 port 1 transport rc state RTS qpn 17 dest_qpn 18
 * peer 10.0.0.2:7471 flags cm,established last_wc_status SUCCESS".
 * A connection whose device went away has nothing but its handle and
 * flags ("gone").
 */
static void print_conn(const struct dev_snapshot *devs,
		       const struct krdma_conn_info *c)
{
	const char *name;
	char peer[INET6_ADDRSTRLEN + 16];

	pr_obj_begin(NULL);
	pr_u64("conn", c->handle);
	if (!(c->flags & KRDMA_CONN_INFO_GONE)) {
		name = dev_name(devs, c->dev_index);
		if (name)
			pr_str("dev", name);
		else
			pr_u64("dev_index", c->dev_index);
		pr_u64("port", c->port_num);
		pr_str("transport", transport_name(c->transport));
		pr_str("state", conn_state_name(c->state));
		pr_u64("qpn", c->qp_num);
		pr_u64("dest_qpn", c->dest_qp_num);
		if (c->peer.family) {
			addr_format(&c->peer, peer, sizeof(peer));
			pr_str("peer", peer);
		}
		pr_u64("wrs_posted", c->wrs_posted);
		pr_u64("wcs_reaped", c->wcs_reaped);
	}
	pr_bits("flags", c->flags, conn_info_flag_names,
		nr_conn_info_flag_names);
	if (!(c->flags & KRDMA_CONN_INFO_GONE))
		pr_str("last_wc_status", wc_status_name(c->last_wc_status));
	pr_obj_end();
}

/*
 * "session 3 pid 1234 uid 0 comm krdmactl objects 5 conns 2", then its
 * connections; in JSON the count of connections is their array's length.
 */
static void print_session(const struct sess_snapshot *s,
			  const struct dev_snapshot *devs,
			  const struct krdma_session_info *si)
{
	uint32_t i;

	pr_obj_begin(NULL);
	pr_u64("session", si->session_id);
	pr_u64("pid", si->pid);
	pr_u64("uid", si->uid);
	pr_str("comm", si->comm);
	pr_u64("objects", si->num_objects);
	pr_fmt_u64(NULL, "conns %" PRIu64, si->num_conns);
	pr_arr_begin("conns");
	for (i = 0; i < s->num_conns; i++)
		if (s->conns[i].session_id == si->session_id)
			print_conn(devs, &s->conns[i]);
	pr_arr_end();
	pr_obj_end();
}

static void print_sessions(const struct sess_snapshot *s,
			   const struct dev_snapshot *devs)
{
	uint32_t i;

	pr_arr_begin(NULL);
	for (i = 0; i < s->num_sessions; i++)
		print_session(s, devs, &s->sessions[i]);
	pr_arr_end();
}

/* Does any connection name a device (one that is not gone)? */
static bool needs_devices(const struct sess_snapshot *s)
{
	uint32_t i;

	for (i = 0; i < s->num_conns; i++)
		if (!(s->conns[i].flags & KRDMA_CONN_INFO_GONE))
			return true;
	return false;
}

int cmd_sessions(int argc, char **argv)
{
	struct sess_snapshot snap;
	struct dev_snapshot devs = { 0 };
	int fd, ret;

	ret = parse_common_opts("sessions", argc, argv, sessions_usage);
	if (ret)
		return ret < 0 ? 0 : ret;

	fd = krdma_open();
	if (fd < 0) {
		krdma_report_open(fd);
		return 1;
	}
	ret = query_sessions(fd, &snap);
	/* device names for the indexes; one not found prints as its index */
	if (!ret && needs_devices(&snap))
		ret = query_devices(fd, false, 0, &devs);
	close(fd);
	if (ret) {
		free_sess_snapshot(&snap);
		return 1;
	}
	print_sessions(&snap, &devs);
	free_sess_snapshot(&snap);
	free_snapshot(&devs);
	return 0;
}
