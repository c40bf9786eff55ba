// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl serve with its clients send, write, read, atomic and copy, all
 * on the test device in this VM (loopback: rxe0, or $KRDMA_TEST_DEV), over
 * rdma_cm at its address, on RC and (what they offer) UC and UD.  Each case
 * runs a server under timeout(1) on a port of its own, then the clients,
 * and checks exit statuses and output.
 */
#include <math.h>
#include <poll.h>
#include <time.h>

#include "krdma_test.h"

#define CLI_CASE_TIMEOUT 180

/* Runs "timeout 60 CMD" in the background, output into a file. */
static int __attribute__((format(printf, 2, 3)))
cli_spawn(struct kt_proc *p, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return kt_spawn(p, "krdma_cli", NULL, false, cmd);
}

/* Run a client to the end. */
static int __attribute__((format(printf, 2, 3)))
cli_run(struct kt_proc *p, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (kt_spawn(p, "krdma_cli", NULL, false, cmd))
		return -1;
	kt_reap(p);
	return p->status;
}

/* Wait until the server printed its "listening" line (or died). */
static bool cli_wait_listen(struct kt_proc *s)
{
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	char buf[4096];
	int i, fd;
	ssize_t n;

	for (i = 0; i < 30 * 20; i++) {
		fd = open(s->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			buf[n > 0 ? n : 0] = 0;
			if (strstr(buf, "listening"))
				return true;
		}
		if (kt_check_exit(s))
			return false;
		nanosleep(&delay, NULL);
	}
	return false;
}

/* The unsigned number after "key " in text output (first match). */
static bool text_u64(const char *out, const char *key, uint64_t *val)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), " %s ", key);
	p = strstr(out, want);
	if (!p)
		return false;
	*val = strtoull(p + strlen(want), NULL, 0);
	return true;
}

FIXTURE(cli)
{
	struct kt_dev dev;	/* the test device, for what it lacks */
	struct kt_proc server;
	struct kt_proc client;
	char dir[64];
};

FIXTURE_SETUP(cli)
{
	const char *why = kt_krdmactl_unavailable(kt_test_dev());
	int fd;

	if (why)
		SKIP(return, "%s", why);
	fd = krdma_open();
	ASSERT_LE(0, fd);
	ASSERT_OK(kt_dev_pick(fd, NULL, &self->dev));
	close(fd);
}

FIXTURE_TEARDOWN(cli)
{
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
	if (self->dir[0])
		krdma_run("rm -rf %s", self->dir);
}

#define START_SERVER(fmt, ...)						\
	do {								\
		ASSERT_OK(cli_spawn(&self->server, "krdmactl serve -d %s " \
				    fmt, kt_test_dev(), ##__VA_ARGS__)); \
		ASSERT_TRUE(cli_wait_listen(&self->server)) {		\
			kt_reap(&self->server);			\
			TH_LOG("server never listened:\n%s",		\
			       self->server.out);			\
		}							\
	} while (0)

#define CLIENT_OK(fmt, ...)						\
	do {								\
		int __st = cli_run(&self->client, "krdmactl " fmt,	\
				   ##__VA_ARGS__);			\
		EXPECT_EQ(0, __st) {					\
			TH_LOG("krdmactl " fmt ": exit %d:\n%s",	\
			       ##__VA_ARGS__, __st, self->client.out);	\
		}							\
	} while (0)

/* the server exits 0 (-n clients served well) */
#define SERVER_OK()							\
	do {								\
		kt_reap(&self->server);				\
		EXPECT_EQ(0, self->server.status) {			\
			TH_LOG("%s", self->server.out);		\
		}							\
	} while (0)

/* Commands refused as bad usage: exit 2, saying what was wrong. */
struct cli_usage {
	const char *args;
	const char *says;
};

static void cli_expect_usage(struct __test_metadata *_metadata,
			     struct kt_proc *p, const struct cli_usage *bad,
			     unsigned int n)
{
	unsigned int i;
	int st;

	for (i = 0; i < n; i++) {
		st = cli_run(p, "krdmactl %s", bad[i].args);
		EXPECT_EQ(2, st) {
			TH_LOG("%s: exit %d", bad[i].args, st);
		}
		EXPECT_NE(NULL, strstr(p->out, bad[i].says)) {
			TH_LOG("%s:\n%s", bad[i].args, p->out);
		}
	}
}

/* send, write and read against a pattern-filled buffer */
KRDMA_TEST_F_TIMEOUT(cli, send_write_read, CLI_CASE_TIMEOUT)
{
	START_SERVER("-p 18701 -n 4");
	CLIENT_OK("send --data hello-krdma %s:18701", kt_test_addr(false));
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("read -s 8192 -o 4096 %s:18701", kt_test_addr(false));
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("write -s 65536 -o 128 %s:18701", kt_test_addr(false));
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("-j send -s 4000 %s:18701", kt_test_addr(false));
	EXPECT_NE(NULL, strstr(self->client.out, "\"result\":\"OK\""));
	SERVER_OK();
	EXPECT_NE(NULL, strstr(self->server.out, "recv 11 bytes from")) {
		TH_LOG("%s", self->server.out);
	}
	EXPECT_NE(NULL, strstr(self->server.out, "data hello-krdma"));
	EXPECT_NE(NULL, strstr(self->server.out, "65536 bytes at 128"));
	TH_LOG("server:\n%s", self->server.out);
}

/*
 * A client's -p is the server's port, as serve's is its own: nothing
 * listens on the default port, so a client that ignored -p would fail.
 * A port in HOST comes first.
 */
KRDMA_TEST_F_TIMEOUT(cli, client_port_option, CLI_CASE_TIMEOUT)
{
	START_SERVER("-p 18726 -n 3");
	CLIENT_OK("send -p 18726 %s", kt_test_addr(false));
	CLIENT_OK("read -p 1 %s:18726", kt_test_addr(false));
	CLIENT_OK("write --port 18726 -s 4096 %s", kt_test_addr(false));
	SERVER_OK();
}

/* fadd twice: old 0 then N; cswap; against a zeroed buffer */
KRDMA_TEST_F_TIMEOUT(cli, atomics, CLI_CASE_TIMEOUT)
{
	uint64_t v = 99;

	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	START_SERVER("-p 18702 --fill zero -n 4");
	CLIENT_OK("atomic fadd --add 5 -o 64 %s:18702", kt_test_addr(false));
	EXPECT_TRUE(text_u64(self->client.out, "old", &v));
	EXPECT_EQ(0ULL, v);
	CLIENT_OK("atomic fadd --add 5 -o 64 %s:18702", kt_test_addr(false));
	EXPECT_TRUE(text_u64(self->client.out, "old", &v));
	EXPECT_EQ(5ULL, v);
	CLIENT_OK("atomic cswap --compare 10 --swap 42 -o 64 %s:18702",
		  kt_test_addr(false));
	EXPECT_TRUE(text_u64(self->client.out, "old", &v));
	EXPECT_EQ(10ULL, v);
	EXPECT_NE(NULL, strstr(self->client.out, "swapped yes"));
	CLIENT_OK("atomic fadd --add 0 -o 64 %s:18702", kt_test_addr(false));
	EXPECT_TRUE(text_u64(self->client.out, "old", &v));
	EXPECT_EQ(42ULL, v);
	SERVER_OK();
}

/* 6 clients x 20 fadd of 3 at once: the counter ends at exactly 360 */
KRDMA_TEST_F_TIMEOUT(cli, concurrent_fadd, CLI_CASE_TIMEOUT)
{
	struct kt_proc c[6];
	uint64_t v = 0;
	int i;

	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	memset(c, 0, sizeof(c));
	START_SERVER("-p 18703 --fill zero -n 7 -T 30");
	for (i = 0; i < 6; i++)
		ASSERT_OK(cli_spawn(&c[i], "krdmactl atomic fadd --add 3 "
				    "-n 20 -T 30 %s:18703",
				    kt_test_addr(false)));
	for (i = 0; i < 6; i++) {
		kt_reap(&c[i]);
		EXPECT_EQ(0, c[i].status) {
			TH_LOG("client %d:\n%s", i, c[i].out);
		}
		kt_proc_end(&c[i]);
	}
	CLIENT_OK("atomic fadd --add 0 %s:18703", kt_test_addr(false));
	EXPECT_TRUE(text_u64(self->client.out, "old", &v));
	EXPECT_EQ(360ULL, v);
	SERVER_OK();
}

/*
 * A file of @bytes random bytes copied to a server on @port (@size_opt: its
 * buffer size option, or ""): GOOD, identical.
 */
static void copy_random(struct __test_metadata *_metadata,
			FIXTURE_DATA(cli) *self, unsigned int bytes,
			unsigned int port, const char *size_opt)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.d%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s/save && head -c %u /dev/urandom > %s/big.bin",
			       self->dir, bytes, self->dir));
	START_SERVER("-p %u %s --save %s/save -n 1", port, size_opt,
		     self->dir);
	CLIENT_OK("copy %s/big.bin %s:%u", self->dir, kt_test_addr(false),
		  port);
	EXPECT_NE(NULL, strstr(self->client.out, "result GOOD"));
	SERVER_OK();
	EXPECT_EQ(0, krdma_run("cmp %s/big.bin %s/save/big.bin", self->dir,
			       self->dir));
}

/* a 300 KiB file through a 64 KiB buffer */
KRDMA_TEST_F_TIMEOUT(cli, copy_large, CLI_CASE_TIMEOUT)
{
	copy_random(_metadata, self, 307200, 18704, "--size 65536");
	EXPECT_NE(NULL, strstr(self->server.out, "seq 4 45056 bytes at 262144"));
	TH_LOG("server:\n%s", self->server.out);
}

/*
 * 3 MB through the server's default 1 MiB buffer: the client's chunks are
 * what its device registers with its own header (on siw0, whose buffers
 * are 256 pages, a little less than 1 MiB).
 */
KRDMA_TEST_F_TIMEOUT(cli, copy_default_buffer, CLI_CASE_TIMEOUT)
{
	copy_random(_metadata, self, 3000000, 18742, "");
}

/*
 * --zero-copy: 48 MiB and 5 bytes from the file's own pages, in chunks of
 * the server's 16 MiB buffer (siw0's buffers are 1 MiB at most: chunks of
 * that), each a user buffer of 8 MRs on rxe (--progress says how many).
 * Ignored, the option would leave chunks of 1 MiB at most.  (Larger copies take longer than the
 * tools' time limit under TCG and the debug kernel.)
 */
KRDMA_TEST_F_TIMEOUT(cli, copy_zero_copy, 600)
{
	uint64_t size = 16ull << 20, bytes, chunks = 0;
	const char *addr = kt_test_addr(false);
	const char *mrs;

	if (size > self->dev.info.max_mr_size)
		size = self->dev.info.max_mr_size >> 20 << 20;
	ASSERT_NE(0ull, size);
	bytes = (48ull << 20) + 5;
	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.d%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s/save && head -c %llu /dev/urandom > %s/big.bin",
			       self->dir, (unsigned long long)bytes, self->dir));
	START_SERVER("-p 18743 --size %llu --save %s/save -n 1 -T 50",
		     (unsigned long long)size, self->dir);
	CLIENT_OK("copy --zero-copy --progress -T 50 %s/big.bin %s:18743",
		  self->dir, addr);
	EXPECT_NE(NULL, strstr(self->client.out, "result GOOD"));
	EXPECT_NE(NULL, strstr(self->client.out, "buffer zero-copy"));
	EXPECT_TRUE(text_u64(self->client.out, "chunks", &chunks));
	EXPECT_EQ((bytes + size - 1) / size, chunks) {
		TH_LOG("%s", self->client.out);
	}
	/* the first chunk: small pages past one MR are several */
	mrs = strstr(self->client.out, "chunk 0 done");
	ASSERT_NE(NULL, mrs);
	mrs = strstr(mrs, "zero copy in ");
	ASSERT_NE(NULL, mrs);
	TH_LOG("first chunk: %.*s", (int)strcspn(mrs, "\n"), mrs);
	if (size > (uint64_t)self->dev.info.max_fast_reg_page_list_len *
		   sysconf(_SC_PAGESIZE))
		EXPECT_LT(1, atoi(mrs + strlen("zero copy in "))) {
			TH_LOG("%s", self->client.out);
		}
	SERVER_OK();
	EXPECT_EQ(0, krdma_run("cmp %s/big.bin %s/save/big.bin", self->dir,
			       self->dir));
}

/* the server cannot create the file: both sides fail */
KRDMA_TEST_F_TIMEOUT(cli, copy_unwritable, CLI_CASE_TIMEOUT)
{
	int st;

	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.u%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s && echo hi > %s/f.txt", self->dir,
			       self->dir));
	/* sysfs: not even root may create a file there */
	START_SERVER("-p 18705 --save /sys -n 1");
	st = cli_run(&self->client, "krdmactl copy %s/f.txt %s:18705",
		     self->dir, kt_test_addr(false));
	EXPECT_EQ(1, st) {
		TH_LOG("%s", self->client.out);
	}
	EXPECT_NE(NULL, strstr(self->client.out, "cannot create")) {
		TH_LOG("%s", self->client.out);
	}
	kt_reap(&self->server);
	EXPECT_EQ(1, self->server.status) {
		TH_LOG("%s", self->server.out);
	}
}

/* UC: send, write (checked by the server) and a copy of several chunks */
KRDMA_TEST_F_TIMEOUT(cli, uc_send_write_copy, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UC);
	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.c%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s/save && head -c 200000 "
			       "/dev/urandom > %s/f.bin", self->dir,
			       self->dir));
	START_SERVER("-t uc -p 18711 --size 65536 --save %s/save -n 4",
		     self->dir);
	CLIENT_OK("send -t uc --data over-uc %s:18711", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "transport uc"));
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("-j write -t uc -s 32768 -o 128 %s:18711", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "\"transport\":\"uc\""));
	EXPECT_NE(NULL, strstr(self->client.out, "\"result\":\"OK\""));
	CLIENT_OK("send -t uc -s 65536 %s:18711", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("copy -t uc %s/f.bin %s:18711", self->dir, addr);
	EXPECT_NE(NULL, strstr(self->client.out, "result GOOD"));
	SERVER_OK();
	EXPECT_EQ(0, krdma_run("cmp %s/f.bin %s/save/f.bin", self->dir,
			       self->dir));
	EXPECT_NE(NULL, strstr(self->server.out, "data over-uc"));
	EXPECT_NE(NULL, strstr(self->server.out, "32768 bytes at 128"));
	EXPECT_NE(NULL, strstr(self->server.out, "transport uc"));
	EXPECT_EQ(NULL, strstr(self->server.out, "without BYE"));
	TH_LOG("server:\n%s", self->server.out);
}

/*
 * UD and RC on one port: UD sends the largest message the path MTU takes,
 * a larger one is refused (exit 2); RC still serves everything.
 */
KRDMA_TEST_F_TIMEOUT(cli, ud_send_and_rc, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	uint64_t max = 0;
	int st;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	/*
	 * On the device's address: a wildcard UD listen also listens on any
	 * iWARP device, whose TCP port the RC listener has taken
	 * (docs/known-problems.rst).
	 */
	START_SERVER("-t rc,ud -a %s:18712 -n 5", addr);
	CLIENT_OK("send -t ud --data over-ud %s:18712", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "transport ud"));
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	st = cli_run(&self->client, "krdmactl send -t ud -s 4000 %s:18712",
		     addr);
	EXPECT_EQ(2, st) {
		TH_LOG("%s", self->client.out);
	}
	EXPECT_NE(NULL, strstr(self->client.out, "path MTU")) {
		TH_LOG("%s", self->client.out);
	}
	/* "... so at most N" */
	EXPECT_TRUE(text_u64(self->client.out, "most", &max));
	EXPECT_LT(0ULL, max);
	CLIENT_OK("-j send -t ud -s %llu %s:18712", (unsigned long long)max,
		  addr);
	EXPECT_NE(NULL, strstr(self->client.out, "\"transport\":\"ud\""));
	EXPECT_NE(NULL, strstr(self->client.out, "\"result\":\"OK\""));
	CLIENT_OK("send -t rc --data over-rc %s:18712", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	CLIENT_OK("read -s 4096 %s:18712", addr);
	EXPECT_NE(NULL, strstr(self->client.out, "result OK"));
	SERVER_OK();
	EXPECT_NE(NULL, strstr(self->server.out, "transport rc,ud"));
	EXPECT_NE(NULL, strstr(self->server.out, "data over-ud"));
	EXPECT_NE(NULL, strstr(self->server.out, "data over-rc"));
	EXPECT_NE(NULL, strstr(self->server.out, "over the path MTU"));
	TH_LOG("server:\n%s", self->server.out);
}

/* what a transport lacks: exit 2 before connecting, saying so */
KRDMA_TEST_F_TIMEOUT(cli, refused_transports, CLI_CASE_TIMEOUT)
{
	static const struct cli_usage bad[] = {
		{ "read -t uc h", "no RDMA READ over -t uc: RC only" },
		{ "read -t ud h", "no RDMA READ over -t ud" },
		{ "atomic fadd -t uc h", "no atomics over -t uc" },
		{ "atomic cswap --compare 1 --swap 2 -t ud h",
		  "no atomics over -t ud" },
		{ "write -t ud h", "no RDMA WRITE over -t ud: RC and UC" },
		{ "copy -t ud /etc/hostname h", "no RDMA WRITE over -t ud" },
		{ "send -t xx h", "\"xx\" is not rc, uc or ud" },
		{ "send -t rc,ud h", "is not rc, uc or ud" },
		{ "serve -t rc,uc", "cannot share a port" },
		{ "serve -t ud,", "\"\" is not rc, uc or ud" },
	};

	cli_expect_usage(_metadata, &self->client, bad, ARRAY_SIZE(bad));
}

/* nobody listens: quick non-zero exit */
KRDMA_TEST_F(cli, connect_refused)
{
	uint64_t t0 = kt_now_ms();
	int st;

	/* refused at once, well before -T's timeout (seconds) */
	st = cli_run(&self->client, "krdmactl send -T 20 %s:18799",
		     kt_test_addr(false));
	EXPECT_EQ(1, st) {
		TH_LOG("%s", self->client.out);
	}
	EXPECT_GT(15000u, kt_now_ms() - t0);
	EXPECT_NE(NULL, strstr(self->client.out, "refused")) {
		TH_LOG("%s", self->client.out);
	}
}

/* bad options: exit 2 naming the option */
KRDMA_TEST_F_TIMEOUT(cli, bad_options, CLI_CASE_TIMEOUT)
{
	static const struct cli_usage bad[] = {
		{ "serve --size 3", "--size" },
		{ "serve -p 0", "-p/--port" },
		{ "serve --fill x", "--fill" },
		{ "atomic fadd -o 3 h", "-o/--offset" },
		{ "atomic cswap --swap 1 h", "--compare" },
		{ "atomic xx h", "fadd or cswap" },
		{ "write -s 0 h", "-s/--size" },
		{ "read -T 0 h", "-T/--timeout" },
		{ "send -s 4 --data x h", "exclude" },
		{ "copy onlyfile", "missing" },
		{ "read h:70000", "bad port" },
		/* options named as written, long ones too */
		{ "send --data", "option --data needs an argument" },
		{ "serve --pretty=3", "option --pretty takes no argument" },
		{ "send -o 5 h", "option -o is not used by this command" },
		{ "read --add 3 h", "option --add is not used by this command" },
		{ "send --bogus h", "unknown option --bogus" },
		/* one SGE's length is a __u32 */
		{ "write -s 4294967296 h", "-s/--size" },
		/* a stream's messages are patterns the server checks */
		{ "send -n 2 --data x h", "-n/--count sends a stream" },
		{ "send -n 2 -f /etc/hostname h", "-n/--count sends a stream" },
		/* bench: what the kernel would refuse later, or ignore */
		{ "bench --conns 5", "--conns is for a client" },
		{ "bench -s 100 --lat", "-s is for a client" },
		{ "bench --bw", "--bw is for a client" },
		{ "bench write h --once", "--once is for a server" },
		{ "bench --conns 3 write h", "takes no OP" },
		{ "bench write h --validate", "--validate checks send" },
		{ "bench write_imm h --validate", "--validate checks send" },
		{ "bench fadd h -a", "-a: fadd and cswap have one size" },
		{ "bench send h -a -s 64", "-a and -s exclude" },
		{ "bench write h -n 5 -D 1", "-n and -D exclude" },
		{ "bench send h -q 2 --via-ioctl", "--via-ioctl drives one QP" },
		{ "bench read h --validate --via-ioctl", "without --validate" },
		{ "bench memcpy -s 67108865", "at most 67108864 bytes" },
		{ "bench write h -H", "-H and -U print a latency run's" },
		{ "bench send h --lat -U -j", "-H and -U print text" },
		{ "bench send h -b", "-b runs write and read" },
		{ "bench write h -b -a", "-b measures bandwidth of one size" },
		{ "bench read h -b --lat", "-b measures bandwidth of one size" },
		{ "bench write h -b -c ud", "-b runs over RC or UC" },
		{ "bench read h -b -c uc", "-c uc: write, write_imm" },
		/* -p is a port wherever there is one; pretty has no short */
		{ "-p devices", "unknown option -p (a port" },
		{ "devices -p", "unknown option -p (a port" },
		{ "sessions -p", "unknown option -p (a port" },
		{ "send -p 0 h", "-p/--port" },
	};

	cli_expect_usage(_metadata, &self->client, bad, ARRAY_SIZE(bad));
}

/*
 * What is not a regular file is refused before connecting, and at once: a
 * FIFO would block open() until a writer came.  A copy goes by the file's
 * size, so a /proc file (size 0, and more to read) is refused too.  Nobody
 * listens on the port: a command that went on would fail connecting.
 */
KRDMA_TEST_F_TIMEOUT(cli, not_a_regular_file, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	int st;

	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.f%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s && mkfifo %s/fifo", self->dir,
			       self->dir));
	st = cli_run(&self->client, "krdmactl send -T 5 -f %s/fifo %s:18798",
		     self->dir, addr);
	EXPECT_EQ(1, st);
	EXPECT_NE(NULL, strstr(self->client.out, "not a regular file")) {
		TH_LOG("%s", self->client.out);
	}
	st = cli_run(&self->client, "krdmactl copy -T 5 %s/fifo %s:18798",
		     self->dir, addr);
	EXPECT_EQ(1, st);
	EXPECT_NE(NULL, strstr(self->client.out, "not a regular file")) {
		TH_LOG("%s", self->client.out);
	}
	st = cli_run(&self->client, "krdmactl copy -T 5 /proc/version %s:18798",
		     addr);
	EXPECT_EQ(1, st);
	EXPECT_NE(NULL, strstr(self->client.out, "its size says 0")) {
		TH_LOG("%s", self->client.out);
	}
}

/*
 * serve -a ADDR:PORT listens on that PORT, not -p's; send -f reads a file
 * to its end, a /proc one too (whose size says 0).
 */
KRDMA_TEST_F_TIMEOUT(cli, serve_addr_port, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	char buf[4096], want[64];
	ssize_t n;
	int fd;

	fd = open("/proc/version", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ASSERT_LT(0, n);
	START_SERVER("-a %s:18713 -n 2", addr);
	CLIENT_OK("send -s 64 %s:18713", addr);
	CLIENT_OK("send -f /proc/version %s:18713", addr);
	SERVER_OK();
	EXPECT_NE(NULL, strstr(self->server.out, ":18713")) {
		TH_LOG("%s", self->server.out);
	}
	snprintf(want, sizeof(want), "recv %zd bytes", n);
	EXPECT_NE(NULL, strstr(self->server.out, want)) {
		TH_LOG("%s: %s", want, self->server.out);
	}
}

/*
 * Without -d, a server's buffer is on the device its -a address is on: the
 * test device's (first in the list or not: on siw0, rxe0 comes first), and
 * the second device's; a write there lands in it.
 */
static void serve_on_addr(struct __test_metadata *_metadata,
			  FIXTURE_DATA(cli) *self, const char *dev,
			  const char *addr, unsigned int port)
{
	char want[96];

	ASSERT_OK(cli_spawn(&self->server, "krdmactl serve -a %s:%u -n 1",
			    addr, port));
	ASSERT_TRUE(cli_wait_listen(&self->server)) {
		kt_reap(&self->server);
		TH_LOG("server never listened:\n%s", self->server.out);
	}
	CLIENT_OK("write -s 65536 %s:%u", addr, port);
	SERVER_OK();
	snprintf(want, sizeof(want), " device %s ", dev);
	EXPECT_NE(NULL, strstr(self->server.out, want)) {
		TH_LOG("no \"%s\": %s", want, self->server.out);
	}
	kt_proc_end(&self->server);
}

KRDMA_TEST_F_TIMEOUT(cli, serve_device_of_addr, CLI_CASE_TIMEOUT)
{
	const char *addr2 = kt_test_addr2(false), *dev2 = kt_test_dev2();

	serve_on_addr(_metadata, self, kt_test_dev(), kt_test_addr(false),
		      18740);
	if (addr2 && dev2)
		serve_on_addr(_metadata, self, dev2, addr2, 18741);
	else
		TH_LOG("%s", kt_no_dev2(false));
}

/*
 * A server on every address, its buffer on the test device (-d): a request
 * that came on the second device is refused, saying so (its work requests
 * could not use the buffer), and one on the test device is served.
 */
KRDMA_TEST_F_TIMEOUT(cli, serve_request_of_other_device, CLI_CASE_TIMEOUT)
{
	const char *addr2 = kt_test_addr2(false);
	int st;

	if (!addr2 || !kt_test_dev2())
		SKIP(return, "%s", kt_no_dev2(false));
	if (!kt_module_has(KRDMA_FEATURE_EVENT_DEVICE))
		SKIP(return, "no KRDMA_FEATURE_EVENT_DEVICE");
	START_SERVER("-a 0.0.0.0:18742 -n 1");
	st = cli_run(&self->client, "krdmactl write -s 4096 %s:18742", addr2);
	EXPECT_NE(0, st) TH_LOG("%s", self->client.out);
	CLIENT_OK("write -s 4096 %s:18742", kt_test_addr(false));
	SERVER_OK();
	EXPECT_NE(NULL, strstr(self->server.out, "came on another device"))
		TH_LOG("%s", self->server.out);
}

/*
 * A name that comes from a peer reaches the server's output escaped: no
 * terminal control, and JSON stays JSON (a byte that is not UTF-8 as the
 * code point of its value).  The server has no --save: it refuses the
 * copy, naming the file.
 */
KRDMA_TEST_F_TIMEOUT(cli, peer_strings_escaped, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	int st;

	snprintf(self->dir, sizeof(self->dir), "/tmp/krdma_cli.e%d", getpid());
	ASSERT_EQ(0, krdma_run("mkdir -p %s && echo hi > \"%s/$(printf "
			       "'e\\033[31m\\351')\"", self->dir, self->dir));
	START_SERVER("-p 18714 -n 1");
	st = cli_run(&self->client, "krdmactl copy %s/e* %s:18714",
		     self->dir, addr);
	EXPECT_EQ(1, st) {
		TH_LOG("%s", self->client.out);
	}
	kt_reap(&self->server);
	EXPECT_NE(NULL, strstr(self->server.out, "file e\\x1b[31m\\xe9")) {
		TH_LOG("%s", self->server.out);
	}
	EXPECT_EQ(NULL, strchr(self->server.out, 033));
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);

	ASSERT_OK(cli_spawn(&self->server, "krdmactl -j serve -d %s "
			    "-p 18715 -n 1", kt_test_dev()));
	ASSERT_TRUE(cli_wait_listen(&self->server));
	st = cli_run(&self->client, "krdmactl copy %s/e* %s:18715",
		     self->dir, addr);
	EXPECT_EQ(1, st);
	kt_reap(&self->server);
	EXPECT_NE(NULL, strstr(self->server.out,
			       "\"file\":\"e\\u001b[31m\\u00e9\"")) {
		TH_LOG("%s", self->server.out);
	}
	EXPECT_EQ(NULL, strchr(self->server.out, 033));
	EXPECT_EQ(NULL, strchr(self->server.out, 0xe9));
}

/*
 * bench's perftest options.  Wait until @p's output (a client's, as it
 * runs) holds @what; false if it ended without.
 */
static bool cli_wait_out(struct kt_proc *p, const char *what, char *buf,
			 size_t len)
{
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	int i, fd;
	ssize_t n;

	for (i = 0; i < 30 * 20; i++) {
		fd = open(p->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, buf, len - 1);
			close(fd);
			buf[n > 0 ? n : 0] = 0;
			if (strstr(buf, what))
				return true;
		}
		if (kt_check_exit(p))
			return false;
		nanosleep(&delay, NULL);
	}
	return false;
}

/*
 * A krdmactl bench server, for any run but those with immediate data
 * (send_imm, write_imm), which iWARP refuses: there send speaks with
 * credits, as the one-sided runs need no message of the server's.
 */
#define START_BENCH_ONE_SIDED(fmt, ...)					\
	do {								\
		ASSERT_OK(cli_spawn(&self->server, "krdmactl bench " fmt, \
				    ##__VA_ARGS__));			\
		ASSERT_TRUE(cli_wait_listen(&self->server)) {		\
			kt_reap(&self->server);			\
			TH_LOG("bench server never listened:\n%s",	\
			       self->server.out);			\
		}							\
	} while (0)

/* A client refused with exit 1, saying @says. */
#define BENCH_REFUSED(says, fmt, ...)					\
	do {								\
		int __st = cli_run(&self->client, fmt, ##__VA_ARGS__);	\
		EXPECT_EQ(1, __st) {					\
			TH_LOG(fmt ": exit %d:\n%s", ##__VA_ARGS__, __st, \
			       self->client.out);			\
		}							\
		EXPECT_NE(NULL, strstr(self->client.out, says)) {	\
			TH_LOG("%s: %s", says, self->client.out);	\
		}							\
	} while (0)

/*
 * -d: a server listens on the device's address and says so; a client
 * with -d runs on it, and a device that is not there is refused at either
 * end (a server that ignored it would listen until timeout(1) ends it).
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_ib_dev, CLI_CASE_TIMEOUT)
{
	const char *dev = kt_test_dev(), *dev2 = kt_test_dev2();
	const char *addr = kt_test_addr(false);
	char want[96], buf[4096];

	START_BENCH_ONE_SIDED("-d %s -p 18720", dev);
	snprintf(want, sizeof(want), "(%s:18720, %s)", addr, dev);
	EXPECT_TRUE(cli_wait_out(&self->server, want, buf, sizeof(buf)))
		TH_LOG("no %s: %s", want, buf);
	CLIENT_OK("bench write %s -p 18720 -d %s -n 20 -s 4096", addr, dev);
	snprintf(want, sizeof(want), " Device         : %s", dev);
	EXPECT_NE(NULL, strstr(self->client.out, want))
		TH_LOG("%s", self->client.out);
	BENCH_REFUSED("-d nosuchdev0: no such RDMA device",
		      "krdmactl bench write %s -p 18720 -d nosuchdev0 -n 20",
		      addr);
	BENCH_REFUSED("-d nosuchdev0: no such RDMA device",
		      "timeout 5 krdmactl bench -d nosuchdev0 -p 18721");
	kt_proc_end(&self->server);

	/*
	 * With rxe1 (one VM: its veth), a server on rxe1 and a client that
	 * reaches it from rxe0 (over the veth) or from rxe1 itself: the
	 * same HOST, the device -d says.
	 */
	addr = kt_test_addr2(false);
	if (!addr)
		return;
	START_BENCH_ONE_SIDED("-d %s -p 18725", dev2);
	snprintf(want, sizeof(want), "(%s:18725, %s)", addr, dev2);
	EXPECT_TRUE(cli_wait_out(&self->server, want, buf, sizeof(buf)))
		TH_LOG("no %s: %s", want, buf);
	CLIENT_OK("bench write %s -p 18725 -d %s -n 20 -s 4096", addr, dev);
	snprintf(want, sizeof(want), " Device         : %s", dev);
	EXPECT_NE(NULL, strstr(self->client.out, want))
		TH_LOG("%s", self->client.out);
	CLIENT_OK("bench write %s -p 18725 -d %s -n 20 -s 4096", addr, dev2);
	snprintf(want, sizeof(want), " Device         : %s", dev2);
	EXPECT_NE(NULL, strstr(self->client.out, want))
		TH_LOG("%s", self->client.out);
}

/*
 * -i, -x, -m: the connection is on what was asked or the run is refused
 * (rxe0 has one port, its path MTU is that of its netdev); on iWARP -x is
 * refused, saying why.
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_ib_port_gid_mtu, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	uint64_t mtu = 0;
	struct kt_dev d;
	const char *p;
	int fd;

	fd = krdma_open();
	ASSERT_LE(0, fd);
	ASSERT_OK(kt_dev_pick(fd, NULL, &d));
	close(fd);
	START_BENCH_ONE_SIDED("-p 18722");
	if (kt_dev_iwarp(&d)) {
		/* its GIDs hold the MAC: no address to connect from */
		BENCH_REFUSED("an iWARP device's GID, which is no address",
			      "krdmactl bench write %s -p 18722 -n 20 -d %s "
			      "-x %u", addr, d.info.name, d.gid_index);
		CLIENT_OK("-j bench write %s -p 18722 -n 20 -s 4096 -d %s "
			  "-i %u", addr, d.info.name, d.port_num);
	} else {
		ASSERT_EQ((uint32_t)KRDMA_GID_TYPE_ROCE_UDP_ENCAP, d.gid_type);
		CLIENT_OK("-j bench write %s -p 18722 -n 20 -s 4096 -d %s "
			  "-i %u -x %u", addr, d.info.name, d.port_num,
			  d.gid_index);
	}
	p = strstr(self->client.out, "\"path_mtu\":");
	ASSERT_NE(NULL, p) TH_LOG("%s", self->client.out);
	mtu = strtoull(p + strlen("\"path_mtu\":"), NULL, 10);
	ASSERT_TRUE(mtu >= 256 && mtu <= 4096);
	CLIENT_OK("bench write %s -p 18722 -n 20 -s 4096 -d %s -m %u",
		  addr, d.info.name, (unsigned int)mtu);
	BENCH_REFUSED("path MTU is",
		      "krdmactl bench write %s -p 18722 -n 20 -m %u", addr,
		      mtu == 256 ? 512 : 256);
	BENCH_REFUSED("-i 2: the connection to HOST is on port 1",
		      "krdmactl bench write %s -p 18722 -n 20 -i 2", addr);
	BENCH_REFUSED("-x 4000: no such GID index",
		      "krdmactl bench write %s -p 18722 -n 20 -d %s -x 4000",
		      addr, d.info.name);
}

/*
 * The address lines name the QPs `rdma resource show qp` lists, and the
 * PSN the client expects, the server's first (not on iWARP: no PSN);
 * --run_infinitely prints a line a second over them until SIGINT, then
 * exits 0 (a SEND run: the server's run ends at the end message);
 * --report_gbits names its columns as perftest does.
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_addresses_run_infinitely, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	struct kt_proc rdma = {};
	char buf[8192], cmd[96], want[64], want0[64];
	unsigned int qpn, rqpn, rpsn = 0, rows = 0;
	bool iwarp = kt_dev_iwarp(&self->dev);
	const char *p;

	START_BENCH_ONE_SIDED("-p 18723 --once");
	ASSERT_OK(cli_spawn(&self->client, "krdmactl bench send %s -p 18723 "
			    "-s 4096 --run_infinitely --report_gbits", addr));
	ASSERT_TRUE(cli_wait_out(&self->client, "BW average[Gb/sec]", buf,
				 sizeof(buf))) TH_LOG("%s", buf);
	p = strstr(buf, " local address: LID 0x0000 QPN 0x");
	ASSERT_NE(NULL, p) TH_LOG("%s", buf);
	qpn = strtoul(p + strlen(" local address: LID 0x0000 QPN 0x"), NULL,
		      16);
	p = strstr(buf, " remote address: LID 0x0000 QPN 0x");
	ASSERT_NE(NULL, p) TH_LOG("%s", buf);
	rqpn = strtoul(p + strlen(" remote address: LID 0x0000 QPN 0x"),
		       NULL, 16);
	p = strstr(p, " PSN 0x");
	ASSERT_EQ(iwarp, p == NULL) TH_LOG("%s", buf);
	if (p)
		rpsn = strtoul(p + strlen(" PSN 0x"), NULL, 16);
	if (krdma_have_cmd("rdma")) {
		snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u",
			 qpn);
		ASSERT_OK(kt_spawn(&rdma, "krdma_cli", "rdma", false, cmd));
		kt_reap(&rdma);
		snprintf(want, sizeof(want), "lqpn %u ", qpn);
		EXPECT_NE(NULL, strstr(kt_out(&rdma), want))
			TH_LOG("%s: %s", want, kt_out(&rdma));
		/* an iWARP QP's peer is a stream's: no QPN of it */
		snprintf(want, sizeof(want), "rqpn %u ", rqpn);
		EXPECT_TRUE(iwarp || strstr(kt_out(&rdma), want))
			TH_LOG("%s: %s", want, kt_out(&rdma));
		kt_proc_end(&rdma);
	}
	if (krdma_have_cmd("rdma") && !iwarp) {
		/*
		 * the server's QP sends one message until the end: its
		 * READY, which the client may have had before it printed
		 */
		snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u",
			 rqpn);
		ASSERT_OK(kt_spawn(&rdma, "krdma_cli", "rdma", false, cmd));
		kt_reap(&rdma);
		snprintf(want, sizeof(want), "sq-psn %u ",
			 (rpsn + 1) & 0xffffff);
		snprintf(want0, sizeof(want0), "sq-psn %u ", rpsn);
		EXPECT_TRUE(strstr(kt_out(&rdma), want) ||
			    strstr(kt_out(&rdma), want0))
			TH_LOG("%s: %s", want, kt_out(&rdma));
		kt_proc_end(&rdma);
	}
	/*
	 * two lines at least, a second apart; then one SIGINT to krdmactl
	 * (GNU timeout(1) would pass its own on twice: to its child and to
	 * its process group; busybox's runs the command in its own PID)
	 */
	sleep(3);
	EXPECT_EQ(0, krdma_run("pkill -INT -x -P %d krdmactl || kill -INT %d",
			       self->client.pid, self->client.pid));
	kt_reap(&self->client);
	EXPECT_EQ(0, self->client.status) TH_LOG("%s", self->client.out);
	for (p = self->client.out; (p = strstr(p, "\n 4096 ")); p++)
		rows++;
	EXPECT_LE(2U, rows) TH_LOG("%s", self->client.out);
	SERVER_OK();
}

/*
 * The samples -H or -U printed: "#, usec", then "N, latency" for N from 1
 * on; -1 if there are none, or one is out of place (@sorted: smaller than
 * the one before).
 */
static int cli_samples(const char *out, bool sorted)
{
	const char *p = strstr(out, "#, usec\n");
	double v, last = 0;
	int n = 0, i;

	if (!p)
		return -1;
	for (p += strlen("#, usec\n"); sscanf(p, "%d, %lf", &i, &v) == 2;
	     p = strchr(p, '\n') + 1) {
		if (i != n + 1 || v <= 0 || (sorted && v < last))
			return -1;
		last = v;
		n++;
	}
	return n;
}

/*
 * --output prints the one number; -F is taken (and changes nothing);
 * -j --report_gbits names its figures in Gb/sec; -H and -U print every
 * latency (-H sorted); -V is `version`.
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_output_version, CLI_CASE_TIMEOUT)
{
	const char *addr = kt_test_addr(false);
	struct kt_proc ver = {};
	char *end;
	double v;

	START_BENCH_ONE_SIDED("-p 18724 -F");
	CLIENT_OK("bench write %s -p 18724 -n 20 -s 4096 -F "
		  "--output=bandwidth", addr);
	v = strtod(self->client.out, &end);
	EXPECT_TRUE(v > 0 && end != self->client.out && !strcmp(end, "\n"))
		TH_LOG("[%s]", self->client.out);
	CLIENT_OK("bench send %s -p 18724 -n 50 --lat --output=latency",
		  addr);
	v = strtod(self->client.out, &end);
	EXPECT_TRUE(v > 0 && end != self->client.out && !strcmp(end, "\n"))
		TH_LOG("[%s]", self->client.out);
	CLIENT_OK("-j bench write %s -p 18724 -n 20 -s 4096 --report_gbits",
		  addr);
	EXPECT_NE(NULL, strstr(self->client.out, "\"bw_avg_gbps\":"))
		TH_LOG("%s", self->client.out);
	EXPECT_EQ(NULL, strstr(self->client.out, "mbps"))
		TH_LOG("%s", self->client.out);
	CLIENT_OK("bench send %s -p 18724 -n 40 --lat -H", addr);
	EXPECT_EQ(40, cli_samples(self->client.out, true))
		TH_LOG("%s", self->client.out);
	CLIENT_OK("bench send %s -p 18724 -n 30 --lat -U", addr);
	EXPECT_EQ(30, cli_samples(self->client.out, false))
		TH_LOG("%s", self->client.out);
	CLIENT_OK("bench -V");
	ASSERT_EQ(0, cli_run(&ver, "krdmactl version"));
	EXPECT_STREQ(ver.out, self->client.out);
	kt_proc_end(&ver);
}

/*
 * A bench server without -d serves each client on the device its
 * connections came on, the first in the list or not: one-sided runs to
 * the test device and to the second find their buffer there.
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_serve_device_of_request, CLI_CASE_TIMEOUT)
{
	const char *addr2 = kt_test_addr2(false);

	if (!addr2 || !kt_test_dev2())
		SKIP(return, "%s", kt_no_dev2(false));
	START_BENCH_ONE_SIDED("-p 18729");
	CLIENT_OK("bench write %s -p 18729 -n 20 -s 4096", kt_test_addr(false));
	CLIENT_OK("bench write %s -p 18729 -n 20 -s 4096", addr2);
	CLIENT_OK("bench read %s -p 18729 -n 20 -s 4096", addr2);
}

/* The number after "key": in JSON output (first match), or -1. */
static double json_num(const char *out, const char *key)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\"%s\":", key);
	p = strstr(out, want);
	return p ? strtod(p + strlen(want), NULL) : -1;
}

/*
 * -b: the server runs @op toward the client as well, over the client's
 * @qps QPs, messages of @size for @run ("-n N": N a QP; "-D S": S
 * seconds), and the client's figures are both directions' sums, as
 * perftest's -b; the server's line says what its run did, which must be
 * what the client was told.
 */
static void cli_bidir(struct __test_metadata *_metadata, struct kt_proc *srv,
		      struct kt_proc *cli, const char *op, unsigned int port,
		      unsigned int qps, unsigned int size, const char *run)
{
	double local, remote, sum, msgs, n = 0, secs = 0;
	int st;

	st = cli_run(cli, "krdmactl -j bench %s %s -p %u -b -q %u -s %u %s",
		     op, kt_test_addr(false), port, qps, size, run);
	ASSERT_EQ(0, st) TH_LOG("%s", cli->out);
	kt_reap(srv);
	ASSERT_EQ(0, srv->status) TH_LOG("%s", srv->out);
	EXPECT_NE(NULL, strstr(cli->out, "\"directions\":\"both\""))
		TH_LOG("%s", cli->out);
	ASSERT_NE(NULL, strstr(srv->out, "\"direction\":\"to_client\""))
		TH_LOG("%s", srv->out);
	msgs = json_num(srv->out, "messages");
	if (sscanf(run, "-n %lf", &n) == 1)
		EXPECT_EQ(n * qps, msgs) TH_LOG("%s", srv->out);
	if (sscanf(run, "-D %lf", &secs) == 1)
		EXPECT_LE(secs * 0.99, json_num(srv->out, "elapsed_s"))
			TH_LOG("%s", srv->out);
	EXPECT_EQ(msgs * size, json_num(srv->out, "bytes"))
		TH_LOG("%s", srv->out);
	EXPECT_EQ(msgs, json_num(cli->out, "remote_iterations"))
		TH_LOG("%s", cli->out);
	local = json_num(cli->out, "bw_avg_local_mbps");
	remote = json_num(cli->out, "bw_avg_remote_mbps");
	sum = json_num(cli->out, "bw_avg_mbps");
	EXPECT_TRUE(local > 0 && remote > 0) TH_LOG("%s", cli->out);
	EXPECT_TRUE(fabs(remote - json_num(srv->out, "bw_avg_mbps")) <
		    0.001 * remote) TH_LOG("%s\n%s", cli->out, srv->out);
	EXPECT_TRUE(fabs(sum - (local + remote)) < 0.001 * sum)
		TH_LOG("%s", cli->out);
}

/*
 * -b over RC, iWARP's too: write on two QPs (each its own loop) of 64
 * KiB, whose buffers are as large as the device allows; read on one for
 * two seconds, and of 64 bytes, whose slots a READ run fills through and
 * through.  The two sides' messages are RDMA WRITEs to control buffers of
 * their own: no immediate data, and nothing that waits in RNR retries
 * while the server's run goes (on which 5.10's rxe would spin).
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_bidirectional, CLI_CASE_TIMEOUT)
{
	START_BENCH_ONE_SIDED("-j -p 18725 --once");
	cli_bidir(_metadata, &self->server, &self->client, "write", 18725, 2,
		  65536, "-n 100");
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
	START_BENCH_ONE_SIDED("-j -p 18726 --once");
	cli_bidir(_metadata, &self->server, &self->client, "read", 18726, 1,
		  4096, "-D 2");
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
	START_BENCH_ONE_SIDED("-j -p 18728 --once");
	cli_bidir(_metadata, &self->server, &self->client, "read", 18728, 1,
		  64, "-D 2");
}

/*
 * -b over UC: the client repeats its request until the server's READY
 * comes, and its END until the report does.
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_bidirectional_uc, CLI_CASE_TIMEOUT)
{
	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UC);
	START_BENCH_ONE_SIDED("-j -c uc -p 18727 --once");
	cli_bidir(_metadata, &self->server, &self->client, "write", 18727, 2,
		  16384, "-n 200 -c uc");
}

/*
 * iWARP: the runs whose server speaks with immediate data (send_imm,
 * write_imm) are refused before they start, saying why, and a --once
 * server serves none of them and exits 0 (no run of its failed); a
 * one-sided run goes on as before.  send speaks with credits there: a
 * bandwidth run on two QPs, validated; one on completion events, whose
 * credits come with none; and a ping-pong; each server run counting every
 * message the client sent (runs one after another on the same
 * connections: cli.bench_addresses_run_infinitely).
 */
KRDMA_TEST_F_TIMEOUT(cli, bench_two_sided_iwarp, CLI_CASE_TIMEOUT)
{
	static const char *const ops[] = { "send_imm", "write_imm" };
	const char *addr = kt_test_addr(false);
	char says[128];
	unsigned int i;

	if (!kt_dev_iwarp(&self->dev))
		SKIP(return, "%s: not iWARP: it has immediate data",
		     self->dev.info.name);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		START_BENCH_ONE_SIDED("-p 18729 --once");
		snprintf(says, sizeof(says), "bench: %s: the server's side of "
			 "the run speaks with immediate data, which iWARP has "
			 "not", ops[i]);
		BENCH_REFUSED(says, "timeout 20 krdmactl bench %s %s -p 18729 "
			      "-n 10", ops[i], addr);
		SERVER_OK();
		EXPECT_NE(NULL, strstr(self->server.out, "not served"))
			TH_LOG("%s", self->server.out);
		kt_proc_end(&self->server);
	}
	START_BENCH_ONE_SIDED("-j -p 18729 --once");
	CLIENT_OK("bench send %s -p 18729 -n 3000 -s 1024 -q 2 --validate",
		  addr);
	SERVER_OK();
	EXPECT_EQ(6000, json_num(self->server.out, "messages"))
		TH_LOG("%s", self->server.out);
	EXPECT_EQ(0, json_num(self->server.out, "validate_errors"))
		TH_LOG("%s", self->server.out);
	kt_proc_end(&self->server);
	START_BENCH_ONE_SIDED("-j -p 18729 --once");
	CLIENT_OK("bench send %s -p 18729 -n 2000 -s 4096 -e", addr);
	SERVER_OK();
	EXPECT_EQ(2000, json_num(self->server.out, "messages"))
		TH_LOG("%s", self->server.out);
	kt_proc_end(&self->server);
	START_BENCH_ONE_SIDED("-j -p 18729 --once");
	CLIENT_OK("bench send %s -p 18729 -n 300 -s 64 --lat", addr);
	SERVER_OK();
	EXPECT_EQ(300, json_num(self->server.out, "messages"))
		TH_LOG("%s", self->server.out);
	kt_proc_end(&self->server);
	START_BENCH_ONE_SIDED("-p 18729 --once");
	CLIENT_OK("bench write %s -p 18729 -n 10 -s 4096", addr);
	SERVER_OK();
}

/* the number after @key on cpu_samples' line (-1: no such key) */
static double cli_samples_field(const char *out, const char *key)
{
	const char *line = strstr(out, "cpu_samples: wall ");
	char word[40];
	const char *at;

	if (!line)
		return -1;
	snprintf(word, sizeof(word), " %s ", key);
	at = strstr(line, word);
	if (!at || (strchr(line, '\n') && at > strchr(line, '\n')))
		return -1;
	return strtod(at + strlen(word), NULL);
}

/*
 * cpu_samples, make bench-trace's profiler: the command's exit status
 * comes back, bad usage is 125; a 2-second WRITE run's samples cover
 * every CPU all along, add up, and a good part goes to the driver module
 * doing the work (rxe copies and checksums every byte; siw's threads
 * send it).
 */
KRDMA_TEST_F_TIMEOUT(cli, cpu_samples, CLI_CASE_TIMEOUT)
{
	static const char * const keys[] = {
		"rdma_rxe", "siw", "krdma", "krdma_bench_loop", "user",
		"kernel", "irq", "idle",
	};
	double wall, cpus, samples, coverage, driver, sum = 0;
	const char *out;
	unsigned int i;
	int st;

	if (!krdma_have_cmd("cpu_samples"))
		SKIP(return, "cpu_samples not built (make selftests)");
	EXPECT_EQ(3, cli_run(&self->client, "cpu_samples -- sh -c 'exit 3'"))
		TH_LOG("%s", self->client.out);
	EXPECT_NE(NULL, strstr(self->client.out, "cpu_samples: wall "))
		TH_LOG("%s", self->client.out);
	EXPECT_EQ(125, cli_run(&self->client, "cpu_samples -F 10x -- true"));
	EXPECT_EQ(125, cli_run(&self->client, "cpu_samples -m rdma_rxe"));

	ASSERT_OK(cli_spawn(&self->server, "krdmactl bench -p 18743"));
	ASSERT_TRUE(cli_wait_listen(&self->server)) {
		kt_reap(&self->server);
		TH_LOG("bench server never listened:\n%s", self->server.out);
	}
	st = cli_run(&self->client,
		     "cpu_samples -t 5 -m rdma_rxe -m siw -m krdma -f krdma_bench_loop -- krdmactl bench write %s -p 18743 -D 2",
		     kt_test_addr(false));
	out = self->client.out;	/* each run reads its output anew */
	ASSERT_EQ(0, st) TH_LOG("exit %d:\n%s", st, out);
	wall = cli_samples_field(out, "wall");
	cpus = cli_samples_field(out, "cpus");
	samples = cli_samples_field(out, "samples");
	coverage = cli_samples_field(out, "coverage");
	ASSERT_LT(2, wall) TH_LOG("%s", out);
	ASSERT_LE(1, cpus) TH_LOG("%s", out);
	EXPECT_EQ(0, cli_samples_field(out, "lost")) TH_LOG("%s", out);
	/* 999 a second on every CPU; a starved vCPU drops some */
	EXPECT_LE(0.5, coverage) TH_LOG("%s", out);
	EXPECT_GE(1.05, coverage) TH_LOG("%s", out);
	EXPECT_GE(0.01, fabs(samples / (999 * wall * cpus) - coverage))
		TH_LOG("%s", out);
	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		double v = cli_samples_field(out, keys[i]);

		EXPECT_LE(0, v) TH_LOG("%s: %s", keys[i], out);
		sum += v;
	}
	/* every sample in one class: the seconds add up (to the rounding) */
	EXPECT_GE(0.01 + 0.0005 * ARRAY_SIZE(keys),
		  fabs(sum - samples / 999)) TH_LOG("%s", out);
	driver = cli_samples_field(out, "rdma_rxe") +
		 cli_samples_field(out, "siw");
	EXPECT_GE(wall * cpus, driver) TH_LOG("%s", out);
	/*
	 * A driver built in (the debug kernel) is no module: what it does
	 * for krdma's loop, a CPU busy all along, is then the loop's.
	 */
	if (!krdma_run("grep -qE '^(rdma_rxe|siw) ' /proc/modules")) {
		EXPECT_LE(0.1 * wall, driver) TH_LOG("%s", out);
	} else {
		EXPECT_LE(0.25 * wall, cli_samples_field(out, "krdma") +
			  cli_samples_field(out, "krdma_bench_loop"))
			TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "\ncpu_samples: top ")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
