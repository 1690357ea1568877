/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_dax_dev.h - device side of the DAX window: validation of
 * FUSE_SETUPMAPPING / FUSE_REMOVEMAPPING requests from an untrusted guest,
 * and the device's own record of what is mapped where.
 *
 * The device must never trust the guest's view of the window: every
 * request is checked against the window geometry, the file's limits and
 * this map before anything is mmapped or unmapped.  Rules:
 *
 *   SETUPMAPPING  moffset, len and foffset are multiples of the map's
 *                 alignment (the host page size or FUSE_INIT map_alignment),
 *                 len != 0; [moffset, moffset + len) lies in the window and
 *                 [foffset, foffset + len) below the file's byte limit;
 *                 foffset is below the file size (a mapping starts inside
 *                 the file; its tail may pass EOF, as upstream's 2 MiB
 *                 ranges do); flags are READ and/or WRITE, WRITE only on a
 *                 writable file.  The window span must be unmapped, or
 *                 exactly one existing mapping's span (which is replaced:
 *                 that is how the guest upgrades a read-only range to
 *                 writable); a partial overlap is refused.
 *   REMOVEMAPPING count in 1..VQF_REMOVEMAPPING_MAX and exactly count
 *                 entries follow; each entry names exactly one existing
 *                 mapping (same moffset and len) and no mapping twice.
 *                 All entries are checked before any is removed: a bad
 *                 batch changes nothing.
 *
 * Use: _check() copies the request once into the caller's struct (no
 * double fetch from guest memory) and validates it without changing the
 * map; the caller then does the host side (mmap MAP_FIXED, or replacing
 * with PROT_NONE) and, if that worked, _commit()s.  The caller serialises
 * all calls on one map (one lock around check + host work + commit).
 */
#ifndef VQF_DAX_DEV_H
#define VQF_DAX_DEV_H

#include "vqf_compat.h"
#include "vqf_itree.h"
#include "vqf_fuse_ops.h"

/* One mapping; the caller provides an array of them (the map's slots). */
struct vqf_dax_dev_mapping {
	struct vqf_itree_node itn;	/* window bytes [moffset, +len - 1] */
	u64 nodeid;			/* fuse_in_header.nodeid of the setup */
	u64 fh;
	u64 foffset;
	u64 flags;			/* FUSE_SETUPMAPPING_FLAG_* */
	struct vqf_dax_dev_mapping *next_free;	/* private */
};

struct vqf_dax_dev_map {
	u64 window_size;
	u64 align;
	struct vqf_itree_root tree;	/* private */
	struct vqf_dax_dev_mapping *slots;	/* private */
	struct vqf_dax_dev_mapping *free;	/* private */
	u32 nr_slots;
	u32 nr_used;
};

/* What the file allows; the caller fills it from the open file / inode. */
struct vqf_dax_dev_limits {
	u64 file_size;		/* current size: foffset must be below it */
	u64 max_bytes;		/* foffset + len must not pass it */
	bool writable;		/* the file is open for writing */
};

/* One counter per distinct rejection (and the successes). */
struct vqf_dax_dev_stats {
	u64 setups;		/* accepted SETUPMAPPING (committed) */
	u64 replaced;		/* ... that replaced an existing mapping */
	u64 removes;		/* entries removed by committed batches */
	u64 setup_bad_size;	/* -EBADMSG */
	u64 setup_bad_flags;	/* -EOPNOTSUPP */
	u64 setup_unaligned;	/* -EINVAL */
	u64 setup_out_of_window;	/* -ERANGE */
	u64 setup_file_limit;	/* -EFBIG */
	u64 setup_beyond_eof;	/* -ENXIO */
	u64 setup_write_denied;	/* -EACCES */
	u64 setup_overlap;	/* -EBUSY */
	u64 setup_no_slot;	/* -ENOSPC */
	u64 remove_bad_size;	/* -EBADMSG */
	u64 remove_empty;	/* -ENODATA */
	u64 remove_too_many;	/* -E2BIG */
	u64 remove_unaligned;	/* -EINVAL */
	u64 remove_out_of_window;	/* -ERANGE */
	u64 remove_not_mapped;	/* -ENOENT */
	u64 remove_duplicate;	/* -ENOTUNIQ */
};

/*
 * vqf_dax_dev_max_mappings() - most disjoint mappings a window of
 * @window_size bytes can hold at @align granularity (a safe slot count;
 * window_size / range_size suffices for a guest using fixed ranges).
 */
static inline u64 vqf_dax_dev_max_mappings(u64 window_size, u64 align)
{
	return align ? window_size / align : 0;
}

/*
 * vqf_dax_dev_map_init() - empty map over caller-owned @slots.
 * Returns 0, or -EINVAL if @align is not a power of two, @window_size is
 * not a multiple of it or is 0, or @nr_slots is 0.
 */
int vqf_dax_dev_map_init(struct vqf_dax_dev_map *m, u64 window_size,
			 u64 align, struct vqf_dax_dev_mapping *slots,
			 u32 nr_slots);

/*
 * vqf_dax_dev_setup_check() - validate a SETUPMAPPING in-arg.
 * @arg, @size: the in-arg bytes as received (after fuse_in_header).
 * @lim: the target file's limits.  @st: counters (one bumped on failure).
 * @in: receives the copy that was validated; use it, not @arg, afterwards.
 * @replaces: receives the mapping that a commit would replace, or NULL.
 * Returns 0 or (each with its own counter):
 *   -EBADMSG     @size != sizeof(struct fuse_setupmapping_in);
 *   -EOPNOTSUPP  unknown flag bits, or neither READ nor WRITE;
 *   -EINVAL      moffset, len or foffset not aligned, or len == 0;
 *   -ERANGE      moffset + len overflows or passes the window end;
 *   -EFBIG       foffset + len overflows or passes @lim->max_bytes;
 *   -ENXIO       foffset >= @lim->file_size;
 *   -EACCES      WRITE on a file not open for writing;
 *   -EBUSY       overlaps mapped bytes other than one identical span;
 *   -ENOSPC      a new mapping and every slot is in use.
 */
int vqf_dax_dev_setup_check(const struct vqf_dax_dev_map *m,
			    const void *arg, size_t size,
			    const struct vqf_dax_dev_limits *lim,
			    struct vqf_dax_dev_stats *st,
			    struct fuse_setupmapping_in *in,
			    const struct vqf_dax_dev_mapping **replaces);

/*
 * vqf_dax_dev_setup_commit() - record @in (validated by _check on the
 * unchanged map) for @nodeid, replacing the identical span if mapped.
 * Returns the record, or NULL if @in no longer passes (map changed since
 * the check: a caller bug; nothing is changed then).
 */
const struct vqf_dax_dev_mapping *
vqf_dax_dev_setup_commit(struct vqf_dax_dev_map *m, u64 nodeid,
			 const struct fuse_setupmapping_in *in,
			 struct vqf_dax_dev_stats *st);

/*
 * vqf_dax_dev_remove_check() - validate a REMOVEMAPPING request.
 * @args, @size: fuse_removemapping_in followed by its entries, as
 * received.  @ents: receives the validated copy (room for
 * VQF_REMOVEMAPPING_MAX entries), @count their number.
 * Returns 0 or (each with its own counter):
 *   -EBADMSG     @size is shorter than the header, or is not header +
 *                count entries;
 *   -ENODATA     count == 0;
 *   -E2BIG       count > VQF_REMOVEMAPPING_MAX;
 *   -EINVAL      an entry's moffset or len unaligned, or len == 0;
 *   -ERANGE      an entry passes the window end (or overflows);
 *   -ENOENT      an entry does not name exactly one existing mapping;
 *   -ENOTUNIQ    two entries name the same mapping.
 */
int vqf_dax_dev_remove_check(const struct vqf_dax_dev_map *m,
			     const void *args, size_t size,
			     struct vqf_dax_dev_stats *st,
			     struct fuse_removemapping_one *ents, u32 *count);

/* vqf_dax_dev_remove_commit() - remove the @count validated entries. */
void vqf_dax_dev_remove_commit(struct vqf_dax_dev_map *m,
			       const struct fuse_removemapping_one *ents,
			       u32 count, struct vqf_dax_dev_stats *st);

/* vqf_dax_dev_lookup() - the mapping covering window byte @moffset. */
const struct vqf_dax_dev_mapping *
vqf_dax_dev_lookup(const struct vqf_dax_dev_map *m, u64 moffset);

/* vqf_dax_dev_reset() - forget every mapping (device reset, DESTROY). */
void vqf_dax_dev_reset(struct vqf_dax_dev_map *m);

/* vqf_dax_dev_check() - tree invariants + slot accounting; 0/-EUCLEAN. */
int vqf_dax_dev_check(const struct vqf_dax_dev_map *m, const char **why);

#endif /* VQF_DAX_DEV_H */
