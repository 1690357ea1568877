/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Deterministic file content shared by the guest programs and the host-side
 * check: the guest writes pattern bytes, the host recomputes them and compares
 * byte for byte, so neither side needs to ship a reference file.
 */
#ifndef VQF_QEMU_PATTERN_H
#define VQF_QEMU_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Byte at absolute file offset @off of the stream named by @seed.  Mixing the
 * offset (not a running state) lets any range be produced independently,
 * which pwrite/mmap/sparse tests need.
 */
static inline uint8_t vqf_pat_byte(uint32_t seed, uint64_t off)
{
	uint64_t x = off * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return (uint8_t)x;
}

static inline void vqf_pat_fill(uint32_t seed, uint64_t off, void *buf,
				size_t len)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = vqf_pat_byte(seed, off + i);
}

/* Index of the first byte that differs from the pattern, or @len. */
static inline size_t vqf_pat_check(uint32_t seed, uint64_t off,
				   const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != vqf_pat_byte(seed, off + i))
			return i;
	return len;
}

#endif
