/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * fuzz_common.h - input cursor shared by the harnesses.
 *
 * A harness reads its control fields from the front of the input with
 * fz_u8()/fz_u16()/..., which return 0 once the input is exhausted, so
 * every input, however short, is a valid program.  FZ_CHECK() is the
 * harness's own invariant: it aborts, which libFuzzer and AFL++ report as
 * a crash with the input saved.
 */
#ifndef VQF_FUZZ_COMMON_H
#define VQF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline void fz_init(struct fz *f, const uint8_t *p, size_t n)
{
	f->p = p;
	f->n = n;
}

static inline uint64_t fz_bytes(struct fz *f, unsigned int w)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < w && f->n; i++, f->p++, f->n--)
		v |= (uint64_t)*f->p << (8 * i);
	return v;
}

static inline uint8_t fz_u8(struct fz *f)
{
	return fz_bytes(f, 1);
}

static inline uint16_t fz_u16(struct fz *f)
{
	return fz_bytes(f, 2);
}

static inline uint32_t fz_u32(struct fz *f)
{
	return fz_bytes(f, 4);
}

static inline uint64_t fz_u64(struct fz *f)
{
	return fz_bytes(f, 8);
}

/* Take up to @len bytes; returns how many were taken. */
static inline size_t fz_take(struct fz *f, void *dst, size_t len)
{
	size_t k = len < f->n ? len : f->n;

	memcpy(dst, f->p, k);
	f->p += k;
	f->n -= k;
	return k;
}

#define FZ_CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant failed: %s\n",\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* VQF_FUZZ_COMMON_H */
