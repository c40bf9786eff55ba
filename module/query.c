// SPDX-License-Identifier: GPL-2.0
/*
 * Discovery: KRDMA_GET_INFO and KRDMA_QUERY_DEVICES.
 */
#include <linux/netdevice.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "buf.h"
#include "device.h"
#include "ioctl.h"
#include "krdma_compat.h"
#include "krdma_version.h"
#include "object.h"
#include "wr.h"

int krdma_get_info(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_info *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;

	cmd->abi_version = KRDMA_ABI_VERSION;
	cmd->num_devices = krdma_devices_count(session->net);
	cmd->features = KRDMA_FEATURE_QUERY_DEVICES | KRDMA_FEATURE_BUFFERS |
			KRDMA_FEATURE_MANUAL_CONN | KRDMA_FEATURE_RDMA_CM |
			KRDMA_FEATURE_USER_BUFFERS | KRDMA_FEATURE_SRQ |
			KRDMA_FEATURE_BENCH | KRDMA_FEATURE_POST_POLL |
			KRDMA_FEATURE_ACCEPT_ASYNC |
			KRDMA_FEATURE_QUERY_SESSIONS |
			KRDMA_FEATURE_EVENT_DEVICE |
			KRDMA_FEATURE_BUFFER_MRS;
	cmd->ops = krdma_supported_ops();
	cmd->transports = BIT(KRDMA_TRANSPORT_RC) | BIT(KRDMA_TRANSPORT_UC) |
			  BIT(KRDMA_TRANSPORT_UD);
	cmd->num_device_contexts = krdma_device_contexts();
	memset(cmd->module_version, 0, sizeof(cmd->module_version));
	strscpy(cmd->module_version, KRDMA_VERSION,
		sizeof(cmd->module_version));
	cmd->bench_protocol = KRDMA_BENCH_PROTOCOL;
	return krdma_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * The whole answer, built under krdma_devices_lock() before any copy-out:
 * what a session of @net sees.
 */
struct krdma_snapshot {
	const struct net *net;
	struct krdma_device_info *devices;
	struct krdma_port_info *ports;
	struct krdma_gid_info *gids;
	u32 num_devices;
	u32 num_ports;
	u32 num_gids;
	u32 max_devices;
	u32 max_ports;
	u32 max_gids;
};

/*
 * A zeroed entry at the end of a growing array, or NULL without memory;
 * free the array with kvfree().  Its size follows what the caller lists
 * (every session on the host, for one): vmalloc'ed past what kmalloc
 * gives, and charged to the caller's memory cgroup.
 */
void *krdma_array_slot(void **array, u32 *num, u32 *max, size_t entry_size)
{
	void *slot;

	if (*num == *max) {
		u32 new_max = *max ? *max * 2 : 8;
		void *bigger;

		if (new_max < *max)
			return NULL;
		bigger = kvmalloc_array(new_max, entry_size,
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!bigger)
			return NULL;
		if (*array)
			memcpy(bigger, *array, (size_t)*num * entry_size);
		kvfree(*array);
		*array = bigger;
		*max = new_max;
	}
	slot = *array + (size_t)*num * entry_size;
	memset(slot, 0, entry_size);
	(*num)++;
	return slot;
}

static void krdma_copy_ndev_name(char *dst, const struct ib_gid_attr *attr)
{
	struct net_device *ndev;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR(ndev))
		strscpy(dst, ndev->name, KRDMA_IFNAME_MAX);
	rcu_read_unlock();
}

static int krdma_snap_gids(struct krdma_snapshot *snap,
			   struct krdma_device *kdev, u32 port,
			   struct krdma_port_info *pinfo, int gid_tbl_len)
{
	const struct ib_gid_attr *attr;
	struct krdma_gid_info *ginfo;
	int index;

	pinfo->first_gid = snap->num_gids;
	for (index = 0; index < gid_tbl_len; index++) {
		attr = rdma_get_gid_attr(kdev->ibdev, port, index);
		if (IS_ERR(attr))
			continue;	/* an empty slot */
		/* another namespace's address is not the caller's business */
		if (!krdma_gid_visible(attr, snap->net)) {
			rdma_put_gid_attr(attr);
			continue;
		}
		ginfo = krdma_array_slot((void **)&snap->gids,
					 &snap->num_gids, &snap->max_gids,
					 sizeof(*ginfo));
		if (!ginfo) {
			rdma_put_gid_attr(attr);
			return -ENOMEM;
		}
		ginfo->dev_index = kdev->id;
		ginfo->port_num = port;
		ginfo->gid_index = index;
		ginfo->gid_type = attr->gid_type;
		memcpy(ginfo->gid, attr->gid.raw, sizeof(ginfo->gid));
		krdma_copy_ndev_name(ginfo->netdev, attr);
		rdma_put_gid_attr(attr);
		pinfo->num_gids++;
	}
	return 0;
}

/*
 * The port's netdev as the core knows it (ib_device_set_netdev(), a
 * driver's get_netdev()), if it is in the caller's namespace: an iWARP
 * port has one but no RoCE GIDs, whose attributes name the netdev
 * otherwise.
 */
static void krdma_port_netdev(struct ib_device *ibdev, u32 port,
			      const struct net *net,
			      struct krdma_port_info *pinfo)
{
	struct net_device *ndev = ib_device_get_netdev(ibdev, port);

	if (!ndev)
		return;
	if (net_eq(dev_net(ndev), net))
		strscpy(pinfo->netdev, ndev->name, sizeof(pinfo->netdev));
	dev_put(ndev);
}

static int krdma_snap_port(struct krdma_snapshot *snap,
			   struct krdma_device *kdev, u32 port)
{
	struct krdma_port_info *pinfo;
	struct ib_port_attr attr;
	int ret;

	ret = ib_query_port(kdev->ibdev, port, &attr);
	if (ret)
		return ret;
	pinfo = krdma_array_slot((void **)&snap->ports, &snap->num_ports,
				 &snap->max_ports, sizeof(*pinfo));
	if (!pinfo)
		return -ENOMEM;
	pinfo->dev_index = kdev->id;
	pinfo->port_num = port;
	pinfo->state = attr.state;
	pinfo->phys_state = attr.phys_state;
	pinfo->active_mtu = ib_mtu_enum_to_int(attr.active_mtu);
	pinfo->max_mtu = ib_mtu_enum_to_int(attr.max_mtu);
	switch (rdma_port_get_link_layer(kdev->ibdev, port)) {
	case IB_LINK_LAYER_INFINIBAND:
		pinfo->link_layer = KRDMA_LINK_LAYER_INFINIBAND;
		break;
	case IB_LINK_LAYER_ETHERNET:
		pinfo->link_layer = KRDMA_LINK_LAYER_ETHERNET;
		break;
	default:
		pinfo->link_layer = KRDMA_LINK_LAYER_UNSPECIFIED;
		break;
	}
	pinfo->lid = attr.lid;
	pinfo->sm_lid = attr.sm_lid;
	pinfo->lmc = attr.lmc;
	pinfo->max_msg_sz = attr.max_msg_sz;
	pinfo->gid_tbl_len = attr.gid_tbl_len;
	pinfo->pkey_tbl_len = attr.pkey_tbl_len;
	pinfo->active_speed = attr.active_speed;
	pinfo->active_width = attr.active_width;

	/* pinfo may move while the GID array grows: index it afterwards. */
	ret = krdma_snap_gids(snap, kdev, port, pinfo, attr.gid_tbl_len);
	if (ret)
		return ret;
	pinfo = &snap->ports[snap->num_ports - 1];
	/* RoCE: the netdev of the first GID the caller may see */
	if (pinfo->num_gids)
		strscpy(pinfo->netdev, snap->gids[pinfo->first_gid].netdev,
			sizeof(pinfo->netdev));
	if (!pinfo->netdev[0])
		krdma_port_netdev(kdev->ibdev, port, snap->net, pinfo);
	return 0;
}

static void krdma_fill_device(struct krdma_device_info *dinfo,
			      struct krdma_device *kdev)
{
	const struct ib_device_attr *attrs = &kdev->ibdev->attrs;

	dinfo->dev_index = kdev->id;
	dinfo->node_type = kdev->ibdev->node_type;
	strscpy(dinfo->name, dev_name(&kdev->ibdev->dev), sizeof(dinfo->name));
	dinfo->node_guid = be64_to_cpu(kdev->ibdev->node_guid);
	dinfo->sys_image_guid = be64_to_cpu(attrs->sys_image_guid);
	dinfo->max_mr_size = krdma_buf_max_length(kdev);
	dinfo->page_size_cap = attrs->page_size_cap;
	dinfo->device_cap_flags = attrs->device_cap_flags;
	dinfo->vendor_id = attrs->vendor_id;
	dinfo->vendor_part_id = attrs->vendor_part_id;
	dinfo->hw_ver = attrs->hw_ver;
	dinfo->phys_port_cnt = rdma_end_port(kdev->ibdev) -
			       rdma_start_port(kdev->ibdev) + 1;
	dinfo->max_qp = attrs->max_qp;
	dinfo->max_qp_wr = attrs->max_qp_wr;
	dinfo->max_send_sge = attrs->max_send_sge;
	dinfo->max_recv_sge = attrs->max_recv_sge;
	dinfo->max_sge_rd = attrs->max_sge_rd;
	dinfo->max_cq = attrs->max_cq;
	dinfo->max_cqe = attrs->max_cqe;
	dinfo->max_mr = attrs->max_mr;
	dinfo->max_pd = attrs->max_pd;
	dinfo->max_mw = attrs->max_mw;
	dinfo->max_srq = attrs->max_srq;
	dinfo->max_srq_wr = attrs->max_srq_wr;
	dinfo->max_qp_rd_atom = attrs->max_qp_rd_atom;
	dinfo->max_qp_init_rd_atom = attrs->max_qp_init_rd_atom;
	dinfo->max_fast_reg_page_list_len = attrs->max_fast_reg_page_list_len;
	dinfo->max_inline_data = kdev->max_inline_data;
	dinfo->atomic_cap = attrs->atomic_cap;
}

static int krdma_snap_device(struct krdma_snapshot *snap,
			     struct krdma_device *kdev)
{
	struct krdma_device_info *dinfo;
	u32 port;
	int ret;

	dinfo = krdma_array_slot((void **)&snap->devices,
				 &snap->num_devices, &snap->max_devices,
				 sizeof(*dinfo));
	if (!dinfo)
		return -ENOMEM;
	krdma_fill_device(dinfo, kdev);
	dinfo->first_port = snap->num_ports;
	rdma_for_each_port(kdev->ibdev, port) {
		ret = krdma_snap_port(snap, kdev, port);
		if (ret)
			return ret;
	}
	return 0;
}

static int krdma_take_snapshot(struct krdma_snapshot *snap,
			       const struct krdma_query_devices *cmd)
{
	struct krdma_device *kdev;
	unsigned long index = 0;
	int ret = 0;

	krdma_devices_lock();
	if (cmd->flags & KRDMA_QUERY_DEVICES_ONE) {
		kdev = krdma_device_find(cmd->dev_index);
		if (kdev && krdma_device_visible(kdev, snap->net))
			ret = krdma_snap_device(snap, kdev);
		else
			ret = -ENODEV;
	} else {
		while ((kdev = krdma_device_next(&index))) {
			if (krdma_device_visible(kdev, snap->net))
				ret = krdma_snap_device(snap, kdev);
			if (ret)
				break;
			index++;
		}
	}
	krdma_devices_unlock();
	return ret;
}

static void krdma_free_snapshot(struct krdma_snapshot *snap)
{
	kvfree(snap->devices);
	kvfree(snap->ports);
	kvfree(snap->gids);
}

/* An output array the caller describes: empty, or entries of a known size. */
int krdma_check_array(u32 num, u32 entry_size, size_t min_size)
{
	size_t bytes;

	if (!num)
		return 0;
	if (!krdma_entry_size_ok(entry_size, min_size))
		return -EINVAL;
	if (check_mul_overflow((size_t)num, (size_t)entry_size, &bytes))
		return -EINVAL;
	return 0;
}

static int krdma_query_devices_check(const struct krdma_query_devices *cmd)
{
	int ret;

	if (cmd->flags & ~KRDMA_QUERY_DEVICES_ONE)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!(cmd->flags & KRDMA_QUERY_DEVICES_ONE) && cmd->dev_index)
		return -EINVAL;
	ret = krdma_check_array(cmd->num_devices, cmd->device_entry_size,
				sizeof(struct krdma_device_info));
	if (!ret)
		ret = krdma_check_array(cmd->num_ports, cmd->port_entry_size,
					sizeof(struct krdma_port_info));
	if (!ret)
		ret = krdma_check_array(cmd->num_gids, cmd->gid_entry_size,
					sizeof(struct krdma_gid_info));
	return ret;
}

static int krdma_copy_snapshot(const struct krdma_query_devices *cmd,
			       const struct krdma_snapshot *snap)
{
	int ret;

	ret = krdma_copy_entries(cmd->devices_uptr, cmd->device_entry_size,
				 snap->devices, sizeof(*snap->devices),
				 snap->num_devices);
	if (!ret)
		ret = krdma_copy_entries(cmd->ports_uptr, cmd->port_entry_size,
					 snap->ports, sizeof(*snap->ports),
					 snap->num_ports);
	if (!ret)
		ret = krdma_copy_entries(cmd->gids_uptr, cmd->gid_entry_size,
					 snap->gids, sizeof(*snap->gids),
					 snap->num_gids);
	return ret;
}

int krdma_query_devices(struct krdma_session *session,
			struct krdma_ucmd *ucmd)
{
	struct krdma_query_devices *cmd = ucmd->cmd;
	struct krdma_snapshot snap = { .net = session->net };
	bool fits;
	int ret;

	ret = krdma_query_devices_check(cmd);
	if (ret)
		return ret;
	ret = krdma_take_snapshot(&snap, cmd);
	if (ret)
		goto out;

	fits = snap.num_devices <= cmd->num_devices &&
	       snap.num_ports <= cmd->num_ports &&
	       snap.num_gids <= cmd->num_gids;
	if (fits)
		ret = krdma_copy_snapshot(cmd, &snap);
	if (ret)
		goto out;

	cmd->num_devices = snap.num_devices;
	cmd->num_ports = snap.num_ports;
	cmd->num_gids = snap.num_gids;
	ret = krdma_ucmd_respond(ucmd, sizeof(*cmd));
	if (!ret && !fits)
		ret = -EMSGSIZE;
out:
	krdma_free_snapshot(&snap);
	return ret;
}
