/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Devices (device.c: the ib_client, a context per RDMA device) and the
 * protection domain a session has on each (pd.c).
 */
#ifndef KRDMA_DEVICE_H
#define KRDMA_DEVICE_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/semaphore.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "account.h"

struct krdma_reg_cm;
struct krdma_session;
struct net;
struct seq_file;

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
 * @reg_slots: registrations in flight on @cq, every session's: at most its
 *	depth, so that the CQ, shared by every registration QP, never overruns
 * @next_comp_vector: the completion vector of the next connection's CQ
 *	(taken round robin: spreads the CQs' interrupts over the CPUs)
 * @usage: held for read while an object is created on the device, for
 *	write by remove(): no object is half-built when removal tears down
 * @lock: protects @dead, @objects and @pds
 * @dead: remove() has run; nothing new may be created
 * @removing: remove() waits for @usage: a long create gives up (read
 *	without a lock, a hint)
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
	struct semaphore reg_slots;
	atomic_t next_comp_vector;
	struct rw_semaphore usage;
	struct mutex lock;		/* protects dead, objects, pds */
	bool dead;
	bool removing;
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
 * @reg_cm: on iWARP, the rdma_cm connection @reg_qp is an end of
 * @dev_entry: on @kdev's PD list, under the device's lock
 * @buf_keys: key -> the session's &struct krdma_buf whose MR has it, while
 *	the MR is registered; the xarray's lock protects a lookup and the kref
 *	it takes (a LOCAL_INV names a key, and may name no other session's)
 * @dead: @pd and @reg_qp are gone (the device was removed)
 * @handle_charge: the hca_handle @pd is, charged with the first object
 *	charged in it (krdma_pd_charge_handle()), under the session's pd_lock
 */
struct krdma_pd {
	struct kref kref;
	struct krdma_session *session;
	struct krdma_device *kdev;
	struct ib_pd *pd;
	struct mutex reg_lock;		/* protects reg_qp, its posts */
	struct ib_qp *reg_qp;
	struct krdma_reg_cm *reg_cm;
	struct list_head dev_entry;
	struct xarray buf_keys;
	bool dead;
	struct krdma_rdmacg_charge handle_charge;
};

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
bool krdma_device_visible(const struct krdma_device *kdev,
			  const struct net *net);
bool krdma_gid_visible(const struct ib_gid_attr *attr, const struct net *net);
unsigned int krdma_devices_count(const struct net *net);
unsigned int krdma_device_contexts(void);
void krdma_devices_show(struct seq_file *m);
int krdma_device_enter(const struct krdma_session *session, u32 id,
		       struct krdma_device **kdevp);
int krdma_device_enter_ib(struct ib_device *ibdev,
			  struct krdma_device **kdevp);
void krdma_device_exit(struct krdma_device *kdev);
bool krdma_device_inv_crosses_pd(const struct krdma_device *kdev);
void krdma_device_put(struct krdma_device *kdev);
struct krdma_pd *krdma_pd_get(struct krdma_session *session,
			      struct krdma_device *kdev);
int krdma_pd_reg_mr(struct krdma_pd *kpd, struct ib_mr *mr, int access);
void krdma_pd_kill(struct krdma_pd *kpd);
void krdma_pd_flush(void);
int krdma_pd_init(void);
void krdma_pd_exit(void);
void krdma_pd_put(struct krdma_pd *kpd);
int krdma_pd_charge_handle(struct krdma_pd *kpd);

#endif /* KRDMA_DEVICE_H */
