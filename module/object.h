/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions (one per open /dev/krdma) and the objects their handles name:
 * who holds what, who destroys what (object.c), and the ioctl plumbing.
 *
 * Lock order, outermost first (every lock of the module, and rdma_cm's):
 *
 *  1. krdma_devices_rwsem (device.c): the set of devices
 *  2. krdma_device.usage: read to make objects on a device, write by its
 *     removal, which takes it only after dropping 1
 *  3. krdma_object.hw_rwsem: read to use an object's verbs state, write to
 *     destroy it; one object's at a time, but for a POST's buffers, taken
 *     nested (SINGLE_DEPTH_NESTING) under the target's, one at a time
 *  4. krdma_session.ah_post_rwsem: read by a UD send's POST, write by an
 *     address handle's teardown
 *  5. rdma_cm's handler mutex (rdma_lock_handler(), and around every CM
 *     event handler; rdma_destroy_id() waits for it): a handler takes no
 *     hw_rwsem, and the usage of a device only with a trylock
 *  6. krdma_session.fetch_lock: GET_EVENTS's delivery; it copies to the
 *     user under it (mmap_lock inside)
 *  7. krdma_pd.reg_lock, then krdma_device.reg_slots: fast registrations
 *  8. krdma_session.pd_lock
 *  9. krdma_device.lock
 * 10. innermost, nothing taken inside: the xarrays' locks, krdma_srq.lock,
 *     krdma_bench_shared.lock, krdma_session.event_lock (irqsave: a QP's
 *     event handler takes it in interrupt context), and the rdma cgroup's
 *     own mutex (a charge under 8, an uncharge under 9)
 *
 * No page fault is taken under a hw_rwsem (POST and POLL copy with faults
 * off) or a device's usage (user pages are pinned before), and no
 * rdma_destroy_id() under a device's lock.
 */
#ifndef KRDMA_OBJECT_H
#define KRDMA_OBJECT_H

#include <linux/kref.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "account.h"
#include "krdma.h"

struct krdma_device;
struct krdma_pd;

struct krdma_queued_event;

/**
 * struct krdma_session - one open /dev/krdma
 * @kref: the file's reference, and one per object
 * @objects: handle -> &struct krdma_object; the xarray's lock protects a
 *	lookup and the kref it takes
 * @ah_post_rwsem: read by a UD send's POST across ib_post_send(), once it
 *	has checked its address handles are alive; written by an address
 *	handle's teardown, so that no post still uses the ib_ah it frees
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
 * @net: the opener's network namespace, referenced: the devices and GIDs
 *	the session may use are that namespace's, as a socket's are
 * @user: the opener's user (real uid), referenced: its objects are
 *	counted there (account.c)
 * @no_object_limit: opened with CAP_SYS_ADMIN: no max_objects_per_user
 * @pid: the opener's process (thread group) id, as the initial namespace
 *	numbers it: with @comm, what the kernel log names the session by
 * @comm: the opener's name
 * @id: the session's id in krdma_sessions (sessions.c), for listings
 * @tgid: the opener's process, referenced: a listing shows the session to
 *	a PID namespace that sees it, numbered as it numbers it
 */
struct krdma_session {
	struct kref kref;
	struct xarray objects;
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
	struct net *net;
	struct krdma_user *user;
	bool no_object_limit;
	pid_t pid;
	char comm[TASK_COMM_LEN];
	u32 id;
	struct pid *tgid;
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
 *	(or, for an object never published, by its creator alone)
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
 * @rdmacg: the hca_object charged to the creating task's rdma cgroup on
 *	@kdev, from its publishing until its verbs objects are destroyed
 *	(account.c); empty for an object in no PD, or made by no task
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
	struct krdma_rdmacg_charge rdmacg;
	struct list_head dev_entry;
	const struct krdma_object_ops *ops;
};

struct krdma_session *krdma_session_create(void);
void krdma_session_destroy(struct krdma_session *session);
void krdma_session_put(struct krdma_session *session);
int __must_check krdma_object_init(struct krdma_object *obj,
				   struct krdma_session *session,
				   const struct krdma_object_ops *ops);
int krdma_object_reserve(struct krdma_object *obj);

struct krdma_ucmd;
int krdma_object_charge_rdmacg(struct krdma_object *obj);
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
struct krdma_object *krdma_session_next_object(struct krdma_session *session,
					       unsigned long *handle);

/* What destroy_hw() holds: the hw lock for write, once the handle is out. */
static inline void krdma_object_assert_hw_write(struct krdma_object *obj)
{
	if (obj->published)
		lockdep_assert_held_write(&obj->hw_rwsem);
}

/* The hw lock in any mode, once the handle is out (else no one shares it). */
static inline void krdma_object_assert_hw(struct krdma_object *obj)
{
	if (obj->published)
		lockdep_assert_held(&obj->hw_rwsem);
}

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

int krdma_check_array(u32 num, u32 entry_size, size_t min_size);
int krdma_copy_entries(u64 uptr, u32 usize, const void *src, size_t ksize,
		       u32 n);
void *krdma_array_slot(void **array, u32 *num, u32 *max, size_t entry_size);

#endif /* KRDMA_OBJECT_H */
