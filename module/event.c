// SPDX-License-Identifier: GPL-2.0
/*
 * The session's event queue: CM events on its listeners and connections,
 * fetched with KRDMA_GET_EVENTS or waited for with poll(2).
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "krdma_priv.h"

#define KRDMA_MAX_QUEUED_EVENTS 4096

struct krdma_queued_event {
	struct list_head entry;
	struct krdma_event event;
};

/*
 * An entry for one event, or NULL if there is no memory or the session
 * already holds its cap of unfetched events.  May be called from CM
 * handlers: never sleeps on anything but memory.
 */
struct krdma_queued_event *krdma_event_alloc(struct krdma_session *session)
{
	if (READ_ONCE(session->num_events) >= KRDMA_MAX_QUEUED_EVENTS)
		return NULL;
	return kmalloc(sizeof(struct krdma_queued_event), GFP_KERNEL);
}

/*
 * Queue @qe, from krdma_event_alloc(), and wake the waiters.  Never fails:
 * a CONNECT_REQUEST's connection is published before its event is
 * queued, and failing then would leave the CM to destroy an id the
 * published connection still names.  (The cap may be passed by the
 * handlers running at once, which are few.)
 */
void krdma_event_post(struct krdma_session *session,
		      struct krdma_queued_event *qe,
		      const struct krdma_event *event)
{
	qe->event = *event;
	spin_lock(&session->event_lock);
	list_add_tail(&qe->entry, &session->events);
	session->num_events++;
	spin_unlock(&session->event_lock);
	wake_up_all(&session->wait);
}

int krdma_event_queue(struct krdma_session *session,
		      const struct krdma_event *event)
{
	struct krdma_queued_event *qe = krdma_event_alloc(session);

	if (!qe)
		return -ENOSPC;
	krdma_event_post(session, qe, event);
	return 0;
}

bool krdma_events_pending(struct krdma_session *session)
{
	return READ_ONCE(session->num_events) != 0;
}

static struct krdma_queued_event *krdma_event_dequeue(struct krdma_session *s)
{
	struct krdma_queued_event *qe;

	spin_lock(&s->event_lock);
	qe = list_first_entry_or_null(&s->events, struct krdma_queued_event,
				      entry);
	if (qe) {
		list_del(&qe->entry);
		s->num_events--;
	}
	spin_unlock(&s->event_lock);
	return qe;
}

/*
 * Put events back at the head, in their order, when the caller never got
 * them (a copy-out that faulted).
 */
static void krdma_events_requeue(struct krdma_session *s,
				 struct list_head *taken, u32 n)
{
	spin_lock(&s->event_lock);
	list_splice(taken, &s->events);
	s->num_events += n;
	spin_unlock(&s->event_lock);
}

void krdma_events_flush(struct krdma_session *session)
{
	struct krdma_queued_event *qe;

	while ((qe = krdma_event_dequeue(session)))
		kfree(qe);
}

int krdma_get_events(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_get_events *cmd = ucmd->cmd;
	struct krdma_queued_event *qe = NULL, *next;
	LIST_HEAD(taken);
	LIST_HEAD(unsent);
	u32 done = 0;
	long left;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	if (!cmd->num_events ||
	    cmd->event_entry_size < sizeof(struct krdma_event))
		return -EINVAL;
	if (cmd->timeout_ms) {
		unsigned long timeout = msecs_to_jiffies(cmd->timeout_ms);

		left = wait_event_interruptible_timeout(session->wait,
							krdma_events_pending(session),
							timeout);
		if (left < 0)
			return -EINTR;
	}
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
		kfree(qe);
	return 0;
}
