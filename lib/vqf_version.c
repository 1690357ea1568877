// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_version.c - the shared version table, guest and device halves.
 *
 * Memory ordering, in one place (each barrier below names its pair):
 *
 *  device  change metadata; vqf_ver_dev_bump(): fully ordered RMW    (D1)
 *          vqf_ver_dev_fill_entryver(): acquire load, then stat      (D2)
 *  guest   vqf_ver_sample(): acquire load, then send the request     (G1)
 *          writers of vqf_ver_inode/vqf_ver_dentry: seqcount with
 *          smp_wmb() after the odd store and before the even store   (G2)
 *          checks: smp_rmb() after the first seq load, and after the
 *          slot loads before the second seq load                     (G3)
 *
 * D1 -> G1: a guest that reads the bumped version sends its request after
 * the change, so the reply's attributes are at least that new.  D1 -> G3:
 * a check that reads the new version cannot use cached state read earlier.
 * G2 <-> G3: a check either sees one writer's complete update, or sees the
 * sequence count move and answers STALE.  The seed's smp_wmb() before
 * publishing a dentry's versions and smp_rmb() after reading the version
 * are the G2 and G3 halves.
 */
#include "vqf_version.h"

/* ---------------------------------------------------------------------- */
/* Sequence count for the caller-embedded guest structures. */

static void ver_write_begin(u32 *seq)
{
	WRITE_ONCE(*seq, *seq + 1);
	/* G2: pairs with the smp_rmb() after a check's first seq load. */
	smp_wmb();
}

static void ver_write_end(u32 *seq)
{
	/* G2: pairs with the smp_rmb() before a check's second seq load. */
	smp_wmb();
	WRITE_ONCE(*seq, *seq + 1);
}

static u32 ver_read_begin(const u32 *seq)
{
	u32 s = READ_ONCE(*seq);

	/* G3: pairs with the smp_wmb() in ver_write_begin(). */
	smp_rmb();
	return s;
}

/*
 * True if the fields read since ver_read_begin() may mix two updates.  The
 * smp_rmb() also orders the caller's slot loads before whatever it reads
 * after a VALID answer (the seed's "smp_rmb() after reading").
 */
static bool ver_read_raced(struct vqf_ver_table *t, const u32 *seq, u32 s)
{
	/*
	 * G3: pairs with the smp_wmb() in ver_write_end() and, for the slot
	 * loads, with the fully ordered bump in vqf_ver_dev_bump() (D1).
	 */
	smp_rmb();
	if (!(s & 1) && READ_ONCE(*seq) == s)
		return false;
	vqf_stat_inc(&t->stats.raced);
	return true;
}

/* ---------------------------------------------------------------------- */
/* Guest side: the table */

int vqf_ver_table_init(struct vqf_ver_table *t, const void *base, u64 size)
{
	memset(t, 0, sizeof(*t));
	/* Upstream starts fc->attr_version at 1: 0 means "unordered". */
	t->attr_ctr = 1;
	if (!base)
		return size ? -EINVAL : 0;
	if ((unsigned long)base & (sizeof(s64) - 1))
		return -EFAULT;
	t->slots = base;
	t->nr_slots = size / sizeof(s64);
	return 0;
}

const s64 *vqf_ver_table_slot(struct vqf_ver_table *t, u64 index)
{
	if (index == VQF_VER_NO_INDEX) {
		vqf_stat_inc(&t->stats.index_none);
		return NULL;
	}
	if (!t->slots) {
		vqf_stat_inc(&t->stats.index_no_table);
		return NULL;
	}
	/* Compare first: slots + index must not even be computed. */
	if (index >= t->nr_slots) {
		vqf_stat_inc(&t->stats.index_out_of_range);
		return NULL;
	}
	return t->slots + index;
}

int vqf_ver_entryver_parse(struct vqf_ver_table *t, const void *buf,
			   size_t len, struct fuse_entryver_out *out)
{
	memset(out, 0, sizeof(*out));
	if (len == 0) {
		vqf_stat_inc(&t->stats.entryver_absent);
		return 0;
	}
	if (!buf)
		return -EINVAL;
	if (len < sizeof(*out)) {
		vqf_stat_inc(&t->stats.entryver_short);
		return -EMSGSIZE;
	}
	if (len > sizeof(*out)) {
		vqf_stat_inc(&t->stats.entryver_long);
		return -E2BIG;
	}
	memcpy(out, buf, sizeof(*out));
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Guest side: inodes */

void vqf_ver_inode_init(struct vqf_ver_inode *vi)
{
	memset(vi, 0, sizeof(*vi));
}

struct vqf_ver_stamp vqf_ver_sample(struct vqf_ver_table *t,
				    const struct vqf_ver_inode *vi)
{
	struct vqf_ver_stamp st;

	/*
	 * A racing slot change is harmless: the stamp carries the slot it
	 * read, and vqf_ver_attr_older() drops stamps of another slot.
	 */
	st.slot = READ_ONCE(vi->slot);
	if (st.slot) {
		/*
		 * G1: acquire, pairs with the bump (D1).  smp_rmb() would
		 * order only later loads; the request that follows is a store.
		 */
		st.version = smp_load_acquire(st.slot);
	} else {
		/* Pairs with the RMW in vqf_ver_attr_local_change(). */
		st.version = smp_load_acquire(&t->attr_ctr);
	}
	return st;
}

static void ver_inode_write(struct vqf_ver_inode *vi, const s64 *slot,
			    s64 attr_version, s64 valid_version)
{
	ver_write_begin(&vi->seq);
	WRITE_ONCE(vi->slot, slot);
	WRITE_ONCE(vi->attr_version, attr_version);
	WRITE_ONCE(vi->valid_version, valid_version);
	ver_write_end(&vi->seq);
}

struct vqf_ver_stamp vqf_ver_inode_set_entry(struct vqf_ver_table *t,
					     struct vqf_ver_inode *vi,
					     const struct fuse_entryver_out *ev,
					     const struct vqf_ver_stamp *before)
{
	const s64 *slot = vqf_ver_table_slot(t, ev->version_index);
	struct vqf_ver_stamp st = { .slot = slot, .version = 0 };
	s64 init = ev->initial_version;

	if (slot != vi->slot) {
		if (vi->slot)
			vqf_stat_inc(&t->stats.index_changed);
		/*
		 * Versions of the old slot (or of attr_ctr) mean nothing
		 * for the new one: forget both fence and validity.
		 */
		ver_inode_write(vi, slot, 0, 0);
	}
	if (!slot)
		return before->slot ? st : *before;

	if (init <= 0) {
		vqf_stat_inc(&t->stats.initial_nonpositive);
		return st;
	}
	/*
	 * The device read the slot after our sample (G1 -> its request
	 * handling) and before the reply, which we read before this load;
	 * an honest table lies between the two.
	 */
	if ((before->slot == slot && init < before->version) ||
	    init > READ_ONCE(*slot)) {
		vqf_stat_inc(&t->stats.backward);
		return st;
	}
	st.version = init;
	return st;
}

bool vqf_ver_attr_older(struct vqf_ver_table *t,
			const struct vqf_ver_inode *vi,
			const struct vqf_ver_stamp *st)
{
	if (st->slot == vi->slot &&
	    !(st->version != 0 && vi->attr_version > st->version))
		return false;
	vqf_stat_inc(&t->stats.attr_dropped);
	return true;
}

void vqf_ver_attr_publish(struct vqf_ver_inode *vi,
			  const struct vqf_ver_stamp *st)
{
	s64 fence = VQF_MAX(vi->attr_version, st->version);
	s64 valid = st->slot && st->version > 0 ? st->version : 0;

	ver_inode_write(vi, vi->slot, fence, valid);
}

s64 vqf_ver_attr_local_change(struct vqf_ver_table *t,
			      struct vqf_ver_inode *vi)
{
	s64 v;

	if (vi->slot) {
		/*
		 * The reply to the change was read after the device bumped
		 * (D1), so this load sees the bump; never lower the fence.
		 */
		v = VQF_MAX(smp_load_acquire(vi->slot), vi->attr_version);
	} else {
		v = vqf_atomic64_add_return(&t->attr_ctr, 1);
	}
	ver_inode_write(vi, vi->slot, v, 0);
	return v;
}

/*
 * @cur is the slot's value now, @cached a version of the same slot taken
 * earlier.  The table only grows, so cur < cached is a device fault.
 */
static bool ver_same(struct vqf_ver_table *t, s64 cur, s64 cached)
{
	if (cached > 0 && cur == cached)
		return true;
	if (cur < cached)
		vqf_stat_inc(&t->stats.backward);
	return false;
}

enum vqf_ver_state vqf_ver_inode_check(struct vqf_ver_table *t,
				       const struct vqf_ver_inode *vi)
{
	u32 s = ver_read_begin(&vi->seq);
	const s64 *slot = READ_ONCE(vi->slot);
	s64 valid = READ_ONCE(vi->valid_version);
	s64 cur = slot ? READ_ONCE(*slot) : 0;

	if (ver_read_raced(t, &vi->seq, s))
		return VQF_VER_STALE;
	if (!slot)
		return VQF_VER_UNKNOWN;
	if (ver_same(t, cur, valid))
		return VQF_VER_VALID;
	vqf_stat_inc(&t->stats.attr_stale);
	return VQF_VER_STALE;
}

/* ---------------------------------------------------------------------- */
/* Guest side: dentries */

void vqf_ver_dentry_init(struct vqf_ver_dentry *d)
{
	memset(d, 0, sizeof(*d));
}

/* A version we are about to cache; 0 if the table says it is impossible. */
static s64 ver_cacheable(struct vqf_ver_table *t, const s64 *slot, s64 v)
{
	if (!slot || v <= 0)
		return 0;
	if (v > READ_ONCE(*slot)) {
		vqf_stat_inc(&t->stats.backward);
		return 0;
	}
	return v;
}

void vqf_ver_dentry_set(struct vqf_ver_table *t, struct vqf_ver_dentry *d,
			const struct vqf_ver_stamp *entry,
			const struct vqf_ver_stamp *parent)
{
	const s64 *slot = entry ? entry->slot : NULL;
	s64 version = entry ? ver_cacheable(t, slot, entry->version) : 0;
	s64 pversion = ver_cacheable(t, parent->slot, parent->version);

	ver_write_begin(&d->seq);
	WRITE_ONCE(d->negative, entry ? 0 : 1);
	WRITE_ONCE(d->slot, slot);
	WRITE_ONCE(d->version, version);
	WRITE_ONCE(d->parent_slot, parent->slot);
	WRITE_ONCE(d->parent_version, pversion);
	ver_write_end(&d->seq);
}

struct vqf_ver_stamp vqf_ver_dentry_entry(const struct vqf_ver_dentry *d)
{
	struct vqf_ver_stamp st = { NULL, 0 };

	if (!d->negative) {
		st.slot = d->slot;
		st.version = d->version;
	}
	return st;
}

enum vqf_ver_state vqf_ver_dentry_check(struct vqf_ver_table *t,
					const struct vqf_ver_dentry *d)
{
	u32 s = ver_read_begin(&d->seq);
	bool negative = READ_ONCE(d->negative);
	const s64 *slot = READ_ONCE(d->slot);
	s64 version = READ_ONCE(d->version);
	const s64 *pslot = READ_ONCE(d->parent_slot);
	s64 pversion = READ_ONCE(d->parent_version);
	s64 cur = slot ? READ_ONCE(*slot) : 0;
	s64 pcur = pslot ? READ_ONCE(*pslot) : 0;

	if (ver_read_raced(t, &d->seq, s))
		return VQF_VER_STALE;

	/* The directory did not change: no name in it did. */
	if (pslot && ver_same(t, pcur, pversion))
		return VQF_VER_VALID;
	/* A table going backwards proves nothing, whatever else it says. */
	if (pslot && pcur < pversion) {
		vqf_stat_inc(negative ? &t->stats.negative_stale :
			     &t->stats.dentry_stale);
		return VQF_VER_STALE;
	}

	if (negative) {
		if (!pslot)
			return VQF_VER_UNKNOWN;
		vqf_stat_inc(&t->stats.negative_stale);
		return VQF_VER_STALE;
	}

	/* Unlink, rename and replace all bump the inode as well. */
	if (slot && ver_same(t, cur, version))
		return VQF_VER_VALID;
	if (!slot && !pslot)
		return VQF_VER_UNKNOWN;
	vqf_stat_inc(&t->stats.dentry_stale);
	return VQF_VER_STALE;
}

/* ---------------------------------------------------------------------- */
/* Device side */

#define VER_WORD_BITS	64

static u64 ver_words(u64 nr_slots)
{
	return VQF_VER_BITMAP_BYTES(nr_slots) / sizeof(u64);
}

int vqf_ver_dev_init(struct vqf_ver_dev *d, void *table, u64 size,
		     u64 *bitmap, u64 bitmap_size)
{
	u64 nr = size / sizeof(s64);
	u64 words;

	memset(d, 0, sizeof(*d));
	if (!table || !bitmap)
		return -EINVAL;
	if (((unsigned long)table | (unsigned long)bitmap) &
	    (sizeof(u64) - 1))
		return -EFAULT;
	if (nr < 2)
		return -ENOSPC;
	words = ver_words(nr);
	if (bitmap_size < words * sizeof(u64))
		return -EMSGSIZE;

	memset(table, 0, nr * sizeof(s64));
	memset(bitmap, 0, words * sizeof(u64));
	/* Slot 0 means "none"; bits past the end are never free either. */
	bitmap[0] = 1;
	if (nr % VER_WORD_BITS)
		bitmap[words - 1] |= ~0ULL << (nr % VER_WORD_BITS);

	d->slots = table;
	d->nr_slots = nr;
	d->inuse = bitmap;
	d->nr_free = nr - 1;
	d->cursor = 1;
	return 0;
}

u64 vqf_ver_dev_alloc(struct vqf_ver_dev *d)
{
	u64 words = ver_words(d->nr_slots);
	u64 w = d->cursor / VER_WORD_BITS;
	u64 i, free, index;

	if (!d->nr_free) {
		vqf_stat_inc(&d->stats.table_full);
		return VQF_VER_NO_INDEX;
	}
	/*
	 * Round-robin from the cursor: a released slot is reused as late as
	 * possible.  nr_free > 0 guarantees a clear bit; the first word is
	 * visited twice, above the cursor first and whole at the end.
	 */
	free = ~d->inuse[w] & (~0ULL << (d->cursor % VER_WORD_BITS));
	for (i = 0; !free && i < words; i++) {
		w = (w + 1) % words;
		free = ~d->inuse[w];
	}
	if (VQF_WARN_ON(!free))
		return VQF_VER_NO_INDEX;

	index = w * VER_WORD_BITS + __builtin_ctzll(free);
	d->inuse[w] |= 1ULL << (index % VER_WORD_BITS);
	d->nr_free--;
	d->cursor = index + 1 < d->nr_slots ? index + 1 : 1;
	/* New owner, new version: see vqf_ver_dev_release(). */
	vqf_atomic64_add_return(&d->slots[index], 1);
	vqf_stat_inc(&d->stats.assigned);
	return index;
}

int vqf_ver_dev_release(struct vqf_ver_dev *d, u64 index)
{
	u64 bit = 1ULL << (index % VER_WORD_BITS);
	u64 *word;

	if (index == VQF_VER_NO_INDEX) {
		vqf_stat_inc(&d->stats.release_reserved);
		return -EINVAL;
	}
	if (index >= d->nr_slots) {
		vqf_stat_inc(&d->stats.bad_index);
		return -ERANGE;
	}
	word = &d->inuse[index / VER_WORD_BITS];
	if (!(*word & bit)) {
		vqf_stat_inc(&d->stats.double_release);
		return -ENOENT;
	}
	*word &= ~bit;
	d->nr_free++;
	/*
	 * A guest that still held the slot (it should not) now sees a
	 * change; the next owner starts above anything it could cache.
	 */
	vqf_atomic64_add_return(&d->slots[index], 1);
	vqf_stat_inc(&d->stats.released);
	return 0;
}

s64 vqf_ver_dev_bump(struct vqf_ver_dev *d, u64 index)
{
	if (index == VQF_VER_NO_INDEX)
		return 0;
	if (index >= d->nr_slots) {
		vqf_stat_inc(&d->stats.bad_index);
		return -ERANGE;
	}
	/*
	 * D1: fully ordered, so the change made before is visible to any
	 * guest that sees the new value (pairs with G1 and G3), and
	 * concurrent bumps of one slot all count.
	 */
	return vqf_atomic64_add_return(&d->slots[index], 1);
}

void vqf_ver_dev_fill_entryver(struct vqf_ver_dev *d, u64 index,
			       struct fuse_entryver_out *out)
{
	memset(out, 0, sizeof(*out));
	if (index == VQF_VER_NO_INDEX)
		return;
	if (index >= d->nr_slots) {
		vqf_stat_inc(&d->stats.bad_index);
		return;
	}
	out->version_index = index;
	/*
	 * D2: acquire, so the attributes read next (stat) are at least as
	 * new as the version reported with them; pairs with D1 of other
	 * device threads.
	 */
	out->initial_version = smp_load_acquire(&d->slots[index]);
}

int vqf_ver_dev_forget(struct vqf_ver_dev *d, u64 *total, u64 *guest,
		       u64 count, u64 *index)
{
	int ret = 0;

	if (guest == total)
		guest = NULL;
	if (guest) {
		if (count > *guest) {
			vqf_stat_inc(&d->stats.forget_excess);
			count = *guest;
			ret = -EOVERFLOW;
		}
		*guest -= count;
		if (count > *total) {
			vqf_stat_inc(&d->stats.forget_inconsistent);
			count = *total;
		}
	} else if (count > *total) {
		vqf_stat_inc(&d->stats.forget_excess);
		count = *total;
		ret = -EOVERFLOW;
	}
	*total -= count;
	if (*total)
		return ret;
	if (*index != VQF_VER_NO_INDEX && !vqf_ver_dev_release(d, *index))
		*index = VQF_VER_NO_INDEX;
	return ret ? ret : 1;
}
