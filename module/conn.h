/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Connections: a QP and its CQ (conn.c), moved to RTS step by step (qp.c),
 * manually or by rdma_cm (cm.c).
 */
#ifndef KRDMA_CONN_H
#define KRDMA_CONN_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "account.h"
#include "flow.h"
#include "object.h"

struct krdma_device;
struct krdma_srq;
struct krdma_queued_event;

/**
 * struct krdma_qp_path - what moving a QP to RTS needs
 * @port_num: local port
 * @sgid_index: local GID index (RoCE, or IB with @use_grh)
 * @dest_qp_num: the peer's QP number (RC/UC)
 * @rq_psn: the peer's initial PSN
 * @sq_psn: our initial PSN
 * @dest_lid: the peer's LID (IB)
 * @dgid: the peer's GID
 * @use_grh: send a GRH on IB too
 * @hop_limit: GRH hop limit (0: 64)
 * @path_mtu: IB_MTU_*
 * @timeout: local ACK timeout exponent (RC)
 * @retry_cnt: transport retries (RC)
 * @rnr_retry: RNR retries (RC)
 * @min_rnr_timer: RNR NAK timer code (RC)
 * @max_rd_atomic: outgoing READ/atomics in flight (RC)
 * @max_dest_rd_atomic: incoming READ/atomics in flight (RC)
 * @access: IB_ACCESS_REMOTE_* the QP allows (RC/UC)
 * @qkey: Q_Key (UD)
 */
struct krdma_qp_path {
	u32 port_num;
	u32 sgid_index;
	u32 dest_qp_num;
	u32 rq_psn;
	u32 sq_psn;
	u32 dest_lid;
	union ib_gid dgid;
	bool use_grh;
	u8 hop_limit;
	enum ib_mtu path_mtu;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	int access;
	u32 qkey;
};

/* RC timers of every connection unless the caller says otherwise */
#define KRDMA_QPN_MASK 0xffffff	/* QP numbers and PSNs are 24 bits */
#define KRDMA_DEFAULT_TIMEOUT 14	/* local ACK timeout: 67 ms */
#define KRDMA_DEFAULT_RNR_TIMER 12	/* RNR NAK timer: 0.64 ms */
#define KRDMA_DEFAULT_RETRY 7		/* transport and RNR retries */

int krdma_qp_connect(struct ib_qp *qp, const struct krdma_qp_path *path);
int krdma_qp_set_av(struct ib_device *ibdev, struct rdma_ah_attr *ah,
		    const struct krdma_qp_path *path);
int krdma_qp_default_sgid(struct ib_device *ibdev, u32 port, u32 *index,
			  union ib_gid *gid);
const char *krdma_qp_state_name(enum ib_qp_state state);

/* Bits of &struct krdma_conn.state */
enum {
	KRDMA_CONN_CQ_READY,	/* armed CQ signalled, not yet drained */
	KRDMA_CONN_CQ_ARMED,	/* the CQ has been armed: a handler may be due */
	KRDMA_CONN_CONNECTED,	/* KRDMA_CONN_MODIFY has run */
	KRDMA_CONN_QP_ERROR,	/* in error: CONN_ERROR queued */
	KRDMA_CONN_DISCONNECTED,	/* rdma_cm: disconnect sent or answered */
	KRDMA_CONN_ESTABLISHED,	/* rdma_cm: ESTABLISHED came */
	KRDMA_CONN_COMM_EST,	/* a QP's COMM_EST event came */
	KRDMA_CONN_NOTIFIED,	/* rdma_cm: told of COMM_EST (once) */
	KRDMA_CONN_BENCH,	/* a KRDMA_BENCH run has it: no POST, POLL */
};

/**
 * struct krdma_conn_cm - what rdma_cm adds to a connection (cm.c)
 * @id: the rdma_cm id (NULL: a manual connection); the hw lock keeps it
 * @done: completed by the CM event that ends a connect or accept step
 * @status: that step's outcome (0 or -errno)
 * @reject_reason: the peer's reject reason, after REJECTED
 * @peer_initiator_depth: from the CONNECT_REQUEST
 * @peer_responder_resources: from the CONNECT_REQUEST
 * @ack_timeout: RC: local ACK timeout exponent
 * @retry_cnt: RC: transport retries (in the REQ)
 * @rnr_retry: RC: RNR retries
 * @min_rnr_timer: RC: the RNR NAK timer code
 */
struct krdma_conn_cm {
	struct rdma_cm_id *id;
	struct completion done;
	int status;
	int reject_reason;
	u8 peer_initiator_depth;
	u8 peer_responder_resources;
	u8 ack_timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
};

/**
 * struct krdma_conn - a connection: a QP and its CQ
 * @obj: the handle; @obj.hw_rwsem protects @qp and @cq
 * @cq: send and receive completions
 * @qp: the QP
 * @charge: @qp's and @cq's memory, charged to their creator
 * @srq: the SRQ the QP receives from (referenced and bound), or NULL
 * @ud_ah: UD over rdma_cm: the address handle of the peer the CM resolved
 *	(set once by the CM handler, before the connect returns), or that a
 *	bench server run made from its first message's GRH, or NULL; set once
 *	(cmpxchg_release()), destroyed with the QP
 * @state: KRDMA_CONN_* bits, atomic
 * @transport: &enum krdma_transport
 * @notify: interrupt-driven completions (else busy polling)
 * @port_num: local port
 * @sgid_index: local GID index
 * @sgid: local GID
 * @lid: local port LID
 * @active_mtu: the port's MTU at creation (UD message limit)
 * @path_mtu: the connected path's MTU (0 before KRDMA_CONN_MODIFY)
 * @psn: our initial PSN
 * @qp_num: our QP number
 * @dest_qp_num: the peer's QP number
 * @qkey: UD Q_Key
 * @caps: what the device granted
 * @last_wc_status: the last failed completion's status, flushes aside
 * @wrs_posted: WRs handed to the QP, send and receive, by POST or a bench
 * @wcs_reaped: completions taken off the CQ, by POLL or a bench
 * @flow: what the QP's queues hold until reaped, so that the CQ cannot
 *	overflow (flow.c)
 * @error_event: the CONN_ERROR event, allocated ahead; NULL once queued
 * @cm: what rdma_cm adds (a manual connection's @cm.id is NULL)
 */
struct krdma_conn {
	struct krdma_object obj;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct krdma_queue_charge charge;
	struct krdma_srq *srq;
	struct ib_ah *ud_ah;
	unsigned long state;
	u32 transport;
	bool notify;
	u32 port_num;
	u32 sgid_index;
	union ib_gid sgid;
	u32 lid;
	enum ib_mtu active_mtu;
	enum ib_mtu path_mtu;
	u32 psn;
	u32 qp_num;
	u32 dest_qp_num;
	u32 qkey;
	struct krdma_qp_caps caps;
	u32 last_wc_status;
	atomic64_t wrs_posted;
	atomic64_t wcs_reaped;
	struct krdma_flow flow;
	struct krdma_queued_event *error_event;
	struct krdma_conn_cm cm;
};

/*
 * Looking a connection up: each _locked one returns it referenced and its
 * hw lock held for read (its QP and CQ stay), or -errno; _io: not while a
 * KRDMA_BENCH run has it (-EBUSY); _request: one rdma_cm offered and no
 * one answered yet.  krdma_conn_unlock_put() ends each.
 */
int krdma_conn_get_locked(struct krdma_session *session, u32 handle,
			  struct krdma_conn **connp);
int krdma_conn_get_io_locked(struct krdma_session *session, u32 handle,
			     struct krdma_conn **connp);
int krdma_conn_get_request_locked(struct krdma_session *session, u32 handle,
				  struct krdma_conn **connp);
void krdma_conn_unlock_put(struct krdma_conn *conn);

/* A KRDMA_BENCH run takes a connection's completions for itself. */
int krdma_conn_claim(struct krdma_conn *conn);
void krdma_conn_unclaim(struct krdma_conn *conn);

/* Making one: the object, its caps, its QP and CQ (and undoing that). */
struct krdma_conn *krdma_conn_alloc(struct krdma_session *session,
				    u32 transport, bool notify);
struct krdma_conn *krdma_conn_alloc_cm(struct krdma_session *session,
				       struct rdma_cm_id *id);
int krdma_conn_attach_cm(struct krdma_conn *conn);
int krdma_conn_caps(struct krdma_device *kdev, struct krdma_qp_caps *caps);
int krdma_conn_use_srq(struct krdma_conn *conn, u32 flags, u32 srq_handle);
bool krdma_port_is_iwarp(const struct krdma_device *kdev, u32 port);
int krdma_conn_create_hw(struct krdma_conn *conn, struct krdma_qp_caps *caps);
void krdma_conn_release_hw(struct krdma_conn *conn);
/* drain.c: a send and a receive marker, which the CQ has room for */
#define KRDMA_DRAIN_WRS 2
void krdma_conn_drain(struct krdma_conn *conn, struct ib_qp *qp);
void krdma_conn_destroy_hw(struct krdma_object *obj);
enum ib_qp_type krdma_qp_type(u32 transport);

/* The QP went to the error state: the session is told, once. */
void krdma_conn_error(struct krdma_conn *conn, struct ib_device *ibdev,
		      int status);
void krdma_conn_step(struct krdma_conn *conn, struct ib_device *ibdev,
		     int step);

/* @n WRs went to the QP: what a listing counts (wcs_reaped: wr.c). */
static inline void krdma_conn_count_posted(struct krdma_conn *conn, u32 n)
{
	atomic64_add(n, &conn->wrs_posted);
}

/* Listings (sessions.c) */
bool krdma_object_is_conn(const struct krdma_object *obj);
void krdma_conn_describe(struct krdma_object *obj,
			 struct krdma_conn_info *info);

/* cm.c */
u32 krdma_cm_transport(enum ib_qp_type type);
void krdma_cm_peer(struct krdma_conn *conn, struct krdma_sockaddr *peer);
void krdma_cm_device_removal(struct krdma_object *obj, struct rdma_cm_id **idp);
void krdma_cm_comm_est(struct krdma_conn *conn);

#endif /* KRDMA_CONN_H */
