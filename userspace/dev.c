// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl devices: the RDMA devices krdma serves, their ports and GIDs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <krdma.h>

#include "krdmactl.h"
#include "names.h"
#include "print.h"

/* A device that appears between sizing and fetching costs one more try. */
#define QUERY_DEVICES_TRIES 5

static const char devices_usage[] =
	"Usage: " PROG_NAME " devices [OPTIONS]\n"
	"List the RDMA devices krdma serves, with their capabilities, ports\n"
	"and GIDs.\n"
	"\n"
	"  -d, --device NAME   only the device NAME (e.g. rxe0)\n"
	"  -i, --index N       only the device with krdma index N\n"
	"  -j, --json          JSON output\n"
	"      --pretty        pretty-printed JSON (implies -j)\n"
	"  -h, --help          this help\n";

struct devices_opts {
	const char *name;	/* -d, or NULL */
	bool by_index;		/* -i given */
	uint32_t index;
};

static int parse_devices_opt(int c, void *ctx)
{
	struct devices_opts *o = ctx;

	switch (c) {
	case 'd':
		o->name = optarg;
		return 0;
	case 'i':
		if (parse_u32("devices", "-i/--index", optarg, 0, UINT32_MAX,
			      &o->index))
			return EXIT_USAGE;
		o->by_index = true;
		return 0;
	}
	return -1;
}

/* Returns 0, -1 when done (help printed), or an exit code. */
static int parse_devices_opts(int argc, char **argv, struct devices_opts *o)
{
	static const struct option long_opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "index", required_argument, NULL, 'i' },
		COMMON_LONG_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	int ret;

	ret = parse_opts("devices", argc, argv, "+:d:i:" COMMON_SHORT_OPTS,
			 long_opts, devices_usage, parse_devices_opt, o);
	return ret ? ret : opt_extra_args("devices", argc, argv, devices_usage);
}

void free_snapshot(struct dev_snapshot *s)
{
	free(s->devs);
	free(s->ports);
	free(s->gids);
	memset(s, 0, sizeof(*s));
}

/* Room for the counts in @s->num_*; the old contents are dropped. */
static int alloc_snapshot(struct dev_snapshot *s)
{
	struct dev_snapshot n = {
		.num_devs = s->num_devs,
		.num_ports = s->num_ports,
		.num_gids = s->num_gids,
	};

	free_snapshot(s);
	if (n.num_devs)
		n.devs = calloc(n.num_devs, sizeof(*n.devs));
	if (n.num_ports)
		n.ports = calloc(n.num_ports, sizeof(*n.ports));
	if (n.num_gids)
		n.gids = calloc(n.num_gids, sizeof(*n.gids));
	*s = n;
	if ((n.num_devs && !n.devs) || (n.num_ports && !n.ports) ||
	    (n.num_gids && !n.gids)) {
		free_snapshot(s);
		return -ENOMEM;
	}
	return 0;
}

/* Strings from the kernel are NUL-terminated; make sure of it. */
static void terminate_strings(struct dev_snapshot *s)
{
	uint32_t i;

	for (i = 0; i < s->num_devs; i++)
		s->devs[i].name[sizeof(s->devs[i].name) - 1] = '\0';
	for (i = 0; i < s->num_ports; i++)
		s->ports[i].netdev[sizeof(s->ports[i].netdev) - 1] = '\0';
	for (i = 0; i < s->num_gids; i++)
		s->gids[i].netdev[sizeof(s->gids[i].netdev) - 1] = '\0';
}

static void fill_query(struct krdma_query_devices *q,
		       const struct dev_snapshot *s, bool one,
		       uint32_t dev_index)
{
	*q = (struct krdma_query_devices){
		.size = sizeof(*q),
		.num_devices = s->num_devs,
		.device_entry_size = sizeof(*s->devs),
		.num_ports = s->num_ports,
		.port_entry_size = sizeof(*s->ports),
		.num_gids = s->num_gids,
		.gid_entry_size = sizeof(*s->gids),
		.devices_uptr = (uintptr_t)s->devs,
		.ports_uptr = (uintptr_t)s->ports,
		.gids_uptr = (uintptr_t)s->gids,
	};
	if (one) {
		q->flags = KRDMA_QUERY_DEVICES_ONE;
		q->dev_index = dev_index;
	}
}

static void report_query_error(bool one, uint32_t dev_index, int err)
{
	if (one && err == -ENODEV)
		krdma_report_field(KRDMA_QUERY_DEVICES, err, "dev_index %u",
				   dev_index);
	else
		krdma_report(KRDMA_QUERY_DEVICES, err);
}

/*
 * KRDMA_QUERY_DEVICES sizing protocol: start with zero capacities; a too
 * small array fails with EMSGSIZE and writes back the counts needed, so
 * allocate those and ask again.  With @one, only the device @dev_index.
 * Reports failures; returns 0 or -errno.
 */
int query_devices(int fd, bool one, uint32_t dev_index,
		  struct dev_snapshot *s)
{
	struct krdma_query_devices q;
	int try, ret, err;

	memset(s, 0, sizeof(*s));
	for (try = 0; try < QUERY_DEVICES_TRIES; try++) {
		fill_query(&q, s, one, dev_index);
		ret = krdma_ioctl_quiet(fd, KRDMA_QUERY_DEVICES, &q);
		if (ret != -EMSGSIZE)
			break;
		s->num_devs = q.num_devices;
		s->num_ports = q.num_ports;
		s->num_gids = q.num_gids;
		err = alloc_snapshot(s);
		if (err) {
			err_msg("devices: %s", strerror(-err));
			return err;
		}
	}
	if (ret && ret != -EMSGSIZE) {
		report_query_error(one, dev_index, ret);
		free_snapshot(s);
		return ret;
	}
	if (ret) {
		err_msg("%s: %s (the device list kept changing)",
			krdma_req_name(KRDMA_QUERY_DEVICES), strerror(-ret));
		free_snapshot(s);
		return ret;
	}
	if (q.num_devices > s->num_devs || q.num_ports > s->num_ports ||
	    q.num_gids > s->num_gids) {
		err_msg("%s: reported more entries than there was room for",
			krdma_req_name(KRDMA_QUERY_DEVICES));
		free_snapshot(s);
		return -EPROTO;
	}
	s->num_devs = q.num_devices;
	s->num_ports = q.num_ports;
	s->num_gids = q.num_gids;
	terminate_strings(s);
	return 0;
}

/* Like sysfs node_guid and ibv_devinfo: 0123:4567:89ab:cdef */
static void format_guid(char *buf, size_t len, uint64_t guid)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48) & 0xffff,
		 (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
}

static void print_gid(const struct krdma_gid_info *g)
{
	char addr[INET6_ADDRSTRLEN];

	if (!inet_ntop(AF_INET6, g->gid, addr, sizeof(addr)))
		snprintf(addr, sizeof(addr), "?");
	pr_obj_begin(NULL);
	pr_label_u64("gid_index", "gid", g->gid_index);
	pr_value_str("gid", addr);
	pr_value_str("type", gid_type_name(g->gid_type));
	if (g->netdev[0])
		pr_value_str("netdev", g->netdev);
	pr_obj_end();
}

/* The port's entries: num_gids from first_gid, if they say they are its. */
static void print_gids(const struct dev_snapshot *s,
		       const struct krdma_port_info *p)
{
	uint32_t i, end;

	end = p->first_gid + p->num_gids;
	if (end > s->num_gids || end < p->first_gid)
		end = s->num_gids;
	pr_arr_begin("gids");
	for (i = p->first_gid; i < end; i++) {
		const struct krdma_gid_info *g = &s->gids[i];

		if (g->dev_index == p->dev_index && g->port_num == p->port_num)
			print_gid(g);
	}
	pr_arr_end();
}

static void print_port(const struct dev_snapshot *s,
		       const struct krdma_port_info *p)
{
	pr_obj_begin(NULL);
	pr_label_u64("port_num", "port", p->port_num);
	pr_str("state", port_state_name(p->state));
	pr_str("phys_state", phys_state_name(p->phys_state));
	pr_u64("mtu", p->active_mtu);
	pr_u64("max_mtu", p->max_mtu);
	pr_str("link_layer", link_layer_name(p->link_layer));
	pr_u64("lid", p->lid);
	pr_u64("sm_lid", p->sm_lid);
	pr_u64("lmc", p->lmc);
	pr_hex("max_msg_sz", p->max_msg_sz);
	pr_u64("gid_tbl_len", p->gid_tbl_len);
	pr_u64("pkey_tbl_len", p->pkey_tbl_len);
	pr_str("speed", speed_name(p->active_speed));
	pr_str("width", width_name(p->active_width));
	if (p->netdev[0])
		pr_str("netdev", p->netdev);
	print_gids(s, p);
	pr_obj_end();
}

/* The device's ports: contiguous from first_port, phys_port_cnt of them. */
static void print_ports(const struct dev_snapshot *s,
			const struct krdma_device_info *d)
{
	uint32_t i, n = 0;

	pr_arr_begin("ports");
	for (i = d->first_port; i < s->num_ports && n < d->phys_port_cnt;
	     i++, n++) {
		if (s->ports[i].dev_index != d->dev_index)
			break;
		print_port(s, &s->ports[i]);
	}
	pr_arr_end();
}

#define U32_CAP(field) { #field, offsetof(struct krdma_device_info, field) }

/* The __u32 limits, in the order ibv_devinfo -v shows them. */
static const struct u32_cap {
	const char *name;
	size_t offset;
} u32_caps[] = {
	U32_CAP(max_qp),
	U32_CAP(max_qp_wr),
	U32_CAP(max_send_sge),
	U32_CAP(max_recv_sge),
	U32_CAP(max_sge_rd),
	U32_CAP(max_cq),
	U32_CAP(max_cqe),
	U32_CAP(max_mr),
	U32_CAP(max_pd),
	U32_CAP(max_mw),
	U32_CAP(max_srq),
	U32_CAP(max_srq_wr),
	U32_CAP(max_qp_rd_atom),
	U32_CAP(max_qp_init_rd_atom),
	U32_CAP(max_inline_data),
};

static void print_caps(const struct krdma_device_info *d)
{
	unsigned int i;

	pr_obj_begin("caps");
	for (i = 0; i < ARRAY_SIZE(u32_caps); i++) {
		const __u32 *val = (const void *)((const char *)d +
						  u32_caps[i].offset);

		pr_u64(u32_caps[i].name, *val);
	}
	pr_hex("max_mr_size", d->max_mr_size);
	pr_str("atomic_cap", atomic_cap_name(d->atomic_cap));
	pr_u64("max_fast_reg_page_list_len", d->max_fast_reg_page_list_len);
	pr_mask("page_size_cap", d->page_size_cap);
	pr_mask("device_cap_flags", d->device_cap_flags);
	pr_obj_end();
}

/*
 * Whether device @dev_index is iWARP (an RNIC), which carries no immediate
 * data: the tool's protocols then say in the message what the immediate
 * would have.
 */
bool dev_is_iwarp(int fd, uint32_t dev_index)
{
	struct dev_snapshot s;
	bool iwarp;

	if (query_devices(fd, true, dev_index, &s))
		return false;
	iwarp = s.num_devs && s.devs[0].node_type == KRDMA_NODE_RNIC;
	free_snapshot(&s);
	return iwarp;
}

/*
 * The largest kernel buffer (KRDMA_BUF_ALLOC) device @dev_index takes: one
 * MR's max_fast_reg_page_list_len chunks of the largest page size it maps,
 * from the system's page up to 4 MiB, and no more than max_mr_size; 0 if
 * unknown.
 */
uint64_t dev_max_buf(int fd, uint32_t dev_index)
{
	uint64_t chunk, largest = 0;
	struct dev_snapshot s;

	if (query_devices(fd, true, dev_index, &s))
		return 0;
	if (s.num_devs) {
		for (chunk = sysconf(_SC_PAGESIZE); chunk <= 4 << 20;
		     chunk <<= 1)
			if (s.devs[0].page_size_cap & chunk)
				largest = chunk;
		largest *= s.devs[0].max_fast_reg_page_list_len;
		if (largest > s.devs[0].max_mr_size)
			largest = s.devs[0].max_mr_size;
	}
	free_snapshot(&s);
	return largest;
}

/*
 * The largest message one WR may carry on every port of device
 * @dev_index (max_msg_sz); 0 if unknown.
 */
uint32_t dev_max_msg(int fd, uint32_t dev_index)
{
	struct dev_snapshot s;
	uint32_t i, least = 0;

	if (query_devices(fd, true, dev_index, &s))
		return 0;
	for (i = 0; i < s.num_ports; i++)
		if (s.ports[i].max_msg_sz &&
		    (!least || s.ports[i].max_msg_sz < least))
			least = s.ports[i].max_msg_sz;
	free_snapshot(&s);
	return least;
}

/* Device @dev_index's vendor ID; 0 if it cannot be told. */
uint32_t dev_vendor_id(int fd, uint32_t dev_index)
{
	struct dev_snapshot s;
	uint32_t vendor_id = 0;

	if (query_devices(fd, true, dev_index, &s))
		return 0;
	if (s.num_devs)
		vendor_id = s.devs[0].vendor_id;
	free_snapshot(&s);
	return vendor_id;
}

/* Device @dev_index's name into @buf, or "device N" if it has none now. */
const char *dev_name_of(int fd, uint32_t dev_index, char *buf, size_t len)
{
	struct dev_snapshot s;

	snprintf(buf, len, "device %u", dev_index);
	if (query_devices(fd, true, dev_index, &s))
		return buf;
	if (s.num_devs)
		snprintf(buf, len, "%s", s.devs[0].name);
	free_snapshot(&s);
	return buf;
}

/* The device's first port, if the snapshot holds it. */
static const struct krdma_port_info *
first_port(const struct dev_snapshot *s, const struct krdma_device_info *d)
{
	if (d->first_port < s->num_ports && d->phys_port_cnt &&
	    s->ports[d->first_port].dev_index == d->dev_index)
		return &s->ports[d->first_port];
	return NULL;
}

/*
 * The transport, as the kernel's rdma_protocol_*() tell it: an RNIC is
 * iWARP; else the link layer says InfiniBand, or Ethernet, whose RoCE
 * version is that of the port's GIDs.
 */
static const char *dev_transport_name(const struct dev_snapshot *s,
				      const struct krdma_device_info *d)
{
	const struct krdma_port_info *p = first_port(s, d);
	bool v1 = false, v2 = false;
	uint32_t i;

	if (d->node_type == KRDMA_NODE_RNIC)
		return "iWARP";
	if (!p)
		return "unknown";
	if (p->link_layer == KRDMA_LINK_LAYER_INFINIBAND)
		return "InfiniBand";
	if (p->link_layer != KRDMA_LINK_LAYER_ETHERNET)
		return "unknown";
	for (i = 0; i < s->num_gids; i++) {
		const struct krdma_gid_info *g = &s->gids[i];

		if (g->dev_index != p->dev_index || g->port_num != p->port_num)
			continue;
		v1 |= g->gid_type == KRDMA_GID_TYPE_ROCE;
		v2 |= g->gid_type == KRDMA_GID_TYPE_ROCE_UDP_ENCAP;
	}
	if (v1 && v2)
		return "RoCE v1/v2";
	return v1 ? "RoCE v1" : "RoCE v2";
}

static void pr_yes_no(const char *key, bool yes)
{
	pr_str(key, yes ? "yes" : "no");
}

/*
 * What krdma can do on the device, as its checks decide it (the
 * uapi/krdma.h DOC: "Transports and what they refuse"): iWARP has RC over
 * rdma_cm alone, without immediate data; atomics need an atomic_cap.
 */
static void print_supports(const struct krdma_device_info *d)
{
	bool iwarp = d->node_type == KRDMA_NODE_RNIC;

	pr_obj_begin("supports");
	pr_yes_no("rc", true);
	pr_yes_no("uc", !iwarp);
	pr_yes_no("ud", !iwarp);
	pr_yes_no("manual_connect", !iwarp);
	pr_yes_no("atomics", d->atomic_cap != KRDMA_ATOMIC_NONE);
	pr_yes_no("imm_data", !iwarp);
	pr_yes_no("srq", d->max_srq != 0);
	pr_u64("max_read_sge", d->max_sge_rd);
	pr_u64("max_inline", d->max_inline_data);
	pr_obj_end();
}

static void print_device(const struct dev_snapshot *s,
			 const struct krdma_device_info *d)
{
	char node_guid[20], sys_image_guid[20];

	format_guid(node_guid, sizeof(node_guid), d->node_guid);
	format_guid(sys_image_guid, sizeof(sys_image_guid), d->sys_image_guid);

	pr_obj_begin(NULL);
	pr_label_u64("dev_index", NULL, d->dev_index);
	pr_label_str("name", d->name);
	pr_str("node_type", node_type_name(d->node_type));
	pr_str("transport", dev_transport_name(s, d));
	pr_str("node_guid", node_guid);
	pr_str("sys_image_guid", sys_image_guid);
	pr_hex("vendor_id", d->vendor_id);
	pr_hex("vendor_part_id", d->vendor_part_id);
	pr_hex("hw_ver", d->hw_ver);
	pr_u64("phys_port_cnt", d->phys_port_cnt);
	print_caps(d);
	print_supports(d);
	print_ports(s, d);
	pr_obj_end();
}

static const struct krdma_device_info *
find_device(const struct dev_snapshot *s, const char *name)
{
	uint32_t i;

	for (i = 0; i < s->num_devs; i++)
		if (!strcmp(s->devs[i].name, name))
			return &s->devs[i];
	return NULL;
}

static int print_devices(const struct dev_snapshot *s,
			 const struct devices_opts *o)
{
	const struct krdma_device_info *only = NULL;
	uint32_t i;

	if (o->name) {
		only = find_device(s, o->name);
		if (!only) {
			err_msg("device \"%s\" not found", o->name);
			return 1;
		}
	}
	pr_arr_begin(NULL);
	for (i = 0; i < s->num_devs; i++)
		if (!only || only == &s->devs[i])
			print_device(s, &s->devs[i]);
	pr_arr_end();
	return 0;
}

int cmd_devices(int argc, char **argv)
{
	struct devices_opts opts = { 0 };
	struct dev_snapshot snap;
	int fd, ret;

	ret = parse_devices_opts(argc, argv, &opts);
	if (ret)
		return ret < 0 ? 0 : ret;

	fd = krdma_open();
	if (fd < 0) {
		krdma_report_open(fd);
		return 1;
	}
	ret = query_devices(fd, opts.by_index, opts.index, &snap);
	close(fd);
	if (ret)
		return 1;
	ret = print_devices(&snap, &opts);
	free_snapshot(&snap);
	return ret;
}
