// SPDX-License-Identifier: GPL-2.0
/*
 * The session's event queue: CM events on its listeners and connections,
 * and krdma's own (a connection in error, events lost), fetched with
 * KRDMA_GET_EVENTS or waited for with poll(2).
 *
 * A handle an unfetched event names is not handed out again: its object's
 * destroy leaves the slot reserved and marks the last event naming it,
 * whose delivery frees the slot (krdma_handle_retire()).
 */
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "event.h"
#include "ioctl.h"
#include "object.h"

#define KRDMA_MAX_EVENTS_LIMIT 65536

static unsigned int max_events = 4096;

/* 1 ... 65536: bounds a session's memory and krdma_handle_retire()'s walk */
static int krdma_max_events_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, KRDMA_MAX_EVENTS_LIMIT);
}

static const struct kernel_param_ops krdma_max_events_ops = {
	.set = krdma_max_events_set,
	.get = param_get_uint,
};

module_param_cb(max_events, &krdma_max_events_ops, &max_events, 0644);
MODULE_PARM_DESC(max_events,
		 "unfetched events a session holds, 1-65536; further ones are counted in an OVERFLOW event (default 4096)");

struct krdma_queued_event {
	struct list_head entry;
	/*
	 * the last unfetched event to name a destroyed object's handle;
	 * under the session's fetch_lock
	 */
	bool frees_handle;
	bool frees_listener;
	struct krdma_event event;
};

/*
 * An entry allocated ahead, for an event queued where allocating is not
 * allowed (a QP's event handler); krdma_event_post() queues it past the cap.
 */
struct krdma_queued_event *krdma_event_prealloc(void)
{
	return kzalloc(sizeof(struct krdma_queued_event), GFP_KERNEL);
}

/*
 * An entry for one event, or NULL if there is no memory or the session
 * already holds max_events unfetched events.  Never sleeps on anything
 * but memory (CM handlers call it).
 */
struct krdma_queued_event *krdma_event_alloc(struct krdma_session *session)
{
	if (READ_ONCE(session->num_events) >= READ_ONCE(max_events))
		return NULL;
	return krdma_event_prealloc();
}

/*
 * Queue @qe, from krdma_event_alloc() or krdma_event_prealloc(), and wake
 * the waiters.  Never fails: a CONNECT_REQUEST's connection is published
 * before its event is queued, and failing then would leave the CM to
 * destroy an id the published connection still names.  (The cap may be
 * passed by the handlers running at once, which are few.)
 */
void krdma_event_post(struct krdma_session *session,
		      struct krdma_queued_event *qe,
		      const struct krdma_event *event)
{
	unsigned long flags;

	qe->event = *event;
	spin_lock_irqsave(&session->event_lock, flags);
	list_add_tail(&qe->entry, &session->events);
	session->num_events++;
	spin_unlock_irqrestore(&session->event_lock, flags);
	wake_up_all(&session->wait);
}

/*
 * An event the session had no room or memory for.  The first of a run
 * queues an OVERFLOW event where the lost one would have been; it counts
 * the run while it is the newest entry (an event queued after it ends the
 * run).  A marker that cannot be allocated is counted into the next one.
 * Callers may sleep (CM handlers, device removal).
 */
static void krdma_event_lost(struct krdma_session *session)
{
	struct krdma_queued_event *spare, *marker;
	unsigned long flags;

	spare = krdma_event_prealloc();
	spin_lock_irqsave(&session->event_lock, flags);
	session->events_lost++;
	marker = session->overflow;
	if (marker && list_last_entry(&session->events,
				      struct krdma_queued_event,
				      entry) != marker)
		marker = NULL;
	if (!marker && spare) {
		marker = spare;
		spare = NULL;
		marker->event.type = KRDMA_EVENT_OVERFLOW;
		list_add_tail(&marker->entry, &session->events);
		session->num_events++;
		session->overflow = marker;
	}
	if (marker) {
		marker->event.status = min_t(u64, (u64)marker->event.status +
					     session->events_lost, S32_MAX);
		session->events_lost = 0;
	}
	spin_unlock_irqrestore(&session->event_lock, flags);
	kfree(spare);
	wake_up_all(&session->wait);
}

int krdma_event_queue(struct krdma_session *session,
		      const struct krdma_event *event)
{
	struct krdma_queued_event *qe = krdma_event_alloc(session);

	if (!qe) {
		krdma_event_lost(session);
		return -ENOSPC;
	}
	krdma_event_post(session, qe, event);
	return 0;
}

/*
 * @handle's object is destroyed and queues no more events (its rdma_cm id
 * is gone), and its slot in the session's table is reserved, empty.  If an
 * unfetched event names the handle, the slot stays reserved until the last
 * such event is fetched, so that no newer object gets the handle while the
 * caller can still read an event about the old one; else it is free now.
 * The fetch lock waits out a GET_EVENTS that holds events taken off the
 * queue but not yet delivered (it puts them back if the copy faults).
 *
 * Only a fetch, under the fetch lock, takes events off the queue: held
 * here, the events queued so far stay where they are while others are
 * added behind them, so the walk needs the event lock (and interrupts
 * off) only to find where it starts, not for up to max_events steps.
 */
void krdma_handle_retire(struct krdma_session *session, u32 handle)
{
	struct krdma_queued_event *qe;
	struct list_head *newest, *pos;
	unsigned long flags;
	bool named = false;

	mutex_lock(&session->fetch_lock);
	spin_lock_irqsave(&session->event_lock, flags);
	newest = session->events.prev;
	spin_unlock_irqrestore(&session->event_lock, flags);
	for (pos = newest; pos != &session->events; pos = pos->prev) {
		qe = list_entry(pos, struct krdma_queued_event, entry);
		if (qe->event.handle == handle) {
			qe->frees_handle = true;
			named = true;
			break;
		}
		if (qe->event.listener == handle) {
			qe->frees_listener = true;
			named = true;
			break;
		}
	}
	if (!named)
		xa_release(&session->objects, handle);
	mutex_unlock(&session->fetch_lock);
}

/* A delivered event: the handles it kept reserved are free now. */
static void krdma_event_delivered(struct krdma_session *session,
				  struct krdma_queued_event *qe)
{
	lockdep_assert_held(&session->fetch_lock);
	if (qe->frees_handle)
		xa_release(&session->objects, qe->event.handle);
	if (qe->frees_listener)
		xa_release(&session->objects, qe->event.listener);
	kfree(qe);
}

bool krdma_events_pending(struct krdma_session *session)
{
	return READ_ONCE(session->num_events) != 0;
}

static struct krdma_queued_event *krdma_event_dequeue(struct krdma_session *s)
{
	struct krdma_queued_event *qe;
	unsigned long flags;

	spin_lock_irqsave(&s->event_lock, flags);
	qe = list_first_entry_or_null(&s->events, struct krdma_queued_event,
				      entry);
	if (qe) {
		list_del(&qe->entry);
		s->num_events--;
		/* fetched: a later loss starts a new marker */
		if (qe == s->overflow)
			s->overflow = NULL;
	}
	spin_unlock_irqrestore(&s->event_lock, flags);
	return qe;
}

/*
 * Put events back at the head, in their order, when the caller never got
 * them (a copy-out that faulted).  An OVERFLOW marker that is the newest
 * entry again counts the next losses, as if it had never left.
 */
static void krdma_events_requeue(struct krdma_session *s,
				 struct list_head *taken, u32 n)
{
	struct krdma_queued_event *last;
	unsigned long flags;

	lockdep_assert_held(&s->fetch_lock);
	if (list_empty(taken))
		return;
	spin_lock_irqsave(&s->event_lock, flags);
	last = list_last_entry(taken, struct krdma_queued_event, entry);
	if (list_empty(&s->events) &&
	    last->event.type == KRDMA_EVENT_OVERFLOW)
		s->overflow = last;
	list_splice(taken, &s->events);
	s->num_events += n;
	spin_unlock_irqrestore(&s->event_lock, flags);
}

/* The session is going: its table is gone, nothing to release. */
void krdma_events_flush(struct krdma_session *session)
{
	struct krdma_queued_event *qe;

	while ((qe = krdma_event_dequeue(session)))
		kfree(qe);
}

/*
 * Move up to cmd->num_events events to the caller, under the fetch lock:
 * those it cannot deliver go back, in order, at the head of the queue.
 */
static int krdma_events_deliver(struct krdma_session *session,
				struct krdma_ucmd *ucmd)
{
	struct krdma_get_events *cmd = ucmd->cmd;
	struct krdma_queued_event *qe = NULL, *next;
	LIST_HEAD(taken);
	LIST_HEAD(unsent);
	u32 done = 0;
	int ret;

	lockdep_assert_held(&session->fetch_lock);
	while (done < cmd->num_events && (qe = krdma_event_dequeue(session))) {
		if (krdma_copy_entries(cmd->events_uptr +
				       (u64)done * cmd->event_entry_size,
				       cmd->event_entry_size, &qe->event,
				       sizeof(qe->event), 1)) {
			/* not delivered: back at the head */
			list_add(&qe->entry, &unsent);
			krdma_events_requeue(session, &unsent, 1);
			break;
		}
		list_add_tail(&qe->entry, &taken);
		done++;
	}
	cmd->num_events = done;
	ret = done ? krdma_ucmd_respond(ucmd, sizeof(*cmd)) : -EFAULT;
	if (ret) {
		/* the caller learns of none of them: keep them, in order */
		krdma_events_requeue(session, &taken, done);
		/* no event at all, or none wanted: an empty answer */
		if (!done && !qe)
			return krdma_ucmd_respond(ucmd, sizeof(*cmd));
		return ret;
	}
	list_for_each_entry_safe(qe, next, &taken, entry)
		krdma_event_delivered(session, qe);
	return 0;
}

int krdma_get_events(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_get_events *cmd = ucmd->cmd;
	long left;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!cmd->num_events ||
	    !krdma_entry_size_ok(cmd->event_entry_size,
				 sizeof(struct krdma_event)))
		return -EINVAL;
	if (cmd->timeout_ms) {
		unsigned long timeout = msecs_to_jiffies(cmd->timeout_ms);

		left = wait_event_interruptible_timeout(session->wait,
							krdma_events_pending(session),
							timeout);
		if (left < 0)
			return -EINTR;
	}
	mutex_lock(&session->fetch_lock);
	ret = krdma_events_deliver(session, ucmd);
	mutex_unlock(&session->fetch_lock);
	return ret;
}
