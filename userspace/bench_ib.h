/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl bench: which device, port, GID and MTU a run uses (perftest's
 * -d, -i, -x, -m) and the addresses of its QPs (perftest's "local
 * address" and "remote address" lines).  bench_ib.c.
 */
#ifndef KRDMACTL_BENCH_IB_H
#define KRDMACTL_BENCH_IB_H

#include <stdbool.h>
#include <stdint.h>

#include <krdma.h>

/* What the command line asked for: NULL, 0 or -1 when it did not. */
struct bench_ib_want {
	const char *dev;	/* -d */
	uint32_t port;		/* -i */
	int gid_index;		/* -x */
	uint32_t mtu;		/* -m */
};

/* One connection's two ends, as krdma knows them. */
struct bench_ib_ends {
	uint32_t dev_index;
	uint32_t port;
	uint32_t link_layer;	/* KRDMA_LINK_LAYER_* */
	uint32_t lid;
	uint32_t qpn;
	uint32_t rqpn;
	uint32_t psn;		/* the PSN the QP sends next */
	uint32_t rpsn;		/* the PSN it expects next from the peer */
	bool have_psn;		/* RC, UC, not iWARP (else both are 0) */
	bool iwarp;		/* the device is an RNIC */
	uint32_t path_mtu;
	bool have_gid, have_rgid;
	uint8_t gid[16];
	uint8_t rgid[16];
};

/*
 * Before connecting to @dst: the source address that puts the connection
 * on -d's device (and -i's port, -x's GID), or family 0 (routing's
 * choice).  0, or 1 said.
 */
int bench_ib_source(int fd, const struct bench_ib_want *w,
		    const struct krdma_sockaddr *dst,
		    struct krdma_sockaddr *src);

/*
 * A server's listening address for -d (port @port; the any-address
 * without -d) and the device it serves, *@dev_index (the first device
 * without -d).  0, or 1 said.
 */
int bench_ib_listen(int fd, const struct bench_ib_want *w, uint16_t port,
		    struct krdma_sockaddr *addr, uint32_t *dev_index);

/*
 * After connecting: @handle (QP @qp_num on device @dev_index, from @src
 * or the source routing chose, to @dst) against what @w asked for; fills
 * @e.  0, or 1 said (the run must not go on).
 */
int bench_ib_check(int fd, const struct bench_ib_want *w, uint32_t handle,
		   uint32_t dev_index, uint32_t qp_num,
		   const struct krdma_sockaddr *src,
		   const struct krdma_sockaddr *dst, struct bench_ib_ends *e);

/* The "local address" and "remote address" lines (JSON: "addresses"). */
void bench_ib_print(const struct bench_ib_ends *e, uint32_t n);
int bench_ib_conn_dev(int fd, uint32_t handle, uint32_t *dev_index);

#endif /* KRDMACTL_BENCH_IB_H */
