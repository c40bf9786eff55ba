/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every open session, for listings: KRDMA_QUERY_SESSIONS and debugfs
 * (sessions.c, debugfs.c).
 */
#ifndef KRDMA_SESSIONS_H
#define KRDMA_SESSIONS_H

#include <linux/types.h>

#include "krdma.h"

struct krdma_session;
struct net;
struct pid_namespace;
struct user_namespace;

int krdma_sessions_add(struct krdma_session *session);
void krdma_sessions_del(struct krdma_session *session);

/**
 * struct krdma_sessions_snapshot - a listing of sessions and connections
 * @net: only sessions opened in this namespace; NULL: every namespace's
 * @pid_ns: only sessions whose opener it sees, numbered as it numbers them
 * @user_ns: the namespace uids are given in
 * @sessions: by session id
 * @conns: by session id, then handle
 * @num_sessions: entries of @sessions
 * @num_conns: entries of @conns
 * @max_sessions: room in @sessions
 * @max_conns: room in @conns
 */
struct krdma_sessions_snapshot {
	const struct net *net;
	struct pid_namespace *pid_ns;
	struct user_namespace *user_ns;
	struct krdma_session_info *sessions;
	struct krdma_conn_info *conns;
	u32 num_sessions;
	u32 num_conns;
	u32 max_sessions;
	u32 max_conns;
};

int krdma_sessions_snapshot(struct krdma_sessions_snapshot *snap);
void krdma_sessions_snapshot_free(struct krdma_sessions_snapshot *snap);

/* debugfs.c */
void krdma_debugfs_init(void);
void krdma_debugfs_exit(void);

#endif /* KRDMA_SESSIONS_H */
