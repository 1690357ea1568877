/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * version_vectors.h - shared test vectors for lib/vqf_version.h.
 *
 * Plain C tables plus runners that use only the lib/ API, so the cmocka
 * program (tests/unit/version/) and the in-kernel KTAP module iterate the
 * same cases the same way:
 *
 *	for (i = 0; i < vqf_version_vectors_count(); i++)
 *		if (vqf_version_vectors_run(i))
 *			report vqf_version_vectors_name(i);
 *
 * A runner returns 0 when the case holds and otherwise the number of the
 * first check that failed (the line in this file), for the log.  Runners
 * keep everything on the stack; nothing here allocates or prints.
 */
#ifndef VQF_VERSION_VECTORS_H
#define VQF_VERSION_VECTORS_H

#include "vqf_version.h"

#define VQF_VER_VEC_SLOTS	16
#define VQF_VER_VEC_U64_MAX	(~0ULL)
#define VQF_VER_VEC_CHECK(cond)	do { if (!(cond)) return __LINE__; } while (0)
#define VQF_VER_VEC_UNUSED	__attribute__((__unused__))

/* Which counter a case must have moved (exactly one, by one). */
enum vqf_ver_vec_counter {
	VQF_VER_VEC_NONE = 0,	/* none of those below */
	VQF_VER_VEC_INDEX_NONE,
	VQF_VER_VEC_INDEX_NO_TABLE,
	VQF_VER_VEC_INDEX_OOR,
	VQF_VER_VEC_ABSENT,
	VQF_VER_VEC_SHORT,
	VQF_VER_VEC_LONG,
};

static inline u64 vqf_ver_vec_counter(const struct vqf_ver_stats *s,
				      enum vqf_ver_vec_counter c)
{
	switch (c) {
	case VQF_VER_VEC_INDEX_NONE:
		return s->index_none;
	case VQF_VER_VEC_INDEX_NO_TABLE:
		return s->index_no_table;
	case VQF_VER_VEC_INDEX_OOR:
		return s->index_out_of_range;
	case VQF_VER_VEC_ABSENT:
		return s->entryver_absent;
	case VQF_VER_VEC_SHORT:
		return s->entryver_short;
	case VQF_VER_VEC_LONG:
		return s->entryver_long;
	default:
		return 0;
	}
}

static inline u64 vqf_ver_vec_counter_sum(const struct vqf_ver_stats *s)
{
	return s->index_none + s->index_no_table + s->index_out_of_range +
	       s->entryver_absent + s->entryver_short + s->entryver_long;
}

/* ---------------------------------------------------------------------- */
/* 1. Device-supplied version indices, hostile ones included. */

struct vqf_ver_index_vec {
	const char *name;
	bool table;		/* a table is mapped */
	u64 nr_slots;		/* its size in slots (<= VQF_VER_VEC_SLOTS) */
	u64 index;
	bool want_slot;		/* a slot pointer comes back */
	enum vqf_ver_vec_counter counter;
};

static const struct vqf_ver_index_vec vqf_ver_index_vecs[] VQF_VER_VEC_UNUSED = {
	{ "zero is no version", true, 16, 0, false, VQF_VER_VEC_INDEX_NONE },
	{ "first slot", true, 16, 1, true, VQF_VER_VEC_NONE },
	{ "last slot", true, 16, 15, true, VQF_VER_VEC_NONE },
	{ "index == size", true, 16, 16, false, VQF_VER_VEC_INDEX_OOR },
	{ "index == size + 1", true, 16, 17, false, VQF_VER_VEC_INDEX_OOR },
	{ "index 2^32", true, 16, 1ULL << 32, false, VQF_VER_VEC_INDEX_OOR },
	{ "index 2^61 (x8 wraps)", true, 16, 1ULL << 61, false,
	  VQF_VER_VEC_INDEX_OOR },
	{ "index 2^63", true, 16, 1ULL << 63, false, VQF_VER_VEC_INDEX_OOR },
	{ "index U64_MAX", true, 16, VQF_VER_VEC_U64_MAX, false,
	  VQF_VER_VEC_INDEX_OOR },
	{ "one-slot table, index 1", true, 1, 1, false,
	  VQF_VER_VEC_INDEX_OOR },
	{ "two-slot table, index 1", true, 2, 1, true, VQF_VER_VEC_NONE },
	{ "empty table, index 1", true, 0, 1, false, VQF_VER_VEC_INDEX_OOR },
	{ "no table, index 1", false, 0, 1, false,
	  VQF_VER_VEC_INDEX_NO_TABLE },
	{ "no table, index 0", false, 0, 0, false, VQF_VER_VEC_INDEX_NONE },
	{ "no table, index U64_MAX", false, 0, VQF_VER_VEC_U64_MAX, false,
	  VQF_VER_VEC_INDEX_NO_TABLE },
};

static inline int vqf_ver_run_index_vec(const struct vqf_ver_index_vec *v)
{
	s64 slots[VQF_VER_VEC_SLOTS] = { 0 };
	struct vqf_ver_table t;
	const s64 *p;

	VQF_VER_VEC_CHECK(v->nr_slots <= VQF_VER_VEC_SLOTS);
	VQF_VER_VEC_CHECK(vqf_ver_table_init(&t, v->table ? slots : NULL,
					     v->nr_slots * sizeof(s64)) == 0);
	p = vqf_ver_table_slot(&t, v->index);
	if (v->want_slot)
		VQF_VER_VEC_CHECK(p == &slots[v->index]);
	else
		VQF_VER_VEC_CHECK(!p);
	if (v->counter != VQF_VER_VEC_NONE)
		VQF_VER_VEC_CHECK(vqf_ver_vec_counter(&t.stats, v->counter) ==
				  1);
	VQF_VER_VEC_CHECK(vqf_ver_vec_counter_sum(&t.stats) ==
			  (v->counter != VQF_VER_VEC_NONE));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* 2. The optional fuse_entryver_out of a reply, by length. */

struct vqf_ver_parse_vec {
	const char *name;
	size_t len;		/* bytes the device wrote for the argument */
	int want_rc;
	enum vqf_ver_vec_counter counter;
};

static const struct vqf_ver_parse_vec vqf_ver_parse_vecs[] VQF_VER_VEC_UNUSED = {
	{ "absent", 0, 0, VQF_VER_VEC_ABSENT },
	{ "1 byte", 1, -EMSGSIZE, VQF_VER_VEC_SHORT },
	{ "index only", 8, -EMSGSIZE, VQF_VER_VEC_SHORT },
	{ "15 bytes", 15, -EMSGSIZE, VQF_VER_VEC_SHORT },
	{ "exact", 16, 1, VQF_VER_VEC_NONE },
	{ "17 bytes", 17, -E2BIG, VQF_VER_VEC_LONG },
	{ "32 bytes", 32, -E2BIG, VQF_VER_VEC_LONG },
};

static inline int vqf_ver_run_parse_vec(const struct vqf_ver_parse_vec *v)
{
	/* version_index 5, initial_version 7, then bytes that must not leak */
	static const u8 wire[32] = {
		5, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0,
		0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
		0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
	};
	struct fuse_entryver_out out;
	struct vqf_ver_table t;

	VQF_VER_VEC_CHECK(v->len <= sizeof(wire));
	VQF_VER_VEC_CHECK(vqf_ver_table_init(&t, NULL, 0) == 0);
	memset(&out, 0xaa, sizeof(out));
	VQF_VER_VEC_CHECK(vqf_ver_entryver_parse(&t, wire, v->len, &out) ==
			  v->want_rc);
	if (v->want_rc == 1) {
		VQF_VER_VEC_CHECK(out.version_index == 5);
		VQF_VER_VEC_CHECK(out.initial_version == 7);
	} else {
		/* Anything but well-formed reads as "no version". */
		VQF_VER_VEC_CHECK(out.version_index == 0);
		VQF_VER_VEC_CHECK(out.initial_version == 0);
	}
	if (v->counter != VQF_VER_VEC_NONE)
		VQF_VER_VEC_CHECK(vqf_ver_vec_counter(&t.stats, v->counter) ==
				  1);
	VQF_VER_VEC_CHECK(vqf_ver_vec_counter_sum(&t.stats) ==
			  (v->counter != VQF_VER_VEC_NONE));
	return 0;
}

/* ---------------------------------------------------------------------- */
/*
 * 3. A reply's initial_version against the stamp taken before the request
 * and the table now: which stamp vqf_ver_inode_set_entry() hands back.
 */

struct vqf_ver_entry_vec {
	const char *name;
	bool before_same_slot;	/* the stamp came from the same slot */
	s64 before;		/* its version */
	s64 initial;		/* reply's initial_version */
	s64 table;		/* slot value when the reply is applied */
	s64 want;		/* version of the returned stamp */
	u64 want_backward;
	u64 want_nonpositive;
};

static const struct vqf_ver_entry_vec vqf_ver_entry_vecs[] VQF_VER_VEC_UNUSED = {
	{ "fresh inode", false, 1, 5, 5, 5, 0, 0 },
	{ "unchanged", true, 5, 5, 5, 5, 0, 0 },
	{ "changed during request", true, 5, 6, 7, 6, 0, 0 },
	{ "older than sample", true, 6, 5, 6, 0, 1, 0 },
	{ "newer than table", true, 5, 9, 6, 0, 1, 0 },
	{ "fresh, newer than table", false, 1, 9, 6, 0, 1, 0 },
	{ "zero initial", true, 5, 0, 5, 0, 0, 1 },
	{ "negative initial", false, 1, -3, 5, 0, 0, 1 },
	{ "S64_MAX initial", false, 1, 0x7fffffffffffffffLL, 5, 0, 1, 0 },
};

static inline int vqf_ver_run_entry_vec(const struct vqf_ver_entry_vec *v)
{
	s64 slots[VQF_VER_VEC_SLOTS] = { 0 };
	struct fuse_entryver_out ev = { 3, 0 };
	struct vqf_ver_stamp before, st;
	struct vqf_ver_inode vi;
	struct vqf_ver_table t;

	VQF_VER_VEC_CHECK(vqf_ver_table_init(&t, slots, sizeof(slots)) == 0);
	vqf_ver_inode_init(&vi);
	before.slot = v->before_same_slot ? &slots[3] : NULL;
	before.version = v->before;
	if (v->before_same_slot) {
		/* The inode already had slot 3: bring it there first. */
		ev.initial_version = v->before;
		slots[3] = v->before;
		(void)vqf_ver_inode_set_entry(&t, &vi, &ev, &before);
		memset(&t.stats, 0, sizeof(t.stats));
	}
	slots[3] = v->table;
	ev.initial_version = v->initial;
	st = vqf_ver_inode_set_entry(&t, &vi, &ev, &before);
	VQF_VER_VEC_CHECK(st.slot == &slots[3]);
	VQF_VER_VEC_CHECK(st.version == v->want);
	VQF_VER_VEC_CHECK(t.stats.backward == v->want_backward);
	VQF_VER_VEC_CHECK(t.stats.initial_nonpositive == v->want_nonpositive);
	VQF_VER_VEC_CHECK(t.stats.index_changed == 0);
	/* Publishing it makes the attributes valid exactly when want > 0. */
	VQF_VER_VEC_CHECK(!vqf_ver_attr_older(&t, &vi, &st));
	vqf_ver_attr_publish(&vi, &st);
	VQF_VER_VEC_CHECK(vqf_ver_inode_check(&t, &vi) ==
			  (v->want > 0 && v->want == v->table ?
			   VQF_VER_VALID : VQF_VER_STALE));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* 4. attr_version ordering: may attributes sampled at @stamp be cached? */

struct vqf_ver_order_vec {
	const char *name;
	bool shared;		/* the inode has a slot */
	s64 fence;		/* its attr_version (after a publish) */
	bool stamp_same_slot;	/* stamp taken from the inode's slot */
	s64 stamp;
	bool want_drop;
};

static const struct vqf_ver_order_vec vqf_ver_order_vecs[] VQF_VER_VEC_UNUSED = {
	{ "local: newer", false, 4, true, 5, false },
	{ "local: equal", false, 4, true, 4, false },
	{ "local: older", false, 4, true, 3, true },
	{ "local: unordered 0", false, 4, true, 0, false },
	{ "shared: newer", true, 4, true, 5, false },
	{ "shared: equal", true, 4, true, 4, false },
	{ "shared: older", true, 4, true, 3, true },
	{ "shared: unordered 0", true, 4, true, 0, false },
	{ "shared: stamp from no slot", true, 4, false, 9, true },
	{ "local: stamp from a slot", false, 4, false, 9, true },
};

static inline int vqf_ver_run_order_vec(const struct vqf_ver_order_vec *v)
{
	s64 slots[VQF_VER_VEC_SLOTS] = { 0 };
	struct fuse_entryver_out ev = { 2, 0 };
	struct vqf_ver_stamp st = { NULL, 0 };
	struct vqf_ver_inode vi;
	struct vqf_ver_table t;

	VQF_VER_VEC_CHECK(vqf_ver_table_init(&t, slots, sizeof(slots)) == 0);
	vqf_ver_inode_init(&vi);
	if (v->shared) {
		slots[2] = v->fence;
		ev.initial_version = v->fence;
		st = vqf_ver_inode_set_entry(&t, &vi, &ev, &st);
	} else {
		st.version = v->fence;
	}
	vqf_ver_attr_publish(&vi, &st);

	st.slot = v->shared ? &slots[2] : NULL;
	if (!v->stamp_same_slot)
		st.slot = v->shared ? NULL : &slots[2];
	st.version = v->stamp;
	memset(&t.stats, 0, sizeof(t.stats));
	VQF_VER_VEC_CHECK(vqf_ver_attr_older(&t, &vi, &st) == v->want_drop);
	VQF_VER_VEC_CHECK(t.stats.attr_dropped == v->want_drop);
	return 0;
}

/* ---------------------------------------------------------------------- */
/*
 * 5. Dentry checks: what was cached, what the table holds now.  A slot
 * value of -1 below means "no slot".
 */

#define VQF_VER_VEC_NOSLOT	(-1)

struct vqf_ver_dentry_vec {
	const char *name;
	bool negative;
	s64 parent_cached, parent_now;	/* VQF_VER_VEC_NOSLOT: no slot */
	s64 cached, now;		/* inode slot, positive only */
	enum vqf_ver_state want;
	u64 want_backward;
};

static const struct vqf_ver_dentry_vec vqf_ver_dentry_vecs[] VQF_VER_VEC_UNUSED = {
	{ "pos: nothing changed", false, 3, 3, 7, 7, VQF_VER_VALID, 0 },
	{ "pos: parent changed, inode not", false, 3, 4, 7, 7,
	  VQF_VER_VALID, 0 },
	{ "pos: inode changed, parent not", false, 3, 3, 7, 8,
	  VQF_VER_VALID, 0 },
	{ "pos: both changed (unlink, rename)", false, 3, 4, 7, 8,
	  VQF_VER_STALE, 0 },
	{ "pos: no parent slot, inode same", false, -1, -1, 7, 7,
	  VQF_VER_VALID, 0 },
	{ "pos: no parent slot, inode changed", false, -1, -1, 7, 8,
	  VQF_VER_STALE, 0 },
	{ "pos: parent same, no inode slot", false, 3, 3, -1, -1,
	  VQF_VER_VALID, 0 },
	{ "pos: parent changed, no inode slot", false, 3, 4, -1, -1,
	  VQF_VER_STALE, 0 },
	{ "pos: no slots at all", false, -1, -1, -1, -1, VQF_VER_UNKNOWN, 0 },
	{ "pos: parent backward, inode same", false, 3, 2, 7, 7,
	  VQF_VER_STALE, 1 },
	{ "pos: parent changed, inode backward", false, 3, 4, 7, 6,
	  VQF_VER_STALE, 1 },
	{ "pos: no parent slot, inode backward", false, -1, -1, 7, 6,
	  VQF_VER_STALE, 1 },
	{ "neg: parent same", true, 3, 3, -1, -1, VQF_VER_VALID, 0 },
	{ "neg: parent changed (create)", true, 3, 4, -1, -1,
	  VQF_VER_STALE, 0 },
	{ "neg: parent backward", true, 3, 2, -1, -1, VQF_VER_STALE, 1 },
	{ "neg: no parent slot", true, -1, -1, -1, -1, VQF_VER_UNKNOWN, 0 },
};

static inline int vqf_ver_run_dentry_vec(const struct vqf_ver_dentry_vec *v)
{
	s64 slots[VQF_VER_VEC_SLOTS] = { 0 };
	struct vqf_ver_stamp entry = { NULL, 0 }, parent = { NULL, 0 };
	struct vqf_ver_dentry d;
	struct vqf_ver_table t;

	VQF_VER_VEC_CHECK(vqf_ver_table_init(&t, slots, sizeof(slots)) == 0);
	vqf_ver_dentry_init(&d);
	if (v->parent_cached != VQF_VER_VEC_NOSLOT) {
		slots[4] = v->parent_cached;
		parent.slot = &slots[4];
		parent.version = v->parent_cached;
	}
	if (v->cached != VQF_VER_VEC_NOSLOT) {
		slots[5] = v->cached;
		entry.slot = &slots[5];
		entry.version = v->cached;
	}
	vqf_ver_dentry_set(&t, &d, v->negative ? NULL : &entry, &parent);
	if (v->parent_now != VQF_VER_VEC_NOSLOT)
		slots[4] = v->parent_now;
	if (v->now != VQF_VER_VEC_NOSLOT)
		slots[5] = v->now;
	VQF_VER_VEC_CHECK(t.stats.backward == 0);
	VQF_VER_VEC_CHECK(vqf_ver_dentry_check(&t, &d) == v->want);
	VQF_VER_VEC_CHECK(t.stats.backward == v->want_backward);
	if (v->want == VQF_VER_STALE)
		VQF_VER_VEC_CHECK((v->negative ? t.stats.negative_stale :
				   t.stats.dentry_stale) == 1);
	VQF_VER_VEC_CHECK(t.stats.raced == 0);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* One flat index over all tables, as the in-kernel module iterates them. */

#define VQF_VER_VEC_N(t)	((unsigned int)ARRAY_SIZE(t))

static inline unsigned int vqf_version_vectors_count(void)
{
	return VQF_VER_VEC_N(vqf_ver_index_vecs) +
	       VQF_VER_VEC_N(vqf_ver_parse_vecs) +
	       VQF_VER_VEC_N(vqf_ver_entry_vecs) +
	       VQF_VER_VEC_N(vqf_ver_order_vecs) +
	       VQF_VER_VEC_N(vqf_ver_dentry_vecs);
}

/* Name of vector @i ("index: zero is no version", ...), "?" past the end. */
static inline const char *vqf_version_vectors_name(unsigned int i)
{
	if (i < VQF_VER_VEC_N(vqf_ver_index_vecs))
		return vqf_ver_index_vecs[i].name;
	i -= VQF_VER_VEC_N(vqf_ver_index_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_parse_vecs))
		return vqf_ver_parse_vecs[i].name;
	i -= VQF_VER_VEC_N(vqf_ver_parse_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_entry_vecs))
		return vqf_ver_entry_vecs[i].name;
	i -= VQF_VER_VEC_N(vqf_ver_entry_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_order_vecs))
		return vqf_ver_order_vecs[i].name;
	i -= VQF_VER_VEC_N(vqf_ver_order_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_dentry_vecs))
		return vqf_ver_dentry_vecs[i].name;
	return "?";
}

/* 0 = pass; otherwise the line of the failed check in this file. */
static inline int vqf_version_vectors_run(unsigned int i)
{
	if (i < VQF_VER_VEC_N(vqf_ver_index_vecs))
		return vqf_ver_run_index_vec(&vqf_ver_index_vecs[i]);
	i -= VQF_VER_VEC_N(vqf_ver_index_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_parse_vecs))
		return vqf_ver_run_parse_vec(&vqf_ver_parse_vecs[i]);
	i -= VQF_VER_VEC_N(vqf_ver_parse_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_entry_vecs))
		return vqf_ver_run_entry_vec(&vqf_ver_entry_vecs[i]);
	i -= VQF_VER_VEC_N(vqf_ver_entry_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_order_vecs))
		return vqf_ver_run_order_vec(&vqf_ver_order_vecs[i]);
	i -= VQF_VER_VEC_N(vqf_ver_order_vecs);
	if (i < VQF_VER_VEC_N(vqf_ver_dentry_vecs))
		return vqf_ver_run_dentry_vec(&vqf_ver_dentry_vecs[i]);
	return __LINE__;
}

#endif /* VQF_VERSION_VECTORS_H */
