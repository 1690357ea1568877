/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_backend.h - serve raw FUSE requests through any libfuse3 low-level
 * filesystem, without /dev/fuse.
 *
 * A virtio-fs device pops a request from a virtqueue and must hand it to a
 * filesystem.  libfuse3 (>= 3.14) lets a session run over a custom transport
 * (fuse_session_custom_io()): requests go in through
 * fuse_session_process_buf(), replies come back through a writev callback.
 * This file wraps that into one call per request, routes each reply back to
 * the request it answers (by fuse_out_header.unique, whichever thread the
 * filesystem replies from) and keeps libfuse from ever reading past a
 * request: libfuse trusts the kernel and reads names with strlen() and
 * payloads by the sizes written inside the request, so a guest request is
 * checked against the shape of its opcode before libfuse sees it.
 *
 * Threads: vqf_backend_process() may be called from any number of threads
 * at once, as fuse_session_loop_mt() calls fuse_session_process_buf().
 * INIT and DESTROY run alone (a writer lock), everything else in parallel.
 * See docs/backend.md.
 */
#ifndef VQF_BACKEND_H
#define VQF_BACKEND_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct vqf_backend;

/*
 * Delivers one reply.  iov[0] starts with a struct fuse_out_header whose
 * len is already set to the total of all iov_len; the payload follows in
 * iov[1..iovcnt-1].  The memory is libfuse's and valid only during the
 * call: copy it (into the chain's writable descriptors).  Called exactly
 * once per request for which vqf_backend_process() returned
 * VQF_BE_REPLY, possibly before vqf_backend_process() returns (same
 * thread) or later from another thread (a filesystem that answers
 * asynchronously).  Return 0, or a negative errno when the reply could not
 * be delivered (the filesystem then sees its fuse_reply_*() fail with
 * -ENOENT, as for an interrupted request on /dev/fuse).
 */
typedef int (*vqf_backend_reply_fn)(void *ctx, const struct iovec *iov,
				    int iovcnt, size_t len);

/*
 * Receives a notification the filesystem sends on its own (out header
 * unique 0, error = notify code), e.g. fuse_lowlevel_notify_inval_inode():
 * material for the virtio-fs notification queue.  Same iovec contract.
 */
typedef int (*vqf_backend_notify_fn)(void *ctx, const struct iovec *iov,
				     int iovcnt, size_t len);

struct vqf_backend_config {
	/*
	 * Extra libfuse session options, e.g. {"-o", "max_write=65536"} or
	 * {"-d"} for libfuse's debug trace.  argv[0] is supplied.
	 */
	int argc;
	const char *const *argv;
	vqf_backend_notify_fn notify;	/* NULL: notifications dropped */
	void *notify_ctx;
	/*
	 * The filesystem's creator declares it safe to face a guest that
	 * does not follow the rules (vhost-user serves guests): node ids
	 * and handles it never handed out, stale ones, any name the parser
	 * lets through, OPEN of special files, concurrent FORGETs - none of
	 * them crashes it, blocks it, or reaches outside its directory,
	 * even without the device's guard (sim/device/vqf_guard.h) in front.
	 * Default false: not audited.  Each backend header says (e.g.
	 * VQF_PTLL_HOSTILE_SAFE, VQF_NULLFS_HOSTILE_SAFE,
	 * VQF_PT_HOSTILE_SAFE); docs/guard.md has the audit.
	 */
	bool hostile_safe;
};

/* Counters; every refusal is counted once, in exactly one field. */
struct vqf_backend_stats {
	uint64_t requests;	/* handed to libfuse */
	uint64_t replies;	/* delivered to a reply_fn */
	uint64_t async_replies;	/* ...of which after process() returned */
	uint64_t no_reply;	/* FORGET, BATCH_FORGET, INTERRUPT */
	/* INTERRUPT for a unique not in flight: dropped, not handed on. */
	uint64_t interrupt_stale;
	uint64_t notifies;	/* unique-0 messages from the filesystem */
	uint64_t notify_dropped; /* ...with no notify callback configured */
	uint64_t reply_failed;	/* reply_fn returned an error */
	uint64_t orphan_replies; /* reply for no request in flight: dropped */
	/* Refused before libfuse, answered by the backend itself: */
	uint64_t short_header;	/* -EINVAL: len < fuse_in_header: no reply */
	uint64_t len_mismatch;	/* -EMSGSIZE: in.len != len */
	uint64_t bad_unique;	/* -EPROTO: unique 0 (reserved for notify) */
	uint64_t dup_unique;	/* -EBUSY: unique already in flight */
	uint64_t short_arg;	/* -EBADMSG: fixed argument truncated */
	uint64_t bad_string;	/* -ENAMETOOLONG: name not NUL-terminated */
	uint64_t bad_payload;	/* -EOVERFLOW: size field past the end */
	uint64_t unsupported;	/* -ENOSYS: opcode the backend cannot check */
	uint64_t old_protocol;	/* -EPROTO: INIT below 7.12 */
	uint64_t after_destroy;	/* -ENOTCONN: request after DESTROY */
	uint64_t sessions;	/* INIT after DESTROY: a fresh session */
	uint64_t resets;	/* vqf_backend_reset() calls */
	uint64_t nomem;		/* -ENOMEM */
	/* Answered by libfuse with an error, counted here: */
	uint64_t before_init;	/* EIO: first request was not INIT */
	uint64_t reinit;	/* EIO: second INIT */
};

/* vqf_backend_process() results (>= 0); < 0 is a negative errno. */
enum {
	/* reply_fn has been, or will be, called exactly once. */
	VQF_BE_REPLY = 0,
	/* No reply is due (FORGET, BATCH_FORGET, INTERRUPT): reply_fn is
	 * never called; complete the chain with 0 bytes written. */
	VQF_BE_NO_REPLY = 1,
};

/*
 * Creates a session for the filesystem @op (@op_size = sizeof(*op) as the
 * filesystem was compiled), @userdata being what the filesystem expects
 * from fuse_req_userdata().  @cfg may be NULL.  Nothing is mounted; no
 * /dev/fuse is opened.  The filesystem's init() runs when the guest's INIT
 * arrives, its destroy() at DESTROY or in vqf_backend_free().
 * Returns NULL with errno set: EINVAL (libfuse refused the ops or the
 * options), ENOMEM, or what eventfd() failed with.
 */
struct vqf_backend *vqf_backend_new(const struct fuse_lowlevel_ops *op,
				    size_t op_size, void *userdata,
				    const struct vqf_backend_config *cfg);

/*
 * What a device reset does to the FUSE session: the filesystem's destroy()
 * if INIT happened and DESTROY did not, and a fresh session whose first
 * request must be INIT again (the filesystem itself stays).  No
 * vqf_backend_process() call may be running and no reply may be owed.
 * Returns 0 or -ENOMEM (the old session stays).
 */
int vqf_backend_reset(struct vqf_backend *be);

/*
 * Destroys the session (calling the filesystem's destroy() if INIT
 * happened and DESTROY did not).  No vqf_backend_process() call may be
 * running; a reply the filesystem still owes is dropped.  NULL is a no-op.
 */
void vqf_backend_free(struct vqf_backend *be);

/*
 * Serves one FUSE request: @req is the whole request as the guest wrote it
 * (struct fuse_in_header, then the opcode's arguments), @len its length.
 * The memory is only read, and only during the call.  It must be private
 * to the host, not the guest's shared memory: the shape is checked first
 * and libfuse reads it afterwards, so bytes the guest can still change
 * (a name's NUL) would be a time-of-check/time-of-use hole.  @reply and @ctx
 * receive the reply; @ctx must stay valid until @reply was called.
 *
 * Returns VQF_BE_REPLY or VQF_BE_NO_REPLY (see above).  A request that is
 * malformed but has a readable header is answered with an error reply by
 * the backend itself (VQF_BE_REPLY; the errno is in the reply header and
 * the matching counter in struct vqf_backend_stats).  Returns -EINVAL,
 * without calling @reply, only when @len is below a fuse_in_header: there
 * is no unique to answer.
 */
int vqf_backend_process(struct vqf_backend *be, const void *req, size_t len,
			vqf_backend_reply_fn reply, void *ctx);

/*
 * vqf_backend_process() for a request in pieces, e.g. the device's copies
 * of header, argument and names followed by the WRITE payload: libfuse
 * wants one buffer, so the pieces are gathered into a private one (one
 * copy; none when @iovcnt is 1).  Same results, plus -ENOMEM (counted in
 * nomem, no reply) when the gather buffer cannot be allocated and
 * -EINVAL for @iovcnt < 1.
 */
int vqf_backend_process_iov(struct vqf_backend *be, const struct iovec *iov,
			    int iovcnt, vqf_backend_reply_fn reply,
			    void *ctx);

/*
 * The INIT reply the filesystem gave (max_write, flags, max_pages...),
 * zero-padded to the full struct.  Returns 0, or -ENOTCONN before a
 * successful INIT.
 */
int vqf_backend_init_out(struct vqf_backend *be, struct fuse_init_out *out);

/* Requests handed to the filesystem whose reply is still owed. */
size_t vqf_backend_inflight(struct vqf_backend *be);

/*
 * Copies up to @len bytes of a reply's (or any) iovec, from byte @skip on,
 * to @dst; returns how many there were.  For whoever takes a reply apart.
 */
size_t vqf_iov_gather(void *dst, size_t len, const struct iovec *iov,
		      int iovcnt, size_t skip);
/*
 * The other way: @len bytes of @src over the iovec from byte @skip on;
 * returns how many fitted.  For whoever rewrites a reply in place.
 */
size_t vqf_iov_scatter(const void *src, size_t len, const struct iovec *iov,
		       int iovcnt, size_t skip);

/* Copies a consistent snapshot of the counters. */
void vqf_backend_get_stats(struct vqf_backend *be,
			   struct vqf_backend_stats *out);

/* The libfuse session, e.g. for fuse_lowlevel_notify_*(). */
struct fuse_session *vqf_backend_session(struct vqf_backend *be);

/*
 * What vqf_backend_config.hostile_safe declared at vqf_backend_new()
 * (false for NULL or without a config).
 */
bool vqf_backend_hostile_safe(const struct vqf_backend *be);

#endif /* VQF_BACKEND_H */
