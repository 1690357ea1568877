/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_dirent.h - walking the records of a READDIR or READDIRPLUS reply.
 *
 * A reply's payload (after struct fuse_out_header) is a run of records:
 *
 *   READDIR:      struct fuse_dirent, name, padding to 8 bytes
 *   READDIRPLUS:  struct fuse_entry_out, struct fuse_dirent, name, padding
 *
 * The payload comes from a filesystem server the reader need not trust
 * (the driver reading a device, a device's guard or hub reading its
 * backend).  vqf_dirent_next() checks one record at a time and says why a
 * record is refused, each reason with its own errno; what to do then is
 * the caller's (Linux ends the listing with EIO for a bad name length or a
 * '/', and stops quietly at a record cut short).
 */
#ifndef VQF_DIRENT_H
#define VQF_DIRENT_H

#include "vqf_compat.h"
#include "vqf_fuse_ops.h"

/* One record, as vqf_dirent_next() found it. */
struct vqf_dirent {
	const char *name;	/* inside the caller's buffer, no NUL */
	u32 namelen;		/* 1 .. VQF_FUSE_NAME_MAX */
	u32 type;		/* fuse_dirent.type (DT_*) */
	u64 ino;		/* fuse_dirent.ino */
	u64 off;		/* fuse_dirent.off: where the next read starts */
	struct fuse_entry_out entry;	/* READDIRPLUS: a copy; else zeroes */
};

/**
 * vqf_dirent_next() - check and read the record at *@pos
 * @buf: the reply's payload, after struct fuse_out_header; not modified.
 *	 Read with byte copies, so it need not be aligned.
 * @len: bytes in @buf.
 * @plus: READDIRPLUS records (struct fuse_direntplus) rather than READDIR.
 * @pos: in: where the record starts (0 for the first); out: where the next
 *	 one starts, moved only as said below.
 * @out: filled for a record, also for the name refusals below.
 *
 * Refusals, in the order checked, from the record at *@pos:
 *
 *   fewer bytes left than the fixed header      -ENODATA
 *   fuse_dirent.namelen 0                       -EBADMSG
 *   namelen above VQF_FUSE_NAME_MAX             -ENAMETOOLONG
 *   the record with its padding past @len       -EOVERFLOW
 *   a '/' in the name                           -EBADE
 *   a NUL in the name                           -EILSEQ
 *
 * The last two leave a record whose bounds are sound: @out describes it
 * and *@pos is past it, so a caller may skip the name and go on.  The
 * others leave *@pos where it was and @out unspecified: nothing after
 * them can be found.
 *
 * Return: 1 with a record in @out and *@pos past it; 0 at the end (*@pos
 * at or past @len); or one of the negative errnos above.
 */
int vqf_dirent_next(const u8 *buf, u32 len, bool plus, u32 *pos,
		    struct vqf_dirent *out);

/**
 * vqf_dirent_framed() - whether vqf_dirent_next() framed a record
 * @ret: its return value.
 *
 * Return: true for a record (1) and for the name refusals (-EBADE,
 * -EILSEQ): *@pos is past the record and the walk may go on.  False at
 * the end and for the refusals after which nothing can be found.
 */
static inline bool vqf_dirent_framed(int ret)
{
	return ret == 1 || ret == -EBADE || ret == -EILSEQ;
}

/**
 * vqf_dirent_is_dot() - whether a name is "." or ".."
 * @name: @namelen bytes, need not be NUL-terminated.
 * @namelen: its length.
 *
 * Neither names a child.
 *
 * Return: true for "." and "..".
 */
static inline bool vqf_dirent_is_dot(const char *name, u32 namelen)
{
	return (namelen == 1 && name[0] == '.') ||
	       (namelen == 2 && name[0] == '.' && name[1] == '.');
}

/**
 * vqf_dirent_counts_lookup() - whether a READDIRPLUS record hands out a
 *	lookup
 * @e: a record vqf_dirent_next() framed with @plus.
 *
 * Servers list "." and ".." with an entry that counts no lookup
 * (fuse_direntplus_link() skips them), and an entry with node id 0 is
 * none; every other one counts one, as Linux counts it.
 *
 * Return: true when the reader must count a lookup of e->entry.nodeid.
 */
static inline bool vqf_dirent_counts_lookup(const struct vqf_dirent *e)
{
	return e->entry.nodeid && !vqf_dirent_is_dot(e->name, e->namelen);
}

#endif /* VQF_DIRENT_H */
