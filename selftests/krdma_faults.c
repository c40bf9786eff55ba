// SPDX-License-Identifier: GPL-2.0
/*
 * krdma RC faults across two hosts, over manual connections whose timers
 * the test picks (rdma_cm's are fixed: rnr_retry 7 retries an RNR NAK
 * forever):
 *
 *   - total loss (tc netem "loss 100%" on the RoCE data packets, both
 *     ways, selftests/faults.sh): the RDMA WRITE ends in RETRY_EXC_ERR,
 *     after about (retry_cnt + 1) local ACK timeouts, and the QP is in
 *     ERR; later WRs flush, nothing hangs;
 *   - a peer that posts no receive: a SEND ends in RNR_RETRY_EXC_ERR after
 *     rnr_retry + 1 tries, later WRs flush, nothing hangs (run.sh fails
 *     the run on a soft lockup or an RCU stall).
 *
 *   krdma_faults --serve [--port N]	the peer's side (two_vm_peer.sh):
 *	a TCP server; each client gets a child with a fresh /dev/krdma fd,
 *	an RC connection to the client's QP, a buffer it may write, and no
 *	receive posted, until it closes the socket
 *   krdma_faults	the tests (two_vm.sh), against $PEER_ADDR (port
 *	$KF_PORT, default 18630); without PEER_ADDR every case skips
 *
 * Times are printed with the bound the attributes give, not asserted:
 * what is asserted is the completion's status, that it came at all (a
 * POLL bounded by KF_WAIT_MS), and what the QP does afterwards.
 */
#include "krdma_test.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define KF_PORT 18630
#define KF_MAGIC 0x6b66746cu
#define KF_BUF (64 * 1024)
#define KF_WAIT_MS 30000	/* a completion that takes longer: a hang */

/* both ways: the QP, and (server -> client) the buffer it may write */
struct kf_msg {
	uint32_t magic;
	uint32_t qp_num, psn, lid;
	uint8_t gid[16];
	uint32_t min_rnr_timer;	/* client -> server: its QP's RNR NAK timer */
	uint32_t rkey;
	uint64_t addr;
};

static int kf_full(int s, void *p, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? send(s, (char *)p + done, len - done, MSG_NOSIGNAL) :
			  recv(s, (char *)p + done, len - done, 0);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

/* ---- the server ---- */

static int kf_serve_one(int s)
{
	struct kf_msg req, rep = { .magic = KF_MAGIC };
	struct krdma_conn_modify m;
	struct kt_conn c, peer = {};
	struct kt_buf b;
	struct kt_dev d;
	char byte;
	int fd;

	fd = krdma_open();
	if (fd < 0 || kt_dev_pick(fd, NULL, &d) ||
	    kf_full(s, &req, sizeof(req), false) || req.magic != KF_MAGIC ||
	    kt_conn_create(fd, &d, KRDMA_TRANSPORT_RC, 0, NULL, &c) ||
	    kt_buf_alloc(fd, d.dev_index, KRDMA_ACCESS_LOCAL_WRITE |
			 KRDMA_ACCESS_REMOTE_WRITE, KF_BUF, &b)) {
		perror("krdma_faults --serve: setup");
		return 1;
	}
	peer.qp_num = req.qp_num;
	peer.psn = req.psn;
	peer.lid = req.lid;
	memcpy(peer.gid, req.gid, 16);
	kt_modify_init(&m, &c, &peer);
	m.flags = KRDMA_CONN_MODIFY_RC_ATTRS;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.min_rnr_timer = req.min_rnr_timer;
	m.access = KRDMA_ACCESS_REMOTE_WRITE;
	if (ioctl(fd, KRDMA_CONN_MODIFY, &m)) {
		perror("krdma_faults --serve: CONN_MODIFY");
		return 1;
	}
	rep.qp_num = c.qp_num;
	rep.psn = c.psn;
	rep.lid = c.lid;
	memcpy(rep.gid, c.gid, 16);
	rep.rkey = b.rkey;
	rep.addr = b.addr;
	if (kf_full(s, &rep, sizeof(rep), true))
		return 1;
	/* no receive, ever: until the client is done */
	while (recv(s, &byte, 1, 0) > 0)
		;
	close(fd);
	return 0;
}

static int kf_serve(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(KF_PORT) };
	int one = 1, l, s;

	if (argc == 4 && !strcmp(argv[2], "--port")) {
		sin.sin_port = htons(atoi(argv[3]));
	} else if (argc != 2) {
		fprintf(stderr, "usage: krdma_faults --serve [--port N]\n");
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);	/* children reaped by the kernel */
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one,
				sizeof(one)) ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 8)) {
		perror("krdma_faults --serve");
		return 1;
	}
	for (;;) {
		s = accept(l, NULL, NULL);
		if (s < 0) {
			if (errno == EINTR)
				continue;
			perror("krdma_faults --serve: accept");
			return 1;
		}
		if (!fork()) {
			close(l);
			_exit(kf_serve_one(s));
		}
		close(s);
	}
}

/* ---- the tests ---- */

static int kf_dial(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	uint64_t end = kt_now_ms() + 30000;
	int s;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -1;
		if (!connect(s, (struct sockaddr *)&sin, sizeof(sin)))
			return s;
		close(s);
		if (kt_now_ms() >= end || errno != ECONNREFUSED)
			return -1;
		sleep(1);
	}
}

/* faults.sh ARGS (netem on the RoCE traffic): its exit status */
static int kf_tc(const char *args)
{
	const char *repo = getenv("KRDMA_REPO");
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "sh %s/selftests/faults.sh %s",
		 repo && *repo ? repo : ".", args);
	return system(cmd);
}

FIXTURE(kf) {
	int fd, sock;
	struct kt_dev dev;
	struct kt_conn conn;
	struct kt_buf buf;
	struct kf_msg srv;
	bool netem;
};

FIXTURE_SETUP(kf)
{
	const char *peer = getenv("PEER_ADDR");
	const char *port = getenv("KF_PORT");

	self->fd = self->sock = -1;
	if (!peer || !*peer)
		SKIP(return, "PEER_ADDR not set (a second VM runs krdma_faults --serve)");
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(kt_dev_pick(self->fd, NULL, &self->dev));
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL,
			     &self->conn);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			   KF_BUF, &self->buf);
	self->sock = kf_dial(peer, port ? atoi(port) : KF_PORT);
	ASSERT_LE(0, self->sock) {
		TH_LOG("%s: %s", peer, strerror(errno));
	}
}

FIXTURE_TEARDOWN(kf)
{
	if (self->netem)
		EXPECT_EQ(0, kf_tc("clear"));
	if (self->sock >= 0)
		close(self->sock);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Connect to the server's QP with these timers; the server NAKs an RNR
 * with @srv_rnr_timer.
 */
static void kf_connect(struct __test_metadata *_metadata,
		       FIXTURE_DATA(kf) *self, uint8_t timeout,
		       uint8_t retry_cnt, uint8_t rnr_retry,
		       uint8_t srv_rnr_timer)
{
	struct kf_msg req = { .magic = KF_MAGIC };
	struct krdma_conn_modify m;
	struct kt_conn peer = {};

	req.qp_num = self->conn.qp_num;
	req.psn = self->conn.psn;
	req.lid = self->conn.lid;
	memcpy(req.gid, self->conn.gid, 16);
	req.min_rnr_timer = srv_rnr_timer;
	ASSERT_OK(kf_full(self->sock, &req, sizeof(req), true));
	ASSERT_OK(kf_full(self->sock, &self->srv, sizeof(self->srv), false));
	ASSERT_EQ((uint32_t)KF_MAGIC, self->srv.magic);
	peer.qp_num = self->srv.qp_num;
	peer.psn = self->srv.psn;
	peer.lid = self->srv.lid;
	memcpy(peer.gid, self->srv.gid, 16);
	kt_modify_init(&m, &self->conn, &peer);
	m.flags = KRDMA_CONN_MODIFY_RC_ATTRS;
	m.timeout = timeout;
	m.retry_cnt = retry_cnt;
	m.rnr_retry = rnr_retry;
	m.min_rnr_timer = 12;
	test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
}

/* Post one WR of @opcode (@len bytes), its completion within KF_WAIT_MS */
static void kf_post_wait(struct __test_metadata *_metadata,
			 FIXTURE_DATA(kf) *self, uint32_t opcode,
			 uint32_t len, uint64_t wr_id, struct krdma_wc *wc,
			 uint64_t *ms)
{
	struct krdma_wr wr;
	uint64_t t0;

	kt_wr_init(&wr, wr_id, opcode, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, self->buf.handle, 0, len);
	if (opcode == KRDMA_OP_RDMA_WRITE) {
		wr.remote_addr = self->srv.addr;
		wr.rkey = self->srv.rkey;
	}
	t0 = kt_now_ms();
	test_cmd_post1(self->conn.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->conn.handle, wc, 1,
			       KF_WAIT_MS)) {
		TH_LOG("no completion in %u ms: the QP hangs", KF_WAIT_MS);
	}
	*ms = kt_now_ms() - t0;
	EXPECT_EQ((__u64)wr_id, (__u64)wc->wr_id);
}

/* After a fatal completion: ERR, and what is posted next flushes. */
static void kf_expect_err_state(struct __test_metadata *_metadata,
				FIXTURE_DATA(kf) *self, uint32_t status)
{
	struct krdma_conn_query q;
	struct krdma_wc wc;
	uint64_t ms;

	ASSERT_OK(kt_conn_query_err(self->fd, self->conn.handle, &q));
	EXPECT_EQ((__u32)KRDMA_CONN_ERR, q.state);
	EXPECT_EQ(status, q.last_wc_status);
	kf_post_wait(_metadata, self, KRDMA_OP_SEND, 64, 9, &wc, &ms);
	EXPECT_EQ((__u32)KT_WC_WR_FLUSH_ERR, wc.status);
}

/* 4.096 us * 2^@exp in microseconds */
static uint64_t kf_ack_us(unsigned int exp)
{
	return (4096ULL << exp) / 1000;
}

/*
 * Every RoCE data packet dropped, both ways (the CM's QP 1 spared): the
 * first WRITE works, the second ends in RETRY_EXC_ERR once retry_cnt
 * retransmissions went unanswered.
 */
KRDMA_TEST_F_TIMEOUT(kf, retry_exc_under_total_loss, 120)
{
	const uint8_t timeout = 12, retry_cnt = 3;
	uint64_t bound_us = (retry_cnt + 1) * kf_ack_us(timeout), ms;
	struct krdma_wc wc;

	kf_connect(_metadata, self, timeout, retry_cnt, 7, 12);
	kf_post_wait(_metadata, self, KRDMA_OP_RDMA_WRITE, 4096, 1, &wc, &ms);
	ASSERT_EQ((__u32)KT_WC_SUCCESS, wc.status);
	self->netem = true;
	ASSERT_EQ(0, kf_tc("netem -d loss 100%"));
	kf_post_wait(_metadata, self, KRDMA_OP_RDMA_WRITE, 4096, 2, &wc, &ms);
	TH_LOG("RDMA WRITE under 100%% loss: status %u after %llu ms; the "
	       "attributes' bound: (retry_cnt %u + 1) x 4.096 us x 2^%u = "
	       "%llu.%03llu ms", wc.status, (unsigned long long)ms,
	       retry_cnt, timeout, (unsigned long long)bound_us / 1000,
	       (unsigned long long)bound_us % 1000);
	ASSERT_EQ((__u32)KT_WC_RETRY_EXC_ERR, wc.status);
	kf_expect_err_state(_metadata, self, KT_WC_RETRY_EXC_ERR);
}

/*
 * The server posts no receive: a SEND is NAKed RNR, retried rnr_retry
 * times after the server's RNR timer, then ends in RNR_RETRY_EXC_ERR.
 */
KRDMA_TEST_F_TIMEOUT(kf, rnr_retry_exc_no_receive, 120)
{
	/* IB_RNR_TIMER_00_64: 0.64 ms */
	const uint8_t rnr_retry = 3, rnr_timer = 12;
	struct krdma_wc wc;
	uint64_t ms;

	kf_connect(_metadata, self, 14, 7, rnr_retry, rnr_timer);
	kf_post_wait(_metadata, self, KRDMA_OP_RDMA_WRITE, 4096, 1, &wc, &ms);
	ASSERT_EQ((__u32)KT_WC_SUCCESS, wc.status);
	kf_post_wait(_metadata, self, KRDMA_OP_SEND, 64, 2, &wc, &ms);
	TH_LOG("SEND to a QP with no receive: status %u after %llu ms; the "
	       "attributes' bound: (rnr_retry %u + 1) x 0.64 ms RNR timer "
	       "(plus a jiffy each in rxe)", wc.status,
	       (unsigned long long)ms, rnr_retry);
	ASSERT_EQ((__u32)KT_WC_RNR_RETRY_EXC_ERR, wc.status);
	kf_expect_err_state(_metadata, self, KT_WC_RNR_RETRY_EXC_ERR);
}

/* main(): the harness, or the server with --serve. */
#define main kf_harness_main
TEST_HARNESS_MAIN
#undef main

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--serve"))
		return kf_serve(argc, argv);
	return kf_harness_main(argc, argv);
}
