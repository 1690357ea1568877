/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_fsdev.h - a virtio-fs device (virtio 1.2, section 5.11) in userspace.
 *
 * The device owns no memory of the guest's: it reaches rings and buffers
 * only through a vqf_gmem map, as a vhost-user back-end does.  The driver
 * talks to it through a small transport surface modelled on virtio-pci's
 * common configuration: read the offered features and the config space,
 * write the accepted features and the status byte, describe each queue
 * (size, ring addresses, a kick eventfd the driver writes and a call
 * eventfd the device writes).
 *
 * Queues, in order (5.11.2):
 *   0                hiprio: FORGET, BATCH_FORGET, INTERRUPT
 *   1                notification queue, only when VIRTIO_FS_F_NOTIFICATION
 *                    was negotiated
 *   1 or 2 ...       num_request_queues request queues
 *
 * Service: each queue has a thread that sleeps on its kick eventfd, pops
 * chains and parses each request with lib/'s vqf_dev_parse().  Requests
 * from request queues go to a pool of worker threads (cfg.threads; 0 serves
 * them in the queue's own thread), which hand them to a vqf_backend
 * (libfuse3 through fuse_session_custom_io) and write the reply into the
 * chain's writable segments with lib/'s reply builder.  The hiprio queue
 * has its own thread and never waits for request-queue work (5.11.6.1).
 *
 * Every request passes the device's guard (vqf_guard.h) before a backend
 * sees it: names, node ids and file handles this guest does not hold,
 * OPEN of special files and, on a read-only device, every change are
 * refused there.
 *
 * Bad input never crashes the device and never stops other requests: a
 * refused request gets an error reply, or, when it has no room for one,
 * its chain comes back with length 0; a driver that breaks the ring
 * protocol marks that queue broken and sets DEVICE_NEEDS_RESET.  Each case
 * is counted in struct vqf_fsdev_stats.
 */
#ifndef VQF_FSDEV_H
#define VQF_FSDEV_H

#include "vqf_backend.h"
#include "vqf_dax_dev.h"
#include "vqf_dev.h"
#include "vqf_fault.h"
#include "vqf_fuse_ext.h"
#include "vqf_guard.h"
#include "vqf_vring_dev.h"

#include <stdbool.h>
#include <stdint.h>

#ifndef VIRTIO_FS_F_NOTIFICATION
#define VIRTIO_FS_F_NOTIFICATION	0	/* virtio 1.2, 5.11.3 */
#endif
#define VQF_FS_TAG_LEN		36
/* Shared memory region ids (virtio 1.2, 5.11.5): the DAX cache window. */
#define VQF_VIRTIO_FS_SHMCAP_ID_CACHE	0

/* Device status bits (virtio 1.2, 2.1). */
#define VQF_S_ACKNOWLEDGE	1
#define VQF_S_DRIVER		2
#define VQF_S_DRIVER_OK		4
#define VQF_S_FEATURES_OK	8
#define VQF_S_NEEDS_RESET	64
#define VQF_S_FAILED		128

/* The device configuration layout (5.11.4), little-endian on the wire. */
struct vqf_virtio_fs_config {
	u8 tag[VQF_FS_TAG_LEN];		/* UTF-8, NUL-padded, not terminated
					 * when all 36 bytes are used */
	__le32 num_request_queues;	/* >= 1 */
	__le32 notify_buf_size;		/* with VIRTIO_FS_F_NOTIFICATION */
};

/*
 * How the device reaches the host file behind a guest's file handle, for
 * FUSE_SETUPMAPPING (libfuse has no op for it, so the device mmaps the
 * file itself).  @file_fd returns a new descriptor of the regular file
 * open as @fh on @nodeid, sharing that open's access mode (the device
 * closes it), or a negative errno (-EBADF for a handle that is forged,
 * stale or someone else's).  Called from the serving threads.
 *
 * @node_fd (optional) serves a SETUPMAPPING with fh VQF_FSDEV_FH_NONE,
 * which Linux's in-tree virtiofs always sends (fs/fuse/dax.c: the kernel
 * names the inode, not an open): a new descriptor of regular file
 * @nodeid opened read-write when @write, else read-only, or a negative
 * errno (-ENODEV: not a regular file).  Without it such a request gets
 * what @file_fd says about the handle.
 *
 * @map and @unmap (both or neither) put the window somewhere else than
 * the device's own address space, e.g. a vhost-user front-end's shared
 * memory region: the device then reserves nothing and calls @map where
 * it would mmap @fd's bytes [@foffset, +@len) at window offset @moffset
 * (@writable: PROT_WRITE too; the device closes @fd afterwards) and
 * @unmap where it would make [@moffset, +@len) inaccessible again.  Both
 * return 0 or a negative errno.  @unmap with @wait false may return
 * before the unmapping is done (resets, which cannot fail); a later @map
 * must still take effect after it.  Both run under the device's DAX lock.
 */
#define VQF_FSDEV_FH_NONE	(~0ULL)

struct vqf_fsdev_dax_ops {
	int (*file_fd)(void *ctx, u64 nodeid, u64 fh);
	int (*node_fd)(void *ctx, u64 nodeid, bool write);
	int (*map)(void *ctx, int fd, u64 foffset, u64 moffset, u64 len,
		   bool writable);
	int (*unmap)(void *ctx, u64 moffset, u64 len, bool wait);
	/*
	 * @cancel (optional, with @map): with @on, makes every @map or
	 * @unmap that waits for the far side return at once (an error)
	 * and refuses waiting ones until a call with !@on.  The device
	 * raises it around the window's teardown at a guest's DESTROY,
	 * which must not wait behind a map the front-end never answers
	 * (the map holds the DAX lock the teardown takes).  Never blocks.
	 */
	void (*cancel)(void *ctx, bool on);
};

enum vqf_fsdev_ev {
	VQF_FSDEV_EV_POPPED,
	VQF_FSDEV_EV_PUSHED,
};

struct vqf_fsdev_cfg {
	const char *tag;		/* 1..36 bytes */
	unsigned int num_request_queues;	/* >= 1 (0: 1) */
	unsigned int queue_size_max;	/* largest queue size (0: 1024) */
	/* Worker threads for the request queues (0: serve in the queue's
	 * thread).  Shared by all request queues.
	 */
	unsigned int threads;
	/* Offer VIRTIO_FS_F_NOTIFICATION with buffers of this many bytes
	 * (0: not offered).  At least fuse_out_header + the largest notify.
	 */
	u32 notify_buf_size;
	/* Device-side limit on WRITE payloads before INIT (0: 1 MiB). */
	u32 max_write;
	/*
	 * How a kick reaches the device.  false: the driver's kick writes the
	 * queue's eventfd and the queue's thread wakes up (vhost-user,
	 * virtiofsd).  true: vqf_fsdev_kick() runs the device in the kicking
	 * thread, as QEMU emulates a device in the vCPU thread when
	 * ioeventfd is off - no thread hand-off; request-queue chains still
	 * go to the workers when there are any.  The notification queue
	 * always has its own thread.
	 */
	bool inline_kick;
	/*
	 * Threaded queues (not inline_kick), the kick in the kicking thread
	 * first: vqf_fsdev_kick() pops one chain (the oldest, normally the
	 * kicker's own) and serves it before returning, with no hand-off;
	 * chains still waiting after that pop, and kicks that come while
	 * another thread pops, go to the queue's thread, which pops one at a
	 * time too.  Nothing is served under the pop lock, so a request that
	 * blocks in the backend (a lock wait) holds only its own thread
	 * (blk-mq's direct issue: in the submitter's context when it can,
	 * from the queue's worker otherwise).  Kicks stay enabled.  Not with
	 * poll_ns or a fault plan (-EINVAL); ignored with inline_kick.
	 */
	bool direct_kick;
	/*
	 * Threaded queues (not inline_kick): after serving, a request
	 * queue's thread keeps checking the available ring for up to this
	 * many ns, with the driver's kicks suppressed, before it re-enables
	 * them and sleeps on the kick eventfd (QEMU's iothread poll-max-ns,
	 * a vhost-user back-end polling its rings).  The window adapts per
	 * queue between 0 and this (vqf_vring_poll.h).  0: sleep at once.
	 */
	u64 poll_ns;
	bool poll_fixed;	/* always poll for poll_ns, no adapting */
	/* Device features never offered (mask of 1ULL << bit), for tests. */
	u64 features_withheld;
	/* Faults to inject (copied; NULL: none).  Needs inline_kick; see
	 * vqf_fault.h.
	 */
	const struct vqf_fault_plan *faults;
	/* Trace hook (NULL: none): a chain parsed off a ring (POPPED; the
	 * unique is the request's, 0 if its header was short) and about to
	 * be pushed used (PUSHED).  Called from the serving threads.
	 */
	void (*trace)(void *ctx, enum vqf_fsdev_ev ev, u64 unique,
		      u32 opcode, unsigned int queue);
	void *trace_ctx;
	/*
	 * DAX cache window bytes (shared memory region
	 * VQF_VIRTIO_FS_SHMCAP_ID_CACHE): a power of two, at least the host
	 * page size (0: no window; SETUPMAPPING and REMOVEMAPPING go to the
	 * backend, which answers ENOSYS).  With a window the device serves
	 * both itself; without @dax_ops it answers them ENOSYS, as virtiofsd
	 * without DAX support does.  With dax_ops->map the window is not in
	 * this process (vqf_fsdev_shm() does not know it).
	 */
	u64 dax_window;
	const struct vqf_fsdev_dax_ops *dax_ops;	/* copied pointer */
	void *dax_ctx;
	/*
	 * @dax_writable (optional, with a window): the window gained
	 * (@delta 1) or lost (-1) a writable mapping of @nodeid - a setup,
	 * a removal, a replacement, a reset.  Called with the device's DAX
	 * lock held: it must not call back into the device.  The daemon's
	 * hub keeps such files' version slots moving (vqf_hub_dax_writable()).
	 */
	void (*dax_writable)(void *ctx, u64 nodeid, int delta);
	void *dax_writable_ctx;
	/*
	 * @dax_inode_min (with a window; 0: off): for a guest that mounts
	 * dax=inode (FUSE_HAS_INODE_DAX at INIT), every regular file of at
	 * least this many bytes is marked FUSE_ATTR_DAX in the attributes
	 * the replies hand out, so its data goes through the window; smaller
	 * files, and every file of a guest that did not ask, through
	 * READ/WRITE.  The kernel's own virtiofs honours it (5.17+).
	 */
	u64 dax_inode_min;
	struct vqf_backend *be;		/* serves the requests */
	/*
	 * Serves the requests instead of @be when set (one of the two is
	 * required), e.g. a port of a vqf_hub that several guests' devices
	 * share: vqf_backend_process()'s contract, except that @req is the
	 * device's private copy and may be rewritten by the callee.
	 */
	int (*serve)(void *ctx, void *req, size_t len,
		     vqf_backend_reply_fn reply, void *rctx);
	void *serve_ctx;
	/*
	 * Shared memory region VQF_VIRTIO_FS_SHMCAP_ID_VERSION: the shared
	 * version table as guests map it (read-only; NULL: no region).
	 */
	const void *ver_table;
	u64 ver_table_size;
	/*
	 * Read-only export: every change gets EROFS from the guard (see
	 * vqf_guard.h), OPEN for writing and writable DAX maps included.
	 */
	bool readonly;
};

struct vqf_fsdev_stats {
	u64 requests;		/* chains popped from request queues */
	u64 hiprio;		/* chains popped from the hiprio queue */
	u64 replies;		/* chains pushed with a reply */
	u64 no_reply;		/* chains pushed with length 0 by design */
	u64 refused;		/* requests refused by vqf_dev_parse() */
	u64 refused_no_room;	/* ...with no room for the error reply */
	u64 chain_errors;	/* -ENODATA/-ENOBUFS chains returned empty */
	u64 reply_too_big;	/* backend reply did not fit: EIO sent */
	u64 backend_errors;	/* backend refused before libfuse */
	u64 notifies;		/* notifications delivered */
	u64 notifies_dropped;	/* no notification buffer, queue full */
	u64 queue_broken;	/* queues that broke (needs reset) */
	u64 kicks;		/* kick eventfd wake-ups */
	u64 poll_hits;		/* polls that found chains without a kick */
	u64 poll_misses;	/* polls that ended in a sleep */
	u64 poll_spin_ns;	/* time spent polling (CPU burnt) */
	u64 interrupts;		/* call eventfd signals */
	u64 bytes_in;		/* request bytes copied out of the guest */
	u64 bytes_out;		/* reply bytes copied into the guest */
	u64 workers_busy_max;	/* most requests being served at once */
	u64 faults[VQF_FAULT_NR];	/* faults injected, by kind */
	u64 fault_polls;	/* poll-timer runs that found deferred work */
	u64 fault_held_dropped;	/* held completions dropped by a reset */
	struct vqf_dev_stats dev;	/* parser counters (reject[] etc.) */
	/* DAX window: each SETUPMAPPING/REMOVEMAPPING the device served
	 * lands in exactly one of the first six.
	 */
	u64 dax_setups;		/* file range mapped into the window */
	u64 dax_removes;	/* REMOVEMAPPING batches carried out */
	u64 dax_refused;	/* lib's checks said no (reason in dax.*) */
	u64 dax_bad_fh;		/* the fh resolved to no mappable file */
	u64 dax_mmap_errors;	/* the host mmap failed */
	u64 dax_enosys;		/* window but no dax_ops */
	u64 dax_resets;		/* window cleared: reset, DESTROY, free */
	u64 dax_by_nodeid;	/* setups with fh ~0 resolved by nodeid */
	/* vqf_fsdev_dax_resized(): file ranges mapped again at a size
	 * change, and those whose unmap or map failed
	 */
	u64 dax_eof_remaps;
	u64 dax_eof_errors;
	u64 dax_inode_marked;	/* attributes given FUSE_ATTR_DAX */
	struct vqf_dax_dev_stats dax;	/* lib's per-reason counters */
	/* The guard: what it refused, rewrote and holds (vqf_guard.h).
	 * A refused request is also in replies or no_reply.
	 */
	struct vqf_guard_stats guard;
};

struct vqf_fsdev;

/*
 * Creates the device in the reset state.  @mem maps the guest's memory and
 * must outlive the device.  Returns 0, -EINVAL (no backend, tag empty or
 * longer than 36 bytes, a queue size that is not a power of two, a fault
 * plan without inline_kick or one vqf_fault_plan_check() refuses),
 * -ENOMEM.
 */
int vqf_fsdev_new(const struct vqf_fsdev_cfg *cfg, const struct vqf_gmem *mem,
		  struct vqf_fsdev **out);

/* Resets the device (stopping its threads) and frees it. */
void vqf_fsdev_free(struct vqf_fsdev *d);

/* Features the device offers: VERSION_1, EVENT_IDX, INDIRECT_DESC, and
 * NOTIFICATION when configured.
 */
u64 vqf_fsdev_features(const struct vqf_fsdev *d);

/* The config space as the driver reads it. */
void vqf_fsdev_read_config(const struct vqf_fsdev *d,
			   struct vqf_virtio_fs_config *cfg);

/*
 * Records the features the driver accepts.  Only while the status has
 * DRIVER and not yet FEATURES_OK.  Returns 0; -EPERM in another state;
 * -EINVAL for features not offered or without VIRTIO_F_VERSION_1 (the
 * device does not speak legacy virtio).
 */
int vqf_fsdev_set_features(struct vqf_fsdev *d, u64 features);

/* Queues that exist with the features set so far: 1 + notification +
 * request queues.
 */
unsigned int vqf_fsdev_num_queues(const struct vqf_fsdev *d);

/* Index of the first request queue (1, or 2 with notifications). */
unsigned int vqf_fsdev_first_request_queue(const struct vqf_fsdev *d);

/* The largest size queue @idx accepts, 0 if @idx does not exist. */
unsigned int vqf_fsdev_queue_max(const struct vqf_fsdev *d, unsigned int idx);

/*
 * Describes queue @idx (after FEATURES_OK, before DRIVER_OK).  @num is a
 * power of two up to vqf_fsdev_queue_max(); the rings must be inside @mem;
 * @kick_fd is an eventfd the driver writes, @call_fd one the device
 * writes.  The device does not close them.  A queue left undescribed
 * stays disabled.  Returns 0; -EPERM in another state; -ENOENT for an
 * index past the queues; -EINVAL for a bad size, fd or ring placement;
 * -EFAULT for rings outside guest memory.
 */
int vqf_fsdev_set_queue(struct vqf_fsdev *d, unsigned int idx,
			unsigned int num, const struct vqf_vring_addr *addr,
			int kick_fd, int call_fd);

/*
 * Where queue @idx (already described with vqf_fsdev_set_queue(), same
 * state) starts: the first avail entry to pop and the next used entry to
 * write, as vhost-user's SET_VRING_BASE (vqf_fsdev_set_queue() sets both
 * to 0).  Returns 0; -EPERM in another state; -ENOENT for a queue not
 * described.
 */
int vqf_fsdev_set_queue_base(struct vqf_fsdev *d, unsigned int idx,
			     u16 last_avail, u16 used);

/*
 * Starts queue @idx on a running device (DRIVER_OK), as vhost-user starts
 * rings one by one: the arguments of vqf_fsdev_set_queue() and
 * vqf_fsdev_set_queue_base() in one call.  The other queues carry on.
 * Returns 0; -EPERM when the device is not running or the queue already
 * is; -ENOENT, -EINVAL, -EFAULT as vqf_fsdev_set_queue(); -EIO when its
 * thread could not be started.
 */
int vqf_fsdev_add_queue(struct vqf_fsdev *d, unsigned int idx,
			unsigned int num, const struct vqf_vring_addr *addr,
			int kick_fd, int call_fd, u16 last_avail, u16 used);

/*
 * The avail index queue @idx would resume at: its base plus the chains
 * popped since DRIVER_OK (vhost-user's GET_VRING_BASE).  Meaningful while
 * the queue's thread is not running, i.e. after a reset, where it stays
 * until the queue is described again.  Chains popped but not yet pushed
 * when the reset came are counted as consumed: they are dropped.
 * Returns 0, -ENOENT for an index past the device's queue table.
 */
int vqf_fsdev_queue_avail_idx(struct vqf_fsdev *d, unsigned int idx, u16 *out);

/*
 * Writes the status byte (virtio 1.2, 3.1.1).  0 resets the device: its
 * threads stop, every chain it holds is dropped without being pushed (the
 * driver takes them back with vqf_vring_drv_detach_unused()), the FUSE
 * connection is forgotten, every DAX mapping is dropped (the whole window
 * is inaccessible again; a DESTROY does the same).  FEATURES_OK is refused (the bit stays clear)
 * when the features are unacceptable; DRIVER_OK starts the queues and is
 * refused with -EINVAL unless the hiprio queue and at least one request
 * queue are set.  Returns 0, -EINVAL (a bit cleared without a reset, or
 * an order the spec forbids), -EIO (a queue could not be started: the
 * device sets NEEDS_RESET).
 */
int vqf_fsdev_set_status(struct vqf_fsdev *d, u8 status);

u8 vqf_fsdev_get_status(const struct vqf_fsdev *d);

/*
 * The driver's notification for queue @idx (virtio-pci's notify register).
 * Writes the queue's kick eventfd, or, with cfg.inline_kick, pops and
 * serves the queue's chains before returning (cfg.direct_kick: one chain,
 * the rest through the queue's thread).  Returns 0, -ENOENT for a
 * queue that is not running.
 */
int vqf_fsdev_kick(struct vqf_fsdev *d, unsigned int idx);

/* A consistent copy of the counters (any time). */
void vqf_fsdev_get_stats(struct vqf_fsdev *d, struct vqf_fsdev_stats *out);

/*
 * Shared memory region @id: *@base and *@len.  The version table
 * (VQF_VIRTIO_FS_SHMCAP_ID_VERSION) when cfg.ver_table is set: read-only
 * memory the guest loads versions from.  The DAX
 * cache window (VQF_VIRTIO_FS_SHMCAP_ID_CACHE), reserved PROT_NONE at
 * vqf_fsdev_new() and unmapped at vqf_fsdev_free().  In the simulator the
 * guest's view of the window is this same host address range (no second
 * mapping, no guest-physical address): the guest loads and stores through
 * *@base + moffset.  A range is accessible only while a SETUPMAPPING
 * covers it; everything else faults.  Returns 0, or -ENOENT for an
 * unknown @id or when no window was configured.
 */
int vqf_fsdev_shm(const struct vqf_fsdev *d, u8 id, void **base, u64 *len);

/*
 * Whether the window is served (a window with dax_ops->map starts off:
 * its front-end has to agree first).  Off, SETUPMAPPING and
 * REMOVEMAPPING go to the backend as without a window (libfuse: ENOSYS);
 * mappings already made stay until a reset or DESTROY.  Returns 0, or
 * -ENOENT without a window.
 */
int vqf_fsdev_set_dax(struct vqf_fsdev *d, bool on);

/*
 * The file of @nodeid changed size from @old_size (~0: unknown, taken as
 * a shrink) to @new_size (a truncation or growth another guest made, or
 * the host): the window's mappings of it are mapped again where QEMU may
 * have replaced pages (qemu/0007) that the file's bytes must show now or
 * later.  A shrink: the part of each mapping past the page holding the
 * file's current end (fstat), unmapped and mapped (a remote window: each
 * acked).  A growth: the pages from the old end's page boundary to the
 * new end's, mapped over in place (one map, no unmap: a store in between
 * reaches the file).  Pages inside the end are never unmapped.  The
 * device's map is unchanged: the guest's mappings stay as it made them.
 * Any thread; takes the window's lock.  Returns the number of ranges
 * mapped again (0 when nothing of the file is mapped there, or without a
 * window), or a negative errno when the file cannot be opened or one of
 * the maps failed (counted in dax_eof_errors; such a range past the end
 * is then a hole, which the front-end reads as zeros).
 */
int vqf_fsdev_dax_resized(struct vqf_fsdev *d, u64 nodeid, u64 old_size,
			  u64 new_size);

/* The backend's notify callback for vqf_backend_config.notify: pass the
 * device as notify_ctx.  Delivers on the notification queue when
 * negotiated, drops (counted) otherwise.
 */
int vqf_fsdev_notify(void *dev, const struct iovec *iov, int iovcnt,
		     size_t len);

#endif /* VQF_FSDEV_H */
