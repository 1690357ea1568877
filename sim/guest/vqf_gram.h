/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_gram.h - the simulated guest's RAM.
 *
 * One anonymous mapping stands for the guest's physical memory: guest
 * address 0x100000 onwards (GPA 0 is kept unmapped so that a zero address
 * from a confused peer faults instead of aliasing).  The device sees it
 * only through the vqf_gmem map returned by vqf_gram_gmem(); the guest
 * driver allocates rings, request headers, argbufs and data pages from it.
 *
 * The allocator is a small thread-safe buddy-less size-class allocator:
 * power-of-two classes from 64 bytes to the arena size, free lists per
 * class, carved from the top of a bump pointer.  Guest kernels allocate
 * from slabs the same way; fragmentation does not matter for a simulator
 * whose requests come and go.
 */
#ifndef VQF_GRAM_H
#define VQF_GRAM_H

#include "vqf_gmem.h"

#include <stddef.h>

#define VQF_GRAM_BASE	0x100000ULL

struct vqf_gram;

/*
 * Maps @size bytes (rounded up to 2 MiB; 0: 256 MiB) of guest RAM.
 * Reserved, not committed: untouched memory costs nothing.
 * Returns NULL with errno set (EINVAL, ENOMEM).
 */
struct vqf_gram *vqf_gram_new(size_t size);

/*
 * The same, backed by a memfd that another process may map (a vhost-user
 * back-end given the RAM with SET_MEM_TABLE): still reserved, not
 * committed, as the file is sparse.
 */
struct vqf_gram *vqf_gram_new_shared(size_t size);
void vqf_gram_free(struct vqf_gram *r);

/* The memfd of a shared RAM (-1 for a private one); the RAM keeps it. */
int vqf_gram_fd(const struct vqf_gram *r);

/* Where the RAM is mapped here, and its size. */
void *vqf_gram_base(const struct vqf_gram *r);
size_t vqf_gram_size(const struct vqf_gram *r);

/* The device's view: one region, [VQF_GRAM_BASE, + size). */
const struct vqf_gmem *vqf_gram_gmem(const struct vqf_gram *r);

/*
 * @size bytes aligned to min(class size, 4096); zeroed when @zero.
 * NULL when the RAM is exhausted (the caller retries later or fails with
 * -ENOMEM).
 */
void *vqf_gram_alloc(struct vqf_gram *r, size_t size, bool zero);
void vqf_gram_release(struct vqf_gram *r, void *p);

/* Guest address of host pointer @p inside the RAM; 0 if outside. */
u64 vqf_gram_gpa(const struct vqf_gram *r, const void *p);

/* Bytes currently handed out (for leak checks in tests). */
size_t vqf_gram_in_use(struct vqf_gram *r);

#endif /* VQF_GRAM_H */
