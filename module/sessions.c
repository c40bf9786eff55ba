// SPDX-License-Identifier: GPL-2.0
/*
 * Every open session, and KRDMA_QUERY_SESSIONS: who uses krdma, with what
 * connections.
 *
 * A listing sees what `rdma resource show` would: sessions of the
 * viewer's network namespace opened by a process its PID namespace sees.
 * It holds no lock of the module while it describes a session: it takes a
 * reference on the session, then on each object in turn, as a command on
 * that object would (object.c), so a listing never stalls its subjects
 * for longer than one connection's description.
 */
#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>

#include "account.h"
#include "conn.h"
#include "ioctl.h"
#include "object.h"
#include "sessions.h"

/*
 * Session id -> session, from open() until release(), while the file's
 * reference keeps it; the xarray's lock protects a lookup and the
 * reference it takes, and krdma_next_session_id.
 */
static DEFINE_XARRAY_ALLOC1(krdma_sessions);
static u32 krdma_next_session_id;

int krdma_sessions_add(struct krdma_session *session)
{
	int ret;

	/* cyclic: a listing's id names one session, not its successor */
	ret = xa_alloc_cyclic(&krdma_sessions, &session->id, session,
			      xa_limit_31b, &krdma_next_session_id,
			      GFP_KERNEL);
	return ret < 0 ? ret : 0;
}

void krdma_sessions_del(struct krdma_session *session)
{
	xa_erase(&krdma_sessions, session->id);
}

/* The next session at or after *@id, referenced, or NULL at the end. */
static struct krdma_session *krdma_sessions_next(unsigned long *id)
{
	struct krdma_session *session;

	xa_lock(&krdma_sessions);
	session = xa_find(&krdma_sessions, id, ULONG_MAX, XA_PRESENT);
	if (session)
		kref_get(&session->kref);	/* the file's is still held */
	xa_unlock(&krdma_sessions);
	return session;
}

static bool krdma_session_listed(const struct krdma_session *session,
				 const struct krdma_sessions_snapshot *snap)
{
	if (snap->net && !net_eq(session->net, snap->net))
		return false;
	return pid_nr_ns(session->tgid, snap->pid_ns) != 0;
}

/* Describe each connection of @session; count every object. */
static int krdma_snap_objects(struct krdma_sessions_snapshot *snap,
			      struct krdma_session *session,
			      struct krdma_session_info *sinfo)
{
	struct krdma_conn_info *cinfo;
	struct krdma_object *obj;
	unsigned long handle;
	int ret = 0;

	for (handle = 0; !ret; handle++) {
		obj = krdma_session_next_object(session, &handle);
		if (!obj)
			break;
		sinfo->num_objects++;
		if (krdma_object_is_conn(obj)) {
			cinfo = krdma_array_slot((void **)&snap->conns,
						 &snap->num_conns,
						 &snap->max_conns,
						 sizeof(*cinfo));
			if (cinfo) {
				krdma_conn_describe(obj, cinfo);
				sinfo->num_conns++;
			} else {
				ret = -ENOMEM;
			}
		}
		krdma_object_put(obj);
		cond_resched();
	}
	return ret;
}

static int krdma_snap_session(struct krdma_sessions_snapshot *snap,
			      struct krdma_session *session)
{
	struct krdma_session_info *sinfo;

	sinfo = krdma_array_slot((void **)&snap->sessions, &snap->num_sessions,
				 &snap->max_sessions, sizeof(*sinfo));
	if (!sinfo)
		return -ENOMEM;
	sinfo->session_id = session->id;
	/* its number may be another's once it exited (restrack hides it) */
	if (pid_has_task(session->tgid, PIDTYPE_TGID))
		sinfo->pid = pid_nr_ns(session->tgid, snap->pid_ns);
	sinfo->uid = from_kuid_munged(snap->user_ns,
				      krdma_user_uid(session->user));
	strscpy(sinfo->comm, session->comm, sizeof(sinfo->comm));
	return krdma_snap_objects(snap, session, sinfo);
}

/* Fill @snap, whose filters the caller set; 0 or -ENOMEM. */
int krdma_sessions_snapshot(struct krdma_sessions_snapshot *snap)
{
	struct krdma_session *session;
	unsigned long id;
	int ret = 0;

	for (id = 0; !ret; id++) {
		session = krdma_sessions_next(&id);
		if (!session)
			break;
		if (krdma_session_listed(session, snap))
			ret = krdma_snap_session(snap, session);
		krdma_session_put(session);
		cond_resched();
	}
	return ret;
}

void krdma_sessions_snapshot_free(struct krdma_sessions_snapshot *snap)
{
	kvfree(snap->sessions);
	kvfree(snap->conns);
}

static int krdma_query_sessions_check(const struct krdma_query_sessions *cmd)
{
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	ret = krdma_check_array(cmd->num_sessions, cmd->session_entry_size,
				sizeof(struct krdma_session_info));
	if (!ret)
		ret = krdma_check_array(cmd->num_conns, cmd->conn_entry_size,
					sizeof(struct krdma_conn_info));
	return ret;
}

static int krdma_copy_sessions(const struct krdma_query_sessions *cmd,
			       const struct krdma_sessions_snapshot *snap)
{
	int ret;

	ret = krdma_copy_entries(cmd->sessions_uptr, cmd->session_entry_size,
				 snap->sessions, sizeof(*snap->sessions),
				 snap->num_sessions);
	if (!ret)
		ret = krdma_copy_entries(cmd->conns_uptr, cmd->conn_entry_size,
					 snap->conns, sizeof(*snap->conns),
					 snap->num_conns);
	return ret;
}

int krdma_query_sessions(struct krdma_session *session,
			 struct krdma_ucmd *ucmd)
{
	struct krdma_query_sessions *cmd = ucmd->cmd;
	struct krdma_sessions_snapshot snap = {
		.net = session->net,
		.pid_ns = task_active_pid_ns(current),
		.user_ns = current_user_ns(),
	};
	bool fits;
	int ret;

	ret = krdma_query_sessions_check(cmd);
	if (ret)
		return ret;
	ret = krdma_sessions_snapshot(&snap);
	if (ret)
		goto out;

	fits = snap.num_sessions <= cmd->num_sessions &&
	       snap.num_conns <= cmd->num_conns;
	if (fits)
		ret = krdma_copy_sessions(cmd, &snap);
	if (ret)
		goto out;

	cmd->num_sessions = snap.num_sessions;
	cmd->num_conns = snap.num_conns;
	ret = krdma_ucmd_respond(ucmd, sizeof(*cmd));
	if (!ret && !fits)
		ret = -EMSGSIZE;
out:
	krdma_sessions_snapshot_free(&snap);
	return ret;
}
