// SPDX-License-Identifier: GPL-2.0
/*
 * UD address handles (KRDMA_AH_CREATE): where a datagram goes, resolved
 * once from the peer's GID (or LID) on a UD connection's port.
 */
#include <linux/slab.h>

#include "ah.h"
#include "conn.h"
#include "device.h"
#include "ioctl.h"
#include "object.h"

/**
 * struct krdma_ah - an address handle object
 * @obj: the handle
 * @ah: the verbs address handle
 */
struct krdma_ah {
	struct krdma_object obj;
	struct ib_ah *ah;
};

static void krdma_ah_destroy_hw(struct krdma_object *obj)
{
	struct krdma_ah *kah = container_of(obj, struct krdma_ah, obj);
	struct krdma_session *session = obj->session;

	krdma_object_assert_hw_write(obj);
	/*
	 * Dead already (hw_dead, or never published): a POST that checks it
	 * from now on refuses it, and one that found it alive before is
	 * waited for here, until its ib_post_send() has returned.  The
	 * device may still be sending it then: verbs want an AH kept until
	 * the completions of its sends (uapi/krdma.h), and a driver that
	 * looks it up later fails such a send, it does not touch freed
	 * memory (rxe takes a reference by index; hardware copied the AV).
	 */
	down_write(&session->ah_post_rwsem);
	up_write(&session->ah_post_rwsem);
	if (kah->ah)
		rdma_destroy_ah(kah->ah, RDMA_DESTROY_AH_SLEEPABLE);
	kah->ah = NULL;
}

static void krdma_ah_free(struct krdma_object *obj)
{
	kfree(container_of(obj, struct krdma_ah, obj));
}

static const struct krdma_object_ops krdma_ah_ops = {
	.name = "address handle",
	.destroy_pass = 2,
	.destroy_hw = krdma_ah_destroy_hw,
	.free = krdma_ah_free,
};

static int krdma_ah_create_hw(struct krdma_ah *kah,
			      const struct krdma_qp_path *path)
{
	struct krdma_device *kdev = kah->obj.kdev;
	struct rdma_ah_attr attr = {};
	struct krdma_pd *kpd;
	int ret;

	lockdep_assert_held_read(&kdev->usage);
	ret = krdma_qp_set_av(kdev->ibdev, &attr, path);
	if (ret)
		return ret;
	kpd = krdma_pd_get(kah->obj.session, kdev);
	if (IS_ERR(kpd))
		return PTR_ERR(kpd);
	kah->obj.kpd = kpd;
	kah->ah = rdma_create_ah(kpd->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(kah->ah)) {
		ret = PTR_ERR(kah->ah);
		kah->ah = NULL;
		return ret;
	}
	return 0;
}

/* Where the UD connection sends from, and its device. */
static int krdma_ah_source(struct krdma_session *session,
			   const struct krdma_ah_create *cmd,
			   struct krdma_qp_path *path, u32 *dev_index)
{
	struct krdma_conn *conn;
	int ret;

	ret = krdma_conn_get_locked(session, cmd->conn_handle, &conn);
	if (ret)
		return ret;
	if (conn->transport != KRDMA_TRANSPORT_UD)
		ret = -EINVAL;
	path->port_num = conn->port_num;
	path->sgid_index = conn->sgid_index;
	*dev_index = conn->obj.kdev->id;
	krdma_conn_unlock_put(conn);
	return ret;
}

int krdma_ah_create(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_ah_create *cmd = ucmd->cmd;
	struct krdma_qp_path path = { .dest_lid = cmd->dest_lid };
	struct krdma_device *kdev;
	struct krdma_ah *kah;
	u32 dev_index;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved || cmd->dest_lid > U16_MAX)
		return -EINVAL;
	ret = krdma_ah_source(session, cmd, &path, &dev_index);
	if (ret)
		return ret;
	memcpy(path.dgid.raw, cmd->dest_gid, sizeof(path.dgid.raw));

	ret = krdma_device_enter(session, dev_index, &kdev);
	if (ret)
		return ret;
	kah = kzalloc(sizeof(*kah), GFP_KERNEL);
	if (!kah) {
		ret = -ENOMEM;
		goto err_exit;
	}
	ret = krdma_object_init(&kah->obj, session, &krdma_ah_ops);
	if (ret)
		goto err_free;
	kah->obj.kdev = kdev;
	ret = krdma_ah_create_hw(kah, &path);
	if (!ret)
		ret = krdma_object_publish(&kah->obj, &cmd->handle);
	if (ret) {
		krdma_ah_destroy_hw(&kah->obj);
		krdma_device_exit(kdev);
		krdma_object_put(&kah->obj);
		return ret;
	}
	krdma_device_exit(kdev);
	return krdma_object_respond(&kah->obj, ucmd, sizeof(*cmd));

err_free:
	kfree(kah);
err_exit:
	krdma_device_exit(kdev);
	krdma_device_put(kdev);
	return ret;
}

/*
 * The verbs AH behind a handle, for a UD send; takes a reference.  Not the
 * AH's hw lock but the session's ah_post_rwsem keeps the ib_ah: the caller
 * checks the AH is still alive under it, and holds it, until the send is
 * posted (krdma_post_chain()).
 */
int krdma_ah_get(struct krdma_session *session, u32 handle, struct ib_ah **ah,
		 struct krdma_object **ref)
{
	struct krdma_object *obj;
	int ret;

	obj = krdma_object_get(session, handle, &krdma_ah_ops);
	if (!obj)
		return -ENOENT;
	ret = krdma_object_hw_alive(obj);
	if (ret) {
		krdma_object_put(obj);
		return ret;
	}
	*ah = container_of(obj, struct krdma_ah, obj)->ah;
	*ref = obj;
	return 0;
}
