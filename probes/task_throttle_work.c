// SPDX-License-Identifier: GPL-2.0
/*
 * Task-based CFS bandwidth throttling: a task over its cgroup's cpu.max is
 * throttled on its way back to user space, which a kernel thread never
 * takes: Linux 6.18 (and only with CONFIG_CFS_BANDWIDTH).
 */
#include <linux/sched.h>

bool krdma_probe(struct task_struct *t);
bool krdma_probe(struct task_struct *t)
{
	return t->throttled && t->sched_throttle_work.next;
}
