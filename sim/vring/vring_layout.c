// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Contiguous placement of a split virtqueue (the legacy vring_init layout).
 */
#include "vqf_vring.h"

u64 vqf_vring_layout(unsigned int num, u64 base, u64 align,
		     struct vqf_vring_addr *a)
{
	if (!VQF_IS_POW2(num) || num > VQF_VRING_MAX_NUM ||
	    !VQF_IS_POW2(align) || align < 4 || !VQF_IS_ALIGNED(base, 16))
		return 0;
	a->desc = base;
	a->avail = base + vqf_vring_desc_bytes(num);
	a->used = VQF_ALIGN(a->avail + vqf_vring_avail_bytes(num), align);
	return a->used + vqf_vring_used_bytes(num) - base;
}
