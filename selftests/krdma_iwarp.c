// SPDX-License-Identifier: GPL-2.0
/*
 * krdma on an iWARP device, found by what it is (node type RNIC), never by
 * its driver's name: the device whose port's netdev holds $SIW0_ADDR, else
 * the first RNIC with an active port.  Without one every test skips,
 * naming what is missing.
 *
 * What iWARP lacks is refused up front with the errno uapi/krdma.h
 * documents ("Transports and what they refuse"): UC and UD QPs and
 * connections made by hand (EPROTONOSUPPORT), immediate data and atomics
 * without atomic_cap (EOPNOTSUPP), a READ into more SGEs than max_sge_rd
 * (EINVAL).  What it has moves verified data: buffers, and SEND, WRITE and
 * READ over an rdma_cm connection; and krdmactl's serve, send, read,
 * write, rping and bench write and read work there.
 */
#include "krdma_test.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>

#define IW_POLL_MS 20000
#define IW_LEN 8192

/* The IPv4 address of @ifname, into @addr; false if it has none. */
static bool iw_netdev_addr(const char *ifname, char *addr, size_t len)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, ifname))
			continue;
		found = inet_ntop(AF_INET,
				  &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				  addr, len);
	}
	freeifaddrs(ifa);
	return found;
}

/*
 * The iWARP device: the RNIC whose active port's netdev holds $SIW0_ADDR
 * (when set), else the first RNIC with an active port whose netdev has an
 * IPv4 address.  Its address goes into @addr.  NULL, or why there is none.
 */
static const char *iw_dev_pick(int fd, struct kt_dev *d, char *addr,
			       size_t len)
{
	const char *want = getenv("SIW0_ADDR");
	bool rnic = false, port_up = false;
	struct krdma_snap s;
	uint32_t i, p;
	bool found = false;

	if (want && !*want)
		want = NULL;
	memset(d, 0, sizeof(*d));
	addr[0] = 0;
	if (krdma_snap_get(fd, 0, 0, &s))
		return "KRDMA_QUERY_DEVICES failed";
	for (i = 0; i < s.ndev && !found; i++) {
		struct krdma_device_info *di = &s.devs[i];

		if (di->node_type != KRDMA_NODE_RNIC)
			continue;
		rnic = true;
		for (p = 0; p < di->phys_port_cnt && !found; p++) {
			struct krdma_port_info *pi = &s.ports[di->first_port + p];
			char a[INET_ADDRSTRLEN];

			if (pi->state != KRDMA_PORT_ACTIVE)
				continue;
			port_up = true;
			if (!iw_netdev_addr(pi->netdev, a, sizeof(a)))
				continue;
			if (want && strcmp(a, want))
				continue;
			d->info = *di;
			d->port = *pi;
			d->dev_index = di->dev_index;
			d->port_num = pi->port_num;
			snprintf(addr, len, "%s", a);
			found = true;
		}
	}
	krdma_snap_free(&s);
	if (found)
		return NULL;
	if (!rnic)
		return "no iWARP device (none of node type RNIC; siw: "
		       "rdma link add siw0 type siw netdev DEV)";
	if (!port_up)
		return "no iWARP device with an active port";
	if (want)	/* the bed made one there: a failure, not a skip */
		return NULL;
	return "no iWARP port whose netdev has an IPv4 address";
}

FIXTURE(iwarp)
{
	int sfd, cfd;		/* server and client sessions */
	int fd;			/* cfd, for the test_cmd_*() fixtures */
	struct kt_dev dev;
	char addr[INET_ADDRSTRLEN];
	uint32_t listener;
	uint16_t port;
};

FIXTURE_SETUP(iwarp)
{
	const char *why;

	self->sfd = -1;
	self->cfd = -1;
	self->fd = -1;
	self->sfd = kt_session_open(_metadata);
	if (self->sfd < 0)
		return;
	why = iw_dev_pick(self->sfd, &self->dev, self->addr,
			  sizeof(self->addr));
	if (why)
		SKIP(return, "%s", why);
	/* an RNIC's port is up, but none has a netdev holding SIW0_ADDR */
	ASSERT_TRUE(self->addr[0]) {
		TH_LOG("SIW0_ADDR %s: on no iWARP port's netdev",
		       getenv("SIW0_ADDR"));
	}
	self->cfd = krdma_open();
	ASSERT_LE(0, self->cfd);
	self->fd = self->cfd;
	ASSERT_OK(kc_listen(self->sfd, self->addr, 0, &self->listener,
			    &self->port));
}

FIXTURE_TEARDOWN(iwarp)
{
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->sfd >= 0)
		close(self->sfd);
}

/*
 * An RC connection over rdma_cm: the client end in @c (cfd), the server's
 * handle returned; @max_send_sge for the client's QP (0: the default).
 */
static uint32_t iw_connect(struct __test_metadata *_metadata,
			   FIXTURE_DATA(iwarp) *self, uint32_t max_send_sge,
			   uint32_t *client)
{
	struct krdma_cm_accept a;
	struct krdma_event req, ev;
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.caps.max_send_sge = max_send_sge;
	if (kc_connect_start(&c))
		return 0;
	if (kc_wait_event(self->sfd, KRDMA_EVENT_CONNECT_REQUEST, 0, CM_MS,
			  &req) ||
	    kc_accept(self->sfd, req.handle, NULL, 0, &a)) {
		kc_connect_join(&c, CM_MS);
		return 0;
	}
	if (kc_connect_join(&c, CM_MS) || c.ret) {
		TH_LOG("CM_CONNECT to %s: %s", self->addr, strerror(c.err));
		return 0;
	}
	*client = c.cmd.handle;
	if (kc_wait_event(self->sfd, KRDMA_EVENT_ESTABLISHED, req.handle,
			  CM_MS, &ev) ||
	    kc_wait_event(self->cfd, KRDMA_EVENT_ESTABLISHED, *client, CM_MS,
			  &ev))
		return 0;
	return req.handle;
}

/* An rdma_cm connection of @transport is refused before it is made. */
static void iw_cm_refused(struct __test_metadata *_metadata,
			  FIXTURE_DATA(iwarp) *self, uint32_t transport)
{
	struct kc_connect c;

	kc_connect_init(&c, self->cfd, self->addr, self->port, NULL, 0);
	c.cmd.transport = transport;
	kc_connect_run(&c);
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(EPROTONOSUPPORT, c.err) {
		TH_LOG("%s CM_CONNECT on iWARP: %s",
		       transport == KRDMA_TRANSPORT_UC ? "UC" : "UD",
		       strerror(c.err));
	}
}

/*
 * Buffers: one MR's worth moves through BUF_RW; past what one MR maps
 * (max_fast_reg_page_list_len pages of the largest page size the device
 * takes, siw: 256 of 4 KiB) it is EINVAL.
 */
KRDMA_TEST_F(iwarp, buffers)
{
	uint64_t page = sysconf(_SC_PAGESIZE), pg, max;
	uint8_t *data, *got;
	struct kt_buf b;

	for (pg = page; pg << 1 && pg << 1 <= (page << 10) &&
	     (self->dev.info.page_size_cap & (pg << 1)); pg <<= 1)
		;
	max = (uint64_t)self->dev.info.max_fast_reg_page_list_len * pg;
	data = malloc(max);
	got = malloc(max);
	ASSERT_TRUE(data && got);
	kt_fill(data, max, kt_seed(1, max, 0));
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, 4096, &b);
	test_cmd_destroy(b.handle);
	test_cmd_buf_alloc(self->dev.dev_index, KT_ACCESS_ALL, max, &b);
	test_cmd_buf_write(b.handle, 0, data, max);
	test_cmd_buf_read(b.handle, 0, got, max);
	EXPECT_EQ(-1, kt_check(got, max, kt_seed(1, max, 0)));
	test_cmd_destroy(b.handle);
	/* the module's chunks are at most 4 MiB: past that it is no limit */
	if (pg == (self->dev.info.page_size_cap & -pg) || pg == page << 10)
		test_err_buf_alloc(EINVAL, self->dev.dev_index, KT_ACCESS_ALL,
				   max + page, &b);
	free(data);
	free(got);
}

/* UC, UD, and a QP connected by hand: iWARP has RC over its CM alone. */
KRDMA_TEST_F(iwarp, refuse_uc_ud_manual)
{
	struct kt_conn c;

	test_err_conn_create(EPROTONOSUPPORT, &self->dev, KRDMA_TRANSPORT_RC,
			     0, NULL, &c);
	test_err_conn_create(EPROTONOSUPPORT, &self->dev, KRDMA_TRANSPORT_UC,
			     0, NULL, &c);
	test_err_conn_create(EPROTONOSUPPORT, &self->dev, KRDMA_TRANSPORT_UD,
			     0, NULL, &c);
	iw_cm_refused(_metadata, self, KRDMA_TRANSPORT_UC);
	iw_cm_refused(_metadata, self, KRDMA_TRANSPORT_UD);
}

/*
 * Post @wr behind a signaled WRITE (wr_id 100) of 64 bytes to @rb: refused
 * up front, the chain posts nothing, so the WRITE never completes; a
 * driver refusing it at post would have posted the WRITE.
 */
static int iw_post_behind_write(int fd, uint32_t conn, const struct kt_buf *lb,
				const struct kt_buf *rb,
				const struct krdma_wr *wr)
{
	struct krdma_wr chain[2];

	kt_wr_init(&chain[0], 100, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	chain[0].remote_addr = rb->addr;
	chain[0].rkey = rb->rkey;
	kt_wr_sge(&chain[0], lb->handle, 0, 64);
	chain[1] = *wr;
	return kt_post(fd, conn, chain, 2, NULL);
}

/*
 * On an rdma_cm connection: immediate data (SEND_WITH_IMM,
 * WRITE_WITH_IMM) EOPNOTSUPP; atomics EOPNOTSUPP where atomic_cap is
 * none; a READ into more SGEs than max_sge_rd EINVAL.  Each is refused
 * before anything is posted: the WRITE in front of it in its chain never
 * completes, a later one is the first completion.
 */
KRDMA_TEST_F(iwarp, refuse_imm_atomic_read_sges)
{
	uint32_t nsge = self->dev.info.max_sge_rd + 1;
	uint32_t s, c, i;
	struct kt_buf lb, rb;
	struct krdma_wr wr;
	struct krdma_wc wc;

	if (nsge > self->dev.info.max_send_sge || nsge > KRDMA_MAX_SGE)
		nsge = 0;
	s = iw_connect(_metadata, self, nsge, &c);
	ASSERT_NE(0u, s);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			   IW_LEN, &lb);
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index, KT_ACCESS_ALL,
			       IW_LEN, &rb));

	kt_wr_init(&wr, 1, KRDMA_OP_SEND_WITH_IMM, KRDMA_WR_SIGNALED);
	wr.imm_data = 0x1234;
	kt_wr_sge(&wr, lb.handle, 0, 64);
	EXPECT_ERRNO(EOPNOTSUPP,
		     iw_post_behind_write(self->cfd, c, &lb, &rb, &wr));
	kt_wr_init(&wr, 2, KRDMA_OP_RDMA_WRITE_WITH_IMM, KRDMA_WR_SIGNALED);
	wr.imm_data = 0x1234;
	wr.remote_addr = rb.addr;
	wr.rkey = rb.rkey;
	kt_wr_sge(&wr, lb.handle, 0, 64);
	EXPECT_ERRNO(EOPNOTSUPP,
		     iw_post_behind_write(self->cfd, c, &lb, &rb, &wr));

	if (self->dev.info.atomic_cap == KRDMA_ATOMIC_NONE) {
		kt_wr_init(&wr, 3, KRDMA_OP_ATOMIC_FETCH_ADD,
			   KRDMA_WR_SIGNALED);
		wr.remote_addr = rb.addr;
		wr.rkey = rb.rkey;
		wr.compare_add = 1;
		kt_wr_sge(&wr, lb.handle, 0, 8);
		EXPECT_ERRNO(EOPNOTSUPP,
			     iw_post_behind_write(self->cfd, c, &lb, &rb, &wr));
	}

	if (nsge) {
		kt_wr_init(&wr, 4, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
		wr.remote_addr = rb.addr;
		wr.rkey = rb.rkey;
		for (i = 0; i < nsge; i++)
			kt_wr_sge(&wr, lb.handle, i * 64, 64);
		EXPECT_ERRNO(EINVAL,
			     iw_post_behind_write(self->cfd, c, &lb, &rb, &wr));
	} else {
		TH_LOG("%s: max_sge_rd %u: no READ past it to refuse",
		       self->dev.info.name, self->dev.info.max_sge_rd);
	}

	/* the connection is whole: a WRITE completes, and is the first */
	kt_wr_init(&wr, 5, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	wr.remote_addr = rb.addr;
	wr.rkey = rb.rkey;
	kt_wr_sge(&wr, lb.handle, 0, 64);
	ASSERT_OK(kt_post1(self->cfd, c, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c, &wc, 1, IW_POLL_MS));
	EXPECT_EQ(5u, wc.wr_id);
	EXPECT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
}

/*
 * The in-kernel bench's server speaks its protocol in immediate data:
 * refused up front on iWARP, as a bench run of an immediate opcode.
 */
KRDMA_TEST_F(iwarp, refuse_bench_server_and_imm)
{
	static const struct {
		uint32_t opcode, flags;
	} runs[] = {
		{ KRDMA_OP_SEND, KRDMA_BENCH_SERVER },
		{ KRDMA_OP_SEND_WITH_IMM, KRDMA_BENCH_SERVER },
		{ KRDMA_OP_SEND_WITH_IMM, 0 },
		{ KRDMA_OP_RDMA_WRITE_WITH_IMM, 0 },
	};
	struct krdma_bench b;
	struct kt_buf lb;
	uint32_t s, c;
	size_t i;

	s = iw_connect(_metadata, self, 0, &c);
	ASSERT_NE(0u, s);
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index, KT_ACCESS_ALL,
			       IW_LEN, &lb));
	for (i = 0; i < ARRAY_SIZE(runs); i++) {
		memset(&b, 0, sizeof(b));
		b.size = sizeof(b);
		b.flags = runs[i].flags;
		b.opcode = runs[i].opcode;
		b.num_conns = 1;
		b.conns_uptr = (uintptr_t)&s;
		b.local_buf = lb.handle;
		b.msg_size = 64;
		b.iters = 4;
		b.timeout_ms = 500;
		/* a one-sided client's peer buffer: its own will do */
		if (runs[i].opcode == KRDMA_OP_RDMA_WRITE_WITH_IMM) {
			b.remote_addr = lb.addr;
			b.remote_length = IW_LEN;
			b.remote_rkey = lb.rkey;
		}
		EXPECT_ERRNO(EOPNOTSUPP, ioctl(self->sfd, KRDMA_BENCH, &b),
			     "opcode %u flags %#x", runs[i].opcode,
			     runs[i].flags);
	}
}

/* SEND, WRITE and READ move every byte, both ways where they can. */
KRDMA_TEST_F(iwarp, send_write_read)
{
	uint8_t *data = malloc(IW_LEN), *got = malloc(IW_LEN);
	struct kt_buf cb, sb;
	struct krdma_wr wr;
	struct krdma_wc wc;
	uint32_t s, c;

	ASSERT_TRUE(data && got);
	s = iw_connect(_metadata, self, 0, &c);
	ASSERT_NE(0u, s);
	test_cmd_buf_alloc(self->dev.dev_index, KRDMA_ACCESS_LOCAL_WRITE,
			   IW_LEN, &cb);
	ASSERT_OK(kt_buf_alloc(self->sfd, self->dev.dev_index, KT_ACCESS_ALL,
			       IW_LEN, &sb));

	/* SEND: client -> server */
	kt_fill(data, IW_LEN, kt_seed(2, IW_LEN, 0));
	test_cmd_buf_write(cb.handle, 0, data, IW_LEN);
	kt_wr_init(&wr, 10, KRDMA_OP_RECV, 0);
	kt_wr_sge(&wr, sb.handle, 0, IW_LEN);
	ASSERT_OK(kt_post1(self->sfd, s, &wr));
	kt_wr_init(&wr, 11, KRDMA_OP_SEND, KRDMA_WR_SIGNALED);
	kt_wr_sge(&wr, cb.handle, 0, IW_LEN);
	ASSERT_OK(kt_post1(self->cfd, c, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c, &wc, 1, IW_POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, kt_poll_n(self->sfd, s, &wc, 1, IW_POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	EXPECT_EQ(10u, wc.wr_id);
	EXPECT_EQ((uint32_t)IW_LEN, wc.byte_len);
	ASSERT_OK(kt_buf_read(self->sfd, sb.handle, 0, got, IW_LEN));
	EXPECT_EQ(-1, kt_check(got, IW_LEN, kt_seed(2, IW_LEN, 0)));

	/* WRITE: client -> the server's buffer */
	kt_fill(data, IW_LEN, kt_seed(3, IW_LEN, 0));
	test_cmd_buf_write(cb.handle, 0, data, IW_LEN);
	kt_wr_init(&wr, 12, KRDMA_OP_RDMA_WRITE, KRDMA_WR_SIGNALED);
	wr.remote_addr = sb.addr;
	wr.rkey = sb.rkey;
	kt_wr_sge(&wr, cb.handle, 0, IW_LEN);
	ASSERT_OK(kt_post1(self->cfd, c, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c, &wc, 1, IW_POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	kt_write_fence(_metadata, self->cfd, c, self->sfd, s);
	ASSERT_OK(kt_buf_read(self->sfd, sb.handle, 0, got, IW_LEN));
	EXPECT_EQ(-1, kt_check(got, IW_LEN, kt_seed(3, IW_LEN, 0)));

	/* READ: the server's buffer, refilled -> the client */
	kt_fill(data, IW_LEN, kt_seed(4, IW_LEN, 0));
	ASSERT_OK(kt_buf_write(self->sfd, sb.handle, 0, data, IW_LEN));
	memset(got, 0xa5, IW_LEN);
	test_cmd_buf_write(cb.handle, 0, got, IW_LEN);
	kt_wr_init(&wr, 13, KRDMA_OP_RDMA_READ, KRDMA_WR_SIGNALED);
	wr.remote_addr = sb.addr;
	wr.rkey = sb.rkey;
	kt_wr_sge(&wr, cb.handle, 0, IW_LEN);
	ASSERT_OK(kt_post1(self->cfd, c, &wr));
	ASSERT_EQ(1, kt_poll_n(self->cfd, c, &wc, 1, IW_POLL_MS));
	ASSERT_EQ((uint32_t)KT_WC_SUCCESS, wc.status);
	test_cmd_buf_read(cb.handle, 0, got, IW_LEN);
	EXPECT_EQ(-1, kt_check(got, IW_LEN, kt_seed(4, IW_LEN, 0)));
	free(data);
	free(got);
}

/*
 * Run @cmd with sh, its standard output in @out (NUL-terminated, at most
 * @len - 1 bytes): pclose()'s status, or -1 if it could not start.
 */
static int iw_sh_out(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	out[0] = 0;
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	return pclose(f);
}

/*
 * krdmactl: `devices` tells the transport; serve with send, read and write
 * (whose checks ride in the messages where no immediate data can); rping;
 * bench write and read, bandwidth and latency, whose header names the
 * transport as perftest does.
 */
KRDMA_TEST_F_TIMEOUT(iwarp, krdmactl, 180)
{
	static char out[32768];
	char cmd[1024];
	const char *why = kt_krdmactl_unavailable(NULL);
	int ret;

	if (why)
		SKIP(return, "%s", why);
	snprintf(cmd, sizeof(cmd), "krdmactl devices -d %s",
		 self->dev.info.name);
	EXPECT_EQ(0, iw_sh_out(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "transport iWARP"));
	EXPECT_NE(NULL, strstr(out, "uc no ud no manual_connect no"));

	snprintf(cmd, sizeof(cmd),
		 "timeout 60 krdmactl serve -d %s -a %s -p 18931 -n 3 "
		 ">/dev/null 2>&1 & "
		 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; "
		 "timeout 20 krdmactl send %s -p 18931 >/dev/null 2>&1 && "
		 "break; done && "
		 "timeout 20 krdmactl read %s -p 18931 -s 65536 >/dev/null && "
		 "timeout 20 krdmactl write %s -p 18931 -s 65536 >/dev/null; "
		 "r=$?; wait $! || r=1; exit $r", self->dev.info.name,
		 self->addr, self->addr, self->addr, self->addr);
	ret = system(cmd);
	EXPECT_EQ(0, ret) {
		TH_LOG("serve + send, read, write on %s: status %d",
		       self->addr, ret);
	}
	snprintf(cmd, sizeof(cmd),
		 "timeout 30 krdmactl rping -s -a %s -p 18932 -C 3 "
		 ">/dev/null 2>&1 & "
		 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; "
		 "timeout 20 krdmactl rping -a %s -p 18932 -C 3 >/dev/null "
		 "2>&1 && break; done; "
		 "r=$?; wait $! || r=1; exit $r", self->addr, self->addr);
	ret = system(cmd);
	EXPECT_EQ(0, ret) {
		TH_LOG("rping both ends on %s: status %d", self->addr, ret);
	}

	/*
	 * bench: WRITE and READ runs, which need no immediate data; the
	 * WRITE's at perftest's size and depth, 64 KiB x 128, more than
	 * siw's largest buffer (1 MiB): the slots then wrap
	 */
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 krdmactl bench -d %s -p 18933 >/dev/null 2>&1 & "
		 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; "
		 "timeout 30 krdmactl bench write %s -p 18933 -n 20 "
		 "2>&1 && break; done && "
		 "timeout 30 krdmactl bench read %s -p 18933 -n 20 -s 4096 2>&1 && "
		 "timeout 30 krdmactl bench write --lat %s -p 18933 -n 50 -s 64 2>&1 && "
		 "timeout 30 krdmactl bench read --lat %s -p 18933 -n 50 -s 64 2>&1; "
		 "r=$?; kill $!; wait; exit $r", self->dev.info.name,
		 self->addr, self->addr, self->addr, self->addr);
	ret = iw_sh_out(cmd, out, sizeof(out));
	EXPECT_EQ(0, ret) {
		TH_LOG("bench write, read on %s: status %d:\n%s", self->addr,
		       ret, out);
	}
	EXPECT_NE(NULL, strstr(out, "Transport type : IW")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "read BW Test")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "write Latency Test")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "read Latency Test")) {
		TH_LOG("%s", out);
	}
}

/* The largest page size the device maps, up to the module's 4 MiB chunks. */
static uint64_t iw_max_chunk(const struct krdma_device_info *di)
{
	uint64_t chunk, largest = 0;

	for (chunk = sysconf(_SC_PAGESIZE); chunk <= 4 << 20; chunk <<= 1)
		if (di->page_size_cap & chunk)
			largest = chunk;
	return largest;
}

/*
 * The largest kernel buffer the device takes, as krdmactl's dev_max_buf():
 * max_fast_reg_page_list_len of those chunks, at most max_mr_size.
 */
static uint64_t iw_max_buf(const struct krdma_device_info *di)
{
	uint64_t largest = iw_max_chunk(di) * di->max_fast_reg_page_list_len;

	return largest < di->max_mr_size ? largest : di->max_mr_size;
}

/*
 * A bench message larger than the server's device can register: the
 * server refuses the client, saying why, and goes on serving; the
 * refused client fails, saying so.
 */
KRDMA_TEST_F_TIMEOUT(iwarp, bench_message_over_largest_buffer, 120)
{
	uint64_t max = iw_max_buf(&self->dev.info);
	const char *why = kt_krdmactl_unavailable(NULL);
	unsigned long long big = max * 2;
	uint64_t pg = iw_max_chunk(&self->dev.info);
	char cmd[1024], log[64], out[8192];

	if (why)
		SKIP(return, "%s", why);
	/*
	 * as the buffers test: larger page sizes than the chunk make no
	 * limit krdmactl's figure tells (the module's chunks stop at 4 MiB)
	 */
	if (!max || big > 1U << 29 ||
	    !(pg == (self->dev.info.page_size_cap & -pg) || pg == 4 << 20))
		SKIP(return, "%s: largest buffer %llu: no message size over it",
		     self->dev.info.name, (unsigned long long)max);
	snprintf(log, sizeof(log), "/tmp/krdma-iw-big.%d.log", getpid());
	/* (the server may take a while to listen: the refusal is awaited) */
	snprintf(cmd, sizeof(cmd),
		 "timeout 90 krdmactl bench -d %s -p 18934 >%s 2>&1 & "
		 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; "
		 "timeout 20 krdmactl bench write %s -p 18934 -n 2 -s %llu "
		 ">/dev/null 2>&1; "
		 "grep -q \"more than the device's largest\" %s && break; done; "
		 "timeout 20 krdmactl bench write %s -p 18934 -n 2 -s %llu 2>&1; "
		 "echo BIG=$?; "
		 "timeout 20 krdmactl bench write %s -p 18934 -n 2 -s 4096 "
		 ">/dev/null 2>&1; echo SMALL=$?; "
		 "kill $!; wait; cat %s; rm -f %s",
		 self->dev.info.name, log, self->addr, big, log, self->addr, big,
		 self->addr, log, log);
	EXPECT_EQ(0, iw_sh_out(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "more than the device's largest")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "refused")) {
		TH_LOG("the client of -s %llu: %s", big, out);
	}
	EXPECT_EQ(NULL, strstr(out, "BIG=0")) {
		TH_LOG("bench write -s %llu passed: %s", big, out);
	}
	EXPECT_NE(NULL, strstr(out, "SMALL=0")) {
		TH_LOG("the server served no -s 4096 after: %s", out);
	}
}

TEST_HARNESS_MAIN
