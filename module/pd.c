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
 * use, sharing the device's CQ.  An iWARP QP reaches RTS only through the
 * iWARP CM, over a TCP stream (siw_qp_modify() refuses RTS without the
 * stream's socket), so there the registration QP is the active end of an
 * rdma_cm connection over loopback to a second QP of the same PD.
 *
 * Every object living in a PD holds a reference to it; the last one gone
 * frees it, so a session without objects on a device holds nothing of it.
 * A PD is created only under krdma_device_enter(), so removal (which takes
 * the device's usage lock for write) never meets one half-built, and
 * removal destroys it after every object that lived in it.
 */
#include <linux/inetdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/rdma_cm.h>

#include "conn.h"
#include "device.h"
#include "krdma_compat.h"
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

#define KRDMA_REG_CM_TIMEOUT_MS 5000

/**
 * struct krdma_reg_cm - the rdma_cm connection of an iWARP registration QP
 * @listen_id: listens on an ephemeral port of the device's address until
 *	the connection is made
 * @active_id: its QP is the PD's registration QP
 * @passive_id: the accepted end, whose QP only keeps the stream up
 * @kpd: the PD both QPs live in
 * @cookie: in the connect's private data: only this request is accepted, a
 *	stranger's connect to the port gets no QP in the PD
 * @done: an awaited event came, with @status
 * @status: 0, or what went wrong
 * @destroy_work: destroys the connection once its PD is gone (krdma_reg_wq)
 * @pd: the PD to free after the connection's QPs, in @destroy_work
 */
struct krdma_reg_cm {
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *active_id;
	struct rdma_cm_id *passive_id;
	struct krdma_pd *kpd;
	u64 cookie;
	struct completion done;
	int status;
	struct work_struct destroy_work;
	struct ib_pd *pd;
};

/*
 * Where a dead PD's iWARP registration connection is destroyed.  Its
 * rdma_destroy_qp() waits (siw_destroy_qp()) for iw_cm to handle the
 * stream's close, on iw_cm's ordered workqueue, behind any handler queued
 * before it; krdma's own rdma_cm handlers take the device's lock and may
 * drop a PD's last reference.  So a dead PD's connection is destroyed
 * here, never under that lock or in a handler; krdma_pd_flush() waits for
 * it before the device's CQ and the device go.  The registration paths
 * that destroy one they made (a failed connect or registration) hold
 * neither: only the PD's reg_lock and the device's usage for read, which
 * krdma's handlers never wait for (krdma_device_enter_ib() tries it).
 */
static struct workqueue_struct *krdma_reg_wq;

/* A registration QP, and on iWARP the other end of its connection. */
static void krdma_reg_qp_init_attr(struct krdma_pd *kpd,
				   struct ib_qp_init_attr *init)
{
	*init = (struct ib_qp_init_attr) {
		.send_cq = kpd->kdev->cq,
		.recv_cq = kpd->kdev->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
}

static void krdma_reg_cm_signal(struct krdma_reg_cm *rc, int status)
{
	rc->status = status;
	complete(&rc->done);
}

/* The listener and, once accepted, the passive end (it inherits them). */
static int krdma_reg_cm_passive_handler(struct rdma_cm_id *id,
					struct rdma_cm_event *ev)
{
	struct krdma_reg_cm *rc = id->context;
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr init;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;
	if (rc->passive_id || id->device != rc->kpd->kdev->ibdev ||
	    ev->param.conn.private_data_len < sizeof(rc->cookie) ||
	    memcmp(ev->param.conn.private_data, &rc->cookie,
		   sizeof(rc->cookie)))
		return -EACCES;	/* rdma_cm destroys the new id */
	krdma_reg_qp_init_attr(rc->kpd, &init);
	if (rdma_create_qp(id, rc->kpd->pd, &init))
		return -ENOMEM;
	/*
	 * Kept even if the accept failed: its QP is destroyed with the
	 * connection, not here (see krdma_reg_wq), once the active end
	 * hears of the failure.
	 */
	rc->passive_id = id;
	rdma_accept(id, &param);
	return 0;
}

static int krdma_reg_cm_active_handler(struct rdma_cm_id *id,
				       struct rdma_cm_event *ev)
{
	struct krdma_reg_cm *rc = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ESTABLISHED:
		krdma_reg_cm_signal(rc, 0);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		krdma_reg_cm_signal(rc, ev->status < 0 ? ev->status :
				   -ECONNREFUSED);
		break;
	default:
		break;
	}
	return 0;
}

static int krdma_reg_cm_wait(struct krdma_reg_cm *rc)
{
	unsigned long timeout = msecs_to_jiffies(KRDMA_REG_CM_TIMEOUT_MS);

	if (!wait_for_completion_timeout(&rc->done, timeout))
		return -ETIMEDOUT;
	reinit_completion(&rc->done);
	return rc->status;
}

static void krdma_reg_cm_destroy(struct krdma_reg_cm *rc)
{
	/* the listener first: then no handler sets passive_id any more */
	if (rc->listen_id)
		rdma_destroy_id(rc->listen_id);
	if (rc->active_id) {
		if (rc->active_id->qp)
			rdma_destroy_qp(rc->active_id);
		rdma_destroy_id(rc->active_id);
	}
	if (rc->passive_id) {
		rdma_destroy_qp(rc->passive_id);
		rdma_destroy_id(rc->passive_id);
	}
	kfree(rc);
}

static void krdma_reg_cm_destroy_work(struct work_struct *work)
{
	struct krdma_reg_cm *rc =
		container_of(work, struct krdma_reg_cm, destroy_work);
	struct ib_pd *pd = rc->pd;

	krdma_reg_cm_destroy(rc);
	ib_dealloc_pd(pd);
}

/*
 * An IPv4 address of the netdev of @port, to listen and connect on, and
 * (referenced) the namespace it is in, where the kernel's own ids go.
 */
static int krdma_reg_cm_addr(struct ib_device *ibdev, u32 port,
			     struct sockaddr_in *sin, struct net **net)
{
	struct net_device *ndev = ib_device_get_netdev(ibdev, port);
	const struct in_ifaddr *ifa;
	struct in_device *idev;
	int ret = -EADDRNOTAVAIL;

	if (!ndev)
		return -ENETDOWN;
	rcu_read_lock();
	idev = __in_dev_get_rcu(ndev);
	ifa = idev ? rcu_dereference(idev->ifa_list) : NULL;
	if (ifa) {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = ifa->ifa_local;
		sin->sin_port = 0;
		/* a namespace on its way out has no use for new ids */
		*net = maybe_get_net(dev_net(ndev));
		ret = *net ? 0 : -ENETDOWN;
	}
	rcu_read_unlock();
	dev_put(ndev);
	return ret;
}

/*
 * The iWARP registration QP: listen on an ephemeral port of the address
 * of the device's first active port, connect to it, and keep both ends;
 * the listener goes once the connection is made.
 */
static int krdma_reg_cm_connect(struct krdma_pd *kpd)
{
	struct ib_device *ibdev = kpd->kdev->ibdev;
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr init;
	struct sockaddr_in src, dst;
	struct krdma_reg_cm *rc;
	struct ib_port_attr pattr;
	struct net *net = NULL;
	int ret = -ENETDOWN;
	u32 port;

	rdma_for_each_port(ibdev, port) {
		if (ib_query_port(ibdev, port, &pattr) ||
		    pattr.state != IB_PORT_ACTIVE)
			continue;
		ret = krdma_reg_cm_addr(ibdev, port, &src, &net);
		if (!ret)
			break;
	}
	if (ret)
		return ret;
	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc) {
		put_net(net);
		return -ENOMEM;
	}
	rc->kpd = kpd;
	init_completion(&rc->done);
	get_random_bytes(&rc->cookie, sizeof(rc->cookie));
	rc->listen_id = rdma_create_id(net, krdma_reg_cm_passive_handler, rc,
				       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(rc->listen_id)) {
		ret = PTR_ERR(rc->listen_id);
		rc->listen_id = NULL;
		goto err;
	}
	ret = rdma_bind_addr(rc->listen_id, (struct sockaddr *)&src);
	if (!ret)
		ret = rdma_listen(rc->listen_id, 1);
	if (ret)
		goto err;
	dst = src;
	/* the port rdma_bind_addr() picked */
	dst.sin_port = ((struct sockaddr_in *)
			&rc->listen_id->route.addr.src_addr)->sin_port;
	rc->active_id = rdma_create_id(net, krdma_reg_cm_active_handler, rc,
				       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(rc->active_id)) {
		ret = PTR_ERR(rc->active_id);
		rc->active_id = NULL;
		goto err;
	}
	ret = rdma_resolve_addr(rc->active_id, (struct sockaddr *)&src,
				(struct sockaddr *)&dst,
				KRDMA_REG_CM_TIMEOUT_MS);
	if (!ret)
		ret = krdma_reg_cm_wait(rc);
	if (!ret && rc->active_id->device != ibdev)
		ret = -ENETUNREACH;
	if (!ret)
		ret = rdma_resolve_route(rc->active_id, KRDMA_REG_CM_TIMEOUT_MS);
	if (!ret)
		ret = krdma_reg_cm_wait(rc);
	if (ret)
		goto err;
	krdma_reg_qp_init_attr(kpd, &init);
	ret = rdma_create_qp(rc->active_id, kpd->pd, &init);
	if (ret)
		goto err;
	param.private_data = &rc->cookie;
	param.private_data_len = sizeof(rc->cookie);
	ret = rdma_connect(rc->active_id, &param);
	if (!ret)
		ret = krdma_reg_cm_wait(rc);
	if (ret)
		goto err;
	rdma_destroy_id(rc->listen_id);
	rc->listen_id = NULL;
	kpd->reg_cm = rc;
	kpd->reg_qp = rc->active_id->qp;
	put_net(net);
	return 0;

err:
	krdma_reg_cm_destroy(rc);
	put_net(net);
	/*
	 * A signal interrupted the stream's connect (siw's kernel_connect(),
	 * its status then an event's): the user gets EINTR, never a
	 * restart code the syscall did not return itself.
	 */
	if (ret == -ERESTARTSYS || ret == -ERESTARTNOINTR ||
	    ret == -ERESTARTNOHAND || ret == -ERESTART_RESTARTBLOCK)
		ret = -EINTR;
	return ret;
}

/* Destroy the registration QP and, on iWARP, its connection. */
static void krdma_reg_qp_destroy(struct krdma_pd *kpd)
{
	if (kpd->reg_cm)
		krdma_reg_cm_destroy(kpd->reg_cm);
	else if (kpd->reg_qp)
		ib_destroy_qp(kpd->reg_qp);
	kpd->reg_cm = NULL;
	kpd->reg_qp = NULL;
}

static int krdma_reg_qp_create(struct krdma_pd *kpd)
{
	struct krdma_device *kdev = kpd->kdev;
	struct ib_qp_init_attr init;
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
	if (rdma_protocol_iwarp(kdev->ibdev, rdma_start_port(kdev->ibdev)))
		return krdma_reg_cm_connect(kpd);
	ret = krdma_reg_path(kdev->ibdev, &path);
	if (ret)
		return ret;
	krdma_reg_qp_init_attr(kpd, &init);
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
	krdma_reg_qp_destroy(kpd);
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

/*
 * The PD is the session's hca_handle on its device, the nearest thing to a
 * uverbs context: charged once, with the first object charged in it (in
 * the task that creates that object: a request's connection is published
 * by a kernel thread, and charged at its accept), to that task's rdma
 * cgroup, as uverbs charges a context: 0, or -EAGAIN past rdma.max.  Not
 * concurrent with krdma_pd_kill(): a charging caller holds an object in
 * the PD, so no last put, and removal kills the PDs only once it has
 * waited out krdma_device_enter() (a publish) and killed every object,
 * under its hw lock (an accept holds the connection's).
 */
int krdma_pd_charge_handle(struct krdma_pd *kpd)
{
	int ret = 0;

	if (!IS_ENABLED(CONFIG_CGROUP_RDMA))
		return 0;
	mutex_lock(&kpd->session->pd_lock);
	WARN_ON_ONCE(kpd->dead);
	if (!kpd->handle_charge.cg)
		ret = krdma_rdmacg_charge(&kpd->handle_charge, kpd->kdev->ibdev,
					  RDMACG_RESOURCE_HCA_HANDLE);
	mutex_unlock(&kpd->session->pd_lock);
	return ret;
}

/*
 * Free the PD's verbs state; the caller holds the device's lock.  An iWARP
 * registration connection and the PD after it go in krdma_reg_wq.
 */
void krdma_pd_kill(struct krdma_pd *kpd)
{
	struct krdma_reg_cm *rc = kpd->reg_cm;

	lockdep_assert_held(&kpd->kdev->lock);
	if (kpd->dead)
		return;
	if (rc) {
		rc->kpd = NULL;
		rc->pd = kpd->pd;
		INIT_WORK(&rc->destroy_work, krdma_reg_cm_destroy_work);
		queue_work(krdma_reg_wq, &rc->destroy_work);
		kpd->reg_cm = NULL;
		kpd->reg_qp = NULL;
	} else {
		krdma_reg_qp_destroy(kpd);
		ib_dealloc_pd(kpd->pd);
	}
	kpd->pd = NULL;
	kpd->dead = true;
	/* before the device leaves the rdma cgroups, on removal */
	krdma_rdmacg_uncharge(&kpd->handle_charge);
}

/*
 * Wait for the registration connections of dead PDs to be destroyed; not
 * under the device's lock (see krdma_reg_wq).
 */
void krdma_pd_flush(void)
{
	flush_workqueue(krdma_reg_wq);
}

int krdma_pd_init(void)
{
	/* unbound: a destroy may wait long, and on no CPU in particular */
	krdma_reg_wq = alloc_workqueue("krdma_reg",
				       WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return krdma_reg_wq ? 0 : -ENOMEM;
}

void krdma_pd_exit(void)
{
	destroy_workqueue(krdma_reg_wq);
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
