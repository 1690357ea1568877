/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_gdrv.h - the simulated guest's virtio-fs transport driver.
 *
 * What fs/fuse/virtio_fs.c is to a Linux guest: it negotiates features
 * with the device, sets up the hiprio queue, the notification queue (when
 * negotiated) and the request queues in guest RAM, and carries FUSE
 * requests built with lib/'s vqf_req over them:
 *
 *   - unique ids (even; | 1 is an INTERRUPT's, as FUSE_INT_REQ_BIT) and
 *     an in-flight table: every request completes exactly once;
 *   - request-queue selection across several queues (per submitting
 *     thread, round-robin on first use, as Linux 6.11 maps CPUs to
 *     queues; or strictly round-robin);
 *   - a pending list per queue when its ring is full, retried from the
 *     completion path (upstream's dispatch work);
 *   - FORGET / BATCH_FORGET on hiprio through lib/'s vqf_forget queue,
 *     INTERRUPT on hiprio for a request the caller gives up on;
 *   - completion threads (one per queue, woken by the call eventfd) that
 *     validate each reply with vqf_req_complete() before anything is
 *     copied out: the device is not trusted;
 *   - shutdown that fails every request still in flight or pending with
 *     -ENOTCONN once the device has been reset: none lost, none twice;
 *   - a used ring the device breaks resets the device as shutdown does,
 *     from a thread of its own, and fails what it held with -EIO.
 *
 * The caller's struct vqf_req stays in private memory; what the device
 * must see (headers, argbuf) is copied into guest RAM at submission, and
 * the reply header is copied back once before validation.  Data pages
 * (struct vqf_page_desc.page) must be guest RAM from vqf_gdrv_ram().
 */
#ifndef VQF_GDRV_H
#define VQF_GDRV_H

#include "vqf_fsdev.h"
#include "vqf_gram.h"
#include "vqf_req.h"

#include <stdbool.h>

enum vqf_gdrv_select {
	VQF_GDRV_SEL_THREAD = 0,	/* per submitting thread (CPU-like) */
	VQF_GDRV_SEL_RR,		/* every request to the next queue */
};

/* Per-request trace points (issue: observability); see vqf_gdrv_cfg. */
enum vqf_gdrv_ev {
	VQF_EV_QUEUED,		/* submitted (maybe onto the pending list) */
	VQF_EV_ADDED,		/* published on the available ring */
	VQF_EV_KICKED,		/* the queue was kicked after it */
	VQF_EV_INTERRUPTED,	/* INTERRUPT sent for it */
	VQF_EV_COMPLETED,	/* reply validated, waiter woken */
};

struct vqf_gdrv_cfg {
	unsigned int request_queues;	/* to use, <= device's (0: all) */
	/* Power of two >= 8 (0: device max, at most 1024); smaller is
	 * -EINVAL, a device offering less than 8 is -ENODEV.
	 */
	unsigned int queue_size;
	bool no_indirect;	/* do not negotiate INDIRECT_DESC */
	bool no_event_idx;	/* do not negotiate EVENT_IDX */
	bool notification;	/* negotiate NOTIFICATION if offered */
	enum vqf_gdrv_select select;
	u32 max_write;		/* offered in INIT (0: 1 MiB) */
	/* Reap completions in the calling thread right after its kick
	 * before sleeping (set when the device serves kicks inline, or
	 * direct: vqf_fsdev_cfg.direct_kick).
	 */
	bool poll;
	/*
	 * For a threaded device: after its kick, the calling thread spins
	 * on its queue's used ring for up to this many ns, with the queue's
	 * interrupts suppressed, and completes what turns up (its own reply
	 * and any other) before it sleeps (blk-mq polling, io_uring
	 * IOPOLL, bounded).  The window adapts per queue between 0 and this
	 * (vqf_vring_poll.h).  0: sleep at once.
	 */
	u64 poll_ns;
	bool poll_fixed;	/* always poll for poll_ns, no adapting */
	/* Called for each notification from the device (unique 0 replies):
	 * @code is fuse_out_header.error, @data/@len the payload.
	 */
	void (*notify)(void *ctx, int code, const void *data, u32 len);
	void *notify_ctx;
	/* Trace hook, may be NULL; called from the submitting or
	 * completion thread.
	 */
	void (*trace)(void *ctx, enum vqf_gdrv_ev ev, u64 unique,
		      u32 opcode, unsigned int queue);
	void *trace_ctx;
	/* At shutdown, how long calls in flight may take before they are
	 * sent INTERRUPTs, repeated every quarter of it (0: 200 ms).
	 */
	unsigned int shutdown_grace_ms;
	/* Ask at INIT for fuse_entryver_out in entry replies
	 * (VQF_FUSE_INIT_SHARED_VERSION), for a client with cache=shared.
	 */
	bool shared_version;
};

#define VQF_GDRV_OPCODES	64	/* by_opcode[] size; larger ones in [0] */

struct vqf_gdrv_stats {
	u64 submitted;		/* requests accepted by vqf_gdrv_submit() */
	u64 completed;		/* ...completed with a validated reply */
	u64 failed;		/* ...failed by the driver (shutdown, broken) */
	u64 pending_queued;	/* times a request waited for ring space */
	u64 pending_max;	/* longest pending list seen */
	u64 forgets;		/* FORGET requests sent */
	u64 batch_forgets;	/* BATCH_FORGET requests sent */
	u64 forget_entries;	/* nodeids forgotten */
	u64 interrupts_sent;	/* INTERRUPT requests sent */
	/* Shutdowns that reset without DESTROY: calls still in flight. */
	u64 destroy_skipped;
	u64 kicks;		/* kick eventfd writes */
	u64 irqs;		/* call eventfd wake-ups handled */
	u64 poll_hits;		/* calls whose reply came while polling */
	u64 poll_misses;	/* calls that polled, then slept */
	u64 poll_spin_ns;	/* time callers spent polling (CPU burnt) */
	u64 notifications;	/* notifications received */
	u64 bad_replies;	/* replies refused by vqf_req_complete() */
	u64 ring_errors;	/* used rings the device broke (once each) */
	u64 broken_resets;	/* resets a broken ring started (once) */
	u64 bytes_copied;	/* argbuf bytes (the bounce buffer of in and
				 * out args; data pages are not copied) */
	u64 by_opcode[VQF_GDRV_OPCODES];	/* requests per opcode */
	struct vqf_req_stats req;	/* vqf_req_complete() outcomes */
};

struct vqf_gdrv;

/* One request as the caller hands it over; private memory. */
struct vqf_gdrv_call {
	struct vqf_req req;	/* filled with vqf_req_init*() and args */
	/*
	 * 0: the driver picks (hiprio for FORGET, BATCH_FORGET, INTERRUPT, a
	 * request queue otherwise); n: virtqueue n - 1, whatever the opcode
	 * (tests of the device's queue checks).
	 */
	unsigned int queue;
	/* Driver-owned from here on. */
	int result;		/* 0, the FUSE error, or a transport errno */
	void *priv;
};

/*
 * Drives @dev from reset to DRIVER_OK over @ram (which must be the memory
 * @dev was created with) and sends FUSE_INIT.  Returns 0; -ENODEV when
 * the device refuses our features; -ENOMEM; the INIT reply's error;
 * another negative errno from the device.
 */
int vqf_gdrv_new(const struct vqf_gdrv_cfg *cfg, struct vqf_fsdev *dev,
		 struct vqf_gram *ram, struct vqf_gdrv **out);

/*
 * The device as a virtio transport presents it to the driver (virtio-pci's
 * common config, notify and device config), with the meaning of the
 * vqf_fsdev_* functions of the same names.  vqf_gdrv_new() uses the
 * in-process vqf_fsdev's; vqf_vfront (a vhost-user back-end in another
 * process) has its own.  @set_status(0) must leave the device pushing
 * nothing more, as a reset does.
 */
struct vqf_gdrv_dev_ops {
	u64 (*features)(void *dev);
	int (*set_features)(void *dev, u64 features);
	void (*read_config)(void *dev, struct vqf_virtio_fs_config *cfg);
	unsigned int (*queue_max)(void *dev, unsigned int idx);
	int (*set_queue)(void *dev, unsigned int idx, unsigned int num,
			 const struct vqf_vring_addr *addr, int kick_fd,
			 int call_fd);
	int (*set_status)(void *dev, u8 status);
	u8 (*get_status)(void *dev);
	int (*kick)(void *dev, unsigned int idx);
	/*
	 * Optional: a device that can vanish (another process) calls
	 * @fn(@ctx, errno) once when it does, or at once if it has; NULL
	 * @fn unregisters and waits for a call in progress.  The driver
	 * registers vqf_gdrv_lost() at its start.
	 */
	void (*set_lost)(void *dev, void (*fn)(void *ctx, int err),
			 void *ctx);
};

/* vqf_gdrv_new() over any device: @ops on @dev. */
int vqf_gdrv_new_ops(const struct vqf_gdrv_cfg *cfg,
		     const struct vqf_gdrv_dev_ops *ops, void *dev,
		     struct vqf_gram *ram, struct vqf_gdrv **out);

/*
 * The device is gone (a back-end process that hung up): as for a used
 * ring it broke, the device is reset from a thread of its own and every
 * call in flight or pending fails, with @err (a negative errno; the
 * first report wins) instead of -EIO.  Safe from any thread, any number
 * of times.
 */
void vqf_gdrv_lost(struct vqf_gdrv *g, int err);

/*
 * Refuses new calls (-ENOTCONN), lets the calls in flight finish (after
 * a grace period they are sent INTERRUPT, after another they are left),
 * sends DESTROY if nothing is left in flight and the queues work, resets
 * the device, fails what is still in flight with -ENOTCONN.  Safe while
 * other threads are inside vqf_gdrv_call(), and when called twice.
 * vqf_gdrv_free() shuts down, then waits for callers to leave.
 */
void vqf_gdrv_shutdown(struct vqf_gdrv *g);
void vqf_gdrv_free(struct vqf_gdrv *g);

/*
 * Sends @c->req (unique and in_h.len are set here) and waits for its
 * reply.  Returns 0 for success, the FUSE error (negative) the server
 * replied with, vqf_req_complete()'s own negative errno for a reply it
 * refused (counted in bad_replies; see lib/vqf_req.h), -ENOTCONN after
 * shutdown, -ENOMEM when guest RAM is exhausted, -EINVAL for a request
 * vqf_req_check() refuses.  @timeout_ms >= 0: after that long the used
 * ring is looked at (a lost interrupt), then an INTERRUPT is sent, again
 * every @timeout_ms, and the call keeps waiting for the
 * request to complete (the device owns its buffers until then), as a
 * signalled task does in Linux; -1 waits without interrupting.
 */
int vqf_gdrv_call(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		  int timeout_ms);

/*
 * Asynchronous form: submits and returns at once; @done(ctx, c) runs
 * exactly once, from a completion thread (or from vqf_gdrv_shutdown()),
 * with c->result set.  Returns 0, or the error vqf_gdrv_call() would
 * return before sending (then @done is not called).
 */
int vqf_gdrv_submit(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		    void (*done)(void *ctx, struct vqf_gdrv_call *c),
		    void *ctx);

/* Sends an INTERRUPT for a submitted, not yet completed request.
 * Returns 0, -ENOENT when it has completed already.
 */
int vqf_gdrv_interrupt(struct vqf_gdrv *g, struct vqf_gdrv_call *c);

/*
 * Queues a forget of @nlookup lookups of @nodeid and sends what is queued
 * on hiprio (FORGET for one entry, BATCH_FORGET for more) as the ring
 * allows; the rest goes with the next hiprio completion.  Never fails
 * for valid arguments (the forget queue grows); -EINVAL for zeros,
 * -ENOTCONN after shutdown.
 */
int vqf_gdrv_forget(struct vqf_gdrv *g, u64 nodeid, u64 nlookup);

/* Sends queued forgets now and waits until none is queued or in flight
 * (tests; shutdown).  Returns 0 or -ENOTCONN.
 */
int vqf_gdrv_forget_flush(struct vqf_gdrv *g);

/* The INIT reply (max_write, flags, time_gran...). */
const struct fuse_init_out *vqf_gdrv_init_out(const struct vqf_gdrv *g);

/* Guest RAM, for data pages. */
struct vqf_gram *vqf_gdrv_ram(const struct vqf_gdrv *g);

/* Request queues in use. */
unsigned int vqf_gdrv_num_request_queues(const struct vqf_gdrv *g);

/* Requests submitted and not yet completed or failed. */
u64 vqf_gdrv_inflight(struct vqf_gdrv *g);

/* A consistent copy of the counters; ring counters (kicks...) summed. */
void vqf_gdrv_get_stats(struct vqf_gdrv *g, struct vqf_gdrv_stats *out);

/* Whether the call may run (not shut down, no queue broken). */
bool vqf_gdrv_alive(struct vqf_gdrv *g);

#endif /* VQF_GDRV_H */
