// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/krdma/: what krdma holds, for an operator (root).
 *
 *  sessions  every session (pid and uid as the initial namespaces number
 *            them, comm, objects), each followed by its connections
 *  devices   each device, the objects on it, and each session's PD there
 *            with the state of its registration QP
 *  users     max_objects_per_user, and each user's sessions and objects;
 *            the per-CPU bench threads running, and their cap
 *
 * Lines are "key value" pairs, as `rdma` prints; an indented line belongs
 * to the unindented one above it.  KRDMA_QUERY_SESSIONS (`krdmactl
 * sessions`) gives the same sessions to hosts without debugfs.
 */
#include <linux/debugfs.h>
#include <linux/in.h>
#include <linux/pid_namespace.h>
#include <linux/seq_file.h>
#include <linux/socket.h>
#include <linux/user_namespace.h>
#include <rdma/ib_verbs.h>

#include "account.h"
#include "bench.h"
#include "conn.h"
#include "device.h"
#include "sessions.h"

static struct dentry *krdma_debugfs_root;

static const char *const krdma_transport_names[] = {
	[KRDMA_TRANSPORT_RC] = "RC",
	[KRDMA_TRANSPORT_UC] = "UC",
	[KRDMA_TRANSPORT_UD] = "UD",
};

/* enum krdma_conn_info_flags, bit by bit */
static const char *const krdma_conn_flag_names[] = {
	"cm", "established", "disconnected", "error", "bench", "notify",
	"gone", "state_unknown",
};

static void krdma_show_flags(struct seq_file *m, u32 flags)
{
	const char *sep = " ";
	unsigned int bit;

	seq_puts(m, " flags");
	for (bit = 0; bit < ARRAY_SIZE(krdma_conn_flag_names); bit++) {
		if (!(flags & BIT(bit)))
			continue;
		seq_printf(m, "%s%s", sep, krdma_conn_flag_names[bit]);
		sep = ",";
	}
	if (!flags)
		seq_puts(m, " none");
}

static void krdma_show_peer(struct seq_file *m,
			    const struct krdma_sockaddr *peer)
{
	if (peer->family == AF_INET)
		seq_printf(m, " peer %pI4:%u", peer->addr, peer->port);
	else if (peer->family == AF_INET6)
		seq_printf(m, " peer [%pI6c]:%u", peer->addr, peer->port);
}

static void krdma_show_conn(struct seq_file *m,
			    const struct krdma_conn_info *c)
{
	const char *transport = c->transport < ARRAY_SIZE(krdma_transport_names) ?
				krdma_transport_names[c->transport] : "?";

	seq_printf(m, "    conn %u", c->handle);
	if (!(c->flags & KRDMA_CONN_INFO_GONE))
		seq_printf(m, " dev %u port %u transport %s state %s qpn %u dest_qpn %u last_wc_status %u",
			   c->dev_index, c->port_num, transport,
			   krdma_qp_state_name(c->state), c->qp_num,
			   c->dest_qp_num, c->last_wc_status);
	krdma_show_peer(m, &c->peer);
	if (!(c->flags & KRDMA_CONN_INFO_GONE))
		seq_printf(m, " wrs_posted %llu wcs_reaped %llu", c->wrs_posted,
			   c->wcs_reaped);
	krdma_show_flags(m, c->flags);
	seq_putc(m, '\n');
}

static int krdma_sessions_show(struct seq_file *m, void *unused)
{
	struct krdma_sessions_snapshot snap = {
		.pid_ns = &init_pid_ns,
		.user_ns = &init_user_ns,
	};
	const struct krdma_session_info *s;
	u32 i, c = 0;
	int ret;

	ret = krdma_sessions_snapshot(&snap);
	for (i = 0; !ret && i < snap.num_sessions; i++) {
		s = &snap.sessions[i];
		seq_printf(m, "session %u pid %u uid %u comm ", s->session_id,
			   s->pid, s->uid);
		/* a user names its process: no line or field of its own */
		seq_escape(m, s->comm, " \t\n\\");
		seq_printf(m, " objects %u conns %u\n", s->num_objects,
			   s->num_conns);
		/* both arrays go by session id */
		while (c < snap.num_conns &&
		       snap.conns[c].session_id == s->session_id)
			krdma_show_conn(m, &snap.conns[c++]);
	}
	krdma_sessions_snapshot_free(&snap);
	return ret;
}
DEFINE_SHOW_ATTRIBUTE(krdma_sessions);

static int krdma_devices_debugfs_show(struct seq_file *m, void *unused)
{
	krdma_devices_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(krdma_devices_debugfs);

static int krdma_users_debugfs_show(struct seq_file *m, void *unused)
{
	krdma_users_show(m);
	krdma_bench_threads_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(krdma_users_debugfs);

/* Nothing depends on it: without debugfs, krdma works the same. */
void krdma_debugfs_init(void)
{
	krdma_debugfs_root = debugfs_create_dir("krdma", NULL);
	debugfs_create_file("sessions", 0400, krdma_debugfs_root, NULL,
			    &krdma_sessions_fops);
	debugfs_create_file("devices", 0400, krdma_debugfs_root, NULL,
			    &krdma_devices_debugfs_fops);
	debugfs_create_file("users", 0400, krdma_debugfs_root, NULL,
			    &krdma_users_debugfs_fops);
}

void krdma_debugfs_exit(void)
{
	debugfs_remove_recursive(krdma_debugfs_root);
}
