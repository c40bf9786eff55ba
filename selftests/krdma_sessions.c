// SPDX-License-Identifier: GPL-2.0
/*
 * What an operator sees of krdma's users: KRDMA_QUERY_SESSIONS (and
 * `krdmactl sessions`), /sys/kernel/debug/krdma, and the krdma_conn_state
 * tracepoint.  A transfer and a failure are each found in the listing,
 * in debugfs, in the kernel log; who may see whose sessions is the rule
 * `rdma resource show` has (network and PID namespaces).
 */
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "krdma_test.h"

#define DEBUGFS "/sys/kernel/debug"

FIXTURE(sessions)
{
	int fd;
	struct kt_dev dev;
	struct kt_sessions ks;
};

FIXTURE_SETUP(sessions)
{
	memset(&self->ks, 0, sizeof(self->ks));
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(kt_dev_pick(self->fd, NULL, &self->dev));
}

FIXTURE_TEARDOWN(sessions)
{
	kt_sessions_free(&self->ks);
	if (self->fd >= 0)
		close(self->fd);
}

static void ks_query_init(struct krdma_query_sessions *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->session_entry_size = sizeof(struct krdma_session_info);
	q->conn_entry_size = sizeof(struct krdma_conn_info);
}

/* The (first) listed session opened by @pid, or NULL. */
static const struct krdma_session_info *ks_find_pid(const struct kt_sessions *ks,
						   pid_t pid)
{
	for (uint32_t i = 0; i < ks->q.num_sessions; i++)
		if (ks->s[i].pid == (uint32_t)pid)
			return &ks->s[i];
	return NULL;
}

/* The file @path, whole, NUL-terminated (malloc'd); NULL if unreadable. */
static char *ks_slurp(const char *path)
{
	size_t len = 0, cap = 65536;
	char *text = malloc(cap);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !text) {
		if (fd >= 0)
			close(fd);
		free(text);
		return NULL;
	}
	while ((n = read(fd, text + len, cap - len - 1)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *more = realloc(text, cap * 2);

			if (!more)
				break;
			text = more;
			cap *= 2;
		}
	}
	text[len] = 0;
	close(fd);
	return text;
}

/* debugfs, mounted if need be; false if the kernel has none. */
static bool ks_debugfs(void)
{
	if (!access(DEBUGFS "/krdma", F_OK))
		return true;
	mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	return !access(DEBUGFS "/krdma", F_OK);
}

/* Our comm, as the kernel has it. */
static void ks_comm(char comm[KRDMA_COMM_MAX])
{
	comm[0] = 0;
	kt_read_file("/proc/self/comm", comm, KRDMA_COMM_MAX);
	comm[strcspn(comm, "\n")] = 0;
}

/* Is there a line in @text with @want in it (after the line's start)? */
static bool ks_has_line(const char *text, const char *want)
{
	return text && strstr(text, want);
}

/* The queues of the tests' connected RC pairs */
static const struct krdma_qp_caps ks_caps = {
	.max_send_wr = 8,
	.max_recv_wr = 8,
};

/* Flags, entry sizes, and sizing: the contract of every listing. */
KRDMA_TEST_F(sessions, contract)
{
	struct krdma_session_info one;
	struct krdma_query_sessions q;

	ks_query_init(&q);
	q.flags = 1;
	test_err_ioctl(EOPNOTSUPP, KRDMA_QUERY_SESSIONS, &q);
	/* zero capacities: the counts, and EMSGSIZE (our session is there) */
	ks_query_init(&q);
	test_err_ioctl(EMSGSIZE, KRDMA_QUERY_SESSIONS, &q);
	EXPECT_LE(1u, q.num_sessions);
	/* an entry below the struct's first version */
	ks_query_init(&q);
	q.num_sessions = 1;
	q.session_entry_size = offsetof(struct krdma_session_info, comm);
	q.sessions_uptr = (uintptr_t)&one;
	test_err_ioctl(EINVAL, KRDMA_QUERY_SESSIONS, &q);
	/* room, but nowhere to write it */
	ks_query_init(&q);
	q.num_sessions = 64;
	q.num_conns = 64;
	q.sessions_uptr = 8;
	q.conns_uptr = 8;
	test_err_ioctl(EFAULT, KRDMA_QUERY_SESSIONS, &q);
}

/* Our own session: pid, uid, comm, and each object counted. */
KRDMA_TEST_F(sessions, own_session)
{
	const struct krdma_session_info *me;
	char comm[KRDMA_COMM_MAX];
	struct kt_buf buf;
	uint32_t before;

	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	me = ks_find_pid(&self->ks, getpid());
	ASSERT_NE(NULL, me);
	before = me->num_objects;
	EXPECT_EQ(getuid(), me->uid);
	EXPECT_EQ(0u, me->num_conns);
	ks_comm(comm);
	EXPECT_STREQ(comm, me->comm);

	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);
	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	me = ks_find_pid(&self->ks, getpid());
	ASSERT_NE(NULL, me);
	EXPECT_EQ(before + 1, me->num_objects);
}

/*
 * A transfer, then a failure, on a connection: each is in the listing, in
 * debugfs, and (the failure) in the kernel log.
 */
KRDMA_TEST_F_TIMEOUT(sessions, transfer_and_failure, 60)
{
	const char *no_nak = kt_rxe_defect(KT_RXE_NO_ACCESS_NAK) ?:
			     kt_dev_lacks(&self->dev, KT_CAP_REMOTE_ERR_WC);
	const struct krdma_session_info *me;
	const struct krdma_conn_info *ci;
	struct krdma_conn_query cq;
	struct kt_conn a, b;
	struct kt_buf buf;
	char want[256], *text;
	uint32_t sid;
	int kmsg = kt_kmsg_open();

	/* a connection made by hand, as iWARP has none */
	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &ks_caps, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);
	kt_write_wait(_metadata, self->fd, a.handle, 1, &buf, 128, 1024,
		      buf.rkey, KT_WC_SUCCESS);

	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	me = ks_find_pid(&self->ks, getpid());
	ASSERT_NE(NULL, me);
	sid = me->session_id;
	EXPECT_EQ(2u, me->num_conns);
	EXPECT_EQ(3u, me->num_objects);
	ci = kt_sessions_conn(&self->ks, a.qp_num);
	ASSERT_NE(NULL, ci);
	EXPECT_EQ(a.qp_num, ci->qp_num);
	EXPECT_EQ(kt_peer_qpn(&self->dev, b.qp_num), ci->dest_qp_num);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, ci->state);
	EXPECT_EQ((uint32_t)KRDMA_TRANSPORT_RC, ci->transport);
	EXPECT_EQ(self->dev.dev_index, ci->dev_index);
	EXPECT_EQ(self->dev.port_num, ci->port_num);
	EXPECT_EQ(0u, ci->flags);
	EXPECT_EQ(0u, ci->last_wc_status);
	EXPECT_EQ(0, ci->peer.family);
	EXPECT_EQ(1u, ci->wrs_posted);
	EXPECT_EQ(1u, ci->wcs_reaped);

	if (ks_debugfs()) {
		text = ks_slurp(DEBUGFS "/krdma/sessions");
		snprintf(want, sizeof(want),
			 "session %u pid %d uid %u comm %s objects 3 conns 2\n",
			 sid, getpid(), getuid(), me->comm);
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		snprintf(want, sizeof(want),
			 "    conn %u dev %u port %u transport RC state RTS qpn %u dest_qpn %u last_wc_status 0 wrs_posted 1 wcs_reaped 1 flags none\n",
			 a.handle, self->dev.dev_index, self->dev.port_num,
			 a.qp_num, b.qp_num);
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		free(text);
		text = ks_slurp(DEBUGFS "/krdma/devices");
		snprintf(want, sizeof(want), "    pd session %u reg_qp RTS\n",
			 sid);
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		free(text);
		text = ks_slurp(DEBUGFS "/krdma/users");
		snprintf(want, sizeof(want), "uid %u sessions ", getuid());
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		EXPECT_TRUE(ks_has_line(text, "max_objects_per_user "));
		EXPECT_TRUE(ks_has_line(text, "bench_threads 0 max "));
		free(text);
	} else {
		TH_LOG("no debugfs: its files not checked");
	}

	if (no_nak) {
		TH_LOG("no failed completion to list: %s", no_nak);
		goto out;
	}
	/* past the log's rate limit window, whatever ran before */
	usleep(5200 * 1000);
	kt_write_wait(_metadata, self->fd, a.handle, 2, &buf, 8, 0,
		      buf.rkey ^ 0xff, KT_WC_REM_ACCESS_ERR);
	ASSERT_OK(kt_conn_query_err(self->fd, a.handle, &cq));

	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	ci = kt_sessions_conn(&self->ks, a.qp_num);
	ASSERT_NE(NULL, ci);
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, ci->state);
	EXPECT_EQ((uint32_t)KRDMA_CONN_INFO_ERROR, ci->flags);
	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, ci->last_wc_status);
	EXPECT_EQ(2u, ci->wrs_posted);
	EXPECT_EQ(2u, ci->wcs_reaped);
	EXPECT_TRUE(kt_kmsg_find(kmsg, "krdma: connection %u of %s[%d] in error",
				 a.handle, me->comm, getpid()));
	if (ks_debugfs()) {
		text = ks_slurp(DEBUGFS "/krdma/sessions");
		snprintf(want, sizeof(want),
			 "    conn %u dev %u port %u transport RC state ERR qpn %u dest_qpn %u last_wc_status %u wrs_posted 2 wcs_reaped 2 flags error\n",
			 a.handle, self->dev.dev_index, self->dev.port_num,
			 a.qp_num, b.qp_num, KT_WC_REM_ACCESS_ERR);
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		free(text);
	}
out:
	if (kmsg >= 0)
		close(kmsg);
}

/*
 * In a child: open /dev/krdma, then tell the parent (one byte on @ready)
 * and hold the session until the parent closes @hold's write end.
 */
static pid_t ks_holder(int ready, const int hold[2])
{
	pid_t pid = fork();
	char c = 1;
	int fd;

	if (pid)
		return pid;
	close(hold[1]);	/* else its own end keeps it waiting */
	fd = open(KRDMA_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0 || write(ready, &c, 1) != 1)
		_exit(4);
	if (read(hold[0], &c, 1) < 0)
		_exit(5);
	_exit(0);
}

/*
 * What a session in namespaces @flags lists of another's and its own: 0,
 * or -1 with errno (EINVAL: a kernel without such namespaces).
 */
static int ks_listed_from(int flags, bool *sees_other, uint32_t *nsessions)
{
	int p[2], ret = -1;
	pid_t pid;
	struct {
		int err;
		bool sees_other;
		uint32_t n;
	} r = { .err = -1 };

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		struct kt_sessions ks = {};
		int fd;

		close(p[0]);
		if (flags && unshare(flags)) {
			r.err = errno;
			_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
		}
		if ((flags & CLONE_NEWPID) && fork() > 0) {
			int status;

			wait(&status);
			_exit(0);
		}
		fd = open(KRDMA_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		r.err = fd < 0 ? errno : kt_sessions_get(fd, &ks) ? errno : 0;
		if (!r.err) {
			r.n = ks.q.num_sessions;
			for (uint32_t i = 0; i < ks.q.num_sessions; i++)
				if (!strcmp(ks.s[i].comm, "krdma_sess_hold"))
					r.sees_other = true;
		}
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &r, sizeof(r)) == sizeof(r)) {
		*sees_other = r.sees_other;
		*nsessions = r.n;
		ret = r.err ? -1 : 0;
		errno = r.err;
	}
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return ret;
}

/*
 * Another process's session is listed, with its pid; a process in another
 * PID namespace does not see it, nor one in another network namespace.
 */
KRDMA_TEST_F(sessions, who_sees_whom)
{
	const struct krdma_session_info *it;
	int ready[2], hold[2];
	bool sees = false;
	uint32_t n = 0;
	pid_t holder;
	int ret;
	char c;

	if (geteuid())
		SKIP(return, "namespaces need root");
	ASSERT_OK(pipe(ready));
	ASSERT_OK(pipe(hold));
	ASSERT_OK(prctl(PR_SET_NAME, "krdma_sess_hold"));
	holder = ks_holder(ready[1], hold);
	ASSERT_OK(prctl(PR_SET_NAME, "krdma_sessions"));
	ASSERT_LT(0, holder);
	ASSERT_EQ(1, read(ready[0], &c, 1));

	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	it = ks_find_pid(&self->ks, holder);
	ASSERT_NE(NULL, it);
	EXPECT_STREQ("krdma_sess_hold", it->comm);
	EXPECT_EQ(0u, it->num_objects);

	/* the same namespaces: seen */
	ASSERT_OK(ks_listed_from(0, &sees, &n));
	EXPECT_TRUE(sees);
	/* another PID namespace: only its own session */
	ret = ks_listed_from(CLONE_NEWPID, &sees, &n);
	if (ret && errno == EINVAL) {
		TH_LOG("no PID namespaces (CONFIG_PID_NS): not checked");
	} else {
		ASSERT_OK(ret);
		EXPECT_FALSE(sees);
		EXPECT_EQ(1u, n);
	}
	/* another network namespace: only its own session */
	ASSERT_OK(ks_listed_from(CLONE_NEWNET, &sees, &n));
	EXPECT_FALSE(sees);
	EXPECT_EQ(1u, n);

	close(hold[1]);
	waitpid(holder, NULL, 0);
	close(hold[0]);
	close(ready[0]);
	close(ready[1]);
}

/*
 * `rdma resource show qp` lists the QPN krdma lists: the way from a QP an
 * operator sees there to its session.  A kernel-owned QP shows no pid:
 * the kernel names it after the module that made it.
 */
KRDMA_TEST_F(sessions, restrack_has_the_qpn)
{
	struct kt_proc rdma = {};
	struct kt_conn a, b;
	char cmd[64], want[64];

	/* a connection made by hand, as iWARP has none */
	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma (iproute2) in PATH");
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &ks_caps, &a, &b);
	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	ASSERT_NE(NULL, kt_sessions_conn(&self->ks, a.qp_num));
	snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u", a.qp_num);
	ASSERT_OK(kt_spawn(&rdma, "krdma_sessions", "rdma", false, cmd));
	kt_reap(&rdma);
	snprintf(want, sizeof(want), "lqpn %u ", a.qp_num);
	EXPECT_NE(NULL, strstr(kt_out(&rdma), want)) TH_LOG("%s", kt_out(&rdma));
	snprintf(want, sizeof(want), "rqpn %u ", b.qp_num);
	EXPECT_NE(NULL, strstr(kt_out(&rdma), want)) TH_LOG("%s", kt_out(&rdma));
	EXPECT_NE(NULL, strstr(kt_out(&rdma), "comm [krdma]"))
		TH_LOG("%s", kt_out(&rdma));
	kt_proc_end(&rdma);
}

/* Under dynamic debug, a connection's steps are in the kernel log. */
KRDMA_TEST_F(sessions, dynamic_debug_steps)
{
	static const char *const controls[] = {
		"/proc/dynamic_debug/control", DEBUGFS "/dynamic_debug/control",
	};
	const char *control = NULL;
	char comm[KRDMA_COMM_MAX];
	struct kt_conn a, b;
	int kmsg;

	/* a connection made by hand, as iWARP has none */
	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	ks_debugfs();
	for (unsigned int i = 0; i < ARRAY_SIZE(controls) && !control; i++)
		if (!access(controls[i], W_OK))
			control = controls[i];
	if (!control)
		SKIP(return, "no dynamic debug (CONFIG_DYNAMIC_DEBUG)");
	ks_comm(comm);
	kmsg = kt_kmsg_open();
	ASSERT_LE(0, kmsg);
	ASSERT_OK(kt_write_file(control, "module krdma +p"));
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &ks_caps, &a, &b);
	EXPECT_OK(kt_write_file(control, "module krdma -p"));
	EXPECT_TRUE(kt_kmsg_find(kmsg, "krdma: connection %u of %s[%d] qpn %u connected",
				 a.handle, comm, getpid(), a.qp_num));
	close(kmsg);
}

struct ks_churn {
	const struct kt_dev *dev;
	int stop;
	unsigned int rounds;
	int failed;		/* errno of a create that should have worked */
};

/* Sessions opened, connections made and destroyed, files closed. */
static void *ks_churn_fn(void *arg)
{
	struct krdma_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct ks_churn *ch = arg;
	struct kt_conn a, b;

	while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) {
		int fd = krdma_open();

		if (fd < 0 ||
		    kt_conn_create(fd, ch->dev, KRDMA_TRANSPORT_RC, 0, &caps, &a) ||
		    kt_conn_create(fd, ch->dev, KRDMA_TRANSPORT_RC, 0, &caps, &b)) {
			ch->failed = errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		kt_conn_connect(fd, &a, &b);
		kt_destroy(fd, a.handle);
		close(fd);	/* b goes with the file */
		__atomic_fetch_add(&ch->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Listings while other sessions come and go, with connections made and
 * destroyed: each listing answers, and lists what it lists whole (the
 * debug kernel's KASAN and lockdep watch the rest).
 */
KRDMA_TEST_F_TIMEOUT(sessions, listing_races, 60)
{
	struct ks_churn ch = { .dev = &self->dev };
	unsigned int listings = 0;
	uint64_t end = kt_now_ms() + 3000;
	pthread_t t[2];
	char *text;

	/* a connection made by hand, as iWARP has none */
	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	for (int i = 0; i < 2; i++)
		ASSERT_OK(pthread_create(&t[i], NULL, ks_churn_fn, &ch));
	while (kt_now_ms() < end) {
		ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
		ASSERT_NE(NULL, ks_find_pid(&self->ks, getpid()));
		for (uint32_t i = 0; i < self->ks.q.num_conns; i++)
			EXPECT_NE(0u, self->ks.c[i].handle);
		if (ks_debugfs()) {
			text = ks_slurp(DEBUGFS "/krdma/sessions");
			EXPECT_NE(NULL, text);
			free(text);
		}
		listings++;
	}
	__atomic_store_n(&ch.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(0, ch.failed) TH_LOG("a create failed: %s", strerror(ch.failed));
	EXPECT_LT(0u, ch.rounds);
	TH_LOG("%u listings beside %u sessions made and closed", listings,
	       ch.rounds);
}

#define GONE_DEV "rxe_sess"
#define GONE_NETDEV "krdmass0"

/*
 * A connection whose device was removed stays listed, by its handle, as
 * gone, until its session destroys it.
 */
KRDMA_TEST_F_TIMEOUT(sessions, device_removed_conn_gone, 60)
{
	const struct krdma_session_info *me;
	const struct krdma_conn_info *ci = NULL;
	struct kt_conn a;
	struct kt_dev d;
	char want[128], *text;

	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	if (kt_rxe_dummy_add(_metadata, GONE_DEV, GONE_NETDEV,
			     "198.51.100.7/32"))
		SKIP(return, "no dummy netdev for a test rxe device");
	if (kt_dev_pick(self->fd, GONE_DEV, &d)) {
		krdma_run("rdma link delete " GONE_DEV);
		krdma_run("ip link delete " GONE_NETDEV);
		SKIP(return, "no active port on " GONE_DEV);
	}
	test_cmd_conn_create(&d, KRDMA_TRANSPORT_RC, 0, NULL, &a);
	EXPECT_EQ(0, krdma_run("rdma link delete " GONE_DEV));
	EXPECT_EQ(0, krdma_run("ip link delete " GONE_NETDEV));

	ASSERT_OK(kt_sessions_get(self->fd, &self->ks));
	me = ks_find_pid(&self->ks, getpid());
	ASSERT_NE(NULL, me);
	EXPECT_EQ(1u, me->num_conns);
	for (uint32_t i = 0; i < self->ks.q.num_conns; i++)
		if (self->ks.c[i].session_id == me->session_id &&
		    self->ks.c[i].handle == a.handle)
			ci = &self->ks.c[i];
	ASSERT_NE(NULL, ci);
	EXPECT_EQ((uint32_t)KRDMA_CONN_INFO_GONE, ci->flags);
	EXPECT_EQ(0u, ci->qp_num);
	if (ks_debugfs()) {
		text = ks_slurp(DEBUGFS "/krdma/sessions");
		snprintf(want, sizeof(want), "    conn %u flags gone\n",
			 a.handle);
		EXPECT_TRUE(ks_has_line(text, want)) TH_LOG("%s", text);
		free(text);
	}
	EXPECT_OK(kt_destroy(self->fd, a.handle));
}

/* `krdmactl sessions` lists a live connection with its QPN and state. */
KRDMA_TEST_F_TIMEOUT(sessions, krdmactl_sessions, 60)
{
	const char *why = kt_krdmactl_unavailable(NULL);
	const bool iwarp = kt_dev_iwarp(&self->dev);
	struct kt_proc text = {}, json = {};
	const char *line, *end, *rest;
	struct kt_conn a, b;
	char want[256];

	if (why)
		SKIP(return, "%s", why);
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &ks_caps, &a, &b);
	ASSERT_OK(kt_spawn(&text, "krdma_sessions", "text", true,
			   "krdmactl sessions"));
	kt_reap(&text);
	ASSERT_EQ(0, text.status) TH_LOG("%s", kt_out(&text));
	snprintf(want, sizeof(want), "    conn %u dev %s port %u transport rc state RTS qpn %u dest_qpn %u ",
		 a.handle, self->dev.info.name, self->dev.port_num, a.qp_num,
		 kt_peer_qpn(&self->dev, b.qp_num));
	line = strstr(kt_out(&text), want);
	ASSERT_NE(NULL, line) TH_LOG("%s", kt_out(&text));
	end = strchr(line, '\n');
	ASSERT_NE(NULL, end);
	rest = line + strlen(want);
	if (iwarp) {
		/* an rdma_cm pair (iWARP has no other): its peer comes first */
		ASSERT_EQ(0, strncmp(rest, "peer ", 5))
			TH_LOG("%.*s", (int)(end - line), line);
		rest = strchr(rest + 5, ' ');
		ASSERT_TRUE(rest && rest < end);
		rest++;
	}
	snprintf(want, sizeof(want), "wrs_posted 0 wcs_reaped 0 flags %s last_wc_status SUCCESS\n",
		 iwarp ? "cm,established" : "none");
	EXPECT_EQ(0, strncmp(rest, want, strlen(want)))
		TH_LOG("%.*s", (int)(end - line), line);
	snprintf(want, sizeof(want), "pid %d ", getpid());
	EXPECT_NE(NULL, strstr(kt_out(&text), want));

	ASSERT_OK(kt_spawn(&json, "krdma_sessions", "json", true,
			   "krdmactl sessions -j"));
	kt_reap(&json);
	ASSERT_EQ(0, json.status) TH_LOG("%s", kt_out(&json));
	snprintf(want, sizeof(want), "\"conn\":%u,", b.handle);
	EXPECT_NE(NULL, strstr(kt_out(&json), want)) TH_LOG("%s", kt_out(&json));
	snprintf(want, sizeof(want), "\"qpn\":%u,", b.qp_num);
	EXPECT_NE(NULL, strstr(kt_out(&json), want)) TH_LOG("%s", kt_out(&json));
	kt_proc_end(&text);
	kt_proc_end(&json);
}

TEST_HARNESS_MAIN
