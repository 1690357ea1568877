/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_guard.h - what a virtio-fs device lets through to its backend from
 * a guest it does not trust.
 *
 * A FUSE server trusts the kernel: passthrough_ll casts node ids and
 * directory handles to pointers, walks ".." like any name, and opens what
 * a node id names.  Over virtio-fs the "kernel" is a guest.  The guard
 * sits in the device (struct vqf_fsdev), after lib/'s parser and before
 * anything reaches a backend - a vqf_backend, or a vqf_hub port with
 * --guests - and keeps per device, so per guest:
 *
 *   - the node ids this device handed this guest in an entry reply
 *     (LOOKUP, MKNOD, MKDIR, SYMLINK, LINK, CREATE, READDIRPLUS entries
 *     other than "." and "..") with their lookup count, counted as the
 *     kernel counts them: a FORGET subtracts, and an id whose count drops
 *     to 0 is no longer the guest's.  FUSE_ROOT_ID is always the guest's.
 *     Each id's file type (from the entry's attr.mode) and, for a
 *     directory, its parent and name (entries, RENAME, RMDIR);
 *   - the file handles this device handed this guest in OPEN, CREATE and
 *     OPENDIR replies and not yet released, each bound to the node id it
 *     was opened on and to its kind (file or directory).
 *
 * A request is refused, with an errno of its own and a counter of its own
 * (struct vqf_guard_stats), when:
 *
 *   errno     counter           cause
 *   EPERM     name_dot          "." or ".." as a path component (but
 *                               LOOKUP ".."); lib/'s parser has refused
 *                               names empty, with '/' or without NUL
 *   EROFS     readonly          a change on a read-only device: SETATTR,
 *                               MKNOD, MKDIR, UNLINK, RMDIR, SYMLINK,
 *                               RENAME, RENAME2, LINK, CREATE, WRITE,
 *                               SETXATTR, REMOVEXATTR, FALLOCATE,
 *                               COPY_FILE_RANGE, TMPFILE, OPEN for writing
 *                               or with O_TRUNC, a writable SETUPMAPPING
 *   ESTALE    node_unknown      a node id (the header's, LINK's old one,
 *                               RENAME's new directory, COPY_FILE_RANGE's
 *                               output) this guest does not hold: never
 *                               handed out, forgotten, or from before a
 *                               reset; a forgotten node with handles still
 *                               open is held for their RELEASE/RELEASEDIR
 *                               (Linux's eviction FORGET on hiprio can
 *                               overtake the RELEASE that close() queued)
 *   EBADF     handle_unknown    a file handle this guest does not hold
 *   EBADFD    handle_mismatch   a handle the guest holds, but opened on
 *                               another node or of the other kind (a
 *                               directory's for READ, a file's for READDIR)
 *   ENXIO     open_special      OPEN of a node that is no regular file nor
 *                               directory (FIFO, socket, device), or a
 *                               SETUPMAPPING without handle of one
 *   EISDIR    open_dir          OPEN of a directory
 *   ENOTDIR   opendir_notdir    OPENDIR of a non-directory
 *   ENOTDIR   dotdot_notdir     LOOKUP ".." in a non-directory
 *   ENOENT    dotdot_unknown    LOOKUP ".." in a directory whose parent
 *                               the device does not know (any more)
 *   ESHUTDOWN stop_dropped      a RELEASE waiting for requests on its
 *                               handle when the device stopped or the
 *                               session was reset
 *
 * LOOKUP "..": answered from the device's own knowledge, never by a
 * backend walking up.  In a directory whose parent P is known and held,
 * with P's parent G and name known and held, it becomes LOOKUP(G, P's
 * name) (dotdot_parent); when P is the root, or the directory is the root
 * itself, it becomes a GETATTR of the root whose reply the device turns
 * into the root's entry (nodeid FUSE_ROOT_ID, generation 0, no lookup
 * counted on the backend's side; dotdot_root).
 *
 * FORGET and BATCH_FORGET (no reply): an entry for an id the guest does
 * not hold, or with count 0, is dropped (forget_unknown), one above the
 * count is cut to it (forget_clamped); what is left goes to the backend.
 * The root's count is only what backends handed out: forgets of the
 * root's synthesized entries are dropped.
 *
 * Requests in flight: a request holds a pin on the node ids and handles
 * it names from its check until its reply was delivered (or it ended
 * without one).  A FORGET that takes an id to 0, and a RELEASE/RELEASEDIR
 * that ends a handle, wait until no request in flight names it before the
 * backend sees them (forget_waits, release_waits): so the guard's "held"
 * is what the backend still holds while a request runs there, even for a
 * guest that races a FORGET against its own GETATTR.  The kernel never
 * does (it keeps the inode and file while requests are out).
 *
 * Replies update the guard only when they are successes and well-formed
 * (reply_bad counts the others), and only replies to requests checked
 * since the last reset.  Nothing outside the request's and reply's
 * buffers is read or written.
 *
 * Memory grows with what the backend itself holds for the guest (one
 * entry per node id and per open handle, a name per directory); hash
 * tables that double.  All calls are thread-safe (one mutex).
 */
#ifndef VQF_GUARD_H
#define VQF_GUARD_H

#include "vqf_dev.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

struct vqf_guard;

struct vqf_guard_cfg {
	bool readonly;		/* EROFS for every change */
};

#define VQF_GUARD_E_NAME_DOT		EPERM
#define VQF_GUARD_E_READONLY		EROFS
#define VQF_GUARD_E_NODE_UNKNOWN	ESTALE
#define VQF_GUARD_E_HANDLE_UNKNOWN	EBADF
#define VQF_GUARD_E_HANDLE_MISMATCH	EBADFD
#define VQF_GUARD_E_OPEN_SPECIAL	ENXIO
#define VQF_GUARD_E_OPEN_DIR		EISDIR
#define VQF_GUARD_E_OPENDIR_NOTDIR	ENOTDIR
#define VQF_GUARD_E_DOTDOT_NOTDIR	ENOTDIR
#define VQF_GUARD_E_DOTDOT_UNKNOWN	ENOENT
#define VQF_GUARD_E_STOP		ESHUTDOWN

/*
 * The refusals, counter and errno, in the order of the table above: one
 * list, so that the counters, the daemon's log line and the tests that
 * read it cannot drift apart.
 */
#define VQF_GUARD_REFUSALS(X)					\
	X(name_dot, VQF_GUARD_E_NAME_DOT)			\
	X(readonly, VQF_GUARD_E_READONLY)			\
	X(node_unknown, VQF_GUARD_E_NODE_UNKNOWN)		\
	X(handle_unknown, VQF_GUARD_E_HANDLE_UNKNOWN)		\
	X(handle_mismatch, VQF_GUARD_E_HANDLE_MISMATCH)		\
	X(open_special, VQF_GUARD_E_OPEN_SPECIAL)		\
	X(open_dir, VQF_GUARD_E_OPEN_DIR)			\
	X(opendir_notdir, VQF_GUARD_E_OPENDIR_NOTDIR)		\
	X(dotdot_notdir, VQF_GUARD_E_DOTDOT_NOTDIR)		\
	X(dotdot_unknown, VQF_GUARD_E_DOTDOT_UNKNOWN)		\
	X(stop_dropped, VQF_GUARD_E_STOP)

struct vqf_guard_stats {
	u64 checked;		/* requests checked */
	/* Refused, one counter per VQF_GUARD_REFUSALS entry; stop_dropped
	 * also counts FORGETs given up at a stop.
	 */
#define VQF_GUARD_STAT(name, err)	u64 name;
	VQF_GUARD_REFUSALS(VQF_GUARD_STAT)
#undef VQF_GUARD_STAT
	/* LOOKUP "..", let through rewritten: */
	u64 dotdot_parent;
	u64 dotdot_root;
	/* FORGET and BATCH_FORGET entries: */
	u64 forgets;		/* passed on (maybe clamped) */
	u64 forget_unknown;	/* dropped */
	u64 forget_clamped;	/* cut to the count */
	u64 forget_waits;	/* waited for requests in flight */
	u64 release_waits;	/* RELEASE*s that waited likewise */
	u64 release_forgotten;	/* RELEASE*s of a node already forgotten */
	u64 session_waits;	/* INIT/DESTROYs that waited for requests */
	/* Replies: */
	u64 entries;		/* lookups counted */
	u64 opens;		/* handles recorded */
	u64 reply_bad;		/* success too short to read: not recorded */
	u64 record_nomem;	/* not recorded: out of memory */
	u64 resets;
	u64 nodes;		/* node ids held now (the root not counted) */
	u64 handles;		/* handles held now */
};

/*
 * Per-request state, caller-owned (one per request in flight), set up by
 * vqf_guard_tx_init() before vqf_guard_request().  Opaque to callers.
 */
/* The header's node id and one other (LINK, RENAME*, COPY_FILE_RANGE). */
#define VQF_GUARD_PINS	2
struct vqf_guard_tx {
	u64 gen;			/* the table's generation when checked */
	u64 node[VQF_GUARD_PINS];	/* node ids pinned */
	u64 fh[2], fh_node[2];		/* handles pinned */
	bool fh_dir[2];			/* ...of which kind */
	u8 nnode, nfh;
	bool checked;			/* vqf_guard_request() let it through */
	bool root_entry;		/* GETATTR reply -> the root's entry */
	struct fuse_entry_out entry;	/* that entry */
};

/*
 * Creates a guard that holds nothing but the root.  @cfg may be NULL (not
 * read-only).  Returns 0 or -ENOMEM.
 */
int vqf_guard_new(const struct vqf_guard_cfg *cfg, struct vqf_guard **out);

/* Frees @g (NULL: no-op).  No call may be running. */
void vqf_guard_free(struct vqf_guard *g);

/*
 * Forgets every node id and handle (a device reset, a new INIT, a
 * DESTROY: the backend's ids of the session are gone) and ends a stop.
 * Pins of requests checked before are ignored from now on, and their
 * replies record nothing.
 */
void vqf_guard_reset(struct vqf_guard *g);

/*
 * A stop began: FORGETs and RELEASEs waiting for requests in flight give
 * up (FORGET entries are dropped, RELEASEs refused with -ESHUTDOWN, both
 * counted in stop_dropped), and later ones do not wait, until
 * vqf_guard_reset().
 */
void vqf_guard_stop(struct vqf_guard *g);

void vqf_guard_tx_init(struct vqf_guard_tx *tx);

/*
 * Checks request @req (vqf_dev_parse() accepted it; the guard reads only
 * its private copies: header, fixed argument, names) before it reaches a
 * backend.  Returns 0 to pass it on - maybe rewritten in place: LOOKUP
 * ".." (header nodeid, name in req->names, or opcode GETATTR with
 * arg_size sizeof(struct fuse_getattr_in)) - or one of the negative
 * errnos of the table above to answer it with (NOREPLY opcodes get no
 * answer).  INIT and DESTROY start a new session: they wait until every
 * request checked before has been done with (vqf_guard_done()), then
 * forget every id and handle, so no request checked against the old
 * session's ids reaches the new one.
 * FORGET and BATCH_FORGET pass here unchecked: vqf_guard_forget() sees
 * them on the private flat copy.  On 0 the request holds pins until
 * vqf_guard_done(); a RELEASE/RELEASEDIR may wait here (see above).
 */
int vqf_guard_request(struct vqf_guard *g, struct vqf_dev_req *req,
		      struct vqf_guard_tx *tx);

/*
 * FORGET or BATCH_FORGET as the backend is about to get it: @flat is the
 * device's private flat copy of @len bytes (fuse_in_header first, as
 * vqf_dev_flatten() wrote it), rewritten in place: entries dropped or
 * clamped, the count and fuse_in_header.len adjusted.  May wait (see
 * above).  Returns the new length, or 0 when nothing is left to pass on.
 * Other opcodes: @len unchanged.
 */
u32 vqf_guard_forget(struct vqf_guard *g, void *flat, u32 len);

/*
 * The backend's reply to @req (as passed on, after any rewrite), iovec
 * as vqf_backend_reply_fn gets it (fuse_out_header first, @len bytes in
 * all).  Records the ids and handles a success hands out and the renames
 * and removals it reports.  Returns 0: send the backend's reply as it is;
 * 1: send *@payload (*@plen bytes, valid while @tx is) as the success
 * payload instead - a LOOKUP ".." answered with the root's entry; or a
 * negative errno to send instead (-EIO: the GETATTR behind such a LOOKUP
 * came back too short to make an entry of).
 */
int vqf_guard_reply(struct vqf_guard *g, struct vqf_guard_tx *tx,
		    const struct vqf_dev_req *req, const struct iovec *iov,
		    int iovcnt, size_t len, const void **payload, u32 *plen);

/* The request is over: its pins go.  Idempotent. */
void vqf_guard_done(struct vqf_guard *g, struct vqf_guard_tx *tx);

/* A consistent copy of the counters. */
void vqf_guard_get_stats(struct vqf_guard *g, struct vqf_guard_stats *out);

#endif /* VQF_GUARD_H */
