// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions and the objects they own.
 *
 * The lifetime rules follow drivers/infiniband/core/ucma.c and uverbs:
 *  - a session is one open /dev/krdma; its objects live in an xarray keyed
 *    by handle, and a lookup takes a kref under the xarray lock;
 *  - exactly one destroyer wins: DESTROY, release() and nothing else take
 *    an object out of the table, and the xarray's lock decides who got it
 *    (the loser sees -ENOENT);
 *  - a destroyed object's slot stays reserved while an unfetched event
 *    names its handle (krdma_handle_retire()), so no newer object gets it;
 *  - device removal does not touch handles: it destroys the verbs objects
 *    under each object's hw_rwsem and marks it dead, so later calls on the
 *    handle answer -ENODEV until the session destroys it.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>

#include "account.h"
#include "device.h"
#include "event.h"
#include "ioctl.h"
#include "object.h"
#include "sessions.h"

struct krdma_session *krdma_session_create(void)
{
	struct krdma_session *session;

	session = kzalloc(sizeof(*session), GFP_KERNEL);
	if (!session)
		return NULL;
	session->user = krdma_user_get(current_uid());
	if (!session->user)
		goto err_free;
	session->no_object_limit = ns_capable_noaudit(&init_user_ns,
						      CAP_SYS_ADMIN);
	session->pid = task_tgid_nr(current);
	session->tgid = get_task_pid(current, PIDTYPE_TGID);
	get_task_comm(session->comm, current);
	xa_init_flags(&session->objects, XA_FLAGS_ALLOC1);
	init_rwsem(&session->ah_post_rwsem);
	init_waitqueue_head(&session->wait);
	spin_lock_init(&session->event_lock);
	mutex_init(&session->fetch_lock);
	INIT_LIST_HEAD(&session->events);
	mutex_init(&session->pd_lock);
	xa_init(&session->pds);
	kref_init(&session->kref);
	/* the opener's, as uverbs and umad check theirs at open() */
	session->net = get_net(current->nsproxy->net_ns);
	if (krdma_sessions_add(session))
		goto err_put;
	return session;

err_put:
	put_net(session->net);
	put_pid(session->tgid);
	krdma_user_put(session->user);
err_free:
	kfree(session);
	return NULL;
}

/* The file is closed and the last object gone: nothing refers to it. */
static void krdma_session_free(struct kref *kref)
{
	struct krdma_session *session =
		container_of(kref, struct krdma_session, kref);

	WARN_ON(!xa_empty(&session->pds));
	krdma_events_flush(session);
	put_net(session->net);
	put_pid(session->tgid);
	krdma_user_put(session->user);
	kfree(session);
}

void krdma_session_put(struct krdma_session *session)
{
	kref_put(&session->kref, krdma_session_free);
}

static void krdma_object_release(struct kref *kref)
{
	struct krdma_object *obj = container_of(kref, struct krdma_object, kref);
	struct krdma_device *kdev = obj->kdev;
	struct krdma_session *session = obj->session;
	struct krdma_pd *kpd = obj->kpd;

	/* a published object's verbs state went by krdma_object_kill_hw() */
	WARN_ON_ONCE(obj->rdmacg.cg);
	obj->ops->free(obj);
	if (kpd)
		krdma_pd_put(kpd);
	if (kdev)
		krdma_device_put(kdev);
	krdma_user_uncharge_object(session);
	krdma_session_put(session);
}

void krdma_object_put(struct krdma_object *obj)
{
	kref_put(&obj->kref, krdma_object_release);
}

/*
 * Charged to the session's user (account.c) until its last reference
 * goes: 0, or -EDQUOT past the user's limit, with nothing done.
 */
int krdma_object_init(struct krdma_object *obj, struct krdma_session *session,
		      const struct krdma_object_ops *ops)
{
	int ret = krdma_user_charge_object(session);

	if (ret)
		return ret;
	kref_init(&obj->kref);
	init_rwsem(&obj->hw_rwsem);
	INIT_LIST_HEAD(&obj->dev_entry);
	/*
	 * Device removal may drop an object's last reference after the file
	 * is gone; the object's PD reference needs the session until then.
	 */
	kref_get(&session->kref);
	obj->session = session;
	obj->ops = ops;
	return 0;
}

/*
 * Reserve the object's handle before it is built, for an object whose
 * events must name it early (an rdma_cm connect).  Undone by
 * krdma_object_discard() if the object is never published.
 */
int krdma_object_reserve(struct krdma_object *obj)
{
	return xa_alloc(&obj->session->objects, &obj->handle, NULL,
			xa_limit_31b, GFP_KERNEL);
}

/*
 * An object in a PD holds verbs objects on its device: one hca_object of
 * the creating task's rdma cgroup, as uverbs charges its objects, until
 * krdma_object_kill_hw() destroys them (on removal too, which is before
 * the core takes the device out of the rdma controller).  A listener
 * holds an rdma_cm id, as rdma_cm's are not charged.  The connection of
 * an incoming request is published by rdma_cm's handler, a kernel thread
 * whose cgroup is no user's: it is charged when KRDMA_CM_ACCEPT builds its
 * QP, to the accepting task's (cm.c).
 */
int krdma_object_charge_rdmacg(struct krdma_object *obj)
{
	int ret;

	if (!obj->kpd || obj->rdmacg.cg || (current->flags & PF_KTHREAD))
		return 0;
	ret = krdma_pd_charge_handle(obj->kpd);
	if (ret)
		return ret;
	return krdma_rdmacg_charge(&obj->rdmacg, obj->kdev->ibdev,
				   RDMACG_RESOURCE_HCA_OBJECT);
}

/*
 * Make a fully built object reachable: on its device's list, so removal
 * finds it, and in the session's table, so the caller gets a handle.  The
 * caller still holds the device's usage lock (krdma_device_enter()), so the
 * device cannot be half-way through removal.  The creator's reference
 * becomes the table's, and on success the caller gets one of its own,
 * dropped by krdma_object_respond() or krdma_object_put(): once this
 * returns, a DESTROY that guessed the handle may already have destroyed
 * the object, but not freed it under the caller.  An object holding verbs
 * objects is charged to the caller's rdma cgroup first: past its limit,
 * -EAGAIN, and the caller destroys what it built.
 */
int krdma_object_publish(struct krdma_object *obj, u32 *handle)
{
	struct krdma_device *kdev = obj->kdev;
	bool reserved_here = !obj->handle;
	int ret;

	if (kdev)
		lockdep_assert_held_read(&kdev->usage);
	ret = krdma_object_charge_rdmacg(obj);
	if (ret)
		return ret;
	if (reserved_here) {
		ret = krdma_object_reserve(obj);
		if (ret)
			goto err_uncharge;
	}
	*handle = obj->handle;
	if (kdev) {
		mutex_lock(&kdev->lock);
		list_add_tail(&obj->dev_entry, &kdev->objects);
		mutex_unlock(&kdev->lock);
	}
	obj->published = true;
	kref_get(&obj->kref);
	ret = xa_err(xa_store(&obj->session->objects, obj->handle, obj,
			      GFP_KERNEL));
	if (!ret)
		return 0;
	kref_put(&obj->kref, krdma_object_release);	/* not the last */
	/* not reachable by anyone yet: undo, the caller frees it */
	obj->published = false;
	if (kdev) {
		mutex_lock(&kdev->lock);
		list_del_init(&obj->dev_entry);
		mutex_unlock(&kdev->lock);
	}
	if (reserved_here) {
		xa_release(&obj->session->objects, obj->handle);
		obj->handle = 0;
	}
err_uncharge:
	krdma_rdmacg_uncharge(&obj->rdmacg);
	return ret;
}

/*
 * Answer a create command with the handle of the object it published, and
 * drop the caller's reference.  A caller the answer cannot reach never
 * learns the handle: as uverbs and ucma do, the object goes again (unless
 * a DESTROY that guessed the handle got there first), if a DESTROY could
 * take it now: an SRQ that a connection bound meanwhile (its handle
 * guessed too) stays, as a DESTROY would leave it, until the fd closes.
 */
int krdma_object_respond(struct krdma_object *obj, struct krdma_ucmd *ucmd,
			 size_t len)
{
	int ret = krdma_ucmd_respond(ucmd, len);

	if (ret && (!obj->ops->release || !obj->ops->release(obj)))
		krdma_object_erase(obj);
	krdma_object_put(obj);
	return ret;
}

/*
 * The slot of a destroyed object, left reserved: free, or kept while an
 * unfetched event names it, if its type queues events.
 */
static void krdma_object_free_handle(struct krdma_session *session,
				     const struct krdma_object_ops *ops,
				     u32 handle)
{
	if (ops->queues_events)
		krdma_handle_retire(session, handle);
	else
		xa_release(&session->objects, handle);
}

/*
 * Undo the creation of an object never published.  Its verbs state goes
 * first: a listener's id may still be taking requests, whose events carry
 * the handle, until it is destroyed.
 */
void krdma_object_discard(struct krdma_object *obj)
{
	obj->ops->destroy_hw(obj);
	if (obj->handle)
		krdma_object_free_handle(obj->session, obj->ops, obj->handle);
	krdma_object_put(obj);
}

/* Look a handle up, taking a reference; NULL if absent or of another type. */
struct krdma_object *krdma_object_get(struct krdma_session *session,
				      u32 handle,
				      const struct krdma_object_ops *ops)
{
	struct krdma_object *obj;

	xa_lock(&session->objects);
	obj = xa_load(&session->objects, handle);
	if (obj && (obj->ops != ops || !kref_get_unless_zero(&obj->kref)))
		obj = NULL;
	xa_unlock(&session->objects);
	return obj;
}

/*
 * For a listing, from another session too: the next published object at or
 * after *@handle, referenced (krdma_object_put()), or NULL at the end.
 */
struct krdma_object *krdma_session_next_object(struct krdma_session *session,
					       unsigned long *handle)
{
	struct krdma_object *obj;

	xa_lock(&session->objects);
	for (;;) {
		obj = xa_find(&session->objects, handle, ULONG_MAX, XA_PRESENT);
		if (!obj || kref_get_unless_zero(&obj->kref))
			break;
		(*handle)++;	/* going: not listed */
	}
	xa_unlock(&session->objects);
	return obj;
}

/*
 * Why a dead object's verbs state is gone: a DESTROY that won while the
 * caller held its lookup reference (the handle no longer exists), or its
 * device's removal.
 */
static int krdma_object_dead_errno(const struct krdma_object *obj)
{
	return obj->destroyed ? -ENOENT : -ENODEV;
}

/*
 * Whether @obj's verbs state still stands, without its hw lock: for a
 * caller that keeps it standing another way (a UD POST holds its
 * session's ah_post_rwsem across its address handles' use).
 */
int krdma_object_hw_alive(const struct krdma_object *obj)
{
	return READ_ONCE(obj->hw_dead) ? krdma_object_dead_errno(obj) : 0;
}

/*
 * Take an object's verbs state for use: -ENODEV once its device is gone,
 * -ENOENT once it was destroyed.  Pairs with krdma_object_unlock_hw().
 */
int krdma_object_lock_hw(struct krdma_object *obj)
{
	down_read(&obj->hw_rwsem);
	if (obj->hw_dead) {
		up_read(&obj->hw_rwsem);
		return krdma_object_dead_errno(obj);
	}
	return 0;
}

/*
 * The same, for an object used while another's hw lock is held (a buffer
 * or address handle named by a WR posted on a connection).  Removal and
 * DESTROY take the write side of one object at a time and never wait for a
 * second object's lock while holding one, so the nesting cannot deadlock.
 */
int krdma_object_lock_hw_nested(struct krdma_object *obj)
{
	down_read_nested(&obj->hw_rwsem, SINGLE_DEPTH_NESTING);
	if (obj->hw_dead) {
		up_read(&obj->hw_rwsem);
		return krdma_object_dead_errno(obj);
	}
	return 0;
}

void krdma_object_unlock_hw(struct krdma_object *obj)
{
	up_read(&obj->hw_rwsem);
}

/*
 * Destroy the verbs objects once, and wake the session's waiters (a poll(2)
 * on a connection that just died).  The session outlives this: its
 * teardown destroys the object, which needs the hw lock we hold.
 */
void krdma_object_kill_hw(struct krdma_object *obj)
{
	down_write(&obj->hw_rwsem);
	if (!obj->hw_dead) {
		WRITE_ONCE(obj->hw_dead, true);
		obj->ops->destroy_hw(obj);
		/* before the device leaves the rdma cgroups, on removal */
		krdma_rdmacg_uncharge(&obj->rdmacg);
		wake_up_all(&obj->session->wait);
	}
	up_write(&obj->hw_rwsem);
}

/* Whoever took the object out of the table tears it down. */
static void krdma_object_destroy(struct krdma_object *obj)
{
	struct krdma_device *kdev = obj->kdev;

	down_write(&obj->hw_rwsem);
	obj->destroyed = true;
	up_write(&obj->hw_rwsem);
	/*
	 * Killed before it leaves the device's list, so removal either finds
	 * it and waits for the kill, or finds it dead.  Not under the device
	 * lock: killing an rdma_cm id waits for its handlers, which may take
	 * that lock.
	 */
	krdma_object_kill_hw(obj);
	if (kdev) {
		mutex_lock(&kdev->lock);
		list_del_init(&obj->dev_entry);
		mutex_unlock(&kdev->lock);
	}
	krdma_object_put(obj);
}

/*
 * Take a published object out of its session and tear it down, if no one
 * else did; the caller keeps any reference of its own.  The slot stays
 * reserved (as xa_reserve() leaves one) until the handle is retired.
 */
void krdma_object_erase(struct krdma_object *obj)
{
	const struct krdma_object_ops *ops = obj->ops;
	struct krdma_session *session = obj->session;
	u32 handle = obj->handle;

	if (xa_cmpxchg(&session->objects, handle, obj, XA_ZERO_ENTRY, 0) !=
	    obj)
		return;
	krdma_object_destroy(obj);
	krdma_object_free_handle(session, ops, handle);
}

void krdma_object_get_ref(struct krdma_object *obj)
{
	kref_get(&obj->kref);
}

int krdma_destroy(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_destroy *cmd = ucmd->cmd;
	const struct krdma_object_ops *ops;
	struct krdma_object *obj;
	bool won = false;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	/*
	 * Erase only a published object: a slot reserved for one being built
	 * (an rdma_cm connect in flight) loads as NULL and must stay reserved.
	 */
	xa_lock(&session->objects);
	obj = xa_load(&session->objects, cmd->handle);
	if (obj && !kref_get_unless_zero(&obj->kref))
		obj = NULL;
	xa_unlock(&session->objects);
	if (!obj)
		return -ENOENT;
	ret = obj->ops->release ? obj->ops->release(obj) : 0;
	if (!ret) {
		xa_lock(&session->objects);
		won = xa_load(&session->objects, cmd->handle) == obj;
		/* reserved, empty: retired below */
		if (won)
			__xa_store(&session->objects, cmd->handle, NULL, 0);
		xa_unlock(&session->objects);
	}
	/* the table's reference, if we won, keeps the object for destroy */
	krdma_object_put(obj);
	if (ret)
		return ret;
	if (!won)
		return -ENOENT;
	ops = obj->ops;
	krdma_object_destroy(obj);
	krdma_object_free_handle(session, ops, cmd->handle);
	return 0;
}

/*
 * Objects in the order they must go: users of other objects (connections)
 * before what they use (address handles and SRQs, then buffers).
 */
void krdma_session_destroy(struct krdma_session *session)
{
	struct krdma_object *obj;
	unsigned long handle;
	int pass;

	krdma_sessions_del(session);
	for (pass = 0; pass < KRDMA_OBJECT_PASSES; pass++) {
		xa_for_each(&session->objects, handle, obj) {
			if (obj->ops->destroy_pass != pass)
				continue;
			if (xa_erase(&session->objects, handle) == obj)
				krdma_object_destroy(obj);
		}
	}
	/* what is left are slots retired handles keep reserved */
	handle = 0;
	WARN_ON(xa_find(&session->objects, &handle, ULONG_MAX, XA_PRESENT));
	xa_destroy(&session->objects);
	krdma_events_flush(session);
	krdma_session_put(session);
}
