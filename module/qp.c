// SPDX-License-Identifier: GPL-2.0
/*
 * The QP state machine, RESET -> INIT -> RTR -> RTS, for RC, UC and UD QPs,
 * shared by connections and the device's registration QP.
 */
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "krdma_priv.h"

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

void krdma_qp_set_av(struct ib_device *ibdev, struct rdma_ah_attr *ah,
		     const struct krdma_qp_path *path)
{
	union ib_gid dgid = path->dgid;	/* rdma_ah_set_grh() takes no const */

	ah->type = rdma_ah_find_type(ibdev, path->port_num);
	rdma_ah_set_port_num(ah, path->port_num);
	rdma_ah_set_sl(ah, 0);
	if (rdma_protocol_roce(ibdev, path->port_num) ||
	    path->use_grh)
		rdma_ah_set_grh(ah, &dgid, 0, path->sgid_index,
				path->hop_limit ? path->hop_limit : 64, 0);
	else
		rdma_ah_set_dlid(ah, path->dest_lid);
}

static int krdma_qp_rtr(struct ib_qp *qp, const struct krdma_qp_path *path)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	int mask = IB_QP_STATE;

	if (qp->qp_type == IB_QPT_UD)
		return ib_modify_qp(qp, &attr, mask);

	attr.path_mtu = path->path_mtu;
	attr.dest_qp_num = path->dest_qp_num;
	attr.rq_psn = path->rq_psn;
	krdma_qp_set_av(qp->device, &attr.ah_attr, path);
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
