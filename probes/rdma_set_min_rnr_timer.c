// SPDX-License-Identifier: GPL-2.0
/* rdma_set_min_rnr_timer(): Linux 5.14 */
#include <rdma/rdma_cm.h>

int krdma_probe(struct rdma_cm_id *id);
int krdma_probe(struct rdma_cm_id *id)
{
	return rdma_set_min_rnr_timer(id, 12);
}
