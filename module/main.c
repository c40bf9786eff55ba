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
#include <linux/moduleparam.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "buf.h"
#include "conn.h"
#include "device.h"
#include "event.h"
#include "ioctl.h"
#include "krdma_version.h"
#include "object.h"
#include "sessions.h"
#include "srq.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/* Any command's struct; the kernel copy of the caller's argument. */
union krdma_cmd_buffer {
	struct krdma_info info;
	struct krdma_query_devices query_devices;
	struct krdma_destroy destroy;
	struct krdma_buf_alloc buf_alloc;
	struct krdma_buf_rw buf_rw;
	struct krdma_buf_reg_user buf_reg_user;
	struct krdma_conn_create conn_create;
	struct krdma_conn_modify conn_modify;
	struct krdma_conn_query conn_query;
	struct krdma_post post;
	struct krdma_poll poll;
	struct krdma_ah_create ah_create;
	struct krdma_get_events get_events;
	struct krdma_cm_listen cm_listen;
	struct krdma_cm_connect cm_connect;
	struct krdma_cm_accept cm_accept;
	struct krdma_cm_disconnect cm_disconnect;
	struct krdma_srq_create srq_create;
	struct krdma_bench bench;
	struct krdma_query_sessions query_sessions;
};

/*
 * @handle_off: where the struct's handle is, plus one (0: it has none):
 * what the exit tracepoint names, the handle made or used
 */
struct krdma_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	unsigned int handle_off;
	int (*execute)(struct krdma_session *session, struct krdma_ucmd *ucmd);
};

#define KRDMA_IOCTL_OP_AT(_ioctl, _fn, _struct, _last, _handle_off)	\
	{								\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union krdma_cmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.handle_off = _handle_off,				\
		.execute = _fn,						\
	}

#define KRDMA_IOCTL_OP(_ioctl, _fn, _struct, _last)			\
	KRDMA_IOCTL_OP_AT(_ioctl, _fn, _struct, _last, 0)

/* A command whose struct names an object by its handle */
#define KRDMA_IOCTL_OP_H(_ioctl, _fn, _struct, _last)			\
	KRDMA_IOCTL_OP_AT(_ioctl, _fn, _struct, _last,			\
			  offsetof(_struct, handle) + 1)

/* Commands this build implements; the others answer -ENOTTY. */
static const struct krdma_ioctl_op krdma_ioctl_ops[] = {
	[KRDMA_CMD_GET_INFO - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_GET_INFO, krdma_get_info,
			       struct krdma_info, module_version),
	[KRDMA_CMD_QUERY_DEVICES - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_QUERY_DEVICES, krdma_query_devices,
			       struct krdma_query_devices, gids_uptr),
	[KRDMA_CMD_DESTROY - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_DESTROY, krdma_destroy,
				 struct krdma_destroy, __reserved),
	[KRDMA_CMD_BUF_ALLOC - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_BUF_ALLOC, krdma_buf_alloc,
				 struct krdma_buf_alloc, mmap_offset),
	[KRDMA_CMD_BUF_REG_USER - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_BUF_REG_USER, krdma_buf_reg_user,
				 struct krdma_buf_reg_user, addr),
	[KRDMA_CMD_BUF_RW - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_BUF_RW, krdma_buf_rw,
				 struct krdma_buf_rw, data_uptr),
	[KRDMA_CMD_CONN_CREATE - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CONN_CREATE, krdma_conn_create,
				 struct krdma_conn_create, gid),
	[KRDMA_CMD_CONN_MODIFY - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CONN_MODIFY, krdma_conn_modify,
				 struct krdma_conn_modify, __reserved),
	[KRDMA_CMD_CONN_QUERY - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CONN_QUERY, krdma_conn_query,
				 struct krdma_conn_query, __reserved),
	[KRDMA_CMD_POST - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_POST, krdma_post, struct krdma_post,
				 wrs_uptr),
	[KRDMA_CMD_POLL - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_POLL, krdma_poll, struct krdma_poll,
				 wcs_uptr),
	[KRDMA_CMD_AH_CREATE - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_AH_CREATE, krdma_ah_create,
				 struct krdma_ah_create, __reserved),
	[KRDMA_CMD_GET_EVENTS - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_GET_EVENTS, krdma_get_events,
			       struct krdma_get_events, events_uptr),
	[KRDMA_CMD_CM_LISTEN - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CM_LISTEN, krdma_cm_listen,
				 struct krdma_cm_listen, port),
	[KRDMA_CMD_CM_CONNECT - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CM_CONNECT, krdma_cm_connect,
				 struct krdma_cm_connect, reject_reason),
	[KRDMA_CMD_CM_ACCEPT - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CM_ACCEPT, krdma_cm_accept,
				 struct krdma_cm_accept, private_data),
	[KRDMA_CMD_CM_REJECT - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CM_REJECT, krdma_cm_reject,
				 struct krdma_cm_accept, private_data),
	[KRDMA_CMD_CM_DISCONNECT - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_CM_DISCONNECT, krdma_cm_disconnect,
				 struct krdma_cm_disconnect, __reserved),
	[KRDMA_CMD_SRQ_CREATE - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP_H(KRDMA_SRQ_CREATE, krdma_srq_create,
				 struct krdma_srq_create, handle),
	[KRDMA_CMD_BENCH - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_BENCH, krdma_bench, struct krdma_bench,
			       failed_conn),
	[KRDMA_CMD_QUERY_SESSIONS - KRDMA_CMD_BASE] =
		KRDMA_IOCTL_OP(KRDMA_QUERY_SESSIONS, krdma_query_sessions,
			       struct krdma_query_sessions, conns_uptr),
};

/* Copy the kernel's answer back, no more than the caller's struct holds. */
int krdma_ucmd_respond(struct krdma_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

/*
 * Copy n entries of ksize bytes to an array of usize-byte entries: the
 * shorter of the two per entry, zeroes past the kernel's struct.
 */
int krdma_copy_entries(u64 uptr, u32 usize, const void *src, size_t ksize,
		       u32 n)
{
	void __user *dst = u64_to_user_ptr(uptr);
	size_t len = min_t(size_t, usize, ksize);
	u32 i;

	for (i = 0; i < n; i++, dst += usize, src += ksize) {
		if (copy_to_user(dst, src, len))
			return -EFAULT;
		if (usize > ksize && clear_user(dst + ksize, usize - ksize))
			return -EFAULT;
	}
	return 0;
}

/* The command's struct, of the size the caller says, in; and run it. */
static int krdma_ioctl_run(struct krdma_session *session,
			   const struct krdma_ioctl_op *op,
			   struct krdma_ucmd *ucmd, u32 *handle)
{
	union krdma_cmd_buffer buf;
	int ret;

	if (ucmd->user_size < op->min_size)
		return -EINVAL;
	if (ucmd->user_size > KRDMA_MAX_CMD_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(&buf, op->size, ucmd->ubuffer,
				    ucmd->user_size);
	if (ret)
		return ret;
	ucmd->cmd = &buf;
	ret = op->execute(session, ucmd);
	if (op->handle_off)
		*handle = *(u32 *)((char *)&buf + op->handle_off - 1);
	return ret;
}

static long krdma_fops_ioctl(struct file *filp, unsigned int cmd,
			     unsigned long arg)
{
	struct krdma_session *session = filp->private_data;
	const struct krdma_ioctl_op *op;
	struct krdma_ucmd ucmd = {};
	unsigned int nr = _IOC_NR(cmd);
	u32 handle = 0;
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
	trace_krdma_ioctl_enter(session->id, nr, ucmd.user_size);
	ret = krdma_ioctl_run(session, op, &ucmd, &handle);
	trace_krdma_ioctl_exit(session->id, nr, handle, ret);
	return ret;
}

static int krdma_fops_open(struct inode *inode, struct file *filp)
{
	struct krdma_session *session;

	session = krdma_session_create();
	if (!session)
		return -ENOMEM;
	filp->private_data = session;
	return nonseekable_open(inode, filp);
}

static int krdma_fops_release(struct inode *inode, struct file *filp)
{
	krdma_session_destroy(filp->private_data);
	return 0;
}

/*
 * Readable while an event waits or an interrupt-driven connection has
 * completions.
 */
static __poll_t krdma_fops_poll(struct file *filp, poll_table *wait)
{
	struct krdma_session *session = filp->private_data;

	poll_wait(filp, &session->wait, wait);
	if (atomic_read(&session->ready_conns) ||
	    krdma_events_pending(session))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static int krdma_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return krdma_buf_mmap(filp->private_data, vma);
}

static const struct file_operations krdma_fops = {
	.owner = THIS_MODULE,
	.open = krdma_fops_open,
	.release = krdma_fops_release,
	.unlocked_ioctl = krdma_fops_ioctl,
	.poll = krdma_fops_poll,
	.mmap = krdma_fops_mmap,
	.compat_ioctl = compat_ptr_ioctl,
};

/*
 * The mode devtmpfs gives /dev/krdma, in octal as chmod takes it: root's
 * alone by default, the administrator's to open (60-krdma.rules gives it
 * to the krdma group; dev_mode=0666 to everyone).  Only read and write
 * bits: nothing executes or sets ids through a device node.
 */
static umode_t krdma_dev_mode = 0600;

static int krdma_dev_mode_set(const char *val, const struct kernel_param *kp)
{
	unsigned int mode;
	int ret;

	ret = kstrtouint(val, 8, &mode);
	if (ret)
		return ret;
	if (mode & ~0666) {
		pr_err("krdma: dev_mode %#o: only read and write bits (0666)\n",
		       mode);
		return -EINVAL;
	}
	*(umode_t *)kp->arg = mode;
	return 0;
}

static int krdma_dev_mode_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%04o\n", *(umode_t *)kp->arg);
}

static const struct kernel_param_ops krdma_dev_mode_ops = {
	.set = krdma_dev_mode_set,
	.get = krdma_dev_mode_get,
};
module_param_cb(dev_mode, &krdma_dev_mode_ops, &krdma_dev_mode, 0444);
MODULE_PARM_DESC(dev_mode,
		 "mode of /dev/krdma, octal (default 0600: root only)");

static struct miscdevice krdma_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "krdma",
	.fops = &krdma_fops,
};

static int __init krdma_init(void)
{
	int ret;

	ret = krdma_devices_init();
	if (ret)
		return ret;
	krdma_misc.mode = krdma_dev_mode;
	ret = misc_register(&krdma_misc);
	if (ret)
		goto err_devices;
	krdma_debugfs_init();
	return 0;

err_devices:
	krdma_devices_exit();
	return ret;
}

static void __exit krdma_exit(void)
{
	krdma_debugfs_exit();
	misc_deregister(&krdma_misc);
	krdma_devices_exit();
}

module_init(krdma_init);
module_exit(krdma_exit);

MODULE_DESCRIPTION("krdma: RDMA transfers through in-kernel verbs");
MODULE_LICENSE("GPL");
MODULE_VERSION(KRDMA_VERSION);
