/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared receive queues (srq.c).
 */
#ifndef KRDMA_SRQ_H
#define KRDMA_SRQ_H

#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "account.h"
#include "flow.h"
#include "object.h"

/**
 * struct krdma_srq - a shared receive queue object
 * @obj: the handle; @obj.hw_rwsem protects @srq
 * @srq: the verbs SRQ
 * @charge: @srq's memory, charged to its creator
 * @max_wr: receive WRs the device granted
 * @max_sge: SGEs per receive WR
 * @lock: protects @users and @closing
 * @users: connections whose QP uses the SRQ
 * @closing: DESTROY has begun; no connection may bind it any more
 * @flow: receives posted and not reaped, on whichever connection
 */
struct krdma_srq {
	struct krdma_object obj;
	struct ib_srq *srq;
	struct krdma_queue_charge charge;
	u32 max_wr;
	u32 max_sge;
	spinlock_t lock;		/* protects users, closing */
	unsigned int users;
	bool closing;
	struct krdma_flow flow;
};

extern const struct krdma_object_ops krdma_srq_ops;

int krdma_srq_bind(struct krdma_session *session, u32 handle,
		   struct krdma_device *kdev, struct krdma_srq **srqp);
void krdma_srq_unbind(struct krdma_srq *srq);
int krdma_srq_get_locked(struct krdma_session *session, u32 handle,
			 struct krdma_srq **srqp);

#endif /* KRDMA_SRQ_H */
