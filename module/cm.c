// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_cm connections: listeners, connect, accept, reject, disconnect.
 *
 * Every CM event on a session's ids is queued for KRDMA_GET_EVENTS.  The
 * calls that start a step (connect, accept) also wait for its outcome, so a
 * caller gets an established connection or an errno from one ioctl.
 *
 * CM handlers never take an object's hw_rwsem: destroy_hw holds it for
 * write while rdma_destroy_id() waits for the running handler.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>

#include "conn.h"
#include "device.h"
#include "event.h"
#include "ioctl.h"
#include "krdma_compat.h"
#include "object.h"
#include "trace.h"

#define KRDMA_CM_DEFAULT_TIMEOUT_MS 5000
#define KRDMA_CM_DEFAULT_BACKLOG 128
/*
 * rdma_ucm's default net.rdma_ucm.max_backlog, as a fixed cap: an iWARP
 * device's listen (iw_cm_listen()) allocates a work entry per pending
 * request up front.
 */
#define KRDMA_CM_MAX_BACKLOG 1024

/**
 * struct krdma_listener - a listening rdma_cm id
 * @obj: the handle (no device: a listener may span all of them)
 * @cm_id: the id
 * @transport: &enum krdma_transport of the requests it takes
 */
struct krdma_listener {
	struct krdma_object obj;
	struct rdma_cm_id *cm_id;
	u32 transport;
};

static void krdma_listener_destroy_hw(struct krdma_object *obj)
{
	struct krdma_listener *l = container_of(obj, struct krdma_listener, obj);

	krdma_object_assert_hw_write(obj);
	if (l->cm_id)
		rdma_destroy_id(l->cm_id);
	l->cm_id = NULL;
}

static void krdma_listener_free(struct krdma_object *obj)
{
	kfree(container_of(obj, struct krdma_listener, obj));
}

static int krdma_sockaddr_from_user(const struct krdma_sockaddr *ua,
				    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ua->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (memchr_inv(ua->addr + 4, 0, sizeof(ua->addr) - 4) ||
		    ua->scope_id)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(ua->port);
		memcpy(&sin->sin_addr, ua->addr, 4);
		return 0;
	}
	if (ua->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ua->port);
		sin6->sin6_scope_id = ua->scope_id;
		memcpy(&sin6->sin6_addr, ua->addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void krdma_sockaddr_to_user(const struct sockaddr *sa,
				   struct krdma_sockaddr *ua)
{
	memset(ua, 0, sizeof(*ua));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		ua->family = AF_INET;
		ua->port = ntohs(sin->sin_port);
		memcpy(ua->addr, &sin->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 =
			(const struct sockaddr_in6 *)sa;

		ua->family = AF_INET6;
		ua->port = ntohs(sin6->sin6_port);
		ua->scope_id = sin6->sin6_scope_id;
		memcpy(ua->addr, &sin6->sin6_addr, 16);
	}
}

/* An rdma_cm connection's peer, for listings; the hw lock keeps the id. */
void krdma_cm_peer(struct krdma_conn *conn, struct krdma_sockaddr *peer)
{
	krdma_object_assert_hw(&conn->obj);
	if (conn->cm.id)
		krdma_sockaddr_to_user((struct sockaddr *)
				       &conn->cm.id->route.addr.dst_addr, peer);
}

/*
 * The device an rdma_cm object is on is being removed: krdma destroys the
 * id before rdma_cm would report it (its ib_client goes first), so the
 * DEVICE_REMOVAL the session would have had from rdma_cm is queued here,
 * for the object whose id is *@idp.  Called by removal only, before the
 * kill; the object's hw lock keeps the id meanwhile.
 */
void krdma_cm_device_removal(struct krdma_object *obj, struct rdma_cm_id **idp)
{
	struct krdma_event kev = {
		.type = KRDMA_EVENT_DEVICE_REMOVAL,
		.handle = obj->handle,
	};

	lockdep_assert_held_write(&obj->kdev->usage);
	if (krdma_object_lock_hw(obj))
		return;		/* destroyed meanwhile: no one to tell */
	if (*idp) {
		krdma_sockaddr_to_user((struct sockaddr *)
				       &(*idp)->route.addr.dst_addr, &kev.peer);
		krdma_event_queue(obj->session, &kev);
	}
	krdma_object_unlock_hw(obj);
}

static void krdma_listener_device_removal(struct krdma_object *obj)
{
	krdma_cm_device_removal(obj, &container_of(obj, struct krdma_listener,
						   obj)->cm_id);
}

static const struct krdma_object_ops krdma_listener_ops = {
	.name = "listener",
	.queues_events = true,
	.destroy_pass = 0,
	.device_removal = krdma_listener_device_removal,
	.destroy_hw = krdma_listener_destroy_hw,
	.free = krdma_listener_free,
};

static void krdma_cm_fill_event(struct krdma_event *kev, u32 handle,
				struct rdma_cm_id *id,
				const struct rdma_cm_event *ev)
{
	const void *pdata = ev->param.conn.private_data;
	u8 plen = ev->param.conn.private_data_len;

	memset(kev, 0, sizeof(*kev));
	kev->type = ev->event;
	kev->status = ev->status;
	kev->handle = handle;
	krdma_sockaddr_to_user((struct sockaddr *)&id->route.addr.dst_addr,
			       &kev->peer);
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		pdata = rdma_consumer_reject_data(id, (struct rdma_cm_event *)ev,
						  &plen);
	if (pdata && plen) {
		kev->private_data_len = min_t(u32, plen,
					      sizeof(kev->private_data));
		memcpy(kev->private_data, pdata, kev->private_data_len);
	}
}

/*
 * UD: the SIDR reply named the peer's QP and Q_Key and rdma_cm resolved its
 * address; sends that name no address handle go there.  The handler runs
 * before the connect returns, and DESTROY waits for it in rdma_destroy_id().
 */
static int krdma_cm_ud_peer(struct krdma_conn *conn,
			    const struct rdma_cm_event *ev)
{
	struct rdma_ah_attr attr = ev->param.ud.ah_attr;
	struct ib_ah *ah;

	if (conn->ud_ah)
		return 0;
	ah = rdma_create_ah(conn->obj.kpd->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah))
		return PTR_ERR(ah);
	WRITE_ONCE(conn->dest_qp_num, ev->param.ud.qp_num);
	conn->qkey = ev->param.ud.qkey;
	/*
	 * Pairs with the smp_load_acquire() of a post.  A bench server run
	 * may have made one from a message meanwhile (krdma_bench_make_peer()):
	 * the first one stays.
	 */
	if (cmpxchg_release(&conn->ud_ah, NULL, ah))
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	return 0;
}

/* What a waiting connect/accept learns from an event; 1: not an outcome. */
static int krdma_cm_outcome(struct krdma_conn *conn,
			    const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->transport == KRDMA_TRANSPORT_UD)
			return krdma_cm_ud_peer(conn, ev);
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		conn->cm.reject_reason = ev->status;
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		/* a SIDR reply with a status: the UD peer refused */
		if (conn->transport == KRDMA_TRANSPORT_UD && ev->status > 0) {
			conn->cm.reject_reason = ev->status;
			return -ECONNREFUSED;
		}
		return ev->status == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return ev->status == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	case RDMA_CM_EVENT_DISCONNECTED:
		return -ECONNRESET;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return 1;
	}
}

/* This side disconnects: the first step of either side's disconnect. */
static int krdma_cm_disconnect_id(struct krdma_conn *conn)
{
	int ret = rdma_disconnect(conn->cm.id);

	if (!ret)
		krdma_conn_step(conn, conn->cm.id->device,
				KRDMA_CONN_DISCONNECTED);
	return ret;
}

static void krdma_conn_cm_event(struct krdma_conn *conn, struct rdma_cm_id *id,
				const struct rdma_cm_event *ev)
{
	struct krdma_event kev;
	int outcome;

	/* no COMM_EST to tell the CM of from here on */
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		set_bit(KRDMA_CONN_ESTABLISHED, &conn->state);
		krdma_conn_step(conn, id->device, KRDMA_CONN_ESTABLISHED);
	}
	/*
	 * rdma_cm leaves answering a peer's disconnect to its consumer: reply
	 * (and move the QP to error, flushing what is posted) as kernel ULPs do.
	 */
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED &&
	    !test_and_set_bit(KRDMA_CONN_DISCONNECTED, &conn->state)) {
		krdma_conn_step(conn, id->device, KRDMA_CONN_DISCONNECTED);
		rdma_disconnect(id);
	}
	outcome = krdma_cm_outcome(conn, ev);
	/* queued before the waiter wakes: its step's events are all there */
	krdma_cm_fill_event(&kev, conn->obj.handle, id, ev);
	krdma_event_queue(conn->obj.session, &kev);
	/*
	 * The first outcome of a step is its answer: an ESTABLISHED followed
	 * at once by a DISCONNECTED (a peer that leaves right away) must
	 * still read as established to the accept waiting for it.
	 */
	if (outcome <= 0 && !completion_done(&conn->cm.done)) {
		WRITE_ONCE(conn->cm.status, outcome);
		complete(&conn->cm.done);
	}
}

/* What a connect asks for, or the defaults of a manual connection. */
static void krdma_cm_timers(struct krdma_conn *conn,
			    const struct krdma_cm_connect *cmd)
{
	bool given = cmd && (cmd->flags & KRDMA_CONN_CM_TIMERS);

	conn->cm.ack_timeout = given ? cmd->ack_timeout : KRDMA_DEFAULT_TIMEOUT;
	conn->cm.retry_cnt = given ? cmd->retry_cnt : KRDMA_DEFAULT_RETRY;
	conn->cm.rnr_retry = given ? cmd->rnr_retry : KRDMA_DEFAULT_RETRY;
	conn->cm.min_rnr_timer = given ? cmd->min_rnr_timer :
					 KRDMA_DEFAULT_RNR_TIMER;
}

/* Build the connection of an incoming request; a non-zero return rejects. */
static int krdma_listener_request(struct krdma_listener *l,
				  struct rdma_cm_id *id,
				  const struct rdma_cm_event *ev)
{
	struct krdma_queued_event *qe;
	struct krdma_conn *conn;
	struct krdma_event kev;
	u32 handle;
	int ret;

	/* an RC listener and a UC request share the TCP port space */
	if (krdma_cm_transport(id->qp_type) != l->transport)
		return -EINVAL;
	/* all that can fail, before the connection is published */
	qe = krdma_event_alloc(l->obj.session);
	if (!qe)
		return -ENOMEM;
	conn = krdma_conn_alloc_cm(l->obj.session, id);
	if (IS_ERR(conn)) {
		kfree(qe);
		return PTR_ERR(conn);
	}
	krdma_cm_timers(conn, NULL);
	if (l->transport != KRDMA_TRANSPORT_UD) {
		conn->cm.peer_initiator_depth = ev->param.conn.initiator_depth;
		conn->cm.peer_responder_resources =
			ev->param.conn.responder_resources;
	}
	ret = krdma_object_publish(&conn->obj, &handle);
	if (ret)
		goto err_exit;

	/*
	 * Published: a DESTROY that guessed the handle may be destroying the
	 * id already, waiting for this handler to return.  So nothing fails
	 * from here: a non-zero return would have the CM destroy it too.  The
	 * request is queued before the device's removal may start, so that
	 * its DEVICE_REMOVAL comes after it.
	 */
	krdma_cm_fill_event(&kev, handle, id, ev);
	kev.listener = l->obj.handle;
	kev.dev_index = conn->obj.kdev->id;
	krdma_event_post(l->obj.session, qe, &kev);
	id->context = &conn->obj;
	krdma_device_exit(conn->obj.kdev);
	krdma_object_put(&conn->obj);
	return 0;

err_exit:
	krdma_device_exit(conn->obj.kdev);
	/* The CM destroys the id when we return non-zero: not us. */
	conn->cm.id = NULL;
	krdma_object_put(&conn->obj);
	kfree(qe);
	return ret;
}

static int krdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct krdma_object *obj = id->context;
	struct krdma_event kev;

	trace_krdma_cm_event(obj->handle, ev->event, ev->status);
	if (obj->ops == &krdma_listener_ops) {
		struct krdma_listener *l =
			container_of(obj, struct krdma_listener, obj);

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			return krdma_listener_request(l, id, ev);
		krdma_cm_fill_event(&kev, obj->handle, id, ev);
		krdma_event_queue(obj->session, &kev);
		return 0;
	}
	krdma_conn_cm_event(container_of(obj, struct krdma_conn, obj), id, ev);
	return 0;
}

/* RC and UC connect through CM REQ/REP, UD through SIDR. */
static struct rdma_cm_id *krdma_cm_create_id(struct krdma_object *obj,
					     u32 transport)
{
	return rdma_create_id(obj->session->net, krdma_cm_handler, obj,
			      transport == KRDMA_TRANSPORT_UD ? RDMA_PS_UDP :
								RDMA_PS_TCP,
			      krdma_qp_type(transport));
}

int krdma_cm_listen(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_cm_listen *cmd = ucmd->cmd;
	struct krdma_device *kdev = NULL;
	struct krdma_listener *l;
	struct sockaddr_storage ss;
	struct krdma_sockaddr bound;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	/* rdma_listen() takes an int */
	if (cmd->transport > KRDMA_TRANSPORT_UD || cmd->backlog > S32_MAX)
		return -EINVAL;
	ret = krdma_sockaddr_from_user(&cmd->addr, &ss);
	if (ret)
		return ret;
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	ret = krdma_object_init(&l->obj, session, &krdma_listener_ops);
	if (ret) {
		kfree(l);
		return ret;
	}
	l->transport = cmd->transport;
	ret = krdma_object_reserve(&l->obj);
	if (ret)
		goto err_free;
	l->cm_id = krdma_cm_create_id(&l->obj, l->transport);
	if (IS_ERR(l->cm_id)) {
		ret = PTR_ERR(l->cm_id);
		l->cm_id = NULL;
		goto err_free;
	}
	ret = rdma_bind_addr(l->cm_id, (struct sockaddr *)&ss);
	if (!ret)
		ret = rdma_listen(l->cm_id, cmd->backlog ?
				  min_t(u32, cmd->backlog,
					KRDMA_CM_MAX_BACKLOG) :
				  KRDMA_CM_DEFAULT_BACKLOG);
	if (ret)
		goto err_free;
	/*
	 * Bound to one device's address, the id is that device's: rdma_cm's
	 * removal waits until it is destroyed.  On the device's list, krdma's
	 * removal, which runs first, destroys it (and says so, an event).
	 */
	if (l->cm_id->device) {
		ret = krdma_device_enter_ib(l->cm_id->device, &kdev);
		if (ret)
			goto err_free;
		l->obj.kdev = kdev;
	}
	krdma_sockaddr_to_user((struct sockaddr *)&l->cm_id->route.addr.src_addr,
			       &bound);
	cmd->port = bound.port;
	ret = krdma_object_publish(&l->obj, &cmd->handle);
	if (kdev)
		krdma_device_exit(kdev);
	if (ret)
		goto err_free;
	return krdma_object_respond(&l->obj, ucmd, sizeof(*cmd));

err_free:
	krdma_object_discard(&l->obj);
	return ret;
}

/* Wait for the step just started; the caller holds no hw lock. */
static int krdma_cm_wait(struct krdma_conn *conn, u32 timeout_ms)
{
	unsigned long jiffies_left = msecs_to_jiffies(timeout_ms);
	long left;

	left = wait_for_completion_interruptible_timeout(&conn->cm.done,
							 jiffies_left);
	if (left < 0)
		return -EINTR;
	if (!left)
		return -ETIMEDOUT;
	return READ_ONCE(conn->cm.status);
}

/* The RC timers of a connect: each in range, or all 0 without the flag. */
static int krdma_cm_timers_check(const struct krdma_cm_connect *cmd)
{
	if (!(cmd->flags & KRDMA_CONN_CM_TIMERS))
		return cmd->ack_timeout || cmd->retry_cnt || cmd->rnr_retry ||
		       cmd->min_rnr_timer ? -EINVAL : 0;
	if (cmd->transport != KRDMA_TRANSPORT_RC)
		return -EINVAL;
	if (!cmd->ack_timeout || cmd->ack_timeout > 31 || cmd->retry_cnt > 7 ||
	    cmd->rnr_retry > 7 || cmd->min_rnr_timer > 31)
		return -EINVAL;
	return 0;
}

static int krdma_cm_connect_check(const struct krdma_cm_connect *cmd)
{
	if (cmd->flags & ~(KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ |
			   KRDMA_CONN_CM_TIMERS))
		return -EOPNOTSUPP;
	/* (handle, dev_index, qp_num, reject_reason: out, whatever came in) */
	if (cmd->__reserved)
		return -EINVAL;
	if (cmd->transport > KRDMA_TRANSPORT_UD)
		return -EINVAL;
	if (krdma_cm_timers_check(cmd))
		return -EINVAL;
	if (cmd->private_data_len > sizeof(cmd->private_data))
		return -EINVAL;
	if (cmd->src.family && cmd->src.family != cmd->dst.family)
		return -EINVAL;
	return 0;
}

/* A wildcard or loopback address: this host, not a place on a fabric. */
static bool krdma_addr_is_local_only(const struct sockaddr *sa)
{
	const struct in6_addr *a6;
	__be32 a4;

	if (sa->sa_family == AF_INET) {
		a4 = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
	} else {
		a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (!ipv6_addr_v4mapped(a6))
			return ipv6_addr_any(a6) || ipv6_addr_loopback(a6);
		a4 = a6->s6_addr32[3];
	}
	return ipv4_is_zeronet(a4) || ipv4_is_loopback(a4);
}

/*
 * rdma_cm resolves a wildcard or loopback destination to "this host" on
 * whatever device it binds, but on RoCE it then addresses the CM's MADs to
 * that IP address itself.  No RoCE port reaches 127.0.0.1 or ::1, and rxe
 * (6.1, 6.12) fails such a send on its GSI QP ("no route to ::"), which
 * moves QP1 to the error state for good: every later rdma_cm connection on
 * the device fails.  Refused here, once the device is known; on InfiniBand
 * the CM addresses by LID and loopback works.
 */
static int krdma_cm_check_dst(struct rdma_cm_id *id)
{
	if (rdma_protocol_roce(id->device, id->port_num) &&
	    krdma_addr_is_local_only((struct sockaddr *)&id->route.addr.dst_addr))
		return -EADDRNOTAVAIL;
	return 0;
}

static int krdma_cm_resolve(struct krdma_conn *conn,
			    const struct krdma_cm_connect *cmd, u32 timeout_ms)
{
	struct sockaddr_storage src, dst;
	int ret;

	ret = krdma_sockaddr_from_user(&cmd->dst, &dst);
	if (!ret && cmd->src.family)
		ret = krdma_sockaddr_from_user(&cmd->src, &src);
	if (ret)
		return ret;
	reinit_completion(&conn->cm.done);
	ret = rdma_resolve_addr(conn->cm.id, cmd->src.family ?
				(struct sockaddr *)&src : NULL,
				(struct sockaddr *)&dst, timeout_ms);
	if (!ret)
		ret = krdma_cm_wait(conn, timeout_ms);
	if (!ret)
		ret = krdma_cm_check_dst(conn->cm.id);
	if (ret)
		return ret;
	reinit_completion(&conn->cm.done);
	ret = rdma_resolve_route(conn->cm.id, timeout_ms);
	if (!ret)
		ret = krdma_cm_wait(conn, timeout_ms);
	return ret;
}

static void krdma_cm_conn_param(struct krdma_conn *conn,
				struct rdma_conn_param *param,
				const void *pdata, u32 plen)
{
	const struct ib_device_attr *attrs = &conn->obj.kdev->ibdev->attrs;

	memset(param, 0, sizeof(*param));
	param->private_data = pdata;
	param->private_data_len = plen;
	/* READ and atomics are RC only */
	if (conn->transport == KRDMA_TRANSPORT_RC) {
		param->responder_resources = min_t(u32, attrs->max_qp_rd_atom,
						   255);
		param->initiator_depth = min_t(u32, attrs->max_qp_init_rd_atom,
					       255);
	}
	param->retry_count = conn->cm.retry_cnt;
	param->rnr_retry_count = conn->cm.rnr_retry;
}

/*
 * RC over rdma_cm gets the timers a manual connection defaults to: left
 * alone, the CM derives the ACK timeout from the packet lifetime (about
 * 0.5 s on RoCE), so every retransmission would stall the queue that long.
 */
static int krdma_cm_set_timers(struct krdma_conn *conn)
{
	int ret;

	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (conn->transport != KRDMA_TRANSPORT_RC)
		return 0;
	ret = rdma_set_ack_timeout(conn->cm.id, conn->cm.ack_timeout);
	if (!ret)
		ret = krdma_cm_set_min_rnr_timer(conn->cm.id,
						 conn->cm.min_rnr_timer);
	return ret;
}

/*
 * What a kernel's rdma_cm could not be told before the handshake
 * (krdma_compat.h), now that the QP is in RTS; hw lock and rdma_cm's
 * handler lock held.
 */
static void krdma_cm_apply_timers(struct krdma_conn *conn)
{
	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (conn->transport == KRDMA_TRANSPORT_RC)
		krdma_cm_apply_min_rnr_timer(conn->cm.id,
					     conn->cm.min_rnr_timer);
}

/* krdma_cm_apply_timers() for a connect, which waited unlocked. */
static void krdma_cm_connected(struct krdma_conn *conn)
{
	/* removed meanwhile: nothing to apply, later calls say ENODEV */
	if (krdma_object_lock_hw(&conn->obj))
		return;
	rdma_lock_handler(conn->cm.id);
	krdma_cm_apply_timers(conn);
	rdma_unlock_handler(conn->cm.id);
	krdma_object_unlock_hw(&conn->obj);
}

/* The session's connection after resolution: device, QP, handle. */
static int krdma_cm_setup(struct krdma_session *session,
			  struct krdma_conn *conn, struct krdma_cm_connect *cmd)
{
	int ret;

	ret = krdma_conn_attach_cm(conn);
	if (ret)
		return ret;
	ret = krdma_conn_use_srq(conn, cmd->flags, cmd->srq_handle);
	if (!ret)
		ret = krdma_conn_caps(conn->obj.kdev, &cmd->caps);
	if (!ret)
		ret = krdma_conn_create_hw(conn, &cmd->caps);
	if (!ret)
		ret = krdma_object_publish(&conn->obj, &cmd->handle);
	if (ret)	/* while removal is still held off */
		krdma_conn_destroy_hw(&conn->obj);
	krdma_device_exit(conn->obj.kdev);
	return ret;
}

int krdma_cm_connect(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_cm_connect *cmd = ucmd->cmd;
	u32 timeout = cmd->timeout_ms ?: KRDMA_CM_DEFAULT_TIMEOUT_MS;
	struct rdma_conn_param param;
	struct krdma_conn *conn;
	int ret;

	ret = krdma_cm_connect_check(cmd);
	if (ret)
		return ret;
	conn = krdma_conn_alloc(session, cmd->transport,
				cmd->flags & KRDMA_CONN_NOTIFY);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = krdma_object_reserve(&conn->obj);
	if (ret)
		goto err_put;
	conn->cm.id = krdma_cm_create_id(&conn->obj, cmd->transport);
	if (IS_ERR(conn->cm.id)) {
		ret = PTR_ERR(conn->cm.id);
		conn->cm.id = NULL;
		goto err_put;
	}
	krdma_cm_timers(conn, cmd);
	ret = krdma_cm_resolve(conn, cmd, timeout);
	if (!ret)
		ret = krdma_cm_setup(session, conn, cmd);
	if (ret)
		goto err_put;

	/* Published: from here on a DESTROY or removal may end it. */
	ret = krdma_object_lock_hw(&conn->obj) ? -ECONNABORTED : 0;
	if (!ret) {
		krdma_cm_conn_param(conn, &param, cmd->private_data,
				    cmd->private_data_len);
		reinit_completion(&conn->cm.done);
		ret = krdma_cm_set_timers(conn);
		if (!ret)
			ret = rdma_connect(conn->cm.id, &param);
		krdma_object_unlock_hw(&conn->obj);
	}
	if (!ret)
		ret = krdma_cm_wait(conn, timeout);
	if (!ret)
		krdma_cm_connected(conn);
	cmd->reject_reason = conn->cm.reject_reason;
	cmd->dev_index = conn->obj.kdev->id;
	cmd->qp_num = conn->qp_num;
	if (ret) {
		krdma_object_erase(&conn->obj);
		krdma_object_put(&conn->obj);
		if (ret == -ECONNREFUSED)
			cmd->handle = 0;
		if (ret == -ECONNREFUSED &&
		    krdma_ucmd_respond(ucmd, sizeof(*cmd)))
			return -EFAULT;
		return ret;
	}
	return krdma_object_respond(&conn->obj, ucmd, sizeof(*cmd));

err_put:
	krdma_object_discard(&conn->obj);
	return ret;
}

/*
 * How much private data the CM's answer to @conn's request carries: a REP
 * or a REJ, for UD a SIDR reply either way.
 */
static u32 krdma_cm_answer_pdata_max(const struct krdma_conn *conn,
				     bool accept)
{
	if (conn->transport == KRDMA_TRANSPORT_UD)
		return IB_CM_SIDR_REP_PRIVATE_DATA_SIZE;
	return accept ? IB_CM_REP_PRIVATE_DATA_SIZE :
			IB_CM_REJ_PRIVATE_DATA_SIZE;
}

/*
 * A connection still waiting for accept or reject, hw lock held, whose
 * answer can carry @pdata_len bytes (else -EINVAL, the request untouched).
 */
static int krdma_cm_get_request(struct krdma_session *session, u32 handle,
				u32 pdata_len, bool accept,
				struct krdma_conn **connp)
{
	struct krdma_conn *conn;
	int ret;

	ret = krdma_conn_get_request_locked(session, handle, &conn);
	if (ret)
		return ret;
	if (pdata_len > krdma_cm_answer_pdata_max(conn, accept)) {
		krdma_conn_unlock_put(conn);
		return -EINVAL;
	}
	/* one answer per request: a second accept or reject loses */
	if (test_and_set_bit(KRDMA_CONN_CONNECTED, &conn->state)) {
		krdma_conn_unlock_put(conn);
		return -EINVAL;
	}
	*connp = conn;
	return 0;
}

/* (qp_num: out, whatever came in) */
static int krdma_cm_accept_check(const struct krdma_cm_accept *cmd)
{
	if (cmd->__reserved)
		return -EINVAL;
	/* an accept that does not wait has nothing to time */
	if ((cmd->flags & KRDMA_CONN_ACCEPT_ASYNC) && cmd->timeout_ms)
		return -EINVAL;
	if (cmd->private_data_len > sizeof(cmd->private_data))
		return -EINVAL;
	return 0;
}

/* What only an accept uses must be zero in a reject. */
static int krdma_cm_reject_check(const struct krdma_cm_accept *cmd)
{
	static const struct krdma_qp_caps no_caps;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->srq_handle || cmd->timeout_ms ||
	    memcmp(&cmd->caps, &no_caps, sizeof(no_caps)))
		return -EINVAL;
	return krdma_cm_accept_check(cmd);
}

int krdma_cm_accept(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_cm_accept *cmd = ucmd->cmd;
	u32 timeout = cmd->timeout_ms ?: KRDMA_CM_DEFAULT_TIMEOUT_MS;
	struct rdma_conn_param param;
	struct krdma_conn *conn;
	int ret;

	if (cmd->flags & ~(KRDMA_CONN_NOTIFY | KRDMA_CONN_SRQ |
			   KRDMA_CONN_ACCEPT_ASYNC))
		return -EOPNOTSUPP;
	ret = krdma_cm_accept_check(cmd);
	if (ret)
		return ret;
	ret = krdma_cm_get_request(session, cmd->handle,
				   cmd->private_data_len, true, &conn);
	if (ret)
		return ret;
	/* a listing reads it meanwhile (krdma_conn_describe()) */
	WRITE_ONCE(conn->notify, cmd->flags & KRDMA_CONN_NOTIFY);
	ret = krdma_conn_use_srq(conn, cmd->flags, cmd->srq_handle);
	/*
	 * Its verbs objects are the accepting task's (object.c): charged
	 * before they exist, since a POST or POLL may find the QP as soon as
	 * it does, and nothing can take it away again.
	 */
	if (!ret)
		ret = krdma_object_charge_rdmacg(&conn->obj);
	if (!ret)
		ret = krdma_conn_caps(conn->obj.kdev, &cmd->caps);
	if (!ret)
		ret = krdma_conn_create_hw(conn, &cmd->caps);
	if (ret) {
		/* Nothing reached the peer: the request can still be answered. */
		krdma_rdmacg_uncharge(&conn->obj.rdmacg);
		krdma_conn_release_hw(conn);
		clear_bit(KRDMA_CONN_CONNECTED, &conn->state);
		krdma_conn_unlock_put(conn);
		return ret;
	}
	krdma_cm_conn_param(conn, &param, cmd->private_data,
			    cmd->private_data_len);
	param.initiator_depth = min_t(u32, param.initiator_depth,
				      conn->cm.peer_responder_resources);
	param.responder_resources = min_t(u32, param.responder_resources,
					  conn->cm.peer_initiator_depth);
	reinit_completion(&conn->cm.done);
	rdma_lock_handler(conn->cm.id);
	ret = krdma_cm_set_timers(conn);
	if (!ret)
		ret = rdma_accept(conn->cm.id, &param);
	if (!ret)
		krdma_cm_apply_timers(conn);
	rdma_unlock_handler(conn->cm.id);
	cmd->qp_num = conn->qp_num;
	krdma_object_get_ref(&conn->obj);
	krdma_conn_unlock_put(conn);
	/*
	 * A SIDR reply is the whole UD handshake: no ESTABLISHED follows.  An
	 * async accept leaves the outcome to the session's events.
	 */
	if (!ret && conn->transport != KRDMA_TRANSPORT_UD &&
	    !(cmd->flags & KRDMA_CONN_ACCEPT_ASYNC))
		ret = krdma_cm_wait(conn, timeout);
	krdma_object_put(&conn->obj);
	if (ret)
		return ret;
	return krdma_ucmd_respond(ucmd, sizeof(*cmd));
}

int krdma_cm_reject(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_cm_accept *cmd = ucmd->cmd;
	struct krdma_conn *conn;
	int ret;

	ret = krdma_cm_reject_check(cmd);
	if (ret)
		return ret;
	ret = krdma_cm_get_request(session, cmd->handle,
				   cmd->private_data_len, false, &conn);
	if (ret)
		return ret;
	rdma_lock_handler(conn->cm.id);
	ret = rdma_reject(conn->cm.id, cmd->private_data,
			  cmd->private_data_len, IB_CM_REJ_CONSUMER_DEFINED);
	rdma_unlock_handler(conn->cm.id);
	/*
	 * A SIDR reply the CM could not send leaves its request to be
	 * answered again; an RC/UC reject makes the ID idle before it sends
	 * (cm_send_rej_locked()), so that request is gone either way.
	 */
	if (ret && conn->transport == KRDMA_TRANSPORT_UD) {
		clear_bit(KRDMA_CONN_CONNECTED, &conn->state);
		krdma_conn_unlock_put(conn);
		return ret;
	}
	krdma_object_get_ref(&conn->obj);
	krdma_conn_unlock_put(conn);
	krdma_object_erase(&conn->obj);
	krdma_object_put(&conn->obj);
	return ret;
}

/*
 * A receive completed, or the QP raised COMM_EST, on a connection whose
 * handshake has not ended: the peer had the reply and is sending, so its
 * RTU was lost or is late.  Tell the CM, as kernel ULPs do on COMM_EST
 * (rxe raises none), so that it stops resending the reply and reports
 * ESTABLISHED.  Once per connection; hw lock held, which keeps the id.
 */
void krdma_cm_comm_est(struct krdma_conn *conn)
{
	lockdep_assert_held_read(&conn->obj.hw_rwsem);
	if (!conn->cm.id || conn->transport == KRDMA_TRANSPORT_UD ||
	    test_bit(KRDMA_CONN_ESTABLISHED, &conn->state) ||
	    test_bit(KRDMA_CONN_NOTIFIED, &conn->state) ||
	    test_and_set_bit(KRDMA_CONN_NOTIFIED, &conn->state))
		return;
	rdma_notify(conn->cm.id, IB_EVENT_COMM_EST);
}

int krdma_cm_disconnect(struct krdma_session *session,
			struct krdma_ucmd *ucmd)
{
	struct krdma_cm_disconnect *cmd = ucmd->cmd;
	struct krdma_conn *conn;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ret = krdma_conn_get_locked(session, cmd->handle, &conn);
	if (ret)
		return ret;
	/*
	 * A failed disconnect leaves the bit set: rdma_disconnect() fails
	 * only where no CM id lies below rdma_cm's (never connected) or the
	 * QP cannot go to the error state (IB); iWARP's returns 0 for any
	 * connection with a QP.  A retry would fail the same way, and
	 * clearing the bit would race the peer's DISCONNECTED, whose reply
	 * the bit decides.
	 */
	if (!conn->cm.id)
		ret = -EINVAL;
	else if (conn->transport == KRDMA_TRANSPORT_UD)
		ret = -EOPNOTSUPP;	/* datagrams: DESTROY ends it */
	else if (test_and_set_bit(KRDMA_CONN_DISCONNECTED, &conn->state))
		ret = 0;	/* already disconnected, by either side */
	else
		ret = krdma_cm_disconnect_id(conn);
	krdma_conn_unlock_put(conn);
	return ret;
}
