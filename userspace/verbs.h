/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdmactl: the data path's calls every command makes: a buffer allocated
 * and mmap()ed, work requests posted, completions polled, CM events
 * taken, an object destroyed.  verbs.c.
 */
#ifndef KRDMACTL_VERBS_H
#define KRDMACTL_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <krdma.h>

/* A kernel buffer mmap()ed; returns 0 or -errno (reported). */
struct verbs_buf {
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	uint64_t addr;
	uint64_t length;
	uint8_t *mem;
	size_t map_len;
};

int verbs_buf_alloc(int fd, uint32_t dev_index, uint32_t access,
		    uint64_t length, struct verbs_buf *b);
int verbs_buf_reg_huge(int fd, uint32_t dev_index, uint32_t access,
		       uint64_t length, struct verbs_buf *b);
void verbs_buf_free(int fd, struct verbs_buf *b);
int verbs_post_one(int fd, uint32_t conn, const struct krdma_wr *wr);
int verbs_post_recv(int fd, uint32_t conn, uint64_t wr_id, uint32_t buf,
		    uint64_t offset, uint32_t length);
int verbs_destroy(int fd, uint32_t handle);
/* KRDMA_POLL, KRDMA_GET_EVENTS: how many came, or -errno (not reported) */
int verbs_poll(int fd, uint32_t conn, struct krdma_wc *wcs, uint32_t max,
	       uint32_t timeout_ms);
int verbs_get_events(int fd, struct krdma_event *evs, uint32_t max,
		     uint32_t timeout_ms);

#endif /* KRDMACTL_VERBS_H */
