// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Guest memory map: region table and copies that cross region boundaries.
 */
#include "vqf_gmem.h"

void vqf_gmem_init(struct vqf_gmem *m)
{
	memset(m, 0, sizeof(*m));
}

int vqf_gmem_add(struct vqf_gmem *m, u64 gpa, u64 size, void *hva)
{
	unsigned int i, pos;

	if (!size || !hva || gpa + size - 1 < gpa)
		return -EINVAL;
	if (m->nr >= VQF_GMEM_MAX_REGIONS)
		return -ENOSPC;

	/* Ranges are compared inclusively so that a region ending at 2^64
	 * needs no special case.
	 */
	pos = m->nr;
	for (i = 0; i < m->nr; i++) {
		u64 last = m->r[i].gpa + m->r[i].size - 1;

		if (gpa <= last && m->r[i].gpa <= gpa + size - 1)
			return -EEXIST;
		if (gpa < m->r[i].gpa && pos == m->nr)
			pos = i;
	}
	memmove(&m->r[pos + 1], &m->r[pos], (m->nr - pos) * sizeof(m->r[0]));
	m->r[pos].gpa = gpa;
	m->r[pos].size = size;
	m->r[pos].hva = hva;
	m->nr++;
	return 0;
}

int vqf_gmem_read(const struct vqf_gmem *m, u64 gpa, void *dst, u64 len)
{
	u8 *d = dst;

	if (len && gpa + len - 1 < gpa)
		return -EFAULT;
	while (len) {
		u64 contig, n;
		const void *src = vqf_gmem_find(m, gpa, &contig);

		if (!src)
			return -EFAULT;
		n = VQF_MIN(contig, len);
		memcpy(d, src, n);
		d += n;
		gpa += n;
		len -= n;
	}
	return 0;
}
