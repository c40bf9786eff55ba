// SPDX-License-Identifier: GPL-2.0
/*
 * UD address handles (KRDMA_AH_CREATE): where a datagram goes, resolved
 * once from the peer's GID (or LID) on a UD connection's port.
 */
#include <linux/slab.h>

#include "krdma_priv.h"

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
	.destroy_pass = 1,
	.destroy_hw = krdma_ah_destroy_hw,
	.free = krdma_ah_free,
};

static int krdma_ah_create_hw(struct krdma_ah *kah, struct krdma_conn *conn,
			      const struct krdma_ah_create *cmd)
{
	struct krdma_qp_path path = {
		.port_num = conn->port_num,
		.sgid_index = conn->sgid_index,
		.dest_lid = cmd->dest_lid,
	};
	struct rdma_ah_attr attr = {};

	memcpy(path.dgid.raw, cmd->dest_gid, sizeof(path.dgid.raw));
	krdma_qp_set_av(conn->obj.kdev->ibdev, &attr, &path);
	kah->ah = rdma_create_ah(conn->obj.kdev->pd, &attr,
				 RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(kah->ah)) {
		int ret = PTR_ERR(kah->ah);

		kah->ah = NULL;
		return ret;
	}
	return 0;
}

int krdma_ah_create(struct krdma_session *session, struct krdma_ucmd *ucmd)
{
	struct krdma_ah_create *cmd = ucmd->cmd;
	struct krdma_conn *conn;
	struct krdma_ah *kah;
	int ret;

	if (cmd->flags)
		return -EOPNOTSUPP;
	if (cmd->__reserved)
		return -EINVAL;
	ret = krdma_conn_get(session, cmd->conn_handle, &conn);
	if (ret)
		return ret;
	if (conn->transport != KRDMA_TRANSPORT_UD) {
		ret = -EINVAL;
		goto out_conn;
	}
	kah = kzalloc(sizeof(*kah), GFP_KERNEL);
	if (!kah) {
		ret = -ENOMEM;
		goto out_conn;
	}
	krdma_object_init(&kah->obj, session, &krdma_ah_ops);
	kref_get(&conn->obj.kdev->kref);
	kah->obj.kdev = conn->obj.kdev;
	/* The connection's hw lock keeps the device from going meanwhile. */
	ret = krdma_ah_create_hw(kah, conn, cmd);
	if (!ret)
		ret = krdma_object_publish(&kah->obj);
	if (ret) {
		krdma_ah_destroy_hw(&kah->obj);
		krdma_object_put(&kah->obj);
		goto out_conn;
	}
	cmd->handle = kah->obj.handle;
	ret = krdma_ucmd_respond(ucmd, sizeof(*cmd));
out_conn:
	krdma_conn_put(conn);
	return ret;
}

/* The verbs AH behind a handle, for a UD send; takes a reference. */
int krdma_ah_get(struct krdma_session *session, u32 handle, struct ib_ah **ah,
		 struct krdma_object **ref)
{
	struct krdma_object *obj;

	obj = krdma_object_get(session, handle, &krdma_ah_ops);
	if (!obj)
		return -ENOENT;
	if (krdma_object_lock_hw(obj)) {
		krdma_object_put(obj);
		return -ENODEV;
	}
	*ah = container_of(obj, struct krdma_ah, obj)->ah;
	krdma_object_unlock_hw(obj);
	*ref = obj;
	return 0;
}
