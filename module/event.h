/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session's event queue (event.c): CM events, connection errors,
 * fetched with KRDMA_GET_EVENTS.
 */
#ifndef KRDMA_EVENT_H
#define KRDMA_EVENT_H

#include "object.h"

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

#endif /* KRDMA_EVENT_H */
