/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dax_test_rand.h - seeded PRNG for the DAX tests.
 *
 * splitmix64: tiny, full-period, good enough for operation mixes.  The seed
 * is fixed so that a failure reproduces; VQF_SEED=<n> overrides it and the
 * seed in use is printed so a failing run can be replayed.
 */
#ifndef DAX_TEST_RAND_H
#define DAX_TEST_RAND_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct dax_rand {
	uint64_t s;
};

static inline uint64_t dax_rand_u64(struct dax_rand *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform-ish in [0, n); n > 0. */
static inline uint64_t dax_rand_below(struct dax_rand *r, uint64_t n)
{
	return dax_rand_u64(r) % n;
}

static inline uint64_t dax_test_seed(uint64_t dflt, const char *who)
{
	const char *e = getenv("VQF_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0) : dflt;

	fprintf(stderr, "%s: seed %llu (set VQF_SEED to replay)\n", who,
		(unsigned long long)seed);
	return seed;
}

static inline int dax_under_valgrind(void)
{
	const char *e = getenv("VQF_UNDER_VALGRIND");

	return e && e[0] == '1';
}

#endif /* DAX_TEST_RAND_H */
