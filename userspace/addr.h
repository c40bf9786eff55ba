/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl: the addresses of rdma_cm connections, parsed from a command
 * line and printed, and the device one is on.  addr.c.
 */
#ifndef KRDMACTL_ADDR_H
#define KRDMACTL_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <krdma.h>

/* "HOST[:PORT]", "[V6]:PORT": 0, or EXIT_USAGE (reported) */
int addr_parse(const char *cmd, const char *what, const char *arg,
	       uint32_t default_port, struct krdma_sockaddr *sa);
void addr_format(const struct krdma_sockaddr *sa, char *buf, size_t len);

struct dev_snapshot;

/* the device of @s that @sa is on (a GID, or its port's netdev) */
bool addr_device(const struct dev_snapshot *s, const struct krdma_sockaddr *sa,
		 uint32_t *dev_index);

#endif /* KRDMACTL_ADDR_H */
