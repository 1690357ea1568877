/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_dev.h - the device side of virtio-fs: parse a guest's FUSE request,
 * build the reply.
 *
 * A request arrives as the device-readable part of a descriptor chain that
 * the caller has already mapped to host pointers (struct vqf_dev_seg, any
 * split, zero-length pieces allowed).  Everything in those bytes comes from
 * the guest and may change while we look at it, so the parser:
 *
 *   - copies every byte it bases a decision on exactly once into
 *     caller-owned memory (struct vqf_dev_req) and decides only on the copy:
 *     fuse_in_header, the opcode's fixed argument struct and the names;
 *   - hands back the bulk payload (WRITE data, SETXATTR value, IOCTL input,
 *     BATCH_FORGET and REMOVEMAPPING entries, extensions) as a view into the
 *     guest's segments, not copied, so that a backend can do zero-copy I/O.
 *     Its length derives only from the copies; the bytes themselves are
 *     data, which the guest may legitimately race on.
 *
 * Names are copied into req->names and checked there (NUL inside the bound,
 * length limit, no '/' in a path component) rather than referenced in guest
 * memory: a backend calling strlen() or open() on guest memory after our
 * check could be handed a name whose NUL the guest has since removed.  The
 * copy is bounded by the connection's limits (at most VQF_DEV_NAMES_SIZE),
 * so a name costs at most one memcpy of a few hundred bytes.
 *
 * A malformed request is never fatal: vqf_dev_parse() returns a distinct
 * negative errno per reason, counts it in struct vqf_dev_stats and leaves in
 * req->error the errno to send back (see the table below and
 * docs/lib-dev.md); vqf_dev_reply_req() sends it.
 *
 * Nothing here allocates, locks, sleeps or keeps global state: the
 * connection (struct vqf_dev_conn), the per-request state and the statistics
 * all belong to the caller.  A vqf_dev_conn is read-only during
 * vqf_dev_parse(), so queues may parse concurrently; updating it
 * (vqf_dev_conn_*) and the stats need the caller's own serialisation.
 */
#ifndef VQF_DEV_H
#define VQF_DEV_H

#include "vqf_compat.h"
#include "vqf_fuse_ops.h"

/* One readable piece of a request, already mapped to a host pointer. */
struct vqf_dev_seg {
	const void *base;
	u32 len;
};

/* One device-writable piece of the reply space. */
struct vqf_dev_wseg {
	void *base;
	u32 len;
};

/* One source piece of a reply payload (device memory, trusted). */
struct vqf_dev_piece {
	const void *base;
	u32 len;
};

/*
 * A byte range inside the guest's segments, not copied: @len bytes starting
 * @off bytes into @seg[0], continuing through at most @nseg segments.
 * Bytes may change under the reader; only @len is stable.
 */
struct vqf_dev_view {
	const struct vqf_dev_seg *seg;
	u32 nseg;
	u32 off;
	u32 len;
};

/*
 * Upper bounds for the connection's name limits (bytes, no NUL): the
 * protocol's own (vqf_fuse_ops.h).  Names are copied into a buffer of
 * VQF_DEV_NAMES_SIZE, enough for the largest pair (SYMLINK's name and
 * target).
 */
#define VQF_DEV_NAME_MAX_CAP	VQF_FUSE_NAME_MAX
#define VQF_DEV_PATH_MAX_CAP	(VQF_SYMLINK_MAX - 1)
#define VQF_DEV_NAMES_SIZE	(VQF_DEV_NAME_MAX_CAP + 1 + \
				 VQF_DEV_PATH_MAX_CAP + 1)

/*
 * Room for fuse_in_header, a fixed argument and names on top of
 * max_write, like libfuse's FUSE_BUFFER_HEADER_SIZE: a request longer than
 * max_write + VQF_DEV_HDR_ROOM is refused.
 */
#define VQF_DEV_HDR_ROOM	4096

/* Oldest protocol minor the device accepts (virtio-fs guests send >= 31). */
#define VQF_DEV_MIN_MINOR	27

/* Defaults set by vqf_dev_conn_init(). */
#define VQF_DEV_DEF_MAX_WRITE	(128 * 1024)
#define VQF_DEV_DEF_FORGET_MAX	(PAGE_SIZE / sizeof(struct fuse_forget_one))

/*
 * Per-connection parser state, owned by the caller.
 * @max_write: largest WRITE payload; before INIT the device's own limit,
 *	after INIT min(device limit, what the INIT reply announced).
 * @max_read: largest READ/READDIR/READDIRPLUS size.
 * @name_max: longest path component or xattr name, bytes without NUL;
 *	the table's limits (1024, xattr 255) apply on top.
 * @path_max: longest SYMLINK target, bytes without NUL (<= 4095).
 * @forget_max: most entries in one BATCH_FORGET (0: bounded only by the
 *	request's length).
 * @minor: negotiated protocol minor, 0 before INIT.
 * @flags: negotiated INIT flags (flags | flags2 << 32); the parser looks at
 *	FUSE_SETXATTR_EXT and FUSE_SECURITY_CTX.
 * @hiprio_ops: bit n set: opcode n may arrive on the hiprio queue.
 * @request_ops: bit n set: opcode n may arrive on a request queue.  Both
 *	default to the table's VQF_OPF_HIPRIO / VQF_OPF_REQUEST_Q
 *	(virtio 1.2, 5.11.6.1: FORGET, BATCH_FORGET and INTERRUPT go to
 *	hiprio, everything else to the request queues).
 * @initialized: an INIT has been answered successfully.
 */
struct vqf_dev_conn {
	u32 max_write;
	u32 max_read;
	u32 name_max;
	u32 path_max;
	u32 forget_max;
	u32 minor;
	u64 flags;
	u64 hiprio_ops;
	u64 request_ops;
	bool initialized;
};

/*
 * Why a request was refused.  Each reason has its own parse errno, its own
 * counter and the errno sent back to the guest:
 *
 * reason       parse errno     reply         when
 * HDR_SHORT    -ENODATA        EPROTO        fewer readable bytes than
 *                                            fuse_in_header (unique 0)
 * LEN_SMALL    -EBADMSG        EPROTO        in.len < fuse_in_header
 * LEN_OVER     -EOVERFLOW      EPROTO        in.len > readable bytes
 * LEN_UNDER    -EPROTO         EPROTO        in.len < readable bytes
 * TOO_BIG      -E2BIG          EINVAL        in.len > max_write + HDR_ROOM
 * OPCODE       -ENOSYS         ENOSYS        opcode not in the table
 * NO_INIT      -ENOTCONN       EIO           anything but INIT before INIT
 * REINIT       -EISCONN        EIO           INIT when initialized
 * QUEUE        -EPERM          EINVAL        opcode not allowed on this
 *                                            queue (hiprio / request)
 * ARG_SHORT    -ENOMSG         EINVAL        fixed argument cut short
 * TRAILING     -EBADR          EINVAL        bytes after the last argument
 * NAME_UNTERM  -EILSEQ         EINVAL        name without NUL in its bytes
 * NAME_LONG    -ENAMETOOLONG   ENAMETOOLONG  name longer than the limit
 * NAME_BAD     -EBADE          EINVAL        empty name, '/' in a component
 * DATA_SIZE    -EMSGSIZE       EINVAL        WRITE/IOCTL/SETXATTR size field
 *                                            disagrees with the bytes sent
 * DATA_MAX     -ERANGE         EINVAL        payload over the table's max
 *                                            (SETXATTR > XATTR_SIZE_MAX)
 * IO_SIZE      -EFBIG          EINVAL        WRITE size > max_write, READ,
 *                                            READDIR* size > max_read
 * COUNT        -EBADSLT        EINVAL        BATCH_FORGET / REMOVEMAPPING
 *                                            count != entries sent
 * COUNT_MAX    -ETOOMANYREFS   EINVAL        count > forget_max /
 *                                            FUSE_REMOVEMAPPING_MAX_ENTRY
 * EXT          -EBADRQC        EINVAL        total_extlen beyond the request
 *                                            or on an opcode without
 *                                            VQF_OPF_EXT
 * EXT_BAD      -EUCLEAN        EINVAL        the extension block is not a
 *                                            run of well-formed headers:
 *                                            a size below 8, not a multiple
 *                                            of 8 or past the block, a type
 *                                            other than a security context
 *                                            header, or contexts that do
 *                                            not fill it exactly
 *
 * NOREPLY opcodes (FORGET, BATCH_FORGET, INTERRUPT) get no reply even when
 * refused, once the opcode is known.
 */
enum vqf_dev_reason {
	VQF_DEV_OK = 0,
	VQF_DEV_R_HDR_SHORT,
	VQF_DEV_R_LEN_SMALL,
	VQF_DEV_R_LEN_OVER,
	VQF_DEV_R_LEN_UNDER,
	VQF_DEV_R_TOO_BIG,
	VQF_DEV_R_OPCODE,
	VQF_DEV_R_NO_INIT,
	VQF_DEV_R_REINIT,
	VQF_DEV_R_QUEUE,
	VQF_DEV_R_ARG_SHORT,
	VQF_DEV_R_TRAILING,
	VQF_DEV_R_NAME_UNTERM,
	VQF_DEV_R_NAME_LONG,
	VQF_DEV_R_NAME_BAD,
	VQF_DEV_R_DATA_SIZE,
	VQF_DEV_R_DATA_MAX,
	VQF_DEV_R_IO_SIZE,
	VQF_DEV_R_COUNT,
	VQF_DEV_R_COUNT_MAX,
	VQF_DEV_R_EXT,
	VQF_DEV_R_EXT_BAD,
	VQF_DEV_R_NR
};

/*
 * Caller-owned counters.  @reject[r] counts requests refused for reason r;
 * the reply_* counters count vqf_dev_reply() failures by errno.
 */
struct vqf_dev_stats {
	u64 parsed;
	u64 reject[VQF_DEV_R_NR];
	u64 replies;
	u64 reply_no_room;	/* -ENOBUFS */
	u64 reply_overflow;	/* -EMSGSIZE */
	u64 reply_bad_error;	/* -ERANGE */
	u64 reply_err_payload;	/* -EINVAL */
	u64 flatten_ext_bad;	/* -EUCLEAN from vqf_dev_flatten() */
};

/* The opcode's fixed argument, copied once from the guest. */
union vqf_dev_arg {
	struct fuse_init_in init;
	struct fuse_forget_in forget;
	struct fuse_batch_forget_in batch_forget;
	struct fuse_getattr_in getattr;
	struct fuse_setattr_in setattr;
	struct fuse_mknod_in mknod;
	struct fuse_mkdir_in mkdir;
	struct fuse_rename_in rename;
	struct fuse_rename2_in rename2;
	struct fuse_link_in link;
	struct fuse_open_in open;
	struct fuse_create_in create;
	struct fuse_read_in read;
	struct fuse_write_in write;
	struct fuse_release_in release;
	struct fuse_fsync_in fsync;
	struct fuse_flush_in flush;
	struct fuse_setxattr_in setxattr;
	struct fuse_getxattr_in getxattr;
	struct fuse_lk_in lk;
	struct fuse_access_in access;
	struct fuse_interrupt_in interrupt;
	struct fuse_bmap_in bmap;
	struct fuse_ioctl_in ioctl;
	struct fuse_poll_in poll;
	struct fuse_fallocate_in fallocate;
	struct fuse_lseek_in lseek;
	struct fuse_copy_file_range_in copy_file_range;
	struct fuse_setupmapping_in setupmapping;
	struct fuse_removemapping_in removemapping;
	struct fuse_syncfs_in syncfs;
};

/*
 * A parsed request, owned by the caller (about 5.5 KiB; keep one per
 * in-flight request, not on a kernel stack).
 * @in: the validated copy of fuse_in_header; in.len equals the bytes the
 *	request occupies.
 * @arg, @arg_size: the fixed argument and how many bytes of it the guest
 *	sent (INIT may send the 16-byte pre-7.36 form; the rest is zeroed).
 * @name, @name_len: first name (component, xattr name), NUL-terminated copy
 *	in @names, or NULL; @name_len excludes the NUL.
 * @name2, @name2_len: second name (RENAME*: new name, SYMLINK: target).
 * @data: payload view: WRITE data, SETXATTR value, IOCTL input,
 *	BATCH_FORGET/REMOVEMAPPING entries (count from @arg); len 0 if none.
 * @ext: bytes after the names the parser does not interpret: the security
 *	context (FUSE_SECURITY_CTX) and the total_extlen extensions.
 * @noreply: the table marks the opcode NOREPLY (FORGET, BATCH_FORGET,
 *	INTERRUPT): the guest offered no reply space.
 * @reason, @error: VQF_DEV_OK and 0, or why it was refused and the negative
 *	errno to reply with.
 */
struct vqf_dev_req {
	struct fuse_in_header in;
	union vqf_dev_arg arg;
	u32 arg_size;
	const char *name;
	u32 name_len;
	const char *name2;
	u32 name2_len;
	struct vqf_dev_view data;
	struct vqf_dev_view ext;
	bool noreply;
	enum vqf_dev_reason reason;
	int error;
	char names[VQF_DEV_NAMES_SIZE];
};

/**
 * vqf_dev_conn_init() - defaults for a connection that has seen no INIT.
 * @conn: caller-owned; max_write VQF_DEV_DEF_MAX_WRITE (= max_read),
 *	name_max VQF_DEV_NAME_MAX_CAP, path_max VQF_DEV_PATH_MAX_CAP,
 *	forget_max VQF_DEV_DEF_FORGET_MAX, queue masks from the table.
 *	The caller may change the limits afterwards (names within the caps
 *	above).  Also what a device reset or a DESTROY should do.
 */
void vqf_dev_conn_init(struct vqf_dev_conn *conn);

/**
 * vqf_dev_conn_init_done() - record a successful INIT.
 * @conn: the connection.
 * @req: the parsed INIT request (req->in.opcode == FUSE_INIT).
 * @out: the INIT reply the backend produced; @out_size its bytes (the
 *	pre-7.23 8/24-byte forms are refused).
 *
 * Sets minor = min(guest, device), flags = guest & device flags, lowers
 * max_write to out->max_write (never raises it: the device's buffers were
 * sized for its own limit) and marks the connection initialized.
 *
 * Return: 0; -EINVAL if @req is not a valid INIT; -EPROTO if @out_size is
 * short or out->major != 7; -EPROTONOSUPPORT if the negotiated minor is
 * below VQF_DEV_MIN_MINOR; -ERANGE if out->max_write < 4096.  On error
 * @conn is unchanged.
 */
int vqf_dev_conn_init_done(struct vqf_dev_conn *conn,
			   const struct vqf_dev_req *req,
			   const struct fuse_init_out *out, u32 out_size);

/**
 * vqf_dev_parse() - validate one request and copy its fixed parts.
 * @conn: connection state (read only).
 * @seg, @nseg: the device-readable segments of the chain; pointers and
 *	lengths are the caller's (host) copies and must stay valid while @req's
 *	views are used.  @nseg may be 0.
 * @hiprio: the chain came from the hiprio queue.
 * @req: caller-owned result, fully overwritten.
 * @stats: counters, may be NULL.
 *
 * Return: 0 with @req filled in; or one of the negative errnos in the
 * reason table above, with req->reason and req->error set (and req->in
 * holding the header, or for HDR_SHORT its len, opcode and unique when
 * those 16 bytes were there, else zeros: for the reply's unique).  Never
 * reads outside @seg, never writes outside @req and @stats.
 */
int vqf_dev_parse(const struct vqf_dev_conn *conn,
		  const struct vqf_dev_seg *seg, u32 nseg, bool hiprio,
		  struct vqf_dev_req *req, struct vqf_dev_stats *stats);

/* The errno vqf_dev_parse() returns for @reason, 0 for VQF_DEV_OK. */
int vqf_dev_reason_errno(enum vqf_dev_reason reason);

/* A short constant name for @reason ("len_over", ...), "?" if unknown. */
const char *vqf_dev_reason_name(enum vqf_dev_reason reason);

/**
 * vqf_dev_view_copy() - copy bytes of a view (e.g. forget entries).
 * @v: the view; @off, @len: the range inside it; @dst: @len bytes.
 * Return: 0, or -ERANGE if the range is not inside the view.
 */
int vqf_dev_view_copy(const struct vqf_dev_view *v, u32 off, void *dst,
		      u32 len);

/**
 * vqf_dev_view_segs() - the view as a list of host segments (zero copy).
 * @v: the view; @out: room for @max entries.
 * Return: number of entries written (0 for an empty view), or -E2BIG if
 * @max is too small (nothing useful in @out then).
 */
int vqf_dev_view_segs(const struct vqf_dev_view *v, struct vqf_dev_seg *out,
		      u32 max);

/**
 * vqf_dev_flat_len() - bytes vqf_dev_flatten() writes for @req.
 */
u32 vqf_dev_flat_len(const struct vqf_dev_req *req);

/**
 * vqf_dev_flatten() - the request as one contiguous /dev/fuse message.
 * @req: a request vqf_dev_parse() accepted.
 * @buf, @size: caller buffer.
 *
 * Writes the validated header (len rewritten to the bytes written), the
 * fixed argument and names from @req's copies, then the payload and
 * extension bytes from the guest's segments; the result is what
 * fuse_session_process_buf() expects.
 *
 * The extension block is checked again on the copy (the guest may have
 * rewritten it since vqf_dev_parse() checked its bytes in place).
 *
 * Return: bytes written (== vqf_dev_flat_len()); -EINVAL if @req was
 * refused; -ENOSPC if @size is too small (nothing written); -EUCLEAN if
 * the copied extension block no longer passes (the buffer is then not a
 * request to hand on).
 */
int vqf_dev_flatten(const struct vqf_dev_req *req, void *buf, u32 size);

/**
 * vqf_dev_reply() - write fuse_out_header + payload into writable segments.
 * @ws, @nws: the chain's device-writable segments (any split).
 * @unique: the request's unique.
 * @error: 0 or a negative errno in [-4095, -1].
 * @pc, @npc: payload pieces, concatenated in order; must be empty when
 *	@error is set.
 * @stats: counters, may be NULL.
 *
 * Return: bytes written (out.len, the used-ring length), or
 * -ENOBUFS if the writable space is smaller than fuse_out_header (the
 *	device returns the chain with length 0); -EMSGSIZE if the payload does
 *	not fit (nothing written: reply with an error instead); -ERANGE if
 *	@error is outside [-4095, 0]; -EINVAL if an error carries payload.
 */
int vqf_dev_reply(const struct vqf_dev_wseg *ws, u32 nws, u64 unique,
		  int error, const struct vqf_dev_piece *pc, u32 npc,
		  struct vqf_dev_stats *stats);

/**
 * vqf_dev_notify() - write a notification into a notification-queue buffer.
 * @ws, @nws: the buffer's device-writable segments.
 * @code: FUSE_NOTIFY_* (the out header's error field; unique is 0).
 * @pc, @npc: the notification's payload pieces (fuse_notify_*_out ...).
 * @stats: counters, may be NULL.
 *
 * Return: bytes written, or -ERANGE for a code outside
 * [1, FUSE_NOTIFY_CODE_MAX), -ENOBUFS / -EMSGSIZE as vqf_dev_reply().
 */
int vqf_dev_notify(const struct vqf_dev_wseg *ws, u32 nws, int code,
		   const struct vqf_dev_piece *pc, u32 npc,
		   struct vqf_dev_stats *stats);

/**
 * vqf_dev_reply_req() - reply to a parsed request.
 * @req: the request.  If it was refused, the reply is req->error and
 *	@error/@pc are ignored; if it expects no reply (FORGET), nothing is
 *	written and 0 is returned (NOREPLY opcodes).
 * Other arguments and return as vqf_dev_reply().
 */
int vqf_dev_reply_req(const struct vqf_dev_req *req, int error,
		      const struct vqf_dev_piece *pc, u32 npc,
		      const struct vqf_dev_wseg *ws, u32 nws,
		      struct vqf_dev_stats *stats);

#endif /* VQF_DEV_H */
