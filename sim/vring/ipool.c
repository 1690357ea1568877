// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A fixed pool of indirect descriptor tables in guest memory, so that a
 * driver needs no allocator on its fast path.
 */
#include <stdlib.h>

#include "vqf_vring_drv.h"

int vqf_vring_ipool_init(struct vqf_vring_ipool *p, void *hva, u64 gpa,
			 unsigned int slots, unsigned int per_slot)
{
	unsigned int i;

	memset(p, 0, sizeof(*p));
	if (!hva || !slots || !per_slot || per_slot > VQF_VRING_MAX_NUM ||
	    !VQF_IS_ALIGNED(gpa, 16) || !VQF_IS_ALIGNED((uintptr_t)hva, 16))
		return -EINVAL;
	p->free = calloc(slots, sizeof(*p->free));
	if (!p->free)
		return -ENOMEM;
	p->hva = hva;
	p->gpa = gpa;
	p->slots = slots;
	p->per_slot = per_slot;
	for (i = 0; i < slots; i++)
		p->free[i] = slots - 1 - i;
	p->nfree = slots;
	return 0;
}

void vqf_vring_ipool_fini(struct vqf_vring_ipool *p)
{
	free(p->free);
	p->free = NULL;
	p->nfree = 0;
}

static int ipool_alloc(void *priv, unsigned int n, struct vring_desc **hva,
		       u64 *gpa)
{
	struct vqf_vring_ipool *p = priv;
	unsigned int s;

	if (n > p->per_slot || !p->nfree)
		return -ENOMEM;
	s = p->free[--p->nfree];
	*hva = p->hva + (size_t)s * p->per_slot;
	*gpa = p->gpa + (u64)s * p->per_slot * sizeof(struct vring_desc);
	return 0;
}

static void ipool_free(void *priv, struct vring_desc *hva, u64 gpa,
		       unsigned int n)
{
	struct vqf_vring_ipool *p = priv;

	p->free[p->nfree++] = (unsigned int)((hva - p->hva) / p->per_slot);
}

void vqf_vring_ipool_ops(struct vqf_vring_ipool *p,
			 struct vqf_vring_indirect_ops *ops)
{
	ops->alloc = ipool_alloc;
	ops->free = ipool_free;
	ops->priv = p;
}
