/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What older kernels lack, in one place.
 *
 * krdma is written against the current kernel's interfaces.  Which of them
 * the kernel being built for has is not guessed from its version: the build
 * compiles a test of each (probes/, scripts/kernel-probe.sh) and writes
 * krdma_config.h, whose HAVE_* say what compiled.  For each interface that
 * did not, this header supplies the same name and meaning, so the rest of
 * the module reads as mainline code; where kernels behave differently in a
 * way a probe can see, a KRDMA_* constant here says how.  The lowest
 * kernel this covers is 5.10 (README).
 */
#ifndef KRDMA_COMPAT_H
#define KRDMA_COMPAT_H

#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/overflow.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "krdma_config.h"

#ifndef HAVE_MEMSET_STARTAT
#define memset_startat(obj, v, member)					\
({									\
	typeof(obj) __obj = (obj);					\
	size_t __off = offsetof(typeof(*__obj), member);		\
									\
	memset((u8 *)__obj + __off, v, sizeof(*__obj) - __off);	\
})
#endif

#ifndef HAVE_VM_FLAGS_SET
/* before 6.3 the flags were written directly, under the same mmap lock */
static inline void vm_flags_set(struct vm_area_struct *vma,
				unsigned long flags)
{
	vma->vm_flags |= flags;
}
#endif

#ifndef HAVE_KTHREAD_COMPLETE_AND_EXIT
/* the same core-kernel call under its older name */
#define kthread_complete_and_exit(comp, code) complete_and_exit(comp, code)
#endif

#ifndef HAVE_FAULT_IN_READABLE
/*
 * Bytes of [@uaddr, @uaddr + @size) not faulted in.  The older
 * fault_in_pages_readable() is all or nothing, so go a page at a time to
 * find where the readable part ends; and it checks no range (__get_user()),
 * so check first, as the newer call does, that it is user memory at all.
 */
static inline size_t fault_in_readable(const char __user *uaddr, size_t size)
{
	const char __user *end = uaddr + size;

	if (!access_ok(uaddr, size))
		return size;
	while (uaddr < end) {
		size_t n = min_t(size_t, end - uaddr,
				 PAGE_SIZE - offset_in_page(uaddr));

		if (fault_in_pages_readable(uaddr, n))
			break;
		uaddr += n;
	}
	return end - uaddr;
}
#endif

/*
 * The RNR NAK timer of an rdma_cm RC QP.  Where rdma_cm cannot be told it
 * before it moves the QP to RTR, it is set once the QP is in RTS (the
 * attribute is optional on RTS->RTS), under the handler lock, which keeps
 * rdma_cm from moving the QP meanwhile; best effort: an RNR NAK sent before
 * asks for rdma_cm's default wait (timer 0: 655 ms), a QP already in error
 * (a peer that left at once) is left alone, and iWARP has no RNR NAK.
 */
#ifdef HAVE_RDMA_SET_MIN_RNR_TIMER
static inline int krdma_cm_set_min_rnr_timer(struct rdma_cm_id *id, u8 timer)
{
	return rdma_set_min_rnr_timer(id, timer);
}

static inline void krdma_cm_apply_min_rnr_timer(struct rdma_cm_id *id,
						u8 timer)
{
}
#else
static inline int krdma_cm_set_min_rnr_timer(struct rdma_cm_id *id, u8 timer)
{
	return 0;
}

/* rdma_cm's handler lock held */
static inline void krdma_cm_apply_min_rnr_timer(struct rdma_cm_id *id,
						u8 timer)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	if (!id->qp || !rdma_ib_or_roce(id->device, id->port_num))
		return;
	if (ib_query_qp(id->qp, &attr, IB_QP_STATE, &init) ||
	    attr.qp_state != IB_QPS_RTS)
		return;
	attr.min_rnr_timer = timer;
	ib_modify_qp(id->qp, &attr, IB_QP_MIN_RNR_TIMER);
}
#endif

/*
 * Does a cgroup's cpu.max throttle a kernel thread in it?  Not since
 * task-based throttling (6.18), which throttles a task on its way back to
 * user space, a way a kernel thread never takes.
 */
#ifdef HAVE_TASK_THROTTLE_WORK
#define KRDMA_CPU_MAX_HOLDS_KTHREADS false
#else
#define KRDMA_CPU_MAX_HOLDS_KTHREADS true
#endif

#ifndef HAVE_IB_DEVICE_GET_NETDEV
/*
 * The netdev of @port, held: before the core exported its own, a driver's
 * get_netdev(), else the netdev whose registered device
 * (ib_device_set_netdev(), as rxe and siw do) is @ibdev; a device of
 * several ports, whose netdevs that lookup cannot tell apart, has none.
 */
static inline struct net_device *
ib_device_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct net_device *ndev, *found = NULL;
	struct ib_device *owner;
	struct net *net;

	if (ibdev->ops.get_netdev)
		return ibdev->ops.get_netdev(ibdev, port);
	if (rdma_start_port(ibdev) != rdma_end_port(ibdev))
		return NULL;
	rcu_read_lock();
	for_each_net_rcu(net) {
		for_each_netdev_rcu(net, ndev) {
			/* as the core's: none being unregistered */
			if (ndev->reg_state != NETREG_REGISTERED)
				continue;
			owner = ib_device_get_by_netdev(ndev,
							RDMA_DRIVER_UNKNOWN);
			if (!owner)
				continue;
			if (owner == ibdev) {
				found = ndev;
				dev_hold(found);
			}
			ib_device_put(owner);
			if (found)
				goto out;
		}
	}
out:
	rcu_read_unlock();
	return found;
}
#endif

#endif /* KRDMA_COMPAT_H */
