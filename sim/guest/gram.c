// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gram.c - guest RAM and its allocator (see vqf_gram.h).
 */
#define _GNU_SOURCE	/* memfd_create */
#include "vqf_gram.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GRAM_MIN_SHIFT	6			/* 64 bytes */
#define GRAM_CLASSES	40
#define GRAM_HDR	16			/* class byte before a block */

struct gram_free {
	struct gram_free *next;
};

struct vqf_gram {
	pthread_mutex_t lock;
	u8 *base;
	size_t size;
	size_t bump;			/* first never-allocated byte */
	size_t in_use;
	struct gram_free *free[GRAM_CLASSES];
	struct vqf_gmem map;
	int fd;				/* memfd, or -1 */
};

static struct vqf_gram *gram_new(size_t size, bool shared)
{
	struct vqf_gram *r;

	if (!size)
		size = 256u << 20;
	size = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	if (shared) {
		r->fd = memfd_create("vqfuse-guest-ram", MFD_CLOEXEC);
		if (r->fd < 0 || ftruncate(r->fd, (off_t)size)) {
			int err = errno;

			if (r->fd >= 0)
				close(r->fd);
			free(r);
			errno = err;
			return NULL;
		}
		r->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_NORESERVE, r->fd, 0);
	} else {
		r->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
	}
	if (r->base == MAP_FAILED) {
		if (r->fd >= 0)
			close(r->fd);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	r->size = size;
	pthread_mutex_init(&r->lock, NULL);
	vqf_gmem_init(&r->map);
	if (vqf_gmem_add(&r->map, VQF_GRAM_BASE, size, r->base)) {
		vqf_gram_free(r);
		errno = EINVAL;
		return NULL;
	}
	return r;
}

struct vqf_gram *vqf_gram_new(size_t size)
{
	return gram_new(size, false);
}

struct vqf_gram *vqf_gram_new_shared(size_t size)
{
	return gram_new(size, true);
}

int vqf_gram_fd(const struct vqf_gram *r)
{
	return r->fd;
}

void *vqf_gram_base(const struct vqf_gram *r)
{
	return r->base;
}

size_t vqf_gram_size(const struct vqf_gram *r)
{
	return r->size;
}

void vqf_gram_free(struct vqf_gram *r)
{
	if (!r)
		return;
	munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const struct vqf_gmem *vqf_gram_gmem(const struct vqf_gram *r)
{
	return &r->map;
}

static unsigned int gram_class(size_t size)
{
	unsigned int c = 0;

	while (((size_t)1 << (c + GRAM_MIN_SHIFT)) < size)
		c++;
	return c;
}

void *vqf_gram_alloc(struct vqf_gram *r, size_t size, bool zero)
{
	unsigned int c;
	size_t bsize, align, off;
	u8 *p = NULL;

	if (!size || size > r->size)
		return NULL;
	/* The header sits in front of the block, so blocks of a page or more
	 * are page-aligned and their header lives in the page before.
	 */
	c = gram_class(size + GRAM_HDR);
	if (c >= GRAM_CLASSES)
		return NULL;
	bsize = (size_t)1 << (c + GRAM_MIN_SHIFT);
	align = bsize < 4096 ? bsize : 4096;
	pthread_mutex_lock(&r->lock);
	if (r->free[c]) {
		p = (u8 *)r->free[c];
		r->free[c] = r->free[c]->next;
	} else {
		off = (r->bump + GRAM_HDR + align - 1) & ~(align - 1);
		if (off + bsize - GRAM_HDR <= r->size) {
			p = r->base + off;
			r->bump = off + bsize - GRAM_HDR;
			p[-GRAM_HDR] = (u8)c;
		}
	}
	if (p)
		r->in_use += bsize;
	pthread_mutex_unlock(&r->lock);
	if (p && zero)
		memset(p, 0, size);
	return p;
}

void vqf_gram_release(struct vqf_gram *r, void *ptr)
{
	u8 *p = ptr;
	unsigned int c;

	if (!p)
		return;
	c = p[-GRAM_HDR];
	pthread_mutex_lock(&r->lock);
	((struct gram_free *)p)->next = r->free[c];
	r->free[c] = (struct gram_free *)p;
	r->in_use -= (size_t)1 << (c + GRAM_MIN_SHIFT);
	pthread_mutex_unlock(&r->lock);
}

u64 vqf_gram_gpa(const struct vqf_gram *r, const void *p)
{
	const u8 *b = p;

	if (b < r->base || b >= r->base + r->size)
		return 0;
	return VQF_GRAM_BASE + (u64)(b - r->base);
}

size_t vqf_gram_in_use(struct vqf_gram *r)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = r->in_use;
	pthread_mutex_unlock(&r->lock);
	return n;
}
