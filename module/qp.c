// SPDX-License-Identifier: GPL-2.0
/*
 * The QP state machine, RESET -> INIT -> RTR -> RTS, for RC, UC and UD QPs,
 * shared by connections and the device's registration QP.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "conn.h"

static int krdma_qp_init(struct ib_qp *qp, const struct krdma_qp_path *path)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = path->port_num,
	};
	int mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;

	if (qp->qp_type == IB_QPT_UD) {
		attr.qkey = path->qkey;
		mask |= IB_QP_QKEY;
	} else {
		attr.qp_access_flags = path->access;
		mask |= IB_QP_ACCESS_FLAGS;
	}
	return ib_modify_qp(qp, &attr, mask);
}

struct krdma_resolve {
	struct completion done;
	int status;
};

static void krdma_resolve_done(int status, struct sockaddr *src,
			       struct rdma_dev_addr *addr, void *context)
{
	struct krdma_resolve *resolve = context;

	resolve->status = status;
	complete(&resolve->done);
}

/*
 * The namespace a neighbour of the GID @attr is resolved in: its netdev's,
 * the caller's (krdma_gid_visible()), referenced; NULL if the netdev or
 * its namespace is on its way out.
 */
static struct net *krdma_gid_net_get(const struct ib_gid_attr *attr)
{
	struct net_device *ndev;
	struct net *net = NULL;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR(ndev))
		net = maybe_get_net(dev_net(ndev));
	rcu_read_unlock();
	return net;
}

/*
 * The verbs core resolves the destination MAC of a RoCE address vector only
 * for user QPs and AHs; kernel users hand it over resolved.  Do what
 * ib_resolve_eth_dmac() does: link-local GIDs carry the MAC, the others go
 * through neighbour resolution from the source GID's netdev, in its
 * namespace.
 */
static int krdma_resolve_dmac(struct ib_device *ibdev, struct rdma_ah_attr *ah)
{
	struct ib_global_route *grh = rdma_ah_retrieve_grh(ah);
	struct in6_addr *dgid = (struct in6_addr *)grh->dgid.raw;
	struct rdma_dev_addr dev_addr = {};
	const struct ib_gid_attr *sgid_attr;
	struct sockaddr_storage src, dst;
	struct krdma_resolve resolve;
	int ret;

	if (rdma_is_multicast_addr(dgid))
		return -EINVAL;
	if (rdma_link_local_addr(dgid)) {
		rdma_get_ll_mac(dgid, ah->roce.dmac);
		return 0;
	}
	sgid_attr = rdma_get_gid_attr(ibdev, rdma_ah_get_port_num(ah),
				      grh->sgid_index);
	if (IS_ERR(sgid_attr))
		return PTR_ERR(sgid_attr);
	dev_addr.net = krdma_gid_net_get(sgid_attr);
	if (!dev_addr.net) {
		ret = -ENETDOWN;
		goto out;
	}
	rdma_gid2ip((struct sockaddr *)&src, &sgid_attr->gid);
	rdma_gid2ip((struct sockaddr *)&dst, &grh->dgid);
	dev_addr.sgid_attr = sgid_attr;
	init_completion(&resolve.done);
	ret = rdma_resolve_ip((struct sockaddr *)&src, (struct sockaddr *)&dst,
			      &dev_addr, 1000, krdma_resolve_done, true,
			      &resolve);
	if (!ret) {
		wait_for_completion(&resolve.done);
		ret = resolve.status;
	}
	if (!ret) {
		memcpy(ah->roce.dmac, dev_addr.dst_dev_addr, ETH_ALEN);
		grh->hop_limit = dev_addr.hoplimit;
	}
	put_net(dev_addr.net);
out:
	rdma_put_gid_attr(sgid_attr);
	return ret;
}

/* The address vector to a peer: LID on IB, GRH (and MAC) on RoCE. */
int krdma_qp_set_av(struct ib_device *ibdev, struct rdma_ah_attr *ah,
		    const struct krdma_qp_path *path)
{
	union ib_gid dgid = path->dgid;	/* rdma_ah_set_grh() takes no const */

	ah->type = rdma_ah_find_type(ibdev, path->port_num);
	rdma_ah_set_port_num(ah, path->port_num);
	rdma_ah_set_sl(ah, 0);
	if (rdma_protocol_roce(ibdev, path->port_num) || path->use_grh)
		rdma_ah_set_grh(ah, &dgid, 0, path->sgid_index,
				path->hop_limit ? path->hop_limit : 64, 0);
	else
		rdma_ah_set_dlid(ah, path->dest_lid);
	if (ah->type == RDMA_AH_ATTR_TYPE_ROCE)
		return krdma_resolve_dmac(ibdev, ah);
	return 0;
}

static int krdma_qp_rtr(struct ib_qp *qp, const struct krdma_qp_path *path)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	int mask = IB_QP_STATE;
	int ret;

	if (qp->qp_type == IB_QPT_UD)
		return ib_modify_qp(qp, &attr, mask);

	attr.path_mtu = path->path_mtu;
	attr.dest_qp_num = path->dest_qp_num;
	attr.rq_psn = path->rq_psn;
	ret = krdma_qp_set_av(qp->device, &attr.ah_attr, path);
	if (ret)
		return ret;
	mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN;
	if (qp->qp_type == IB_QPT_RC) {
		attr.max_dest_rd_atomic = path->max_dest_rd_atomic;
		attr.min_rnr_timer = path->min_rnr_timer;
		mask |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
	}
	return ib_modify_qp(qp, &attr, mask);
}

static int krdma_qp_rts(struct ib_qp *qp, const struct krdma_qp_path *path)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_RTS,
		.sq_psn = path->sq_psn,
	};
	int mask = IB_QP_STATE | IB_QP_SQ_PSN;

	if (qp->qp_type == IB_QPT_RC) {
		attr.timeout = path->timeout;
		attr.retry_cnt = path->retry_cnt;
		attr.rnr_retry = path->rnr_retry;
		attr.max_rd_atomic = path->max_rd_atomic;
		mask |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			IB_QP_MAX_QP_RD_ATOMIC;
	}
	return ib_modify_qp(qp, &attr, mask);
}

/* RESET to RTS in one go; on failure the QP is left where it stopped. */
int krdma_qp_connect(struct ib_qp *qp, const struct krdma_qp_path *path)
{
	int ret;

	ret = krdma_qp_init(qp, path);
	if (!ret)
		ret = krdma_qp_rtr(qp, path);
	if (!ret)
		ret = krdma_qp_rts(qp, path);
	return ret;
}

/*
 * A source GID for a port: the first RoCE v2 GID (IPv4 mapped ones first,
 * as rdma_cm would pick for an IPv4 peer), else index 0.
 */
int krdma_qp_default_sgid(struct ib_device *ibdev, u32 port, u32 *index,
			  union ib_gid *gid)
{
	const struct ib_gid_attr *attr, *best = NULL;
	struct ib_port_attr pattr;
	int i, ret;

	ret = ib_query_port(ibdev, port, &pattr);
	if (ret)
		return ret;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		attr = rdma_get_gid_attr(ibdev, port, i);
		if (IS_ERR(attr))
			continue;
		if (!best || (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
			      ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw) &&
			      !ipv6_addr_v4mapped((struct in6_addr *)best->gid.raw))) {
			if (best)
				rdma_put_gid_attr(best);
			best = attr;
		} else {
			rdma_put_gid_attr(attr);
		}
	}
	if (!best)
		return -ENETDOWN;
	*index = best->index;
	*gid = best->gid;
	rdma_put_gid_attr(best);
	return 0;
}

/* For listings: "RTS", as `rdma resource show qp` names the states. */
const char *krdma_qp_state_name(enum ib_qp_state state)
{
	static const char *const names[] = {
		[IB_QPS_RESET] = "RESET", [IB_QPS_INIT] = "INIT",
		[IB_QPS_RTR] = "RTR", [IB_QPS_RTS] = "RTS",
		[IB_QPS_SQD] = "SQD", [IB_QPS_SQE] = "SQE",
		[IB_QPS_ERR] = "ERR",
	};

	if ((unsigned int)state >= ARRAY_SIZE(names))
		return "unknown";
	return names[state];
}
