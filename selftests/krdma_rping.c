// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl rping against rdma-core's rping and against itself: server and
 * client both run on rxe0 in this VM (its loopback path works) and meet
 * through rdma_cm at $RXE0_ADDR (or $RXE0_ADDR6).  Each case runs the two
 * programs under timeout(1), on a port of its own, and wants both to exit
 * 0 and print, with -v, exactly rping's lines for every ping:
 *
 *   server ping data: rdma-ping-N: <rotating A..z pattern>
 *   ping data: rdma-ping-N: <the same>
 */
#include <time.h>

#include "krdma_test.h"

#define RXE "rxe0"
#define RP_PROC_TIMEOUT 60	/* timeout(1) around each program */
#define RP_CASE_TIMEOUT 150	/* the harness' limit for one case */
#define RP_IDLE "10"		/* krdmactl -T */
#define RP_GRACE 3		/* seconds the survivor of a failure gets */

#ifndef KRDMA_TEST_F_TIMEOUT
#define KRDMA_TEST_F_TIMEOUT(fixture, name, tmout)			\
	static void fixture##_##name##_body(				\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture) *self,				\
		const FIXTURE_VARIANT(fixture) *variant);		\
	TEST_F_TIMEOUT(fixture, name, tmout)				\
	{								\
		if (!_metadata->skip)					\
			fixture##_##name##_body(_metadata, self, variant); \
	}								\
	static void fixture##_##name##_body(				\
		struct __test_metadata __attribute__((unused)) *_metadata, \
		FIXTURE_DATA(fixture) __attribute__((unused)) *self,	\
		const FIXTURE_VARIANT(fixture) __attribute__((unused)) *variant)
#endif

/* ------------------------------------------------------------------------
 * Helpers
 */

static const char *rxe_addr(bool v6)
{
	const char *addr = getenv(v6 ? "RXE0_ADDR6" : "RXE0_ADDR");

	if (addr && *addr)
		return addr;
	return v6 ? NULL : "192.0.2.1";
}

struct rp_proc {
	pid_t pid;
	int status;		/* exit code, -1 if it did not exit */
	char path[64];		/* its stdout; stderr goes to path.err */
	char *out;		/* stdout, then stderr */
};

/* Runs "timeout 60 @cmd" in the background, output into a file. */
static int rp_spawn(struct rp_proc *p, const char *tag, const char *cmd)
{
	static int seq;
	char full[1024], err[80];
	int fd, efd;

	free(p->out);
	memset(p, 0, sizeof(*p));
	p->status = -1;
	snprintf(p->path, sizeof(p->path), "/tmp/krdma_rping.%d.%d.%s",
		 getpid(), seq++, tag);
	snprintf(full, sizeof(full), "exec timeout %d %s", RP_PROC_TIMEOUT,
		 cmd);
	/* rping's stdout is buffered: its stderr would land mid-line */
	snprintf(err, sizeof(err), "%s.err", p->path);
	fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	efd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || efd < 0)
		goto err;
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	if (p->pid < 0)
		goto err;
	if (!p->pid) {
		dup2(fd, STDOUT_FILENO);
		dup2(efd, STDERR_FILENO);
		execl("/bin/sh", "sh", "-c", full, (char *)NULL);
		_exit(127);
	}
	close(fd);
	close(efd);
	return 0;
err:
	if (fd >= 0)
		close(fd);
	if (efd >= 0)
		close(efd);
	return -1;
}

/* Appends the file @path to p->out and removes it. */
static void rp_slurp(struct rp_proc *p, const char *path)
{
	size_t used = p->out ? strlen(p->out) : 0;
	struct stat st;
	char *out;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !(out = realloc(p->out, used + st.st_size + 1))) {
		close(fd);
		return;
	}
	p->out = out;
	n = read(fd, p->out + used, st.st_size);
	p->out[used + (n > 0 ? n : 0)] = 0;
	close(fd);
	unlink(path);
}

static void rp_read_output(struct rp_proc *p)
{
	char err[80];

	snprintf(err, sizeof(err), "%s.err", p->path);
	free(p->out);
	p->out = strdup("");
	rp_slurp(p, p->path);
	rp_slurp(p, err);
}

static void rp_reap(struct rp_proc *p)
{
	int status;

	if (p->pid <= 0)
		return;
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	rp_read_output(p);
}

/*
 * Waits for both; once one has failed, the other (rping waits forever for
 * a peer) gets RP_GRACE seconds, then SIGTERM.
 */
static void rp_reap_pair(struct rp_proc *a, struct rp_proc *b)
{
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	struct rp_proc *procs[2] = { a, b };
	int i, status, kill_at = -1, ticks = 0;

	while (a->pid > 0 || b->pid > 0) {
		for (i = 0; i < 2; i++) {
			struct rp_proc *p = procs[i];

			if (p->pid <= 0 ||
			    waitpid(p->pid, &status, WNOHANG) != p->pid)
				continue;
			p->pid = 0;
			p->status = WIFEXITED(status) ? WEXITSTATUS(status)
						      : -1;
			rp_read_output(p);
			if (p->status && kill_at < 0)
				kill_at = ticks + RP_GRACE * 20;
		}
		if (kill_at >= 0 && ticks >= kill_at) {
			for (i = 0; i < 2; i++)
				if (procs[i]->pid > 0)
					kill(procs[i]->pid, SIGTERM);
			kill_at = ticks + 20 * 20;
		}
		nanosleep(&delay, NULL);
		ticks++;
	}
}

/*
 * Waits until an rdma_cm id listens on @port (iproute2's "rdma resource
 * show cm_id"; without the tool, two seconds), or the server died.
 */
static bool rp_wait_listen(struct rp_proc *server, unsigned int port)
{
	struct timespec delay = { 0, 100 * 1000 * 1000 };
	bool have_rdma = krdma_have_cmd("rdma");
	int i, status;

	for (i = 0; i < 30 * 10; i++) {
		if (waitpid(server->pid, &status, WNOHANG) == server->pid) {
			server->pid = 0;
			server->status = WIFEXITED(status) ?
					 WEXITSTATUS(status) : -1;
			rp_read_output(server);
			return false;
		}
		if (!have_rdma && i >= 20)
			return true;
		if (have_rdma &&
		    !krdma_run("rdma resource show cm_id 2>/dev/null | "
			       "grep -Eq 'LISTEN.*src-addr [^ ]*:%u( |$)'",
			       port))
			return true;
		nanosleep(&delay, NULL);
	}
	return false;
}

static const char *rp_out(const struct rp_proc *p)
{
	return p->out ? p->out : "";
}

/* rping_test_client()'s data for ping @ping, NUL-terminated at @size - 1. */
static void rp_pattern(char *buf, unsigned int size, int ping)
{
	unsigned char c, start = 65;
	unsigned int i;
	int cc, n;

	for (n = 0; n < ping; n++)
		if (++start > 122)
			start = 65;
	cc = snprintf(buf, size, "rdma-ping-%d: ", ping);
	for (i = cc, c = start; i < size; i++) {
		buf[i] = c;
		if (++c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

/*
 * The -v lines "@prefix<data>" for pings 0 ... @count - 1, in order and
 * each exactly once; false (and a log line) otherwise.
 */
static bool rp_lines_ok(struct __test_metadata *_metadata, const char *out,
			const char *prefix, unsigned int size,
			unsigned int count)
{
	char *want = malloc(size + 64), *line = malloc(size + 128);
	const char *p = out;
	unsigned int n = 0;
	bool ok = want && line;

	/* the lines of @out that start with @prefix, in order */
	while (ok && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (!strncmp(p, prefix, strlen(prefix))) {
			if (n >= count) {
				TH_LOG("more than %u \"%s\" lines", count,
				       prefix);
				ok = false;
				break;
			}
			rp_pattern(want, size, n);
			snprintf(line, size + 128, "%s%s", prefix, want);
			if (len != strlen(line) || strncmp(p, line, len)) {
				TH_LOG("line %u is\n%.*s\nnot\n%.300s", n,
				       (int)(len > 300 ? 300 : len), p, line);
				ok = false;
			}
			n++;
		}
		p = nl ? nl + 1 : p + len;
	}
	if (ok && n != count) {
		TH_LOG("%u \"%s\" lines, not %u", n, prefix, count);
		ok = false;
	}
	free(want);
	free(line);
	return ok;
}

/* ------------------------------------------------------------------------
 * The cases
 */

enum rp_side {
	KRDMACTL,
	REFERENCE,		/* rdma-core's rping */
};

FIXTURE(rping)
{
	struct rp_proc server;
	struct rp_proc client;
	const char *addr;
};

FIXTURE_VARIANT(rping)
{
	enum rp_side server;
	enum rp_side client;
	bool v6;
	unsigned int size;
	unsigned int count;
	unsigned int port;
};

#define RP_CASE(name, s, c, v6_, sz, n, p)				\
	FIXTURE_VARIANT_ADD(rping, name) {				\
		.server = s, .client = c, .v6 = v6_, .size = sz,	\
		.count = n, .port = p,					\
	}

RP_CASE(krdmactl_server_rping_client, KRDMACTL, REFERENCE, false, 64, 10, 7301);
RP_CASE(rping_server_krdmactl_client, REFERENCE, KRDMACTL, false, 64, 10, 7302);
RP_CASE(krdmactl_both, KRDMACTL, KRDMACTL, false, 64, 10, 7303);
RP_CASE(ipv6_krdmactl_server_rping_client, KRDMACTL, REFERENCE, true, 64, 10, 7304);
RP_CASE(ipv6_rping_server_krdmactl_client, REFERENCE, KRDMACTL, true, 64, 10, 7305);
RP_CASE(ipv6_krdmactl_both, KRDMACTL, KRDMACTL, true, 64, 10, 7306);
RP_CASE(size_1000_krdmactl_server_rping_client, KRDMACTL, REFERENCE, false, 1000, 5, 7307);
RP_CASE(size_26_rping_server_krdmactl_client, REFERENCE, KRDMACTL, false, 26, 60, 7308);
RP_CASE(size_65535_krdmactl_both, KRDMACTL, KRDMACTL, false, 65535, 3, 7309);

static void rp_cmd(char *cmd, size_t len, const FIXTURE_VARIANT(rping) *v,
		   enum rp_side side, const char *addr, bool client)
{
	if (side == REFERENCE)
		snprintf(cmd, len, "rping %s -a %s -p %u -S %u -C %u -V -v",
			 client ? "-c" : "-s", addr, v->port, v->size,
			 v->count);
	else
		snprintf(cmd, len,
			 "krdmactl rping %s -a %s -p %u -S %u -C %u -V -v -T "
			 RP_IDLE, client ? "" : "-s", addr, v->port, v->size,
			 v->count);
}

FIXTURE_SETUP(rping)
{
	const char *why = krdma_unavailable();

	self->server.pid = 0;
	self->client.pid = 0;
	self->server.out = NULL;
	self->client.out = NULL;
	if (why)
		SKIP(return, "%s", why);
	if (access(SYSFS_IB "/" RXE, F_OK))
		SKIP(return, "no " RXE);
	if (!krdma_have_cmd("krdmactl"))
		SKIP(return, "no krdmactl in PATH");
	if ((variant->server == REFERENCE || variant->client == REFERENCE) &&
	    !krdma_have_cmd("rping"))
		SKIP(return, "no rping (rdma-core rdmacm-utils)");
	self->addr = rxe_addr(variant->v6);
	if (!self->addr)
		SKIP(return, "no $RXE0_ADDR6");
}

FIXTURE_TEARDOWN(rping)
{
	if (self->server.pid > 0)
		kill(self->server.pid, SIGKILL);
	if (self->client.pid > 0)
		kill(self->client.pid, SIGKILL);
	rp_reap(&self->server);
	rp_reap(&self->client);
	free(self->server.out);
	free(self->client.out);
}

KRDMA_TEST_F_TIMEOUT(rping, ping, RP_CASE_TIMEOUT)
{
	char cmd[512];

	rp_cmd(cmd, sizeof(cmd), variant, variant->server, self->addr, false);
	TH_LOG("server: %s", cmd);
	ASSERT_OK(rp_spawn(&self->server, "server", cmd));
	ASSERT_TRUE(rp_wait_listen(&self->server, variant->port)) {
		TH_LOG("server never listened (exit %d):\n%.2000s",
		       self->server.status, rp_out(&self->server));
	}
	rp_cmd(cmd, sizeof(cmd), variant, variant->client, self->addr, true);
	TH_LOG("client: %s", cmd);
	ASSERT_OK(rp_spawn(&self->client, "client", cmd));
	rp_reap_pair(&self->server, &self->client);

	EXPECT_EQ(0, self->server.status) {
		TH_LOG("server exited %d:\n%.2000s", self->server.status,
		       rp_out(&self->server));
	}
	EXPECT_EQ(0, self->client.status) {
		TH_LOG("client exited %d:\n%.2000s", self->client.status,
		       rp_out(&self->client));
	}
	EXPECT_TRUE(rp_lines_ok(_metadata, rp_out(&self->server),
				"server ping data: ", variant->size,
				variant->count)) {
		TH_LOG("server output:\n%.2000s", rp_out(&self->server));
	}
	EXPECT_TRUE(rp_lines_ok(_metadata, rp_out(&self->client), "ping data: ",
				variant->size, variant->count)) {
		TH_LOG("client output:\n%.2000s", rp_out(&self->client));
	}
	if (variant->server == KRDMACTL) {
		snprintf(cmd, sizeof(cmd), "role server addr %s port %u size "
			 "%u pings %u result ok\n", self->addr, variant->port,
			 variant->size, variant->count);
		EXPECT_NE(NULL, strstr(rp_out(&self->server), cmd)) {
			TH_LOG("no summary \"%s\":\n%.2000s", cmd,
			       rp_out(&self->server));
		}
	}
}

/* ------------------------------------------------------------------------
 * Failures
 */

FIXTURE(failures)
{
	struct rp_proc server;
	struct rp_proc client;
};

FIXTURE_SETUP(failures)
{
	const char *why = krdma_unavailable();

	self->server.pid = 0;
	self->client.pid = 0;
	self->server.out = NULL;
	self->client.out = NULL;
	if (why)
		SKIP(return, "%s", why);
	if (!krdma_have_cmd("krdmactl"))
		SKIP(return, "no krdmactl in PATH");
}

FIXTURE_TEARDOWN(failures)
{
	if (self->server.pid > 0)
		kill(self->server.pid, SIGKILL);
	if (self->client.pid > 0)
		kill(self->client.pid, SIGKILL);
	rp_reap(&self->server);
	rp_reap(&self->client);
	free(self->server.out);
	free(self->client.out);
}

/* Nobody listens: the client fails, saying so. */
KRDMA_TEST_F(failures, connect_refused)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "krdmactl rping -a %s -p 7398 -C 1 -T 5",
		 rxe_addr(false));
	ASSERT_OK(rp_spawn(&self->client, "client", cmd));
	rp_reap(&self->client);
	EXPECT_EQ(1, self->client.status) {
		TH_LOG("%.2000s", rp_out(&self->client));
	}
	EXPECT_NE(NULL, strstr(rp_out(&self->client), "rping: ")) {
		TH_LOG("no message:\n%s", rp_out(&self->client));
	}
}

/* A server nobody connects to gives up after -T seconds. */
KRDMA_TEST_F(failures, accept_timeout)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "krdmactl rping -s -a %s -p 7397 -T 1",
		 rxe_addr(false));
	ASSERT_OK(rp_spawn(&self->server, "server", cmd));
	rp_reap(&self->server);
	EXPECT_EQ(1, self->server.status) {
		TH_LOG("%.2000s", rp_out(&self->server));
	}
	EXPECT_NE(NULL, strstr(rp_out(&self->server), "no client in 1 s")) {
		TH_LOG("no clear message:\n%s", rp_out(&self->server));
	}
}

/*
 * -C on the server is the number of pings it must serve: a client that
 * stops early makes it fail, while the client itself succeeds.
 */
KRDMA_TEST_F_TIMEOUT(failures, server_count_mismatch, RP_CASE_TIMEOUT)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "krdmactl rping -s -a %s -p 7396 -C 5 "
		 "-T " RP_IDLE, rxe_addr(false));
	ASSERT_OK(rp_spawn(&self->server, "server", cmd));
	ASSERT_TRUE(rp_wait_listen(&self->server, 7396));
	snprintf(cmd, sizeof(cmd), "krdmactl rping -a %s -p 7396 -C 3 -V "
		 "-T " RP_IDLE, rxe_addr(false));
	ASSERT_OK(rp_spawn(&self->client, "client", cmd));
	rp_reap_pair(&self->server, &self->client);
	EXPECT_EQ(0, self->client.status) {
		TH_LOG("%.2000s", rp_out(&self->client));
	}
	EXPECT_EQ(1, self->server.status) {
		TH_LOG("%.2000s", rp_out(&self->server));
	}
	EXPECT_NE(NULL, strstr(rp_out(&self->server), "after 3 pings, not 5")) {
		TH_LOG("%.2000s", rp_out(&self->server));
	}
}

/* Bad options: exit 2, naming the option; rping's size limits. */
KRDMA_TEST_F(failures, bad_options)
{
	static const struct {
		const char *args;
		const char *says;
	} bad[] = {
		{ "-a 192.0.2.1 -S 25", "-S/--size" },
		{ "-a 192.0.2.1 -S 65536", "-S/--size" },
		{ "-a 192.0.2.1 -C -1", "-C/--count" },
		{ "-a 192.0.2.1 -p 70000", "-p/--port" },
		{ "-C 1", "needs -a" },
		{ "-s -x", "unknown option -x" },
		{ "-s extra", "unexpected argument" },
	};
	char cmd[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "krdmactl rping %s", bad[i].args);
		ASSERT_OK(rp_spawn(&self->client, "bad", cmd));
		rp_reap(&self->client);
		EXPECT_EQ(2, self->client.status) {
			TH_LOG("%s: exit %d", cmd, self->client.status);
		}
		EXPECT_NE(NULL, strstr(rp_out(&self->client), bad[i].says)) {
			TH_LOG("%s:\n%s", cmd, rp_out(&self->client));
		}
	}
}

TEST_HARNESS_MAIN
