// SPDX-License-Identifier: GPL-2.0
/*
 * Connections set up by hand: a QP and its CQ, created on a device/port/GID
 * and moved to RTS with the peer's attributes (KRDMA_CONN_CREATE,
 * KRDMA_CONN_MODIFY, KRDMA_CONN_QUERY).
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_cm.h>

#include "buf.h"
#include "conn.h"
#include "device.h"
#include "event.h"
#include "ioctl.h"
#include "object.h"
#include "quirks.h"
#include "srq.h"
#include "trace.h"

#define KRDMA_DEFAULT_QUEUE_DEPTH 128
#define KRDMA_DEFAULT_QKEY 0x11111111

void krdma_conn_destroy_hw(struct krdma_object *obj)
{
	struct krdma_conn *conn = container_of(obj, struct krdma_conn, obj);

	krdma_object_assert_hw_write(obj);
	/* before the QP, its CQ, and the buffers its WRs name go (drain.c) */
	if (conn->qp)
		krdma_conn_drain(conn, conn->qp);
	if (conn->cm.id) {
		/* Ends a connect or accept still waiting on the id. */
		WRITE_ONCE(conn->cm.status, -ECONNABORTED);
		complete_all(&conn->cm.done);
		/*
		 * The QP before the id, as rdma_cm expects: under the id's
		 * qp_mutex, so a handler still running (a disconnect moving
		 * it to error) finds none.
		 */
		if (conn->qp)
			rdma_destroy_qp(conn->cm.id);
		conn->qp = NULL;
		rdma_destroy_id(conn->cm.id);
		conn->cm.id = NULL;
	}
	if (conn->ud_ah)
		rdma_destroy_ah(conn->ud_ah, RDMA_DESTROY_AH_SLEEPABLE);
	conn->ud_ah = NULL;
	krdma_conn_release_hw(conn);
	if (test_and_clear_bit(KRDMA_CONN_CQ_READY, &conn->state))
		atomic_dec(&obj->session->ready_conns);
}

static void krdma_conn_free(struct krdma_object *obj)
{
	struct krdma_conn *conn = container_of(obj, struct krdma_conn, obj);

	kfree(conn->error_event);	/* never queued */
	kfree(conn);
}

/* Only an rdma_cm connection has events to tell it by. */
static void krdma_conn_device_removal(struct krdma_object *obj)
{
	krdma_cm_device_removal(obj, &container_of(obj, struct krdma_conn,
						   obj)->cm.id);
}

static const struct krdma_object_ops krdma_conn_ops = {
	.name = "connection",
	.queues_events = true,
	.destroy_pass = 1,
	.device_removal = krdma_conn_device_removal,
	.destroy_hw = krdma_conn_destroy_hw,
	.free = krdma_conn_free,
};

/* Interrupt-driven mode: a completion arrived on an armed CQ. */
static void krdma_conn_comp(struct ib_cq *cq, void *cq_context)
{
	struct krdma_conn *conn = cq_context;
	struct krdma_session *session = conn->obj.session;

	if (!test_and_set_bit(KRDMA_CONN_CQ_READY, &conn->state))
		atomic_inc(&session->ready_conns);
	wake_up_all(&session->wait);
}

/* What a QP error of krdma_conn_error() was, for the kernel log. */
static const char *krdma_conn_error_msg(int status)
{
	switch (status) {
	case -EIO:
		return "QP fatal error";
	case -EPROTO:
		return "invalid request from the peer (QP request error)";
	case -EACCES:
		return "access error on the peer's request (QP access error)";
	case -EOVERFLOW:
		return "completion queue overrun (CQ error)";
	default:
		return status > 0 ? ib_wc_status_msg(status) : "error";
	}
}

/*
 * A connection's step (KRDMA_CONN_CONNECTED, _ESTABLISHED, _DISCONNECTED,
 * _QP_ERROR), on @ibdev: traced, and logged under dynamic debug.
 */
void krdma_conn_step(struct krdma_conn *conn, struct ib_device *ibdev,
		     int step)
{
	static const char *const names[] = {
		[KRDMA_CONN_CONNECTED] = "connected",
		[KRDMA_CONN_ESTABLISHED] = "established",
		[KRDMA_CONN_DISCONNECTED] = "disconnected",
		[KRDMA_CONN_QP_ERROR] = "in error",
	};
	struct krdma_session *session = conn->obj.session;

	trace_krdma_conn_state(conn, step);
	ibdev_dbg(ibdev, "krdma: connection %u of %s[%d] qpn %u %s\n",
		  conn->obj.handle, session->comm, session->pid, conn->qp_num,
		  names[step]);
}

/*
 * Said once per connection, rate-limited across all of them (one user's
 * errors must not flood the log): which process's connection, and why.
 */
static void krdma_conn_log_error(struct krdma_conn *conn,
				 struct ib_device *ibdev, int status)
{
	struct krdma_session *session = conn->obj.session;

	ibdev_warn_ratelimited(ibdev,
			       "krdma: connection %u of %s[%d] in error: %s\n",
			       conn->obj.handle, session->comm, session->pid,
			       krdma_conn_error_msg(status));
}

/*
 * The connection's QP, on @ibdev, entered the error state: a failed
 * completion (its status, positive) or the device's asynchronous QP error
 * (a negative errno); a completion that succeeded or was flushed says
 * nothing new.  The session hears of it once, by the event allocated with
 * the connection: the QP's event handler may run in interrupt context, and
 * before conn->qp is set (the QP is published last).
 */
void krdma_conn_error(struct krdma_conn *conn, struct ib_device *ibdev,
		      int status)
{
	struct krdma_event kev = {
		.type = KRDMA_EVENT_CONN_ERROR,
		.status = status,
		.handle = conn->obj.handle,
	};
	struct krdma_queued_event *qe;

	if (status == IB_WC_SUCCESS || status == IB_WC_WR_FLUSH_ERR)
		return;
	if (test_and_set_bit(KRDMA_CONN_QP_ERROR, &conn->state))
		return;
	krdma_conn_step(conn, ibdev, KRDMA_CONN_QP_ERROR);
	krdma_conn_log_error(conn, ibdev, status);
	qe = xchg(&conn->error_event, NULL);
	if (qe)
		krdma_event_post(conn->obj.session, qe, &kev);
}

static void krdma_conn_qp_event(struct ib_event *event, void *context)
{
	struct krdma_conn *conn = context;

	switch (event->event) {
	case IB_EVENT_QP_FATAL:
		krdma_conn_error(conn, event->device, -EIO);
		break;
	case IB_EVENT_QP_REQ_ERR:
		krdma_conn_error(conn, event->device, -EPROTO);
		break;
	case IB_EVENT_QP_ACCESS_ERR:
		krdma_conn_error(conn, event->device, -EACCES);
		break;
	default:
		break;
	}
	/* told to the CM at the next poll, which holds the id */
	if (event->event == IB_EVENT_COMM_EST)
		set_bit(KRDMA_CONN_COMM_EST, &conn->state);
	wake_up_all(&conn->obj.session->wait);
}

u32 krdma_cm_transport(enum ib_qp_type type)
{
	switch (type) {
	case IB_QPT_UC:
		return KRDMA_TRANSPORT_UC;
	case IB_QPT_UD:
		return KRDMA_TRANSPORT_UD;
	default:
		return KRDMA_TRANSPORT_RC;
	}
}

enum ib_qp_type krdma_qp_type(u32 transport)
{
	switch (transport) {
	case KRDMA_TRANSPORT_UC:
		return IB_QPT_UC;
	case KRDMA_TRANSPORT_UD:
		return IB_QPT_UD;
	default:
		return IB_QPT_RC;
	}
}

/* Fill in defaults and refuse what the device cannot give. */
int krdma_conn_caps(struct krdma_device *kdev, struct krdma_qp_caps *caps)
{
	const struct ib_device_attr *attrs = &kdev->ibdev->attrs;

	if (!caps->max_send_wr)
		caps->max_send_wr = KRDMA_DEFAULT_QUEUE_DEPTH;
	if (!caps->max_recv_wr)
		caps->max_recv_wr = KRDMA_DEFAULT_QUEUE_DEPTH;
	if (!caps->max_send_sge)
		caps->max_send_sge = 1;
	if (!caps->max_recv_sge)
		caps->max_recv_sge = 1;
	if (!caps->cq_depth)	/* grown to what the QP gets, once it exists */
		caps->cq_depth = caps->max_send_wr + caps->max_recv_wr;
	if (caps->max_send_wr > attrs->max_qp_wr ||
	    caps->max_recv_wr > attrs->max_qp_wr ||
	    caps->max_send_sge > min_t(u32, attrs->max_send_sge, KRDMA_MAX_SGE) ||
	    caps->max_recv_sge > min_t(u32, attrs->max_recv_sge, KRDMA_MAX_SGE) ||
	    caps->max_inline_data > kdev->max_inline_data ||
	    caps->cq_depth > attrs->max_cqe)
		return -EINVAL;
	return 0;
}

static int krdma_conn_create_check(const struct krdma_conn_create *cmd)
{
	if (cmd->flags & ~(KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ))
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (cmd->transport > KRDMA_TRANSPORT_UD)
		return -EINVAL;
	return 0;
}

/*
 * With KRDMA_CONN_SRQ the connection receives from an SRQ of its session on
 * its device (bound until krdma_conn_release_hw()); else @srq_handle is 0.
 */
int krdma_conn_use_srq(struct krdma_conn *conn, u32 flags, u32 srq_handle)
{
	if (conn->obj.published)
		lockdep_assert_held_read(&conn->obj.hw_rwsem);
	else
		lockdep_assert_held_read(&conn->obj.kdev->usage);
	if (!(flags & KRDMA_CONN_SRQ))
		return srq_handle ? -EINVAL : 0;
	return krdma_srq_bind(conn->obj.session, srq_handle, conn->obj.kdev,
			      &conn->srq);
}

/* rdma_cm chose the UD QP's Q_Key: our sends default to it. */
static int krdma_conn_cm_qkey(struct krdma_conn *conn, struct ib_qp *qp)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	ret = ib_query_qp(qp, &attr, IB_QP_QKEY, &init);
	if (!ret)
		conn->qkey = attr.qkey;
	return ret;
}

/*
 * Flow control (flow.c) keeps the CQ from overflowing; should it still (a
 * device's bug), its QP can complete nothing more: it is in error.
 */
static void krdma_conn_cq_event(struct ib_event *event, void *context)
{
	struct krdma_conn *conn = context;

	if (event->event != IB_EVENT_CQ_ERR)
		return;
	krdma_conn_error(conn, event->device, -EOVERFLOW);
	wake_up_all(&conn->obj.session->wait);
}

/* @conn's CQ, of at least @cqe entries, on completion vector @vector. */
static int krdma_conn_create_cq(struct krdma_conn *conn, u32 cqe, u32 vector)
{
	struct ib_cq_init_attr cq_attr = { .cqe = cqe, .comp_vector = vector };
	struct ib_cq *cq;

	cq = ib_create_cq(conn->obj.kdev->ibdev, krdma_conn_comp,
			  krdma_conn_cq_event, conn, &cq_attr);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	conn->cq = cq;
	return 0;
}

/* @conn's QP on its CQ; @init's caps become what the device gave. */
static struct ib_qp *krdma_conn_create_qp(struct krdma_conn *conn,
					  struct ib_qp_init_attr *init)
{
	int ret;

	init->send_cq = conn->cq;
	init->recv_cq = conn->cq;
	if (!conn->cm.id)
		return ib_create_qp(conn->obj.kpd->pd, init);
	ret = rdma_create_qp(conn->cm.id, conn->obj.kpd->pd, init);
	return ret ? ERR_PTR(ret) : conn->cm.id->qp;
}

static void krdma_conn_destroy_qp(struct krdma_conn *conn, struct ib_qp *qp)
{
	if (conn->cm.id)
		rdma_destroy_qp(conn->cm.id);
	else
		ib_destroy_qp(qp);
}

/*
 * What the CQ must hold: both queues, and the drain's two markers
 * (drain.c), as far as the device's CQs go.
 */
static u32 krdma_conn_cq_need(const struct krdma_conn *conn,
			      const struct ib_qp_cap *cap)
{
	u32 max_cqe = conn->obj.kdev->ibdev->attrs.max_cqe;
	u64 need = (u64)cap->max_send_wr + KRDMA_DRAIN_WRS +
		   (conn->srq ? conn->srq->max_wr : cap->max_recv_wr);

	return min_t(u64, need, max_cqe);
}

/*
 * The QP and its CQ.  Devices round queues up, so a CQ sized to the request
 * could overflow (with an SRQ, every receive it holds may complete here):
 * the CQ must hold what the QP got.  A CQ cannot be grown on every kernel
 * (ib_resize_cq() is gone from 7.x) nor on every device (iWARP), so one
 * that turns out too small is made again, with the QP, at the size the
 * device gave the first QP (it rounds the same request the same way).
 */
static struct ib_qp *krdma_conn_create_queues(struct krdma_conn *conn,
					      struct ib_qp_init_attr *init,
					      u32 cqe)
{
	struct krdma_device *kdev = conn->obj.kdev;
	/* connections take the completion vectors (CPUs) round robin */
	u32 vector = (u32)atomic_inc_return(&kdev->next_comp_vector) %
		     max(kdev->ibdev->num_comp_vectors, 1);
	const struct ib_qp_cap request = init->cap;
	struct ib_qp *qp;
	u32 need;
	int ret, tries;

	for (tries = 0; tries < 2; tries++) {
		init->cap = request;
		ret = krdma_conn_create_cq(conn, cqe, vector);
		if (ret)
			return ERR_PTR(ret);
		qp = krdma_conn_create_qp(conn, init);
		if (IS_ERR(qp))
			return qp;
		need = krdma_conn_cq_need(conn, &init->cap);
		if (need <= conn->cq->cqe)
			return qp;
		krdma_conn_destroy_qp(conn, qp);
		ib_destroy_cq(conn->cq);
		conn->cq = NULL;
		cqe = need;
	}
	return ERR_PTR(-EINVAL);
}

/*
 * What a port's transport cannot carry, from its protocol and not its
 * driver: iWARP (RFC 5040) has RC QPs only, connected by the iWARP CM over
 * a TCP stream, never by hand; its RDMA READ lands in as many SGEs as
 * max_sge_rd, and it has no immediate data (siw_post_send() refuses both
 * immediate opcodes).
 */
bool krdma_port_is_iwarp(const struct krdma_device *kdev, u32 port)
{
	struct ib_device *ibdev = kdev->ibdev;

	if (!rdma_is_port_valid(ibdev, port))
		port = rdma_start_port(ibdev);
	return rdma_protocol_iwarp(ibdev, port);
}

int krdma_conn_create_hw(struct krdma_conn *conn, struct krdma_qp_caps *caps)
{
	struct ib_qp_init_attr init = {
		.event_handler = krdma_conn_qp_event,
		.qp_context = conn,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = krdma_qp_type(conn->transport),
		.cap = {
			.max_send_wr = caps->max_send_wr,
			.max_recv_wr = caps->max_recv_wr,
			.max_send_sge = caps->max_send_sge,
			.max_recv_sge = caps->max_recv_sge,
			.max_inline_data = caps->max_inline_data,
		},
	};
	struct ib_qp *qp;
	int ret = 0;

	/* only RC rides an iWARP stream */
	if (conn->transport != KRDMA_TRANSPORT_RC &&
	    krdma_port_is_iwarp(conn->obj.kdev, conn->port_num))
		return -EPROTONOSUPPORT;
	if (conn->obj.published)
		lockdep_assert_held_read(&conn->obj.hw_rwsem);
	else
		lockdep_assert_held_read(&conn->obj.kdev->usage);
	if (conn->srq) {
		init.srq = conn->srq->srq;
		init.cap.max_recv_wr = 0;
		init.cap.max_recv_sge = 0;
	}
	qp = krdma_conn_create_queues(conn, &init,
				      min_t(u64, (u64)caps->cq_depth +
					    KRDMA_DRAIN_WRS,
					    conn->obj.kdev->ibdev->attrs.max_cqe));
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	if (conn->cm.id && conn->transport == KRDMA_TRANSPORT_UD)
		ret = krdma_conn_cm_qkey(conn, qp);
	if (!ret)
		ret = krdma_charge_queues(&conn->charge,
					  krdma_qp_queue_bytes(&init.cap) +
					  krdma_cq_queue_bytes(conn->cq->cqe));
	if (!ret)
		ret = krdma_flow_init(&conn->flow, init.cap.max_send_wr,
				      init.cap.max_recv_wr);
	if (ret) {
		krdma_flow_destroy(&conn->flow);
		krdma_conn_destroy_qp(conn, qp);
		return ret;
	}
	conn->qp_num = qp->qp_num;
	caps->cq_depth = conn->cq->cqe;
	caps->max_send_wr = init.cap.max_send_wr;
	caps->max_recv_wr = init.cap.max_recv_wr;
	caps->max_send_sge = min_t(u32, init.cap.max_send_sge, KRDMA_MAX_SGE);
	caps->max_recv_sge = min_t(u32, init.cap.max_recv_sge, KRDMA_MAX_SGE);
	caps->max_inline_data = init.cap.max_inline_data;
	conn->caps = *caps;
	if (conn->notify) {
		set_bit(KRDMA_CONN_CQ_ARMED, &conn->state);
		ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP);
	}
	/*
	 * Last, and released: an accept builds the QP of a published
	 * connection under its hw lock taken for read, and a POST or POLL on
	 * the handle may look meanwhile (krdma_conn_lookup()); it must find
	 * no QP, or one that is complete and stays.
	 */
	smp_store_release(&conn->qp, qp);
	return 0;
}

/* A connection object, not yet on any device; or an ERR_PTR(). */
struct krdma_conn *krdma_conn_alloc(struct krdma_session *session,
				    u32 transport, bool notify)
{
	struct krdma_conn *conn;
	int ret = -ENOMEM;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	conn->error_event = krdma_event_prealloc();
	if (!conn->error_event)
		goto err_free;
	ret = krdma_object_init(&conn->obj, session, &krdma_conn_ops);
	if (ret)
		goto err_free;
	init_completion(&conn->cm.done);
	conn->transport = transport;
	conn->notify = notify;
	conn->psn = get_random_u32() & KRDMA_QPN_MASK;
	return conn;

err_free:
	kfree(conn->error_event);
	kfree(conn);
	return ERR_PTR(ret);
}

/*
 * Where a connection sends from: port, GID, LID, MTU; and the session's PD
 * it lives in.  The caller is inside krdma_device_enter().
 */
static int krdma_conn_set_port(struct krdma_conn *conn, u32 port,
			       u32 gid_index)
{
	struct ib_device *ibdev = conn->obj.kdev->ibdev;
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	struct krdma_pd *kpd;
	int ret;

	lockdep_assert_held_read(&conn->obj.kdev->usage);
	kpd = krdma_pd_get(conn->obj.session, conn->obj.kdev);
	if (IS_ERR(kpd))
		return PTR_ERR(kpd);
	conn->obj.kpd = kpd;

	if (!rdma_is_port_valid(ibdev, port))
		return -EINVAL;
	ret = ib_query_port(ibdev, port, &pattr);
	if (ret)
		return ret;
	attr = rdma_get_gid_attr(ibdev, port, gid_index);
	if (IS_ERR(attr))
		return -EINVAL;
	/* as an empty slot: the caller's namespace has no such GID */
	if (!krdma_gid_visible(attr, conn->obj.session->net)) {
		rdma_put_gid_attr(attr);
		return -EINVAL;
	}
	conn->sgid = attr->gid;
	rdma_put_gid_attr(attr);
	conn->port_num = port;
	conn->sgid_index = gid_index;
	conn->lid = pattr.lid;
	conn->active_mtu = pattr.active_mtu;
	return 0;
}

/*
 * Put a resolved rdma_cm connection on its device; returns holding the
 * device's usage lock, as krdma_device_enter() does.
 */
int krdma_conn_attach_cm(struct krdma_conn *conn)
{
	struct rdma_cm_id *id = conn->cm.id;
	struct krdma_device *kdev;
	int ret;

	ret = krdma_device_enter_ib(id->device, &kdev);
	if (ret)
		return ret;
	conn->obj.kdev = kdev;
	ret = krdma_conn_set_port(conn, id->port_num,
				  id->route.addr.dev_addr.sgid_attr ?
				  id->route.addr.dev_addr.sgid_attr->index : 0);
	if (ret)
		krdma_device_exit(kdev);
	return ret;
}

/* The connection of an incoming request, before accept or reject. */
struct krdma_conn *krdma_conn_alloc_cm(struct krdma_session *session,
				       struct rdma_cm_id *id)
{
	struct krdma_conn *conn;
	int ret;

	conn = krdma_conn_alloc(session, krdma_cm_transport(id->qp_type), false);
	if (IS_ERR(conn))
		return conn;
	conn->cm.id = id;
	ret = krdma_conn_attach_cm(conn);
	if (ret) {
		conn->cm.id = NULL;
		krdma_object_put(&conn->obj);
		return ERR_PTR(ret);
	}
	return conn;
}

int krdma_conn_create(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_conn_create *cmd = ucmd->cmd;
	struct krdma_device *kdev;
	struct krdma_conn *conn;
	int ret;

	ret = krdma_conn_create_check(cmd);
	if (ret)
		return ret;
	ret = krdma_device_enter(session, cmd->dev_index, &kdev);
	if (ret)
		return ret;
	conn = krdma_conn_alloc(session, cmd->transport,
				cmd->flags & KRDMA_CONN_NOTIFY);
	if (IS_ERR(conn)) {
		krdma_device_exit(kdev);
		krdma_device_put(kdev);
		return PTR_ERR(conn);
	}
	conn->obj.kdev = kdev;

	ret = krdma_conn_set_port(conn, cmd->port_num, cmd->gid_index);
	/* an iWARP QP reaches RTS through the iWARP CM alone: rdma_cm's */
	if (!ret && krdma_port_is_iwarp(kdev, conn->port_num))
		ret = -EPROTONOSUPPORT;
	if (!ret)
		ret = krdma_conn_use_srq(conn, cmd->flags, cmd->srq_handle);
	if (!ret)
		ret = krdma_conn_caps(kdev, &cmd->caps);
	if (!ret)
		ret = krdma_conn_create_hw(conn, &cmd->caps);
	if (ret)
		goto err;
	cmd->qp_num = conn->qp_num;
	cmd->psn = conn->psn;
	cmd->lid = conn->lid;
	memcpy(cmd->gid, conn->sgid.raw, sizeof(cmd->gid));
	ret = krdma_object_publish(&conn->obj, &cmd->handle);
	if (ret)
		goto err;
	krdma_device_exit(kdev);
	return krdma_object_respond(&conn->obj, ucmd, sizeof(*cmd));

err:
	krdma_conn_destroy_hw(&conn->obj);
	krdma_device_exit(kdev);
	krdma_object_put(&conn->obj);
	return ret;
}

static int krdma_mtu_from_bytes(u32 bytes, enum ib_mtu *mtu)
{
	switch (bytes) {
	case 256:
		*mtu = IB_MTU_256;
		return 0;
	case 512:
		*mtu = IB_MTU_512;
		return 0;
	case 1024:
		*mtu = IB_MTU_1024;
		return 0;
	case 2048:
		*mtu = IB_MTU_2048;
		return 0;
	case 4096:
		*mtu = IB_MTU_4096;
		return 0;
	default:
		return -EINVAL;
	}
}

static u32 krdma_default_access(u32 transport)
{
	switch (transport) {
	case KRDMA_TRANSPORT_RC:
		return KRDMA_ACCESS_REMOTE_WRITE | KRDMA_ACCESS_REMOTE_READ |
		       KRDMA_ACCESS_REMOTE_ATOMIC;
	case KRDMA_TRANSPORT_UC:
		return KRDMA_ACCESS_REMOTE_WRITE;
	default:
		return 0;
	}
}

/* The RC timers and retries: the defaults, or the caller's, checked. */
static int krdma_modify_rc_attrs(const struct krdma_conn_modify *cmd,
				 struct krdma_qp_path *path)
{
	if (!(cmd->flags & KRDMA_CONN_MODIFY_RC_ATTRS)) {
		if (cmd->timeout || cmd->retry_cnt || cmd->rnr_retry ||
		    cmd->min_rnr_timer || cmd->access)
			return -EINVAL;
		path->timeout = KRDMA_DEFAULT_TIMEOUT;
		path->retry_cnt = KRDMA_DEFAULT_RETRY;
		path->rnr_retry = KRDMA_DEFAULT_RETRY;
		path->min_rnr_timer = KRDMA_DEFAULT_RNR_TIMER;
		return 0;
	}
	if (!cmd->timeout || cmd->timeout > 31 || cmd->retry_cnt > 7 ||
	    cmd->rnr_retry > 7 || cmd->min_rnr_timer > 31)
		return -EINVAL;
	path->timeout = cmd->timeout;
	path->retry_cnt = cmd->retry_cnt;
	path->rnr_retry = cmd->rnr_retry;
	path->min_rnr_timer = cmd->min_rnr_timer;
	return 0;
}

static int krdma_modify_path(struct krdma_conn *conn,
			     const struct krdma_conn_modify *cmd,
			     struct krdma_qp_path *path)
{
	const struct ib_device_attr *attrs = &conn->obj.kdev->ibdev->attrs;
	u32 access = cmd->access;
	int ret;

	ret = krdma_modify_rc_attrs(cmd, path);
	if (ret)
		return ret;
	if (!(cmd->flags & KRDMA_CONN_MODIFY_RC_ATTRS))
		access = krdma_default_access(conn->transport);
	if (access & ~krdma_default_access(conn->transport))
		return -EINVAL;
	path->access = krdma_access_to_ib(access);

	path->path_mtu = conn->active_mtu;
	if (cmd->path_mtu && krdma_mtu_from_bytes(cmd->path_mtu, &path->path_mtu))
		return -EINVAL;
	if (path->path_mtu > conn->active_mtu)
		return -EINVAL;
	if (cmd->max_rd_atomic > attrs->max_qp_init_rd_atom ||
	    cmd->max_dest_rd_atomic > attrs->max_qp_rd_atom)
		return -EINVAL;
	/* (the QP attributes are a u8: a device's larger maximum is cut) */
	path->max_rd_atomic = min_t(u32, cmd->max_rd_atomic ?:
				    attrs->max_qp_init_rd_atom, U8_MAX);
	path->max_dest_rd_atomic = min_t(u32, cmd->max_dest_rd_atomic ?:
					 attrs->max_qp_rd_atom, U8_MAX);
	path->qkey = cmd->qkey ?: KRDMA_DEFAULT_QKEY;
	if ((path->qkey & 0x80000000) && !capable(CAP_NET_RAW))
		return -EPERM;

	path->port_num = conn->port_num;
	path->sgid_index = conn->sgid_index;
	/*
	 * 24-bit QP numbers and PSNs, 16-bit LIDs: more is no value of theirs
	 * (UD has no peer: it ignores them)
	 */
	if (conn->transport != KRDMA_TRANSPORT_UD &&
	    ((cmd->dest_qp_num | cmd->dest_psn) & ~KRDMA_QPN_MASK ||
	     cmd->dest_lid > U16_MAX))
		return -EINVAL;
	path->dest_qp_num = cmd->dest_qp_num;
	path->rq_psn = cmd->dest_psn;
	path->sq_psn = conn->psn;
	path->dest_lid = cmd->dest_lid;
	memcpy(path->dgid.raw, cmd->dest_gid, sizeof(path->dgid.raw));
	return 0;
}

int krdma_conn_modify(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_conn_modify *cmd = ucmd->cmd;
	struct krdma_qp_path path = {};
	struct krdma_object *obj;
	struct krdma_conn *conn;
	int ret;

	/* the struct's own checks first, as every command makes them */
	if (cmd->flags & ~KRDMA_CONN_MODIFY_RC_ATTRS)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	obj = krdma_object_get(session, cmd->handle, &krdma_conn_ops);
	if (!obj)
		return -ENOENT;
	conn = container_of(obj, struct krdma_conn, obj);
	ret = krdma_object_lock_hw(obj);
	if (ret)
		goto out_put;
	ret = conn->cm.id ? -EINVAL : krdma_modify_path(conn, cmd, &path);
	if (ret)
		goto out_unlock;
	/* One connect per QP: a QP past RESET keeps its peer. */
	if (test_and_set_bit(KRDMA_CONN_CONNECTED, &conn->state)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	ret = krdma_qp_connect(conn->qp, &path);
	if (ret) {
		struct ib_qp_attr reset = { .qp_state = IB_QPS_RESET };

		ib_modify_qp(conn->qp, &reset, IB_QP_STATE);
		krdma_flow_reset(&conn->flow);
		clear_bit(KRDMA_CONN_CONNECTED, &conn->state);
		goto out_unlock;
	}
	/* a UD QP has no peer: each send names one */
	if (conn->transport != KRDMA_TRANSPORT_UD)
		conn->dest_qp_num = path.dest_qp_num;
	conn->path_mtu = path.path_mtu;
	conn->qkey = path.qkey;
	krdma_conn_step(conn, conn->obj.kdev->ibdev, KRDMA_CONN_CONNECTED);
out_unlock:
	krdma_object_unlock_hw(obj);
out_put:
	krdma_object_put(obj);
	return ret;
}

/* The connected path's MTU; UD: the port's, which bounds each message. */
static u32 krdma_conn_query_mtu(const struct krdma_conn *conn,
				const struct ib_qp_attr *attr)
{
	if (conn->transport == KRDMA_TRANSPORT_UD)
		return ib_mtu_enum_to_int(conn->active_mtu);
	if (attr->qp_state < IB_QPS_RTR)
		return 0;
	return ib_mtu_enum_to_int(attr->path_mtu);
}

/*
 * @attr->qp_state as the connection knows it.  An iWARP QP's state follows
 * its stream, and its driver may not say so: siw answers RTS after a
 * failed WR until the stream is torn down, and 6.1's leaves the state
 * unset (RESET).  There the connection's steps say it: ERR once its
 * QP (or CQ) failed, else, where the driver said nothing, RTS from
 * ESTABLISHED until either side disconnected.
 */
static void krdma_conn_known_state(const struct krdma_conn *conn,
				   struct ib_qp_attr *attr)
{
	if (!krdma_port_is_iwarp(conn->obj.kdev, conn->port_num))
		return;
	if (test_bit(KRDMA_CONN_QP_ERROR, &conn->state))
		attr->qp_state = IB_QPS_ERR;
	else if (attr->qp_state == IB_QPS_RESET &&
		 test_bit(KRDMA_CONN_ESTABLISHED, &conn->state))
		attr->qp_state = test_bit(KRDMA_CONN_DISCONNECTED,
					  &conn->state) ?
				 IB_QPS_ERR : IB_QPS_RTS;
}

/*
 * The peer's QP number: the QP's once connected, else what we learned.
 * None on iWARP: the peers of a TCP stream never learn each other's.
 */
static u32 krdma_conn_dest_qpn(struct krdma_conn *conn,
			       const struct ib_qp_attr *attr)
{
	if (krdma_port_is_iwarp(conn->obj.kdev, conn->port_num))
		return 0;
	/* what the QP says: rdma_cm connected it, not CONN_MODIFY */
	if (attr->qp_state >= IB_QPS_RTR &&
	    conn->transport != KRDMA_TRANSPORT_UD)
		return attr->dest_qp_num;
	return READ_ONCE(conn->dest_qp_num);
}

/*
 * Whether the connection's QP has PSNs to report: RC and UC, but not on
 * iWARP, whose QPs ride a TCP stream and keep no PSN (siw sets none).
 */
static bool krdma_conn_has_psns(const struct krdma_conn *conn)
{
	return conn->transport != KRDMA_TRANSPORT_UD &&
	       !rdma_protocol_iwarp(conn->qp->device, conn->port_num);
}

/* The PSNs a connected RC or UC QP sends next and expects next, else 0. */
static void krdma_conn_query_psns(const struct krdma_conn *conn,
				  const struct ib_qp_attr *attr,
				  struct krdma_conn_query *cmd)
{
	cmd->sq_psn = 0;
	cmd->rq_psn = 0;
	if (!krdma_conn_has_psns(conn))
		return;
	if (attr->qp_state >= IB_QPS_RTR)
		cmd->rq_psn = attr->rq_psn;
	if (attr->qp_state >= IB_QPS_RTS)
		cmd->sq_psn = attr->sq_psn;
}

int krdma_conn_query(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_conn_query *cmd = ucmd->cmd;
	int mask = IB_QP_STATE | IB_QP_PATH_MTU | IB_QP_DEST_QPN;
	/* a driver fills in what it keeps: the rest must not be stack */
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	struct krdma_conn *conn;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ret = krdma_conn_get_locked(session, cmd->handle, &conn);
	if (ret)
		return ret;
	if (krdma_conn_has_psns(conn))
		mask |= IB_QP_SQ_PSN | IB_QP_RQ_PSN;
	ret = ib_query_qp(conn->qp, &attr, mask, &init);
	if (!ret) {
		krdma_conn_known_state(conn, &attr);
		cmd->state = attr.qp_state;
		cmd->transport = conn->transport;
		cmd->qp_num = conn->qp_num;
		cmd->dest_qp_num = krdma_conn_dest_qpn(conn, &attr);
		cmd->path_mtu = krdma_conn_query_mtu(conn, &attr);
		cmd->last_wc_status = READ_ONCE(conn->last_wc_status);
		krdma_conn_query_psns(conn, &attr, cmd);
	}
	krdma_conn_unlock_put(conn);
	return ret ?: krdma_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * Look up a connection and take its verbs state for use.  @want_qp: a
 * connection with a QP (anything that posts, polls or queries), else an
 * rdma_cm request still waiting for accept or reject (no QP yet).
 */
static int krdma_conn_lookup(struct krdma_session *session, u32 handle,
			     bool want_qp, struct krdma_conn **connp)
{
	struct krdma_object *obj;
	struct krdma_conn *conn;
	struct ib_qp *qp;
	int ret;

	obj = krdma_object_get(session, handle, &krdma_conn_ops);
	if (!obj)
		return -ENOENT;
	ret = krdma_object_lock_hw(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	conn = container_of(obj, struct krdma_conn, obj);
	/* pairs with the release in krdma_conn_create_hw() */
	qp = smp_load_acquire(&conn->qp);
	if (want_qp ? !qp : (qp || !conn->cm.id)) {
		krdma_conn_unlock_put(conn);
		return -EINVAL;
	}
	*connp = conn;
	return 0;
}

int krdma_conn_get_locked(struct krdma_session *session, u32 handle,
			  struct krdma_conn **connp)
{
	return krdma_conn_lookup(session, handle, true, connp);
}

/*
 * A connection to post to or poll: not while a BENCH run has it, whose loop
 * takes every completion of the CQ for its own (krdma_conn_claim()).
 */
int krdma_conn_get_io_locked(struct krdma_session *session, u32 handle,
			     struct krdma_conn **connp)
{
	int ret = krdma_conn_get_locked(session, handle, connp);

	if (!ret && test_bit(KRDMA_CONN_BENCH, &(*connp)->state)) {
		krdma_conn_unlock_put(*connp);
		return -EBUSY;
	}
	return ret;
}

/*
 * A BENCH run takes @conn for itself; %EBUSY if another run has it.  Under
 * the hw lock for write: a POST or POLL step in progress ends first, and
 * those after see the bit, under the lock for read (krdma_conn_get_io_locked(),
 * krdma_poll_put()).
 */
int krdma_conn_claim(struct krdma_conn *conn)
{
	struct krdma_object *obj = &conn->obj;
	int ret;

	down_write(&obj->hw_rwsem);
	ret = krdma_object_hw_alive(obj);
	if (!ret && test_and_set_bit(KRDMA_CONN_BENCH, &conn->state))
		ret = -EBUSY;
	up_write(&obj->hw_rwsem);
	return ret;
}

void krdma_conn_unclaim(struct krdma_conn *conn)
{
	clear_bit(KRDMA_CONN_BENCH, &conn->state);
}

int krdma_conn_get_request_locked(struct krdma_session *session, u32 handle,
				  struct krdma_conn **connp)
{
	return krdma_conn_lookup(session, handle, false, connp);
}

/*
 * Undo krdma_conn_create_hw() and krdma_conn_use_srq(), leaving the
 * connection as it was before.
 */
void krdma_conn_release_hw(struct krdma_conn *conn)
{
	krdma_object_assert_hw(&conn->obj);
	if (conn->qp)
		krdma_conn_destroy_qp(conn, conn->qp);
	conn->qp = NULL;
	if (test_and_clear_bit(KRDMA_CONN_CQ_ARMED, &conn->state))
		krdma_cq_quiesce(conn->cq->device);
	if (conn->cq)
		ib_destroy_cq(conn->cq);
	conn->cq = NULL;
	krdma_flow_destroy(&conn->flow);
	krdma_uncharge_queues(&conn->charge);
	if (conn->srq) {
		krdma_srq_unbind(conn->srq);
		krdma_object_put(&conn->srq->obj);
	}
	conn->srq = NULL;
}

void krdma_conn_unlock_put(struct krdma_conn *conn)
{
	krdma_object_unlock_hw(&conn->obj);
	krdma_object_put(&conn->obj);
}

bool krdma_object_is_conn(const struct krdma_object *obj)
{
	return obj->ops == &krdma_conn_ops;
}

static u32 krdma_conn_info_flags(const struct krdma_conn *conn)
{
	static const struct {
		unsigned int bit;
		u32 flag;
	} map[] = {
		{ KRDMA_CONN_ESTABLISHED, KRDMA_CONN_INFO_ESTABLISHED },
		{ KRDMA_CONN_DISCONNECTED, KRDMA_CONN_INFO_DISCONNECTED },
		{ KRDMA_CONN_QP_ERROR, KRDMA_CONN_INFO_ERROR },
		{ KRDMA_CONN_BENCH, KRDMA_CONN_INFO_BENCH },
	};
	u32 flags = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (test_bit(map[i].bit, &conn->state))
			flags |= map[i].flag;
	if (conn->cm.id)
		flags |= KRDMA_CONN_INFO_CM;
	if (READ_ONCE(conn->notify))
		flags |= KRDMA_CONN_INFO_NOTIFY;
	return flags;
}

/*
 * What a listing shows of a connection (sessions.c), @obj referenced by
 * the caller.  Only the QP's state is asked of the device: the rest is
 * what krdma keeps.
 */
void krdma_conn_describe(struct krdma_object *obj,
			 struct krdma_conn_info *info)
{
	struct krdma_conn *conn = container_of(obj, struct krdma_conn, obj);
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr = {};
	struct ib_qp *qp;

	info->session_id = obj->session->id;
	info->handle = obj->handle;
	if (krdma_object_lock_hw(obj)) {
		info->flags = KRDMA_CONN_INFO_GONE;
		return;
	}
	info->flags = krdma_conn_info_flags(conn);
	info->dev_index = obj->kdev ? obj->kdev->id : 0;
	info->port_num = conn->port_num;
	info->transport = conn->transport;
	info->dest_qp_num = READ_ONCE(conn->dest_qp_num);
	info->last_wc_status = READ_ONCE(conn->last_wc_status);
	info->wrs_posted = atomic64_read(&conn->wrs_posted);
	info->wcs_reaped = atomic64_read(&conn->wcs_reaped);
	/* an rdma_cm request not yet accepted has no QP: RESET, QPN 0 */
	qp = smp_load_acquire(&conn->qp);
	if (qp) {
		info->qp_num = conn->qp_num;
		/* a device that cannot answer: its state is not known */
		if (ib_query_qp(qp, &attr, IB_QP_STATE | IB_QP_DEST_QPN, &init)) {
			info->flags |= KRDMA_CONN_INFO_STATE_UNKNOWN;
		} else {
			krdma_conn_known_state(conn, &attr);
			info->dest_qp_num = krdma_conn_dest_qpn(conn, &attr);
		}
		info->state = attr.qp_state;
	}
	krdma_cm_peer(conn, &info->peer);
	krdma_object_unlock_hw(obj);
}
