// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl pingpong against rdma-core's ibv_rc_pingpong, ibv_uc_pingpong and
 * ibv_ud_pingpong, and against itself: server and client both run on rxe0
 * in this VM (its loopback path works) and meet over TCP at $RXE0_ADDR.
 * Each case runs the two programs under timeout(1), on a TCP port of its
 * own, and wants both to exit 0 and print the closing figures.
 */
#include <poll.h>
#include <time.h>

#include "krdma_test.h"

#define RXE "rxe0"
#define PP_ITERS 200
#define PP_UD_SIZE 1024		/* rxe's active MTU on a 1500-byte netdev */
#define PP_CASE_TIMEOUT 150	/* the harness' limit for one case */
#define PP_IDLE "5"		/* krdmactl -T: seconds without progress */
#define PP_GRACE 3		/* seconds the survivor of a failure gets */

/* ------------------------------------------------------------------------
 * Helpers
 */

/*
 * The RoCEv2 GID of rxe0 port 1 that is ::ffff:$RXE0_ADDR, as sysfs spells
 * it; its index, or -1.
 */
static int pp_gid_index(void)
{
	unsigned int a, b, c, d;
	char want[64], buf[128];
	int i;

	if (sscanf(kt_test_addr(false), "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
		return -1;
	snprintf(want, sizeof(want),
		 "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
	for (i = 0; i < 256; i++) {
		if (krdma_read_file(buf, sizeof(buf), SYSFS_IB
				    "/" RXE "/ports/1/gids/%d", i))
			break;
		if (strcmp(buf, want))
			continue;
		if (krdma_read_file(buf, sizeof(buf), SYSFS_IB
				    "/" RXE "/ports/1/gid_attrs/types/%d", i))
			continue;
		if (!strcmp(buf, "RoCE v2"))
			return i;
	}
	return -1;
}

/* Runs "timeout 60 @cmd" in the background, output into a file. */
static int pp_spawn(struct kt_proc *p, const char *tag, const char *cmd)
{
	return kt_spawn(p, "krdma_interop", tag, false, cmd);
}

/* Is something listening on TCP @port (IPv4 or IPv6)? */
static bool tcp_listening(unsigned int port)
{
	static const char *const files[] = { "/proc/net/tcp",
					     "/proc/net/tcp6" };
	char line[512], want[16];
	unsigned int i;
	bool found = false;

	snprintf(want, sizeof(want), ":%04X ", port);
	for (i = 0; i < 2 && !found; i++) {
		FILE *f = fopen(files[i], "r");

		if (!f)
			continue;
		while (!found && fgets(line, sizeof(line), f)) {
			char local[128], remote[128], st[8];

			if (sscanf(line, "%*s %127s %127s %7s", local, remote,
				   st) != 3)
				continue;
			strcat(local, " ");
			found = strstr(local, want) && !strcmp(st, "0A");
		}
		fclose(f);
	}
	return found;
}

/* Waits until the server listens (or has died); false if it never did. */
static bool pp_wait_listen(struct kt_proc *server, unsigned int port)
{
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	int i;

	for (i = 0; i < 30 * 20; i++) {
		if (tcp_listening(port))
			return true;
		if (kt_check_exit(server))
			return false;
		nanosleep(&delay, NULL);
	}
	return false;
}

/* "%llu bytes in %f seconds = %f Mbit/sec" with the expected count. */
static bool pp_has_figures(const char *out, unsigned int size,
			   unsigned int iters)
{
	char bytes[64], lines[64];

	snprintf(bytes, sizeof(bytes), "\n%llu bytes in ",
		 (unsigned long long)size * iters * 2);
	snprintf(lines, sizeof(lines), "\n%u iters in ", iters);
	return (strstr(out, bytes) || !strncmp(out, bytes + 1,
					       strlen(bytes + 1))) &&
	       strstr(out, lines) && strstr(out, " Mbit/sec\n") &&
	       strstr(out, " usec/iter\n");
}

/* The number after "\"key\":" in JSON output; false if there is none. */
static bool json_number(const char *out, const char *key, double *val)
{
	char want[64], *end;
	const char *p;

	snprintf(want, sizeof(want), "\"%s\":", key);
	p = strstr(out, want);
	if (!p)
		return false;
	p += strlen(want);
	*val = strtod(p, &end);
	return end != p && (*end == ',' || *end == '}');
}

/* One JSON object on one line, braces balanced outside strings. */
static bool json_shape_ok(const char *out)
{
	const char *p = strchr(out, '{');
	bool in_str = false;
	int depth = 0;

	if (!p)
		return false;
	for (; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"')
			in_str = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p[1] == '\n';
	}
	return false;
}

/* ------------------------------------------------------------------------
 * The cases
 */

enum pp_side {
	KRDMACTL,
	REFERENCE,		/* ibv_<transport>_pingpong */
};

FIXTURE(interop)
{
	int gid;
	struct kt_proc server;
	struct kt_proc client;
};

FIXTURE_VARIANT(interop)
{
	const char *transport;
	enum pp_side server;
	enum pp_side client;
	const char *opts;	/* for both sides */
	bool json;		/* krdmactl sides print JSON */
	unsigned int port;
};

#define PP_CASE(name, t, s, c, o, j, p)					\
	FIXTURE_VARIANT_ADD(interop, name) {				\
		.transport = t, .server = s, .client = c, .opts = o,	\
		.json = j, .port = p,					\
	}

PP_CASE(rc_krdmactl_server_ibv_client, "rc", KRDMACTL, REFERENCE, "", false, 18601);
PP_CASE(rc_ibv_server_krdmactl_client, "rc", REFERENCE, KRDMACTL, "", false, 18602);
PP_CASE(uc_krdmactl_server_ibv_client, "uc", KRDMACTL, REFERENCE, "", false, 18603);
PP_CASE(uc_ibv_server_krdmactl_client, "uc", REFERENCE, KRDMACTL, "", false, 18604);
PP_CASE(ud_krdmactl_server_ibv_client, "ud", KRDMACTL, REFERENCE, "", false, 18605);
PP_CASE(ud_ibv_server_krdmactl_client, "ud", REFERENCE, KRDMACTL, "", false, 18606);
PP_CASE(rc_krdmactl_both, "rc", KRDMACTL, KRDMACTL, "", false, 18607);
PP_CASE(uc_krdmactl_both, "uc", KRDMACTL, KRDMACTL, "", false, 18608);
PP_CASE(ud_krdmactl_both, "ud", KRDMACTL, KRDMACTL, "", false, 18609);
PP_CASE(rc_chk_krdmactl_server_ibv_client, "rc", KRDMACTL, REFERENCE, "-c", false, 18610);
PP_CASE(rc_chk_ibv_server_krdmactl_client, "rc", REFERENCE, KRDMACTL, "-c", false, 18611);
PP_CASE(ud_chk_krdmactl_server_ibv_client, "ud", KRDMACTL, REFERENCE, "-c", false, 18612);
PP_CASE(ud_chk_ibv_server_krdmactl_client, "ud", REFERENCE, KRDMACTL, "-c", false, 18613);
PP_CASE(uc_chk_krdmactl_both, "uc", KRDMACTL, KRDMACTL, "-c", false, 18614);
PP_CASE(rc_events_krdmactl_server_ibv_client, "rc", KRDMACTL, REFERENCE, "-e", false, 18615);
PP_CASE(rc_events_ibv_server_krdmactl_client, "rc", REFERENCE, KRDMACTL, "-e", false, 18616);
PP_CASE(ud_events_krdmactl_both, "ud", KRDMACTL, KRDMACTL, "-e", false, 18617);
PP_CASE(rc_json_krdmactl_server_ibv_client, "rc", KRDMACTL, REFERENCE, "", true, 18618);
PP_CASE(uc_json_ibv_server_krdmactl_client, "uc", REFERENCE, KRDMACTL, "-e -c", true, 18619);

static unsigned int pp_size(const FIXTURE_VARIANT(interop) *v)
{
	return strcmp(v->transport, "ud") ? 4096 : PP_UD_SIZE;
}

static void pp_cmd(char *cmd, size_t len, const FIXTURE_VARIANT(interop) *v,
		   enum pp_side side, int gid, bool client)
{
	const char *host = client ? kt_test_addr(false) : "";

	if (side == REFERENCE)
		snprintf(cmd, len,
			 "ibv_%s_pingpong -d " RXE " -g %d -p %u -n %u -s %u "
			 "%s %s", v->transport, gid, v->port, PP_ITERS,
			 pp_size(v), v->opts, host);
	else
		snprintf(cmd, len,
			 "krdmactl pingpong -d " RXE " -g %d -t %s -p %u -n %u "
			 "-s %u -T " PP_IDLE " %s %s %s", gid, v->transport,
			 v->port, PP_ITERS, pp_size(v), v->opts,
			 v->json ? "-j" : "", host);
}

FIXTURE_SETUP(interop)
{
	const char *why = kt_krdmactl_unavailable(RXE);

	if (why)
		SKIP(return, "%s", why);
	if ((variant->server == REFERENCE || variant->client == REFERENCE) &&
	    !krdma_have_cmd("ibv_rc_pingpong"))
		SKIP(return, "no ibv_*_pingpong (rdma-core ibverbs-utils)");
	self->gid = pp_gid_index();
	if (self->gid < 0)
		SKIP(return, "no RoCEv2 GID ::ffff:%s on " RXE,
		     kt_test_addr(false));
}

FIXTURE_TEARDOWN(interop)
{
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
}

static void pp_check_json(struct __test_metadata *_metadata,
			  const FIXTURE_VARIANT(interop) *v,
			  const struct kt_proc *p)
{
	double bytes = 0, iters = 0, secs = -1, mbps = -1, usec = -1;

	EXPECT_TRUE(json_shape_ok(p->out)) {
		TH_LOG("not one JSON object:\n%s", p->out);
	}
	EXPECT_TRUE(json_number(p->out, "bytes", &bytes) &&
		    json_number(p->out, "iters", &iters) &&
		    json_number(p->out, "seconds", &secs) &&
		    json_number(p->out, "mbit_per_sec", &mbps) &&
		    json_number(p->out, "usec_per_iter", &usec)) {
		TH_LOG("figures missing from the JSON:\n%s", p->out);
	}
	EXPECT_EQ((double)pp_size(v) * PP_ITERS * 2, bytes);
	EXPECT_EQ((double)PP_ITERS, iters);
	EXPECT_LT(0, secs);
	EXPECT_LT(0, mbps);
	EXPECT_LT(0, usec);
}

static void pp_check_side(struct __test_metadata *_metadata,
			  const FIXTURE_VARIANT(interop) *v,
			  const struct kt_proc *p, enum pp_side side,
			  const char *role)
{
	EXPECT_EQ(0, p->status) {
		TH_LOG("%s %s exited %d:\n%s", role,
		       side == KRDMACTL ? "krdmactl" : "ibv_pingpong",
		       p->status, p->out);
	}
	EXPECT_EQ(NULL, strstr(p->out, "invalid data")) {
		TH_LOG("%s: -c check failed:\n%s", role, p->out);
	}
	if (side == KRDMACTL && v->json) {
		pp_check_json(_metadata, v, p);
		return;
	}
	EXPECT_TRUE(pp_has_figures(p->out, pp_size(v), PP_ITERS)) {
		TH_LOG("%s printed no closing figures:\n%s", role, p->out);
	}
}

KRDMA_TEST_F_TIMEOUT(interop, pingpong, PP_CASE_TIMEOUT)
{
	char cmd[512];

	pp_cmd(cmd, sizeof(cmd), variant, variant->server, self->gid, false);
	TH_LOG("server: %s", cmd);
	ASSERT_OK(pp_spawn(&self->server, "server", cmd));
	ASSERT_TRUE(pp_wait_listen(&self->server, variant->port)) {
		TH_LOG("server never listened (exit %d):\n%s",
		       self->server.status, self->server.out);
	}
	pp_cmd(cmd, sizeof(cmd), variant, variant->client, self->gid, true);
	TH_LOG("client: %s", cmd);
	ASSERT_OK(pp_spawn(&self->client, "client", cmd));
	kt_reap_pair(&self->server, &self->client, PP_GRACE);

	pp_check_side(_metadata, variant, &self->server, variant->server,
		      "server");
	pp_check_side(_metadata, variant, &self->client, variant->client,
		      "client");
}

/* ------------------------------------------------------------------------
 * Failures
 */

FIXTURE(failures)
{
	int gid;
	struct kt_proc server;
	struct kt_proc client;
};

FIXTURE_SETUP(failures)
{
	const char *why = kt_krdmactl_unavailable(NULL);

	if (why)
		SKIP(return, "%s", why);
	self->gid = pp_gid_index();
	if (self->gid < 0)
		SKIP(return, "no RoCEv2 GID ::ffff:%s on " RXE,
		     kt_test_addr(false));
}

FIXTURE_TEARDOWN(failures)
{
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Nobody listens: the client fails at once, saying so. */
KRDMA_TEST_F(failures, connect_refused)
{
	char cmd[256];
	double t0;

	ASSERT_FALSE(tcp_listening(18698));
	snprintf(cmd, sizeof(cmd),
		 "krdmactl pingpong -d " RXE " -g %d -p 18698 %s", self->gid,
		 kt_test_addr(false));
	t0 = now_s();
	ASSERT_OK(pp_spawn(&self->client, "client", cmd));
	kt_reap(&self->client);
	EXPECT_EQ(1, self->client.status) {
		TH_LOG("%s", self->client.out);
	}
	EXPECT_GT(5.0, now_s() - t0);
	EXPECT_NE(NULL, strstr(self->client.out, "cannot connect to")) {
		TH_LOG("no clear message:\n%s", self->client.out);
	}
	EXPECT_NE(NULL, strstr(self->client.out, "refused")) {
		TH_LOG("no reason:\n%s", self->client.out);
	}
}

/* A server nobody connects to gives up after -T seconds. */
KRDMA_TEST_F(failures, accept_timeout)
{
	char cmd[256];
	double t0;

	snprintf(cmd, sizeof(cmd),
		 "krdmactl pingpong -d " RXE " -g %d -p 18697 -T 1", self->gid);
	t0 = now_s();
	ASSERT_OK(pp_spawn(&self->server, "server", cmd));
	kt_reap(&self->server);
	EXPECT_EQ(1, self->server.status) {
		TH_LOG("%s", self->server.out);
	}
	EXPECT_GT(10.0, now_s() - t0);
	EXPECT_NE(NULL, strstr(self->server.out, "no client connected")) {
		TH_LOG("no clear message:\n%s", self->server.out);
	}
}

/* Bad options: exit 2, naming the option. */
KRDMA_TEST_F(failures, bad_options)
{
	static const struct kt_usage bad[] = {
		{ "-t xx", "-t/--transport" },
		{ "-m 1000", "-m/--mtu" },
		{ "-s 0", "-s/--size" },
		{ "-n abc", "-n/--iters" },
		{ "-p 70000", "-p/--port" },
		{ "-t ud -m 1024", "-m/--mtu" },
		{ "-x", "unknown option -x" },
		{ "a b", "unexpected argument" },
	};

	kt_expect_usage(_metadata, &self->client, "krdma_interop", false,
			"krdmactl pingpong", bad, ARRAY_SIZE(bad));
}

/*
 * -c really checks: a client that does not mark its pages (no -c) makes a
 * krdmactl -c server report "invalid data in page 0" and fail.
 */
KRDMA_TEST_F_TIMEOUT(failures, chk_detects_unmarked, PP_CASE_TIMEOUT)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "krdmactl pingpong -d " RXE " -g %d -p 18696 -n 20 -T "
		 PP_IDLE " -c",
		 self->gid);
	ASSERT_OK(pp_spawn(&self->server, "server", cmd));
	ASSERT_TRUE(pp_wait_listen(&self->server, 18696));
	snprintf(cmd, sizeof(cmd),
		 "krdmactl pingpong -d " RXE " -g %d -p 18696 -n 20 -T "
		 PP_IDLE " %s",
		 self->gid, kt_test_addr(false));
	ASSERT_OK(pp_spawn(&self->client, "client", cmd));
	kt_reap_pair(&self->server, &self->client, PP_GRACE);
	EXPECT_EQ(0, self->client.status) {
		TH_LOG("%s", self->client.out);
	}
	EXPECT_EQ(1, self->server.status) {
		TH_LOG("%s", self->server.out);
	}
	EXPECT_NE(NULL, strstr(self->server.out, "invalid data in page 0")) {
		TH_LOG("%s", self->server.out);
	}
}

TEST_HARNESS_MAIN
