// SPDX-License-Identifier: GPL-2.0
/* kthread_complete_and_exit(): Linux 5.17 (complete_and_exit() before) */
#include <linux/kthread.h>

void krdma_probe(struct completion *c);
void krdma_probe(struct completion *c)
{
	kthread_complete_and_exit(c, 0);
}
