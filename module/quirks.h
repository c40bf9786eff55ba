/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What krdma knows of particular drivers, in one place.
 *
 * Everything else asks a device what it can do (its attributes, its
 * port's protocol), never which driver it is; a driver is named here
 * only for a defect measured in it that no attribute shows, each with
 * the measurement.  A caller asks krdma_quirk() about a defect, not
 * about a driver.
 */
#ifndef KRDMA_QUIRKS_H
#define KRDMA_QUIRKS_H

#include <rdma/ib_verbs.h>

/**
 * enum krdma_quirk - a driver defect krdma works around
 * @KRDMA_QUIRK_MR_SPARE_SLOT: an MR allocated for a multiple of 256 pages
 *	needs one page slot more.  rxe before 6.4 keeps an MR's pages in maps
 *	of 256 (RXE_BUF_PER_MAP) and rxe_mr_copy() steps to the next map's
 *	pointer after a copy ends on the last slot of a map: with a last map
 *	that is full, that reads past the map array (KASAN: slab-out-of-
 *	bounds).  A spare slot keeps one more map allocated there; later rxe
 *	(an xarray of pages) neither needs nor minds it.
 * @KRDMA_QUIRK_INV_CROSSES_PD: a SEND_WITH_INV arriving on the device may
 *	revoke a key of another PD.  rxe's responder finds the MR by the
 *	key's index alone (rxe_invalidate_mr() checks key, type and bound
 *	windows, never the QP's PD), so there a SEND_WITH_INV between two of
 *	one user's connections revokes any MR of the device: other sessions',
 *	a kernel ULP's.
 * @KRDMA_QUIRK_SEND_SGE_ORDER: a send or RDMA WRITE gathers an SGE right
 *	only from a later place in the previous SGE's MR, or after an SGE
 *	that ends in its MR's first page-list entry.  siw_tx_hdt() looks each
 *	page of an SGE up in its MR's page list from the entry where the
 *	previous SGE's pages ended (pbl_idx is not reset at the next SGE),
 *	and siw_pbl_get_buffer() takes the first entry from there that ends
 *	past the offset: for an SGE whose own entry comes before that
 *	index, a wrong entry, and the address it computes lies before that
 *	entry's page (an unsigned underflow).  The WR then fails (local QP
 *	operation error) where no entry is left, and else sends another page
 *	of memory than the SGE's (measured on 7.2:
 *	ubuf.multi_sge_second_longer).  Only MRs of page lists (fast
 *	registration, as all of krdma's) take that path.  And an SGE without
 *	bytes before the last one with bytes reaches siw_tx_hdt() with no
 *	memory object (siw_check_sgl_tx() looks none up for it), which it
 *	dereferences: such SGEs are left out of the WR.
 * @KRDMA_QUIRK_CQ_TASKLET: an armed CQ's completion handler may still be
 *	scheduled when ib_destroy_cq() returns.  rxe before 6.4 calls it from
 *	a tasklet (rxe_send_complete()) that a completion schedules and that
 *	rxe_destroy_cq() marks dying but never kills: one scheduled by a
 *	completion just before, a drain marker's, runs from the freed CQ
 *	(KASAN: use-after-free in tasklet_action_common, measured on 6.1 when
 *	a connect failed).  krdma_cq_quiesce() waits such tasklets out; later
 *	rxe calls the handler directly, and nothing shows which rxe it is.
 * @KRDMA_QUIRK_MR_SUBPAGES: an MR is kept as an entry per system page
 *	(%KRDMA_SUBPAGE_ENTRY_SIZE bytes each), all in one kmalloc().  rxe of
 *	6.12 and 7.x splits each MR page into PAGE_SIZE entries, one
 *	kcalloc() for all page slots of the MR (rxe_map_mr_sg()); past
 *	KMALLOC_MAX_SIZE (4 MiB: 1 GiB of MR) it fails with a kernel warning
 *	(measured on 7.2: 513 slots of 2 MiB pages).  krdma keeps every MR on
 *	rxe below it, as nothing shows which rxe it is: 1022 MiB at most.
 */
enum krdma_quirk {
	KRDMA_QUIRK_MR_SPARE_SLOT,
	KRDMA_QUIRK_INV_CROSSES_PD,
	KRDMA_QUIRK_SEND_SGE_ORDER,
	KRDMA_QUIRK_CQ_TASKLET,
	KRDMA_QUIRK_MR_SUBPAGES,
};

/* struct rxe_mr_page: a page pointer and an offset */
#define KRDMA_SUBPAGE_ENTRY_SIZE 16

/* Whether @ibdev's driver has the defect @quirk. */
static inline bool krdma_quirk(const struct ib_device *ibdev,
			       enum krdma_quirk quirk)
{
	switch (quirk) {
	case KRDMA_QUIRK_MR_SPARE_SLOT:
	case KRDMA_QUIRK_INV_CROSSES_PD:
	case KRDMA_QUIRK_CQ_TASKLET:
	case KRDMA_QUIRK_MR_SUBPAGES:
		return ibdev->ops.driver_id == RDMA_DRIVER_RXE;
	case KRDMA_QUIRK_SEND_SGE_ORDER:
		return ibdev->ops.driver_id == RDMA_DRIVER_SIW;
	}
	return false;
}

void krdma_cq_quiesce(struct ib_device *ibdev);

#endif /* KRDMA_QUIRKS_H */
