/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a user's sessions hold, charged to that user (account.c).
 */
#ifndef KRDMA_ACCOUNT_H
#define KRDMA_ACCOUNT_H

#include <linux/cgroup_rdma.h>
#include <linux/types.h>
#include <linux/uidgid.h>

struct ib_device;
struct ib_qp_cap;
struct krdma_session;
struct mm_struct;
struct rdma_cgroup;
struct seq_file;

/* the per-user object count; a session holds a reference */
struct krdma_user;

struct krdma_user *krdma_user_get(kuid_t uid);
void krdma_user_put(struct krdma_user *user);
int krdma_user_charge_object(struct krdma_session *session);
void krdma_user_uncharge_object(struct krdma_session *session);
kuid_t krdma_user_uid(const struct krdma_user *user);
void krdma_users_show(struct seq_file *m);

int krdma_charge_pinned(struct mm_struct *mm, unsigned long npages);
void krdma_uncharge_pinned(struct mm_struct *mm, unsigned long npages);

/**
 * struct krdma_queue_charge - queue memory charged as pinned memory
 * @mm: the mm charged (grabbed), NULL while nothing is
 * @npages: pages charged to @mm
 */
struct krdma_queue_charge {
	struct mm_struct *mm;
	unsigned long npages;
};

size_t krdma_qp_queue_bytes(const struct ib_qp_cap *cap);
size_t krdma_cq_queue_bytes(u32 cqe);
size_t krdma_srq_queue_bytes(u32 max_wr, u32 max_sge);
int krdma_charge_queues(struct krdma_queue_charge *charge, size_t bytes);
void krdma_uncharge_queues(struct krdma_queue_charge *charge);

/**
 * struct krdma_rdmacg_charge - an rdma cgroup resource charged
 * @cg: the cgroup charged, its css referenced; NULL while nothing is
 *	(always, without CONFIG_CGROUP_RDMA)
 * @ibdev: the device it is charged on
 * @type: what is charged: an HCA object, or an HCA handle
 */
struct krdma_rdmacg_charge {
	struct rdma_cgroup *cg;
	struct ib_device *ibdev;
	enum rdmacg_resource_type type;
};

int krdma_rdmacg_charge(struct krdma_rdmacg_charge *charge,
			struct ib_device *ibdev,
			enum rdmacg_resource_type type);
void krdma_rdmacg_uncharge(struct krdma_rdmacg_charge *charge);

#endif /* KRDMA_ACCOUNT_H */
