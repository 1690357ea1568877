/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_version.h - the shared version table (seed 010/011, never merged
 * upstream): metadata and dcache coherence across guests without a round
 * trip per lookup.
 *
 * The device owns an array of s64 versions in a shared-memory region that
 * every guest maps read-only.  It gives each inode it hands out a slot
 * (struct fuse_entryver_out in LOOKUP/CREATE/MKNOD/MKDIR/SYMLINK/LINK
 * replies) and bumps the slot on every metadata change.  A guest that
 * remembers the version its cached attributes or dentry were taken at can
 * tell, with one load, whether anything changed since.
 *
 * Two halves, both caller-embedded and lock-free for readers:
 *
 *  Guest (driver) side: struct vqf_ver_table (the read-only mapping and its
 *  stats), struct vqf_ver_inode (slot pointer, attr_version ordering fence,
 *  version the cached attributes are valid at) and struct vqf_ver_dentry
 *  (version and parent_version).  Writers of one vqf_ver_inode or one
 *  vqf_ver_dentry must be serialized by the caller (the kernel holds
 *  fi->lock / the dentry's parent lock there); checks run concurrently with
 *  writers and with the device, and answer VQF_VER_STALE when they raced.
 *
 *  Device side: struct vqf_ver_dev, a slot allocator over caller-owned
 *  bitmap memory, bump on metadata change, FORGET accounting and the
 *  fuse_entryver_out filler.  Allocation, release and forget must be
 *  serialized by the caller (the device's inode-table lock); bumps may run
 *  on any number of threads at once.
 *
 * Versions, not timestamps: every slot only ever grows.  A slot starts at 0,
 * is bumped when assigned and when released, so a recycled slot never shows
 * its new owner a value its old owner could have cached, and a live slot is
 * never 0, which the attr_version ordering reserves for "unordered".
 *
 * Index 0 (VQF_VER_NO_INDEX) means "no shared version": the inode falls
 * back to timeouts, exactly as without the extension.  Every index from the
 * device is bounded by the guest's own idea of the table size before it is
 * turned into a pointer.  64-bit loads and stores of a slot are assumed to
 * be single-copy atomic (64-bit hosts and guests).
 */
#ifndef VQF_VERSION_H
#define VQF_VERSION_H

#include "vqf_compat.h"
#include "vqf_fuse_ext.h"

#define VQF_VER_NO_INDEX	0ULL

/**
 * enum vqf_ver_state - what the version table says about a cached object
 * @VQF_VER_UNKNOWN: no shared version covers it; use timeouts.
 * @VQF_VER_VALID: the versions prove nothing changed; no round trip needed.
 * @VQF_VER_STALE: something changed (or the check raced with an update or
 *	saw a version going backwards): revalidate with the device.
 */
enum vqf_ver_state {
	VQF_VER_UNKNOWN = 0,
	VQF_VER_VALID,
	VQF_VER_STALE,
};

/**
 * struct vqf_ver_stats - guest-side counters, updated with vqf_stat_inc()
 * so several threads may share them; read them with READ_ONCE().
 * @index_none: entries the device gave no slot (index 0).
 * @index_no_table: nonzero index while no table is mapped; ignored.
 * @index_out_of_range: index >= table size; ignored, never dereferenced.
 * @index_changed: an inode got a different slot than it had.
 * @entryver_absent: reply without fuse_entryver_out (device without it).
 * @entryver_short: fuse_entryver_out shorter than 16 bytes; treated absent.
 * @entryver_long: more than 16 bytes where it should be; treated absent.
 * @initial_nonpositive: initial_version <= 0 with a slot; not trusted.
 * @backward: a slot or a reply showed a version older than one already
 *	seen for the same slot (device bug or hostile host).
 * @attr_dropped: attributes older than the inode's attr_version, or taken
 *	from another slot than the inode now has; not cached.
 * @attr_stale: inode checks that found the attributes out of date.
 * @dentry_stale: positive dentry checks that found a change.
 * @negative_stale: negative dentry checks whose parent changed.
 * @raced: checks that overlapped a writer and answered STALE for it.
 */
struct vqf_ver_stats {
	u64 index_none;
	u64 index_no_table;
	u64 index_out_of_range;
	u64 index_changed;
	u64 entryver_absent;
	u64 entryver_short;
	u64 entryver_long;
	u64 initial_nonpositive;
	u64 backward;
	u64 attr_dropped;
	u64 attr_stale;
	u64 dentry_stale;
	u64 negative_stale;
	u64 raced;
};

/**
 * struct vqf_ver_table - a guest's view of the version table
 * @slots: read-only mapping of the device's table, or NULL for none.
 * @nr_slots: number of s64 slots in it (slot 0 is never used).
 * @attr_ctr: connection-wide attr_version counter for inodes without a
 *	slot (upstream's fc->attr_version), starts at 1.
 * @stats: counters, see struct vqf_ver_stats.
 *
 * Initialise with vqf_ver_table_init(); the fields are read-only after it
 * except @attr_ctr and @stats, which this module updates atomically.
 */
struct vqf_ver_table {
	const s64 *slots;
	u64 nr_slots;
	s64 attr_ctr;
	struct vqf_ver_stats stats;
};

/**
 * struct vqf_ver_stamp - a version together with the slot it came from
 * @slot: table slot, or NULL when @version came from the table's attr_ctr.
 * @version: the version; 0 means "unordered" (accept, but never valid).
 *
 * Versions of different slots are unrelated numbers, so a version is only
 * ever compared with another one from the same slot; carrying the slot
 * makes a reply sampled before the inode changed slots harmless.
 */
struct vqf_ver_stamp {
	const s64 *slot;
	s64 version;
};

/**
 * struct vqf_ver_inode - per-inode version state (embed in the inode)
 * @seq: odd while a writer updates the fields below.
 * @slot: the inode's table slot, NULL when it has none.
 * @attr_version: ordering fence (upstream fi->attr_version): attributes
 *	sampled before it are older than what is cached and are dropped.
 * @valid_version: version of @slot the cached attributes were fetched at;
 *	0 when they are not known valid.
 *
 * All fields are private; use the functions below.
 */
struct vqf_ver_inode {
	u32 seq;
	const s64 *slot;
	s64 attr_version;
	s64 valid_version;
};

/**
 * struct vqf_ver_dentry - per-dentry version state (embed in d_fsdata)
 * @seq: odd while a writer updates the fields below.
 * @negative: the dentry caches "no such name".
 * @slot: slot of the dentry's inode when it was looked up, or NULL.
 * @version: version of @slot then.
 * @parent_slot: slot of the parent directory, or NULL.
 * @parent_version: version of @parent_slot sampled before the lookup.
 *
 * The slots are kept with the versions so a check needs neither inode and
 * cannot compare versions of different slots.  All fields are private.
 */
struct vqf_ver_dentry {
	u32 seq;
	u32 negative;
	const s64 *slot;
	s64 version;
	const s64 *parent_slot;
	s64 parent_version;
};

/* ----------------------------------------------------------------------
 * Guest side
 */

/**
 * vqf_ver_table_init() - set up a guest's view of the version table
 * @t: caller-owned, zeroed or not; fully initialised on success.
 * @base: the read-only mapping of the table, or NULL when the device offers
 *	none (then every index is ignored and counted in index_no_table).
 * @size: its size in bytes as the device announced it; a tail that is not
 *	a whole s64 is never read.  The caller must have mapped all of it.
 *
 * The mapping must stay valid until every inode and dentry using @t is gone.
 *
 * Return: 0; -EINVAL if @base is NULL but @size is not 0; -EFAULT if @base
 * is not 8-byte aligned (a slot could not be read in one access).  On error
 * @t is set up as "no table" so it can still be used safely.
 */
int vqf_ver_table_init(struct vqf_ver_table *t, const void *base, u64 size);

/**
 * vqf_ver_table_slot() - turn a device-supplied index into a slot pointer
 * @t: the table.
 * @index: untrusted index from a fuse_entryver_out.
 *
 * Return: the slot, or NULL for "no shared version": index 0 (counted in
 * index_none), no table mapped (index_no_table), index >= table size
 * (index_out_of_range; the index is compared before any address is formed).
 */
const s64 *vqf_ver_table_slot(struct vqf_ver_table *t, u64 index);

/**
 * vqf_ver_entryver_parse() - validate the optional last out-arg of a reply
 * @t: the table, for its counters.
 * @buf: the bytes the device wrote for the argument (may be NULL if @len
 *	is 0).  Read once, with one copy.
 * @len: how many bytes the device wrote for it.
 * @out: receives the extension, or zeroes ("no version") on any error.
 *
 * Return: 1 if present and well-formed; 0 if absent (@len 0, counted in
 * entryver_absent); -EMSGSIZE if 0 < @len < 16 (entryver_short);
 * -E2BIG if @len > 16 (entryver_long).  On a negative return the reply can
 * still be used, as one without the extension.
 */
int vqf_ver_entryver_parse(struct vqf_ver_table *t, const void *buf,
			   size_t len, struct fuse_entryver_out *out);

/**
 * vqf_ver_inode_init() - a new inode: no slot, nothing cached
 * @vi: caller-embedded state.
 */
void vqf_ver_inode_init(struct vqf_ver_inode *vi);

/**
 * vqf_ver_sample() - the version to send a request at (fuse_get_attr_version)
 * @t: the table.
 * @vi: the inode (may be a fresh one from vqf_ver_inode_init()).
 *
 * Call before sending any request whose reply carries attributes
 * (GETATTR, LOOKUP, SETATTR, READ for size, ...), and for the parent before
 * a request that creates or looks up a dentry; pass the stamp to
 * vqf_ver_attr_older()/vqf_ver_attr_publish() or vqf_ver_dentry_set() when
 * the reply is in.  The slot is read with acquire semantics, so the request
 * cannot reach the device before the version was read: attributes in the
 * reply are then at least as new as the stamp.  Lock-free.
 *
 * Return: {slot, current value of slot} for an inode with a slot, else
 * {NULL, current attr_ctr}.
 */
struct vqf_ver_stamp vqf_ver_sample(struct vqf_ver_table *t,
				    const struct vqf_ver_inode *vi);

/**
 * vqf_ver_inode_set_entry() - apply a reply's fuse_entryver_out to an inode
 * @t: the table.
 * @vi: the inode the reply names.  Writer: caller-serialized.
 * @ev: the extension as vqf_ver_entryver_parse() left it (zeroes if absent).
 * @before: vqf_ver_sample() of @vi taken before the request was sent.
 *
 * Points @vi at the slot @ev names (validated; NULL when there is none).
 * When the slot changes, the cached attributes' versions are forgotten
 * (counted in index_changed unless the inode had no slot before).
 *
 * Return: the stamp to pass to vqf_ver_attr_older()/vqf_ver_attr_publish()
 * for the attributes in the same reply: {slot, initial_version} normally;
 * {slot, 0} (cache them, never valid) when initial_version is older than
 * @before on the same slot (counted in backward, the seed's "backward going
 * version") or not positive; @before unchanged for an inode without a slot
 * before and after; {NULL, 0} if the inode lost its slot.
 */
struct vqf_ver_stamp vqf_ver_inode_set_entry(struct vqf_ver_table *t,
					     struct vqf_ver_inode *vi,
					     const struct fuse_entryver_out *ev,
					     const struct vqf_ver_stamp *before);

/**
 * vqf_ver_attr_older() - must attributes sampled at @st be dropped?
 * @t: the table, for its counters.
 * @vi: the inode.  Writer: call under the same serialization as
 *	vqf_ver_attr_publish(), and publish right after a false return.
 * @st: the stamp the attributes were requested at.
 *
 * The upstream rule of fuse_change_attributes(): attributes older than the
 * inode's attr_version are ignored (a local change or a newer reply got
 * there first).  A stamp from another slot than the inode has now is
 * dropped too.  Version 0 is unordered and never older.
 *
 * Return: true (and attr_dropped counted) if the caller must not cache them.
 */
bool vqf_ver_attr_older(struct vqf_ver_table *t,
			const struct vqf_ver_inode *vi,
			const struct vqf_ver_stamp *st);

/**
 * vqf_ver_attr_publish() - the caller has stored attributes taken at @st
 * @vi: the inode.  Writer: caller-serialized.
 * @st: a stamp vqf_ver_attr_older() just accepted.
 *
 * Raises attr_version to @st and records @st as the version the cached
 * attributes are valid at.  Store the attributes first: a check that sees
 * the new version also sees them.
 */
void vqf_ver_attr_publish(struct vqf_ver_inode *vi,
			  const struct vqf_ver_stamp *st);

/**
 * vqf_ver_attr_local_change() - the guest changed attributes on its own
 * @t: the table.
 * @vi: the inode.  Writer: caller-serialized.
 *
 * Call after a reply that changed the inode (write extending the size,
 * truncate, link, unlink, ...) where upstream does
 * fi->attr_version = ++fc->attr_version.  Replies sampled before are then
 * dropped by vqf_ver_attr_older(), and the cached attributes are no longer
 * claimed valid.  With a slot, the fence is the slot's value now, which
 * already includes the device's bump for the change.
 *
 * Return: the new attr_version.
 */
s64 vqf_ver_attr_local_change(struct vqf_ver_table *t,
			      struct vqf_ver_inode *vi);

/**
 * vqf_ver_inode_check() - are the inode's cached attributes still valid?
 * @t: the table, for its counters.
 * @vi: the inode.  Lock-free; may run concurrently with writers.
 *
 * Return: VQF_VER_UNKNOWN without a slot; VQF_VER_VALID if the slot still
 * holds the version the attributes were fetched at; VQF_VER_STALE if it
 * moved (attr_stale), moved backwards (backward), nothing valid is cached,
 * or the check overlapped a writer (raced).  After VALID, the caller's
 * reads of the cached attributes see at least what was published with it.
 */
enum vqf_ver_state vqf_ver_inode_check(struct vqf_ver_table *t,
				       const struct vqf_ver_inode *vi);

/**
 * vqf_ver_dentry_init() - a new dentry: no versions
 * @d: caller-embedded state.
 */
void vqf_ver_dentry_init(struct vqf_ver_dentry *d);

/**
 * vqf_ver_dentry_set() - record the versions a dentry was looked up at
 * @t: the table, for its counters.
 * @d: the dentry.  Writer: caller-serialized.
 * @entry: for a positive dentry, the slot of its inode and the reply's
 *	initial_version (what vqf_ver_inode_set_entry() returned); NULL for a
 *	negative dentry.
 * @parent: vqf_ver_sample() of the parent taken before the request.
 *
 * The seed's "FIXME: verify versions aren't going backwards": a version
 * newer than its slot holds now means the table went backwards (the
 * device read the slot before replying, and the slot only grows); it is
 * counted in backward and stored as 0, so the dentry is never valid on it.
 * A version older than the one already stored is not an error: two
 * revalidations of one dentry may finish out of order, and storing the
 * older one only costs a revalidation.
 */
void vqf_ver_dentry_set(struct vqf_ver_table *t, struct vqf_ver_dentry *d,
			const struct vqf_ver_stamp *entry,
			const struct vqf_ver_stamp *parent);

/**
 * vqf_ver_dentry_entry() - the inode stamp a positive dentry holds
 * @d: the dentry.  Writer side: under the serialization of
 *	vqf_ver_dentry_set().
 * Each half of a dentry proves the name on its own (the parent's version:
 * no name in the directory changed; the inode's: nothing unbound it), so
 * a writer that re-proves the name through the directory only (a
 * READDIRPLUS entry carries no inode version) may keep the inode half of
 * an earlier lookup of the same inode with this.
 * Return: {slot, version} of the inode when the dentry was set, or
 * {NULL, 0} for a negative dentry or one without an inode slot.
 */
struct vqf_ver_stamp vqf_ver_dentry_entry(const struct vqf_ver_dentry *d);

/**
 * vqf_ver_dentry_check() - is the dentry's name binding still valid?
 * @t: the table, for its counters.
 * @d: the dentry.  Lock-free; may run concurrently with writers.
 *
 * An unchanged parent proves every entry in it, positive or negative; a
 * parent slot that went backwards makes the dentry STALE whatever else.  A
 * negative dentry can only be proven through its parent.  A positive one is
 * also proven by its inode's unchanged version, because the device bumps an
 * inode on every unlink, rename and replace that could unbind the name.  A
 * positive dentry whose parent changed and whose inode has no slot cannot
 * be proven and is STALE (the seed let it pass to the timeout).
 *
 * Return: VQF_VER_VALID, VQF_VER_STALE (counted in dentry_stale or
 * negative_stale; backward and raced as for vqf_ver_inode_check()), or
 * VQF_VER_UNKNOWN when no slot covers it.
 */
enum vqf_ver_state vqf_ver_dentry_check(struct vqf_ver_table *t,
					const struct vqf_ver_dentry *d);

/* ----------------------------------------------------------------------
 * Device side
 */

/**
 * struct vqf_ver_dev_stats - device-side counters (vqf_stat_inc())
 * @assigned: slots handed out.
 * @released: slots recycled.
 * @table_full: allocations that found no free slot (inode unversioned).
 * @bad_index: bump/release/fill of index >= table size.
 * @release_reserved: release of index 0.
 * @double_release: release of a slot that was not assigned.
 * @forget_excess: FORGET counts above the lookups they name (clamped).
 * @forget_inconsistent: total lookup count below a guest's own (clamped).
 */
struct vqf_ver_dev_stats {
	u64 assigned;
	u64 released;
	u64 table_full;
	u64 bad_index;
	u64 release_reserved;
	u64 double_release;
	u64 forget_excess;
	u64 forget_inconsistent;
};

/**
 * struct vqf_ver_dev - the device's writable table and its allocator
 * @slots: the table (shared memory, guests map it read-only).
 * @nr_slots: number of slots; slot 0 is reserved.
 * @inuse: caller-owned bitmap, one bit per slot, set = assigned.
 * @nr_free: slots that can still be assigned.
 * @cursor: where the next search starts, so freed slots rest a while.
 * @stats: counters.
 */
struct vqf_ver_dev {
	s64 *slots;
	u64 nr_slots;
	u64 *inuse;
	u64 nr_free;
	u64 cursor;
	struct vqf_ver_dev_stats stats;
};

/* Bytes of bitmap vqf_ver_dev_init() needs for @nr_slots slots. */
#define VQF_VER_BITMAP_BYTES(nr_slots)	((((u64)(nr_slots) + 63) / 64) * 8)

/**
 * vqf_ver_dev_init() - set up the device's table and allocator
 * @d: caller-owned, fully initialised on success.
 * @table: the shared-memory table, 8-byte aligned, writable.  Zeroed here:
 *	call before any guest maps it.
 * @size: its size in bytes; a partial trailing slot is unused.
 * @bitmap: caller-owned, at least VQF_VER_BITMAP_BYTES(@size / 8) bytes,
 *	8-byte aligned; must live as long as @d.
 * @bitmap_size: its size in bytes.
 *
 * Return: 0; -EINVAL if @table or @bitmap is NULL; -EFAULT if either is
 * misaligned; -ENOSPC if the table has fewer than 2 slots (nothing to
 * assign); -EMSGSIZE if @bitmap_size is too small.
 */
int vqf_ver_dev_init(struct vqf_ver_dev *d, void *table, u64 size,
		     u64 *bitmap, u64 bitmap_size);

/**
 * vqf_ver_dev_alloc() - give a new inode a slot
 * @d: the device table.  Caller-serialized with release and forget.
 *
 * The slot is bumped before it is returned, so its value differs from
 * anything its previous owner's guests cached.
 *
 * Return: the slot index, or VQF_VER_NO_INDEX when the table is full
 * (counted in table_full): the inode then lives on timeouts.
 */
u64 vqf_ver_dev_alloc(struct vqf_ver_dev *d);

/**
 * vqf_ver_dev_release() - recycle a slot (usually via vqf_ver_dev_forget())
 * @d: the device table.  Caller-serialized with alloc and forget.
 * @index: the slot.  Bumped once more, so a guest still holding it sees a
 *	change rather than a version the next owner will reach.
 *
 * Return: 0; -EINVAL for index 0 (release_reserved); -ERANGE for
 * @index >= nr_slots (bad_index); -ENOENT if it was not assigned
 * (double_release).  On error nothing changes.
 */
int vqf_ver_dev_release(struct vqf_ver_dev *d, u64 index);

/**
 * vqf_ver_dev_bump() - publish a metadata change of the inode at @index
 * @d: the device table.  Any number of threads may bump concurrently.
 * @index: the inode's slot; VQF_VER_NO_INDEX is accepted and does nothing.
 *
 * Call after the change is made (on the host file system or in the
 * device's own state) and before the reply that reports it is sent.  The
 * increment is an atomic fully ordered RMW: everything the device did
 * before is visible to a guest that reads the new version (it pairs with
 * the acquire in vqf_ver_sample() and the smp_rmb() in the checks), and
 * two threads bumping one slot never lose an increment.  The caller must
 * not bump a slot after releasing it.
 *
 * Return: the new version (> 0 until a slot has seen 2^63 bumps, after
 * which it wraps negative and guests treat it as never valid); 0 for
 * VQF_VER_NO_INDEX; -ERANGE (and bad_index) for @index >= nr_slots.
 */
s64 vqf_ver_dev_bump(struct vqf_ver_dev *d, u64 index);

/**
 * vqf_ver_dev_fill_entryver() - the extension for a LOOKUP/CREATE/... reply
 * @d: the device table.
 * @index: the inode's slot (VQF_VER_NO_INDEX for none).
 * @out: filled with {index, current version}, or zeroes when @index is 0 or
 *	out of range (bad_index).
 *
 * Call before reading the attributes that go into the same reply, so they
 * are at least as new as initial_version (the version is read with
 * acquire semantics for that).
 */
void vqf_ver_dev_fill_entryver(struct vqf_ver_dev *d, u64 index,
			       struct fuse_entryver_out *out);

/**
 * vqf_ver_dev_forget() - account a FORGET; recycle the slot at zero
 * @d: the device table.  Caller-serialized with alloc and release.
 * @total: lookups of the inode over all guests sharing the table.
 * @guest: lookups of the inode by the guest that sent the FORGET, or NULL
 *	when the device serves one guest (then only @total is used).
 * @count: nlookup from the guest's FORGET; untrusted.
 * @index: the inode's slot; set to VQF_VER_NO_INDEX when released.
 *
 * A guest may only forget lookups it made itself: @count is clamped to
 * @guest (forget_excess), and @total is never taken below 0
 * (forget_inconsistent), so one guest cannot recycle a slot another guest
 * still relies on.
 *
 * Return: 1 if @total reached 0 and the slot (if any) was released; 0 if
 * lookups remain; -EOVERFLOW if @count had to be clamped (the clamped
 * forget was still applied, and the slot released if @total reached 0).
 */
int vqf_ver_dev_forget(struct vqf_ver_dev *d, u64 *total, u64 *guest,
		       u64 count, u64 *index);

#endif /* VQF_VERSION_H */
