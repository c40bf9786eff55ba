// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains: every session has its own PD on each device it uses,
 * so an rkey of one session means nothing on another session's QPs.  A
 * peer connected to one user's connection can reach that user's buffers
 * (those registered for remote access) and nobody else's; a SEND_WITH_INV
 * it sends invalidates only that user's keys, on a device that keeps to
 * the PD there (not rxe: krdma_device_inv_crosses_pd()).
 *
 * Fast registration is posted on a QP of the MR's own PD, so each of these
 * PDs has its registration QP: RC, connected to itself, created on first
 * use, sharing the device's CQ.
 *
 * Every object living in a PD holds a reference to it; the last one gone
 * frees it, so a session without objects on a device holds nothing of it.
 * A PD is created only under krdma_device_enter(), so removal (which takes
 * the device's usage lock for write) never meets one half-built, and
 * removal destroys it after every object that lived in it.
 */
#include <linux/slab.h>
#include <linux/xarray.h>

#include "conn.h"
#include "device.h"
#include "object.h"
#include "wr.h"

#define KRDMA_REG_TIMEOUT (30 * HZ)

struct krdma_reg_wait {
	struct ib_cqe cqe;
	struct completion done;
	enum ib_wc_status status;
};

static void krdma_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_reg_wait *wait =
		container_of(wc->wr_cqe, struct krdma_reg_wait, cqe);

	wait->status = wc->status;
	complete(&wait->done);
}

/* Where the registration QP connects to itself: the first active port. */
static int krdma_reg_path(struct ib_device *ibdev, struct krdma_qp_path *path)
{
	struct ib_port_attr pattr;
	u32 port;

	rdma_for_each_port(ibdev, port) {
		if (ib_query_port(ibdev, port, &pattr) ||
		    pattr.state != IB_PORT_ACTIVE)
			continue;
		if (krdma_qp_default_sgid(ibdev, port, &path->sgid_index,
					  &path->dgid))
			continue;
		path->port_num = port;
		path->dest_lid = pattr.lid;
		return 0;
	}
	return -ENETDOWN;
}

static int krdma_reg_qp_create(struct krdma_pd *kpd)
{
	struct krdma_device *kdev = kpd->kdev;
	struct ib_qp_init_attr init = {
		.send_cq = kdev->cq,
		.recv_cq = kdev->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct krdma_qp_path path = {
		.path_mtu = IB_MTU_1024,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 12,
		.max_rd_atomic = 1,
		.max_dest_rd_atomic = 1,
	};
	struct ib_qp *qp;
	int ret;

	lockdep_assert_held(&kpd->reg_lock);
	ret = krdma_reg_path(kdev->ibdev, &path);
	if (ret)
		return ret;
	qp = ib_create_qp(kpd->pd, &init);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	path.dest_qp_num = qp->qp_num;
	ret = krdma_qp_connect(qp, &path);
	if (ret) {
		ib_destroy_qp(qp);
		return ret;
	}
	kpd->reg_qp = qp;
	return 0;
}

/*
 * Wait for a registration's completion.  Registration is local work; if the
 * device sits on it, flush it out through the error state rather than leave
 * @wait on the stack.  A QP that went to the error state (a timeout, a
 * failed WR) is destroyed: the next registration makes a new one.
 */
static int krdma_reg_wait(struct krdma_pd *kpd, struct krdma_reg_wait *wait)
{
	bool timed_out = false;

	lockdep_assert_held(&kpd->reg_lock);
	if (!wait_for_completion_timeout(&wait->done, KRDMA_REG_TIMEOUT)) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		ib_modify_qp(kpd->reg_qp, &attr, IB_QP_STATE);
		wait_for_completion(&wait->done);
		timed_out = true;
	}
	if (wait->status == IB_WC_SUCCESS && !timed_out)
		return 0;
	ib_destroy_qp(kpd->reg_qp);
	kpd->reg_qp = NULL;
	return wait->status == IB_WC_SUCCESS ? 0 : -EIO;
}

/*
 * Fast-register an MR of the PD whose pages are mapped (ib_map_mr_sg) with
 * a fresh key, and wait for the device to take it.
 */
int krdma_pd_reg_mr(struct krdma_pd *kpd, struct ib_mr *mr, int access)
{
	struct krdma_device *kdev = kpd->kdev;
	struct krdma_reg_wait wait = { .cqe.done = krdma_reg_done };
	struct ib_reg_wr wr = {
		.wr = {
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
			.wr_cqe = &wait.cqe,
		},
		.mr = mr,
		.access = access,
	};
	int ret;

	lockdep_assert_held_read(&kdev->usage);
	init_completion(&wait.done);
	mutex_lock(&kpd->reg_lock);
	if (!kpd->reg_qp) {
		ret = krdma_reg_qp_create(kpd);
		if (ret)
			goto out;
	}
	ret = down_killable(&kdev->reg_slots);
	if (ret)
		goto out;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	wr.key = mr->rkey;
	ret = krdma_post_send(kpd->reg_qp, &wr.wr, NULL);
	if (!ret)
		ret = krdma_reg_wait(kpd, &wait);
	up(&kdev->reg_slots);
out:
	mutex_unlock(&kpd->reg_lock);
	return ret;
}

static struct krdma_pd *krdma_pd_create(struct krdma_session *session,
					struct krdma_device *kdev)
{
	struct krdma_pd *kpd;
	int ret;

	lockdep_assert_held(&session->pd_lock);
	kpd = kzalloc(sizeof(*kpd), GFP_KERNEL);
	if (!kpd)
		return ERR_PTR(-ENOMEM);
	kref_init(&kpd->kref);
	mutex_init(&kpd->reg_lock);
	xa_init(&kpd->buf_keys);
	kpd->session = session;
	kpd->kdev = kdev;
	kpd->pd = ib_alloc_pd(kdev->ibdev, 0);
	if (IS_ERR(kpd->pd)) {
		ret = PTR_ERR(kpd->pd);
		goto err_free;
	}
	ret = xa_insert(&session->pds, kdev->id, kpd, GFP_KERNEL);
	if (ret)
		goto err_pd;
	kref_get(&kdev->kref);
	mutex_lock(&kdev->lock);
	list_add_tail(&kpd->dev_entry, &kdev->pds);
	mutex_unlock(&kdev->lock);
	return kpd;

err_pd:
	ib_dealloc_pd(kpd->pd);
err_free:
	kfree(kpd);
	return ERR_PTR(ret);
}

/*
 * The session's PD on @kdev, made on first use, referenced for an object
 * that will live in it.  The caller is inside krdma_device_enter().
 */
struct krdma_pd *krdma_pd_get(struct krdma_session *session,
			      struct krdma_device *kdev)
{
	struct krdma_pd *kpd;

	lockdep_assert_held_read(&kdev->usage);
	mutex_lock(&session->pd_lock);
	kpd = xa_load(&session->pds, kdev->id);
	/* the last put erases the entry under pd_lock: never at zero here */
	if (kpd)
		kref_get(&kpd->kref);
	else
		kpd = krdma_pd_create(session, kdev);
	mutex_unlock(&session->pd_lock);
	return kpd;
}

/* Free the PD's verbs state; the caller holds the device's lock. */
void krdma_pd_kill(struct krdma_pd *kpd)
{
	lockdep_assert_held(&kpd->kdev->lock);
	if (kpd->dead)
		return;
	if (kpd->reg_qp)
		ib_destroy_qp(kpd->reg_qp);
	kpd->reg_qp = NULL;
	ib_dealloc_pd(kpd->pd);
	kpd->pd = NULL;
	kpd->dead = true;
}

/* The last object in the PD is gone; called with the session's pd_lock. */
static void krdma_pd_release(struct kref *kref)
{
	struct krdma_pd *kpd = container_of(kref, struct krdma_pd, kref);
	struct krdma_device *kdev = kpd->kdev;

	lockdep_assert_held(&kpd->session->pd_lock);
	xa_erase(&kpd->session->pds, kdev->id);
	mutex_unlock(&kpd->session->pd_lock);
	mutex_lock(&kdev->lock);
	krdma_pd_kill(kpd);
	list_del(&kpd->dev_entry);
	mutex_unlock(&kdev->lock);
	krdma_device_put(kdev);
	/* each buffer's key went with its MR, before its put of the PD */
	WARN_ON(!xa_empty(&kpd->buf_keys));
	xa_destroy(&kpd->buf_keys);
	kfree(kpd);
}

void krdma_pd_put(struct krdma_pd *kpd)
{
	kref_put_mutex(&kpd->kref, krdma_pd_release, &kpd->session->pd_lock);
}
