/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_gmem.h - guest physical memory as the device half sees it.
 *
 * A map from guest addresses to host pointers made of up to
 * VQF_GMEM_MAX_REGIONS non-overlapping regions, like the memory table a
 * vhost-user front-end hands over.  The device half of a virtqueue reaches
 * rings, indirect tables and buffers only through this map, so every address
 * the driver wrote is checked against its bounds before it is touched.
 *
 * The map is filled before use and read-only afterwards: lookups take a
 * const pointer and write nothing, so any number of threads may translate
 * concurrently.
 */
#ifndef VQF_GMEM_H
#define VQF_GMEM_H

#include "vqf_compat.h"

#define VQF_GMEM_MAX_REGIONS	16

struct vqf_gmem_region {
	u64 gpa;	/* first guest address of the region */
	u64 size;	/* bytes, > 0 */
	u8 *hva;	/* host address of gpa */
};

struct vqf_gmem {
	unsigned int nr;				/* regions in use */
	struct vqf_gmem_region r[VQF_GMEM_MAX_REGIONS];	/* sorted by gpa */
};

/* Empty the map. */
void vqf_gmem_init(struct vqf_gmem *m);

/**
 * vqf_gmem_add() - map [gpa, gpa + size) to host memory at hva.
 * @m:    the map
 * @gpa:  first guest address
 * @size: length in bytes
 * @hva:  host memory of at least @size bytes; the caller keeps it alive and
 *        mapped for as long as the map is used
 *
 * Regions may be adjacent (gpa of one == end of another); a buffer that
 * crosses such a boundary is translated into two pieces.
 *
 * Return: 0; -EINVAL if size is 0, hva is NULL or gpa + size wraps past
 * 2^64; -EEXIST if the range overlaps a mapped region; -ENOSPC if the map
 * already holds VQF_GMEM_MAX_REGIONS regions.
 */
int vqf_gmem_add(struct vqf_gmem *m, u64 gpa, u64 size, void *hva);

/**
 * vqf_gmem_find() - translate one guest address.
 * @m:      the map
 * @gpa:    guest address
 * @contig: set to the number of bytes from @gpa to the end of its region
 *
 * Return: host pointer for @gpa, or NULL if no region holds it (then
 * @contig is untouched).
 */
static inline void *vqf_gmem_find(const struct vqf_gmem *m, u64 gpa,
				  u64 *contig)
{
	unsigned int i;

	/* A handful of regions: a linear scan beats a search. */
	for (i = 0; i < m->nr; i++) {
		const struct vqf_gmem_region *r = &m->r[i];

		if (gpa - r->gpa < r->size) {
			*contig = r->size - (gpa - r->gpa);
			return r->hva + (gpa - r->gpa);
		}
	}
	return NULL;
}

/**
 * vqf_gmem_ptr() - host pointer for a range that must lie in one region.
 * @m:   the map
 * @gpa: first guest address
 * @len: bytes, may be 0 (then gpa itself must be mapped)
 *
 * For objects that must be contiguous in host memory (the rings).
 *
 * Return: host pointer, or NULL if [gpa, gpa + len) is not wholly inside a
 * single region (including when gpa + len wraps).
 */
static inline void *vqf_gmem_ptr(const struct vqf_gmem *m, u64 gpa, u64 len)
{
	u64 contig;
	void *p = vqf_gmem_find(m, gpa, &contig);

	if (!p || len > contig)
		return NULL;
	return p;
}

/**
 * vqf_gmem_read() - copy guest memory that may span adjacent regions.
 * @m:   the map
 * @gpa: first guest address
 * @dst: destination, @len bytes
 * @len: bytes to copy
 *
 * Return: 0, or -EFAULT if any byte of [gpa, gpa + len) is unmapped or the
 * range wraps (then @dst may be partly written).
 */
int vqf_gmem_read(const struct vqf_gmem *m, u64 gpa, void *dst, u64 len);

#endif /* VQF_GMEM_H */
