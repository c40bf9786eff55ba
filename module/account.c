// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting: what a user's sessions hold is charged to that user, so that
 * one user of a shared host cannot exhaust it for the others.
 *
 *  - Objects (buffers, connections, listeners, SRQs, address handles):
 *    at most max_objects_per_user alive per user, counted by the real uid
 *    of each session's opener over all its sessions; past it, EDQUOT (as
 *    a key quota answers).  A session opened with CAP_SYS_ADMIN is not
 *    limited, though its objects count.
 *  - Memory the verbs objects hold: the buffers' pages, and the queues
 *    (send and receive work queues, CQs, SRQs) estimated from the depths
 *    the device granted, are charged to the caller's mm as pinned memory,
 *    against RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, as ib_umem_get()
 *    charges what userspace verbs pin (queues included, on hardware whose
 *    queues live in user memory); past it, ENOMEM.
 *  - Verbs objects: each object that holds some on a device (a buffer, a
 *    connection, an SRQ, an address handle; a user buffer's MRs past its
 *    first, buf.c, one more each) is one hca_object of the
 *    creating task's rdma cgroup on that device, as uverbs charges its
 *    objects, and a session's PD on the device one hca_handle (pd.c), as
 *    uverbs charges a context; past rdma.max, EAGAIN.
 *
 * Events are bounded per session (max_events, event.c).
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cgroup_rdma.h>
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "account.h"
#include "object.h"

static unsigned int max_objects_per_user = 16384;
module_param(max_objects_per_user, uint, 0644);
MODULE_PARM_DESC(max_objects_per_user,
		 "objects one user's sessions may hold at once, 0 for no limit; CAP_SYS_ADMIN openers are exempt (default 16384)");

/*
 * What the queues are estimated at: a send WQE's header (a 64-byte basic
 * block, as mlx5's and rxe's are no smaller) and 16 bytes per scatter
 * entry and per 16 bytes of inline data; a receive WQE 16 bytes per
 * scatter entry after a 16-byte header; a CQE 64 bytes.
 */
#define KRDMA_SEND_WQE_BYTES 64
#define KRDMA_RECV_WQE_BYTES 16
#define KRDMA_SGE_BYTES 16
#define KRDMA_CQE_BYTES 64

/**
 * struct krdma_user - one user's objects
 * @node: in krdma_users
 * @uid: the real uid of the sessions' openers
 * @ref: the sessions opened by @uid
 * @objects: objects alive in those sessions
 */
struct krdma_user {
	struct hlist_node node;
	kuid_t uid;
	refcount_t ref;
	atomic_t objects;
};

static DEFINE_HASHTABLE(krdma_users, 6);
/* protects krdma_users and the users' references */
static DEFINE_SPINLOCK(krdma_users_lock);

/* @uid's entry, made if it has none; NULL without memory. */
struct krdma_user *krdma_user_get(kuid_t uid)
{
	struct krdma_user *user, *new;
	unsigned long flags;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;
	spin_lock_irqsave(&krdma_users_lock, flags);
	hash_for_each_possible(krdma_users, user, node, __kuid_val(uid)) {
		if (uid_eq(user->uid, uid)) {
			refcount_inc(&user->ref);
			goto out_unlock;
		}
	}
	user = new;
	new = NULL;
	user->uid = uid;
	refcount_set(&user->ref, 1);
	hash_add(krdma_users, &user->node, __kuid_val(uid));
out_unlock:
	spin_unlock_irqrestore(&krdma_users_lock, flags);
	kfree(new);
	return user;
}

/* A session's reference, dropped as it is freed. */
void krdma_user_put(struct krdma_user *user)
{
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&krdma_users_lock, flags);
	last = refcount_dec_and_test(&user->ref);
	if (last)
		hash_del(&user->node);
	spin_unlock_irqrestore(&krdma_users_lock, flags);
	if (!last)
		return;
	WARN_ON(atomic_read(&user->objects));
	kfree(user);
}

/*
 * One more object for @session's user: 0, or -EDQUOT past the limit.  The
 * exemption was decided at open, as a file's credentials are: this may run
 * in a CM handler, for a listener's incoming request.
 */
int krdma_user_charge_object(struct krdma_session *session)
{
	struct krdma_user *user = session->user;
	unsigned int max = READ_ONCE(max_objects_per_user);

	if (atomic_inc_return(&user->objects) > max && max &&
	    !session->no_object_limit) {
		atomic_dec(&user->objects);
		return -EDQUOT;
	}
	return 0;
}

void krdma_user_uncharge_object(struct krdma_session *session)
{
	atomic_dec(&session->user->objects);
}

kuid_t krdma_user_uid(const struct krdma_user *user)
{
	return user->uid;
}

/* debugfs "users": the limit, and what each user holds of it. */
void krdma_users_show(struct seq_file *m)
{
	struct krdma_user *user;
	unsigned long flags;
	int bkt;

	seq_printf(m, "max_objects_per_user %u\n",
		   READ_ONCE(max_objects_per_user));
	spin_lock_irqsave(&krdma_users_lock, flags);
	hash_for_each(krdma_users, bkt, user, node)
		seq_printf(m, "uid %u sessions %u objects %d\n",
			   from_kuid_munged(&init_user_ns, user->uid),
			   refcount_read(&user->ref),
			   atomic_read(&user->objects));
	spin_unlock_irqrestore(&krdma_users_lock, flags);
}

/*
 * Charge pinned pages like ib_umem_get(): against RLIMIT_MEMLOCK unless the
 * caller has CAP_IPC_LOCK.
 */
int krdma_charge_pinned(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

void krdma_uncharge_pinned(struct mm_struct *mm, unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
}

/* A QP's send and receive queues, as the device sized them. */
size_t krdma_qp_queue_bytes(const struct ib_qp_cap *cap)
{
	size_t send = KRDMA_SEND_WQE_BYTES +
		      (size_t)cap->max_send_sge * KRDMA_SGE_BYTES +
		      ALIGN((size_t)cap->max_inline_data, KRDMA_SGE_BYTES);
	size_t recv = KRDMA_RECV_WQE_BYTES +
		      (size_t)cap->max_recv_sge * KRDMA_SGE_BYTES;

	return send * cap->max_send_wr + recv * cap->max_recv_wr;
}

size_t krdma_cq_queue_bytes(u32 cqe)
{
	return (size_t)cqe * KRDMA_CQE_BYTES;
}

size_t krdma_srq_queue_bytes(u32 max_wr, u32 max_sge)
{
	return (KRDMA_RECV_WQE_BYTES + (size_t)max_sge * KRDMA_SGE_BYTES) *
	       max_wr;
}

/*
 * Charge @bytes of queues to the caller's mm, into @charge (empty): 0, or
 * -ENOMEM past RLIMIT_MEMLOCK.  Queues are made by ioctls only, so there
 * is a caller's mm.
 */
int krdma_charge_queues(struct krdma_queue_charge *charge, size_t bytes)
{
	struct mm_struct *mm = current->mm;
	unsigned long npages = DIV_ROUND_UP(bytes, PAGE_SIZE);
	int ret;

	if (WARN_ON_ONCE(charge->mm || !mm))
		return -EINVAL;
	ret = krdma_charge_pinned(mm, npages);
	if (ret)
		return ret;
	mmgrab(mm);
	charge->mm = mm;
	charge->npages = npages;
	return 0;
}

void krdma_uncharge_queues(struct krdma_queue_charge *charge)
{
	if (!charge->mm)
		return;
	krdma_uncharge_pinned(charge->mm, charge->npages);
	mmdrop(charge->mm);
	charge->mm = NULL;
	charge->npages = 0;
}

/*
 * Charge one @type (an HCA object, or handle) on @ibdev to the caller's
 * rdma cgroup, into @charge (empty), as uverbs charges each object and
 * context it makes: 0, or -EAGAIN past the cgroup's rdma.max (-ENOMEM
 * without memory).  The charge stays with that cgroup, also when the task
 * moves or exits.  It must be undone before @ibdev leaves the rdma
 * controller, after the clients' remove(): so while the object's verbs
 * state stands.  May sleep.
 */
int krdma_rdmacg_charge(struct krdma_rdmacg_charge *charge,
			struct ib_device *ibdev,
			enum rdmacg_resource_type type)
{
#if IS_ENABLED(CONFIG_CGROUP_RDMA)
	int ret;

	if (WARN_ON_ONCE(charge->cg))
		return -EINVAL;
	ret = rdmacg_try_charge(&charge->cg, &ibdev->cg_device, type);
	if (ret)
		return ret;
	charge->ibdev = ibdev;
	charge->type = type;
#endif
	return 0;
}

void krdma_rdmacg_uncharge(struct krdma_rdmacg_charge *charge)
{
#if IS_ENABLED(CONFIG_CGROUP_RDMA)
	if (!charge->cg)
		return;
	rdmacg_uncharge(charge->cg, &charge->ibdev->cg_device, charge->type);
	charge->cg = NULL;
	charge->ibdev = NULL;
#endif
}
