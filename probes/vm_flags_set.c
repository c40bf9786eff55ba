// SPDX-License-Identifier: GPL-2.0
/* vm_flags_set(): Linux 6.3 */
#include <linux/mm.h>

void krdma_probe(struct vm_area_struct *vma);
void krdma_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
}
