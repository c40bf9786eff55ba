/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UD address handles (ah.c).
 */
#ifndef KRDMA_AH_H
#define KRDMA_AH_H

#include <rdma/ib_verbs.h>

#include "object.h"

int krdma_ah_get(struct krdma_session *session, u32 handle, struct ib_ah **ah,
		 struct krdma_object **ref);

#endif /* KRDMA_AH_H */
