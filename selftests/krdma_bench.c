// SPDX-License-Identifier: GPL-2.0
/*
 * KRDMA_BENCH, the in-kernel benchmark loop, and krdmactl bench.  These are
 * not timing tests: every mode must complete with sane figures (non-zero,
 * the iterations asked for, percentiles in order), a signal or an idle
 * timeout must stop a run with everything released and the QP cleanly in
 * the error state, and --validate must catch a corrupted payload.
 */
#define _GNU_SOURCE	/* sched_setaffinity() */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "krdma_test.h"

#define BENCH_SIZE 4096

/* ------------------------------------------------------------------------
 * The ioctl, on a loopback pair of connections in this process: made by
 * hand, or through rdma_cm where that is the only way (iWARP).
 */

FIXTURE(bench)
{
	int fd;
	struct kt_dev dev;
	struct kt_conn a, b;
	struct kt_buf la, lb;
	uint8_t *ma, *mb;
};

static void bench_pattern(uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = krdma_bench_pattern(i);
}

FIXTURE_SETUP(bench)
{
	struct krdma_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64,
				      .max_inline_data = 64 };
	struct krdma_info info;
	const char *why = krdma_unavailable();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	ASSERT_OK(krdma_info_get(self->fd, &info));
	if (!(info.features & KRDMA_FEATURE_BENCH))
		SKIP(return, "KRDMA_BENCH not implemented");
	if (kt_dev_pick(self->fd, NULL, &self->dev))
		SKIP(return, "%s", kt_no_dev());
	if (kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN)) {
		/* where the device connects only through rdma_cm */
		ASSERT_OK(kt_conn_pair_cm(self->fd, &self->dev,
					  KRDMA_TRANSPORT_RC, 0, &caps,
					  &self->a, &self->b));
	} else {
		if (kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_RC, 0,
				   &caps, &self->a) &&
		    errno == EINVAL) {
			caps.max_inline_data = 0;
			ASSERT_OK(kt_conn_create(self->fd, &self->dev,
						 KRDMA_TRANSPORT_RC, 0, &caps,
						 &self->a));
		}
		ASSERT_OK(kt_conn_create(self->fd, &self->dev,
					 KRDMA_TRANSPORT_RC, 0, &caps,
					 &self->b));
		test_cmd_conn_connect(&self->a, &self->b);
		test_cmd_conn_connect(&self->b, &self->a);
	}
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       64 * BENCH_SIZE, &self->la));
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       64 * BENCH_SIZE, &self->lb));
	self->ma = kt_buf_mmap(self->fd, &self->la);
	self->mb = kt_buf_mmap(self->fd, &self->lb);
	ASSERT_NE(NULL, self->ma);
	ASSERT_NE(NULL, self->mb);
	bench_pattern(self->ma, self->la.len);
	bench_pattern(self->mb, self->lb.len);
}

FIXTURE_TEARDOWN(bench)
{
	if (self->ma)
		kt_buf_munmap(self->ma, &self->la);
	if (self->mb)
		kt_buf_munmap(self->mb, &self->lb);
	if (self->fd >= 0)
		close(self->fd);
}

/* A run of @opcode from a to b's buffer, @iters operations. */
static void bench_init(FIXTURE_DATA(bench) *self, struct krdma_bench *b,
		       uint32_t *handle, uint32_t opcode, uint64_t iters)
{
	memset(b, 0, sizeof(*b));
	*handle = self->a.handle;
	b->size = sizeof(*b);
	b->opcode = opcode;
	b->num_conns = 1;
	b->conns_uptr = (uintptr_t)handle;
	b->local_buf = self->la.handle;
	b->msg_size = opcode == KRDMA_OP_ATOMIC_FETCH_ADD ||
		      opcode == KRDMA_OP_ATOMIC_CMP_SWP ? 8 : BENCH_SIZE;
	if (opcode != KRDMA_OP_SEND && opcode != KRDMA_OP_SEND_WITH_IMM) {
		b->remote_addr = self->lb.addr;
		b->remote_length = self->lb.len;
		b->remote_rkey = self->lb.rkey;
	}
	b->tx_depth = 16;
	b->iters = iters;
	b->timeout_ms = 10000;
}

static uint32_t conn_state(int fd, uint32_t handle)
{
	struct krdma_conn_query q;

	if (kt_conn_query(fd, handle, &q))
		return ~0u;
	return q.state;
}

KRDMA_TEST_F(bench, errnos)
{
	uint32_t h[2], bad = 0x7fffff00;
	struct krdma_bench b;

	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.flags = 1u << 31;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RECV, 10);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_MAX + 3, 10);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.num_conns = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	b.num_conns = KRDMA_BENCH_MAX_CONNS + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 0);
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "no length");
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.conns_uptr = (uintptr_t)&bad;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_BENCH, &b));
	b.conns_uptr = 8;
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.local_buf = bad;
	EXPECT_ERRNO(ENOENT, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.msg_size = self->la.len + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_ATOMIC_FETCH_ADD, 10);
	b.msg_size = 4;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.flags = KRDMA_BENCH_NOTIFY;	/* a busy-polled connection */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.tx_depth = self->a.caps.max_send_wr + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	h[1] = h[0];
	b.num_conns = 2;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "twice");
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.flags = KRDMA_BENCH_SERVER;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b));
	b.flags = KRDMA_BENCH_VALIDATE;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b));
	/* nothing above touched the connection */
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h[0]));
}

/*
 * KRDMA_BENCH_CREDITS: SEND alone; a server's remote buffer is its
 * client's control areas, one per connection; a client's buffer ends in
 * them, whole, and its peer may write there.
 */
KRDMA_TEST_F(bench, credits_errnos)
{
	const uint32_t ctl = sizeof(struct krdma_bench_ctl);
	struct kt_buf odd, nw;
	struct krdma_bench b;
	uint32_t h[2];

	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.flags = KRDMA_BENCH_CREDITS;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b), "WRITE");
	bench_init(self, &b, h, KRDMA_OP_SEND_WITH_IMM, 10);
	b.flags = KRDMA_BENCH_CREDITS;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b),
		     "SEND_WITH_IMM");
	bench_init(self, &b, h, KRDMA_OP_SEND, 0);
	b.flags = KRDMA_BENCH_CREDITS | KRDMA_BENCH_SERVER;
	b.remote_addr = self->lb.addr;
	b.remote_rkey = self->lb.rkey;
	b.remote_length = ctl - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "a server's areas short");
	b.remote_length = ctl;
	b.iters = 10;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "a server's iters");
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	b.flags = KRDMA_BENCH_CREDITS;
	b.remote_addr = self->lb.addr;
	b.remote_rkey = self->lb.rkey;
	b.remote_length = ctl;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "a client's remote buffer");
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	b.flags = KRDMA_BENCH_CREDITS;
	b.msg_size = self->la.len - ctl + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "no room for the area");
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       BENCH_SIZE + ctl + 8, &odd));
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	b.flags = KRDMA_BENCH_CREDITS;
	b.local_buf = odd.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "not whole areas");
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index,
			       KRDMA_ACCESS_LOCAL_WRITE, BENCH_SIZE + ctl, &nw));
	b.local_buf = nw.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "no remote write");
	/* nothing above touched the connection */
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h[0]));
}

/* The run's own arguments against its connections and buffers. */
KRDMA_TEST_F(bench, errnos_against_objects)
{
	uint32_t h[2], opcodes[] = { KRDMA_OP_SEND_WITH_INV,
				     KRDMA_OP_LOCAL_INV };
	struct krdma_bench b;
	struct kt_conn fresh;
	struct kt_buf ro;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(opcodes); i++) {
		bench_init(self, &b, h, opcodes[i], 10);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
			     "opcode %u", opcodes[i]);
	}
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.signal_every = b.tx_depth + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
		     "signal_every over tx_depth");
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	b.remote_length = b.msg_size - 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "remote_length");
	bench_init(self, &b, h, KRDMA_OP_ATOMIC_FETCH_ADD, 10);
	b.remote_addr += 4;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "unaligned atomic");
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	b.flags = KRDMA_BENCH_LATENCY;
	h[1] = self->b.handle;
	b.num_conns = 2;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "ping-pong of 2");
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	b.inline_size = self->a.caps.max_inline_data + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "inline_size");
	/* a validated READ reuses no slot while in flight: 8 slots, depth 16 */
	bench_init(self, &b, h, KRDMA_OP_RDMA_READ, 10);
	b.flags = KRDMA_BENCH_VALIDATE;
	b.msg_size = self->la.len / 8;
	b.remote_length = self->lb.len;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "slots < depth");
	/* what the device writes needs a buffer it may write */
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, 0, BENCH_SIZE,
			       &ro));
	bench_init(self, &b, h, KRDMA_OP_RDMA_READ, 10);
	b.local_buf = ro.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "READ into RO");
	/*
	 * a connection that never connected: not in RTS (rdma_cm's pairs,
	 * iWARP's only ones, are all connected)
	 */
	if (kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN)) {
		TH_LOG("%s: no QP in RESET to run on",
		       kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN));
	} else {
		ASSERT_OK(kt_conn_create(self->fd, &self->dev,
					 KRDMA_TRANSPORT_RC, 0, NULL, &fresh));
		bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
		h[0] = fresh.handle;
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
			     "QP in RESET");
	}
	/* UD: SENDs only (bench.ud_errnos has the rest) */
	if (kt_dev_lacks_conn(&self->dev, KRDMA_TRANSPORT_UD)) {
		TH_LOG("%s: no UD READ run",
		       kt_dev_lacks_conn(&self->dev, KRDMA_TRANSPORT_UD));
	} else {
		ASSERT_OK(kt_conn_create(self->fd, &self->dev,
					 KRDMA_TRANSPORT_UD, 0, NULL, &fresh));
		bench_init(self, &b, h, KRDMA_OP_RDMA_READ, 10);
		h[0] = fresh.handle;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b),
			     "UD READ");
	}
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS,
		  conn_state(self->fd, self->a.handle));
}

/*
 * The peer's buffer is a one-sided client's: on a SEND run, or a server's,
 * each of its three fields alone is EINVAL, and the connection is untouched.
 */
KRDMA_TEST_F(bench, remote_fields_one_sided_only)
{
	static const struct {
		uint32_t opcode, flags;
	} runs[] = {
		{ KRDMA_OP_SEND, 0 },
		{ KRDMA_OP_SEND_WITH_IMM, KRDMA_BENCH_LATENCY },
		{ KRDMA_OP_SEND, KRDMA_BENCH_SERVER },
		{ KRDMA_OP_RDMA_WRITE_WITH_IMM, KRDMA_BENCH_SERVER },
	};
	struct krdma_bench b;
	unsigned int i, f;
	uint32_t h;

	for (i = 0; i < ARRAY_SIZE(runs); i++)
		for (f = 0; f < 3; f++) {
			bench_init(self, &b, &h, runs[i].opcode, 10);
			b.flags = runs[i].flags;
			b.remote_addr = b.remote_length = b.remote_rkey = 0;
			if (f == 0)	/* (buffers' addresses start at 0) */
				b.remote_addr = self->lb.addr + 4096;
			else if (f == 1)
				b.remote_length = self->lb.len;
			else
				b.remote_rkey = self->lb.rkey;
			EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b),
				     "opcode %u flags 0x%x, field %u",
				     runs[i].opcode, runs[i].flags, f);
		}
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h));
}

/*
 * A SEND run to a peer that posted no receive.  iWARP has no RNR retry:
 * the peer terminates the connection (siw: a TERMINATE, then the TCP
 * stream closed), and the run ends with EIO on a completion in error,
 * on its connection.  Its wc_status is siw's for a TERMINATE received
 * (LOC_QP_OP_ERR), or 0 when the stream closed first and only flushed the
 * SQ (a flush is no status of its own, see struct krdma_bench).
 * Or, when the QP left RTS before the run's next post, siw refuses that
 * post: ENOTCONN, with no completion in error to name a connection.
 * A SEND completes once TCP has it, before the peer could refuse it, so
 * the run asks for far more than TCP's buffers hold (256 MiB): a few
 * SENDs would all complete first, now and then, and the run succeed.
 */
static void bench_send_unreceived_iwarp(struct __test_metadata *_metadata,
					FIXTURE_DATA(bench) *self,
					struct krdma_bench *b, uint32_t h)
{
	int err;

	b->iters = 65536;
	err = ioctl(self->fd, KRDMA_BENCH, b) ? errno : 0;
	EXPECT_TRUE(err == EIO || err == ENOTCONN) {
		TH_LOG("KRDMA_BENCH: %s", strerror(err));
	}
	EXPECT_TRUE(b->wc_status == KT_WC_SUCCESS ||
		    b->wc_status == KT_WC_LOC_QP_OP_ERR) {
		TH_LOG("wc_status %u", b->wc_status);
	}
	if (err == EIO)
		EXPECT_EQ(h, b->failed_conn);
	EXPECT_GT(65536u, b->ops_done);
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h));
}

/* With the peer's fields 0 a SEND run starts: here no one receives. */
KRDMA_TEST_F(bench, send_run_without_receiver_times_out)
{
	struct krdma_bench b;
	uint32_t h;

	KT_SKIP_RXE_DEFECT(KT_RXE_RNR_SPIN);
	bench_init(self, &b, &h, KRDMA_OP_SEND, 10);
	b.timeout_ms = 500;
	if (kt_dev_iwarp(&self->dev)) {
		/* no RNR retry to outlast: it fails, it does not time out */
		bench_send_unreceived_iwarp(_metadata, self, &b, h);
		return;
	}
	EXPECT_ERRNO(ETIMEDOUT, ioctl(self->fd, KRDMA_BENCH, &b));
}

/* Bandwidth runs of each one-sided opcode: figures as asked, QP usable. */
KRDMA_TEST_F(bench, bandwidth_modes)
{
	static const uint32_t ops[] = { KRDMA_OP_RDMA_WRITE,
		KRDMA_OP_RDMA_READ, KRDMA_OP_ATOMIC_FETCH_ADD,
		KRDMA_OP_ATOMIC_CMP_SWP };
	struct krdma_bench b;
	unsigned int i;
	uint32_t h;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (kt_dev_lacks_op(&self->dev, ops[i])) {
			TH_LOG("%s: opcode %u not run",
			       kt_dev_lacks_op(&self->dev, ops[i]), ops[i]);
			continue;
		}
		bench_init(self, &b, &h, ops[i], 300);
		b.signal_every = 4;
		b.ops_done = 12345;	/* outputs are written whatever */
		b.__reserved_figures[6] = 1;
		ASSERT_EQ(0, ioctl(self->fd, KRDMA_BENCH, &b)) {
			TH_LOG("opcode %u: %s", ops[i], strerror(errno));
		}
		EXPECT_EQ(300u, b.ops_done);
		EXPECT_EQ(300ull * b.msg_size, b.bytes_done);
		EXPECT_LT(0u, b.elapsed_ns);
		EXPECT_LT(0u, b.peak_bps);
		EXPECT_LE(1u, b.post_calls);
		EXPECT_LT(0u, b.cq_polls - b.empty_polls);
		EXPECT_EQ(0u, b.wc_status);
		EXPECT_EQ(0u, b.lat_samples);
		EXPECT_EQ(0u, b.__reserved_figures[6]);
		EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h));
	}
	/* duration mode: ends by itself, every WR reaped */
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 0);
	b.duration_ms = 300;
	b.signal_every = 5;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_LT(0u, b.ops_done);
	EXPECT_EQ(b.ops_done * BENCH_SIZE, b.bytes_done);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h));
}

/* The largest of @n latency samples. */
static uint64_t samples_max(const uint64_t *s, uint64_t n)
{
	uint64_t m = 0, i;

	for (i = 0; i < n; i++)
		if (s[i] > m)
			m = s[i];
	return m;
}

/*
 * Latency mode: one operation at a time, each one's latency a sample the
 * caller gets, in order, no more than it has room for.
 */
KRDMA_TEST_F(bench, latency_samples)
{
	static const uint32_t ops[] = { KRDMA_OP_RDMA_WRITE,
		KRDMA_OP_RDMA_READ, KRDMA_OP_ATOMIC_FETCH_ADD };
	static uint64_t samples[201];
	struct krdma_bench b;
	unsigned int i, k;
	uint32_t h;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (kt_dev_lacks_op(&self->dev, ops[i])) {
			TH_LOG("%s: opcode %u not run",
			       kt_dev_lacks_op(&self->dev, ops[i]), ops[i]);
			continue;
		}
		bench_init(self, &b, &h, ops[i], 200);
		b.flags = KRDMA_BENCH_LATENCY;
		b.tx_depth = 0;
		memset(samples, 0, sizeof(samples));
		b.samples_uptr = (uintptr_t)samples;
		b.max_samples = 201;
		ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
		EXPECT_EQ(200u, b.ops_done);
		EXPECT_EQ(200u, b.lat_samples);
		for (k = 0; k < 200; k++) {
			EXPECT_LT(0u, samples[k]);
			EXPECT_LE(samples[k], b.elapsed_ns);
		}
		EXPECT_EQ(0u, samples[200]);
	}
	/* fewer places than operations: the first ones */
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 200);
	b.flags = KRDMA_BENCH_LATENCY;
	b.tx_depth = 0;
	memset(samples, 0, sizeof(samples));
	b.samples_uptr = (uintptr_t)samples;
	b.max_samples = 50;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(200u, b.ops_done);
	EXPECT_EQ(50u, b.lat_samples);
	EXPECT_LT(0u, samples[49]);
	EXPECT_EQ(0u, samples[50]);
	/* none asked (a caller of the struct's first version): none kept */
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 20);
	b.flags = KRDMA_BENCH_LATENCY;
	b.tx_depth = 0;
	b.size = offsetof(struct krdma_bench, samples_uptr);
	b.samples_uptr = 1;	/* past size: not the kernel's business */
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(20u, b.ops_done);
	EXPECT_EQ(0u, b.lat_samples);
}

/* The samples' array: a latency client's, named whole, writable. */
KRDMA_TEST_F(bench, latency_samples_errnos)
{
	static uint64_t samples[8];
	struct krdma_bench b;
	uint32_t h;

	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 8);
	b.samples_uptr = (uintptr_t)samples;	/* not latency mode */
	b.max_samples = 8;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 8);
	b.flags = KRDMA_BENCH_LATENCY;
	b.tx_depth = 0;
	b.samples_uptr = (uintptr_t)samples;	/* no room said */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	b.samples_uptr = 0;
	b.max_samples = 8;			/* room, no array */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	b.samples_uptr = (uintptr_t)samples;
	b.max_samples = KRDMA_BENCH_MAX_SAMPLES + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	/* an array the kernel cannot write: the run's figures come back */
	b.samples_uptr = 8;
	b.max_samples = 8;
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(8u, b.ops_done);
	EXPECT_EQ(0u, b.lat_samples);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h));
	/* not user memory at all: refused before the run, nothing written */
	b.samples_uptr = ~0ull & ~4095ull;
	b.ops_done = 777;
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(777u, b.ops_done);
}

/* A READ run checks what it read; a spoiled source is caught. */
KRDMA_TEST_F(bench, validate_catches_corruption)
{
	struct krdma_bench b;
	uint32_t h;

	bench_init(self, &b, &h, KRDMA_OP_RDMA_READ, 100);
	b.flags = KRDMA_BENCH_VALIDATE;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(0u, b.validate_errors);
	self->mb[BENCH_SIZE / 2] ^= 0x5a;	/* the source of every READ */
	bench_init(self, &b, &h, KRDMA_OP_RDMA_READ, 100);
	b.flags = KRDMA_BENCH_VALIDATE;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(100u, b.validate_errors);
	/* what is not validated says so */
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 100);
	b.flags = KRDMA_BENCH_VALIDATE;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b));
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A signal stops a long run: EINTR, figures so far, QP cleanly in ERR. */
KRDMA_TEST_F_TIMEOUT(bench, signal_stops_run, 90)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct krdma_bench b;
	struct timespec t0, t1;
	uint32_t h;
	int ret, err;

	sigemptyset(&sa.sa_mask);
	ASSERT_OK(sigaction(SIGALRM, &sa, &old));
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 0);
	b.duration_ms = 60000;
	b.signal_every = 8;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_OK(kt_alarm_repeat(2000));
	ret = ioctl(self->fd, KRDMA_BENCH, &b);
	err = errno;
	kt_alarm_stop();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sigaction(SIGALRM, &old, NULL);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINTR, err);
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 30);
	EXPECT_LT(0u, b.ops_done);
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h));
	/* everything the run held is released: all of it can go */
	EXPECT_OK(kt_destroy(self->fd, self->a.handle));
	EXPECT_OK(kt_destroy(self->fd, self->b.handle));
	EXPECT_OK(kt_destroy(self->fd, self->la.handle));
	EXPECT_OK(kt_destroy(self->fd, self->lb.handle));
}

/*
 * How many kernel threads named krdma_bench/N there are now; the pid of
 * one of them in *@pid, if @pid and there is one.
 */
static int bench_threads_scan(pid_t *pid)
{
	char path[300], comm[32];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "krdma_bench/", 12) && !n++ && pid)
			*pid = atoi(de->d_name);
		fclose(f);
	}
	closedir(d);
	return n;
}

static int bench_threads(void)
{
	return bench_threads_scan(NULL);
}

/*
 * The threads left once a run has returned, given up to 2 s to go: the
 * caller wakes on a thread's last completion, which the thread signals
 * just before it exits (kthread_complete_and_exit()).
 */
static int bench_threads_left(void)
{
	uint64_t end = kt_now_ms() + 2000;
	int n;

	while ((n = bench_threads()) > 0 && kt_now_ms() < end)
		usleep(10 * 1000);
	return n;
}

struct bench_call {
	int fd;
	struct krdma_bench *b;
	int ret, err;
};

static void *bench_call_fn(void *arg)
{
	struct bench_call *c = arg;

	c->ret = ioctl(c->fd, KRDMA_BENCH, c->b);
	c->err = errno;
	return NULL;
}

/* The same, from a thread pinned to the first CPU it may use. */
static void *bench_call_pinned_fn(void *arg)
{
	struct bench_call *c = arg;
	cpu_set_t set, one;

	CPU_ZERO(&one);
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set)) {
				CPU_SET(i, &one);
				break;
			}
	if (sched_setaffinity(0, sizeof(one), &one)) {
		c->ret = -1;
		c->err = errno;
		return NULL;
	}
	return bench_call_fn(arg);
}

/* WRITEs on both connections (a to b, b to a), a thread per CPU. */
static void bench_init_per_cpu(FIXTURE_DATA(bench) *self,
			       struct krdma_bench *b, uint32_t h[2],
			       uint64_t iters)
{
	bench_init(self, b, &h[0], KRDMA_OP_RDMA_WRITE, iters);
	h[1] = self->b.handle;
	b->num_conns = 2;
	b->conns_uptr = (uintptr_t)h;
	b->flags = KRDMA_BENCH_PER_CPU;
}

/*
 * KRDMA_BENCH_PER_CPU: both connections (a writes to b, b to a) each on a
 * thread of its own (the caller's and one kernel thread per other CPU, at
 * most one per connection); the figures are the run's, and the threads
 * are gone when the call returns.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_threads, 90)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct bench_call call = { .fd = self->fd };
	uint32_t h[2];
	struct krdma_bench b;
	int seen = 0;
	pthread_t t;

	ASSERT_LT(0, cpus);
	bench_init_per_cpu(self, &b, h, 400);
	b.signal_every = 4;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(800u, b.ops_done);
	EXPECT_EQ(800ull * BENCH_SIZE, b.bytes_done);
	EXPECT_LT(0u, b.elapsed_ns);
	EXPECT_LT(0u, b.peak_bps);
	EXPECT_LE(2u, b.post_calls);	/* each connection posts its own */
	EXPECT_EQ(0u, b.wc_status);
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h[0]));
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, h[1]));
	EXPECT_EQ(0, bench_threads_left());

	/* while a timed run goes on, its kernel thread is there */
	b.iters = 0;
	b.duration_ms = 3000;
	call.b = &b;
	ASSERT_EQ(0, pthread_create(&t, NULL, bench_call_fn, &call));
	for (int i = 0; i < 20 && !seen; i++) {
		usleep(100 * 1000);
		seen = bench_threads();
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, call.ret) {
		TH_LOG("timed run: %s", strerror(call.err));
	}
	EXPECT_EQ(cpus > 1 ? 1 : 0, seen);
	EXPECT_LT(0u, b.ops_done);
	EXPECT_EQ(0, bench_threads_left());
}

/*
 * The threads go only to CPUs the caller may run on: pinned to one, a
 * per-CPU run makes no kernel thread and still does all its work.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_follows_affinity, 90)
{
	struct bench_call call = { .fd = self->fd };
	struct krdma_bench b;
	uint32_t h[2];
	int seen = 0;
	pthread_t t;

	bench_init_per_cpu(self, &b, h, 0);
	b.duration_ms = 2000;
	call.b = &b;
	/* the calling thread's affinity is what the run follows */
	ASSERT_EQ(0, pthread_create(&t, NULL, bench_call_pinned_fn, &call));
	for (int i = 0; i < 15; i++) {
		usleep(100 * 1000);
		seen += bench_threads();
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, call.ret) {
		TH_LOG("pinned run: %s", strerror(call.err));
	}
	EXPECT_EQ(0, seen);
	EXPECT_LT(0u, b.ops_done);
}

/*
 * A signal to the caller stops the kernel threads too: EINTR, both QPs
 * flushed to the error state, no thread left, everything releasable.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_signal_stops_all, 90)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	uint32_t h[2];
	struct krdma_bench b;
	uint64_t t0;
	int ret, err;

	sigemptyset(&sa.sa_mask);
	ASSERT_OK(sigaction(SIGALRM, &sa, &old));
	bench_init_per_cpu(self, &b, h, 0);
	b.duration_ms = 60000;
	b.signal_every = 8;
	t0 = kt_now_ms();
	ASSERT_OK(kt_alarm_repeat(2000));
	ret = ioctl(self->fd, KRDMA_BENCH, &b);
	err = errno;
	kt_alarm_stop();
	sigaction(SIGALRM, &old, NULL);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINTR, err);
	EXPECT_GT(30000u, kt_now_ms() - t0);
	EXPECT_LT(0u, b.ops_done);
	EXPECT_EQ(0, bench_threads_left());
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h[0]));
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h[1]));
	EXPECT_OK(kt_destroy(self->fd, self->a.handle));
	EXPECT_OK(kt_destroy(self->fd, self->b.handle));
	EXPECT_OK(kt_destroy(self->fd, self->la.handle));
	EXPECT_OK(kt_destroy(self->fd, self->lb.handle));
}

/*
 * A connection destroyed under a kernel thread: the run ends with ENODEV
 * for all its threads, and the other connection is flushed.  On iWARP the
 * destroyed QP's TCP stream closes with it, and the other connection's
 * thread may first see its WRITEs complete in error: EIO, whichever comes
 * first ends the run.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_destroy_ends_run, 90)
{
	struct bench_call call = { .fd = self->fd };
	uint32_t h[2];
	struct krdma_bench b;
	pthread_t t;

	bench_init_per_cpu(self, &b, h, 0);
	b.duration_ms = 60000;
	call.b = &b;
	ASSERT_EQ(0, pthread_create(&t, NULL, bench_call_fn, &call));
	usleep(1000 * 1000);
	/* b's share runs in the kernel thread when there are two CPUs */
	EXPECT_OK(kt_destroy(self->fd, self->b.handle));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-1, call.ret);
	if (kt_dev_iwarp(&self->dev) && call.err == EIO) {
		EXPECT_EQ(h[0], b.failed_conn);
	} else {
		EXPECT_EQ(ENODEV, call.err);
	}
	EXPECT_LT(0u, b.ops_done);
	EXPECT_EQ(0, bench_threads_left());
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h[0]));
	EXPECT_OK(kt_destroy(self->fd, self->a.handle));
}

/* The pid of a kernel thread named krdma_bench/N, or 0. */
static pid_t bench_thread_pid(void)
{
	pid_t pid = 0;

	bench_threads_scan(&pid);
	return pid;
}

#define BENCH_MAX_THREADS "/sys/module/krdma/parameters/bench_max_threads"

/*
 * Every run's kernel threads together are at most bench_max_threads: a
 * per-CPU run past it is EAGAIN, one without threads still runs, and the
 * threads are free again once their run is over.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_threads_capped, 90)
{
	struct krdma_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64 };
	struct bench_call call = { .fd = self->fd };
	struct kt_conn c, d;
	struct krdma_bench b, b2;
	char old[16] = "0";
	uint32_t h[2], h2[2];
	int seen = 0;
	pthread_t t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU: a per-CPU run makes no thread");
	ASSERT_OK(kt_read_file(BENCH_MAX_THREADS, old, sizeof(old)));
	/* by hand, or through rdma_cm where that is the only way (iWARP) */
	ASSERT_OK(kt_conn_pair_any(self->fd, &self->dev, KRDMA_TRANSPORT_RC,
				   0, &caps, &c, &d));
	ASSERT_OK(kt_write_file(BENCH_MAX_THREADS, "1"));

	/* a run holds the one thread allowed */
	bench_init_per_cpu(self, &b, h, 0);
	b.duration_ms = 3000;
	call.b = &b;
	EXPECT_EQ(0, pthread_create(&t, NULL, bench_call_fn, &call));
	for (int i = 0; i < 20 && !seen; i++) {
		usleep(100 * 1000);
		seen = bench_threads();
	}
	EXPECT_EQ(1, seen);
	/* another per-CPU run: no thread left for it */
	bench_init_per_cpu(self, &b2, h2, 100);
	h2[0] = c.handle;
	h2[1] = d.handle;
	EXPECT_ERRNO(EAGAIN, ioctl(self->fd, KRDMA_BENCH, &b2));
	/* one in the caller's thread alone runs */
	b2.flags = 0;
	b2.num_conns = 1;
	EXPECT_OK(ioctl(self->fd, KRDMA_BENCH, &b2));
	EXPECT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, call.ret);
	/* over: its thread is free again */
	EXPECT_EQ(0, bench_threads_left());
	b2.flags = KRDMA_BENCH_PER_CPU;
	b2.num_conns = 2;
	EXPECT_OK(ioctl(self->fd, KRDMA_BENCH, &b2));
	EXPECT_OK(kt_write_file(BENCH_MAX_THREADS, old));
}

#define CG_NAME "krdma-bench-test"

/* Field @n (1: pid) of /proc/@pid/stat, or -1. */
static long long proc_stat_field(pid_t pid, int n)
{
	char path[64], buf[1024], *p;
	long long v = -1;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (kt_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');	/* the comm may hold spaces */
	if (!p)
		return -1;
	for (i = 2; i < n && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoll(p + 1, NULL, 10);
	return v;
}

/*
 * The caller: in cgroup @cg at nice 5, without CAP_SYS_ADMIN, a per-CPU
 * run of 2 s.  0 if it ran, 2 if it was refused (EPERM), else 1.
 */
static int charged_caller(FIXTURE_DATA(bench) *self, const char *cg)
{
	char path[640];
	struct krdma_bench b;
	uint32_t h[2];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (kt_write_file(path, "0") || setpriority(PRIO_PROCESS, 0, 5) ||
	    kt_drop_cap(21 /* CAP_SYS_ADMIN */))
		return 1;
	bench_init_per_cpu(self, &b, h, 0);
	b.duration_ms = 2000;
	if (ioctl(self->fd, KRDMA_BENCH, &b))
		return errno == EPERM ? 2 : 1;
	return b.ops_done ? 0 : 1;
}

/* Does /proc/@pid/cgroup name @cg_name (in the v2 hierarchy)? */
static bool in_cgroup2(pid_t pid, const char *cg_name)
{
	char path[64], want[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	snprintf(want, sizeof(want), "0::/%s\n", cg_name);
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = !strcmp(line, want);
	if (f)
		fclose(f);
	return found;
}

/*
 * The kernel threads of a per-CPU run are the caller's CPU time: in its
 * cgroup, at its nice, held to its cgroup's cpu.max (20 % here), and the
 * run still completes.  Where a kernel thread would escape cpu.max (5.10
 * puts it in no cgroup v2 cgroup; from 6.18 cpu.max throttles no kernel
 * thread), a caller without CAP_SYS_ADMIN is refused instead.  The thread
 * is watched from outside the cgroup, whose quota the run's polling
 * takes.
 */
KRDMA_TEST_F_TIMEOUT(bench, per_cpu_threads_charged_to_caller, 90)
{
	char root[256], cg[512], path[600];
	long long ticks = -1, nice = -1;
	pid_t caller, thread = 0;
	bool in_cg = false;
	int status = -1;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU: a per-CPU run makes no thread");
	if (kt_cgroup2_root(root, sizeof(root), "cpu"))
		SKIP(return, "no cgroup v2 with the cpu controller");
	snprintf(cg, sizeof(cg), "%s/%s", root, CG_NAME);
	ASSERT_TRUE(!mkdir(cg, 0755) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/cpu.max", cg);
	ASSERT_OK(kt_write_file(path, "20000 100000"));
	caller = fork();
	ASSERT_LE(0, caller);
	if (!caller)
		_exit(charged_caller(self, cg));
	/* its set-up runs at the quota too: wait for the thread or the end */
	for (int i = 0; i < 300 && !thread; i++) {
		usleep(100 * 1000);
		thread = bench_thread_pid();
		if (!thread && waitpid(caller, &status, WNOHANG) == caller)
			break;
	}
	if (thread) {
		in_cg = in_cgroup2(thread, CG_NAME);
		nice = proc_stat_field(thread, 19);
		usleep(1500 * 1000);
		/* utime + stime, near the end of the run */
		ticks = proc_stat_field(thread, 14) + proc_stat_field(thread, 15);
	}
	if (status == -1)
		ASSERT_EQ(caller, waitpid(caller, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (kt_kernel_before(6, 1) || !kt_kernel_before(6, 18)) {
		/* the thread would escape cpu.max: refused */
		EXPECT_EQ(2, WEXITSTATUS(status));
	} else {
		EXPECT_EQ(0, WEXITSTATUS(status));
		EXPECT_NE(0, thread);
		EXPECT_TRUE(in_cg);
		EXPECT_EQ(5, nice);
		/* 20 % of ~1.7 s, with room for the ticks' coarseness */
		EXPECT_GE(600, ticks * 1000 / sysconf(_SC_CLK_TCK));
	}
	EXPECT_EQ(0, bench_threads_left());
	for (int i = 0; i < 50 && rmdir(cg); i++)
		usleep(100 * 1000);
}

static int post_one(int fd, uint32_t conn, struct krdma_wr *wr)
{
	struct krdma_post p = { .size = sizeof(p), .handle = conn,
				.num_wrs = 1, .wr_entry_size = sizeof(*wr),
				.wrs_uptr = (uintptr_t)wr };

	return ioctl(fd, KRDMA_POST, &p);
}

/* A POLL of one completion at most, without waiting: 0, or -1/errno. */
static int bench_poll_now(int fd, uint32_t conn)
{
	struct krdma_wc wc;
	struct krdma_poll q = { .size = sizeof(q), .handle = conn,
				.num_wcs = 1, .wc_entry_size = sizeof(wc),
				.wcs_uptr = (uintptr_t)&wc };

	return ioctl(fd, KRDMA_POLL, &q);
}

/*
 * While a run has a connection, its CQ's completions are the run's: POST,
 * POLL and a second run on it are EBUSY, and it is usable again after.
 */
KRDMA_TEST_F_TIMEOUT(bench, conn_busy_during_run, 90)
{
	struct bench_call call = { .fd = self->fd };
	struct krdma_wr wr = { .opcode = KRDMA_OP_RDMA_WRITE };
	struct krdma_bench b, b2;
	struct krdma_wc wc;
	uint32_t h, h2;
	bool busy = false;
	pthread_t t;

	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 0);
	/* long enough for the checks below, should the guest stall a while */
	b.duration_ms = 10000;
	call.b = &b;
	ASSERT_EQ(0, pthread_create(&t, NULL, bench_call_fn, &call));
	/* until the run has the connection (it ends after 10 s) */
	while (!busy && pthread_tryjoin_np(t, NULL) == EBUSY) {
		if (bench_poll_now(self->fd, self->a.handle) && errno == EBUSY)
			busy = true;
		else
			usleep(10 * 1000);
	}
	ASSERT_TRUE(busy) {
		TH_LOG("POLL never saw the run: %s", strerror(call.err));
	}
	wr.sge[0].buf_handle = self->la.handle;
	wr.sge[0].length = 8;
	wr.num_sge = 1;
	wr.remote_addr = self->lb.addr;
	wr.rkey = self->lb.rkey;
	EXPECT_ERRNO(EBUSY, post_one(self->fd, self->a.handle, &wr));
	bench_init(self, &b2, &h2, KRDMA_OP_RDMA_WRITE, 10);
	EXPECT_ERRNO(EBUSY, ioctl(self->fd, KRDMA_BENCH, &b2));
	/* the other end is not the run's */
	EXPECT_OK(bench_poll_now(self->fd, self->b.handle));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, call.ret) {
		TH_LOG("the run: %s", strerror(call.err));
	}
	EXPECT_LT(0u, b.ops_done);
	/* the run ended: the connection is the caller's again */
	EXPECT_OK(bench_poll_now(self->fd, self->a.handle));
	wr.flags = KRDMA_WR_SIGNALED;
	EXPECT_OK(post_one(self->fd, self->a.handle, &wr));
	EXPECT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, 5000));
	EXPECT_EQ(0u, wc.status);
	/* with its completion reaped, another run works */
	bench_init(self, &b2, &h2, KRDMA_OP_RDMA_WRITE, 10);
	EXPECT_OK(ioctl(self->fd, KRDMA_BENCH, &b2));
}

struct bench_poller {
	int fd;
	uint32_t conn;
	int started;
	pid_t tid;
	int ret, err;
	struct krdma_wc wc;
};

/*
 * System time thread @tid of this process has had, in clock ticks (stime,
 * the 15th field of /proc/PID/task/TID/stat, the 13th after the name), or
 * -1.
 */
static long bench_stime(pid_t tid)
{
	char path[64], buf[512] = "";
	const char *p;
	long stime;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (kt_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%*u %ld", &stime) != 1)
		return -1;
	return stime;
}

static void *bench_poller_fn(void *arg)
{
	struct bench_poller *p = arg;
	struct krdma_poll q = { .size = sizeof(q), .handle = p->conn,
				.num_wcs = 1, .wc_entry_size = sizeof(p->wc),
				.timeout_ms = 20000,
				.wcs_uptr = (uintptr_t)&p->wc };

	p->tid = syscall(SYS_gettid);
	__atomic_store_n(&p->started, 1, __ATOMIC_RELEASE);
	p->ret = ioctl(p->fd, KRDMA_POLL, &q);
	p->err = errno;
	if (!p->ret)
		p->ret = q.num_wcs;
	return NULL;
}

/*
 * A POLL already waiting on the connection when a run takes it ends with
 * EBUSY rather than reaping the run's completions.
 */
KRDMA_TEST_F_TIMEOUT(bench, waiting_poll_yields_to_run, 90)
{
	struct bench_poller p = { .fd = self->fd, .conn = self->a.handle };
	struct krdma_bench b;
	pthread_t t;
	uint32_t h;
	int i;

	ASSERT_EQ(0, pthread_create(&t, NULL, bench_poller_fn, &p));
	/*
	 * In its wait, which on a busy-polled CQ spins in the kernel: 100 ms
	 * of system time, which nothing but the POLL gives that thread
	 */
	while (!__atomic_load_n(&p.started, __ATOMIC_ACQUIRE))
		usleep(10 * 1000);
	for (i = 0; i < 1000 && bench_stime(p.tid) < 10; i++)
		usleep(10 * 1000);
	ASSERT_GT(1000, i) {
		TH_LOG("the poller was never seen in its POLL: stime %ld",
		       bench_stime(p.tid));
	}
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 0);
	b.duration_ms = 3000;
	EXPECT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_LT(0u, b.ops_done);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-1, p.ret) {
		TH_LOG("the POLL returned %d completion(s), wr_id 0x%llx",
		       p.ret, (unsigned long long)p.wc.wr_id);
	}
	EXPECT_EQ(EBUSY, p.err);
}

/*
 * A completion of a WR the run did not post (here, one posted before it)
 * ends the run with EBUSY.  Its wr_id must not be taken for the run's count
 * of sends: 2^31 completed would make room for 2^31 more in a chain built
 * for 16.
 */
KRDMA_TEST_F(bench, foreign_completion_ends_run)
{
	struct krdma_wr wr = {
		.wr_id = 1ull << 31,
		.opcode = KRDMA_OP_RDMA_WRITE,
		.flags = KRDMA_WR_SIGNALED,
		.num_sge = 1,
	};
	struct krdma_bench b;
	uint32_t h;

	wr.sge[0].buf_handle = self->la.handle;
	wr.sge[0].length = 8;
	wr.remote_addr = self->lb.addr;
	wr.rkey = self->lb.rkey;
	ASSERT_OK(post_one(self->fd, self->a.handle, &wr));
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 1000);
	EXPECT_ERRNO(EBUSY, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_GT(1000u, b.ops_done);
	/* as after any failed run: flushed, in the error state */
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h));
	EXPECT_OK(bench_poll_now(self->fd, h));
}

/*
 * A completion in error ends the run with EIO: its status and connection
 * said, the connection in ERR with the status its query gives too.
 */
KRDMA_TEST_F(bench, remote_error_ends_run)
{
	struct krdma_conn_query q;
	struct krdma_bench b;
	uint32_t h;

	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	bench_init(self, &b, &h, KRDMA_OP_RDMA_WRITE, 100);
	b.remote_rkey ^= 0x80;	/* the key byte of a valid index */
	EXPECT_ERRNO(EIO, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, b.wc_status);
	EXPECT_EQ(h, b.failed_conn);
	EXPECT_GT(100u, b.ops_done);
	ASSERT_OK(kt_conn_query(self->fd, h, &q));
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, q.state);
	EXPECT_EQ((uint32_t)KT_WC_REM_ACCESS_ERR, q.last_wc_status);
	/* the target untouched: still the pattern */
	EXPECT_EQ(krdma_bench_pattern(0), self->mb[0]);
	EXPECT_EQ(krdma_bench_pattern(BENCH_SIZE - 1),
		  self->mb[BENCH_SIZE - 1]);
	EXPECT_OK(bench_poll_now(self->fd, h));
}

/* A server's receives must be its own: not a connection on an SRQ. */
KRDMA_TEST_F(bench, server_srq_refused)
{
	struct krdma_srq_create sc = { .size = sizeof(sc),
				       .dev_index = self->dev.dev_index };
	struct krdma_info info;
	struct kt_conn c, d;
	struct krdma_bench s;
	uint32_t h;

	ASSERT_OK(krdma_info_get(self->fd, &info));
	if (!(info.features & KRDMA_FEATURE_SRQ) || !self->dev.info.max_srq)
		SKIP(return, "no SRQs");
	ASSERT_OK(ioctl(self->fd, KRDMA_SRQ_CREATE, &sc));
	if (kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN)) {
		/* iWARP: the accepted end c receives from the SRQ */
		ASSERT_OK(kt_conn_pair_cm_srq(self->fd, &self->dev,
					      KRDMA_TRANSPORT_RC, 0, sc.handle,
					      NULL, &d, &c));
	} else {
		ASSERT_OK(kt_conn_create_srq(self->fd, &self->dev,
					     KRDMA_TRANSPORT_RC, KRDMA_CONN_SRQ,
					     sc.handle, NULL, &c));
		ASSERT_OK(kt_conn_create(self->fd, &self->dev,
					 KRDMA_TRANSPORT_RC, 0, NULL, &d));
		test_cmd_conn_connect(&c, &d);
		test_cmd_conn_connect(&d, &c);
	}
	bench_init(self, &s, &h, KRDMA_OP_SEND, 0);
	h = c.handle;
	s.flags = KRDMA_BENCH_SERVER;
	s.local_buf = self->lb.handle;
	s.tx_depth = 0;
	s.timeout_ms = 500;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &s));
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, d.handle));
	EXPECT_OK(kt_destroy(self->fd, sc.handle));
}

/* SENDs nobody receives: the run gives up after timeout_ms. */
KRDMA_TEST_F(bench, idle_timeout)
{
	struct krdma_bench b;
	uint32_t h;

	KT_SKIP_RXE_DEFECT(KT_RXE_RNR_SPIN);
	bench_init(self, &b, &h, KRDMA_OP_SEND, 10);
	b.timeout_ms = 500;
	if (kt_dev_iwarp(&self->dev)) {
		/* nothing waits on an RNR NAK: the peer ends the connection */
		bench_send_unreceived_iwarp(_metadata, self, &b, h);
		return;
	}
	EXPECT_ERRNO(ETIMEDOUT, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(0u, b.ops_done);
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, h));
}

/*
 * A SEND server run of 256-byte messages into lb, 4 receives posted, on
 * *@conn, @flags besides KRDMA_BENCH_SERVER, in a child process; it exits
 * 0 if the run took @ops messages of which @bad failed the check.
 */
static pid_t bench_fork_server(FIXTURE_DATA(bench) *self, uint32_t *conn,
			       uint32_t flags, uint64_t iters, uint64_t ops,
			       uint64_t bad, uint32_t timeout_ms)
{
	struct krdma_bench s;
	uint32_t handle = *conn;
	pid_t pid;

	bench_init(self, &s, conn, KRDMA_OP_SEND, iters);
	*conn = handle;
	s.timeout_ms = timeout_ms;
	s.flags = KRDMA_BENCH_SERVER | flags;
	s.local_buf = self->lb.handle;
	s.msg_size = 256;
	s.tx_depth = 4;
	pid = fork();
	if (!pid)
		_exit(ioctl(self->fd, KRDMA_BENCH, &s) ? 1 :
		      s.ops_done == ops && s.validate_errors == bad ? 0 : 2);
	return pid;
}

/* A server run: b receives and echoes what a sends, in two processes. */
KRDMA_TEST_F(bench, server_pingpong)
{
	struct krdma_wc wc;
	struct krdma_poll q = { .size = sizeof(q), .num_wcs = 1,
				.wc_entry_size = sizeof(wc),
				.timeout_ms = 10000,
				.wcs_uptr = (uintptr_t)&wc };
	static uint64_t samples[100];
	struct krdma_wr wr = {};
	struct krdma_bench b;
	uint32_t ha, hb = self->b.handle;
	pid_t pid;
	int status, i;

	/* the bench handshake's READY and END are SEND_WITH_IMMs */
	KT_NEED(&self->dev, KT_CAP_IMM);
	/* not validating (the CLI tests cover that): it still answers END */
	pid = bench_fork_server(self, &hb, KRDMA_BENCH_LATENCY, 0, 100, 0,
				10000);
	ASSERT_LE(0, pid);
	/* the READY message */
	wr.opcode = KRDMA_OP_RECV;
	ASSERT_OK(post_one(self->fd, self->a.handle, &wr));
	q.handle = self->a.handle;
	ASSERT_OK(ioctl(self->fd, KRDMA_POLL, &q));
	ASSERT_EQ(1u, q.num_wcs);
	EXPECT_EQ(KRDMA_BENCH_READY_IMM, wc.imm_data);
	bench_init(self, &b, &ha, KRDMA_OP_SEND, 100);
	b.flags = KRDMA_BENCH_LATENCY | KRDMA_BENCH_VALIDATE;
	b.msg_size = 256;
	b.tx_depth = 0;
	b.samples_uptr = (uintptr_t)samples;
	b.max_samples = 100;
	ASSERT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(100u, b.ops_done);
	EXPECT_EQ(100u, b.lat_samples);
	EXPECT_EQ(0u, b.validate_errors);
	EXPECT_LT(0u, samples_max(samples, 100));
	/* the server answers END (with its count of bad payloads, 0 here) */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = KRDMA_OP_RECV;
	ASSERT_OK(post_one(self->fd, self->a.handle, &wr));
	memset(&wr, 0, sizeof(wr));
	wr.opcode = KRDMA_OP_SEND_WITH_IMM;
	wr.flags = KRDMA_WR_SIGNALED;
	wr.imm_data = KRDMA_BENCH_END_IMM;
	ASSERT_OK(post_one(self->fd, self->a.handle, &wr));
	for (i = 0; i < 2; i++) {
		q.num_wcs = 1;
		ASSERT_OK(ioctl(self->fd, KRDMA_POLL, &q));
		ASSERT_EQ(1u, q.num_wcs);
		ASSERT_EQ(0u, wc.status);
		if (wc.opcode == KRDMA_OP_RECV)
			break;
	}
	ASSERT_GT(2, i);
	EXPECT_EQ(7u, wc.wr_id);
	EXPECT_EQ(KT_WC_WITH_IMM, wc.wc_flags & KT_WC_WITH_IMM);
	EXPECT_EQ(0u, wc.imm_data);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* a server run ends with its QP in ERR, its receives flushed */
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, conn_state(self->fd, hb));
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, ha));
}

/* Two manual UD connections, RTS; @recv_sge: the first one's SGEs. */
static void bench_ud_pair(FIXTURE_DATA(bench) *self, uint32_t recv_sge,
			  struct kt_conn *u, struct kt_conn *c,
			  struct __test_metadata *_metadata)
{
	struct krdma_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64,
				      .max_recv_sge = recv_sge };

	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UD, 0,
				 &caps, u));
	caps.max_recv_sge = 1;
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UD, 0,
				 &caps, c));
	test_cmd_conn_connect(u, NULL);
	test_cmd_conn_connect(c, NULL);
}

/* What a UD run needs of its connections and buffer, one by one. */
KRDMA_TEST_F(bench, ud_errnos)
{
	struct krdma_conn_query q;
	struct kt_conn u, c, u1;
	struct krdma_bench b;
	struct kt_buf small;
	uint32_t h[2];

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	bench_ud_pair(self, 2, &u, &c, _metadata);
	ASSERT_OK(kt_conn_query(self->fd, u.handle, &q));
	ASSERT_LT(0u, q.path_mtu);
	/* a client sends where the CM resolved: a manual connection has no peer */
	bench_init(self, &b, h, KRDMA_OP_SEND, 10);
	h[0] = u.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b));
	/* UD has SEND and SEND_WITH_IMM only */
	bench_init(self, &b, h, KRDMA_OP_RDMA_WRITE, 10);
	h[0] = u.handle;
	EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_BENCH, &b));
	/* a server: one packet a message; two receive SGEs; UD alone */
	bench_init(self, &b, h, KRDMA_OP_SEND, 0);
	b.flags = KRDMA_BENCH_SERVER;
	h[0] = u.handle;
	b.msg_size = q.path_mtu + 1;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "over the MTU");
	b.msg_size = 64;
	h[0] = c.handle;	/* max_recv_sge 1 */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "one SGE");
	h[0] = self->b.handle;
	h[1] = u.handle;
	b.num_conns = 2;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "RC, UD");
	h[0] = u.handle;
	h[1] = self->b.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "UD, RC");
	/* the buffer's last KRDMA_GRH_LEN bytes are the GRHs' */
	ASSERT_OK(kt_buf_alloc(self->fd, self->dev.dev_index, KT_ACCESS_ALL,
			       64, &small));
	b.num_conns = 1;
	b.local_buf = small.handle;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_BENCH, &b), "no GRH room");
	EXPECT_EQ((uint32_t)KRDMA_CONN_RTS, conn_state(self->fd, u.handle));
	/* with room for both, the run starts, and waits for a hello */
	b.msg_size = 64 - KRDMA_GRH_LEN;
	b.timeout_ms = 300;
	EXPECT_ERRNO(ETIMEDOUT, ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(0u, b.ops_done);
	/* a connection whose receive queue holds one SGE a WR */
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UD, 0,
				 NULL, &u1));
	EXPECT_EQ(1u, u1.caps.max_recv_sge);
	EXPECT_OK(kt_destroy(self->fd, u1.handle));
	EXPECT_OK(kt_destroy(self->fd, small.handle));
	EXPECT_OK(kt_destroy(self->fd, u.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
}

/* UD c: a receive of a zero-length message (the GRH) at @off of la. */
static int bench_ud_grh_recv(FIXTURE_DATA(bench) *self, uint32_t conn,
			     uint64_t wr_id)
{
	struct krdma_wr wr;

	kt_wr_init(&wr, wr_id, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, self->la.handle, self->la.len - KRDMA_GRH_LEN,
		  KRDMA_GRH_LEN);
	return kt_post1(self->fd, conn, &wr);
}

/* UD c: a SEND(_WITH_IMM) of @len bytes at @off of la to @u, by @ah. */
static int bench_ud_send(FIXTURE_DATA(bench) *self, uint32_t conn,
			 uint32_t ah, const struct kt_conn *u, uint32_t opcode,
			 uint32_t imm, uint64_t off, uint32_t len)
{
	struct krdma_wr wr;

	kt_wr_init(&wr, 1, opcode, KRDMA_WR_SIGNALED);
	if (len)
		kt_wr_sge(&wr, self->la.handle, off, len);
	wr.imm_data = opcode == KRDMA_OP_SEND_WITH_IMM ? imm : 0;
	wr.ah_handle = ah;
	wr.remote_qpn = u->qp_num;
	return kt_post1(self->fd, conn, &wr);
}

/*
 * The next completion of a receive on @conn (sends' passed over), or -1
 * if it failed or none came within @timeout_ms.
 */
static int bench_recv_wc(int fd, uint32_t conn, uint32_t timeout_ms,
			    struct krdma_wc *wc)
{
	int i;

	for (i = 0; i < 8; i++) {
		if (kt_poll(fd, conn, wc, 1, timeout_ms) != 1)
			return -1;
		if (wc->opcode == KRDMA_OP_RECV)
			return wc->status ? -1 : 0;
	}
	return -1;
}

/*
 * UD c: hello every 200 ms until the server answers (the first ones may
 * find no receive), for 20 s; the answer in @wc (wr_id 5).
 */
static int bench_ud_hello(FIXTURE_DATA(bench) *self, uint32_t conn,
			  uint32_t ah, const struct kt_conn *u,
			  struct krdma_wc *wc)
{
	int tries;

	if (bench_ud_grh_recv(self, conn, 5))
		return -1;
	for (tries = 0; tries < 100; tries++) {
		if (bench_ud_send(self, conn, ah, u, KRDMA_OP_SEND_WITH_IMM,
				  KRDMA_BENCH_READY_IMM, 0, 0))
			return -1;
		if (!bench_recv_wc(self->fd, conn, 200, wc))
			return 0;
	}
	return -1;
}

/* UD c: the end message, and the server's report (its imm_data), or -1. */
static int64_t bench_ud_end(FIXTURE_DATA(bench) *self, uint32_t conn,
			    uint32_t ah, const struct kt_conn *u)
{
	struct krdma_wc wc;

	if (bench_ud_grh_recv(self, conn, 6) ||
	    bench_ud_send(self, conn, ah, u, KRDMA_OP_SEND_WITH_IMM,
			  KRDMA_BENCH_END_IMM, 0, 0) ||
	    bench_recv_wc(self->fd, conn, 10000, &wc) || wc.wr_id != 6 ||
	    !(wc.wc_flags & KT_WC_WITH_IMM))
		return -1;
	return wc.imm_data;
}

/*
 * A UD server run, driven by hand over manual connections: it learns the
 * client from its hello (it has no CM peer) and answers it, takes repeated
 * hellos without losing receives for payloads (4 kept posted), checks each
 * payload after the GRH, reports once done with its @iters (a report the
 * client has no receive for, lost) and again for each end message.
 */
KRDMA_TEST_F_TIMEOUT(bench, ud_server_learns_peer, 90)
{
	struct krdma_conn_query q;
	struct kt_conn u, c;
	struct krdma_wc wc;
	uint32_t hs, ah, i;
	int status;
	pid_t pid;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	bench_ud_pair(self, 2, &u, &c, _metadata);
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah));
	hs = u.handle;
	pid = bench_fork_server(self, &hs, KRDMA_BENCH_VALIDATE, 20, 20, 1,
				10000);
	ASSERT_LE(0, pid);
	ASSERT_OK(bench_ud_hello(self, c.handle, ah, &u, &wc));
	EXPECT_EQ(5u, wc.wr_id);
	EXPECT_EQ(KRDMA_BENCH_READY_IMM, wc.imm_data);
	EXPECT_EQ((uint32_t)KRDMA_GRH_LEN, wc.byte_len);
	EXPECT_EQ(KT_WC_GRH, wc.wc_flags & KT_WC_GRH);
	/*
	 * Three more hellos: each is answered (the first payload has not
	 * come), and takes a receive, which the server replaces
	 */
	for (i = 0; i < 3; i++) {
		ASSERT_OK(bench_ud_grh_recv(self, c.handle, 7));
		ASSERT_OK(bench_ud_send(self, c.handle, ah, &u,
					KRDMA_OP_SEND_WITH_IMM,
					KRDMA_BENCH_READY_IMM, 0, 0));
		ASSERT_OK(bench_recv_wc(self->fd, c.handle, 5000, &wc));
		EXPECT_EQ(KRDMA_BENCH_READY_IMM, wc.imm_data);
	}
	/* 20 payloads from the pattern; the 6th starts one byte off it */
	for (i = 0; i < 20; i++) {
		ASSERT_OK(bench_ud_send(self, c.handle, ah, &u, KRDMA_OP_SEND,
					0, i == 5, 256));
		ASSERT_EQ(1, kt_poll(self->fd, c.handle, &wc, 1, 5000));
		ASSERT_EQ(0u, wc.status);
		/*
		 * the server, 4 receives posted, has 4 of these gaps to
		 * repost each one: time a loaded machine may need
		 */
		usleep(25 * 1000);
	}
	/* the report at 20 found no receive; each end message gets one */
	EXPECT_EQ(1, bench_ud_end(self, c.handle, ah, &u));
	EXPECT_EQ(1, bench_ud_end(self, c.handle, ah, &u));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* the server's connection now names the client */
	ASSERT_OK(kt_conn_query(self->fd, u.handle, &q));
	EXPECT_EQ(c.qp_num, q.dest_qp_num);
	EXPECT_EQ((uint32_t)KRDMA_CONN_ERR, q.state);
	EXPECT_OK(kt_destroy(self->fd, u.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, ah));
}

/*
 * The server end of a UC ping-pong, by hand on @conn, its receives posted:
 * echo @n pings of 8 bytes, the one numbered @late (from 0) after a READY,
 * as a UC server answers a hello repeated after the one it answered first.
 * The client has its next reply's receive posted by then (after 50 ms),
 * which the READY takes.  The last reply comes 300 ms late: a client that
 * took the READY for a reply is done before it.  Returns 0 if every ping
 * came.
 */
static int bench_echo_late_ready(FIXTURE_DATA(bench) *self, uint32_t conn,
				 unsigned int n, unsigned int late)
{
	struct krdma_wr wr;
	struct krdma_wc wc;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (bench_recv_wc(self->fd, conn, 5000, &wc))
			return 1;
		if (i == late) {
			usleep(50 * 1000);
			kt_wr_init(&wr, 1, KRDMA_OP_SEND_WITH_IMM,
				   KRDMA_WR_SIGNALED);
			wr.imm_data = KRDMA_BENCH_READY_IMM;
			if (kt_post1(self->fd, conn, &wr))
				return 2;
		}
		if (i == n - 1)
			usleep(300 * 1000);
		kt_wr_init(&wr, 2, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, self->lb.handle, 0, 8);
		if (kt_post1(self->fd, conn, &wr))
			return 2;
	}
	return 0;
}

/*
 * A ping-pong client over UC passes over a late READY that takes the
 * receive it posted for a reply, and keeps one posted for each reply:
 * all 20 pings are answered, none counted twice.
 */
KRDMA_TEST_F_TIMEOUT(bench, pingpong_client_late_ready, 60)
{
	struct krdma_qp_caps caps = { .max_send_wr = 32, .max_recv_wr = 32 };
	static uint64_t samples[20];
	struct kt_conn c, u;
	struct krdma_bench b;
	struct krdma_wr wr;
	uint32_t h, i;
	int status;
	pid_t pid;

	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_UC);
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UC, 0,
				 &caps, &c));
	ASSERT_OK(kt_conn_create(self->fd, &self->dev, KRDMA_TRANSPORT_UC, 0,
				 &caps, &u));
	test_cmd_conn_connect(&c, &u);
	test_cmd_conn_connect(&u, &c);
	/* the server's receives, before the first ping (UC drops it else) */
	for (i = 0; i < 20; i++) {
		kt_wr_init(&wr, 10 + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&wr, self->lb.handle, 0, 256);
		ASSERT_OK(kt_post1(self->fd, u.handle, &wr));
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(bench_echo_late_ready(self, u.handle, 20, 5));
	bench_init(self, &b, &h, KRDMA_OP_SEND, 20);
	h = c.handle;
	b.flags = KRDMA_BENCH_LATENCY;
	b.msg_size = 8;
	b.tx_depth = 0;
	b.samples_uptr = (uintptr_t)samples;
	b.max_samples = 20;
	EXPECT_OK(ioctl(self->fd, KRDMA_BENCH, &b));
	EXPECT_EQ(20u, b.ops_done);
	EXPECT_EQ(20u, b.lat_samples);
	/* it waited for the last, late reply: half its round trip */
	EXPECT_LE(150ull * 1000 * 1000,
		  (unsigned long long)samples_max(samples, 20));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, u.handle));
}

/*
 * A UD server run with a short idle timeout (1 s): it waits after its
 * report for repeated end messages, within that timeout, and ends well.
 */
KRDMA_TEST_F_TIMEOUT(bench, ud_server_short_timeout, 60)
{
	struct kt_conn u, c;
	struct krdma_wc wc;
	uint32_t hs, ah;
	int status;
	pid_t pid;

	KT_NEED_TRANSPORT(&self->dev, KRDMA_TRANSPORT_UD);
	bench_ud_pair(self, 2, &u, &c, _metadata);
	ASSERT_OK(kt_ah_create(self->fd, c.handle, self->dev.gid, &ah));
	hs = u.handle;
	pid = bench_fork_server(self, &hs, 0, 0, 0, 0, 1000);
	ASSERT_LE(0, pid);
	ASSERT_OK(bench_ud_hello(self, c.handle, ah, &u, &wc));
	EXPECT_EQ(KRDMA_BENCH_READY_IMM, wc.imm_data);
	EXPECT_EQ(0, bench_ud_end(self, c.handle, ah, &u));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_OK(kt_destroy(self->fd, u.handle));
	EXPECT_OK(kt_destroy(self->fd, c.handle));
	EXPECT_OK(kt_destroy(self->fd, ah));
}

/* ------------------------------------------------------------------------
 * krdmactl bench against krdmactl bench, over rdma_cm on rxe0.
 */

FIXTURE(cli)
{
	struct kt_dev dev;
	struct kt_proc server;
	struct kt_proc client;
	struct kt_proc other;	/* a server of the test's own */
	char addr[64];
	unsigned int port;
};

/*
 * Wait up to 10 s for the bench server @p to say it listens; 0, or -1 if
 * it exited first or never did.
 */
static int cli_wait_listening(struct kt_proc *p)
{
	struct timespec delay = { 0, 100 * 1000 * 1000 };
	int i;

	for (i = 0; i < 100; i++) {
		char buf[256] = "";
		int fd = open(p->path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			buf[n > 0 ? n : 0] = 0;
			close(fd);
		}
		if (strstr(buf, "listening"))
			return 0;
		if (kt_check_exit(p))
			return -1;
		nanosleep(&delay, NULL);
	}
	return -1;
}

FIXTURE_SETUP(cli)
{
	const char *why = kt_krdmactl_unavailable(kt_test_dev());
	static unsigned int next;
	char cmd[256];
	int fd;

	if (why)
		SKIP(return, "%s", why);
	fd = krdma_open();
	ASSERT_LE(0, fd);
	ASSERT_OK(kt_dev_pick(fd, NULL, &self->dev));
	close(fd);
	/* the bench handshake's READY and END are SEND_WITH_IMMs */
	KT_NEED(&self->dev, KT_CAP_IMM);
	snprintf(self->addr, sizeof(self->addr), "%s", kt_test_addr(false));
	self->port = 19500 + (getpid() % 200) * 4 + next++ % 4;
	snprintf(cmd, sizeof(cmd), "krdmactl bench -p %u -T 30",
		 self->port);
	/* serves every client of the longest test (the debug kernel is slow) */
	ASSERT_OK(kt_spawn_for(&self->server, "krdma_bench", "srv", false,
			       600, cmd));
	ASSERT_EQ(0, cli_wait_listening(&self->server)) {
		TH_LOG("the bench server never listened: %s",
		       kt_out(&self->server));
	}
}

/* vm.nr_hugepages before cli_hugepages() changed it; -1: untouched */
static long cli_pool0 = -1;

static long cli_hugepages(long n);

FIXTURE_TEARDOWN(cli)
{
	kt_proc_end(&self->server);
	kt_proc_end(&self->client);
	kt_proc_end(&self->other);
	/* a test that failed on the way: the pool as it was */
	if (cli_pool0 >= 0)
		cli_hugepages(cli_pool0);
}

/* The @n-th number after "key": in JSON output, or -1. */
static double json_num(const char *out, const char *key, int n)
{
	char want[64];
	const char *p = out;

	snprintf(want, sizeof(want), "\"%s\":", key);
	while ((p = strstr(p, want)) && n--)
		p += strlen(want);
	return p ? strtod(p + strlen(want), NULL) : -1;
}

static int cli_client_to(FIXTURE_DATA(cli) *self, unsigned int port,
			 const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "krdmactl -j bench %s %s -p %u -T 20",
		 args, self->addr, port);
	/* each run ends by itself (-T 20); the debug kernel is slow */
	if (kt_spawn_for(&self->client, "krdma_bench", "cli", true, 300, cmd))
		return -1;
	kt_reap(&self->client);
	return self->client.status;
}

static int cli_client(FIXTURE_DATA(cli) *self, const char *args)
{
	return cli_client_to(self, self->port, args);
}

#define CLI_OK(args, iters)						\
	do {								\
		EXPECT_EQ(0, cli_client(self, args)) {			\
			TH_LOG("%s: %s", args, kt_out(&self->client));	\
		}							\
		EXPECT_EQ((double)(iters),				\
			  json_num(kt_out(&self->client), "iterations", 0)) { \
			TH_LOG("%s: %s", args, kt_out(&self->client));	\
		}							\
	} while (0)

KRDMA_TEST_F_TIMEOUT(cli, every_mode, 400)
{
	static const char *const bw[] = {
		"write -s 4096 -n 300", "read -s 4096 -n 300 -t 16",
		"fadd -n 300", "cswap -n 300", "send -s 4096 -n 300 -t 16",
		"send_imm -s 1024 -n 300 -t 16", "write_imm -s 4096 -n 300 -t 16",
		"write -s 4096 -n 300 -e",
		"write -s 4096 -n 300 --via-ioctl -Q 4",
	};
	const char *out;
	unsigned int i;

	for (i = 0; i < sizeof(bw) / sizeof(bw[0]); i++) {
		CLI_OK(bw[i], 300);
		out = kt_out(&self->client);
		EXPECT_LT(0, json_num(out, "bw_avg_mbps", 0)) {
			TH_LOG("%s: %s", bw[i], out);
		}
		EXPECT_LT(0, json_num(out, "msg_rate_mpps", 0));
	}
	/* -q: the figures are of all QPs */
	CLI_OK("write -s 4096 -n 100 -q 4 -t 8", 400);
	/*
	 * A client loop on every CPU, each of which an rxe that spins on an
	 * RNR NAK would hold in softirq, leaving the server no CPU to post
	 * its receives on: the machine locks up.
	 */
	if (kt_rxe_defect(KT_RXE_RNR_SPIN))
		TH_LOG("send -q 3 not run: %s", kt_rxe_defect(KT_RXE_RNR_SPIN));
	else
		CLI_OK("send -s 4096 -n 100 -q 3 -t 8", 300);
	CLI_OK("send --lat -s 8 -n 200 -I 8", 200);
	out = kt_out(&self->client);
	EXPECT_LT(0, json_num(out, "t_min_us", 0));
	EXPECT_LE(json_num(out, "t_min_us", 0), json_num(out, "t_typical_us", 0));
	EXPECT_LE(json_num(out, "t_typical_us", 0), json_num(out, "p99_us", 0));
	EXPECT_LE(json_num(out, "p99_us", 0), json_num(out, "p999_us", 0));
	EXPECT_LE(json_num(out, "p999_us", 0), json_num(out, "t_max_us", 0));
	EXPECT_LE(json_num(out, "t_min_us", 0), json_num(out, "t_avg_us", 0));
	EXPECT_LE(json_num(out, "t_avg_us", 0), json_num(out, "t_max_us", 0));
	EXPECT_LE(0, json_num(out, "t_stdev_us", 0));
	CLI_OK("send --lat -s 8 -n 200 --via-ioctl", 200);
	/* pings signaled one in -Q, as ib_send_lat's CQ moderation */
	CLI_OK("send --lat -s 8 -n 200 -Q 16", 200);
	CLI_OK("send --lat -s 8 -n 200 -Q 16 --via-ioctl", 200);
	/* a timed ping-pong ends on a signaled ping, its tail reaped */
	EXPECT_EQ(0, cli_client(self, "send --lat -s 8 -D 1 -Q 16")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_LT(0, json_num(kt_out(&self->client), "iterations", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
	CLI_OK("read --lat -s 64 -n 100", 100);
	/* every size up to 8 MiB: few of each (1.3 MB/s on the debug kernel) */
	CLI_OK("write -a -n 2 -t 4", 2);
	EXPECT_LT(0, json_num(kt_out(&self->client), "bytes", 22)) {
		TH_LOG("-a: not every size: %s", kt_out(&self->client));
	}
	EXPECT_EQ(0, cli_client(self, "--conns 8")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(8, json_num(kt_out(&self->client), "connected", 0));
}

/* A server of the test's own on @port, -c @transport, listening. */
static void cli_other_server(FIXTURE_DATA(cli) *self, const char *transport,
			     unsigned int port,
			     struct __test_metadata *_metadata)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "krdmactl bench -c %s -p %u -T 30",
		 transport, port);
	ASSERT_OK(kt_spawn_for(&self->other, "krdma_bench", transport, false,
			       300, cmd));
	ASSERT_EQ(0, cli_wait_listening(&self->other)) {
		TH_LOG("the %s server never listened: %s", transport,
		       kt_out(&self->other));
	}
}

/*
 * A client run against it that ends well, with @iters iterations over
 * @transport; its output.
 */
static const char *cli_run_on(FIXTURE_DATA(cli) *self, unsigned int port,
			      const char *run, unsigned int iters,
			      const char *transport,
			      struct __test_metadata *_metadata)
{
	char want[64];
	const char *out;

	EXPECT_EQ(0, cli_client_to(self, port, run)) {
		TH_LOG("%s: %s", run, kt_out(&self->client));
	}
	out = kt_out(&self->client);
	EXPECT_EQ((double)iters, json_num(out, "iterations", 0)) {
		TH_LOG("%s: %s", run, out);
	}
	snprintf(want, sizeof(want), "\"transport\":\"%s\"", transport);
	EXPECT_NE(NULL, strstr(out, want)) {
		TH_LOG("%s: %s", run, out);
	}
	return out;
}

/* What the running @p (stderr not split) has printed so far. */
static const char *cli_proc_text(const struct kt_proc *p)
{
	static char buf[65536];
	int fd = open(p->path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[len > 0 ? len : 0] = 0;
	return buf;
}

/*
 * The messages of the @n-th run a running server served ("served OP: N
 * QP(s), M messages, ..."), waiting up to 10 s for its line; -1 if none.
 */
static long cli_served_messages(const struct kt_proc *p, unsigned int n)
{
	int i;

	for (i = 0; i < 100; i++) {
		const char *q = cli_proc_text(p), *qp;
		unsigned int k = 0;

		while ((q = strstr(q, "served ")) && ++k < n)
			q++;
		qp = q ? strstr(q, "QP(s), ") : NULL;
		if (qp)
			return strtol(qp + strlen("QP(s), "), NULL, 10);
		usleep(100 * 1000);
	}
	return -1;
}

/*
 * -c uc, client and server: one-sided and two-sided bandwidth, latency and
 * through the ioctl path over UC QPs (the hello and end message repeated
 * until answered); what UC cannot run is refused with a reason.
 */
KRDMA_TEST_F_TIMEOUT(cli, uc, 300)
{
	static const char *const runs[] = {
		"write -c uc -s 4096 -n 300", "write -c uc --lat -s 64 -n 100",
		"write -c uc -s 4096 -n 300 --via-ioctl -Q 4",
		"write -c uc -s 4096 -n 100 -q 2 -t 8",
		"send -c uc -s 4096 -n 300 -t 16",
		"send -c uc --lat -s 8 -n 100 --validate",
		"send_imm -c uc -s 1024 -n 200 -t 16 --validate",
		/* one packet: docs/known-problems.rst (rxe, UC) */
		"write_imm -c uc -s 1024 -n 200 -t 16",
		"send -c uc --lat -s 64 -n 100 --via-ioctl",
	};
	static const unsigned int iters[] = { 300, 100, 300, 200, 300, 100,
					      200, 200, 100 };
	unsigned int port = self->port + 800, i, two_sided = 0;
	long served;

	cli_other_server(self, "uc", port, _metadata);
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		const char *out = cli_run_on(self, port, runs[i], iters[i],
					     "uc", _metadata);

		/* the server's count of bad payloads, where it checked */
		if (strstr(runs[i], "--validate")) {
			EXPECT_EQ(0, json_num(out, "server_validate_errors",
					      0)) {
				TH_LOG("%s: %s", runs[i], out);
			}
		}
		/* one-sided WRITEs run no loop at the server */
		if (!strncmp(runs[i], "write ", 6))
			continue;
		/*
		 * what arrived: all of a ping-pong's, whose lost ping would
		 * have failed the run; of a stream, what found a receive
		 */
		served = cli_served_messages(&self->other, ++two_sided);
		if (strstr(runs[i], "--lat"))
			EXPECT_EQ((long)iters[i], served);
		EXPECT_LT(0, served);
		EXPECT_GE((long)iters[i], served);
	}
	/*
	 * WRITE_WITH_IMM of several packets at any MTU: krdmactl warns of
	 * rxe's wedge (one message, which finds a receive, is safe)
	 */
	cli_run_on(self, port, "write_imm -c uc -s 8192 -n 1 -t 1", 1, "uc",
		   _metadata);
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "wedges its QP")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(1, cli_served_messages(&self->other, ++two_sided));
	/* and so does the server, whose QP it is */
	EXPECT_NE(NULL, strstr(cli_proc_text(&self->other), "wedges its QP"));
	/* the server's QPs are UC: rdma_cm refuses an RC client */
	EXPECT_EQ(1, cli_client_to(self, port, "write -s 4096 -n 10"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "the same -c")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	/* refused before connecting, with the reason */
	EXPECT_EQ(2, cli_client_to(self, port, "read -c uc -n 10"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "no READ or atomics"));
	EXPECT_EQ(2, cli_client_to(self, port, "fadd -c uc -n 10"));
	/* the UC server served them and is still up */
	EXPECT_FALSE(kt_check_exit(&self->other)) {
		TH_LOG("%s", kt_out(&self->other));
	}
}

/*
 * UD QPs of every RDMA device ("rdma resource show qp"), or -1 if that
 * lists no kernel QP at all (no tool, or no GSI QP: nothing to count).
 */
static int cli_ud_qps(void)
{
	FILE *f = popen("rdma resource show qp 2>/dev/null | "
			"awk '/ type GSI / { g++ } / type UD / { u++ } "
			"END { print g ? u + 0 : -1 }'", "r");
	int n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

/*
 * Wait up to 5 s for the UD QPs to be back at @want (< 0: to hold still
 * for 300 ms, as a server tears a group down after it reports it);
 * how many there are.
 */
static int cli_wait_ud_qps(int want)
{
	int i, m, n = cli_ud_qps(), still = 0;

	for (i = 0; i < 50; i++) {
		if (want >= 0 ? n == want : still == 3)
			break;
		usleep(100 * 1000);
		m = cli_ud_qps();
		still = m == n ? still + 1 : 0;
		n = m;
	}
	return n;
}

/* UD: one packet a message, hello and end repeated until answered. */
KRDMA_TEST_F_TIMEOUT(cli, ud_send, 300)
{
	static const char *const runs[] = {
		"send -c ud -s 1024 -n 300", "send -c ud --lat -s 8 -n 100",
		"send_imm -c ud -s 512 -n 300 -t 16 --validate",
		"send -c ud -s 256 -n 100 -q 2 -t 8",
		"send -c ud --lat -s 8 -n 100 --via-ioctl",
		"send_imm -c ud -s 1024 -n 300 -t 16 -Q 4 --via-ioctl",
	};
	static const unsigned int iters[] = { 300, 100, 300, 200, 100, 300 };
	unsigned int port = self->port + 900, i;
	const char *out;
	long served;
	int ud_qps;

	cli_other_server(self, "ud", port, _metadata);
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		cli_run_on(self, port, runs[i], iters[i], "ud", _metadata);
		/* the server's count: what arrived, UD may drop some */
		served = cli_served_messages(&self->other, i + 1);
		if (strstr(runs[i], "--lat"))
			EXPECT_EQ((long)iters[i], served);
		EXPECT_LT(0, served);
		EXPECT_GE((long)iters[i], served);
	}
	/* UD endpoints resolved with SIDR; the server keeps none */
	ud_qps = cli_wait_ud_qps(-1);
	EXPECT_EQ(0, cli_client_to(self, port, "--conns 8 -c ud")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(8, json_num(kt_out(&self->client), "connected", 0));
	if (ud_qps >= 0)
		EXPECT_EQ(ud_qps, cli_wait_ud_qps(ud_qps));
	/* every size up to the MTU, checked at both ends */
	EXPECT_EQ(0, cli_client_to(self, port,
				   "send -c ud --lat -a -n 2 --validate")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	out = kt_out(&self->client);
	EXPECT_LT(0, json_num(out, "bytes", 8)) {	/* 2 ... 512 at least */
		TH_LOG("%s", out);
	}
	EXPECT_EQ(-1, json_num(out, "bytes", 12)) {	/* 8192: over any MTU */
		TH_LOG("%s", out);
	}
	EXPECT_EQ(0, json_num(out, "server_validate_errors", 0));
	/* a spoilt source: the server's check says so (all that arrived) */
	EXPECT_EQ(1, cli_client_to(self, port, "send -c ud -s 256 -n 50 -t 4 "
				   "--validate --corrupt"));
	out = kt_out(&self->client);
	EXPECT_LE(1, json_num(out, "server_validate_errors", 0)) {
		TH_LOG("%s", out);
	}
	EXPECT_GE(50, json_num(out, "server_validate_errors", 0));
	/* refused by the client, with the reason */
	EXPECT_EQ(1, cli_client_to(self, port, "send -c ud -s 65536 -n 10"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "at most the MTU"));
	EXPECT_EQ(2, cli_client_to(self, port, "write -c ud -n 10"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "send and send_imm"));
	/* an RC client finds no UD listener: rdma_cm's port spaces differ */
	EXPECT_EQ(1, cli_client_to(self, port, "send -n 10"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "the same -c"));
	EXPECT_FALSE(kt_check_exit(&self->other)) {
		TH_LOG("%s", kt_out(&self->other));
	}
}

KRDMA_TEST_F_TIMEOUT(cli, validate, 120)
{
	EXPECT_EQ(0, cli_client(self, "send --lat -s 512 -n 50 --validate")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, json_num(kt_out(&self->client), "validate_errors", 0));
	/*
	 * every size, one ping each: a reply of one size must not change
	 * what the next size's pings send
	 */
	EXPECT_EQ(0, cli_client(self, "send --lat -a -n 1 --validate")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, json_num(kt_out(&self->client), "validate_errors", 22));
	EXPECT_EQ(0, json_num(kt_out(&self->client),
			      "server_validate_errors", 0));
	EXPECT_EQ(0, cli_client(self, "read -s 4096 -n 200 -t 16 --validate")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, json_num(kt_out(&self->client), "validate_errors", 0));
	EXPECT_EQ(1, cli_client(self, "send --lat -s 512 -n 50 --validate "
				"--corrupt"));
	EXPECT_EQ(50, json_num(kt_out(&self->client), "validate_errors", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
	/* the server's own check, reported back to the client */
	EXPECT_EQ(50, json_num(kt_out(&self->client),
			       "server_validate_errors", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, cli_client(self, "send -s 1024 -n 200 -t 16 --validate")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, json_num(kt_out(&self->client),
			      "server_validate_errors", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(1, cli_client(self, "send -s 1024 -n 200 -t 16 --validate "
				"--corrupt"));
	EXPECT_EQ(200, json_num(kt_out(&self->client),
				"server_validate_errors", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
}

/* A number in /proc (the first of @path, or @key's in /proc/meminfo) */
static long cli_proc_long(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!key || !strncmp(line, key, strlen(key))) {
			v = strtol(line + (key ? strlen(key) : 0), NULL, 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

/* /proc/sys/vm/nr_hugepages: set to @n (read back), or read (@n < 0) */
static long cli_hugepages(long n)
{
	FILE *f;

	if (n >= 0) {
		f = fopen("/proc/sys/vm/nr_hugepages", "w");
		if (!f)
			return -1;
		fprintf(f, "%ld\n", n);
		fclose(f);
	}
	return cli_proc_long("/proc/sys/vm/nr_hugepages", NULL);
}

/*
 * --use_hugepages: each side's buffer is its own memory in 2 MiB huge
 * pages, registered zero copy: 8 MiB READs, 32 MiB in flight from a
 * 64 MiB buffer, bring the server's pattern intact.  Then, the pool
 * empty: a client fails and says why; a server refuses its client and
 * says why (a side that ignored the option would do neither).
 */
KRDMA_TEST_F_TIMEOUT(cli, use_hugepages, 180)
{
	unsigned int port = self->port + 1300;
	long pool0 = cli_hugepages(-1);
	char cmd[256];

	if (!(self->dev.info.page_size_cap & (2u << 20)))
		SKIP(return, "%s: no 2 MiB MR pages", self->dev.info.name);
	if (cli_proc_long("/proc/meminfo", "Hugepagesize:") != 2048 ||
	    cli_proc_long("/proc/sys/vm/nr_overcommit_hugepages", NULL))
		SKIP(return, "2 MiB is not the huge page size, or the pool overcommits");
	/* the client's 4 slots of 8 MiB, the server's 8 (twice the depth) */
	cli_pool0 = pool0;
	if (pool0 < 0 || cli_hugepages(pool0 + 64) < pool0 + 64)
		SKIP(return, "no 64 huge pages to be had (root? memory?)");
	snprintf(cmd, sizeof(cmd), "krdmactl bench -p %u -T 20 --use_hugepages",
		 port);
	ASSERT_OK(kt_spawn_for(&self->other, "krdma_bench", "huge", false,
			       300, cmd));
	ASSERT_EQ(0, cli_wait_listening(&self->other));
	EXPECT_EQ(0, cli_client_to(self, port, "read -s 8388608 -t 4 -n 20 "
				   "--validate --use_hugepages")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(0, json_num(kt_out(&self->client), "validate_errors", 0)) {
		TH_LOG("%s", kt_out(&self->client));
	}
	EXPECT_EQ(20, json_num(kt_out(&self->client), "iterations", 0));
	/* an empty pool: the server refuses the client, naming it */
	ASSERT_EQ(0, cli_hugepages(0));
	EXPECT_EQ(1, cli_client_to(self, port, "read -s 65536 -n 10"));
	kill(self->other.pid, SIGKILL);
	kt_reap(&self->other);
	EXPECT_NE(NULL, strstr(kt_out(&self->other), "nr_hugepages")) {
		TH_LOG("server: %s", kt_out(&self->other));
	}
	/* and a client fails, naming it */
	EXPECT_EQ(1, cli_client(self, "read -s 65536 -n 10 --use_hugepages"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "nr_hugepages")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	cli_hugepages(pool0);
	cli_pool0 = -1;
}

/* A queue the device cannot make: the client says which options ask it */
KRDMA_TEST_F_TIMEOUT(cli, queue_too_big_says_why, 60)
{
	EXPECT_EQ(1, cli_client(self, "send -s 64 -n 10 -I 65536"));
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "max_inline_data")) {
		TH_LOG("%s", kt_out(&self->client));
	}
}

/*
 * A --once server exits 0 after a run that succeeded.  Its client may
 * leave as soon as the server's report arrives, before the report's ACK
 * does, and the flush that follows ends nothing the run did: a server that
 * counted it a failure exited 1 about one run in ten on the debug kernel.
 */
KRDMA_TEST_F_TIMEOUT(cli, once_server_exits_zero, 300)
{
	unsigned int port = self->port + 1100, round;
	char cmd[256];

	for (round = 0; round < 10; round++, port++) {
		snprintf(cmd, sizeof(cmd), "krdmactl bench -p %u --once -T 20",
			 port);
		ASSERT_OK(kt_spawn(&self->other, "krdma_bench", "once", true,
				   cmd));
		ASSERT_EQ(0, cli_wait_listening(&self->other));
		EXPECT_EQ(0, cli_client_to(self, port,
					   "send -s 4096 -n 50 -t 16")) {
			TH_LOG("%s", kt_out(&self->client));
		}
		kt_reap(&self->other);
		ASSERT_EQ(0, self->other.status) {
			TH_LOG("round %u: %s", round, kt_out(&self->other));
		}
	}
}

/*
 * A server's -j output is one JSON list of events: it listens, then a
 * record of each run its kernel loop served (two-sided ops).
 */
KRDMA_TEST_F_TIMEOUT(cli, server_json, 120)
{
	unsigned int port = self->port + 1000;
	const char *out;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "krdmactl -j bench -p %u --once -T 20",
		 port);
	ASSERT_OK(kt_spawn(&self->other, "krdma_bench", "jsrv", true, cmd));
	ASSERT_EQ(0, cli_wait_listening(&self->other)) {
		TH_LOG("the JSON server never listened");
	}
	EXPECT_EQ(0, cli_client_to(self, port, "send -s 4096 -n 50 -t 16")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	kt_reap(&self->other);
	out = kt_out(&self->other);
	EXPECT_EQ(0, self->other.status) {
		TH_LOG("%s", out);
	}
	out += strspn(out, " \n");
	EXPECT_EQ('[', *out) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "\"event\":\"listening\"")) {
		TH_LOG("%s", out);
	}
	EXPECT_EQ(port, json_num(out, "port", 0));
	EXPECT_NE(NULL, strstr(out, "\"event\":\"served\"")) {
		TH_LOG("%s", out);
	}
	EXPECT_EQ(50, json_num(out, "messages", 0));
	/* every member has a name */
	EXPECT_EQ(NULL, strstr(out, "\"\":")) {
		TH_LOG("%s", out);
	}
}

/* SIGINT to the children of @pid (timeout(1) may not pass it on). */
/* Send @sig to @pid's children (the program a timeout(1) runs). */
static void signal_children(pid_t pid, int sig)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	char path[300], buf[256];

	while (d && (de = readdir(d))) {
		int ppid = 0, fd, n;
		char *p;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == pid)
			kill(atoi(de->d_name), sig);
	}
	if (d)
		closedir(d);
}

/* Has @p (stderr split) printed a progress line: is its run going? */
static bool cli_in_run(const struct kt_proc *p)
{
	char path[100], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s.err", p->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strstr(buf, " ops, ");
}

/* Ctrl-C: krdmactl stops within seconds, and the server serves again. */
KRDMA_TEST_F_TIMEOUT(cli, interrupt, 120)
{
	char cmd[256];
	int i;

	snprintf(cmd, sizeof(cmd), "krdmactl -j bench write %s -p %u -D 60",
		 self->addr, self->port);
	ASSERT_OK(kt_spawn(&self->client, "krdma_bench", "int", true, cmd));
	/* in its run, not still connecting: the run is what must stop */
	for (i = 0; i < 300 && !cli_in_run(&self->client); i++) {
		ASSERT_FALSE(kt_check_exit(&self->client)) {
			TH_LOG("krdmactl ended before its run: %s",
			       kt_out(&self->client));
		}
		usleep(100 * 1000);
	}
	ASSERT_LT(i, 300) {
		TH_LOG("no progress line in 30 s");
	}
	/* timeout(1) passes it on; busybox's runs the command as itself */
	kill(self->client.pid, SIGINT);
	signal_children(self->client.pid, SIGINT);
	for (i = 0; i < 200 && !kt_check_exit(&self->client); i++)
		usleep(100 * 1000);
	ASSERT_LT(i, 200) {
		TH_LOG("krdmactl did not stop on SIGINT");
	}
	EXPECT_EQ(1, self->client.status);
	EXPECT_NE(NULL, strstr(kt_out(&self->client), "interrupted")) {
		TH_LOG("%s", kt_out(&self->client));
	}
	CLI_OK("send -s 4096 -n 100 -t 16", 100);
}

/*
 * --via-ioctl over UC: the server stops mid-run (SIGSTOP ends its kernel
 * loop, which leaves its QP in the error state, and stops the process
 * before it disconnects).  UC pings to it vanish without an error
 * anywhere, and the ioctl loop ends at -T with nothing completed, as the
 * kernel's loop does.
 */
KRDMA_TEST_F_TIMEOUT(cli, via_ioctl_lost_peer_times_out, 120)
{
	unsigned int port = self->port + 1000;
	char cmd[256];
	int i;

	cli_other_server(self, "uc", port, _metadata);
	snprintf(cmd, sizeof(cmd), "krdmactl -j bench send %s -p %u -c uc "
		 "--lat -s 8 -D 60 -T 2 --via-ioctl", self->addr, port);
	ASSERT_OK(kt_spawn(&self->client, "krdma_bench", "via", true, cmd));
	sleep(3);	/* connected, answered, in its ping-pong */
	ASSERT_FALSE(kt_check_exit(&self->client)) {
		TH_LOG("krdmactl ended before the server went: %s",
		       kt_out(&self->client));
	}
	/* (busybox's timeout(1) runs the command as itself) */
	kill(self->other.pid, SIGSTOP);
	signal_children(self->other.pid, SIGSTOP);
	for (i = 0; i < 150 && !kt_check_exit(&self->client); i++)
		usleep(100 * 1000);
	signal_children(self->other.pid, SIGKILL);
	ASSERT_LT(i, 150) {
		TH_LOG("krdmactl --via-ioctl -T 2 still running 15 s after its server went");
	}
	EXPECT_EQ(1, self->client.status);
	EXPECT_NE(NULL, strstr(kt_out(&self->client),
			       "nothing completed within the timeout")) {
		TH_LOG("%s", kt_out(&self->client));
	}
}

TEST_HARNESS_MAIN
