/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_hub.h - one FUSE server shared by several guests, and the shared
 * version table that keeps their caches coherent (seeds 010/011).
 *
 * Each guest has its own virtio-fs device (its own queues and RAM); every
 * device serves its requests through a port of one hub, and the hub
 * serves them all through one vqf_backend (one libfuse session, one
 * passthrough of one host directory):
 *
 *   guest A -> fsdev A --port A--\
 *                                 hub -> vqf_backend -> host directory
 *   guest B -> fsdev B --port B--/  \-> version table (shm, read-only
 *                                       for guests) <- host watcher
 *
 * What the hub does on the way:
 *  - uniques: each guest numbers its own requests; the hub gives the
 *    backend its own uniques and puts the guest's back in the reply, and
 *    turns a guest's INTERRUPT into one for the right backend request;
 *  - INIT: the first reaches the backend; later guests (and a guest that
 *    re-INITs after DESTROY) are answered from the backend's INIT reply.
 *    DESTROY from a guest gives back that guest's lookups and is answered
 *    by the hub: the session lives as long as the hub;
 *  - lookup counts: every reply that hands out a nodeid (LOOKUP, CREATE,
 *    MKNOD, MKDIR, SYMLINK, LINK, TMPFILE, READDIRPLUS entries) is counted
 *    per guest, and a guest's FORGET is clamped to what that guest itself
 *    looked up, so one guest cannot make the server drop an inode another
 *    guest still uses;
 *  - versions: each nodeid handed out gets a slot in the table (lib/'s
 *    vqf_ver_dev) while any guest holds a lookup on it; replies naming an
 *    entry carry struct fuse_entryver_out as their last argument for
 *    guests that asked for it at INIT (VQF_FUSE_INIT_SHARED_VERSION);
 *    every metadata change a guest makes through the hub bumps the slots
 *    it touches before the reply goes back, and changes made directly in
 *    the host directory bump them from inotify (a periodic rescan when
 *    inotify cannot be used).  A full table leaves new inodes without a
 *    slot: those guests fall back to timeouts, never to a wrong answer.
 * See docs/version-table.md.
 */
#ifndef VQF_HUB_H
#define VQF_HUB_H

#include "vqf_backend.h"
#include "vqf_version.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VQF_HUB_MAX_PORTS	16

enum vqf_hub_watch {
	VQF_HUB_WATCH_INOTIFY = 0,	/* inotify; rescan if it fails */
	VQF_HUB_WATCH_RESCAN,		/* only the periodic rescan */
	VQF_HUB_WATCH_OFF,		/* host edits are not seen */
};

struct vqf_hub_port;

struct vqf_hub_cfg {
	struct vqf_backend *be;	/* required; not freed by the hub */
	/* Version table slots, slot 0 included (0: 65536; 1: no table). */
	u64 nr_slots;
	/* The host directory the backend serves, watched for direct edits
	 * (NULL: none are watched).
	 */
	const char *root;
	enum vqf_hub_watch watch;
	unsigned int rescan_ms;	/* rescan period (0: 1000) */
	/*
	 * Tests only: rewrites the extension of every entry reply after the
	 * hub filled it, to play a hostile device (NULL: none).
	 */
	void (*entryver_hook)(void *ctx, struct fuse_entryver_out *ev);
	void *hook_ctx;
	/*
	 * A file's size changed from @old_size (VQF_HUB_SIZE_UNKNOWN: not
	 * known, take it as a shrink) to @new_size: a guest's SETATTR with a
	 * size, OPEN or CREATE with O_TRUNC, or WRITE past the end, answered
	 * with success (@from: that guest's port), or a host change the
	 * watcher saw (@from: NULL).  Called after the bump, before the
	 * guest's reply, with no lock of the hub held, from the thread
	 * replying or the watcher's (NULL: none).  The DAX windows of a
	 * daemon with several guests (vu_shmem.c).
	 */
	void (*resize_hook)(void *ctx, u64 nodeid, u64 old_size, u64 new_size,
			    const struct vqf_hub_port *from);
	void *resize_ctx;
};

#define VQF_HUB_SIZE_UNKNOWN	(~0ull)

/* Counters; the reasons a request or event was refused are disjoint. */
struct vqf_hub_stats {
	u64 requests;		/* requests forwarded to the backend */
	u64 replies;		/* replies passed back to a port */
	u64 local_inits;	/* INITs answered from the first one */
	u64 destroys;		/* DESTROYs answered by the hub */
	u64 entries;		/* lookups counted from replies */
	u64 entryver_sent;	/* replies given fuse_entryver_out */
	u64 entryver_raced;	/* ...with initial_version 0: a bump ran
				 * while the backend built the reply */
	u64 bumps;		/* slot bumps for changes made by guests */
	u64 host_events;	/* inotify events read */
	u64 host_bumps;		/* slot bumps for changes made on the host */
	u64 rescans;		/* periodic rescans */
	u64 overflows;		/* inotify queue overflows (all bumped) */
	u64 watches;		/* directories watched now */
	u64 watch_errors;	/* inotify_add_watch failures */
	u64 forgets;		/* lookups forgotten, clamped */
	u64 forget_clamped;	/* FORGETs above the guest's own lookups */
	u64 forget_unknown;	/* FORGETs of nodeids never handed out */
	u64 port_forgets;	/* lookups given back at DESTROY/port free */
	u64 interrupts;		/* INTERRUPTs forwarded */
	u64 interrupt_stale;	/* ...for nothing in flight: dropped */
	u64 internal_lookups;	/* LOOKUPs to find what a name unbinds */
	u64 wmap_bumps;		/* bumps for files writably DAX-mapped: at
				 * the first mapping, the last unmapping,
				 * and after every attribute reply */
	u64 wmap_unknown;	/* mapping changes of nodeids not held */
	u64 nodes;		/* nodeids with lookups now */
	u64 unversioned;	/* ...of which without a slot */
	u64 ports;		/* ports now */
	struct vqf_ver_dev_stats ver;
};

struct vqf_hub;
struct vqf_hub_port;

/* Returns 0, -EINVAL (no backend), -ENOMEM, or what memfd/mmap failed with. */
int vqf_hub_new(const struct vqf_hub_cfg *cfg, struct vqf_hub **out);
/* No port may be left.  The backend stays. */
void vqf_hub_free(struct vqf_hub *h);

/* A guest's entry point.  Returns 0, -ENOSPC (VQF_HUB_MAX_PORTS), -ENOMEM. */
int vqf_hub_port_new(struct vqf_hub *h, struct vqf_hub_port **out);
/* Gives back the lookups the guest still holds.  No request of the port
 * may still be in the backend (reset or free its device first).
 */
void vqf_hub_port_free(struct vqf_hub_port *p);

/*
 * vqf_backend_process() through the hub for the guest of @port: same
 * results and reply contract.  @req is the device's private copy of the
 * request; the hub rewrites its header (unique) and FORGET counts in
 * place.  Any thread.
 */
int vqf_hub_process(void *port, void *req, size_t len,
		    vqf_backend_reply_fn reply, void *ctx);

/*
 * The table as guests see it: a read-only mapping of the shared memory
 * (virtio-fs shared memory region VQF_VIRTIO_FS_SHMCAP_ID_VERSION), and
 * its size in bytes.  NULL when the hub has no table.
 */
const void *vqf_hub_table(struct vqf_hub *h, u64 *size);

/*
 * A new read-only descriptor (close-on-exec; the caller closes it) of
 * the table's shared memory, for a process that maps it for guests (a
 * vhost-user front-end).  Returns it, -ENOENT when the hub has no table,
 * or open's -errno.
 */
int vqf_hub_table_fd(struct vqf_hub *h);

/*
 * Applies every host edit already queued by the kernel (inotify) or, in
 * rescan mode, rescans now.  An edit made before this call is reflected
 * in the table when it returns; the watcher thread does the same on its
 * own a moment later.  Returns 0 or a negative errno.
 */
int vqf_hub_sync(struct vqf_hub *h);

/*
 * A guest's DAX window gained (@delta 1) or lost (-1) a writable mapping
 * of @nodeid.  Stores through such a mapping change the host file (its
 * data, mtime and ctime) with no request and no inotify event, so while
 * any window maps it writable the file's slot proves nothing: it is
 * bumped at the first writable mapping, at the last one's removal, and
 * after every reply that hands out its attributes (GETATTR, LOOKUP,
 * READDIRPLUS), so that every guest asks the server again each time, as
 * with no table.  Any thread, any lock of the caller's (the hub's own is
 * innermost).  @hub is a struct vqf_hub: void * so that the function is
 * vqf_fsdev_cfg.dax_writable itself, as vqf_hub_process() is .serve.
 */
void vqf_hub_dax_writable(void *hub, u64 nodeid, int delta);

void vqf_hub_get_stats(struct vqf_hub *h, struct vqf_hub_stats *out);

#endif /* VQF_HUB_H */
