/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vu_shm.h - `vqfuse-sim vhost-user`'s shared memory regions: the DAX
 * window (--dax-window SIZE) and the shared version table
 * (--version-table), served to the front-end through vhost-user's SHMEM
 * protocol (sim/vhost/vqf_vhost_shmem.h).
 *
 * With --version-table the requests go through a port of a vqf_hub, so
 * that the daemon's version bumps (and the host edits its watcher sees)
 * land in the table the guest maps; a device stop gives the next session
 * a fresh port (the hub answers its INIT, the old port's lookups are
 * given back).  --ver-hostile N plays a device whose table goes backwards
 * and whose slots move (seed 010's FIXMEs), for the guest's tests.
 */
#ifndef VQF_VU_SHM_H
#define VQF_VU_SHM_H

#include "vqf_hub.h"
#include "vqf_passthrough.h"
#include "vqf_vhost.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

struct vqf_vu_shm;

#define VQF_VU_GUESTS_MAX	8	/* --guests */

/* One front-end's way into the hub. */
struct vqf_vu_port {
	struct vqf_vu_shm *s;
	struct vqf_hub_port *port;	/* changes only while stopped */
};

struct vqf_vu_shm {
	unsigned long long dax_window;	/* 0: none */
	/* --dax-inode-min: FUSE_ATTR_DAX from this size (0: off) */
	unsigned long long dax_inode_min;
	bool version_table;
	/*
	 * --ver-hostile N (tests): while SHARED/.vqf-hostile exists, every
	 * Nth entry reply's extension lies, alternately a version ahead of
	 * its slot and another slot (0: never).
	 */
	unsigned long long hostile;
	char *hostile_path;
	unsigned long long hostile_ctr;	/* atomic */
	u64 nr_slots;

	/*
	 * --guests N: N front-ends, each on its own socket, through one hub
	 * and one table (1: one front-end, as virtiofsd).
	 */
	unsigned int guests;

	struct vqf_pt *pt;		/* vqfuse's passthrough, or NULL */
	struct vqf_hub *hub;
	struct vqf_vu_port *ports;	/* one per guest, with a hub */
	int table_fd;			/* -1: none */

	/*
	 * With a window and a hub: each guest's back-end (vqf_vu_shm_attach),
	 * whose window a size change made by another guest or the host maps
	 * again where QEMU may have replaced pages (vh_lock).
	 */
	pthread_mutex_t vh_lock;
	bool vh_lock_on;
	struct vqf_vhost *vhs[VQF_VU_GUESTS_MAX];
	unsigned long long eof_remaps;	/* (vh_lock) ranges mapped again */
	unsigned long long eof_errors;	/* (vh_lock) ...that failed */
	unsigned long long shrinks;	/* (vh_lock) hook calls */
	unsigned long long growths;	/* (vh_lock) ...for a growth */
};

/* Flags and numbers for the option tables of vqf_cli_walk(). */
#define VQF_VU_SHM_FLAGS	"--version-table"
#define VQF_VU_SHM_NUM		{ "--dax-window", true, 4096, 64ull << 30 }, \
				{ "--dax-inode-min", true, 1, 1ull << 62 }, \
				{ "--ver-hostile", false, 1, 1000000 }, \
				{ "--guests", false, 1, VQF_VU_GUESTS_MAX }

/*
 * One option as vqf_cli_walk() found it: 1 when it was one of ours, 0
 * when not, or a usage exit code.
 */
int vqf_vu_shm_opt(struct vqf_vu_shm *s, const char *name,
		   const unsigned long long *num);

/* After parsing: a usage exit code, or 0. */
int vqf_vu_shm_check(const struct vqf_vu_shm *s, bool passthrough_ll);

/*
 * Sets up what the options ask for around backend @be over @shared
 * (@pt: vqfuse's passthrough, NULL for passthrough_ll) and fills @vc's
 * serve, dax and table fields for guest 0.  Returns 0 or a negative errno.
 */
int vqf_vu_shm_setup(struct vqf_vu_shm *s, struct vqf_backend *be,
		     struct vqf_pt *pt, const char *shared,
		     struct vqf_vhost_cfg *vc);

/* @vc as vqf_vu_shm_setup() left it, turned into guest @i's. */
void vqf_vu_shm_guest(struct vqf_vu_shm *s, unsigned int i,
		      struct vqf_vhost_cfg *vc);

/*
 * Guest @i's back-end @vh (NULL: gone; before vqf_vhost_free()), for the
 * truncations of the other guests and the host (docs/dax.md, "The
 * daemon: several windows").
 */
void vqf_vu_shm_attach(struct vqf_vu_shm *s, unsigned int i,
		       struct vqf_vhost *vh);

/* The hub's counters line on @f (nothing without a hub). */
void vqf_vu_shm_print_hub(struct vqf_vu_shm *s, FILE *f);

/* The `dax:` and `shmem:` counter lines on @f (nothing if unused): the
 * daemon's log, so that --syslog carries them too.
 */
void vqf_vu_shm_print(const struct vqf_vu_shm *s, struct vqf_vhost *vh,
		      FILE *f);

/* After vqf_vhost_free(), before the backend goes. */
void vqf_vu_shm_free(struct vqf_vu_shm *s);

#endif /* VQF_VU_SHM_H */
