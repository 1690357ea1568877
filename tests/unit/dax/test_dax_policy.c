// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dax=auto policy (vqf_dax.h, DAX POLICY): the pure decision as a table
 * of cases, then through the protocol-enforcing harness (dax_harness.h)
 * with real reclaim: thrash found and backed off with no SETUPMAPPING on
 * the wire, the return after the backoff, exponential backoff and its
 * decay, a streamed file that never backs off, the small-file rule, mmap,
 * dax=always bypassing it all; last, a seeded random mix checked after
 * every step against a model that learns from the wire.
 */
#include "dax_harness.h"
#include "dax_test_rand.h"

#define RS	(4 * PAGE_SIZE)		/* range size of the harness tests */

static struct harness H;

/* ---- the pure function ---- */

static const struct vqf_dax_policy P = {
	.small_size = 1000,
	.small_uses = 2,
	.used_bytes = 0,
	.thrash_min = 8,
	.thrash_pct = 50,
	.sample = 64,
	.backoff = 100,
	.backoff_shift_max = 3,
	.range_size = 1 << 20,
};

struct dcase {
	const char *name;
	struct vqf_dax_pstate cur;
	struct vqf_dax_hint h;
	enum vqf_dax_why why;
	struct vqf_dax_pstate next;
	struct vqf_dax_pstate crowd, crowd_next;
};

#define BIG	(1ULL << 30)

/* Cases leave the crowd out when it plays no part: zero, as C says. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const struct dcase dcases[] = {
	{ "fresh big file maps", { 0 }, { BIG, 5, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 1 } },
	{ "small file, first use: FUSE", { 0 }, { 999, 5, 0, 0 },
	  VQF_DAX_WHY_SMALL, { .uses = 1, .small = true } },
	{ "small file, second use: FUSE", { .uses = 1 }, { 999, 5, 0, 0 },
	  VQF_DAX_WHY_SMALL, { .uses = 2, .small = true } },
	{ "small file, third use maps", { .uses = 2 }, { 999, 5, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 3, .small = true } },
	{ "size == small_size is not small", { .small = true },
	  { 1000, 5, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 1 } },
	{ "empty file is small", { 0 }, { 0, 5, 0, 0 },
	  VQF_DAX_WHY_SMALL, { .uses = 1, .small = true } },
	{ "mmap of a small file maps at once", { 0 },
	  { 10, 5, 0, VQF_DAX_HINT_MMAP },
	  VQF_DAX_WHY_MMAP, { .uses = 1, .small = true } },
	{ "small file with a wasted range: its own thrash",
	  { .uses = 3, .setups = 1, .wasted = 1 }, { 10, 5, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 105, .backed = true, .level = 1, .uses = 4,
	    .small = true } },
	{ "two-range file thrashes at two wasted",
	  { .setups = 4, .wasted = 2 }, { 2 << 20, 5, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 105, .backed = true, .level = 1, .uses = 1 } },
	{ "three-range file: not at two wasted",
	  { .setups = 4, .wasted = 2 }, { (2 << 20) + 1, 5, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .setups = 4, .wasted = 2, .uses = 1 } },
	{ "crowd thrashing: small file FUSE, crowd backs off",
	  { .uses = 5 }, { 10, 7, 0, 0 },
	  VQF_DAX_WHY_CROWD, { .uses = 6, .small = true },
	  { .setups = 16, .wasted = 8, .level = 1 },
	  { .until = 207, .backed = true, .level = 2 } },
	{ "crowd backing off: small file FUSE",
	  { .uses = 5 }, { 10, 7, 0, 0 },
	  VQF_DAX_WHY_CROWD, { .uses = 6, .small = true },
	  { .until = 8, .backed = true, .level = 1 },
	  { .until = 8, .backed = true, .level = 1 } },
	{ "crowd backoff over: small file maps, fresh crowd sample",
	  { .uses = 5 }, { 10, 8, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 6, .small = true },
	  { .until = 8, .backed = true, .level = 1, .setups = 3,
	    .wasted = 3 },
	  { .until = 8, .level = 1 } },
	{ "crowd does not touch a big file",
	  { .uses = 5 }, { BIG, 7, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 6 },
	  { .setups = 16, .wasted = 16, .backed = true, .until = 100 },
	  { .setups = 16, .wasted = 16, .backed = true, .until = 100 } },
	{ "crowd does not touch an mmap",
	  { 0 }, { 10, 7, 0, VQF_DAX_HINT_MMAP },
	  VQF_DAX_WHY_MMAP, { .uses = 1, .small = true },
	  { .backed = true, .until = 100 },
	  { .backed = true, .until = 100 } },
	{ "mmap while backing off maps, backoff kept",
	  { .until = 50, .backed = true, .level = 1 },
	  { BIG, 5, 0, VQF_DAX_HINT_MMAP },
	  VQF_DAX_WHY_MMAP,
	  { .until = 50, .backed = true, .level = 1, .uses = 1 } },
	{ "mmap of a thrashing inode maps, no verdict",
	  { .setups = 10, .wasted = 9 },
	  { BIG, 5, 0, VQF_DAX_HINT_MMAP },
	  VQF_DAX_WHY_MMAP, { .setups = 10, .wasted = 9, .uses = 1 } },
	{ "backing off", { .until = 50, .backed = true, .level = 1 },
	  { BIG, 49, 0, 0 },
	  VQF_DAX_WHY_BACKOFF,
	  { .until = 50, .backed = true, .level = 1, .uses = 1 } },
	{ "backoff over: probation maps with a fresh sample",
	  { .until = 50, .backed = true, .level = 1, .setups = 3,
	    .wasted = 30 },
	  { BIG, 50, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .until = 50, .level = 1, .uses = 1 } },
	{ "thrash: 8 of 16 wasted", { .setups = 16, .wasted = 8 },
	  { BIG, 7, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 107, .backed = true, .level = 1, .uses = 1 } },
	{ "no thrash below the ratio: 8 of 17",
	  { .setups = 17, .wasted = 8 }, { BIG, 7, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .setups = 17, .wasted = 8, .uses = 1 } },
	{ "no thrash below thrash_min: 7 of 7",
	  { .setups = 7, .wasted = 7 }, { BIG, 7, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .setups = 7, .wasted = 7, .uses = 1 } },
	{ "thrash beats the small-file rule",
	  { .setups = 8, .wasted = 8 }, { 10, 7, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 107, .backed = true, .level = 1, .uses = 1,
	    .small = true } },
	{ "repeated thrash doubles: level 2",
	  { .setups = 8, .wasted = 8, .level = 2 }, { BIG, 1000, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 1400, .backed = true, .level = 3, .uses = 1 } },
	{ "backoff capped at << backoff_shift_max",
	  { .setups = 8, .wasted = 8, .level = 9 }, { BIG, 1000, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 1800, .backed = true, .level = 10, .uses = 1 } },
	{ "level saturates",
	  { .setups = 8, .wasted = 8, .level = 255 }, { BIG, 0, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = 800, .backed = true, .level = 255, .uses = 1 } },
	{ "until saturates at the end of the clock",
	  { .setups = 8, .wasted = 8 }, { BIG, ~0ULL - 5, 0, 0 },
	  VQF_DAX_WHY_THRASH,
	  { .until = ~0ULL, .backed = true, .level = 1, .uses = 1 } },
	{ "uses saturate", { .uses = 0xffffffffU }, { BIG, 0, 0, 0 },
	  VQF_DAX_WHY_WINDOW, { .uses = 0xffffffffU } },
};

static void check_state(const char *what, const struct vqf_dax_pstate *got,
			const struct vqf_dax_pstate *want)
{
	if (got->until != want->until || got->setups != want->setups ||
	    got->wasted != want->wasted || got->uses != want->uses ||
	    got->level != want->level || got->backed != want->backed ||
	    got->small != want->small)
		fail_msg("%s: state until %llu setups %u wasted %u uses %u level %u backed %d small %d, want %llu %u %u %u %u %d %d",
			 what, (unsigned long long)got->until, got->setups,
			 got->wasted, got->uses, got->level, got->backed,
			 got->small, (unsigned long long)want->until,
			 want->setups, want->wasted, want->uses, want->level,
			 want->backed, want->small);
}

static void test_decide_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++) {
		const struct dcase *c = &dcases[i];
		struct vqf_dax_pstate next, same = c->cur, gn;
		struct vqf_dax_pstate gsame = c->crowd;
		enum vqf_dax_why why;
		char what[128];

		memset(&next, 0xa5, sizeof(next));
		memset(&gn, 0xa5, sizeof(gn));
		why = vqf_dax_policy_decide(&P, &c->crowd, &c->cur, &c->h, &gn,
					    &next);
		if (why != c->why)
			fail_msg("%s: why %d, want %d", c->name, why, c->why);
		check_state(c->name, &next, &c->next);
		snprintf(what, sizeof(what), "%s (crowd)", c->name);
		check_state(what, &gn, &c->crowd_next);
		/* @next may be @cur, @crowd_next @crowd */
		why = vqf_dax_policy_decide(&P, &gsame, &same, &c->h, &gsame,
					    &same);
		assert_int_equal(why, c->why);
		check_state(c->name, &same, &c->next);
		check_state(what, &gsame, &c->crowd_next);
		assert_int_equal(vqf_dax_why_fuse(why),
				 why == VQF_DAX_WHY_SMALL ||
				 why == VQF_DAX_WHY_THRASH ||
				 why == VQF_DAX_WHY_BACKOFF ||
				 why == VQF_DAX_WHY_CROWD);
	}
}

/* Each rule switched off by its own knob. */
static void test_rules_off(void **state)
{
	struct vqf_dax_policy p = P;
	struct vqf_dax_pstate s = { .setups = 8, .wasted = 8 }, n, g, gn;
	struct vqf_dax_hint h = { 10, 0, 0, 0 };

	(void)state;
	g = s;
	p.thrash_pct = 0;
	assert_int_equal(vqf_dax_policy_decide(&p, &g, &s, &h, &gn, &n),
			 VQF_DAX_WHY_SMALL);
	p.small_uses = 0;
	assert_int_equal(vqf_dax_policy_decide(&p, &g, &s, &h, &gn, &n),
			 VQF_DAX_WHY_WINDOW);
	p.small_uses = 2;
	p.small_size = 0;
	assert_int_equal(vqf_dax_policy_decide(&p, &g, &s, &h, &gn, &n),
			 VQF_DAX_WHY_WINDOW);
	assert_false(n.small);
}

static void test_defaults_and_set(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_policy p;

	(void)state;
	h_init(h, 8, RS, 0, 0);
	vqf_dax_policy_default(&p, RS);
	assert_int_equal(p.small_size, RS / VQF_DAX_POL_SMALL_DIV_DEFAULT);
	assert_int_equal(p.used_bytes, RS / VQF_DAX_POL_USED_DIV_DEFAULT);
	assert_int_equal(p.small_uses, VQF_DAX_POL_SMALL_USES_DEFAULT);
	assert_int_equal(p.thrash_min, VQF_DAX_POL_THRASH_MIN_DEFAULT);
	assert_int_equal(p.thrash_pct, VQF_DAX_POL_THRASH_PCT_DEFAULT);
	assert_int_equal(p.sample, VQF_DAX_POL_SAMPLE_DEFAULT);
	assert_int_equal(p.backoff, VQF_DAX_POL_BACKOFF_DEFAULT);
	assert_int_equal(p.backoff_shift_max, VQF_DAX_POL_SHIFT_MAX_DEFAULT);
	assert_int_equal(p.range_size, RS);
	/* the window starts with the defaults */
	assert_memory_equal(&h->w.policy, &p, sizeof(p));

	p.thrash_pct = 101;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), -EINVAL);
	p.thrash_pct = 50;
	p.thrash_min = 0;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), -EINVAL);
	p.thrash_min = 1;
	p.sample = 0;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), -EINVAL);
	p.sample = 1;
	p.backoff_shift_max = 33;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), -EINVAL);
	p.backoff_shift_max = 32;
	p.range_size = 12345;		/* the window's wins */
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), 0);
	p.range_size = RS;
	assert_memory_equal(&h->w.policy, &p, sizeof(p));
	assert_false(h->w_held);
}

/* ---- through the window ---- */

static u64 clk;

/* One access of @len bytes at @pos of inode @i (size @size) under auto. */
static int acc(struct harness *h, int i, u64 pos, u64 size, u64 len,
	       u32 hflags)
{
	struct vqf_dax_hint hint = { size, clk++, len, hflags };
	struct vqf_dax_map m;
	int ret;

	ret = vqf_dax_map_begin_auto(&h->w, &h->ino[i].di, pos, 0, &hint,
				     &m);
	if (ret == VQF_DAX_USE_FUSE)
		assert_null(m.range);
	if (!ret)
		vqf_dax_map_end(&h->w, &m);
	assert_true(ret == 0 || ret == VQF_DAX_USE_FUSE);
	return ret;
}

static unsigned int setups_logged(struct harness *h)
{
	unsigned int k, n = 0;

	for (k = 0; k < h->nlog; k++)
		n += h->log[k].kind == H_EV_SETUP;
	return n;
}

/* The cases' policy; @pay uses pay for a range (the old rule: 1). */
static void pol_init_pay(struct harness *h, u32 nr, u32 pay)
{
	struct vqf_dax_policy p;

	h_init(h, nr, RS, 0, 0);
	vqf_dax_policy_default(&p, RS);
	p.used_bytes = RS / 2;
	p.pay_uses = pay;
	p.small_size = RS / 4;
	p.small_uses = 1;
	p.thrash_min = 8;
	p.thrash_pct = 50;
	p.sample = 64;
	p.backoff = 100;
	p.backoff_shift_max = 3;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), 0);
	clk = 0;
}

static void pol_init(struct harness *h, u32 nr)
{
	pol_init_pay(h, nr, 1);
}

/*
 * A scan that touches each range once with a small I/O through a window
 * of 8 ranges: from the 9th setup on, each one reclaims a range that was
 * never used again.  Access j (0-based) decides with j - 8 wasted of j
 * setups: thrash at j = 16.  Then the backoff: no SETUPMAPPING on the
 * wire, READs instead, but what is mapped is still a hit; after 100 ticks
 * it maps again; the same scan thrashes again and backs off for 200.
 */
static void test_thrash_backoff_return(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	struct vqf_dax_pstate ps;
	unsigned int j, n0;
	u64 t0;

	(void)state;
	pol_init(h, 8);
	for (j = 0; j < 16; j++)
		assert_int_equal(acc(h, 0, j * RS, BIG, 4096, 0), 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.setups, 16);
	assert_int_equal(st.wasted, 8);
	assert_int_equal(st.pol_window, 16);
	n0 = setups_logged(h);
	t0 = clk;
	assert_int_equal(acc(h, 0, 16 * RS, BIG, 4096, 0), VQF_DAX_USE_FUSE);
	vqf_dax_inode_policy(&h->w, &h->ino[0].di, &ps);
	assert_true(ps.backed);
	assert_int_equal(ps.level, 1);
	assert_int_equal(ps.until, t0 + 100);
	/* backing off: unmapped bytes through FUSE, nothing on the wire */
	while (clk < t0 + 100) {
		u64 k = 17 + clk % 40;

		if (h_mapped(h, 0, k * RS) >= 0) {
			clk++;
			continue;	/* hits below */
		}
		assert_int_equal(acc(h, 0, k * RS, BIG, 4096, 0),
				 VQF_DAX_USE_FUSE);
	}
	assert_int_equal(setups_logged(h), n0);
	/* a range still mapped is a hit, backoff or not */
	clk = t0 + 50;
	for (j = 0; j < 64; j++)
		if (h_mapped(h, 0, j * RS) >= 0)
			break;
	assert_true(j < 64);
	assert_int_equal(acc(h, 0, j * RS + 1, BIG, 4096, 0), 0);
	assert_int_equal(setups_logged(h), n0);
	/* the backoff ends: maps again, with a fresh sample */
	clk = t0 + 100;
	assert_int_equal(acc(h, 0, 100 * RS, BIG, 4096, 0), 0);
	assert_int_equal(setups_logged(h), n0 + 1);
	vqf_dax_inode_policy(&h->w, &h->ino[0].di, &ps);
	assert_false(ps.backed);
	assert_int_equal(ps.setups, 1);
	/* its range came from the scan's oldest, mapped and never used */
	assert_int_equal(ps.wasted, 1);
	assert_int_equal(ps.level, 1);
	/* still a scan: thrash again, after 16 more setups, for twice as long */
	for (j = 0; j < 64; j++) {
		int r = acc(h, 0, (200 + j) * RS, BIG, 4096, 0);

		if (r == VQF_DAX_USE_FUSE)
			break;
	}
	vqf_dax_inode_policy(&h->w, &h->ino[0].di, &ps);
	assert_true(ps.backed);
	assert_int_equal(ps.level, 2);
	assert_int_equal(ps.until, clk - 1 + 200);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.pol_thrash, 2);
	assert_true(st.pol_backoff > 50);
	/* another inode is not affected */
	assert_int_equal(acc(h, 1, 0, BIG, 4096, 0), 0);
	h_check_quiet(h);
}

/*
 * A clean sample earns a level back: after a backoff at level 2 the
 * inode reads ranges it keeps reusing (no waste) for a whole sample.
 */
static void test_level_decays(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_pstate ps;
	unsigned int j;

	(void)state;
	pol_init(h, 8);
	h->ino[0].di.pol.level = 2;
	for (j = 0; j < 64; j++) {
		/* four ranges, each hit again: nothing wasted */
		assert_int_equal(acc(h, 0, (j % 4) * RS, BIG, 4096, 0), 0);
		assert_int_equal(acc(h, 0, (j % 4) * RS, BIG, 4096, 0), 0);
	}
	vqf_dax_inode_policy(&h->w, &h->ino[0].di, &ps);
	assert_int_equal(ps.setups, 4);	/* all hits after the first four */
	assert_int_equal(ps.level, 2);
	/* a sample is 64 setups: make them, each used, window of 8 */
	for (j = 0; j < 64; j++) {
		assert_int_equal(acc(h, 0, (100 + j) * RS, BIG, 4096, 0), 0);
		assert_int_equal(acc(h, 0, (100 + j) * RS, BIG, 4096, 0), 0);
	}
	vqf_dax_inode_policy(&h->w, &h->ino[0].di, &ps);
	assert_int_equal(ps.level, 1);
	assert_int_equal(ps.wasted, 0);
	assert_false(ps.backed);
	h_check_quiet(h);
}

/*
 * Streaming: each range touched range_size / 4 KiB times (reused), or
 * once with an I/O of at least used_bytes: never wasted, never backs off.
 */
static void test_stream_never_backs_off(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	u64 off;

	(void)state;
	pol_init(h, 8);
	for (off = 0; off < 200 * RS; off += 4096)
		assert_int_equal(acc(h, 0, off, BIG, 4096, 0), 0);
	for (off = 0; off < 200 * RS; off += RS)
		assert_int_equal(acc(h, 1, off, BIG, RS / 2, 0), 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.setups, 400);
	assert_true(st.reclaimed_bg + st.reclaimed_direct >= 390);
	assert_int_equal(st.wasted, 0);
	assert_int_equal(st.pol_thrash + st.pol_backoff, 0);
	/* the same 200 ranges read once with RS / 2 - 1 bytes: thrash */
	for (off = 0; off < 200 * RS; off += RS)
		acc(h, 2, off, BIG, RS / 2 - 1, 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_true(st.pol_thrash >= 1);
	assert_true(st.wasted >= 8);
	h_check_quiet(h);
}

/*
 * Every range of a window of 8 touched @pre times while free; then
 * ranges 0-7 of a file, each read 1 + @hits times (and touched @touches
 * times behind lib's back, or set up by an access of @len bytes or a
 * fault), then ranges 8-15 once, which reclaims 0-7 (direct reclaim,
 * least recently used first).  Returns the ranges wasted.
 */
static u64 pay_run(u32 pay, unsigned int pre, unsigned int hits,
		   unsigned int touches, u64 len, u32 hflags)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	unsigned int j, k;

	pol_init_pay(h, 8, pay);
	for (j = 0; j < 8; j++)
		for (k = 0; k < pre; k++)
			vqf_dax_range_touch(&h->ranges[j]);
	for (j = 0; j < 8; j++) {
		assert_int_equal(acc(h, 0, j * RS, BIG, len, hflags), 0);
		for (k = 0; k < hits; k++)
			assert_int_equal(acc(h, 0, j * RS, BIG, 4096, 0), 0);
		for (k = 0; k < touches; k++)
			vqf_dax_range_touch(&h->ranges[h_mapped(h, 0,
								 j * RS)]);
	}
	for (j = 8; j < 16; j++)
		assert_int_equal(acc(h, 0, j * RS, BIG, 4096, 0), 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.setups, 16);
	assert_int_equal(st.reclaimed_direct, 8);
	h_check_quiet(h);
	return st.wasted;
}

/*
 * pay_uses: a range reclaimed before it served that many uses (hits
 * through lib and touches) did not pay for its mapping; an access of
 * used_bytes or a fault pays at once.  0 means 1, the rule before.
 */
static void test_pay_uses(void **state)
{
	(void)state;
	assert_int_equal(pay_run(3, 0, 2, 0, 4096, 0), 8);
	assert_int_equal(pay_run(3, 0, 3, 0, 4096, 0), 0);
	assert_int_equal(pay_run(3, 0, 0, 3, 4096, 0), 0);
	assert_int_equal(pay_run(3, 0, 1, 1, 4096, 0), 8);
	assert_int_equal(pay_run(3, 0, 1, 2, 4096, 0), 0);
	assert_int_equal(pay_run(3, 0, 0, 0, RS / 2, 0), 0);
	assert_int_equal(pay_run(3, 0, 0, 0, 4096, VQF_DAX_HINT_MMAP), 0);
	assert_int_equal(pay_run(0, 0, 0, 0, 4096, 0), 8);
	assert_int_equal(pay_run(0, 0, 1, 0, 4096, 0), 0);
	assert_int_equal(pay_run(1, 0, 0, 1, 4096, 0), 0);
	/* touches of a free range are not its next mapping's uses */
	assert_int_equal(pay_run(3, 5, 2, 0, 4096, 0), 8);
	assert_int_equal(pay_run(3, 5, 0, 0, 4096, 0), 8);
}

/*
 * A hot set a little larger than the window (10 ranges, 8 in the
 * window), read uniformly at random: every range is hit a few times,
 * then reclaimed, and no reclaim order can do better.  With the rule
 * before (pay_uses 1) nothing looks wasted and every miss maps; with
 * pay_uses 8 the inode backs off, its misses become READs and the
 * ranges still mapped keep hitting.  Fixed seed: the counts are exact.
 */
static void hot_edge_run(u32 pay, struct vqf_dax_stats *st, u32 *fuse)
{
	struct harness *h = &H;
	u64 x = 0x9e3779b97f4a7c15ull;
	unsigned int j;

	pol_init_pay(h, 8, pay);
	*fuse = 0;
	for (j = 0; j < 4000; j++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (acc(h, 0, ((x >> 33) % 10) * RS, BIG, 4096, 0))
			(*fuse)++;
	}
	vqf_dax_stats_read(&h->w, st);
	h_check_quiet(h);
}

static void test_hot_set_edge(void **state)
{
	struct vqf_dax_stats old, pay;
	u32 fuse_old, fuse_pay;

	(void)state;
	hot_edge_run(1, &old, &fuse_old);
	hot_edge_run(8, &pay, &fuse_pay);
	print_message("hot set edge: pay 1: %llu setups, %u READs, %llu wasted; pay 8: %llu setups, %u READs, %llu wasted, %llu verdicts\n",
		      (unsigned long long)old.setups, fuse_old,
		      (unsigned long long)old.wasted,
		      (unsigned long long)pay.setups, fuse_pay,
		      (unsigned long long)pay.wasted,
		      (unsigned long long)pay.pol_thrash);
	assert_int_equal(old.pol_thrash, 0);
	assert_int_equal(fuse_old, 0);
	assert_true(old.setups > 400);	/* a miss every few reads */
	assert_true(pay.pol_thrash >= 1);
	/* far fewer mappings; most reads still hit the window */
	assert_true(pay.setups * 4 < old.setups);
	assert_true(fuse_pay < 4000 / 2);
	assert_true(pay.hits > 4000 / 2);
}

/* Small files: the first use through FUSE, the second maps. */
static void test_small_file(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;

	(void)state;
	pol_init(h, 8);
	assert_int_equal(acc(h, 0, 0, RS / 4 - 1, 100, 0), VQF_DAX_USE_FUSE);
	assert_int_equal(setups_logged(h), 0);
	assert_int_equal(acc(h, 0, 0, RS / 4 - 1, 100, 0), 0);
	assert_int_equal(setups_logged(h), 1);
	assert_int_equal(acc(h, 0, 0, RS / 4 - 1, 100, 0), 0);	/* hit */
	assert_int_equal(setups_logged(h), 1);
	/* a file of small_size bytes is not small: maps at once */
	assert_int_equal(acc(h, 1, 0, RS / 4, 100, 0), 0);
	assert_int_equal(setups_logged(h), 2);
	/* mmap maps a small file at its first use */
	assert_int_equal(acc(h, 2, 0, 10, 10, VQF_DAX_HINT_MMAP), 0);
	assert_int_equal(setups_logged(h), 3);
	/* so does a small file whose first use was its mmap */
	assert_int_equal(acc(h, 3, 0, 10, 10, VQF_DAX_HINT_MMAP), 0);
	h->in_evict = true;
	h->ino[3].dying = true;
	{
		struct fuse_removemapping_one one[2];

		assert_int_equal(vqf_dax_inode_evict(&h->w, &h->ino[3].di,
						     one, 2), 1);
	}
	h->in_evict = false;
	h->ino[3].dying = false;
	assert_int_equal(acc(h, 3, 0, 10, 10, 0), 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.pol_small, 1);
	assert_int_equal(st.pol_mmap, 2);
	assert_int_equal(st.pol_window, 3);
	/* eviction is not pressure: nothing wasted */
	assert_int_equal(st.wasted, 0);
	h_check_quiet(h);
}

/*
 * The crowd: five small files each map once in a window of two ranges,
 * three of the mappings are reclaimed unused; a sixth small file then
 * does not map (the crowd backs off) until the backoff is over.
 */
static void test_crowd(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_policy p;
	struct vqf_dax_stats st;
	unsigned int n0;
	int i;

	(void)state;
	pol_init(h, 2);
	p = h->w.policy;
	p.thrash_min = 3;
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &p), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(acc(h, i, 0, 100, 100, 0), VQF_DAX_USE_FUSE);
	for (i = 0; i < 5; i++)
		assert_int_equal(acc(h, i, 0, 100, 100, 0), 0);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.setups, 5);
	assert_int_equal(st.wasted, 3);
	assert_int_equal(h->w.crowd.setups, 5);
	assert_int_equal(h->w.crowd.wasted, 3);
	n0 = setups_logged(h);
	assert_int_equal(acc(h, 5, 0, 100, 100, 0), VQF_DAX_USE_FUSE);
	assert_true(h->w.crowd.backed);
	assert_int_equal(h->w.crowd.until, clk - 1 + 100);
	assert_int_equal(acc(h, 5, 0, 100, 100, 0), VQF_DAX_USE_FUSE);
	/* a small file whose own range was wasted: its own thrash */
	assert_int_equal(acc(h, 0, 0, 100, 100, 0), VQF_DAX_USE_FUSE);
	assert_true(h->ino[0].di.pol.backed);
	/* a big file is not in the crowd */
	assert_int_equal(acc(h, 5, 8 * RS, BIG, 100, 0), 0);
	assert_int_equal(setups_logged(h), n0 + 1);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.pol_crowd, 2);
	assert_int_equal(st.pol_thrash, 1);
	/* over: a small file maps again */
	clk = h->w.crowd.until;
	assert_int_equal(acc(h, 5, 0, 100, 100, 0), 0);
	assert_int_equal(setups_logged(h), n0 + 2);
	assert_false(h->w.crowd.backed);
	assert_int_equal(h->w.crowd.setups, 1);
	h_check_quiet(h);
}

/*
 * dax=always: vqf_dax_map_begin() and map_begin_auto() with no hint map
 * everything, the thrash scan included; the counters still see the waste.
 */
static void test_always_bypasses(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	struct vqf_dax_map m;
	unsigned int j;

	(void)state;
	pol_init(h, 8);
	for (j = 0; j < 100; j++) {
		assert_int_equal(vqf_dax_map_begin(&h->w, &h->ino[0].di,
						   j * RS, 0, &m), 0);
		vqf_dax_map_end(&h->w, &m);
		assert_int_equal(vqf_dax_map_begin_auto(&h->w, &h->ino[1].di,
							j * RS, 0, NULL, &m),
				 0);
		vqf_dax_map_end(&h->w, &m);
	}
	/* a small file too */
	assert_int_equal(vqf_dax_map_begin_auto(&h->w, &h->ino[2].di, 0, 0,
						NULL, &m), 0);
	vqf_dax_map_end(&h->w, &m);
	vqf_dax_stats_read(&h->w, &st);
	assert_int_equal(st.setups, 201);
	assert_int_equal(setups_logged(h), 201);
	assert_int_equal(st.pol_window + st.pol_mmap + st.pol_small +
			 st.pol_thrash + st.pol_backoff, 0);
	assert_true(st.wasted >= 180);
	/* the state was kept (stats) but never acted on */
	assert_false(h->ino[0].di.pol.backed);
	assert_int_equal(h->ino[0].di.pol.uses, 0);
	h_check_quiet(h);
	/* auto with bad flags or positions fails as map_begin does */
	{
		struct vqf_dax_hint hint = { BIG, 0, 0, 0 };

		assert_int_equal(vqf_dax_map_begin_auto(&h->w, &h->ino[0].di,
							0, 0x80, &hint, &m),
				 -EINVAL);
		assert_int_equal(vqf_dax_map_begin_auto(&h->w, &h->ino[0].di,
						VQF_DAX_MAX_FOFFSET + 1, 0,
						&hint, &m), -EFBIG);
	}
}

/* ---- random mix against a model ---- */

#define MI	3		/* inodes */
#define MK	24		/* ranges per file */

struct mstate {
	u64 until;
	u32 setups, wasted, uses;
	u8 level;
	bool backed, small;
};

struct mmodel {
	struct mstate s[MI];
	struct mstate crowd;
	int moff[MI][MK];	/* range index + 1 mapping (i, k), 0: none */
	u32 uses[MI][MK];	/* uses of mapping (i, k); PAID: paid at once */
	u64 size[MI];
	unsigned int why[6], decays, max_level;
	unsigned int flushed;		/* stale ranges flushed (root) */
};

#define PAID	0xffffU

/* pay_uses is the variant's (struct mvariant) */
static struct vqf_dax_policy MP = {
	.small_size = 3 * RS,
	.small_uses = 2,
	.used_bytes = RS / 2,
	.thrash_min = 3,
	.thrash_pct = 50,
	.sample = 8,
	.backoff = 20,
	.backoff_shift_max = 2,
};

static bool m_thrashing(const struct mstate *s, u32 min)
{
	return s->wasted >= min &&
	       (u64)s->wasted * 100 >= (u64)MP.thrash_pct * s->setups;
}

/* still backing off; over: a fresh sample */
static bool m_backing(struct mstate *s, u64 now)
{
	if (s->backed && now < s->until)
		return true;
	if (s->backed) {
		s->backed = false;
		s->setups = 0;
		s->wasted = 0;
	}
	return false;
}

static void m_arm(struct mstate *s, u64 now)
{
	u32 sh = s->level < MP.backoff_shift_max ? s->level :
		 MP.backoff_shift_max;

	s->until = now + (MP.backoff << sh);
	s->backed = true;
	if (s->level < 255)
		s->level++;
	s->setups = 0;
	s->wasted = 0;
}

/* The rules of DAX POLICY, written out again. */
static int m_decide(struct mmodel *md, struct mstate *s, u64 size, u64 now,
		    bool mmap)
{
	u32 uses = s->uses, min = MP.thrash_min;

	if (s->uses != 0xffffffffU)
		s->uses++;
	s->small = size < MP.small_size;
	/* a file of fewer ranges than thrash_min: all of them */
	if (size < (u64)min * RS)
		min = size ? (u32)((size + RS - 1) / RS) : 1;
	if (mmap)
		return VQF_DAX_WHY_MMAP;
	if (m_backing(s, now))
		return VQF_DAX_WHY_BACKOFF;
	if (m_thrashing(s, min)) {
		m_arm(s, now);
		return VQF_DAX_WHY_THRASH;
	}
	if (!s->small)
		return VQF_DAX_WHY_WINDOW;
	if (m_backing(&md->crowd, now))
		return VQF_DAX_WHY_CROWD;
	if (m_thrashing(&md->crowd, MP.thrash_min)) {
		m_arm(&md->crowd, now);
		return VQF_DAX_WHY_CROWD;
	}
	if (uses < MP.small_uses)
		return VQF_DAX_WHY_SMALL;
	return VQF_DAX_WHY_WINDOW;
}

static void m_fade(struct mmodel *md, struct mstate *s)
{
	s->setups++;
	if (s->setups < MP.sample)
		return;
	if (!m_thrashing(s, MP.thrash_min) && s->level) {
		s->level--;
		md->decays++;
	}
	s->setups /= 2;
	s->wasted /= 2;
}

static void m_setup(struct mmodel *md, int i)
{
	m_fade(md, &md->s[i]);
	if (md->s[i].small)
		m_fade(md, &md->crowd);
}

static void m_use(u32 *uses)
{
	if (*uses < PAID)
		(*uses)++;
}

/* Apply the wire log: setups (new or upgrade) and removals. */
static void m_learn(struct harness *h, struct mmodel *md, bool pressure,
		    bool first_paid)
{
	unsigned int e;
	int i, k;

	for (e = 0; e < h->nlog; e++) {
		const struct h_event *ev = &h->log[e];
		int r = (int)(ev->moffset / RS) + 1;

		if (ev->nodeid == H_ROOT_ID) {
			/* a flush of stale ranges: no inode's, no pressure */
			assert_true(ev->kind == H_EV_REMOVE);
			for (i = 0; i < MI; i++)
				for (k = 0; k < MK; k++)
					assert_int_not_equal(md->moff[i][k],
							     r);
			md->flushed++;
			continue;
		}
		i = (int)ev->nodeid - 100;
		assert_true(i >= 0 && i < MI);
		if (ev->kind == H_EV_SETUP) {
			k = (int)(ev->foffset / RS);
			if (md->moff[i][k] == r)
				continue;	/* upgrade */
			assert_int_equal(md->moff[i][k], 0);
			md->moff[i][k] = r;
			md->uses[i][k] = first_paid ? PAID : 0;
			m_setup(md, i);
			continue;
		}
		assert_true(ev->kind == H_EV_REMOVE);
		for (k = 0; k < MK; k++)
			if (md->moff[i][k] == r)
				break;
		assert_true(k < MK);
		if (pressure &&
		    md->uses[i][k] < (MP.pay_uses ? MP.pay_uses : 1)) {
			md->s[i].wasted++;
			if (md->s[i].small)
				md->crowd.wasted++;
		}
		md->moff[i][k] = 0;
		md->uses[i][k] = 0;
	}
	h->nlog = 0;
}

static void m_cmp(const struct vqf_dax_pstate *p, const struct mstate *s,
		  bool small)
{
	assert_int_equal(p->setups, s->setups);
	assert_int_equal(p->wasted, s->wasted);
	assert_int_equal(p->level, s->level);
	assert_int_equal(p->backed, s->backed);
	if (small)
		assert_int_equal(p->small, s->small);
	if (s->backed)
		assert_int_equal(p->until, s->until);
}

/* A range's uses as lib will count them: touches are folded in lazily. */
static u32 lib_uses(const struct vqf_dax_range *r)
{
	u64 n = r->uses + (r->touches - r->touches_seen);

	return n > PAID ? PAID : (u32)n;
}

static void m_compare(struct harness *h, struct mmodel *md)
{
	int i, k;

	h_check_quiet(h);
	m_cmp(&h->w.crowd, &md->crowd, false);
	for (i = 0; i < MI; i++) {
		const struct vqf_dax_pstate *p = &h->ino[i].di.pol;
		const struct mstate *s = &md->s[i];

		m_cmp(p, s, true);
		assert_int_equal(p->uses, s->uses);
		for (k = 0; k < MK; k++) {
			int r = h_mapped(h, i, (u64)k * RS);

			assert_int_equal(r + 1, md->moff[i][k]);
			if (r >= 0)
				assert_int_equal(lib_uses(&h->ranges[r]),
						 md->uses[i][k]);
		}
	}
}

struct mvariant {
	u32 stale_max;
	u32 pay_uses;
	bool touch;	/* also touch ranges behind lib's back */
};

/*
 * *@state: the variant.  Deferred teardown must not change a decision:
 * an eviction counts nothing, a stale range's reuse is a setup like any.
 * With pay_uses, a range reclaimed before its uses (references and
 * touches after its setup) reach it is wasted.
 */
static void test_random_vs_model(void **state)
{
	static struct fuse_removemapping_one scratch[4];
	const struct mvariant *v = *state;
	u32 stale_max = v->stale_max;
	static struct mmodel md;
	struct harness *h = &H;
	struct dax_rand rnd = { dax_test_seed(0x9011c7, "dax-policy") };
	unsigned int steps = dax_under_valgrind() ? 4000 : 40000;
	unsigned int step, op;
	struct vqf_dax_map m;
	u64 now = 0;
	int i, k, ret, want;

	memset(&md, 0, sizeof(md));
	MP.pay_uses = v->pay_uses;
	h_init_stale(h, 6, RS, 0, 2, stale_max);
	assert_int_equal(vqf_dax_window_set_policy(&h->w, &MP), 0);
	md.size[0] = RS;		/* small */
	md.size[1] = MK * RS;
	md.size[2] = MK * RS;
	for (step = 0; step < steps; step++) {
		op = (unsigned int)dax_rand_below(&rnd, 100);
		i = (int)dax_rand_below(&rnd, MI);
		/* inode 1 reuses a few ranges, inode 2 scans all of them */
		k = (int)dax_rand_below(&rnd, i == 1 ? 4 : MK);
		now += dax_rand_below(&rnd, 3);
		if (op < 85) {
			bool mmap = dax_rand_below(&rnd, 20) == 0;
			bool write = dax_rand_below(&rnd, 4) == 0;
			u64 len = dax_rand_below(&rnd, 8) ? 64 : RS / 2;
			struct vqf_dax_hint hint = {
				md.size[i], now, len,
				mmap ? VQF_DAX_HINT_MMAP : 0
			};

			if (md.moff[i][k]) {
				want = 0;
				m_use(&md.uses[i][k]);
			} else {
				want = m_decide(&md, &md.s[i], md.size[i],
						now, mmap);
				md.why[want]++;
				want = vqf_dax_why_fuse(want) ?
				       VQF_DAX_USE_FUSE : 0;
			}
			ret = vqf_dax_map_begin_auto(&h->w, &h->ino[i].di,
					(u64)k * RS + dax_rand_below(&rnd, RS),
					write ? VQF_DAX_MAP_WRITE : 0, &hint,
					&m);
			assert_int_equal(ret, want);
			if (!ret)
				vqf_dax_map_end(&h->w, &m);
			m_learn(h, &md, true, len >= MP.used_bytes || mmap);
		} else if (op < 90 && v->touch) {
			/* a caller's cached hits, of any range */
			unsigned int n = 1 + (unsigned int)dax_rand_below(&rnd,
									 3);
			int r = (int)dax_rand_below(&rnd, 6), j, kk;

			while (n--) {
				vqf_dax_range_touch(&h->ranges[r]);
				for (j = 0; j < MI; j++)
					for (kk = 0; kk < MK; kk++)
						if (md.moff[j][kk] == r + 1)
							m_use(&md.uses[j][kk]);
			}
		} else if (op < 95) {
			vqf_dax_reclaim(&h->w);
			m_learn(h, &md, true, false);
		} else {
			ret = (int)h_evict(h, i, scratch, 4);
			assert_true(ret >= 0);
			m_learn(h, &md, false, false);
			/* what the wire did not remove was left stale */
			for (k = 0; k < MK; k++) {
				assert_true(stale_max || !md.moff[i][k]);
				md.moff[i][k] = 0;
				md.uses[i][k] = 0;
			}
			/* the inode comes back as a new one */
			vqf_dax_inode_init(&h->ino[i].di, 100 + i, ~0ULL);
			memset(&md.s[i], 0, sizeof(md.s[i]));
		}
		if (md.s[i].level > md.max_level)
			md.max_level = md.s[i].level;
		m_compare(h, &md);
	}
	print_message("dax-policy: window %u small %u thrash %u backoff %u crowd %u mmap %u decays %u max level %u\n",
		      md.why[VQF_DAX_WHY_WINDOW], md.why[VQF_DAX_WHY_SMALL],
		      md.why[VQF_DAX_WHY_THRASH], md.why[VQF_DAX_WHY_BACKOFF],
		      md.why[VQF_DAX_WHY_CROWD], md.why[VQF_DAX_WHY_MMAP],
		      md.decays, md.max_level);
	/* the mix reached every rule */
	for (k = 0; k < 6; k++)
		assert_true(md.why[k] > 0);
	assert_true(md.decays > 0);
	assert_true(md.max_level >= 2);
	if (stale_max) {
		struct vqf_dax_stats st;

		vqf_dax_stats_read(&h->w, &st);
		print_message("dax-policy: stale deferred %llu reused %llu flushed %llu\n",
			      (unsigned long long)st.stale_deferred,
			      (unsigned long long)st.stale_reused,
			      (unsigned long long)st.stale_flushed);
		assert_true(st.stale_deferred && st.stale_reused);
		assert_int_equal(st.stale_flushed, md.flushed);
	}
}

int main(void)
{
	static const struct mvariant plain = { 0, 0, false };
	static const struct mvariant stale3 = { 3, 0, false };
	static const struct mvariant pay3 = { 2, 3, true };

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_rules_off),
		cmocka_unit_test(test_defaults_and_set),
		cmocka_unit_test(test_thrash_backoff_return),
		cmocka_unit_test(test_level_decays),
		cmocka_unit_test(test_stream_never_backs_off),
		cmocka_unit_test(test_pay_uses),
		cmocka_unit_test(test_hot_set_edge),
		cmocka_unit_test(test_small_file),
		cmocka_unit_test(test_crowd),
		cmocka_unit_test(test_always_bypasses),
		cmocka_unit_test_prestate(test_random_vs_model,
					  (void *)&plain),
		cmocka_unit_test_prestate(test_random_vs_model,
					  (void *)&stale3),
		cmocka_unit_test_prestate(test_random_vs_model,
					  (void *)&pay3),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
