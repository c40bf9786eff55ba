// SPDX-License-Identifier: GPL-2.0
/* memset_startat(): Linux 5.17 */
#include <linux/list.h>
#include <linux/string.h>

void krdma_probe(struct list_head *l);
void krdma_probe(struct list_head *l)
{
	memset_startat(l, 0, prev);
}
