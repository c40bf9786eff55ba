// SPDX-License-Identifier: GPL-2.0
/*
 * krdma connections (queue pairs): every validation failure of
 * CONN_CREATE, CONN_MODIFY and CONN_QUERY (one test each, the iommufd
 * way), and the state machine they drive.
 */
#include "krdma_test.h"

KT_OBJ_FIXTURE()

/* ------------------------------------------------------------------------
 * KRDMA_CONN_CREATE
 */

static void conn_create_init(struct krdma_conn_create *c, const struct kt_dev *d,
			     uint32_t transport)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->dev_index = d->dev_index;
	c->port_num = d->port_num;
	c->gid_index = d->gid_index;
	c->transport = transport;
}

/* Where a QP is rdma_cm's alone (iWARP), CONN_CREATE is EPROTONOSUPPORT. */
KRDMA_TEST_F(obj, conn_create_refused_without_manual_conn)
{
	const char *why = kt_dev_lacks(&self->dev, KT_CAP_MANUAL_CONN);
	struct kt_conn c;
	uint32_t t;

	if (!why)
		SKIP(return, "%s connects by hand", self->dev.info.name);
	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		EXPECT_EQ(-1, kt_conn_create(self->fd, &self->dev, t, 0, NULL,
					     &c));
		EXPECT_EQ(EPROTONOSUPPORT, errno) {
			TH_LOG("%s: transport %u: %s", why, t, strerror(errno));
		}
	}
}

KRDMA_TEST_F(obj, conn_create_outputs)
{
	struct krdma_conn_create c;
	struct krdma_conn_query q;
	uint32_t t;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		if (kt_dev_lacks_transport(&self->dev, t)) {
			TH_LOG("%s", kt_dev_lacks_transport(&self->dev, t));
			continue;
		}
		conn_create_init(&c, &self->dev, t);
		c.handle = c.qp_num = c.psn = c.lid = 0xdeadbeef;
		test_cmd_ioctl(KRDMA_CONN_CREATE, &c);
		EXPECT_NE(0u, c.handle);
		EXPECT_NE(0u, c.qp_num);
		EXPECT_GT(1u << 24, c.qp_num);
		EXPECT_GT(1u << 24, c.psn);
		if (self->dev.port.link_layer == KRDMA_LINK_LAYER_ETHERNET)
			EXPECT_EQ(0u, c.lid);
		EXPECT_EQ(0, memcmp(c.gid, self->dev.gid, 16));
		/* defaults filled in */
		EXPECT_LE(1u, c.caps.max_send_wr);
		EXPECT_LE(1u, c.caps.max_recv_wr);
		EXPECT_LE(1u, c.caps.max_send_sge);
		EXPECT_LE(1u, c.caps.max_recv_sge);
		EXPECT_LE(c.caps.max_send_wr + c.caps.max_recv_wr, c.caps.cq_depth);
		EXPECT_EQ(0u, c.srq_handle);

		test_cmd_conn_query(c.handle, &q);
		EXPECT_EQ((__u32)KRDMA_CONN_RESET, q.state);
		EXPECT_EQ(t, q.transport);
		EXPECT_EQ(c.qp_num, q.qp_num);
		EXPECT_EQ(0u, q.dest_qp_num);
		/* no path before RTR; UD: the port's MTU bounds each message */
		EXPECT_EQ(t == KRDMA_TRANSPORT_UD ?
			  self->dev.port.active_mtu : 0u, q.path_mtu);
		EXPECT_EQ(0u, q.last_wc_status);
	}
}

/* What was asked for is granted (at least). */
KRDMA_TEST_F(obj, conn_create_caps_granted)
{
	struct krdma_conn_create c;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.caps.max_send_wr = 17;
	c.caps.max_recv_wr = 9;
	c.caps.max_send_sge = 3;
	c.caps.max_recv_sge = 2;
	c.caps.max_inline_data = 64;
	c.caps.cq_depth = 40;
	test_cmd_ioctl(KRDMA_CONN_CREATE, &c);
	EXPECT_LE(17u, c.caps.max_send_wr);
	EXPECT_LE(9u, c.caps.max_recv_wr);
	EXPECT_LE(3u, c.caps.max_send_sge);
	EXPECT_LE(2u, c.caps.max_recv_sge);
	EXPECT_LE(64u, c.caps.max_inline_data);
	EXPECT_LE(40u, c.caps.cq_depth);
	EXPECT_GE((__u32)KRDMA_MAX_SGE, c.caps.max_send_sge);
	TH_LOG("granted send_wr %u recv_wr %u send_sge %u recv_sge %u inline %u cq %u",
	       c.caps.max_send_wr, c.caps.max_recv_wr, c.caps.max_send_sge,
	       c.caps.max_recv_sge, c.caps.max_inline_data, c.caps.cq_depth);
}

KRDMA_TEST_F(obj, conn_create_bad_gid_index)
{
	struct krdma_port_info *p = &self->dev.port;
	struct krdma_conn_create c;
	uint32_t idx[4] = { p->gid_tbl_len, p->gid_tbl_len + 1000, UINT32_MAX };
	unsigned int i, n = 3;
	uint32_t k;

	/* and an empty slot inside the table, if there is one */
	for (k = 0; k < p->gid_tbl_len && n == 3; k++) {
		uint32_t g;
		bool used = false;

		for (g = 0; g < p->num_gids; g++)
			if (self->snap.gids[p->first_gid + g].gid_index == k)
				used = true;
		if (!used)
			idx[n++] = k;
	}
	for (i = 0; i < n; i++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.gid_index = idx[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "gid_index %u (table of %u)", idx[i], p->gid_tbl_len);
	}
}

KRDMA_TEST_F(obj, conn_create_bad_port)
{
	uint32_t ports[] = { 0, self->dev.info.phys_port_cnt + 1, 255, UINT32_MAX };
	struct krdma_conn_create c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ports); i++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.port_num = ports[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "port %u", ports[i]);
	}
}

KRDMA_TEST_F(obj, conn_create_bad_transport)
{
	uint32_t t[] = { 3, 4, 0x100, UINT32_MAX };
	struct krdma_conn_create c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		conn_create_init(&c, &self->dev, t[i]);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "transport %u", t[i]);
	}
}

KRDMA_TEST_F(obj, conn_create_caps_too_big)
{
	struct krdma_device_info *d = &self->dev.info;
	uint32_t max_ssge = d->max_send_sge < KRDMA_MAX_SGE ? d->max_send_sge : KRDMA_MAX_SGE;
	uint32_t max_rsge = d->max_recv_sge < KRDMA_MAX_SGE ? d->max_recv_sge : KRDMA_MAX_SGE;
	struct krdma_conn_create c;
	unsigned int f;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	for (f = 0; f < 6; f++) {
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		switch (f) {
		case 0: c.caps.max_send_wr = d->max_qp_wr + 1; break;
		case 1: c.caps.max_recv_wr = d->max_qp_wr + 1; break;
		case 2: c.caps.max_send_sge = max_ssge + 1; break;
		case 3: c.caps.max_recv_sge = max_rsge + 1; break;
		case 4: c.caps.max_inline_data = d->max_inline_data + 1; break;
		case 5: c.caps.cq_depth = d->max_cqe + 1; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "caps field %u", f);
	}
	/* UINT32_MAX everywhere too */
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_UD);
	c.caps.max_send_wr = UINT32_MAX;
	test_err_ioctl(EINVAL, KRDMA_CONN_CREATE, &c);
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_UD);
	c.caps.max_send_sge = KRDMA_MAX_SGE + 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_CREATE, &c);
}

KRDMA_TEST_F(obj, conn_create_unknown_flags)
{
	struct krdma_conn_create c;
	unsigned int bit;

	for (bit = 2; bit < 32; bit++) {	/* NOTIFY, SRQ are known */
		conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
		c.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_CREATE, &c),
			     "flag bit %u", bit);
	}
}

KRDMA_TEST_F(obj, conn_create_srq_handle)
{
	struct krdma_conn_create c;
	struct kt_buf b;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.srq_handle = b.handle;
	test_err_ioctl(EINVAL, KRDMA_CONN_CREATE, &c);
	c.srq_handle = 12345;
	test_err_ioctl(EINVAL, KRDMA_CONN_CREATE, &c);
}

KRDMA_TEST_F(obj, conn_create_reserved)
{
	struct krdma_conn_create c;

	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_CREATE, &c);
}

KRDMA_TEST_F(obj, conn_create_enodev)
{
	struct krdma_conn_create c;

	conn_create_init(&c, &self->dev, KRDMA_TRANSPORT_RC);
	c.dev_index = krdma_snap_unused_index(&self->snap);
	test_err_ioctl(ENODEV, KRDMA_CONN_CREATE, &c);
}

/* ------------------------------------------------------------------------
 * KRDMA_CONN_MODIFY / KRDMA_CONN_QUERY
 */

/*
 * A fresh connection and a MODIFY towards itself, to be spoilt by the test;
 * the test skips where the device makes no connection by hand.
 */
#define modify_setup(_metadata, self, transport, c, m)			\
	do {								\
		KT_NEED_CONN(&(self)->dev, transport);			\
		test_cmd_conn_create(&(self)->dev, transport, 0, NULL, c); \
		kt_modify_init(m, c, c);				\
	} while (0)

static void rc_attrs(struct krdma_conn_modify *m, uint32_t access)
{
	m->flags = KRDMA_CONN_MODIFY_RC_ATTRS;
	m->timeout = 14;
	m->retry_cnt = 7;
	m->rnr_retry = 7;
	m->min_rnr_timer = 12;
	m->access = access;
}

/* After a refused MODIFY the connection is still in RESET and can connect. */
static void modify_still_usable(struct __test_metadata *_metadata,
				FIXTURE_DATA(obj) *self, struct kt_conn *c)
{
	struct krdma_conn_query q;

	test_cmd_conn_query(c->handle, &q);
	EXPECT_EQ((__u32)KRDMA_CONN_RESET, q.state);
	EXPECT_OK(kt_conn_connect(self->fd, c, c));
	test_cmd_conn_query(c->handle, &q);
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
}

KRDMA_TEST_F(obj, conn_modify_query_rts)
{
	struct kt_conn a, b;
	struct krdma_conn_query q;
	uint32_t t;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		test_cmd_conn_pair(&self->dev, t, 0, NULL, &a, &b);
		test_cmd_conn_query(a.handle, &q);
		EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
		EXPECT_EQ(t, q.transport);
		EXPECT_EQ(a.qp_num, q.qp_num);
		/* UD has no peer; its MTU is the port's */
		EXPECT_EQ(self->dev.port.active_mtu, q.path_mtu);
		if (t != KRDMA_TRANSPORT_UD) {
			EXPECT_EQ(b.qp_num, q.dest_qp_num);
		} else {
			EXPECT_EQ(0u, q.dest_qp_num);
		}
		EXPECT_EQ(0u, q.last_wc_status);
	}
}

/* CONN_QUERY of @handle with PSNs the kernel must overwrite */
static int psn_query(int fd, uint32_t handle, struct krdma_conn_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	q->sq_psn = 0xabcdef;
	q->rq_psn = 0xabcdef;
	return ioctl(fd, KRDMA_CONN_QUERY, q);
}

/*
 * The PSNs a connected RC or UC QP sends next and expects next: before any
 * traffic, its own starting PSN and its peer's, as `rdma resource show qp`
 * lists them; 0 before RTR, and always on UD.  Out fields: what the
 * caller passed in is overwritten.
 */
KRDMA_TEST_F(obj, conn_query_psns)
{
	struct kt_conn a, b;
	struct krdma_conn_query q;
	struct kt_proc rdma = {};
	char cmd[96], want[64];
	uint32_t t;

	KT_NEED(&self->dev, KT_CAP_PSN);
	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UD; t++) {
		test_cmd_conn_create(&self->dev, t, 0, NULL, &a);
		ASSERT_OK(psn_query(self->fd, a.handle, &q));
		EXPECT_EQ(0u, q.sq_psn);
		EXPECT_EQ(0u, q.rq_psn);
		test_cmd_conn_pair(&self->dev, t, 0, NULL, &a, &b);
		ASSERT_OK(psn_query(self->fd, a.handle, &q));
		if (t == KRDMA_TRANSPORT_UD) {
			EXPECT_EQ(0u, q.sq_psn);
			EXPECT_EQ(0u, q.rq_psn);
			continue;
		}
		EXPECT_EQ(a.psn, q.sq_psn);
		EXPECT_EQ(b.psn, q.rq_psn);
		if (!krdma_have_cmd("rdma"))
			continue;
		snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u",
			 a.qp_num);
		ASSERT_OK(kt_spawn(&rdma, "krdma_qp", "rdma", false, cmd));
		kt_reap(&rdma);
		snprintf(want, sizeof(want), "sq-psn %u ", a.psn);
		EXPECT_NE(NULL, strstr(kt_out(&rdma), want))
			TH_LOG("%s: %s", want, kt_out(&rdma));
		snprintf(want, sizeof(want), "rq-psn %u ", b.psn);
		EXPECT_NE(NULL, strstr(kt_out(&rdma), want))
			TH_LOG("%s: %s", want, kt_out(&rdma));
		kt_proc_end(&rdma);
	}
}

/*
 * A caller built before sq_psn and rq_psn (a 40-byte struct) is answered
 * as before, and nothing is written past its struct.
 */
KRDMA_TEST_F(obj, conn_query_first_version)
{
	const size_t first = offsetof(struct krdma_conn_query, sq_psn);
	uint8_t buf[sizeof(struct krdma_conn_query) + 16];
	struct krdma_conn_query *q = (void *)buf;
	struct kt_conn a, b;
	size_t i;

	ASSERT_EQ(40u, first);
	test_cmd_conn_pair(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &a, &b);
	memset(buf, 0xa5, sizeof(buf));
	q->size = first;
	q->flags = 0;
	q->handle = a.handle;
	q->__reserved = 0;
	test_cmd_ioctl(KRDMA_CONN_QUERY, q);
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q->state);
	EXPECT_EQ(a.qp_num, q->qp_num);
	EXPECT_EQ(kt_peer_qpn(&self->dev, b.qp_num), q->dest_qp_num);
	for (i = first; i < sizeof(buf); i++)
		EXPECT_EQ(0xa5, buf[i]) TH_LOG("byte %zu written", i);
}

KRDMA_TEST_F(obj, conn_modify_twice)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	test_cmd_conn_query(c.handle, &q);
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
}

KRDMA_TEST_F(obj, conn_modify_path_mtu_invalid)
{
	uint32_t mtus[] = { 1, 100, 255, 257, 300, 1000, 1500, 3000, 8192, UINT32_MAX };
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int i;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (i = 0; i < ARRAY_SIZE(mtus); i++) {
		m.path_mtu = mtus[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "path_mtu %u", mtus[i]);
	}
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_path_mtu_above_active)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	uint32_t mtu;
	int n = 0;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (mtu = self->dev.port.active_mtu * 2; mtu <= 4096; mtu *= 2, n++) {
		m.path_mtu = mtu;
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "path_mtu %u over active %u", mtu,
			     self->dev.port.active_mtu);
	}
	if (!n)
		SKIP(return, "active MTU is 4096");
	modify_still_usable(_metadata, self, &c);
}

/* Every valid MTU up to the active one is taken and reported. */
KRDMA_TEST_F(obj, conn_modify_path_mtu_valid)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;
	uint32_t mtu;

	for (mtu = 256; mtu <= self->dev.port.active_mtu; mtu *= 2) {
		modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
		m.path_mtu = mtu;
		test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
		test_cmd_conn_query(c.handle, &q);
		EXPECT_EQ(mtu, q.path_mtu);
		kt_destroy(self->fd, c.handle);
	}
}

KRDMA_TEST_F(obj, conn_modify_rc_attrs_without_flag)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 5; f++) {
		kt_modify_init(&m, &c, &c);
		switch (f) {
		case 0: m.timeout = 14; break;
		case 1: m.retry_cnt = 7; break;
		case 2: m.rnr_retry = 7; break;
		case 3: m.min_rnr_timer = 12; break;
		case 4: m.access = KRDMA_ACCESS_REMOTE_READ; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "field %u without RC_ATTRS", f);
	}
	modify_still_usable(_metadata, self, &c);
}

/* 24-bit QP numbers and PSNs, a 16-bit LID: more is refused, not cut */
KRDMA_TEST_F(obj, conn_modify_field_widths)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 4; f++) {
		kt_modify_init(&m, &c, &c);
		switch (f) {
		case 0: m.dest_qp_num = c.qp_num | 1u << 24; break;
		case 1: m.dest_psn = 1u << 24; break;
		case 2: m.dest_psn = UINT32_MAX; break;
		case 3: m.dest_lid = 1u << 16; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "case %u", f);
	}
	modify_still_usable(_metadata, self, &c);
}

/* The struct's own checks come before the handle's lookup. */
KRDMA_TEST_F(obj, conn_modify_checks_before_lookup)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.handle = 0xfffff;
	m.flags = 1u << 7;
	test_err_ioctl(EOPNOTSUPP, KRDMA_CONN_MODIFY, &m);
	m.flags = 0;
	m.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	m.__reserved = 0;
	test_err_ioctl(ENOENT, KRDMA_CONN_MODIFY, &m);
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_timeout_zero)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	rc_attrs(&m, KT_ACCESS_RC);
	m.timeout = 0;
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_rc_attrs_range)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int f;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (f = 0; f < 8; f++) {
		kt_modify_init(&m, &c, &c);
		rc_attrs(&m, KT_ACCESS_RC);
		switch (f) {
		case 0: m.timeout = 32; break;
		case 1: m.timeout = 255; break;
		case 2: m.retry_cnt = 8; break;
		case 3: m.retry_cnt = 255; break;
		case 4: m.rnr_retry = 8; break;
		case 5: m.rnr_retry = 255; break;
		case 6: m.min_rnr_timer = 32; break;
		case 7: m.min_rnr_timer = 255; break;
		}
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "case %u", f);
	}
	/* the edges are fine */
	kt_modify_init(&m, &c, &c);
	rc_attrs(&m, KT_ACCESS_RC);
	m.timeout = 31;
	m.retry_cnt = 0;
	m.rnr_retry = 0;
	m.min_rnr_timer = 31;
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

KRDMA_TEST_F(obj, conn_modify_access_beyond_transport)
{
	struct {
		uint32_t transport, access;
	} bad[] = {
		{ KRDMA_TRANSPORT_RC, KRDMA_ACCESS_LOCAL_WRITE },
		{ KRDMA_TRANSPORT_RC, KRDMA_ACCESS_MW_BIND },
		{ KRDMA_TRANSPORT_RC, 1u << 5 },
		{ KRDMA_TRANSPORT_RC, UINT32_MAX },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_READ },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_ATOMIC },
		{ KRDMA_TRANSPORT_UC, KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ },
		{ KRDMA_TRANSPORT_UD, KRDMA_ACCESS_REMOTE_WRITE },
		{ KRDMA_TRANSPORT_UD, KRDMA_ACCESS_REMOTE_READ },
	};
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		modify_setup(_metadata, self, bad[i].transport, &c, &m);
		rc_attrs(&m, bad[i].access);
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "transport %u access 0x%x", bad[i].transport,
			     bad[i].access);
		kt_destroy(self->fd, c.handle);
	}
	/* what each transport has is fine */
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UC, &c, &m);
	rc_attrs(&m, KRDMA_ACCESS_REMOTE_WRITE);
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	rc_attrs(&m, 0);
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
}

KRDMA_TEST_F(obj, conn_modify_rd_atomic_too_big)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.max_rd_atomic = self->dev.info.max_qp_init_rd_atom + 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	kt_modify_init(&m, &c, &c);
	m.max_dest_rd_atomic = self->dev.info.max_qp_rd_atom + 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_unknown_flags)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	unsigned int bit;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	for (bit = 1; bit < 32; bit++) {
		kt_modify_init(&m, &c, &c);
		m.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_CONN_MODIFY, &m),
			     "flag bit %u", bit);
	}
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_reserved)
{
	struct kt_conn c;
	struct krdma_conn_modify m;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_RC, &c, &m);
	m.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_MODIFY, &m);
	modify_still_usable(_metadata, self, &c);
}

KRDMA_TEST_F(obj, conn_modify_unknown_handle)
{
	struct kt_conn c = {};
	struct krdma_conn_modify m;
	struct kt_buf b;

	kt_modify_init(&m, &c, &c);
	m.handle = 424242;
	test_err_ioctl(ENOENT, KRDMA_CONN_MODIFY, &m);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	m.handle = b.handle;
	test_err_ioctl(ENOENT, KRDMA_CONN_MODIFY, &m);
}

/* UD ignores the destination fields. */
KRDMA_TEST_F(obj, conn_modify_ud_ignores_dest)
{
	struct kt_conn c;
	struct krdma_conn_modify m;
	struct krdma_conn_query q;

	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	m.dest_qp_num = 0xffffff;
	m.dest_psn = UINT32_MAX;
	m.dest_lid = 77;
	memset(m.dest_gid, 0xee, 16);
	test_cmd_ioctl(KRDMA_CONN_MODIFY, &m);
	test_cmd_conn_query(c.handle, &q);
	EXPECT_EQ((__u32)KRDMA_CONN_RTS, q.state);
}

/* A controlled Q_Key (bit 31) needs CAP_NET_RAW. */
static int qkey_child(const struct kt_dev *dev)
{
	struct krdma_conn_modify m;
	struct kt_conn c;
	int fd;

	if (kt_drop_cap(13 /* CAP_NET_RAW */))
		return 10;
	fd = krdma_open();
	if (fd < 0)
		return 11;
	if (kt_conn_create(fd, dev, KRDMA_TRANSPORT_UD, 0, NULL, &c))
		return 12;
	kt_modify_init(&m, &c, NULL);
	m.qkey = 0x80000001u;
	if (!ioctl(fd, KRDMA_CONN_MODIFY, &m))
		return 13;
	if (errno != EPERM)
		return 14;
	m.qkey = 0x7fffffff;
	if (ioctl(fd, KRDMA_CONN_MODIFY, &m))
		return 15;
	close(fd);
	return 0;
}

KRDMA_TEST_F(obj, conn_modify_qkey_needs_cap_net_raw)
{
	struct krdma_conn_modify m;
	struct kt_conn c;
	int status;
	pid_t pid;

	/* root may */
	modify_setup(_metadata, self, KRDMA_TRANSPORT_UD, &c, &m);
	m.qkey = 0x80000001u;
	EXPECT_OK(ioctl(self->fd, KRDMA_CONN_MODIFY, &m));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(qkey_child(&self->dev));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("qkey child failed at step %d", WEXITSTATUS(status));
	}
}

KRDMA_TEST_F(obj, conn_query_errors)
{
	struct krdma_conn_query q;
	struct kt_conn c;
	struct kt_buf b;
	unsigned int bit;

	KT_NEED(&self->dev, KT_CAP_MANUAL_CONN);
	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_RC, 0, NULL, &c);
	for (bit = 0; bit < 32; bit++) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.handle = c.handle;
		q.flags = 1u << bit;
		test_err_ioctl(EOPNOTSUPP, KRDMA_CONN_QUERY, &q);
	}
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.handle = c.handle;
	q.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_CONN_QUERY, &q);
	test_err_conn_query(ENOENT, 999999, &q);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	test_err_conn_query(ENOENT, b.handle, &q);
}

TEST_HARNESS_MAIN
