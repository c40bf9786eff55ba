/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma internal definitions: per-device contexts and the ioctl plumbing.
 */
#ifndef KRDMA_PRIV_H
#define KRDMA_PRIV_H

#include <linux/kref.h>
#include <linux/semaphore.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "krdma.h"
#include "krdma_compat.h"

/**
 * struct krdma_device - what krdma keeps for one RDMA device
 * @kref: memory lifetime; the ib_client holds one reference until remove()
 *	returns, every object on the device one more
 * @ibdev: the RDMA device; valid until remove() returns
 * @pd: the kernel's own protection domain on the device (probing); the
 *	objects of a session live in the session's PD (&struct krdma_pd)
 * @cq: the device's default completion queue (registration work)
 * @id: krdma's device id (&struct krdma_device_info.dev_index); ids are
 *	allocated cyclically so a removed device's id is not handed out again
 * @max_inline_data: inline bytes a one-SGE RC QP could be created with
 * @next_comp_vector: the completion vector of the next connection's CQ
 *	(taken round robin: spreads the CQs' interrupts over the CPUs)
 * @usage: held for read while an object is created on the device, for
 *	write by remove(): no object is half-built when removal tears down
 * @lock: protects @dead, @objects and @pds
 * @dead: remove() has run; nothing new may be created
 * @objects: every session object with verbs state on the device
 * @pds: every session's PD on the device
 * @rcu: frees the context after lockless lookups are done with it
 */
struct krdma_device {
	struct kref kref;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u32 id;
	u32 max_inline_data;
	/*
	 * Registrations in flight on @cq, every session's: at most its depth,
	 * so that the CQ, shared by every registration QP, never overruns.
	 */
	struct semaphore reg_slots;
	atomic_t next_comp_vector;
	struct rw_semaphore usage;
	struct mutex lock;		/* protects dead, objects, pds */
	bool dead;
	struct list_head objects;
	struct list_head pds;
	struct rcu_head rcu;
};

/**
 * struct krdma_pd - a session's protection domain on one device
 * @kref: one per object living in the PD
 * @session: the owner, whose pd_lock the last put takes
 * @kdev: the device, referenced
 * @pd: the PD every object of the session on the device lives in
 * @reg_lock: protects @reg_qp and serialises the registrations on it
 * @reg_qp: RC QP of @pd connected to itself, posts fast registrations
 * @dev_entry: on @kdev's PD list, under the device's lock
 * @buf_keys: key -> the session's &struct krdma_buf whose MR has it, while
 *	the MR is registered; the xarray's lock protects a lookup and the kref
 *	it takes (a LOCAL_INV names a key, and may name no other session's)
 * @dead: @pd and @reg_qp are gone (the device was removed)
 */
struct krdma_pd {
	struct kref kref;
	struct krdma_session *session;
	struct krdma_device *kdev;
	struct ib_pd *pd;
	struct mutex reg_lock;		/* protects reg_qp, its posts */
	struct ib_qp *reg_qp;
	struct list_head dev_entry;
	struct xarray buf_keys;
	bool dead;
};

struct krdma_queued_event;

/**
 * struct krdma_session - one open /dev/krdma
 * @objects: handle -> &struct krdma_object; the xarray's lock protects a
 *	lookup and the kref it takes
 * @wait: woken by completions and device removal, for poll(2) and waits
 * @ready_conns: interrupt-driven connections with completions to fetch
 * @event_lock: protects @events, @num_events, @overflow and @events_lost;
 *	taken from QP event handlers, which may run in interrupt context
 * @events: events not yet fetched
 * @num_events: entries of @events
 * @overflow: the OVERFLOW event of @events still counting lost ones
 * @events_lost: lost events no OVERFLOW event could be queued for yet
 * @fetch_lock: held by GET_EVENTS from taking events off @events until it
 *	delivered or put them back, and by krdma_handle_retire(), which must
 *	see every event not yet delivered; protects which event frees the
 *	handles the events keep reserved
 * @pd_lock: protects @pds: its inserts and the erase of the last put
 * @pds: device id -> the session's &struct krdma_pd there
 */
struct krdma_session {
	struct kref kref;		/* the file's, and one per object */
	struct xarray objects;
	/*
	 * Read by a UD send's POST across ib_post_send(), once it has checked
	 * its address handles are alive; written by an address handle's
	 * teardown, so that no post still uses the ib_ah it frees.
	 */
	struct rw_semaphore ah_post_rwsem;
	wait_queue_head_t wait;
	atomic_t ready_conns;
	/* protects events, num_events, overflow, events_lost */
	spinlock_t event_lock;
	struct list_head events;
	unsigned int num_events;
	struct krdma_queued_event *overflow;
	u64 events_lost;
	/* serializes deliveries with handle retires: see above */
	struct mutex fetch_lock;
	struct mutex pd_lock;		/* protects pds */
	struct xarray pds;
};

struct krdma_object;

/* Destroy order: listeners, connections, address handles and SRQs, buffers. */
#define KRDMA_OBJECT_PASSES 4

/**
 * struct krdma_object_ops - what differs between object types
 * @name: for messages
 * @destroy_pass: when the object goes in a teardown, 0 first
 * @queues_events: events may name it (its handle is retired, not freed)
 * @release: optional: may DESTROY take the object now? (else its errno)
 * @device_removal: optional: tell the session the device is going (an
 *	event), just before removal kills the object
 * @destroy_hw: free the verbs objects; called once, hw_rwsem held for write
 * @free: free the memory once the last reference is gone
 */
struct krdma_object_ops {
	const char *name;
	int destroy_pass;
	bool queues_events;
	int (*release)(struct krdma_object *obj);
	void (*device_removal)(struct krdma_object *obj);
	void (*destroy_hw)(struct krdma_object *obj);
	void (*free)(struct krdma_object *obj);
};

/**
 * struct krdma_object - what every handle names
 * @kref: the session table's reference plus one per lookup in flight
 * @hw_rwsem: protects @hw_dead, @destroyed and the verbs objects of the
 *	containing object: read to use them, write to destroy them
 * @hw_dead: the verbs objects are gone (destroyed, or the device removed)
 * @destroyed: DESTROY or close() took the handle (so a caller that still
 *	holds a lookup reference learns -ENOENT, not -ENODEV)
 * @published: in the session's table (else being built)
 * @handle: the object's handle in its session
 * @session: the session owning the object
 * @kdev: the device, referenced
 * @kpd: the session's PD on @kdev the object lives in, referenced, or NULL
 * @dev_entry: on @kdev's object list, under the device's lock
 * @ops: the object's type
 */
struct krdma_object {
	struct kref kref;
	struct rw_semaphore hw_rwsem;
	bool hw_dead;
	bool destroyed;
	bool published;
	u32 handle;
	struct krdma_session *session;
	struct krdma_device *kdev;
	struct krdma_pd *kpd;
	struct list_head dev_entry;
	const struct krdma_object_ops *ops;
};

/**
 * struct krdma_srq - a shared receive queue object
 * @obj: the handle; @obj.hw_rwsem protects @srq
 * @srq: the verbs SRQ
 * @max_wr: receive WRs the device granted
 * @max_sge: SGEs per receive WR
 * @lock: protects @users and @closing
 * @users: connections whose QP uses the SRQ
 * @closing: DESTROY has begun; no connection may bind it any more
 */
struct krdma_srq {
	struct krdma_object obj;
	struct ib_srq *srq;
	u32 max_wr;
	u32 max_sge;
	spinlock_t lock;		/* protects users, closing */
	unsigned int users;
	bool closing;
};

extern const struct krdma_object_ops krdma_srq_ops;

int krdma_srq_bind(struct krdma_session *session, u32 handle,
		   struct krdma_device *kdev, struct krdma_srq **srqp);
void krdma_srq_unbind(struct krdma_srq *srq);
int krdma_srq_get(struct krdma_session *session, u32 handle,
		  struct krdma_srq **srqp);

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

/* Bits of &struct krdma_conn.state */
enum {
	KRDMA_CONN_CQ_READY,	/* armed CQ signalled, not yet drained */
	KRDMA_CONN_CONNECTED,	/* KRDMA_CONN_MODIFY has run */
	KRDMA_CONN_QP_ERROR,	/* in error: CONN_ERROR queued */
	KRDMA_CONN_DISCONNECTED,	/* rdma_cm: disconnect sent or answered */
	KRDMA_CONN_ESTABLISHED,	/* rdma_cm: ESTABLISHED came */
	KRDMA_CONN_COMM_EST,	/* a QP's COMM_EST event came */
	KRDMA_CONN_NOTIFIED,	/* rdma_cm: told of COMM_EST (once) */
	KRDMA_CONN_BENCH,	/* a KRDMA_BENCH run has it: no POST, POLL */
};

/**
 * struct krdma_conn - a connection: a QP and its CQ
 * @obj: the handle; @obj.hw_rwsem protects @qp and @cq
 * @cq: send and receive completions
 * @qp: the QP
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
 * @last_wc_status: the last error completion's status
 * @error_event: the CONN_ERROR event, allocated ahead; NULL once queued
 * @cm_id: rdma_cm id of a CM connection (NULL for manual ones)
 * @cm_done: completed by the CM event that ends a connect/accept step
 * @cm_status: that step's outcome (0 or -errno)
 * @reject_reason: the peer's reject reason, after REJECTED
 * @peer_initiator_depth: from the CONNECT_REQUEST
 * @peer_responder_resources: from the CONNECT_REQUEST
 * @cm_ack_timeout: RC over rdma_cm: local ACK timeout exponent
 * @cm_retry_cnt: RC over rdma_cm: transport retries (in the REQ)
 * @cm_rnr_retry: RC over rdma_cm: RNR retries
 * @cm_min_rnr_timer: RC over rdma_cm: the RNR NAK timer code
 */
struct krdma_conn {
	struct krdma_object obj;
	struct ib_cq *cq;
	struct ib_qp *qp;
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
	struct krdma_queued_event *error_event;
	struct rdma_cm_id *cm_id;
	struct completion cm_done;
	int cm_status;
	int reject_reason;
	u8 peer_initiator_depth;
	u8 peer_responder_resources;
	u8 cm_ack_timeout;
	u8 cm_retry_cnt;
	u8 cm_rnr_retry;
	u8 cm_min_rnr_timer;
};

extern struct ib_client krdma_client;

int krdma_devices_init(void);
void krdma_devices_exit(void);

/*
 * Walking the devices: krdma_devices_lock() holds off add and remove, so a
 * walk sees one consistent set and every ibdev in it stays usable.
 */
void krdma_devices_lock(void);
void krdma_devices_unlock(void);
struct krdma_device *krdma_device_next(unsigned long *index);
struct krdma_device *krdma_device_find(u32 id);
unsigned int krdma_devices_count(void);
unsigned int krdma_device_contexts(void);
int krdma_device_enter(u32 id, struct krdma_device **kdevp);
int krdma_device_enter_ib(struct ib_device *ibdev,
			  struct krdma_device **kdevp);
void krdma_device_exit(struct krdma_device *kdev);
void krdma_device_put(struct krdma_device *kdev);
struct krdma_pd *krdma_pd_get(struct krdma_session *session,
			      struct krdma_device *kdev);
int krdma_pd_reg_mr(struct krdma_pd *kpd, struct ib_mr *mr, int access);
void krdma_pd_kill(struct krdma_pd *kpd);
void krdma_pd_put(struct krdma_pd *kpd);

struct krdma_session *krdma_session_create(void);
void krdma_session_destroy(struct krdma_session *session);
void krdma_object_init(struct krdma_object *obj, struct krdma_session *session,
		       const struct krdma_object_ops *ops);
int krdma_object_reserve(struct krdma_object *obj);

struct krdma_ucmd;
int krdma_object_publish(struct krdma_object *obj, u32 *handle);
int krdma_object_respond(struct krdma_object *obj, struct krdma_ucmd *ucmd,
			 size_t len);
void krdma_object_discard(struct krdma_object *obj);
void krdma_object_erase(struct krdma_object *obj);
void krdma_object_get_ref(struct krdma_object *obj);
struct krdma_object *krdma_object_get(struct krdma_session *session,
				      u32 handle,
				      const struct krdma_object_ops *ops);
void krdma_object_put(struct krdma_object *obj);
int krdma_object_lock_hw(struct krdma_object *obj);
int krdma_object_lock_hw_nested(struct krdma_object *obj);
void krdma_object_unlock_hw(struct krdma_object *obj);
int krdma_object_hw_alive(const struct krdma_object *obj);
void krdma_object_kill_hw(struct krdma_object *obj);

/**
 * struct krdma_ucmd - one ioctl being executed
 * @ubuffer: the caller's struct
 * @user_size: the caller's idea of its size
 * @cmd: the kernel copy, zero-extended to the kernel's struct size
 */
struct krdma_ucmd {
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int krdma_ucmd_respond(struct krdma_ucmd *ucmd, size_t cmd_len);

/*
 * An array entry size the caller may give: at least the entry's first
 * version, at most KRDMA_MAX_ENTRY_SIZE.
 */
static inline bool krdma_entry_size_ok(u32 entry_size, size_t min_size)
{
	return entry_size >= min_size && entry_size <= KRDMA_MAX_ENTRY_SIZE;
}

int krdma_copy_entries(u64 uptr, u32 usize, const void *src, size_t ksize,
		       u32 n);

int krdma_charge_pinned(struct mm_struct *mm, unsigned long npages);
void krdma_uncharge_pinned(struct mm_struct *mm, unsigned long npages);
int krdma_access_to_ib(u32 access);
int krdma_check_access(u32 access);
int krdma_buf_sge(struct krdma_session *session, const struct krdma_sge *usge,
		  struct ib_sge *sge, struct krdma_object **ref);
int krdma_buf_inline_sges(struct krdma_session *session,
			  const struct krdma_sge *usge, struct ib_sge *sges,
			  int max_sges, int *num_sges, struct krdma_object **ref);
int krdma_buf_mmap(struct krdma_session *session, struct vm_area_struct *vma);
int krdma_buf_find_key(struct krdma_pd *kpd, u32 key,
		       struct krdma_object **ref);
int krdma_conn_get(struct krdma_session *session, u32 handle,
		   struct krdma_conn **connp);
int krdma_conn_get_io(struct krdma_session *session, u32 handle,
		      struct krdma_conn **connp);
int krdma_conn_claim(struct krdma_conn *conn);
void krdma_conn_unclaim(struct krdma_conn *conn);
struct krdma_conn *krdma_conn_alloc(struct krdma_session *session,
				    u32 transport, bool notify);
struct krdma_conn *krdma_conn_alloc_cm(struct krdma_session *session,
				       struct rdma_cm_id *id);
int krdma_conn_attach_cm(struct krdma_conn *conn);
int krdma_conn_caps(struct krdma_device *kdev, struct krdma_qp_caps *caps);
int krdma_conn_create_hw(struct krdma_conn *conn, struct krdma_qp_caps *caps);
int krdma_conn_use_srq(struct krdma_conn *conn, u32 flags, u32 srq_handle);
enum ib_qp_type krdma_qp_type(u32 transport);
u32 krdma_cm_transport(enum ib_qp_type type);
void krdma_conn_destroy_hw(struct krdma_object *obj);
void krdma_conn_error(struct krdma_conn *conn, int status);
void krdma_cm_device_removal(struct krdma_object *obj, struct rdma_cm_id **idp);
struct krdma_queued_event *krdma_event_alloc(struct krdma_session *session);
struct krdma_queued_event *krdma_event_prealloc(void);
void krdma_handle_retire(struct krdma_session *session, u32 handle);
void krdma_event_post(struct krdma_session *session,
		      struct krdma_queued_event *qe,
		      const struct krdma_event *event);
int krdma_event_queue(struct krdma_session *session,
		      const struct krdma_event *event);
bool krdma_events_pending(struct krdma_session *session);
void krdma_events_flush(struct krdma_session *session);
void krdma_conn_put(struct krdma_conn *conn);
int krdma_conn_get_request(struct krdma_session *session, u32 handle,
			   struct krdma_conn **connp);
void krdma_conn_release_hw(struct krdma_conn *conn);
int krdma_ah_get(struct krdma_session *session, u32 handle, struct ib_ah **ah,
		 struct krdma_object **ref);

int krdma_get_info(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_query_devices(struct krdma_session *session,
			struct krdma_ucmd *ucmd);
int krdma_destroy(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_alloc(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_rw(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_reg_user(struct krdma_session *session,
		       struct krdma_ucmd *ucmd);
int krdma_conn_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_conn_modify(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_conn_query(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_post(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_poll(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_ah_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_srq_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_get_events(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_listen(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_connect(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_accept(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_reject(struct krdma_session *session, struct krdma_ucmd *ucmd);
void krdma_cm_comm_est(struct krdma_conn *conn);
int krdma_cm_disconnect(struct krdma_session *session,
			struct krdma_ucmd *ucmd);
int krdma_bench(struct krdma_session *session, struct krdma_ucmd *ucmd);

#endif /* KRDMA_PRIV_H */
