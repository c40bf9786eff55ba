// SPDX-License-Identifier: GPL-2.0
/*
 * krdma address handles: every validation failure of AH_CREATE, and
 * an AH's use and destruction.
 */
#include "krdma_test.h"

#define POLL_MS 20000

KT_OBJ_FIXTURE()

/* ------------------------------------------------------------------------
 * KRDMA_AH_CREATE
 */

KRDMA_TEST_F(obj, ah_create_not_ud)
{
	struct kt_conn c;
	uint32_t ah, t;

	for (t = KRDMA_TRANSPORT_RC; t <= KRDMA_TRANSPORT_UC; t++) {
		test_cmd_conn_create(&self->dev, t, 0, NULL, &c);
		EXPECT_ERRNO(EINVAL, kt_ah_create(self->fd, c.handle, self->dev.gid, &ah),
			     "transport %u", t);
	}
}

KRDMA_TEST_F(obj, ah_create_unknown_conn)
{
	struct kt_buf b;
	uint32_t ah;

	test_err_ah_create(ENOENT, 0, self->dev.gid, &ah);
	test_err_ah_create(ENOENT, 777777, self->dev.gid, &ah);
	test_cmd_buf_alloc(self->dev.dev_index, 0, 64, &b);
	test_err_ah_create(ENOENT, b.handle, self->dev.gid, &ah);
}

KRDMA_TEST_F(obj, ah_create_flags_reserved)
{
	struct krdma_ah_create a;
	struct kt_conn c;
	unsigned int bit;

	test_cmd_conn_create(&self->dev, KRDMA_TRANSPORT_UD, 0, NULL, &c);
	for (bit = 0; bit < 32; bit++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.conn_handle = c.handle;
		memcpy(a.dest_gid, self->dev.gid, 16);
		a.flags = 1u << bit;
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->fd, KRDMA_AH_CREATE, &a),
			     "flag bit %u", bit);
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.conn_handle = c.handle;
	memcpy(a.dest_gid, self->dev.gid, 16);
	a.__reserved = 1;
	test_err_ioctl(EINVAL, KRDMA_AH_CREATE, &a);
	/* a LID is 16 bits: more is refused, not cut */
	a.__reserved = 0;
	a.dest_lid = 1u << 16;
	test_err_ioctl(EINVAL, KRDMA_AH_CREATE, &a);
}

/* An AH is a handle of its own: destroyed, posting with it is ENOENT. */
KRDMA_TEST_F(obj, ah_create_destroy)
{
	struct kt_conn c;
	struct krdma_wr wr;
	uint32_t ah, ah2;

	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &c);
	test_cmd_ah_create(c.handle, self->dev.gid, &ah);
	test_cmd_ah_create(c.handle, self->dev.gid, &ah2);
	EXPECT_NE(ah, ah2);
	EXPECT_NE(c.handle, ah);
	test_cmd_destroy(ah);
	kt_wr_init(&wr, 1, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	wr.ah_handle = ah;
	wr.remote_qpn = c.qp_num;
	test_err_post1(ENOENT, c.handle, &wr);
	/* an AH outlives the connection it was made on */
	test_cmd_destroy(c.handle);
	test_cmd_conn_self(&self->dev, KRDMA_TRANSPORT_UD, NULL, &c);
	wr.ah_handle = ah2;
	wr.remote_qpn = c.qp_num;
	EXPECT_OK(kt_post1(self->fd, c.handle, &wr));
	{
		struct krdma_wc wc;

		ASSERT_EQ(1, kt_poll_n(self->fd, c.handle, &wc, 1, POLL_MS));
		EXPECT_EQ(0u, wc.status);
	}
}

TEST_HARNESS_MAIN
