// SPDX-License-Identifier: GPL-2.0
/*
 * krdma: /dev/krdma and its ioctl dispatch.
 *
 * The dispatch follows drivers/iommu/iommufd/main.c: one table entry per
 * command with the size of its struct, copy_struct_from_user() for the
 * size/tail rules, and each handler checking its own flags and reserved
 * fields.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "krdma_priv.h"

/* Any command's struct; the kernel copy of the caller's argument. */
union krdma_cmd_buffer {
	struct krdma_info info;
	struct krdma_query_devices query_devices;
};

struct krdma_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	int (*execute)(struct krdma_ucmd *ucmd);
};

#define KRDMA_IOCTL_OP(_ioctl, _fn, _struct, _last)			\
	{								\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union krdma_cmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.execute = _fn,						\
	}

/* Commands this build implements; the others answer -ENOTTY. */
static const struct krdma_ioctl_op krdma_ioctl_ops[] = {
	[KRDMA_CMD_GET_INFO - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_GET_INFO, krdma_get_info,
			       struct krdma_info, module_version),
	[KRDMA_CMD_QUERY_DEVICES - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_QUERY_DEVICES, krdma_query_devices,
			       struct krdma_query_devices, gids_uptr),
};

/* Copy the kernel's answer back, no more than the caller's struct holds. */
int krdma_ucmd_respond(struct krdma_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

static long krdma_fops_ioctl(struct file *filp, unsigned int cmd,
			     unsigned long arg)
{
	const struct krdma_ioctl_op *op;
	union krdma_cmd_buffer buf;
	struct krdma_ucmd ucmd = {};
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (nr < KRDMA_CMD_BASE ||
	    nr - KRDMA_CMD_BASE >= ARRAY_SIZE(krdma_ioctl_ops))
		return -ENOTTY;
	op = &krdma_ioctl_ops[nr - KRDMA_CMD_BASE];
	if (op->ioctl_num != cmd)
		return -ENOTTY;

	ucmd.ubuffer = (void __user *)arg;
	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
				    ucmd.user_size);
	if (ret)
		return ret;
	ucmd.cmd = &buf;
	return op->execute(&ucmd);
}

static int krdma_fops_open(struct inode *inode, struct file *filp)
{
	return nonseekable_open(inode, filp);
}

static int krdma_fops_release(struct inode *inode, struct file *filp)
{
	return 0;
}

static const struct file_operations krdma_fops = {
	.owner = THIS_MODULE,
	.open = krdma_fops_open,
	.release = krdma_fops_release,
	.unlocked_ioctl = krdma_fops_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/*
 * Mode 0666, as rdma-core's udev rules give /dev/infiniband/uverbs*: the
 * queries are harmless, and every command that pins memory or reaches the
 * wire does its own RLIMIT_MEMLOCK and capability checks.
 */
static struct miscdevice krdma_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "krdma",
	.fops = &krdma_fops,
	.mode = 0666,
};

static int __init krdma_init(void)
{
	int ret;

	ret = krdma_devices_init();
	if (ret)
		return ret;
	ret = misc_register(&krdma_misc);
	if (ret)
		goto err_devices;
	return 0;

err_devices:
	krdma_devices_exit();
	return ret;
}

static void __exit krdma_exit(void)
{
	misc_deregister(&krdma_misc);
	krdma_devices_exit();
}

module_init(krdma_init);
module_exit(krdma_exit);

MODULE_DESCRIPTION("krdma: RDMA transfers through in-kernel verbs");
MODULE_LICENSE("GPL");
MODULE_VERSION(KRDMA_MODULE_VERSION);
