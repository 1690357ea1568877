/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_sim.h - one simulated machine: a host directory served by a libfuse3
 * filesystem (vqfuse's passthrough or libfuse3's example passthrough_ll)
 * behind a virtio-fs device, and a guest with RAM, a transport driver and
 * a POSIX-like client.  What vqfuse-sim, the end-to-end tests and the
 * benchmarks build on.
 *
 *   vqf_gcli -> vqf_gdrv -> split virtqueues in vqf_gram
 *            -> vqf_fsdev (vqf_dev_parse) -> vqf_backend (libfuse3)
 *            -> vqf_pt / passthrough_ll -> the shared directory
 */
#ifndef VQF_SIM_H
#define VQF_SIM_H

#include "vqf_gcli.h"
#include "vqf_hub.h"
#include "vqf_trace.h"
#include "vqf_passthrough.h"
#include "vqf_vfront.h"

enum vqf_sim_fs {
	VQF_SIM_FS_VQFUSE = 0,	/* sim/passthrough, hardened */
	VQF_SIM_FS_PTLL,	/* libfuse3's passthrough_ll example */
	/* Answers from memory, no system call (vqf_nullfs.h): the
	 * transport measured alone.  @shared is not touched.
	 */
	VQF_SIM_FS_NULL,
};

struct vqf_sim_cfg {
	const char *shared;		/* the host directory; required */
	enum vqf_sim_fs fs;
	enum vqf_pt_io_mode io;		/* VQF_SIM_FS_VQFUSE only */
	/* vqf_pt_config.host_callers and .nodev (VQF_SIM_FS_VQFUSE only):
	 * requests carry credentials of host processes (vqfuse-sim mount);
	 * no device nodes are created.
	 */
	bool host_callers;
	bool nodev;
	unsigned int queues;		/* request queues (0: 1) */
	unsigned int queue_size;	/* (0: 128) */
	unsigned int threads;		/* device workers (0: serve inline) */
	bool readonly;			/* vqf_fsdev_cfg.readonly: EROFS */
	size_t ram;			/* guest RAM bytes (0: 256 MiB) */
	bool notification;		/* offer + negotiate NOTIFICATION */
	/* The device runs in the kicking thread (QEMU without ioeventfd)
	 * and the driver reaps in the calling thread: no hand-offs.
	 */
	bool inline_kick;
	/*
	 * Threaded device (not inline_kick, poll_ns 0): each kick still
	 * wakes the queue's thread (vhost-user's shape: per request a
	 * kick, an interrupt and the completion thread's wake-up).  false,
	 * the default: the kicking thread serves its own chain and reaps
	 * its reply (vqf_fsdev_cfg.direct_kick), and the queue thread takes
	 * only what concurrent kicks leave.
	 */
	bool handoff;
	/* Threaded device: adaptive polling windows of up to this many ns
	 * on both sides (vqf_fsdev_cfg.poll_ns, and vqf_gdrv_cfg.poll_ns
	 * unless drv sets its own).  0: sleep on the eventfds at once.
	 */
	u64 poll_ns;
	bool poll_fixed;	/* the whole window every time (tests) */
	const char *tag;		/* (NULL: "vqfuse") */
	/* Device fault plan, copied by vqf_sim_new() (NULL: none); needs
	 * inline_kick.  See vqf_fault.h.
	 */
	const struct vqf_fault_plan *faults;
	struct vqf_gdrv_cfg drv;	/* queues/queue_size set from above */
	struct vqf_gcli_cfg cli;
	/* Records every request's life (vqf_trace.h); the caller opens
	 * and closes it, after vqf_sim_free().  NULL: not traced.
	 */
	struct vqf_trace *trace;
	/* DAX cache window bytes (vqf_fsdev_cfg.dax_window; 0: none).  The
	 * device maps files into it through vqfuse's passthrough; over
	 * passthrough_ll SETUPMAPPING/REMOVEMAPPING answer ENOSYS.
	 */
	u64 dax_window;
	/* The guest client reads and writes file data through that window
	 * (vqf_gcli_cfg.dax_base); ranges of dax_range bytes (0: 2 MiB).
	 */
	bool dax_guest;
	u64 dax_range;
	/*
	 * Guests on the one backend (0: 1; at most VQF_SIM_MAX_GUESTS), each
	 * with its own RAM, device, driver and client built from the fields
	 * above.  With more than one, or with cli.cache = shared, the devices
	 * serve through a vqf_hub, which keeps the shared version table;
	 * @hub configures it (be and root are filled in here).
	 */
	unsigned int guests;
	struct vqf_hub_cfg hub;
	/* Extra libfuse options for the backend (e.g. "-d"). */
	int fuse_argc;
	const char *const *fuse_argv;
	/*
	 * A vhost-user-fs back-end in another process (virtiofsd, `vqfuse-sim
	 * vhost-user`), at this socket, instead of the simulator's own device
	 * and backend: each guest connects on its own (with several guests,
	 * guest i to "@connect.i", as `vqfuse-sim vhost-user --guests N`
	 * names its sockets), its RAM a memfd, its
	 * device a vqf_vfront (vqf_vfront.h).  @shared, @fs, @io,
	 * @host_callers, @nodev, @threads, @readonly, @inline_kick,
	 * @handoff, @faults, @dax_window and @hub are the back-end's then
	 * and not used; @queues is what the config space asks for (capped
	 * by the back-end); dax_guest and cache=shared use the regions the
	 * back-end has.  @front: its other settings (socket, ram and lost
	 * are filled in here).
	 */
	const char *connect;
	struct vqf_vfront_cfg front;
};

struct vqf_sim_stats {
	struct vqf_gcli_stats cli;
	struct vqf_gdrv_stats drv;
	struct vqf_fsdev_stats dev;
	struct vqf_backend_stats be;
	struct vqf_pt_stats pt;		/* zero for passthrough_ll */
	struct vqf_hub_stats hub;	/* zero without a hub */
	struct vqf_vfront_stats front;	/* zero without connect */
};

#define VQF_SIM_MAX_GUESTS	VQF_HUB_MAX_PORTS

struct vqf_sim;

/* Returns 0 or a negative errno; on error nothing is left behind. */
int vqf_sim_new(const struct vqf_sim_cfg *cfg, struct vqf_sim **out);
/* Client, driver (DESTROY, reset), device, backend, RAM: in that order.
 * No call may be inside a client (see vqf_gcli_free()): with calls in
 * flight, vqf_gdrv_shutdown() first, join the callers, then free.
 */
void vqf_sim_free(struct vqf_sim *s);

/* Guest 0's parts. */
struct vqf_gcli *vqf_sim_cli(struct vqf_sim *s);
struct vqf_gdrv *vqf_sim_drv(struct vqf_sim *s);
struct vqf_fsdev *vqf_sim_dev(struct vqf_sim *s);
/* Guest @i's parts (NULL past the last guest). */
unsigned int vqf_sim_guests(struct vqf_sim *s);
struct vqf_gcli *vqf_sim_cli_n(struct vqf_sim *s, unsigned int i);
struct vqf_gdrv *vqf_sim_drv_n(struct vqf_sim *s, unsigned int i);
struct vqf_fsdev *vqf_sim_dev_n(struct vqf_sim *s, unsigned int i);
/* Guest @i's vhost-user front-end (NULL without connect). */
struct vqf_vfront *vqf_sim_front_n(struct vqf_sim *s, unsigned int i);
/* The hub, NULL with one guest not using cache=shared. */
struct vqf_hub *vqf_sim_hub(struct vqf_sim *s);
struct vqf_backend *vqf_sim_backend(struct vqf_sim *s);
struct vqf_pt *vqf_sim_pt(struct vqf_sim *s);	/* NULL for ptll */

/* Guest 0's counters and the shared parts'. */
void vqf_sim_get_stats(struct vqf_sim *s, struct vqf_sim_stats *out);
/* Guest @i's counters and the shared parts'. */
void vqf_sim_get_stats_n(struct vqf_sim *s, unsigned int i,
			 struct vqf_sim_stats *out);

#endif /* VQF_SIM_H */
