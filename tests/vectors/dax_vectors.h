/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dax_vectors.h - shared test vectors for the DAX window (vqf_dax.h,
 * vqf_dax_dev.h, vqf_itree.h).
 *
 * Plain C tables plus runners that use only the lib/ API, so the cmocka
 * program (tests/unit/dax/) and the in-kernel KTAP module iterate the same
 * cases the same way:
 *
 *   vqf_dax_vectors_count(), vqf_dax_vectors_name(i), vqf_dax_vectors_run(i)
 *
 * run() returns 0 when the case holds, else the line of the first failed
 * check.  Kernel-clean: no libc beyond vqf_compat.h, big state in static
 * storage (the runner is called from one thread), frames well under 1 KiB.
 *
 * The allocator cases drive vqf_dax.c with trivial single-threaded ops
 * whose sends go through the device checks (the locking protocol itself is
 * enforced by tests/unit/dax/dax_harness.h in userspace).
 *
 * Device cases start from one fixed map: a 16 MiB window, 4 KiB alignment,
 * mappings at [0, 2 MiB) (nodeid 1, read-only) and [4 MiB, 6 MiB) (nodeid
 * 1, read-write); slots as the case says.  Each rejection must move its
 * own counter by one and no other counter, and leave the map as it was.
 */
#ifndef VQF_DAX_VECTORS_H
#define VQF_DAX_VECTORS_H

#include "vqf_dax.h"
#include "vqf_dax_dev.h"
#include "vqf_itree.h"

#define VQF_DAX_VEC_CHECK(cond) \
	do { if (!(cond)) return __LINE__; } while (0)
#define VQF_DAX_VEC_MIB		(1024ULL * 1024)
#define VQF_DAX_VEC_WINDOW	(16 * VQF_DAX_VEC_MIB)
#define VQF_DAX_VEC_ALIGN	4096ULL
#define VQF_DAX_VEC_RD		FUSE_SETUPMAPPING_FLAG_READ
#define VQF_DAX_VEC_WR		FUSE_SETUPMAPPING_FLAG_WRITE
#define VQF_DAX_VEC_U64_MAX	(~0ULL)

/* Offsets of the counters in struct vqf_dax_dev_stats. */
#define VQF_DAX_VEC_CTR(f)	offsetof(struct vqf_dax_dev_stats, f)
#define VQF_DAX_VEC_NO_CTR	((size_t)-1)

struct vqf_dax_setup_vec {
	const char *name;
	u64 fh, foffset, len, flags, moffset;
	s32 size_delta;		/* added to sizeof(fuse_setupmapping_in) */
	u64 file_size;
	bool ro_file;
	u32 nr_slots;		/* 0: 8 */
	int err;
	size_t ctr;		/* counter that must move (or a success one) */
	u32 used_after;		/* mappings afterwards */
};

static const struct vqf_dax_setup_vec vqf_dax_setup_vecs[] = {
	{ "setup: new mapping", 9, 2 * VQF_DAX_VEC_MIB, 2 * VQF_DAX_VEC_MIB,
	  VQF_DAX_VEC_RD, 2 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false,
	  0, 0, VQF_DAX_VEC_CTR(setups), 3 },
	{ "setup: upgrade replaces the identical span", 9, 0,
	  2 * VQF_DAX_VEC_MIB, VQF_DAX_VEC_RD | VQF_DAX_VEC_WR, 0, 0,
	  VQF_DAX_VEC_U64_MAX, false, 0, 0, VQF_DAX_VEC_CTR(replaced), 2 },
	{ "setup: last page of the window", 9, 0, 4096, VQF_DAX_VEC_RD,
	  VQF_DAX_VEC_WINDOW - 4096, 0, 1, false, 0, 0,
	  VQF_DAX_VEC_CTR(setups), 3 },
	{ "setup: adjacent below a mapping", 9, 0, 4096, VQF_DAX_VEC_WR,
	  4 * VQF_DAX_VEC_MIB - 4096, 0, 1, false, 0, 0,
	  VQF_DAX_VEC_CTR(setups), 3 },
	{ "setup: tail past EOF is fine", 9, 4096, 2 * VQF_DAX_VEC_MIB,
	  VQF_DAX_VEC_RD, 8 * VQF_DAX_VEC_MIB, 0, 4097, false, 0, 0,
	  VQF_DAX_VEC_CTR(setups), 3 },
	{ "setup: short in-arg", 9, 0, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, -1, VQF_DAX_VEC_U64_MAX, false, 0, -EBADMSG,
	  VQF_DAX_VEC_CTR(setup_bad_size), 2 },
	{ "setup: long in-arg", 9, 0, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 8, VQF_DAX_VEC_U64_MAX, false, 0, -EBADMSG,
	  VQF_DAX_VEC_CTR(setup_bad_size), 2 },
	{ "setup: unknown flag", 9, 0, 4096, VQF_DAX_VEC_RD | 4,
	  8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EOPNOTSUPP,
	  VQF_DAX_VEC_CTR(setup_bad_flags), 2 },
	{ "setup: no access flag", 9, 0, 4096, 0, 8 * VQF_DAX_VEC_MIB, 0,
	  VQF_DAX_VEC_U64_MAX, false, 0, -EOPNOTSUPP,
	  VQF_DAX_VEC_CTR(setup_bad_flags), 2 },
	{ "setup: zero length", 9, 0, 0, VQF_DAX_VEC_RD, 8 * VQF_DAX_VEC_MIB,
	  0, VQF_DAX_VEC_U64_MAX, false, 0, -EINVAL,
	  VQF_DAX_VEC_CTR(setup_unaligned), 2 },
	{ "setup: moffset unaligned", 9, 0, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB + 512, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EINVAL,
	  VQF_DAX_VEC_CTR(setup_unaligned), 2 },
	{ "setup: len unaligned", 9, 0, 4095, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EINVAL,
	  VQF_DAX_VEC_CTR(setup_unaligned), 2 },
	{ "setup: foffset unaligned", 9, 1, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EINVAL,
	  VQF_DAX_VEC_CTR(setup_unaligned), 2 },
	{ "setup: past the window end", 9, 0, 8192, VQF_DAX_VEC_RD,
	  VQF_DAX_VEC_WINDOW - 4096, 0, VQF_DAX_VEC_U64_MAX, false, 0, -ERANGE,
	  VQF_DAX_VEC_CTR(setup_out_of_window), 2 },
	{ "setup: moffset + len wraps", 9, 0, 8192, VQF_DAX_VEC_RD,
	  VQF_DAX_VEC_U64_MAX - 4095, 0, VQF_DAX_VEC_U64_MAX, false, 0,
	  -ERANGE, VQF_DAX_VEC_CTR(setup_out_of_window), 2 },
	{ "setup: len larger than the window", 9, 0,
	  VQF_DAX_VEC_WINDOW + 4096, VQF_DAX_VEC_RD, 0, 0,
	  VQF_DAX_VEC_U64_MAX, false, 0, -ERANGE,
	  VQF_DAX_VEC_CTR(setup_out_of_window), 2 },
	{ "setup: foffset + len wraps", 9, VQF_DAX_VEC_U64_MAX - 4095, 8192,
	  VQF_DAX_VEC_RD, 8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 0,
	  -EFBIG, VQF_DAX_VEC_CTR(setup_file_limit), 2 },
	{ "setup: foffset past loff_t", 9, 1ULL << 63, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EFBIG,
	  VQF_DAX_VEC_CTR(setup_file_limit), 2 },
	{ "setup: foffset at EOF", 9, 8192, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, 8192, false, 0, -ENXIO,
	  VQF_DAX_VEC_CTR(setup_beyond_eof), 2 },
	{ "setup: empty file", 9, 0, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, 0, false, 0, -ENXIO,
	  VQF_DAX_VEC_CTR(setup_beyond_eof), 2 },
	{ "setup: write on a read-only file", 9, 0, 4096,
	  VQF_DAX_VEC_RD | VQF_DAX_VEC_WR, 8 * VQF_DAX_VEC_MIB, 0,
	  VQF_DAX_VEC_U64_MAX, true, 0, -EACCES,
	  VQF_DAX_VEC_CTR(setup_write_denied), 2 },
	{ "setup: overlaps the head of a mapping", 9, 0, 8192,
	  VQF_DAX_VEC_RD, 4 * VQF_DAX_VEC_MIB - 4096, 0, VQF_DAX_VEC_U64_MAX,
	  false, 0, -EBUSY, VQF_DAX_VEC_CTR(setup_overlap), 2 },
	{ "setup: inside a mapping", 9, 0, 4096, VQF_DAX_VEC_RD, 4096, 0,
	  VQF_DAX_VEC_U64_MAX, false, 0, -EBUSY,
	  VQF_DAX_VEC_CTR(setup_overlap), 2 },
	{ "setup: covers two mappings", 9, 0, 6 * VQF_DAX_VEC_MIB,
	  VQF_DAX_VEC_RD, 0, 0, VQF_DAX_VEC_U64_MAX, false, 0, -EBUSY,
	  VQF_DAX_VEC_CTR(setup_overlap), 2 },
	{ "setup: no free slot", 9, 0, 4096, VQF_DAX_VEC_RD,
	  8 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false, 2, -ENOSPC,
	  VQF_DAX_VEC_CTR(setup_no_slot), 2 },
	{ "setup: replace needs no free slot", 9, 0, 2 * VQF_DAX_VEC_MIB,
	  VQF_DAX_VEC_RD, 4 * VQF_DAX_VEC_MIB, 0, VQF_DAX_VEC_U64_MAX, false,
	  2, 0, VQF_DAX_VEC_CTR(replaced), 2 },
};

#define VQF_DAX_REMOVE_VEC_MAX	4

struct vqf_dax_remove_vec {
	const char *name;
	u32 count;		/* header count field */
	u32 nr;			/* entries actually present */
	struct fuse_removemapping_one e[VQF_DAX_REMOVE_VEC_MAX];
	s32 size_delta;
	int err;
	size_t ctr;
	u32 used_after;
};

static const struct vqf_dax_remove_vec vqf_dax_remove_vecs[] = {
	{ "remove: one", 1, 1, { { 0, 2 * VQF_DAX_VEC_MIB } }, 0, 0,
	  VQF_DAX_VEC_CTR(removes), 1 },
	{ "remove: both in one batch", 2, 2,
	  { { 4 * VQF_DAX_VEC_MIB, 2 * VQF_DAX_VEC_MIB },
	    { 0, 2 * VQF_DAX_VEC_MIB } }, 0, 0, VQF_DAX_VEC_CTR(removes), 0 },
	{ "remove: shorter than the header", 1, 0, { { 0 } }, -1, -EBADMSG,
	  VQF_DAX_VEC_CTR(remove_bad_size), 2 },
	{ "remove: count says 2, one entry", 2, 1,
	  { { 0, 2 * VQF_DAX_VEC_MIB } }, 0, -EBADMSG,
	  VQF_DAX_VEC_CTR(remove_bad_size), 2 },
	{ "remove: trailing bytes", 1, 1, { { 0, 2 * VQF_DAX_VEC_MIB } }, 3,
	  -EBADMSG, VQF_DAX_VEC_CTR(remove_bad_size), 2 },
	{ "remove: count 0", 0, 0, { { 0 } }, 0, -ENODATA,
	  VQF_DAX_VEC_CTR(remove_empty), 2 },
	{ "remove: count above the page limit", VQF_REMOVEMAPPING_MAX + 1, 1,
	  { { 0, 2 * VQF_DAX_VEC_MIB } }, 0, -E2BIG,
	  VQF_DAX_VEC_CTR(remove_too_many), 2 },
	{ "remove: count 0xffffffff", 0xffffffffU, 1,
	  { { 0, 2 * VQF_DAX_VEC_MIB } }, 0, -E2BIG,
	  VQF_DAX_VEC_CTR(remove_too_many), 2 },
	{ "remove: unaligned moffset", 1, 1, { { 512, 2 * VQF_DAX_VEC_MIB } },
	  0, -EINVAL, VQF_DAX_VEC_CTR(remove_unaligned), 2 },
	{ "remove: zero length", 1, 1, { { 0, 0 } }, 0, -EINVAL,
	  VQF_DAX_VEC_CTR(remove_unaligned), 2 },
	{ "remove: past the window", 1, 1,
	  { { VQF_DAX_VEC_WINDOW, 4096 } }, 0, -ERANGE,
	  VQF_DAX_VEC_CTR(remove_out_of_window), 2 },
	{ "remove: wraps", 1, 1,
	  { { VQF_DAX_VEC_U64_MAX - 4095, 8192 } }, 0, -ERANGE,
	  VQF_DAX_VEC_CTR(remove_out_of_window), 2 },
	{ "remove: nothing mapped there", 1, 1,
	  { { 8 * VQF_DAX_VEC_MIB, 2 * VQF_DAX_VEC_MIB } }, 0, -ENOENT,
	  VQF_DAX_VEC_CTR(remove_not_mapped), 2 },
	{ "remove: part of a mapping", 1, 1, { { 0, 4096 } }, 0, -ENOENT,
	  VQF_DAX_VEC_CTR(remove_not_mapped), 2 },
	{ "remove: good then unmapped: nothing removed", 2, 2,
	  { { 0, 2 * VQF_DAX_VEC_MIB },
	    { 2 * VQF_DAX_VEC_MIB, 2 * VQF_DAX_VEC_MIB } }, 0, -ENOENT,
	  VQF_DAX_VEC_CTR(remove_not_mapped), 2 },
	{ "remove: same mapping twice", 3, 3,
	  { { 0, 2 * VQF_DAX_VEC_MIB },
	    { 4 * VQF_DAX_VEC_MIB, 2 * VQF_DAX_VEC_MIB },
	    { 0, 2 * VQF_DAX_VEC_MIB } }, 0, -ENOTUNIQ,
	  VQF_DAX_VEC_CTR(remove_duplicate), 2 },
};

/* ---- shared state (static: kernel stacks are small) ---- */

struct vqf_dax_vec_state {
	struct vqf_dax_dev_map m;
	struct vqf_dax_dev_mapping slots[8];
	struct vqf_dax_dev_stats st;
	struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	u8 wire[sizeof(struct fuse_removemapping_in) +
		(VQF_REMOVEMAPPING_MAX + 1) *
		sizeof(struct fuse_removemapping_one)];
};

static inline struct vqf_dax_vec_state *vqf_dax_vec_state(void)
{
	static struct vqf_dax_vec_state s;

	return &s;
}

static inline u64 vqf_dax_vec_ctr(const struct vqf_dax_dev_stats *st,
				  size_t off)
{
	u64 v;

	memcpy(&v, (const u8 *)st + off, sizeof(v));
	return v;
}

/* The fixed starting map; returns 0 or a line. */
static inline int vqf_dax_vec_preload(struct vqf_dax_vec_state *s,
				      u32 nr_slots)
{
	struct fuse_setupmapping_in in = { 0 };

	memset(&s->st, 0, sizeof(s->st));
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_map_init(&s->m, VQF_DAX_VEC_WINDOW,
						VQF_DAX_VEC_ALIGN, s->slots,
						nr_slots ? nr_slots : 8));
	in.len = 2 * VQF_DAX_VEC_MIB;
	in.flags = VQF_DAX_VEC_RD;
	VQF_DAX_VEC_CHECK(vqf_dax_dev_setup_commit(&s->m, 1, &in, &s->st));
	in.moffset = 4 * VQF_DAX_VEC_MIB;
	in.foffset = 2 * VQF_DAX_VEC_MIB;
	in.flags |= VQF_DAX_VEC_WR;
	VQF_DAX_VEC_CHECK(vqf_dax_dev_setup_commit(&s->m, 1, &in, &s->st));
	memset(&s->st, 0, sizeof(s->st));
	return 0;
}

/* Exactly counter @ctr moved, by one. */
static inline int vqf_dax_vec_only_ctr(const struct vqf_dax_dev_stats *st,
				       size_t ctr)
{
	u64 sum = 0;
	size_t off;

	for (off = 0; off < sizeof(*st); off += sizeof(u64))
		sum += vqf_dax_vec_ctr(st, off);
	if (ctr == VQF_DAX_VEC_NO_CTR)
		return sum == 0;
	/* a replacing setup moves "replaced" and "setups" */
	if (ctr == VQF_DAX_VEC_CTR(replaced))
		return sum == 2 && st->replaced == 1 && st->setups == 1;
	return sum == vqf_dax_vec_ctr(st, ctr) && sum >= 1;
}

static inline int vqf_dax_run_setup_vec(const struct vqf_dax_setup_vec *v)
{
	struct vqf_dax_vec_state *s = vqf_dax_vec_state();
	struct fuse_setupmapping_in in, copy;
	const struct vqf_dax_dev_mapping *rep, *d;
	struct vqf_dax_dev_limits lim;
	u8 wire[sizeof(in) + 8];
	size_t size = sizeof(in) + v->size_delta;
	int ret, line;

	line = vqf_dax_vec_preload(s, v->nr_slots);
	if (line)
		return line;
	lim.file_size = v->file_size;
	lim.max_bytes = VQF_DAX_MAX_FOFFSET + 1;
	lim.writable = !v->ro_file;
	vqf_dax_fill_setupmapping(&in, v->fh, v->foffset, v->len, v->moffset,
				  false);
	in.flags = v->flags;
	memset(wire, 0xa5, sizeof(wire));
	memcpy(wire, &in, sizeof(in));

	ret = vqf_dax_dev_setup_check(&s->m, wire, size, &lim, &s->st, &copy,
				      &rep);
	VQF_DAX_VEC_CHECK(ret == v->err);
	if (!ret) {
		VQF_DAX_VEC_CHECK(!memcmp(&copy, &in, sizeof(in)));
		VQF_DAX_VEC_CHECK(!rep == (v->ctr != VQF_DAX_VEC_CTR(replaced)));
		d = vqf_dax_dev_setup_commit(&s->m, 7, &copy, &s->st);
		VQF_DAX_VEC_CHECK(d);
		VQF_DAX_VEC_CHECK(!rep || d == rep);
		VQF_DAX_VEC_CHECK(vqf_dax_dev_lookup(&s->m, v->moffset) == d);
		VQF_DAX_VEC_CHECK(d->nodeid == 7 && d->foffset == v->foffset &&
				  d->flags == v->flags && d->fh == v->fh);
	}
	VQF_DAX_VEC_CHECK(vqf_dax_vec_only_ctr(&s->st, v->ctr));
	VQF_DAX_VEC_CHECK(s->m.nr_used == v->used_after);
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_check(&s->m, NULL));
	/* the preloaded mappings are untouched unless replaced */
	d = vqf_dax_dev_lookup(&s->m, 4 * VQF_DAX_VEC_MIB);
	VQF_DAX_VEC_CHECK(d && (d->nodeid == 1 || rep == d));
	return 0;
}

static inline int vqf_dax_run_remove_vec(const struct vqf_dax_remove_vec *v)
{
	struct vqf_dax_vec_state *s = vqf_dax_vec_state();
	struct fuse_removemapping_in rin = { v->count };
	size_t size, hdr = sizeof(rin), one = sizeof(v->e[0]);
	u32 i, count = 99;
	int ret, line;

	line = vqf_dax_vec_preload(s, 0);
	if (line)
		return line;
	memset(s->wire, 0, sizeof(s->wire));
	memcpy(s->wire, &rin, hdr);
	for (i = 0; i < v->nr; i++)
		memcpy(s->wire + hdr + i * one, &v->e[i], one);
	size = hdr + v->nr * one + v->size_delta;

	ret = vqf_dax_dev_remove_check(&s->m, s->wire, size, &s->st, s->ents,
				       &count);
	VQF_DAX_VEC_CHECK(ret == v->err);
	if (ret) {
		VQF_DAX_VEC_CHECK(count == 0);
		VQF_DAX_VEC_CHECK(vqf_dax_vec_only_ctr(&s->st, v->ctr));
	} else {
		VQF_DAX_VEC_CHECK(count == v->nr);
		VQF_DAX_VEC_CHECK(vqf_dax_vec_only_ctr(&s->st,
						       VQF_DAX_VEC_NO_CTR));
		vqf_dax_dev_remove_commit(&s->m, s->ents, count, &s->st);
		VQF_DAX_VEC_CHECK(s->st.removes == v->nr);
		for (i = 0; i < v->nr; i++)
			VQF_DAX_VEC_CHECK(!vqf_dax_dev_lookup(&s->m,
							     v->e[i].moffset));
	}
	VQF_DAX_VEC_CHECK(s->m.nr_used == v->used_after);
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_check(&s->m, NULL));
	return 0;
}

/* ---- interval tree boundaries ---- */

static inline int vqf_dax_run_itree_bounds(void)
{
	static struct vqf_itree_node n[4];
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	static const u64 iv[4][2] = {
		{ 0, 0 }, { 0, VQF_DAX_VEC_U64_MAX },
		{ VQF_DAX_VEC_U64_MAX, VQF_DAX_VEC_U64_MAX }, { 10, 19 },
	};
	struct vqf_itree_node *x;
	unsigned int i, hits;

	for (i = 0; i < 4; i++) {
		n[i].start = iv[i][0];
		n[i].last = iv[i][1];
		VQF_DAX_VEC_CHECK(!vqf_itree_insert(&root, &n[i]));
	}
	VQF_DAX_VEC_CHECK(!vqf_itree_check(&root, NULL));
	hits = 0;
	for (x = vqf_itree_iter_first(&root, VQF_DAX_VEC_U64_MAX,
				      VQF_DAX_VEC_U64_MAX);
	     x; x = vqf_itree_iter_next(x, VQF_DAX_VEC_U64_MAX,
					VQF_DAX_VEC_U64_MAX))
		hits++;
	VQF_DAX_VEC_CHECK(hits == 2);
	x = vqf_itree_iter_first(&root, 20, 30);
	VQF_DAX_VEC_CHECK(x == &n[1]);
	VQF_DAX_VEC_CHECK(!vqf_itree_iter_next(x, 20, 30));
	x = vqf_itree_iter_first(&root, 19, 19);
	VQF_DAX_VEC_CHECK(x == &n[1]);
	VQF_DAX_VEC_CHECK(vqf_itree_iter_next(x, 19, 19) == &n[3]);
	vqf_itree_remove(&root, &n[1]);
	VQF_DAX_VEC_CHECK(!vqf_itree_check(&root, NULL));
	VQF_DAX_VEC_CHECK(!vqf_itree_iter_first(&root, 20, 30));
	VQF_DAX_VEC_CHECK(root.node->subtree_last == VQF_DAX_VEC_U64_MAX);
	vqf_itree_remove(&root, &n[2]);
	VQF_DAX_VEC_CHECK(root.node->subtree_last == 19);
	return 0;
}

/* ---- request building: what the guest sends, the device accepts ---- */

static inline int vqf_dax_run_req_roundtrip(void)
{
	struct vqf_dax_vec_state *s = vqf_dax_vec_state();
	static struct fuse_removemapping_one one[2];
	static u8 argbuf[64];
	static struct vqf_req req;
	struct fuse_removemapping_in rin;
	struct fuse_setupmapping_in in, copy;
	const struct vqf_dax_dev_mapping *rep;
	struct vqf_dax_dev_limits lim = { VQF_DAX_VEC_U64_MAX,
					  VQF_DAX_VEC_U64_MAX, true };
	u32 count;
	int line;

	line = vqf_dax_vec_preload(s, 0);
	if (line)
		return line;
	vqf_dax_fill_setupmapping(&in, 3, 6 * VQF_DAX_VEC_MIB,
				  2 * VQF_DAX_VEC_MIB, 8 * VQF_DAX_VEC_MIB,
				  true);
	VQF_DAX_VEC_CHECK(!vqf_dax_req_setupmapping(&req, 1, 5, &in));
	VQF_DAX_VEC_CHECK(!vqf_req_check_shape(&req, 0, false));
	VQF_DAX_VEC_CHECK(vqf_req_argbuf_size(&req) == 40);
	VQF_DAX_VEC_CHECK(!vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)));
	VQF_DAX_VEC_CHECK(req.in_h.opcode == FUSE_SETUPMAPPING);
	VQF_DAX_VEC_CHECK(req.in_h.nodeid == 5);
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_setup_check(&s->m, argbuf, 40, &lim,
						   &s->st, &copy, &rep));
	VQF_DAX_VEC_CHECK(vqf_dax_dev_setup_commit(&s->m, 5, &copy, &s->st));

	vqf_dax_fill_removemapping_in(&rin, 2);
	vqf_dax_fill_removemapping_one(&one[0], 8 * VQF_DAX_VEC_MIB,
				       2 * VQF_DAX_VEC_MIB);
	vqf_dax_fill_removemapping_one(&one[1], 0, 2 * VQF_DAX_VEC_MIB);
	VQF_DAX_VEC_CHECK(!vqf_dax_req_removemapping(&req, 2, 5, &rin, one));
	VQF_DAX_VEC_CHECK(!vqf_req_check_shape(&req, 0, false));
	VQF_DAX_VEC_CHECK(vqf_req_argbuf_size(&req) == 4 + 2 * 16);
	VQF_DAX_VEC_CHECK(!vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)));
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_remove_check(&s->m, argbuf, 36, &s->st,
						    s->ents, &count));
	vqf_dax_dev_remove_commit(&s->m, s->ents, count, &s->st);
	VQF_DAX_VEC_CHECK(s->m.nr_used == 1);

	rin.count = 0;
	VQF_DAX_VEC_CHECK(vqf_dax_req_removemapping(&req, 3, 5, &rin, one) ==
			  -EINVAL);
	rin.count = VQF_REMOVEMAPPING_MAX + 1;
	VQF_DAX_VEC_CHECK(vqf_dax_req_removemapping(&req, 3, 5, &rin, one) ==
			  -E2BIG);
	return 0;
}

/* ---- the allocator with trivial single-threaded ops ---- */

#define VQF_DAX_VEC_NR	300

struct vqf_dax_vec_alloc {
	struct vqf_dax_window w;
	struct vqf_dax_range ranges[VQF_DAX_VEC_NR];
	struct vqf_dax_inode ino[2];
	struct vqf_dax_dev_map m;
	struct vqf_dax_dev_mapping slots[VQF_DAX_VEC_NR];
	struct vqf_dax_dev_stats st;
	struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];
	u8 wire[sizeof(struct fuse_removemapping_in) +
		VQF_REMOVEMAPPING_MAX * sizeof(struct fuse_removemapping_one)];
	int w_held, dev_errors;
	unsigned int removes, kicks;
	unsigned int flushes;		/* removes with no inode (stale) */
	u32 flush_count;		/* entries of the last one */
};

static inline struct vqf_dax_vec_alloc *vqf_dax_vec_alloc(void)
{
	static struct vqf_dax_vec_alloc a;

	return &a;
}

static inline void vqf_dax_vec_wl(struct vqf_dax_window *w)
{
	vqf_dax_vec_alloc()->w_held++;
}

static inline void vqf_dax_vec_wu(struct vqf_dax_window *w)
{
	vqf_dax_vec_alloc()->w_held--;
}

static inline void vqf_dax_vec_ml(struct vqf_dax_window *w,
				  struct vqf_dax_inode *di, bool excl)
{
}

static inline void vqf_dax_vec_il(struct vqf_dax_window *w,
				  struct vqf_dax_inode *di)
{
}

static inline bool vqf_dax_vec_it(struct vqf_dax_window *w,
				  struct vqf_dax_inode *di)
{
	return true;
}

static inline bool vqf_dax_vec_get(struct vqf_dax_window *w,
				   struct vqf_dax_inode *di)
{
	return true;
}

static inline void vqf_dax_vec_kick(struct vqf_dax_window *w,
				    unsigned int delay_ms)
{
	vqf_dax_vec_alloc()->kicks++;
}

static inline void vqf_dax_vec_wake(struct vqf_dax_window *w)
{
}

/* The kicked worker runs right here; nothing freed means a dead end. */
static inline int vqf_dax_vec_wait(struct vqf_dax_window *w)
{
	vqf_dax_reclaim(w);
	return vqf_dax_nr_free(w) ? 0 : -EINTR;
}

static inline int vqf_dax_vec_setup(struct vqf_dax_window *w,
				    struct vqf_dax_inode *di,
				    const struct fuse_setupmapping_in *in)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_dev_limits lim = { VQF_DAX_VEC_U64_MAX,
					  VQF_DAX_MAX_FOFFSET + 1, true };
	const struct vqf_dax_dev_mapping *rep;
	struct fuse_setupmapping_in copy;
	int ret;

	ret = vqf_dax_dev_setup_check(&a->m, in, sizeof(*in), &lim, &a->st,
				      &copy, &rep);
	if (ret || a->w_held)
		a->dev_errors++;
	else
		vqf_dax_dev_setup_commit(&a->m, di->nodeid, &copy, &a->st);
	return ret;
}

static inline int vqf_dax_vec_remove(struct vqf_dax_window *w,
				     struct vqf_dax_inode *di,
				     const struct fuse_removemapping_in *in,
				     const struct fuse_removemapping_one *one)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	size_t n = in->count * sizeof(*one);
	u32 count;
	int ret;

	if (in->count > VQF_REMOVEMAPPING_MAX) {
		a->dev_errors++;
		return -E2BIG;
	}
	if (!di) {
		a->flushes++;
		a->flush_count = in->count;
	}
	memcpy(a->wire, in, sizeof(*in));
	memcpy(a->wire + sizeof(*in), one, n);
	ret = vqf_dax_dev_remove_check(&a->m, a->wire, sizeof(*in) + n,
				       &a->st, a->ents, &count);
	if (ret || a->w_held)
		a->dev_errors++;
	else
		vqf_dax_dev_remove_commit(&a->m, a->ents, count, &a->st);
	a->removes++;
	return ret;
}

static const struct vqf_dax_ops vqf_dax_vec_ops = {
	.window_lock = vqf_dax_vec_wl,
	.window_unlock = vqf_dax_vec_wu,
	.map_lock = vqf_dax_vec_ml,
	.map_unlock = vqf_dax_vec_ml,
	.inode_lock = vqf_dax_vec_il,
	.inode_trylock = vqf_dax_vec_it,
	.inode_unlock = vqf_dax_vec_il,
	.inode_get = vqf_dax_vec_get,
	.inode_put = vqf_dax_vec_il,
	.kick_reclaim = vqf_dax_vec_kick,
	.wake_free = vqf_dax_vec_wake,
	.wait_free = vqf_dax_vec_wait,
	.send_setupmapping = vqf_dax_vec_setup,
	.send_removemapping = vqf_dax_vec_remove,
};

static inline int vqf_dax_vec_alloc_init_stale(u32 nr, u64 rsize,
					       u32 stale_max)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_config cfg = { .window_size = nr * rsize,
				      .range_size = rsize,
				      .stale_max = stale_max };

	memset(a, 0, sizeof(*a));
	VQF_DAX_VEC_CHECK(!vqf_dax_window_init(&a->w, &cfg, a->ranges,
					       VQF_DAX_VEC_NR,
					       &vqf_dax_vec_ops, NULL));
	VQF_DAX_VEC_CHECK(!vqf_dax_dev_map_init(&a->m, cfg.window_size, 4096,
						a->slots, VQF_DAX_VEC_NR));
	vqf_dax_inode_init(&a->ino[0], 1, VQF_DAX_VEC_U64_MAX);
	vqf_dax_inode_init(&a->ino[1], 2, VQF_DAX_VEC_U64_MAX);
	return 0;
}

static inline int vqf_dax_vec_alloc_init(u32 nr, u64 rsize)
{
	return vqf_dax_vec_alloc_init_stale(nr, rsize, 0);
}

/* Map @n page-sized ranges of @di from file offset 0 and drop them. */
static inline int vqf_dax_vec_map_n(struct vqf_dax_inode *di, unsigned int n,
				    unsigned int flags)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_map map;
	unsigned int i;

	for (i = 0; i < n; i++) {
		VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, di, (u64)i * 4096,
						     flags, &map));
		vqf_dax_map_end(&a->w, &map);
	}
	return 0;
}

/*
 * Deferred teardown (cfg.stale_max 2, eight page-sized ranges): eviction
 * leaves read-only ranges mapped with no request, the next SETUPMAPPING
 * replaces one in place, a writable range goes in the inode's own
 * request, the bound flushes the oldest in one request with no inode,
 * and vqf_dax_flush_stale() removes the rest.
 */
static inline int vqf_dax_run_alloc_stale(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_map map;
	struct vqf_dax_stats st;
	int line;

	line = vqf_dax_vec_alloc_init_stale(8, 4096, 2);
	if (line)
		return line;
	line = vqf_dax_vec_map_n(&a->ino[0], 1, 0);
	if (line)
		return line;
	VQF_DAX_VEC_CHECK(vqf_dax_inode_evict(&a->w, &a->ino[0], a->scratch,
					      VQF_REMOVEMAPPING_MAX) == 1);
	VQF_DAX_VEC_CHECK(a->removes == 0 && a->m.nr_used == 1);
	VQF_DAX_VEC_CHECK(vqf_dax_nr_stale(&a->w) == 1);
	VQF_DAX_VEC_CHECK(vqf_dax_nr_free(&a->w) == 8);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));

	/* reused first, replaced in place; the writable one is removed */
	VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[1], 0, 0, &map));
	VQF_DAX_VEC_CHECK(map.range == &a->ranges[0]);
	vqf_dax_map_end(&a->w, &map);
	VQF_DAX_VEC_CHECK(vqf_dax_nr_stale(&a->w) == 0);
	VQF_DAX_VEC_CHECK(a->removes == 0 && a->m.nr_used == 1);
	VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[1], 4096,
					     VQF_DAX_MAP_WRITE, &map));
	vqf_dax_map_end(&a->w, &map);
	VQF_DAX_VEC_CHECK(vqf_dax_inode_evict(&a->w, &a->ino[1], a->scratch,
					      VQF_REMOVEMAPPING_MAX) == 2);
	VQF_DAX_VEC_CHECK(a->removes == 1 && a->flushes == 0);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 1 && vqf_dax_nr_stale(&a->w) == 1);

	/* two inodes of two ranges: the second eviction flushes the first */
	vqf_dax_inode_init(&a->ino[0], 1, VQF_DAX_VEC_U64_MAX);
	vqf_dax_inode_init(&a->ino[1], 2, VQF_DAX_VEC_U64_MAX);
	line = vqf_dax_vec_map_n(&a->ino[0], 2, 0);
	if (!line)
		line = vqf_dax_vec_map_n(&a->ino[1], 2, 0);
	if (line)
		return line;
	VQF_DAX_VEC_CHECK(vqf_dax_inode_evict(&a->w, &a->ino[0], a->scratch,
					      VQF_REMOVEMAPPING_MAX) == 2);
	VQF_DAX_VEC_CHECK(a->removes == 1 && vqf_dax_nr_stale(&a->w) == 2);
	VQF_DAX_VEC_CHECK(vqf_dax_inode_evict(&a->w, &a->ino[1], a->scratch,
					      VQF_REMOVEMAPPING_MAX) == 2);
	VQF_DAX_VEC_CHECK(a->removes == 2 && a->flushes == 1);
	VQF_DAX_VEC_CHECK(a->flush_count == 2);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 2 && vqf_dax_nr_stale(&a->w) == 2);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));

	/* unmount */
	VQF_DAX_VEC_CHECK(vqf_dax_flush_stale(&a->w, a->scratch,
					      VQF_REMOVEMAPPING_MAX) == 2);
	VQF_DAX_VEC_CHECK(a->removes == 3 && a->flushes == 2);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 0 && vqf_dax_nr_stale(&a->w) == 0);
	VQF_DAX_VEC_CHECK(vqf_dax_nr_free(&a->w) == 8);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.stale_deferred == 6 && st.stale_reused == 2);
	VQF_DAX_VEC_CHECK(st.stale_flushed == 4 && st.stale_flushes == 2);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	return 0;
}

/* One range, two inodes taking turns: every access makes progress. */
static inline int vqf_dax_run_alloc_one_range(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_map map, held;
	struct vqf_dax_stats st;
	unsigned int i;
	int line;

	line = vqf_dax_vec_alloc_init(1, 2 * VQF_DAX_VEC_MIB);
	if (line)
		return line;
	for (i = 0; i < 40; i++) {
		u64 pos = (u64)(i % 7) * 2 * VQF_DAX_VEC_MIB + i;

		VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[i % 2],
						     pos, i % 3 ?
						     VQF_DAX_MAP_WRITE : 0,
						     &map));
		VQF_DAX_VEC_CHECK(map.range == &a->ranges[0]);
		VQF_DAX_VEC_CHECK(map.moffset == (pos & (2 * VQF_DAX_VEC_MIB - 1)));
		vqf_dax_map_end(&a->w, &map);
		VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	}
	/* held: the other inode cannot have it, and is told so */
	VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[0], 0, 0, &held));
	VQF_DAX_VEC_CHECK(vqf_dax_map_begin(&a->w, &a->ino[1], 0,
					    VQF_DAX_MAP_NOWAIT, &map) ==
			  -EAGAIN);
	VQF_DAX_VEC_CHECK(vqf_dax_map_begin(&a->w, &a->ino[1], 0, 0, &map) ==
			  -EINTR);
	vqf_dax_map_end(&a->w, &held);
	VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[1], 0, 0, &map));
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.reclaimed_bg + st.reclaimed_direct >= 20);
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 1);
	return 0;
}

/* 300 page-sized ranges of one inode: evict sends 256 + 44 entries. */
static inline int vqf_dax_run_alloc_evict(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_map map;
	unsigned int i;
	int line;

	line = vqf_dax_vec_alloc_init(VQF_DAX_VEC_NR, 4096);
	if (line)
		return line;
	for (i = 0; i < VQF_DAX_VEC_NR; i++) {
		VQF_DAX_VEC_CHECK(!vqf_dax_map_begin(&a->w, &a->ino[0],
						     (u64)i * 4096, 0, &map));
		vqf_dax_map_end(&a->w, &map);
	}
	VQF_DAX_VEC_CHECK(vqf_dax_nr_free(&a->w) == 0);
	VQF_DAX_VEC_CHECK(a->m.nr_used == VQF_DAX_VEC_NR);
	VQF_DAX_VEC_CHECK(!vqf_dax_inode_check(&a->w, &a->ino[0], NULL));
	VQF_DAX_VEC_CHECK(vqf_dax_inode_evict(&a->w, &a->ino[0], a->scratch,
					      VQF_REMOVEMAPPING_MAX) ==
			  VQF_DAX_VEC_NR);
	VQF_DAX_VEC_CHECK(a->removes == 2);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 0);
	VQF_DAX_VEC_CHECK(vqf_dax_nr_free(&a->w) == VQF_DAX_VEC_NR);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	return 0;
}

/*
 * ---- dax=auto: vqf_dax_map_begin_auto() with lib's default policy ----
 *
 * The decisions a caller sees (map, or VQF_DAX_USE_FUSE with nothing
 * mapped and nothing on the wire), on the allocator above with 2 MiB
 * ranges.  hint.now is the caller's clock: one tick per call here, as the
 * simulator and fuse.ko tick it.
 */

#define VQF_DAX_VEC_RS		(2 * VQF_DAX_VEC_MIB)

static inline int vqf_dax_vec_auto(struct vqf_dax_inode *di, u64 pos,
				   u64 size, u64 now, u64 len, u32 hflags,
				   struct vqf_dax_map *map)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_hint h = { .size = size, .now = now, .len = len,
				  .flags = hflags };

	return vqf_dax_map_begin_auto(&a->w, di, pos, 0, &h, map);
}

/*
 * A small file read once goes through FUSE and sends no SETUPMAPPING; read
 * again it maps.  A fault (VQF_DAX_HINT_MMAP) and dax=always (no hint) map
 * a small file at once.
 */
static inline int vqf_dax_run_auto_small(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_inode *di = &a->ino[0];
	struct vqf_dax_map map = { 0 };
	struct vqf_dax_stats st;
	int line;

	line = vqf_dax_vec_alloc_init(8, VQF_DAX_VEC_RS);
	if (line)
		return line;
	VQF_DAX_VEC_CHECK(vqf_dax_vec_auto(di, 0, 4096, 1, 4096, 0, &map) ==
			  VQF_DAX_USE_FUSE);
	VQF_DAX_VEC_CHECK(map.range == NULL);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.pol_small == 1 && st.setups == 0);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 0 && vqf_dax_nr_free(&a->w) == 8);
	/* read again: it maps */
	VQF_DAX_VEC_CHECK(!vqf_dax_vec_auto(di, 0, 4096, 2, 4096, 0, &map));
	VQF_DAX_VEC_CHECK(map.range && map.moffset < 8 * VQF_DAX_VEC_RS);
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.pol_window == 1 && st.setups == 1);
	VQF_DAX_VEC_CHECK(a->m.nr_used == 1);
	/* and a third time it hits: no decision at all */
	VQF_DAX_VEC_CHECK(!vqf_dax_vec_auto(di, 100, 4096, 3, 4096, 0, &map));
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.hits == 1 && st.pol_window == 1 &&
			  st.pol_small == 1);
	/* another small file: a fault maps it the first time */
	VQF_DAX_VEC_CHECK(!vqf_dax_vec_auto(&a->ino[1], 0, 4096, 4, 4096,
					    VQF_DAX_HINT_MMAP, &map));
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.pol_mmap == 1 && st.setups == 2);
	/* dax=always (no hint) maps without asking */
	VQF_DAX_VEC_CHECK(!vqf_dax_map_begin_auto(&a->w, &a->ino[1],
						  VQF_DAX_VEC_RS, 0, NULL,
						  &map));
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.setups == 3 && st.pol_small == 1 &&
			  st.pol_window == 1 && st.pol_mmap == 1);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	return 0;
}

/*
 * Random 4 KiB reads of a 64 MiB file through a window of 4 ranges: each
 * maps a range that is reclaimed unused.  Drives them until the policy
 * finds thrash; returns 0 and the clock at that call in *now, else a line.
 */
static inline int vqf_dax_vec_thrash(u64 *now)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_inode *di = &a->ino[0];
	struct vqf_dax_map map;
	struct vqf_dax_stats st;
	u64 t;
	int ret;

	for (t = 1; t <= 64; t++) {
		/* range 7t mod 32: never the same one twice in a row */
		u64 pos = ((t * 7) % 32) * VQF_DAX_VEC_RS + 4096;

		ret = vqf_dax_vec_auto(di, pos, 64 * VQF_DAX_VEC_MIB, t, 4096,
				       0, &map);
		if (ret == VQF_DAX_USE_FUSE)
			break;
		VQF_DAX_VEC_CHECK(ret == 0);
		vqf_dax_map_end(&a->w, &map);
	}
	VQF_DAX_VEC_CHECK(t <= 64);
	vqf_dax_stats_read(&a->w, &st);
	/* the verdict needs thrash_min (8) wasted ranges, half the setups */
	VQF_DAX_VEC_CHECK(st.pol_thrash == 1 && st.pol_backoff == 0);
	VQF_DAX_VEC_CHECK(st.wasted >= 8 && st.wasted * 2 >= st.setups);
	VQF_DAX_VEC_CHECK(st.setups == t - 1 && st.hits == 0);
	*now = t;
	return 0;
}

/*
 * Thrash backs off to FUSE: from the verdict on, unmapped bytes go
 * through FUSE with no SETUPMAPPING while a range still mapped hits.
 */
static inline int vqf_dax_run_auto_thrash(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_inode *di = &a->ino[0];
	struct vqf_dax_stats st0, st;
	struct vqf_dax_pstate ps;
	struct vqf_dax_map map;
	unsigned int i, used;
	u64 now, pos;
	int line;

	line = vqf_dax_vec_alloc_init(4, VQF_DAX_VEC_RS);
	if (line)
		return line;
	line = vqf_dax_vec_thrash(&now);
	if (line)
		return line;
	vqf_dax_inode_policy(&a->w, di, &ps);
	VQF_DAX_VEC_CHECK(ps.backed && ps.level == 1);
	VQF_DAX_VEC_CHECK(ps.until == now + VQF_DAX_POL_BACKOFF_DEFAULT);
	vqf_dax_stats_read(&a->w, &st0);
	used = a->m.nr_used;
	/* 100 more reads over all 32 ranges: the unmapped ones are FUSE */
	for (i = 0; i < 100; i++) {
		int ret;

		pos = (u64)(i % 32) * VQF_DAX_VEC_RS;
		ret = vqf_dax_vec_auto(di, pos, 64 * VQF_DAX_VEC_MIB, ++now,
				       4096, 0, &map);
		if (ret == 0) {
			vqf_dax_map_end(&a->w, &map);
			continue;
		}
		VQF_DAX_VEC_CHECK(ret == VQF_DAX_USE_FUSE);
	}
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.setups == st0.setups);
	VQF_DAX_VEC_CHECK(a->m.nr_used == used);
	/* what was still mapped hit (at most 4 ranges, 4 of 32 positions) */
	VQF_DAX_VEC_CHECK(st.hits > 0 && st.hits <= 4 * 4);
	VQF_DAX_VEC_CHECK(st.pol_backoff == 100 - st.hits);
	VQF_DAX_VEC_CHECK(st.pol_thrash == 1 && st.pol_window == st0.pol_window);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	return 0;
}

/*
 * The backoff ends at its clock value: the next unmapped read maps again
 * (with a fresh sample), and a second verdict backs off twice as long.
 */
static inline int vqf_dax_run_auto_return(void)
{
	struct vqf_dax_vec_alloc *a = vqf_dax_vec_alloc();
	struct vqf_dax_inode *di = &a->ino[0];
	struct vqf_dax_pstate ps;
	struct vqf_dax_stats st0, st;
	struct vqf_dax_map map;
	u64 now, until, pos;
	int line;

	line = vqf_dax_vec_alloc_init(4, VQF_DAX_VEC_RS);
	if (line)
		return line;
	line = vqf_dax_vec_thrash(&now);
	if (line)
		return line;
	vqf_dax_inode_policy(&a->w, di, &ps);
	until = ps.until;
	VQF_DAX_VEC_CHECK(until > now + 1);
	/* an unmapped range, one tick before the end: still FUSE */
	pos = 31 * VQF_DAX_VEC_RS;
	if (vqf_dax_vec_auto(di, pos, 64 * VQF_DAX_VEC_MIB, until - 1, 4096,
			     0, &map) == 0) {
		/* it was mapped: take one that is not */
		vqf_dax_map_end(&a->w, &map);
		pos = 30 * VQF_DAX_VEC_RS;
		VQF_DAX_VEC_CHECK(vqf_dax_vec_auto(di, pos,
						   64 * VQF_DAX_VEC_MIB,
						   until - 1, 4096, 0, &map) ==
				  VQF_DAX_USE_FUSE);
	}
	vqf_dax_stats_read(&a->w, &st0);
	VQF_DAX_VEC_CHECK(st0.pol_backoff == 1);
	/* at the end of the backoff: DAX again, one SETUPMAPPING */
	VQF_DAX_VEC_CHECK(!vqf_dax_vec_auto(di, pos, 64 * VQF_DAX_VEC_MIB,
					    until, 4096, 0, &map));
	vqf_dax_map_end(&a->w, &map);
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.setups == st0.setups + 1);
	VQF_DAX_VEC_CHECK(st.pol_window == st0.pol_window + 1);
	vqf_dax_inode_policy(&a->w, di, &ps);
	VQF_DAX_VEC_CHECK(!ps.backed && ps.level == 1);
	/* a fresh sample: this setup, and the unused range it reclaimed */
	VQF_DAX_VEC_CHECK(ps.setups == 1 && ps.wasted <= 1);
	/* thrash again: the second backoff is twice the first */
	for (now = until + 1; now < until + 200; now++) {
		int ret;

		pos = ((now * 7) % 32) * VQF_DAX_VEC_RS + 8192;
		ret = vqf_dax_vec_auto(di, pos, 64 * VQF_DAX_VEC_MIB, now,
				       4096, 0, &map);
		if (ret == VQF_DAX_USE_FUSE)
			break;
		VQF_DAX_VEC_CHECK(ret == 0);
		vqf_dax_map_end(&a->w, &map);
	}
	vqf_dax_stats_read(&a->w, &st);
	VQF_DAX_VEC_CHECK(st.pol_thrash == 2);
	vqf_dax_inode_policy(&a->w, di, &ps);
	VQF_DAX_VEC_CHECK(ps.backed && ps.level == 2);
	VQF_DAX_VEC_CHECK(ps.until == now + 2 * VQF_DAX_POL_BACKOFF_DEFAULT);
	VQF_DAX_VEC_CHECK(!vqf_dax_window_check(&a->w, NULL));
	VQF_DAX_VEC_CHECK(a->dev_errors == 0 && a->w_held == 0);
	return 0;
}

/* ---- iteration for the runners ---- */

#define VQF_DAX_NR_SETUP	ARRAY_SIZE(vqf_dax_setup_vecs)
#define VQF_DAX_NR_REMOVE	ARRAY_SIZE(vqf_dax_remove_vecs)

static inline unsigned int vqf_dax_vectors_count(void)
{
	return VQF_DAX_NR_SETUP + VQF_DAX_NR_REMOVE + 8;
}

static inline const char *vqf_dax_vectors_name(unsigned int i)
{
	if (i < VQF_DAX_NR_SETUP)
		return vqf_dax_setup_vecs[i].name;
	i -= VQF_DAX_NR_SETUP;
	if (i < VQF_DAX_NR_REMOVE)
		return vqf_dax_remove_vecs[i].name;
	i -= VQF_DAX_NR_REMOVE;
	switch (i) {
	case 0:
		return "itree: boundaries at 0 and U64_MAX";
	case 1:
		return "req: SETUP/REMOVEMAPPING through vqf_req to the device";
	case 2:
		return "alloc: a window of one range keeps making progress";
	case 3:
		return "alloc: evict batches REMOVEMAPPING by 256";
	case 4:
		return "auto: a small file read once goes through FUSE";
	case 5:
		return "auto: thrash backs off to FUSE, no SETUPMAPPING";
	case 6:
		return "auto: DAX again when the backoff ends";
	default:
		return "alloc: evict leaves ranges stale, flushes name no inode";
	}
}

static inline int vqf_dax_vectors_run(unsigned int i)
{
	if (i < VQF_DAX_NR_SETUP)
		return vqf_dax_run_setup_vec(&vqf_dax_setup_vecs[i]);
	i -= VQF_DAX_NR_SETUP;
	if (i < VQF_DAX_NR_REMOVE)
		return vqf_dax_run_remove_vec(&vqf_dax_remove_vecs[i]);
	i -= VQF_DAX_NR_REMOVE;
	switch (i) {
	case 0:
		return vqf_dax_run_itree_bounds();
	case 1:
		return vqf_dax_run_req_roundtrip();
	case 2:
		return vqf_dax_run_alloc_one_range();
	case 3:
		return vqf_dax_run_alloc_evict();
	case 4:
		return vqf_dax_run_auto_small();
	case 5:
		return vqf_dax_run_auto_thrash();
	case 6:
		return vqf_dax_run_auto_return();
	case 7:
		return vqf_dax_run_alloc_stale();
	default:
		return __LINE__;
	}
}

#endif /* VQF_DAX_VECTORS_H */
