/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_memguard.h - survive SIGBUS on memory a peer can truncate.
 *
 * Guest RAM arrives as file descriptors (vhost-user SET_MEM_TABLE); the
 * front-end keeps them and may shrink the file under our mapping, and any
 * access past the new end is SIGBUS.  A thread about to touch such memory
 * arms a recovery point; a SIGBUS on that thread then returns to it (as
 * sigsetjmp() returning non-zero), and the caller breaks whatever it was
 * serving.  A SIGBUS with no armed point (a device worker copying payload)
 * gets a private zero page mapped over the lost page, so the access
 * completes with zeros and the process lives; the peer that truncated its
 * own memory reads garbage, nobody else does.
 *
 *   struct vqf_memguard g;
 *
 *   if (sigsetjmp(g.env, 0))
 *           return fault();          (the point is already disarmed)
 *   vqf_memguard_enter(&g);
 *   ... touch peer memory ...
 *   vqf_memguard_leave(&g);
 *
 * Nothing between enter and leave may keep state that a jump out of the
 * middle would leave inconsistent (locks, allocations).
 */
#ifndef VQF_MEMGUARD_H
#define VQF_MEMGUARD_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

struct vqf_memguard {
	sigjmp_buf env;
	struct vqf_memguard *prev;
};

struct vqf_memguard_stats {
	uint64_t recovered;	/* faults returned to a recovery point */
	uint64_t zero_filled;	/* pages mapped over outside one */
};

/* Install the SIGBUS handler once per process; 0 or -errno. */
int vqf_memguard_install(void);

void vqf_memguard_enter(struct vqf_memguard *g);
void vqf_memguard_leave(struct vqf_memguard *g);

/*
 * Ask the kernel to refuse shrinking @fd (F_SEAL_SHRINK): 0 if it is
 * sealed against it now (or was), -errno if the file takes no such seal
 * (not a memfd, or created without MFD_ALLOW_SEALING: F_SEAL_SEAL).
 */
int vqf_memguard_seal(int fd);

void vqf_memguard_stats(struct vqf_memguard_stats *out);

#endif /* VQF_MEMGUARD_H */
