// SPDX-License-Identifier: GPL-2.0
/*
 * krdma data path on one device's loopback path: two connections on the
 * test device (rxe0, or $KRDMA_TEST_DEV) connected to each other (by hand,
 * or through rdma_cm) move data with every opcode their transport has, at
 * sizes up to the port's largest message, and every byte is checked at
 * the receiver.  Then
 * scatter/gather, inline data, batches, busy-polled vs interrupt-driven
 * completions (poll(2) readiness), and the failures a peer can cause:
 * a bad rkey, no receive posted (RNR), writes at a buffer's end.
 */
#include <poll.h>
#include <pthread.h>

#include "krdma_test.h"

#define POLL_MS 20000		/* generous: rxe under TCG is slow */
#define SLACK 4096		/* poison checked past every message */
#define POISON 0xa5

/*
 * and the port's max_msg_sz, once: 8 MiB on 6.1's rxe; 6.12's says 2 GiB,
 * more than the test VM's memory, so the largest is capped at 8 MiB
 */
static const uint64_t sizes_rc[] = { 1, 4095, 65536, 1048576 };
#define ITERS 2
#define MAX_MSG_CAP (8ull << 20)

FIXTURE(xfer)
{
	int fd;
	struct kt_dev dev;
	struct kt_conn a, b;	/* a sends / initiates, b receives / targets */
	uint32_t ah_a;		/* UD: a's address handle for b */
	uint32_t ah_b;		/* UD: b's address handle for a */
	uint32_t mtu;
	struct kt_buf scratch;	/* where RECVs of small messages land */
	bool cm;		/* UD: a's sends go to the peer rdma_cm found */
};

FIXTURE_VARIANT(xfer)
{
	uint32_t transport;
	uint32_t flags;		/* KRDMA_CONN_NOTIFY or 0 */
	bool cm;		/* connected through rdma_cm, b accepting */
};

FIXTURE_VARIANT_ADD(xfer, rc)
{
	.transport = KRDMA_TRANSPORT_RC,
};

FIXTURE_VARIANT_ADD(xfer, uc)
{
	.transport = KRDMA_TRANSPORT_UC,
};

FIXTURE_VARIANT_ADD(xfer, ud)
{
	.transport = KRDMA_TRANSPORT_UD,
};

FIXTURE_VARIANT_ADD(xfer, rc_notify)
{
	.transport = KRDMA_TRANSPORT_RC,
	.flags = KRDMA_CONN_NOTIFY,
};

FIXTURE_VARIANT_ADD(xfer, ud_notify)
{
	.transport = KRDMA_TRANSPORT_UD,
	.flags = KRDMA_CONN_NOTIFY,
};

FIXTURE_VARIANT_ADD(xfer, rc_cm)
{
	.transport = KRDMA_TRANSPORT_RC,
	.cm = true,
};

FIXTURE_VARIANT_ADD(xfer, uc_cm)
{
	.transport = KRDMA_TRANSPORT_UC,
	.cm = true,
};

FIXTURE_VARIANT_ADD(xfer, ud_cm)
{
	.transport = KRDMA_TRANSPORT_UD,
	.cm = true,
};

static const struct krdma_qp_caps fixture_caps = {
	.max_send_sge = 4,
	.max_recv_sge = 4,
	.max_inline_data = 64,
};

/*
 * a connects to a listener of b's transport at kt_test_addr(), b accepts, both
 * in the one session (so either end may use any buffer).
 */
static void cm_pair(struct __test_metadata *_metadata,
		    FIXTURE_DATA(xfer) *self,
		    const FIXTURE_VARIANT(xfer) *variant)
{
	const char *addr = kt_test_addr(false);
	struct krdma_cm_listen l;
	struct krdma_cm_accept acc;
	struct krdma_event ev;
	struct kc_connect c;

	kc_listen_init(&l, addr, 0);
	l.transport = variant->transport;
	test_cmd_ioctl(KRDMA_CM_LISTEN, &l);
	kc_connect_init(&c, self->fd, addr, l.port, NULL, 0);
	c.cmd.transport = variant->transport;
	c.cmd.flags = variant->flags;
	c.cmd.caps = fixture_caps;
	ASSERT_EQ(0, kc_connect_start(&c));
	ASSERT_OK(kc_wait_event(self->fd, KRDMA_EVENT_CONNECT_REQUEST, 0,
				CM_MS, &ev));
	kc_accept_init(&acc, ev.handle, NULL, 0);
	acc.flags = variant->flags;
	acc.caps = fixture_caps;
	test_cmd_ioctl(KRDMA_CM_ACCEPT, &acc);
	ASSERT_EQ(0, kc_connect_join(&c, CM_MS));
	ASSERT_EQ(0, c.ret) {
		TH_LOG("CM_CONNECT: %s", strerror(c.err));
	}
	test_cmd_destroy(l.handle);
	self->a.handle = c.cmd.handle;
	self->a.qp_num = c.cmd.qp_num;
	self->a.caps = c.cmd.caps;
	self->b.handle = ev.handle;
	self->b.qp_num = acc.qp_num;
	self->b.caps = acc.caps;
	if (variant->transport == KRDMA_TRANSPORT_UD) {
		struct krdma_conn_query q;

		/* the client's CM peer is the server's QP */
		test_cmd_conn_query(self->a.handle, &q);
		EXPECT_EQ(self->b.qp_num, q.dest_qp_num);
		/* the server learnt no peer */
		test_cmd_conn_query(self->b.handle, &q);
		EXPECT_EQ(0u, q.dest_qp_num);
	}
	/* the handshake's events would keep the fd readable */
	while (kc_events(self->fd, &ev, 1, 0) > 0)
		;
	self->a.transport = self->b.transport = variant->transport;
	memcpy(self->a.gid, self->dev.gid, 16);
	memcpy(self->b.gid, self->dev.gid, 16);
}

FIXTURE_SETUP(xfer)
{
	self->fd = kt_session_open_dev(_metadata, &self->dev);
	if (self->fd < 0)
		return;
	self->mtu = self->dev.port.active_mtu;
	TH_LOG("%s port %u gid_index %u mtu %u", self->dev.info.name,
	       self->dev.port_num, self->dev.gid_index, self->mtu);
	self->cm = variant->cm;
	KT_NEED_TRANSPORT(&self->dev, variant->transport);
	if (variant->cm) {
		cm_pair(_metadata, self, variant);
	} else {
		test_cmd_conn_pair(&self->dev, variant->transport,
				   variant->flags, &fixture_caps, &self->a,
				   &self->b);
	}
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 8192,
			   &self->scratch);
	if (variant->transport == KRDMA_TRANSPORT_UD) {
		test_cmd_ah_create(self->a.handle, self->b.gid, &self->ah_a);
		test_cmd_ah_create(self->b.handle, self->a.gid, &self->ah_b);
	}
}

FIXTURE_TEARDOWN(xfer)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Address the WR to b if the transport is UD (over rdma_cm a WR that names
 * no AH and no QP goes to the peer the CM resolved: b).
 */
static void wr_dest(FIXTURE_DATA(xfer) *self, struct krdma_wr *wr)
{
	if (self->a.transport != KRDMA_TRANSPORT_UD || self->cm)
		return;
	wr->ah_handle = self->ah_a;
	wr->remote_qpn = self->b.qp_num;
}

/* A RECV for a small message (UD: room for the GRH). */
static void recv_wr(FIXTURE_DATA(xfer) *self, struct krdma_wr *wr, uint64_t id)
{
	kt_wr_init(wr, id, KRDMA_OP_RECV, 0);
	kt_wr_sge(wr, self->scratch.handle, 0, 4096);
}

/*
 * Wait for exactly one completion on @conn and check its basics; @n is what
 * an earlier kt_poll_n() for it returned (1: @wc holds it), or 0.
 */
static void check_wc(struct __test_metadata *_metadata, int fd, uint32_t conn,
		     uint64_t wr_id, uint32_t status, struct krdma_wc *wc,
		     int n)
{
	if (n != 1) {
		memset(wc, 0, sizeof(*wc));
		n = kt_poll_n(fd, conn, wc, 1, POLL_MS);
	}
	if (n != 1) {
		struct krdma_conn_query q;

		TH_LOG("conn %u: no completion for wr_id %llu (%s)", conn,
		       (unsigned long long)wr_id, n < 0 ? strerror(errno) : "timeout");
		if (!kt_conn_query(fd, conn, &q))
			TH_LOG("conn %u: state %u qp %u dest %u mtu %u last status %u",
			       conn, q.state, q.qp_num, q.dest_qp_num, q.path_mtu,
			       q.last_wc_status);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(status, wc->status) {
		TH_LOG("wr_id %llu: status %u vendor_err %u",
		       (unsigned long long)wc->wr_id, wc->status, wc->vendor_err);
	}
}

static void expect_wc(struct __test_metadata *_metadata, int fd, uint32_t conn,
		      uint64_t wr_id, uint32_t status, struct krdma_wc *wc)
{
	check_wc(_metadata, fd, conn, wr_id, status, wc, 0);
}

/* No further completion shows up on @conn within @ms. */
static void expect_no_wc(struct __test_metadata *_metadata, int fd,
			 uint32_t conn, uint32_t ms)
{
	struct krdma_wc wc;
	int n = kt_poll_n(fd, conn, &wc, 1, ms);

	EXPECT_EQ(0, n) {
		TH_LOG("unexpected completion wr_id %llu status %u opcode %u",
		       (unsigned long long)wc.wr_id, wc.status, wc.opcode);
	}
}

/*
 * After a WRITE that completed (@wc) well, where that does not say b has
 * the data (UC, iWARP), until b has it (UC: or dropped it).
 */
static void write_fence(struct __test_metadata *_metadata,
			FIXTURE_DATA(xfer) *self, const struct krdma_wc *wc)
{
	if (wc->status)
		return;
	if (self->a.transport == KRDMA_TRANSPORT_UC || kt_dev_iwarp(&self->dev))
		kt_write_fence(_metadata, self->fd, self->a.handle, self->fd,
			       self->b.handle);
}

/* The buffers of a transfer test: a's local one, b's remote-accessible one. */
struct xbufs {
	struct kt_buf src, dst;
	uint8_t *src_map, *dst_map;
	uint8_t *tmp;
	uint64_t len;
};

static void xbufs_alloc(struct __test_metadata *_metadata,
			FIXTURE_DATA(xfer) *self, struct xbufs *x,
			uint64_t max_size)
{
	x->len = max_size + KT_GRH_LEN + SLACK;
	test_cmd_buf_alloc(self->dev.dev_index,
			   KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_READ,
			   x->len, &x->src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, x->len, &x->dst);
	x->src_map = kt_buf_mmap(self->fd, &x->src);
	ASSERT_NE(MAP_FAILED, x->src_map);
	x->dst_map = kt_buf_mmap(self->fd, &x->dst);
	ASSERT_NE(MAP_FAILED, x->dst_map);
	x->tmp = malloc(x->len);
	ASSERT_NE(NULL, x->tmp);
}

static void xbufs_free(FIXTURE_DATA(xfer) *self, struct xbufs *x)
{
	if (x->src_map && x->src_map != MAP_FAILED)
		kt_buf_munmap(x->src_map, &x->src);
	if (x->dst_map && x->dst_map != MAP_FAILED)
		kt_buf_munmap(x->dst_map, &x->dst);
	free(x->tmp);
	kt_destroy(self->fd, x->src.handle);
	kt_destroy(self->fd, x->dst.handle);
}

/*
 * rxe can stall a UC send queue: its requester pauses while too many of the
 * QP's packets are in flight, and sets the flag the skb destructor checks to
 * wake it only after its own check, so the last destructor can run between
 * the two (a lost wakeup).  RC recovers on its retransmit timer; UC waits
 * for the next post.  A zero-length RDMA WRITE is that post: it changes no
 * byte at b and takes no receive.  Anywhere else a missing completion fails.
 */
static bool uc_on_rxe(FIXTURE_DATA(xfer) *self)
{
	return self->a.transport == KRDMA_TRANSPORT_UC &&
	       self->dev.info.vendor_id == KT_RXE_VENDOR_ID;
}

#define UC_KICKS 8	/* a message can stall more than once */

/* a's completion of @wr_id, past stalls of rxe's UC requester */
static void expect_send_wc(struct __test_metadata *_metadata,
			   FIXTURE_DATA(xfer) *self, struct xbufs *x,
			   uint64_t wr_id, struct krdma_wc *wc)
{
	struct krdma_wc kick_wc;
	struct krdma_wr kick;
	unsigned int kicks = 0, i;
	int n = 0;

	while (uc_on_rxe(self)) {
		memset(wc, 0, sizeof(*wc));
		n = kt_poll_n(self->fd, self->a.handle, wc, 1, POLL_MS);
		if (n || kicks == UC_KICKS)
			break;
		TH_LOG("no completion: rxe's UC requester stalled, waking it");
		kt_wr_init(&kick, 1ull << 62 | (uint64_t)kicks << 56 | wr_id,
			   KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kick.remote_addr = x->dst.addr;
		kick.rkey = x->dst.rkey;
		test_cmd_post1(self->a.handle, &kick);
		kicks++;
	}
	check_wc(_metadata, self->fd, self->a.handle, wr_id, 0, wc, n);
	/* one send queue: the kicks complete after the message, in order */
	for (i = 0; i < kicks; i++)
		check_wc(_metadata, self->fd, self->a.handle,
			 1ull << 62 | (uint64_t)i << 56 | wr_id, 0, &kick_wc, 0);
}

/*
 * One message of @size bytes with @op from a to b, checked byte by byte
 * (the pattern where it belongs, poison around it) and completion by
 * completion.
 */
static void one_transfer(struct __test_metadata *_metadata,
			 FIXTURE_DATA(xfer) *self, struct xbufs *x,
			 uint32_t op, uint64_t size, uint32_t iter)
{
	bool ud = self->a.transport == KRDMA_TRANSPORT_UD;
	uint32_t seed = kt_seed(op + 16 * self->a.transport, size, iter);
	uint64_t wr_id = (uint64_t)op << 40 | size << 8 | iter;
	uint64_t at = ud ? KT_GRH_LEN : 0;	/* where b's copy starts */
	bool two_sided = op == KRDMA_OP_SEND || op == KRDMA_OP_SEND_WITH_IMM ||
			 op == KRDMA_OP_RDMA_WRITE_WITH_IMM;
	uint32_t imm = seed ^ 0x5a5a0000;
	struct krdma_wr wr, rwr;
	struct krdma_wc wc;
	uint8_t *check;
	int64_t bad;

	TH_LOG("%s size %llu iteration %u", kt_op_name(op),
	       (unsigned long long)size, iter);
	if (op == KRDMA_OP_RDMA_READ) {
		/* b's buffer holds the data, a reads it into its poisoned one */
		kt_fill(x->tmp, size, seed);
		test_cmd_buf_write(x->dst.handle, 0, x->tmp, size);
		memset(x->src_map, POISON, size + SLACK);
	} else {
		kt_fill(x->tmp, size, seed);
		test_cmd_buf_write(x->src.handle, 0, x->tmp, size);
		memset(x->dst_map, POISON, at + size + SLACK);
	}

	if (two_sided) {
		kt_wr_init(&rwr, wr_id | 1ull << 63, KRDMA_OP_RECV, 0);
		if (op != KRDMA_OP_RDMA_WRITE_WITH_IMM)
			kt_wr_sge(&rwr, x->dst.handle, 0, at + size + SLACK);
		test_cmd_post1(self->b.handle, &rwr);
	}

	kt_wr_init(&wr, wr_id, op, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, x->src.handle, 0, size);
	if (op == KRDMA_OP_SEND_WITH_IMM || op == KRDMA_OP_RDMA_WRITE_WITH_IMM)
		wr.imm_data = imm;
	if (op == KRDMA_OP_RDMA_WRITE || op == KRDMA_OP_RDMA_WRITE_WITH_IMM ||
	    op == KRDMA_OP_RDMA_READ) {
		wr.remote_addr = x->dst.addr;
		wr.rkey = x->dst.rkey;
	}
	wr_dest(self, &wr);
	test_cmd_post1(self->a.handle, &wr);

	expect_send_wc(_metadata, self, x, wr_id, &wc);
	EXPECT_TRUE(kt_send_wc_opcode_ok(op, wc.opcode)) {
		TH_LOG("%s completed as opcode %u", kt_op_name(op), wc.opcode);
	}
	if (two_sided) {
		expect_wc(_metadata, self->fd, self->b.handle, rwr.wr_id, 0, &wc);
		if (op == KRDMA_OP_RDMA_WRITE_WITH_IMM) {
			EXPECT_EQ((__u32)KRDMA_OP_RDMA_WRITE_WITH_IMM, wc.opcode);
			TH_LOG("write-with-imm receive byte_len %u", wc.byte_len);
		} else {
			EXPECT_EQ((__u32)KRDMA_OP_RECV, wc.opcode);
			EXPECT_EQ(at + size, wc.byte_len);
		}
		if (op == KRDMA_OP_SEND) {
			EXPECT_EQ(0u, wc.wc_flags & KT_WC_WITH_IMM);
		} else {
			EXPECT_EQ(KT_WC_WITH_IMM, wc.wc_flags & KT_WC_WITH_IMM);
			EXPECT_EQ(imm, wc.imm_data);
		}
		if (ud) {
			EXPECT_EQ(KT_WC_GRH, wc.wc_flags & KT_WC_GRH);
			EXPECT_EQ(self->a.qp_num, wc.src_qp);
		}
	}
	if (op == KRDMA_OP_RDMA_WRITE)
		write_fence(_metadata, self, &wc);

	/* Every byte: the pattern where it belongs, poison after it. */
	check = op == KRDMA_OP_RDMA_READ ? x->src_map : x->dst_map + at;
	bad = kt_check(check, size, seed);
	EXPECT_EQ(-1, bad) {
		TH_LOG("%s size %llu: byte %lld is 0x%02x, expected 0x%02x",
		       kt_op_name(op), (unsigned long long)size, (long long)bad,
		       check[bad], kt_pattern_byte(seed, bad));
	}
	bad = kt_check_byte(check + size, SLACK, POISON);
	EXPECT_EQ(-1, bad) {
		TH_LOG("%s size %llu: wrote past the message at +%lld",
		       kt_op_name(op), (unsigned long long)size, (long long)bad);
	}
	/* and BUF_RW sees what mmap sees */
	if (op != KRDMA_OP_RDMA_READ) {
		test_cmd_buf_read(x->dst.handle, at, x->tmp, size);
		EXPECT_EQ(-1, kt_check(x->tmp, size, seed));
	}
}

/*
 * @op at every size the transport allows: up to the port's largest message
 * (that one once: it is the slow one) for RC/UC, up to the MTU for UD.
 */
static void transfer_matrix(struct __test_metadata *_metadata,
			    FIXTURE_DATA(xfer) *self, uint32_t op)
{
	uint64_t sizes[ARRAY_SIZE(sizes_rc) + 1];
	uint64_t max_msg = self->dev.port.max_msg_sz < MAX_MSG_CAP ?
			   self->dev.port.max_msg_sz : MAX_MSG_CAP;
	uint64_t max_buf = kt_dev_max_buf(&self->dev);
	unsigned int nsizes = 0, i, it;
	struct xbufs x = {};

	if (!kt_transport_has(self->a.transport, op))
		SKIP(return, "%s is not an op of this transport", kt_op_name(op));
	KT_NEED_OP(&self->dev, op);
	/* xbufs_alloc()'s buffers are one registration each */
	if (max_buf && max_msg > max_buf - KT_GRH_LEN - SLACK)
		max_msg = max_buf - KT_GRH_LEN - SLACK;
	if (self->a.transport == KRDMA_TRANSPORT_UD) {
		sizes[nsizes++] = 1;
		sizes[nsizes++] = self->mtu / 2 + 3;
		sizes[nsizes++] = self->mtu;
	} else {
		for (i = 0; i < ARRAY_SIZE(sizes_rc); i++)
			if (sizes_rc[i] < max_msg)
				sizes[nsizes++] = sizes_rc[i];
		sizes[nsizes++] = max_msg;
	}
	TH_LOG("sizes up to %llu (port max_msg_sz %u)",
	       (unsigned long long)sizes[nsizes - 1],
	       self->dev.port.max_msg_sz);
	xbufs_alloc(_metadata, self, &x, sizes[nsizes - 1]);
	for (i = 0; i < nsizes; i++)
		for (it = 0; it < (sizes[i] > 1048576 ? 1 : ITERS); it++)
			one_transfer(_metadata, self, &x, op, sizes[i], it);
	xbufs_free(self, &x);
}

KRDMA_TEST_F_TIMEOUT(xfer, send, 180)
{
	transfer_matrix(_metadata, self, KRDMA_OP_SEND);
}

KRDMA_TEST_F_TIMEOUT(xfer, send_with_imm, 180)
{
	transfer_matrix(_metadata, self, KRDMA_OP_SEND_WITH_IMM);
}

KRDMA_TEST_F_TIMEOUT(xfer, rdma_write, 180)
{
	transfer_matrix(_metadata, self, KRDMA_OP_RDMA_WRITE);
}

KRDMA_TEST_F_TIMEOUT(xfer, rdma_write_with_imm, 180)
{
	transfer_matrix(_metadata, self, KRDMA_OP_RDMA_WRITE_WITH_IMM);
}

KRDMA_TEST_F_TIMEOUT(xfer, rdma_read, 180)
{
	transfer_matrix(_metadata, self, KRDMA_OP_RDMA_READ);
}

/* UD: a message of exactly the MTU, GRH first, src_qp the sender's. */
KRDMA_TEST_F(xfer, ud_grh)
{
	struct xbufs x = {};
	struct krdma_wr wr, rwr;
	struct krdma_wc wc;
	uint32_t seed = kt_seed(100, self->mtu, 0);

	if (self->a.transport != KRDMA_TRANSPORT_UD)
		SKIP(return, "UD only");
	xbufs_alloc(_metadata, self, &x, self->mtu);
	kt_fill(x.tmp, self->mtu, seed);
	test_cmd_buf_write(x.src.handle, 0, x.tmp, self->mtu);
	memset(x.dst_map, POISON, x.len);
	/* The receive starts at offset 8 of b's buffer. */
	kt_wr_init(&rwr, 7, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, x.dst.handle, 8, KT_GRH_LEN + self->mtu);
	test_cmd_post1(self->b.handle, &rwr);
	/*
	 * remote_qkey given explicitly this time: krdma's default Q_Key, or
	 * the one rdma_cm gives UD QPs (RDMA_UDP_QKEY)
	 */
	kt_wr_init(&wr, 8, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, x.src.handle, 0, self->mtu);
	wr_dest(self, &wr);
	wr.remote_qkey = self->cm ? 0x01234567 : 0x11111111;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->b.handle, 7, 0, &wc);
	EXPECT_EQ((__u32)KRDMA_OP_RECV, wc.opcode);
	EXPECT_EQ(KT_GRH_LEN + self->mtu, wc.byte_len);
	EXPECT_EQ(KT_WC_GRH, wc.wc_flags & KT_WC_GRH);
	EXPECT_EQ(self->a.qp_num, wc.src_qp);
	expect_wc(_metadata, self->fd, self->a.handle, 8, 0, &wc);
	EXPECT_EQ(-1, kt_check_byte(x.dst_map, 8, POISON));
	EXPECT_EQ(-1, kt_check(x.dst_map + 8 + KT_GRH_LEN, self->mtu, seed));
	EXPECT_EQ(-1, kt_check_byte(x.dst_map + 8 + KT_GRH_LEN + self->mtu,
				    x.len - 8 - KT_GRH_LEN - self->mtu, POISON));
	/* With RoCE v2 over IPv4 the last 20 bytes of the GRH are the IP header. */
	if (kt_gid_is_v4mapped(self->dev.gid, NULL) &&
	    self->dev.gid_type == KRDMA_GID_TYPE_ROCE_UDP_ENCAP)
		EXPECT_EQ(0x45, x.dst_map[8 + 20]);

	/* A datagram to a wrong Q_Key is dropped: no receive completion. */
	kt_wr_init(&rwr, 9, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, x.dst.handle, 0, KT_GRH_LEN + self->mtu);
	test_cmd_post1(self->b.handle, &rwr);
	kt_wr_init(&wr, 10, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, x.src.handle, 0, 16);
	wr_dest(self, &wr);
	wr.remote_qkey = 0x22222222;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 10, 0, &wc);
	expect_no_wc(_metadata, self->fd, self->b.handle, 500);
	xbufs_free(self, &x);
}

/* ------------------------------------------------------------------------
 * Atomics: a counter at b, several iterations against the known value
 */

static void atomic_op(struct __test_metadata *_metadata,
		      FIXTURE_DATA(xfer) *self, uint32_t op,
		      const struct kt_buf *target, uint64_t offset,
		      const struct kt_buf *result, uint64_t add_or_cmp,
		      uint64_t swap, uint64_t expect_old)
{
	static uint64_t id = 1000;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint64_t old = ~expect_old;

	test_cmd_buf_write(result->handle, 0, &old, 8);
	kt_wr_init(&wr, ++id, op, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, result->handle, 0, 8);
	wr.remote_addr = target->addr + offset;
	wr.rkey = target->rkey;
	wr.compare_add = add_or_cmp;
	wr.swap = swap;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, id, 0, &wc);
	EXPECT_EQ(op, wc.opcode);
	test_cmd_buf_read(result->handle, 0, &old, 8);
	EXPECT_EQ(expect_old, old) {
		TH_LOG("%s: returned 0x%llx, expected old value 0x%llx",
		       kt_op_name(op), (unsigned long long)old,
		       (unsigned long long)expect_old);
	}
}

static void atomic_setup(struct __test_metadata *_metadata,
			 FIXTURE_DATA(xfer) *self, struct kt_buf *target,
			 struct kt_buf *result, uint64_t *shadow)
{
	uint64_t init[8];
	unsigned int i;

	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE |
			   KRDMA_ACCESS_REMOTE_ATOMIC, sizeof(init), target);
	ASSERT_NE(0u, target->rkey);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 8,
			   result);
	for (i = 0; i < 8; i++)
		init[i] = shadow[i] = 0x1111111111111111ull * i + 0x1000;
	test_cmd_buf_write(target->handle, 0, init, sizeof(init));
}

/* Only the counter moved, and it holds what the shadow says. */
static void atomic_verify(struct __test_metadata *_metadata,
			  FIXTURE_DATA(xfer) *self, const struct kt_buf *target,
			  const uint64_t *shadow)
{
	uint64_t now[8];
	unsigned int i;

	test_cmd_buf_read(target->handle, 0, now, sizeof(now));
	for (i = 0; i < 8; i++) {
		if (shadow[i] == now[i])
			continue;
		EXPECT_EQ(shadow[i], now[i]);
		TH_LOG("word %u: 0x%llx, expected 0x%llx", i,
		       (unsigned long long)now[i], (unsigned long long)shadow[i]);
	}
}

KRDMA_TEST_F(xfer, atomic_fetch_add)
{
	struct kt_buf target, result;
	uint64_t shadow[8];
	unsigned int i, w;

	if (!kt_transport_has(self->a.transport, KRDMA_OP_ATOMIC_FETCH_ADD))
		SKIP(return, "RC only");
	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	atomic_setup(_metadata, self, &target, &result, shadow);
	for (i = 0; i < 24; i++) {
		uint64_t add = i % 5 == 4 ? (uint64_t)-3 : 0x10001ull * (i + 1);

		w = 1 + i % 3;	/* words 1..3 of the target */
		atomic_op(_metadata, self, KRDMA_OP_ATOMIC_FETCH_ADD, &target,
			  8 * w, &result, add, 0, shadow[w]);
		shadow[w] += add;
		atomic_verify(_metadata, self, &target, shadow);
	}
	/* wrap-around at 2^64 */
	atomic_op(_metadata, self, KRDMA_OP_ATOMIC_FETCH_ADD, &target, 8 * 7,
		  &result, UINT64_MAX - shadow[7] + 2, 0, shadow[7]);
	shadow[7] = 1;
	atomic_verify(_metadata, self, &target, shadow);
}

KRDMA_TEST_F(xfer, atomic_cmp_swp)
{
	struct kt_buf target, result;
	uint64_t shadow[8];
	unsigned int i;

	if (!kt_transport_has(self->a.transport, KRDMA_OP_ATOMIC_CMP_SWP))
		SKIP(return, "RC only");
	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	atomic_setup(_metadata, self, &target, &result, shadow);
	for (i = 0; i < 16; i++) {
		uint64_t next = 0xabcdef0000000000ull + i * 0x1010101ull;
		bool match = i % 3 != 2;
		uint64_t cmp = match ? shadow[2] : shadow[2] ^ 0x100;

		atomic_op(_metadata, self, KRDMA_OP_ATOMIC_CMP_SWP, &target, 16,
			  &result, cmp, next, shadow[2]);
		if (match)
			shadow[2] = next;
		atomic_verify(_metadata, self, &target, shadow);
	}
	/* then a fetch-add on the same word sees the swapped value */
	atomic_op(_metadata, self, KRDMA_OP_ATOMIC_FETCH_ADD, &target, 16,
		  &result, 5, 0, shadow[2]);
	shadow[2] += 5;
	atomic_verify(_metadata, self, &target, shadow);
}

/* ------------------------------------------------------------------------
 * Scatter/gather, inline, batches
 */

/* SEND gathered from 3 buffers, received scattered into 2. */
KRDMA_TEST_F(xfer, multi_sge_send)
{
	static const uint32_t slen[3] = { 1000, 3000, 100 };
	static const uint64_t soff[3] = { 0, 17, 50 };
	struct kt_buf s[3], d[2];
	uint32_t d_len[2], total = 0, seed[3];
	uint8_t *expect, *got;
	struct krdma_wr wr, rwr;
	struct krdma_wc wc;
	uint32_t at, i, off;
	bool ud = self->a.transport == KRDMA_TRANSPORT_UD;

	if (ud) {
		/* one packet: keep the total under the MTU */
		total = self->mtu;
	} else {
		total = slen[0] + slen[1] + slen[2];
	}
	expect = malloc(8192);
	got = malloc(8192);
	ASSERT_TRUE(expect && got);
	for (i = 0, off = 0; i < 3; i++) {
		uint32_t len = ud ? total / 3 + (i == 2 ? total % 3 : 0) : slen[i];

		test_cmd_buf_alloc(self->dev.dev_index, 0, soff[i] + len + 7,
				   &s[i]);
		seed[i] = kt_seed(200 + i, len, 0);
		kt_fill(expect + off, len, seed[i]);
		test_cmd_buf_write(s[i].handle, soff[i], expect + off, len);
		off += len;
	}
	ASSERT_EQ(total, off);
	/* b's two pieces: the first ends mid-message (after the GRH for UD) */
	at = ud ? KT_GRH_LEN : 0;
	d_len[0] = at + 1500 * !ud + (ud ? total / 2 : 0);
	d_len[1] = at + total - d_len[0] + 64;
	for (i = 0; i < 2; i++) {
		test_cmd_buf_alloc(self->dev.dev_index,
				   KRDMA_ACCESS_LOCAL_WRITE, d_len[i] + 9,
				   &d[i]);
		memset(got, POISON, d_len[i] + 9);
		test_cmd_buf_write(d[i].handle, 0, got, d_len[i] + 9);
	}

	kt_wr_init(&rwr, 21, KRDMA_OP_RECV, 0);
	kt_wr_sge(&rwr, d[0].handle, 0, d_len[0]);
	kt_wr_sge(&rwr, d[1].handle, 9, d_len[1]);
	test_cmd_post1(self->b.handle, &rwr);
	kt_wr_init(&wr, 22, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	for (i = 0; i < 3; i++)
		kt_wr_sge(&wr, s[i].handle, soff[i],
			  ud ? total / 3 + (i == 2 ? total % 3 : 0) : slen[i]);
	wr_dest(self, &wr);
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->b.handle, 21, 0, &wc);
	EXPECT_EQ(at + total, wc.byte_len);
	expect_wc(_metadata, self->fd, self->a.handle, 22, 0, &wc);

	/* the message, reassembled from b's two pieces */
	test_cmd_buf_read(d[0].handle, 0, got, d_len[0]);
	test_cmd_buf_read(d[1].handle, 9, got + d_len[0],
			  total + at - d_len[0]);
	EXPECT_EQ(0, memcmp(expect, got + at, total));
	/* and nothing around the pieces */
	test_cmd_buf_read(d[1].handle, 0, got, d_len[1] + 9);
	EXPECT_EQ(-1, kt_check_byte(got, 9, POISON));
	EXPECT_EQ(-1, kt_check_byte(got + 9 + total + at - d_len[0],
				    d_len[1] - (total + at - d_len[0]), POISON));
	for (i = 0; i < 3; i++)
		EXPECT_OK(kt_destroy(self->fd, s[i].handle));
	for (i = 0; i < 2; i++)
		EXPECT_OK(kt_destroy(self->fd, d[i].handle));
	free(expect);
	free(got);
}

/* RDMA WRITE gathered from 3 buffers; RDMA READ scattered into 2 (RC). */
KRDMA_TEST_F(xfer, multi_sge_write_read)
{
	static const uint32_t len[3] = { 4096, 1, 9000 };
	uint32_t total = len[0] + len[1] + len[2], i, off;
	struct kt_buf s[3], r[2], target;
	uint8_t *expect, *got;
	struct krdma_wr wr;
	struct krdma_wc wc;

	if (!kt_transport_has(self->a.transport, KRDMA_OP_RDMA_WRITE))
		SKIP(return, "no RDMA WRITE on UD");
	expect = malloc(total);
	got = malloc(total + 256);
	ASSERT_TRUE(expect && got);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, total + 256,
			   &target);
	memset(got, POISON, total + 256);
	test_cmd_buf_write(target.handle, 0, got, total + 256);
	kt_wr_init(&wr, 31, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	for (i = 0, off = 0; i < 3; i++) {
		test_cmd_buf_alloc(self->dev.dev_index, 0, len[i], &s[i]);
		kt_fill(expect + off, len[i], kt_seed(300 + i, len[i], 0));
		test_cmd_buf_write(s[i].handle, 0, expect + off, len[i]);
		kt_wr_sge(&wr, s[i].handle, 0, len[i]);
		off += len[i];
	}
	wr.remote_addr = target.addr + 128;
	wr.rkey = target.rkey;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 31, 0, &wc);
	write_fence(_metadata, self, &wc);
	test_cmd_buf_read(target.handle, 0, got, total + 256);
	EXPECT_EQ(-1, kt_check_byte(got, 128, POISON));
	EXPECT_EQ(0, memcmp(expect, got + 128, total));
	EXPECT_EQ(-1, kt_check_byte(got + 128 + total, 128, POISON));

	if (kt_transport_has(self->a.transport, KRDMA_OP_RDMA_READ) &&
	    kt_dev_lacks(&self->dev, KT_CAP_SGE_RD)) {
		/* the device refuses a READ of two SGEs: EINVAL */
		TH_LOG("no READ into two pieces: %s",
		       kt_dev_lacks(&self->dev, KT_CAP_SGE_RD));
	} else if (kt_transport_has(self->a.transport, KRDMA_OP_RDMA_READ)) {
		/* read it back into two pieces */
		for (i = 0; i < 2; i++)
			test_cmd_buf_alloc(self->dev.dev_index,
					   KRDMA_ACCESS_LOCAL_WRITE, total,
					   &r[i]);
		kt_wr_init(&wr, 32, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, r[0].handle, 5, 5000);
		kt_wr_sge(&wr, r[1].handle, 0, total - 5000);
		wr.remote_addr = target.addr + 128;
		wr.rkey = target.rkey;
		test_cmd_post1(self->a.handle, &wr);
		expect_wc(_metadata, self->fd, self->a.handle, 32, 0, &wc);
		EXPECT_EQ((__u32)KRDMA_OP_RDMA_READ, wc.opcode);
		test_cmd_buf_read(r[0].handle, 5, got, 5000);
		test_cmd_buf_read(r[1].handle, 0, got + 5000, total - 5000);
		EXPECT_EQ(0, memcmp(expect, got, total));
		/* the 5 bytes before the first piece are untouched (zero) */
		test_cmd_buf_read(r[0].handle, 0, got, 5);
		EXPECT_EQ(-1, kt_check_byte(got, 5, 0));
	}
	free(expect);
	free(got);
}

/*
 * Inline SEND: the payload is copied when the WR is posted, so changing the
 * source right after POST does not change what arrives.
 */
KRDMA_TEST_F(xfer, inline_send)
{
	uint32_t n = self->a.caps.max_inline_data, at, i;
	struct krdma_wr wr, rwr;
	struct krdma_wc wc;
	struct xbufs x = {};
	uint32_t seed;

	TH_LOG("max_inline_data granted: %u", n);
	ASSERT_LE(64u, n);
	n = 64;
	at = self->a.transport == KRDMA_TRANSPORT_UD ? KT_GRH_LEN : 0;
	xbufs_alloc(_metadata, self, &x, 4096);
	for (i = 0; i < 4; i++) {
		uint32_t len = i == 3 ? n : 1 + i * 20;

		seed = kt_seed(400, len, i);
		kt_fill(x.src_map, len, seed);
		memset(x.dst_map, POISON, at + len + SLACK);
		kt_wr_init(&rwr, 40 + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&rwr, x.dst.handle, 0, at + 4096);
		test_cmd_post1(self->b.handle, &rwr);
		kt_wr_init(&wr, 50 + i, KRDMA_OP_SEND,
			   KRDMA_WR_SIGNALED | KRDMA_WR_INLINE);
		/* two SGEs of the same buffer */
		kt_wr_sge(&wr, x.src.handle, 0, len / 2);
		kt_wr_sge(&wr, x.src.handle, len / 2, len - len / 2);
		wr_dest(self, &wr);
		test_cmd_post1(self->a.handle, &wr);
		/* scribble over the source before anything completed */
		memset(x.src_map, 0, len);
		expect_wc(_metadata, self->fd, self->b.handle, 40 + i, 0, &wc);
		EXPECT_EQ(at + len, wc.byte_len);
		expect_wc(_metadata, self->fd, self->a.handle, 50 + i, 0, &wc);
		EXPECT_EQ(-1, kt_check(x.dst_map + at, len, seed)) {
			TH_LOG("inline send of %u bytes", len);
		}
		EXPECT_EQ(-1, kt_check_byte(x.dst_map + at + len, SLACK, POISON));
	}
	xbufs_free(self, &x);
}

/*
 * A chain of inline SENDs whose every SGE straddles a chunk (page) edge: an
 * inline SGE is copied from kernel addresses, so each takes two of the
 * device's SGEs, and a WR may name half the queue's max_send_sge of them.
 * Each WR's pieces fill its room in the chain exactly; if they overran it,
 * the next WR's would overwrite them and the payloads arrive mixed up.  One
 * SGE more is refused (EINVAL) before anything is posted.
 */
KRDMA_TEST_F(xfer, inline_chain_chunk_edges)
{
	enum { WRS = 4, PIECE = 4 };
	uint32_t nsge = self->a.caps.max_send_sge / 2, at, i, j, len;
	uint8_t expect[WRS][KRDMA_MAX_SGE * PIECE];
	struct krdma_wr wrs[WRS], rwr;
	uint32_t accepted = 99;
	struct krdma_wc wc;
	struct xbufs x = {};

	ASSERT_LE(1u, nsge);
	len = nsge * PIECE;
	ASSERT_LE(len + PIECE, self->a.caps.max_inline_data);
	at = self->a.transport == KRDMA_TRANSPORT_UD ? KT_GRH_LEN : 0;
	xbufs_alloc(_metadata, self, &x, (WRS * KRDMA_MAX_SGE + 2) * 4096);
	kt_fill(x.src_map, x.len, kt_seed(450, WRS, nsge));
	memset(x.dst_map, POISON, x.len);
	for (i = 0; i < WRS; i++) {
		kt_wr_init(&wrs[i], 80 + i, KRDMA_OP_SEND,
			   KRDMA_WR_SIGNALED | KRDMA_WR_INLINE);
		for (j = 0; j < nsge; j++) {
			/* PIECE / 2 bytes either side of a page edge */
			uint64_t off = (uint64_t)(1 + i * KRDMA_MAX_SGE + j) *
				       4096 - PIECE / 2;

			kt_wr_sge(&wrs[i], x.src.handle, off, PIECE);
			memcpy(&expect[i][j * PIECE], x.src_map + off, PIECE);
		}
		wr_dest(self, &wrs[i]);
	}
	/* one straddling SGE more than the queue has room for: refused */
	kt_wr_sge(&wrs[WRS - 1], x.src.handle, 4096 * (WRS * KRDMA_MAX_SGE + 1) -
		  PIECE / 2, PIECE);
	test_err_post(EINVAL, self->a.handle, wrs, WRS, &accepted);
	EXPECT_EQ((uint32_t)WRS - 1, accepted);
	wrs[WRS - 1].num_sge--;
	for (i = 0; i < WRS; i++) {
		kt_wr_init(&rwr, 70 + i, KRDMA_OP_RECV, 0);
		kt_wr_sge(&rwr, x.dst.handle, (uint64_t)i * 4096, at + 1024);
		test_cmd_post1(self->b.handle, &rwr);
	}
	test_cmd_post(self->a.handle, wrs, WRS, &accepted);
	EXPECT_EQ((uint32_t)WRS, accepted);
	memset(x.src_map, 0, x.len);
	for (i = 0; i < WRS; i++) {
		expect_wc(_metadata, self->fd, self->b.handle, 70 + i, 0, &wc);
		EXPECT_EQ(at + len, wc.byte_len);
		EXPECT_EQ(0, memcmp(x.dst_map + (uint64_t)i * 4096 + at,
				    expect[i], len)) {
			TH_LOG("message %u of the chain is not what its SGEs named", i);
		}
	}
	for (i = 0; i < WRS; i++)
		expect_wc(_metadata, self->fd, self->a.handle, 80 + i, 0, &wc);
	xbufs_free(self, &x);
}

KRDMA_TEST_F(xfer, inline_write)
{
	struct krdma_wr wr;
	struct krdma_wc wc;
	struct xbufs x = {};
	uint32_t seed = kt_seed(500, 48, 0);

	if (!kt_transport_has(self->a.transport, KRDMA_OP_RDMA_WRITE))
		SKIP(return, "no RDMA WRITE on UD");
	xbufs_alloc(_metadata, self, &x, 4096);
	kt_fill(x.src_map, 48, seed);
	memset(x.dst_map, POISON, 4096);
	kt_wr_init(&wr, 60, KRDMA_OP_RDMA_WRITE,
		   KRDMA_WR_SIGNALED | KRDMA_WR_INLINE);
	kt_wr_sge(&wr, x.src.handle, 0, 48);
	wr.remote_addr = x.dst.addr + 1000;
	wr.rkey = x.dst.rkey;
	test_cmd_post1(self->a.handle, &wr);
	memset(x.src_map, 0, 48);
	expect_wc(_metadata, self->fd, self->a.handle, 60, 0, &wc);
	write_fence(_metadata, self, &wc);
	EXPECT_EQ(-1, kt_check_byte(x.dst_map, 1000, POISON));
	EXPECT_EQ(-1, kt_check(x.dst_map + 1000, 48, seed));
	EXPECT_EQ(-1, kt_check_byte(x.dst_map + 1048, 4096 - 1048, POISON));
	xbufs_free(self, &x);
}

/* 16 SENDs in one POST, only the last signaled; 16 RECVs in one POST. */
KRDMA_TEST_F(xfer, batch16_unsignaled)
{
	const uint32_t len = self->a.transport == KRDMA_TRANSPORT_UD ? 700 : 3000;
	uint32_t at = self->a.transport == KRDMA_TRANSPORT_UD ? KT_GRH_LEN : 0;
	uint32_t stride = 4096, i, round;
	struct krdma_wr wrs[16], rwrs[16];
	struct krdma_wc wcs[17];
	struct xbufs x = {};

	xbufs_alloc(_metadata, self, &x, 16 * stride);
	for (round = 0; round < 3; round++) {
		uint32_t accepted = 0;

		memset(x.dst_map, POISON, 16 * stride);
		for (i = 0; i < 16; i++) {
			kt_fill(x.src_map + i * stride, len, kt_seed(600 + i, len, round));
			kt_wr_init(&rwrs[i], 1000 + i, KRDMA_OP_RECV, 0);
			kt_wr_sge(&rwrs[i], x.dst.handle, i * stride, at + len);
			kt_wr_init(&wrs[i], 2000 + i, KRDMA_OP_SEND,
				   i == 15 ? KRDMA_WR_SIGNALED : 0);
			kt_wr_sge(&wrs[i], x.src.handle, i * stride, len);
			wr_dest(self, &wrs[i]);
		}
		test_cmd_post(self->b.handle, rwrs, 16, &accepted);
		EXPECT_EQ(16u, accepted);
		test_cmd_post(self->a.handle, wrs, 16, &accepted);
		EXPECT_EQ(16u, accepted);

		/* b: 16 receives, in order */
		ASSERT_EQ(16, kt_poll_n(self->fd, self->b.handle, wcs, 16, POLL_MS));
		for (i = 0; i < 16; i++) {
			EXPECT_EQ(1000u + i, wcs[i].wr_id);
			EXPECT_EQ(0u, wcs[i].status);
			EXPECT_EQ(at + len, wcs[i].byte_len);
			EXPECT_EQ(-1, kt_check(x.dst_map + i * stride + at, len,
					       kt_seed(600 + i, len, round))) {
				TH_LOG("round %u message %u", round, i);
			}
		}
		/* a: exactly one completion, the signaled last one */
		ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, wcs, 1, POLL_MS));
		EXPECT_EQ(2015u, wcs[0].wr_id);
		EXPECT_EQ(0u, wcs[0].status);
		expect_no_wc(_metadata, self->fd, self->a.handle, 300);
		expect_no_wc(_metadata, self->fd, self->b.handle, 10);
	}
	xbufs_free(self, &x);
}

/* POLL hands out completions in batches of what the caller can take. */
KRDMA_TEST_F(xfer, poll_partial_batches)
{
	struct krdma_wr wrs[8];
	struct krdma_wc wcs[8];
	uint32_t i, got = 0;
	int n;

	for (i = 0; i < 8; i++)
		recv_wr(self, &wrs[i], 3000 + i);
	test_cmd_post(self->b.handle, wrs, 8, NULL);
	for (i = 0; i < 8; i++) {
		kt_wr_init(&wrs[i], 4000 + i, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		wr_dest(self, &wrs[i]);
	}
	test_cmd_post(self->a.handle, wrs, 8, NULL);
	ASSERT_EQ(8, kt_poll_n(self->fd, self->a.handle, wcs, 8, POLL_MS));
	/* b's 8 in chunks of 3, 3, 2 */
	while (got < 8) {
		n = kt_poll(self->fd, self->b.handle, wcs, 3, 5000);
		ASSERT_LT(0, n);
		ASSERT_GE(3, n);
		for (i = 0; i < (uint32_t)n; i++)
			EXPECT_EQ(3000u + got + i, wcs[i].wr_id);
		got += n;
	}
	EXPECT_EQ(8u, got);
	/* nothing left: timeout 0 returns at once with 0 */
	EXPECT_EQ(0, kt_poll(self->fd, self->b.handle, wcs, 8, 0));
}

/* ------------------------------------------------------------------------
 * Busy polling vs interrupt-driven completions
 */

static int fd_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return -1;
	return n == 1 && (p.revents & POLLIN);
}

/*
 * NOTIFY: the fd turns readable when a completion arrives, and stops being
 * readable once POLL has drained the CQ.  Busy-polled: never readable.
 */
KRDMA_TEST_F(xfer, poll_readiness)
{
	struct krdma_wr wr;
	struct krdma_wc wc[4];
	bool notify = variant->flags & KRDMA_CONN_NOTIFY;
	int round;

	EXPECT_EQ(0, fd_readable(self->fd, 0));
	for (round = 0; round < 3; round++) {
		recv_wr(self, &wr, 70 + round);
		test_cmd_post1(self->b.handle, &wr);
		EXPECT_EQ(0, fd_readable(self->fd, 0)) {
			TH_LOG("readable with only a RECV posted");
		}
		kt_wr_init(&wr, 80 + round, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		wr_dest(self, &wr);
		test_cmd_post1(self->a.handle, &wr);
		if (notify) {
			EXPECT_EQ(1, fd_readable(self->fd, POLL_MS));
		} else {
			/* completions there or not, poll(2) stays quiet */
			EXPECT_EQ(0, fd_readable(self->fd, 500));
		}
		/* drain both (asking for more than there is re-arms) */
		ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, wc, 1, POLL_MS));
		EXPECT_EQ(80u + round, wc[0].wr_id);
		ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, wc, 1, POLL_MS));
		EXPECT_EQ(70u + round, wc[0].wr_id);
		EXPECT_EQ(0, kt_poll(self->fd, self->a.handle, wc, 4, 0));
		EXPECT_EQ(0, kt_poll(self->fd, self->b.handle, wc, 4, 0));
		EXPECT_EQ(0, fd_readable(self->fd, 0)) {
			TH_LOG("round %d: still readable after draining", round);
		}
	}
}

struct delayed_send {
	int fd;
	uint32_t conn;
	struct krdma_wr wr;
	int ret;
};

static void *delayed_send_fn(void *arg)
{
	struct delayed_send *d = arg;

	usleep(300 * 1000);
	d->ret = kt_post1(d->fd, d->conn, &d->wr);
	return NULL;
}

/* POLL with a timeout waits for a completion that arrives later. */
KRDMA_TEST_F(xfer, poll_waits_for_completion)
{
	struct delayed_send d = { .fd = self->fd, .conn = self->a.handle };
	struct krdma_wr wr;
	struct krdma_wc wc;
	pthread_t t;
	int n;

	recv_wr(self, &wr, 90);
	test_cmd_post1(self->b.handle, &wr);
	kt_wr_init(&d.wr, 91, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr_dest(self, &d.wr);
	ASSERT_EQ(0, pthread_create(&t, NULL, delayed_send_fn, &d));
	/* one POLL call, sleeping (NOTIFY) or spinning (busy) until the send */
	n = kt_poll(self->fd, self->b.handle, &wc, 1, POLL_MS);
	pthread_join(t, NULL);
	ASSERT_EQ(0, d.ret);
	ASSERT_EQ(1, n);
	EXPECT_EQ(90u, wc.wr_id);
	EXPECT_EQ(0u, wc.status);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(91u, wc.wr_id);
}

/* A signal interrupts a sleeping POLL (EINTR) and nothing is lost. */
static void sigusr1_handler(int sig)
{
}

struct poll_thread {
	int fd;
	uint32_t conn;
	int ret, err;
	int done;
};

static void *poll_thread_fn(void *arg)
{
	struct poll_thread *p = arg;
	struct krdma_wc wc;

	p->ret = kt_poll(p->fd, p->conn, &wc, 1, 60000);
	p->err = errno;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

KRDMA_TEST_F(xfer, poll_interrupted)
{
	struct poll_thread p = { .fd = self->fd, .conn = self->b.handle };
	struct sigaction sa = { .sa_handler = sigusr1_handler };
	struct krdma_wr wr;
	struct krdma_wc wc;
	pthread_t t;

	if (!(variant->flags & KRDMA_CONN_NOTIFY))
		SKIP(return, "busy polling checks signals too, but spins");
	ASSERT_OK(sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&t, NULL, poll_thread_fn, &p));
	kt_signal_until_done(t, SIGUSR1, &p.done);
	pthread_join(t, NULL);
	EXPECT_EQ(-1, p.ret);
	EXPECT_EQ(EINTR, p.err);
	/* the connection still works */
	recv_wr(self, &wr, 95);
	test_cmd_post1(self->b.handle, &wr);
	kt_wr_init(&wr, 96, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr_dest(self, &wr);
	test_cmd_post1(self->a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, self->b.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(95u, wc.wr_id);
}

/* ------------------------------------------------------------------------
 * Failures a peer causes
 */

/*
 * A new connected pair; @a_mod (or NULL) gives a's RC attributes.  Made by
 * hand: the caller has checked KT_NEED_CONN() (a skip here would return
 * only from this function).
 */
static void make_pair(struct __test_metadata *_metadata,
		      FIXTURE_DATA(xfer) *self, uint32_t transport,
		      const struct krdma_conn_modify *a_mod,
		      struct kt_conn *a, struct kt_conn *b)
{
	struct krdma_conn_modify m;

	test_cmd_conn_create(&self->dev, transport, 0, NULL, a);
	test_cmd_conn_create(&self->dev, transport, 0, NULL, b);
	kt_modify_init(&m, a, b);
	if (a_mod) {
		m.flags = a_mod->flags;
		m.timeout = a_mod->timeout;
		m.retry_cnt = a_mod->retry_cnt;
		m.rnr_retry = a_mod->rnr_retry;
		m.min_rnr_timer = a_mod->min_rnr_timer;
		m.access = a_mod->access;
	}
	test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
	test_cmd_conn_connect(b, a);
}

static void expect_state(struct __test_metadata *_metadata, int fd,
			 uint32_t conn, uint32_t state, uint32_t last_status)
{
	struct krdma_conn_query q;

	if (state == KRDMA_CONN_ERR)
		ASSERT_OK(kt_conn_query_err(fd, conn, &q));
	else
		ASSERT_OK(kt_conn_query(fd, conn, &q));
	EXPECT_EQ(state, q.state);
	EXPECT_EQ(last_status, q.last_wc_status);
}

/* WRITE with a wrong rkey: REM_ACCESS_ERR, the QP in ERR, the target untouched. */
KRDMA_TEST_F(xfer, write_bad_rkey)
{
	struct kt_buf src, dst;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t buf[256];

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RC reports remote access errors");
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 256, &src);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 256, &dst);
	kt_fill(buf, 256, 7);
	test_cmd_buf_write(src.handle, 0, buf, 256);
	expect_state(_metadata, self->fd, self->a.handle, KRDMA_CONN_RTS, 0);

	kt_wr_init(&wr, 100, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, src.handle, 0, 256);
	wr.remote_addr = dst.addr;
	wr.rkey = dst.rkey ^ 0x80;	/* the key byte of a valid index */
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 100,
		  KT_WC_REM_ACCESS_ERR, &wc);
	expect_state(_metadata, self->fd, self->a.handle, KRDMA_CONN_ERR,
		     KT_WC_REM_ACCESS_ERR);
	test_cmd_buf_read(dst.handle, 0, buf, 256);
	EXPECT_EQ(-1, kt_check_byte(buf, 256, 0));

	/* later WRs flush; last_wc_status keeps the real error */
	kt_wr_init(&wr, 101, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	EXPECT_OK(kt_post1(self->fd, self->a.handle, &wr));
	expect_wc(_metadata, self->fd, self->a.handle, 101, KT_WC_WR_FLUSH_ERR, &wc);
	expect_state(_metadata, self->fd, self->a.handle, KRDMA_CONN_ERR,
		     KT_WC_REM_ACCESS_ERR);
	EXPECT_OK(kt_destroy(self->fd, self->a.handle));
	EXPECT_OK(kt_destroy(self->fd, src.handle));
	EXPECT_OK(kt_destroy(self->fd, dst.handle));
}

/* The access a buffer was given is what a peer gets. */
KRDMA_TEST_F(xfer, remote_access_denied)
{
	struct {
		uint32_t op, access;
	} cases[] = {
		{ KRDMA_OP_RDMA_WRITE, KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_READ },
		{ KRDMA_OP_RDMA_READ, KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE },
		{ KRDMA_OP_ATOMIC_FETCH_ADD, KRDMA_ACCESS_LOCAL_WRITE | KRDMA_ACCESS_REMOTE_WRITE |
					     KRDMA_ACCESS_REMOTE_READ },
	};
	unsigned int i;

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RC reports remote access errors");
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_RC);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct kt_conn a, b;
		struct kt_buf local, target;
		struct krdma_wr wr;
		struct krdma_wc wc;
		uint8_t buf[64];

		if (kt_dev_lacks_op(&self->dev, cases[i].op)) {
			TH_LOG("no %s case: %s", kt_op_name(cases[i].op),
			       kt_dev_lacks_op(&self->dev, cases[i].op));
			continue;
		}
		make_pair(_metadata, self, KRDMA_TRANSPORT_RC, NULL, &a, &b);
		test_cmd_buf_alloc(self->dev.dev_index,
				   KRDMA_ACCESS_LOCAL_WRITE, 64, &local);
		test_cmd_buf_alloc(self->dev.dev_index, cases[i].access, 64,
				   &target);
		ASSERT_NE(0u, target.rkey);
		kt_fill(buf, 64, i);
		test_cmd_buf_write(local.handle, 0, buf, 64);
		kt_wr_init(&wr, 110 + i, cases[i].op, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, local.handle, 0,
			  cases[i].op == KRDMA_OP_ATOMIC_FETCH_ADD ? 8 : 64);
		wr.remote_addr = target.addr;
		wr.rkey = target.rkey;
		if (cases[i].op == KRDMA_OP_ATOMIC_FETCH_ADD)
			wr.compare_add = 1;
		test_cmd_post1(a.handle, &wr);
		expect_wc(_metadata, self->fd, a.handle, 110 + i,
			  KT_WC_REM_ACCESS_ERR, &wc);
		test_cmd_buf_read(target.handle, 0, buf, 64);
		EXPECT_EQ(-1, kt_check_byte(buf, 64, 0)) {
			TH_LOG("%s changed the target", kt_op_name(cases[i].op));
		}
		kt_destroy(self->fd, a.handle);
		kt_destroy(self->fd, b.handle);
		kt_destroy(self->fd, local.handle);
		kt_destroy(self->fd, target.handle);
	}
}

/* A QP that allows only remote reads refuses a WRITE to a writable buffer. */
KRDMA_TEST_F(xfer, qp_access_denied)
{
	struct krdma_conn_modify mod = {
		.flags = KRDMA_CONN_MODIFY_RC_ATTRS,
		.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 12,
		.access = KRDMA_ACCESS_REMOTE_READ,
	};
	struct kt_conn a, b;
	struct kt_buf local, target;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t buf[64];

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RC only");
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_RC);
	/* b (the target) is the one with restricted access: make_pair(b, a) */
	make_pair(_metadata, self, KRDMA_TRANSPORT_RC, &mod, &b, &a);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 64,
			   &local);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 64, &target);
	/* a READ is allowed */
	kt_wr_init(&wr, 120, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, local.handle, 0, 64);
	wr.remote_addr = target.addr;
	wr.rkey = target.rkey;
	test_cmd_post1(a.handle, &wr);
	expect_wc(_metadata, self->fd, a.handle, 120, 0, &wc);
	kt_fill(buf, 64, 3);
	test_cmd_buf_write(local.handle, 0, buf, 64);
	/* a WRITE is not */
	kt_wr_init(&wr, 121, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, local.handle, 0, 64);
	wr.remote_addr = target.addr;
	wr.rkey = target.rkey;
	test_cmd_post1(a.handle, &wr);
	ASSERT_EQ(1, kt_poll_n(self->fd, a.handle, &wc, 1, POLL_MS));
	EXPECT_EQ(121u, wc.wr_id);
	EXPECT_NE(0u, wc.status);
	TH_LOG("WRITE to a read-only QP: status %u", wc.status);
	test_cmd_buf_read(target.handle, 0, buf, 64);
	EXPECT_EQ(-1, kt_check_byte(buf, 64, 0));
}

/* UC: a WRITE with a bad rkey is dropped silently; the QP keeps working. */
KRDMA_TEST_F(xfer, uc_write_bad_rkey_dropped)
{
	struct kt_buf src, dst;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t buf[128];

	if (self->a.transport != KRDMA_TRANSPORT_UC)
		SKIP(return, "UC only");
	test_cmd_buf_alloc(self->dev.dev_index, 0, 128, &src);
	test_cmd_buf_alloc(self->dev.dev_index,
			   KT_ACCESS_ALL & ~KRDMA_ACCESS_REMOTE_ATOMIC, 128,
			   &dst);
	kt_fill(buf, 128, 11);
	test_cmd_buf_write(src.handle, 0, buf, 128);
	kt_wr_init(&wr, 130, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, src.handle, 0, 128);
	wr.remote_addr = dst.addr;
	wr.rkey = dst.rkey ^ 0x80;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 130, 0, &wc);
	write_fence(_metadata, self, &wc);
	test_cmd_buf_read(dst.handle, 0, buf, 128);
	EXPECT_EQ(-1, kt_check_byte(buf, 128, 0));
	/* the right rkey works */
	wr.rkey = dst.rkey;
	wr.wr_id = 131;
	test_cmd_post1(self->a.handle, &wr);
	expect_wc(_metadata, self->fd, self->a.handle, 131, 0, &wc);
	write_fence(_metadata, self, &wc);
	test_cmd_buf_read(dst.handle, 0, buf, 128);
	EXPECT_EQ(-1, kt_check(buf, 128, 11));
}

/*
 * RNR: a SEND to a peer with no RECV posted, from a QP with rnr_retry 0,
 * fails with RNR_RETRY_EXC_ERR at once; later WRs flush; nothing hangs.
 */
KRDMA_TEST_F(xfer, rnr_retry_exceeded)
{
	struct krdma_conn_modify mod = {
		.flags = KRDMA_CONN_MODIFY_RC_ATTRS,
		.timeout = 14, .retry_cnt = 7, .rnr_retry = 0, .min_rnr_timer = 1,
		.access = KT_ACCESS_RC,
	};
	struct kt_conn a, b;
	struct kt_buf src;
	struct krdma_wr wrs[3];
	struct krdma_wc wc[3];
	uint32_t i;

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RNR NAKs are RC");
	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_RC);
	make_pair(_metadata, self, KRDMA_TRANSPORT_RC, &mod, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	for (i = 0; i < 3; i++) {
		kt_wr_init(&wrs[i], 140 + i, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wrs[i], src.handle, 0, 4096);
	}
	test_cmd_post(a.handle, wrs, 3, NULL);
	ASSERT_EQ(3, kt_poll_n(self->fd, a.handle, wc, 3, POLL_MS));
	EXPECT_EQ(140u, wc[0].wr_id);
	EXPECT_EQ((__u32)KT_WC_RNR_RETRY_EXC_ERR, wc[0].status);
	for (i = 1; i < 3; i++) {
		EXPECT_EQ(140u + i, wc[i].wr_id);
		EXPECT_EQ((__u32)KT_WC_WR_FLUSH_ERR, wc[i].status);
	}
	expect_state(_metadata, self->fd, a.handle, KRDMA_CONN_ERR,
		     KT_WC_RNR_RETRY_EXC_ERR);
	/* b saw nothing and is fine */
	expect_no_wc(_metadata, self->fd, b.handle, 100);
	expect_state(_metadata, self->fd, b.handle, KRDMA_CONN_RTS, 0);
	EXPECT_OK(kt_destroy(self->fd, a.handle));
	EXPECT_OK(kt_destroy(self->fd, b.handle));
}

/*
 * Guard bytes: WRITEs that end exactly at a buffer's end land, touching
 * neither the rest of it nor the buffer allocated next; one byte more is a
 * remote access error and writes nothing.
 */
KRDMA_TEST_F(xfer, write_at_buffer_end)
{
	const uint64_t lens[] = { 4096 + 100, 4096, 12345 };
	struct kt_buf src, x, y;
	uint8_t *buf;
	unsigned int i;

	if (!kt_transport_has(self->a.transport, KRDMA_OP_RDMA_WRITE))
		SKIP(return, "no RDMA WRITE on UD");
	buf = malloc(65536);
	ASSERT_NE(NULL, buf);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 8192, &src);
	kt_fill(buf, 8192, 99);
	test_cmd_buf_write(src.handle, 0, buf, 8192);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		uint64_t len = lens[i];
		uint32_t n = i == 2 ? 1 : 100 + 37 * i;
		struct krdma_wr wr;
		struct krdma_wc wc;
		int64_t bad;

		test_cmd_buf_alloc(self->dev.dev_index,
				   KT_ACCESS_ALL & ~KRDMA_ACCESS_REMOTE_ATOMIC,
				   len, &x);
		test_cmd_buf_alloc(self->dev.dev_index,
				   KT_ACCESS_ALL & ~KRDMA_ACCESS_REMOTE_ATOMIC,
				   len, &y);
		memset(buf, 0xee, len);
		test_cmd_buf_write(x.handle, 0, buf, len);
		test_cmd_buf_write(y.handle, 0, buf, len);

		kt_wr_init(&wr, 150 + i, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
		kt_wr_sge(&wr, src.handle, 0, n);
		wr.remote_addr = x.addr + len - n;
		wr.rkey = x.rkey;
		test_cmd_post1(self->a.handle, &wr);
		expect_wc(_metadata, self->fd, self->a.handle, 150 + i, 0, &wc);
		write_fence(_metadata, self, &wc);

		test_cmd_buf_read(x.handle, 0, buf, len);
		bad = kt_check_byte(buf, len - n, 0xee);
		EXPECT_EQ(-1, bad) {
			TH_LOG("len %llu: byte %lld before the write changed",
			       (unsigned long long)len, (long long)bad);
		}
		EXPECT_EQ(-1, kt_check(buf + len - n, n, 99));
		test_cmd_buf_read(y.handle, 0, buf, len);
		EXPECT_EQ(-1, kt_check_byte(buf, len, 0xee)) {
			TH_LOG("len %llu: the next buffer changed",
			       (unsigned long long)len);
		}
		kt_destroy(self->fd, x.handle);
		kt_destroy(self->fd, y.handle);
	}
	free(buf);
}

/* A WRITE one byte past the end of the buffer: REM_ACCESS_ERR, nothing written. */
KRDMA_TEST_F(xfer, write_past_buffer_end)
{
	struct kt_conn a, b;
	struct kt_buf src, x, y;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint8_t buf[8192];

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RC reports remote access errors");
	KT_SKIP_RXE_DEFECT(KT_RXE_NO_ACCESS_NAK);
	KT_NEED(&self->dev, KT_CAP_REMOTE_ERR_WC);
	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_RC);
	make_pair(_metadata, self, KRDMA_TRANSPORT_RC, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 4096, &src);
	/* not a page multiple: the page behind the end exists but is not the buffer's */
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 5000, &x);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 5000, &y);
	kt_fill(buf, 4096, 5);
	test_cmd_buf_write(src.handle, 0, buf, 4096);
	kt_wr_init(&wr, 160, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, src.handle, 0, 100);
	wr.remote_addr = x.addr + 5000 - 99;
	wr.rkey = x.rkey;
	test_cmd_post1(a.handle, &wr);
	expect_wc(_metadata, self->fd, a.handle, 160, KT_WC_REM_ACCESS_ERR, &wc);
	test_cmd_buf_read(x.handle, 0, buf, 5000);
	EXPECT_EQ(-1, kt_check_byte(buf, 5000, 0));
	test_cmd_buf_read(y.handle, 0, buf, 5000);
	EXPECT_EQ(-1, kt_check_byte(buf, 5000, 0));
}

/*
 * Misaligned atomic: refused, by POST (EINVAL) or with an error completion
 * (the header asks for 8-byte alignment; krdma leaves the check to the
 * device), and the target is untouched.
 */
KRDMA_TEST_F(xfer, atomic_misaligned)
{
	struct kt_conn a, b;
	struct kt_buf target, result;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint64_t words[2] = { 1, 2 }, now[2];

	if (self->a.transport != KRDMA_TRANSPORT_RC)
		SKIP(return, "RC only");
	KT_NEED(&self->dev, KT_CAP_ATOMIC);
	KT_NEED_CONN(&self->dev, KRDMA_TRANSPORT_RC);
	make_pair(_metadata, self, KRDMA_TRANSPORT_RC, NULL, &a, &b);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE |
			   KRDMA_ACCESS_REMOTE_ATOMIC, 16, &target);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE, 8,
			   &result);
	test_cmd_buf_write(target.handle, 0, words, 16);
	kt_wr_init(&wr, 170, KRDMA_OP_ATOMIC_FETCH_ADD, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, result.handle, 0, 8);
	wr.remote_addr = target.addr + 4;
	wr.rkey = target.rkey;
	wr.compare_add = 1;
	if (kt_post1(self->fd, a.handle, &wr)) {
		/* rxe refuses it at post time */
		EXPECT_EQ(EINVAL, errno);
		TH_LOG("misaligned atomic refused by POST: %s", strerror(errno));
	} else {
		ASSERT_EQ(1, kt_poll_n(self->fd, a.handle, &wc, 1, POLL_MS));
		EXPECT_NE(0u, wc.status);
		TH_LOG("misaligned atomic: status %u", wc.status);
	}
	test_cmd_buf_read(target.handle, 0, now, 16);
	EXPECT_EQ(1ull, now[0]);
	EXPECT_EQ(2ull, now[1]);
}

TEST_HARNESS_MAIN
