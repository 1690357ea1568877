// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * lib/vqf_version: the shared vectors, then the guest rules end to end
 * against a real device table, the device allocator (table full,
 * recycling, forget accounting) and a seeded random run of the device half
 * checked against a model after every step.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vqf_version.h"
#include "../../vectors/version_vectors.h"

#define NR_SLOTS	64

/* A device table and one guest's read-only view of the same memory. */
struct rig {
	s64 table[NR_SLOTS];
	u64 bitmap[NR_SLOTS / 64];
	struct vqf_ver_dev dev;
	struct vqf_ver_table gt;
};

static void rig_init(struct rig *r)
{
	assert_int_equal(vqf_ver_dev_init(&r->dev, r->table, sizeof(r->table),
					  r->bitmap, sizeof(r->bitmap)), 0);
	assert_int_equal(vqf_ver_table_init(&r->gt, r->table,
					    sizeof(r->table)), 0);
}

/* LOOKUP as the guest does it: sample, device fills, apply, publish. */
static struct vqf_ver_stamp lookup(struct rig *r, struct vqf_ver_inode *vi,
				   u64 index)
{
	struct vqf_ver_stamp before = vqf_ver_sample(&r->gt, vi), st;
	struct fuse_entryver_out ev;

	vqf_ver_dev_fill_entryver(&r->dev, index, &ev);
	st = vqf_ver_inode_set_entry(&r->gt, vi, &ev, &before);
	if (!vqf_ver_attr_older(&r->gt, vi, &st))
		vqf_ver_attr_publish(vi, &st);
	return st;
}

/* ---------------------------------------------------------------------- */

/* The same iteration the in-kernel KTAP module does. */
static void test_vectors(void **state)
{
	unsigned int i, n = vqf_version_vectors_count();

	(void)state;
	assert_int_equal(n, ARRAY_SIZE(vqf_ver_index_vecs) +
			 ARRAY_SIZE(vqf_ver_parse_vecs) +
			 ARRAY_SIZE(vqf_ver_entry_vecs) +
			 ARRAY_SIZE(vqf_ver_order_vecs) +
			 ARRAY_SIZE(vqf_ver_dentry_vecs));
	for (i = 0; i < n; i++) {
		int line = vqf_version_vectors_run(i);

		if (line)
			fail_msg("vector %u \"%s\": version_vectors.h:%d", i,
				 vqf_version_vectors_name(i), line);
	}
	assert_string_equal(vqf_version_vectors_name(n), "?");
	assert_int_not_equal(vqf_version_vectors_run(n), 0);
}

/* ---------------------------------------------------------------------- */
/* Guest side */

static void test_table_init_errors(void **state)
{
	s64 slots[4] = { 1, 2, 3, 4 };
	struct vqf_ver_table t;

	(void)state;
	assert_int_equal(vqf_ver_table_init(&t, NULL, 0), 0);
	assert_null(t.slots);
	assert_int_equal(t.attr_ctr, 1);

	assert_int_equal(vqf_ver_table_init(&t, NULL, 64), -EINVAL);
	assert_null(vqf_ver_table_slot(&t, 1));
	assert_int_equal(t.stats.index_no_table, 1);

	assert_int_equal(vqf_ver_table_init(&t, (char *)slots + 4, 16),
			 -EFAULT);
	assert_null(vqf_ver_table_slot(&t, 1));
	assert_int_equal(t.stats.index_no_table, 1);

	/* A size that is not whole slots: the tail is never read. */
	assert_int_equal(vqf_ver_table_init(&t, slots, 31), 0);
	assert_int_equal(t.nr_slots, 3);
	assert_ptr_equal(vqf_ver_table_slot(&t, 2), &slots[2]);
	assert_null(vqf_ver_table_slot(&t, 3));
	assert_int_equal(t.stats.index_out_of_range, 1);
}

static void test_parse_null_buffer(void **state)
{
	struct fuse_entryver_out ev = { 9, 9 };
	struct vqf_ver_table t;

	(void)state;
	vqf_ver_table_init(&t, NULL, 0);
	assert_int_equal(vqf_ver_entryver_parse(&t, NULL, 16, &ev), -EINVAL);
	assert_int_equal(ev.version_index, 0);
	assert_int_equal(vqf_ver_entryver_parse(&t, NULL, 0, &ev), 0);
	assert_int_equal(t.stats.entryver_absent, 1);
}

static void test_inode_lifecycle(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	struct vqf_ver_stamp st;
	u64 idx;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_UNKNOWN);

	idx = vqf_ver_dev_alloc(&r.dev);
	assert_int_not_equal(idx, 0);
	st = lookup(&r, &vi, idx);
	assert_ptr_equal(st.slot, &r.table[idx]);
	assert_int_equal(st.version, r.table[idx]);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);

	/* A metadata change on the device: the next check sees it. */
	assert_true(vqf_ver_dev_bump(&r.dev, idx) > st.version);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(r.gt.stats.attr_stale, 1);

	/* GETATTR: sample, reply, publish: valid again. */
	st = vqf_ver_sample(&r.gt, &vi);
	assert_false(vqf_ver_attr_older(&r.gt, &vi, &st));
	vqf_ver_attr_publish(&vi, &st);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);

	/* A change while the GETATTR is in flight: cached, but not valid. */
	st = vqf_ver_sample(&r.gt, &vi);
	vqf_ver_dev_bump(&r.dev, idx);
	assert_false(vqf_ver_attr_older(&r.gt, &vi, &st));
	vqf_ver_attr_publish(&vi, &st);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(r.gt.stats.backward, 0);
	assert_int_equal(r.gt.stats.raced, 0);
}

static void test_inode_without_slot(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	struct vqf_ver_stamp st, old;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	/* Device without the extension: the inode lives on attr_ctr. */
	st = lookup(&r, &vi, VQF_VER_NO_INDEX);
	assert_null(st.slot);
	assert_int_equal(st.version, 1);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_UNKNOWN);
	assert_int_equal(r.gt.stats.index_none, 1);

	/* Upstream's ordering: a reply sampled before a local change loses. */
	old = vqf_ver_sample(&r.gt, &vi);
	assert_int_equal(vqf_ver_attr_local_change(&r.gt, &vi), 2);
	assert_true(vqf_ver_attr_older(&r.gt, &vi, &old));
	st = vqf_ver_sample(&r.gt, &vi);
	assert_int_equal(st.version, 2);
	assert_false(vqf_ver_attr_older(&r.gt, &vi, &st));
	vqf_ver_attr_publish(&vi, &st);
	assert_true(vqf_ver_attr_older(&r.gt, &vi, &old));
	assert_int_equal(r.gt.stats.attr_dropped, 2);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_UNKNOWN);
}

static void test_local_change_shared(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	struct vqf_ver_stamp st, inflight;
	u64 idx;
	s64 fence;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	idx = vqf_ver_dev_alloc(&r.dev);
	lookup(&r, &vi, idx);

	/* A GETATTR goes out, then this guest writes and extends the file. */
	inflight = vqf_ver_sample(&r.gt, &vi);
	vqf_ver_dev_bump(&r.dev, idx);
	fence = vqf_ver_attr_local_change(&r.gt, &vi);
	assert_int_equal(fence, r.table[idx]);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	/* The old GETATTR reply must not undo the local size update. */
	assert_true(vqf_ver_attr_older(&r.gt, &vi, &inflight));
	/* ... but the next one is cached and valid (no fence from the future). */
	st = vqf_ver_sample(&r.gt, &vi);
	assert_false(vqf_ver_attr_older(&r.gt, &vi, &st));
	vqf_ver_attr_publish(&vi, &st);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);
	/* A local change never lowers the fence, even if the table lies. */
	r.table[idx] = 1;
	assert_int_equal(vqf_ver_attr_local_change(&r.gt, &vi), fence);
}

static void test_inode_slot_change(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	struct vqf_ver_stamp st, inflight;
	u64 a, b;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	a = vqf_ver_dev_alloc(&r.dev);
	b = vqf_ver_dev_alloc(&r.dev);
	lookup(&r, &vi, a);
	inflight = vqf_ver_sample(&r.gt, &vi);

	/* Make the two slots hold equal values: a cross-slot trap. */
	r.table[b] = r.table[a];
	st = lookup(&r, &vi, b);
	assert_ptr_equal(st.slot, &r.table[b]);
	assert_int_equal(r.gt.stats.index_changed, 1);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);
	/* A reply sampled on slot a, even with a fitting number, is dropped. */
	assert_true(vqf_ver_attr_older(&r.gt, &vi, &inflight));

	/* Losing the slot: back to timeouts, nothing claimed valid. */
	st = lookup(&r, &vi, VQF_VER_NO_INDEX);
	assert_null(st.slot);
	assert_int_equal(st.version, 0);
	assert_int_equal(r.gt.stats.index_changed, 2);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_UNKNOWN);

	/* A hostile index: ignored, the inode stays unversioned. */
	{
		struct fuse_entryver_out ev = { ~0ULL, 5 };
		struct vqf_ver_stamp before = vqf_ver_sample(&r.gt, &vi);

		st = vqf_ver_inode_set_entry(&r.gt, &vi, &ev, &before);
		assert_null(st.slot);
		assert_int_equal(st.version, before.version);
		assert_int_equal(r.gt.stats.index_out_of_range, 1);
		assert_int_equal(vqf_ver_inode_check(&r.gt, &vi),
				 VQF_VER_UNKNOWN);
	}
}

static void test_inode_backward(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	u64 idx;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	idx = vqf_ver_dev_alloc(&r.dev);
	vqf_ver_dev_bump(&r.dev, idx);
	vqf_ver_dev_bump(&r.dev, idx);
	lookup(&r, &vi, idx);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);

	/* A host that rewinds the slot, even to a value seen before. */
	r.table[idx] -= 1;
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(r.gt.stats.backward, 1);
	r.table[idx] = 0;
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	r.table[idx] = -5;
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(r.gt.stats.backward, 3);

	/* Attributes published at a non-positive version are never valid. */
	{
		struct vqf_ver_stamp st = vqf_ver_sample(&r.gt, &vi);

		assert_int_equal(st.version, -5);
		vqf_ver_attr_publish(&vi, &st);
		assert_int_equal(vqf_ver_inode_check(&r.gt, &vi),
				 VQF_VER_STALE);
	}
}

/* A directory "dir" (slot di, looked up) and a file (slot fi, not yet). */
struct dir_rig {
	struct rig r;
	struct vqf_ver_inode dir, file;
	struct vqf_ver_dentry pos, neg;
	u64 di, fi;
};

static void dir_rig_init(struct dir_rig *d)
{
	rig_init(&d->r);
	vqf_ver_inode_init(&d->dir);
	vqf_ver_inode_init(&d->file);
	vqf_ver_dentry_init(&d->pos);
	vqf_ver_dentry_init(&d->neg);
	d->di = vqf_ver_dev_alloc(&d->r.dev);
	d->fi = vqf_ver_dev_alloc(&d->r.dev);
	lookup(&d->r, &d->dir, d->di);
}

static void test_dentry_with_device(void **state)
{
	struct dir_rig d;
	struct vqf_ver_stamp ps, es;

	(void)state;
	dir_rig_init(&d);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos),
			 VQF_VER_UNKNOWN);

	/* "dir/a" exists, "dir/b" does not. */
	ps = vqf_ver_sample(&d.r.gt, &d.dir);
	es = lookup(&d.r, &d.file, d.fi);
	vqf_ver_dentry_set(&d.r.gt, &d.pos, &es, &ps);
	ps = vqf_ver_sample(&d.r.gt, &d.dir);
	vqf_ver_dentry_set(&d.r.gt, &d.neg, NULL, &ps);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_VALID);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.neg), VQF_VER_VALID);

	/* chmod dir/a: the binding holds, the attributes do not. */
	vqf_ver_dev_bump(&d.r.dev, d.fi);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_VALID);
	assert_int_equal(vqf_ver_inode_check(&d.r.gt, &d.file), VQF_VER_STALE);

	/* create dir/c: only the parent moves; the negative must go. */
	vqf_ver_dev_bump(&d.r.dev, d.di);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.neg), VQF_VER_STALE);
	assert_int_equal(d.r.gt.stats.negative_stale, 1);
	/* dir/a: parent moved and the chmod moved the inode: not provable. */
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_STALE);
	assert_int_equal(d.r.gt.stats.dentry_stale, 1);

	/* Revalidate dir/a; then unlink it: parent and inode both move. */
	ps = vqf_ver_sample(&d.r.gt, &d.dir);
	es = lookup(&d.r, &d.file, d.fi);
	vqf_ver_dentry_set(&d.r.gt, &d.pos, &es, &ps);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_VALID);
	vqf_ver_dev_bump(&d.r.dev, d.di);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_VALID);
	vqf_ver_dev_bump(&d.r.dev, d.fi);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_STALE);

	/* A reply from the future is refused (table went backwards). */
	es.version = d.r.table[d.fi] + 10;
	vqf_ver_dentry_set(&d.r.gt, &d.pos, &es, &ps);
	assert_int_equal(d.r.gt.stats.backward, 1);
	ps.version = d.r.table[d.di] + 10;
	vqf_ver_dentry_set(&d.r.gt, &d.neg, NULL, &ps);
	assert_int_equal(d.r.gt.stats.backward, 2);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.neg), VQF_VER_STALE);
	assert_int_equal(d.r.gt.stats.raced, 0);
}

/*
 * A READDIRPLUS re-proves "dir/a" through the directory alone: keeping the
 * inode half of the earlier LOOKUP (vqf_ver_dentry_entry()) still proves
 * the name after the directory changes, and only the inode's own change
 * (an unlink, rename or replace bumps it) refutes it.
 */
static void test_dentry_keep_inode_half(void **state)
{
	struct dir_rig d;
	struct vqf_ver_stamp ps, es, kept;

	(void)state;
	dir_rig_init(&d);
	ps = vqf_ver_sample(&d.r.gt, &d.dir);
	es = lookup(&d.r, &d.file, d.fi);
	vqf_ver_dentry_set(&d.r.gt, &d.pos, &es, &ps);
	kept = vqf_ver_dentry_entry(&d.pos);
	assert_ptr_equal(kept.slot, es.slot);
	assert_int_equal(kept.version, es.version);
	vqf_ver_dentry_set(&d.r.gt, &d.neg, NULL, &ps);
	kept = vqf_ver_dentry_entry(&d.neg);
	assert_null(kept.slot);

	/* Another name is created; then the directory is listed again. */
	vqf_ver_dev_bump(&d.r.dev, d.di);
	ps = vqf_ver_sample(&d.r.gt, &d.dir);
	kept = vqf_ver_dentry_entry(&d.pos);
	vqf_ver_dentry_set(&d.r.gt, &d.pos, &kept, &ps);
	/* One more create: the parent half fails, the inode half holds. */
	vqf_ver_dev_bump(&d.r.dev, d.di);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_VALID);
	/* dir/a renamed away: its inode moves, the name is not proven. */
	vqf_ver_dev_bump(&d.r.dev, d.fi);
	assert_int_equal(vqf_ver_dentry_check(&d.r.gt, &d.pos), VQF_VER_STALE);
}

/* ---------------------------------------------------------------------- */
/* Device side */

static void test_dev_init_errors(void **state)
{
	s64 table[8];
	u64 bitmap[2];
	struct vqf_ver_dev d;

	(void)state;
	assert_int_equal(vqf_ver_dev_init(&d, NULL, 64, bitmap, 8), -EINVAL);
	assert_int_equal(vqf_ver_dev_init(&d, table, 64, NULL, 8), -EINVAL);
	assert_int_equal(vqf_ver_dev_init(&d, (char *)table + 1, 56, bitmap,
					  8), -EFAULT);
	assert_int_equal(vqf_ver_dev_init(&d, table, 64, (u64 *)((char *)
					  bitmap + 4), 8), -EFAULT);
	assert_int_equal(vqf_ver_dev_init(&d, table, 8, bitmap, 8), -ENOSPC);
	assert_int_equal(vqf_ver_dev_init(&d, table, 15, bitmap, 8), -ENOSPC);
	assert_int_equal(vqf_ver_dev_init(&d, table, 64, bitmap, 7),
			 -EMSGSIZE);
	/* A failed device is inert: full, every index out of range. */
	assert_int_equal(vqf_ver_dev_alloc(&d), 0);
	assert_int_equal(vqf_ver_dev_bump(&d, 1), -ERANGE);
	assert_int_equal(vqf_ver_dev_release(&d, 1), -ERANGE);
	assert_int_equal(VQF_VER_BITMAP_BYTES(1), 8);
	assert_int_equal(VQF_VER_BITMAP_BYTES(64), 8);
	assert_int_equal(VQF_VER_BITMAP_BYTES(65), 16);
}

static void table_full_run(u64 nr)
{
	s64 *table = calloc(nr, sizeof(*table));
	u64 *bitmap = malloc(VQF_VER_BITMAP_BYTES(nr));
	char *seen = calloc(nr, 1);
	struct vqf_ver_dev d;
	struct fuse_entryver_out ev;
	u64 i, idx;

	assert_non_null(table);
	assert_non_null(bitmap);
	assert_non_null(seen);
	assert_int_equal(vqf_ver_dev_init(&d, table, nr * sizeof(s64), bitmap,
					  VQF_VER_BITMAP_BYTES(nr)), 0);
	for (i = 1; i < nr; i++) {
		idx = vqf_ver_dev_alloc(&d);
		assert_in_range(idx, 1, nr - 1);
		assert_false(seen[idx]);
		seen[idx] = 1;
		assert_int_equal(table[idx], 1);
	}
	assert_int_equal(d.nr_free, 0);
	/* Full: no slot, never a wrong one; the entry carries no version. */
	for (i = 0; i < 3; i++)
		assert_int_equal(vqf_ver_dev_alloc(&d), VQF_VER_NO_INDEX);
	assert_int_equal(d.stats.table_full, 3);
	vqf_ver_dev_fill_entryver(&d, VQF_VER_NO_INDEX, &ev);
	assert_int_equal(ev.version_index, 0);
	assert_int_equal(ev.initial_version, 0);

	/* One slot back: it is the one handed out next. */
	idx = nr / 2 ? nr / 2 : 1;
	assert_int_equal(vqf_ver_dev_release(&d, idx), 0);
	assert_int_equal(vqf_ver_dev_alloc(&d), idx);
	assert_int_equal(table[idx], 3);
	assert_int_equal(vqf_ver_dev_alloc(&d), VQF_VER_NO_INDEX);
	assert_int_equal(d.stats.assigned, nr);
	free(seen);
	free(bitmap);
	free(table);
}

static void test_dev_table_full(void **state)
{
	static const u64 sizes[] = { 2, 3, 63, 64, 65, 127, 128, 129, 1000 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		table_full_run(sizes[i]);
}

static void test_dev_release_errors(void **state)
{
	struct rig r;
	u64 idx;

	(void)state;
	rig_init(&r);
	idx = vqf_ver_dev_alloc(&r.dev);
	assert_int_equal(vqf_ver_dev_release(&r.dev, 0), -EINVAL);
	assert_int_equal(vqf_ver_dev_release(&r.dev, NR_SLOTS), -ERANGE);
	assert_int_equal(vqf_ver_dev_release(&r.dev, ~0ULL), -ERANGE);
	assert_int_equal(vqf_ver_dev_release(&r.dev, idx + 1), -ENOENT);
	assert_int_equal(vqf_ver_dev_release(&r.dev, idx), 0);
	assert_int_equal(vqf_ver_dev_release(&r.dev, idx), -ENOENT);
	assert_int_equal(r.dev.stats.release_reserved, 1);
	assert_int_equal(r.dev.stats.bad_index, 2);
	assert_int_equal(r.dev.stats.double_release, 2);
	assert_int_equal(r.dev.stats.released, 1);
	assert_int_equal(r.dev.nr_free, NR_SLOTS - 1);

	assert_int_equal(vqf_ver_dev_bump(&r.dev, 0), 0);
	assert_int_equal(vqf_ver_dev_bump(&r.dev, NR_SLOTS), -ERANGE);
	assert_int_equal(vqf_ver_dev_bump(&r.dev, ~0ULL), -ERANGE);
	{
		struct fuse_entryver_out ev = { 1, 1 };

		vqf_ver_dev_fill_entryver(&r.dev, NR_SLOTS + 1, &ev);
		assert_int_equal(ev.version_index, 0);
		assert_int_equal(ev.initial_version, 0);
	}
	assert_int_equal(r.dev.stats.bad_index, 5);
	assert_int_equal(r.table[0], 0);
}

static void test_dev_recycle_is_never_valid(void **state)
{
	struct rig r;
	struct vqf_ver_inode vi;
	struct vqf_ver_dentry de;
	struct vqf_ver_stamp es, ps = { NULL, 0 };
	u64 idx, i, again;

	(void)state;
	rig_init(&r);
	vqf_ver_inode_init(&vi);
	vqf_ver_dentry_init(&de);
	idx = vqf_ver_dev_alloc(&r.dev);
	es = lookup(&r, &vi, idx);
	vqf_ver_dentry_set(&r.gt, &de, &es, &ps);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_VALID);

	/* Recycled (wrongly, while this guest holds it) and reassigned. */
	assert_int_equal(vqf_ver_dev_release(&r.dev, idx), 0);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(vqf_ver_dentry_check(&r.gt, &de), VQF_VER_STALE);
	/* The cursor moves on: the slot rests until the others are used. */
	again = vqf_ver_dev_alloc(&r.dev);
	assert_int_not_equal(again, idx);
	for (i = 0; i < NR_SLOTS && again != idx; i++)
		again = vqf_ver_dev_alloc(&r.dev);
	assert_int_equal(again, idx);
	assert_int_equal(vqf_ver_inode_check(&r.gt, &vi), VQF_VER_STALE);
	assert_int_equal(vqf_ver_dentry_check(&r.gt, &de), VQF_VER_STALE);
	assert_int_equal(r.gt.stats.backward, 0);
}

static void test_dev_forget(void **state)
{
	struct rig r;
	u64 idx, total, ga, gb;

	(void)state;
	rig_init(&r);

	/* One guest: the slot goes when nlookup reaches 0. */
	idx = vqf_ver_dev_alloc(&r.dev);
	total = 3;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, NULL, 2, &idx), 0);
	assert_int_equal(total, 1);
	assert_int_not_equal(idx, 0);
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, NULL, 1, &idx), 1);
	assert_int_equal(idx, 0);
	assert_int_equal(r.dev.stats.released, 1);
	/* Forgetting more than was looked up: clamped, still released. */
	idx = vqf_ver_dev_alloc(&r.dev);
	total = 2;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, NULL, ~0ULL, &idx),
			 -EOVERFLOW);
	assert_int_equal(total, 0);
	assert_int_equal(idx, 0);
	assert_int_equal(r.dev.stats.forget_excess, 1);
	/* An inode without a slot: accounting only. */
	total = 1;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, NULL, 1, &idx), 1);

	/* Two guests share the table: A may not forget B's lookups. */
	idx = vqf_ver_dev_alloc(&r.dev);
	ga = 2;
	gb = 5;
	total = ga + gb;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, &ga, 100, &idx),
			 -EOVERFLOW);
	assert_int_equal(ga, 0);
	assert_int_equal(total, 5);
	assert_int_not_equal(idx, 0);
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, &gb, 4, &idx), 0);
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, &gb, 1, &idx), 1);
	assert_int_equal(idx, 0);
	assert_int_equal(r.dev.stats.forget_excess, 2);

	/* A device whose total fell below a guest's count: clamped. */
	idx = vqf_ver_dev_alloc(&r.dev);
	ga = 4;
	total = 1;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, &ga, 3, &idx), 1);
	assert_int_equal(r.dev.stats.forget_inconsistent, 1);
	assert_int_equal(idx, 0);
	/* Same counter passed twice is one counter, not two. */
	idx = vqf_ver_dev_alloc(&r.dev);
	total = 2;
	assert_int_equal(vqf_ver_dev_forget(&r.dev, &total, &total, 1, &idx),
			 0);
	assert_int_equal(total, 1);
	assert_int_equal(r.dev.nr_free, NR_SLOTS - 2);
}

/* ---------------------------------------------------------------------- */
/* Seeded random run of the device half against a model. */

static u64 rng_state;

static u64 rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct model {
	struct vqf_ver_dev d;
	struct vqf_ver_table gt;
	s64 table[97];			/* odd size: a partial bitmap word */
	u64 bitmap[2];
	struct vqf_ver_inode vi[97];	/* one guest inode per slot */
	bool inuse[97];
	s64 ver[97];
	u64 nlookup[97];
	u64 live;
};

#define MODEL_N	97

/* A LOOKUP of the inode at @idx; the guest must get exactly the model. */
static void model_lookup(struct model *m, u64 idx)
{
	struct fuse_entryver_out ev;
	struct vqf_ver_stamp b, st;

	b = vqf_ver_sample(&m->gt, &m->vi[idx]);
	vqf_ver_dev_fill_entryver(&m->d, idx, &ev);
	assert_int_equal(ev.version_index, idx);
	st = vqf_ver_inode_set_entry(&m->gt, &m->vi[idx], &ev, &b);
	assert_ptr_equal(st.slot, &m->table[idx]);
	assert_int_equal(st.version, m->ver[idx]);
	assert_false(vqf_ver_attr_older(&m->gt, &m->vi[idx], &st));
	vqf_ver_attr_publish(&m->vi[idx], &st);
	m->nlookup[idx]++;
}

static void model_step(struct model *m)
{
	u64 op = rng() % 4, idx = rng() % (MODEL_N + 3);
	enum vqf_ver_state vs;
	u64 got, cnt, slot, total;
	int rc;
	s64 v;

	switch (op) {
	case 0:		/* a new inode is handed out */
		got = vqf_ver_dev_alloc(&m->d);
		if (m->live == MODEL_N - 1) {
			assert_int_equal(got, 0);
			break;
		}
		assert_in_range(got, 1, MODEL_N - 1);
		assert_false(m->inuse[got]);
		m->inuse[got] = true;
		m->live++;
		m->ver[got]++;
		m->nlookup[got] = 0;
		model_lookup(m, got);
		break;
	case 1:		/* a metadata change */
		v = vqf_ver_dev_bump(&m->d, idx);
		if (idx == 0)
			assert_int_equal(v, 0);
		else if (idx >= MODEL_N)
			assert_int_equal(v, -ERANGE);
		else
			assert_int_equal(v, ++m->ver[idx]);
		break;
	case 2:		/* FORGET, sometimes of more than was looked up */
		if (idx == 0 || idx >= MODEL_N || !m->inuse[idx])
			break;
		cnt = 1 + rng() % 3;
		slot = idx;
		total = m->nlookup[idx];
		rc = vqf_ver_dev_forget(&m->d, &total, NULL, cnt, &slot);
		assert_int_equal(rc, cnt > m->nlookup[idx] ? -EOVERFLOW :
				 cnt == m->nlookup[idx] ? 1 : 0);
		m->nlookup[idx] -= VQF_MIN(cnt, m->nlookup[idx]);
		assert_int_equal(total, m->nlookup[idx]);
		if (m->nlookup[idx]) {
			assert_int_equal(slot, idx);
			break;
		}
		assert_int_equal(slot, 0);
		m->inuse[idx] = false;
		m->live--;
		m->ver[idx]++;
		break;
	default:	/* a guest check: valid exactly when nothing moved */
		if (idx == 0 || idx >= MODEL_N || !m->vi[idx].slot)
			break;
		vs = vqf_ver_inode_check(&m->gt, &m->vi[idx]);
		if (vs == VQF_VER_VALID) {
			assert_true(m->inuse[idx]);
			assert_int_equal(m->vi[idx].valid_version,
					 m->ver[idx]);
			break;
		}
		assert_int_equal(vs, VQF_VER_STALE);
		assert_int_not_equal(m->vi[idx].valid_version, m->ver[idx]);
		if (m->inuse[idx])
			model_lookup(m, idx);
		break;
	}
	assert_int_equal(m->d.nr_free, MODEL_N - 1 - m->live);
	if (idx < MODEL_N)
		assert_int_equal(m->table[idx], m->ver[idx]);
}

static void test_dev_random_model(void **state)
{
	struct model *m = calloc(1, sizeof(*m));
	const char *env = getenv("VQF_SEED");
	u64 step, steps, i;

	(void)state;
	assert_non_null(m);
	rng_state = env ? strtoull(env, NULL, 0) : 0x5eed0007ULL;
	if (!rng_state)
		rng_state = 1;
	print_message("VQF_SEED=0x%llx\n", (unsigned long long)rng_state);
	steps = getenv("VQF_UNDER_VALGRIND") ? 20000 : 300000;
	assert_int_equal(vqf_ver_dev_init(&m->d, m->table, sizeof(m->table),
					  m->bitmap, sizeof(m->bitmap)), 0);
	assert_int_equal(vqf_ver_table_init(&m->gt, m->table,
					    sizeof(m->table)), 0);
	for (i = 0; i < MODEL_N; i++)
		vqf_ver_inode_init(&m->vi[i]);

	for (step = 0; step < steps; step++)
		model_step(m);

	for (i = 0; i < MODEL_N; i++) {
		assert_int_equal(m->table[i], m->ver[i]);
		assert_int_equal(!!(m->bitmap[i / 64] & (1ULL << (i % 64))),
				 i == 0 || m->inuse[i]);
	}
	assert_int_equal(m->gt.stats.backward, 0);
	assert_int_equal(m->gt.stats.raced, 0);
	assert_int_equal(m->d.stats.assigned - m->d.stats.released, m->live);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_table_init_errors),
		cmocka_unit_test(test_parse_null_buffer),
		cmocka_unit_test(test_inode_lifecycle),
		cmocka_unit_test(test_inode_without_slot),
		cmocka_unit_test(test_local_change_shared),
		cmocka_unit_test(test_inode_slot_change),
		cmocka_unit_test(test_inode_backward),
		cmocka_unit_test(test_dentry_with_device),
		cmocka_unit_test(test_dev_init_errors),
		cmocka_unit_test(test_dev_table_full),
		cmocka_unit_test(test_dev_release_errors),
		cmocka_unit_test(test_dentry_keep_inode_half),
		cmocka_unit_test(test_dev_recycle_is_never_valid),
		cmocka_unit_test(test_dev_forget),
		cmocka_unit_test(test_dev_random_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
