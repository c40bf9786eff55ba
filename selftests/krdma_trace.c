// SPDX-License-Identifier: GPL-2.0
/*
 * The krdma:* tracepoints fire, with the fields of what happened: an
 * ioctl's command and result, a POST's connection, opcode, WR count and
 * bytes, a completion's wr_id and status (a failure too), rdma_cm events
 * and a bench run (krdmactl serve and send), devices added and removed.
 * Each test records into a tracefs instance of its own.
 */
#include <sys/mount.h>

#include "krdma_test.h"

#define INSTANCE "krdma_selftest"
#define TEST_DEV "rxe_tr"
#define DUMMY_DEV "krdmatr0"
#define PORT 18741

FIXTURE(trace)
{
	int fd;
	char dir[256];		/* the instance's directory */
	char *text;		/* what it recorded */
	struct kt_dev dev;
	bool made_dummy;	/* DUMMY_DEV, for TEST_DEV */
};

/* tracefs, mounted if need be; NULL if the kernel has none. */
static const char *tracefs_root(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[128];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/instances", roots[i]);
		if (!access(path, F_OK))
			return roots[i];
	}
	if (!mount("tracefs", roots[0], "tracefs", 0, NULL))
		return roots[0];
	return NULL;
}

FIXTURE_SETUP(trace)
{
	const char *why = krdma_unavailable();
	const char *root;
	char path[300];

	self->fd = -1;
	self->dir[0] = 0;
	self->text = NULL;
	self->made_dummy = false;
	if (why)
		SKIP(return, "%s", why);
	root = tracefs_root();
	if (!root)
		SKIP(return, "no tracefs (a kernel without CONFIG_TRACING)");
	snprintf(self->dir, sizeof(self->dir), "%s/instances/" INSTANCE, root);
	rmdir(self->dir);
	ASSERT_OK(mkdir(self->dir, 0700));
	snprintf(path, sizeof(path), "%s/events/krdma/enable", self->dir);
	if (access(path, F_OK))
		SKIP(return, "no krdma:* events (a kernel without CONFIG_EVENT_TRACING)");
	snprintf(path, sizeof(path), "%s/buffer_size_kb", self->dir);
	ASSERT_OK(kt_write_file(path, "1024"));
	snprintf(path, sizeof(path), "%s/events/krdma/enable", self->dir);
	ASSERT_OK(kt_write_file(path, "1"));
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	ASSERT_OK(kt_dev_pick(self->fd, NULL, &self->dev));
}

FIXTURE_TEARDOWN(trace)
{
	if (self->made_dummy) {
		krdma_run("rdma link delete " TEST_DEV " 2>/dev/null");
		krdma_run("ip link delete " DUMMY_DEV);
	}
	if (self->fd >= 0)
		close(self->fd);
	free(self->text);
	if (self->dir[0])
		rmdir(self->dir);
}

/* Stop recording, and take what the instance recorded. */
static void trace_take(FIXTURE_DATA(trace) *self)
{
	char path[300], buf[65536];
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/tracing_on", self->dir);
	kt_write_file(path, "0");
	snprintf(path, sizeof(path), "%s/trace", self->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(self->text);
	self->text = strdup("");
	while (self->text && fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0) {
		if (len + n + 1 > cap) {
			char *more;

			cap = 2 * (len + n + 1);
			more = realloc(self->text, cap);
			if (!more)
				break;
			self->text = more;
		}
		memcpy(self->text + len, buf, n);
		len += n;
		self->text[len] = 0;
	}
	if (fd >= 0)
		close(fd);
}

/*
 * A recorded line with every one of the NULL-terminated words; a line is
 * taken with a space after it, so "index=3 " is a whole field wherever it
 * stands.
 */
static const char *trace_line(const char *text, ...)
{
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char one[1024];
		const char *w;
		bool all = true;
		va_list ap;

		snprintf(one, sizeof(one), "%.*s ", (int)len, line);
		va_start(ap, text);
		while ((w = va_arg(ap, const char *)))
			all &= !!strstr(one, w);
		va_end(ap);
		if (all)
			return line;
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

#define EXPECT_TRACED(self, ...)					\
	EXPECT_NE(NULL, trace_line((self)->text, __VA_ARGS__, NULL)) {	\
		TH_LOG("no line with: %s", #__VA_ARGS__);		\
		TH_LOG("recorded:\n%.3000s", (self)->text);		\
	}

/* The queues of the tests' connected RC pairs */
static const struct krdma_qp_caps rc_caps = {
	.max_send_wr = 8,
	.max_recv_wr = 8,
};

/*
 * An ioctl's entry and result, a POST and its completion, and a failure:
 * an ioctl refused, and (where rxe reports it) a WRITE to a bad rkey.
 */
KRDMA_TEST_F(trace, post_and_completion)
{
	const char *no_nak = kt_rxe_defect(KT_RXE_NO_ACCESS_NAK) ?:
			     kt_dev_lacks(&self->dev, KT_CAP_REMOTE_ERR_WC);
	char a_handle[32], a_qpn[32], wr_id[32], bad_id[32];
	char session[32] = "session=(not listed) ";
	struct kt_sessions ks = {};
	struct kt_conn a, b;
	struct kt_buf buf;

	/* it traces the CONN_CREATE of a pair made by hand */
	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &rc_caps, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);

	kt_write_wait(_metadata, self->fd, a.handle, 0x5eed, &buf, 128, 1024,
		      buf.rkey, KT_WC_SUCCESS);
	test_err_destroy(ENOENT, 0xdead);
	if (!no_nak)
		kt_write_wait(_metadata, self->fd, a.handle, 0xbad, &buf, 8, 0,
			      buf.rkey ^ 0xff, KT_WC_REM_ACCESS_ERR);
	trace_take(self);

	/* our session's id, as the listing has it: what the ioctls carry */
	ASSERT_OK(kt_sessions_get(self->fd, &ks));
	for (uint32_t i = 0; i < ks.q.num_sessions; i++)
		if (ks.s[i].pid == (uint32_t)getpid())
			snprintf(session, sizeof(session), "session=%u ",
				 ks.s[i].session_id);
	kt_sessions_free(&ks);
	snprintf(a_handle, sizeof(a_handle), "handle=%u ", a.handle);
	snprintf(a_qpn, sizeof(a_qpn), "qpn=%u ", a.qp_num);
	snprintf(wr_id, sizeof(wr_id), "wr_id=%#x ", 0x5eed);
	snprintf(bad_id, sizeof(bad_id), "wr_id=%#x ", 0xbad);
	EXPECT_TRACED(self, "krdma_ioctl_enter:", "cmd=POST size=");
	EXPECT_TRACED(self, "krdma_ioctl_exit:", "cmd=POST ret=0");
	EXPECT_TRACED(self, "krdma_ioctl_exit:", "cmd=CONN_CREATE ret=0",
		      a_handle, session);
	EXPECT_TRACED(self, "krdma_post:", a_handle, "opcode=RDMA_WRITE wrs=1 bytes=128 ret=0");
	EXPECT_TRACED(self, "krdma_completion:", a_handle, wr_id,
		      "status=SUCCESS opcode=RDMA_WRITE");
	EXPECT_TRACED(self, "krdma_ioctl_exit:", "cmd=DESTROY ret=-2");
	EXPECT_TRACED(self, "krdma_conn_state:", a_handle, a_qpn,
		      "state=CONNECTED");
	if (no_nak) {
		TH_LOG("no failed completion to trace: %s", no_nak);
		return;
	}
	EXPECT_TRACED(self, "krdma_completion:", a_handle, bad_id,
		      "status=REM_ACCESS_ERR");
	EXPECT_TRACED(self, "krdma_conn_state:", a_handle, a_qpn,
		      "state=ERROR");
}

/*
 * A connection destroyed with receives posted is drained first: each is
 * flushed and reaped before the QP and its CQ go.
 */
KRDMA_TEST_F(trace, destroy_drains_the_qp)
{
	char b_handle[32], wr_id[32];
	struct krdma_wr wrs[3];
	struct kt_conn a, b;
	struct kt_buf buf;
	int i;

	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, &rc_caps, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &buf);
	for (i = 0; i < 3; i++) {
		kt_wr_init(&wrs[i], 0xd1 + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wrs[i], buf.handle, 0, 4096);
	}
	test_cmd_post(b.handle, wrs, 3, NULL);
	test_cmd_destroy(b.handle);
	trace_take(self);
	snprintf(b_handle, sizeof(b_handle), "handle=%u ", b.handle);
	for (i = 0; i < 3; i++) {
		snprintf(wr_id, sizeof(wr_id), "wr_id=%#x ", 0xd1 + i);
		EXPECT_TRACED(self, "krdma_completion:", b_handle, wr_id,
			      "status=WR_FLUSH_ERR");
	}
	EXPECT_TRACED(self, "krdma_conn_drain:", b_handle, "flushed=3 ret=0");
}

/* rdma_cm events on both sides, and a bench run's start and end. */
KRDMA_TEST_F_TIMEOUT(trace, cm_and_bench, 120)
{
	const char *why = kt_krdmactl_unavailable(kt_test_dev());
	struct kt_proc server = {}, client = {};
	char cmd[256];

	if (why)
		SKIP(return, "%s", why);
	/* the bench handshake's READY and END are SEND_WITH_IMMs */
	KT_NEED(&self->dev, KT_CAP_IMM);
	snprintf(cmd, sizeof(cmd), "krdmactl bench --once -p %d", PORT);
	ASSERT_OK(kt_spawn(&server, "krdma_trace", "server", false, cmd));
	usleep(500 * 1000);
	snprintf(cmd, sizeof(cmd),
		 "krdmactl bench write %s:%d -s 4096 -n 200 -q 1",
		 kt_test_addr(false), PORT);
	for (int i = 0; i < 20; i++) {
		ASSERT_OK(kt_spawn(&client, "krdma_trace", "client", false,
				   cmd));
		kt_reap(&client);
		/* until the server listens */
		if (!client.status || !strstr(kt_out(&client), "refused"))
			break;
		usleep(250 * 1000);
	}
	EXPECT_EQ(0, client.status) {
		TH_LOG("%s", kt_out(&client));
	}
	kt_reap(&server);
	trace_take(self);
	EXPECT_TRACED(self, "krdma_ioctl_exit:", "cmd=CM_LISTEN ret=0");
	EXPECT_TRACED(self, "krdma_cm_event:", "event=CONNECT_REQUEST status=0");
	EXPECT_TRACED(self, "krdma_cm_event:", "event=ESTABLISHED status=0");
	EXPECT_TRACED(self, "krdma_cm_event:", "event=DISCONNECTED");
	EXPECT_TRACED(self, "krdma_bench_start:", "conns=1", "size=4096 iters=200");
	EXPECT_TRACED(self, "krdma_bench_end:", "ops=200 bytes=819200", "ret=0");
	kt_proc_end(&server);
	kt_proc_end(&client);
}

/* A device added and removed, by the index users know it by. */
KRDMA_TEST_F(trace, device_add_remove)
{
	struct krdma_snap s;
	char index[32];

	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	/* set first: the teardown removes the netdev should an assert fail */
	self->made_dummy = true;
	if (kt_rxe_dummy_add(_metadata, TEST_DEV, DUMMY_DEV, NULL)) {
		self->made_dummy = false;
		SKIP(return, "no dummy netdev for a test rxe device");
	}
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	ASSERT_NE(NULL, krdma_snap_find(&s, TEST_DEV));
	snprintf(index, sizeof(index), "index=%u ",
		 krdma_snap_find(&s, TEST_DEV)->dev_index);
	krdma_snap_free(&s);
	EXPECT_EQ(0, krdma_run("rdma link delete " TEST_DEV));
	trace_take(self);
	EXPECT_TRACED(self, "krdma_device_add:", "device=" TEST_DEV " ", index);
	EXPECT_TRACED(self, "krdma_device_remove:", "device=" TEST_DEV " ",
		      index, "objects=0");
}

TEST_HARNESS_MAIN
