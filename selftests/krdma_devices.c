// SPDX-License-Identifier: GPL-2.0
/*
 * krdma's device list against sysfs and `rdma link show`, and devices that
 * come and go (`rdma link add/delete`) while the module is loaded.
 */
#include "krdma_test.h"

#define MAX_DEVS 64

FIXTURE(devices)
{
	int fd;
	struct krdma_snap snap;
};

FIXTURE_SETUP(devices)
{
	self->fd = kt_session_open(_metadata);
	if (self->fd < 0)
		return;
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &self->snap));
}

FIXTURE_TEARDOWN(devices)
{
	krdma_snap_free(&self->snap);
	if (self->fd >= 0)
		close(self->fd);
}

static int cmp_dev_name(const void *a, const void *b)
{
	const struct krdma_device_info *x = a, *y = b;

	return strcmp(x->name, y->name);
}

KRDMA_TEST_F(devices, names_match_sysfs)
{
	char names[MAX_DEVS][KRDMA_NAME_MAX];
	struct krdma_device_info *devs;
	int n, i;

	n = krdma_sysfs_names(names, MAX_DEVS);
	ASSERT_GE(MAX_DEVS, n);
	ASSERT_EQ(n, (int)self->snap.ndev);
	devs = calloc(n, sizeof(*devs));
	ASSERT_NE(NULL, devs);
	memcpy(devs, self->snap.devs, n * sizeof(*devs));
	qsort(devs, n, sizeof(*devs), cmp_dev_name);
	for (i = 0; i < n; i++)
		EXPECT_STREQ(names[i], devs[i].name);
	free(devs);
}

/*
 * `rdma link show` prints "link DEV/PORT state S physical_state P netdev N";
 * calls @fn for each line it parsed.
 */
struct rdma_link {
	char dev[KRDMA_NAME_MAX];
	unsigned int port;
	char state[32];
	char netdev[KRDMA_IFNAME_MAX + 16];
};

static int rdma_links(struct rdma_link *links, int max)
{
	char line[512];
	FILE *f;
	int n = 0;

	f = popen("rdma link show 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct rdma_link l = { .port = 0 };
		char *tok, *save = NULL, *prev = NULL;

		if (strncmp(line, "link ", 5))
			continue;
		for (tok = strtok_r(line, " \t\n", &save); tok;
		     prev = tok, tok = strtok_r(NULL, " \t\n", &save)) {
			if (!prev)
				continue;
			if (!strcmp(prev, "link")) {
				char *slash = strrchr(tok, '/');

				if (!slash)
					break;
				*slash = 0;
				snprintf(l.dev, sizeof(l.dev), "%.*s",
					 KRDMA_NAME_MAX - 1, tok);
				l.port = strtoul(slash + 1, NULL, 10);
			} else if (!strcmp(prev, "state")) {
				snprintf(l.state, sizeof(l.state), "%.31s", tok);
			} else if (!strcmp(prev, "netdev")) {
				snprintf(l.netdev, sizeof(l.netdev), "%.31s", tok);
			}
		}
		if (l.dev[0] && n < max)
			links[n++] = l;
	}
	if (pclose(f))
		return -1;
	return n;
}

static const char *const port_state_name[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};

KRDMA_TEST_F(devices, match_rdma_link_show)
{
	struct rdma_link links[256];
	struct krdma_snap *s = &self->snap;
	uint32_t i;
	int n, j;

	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	n = rdma_links(links, 256);
	ASSERT_LE(0, n);
	/* One line per port of every device, and no others. */
	EXPECT_EQ((int)s->nport, n);
	for (i = 0; i < s->nport; i++) {
		struct krdma_port_info *p = &s->ports[i];
		struct krdma_device_info *d = krdma_snap_find_index(s, p->dev_index);
		bool found = false;

		ASSERT_NE(NULL, d);
		for (j = 0; j < n; j++) {
			if (strcmp(links[j].dev, d->name) || links[j].port != p->port_num)
				continue;
			found = true;
			if (p->state < ARRAY_SIZE(port_state_name))
				EXPECT_STREQ(port_state_name[p->state], links[j].state);
			/* krdma names the netdev of the port's GIDs. */
			if (links[j].netdev[0] && p->num_gids)
				EXPECT_STREQ(links[j].netdev, p->netdev);
		}
		EXPECT_TRUE(found) {
			TH_LOG("%s/%u not in rdma link show", d->name, p->port_num);
		}
	}
}

KRDMA_TEST_F(devices, device_attrs_match_sysfs)
{
	struct krdma_snap *s = &self->snap;
	char buf[256];
	uint32_t i, v;
	uint64_t guid;

	for (i = 0; i < s->ndev; i++) {
		struct krdma_device_info *d = &s->devs[i];

		TH_LOG("%s", d->name);
		ASSERT_OK(krdma_read_file(buf, sizeof(buf), SYSFS_IB "/%s/node_guid", d->name));
		ASSERT_OK(krdma_parse_guid(buf, &guid));
		EXPECT_EQ(guid, d->node_guid) {
			TH_LOG("%s node_guid sysfs %s, krdma 0x%016llx", d->name, buf,
			       (unsigned long long)d->node_guid);
		}
		if (!krdma_read_file(buf, sizeof(buf), SYSFS_IB "/%s/sys_image_guid", d->name)) {
			ASSERT_OK(krdma_parse_guid(buf, &guid));
			EXPECT_EQ(guid, d->sys_image_guid);
		}
		if (!krdma_read_file(buf, sizeof(buf), SYSFS_IB "/%s/node_type", d->name)) {
			ASSERT_OK(krdma_parse_leading_uint(buf, &v));
			EXPECT_EQ(v, d->node_type);
		}
		EXPECT_EQ(krdma_count_dir(SYSFS_IB "/%s/ports", d->name),
			  (int)d->phys_port_cnt);
	}
}

/* The IB MTU rxe derives from its netdev's MTU (rxe_param.h). */
static uint32_t rxe_active_mtu(const char *netdev)
{
	char buf[64];
	long mtu;
	uint32_t ib;

	if (krdma_read_file(buf, sizeof(buf), "/sys/class/net/%s/mtu", netdev))
		return 0;
	mtu = strtol(buf, NULL, 10) - 80;	/* RXE_MAX_HDR_LENGTH */
	for (ib = 4096; ib > 256; ib /= 2)
		if (mtu >= ib)
			break;
	return ib;
}

/* active_mtu of DEV/PORT as ibv_devinfo prints it; 0 if unknown. */
static uint32_t ibv_devinfo_mtu(const char *dev, uint32_t port)
{
	char cmd[256], line[256];
	uint32_t cur = 0, mtu = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ibv_devinfo -d %s 2>/dev/null", dev);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned int v;

		if (sscanf(line, " port: %u", &v) == 1)
			cur = v;
		else if (cur == port && sscanf(line, " active_mtu: %u", &v) == 1)
			mtu = v;
	}
	pclose(f);
	return mtu;
}

KRDMA_TEST_F(devices, port_attrs_match_sysfs)
{
	struct krdma_snap *s = &self->snap;
	bool have_ibv = krdma_have_cmd("ibv_devinfo");
	char buf[256];
	uint32_t i, v;

	for (i = 0; i < s->nport; i++) {
		struct krdma_port_info *p = &s->ports[i];
		struct krdma_device_info *d = krdma_snap_find_index(s, p->dev_index);
		uint32_t mtu = 0;
		int n;

		ASSERT_NE(NULL, d);
		TH_LOG("%s/%u", d->name, p->port_num);
#define PORT_FILE(file) SYSFS_IB "/%s/ports/%u/" file, d->name, p->port_num
		ASSERT_OK(krdma_read_file(buf, sizeof(buf), PORT_FILE("state")));
		ASSERT_OK(krdma_parse_leading_uint(buf, &v));
		EXPECT_EQ(v, p->state);
		ASSERT_OK(krdma_read_file(buf, sizeof(buf), PORT_FILE("phys_state")));
		ASSERT_OK(krdma_parse_leading_uint(buf, &v));
		EXPECT_EQ(v, p->phys_state);
		ASSERT_OK(krdma_read_file(buf, sizeof(buf), PORT_FILE("link_layer")));
		EXPECT_EQ((uint32_t)krdma_link_layer_from_sysfs(buf), p->link_layer);
		if (!krdma_read_file(buf, sizeof(buf), PORT_FILE("lid"))) {
			ASSERT_OK(krdma_parse_leading_uint(buf, &v));
			EXPECT_EQ(v, p->lid);
		}
		if (!krdma_read_file(buf, sizeof(buf), PORT_FILE("sm_lid"))) {
			ASSERT_OK(krdma_parse_leading_uint(buf, &v));
			EXPECT_EQ(v, p->sm_lid);
		}
		if (!krdma_read_file(buf, sizeof(buf), PORT_FILE("lid_mask_count"))) {
			ASSERT_OK(krdma_parse_leading_uint(buf, &v));
			EXPECT_EQ(v, p->lmc);
		}
		n = krdma_count_dir(PORT_FILE("gids"));
		if (n >= 0)
			EXPECT_EQ(n, (int)p->gid_tbl_len);
		n = krdma_count_dir(PORT_FILE("pkeys"));
		if (n >= 0)
			EXPECT_EQ(n, (int)p->pkey_tbl_len);
		/* rxe's netdev is its "parent". */
		if (!krdma_read_file(buf, sizeof(buf), SYSFS_IB "/%s/parent", d->name)) {
			if (p->num_gids)
				EXPECT_STREQ(buf, p->netdev);
			mtu = rxe_active_mtu(buf);
		}
		if (have_ibv)
			mtu = ibv_devinfo_mtu(d->name, p->port_num) ?: mtu;
		if (mtu)
			EXPECT_EQ(mtu, p->active_mtu);
#undef PORT_FILE
	}
}

/*
 * Every valid GID in sysfs (one whose gid_attrs/types entry reads) is a
 * krdma GID entry with the same GID, type and netdev, and nothing else is.
 * GIDs follow addresses: compare again if one changed in between.
 */
static int compare_gids(struct __test_metadata *_metadata, struct krdma_snap *s,
			bool report)
{
	uint32_t i, j, k;
	int mismatches = 0, valid = 0;

#define GID_MISMATCH(fmt, ...) do {				\
		mismatches++;					\
		if (report)					\
			TH_LOG(fmt, ##__VA_ARGS__);		\
	} while (0)
	for (i = 0; i < s->nport; i++) {
		struct krdma_port_info *p = &s->ports[i];
		struct krdma_device_info *d = krdma_snap_find_index(s, p->dev_index);
		int tbl;

		if (!d)
			return -1;
		tbl = krdma_count_dir(SYSFS_IB "/%s/ports/%u/gids", d->name, p->port_num);
		for (j = 0; tbl > 0 && j < (uint32_t)tbl; j++) {
			char type[64], gidstr[64], ndev[64];
			struct krdma_gid_info *g = NULL;
			uint8_t gid[16];
			int t;

			if (krdma_read_file(type, sizeof(type),
					    SYSFS_IB "/%s/ports/%u/gid_attrs/types/%u",
					    d->name, p->port_num, j) || !type[0])
				continue;	/* not a valid entry */
			valid++;
			for (k = 0; k < p->num_gids; k++)
				if (s->gids[p->first_gid + k].gid_index == j)
					g = &s->gids[p->first_gid + k];
			if (!g) {
				GID_MISMATCH("%s/%u gid %u missing", d->name, p->port_num, j);
				continue;
			}
			if (krdma_read_file(gidstr, sizeof(gidstr),
					    SYSFS_IB "/%s/ports/%u/gids/%u",
					    d->name, p->port_num, j) ||
			    inet_pton(AF_INET6, gidstr, gid) != 1 ||
			    memcmp(gid, g->gid, 16))
				GID_MISMATCH("%s/%u gid %u: sysfs %s", d->name,
					     p->port_num, j, gidstr);
			t = krdma_gid_type_from_sysfs(type, p->link_layer,
						      d->node_type);
			if (t < 0 || (uint32_t)t != g->gid_type)
				GID_MISMATCH("%s/%u gid %u: type %s, krdma %u", d->name,
					     p->port_num, j, type, g->gid_type);
			if (krdma_read_file(ndev, sizeof(ndev),
					    SYSFS_IB "/%s/ports/%u/gid_attrs/ndevs/%u",
					    d->name, p->port_num, j))
				ndev[0] = 0;
			if (strncmp(ndev, g->netdev, sizeof(g->netdev)))
				GID_MISMATCH("%s/%u gid %u: ndev '%s', krdma '%s'", d->name,
					     p->port_num, j, ndev, g->netdev);
		}
	}
	if ((uint32_t)valid != s->ngid)
		GID_MISMATCH("%d valid GIDs in sysfs, %u from krdma", valid, s->ngid);
#undef GID_MISMATCH
	return mismatches;
}

KRDMA_TEST_F(devices, gids_match_sysfs)
{
	int tries, bad = 0;

	for (tries = 0; tries < 5; tries++) {
		if (tries) {
			sleep(1);
			krdma_snap_free(&self->snap);
			ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &self->snap));
		}
		bad = compare_gids(_metadata, &self->snap, tries == 4);
		if (!bad)
			break;
	}
	EXPECT_EQ(0, bad);
	EXPECT_LT(0u, self->snap.ngid);
}

KRDMA_TEST_F(devices, krdmactl_devices_json)
{
	char out[65536], pat[KRDMA_NAME_MAX + 4];
	size_t len = 0;
	uint32_t i;
	FILE *f;

	if (!krdma_have_cmd("krdmactl"))
		SKIP(return, "no krdmactl in PATH");
	f = popen("krdmactl devices -j", "r");
	ASSERT_NE(NULL, f);
	while (len < sizeof(out) - 1) {
		size_t n = fread(out + len, 1, sizeof(out) - 1 - len, f);

		if (!n)
			break;
		len += n;
	}
	out[len] = 0;
	ASSERT_EQ(0, pclose(f));
	/* A JSON document that names every device as a string. */
	ASSERT_LT(0u, len);
	EXPECT_TRUE(out[strspn(out, " \t\n")] == '{' || out[strspn(out, " \t\n")] == '[');
	for (i = 0; i < self->snap.ndev; i++) {
		snprintf(pat, sizeof(pat), "\"%s\"", self->snap.devs[i].name);
		EXPECT_NE(NULL, strstr(out, pat)) {
			TH_LOG("%s not in krdmactl devices -j", pat);
		}
	}
}

/* ------------------------------------------------------------------------
 * Devices added and removed while the module is loaded
 */

#define TEST_DEV "rxe_t"
#define DUMMY_DEV "krdmat0"

FIXTURE(hotplug)
{
	int fd;
	bool made_dummy;
	char netdev[32];
	struct krdma_info before;
};

static bool netdev_exists(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	return !stat(path, &st);
}

/* Whether an RDMA device is bound to @netdev (rdma link show ... netdev X). */
static bool netdev_has_rdma(const char *netdev)
{
	struct rdma_link links[256];
	int n, i;

	n = rdma_links(links, 256);
	for (i = 0; i < n; i++)
		if (!strcmp(links[i].netdev, netdev))
			return true;
	return false;
}

static bool ib_dev_exists(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), SYSFS_IB "/%s", name);
	return !stat(path, &st);
}

FIXTURE_SETUP(hotplug)
{
	const char *why = krdma_unavailable();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	if (!krdma_have_cmd("rdma"))
		SKIP(return, "no rdma tool (iproute2)");
	if (ib_dev_exists(TEST_DEV))
		krdma_run("rdma link delete " TEST_DEV);
	ASSERT_FALSE(ib_dev_exists(TEST_DEV));
	if (netdev_exists("krdma1") && !netdev_has_rdma("krdma1")) {
		strcpy(self->netdev, "krdma1");
	} else {
		if (!netdev_exists(DUMMY_DEV)) {
			if (krdma_run("ip link add " DUMMY_DEV " type dummy"))
				SKIP(return, "no free netdev for a test rxe device");
			self->made_dummy = true;
		}
		ASSERT_EQ(0, krdma_run("ip link set " DUMMY_DEV " up"));
		strcpy(self->netdev, DUMMY_DEV);
	}
	self->fd = krdma_open();
	ASSERT_LE(0, self->fd);
	ASSERT_OK(krdma_info_get(self->fd, &self->before));
}

FIXTURE_TEARDOWN(hotplug)
{
	if (ib_dev_exists(TEST_DEV))
		krdma_run("rdma link delete " TEST_DEV);
	if (self->made_dummy)
		krdma_run("ip link delete " DUMMY_DEV);
	if (self->fd >= 0)
		close(self->fd);
}

static int add_test_dev(FIXTURE_DATA(hotplug) *self)
{
	return krdma_run("rdma link add " TEST_DEV " type rxe netdev %s", self->netdev);
}

static int del_test_dev(void)
{
	return krdma_run("rdma link delete " TEST_DEV);
}

/* GET_INFO once the device count is @ndev and the contexts @nctx (or 0). */
static int wait_info(int fd, struct krdma_info *info, uint32_t ndev, uint32_t nctx)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (krdma_info_get(fd, info))
			return -1;
		if (info->num_devices == ndev &&
		    (!nctx || info->num_device_contexts == nctx))
			return 0;
		usleep(100 * 1000);
	}
	return 0;	/* the caller's assertions report it */
}

/* Add: listed with a new index.  Delete: gone, ENODEV, counts back. */
KRDMA_TEST_F(hotplug, add_delete)
{
	struct krdma_snap s, one;
	struct krdma_device_info *d;
	struct krdma_query_devices q;
	struct krdma_info info;
	uint32_t idx, i;
	int kmsg = kt_kmsg_open();

	ASSERT_LE(0, kmsg);
	ASSERT_EQ(0, add_test_dev(self));
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	d = krdma_snap_find(&s, TEST_DEV);
	ASSERT_NE(NULL, d);
	idx = d->dev_index;
	/* the kernel log says it, with the index users see */
	EXPECT_TRUE(kt_kmsg_find(kmsg, TEST_DEV ": krdma: added as device %u\n", idx));
	for (i = 0; i < s.ndev; i++)
		if (&s.devs[i] != d)
			EXPECT_NE(idx, s.devs[i].dev_index);
	EXPECT_EQ(self->before.num_devices + 1, s.ndev);
	ASSERT_OK(krdma_info_get(self->fd, &info));
	EXPECT_EQ(self->before.num_devices + 1, info.num_devices);
	EXPECT_LE(info.num_devices, info.num_device_contexts);
	EXPECT_EQ(krdma_sysfs_num_devices(), (int)info.num_devices);
	ASSERT_OK(krdma_snap_get(self->fd, KRDMA_QUERY_DEVICES_ONE, idx, &one));
	ASSERT_EQ(1u, one.ndev);
	EXPECT_STREQ(TEST_DEV, one.devs[0].name);
	EXPECT_LE(1u, one.nport);
	if (one.nport && one.ports[0].num_gids)
		EXPECT_STREQ(self->netdev, one.ports[0].netdev);
	krdma_snap_free(&one);
	krdma_snap_free(&s);

	ASSERT_EQ(0, del_test_dev());
	ASSERT_FALSE(ib_dev_exists(TEST_DEV));
	EXPECT_TRUE(kt_kmsg_find(kmsg, TEST_DEV ": krdma: device %u removed, 0 objects", idx));
	close(kmsg);
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	EXPECT_EQ(NULL, krdma_snap_find(&s, TEST_DEV));
	EXPECT_EQ(NULL, krdma_snap_find_index(&s, idx));
	EXPECT_EQ(self->before.num_devices, s.ndev);
	krdma_snap_free(&s);
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.flags = KRDMA_QUERY_DEVICES_ONE;
	q.dev_index = idx;
	test_err_ioctl(ENODEV, KRDMA_QUERY_DEVICES, &q);
	ASSERT_OK(wait_info(self->fd, &info, self->before.num_devices,
			    self->before.num_device_contexts));
	EXPECT_EQ(self->before.num_devices, info.num_devices);
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
}

/* The same name again gets a new index; the old one stays dead. */
KRDMA_TEST_F(hotplug, readd_new_index)
{
	struct krdma_query_devices q;
	struct krdma_snap s;
	uint32_t idx1, idx2;

	ASSERT_EQ(0, add_test_dev(self));
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	ASSERT_NE(NULL, krdma_snap_find(&s, TEST_DEV));
	idx1 = krdma_snap_find(&s, TEST_DEV)->dev_index;
	krdma_snap_free(&s);
	ASSERT_EQ(0, del_test_dev());

	ASSERT_EQ(0, add_test_dev(self));
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	ASSERT_NE(NULL, krdma_snap_find(&s, TEST_DEV));
	idx2 = krdma_snap_find(&s, TEST_DEV)->dev_index;
	EXPECT_NE(idx1, idx2);
	EXPECT_EQ(NULL, krdma_snap_find_index(&s, idx1));
	krdma_snap_free(&s);

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.flags = KRDMA_QUERY_DEVICES_ONE;
	q.dev_index = idx1;
	test_err_ioctl(ENODEV, KRDMA_QUERY_DEVICES, &q);
	q.dev_index = idx2;
	test_err_ioctl(EMSGSIZE, KRDMA_QUERY_DEVICES, &q);
	EXPECT_EQ(1u, q.num_devices);

	ASSERT_EQ(0, del_test_dev());
	q.num_devices = q.num_ports = q.num_gids = 0;
	test_err_ioctl(ENODEV, KRDMA_QUERY_DEVICES, &q);
}

/* A session opened before the delete keeps working for the other devices. */
KRDMA_TEST_F(hotplug, session_survives_delete)
{
	struct krdma_snap s, one;
	struct krdma_info info;
	struct krdma_query_devices q;
	uint32_t idx, i;
	int fd2;

	ASSERT_EQ(0, add_test_dev(self));
	fd2 = krdma_open();
	ASSERT_LE(0, fd2);
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	ASSERT_NE(NULL, krdma_snap_find(&s, TEST_DEV));
	idx = krdma_snap_find(&s, TEST_DEV)->dev_index;
	krdma_snap_free(&s);
	/* fd2 has looked at the device too. */
	ASSERT_OK(krdma_snap_get(fd2, KRDMA_QUERY_DEVICES_ONE, idx, &one));
	krdma_snap_free(&one);

	ASSERT_EQ(0, del_test_dev());

	ASSERT_OK(krdma_info_get(self->fd, &info));
	EXPECT_EQ(self->before.num_devices, info.num_devices);
	ASSERT_OK(krdma_snap_get(self->fd, 0, 0, &s));
	EXPECT_EQ(self->before.num_devices, s.ndev);
	EXPECT_EQ(NULL, krdma_snap_find(&s, TEST_DEV));
	for (i = 0; i < s.ndev; i++) {
		ASSERT_OK(krdma_snap_get(self->fd, KRDMA_QUERY_DEVICES_ONE,
					 s.devs[i].dev_index, &one));
		EXPECT_STREQ(s.devs[i].name, one.devs[0].name);
		krdma_snap_free(&one);
		ASSERT_OK(krdma_snap_get(fd2, KRDMA_QUERY_DEVICES_ONE,
					 s.devs[i].dev_index, &one));
		EXPECT_STREQ(s.devs[i].name, one.devs[0].name);
		krdma_snap_free(&one);
	}
	krdma_snap_free(&s);
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.flags = KRDMA_QUERY_DEVICES_ONE;
	q.dev_index = idx;
	EXPECT_ERRNO(ENODEV, ioctl(fd2, KRDMA_QUERY_DEVICES, &q));
	close(fd2);
	ASSERT_OK(wait_info(self->fd, &info, self->before.num_devices,
			    self->before.num_device_contexts));
	EXPECT_EQ(self->before.num_device_contexts, info.num_device_contexts);
}

TEST_HARNESS_MAIN
