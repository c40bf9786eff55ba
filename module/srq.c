// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues (KRDMA_SRQ_CREATE): one pool of receive WRs that
 * several connections of a session draw from.  Receives are posted to the
 * SRQ's handle; each completion lands on the CQ of the connection whose QP
 * consumed it.
 *
 * An SRQ in use cannot be destroyed (ib_destroy_srq() would refuse and leak
 * it): DESTROY answers EBUSY while a connection is bound to it.  Closing the
 * fd and device removal destroy connections before SRQs, so they never see
 * one in use.
 */
#include <linux/slab.h>

#include "device.h"
#include "ioctl.h"
#include "object.h"
#include "srq.h"

#define KRDMA_SRQ_DEFAULT_DEPTH 256

static void krdma_srq_destroy_hw(struct krdma_object *obj)
{
	struct krdma_srq *srq = container_of(obj, struct krdma_srq, obj);

	krdma_object_assert_hw_write(obj);
	/* (a user left would be a bug: its SRQ, and the charge, would stay) */
	if (srq->srq && !WARN_ON(srq->users)) {
		ib_destroy_srq(srq->srq);
		krdma_uncharge_queues(&srq->charge);
	}
	srq->srq = NULL;
}

static void krdma_srq_free(struct krdma_object *obj)
{
	struct krdma_srq *srq = container_of(obj, struct krdma_srq, obj);

	krdma_flow_destroy(&srq->flow);
	kfree(srq);
}

/* Refuse DESTROY of an SRQ a connection uses; else no one may bind it now. */
static int krdma_srq_release(struct krdma_object *obj)
{
	struct krdma_srq *srq = container_of(obj, struct krdma_srq, obj);
	int ret = 0;

	spin_lock(&srq->lock);
	if (srq->users)
		ret = -EBUSY;
	else
		srq->closing = true;
	spin_unlock(&srq->lock);
	return ret;
}

const struct krdma_object_ops krdma_srq_ops = {
	.name = "shared receive queue",
	.destroy_pass = 2,
	.release = krdma_srq_release,
	.destroy_hw = krdma_srq_destroy_hw,
	.free = krdma_srq_free,
};

static void krdma_srq_event(struct ib_event *event, void *context)
{
	struct krdma_srq *srq = context;

	wake_up_all(&srq->obj.session->wait);
}

/* (handle: out, whatever came in; the flags are checked before the device) */
static int krdma_srq_create_check(const struct krdma_srq_create *cmd,
				  const struct ib_device_attr *attrs)
{
	if (!attrs->max_srq)
		return -EOPNOTSUPP;
	if (cmd->max_wr > attrs->max_srq_wr ||
	    cmd->max_sge > min_t(u32, attrs->max_srq_sge, KRDMA_MAX_SGE))
		return -EINVAL;
	return 0;
}

int krdma_srq_create(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_srq_create *cmd = ucmd->cmd;
	struct ib_srq_init_attr init = {};
	struct krdma_device *kdev;
	struct krdma_pd *kpd;
	struct krdma_srq *srq;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	ret = krdma_device_enter(session, cmd->dev_index, &kdev);
	if (ret)
		return ret;
	ret = krdma_srq_create_check(cmd, &kdev->ibdev->attrs);
	if (ret)
		goto err_exit;
	srq = kzalloc(sizeof(*srq), GFP_KERNEL);
	if (!srq) {
		ret = -ENOMEM;
		goto err_exit;
	}
	ret = krdma_object_init(&srq->obj, session, &krdma_srq_ops);
	if (ret)
		goto err_free;
	spin_lock_init(&srq->lock);
	krdma_flow_init(&srq->flow, 0, 0);	/* no sends: nothing to fail */
	srq->obj.kdev = kdev;
	init.event_handler = krdma_srq_event;
	init.srq_context = srq;
	init.srq_type = IB_SRQT_BASIC;
	init.attr.max_wr = cmd->max_wr ?: min_t(u32, KRDMA_SRQ_DEFAULT_DEPTH,
						kdev->ibdev->attrs.max_srq_wr);
	init.attr.max_sge = cmd->max_sge ?: 1;
	kpd = krdma_pd_get(session, kdev);
	if (IS_ERR(kpd)) {
		ret = PTR_ERR(kpd);
		goto err_put;
	}
	srq->obj.kpd = kpd;
	srq->srq = ib_create_srq(kpd->pd, &init);
	if (IS_ERR(srq->srq)) {
		ret = PTR_ERR(srq->srq);
		srq->srq = NULL;
		goto err_put;
	}
	/* what the device granted, capped to what a krdma WR can carry */
	srq->max_wr = init.attr.max_wr;
	srq->max_sge = min_t(u32, init.attr.max_sge, KRDMA_MAX_SGE);
	srq->flow.max_recvs = srq->max_wr;
	ret = krdma_charge_queues(&srq->charge,
				  krdma_srq_queue_bytes(init.attr.max_wr,
							init.attr.max_sge));
	if (ret)
		goto err_put;
	cmd->max_wr = srq->max_wr;
	cmd->max_sge = srq->max_sge;
	ret = krdma_object_publish(&srq->obj, &cmd->handle);
	if (ret)
		goto err_put;
	krdma_device_exit(kdev);
	return krdma_object_respond(&srq->obj, ucmd, sizeof(*cmd));

err_put:
	krdma_srq_destroy_hw(&srq->obj);
	krdma_device_exit(kdev);
	krdma_object_put(&srq->obj);
	return ret;

err_free:
	kfree(srq);
err_exit:
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return ret;
}

/*
 * Bind an SRQ of the session to a connection being built on @kdev: the SRQ
 * counts the user until krdma_srq_unbind().  Returns the SRQ referenced.
 * Removal cannot change hw_dead meanwhile: the caller is inside
 * krdma_device_enter(), or holds the hw lock of a published connection on
 * the device, which removal destroys before it comes to SRQs.
 */
int krdma_srq_bind(struct krdma_session *session, u32 handle,
		   struct krdma_device *kdev, struct krdma_srq **srqp)
{
	struct krdma_object *obj;
	struct krdma_srq *srq;
	int ret;

	obj = krdma_object_get(session, handle, &krdma_srq_ops);
	if (!obj)
		return -ENOENT;
	srq = container_of(obj, struct krdma_srq, obj);
	spin_lock(&srq->lock);
	if (obj->hw_dead)
		ret = -ENODEV;
	else if (srq->closing || obj->kdev != kdev)
		ret = -EINVAL;
	else
		ret = 0;
	if (!ret)
		srq->users++;
	spin_unlock(&srq->lock);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	*srqp = srq;
	return 0;
}

/* The connection's QP is gone: the SRQ may be destroyed once unused. */
void krdma_srq_unbind(struct krdma_srq *srq)
{
	spin_lock(&srq->lock);
	srq->users--;
	spin_unlock(&srq->lock);
}

/* Look up an SRQ to post receives to, its hw lock held for read. */
int krdma_srq_get_locked(struct krdma_session *session, u32 handle,
			 struct krdma_srq **srqp)
{
	struct krdma_object *obj;
	int ret;

	obj = krdma_object_get(session, handle, &krdma_srq_ops);
	if (!obj)
		return -ENOENT;
	ret = krdma_object_lock_hw(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	*srqp = container_of(obj, struct krdma_srq, obj);
	return 0;
}
