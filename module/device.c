// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device contexts: the ib_client that follows RDMA devices as they come
 * and go, and the kernel PD and CQ krdma keeps on each.
 */
#include <linux/netdevice.h>
#include <linux/rcupdate.h>
#include <linux/rwsem.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "conn.h"
#include "device.h"
#include "object.h"
#include "quirks.h"
#include "trace.h"

static struct ib_client krdma_client;

#define KRDMA_DEFAULT_CQ_DEPTH 128
#define KRDMA_INLINE_PROBE_MAX 4096

/* id -> struct krdma_device of every device between add() and remove() */
static DEFINE_XARRAY_ALLOC(krdma_devices);
static u32 krdma_next_id;
/*
 * Protects krdma_devices and krdma_next_id against add/remove while a
 * walker (a query) uses the devices in it: writers are add() and remove(),
 * readers anyone walking the set.
 */
static DECLARE_RWSEM(krdma_devices_rwsem);
/* contexts allocated and not yet freed, removed devices' included */
static atomic_t krdma_contexts = ATOMIC_INIT(0);

void krdma_devices_lock(void)
{
	down_read(&krdma_devices_rwsem);
}

void krdma_devices_unlock(void)
{
	up_read(&krdma_devices_rwsem);
}

/* Next device at or after *index; caller holds krdma_devices_lock(). */
struct krdma_device *krdma_device_next(unsigned long *index)
{
	lockdep_assert_held_read(&krdma_devices_rwsem);
	return xa_find(&krdma_devices, index, ULONG_MAX, XA_PRESENT);
}

/* The device with this id; caller holds krdma_devices_lock(). */
struct krdma_device *krdma_device_find(u32 id)
{
	lockdep_assert_held_read(&krdma_devices_rwsem);
	return xa_load(&krdma_devices, id);
}

/*
 * Whether a session of @net may see and use @kdev: every device in the
 * RDMA core's shared mode, else only those of its namespace (rdma system
 * set netns exclusive), as uverbs and rdma_cm decide.
 */
bool krdma_device_visible(const struct krdma_device *kdev,
			  const struct net *net)
{
	return rdma_dev_access_netns(kdev->ibdev, net);
}

/*
 * Whether a session of @net may send from the GID @attr: one on a netdev
 * (RoCE, iWARP) must be on one of its namespace, so that no user sends
 * from another namespace's addresses; an InfiniBand GID has no netdev.
 */
bool krdma_gid_visible(const struct ib_gid_attr *attr, const struct net *net)
{
	struct net_device *ndev;
	bool visible;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	visible = IS_ERR(ndev) ? !rcu_access_pointer(attr->ndev) :
				  net_eq(dev_net(ndev), net);
	rcu_read_unlock();
	return visible;
}

/* The devices a session of @net sees. */
unsigned int krdma_devices_count(const struct net *net)
{
	struct krdma_device *kdev;
	unsigned long index;
	unsigned int n = 0;

	krdma_devices_lock();
	xa_for_each(&krdma_devices, index, kdev)
		n += krdma_device_visible(kdev, net);
	krdma_devices_unlock();
	return n;
}

unsigned int krdma_device_contexts(void)
{
	return atomic_read(&krdma_contexts);
}

/*
 * A PD's registration QP state, by name.  Its reg_lock keeps the QP (a
 * failed registration destroys it, the next one makes another), but
 * comes before the device lock we hold: only tried, and a registration
 * in progress, which may hold it for seconds, shows as "busy".
 */
static const char *krdma_pd_reg_state(struct krdma_pd *kpd)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr = {};
	const char *state = "none";

	lockdep_assert_held(&kpd->kdev->lock);	/* keeps kpd on the list */
	if (!mutex_trylock(&kpd->reg_lock))
		return "busy";
	if (kpd->reg_qp)
		state = ib_query_qp(kpd->reg_qp, &attr, IB_QP_STATE, &init) ?
			"unknown" : krdma_qp_state_name(attr.qp_state);
	mutex_unlock(&kpd->reg_lock);
	return state;
}

/*
 * debugfs "devices": each device, the objects on it, and the PD of each
 * session there with the state of its registration QP.
 */
void krdma_devices_show(struct seq_file *m)
{
	struct krdma_device *kdev;
	struct krdma_object *obj;
	struct krdma_pd *kpd;
	unsigned long index;
	unsigned int n;

	krdma_devices_lock();
	xa_for_each(&krdma_devices, index, kdev) {
		mutex_lock(&kdev->lock);
		n = 0;
		list_for_each_entry(obj, &kdev->objects, dev_entry)
			n++;
		seq_printf(m, "device %u name %s objects %u\n", kdev->id,
			   dev_name(&kdev->ibdev->dev), n);
		list_for_each_entry(kpd, &kdev->pds, dev_entry)
			seq_printf(m, "    pd session %u reg_qp %s\n",
				   kpd->session->id, krdma_pd_reg_state(kpd));
		mutex_unlock(&kdev->lock);
	}
	krdma_devices_unlock();
}

/*
 * Inline data is a QP capability the device attributes do not carry: find
 * the largest size a one-SGE RC QP can be created with, by bisection.
 */
static bool krdma_try_inline(struct krdma_device *kdev, u32 inline_size,
			     u32 *granted)
{
	struct ib_qp_init_attr attr = {
		.send_cq = kdev->cq,
		.recv_cq = kdev->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = inline_size,
		},
	};
	struct ib_qp *qp;

	qp = ib_create_qp(kdev->pd, &attr);
	if (IS_ERR(qp))
		return false;
	*granted = attr.cap.max_inline_data;
	ib_destroy_qp(qp);
	return true;
}

static void krdma_probe_inline(struct krdma_device *kdev)
{
	u32 lo = 0, hi = KRDMA_INLINE_PROBE_MAX, granted = 0;

	if (!krdma_try_inline(kdev, 0, &granted))
		return;
	kdev->max_inline_data = granted;
	while (lo < hi) {
		u32 mid = lo + (hi - lo + 1) / 2;

		if (krdma_try_inline(kdev, mid, &granted)) {
			lo = mid;
			kdev->max_inline_data = max(granted, mid);
		} else {
			hi = mid - 1;
		}
	}
}

static void krdma_device_free(struct kref *kref)
{
	struct krdma_device *kdev = container_of(kref, struct krdma_device, kref);

	/* krdma_device_enter_ib() may still look at it under RCU */
	kfree_rcu(kdev, rcu);
	atomic_dec(&krdma_contexts);
}

/* Whether a SEND_WITH_INV arriving on @kdev may revoke a key of another PD. */
bool krdma_device_inv_crosses_pd(const struct krdma_device *kdev)
{
	return krdma_quirk(kdev->ibdev, KRDMA_QUIRK_INV_CROSSES_PD);
}

void krdma_device_put(struct krdma_device *kdev)
{
	kref_put(&kdev->kref, krdma_device_free);
}

/*
 * Find a device @session may use and hold off its removal while an object
 * is built on it: returns with a reference and the usage lock, undone by
 * krdma_device_exit() (the lock) and krdma_device_put() (the reference,
 * unless an object took it over).  A device of another namespace is
 * -ENODEV, as one that does not exist.
 */
int krdma_device_enter(const struct krdma_session *session, u32 id,
		       struct krdma_device **kdevp)
{
	struct krdma_device *kdev;

	krdma_devices_lock();
	kdev = krdma_device_find(id);
	if (kdev && !krdma_device_visible(kdev, session->net))
		kdev = NULL;
	if (kdev) {
		kref_get(&kdev->kref);
		down_read(&kdev->usage);
	}
	krdma_devices_unlock();
	if (!kdev)
		return -ENODEV;
	*kdevp = kdev;
	return 0;
}

/*
 * The same, by the ib_device an rdma_cm id resolved to.  rdma_cm handlers
 * call this, and removal destroys rdma_cm ids (waiting for their handlers)
 * with the usage lock held for write: so it only tries the lock, and a
 * device on its way out answers -ENODEV instead of being waited for.  The
 * client data lookup takes no lock either; the context is freed after an
 * RCU grace period, and a zero kref means removal is done with it.
 */
int krdma_device_enter_ib(struct ib_device *ibdev,
			  struct krdma_device **kdevp)
{
	struct krdma_device *kdev;

	rcu_read_lock();
	kdev = ib_get_client_data(ibdev, &krdma_client);
	if (kdev && !kref_get_unless_zero(&kdev->kref))
		kdev = NULL;
	rcu_read_unlock();
	if (!kdev)
		return -ENODEV;
	if (!down_read_trylock(&kdev->usage))
		goto err_put;
	if (kdev->dead) {
		up_read(&kdev->usage);
		goto err_put;
	}
	*kdevp = kdev;
	return 0;

err_put:
	krdma_device_put(kdev);
	return -ENODEV;
}

void krdma_device_exit(struct krdma_device *kdev)
{
	up_read(&kdev->usage);
}

static int krdma_add_one(struct ib_device *ibdev)
{
	struct krdma_device *kdev;
	int ret;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev) {
		ret = -ENOMEM;
		goto err_log;
	}
	atomic_inc(&krdma_contexts);
	kref_init(&kdev->kref);
	kdev->ibdev = ibdev;
	init_rwsem(&kdev->usage);
	sema_init(&kdev->reg_slots, KRDMA_DEFAULT_CQ_DEPTH);
	mutex_init(&kdev->lock);
	INIT_LIST_HEAD(&kdev->objects);
	INIT_LIST_HEAD(&kdev->pds);

	kdev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(kdev->pd)) {
		ret = PTR_ERR(kdev->pd);
		goto err_free;
	}
	kdev->cq = ib_alloc_cq(ibdev, kdev, KRDMA_DEFAULT_CQ_DEPTH, 0,
			       IB_POLL_WORKQUEUE);
	if (IS_ERR(kdev->cq)) {
		ret = PTR_ERR(kdev->cq);
		goto err_pd;
	}
	krdma_probe_inline(kdev);

	down_write(&krdma_devices_rwsem);
	ret = xa_alloc_cyclic(&krdma_devices, &kdev->id, kdev, xa_limit_31b,
			      &krdma_next_id, GFP_KERNEL);
	up_write(&krdma_devices_rwsem);
	if (ret < 0)
		goto err_cq;

	ib_set_client_data(ibdev, &krdma_client, kdev);
	ibdev_info(ibdev, "krdma: added as device %u\n", kdev->id);
	trace_krdma_device_add(ibdev, kdev->id);
	return 0;

err_cq:
	ib_free_cq(kdev->cq);
err_pd:
	ib_dealloc_pd(kdev->pd);
err_free:
	krdma_device_put(kdev);
err_log:
	/* no errno reaches a user: the device is just not listed */
	ibdev_warn(ibdev, "krdma: not added (%d): its users will not see it\n",
		   ret);
	return ret;
}

/*
 * Kill the verbs state of the device's objects of one destroy pass.  The
 * device lock is dropped around each kill: destroying an rdma_cm id waits
 * for its handlers, and a handler may publish an object (taking the lock).
 * A DESTROY racing with us unlinks the object only after its own kill, so
 * an object of this pass that is being destroyed is still found here, and
 * krdma_object_kill_hw() waits for it: the passes keep their order.
 */
static unsigned int krdma_device_kill_pass(struct krdma_device *kdev,
					   int pass)
{
	struct krdma_object *obj, *next;
	unsigned int killed = 0;
	LIST_HEAD(doomed);

	lockdep_assert_held_write(&kdev->usage);
	mutex_lock(&kdev->lock);
	list_for_each_entry_safe(obj, next, &kdev->objects, dev_entry)
		if (obj->ops->destroy_pass == pass)
			list_move_tail(&obj->dev_entry, &doomed);
	while (!list_empty(&doomed)) {
		obj = list_first_entry(&doomed, struct krdma_object, dev_entry);
		list_del_init(&obj->dev_entry);
		/* a linked object still has its destroyer's reference */
		krdma_object_get_ref(obj);
		mutex_unlock(&kdev->lock);
		if (obj->ops->device_removal)
			obj->ops->device_removal(obj);
		krdma_object_kill_hw(obj);
		krdma_object_put(obj);
		killed++;
		mutex_lock(&kdev->lock);
	}
	mutex_unlock(&kdev->lock);
	return killed;
}

/*
 * Destroy the verbs state of every object on the device, users first, then
 * the sessions' PDs they lived in; how many objects there were.  Holding
 * the usage lock for write keeps new objects out (krdma_device_enter_ib()
 * gives up on it).
 */
static unsigned int krdma_device_kill_objects(struct krdma_device *kdev)
{
	unsigned int killed = 0;
	struct krdma_pd *kpd;
	int pass;

	WRITE_ONCE(kdev->removing, true);
	down_write(&kdev->usage);
	mutex_lock(&kdev->lock);
	kdev->dead = true;
	mutex_unlock(&kdev->lock);
	for (pass = 0; pass < KRDMA_OBJECT_PASSES; pass++)
		killed += krdma_device_kill_pass(kdev, pass);
	mutex_lock(&kdev->lock);
	list_for_each_entry(kpd, &kdev->pds, dev_entry)
		krdma_pd_kill(kpd);
	mutex_unlock(&kdev->lock);
	up_write(&kdev->usage);
	return killed;
}

static void krdma_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct krdma_device *kdev = client_data;
	unsigned int killed;

	/* Once erased no new user can find the device. */
	down_write(&krdma_devices_rwsem);
	xa_erase(&krdma_devices, kdev->id);
	up_write(&krdma_devices_rwsem);

	killed = krdma_device_kill_objects(kdev);
	/* the iWARP registration QPs use the device's CQ */
	krdma_pd_flush();
	trace_krdma_device_remove(ibdev, kdev->id, killed);
	ibdev_info(ibdev, "krdma: device %u removed, %u objects of its users destroyed\n",
		   kdev->id, killed);
	krdma_cq_quiesce(ibdev);	/* ib_alloc_cq() armed it */
	ib_free_cq(kdev->cq);
	ib_dealloc_pd(kdev->pd);
	kdev->ibdev = NULL;
	/*
	 * The core forgets the client data only after we return: an rdma_cm
	 * handler (krdma_device_enter_ib()) must not find the context once
	 * the put below may have freed it.
	 */
	ib_set_client_data(ibdev, &krdma_client, NULL);
	krdma_device_put(kdev);
}

static struct ib_client krdma_client = {
	.name = "krdma",
	.add = krdma_add_one,
	.remove = krdma_remove_one,
};

int krdma_devices_init(void)
{
	int ret = krdma_pd_init();

	if (ret)
		return ret;
	ret = ib_register_client(&krdma_client);
	if (ret)
		krdma_pd_exit();
	return ret;
}

void krdma_devices_exit(void)
{
	ib_unregister_client(&krdma_client);
	WARN_ON(!xa_empty(&krdma_devices));
	krdma_pd_exit();
}
