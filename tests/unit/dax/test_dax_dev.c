// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Device-side DAX validation under hostile input: seeded random
 * SETUPMAPPING and REMOVEMAPPING requests (fields drawn from edge values:
 * 0, alignment +-1, window edges, U64_MAX, existing mappings' spans, sizes
 * off by one) against a reference model that states the rules of
 * vqf_dax_dev.h independently.  After every request: the errno is the one
 * the model predicts, exactly one counter moved on a rejection and none on
 * acceptance, a rejected request left the map byte-for-byte as it was, and
 * the map's invariants hold.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vqf_dax_dev.h"
#include "dax_test_rand.h"

#define WIN	(64ULL << 20)
#define AL	4096ULL
#define SLOTS	24
#define U64M	UINT64_MAX

static struct vqf_dax_dev_map M;
static struct vqf_dax_dev_mapping S[SLOTS];

/* the model: list of mappings, independent of the tree */
struct mm {
	u64 mo, len, nodeid, fo, flags;
};
static struct mm model[SLOTS];
static int nmodel;

/* how often each outcome happened (setup errnos, remove errnos - 1000) */
static struct { int err; unsigned int n; } outcomes[32];

static void seen_errno(int e)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(outcomes); i++) {
		if (outcomes[i].n && outcomes[i].err != e)
			continue;
		outcomes[i].err = e;
		outcomes[i].n++;
		return;
	}
}

static u64 stats_sum(const struct vqf_dax_dev_stats *st)
{
	const u64 *p = (const u64 *)st;
	u64 s = 0;
	size_t i;

	for (i = 0; i < sizeof(*st) / sizeof(u64); i++)
		s += p[i];
	return s;
}

static void compare_model(void)
{
	const struct vqf_dax_dev_mapping *d;
	const char *why;
	int i;

	if (vqf_dax_dev_check(&M, &why))
		fail_msg("device map: %s", why);
	assert_int_equal(M.nr_used, nmodel);
	for (i = 0; i < nmodel; i++) {
		d = vqf_dax_dev_lookup(&M, model[i].mo);
		assert_non_null(d);
		assert_int_equal(d->itn.start, model[i].mo);
		assert_int_equal(d->itn.last, model[i].mo + model[i].len - 1);
		assert_int_equal(d->nodeid, model[i].nodeid);
		assert_int_equal(d->foffset, model[i].fo);
		assert_int_equal(d->flags, model[i].flags);
		d = vqf_dax_dev_lookup(&M, model[i].mo + model[i].len - 1);
		assert_int_equal(d->itn.start, model[i].mo);
	}
}

static u64 pick(struct dax_rand *r, u64 scale)
{
	static const u64 edge[] = { 0, 1, AL - 1, AL, AL + 1, 2 * AL,
				    WIN - AL, WIN, WIN + AL, U64M, U64M - AL + 1,
				    1ULL << 63, 2ULL << 20 };

	switch (dax_rand_below(r, 4)) {
	case 0:
		return edge[dax_rand_below(r, ARRAY_SIZE(edge))];
	case 1:
		return dax_rand_u64(r);
	default:
		return dax_rand_below(r, scale / AL) * AL;
	}
}

/* The rules, written out again, in the documented order. */
static int model_setup(const struct fuse_setupmapping_in *in, size_t size,
		       const struct vqf_dax_dev_limits *lim, int *hit)
{
	const u64 known = FUSE_SETUPMAPPING_FLAG_READ |
			  FUSE_SETUPMAPPING_FLAG_WRITE;
	unsigned __int128 mend = (unsigned __int128)in->moffset + in->len;
	unsigned __int128 fend = (unsigned __int128)in->foffset + in->len;
	int i, over = 0;

	*hit = -1;
	if (size != 40)
		return -EBADMSG;
	if ((in->flags & ~known) || !(in->flags & known))
		return -EOPNOTSUPP;
	if (!in->len || in->len % AL || in->moffset % AL || in->foffset % AL)
		return -EINVAL;
	if (mend > WIN)
		return -ERANGE;
	if (fend > lim->max_bytes)
		return -EFBIG;
	if (in->foffset >= lim->file_size)
		return -ENXIO;
	if ((in->flags & FUSE_SETUPMAPPING_FLAG_WRITE) && !lim->writable)
		return -EACCES;
	for (i = 0; i < nmodel; i++) {
		if (model[i].mo < mend &&
		    in->moffset < model[i].mo + model[i].len) {
			over++;
			if (model[i].mo == in->moffset &&
			    model[i].len == in->len)
				*hit = i;
		}
	}
	if (over > 1 || (over == 1 && *hit < 0))
		return -EBUSY;
	if (!over && nmodel == SLOTS)
		return -ENOSPC;
	return 0;
}

static void one_setup(struct dax_rand *r)
{
	struct fuse_setupmapping_in in, copy;
	struct vqf_dax_dev_limits lim;
	struct vqf_dax_dev_stats st = { 0 };
	const struct vqf_dax_dev_mapping *rep;
	u8 wire[48];
	size_t size = 40;
	int want, got, hit;

	memset(&in, 0, sizeof(in));
	in.fh = dax_rand_u64(r);
	in.moffset = pick(r, WIN);
	in.len = pick(r, 4ULL << 20);
	in.foffset = pick(r, 1ULL << 40);
	in.flags = dax_rand_below(r, 8) ? 1 + dax_rand_below(r, 3) :
					  dax_rand_u64(r) & 0xf;
	if (nmodel && dax_rand_below(r, 3) == 0) {
		/* aim at an existing mapping, maybe not exactly */
		int i = (int)dax_rand_below(r, nmodel);

		in.moffset = model[i].mo + (dax_rand_below(r, 4) ? 0 : AL);
		in.len = model[i].len + (dax_rand_below(r, 4) ? 0 : AL);
	}
	if (dax_rand_below(r, 20) == 0)
		size = dax_rand_below(r, 49);
	lim.file_size = dax_rand_below(r, 2) ? U64M : pick(r, 1ULL << 40);
	lim.max_bytes = dax_rand_below(r, 2) ? (1ULL << 63) :
					       pick(r, 1ULL << 41);
	lim.writable = dax_rand_below(r, 4) != 0;
	if (dax_rand_below(r, 2)) {
		/* a plausible one: only the overlap and space rules bite */
		in.moffset = dax_rand_below(r, WIN / AL / 64) * AL * 64;
		in.len = (1 + dax_rand_below(r, 64)) * AL;
		in.foffset = dax_rand_below(r, 1024) * AL;
		in.flags = 1 + dax_rand_below(r, 3);
		lim.file_size = U64M;
		lim.max_bytes = 1ULL << 63;
		lim.writable = true;
		size = 40;
	}
	memset(wire, 0x5a, sizeof(wire));
	memcpy(wire, &in, sizeof(in));

	want = model_setup(&in, size, &lim, &hit);
	seen_errno(want);
	got = vqf_dax_dev_setup_check(&M, wire, size, &lim, &st, &copy, &rep);
	if (got != want)
		fail_msg("setup mo %#llx len %#llx fo %#llx fl %#llx size %zu: got %d want %d",
			 (unsigned long long)in.moffset,
			 (unsigned long long)in.len,
			 (unsigned long long)in.foffset,
			 (unsigned long long)in.flags, size, got, want);
	if (got) {
		assert_int_equal(stats_sum(&st), 1);
		compare_model();
		return;
	}
	assert_int_equal(stats_sum(&st), 0);
	assert_true((rep != NULL) == (hit >= 0));
	assert_non_null(vqf_dax_dev_setup_commit(&M, 77, &copy, &st));
	assert_int_equal(st.setups, 1);
	if (hit < 0)
		hit = nmodel++;
	model[hit] = (struct mm){ in.moffset, in.len, 77, in.foffset,
				  in.flags };
	compare_model();
}

static int model_remove(const struct fuse_removemapping_one *e, u32 count,
			size_t size)
{
	u32 i, j;
	int k;

	if (size < 4)
		return -EBADMSG;
	if (!count)
		return -ENODATA;
	if (count > VQF_REMOVEMAPPING_MAX)
		return -E2BIG;
	if (size != 4 + (size_t)count * 16)
		return -EBADMSG;
	for (i = 0; i < count; i++) {
		if (!e[i].len || e[i].len % AL || e[i].moffset % AL)
			return -EINVAL;
		if ((unsigned __int128)e[i].moffset + e[i].len > WIN)
			return -ERANGE;
		for (k = 0; k < nmodel; k++)
			if (model[k].mo == e[i].moffset &&
			    model[k].len == e[i].len)
				break;
		if (k == nmodel)
			return -ENOENT;
		for (j = 0; j < i; j++)
			if (e[j].moffset == e[i].moffset)
				return -ENOTUNIQ;
	}
	return 0;
}

static void one_remove(struct dax_rand *r)
{
	static struct fuse_removemapping_one e[8], ents[VQF_REMOVEMAPPING_MAX];
	static u8 wire[4 + 8 * 16 + 16];
	struct vqf_dax_dev_stats st = { 0 };
	u32 nr = 1 + (u32)dax_rand_below(r, 6), count = nr, got_count, i;
	size_t size;
	int want, got, k;

	for (i = 0; i < nr; i++) {
		if (nmodel && dax_rand_below(r, 4)) {
			k = (int)dax_rand_below(r, nmodel);
			e[i].moffset = model[k].mo;
			e[i].len = model[k].len;
			if (dax_rand_below(r, 10) == 0)
				e[i].len += AL;
		} else {
			e[i].moffset = pick(r, WIN);
			e[i].len = pick(r, 4ULL << 20);
		}
	}
	switch (dax_rand_below(r, 12)) {
	case 0:
		count = 0;
		break;
	case 1:
		count = nr + 1;
		break;
	case 2:
		count = (u32)dax_rand_u64(r);
		break;
	default:
		break;
	}
	size = 4 + nr * 16;
	if (dax_rand_below(r, 15) == 0)
		size = dax_rand_below(r, size + 8);
	memcpy(wire, &count, 4);
	for (i = 0; i < nr; i++)
		memcpy(wire + 4 + i * 16, &e[i], 16);

	want = model_remove(e, count, size);
	seen_errno(-1000 + want);
	got = vqf_dax_dev_remove_check(&M, wire, size, &st, ents, &got_count);
	assert_int_equal(got, want);
	if (got) {
		assert_int_equal(stats_sum(&st), 1);
		assert_int_equal(got_count, 0);
		compare_model();
		return;
	}
	assert_int_equal(stats_sum(&st), 0);
	assert_int_equal(got_count, count);
	vqf_dax_dev_remove_commit(&M, ents, got_count, &st);
	assert_int_equal(st.removes, count);
	for (i = 0; i < count; i++) {
		for (k = 0; k < nmodel; k++)
			if (model[k].mo == e[i].moffset)
				break;
		model[k] = model[--nmodel];
	}
	compare_model();
}

static void test_hostile_random(void **state)
{
	struct dax_rand r = { dax_test_seed(0xde5, "dax-dev") };
	unsigned int steps = dax_under_valgrind() ? 5000 : 60000, i;
	struct vqf_dax_dev_stats st = { 0 };
	struct fuse_setupmapping_in in = { 0 };

	assert_int_equal(vqf_dax_dev_map_init(&M, WIN, AL, S, SLOTS), 0);
	nmodel = 0;
	memset(outcomes, 0, sizeof(outcomes));
	/* a few valid ones so that removals and overlaps have targets */
	for (i = 0; i < 8; i++) {
		in.moffset = (u64)i * (4ULL << 20);
		in.len = (1 + i % 3) * AL * 128;
		in.foffset = (u64)i * AL;
		in.flags = FUSE_SETUPMAPPING_FLAG_READ;
		assert_non_null(vqf_dax_dev_setup_commit(&M, 5, &in, &st));
		model[nmodel++] = (struct mm){ in.moffset, in.len, 5,
					       in.foffset, in.flags };
	}
	compare_model();
	for (i = 0; i < steps; i++) {
		if (dax_rand_below(&r, 3))
			one_setup(&r);
		else
			one_remove(&r);
	}
	print_message("dax-dev: %u hostile requests, %d mappings at the end\n",
		      steps, nmodel);
	/* every outcome, setup and remove, accept and each reject, occurred */
	for (i = 0; outcomes[i].n && i < ARRAY_SIZE(outcomes); i++)
		print_message("  %s %d: %u\n",
			      outcomes[i].err <= -900 ? "remove" : "setup",
			      outcomes[i].err <= -900 ?
			      outcomes[i].err + 1000 : outcomes[i].err,
			      outcomes[i].n);
	assert_int_equal(i, 10 + 8);
}

static void test_init_and_reset(void **state)
{
	struct fuse_setupmapping_in in = { 0 };
	struct vqf_dax_dev_stats st = { 0 };

	assert_int_equal(vqf_dax_dev_map_init(&M, WIN, 3000, S, SLOTS),
			 -EINVAL);
	assert_int_equal(vqf_dax_dev_map_init(&M, WIN + 1, AL, S, SLOTS),
			 -EINVAL);
	assert_int_equal(vqf_dax_dev_map_init(&M, 0, AL, S, SLOTS), -EINVAL);
	assert_int_equal(vqf_dax_dev_map_init(&M, WIN, AL, S, 0), -EINVAL);
	assert_int_equal(vqf_dax_dev_max_mappings(WIN, AL), WIN / AL);
	assert_int_equal(vqf_dax_dev_map_init(&M, WIN, AL, S, 2), 0);
	in.len = AL;
	in.flags = FUSE_SETUPMAPPING_FLAG_READ;
	assert_non_null(vqf_dax_dev_setup_commit(&M, 1, &in, &st));
	in.moffset = AL;
	assert_non_null(vqf_dax_dev_setup_commit(&M, 1, &in, &st));
	/* commit re-checks: full map, overlap, bad span give NULL */
	in.moffset = 2 * AL;
	assert_null(vqf_dax_dev_setup_commit(&M, 1, &in, &st));
	in.moffset = 0;
	in.len = 2 * AL;
	assert_null(vqf_dax_dev_setup_commit(&M, 1, &in, &st));
	in.len = 0;
	assert_null(vqf_dax_dev_setup_commit(&M, 1, &in, &st));
	assert_int_equal(M.nr_used, 2);
	vqf_dax_dev_reset(&M);
	assert_int_equal(M.nr_used, 0);
	assert_null(vqf_dax_dev_lookup(&M, 0));
	assert_int_equal(vqf_dax_dev_check(&M, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_reset),
		cmocka_unit_test(test_hostile_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
