// SPDX-License-Identifier: GPL-2.0
/* ib_device_get_netdev() exported: in 6.12, not yet in 6.1 */
#include <rdma/ib_verbs.h>

struct net_device *krdma_probe(struct ib_device *dev);
struct net_device *krdma_probe(struct ib_device *dev)
{
	return ib_device_get_netdev(dev, 1);
}
