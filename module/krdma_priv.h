/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma internal definitions: per-device contexts and the ioctl plumbing.
 */
#ifndef KRDMA_PRIV_H
#define KRDMA_PRIV_H

#include <linux/kref.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "krdma.h"

#define KRDMA_MODULE_VERSION "0.2.0"

/**
 * struct krdma_device - what krdma keeps for one RDMA device
 * @kref: memory lifetime; the ib_client holds one reference until remove()
 * @ibdev: the RDMA device; valid until remove() returns
 * @pd: the kernel protection domain every krdma object on the device uses
 * @cq: the device's default completion queue
 * @id: krdma's device id (&struct krdma_device_info.dev_index); ids are
 *	allocated cyclically so a removed device's id is not handed out again
 *	soon
 * @max_inline_data: inline bytes a one-SGE RC QP could be created with
 */
struct krdma_device {
	struct kref kref;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u32 id;
	u32 max_inline_data;
};

extern struct ib_client krdma_client;

int krdma_devices_init(void);
void krdma_devices_exit(void);

/*
 * Walking the devices: krdma_devices_lock() holds off add and remove, so a
 * walk sees one consistent set and every ibdev in it stays usable.
 */
void krdma_devices_lock(void);
void krdma_devices_unlock(void);
struct krdma_device *krdma_device_next(unsigned long *index);
struct krdma_device *krdma_device_find(u32 id);
unsigned int krdma_devices_count(void);
unsigned int krdma_device_contexts(void);

/**
 * struct krdma_ucmd - one ioctl being executed
 * @ubuffer: the caller's struct
 * @user_size: the caller's idea of its size
 * @cmd: the kernel copy, zero-extended to the kernel's struct size
 */
struct krdma_ucmd {
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int krdma_ucmd_respond(struct krdma_ucmd *ucmd, size_t cmd_len);

int krdma_get_info(struct krdma_ucmd *ucmd);
int krdma_query_devices(struct krdma_ucmd *ucmd);

#endif /* KRDMA_PRIV_H */
