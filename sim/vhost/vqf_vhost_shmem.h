/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vhost_shmem.h - virtio shared memory regions over vhost-user: the
 * back-end's half of protocol feature SHMEM (QEMU's
 * docs/interop/vhost-user.rst).
 *
 * The front-end asks GET_SHMEM_CONFIG for the regions (their sizes by
 * shmid: 0 the DAX cache window, 1 the shared version table) and reserves
 * that much address space behind the device's shared memory
 * capabilities.  The back-end fills it on the back-end channel (the
 * socket the front-end gave with SET_BACKEND_REQ_FD): SHMEM_MAP puts a
 * file's pages at an offset of a region, SHMEM_UNMAP takes them away.
 * Every request goes with NEED_REPLY and the front-end answers each, in
 * order, with a u64 status (0: done).
 *
 * struct vqf_vshm is that channel.  A request that must be known done
 * (a guest's SETUPMAPPING) waits for its ack, up to
 * VQF_VHOST_SHMEM_TIMEOUT_MS; one that must not block its sender (the
 * unmappings of a reset, which the front-end's own stop sequence
 * triggers while it may not serve the channel) leaves its ack pending,
 * and the next waiting request reads the pending acks first.  The
 * channel is FIFO, so a map sent after an unmap takes effect after it.
 * A channel that breaks (EOF, an error, a reply out of protocol, a
 * timeout) is a broken peer: every later request fails and @broken_fd
 * becomes readable so that the connection is ended.
 */
#ifndef VQF_VHOST_SHMEM_H
#define VQF_VHOST_SHMEM_H

#include "vqf_compat.h"

#include <pthread.h>
#include <stdbool.h>

#define VQF_VHOST_PF_BACKEND_REQ	5	/* protocol feature bits */
#define VQF_VHOST_PF_BACKEND_SEND_FD	10
#define VQF_VHOST_PF_SHMEM		20

#define VQF_VHOST_SET_BACKEND_REQ_FD	21	/* front-end requests */
#define VQF_VHOST_GET_SHMEM_CONFIG	44

#define VQF_VHOST_BACKEND_SHMEM_MAP	9	/* back-end requests */
#define VQF_VHOST_BACKEND_SHMEM_UNMAP	10

#define VQF_VHOST_MAX_SHMEM_REGIONS	256
#define VQF_VHOST_SHMEM_MAP_RW		(1ull << 0)
#define VQF_VHOST_SHMEM_TIMEOUT_MS	30000

/* Region ids (virtio-fs shared memory capability ids). */
#define VQF_VHOST_SHMID_CACHE		0
#define VQF_VHOST_SHMID_VERSION		1

/* GET_SHMEM_CONFIG's reply: nregions counts the non-zero sizes. */
struct vqf_vhost_shmem_config {
	u32 nregions;
	u32 padding;
	u64 memory_sizes[VQF_VHOST_MAX_SHMEM_REGIONS];
};

/* SHMEM_MAP and SHMEM_UNMAP (fd_offset unused, no fd). */
struct vqf_vhost_mmap {
	u8 shmid;
	u8 padding[7];
	u64 fd_offset;
	u64 shm_offset;
	u64 len;
	u64 flags;	/* VQF_VHOST_SHMEM_MAP_RW */
};

struct vqf_vshm_stats {
	u64 maps;		/* SHMEM_MAP the front-end acked with 0 */
	u64 unmaps;		/* SHMEM_UNMAP acked with 0 */
	u64 map_refused;	/* -EREMOTEIO: a MAP acked non-zero */
	u64 unmap_refused;	/* an UNMAP acked non-zero */
	u64 no_channel;		/* -ENOTCONN: no channel, or it broke */
	u64 breaks;		/* -EPIPE: the channel broke */
	u64 timeouts;		/* ...of which: no ack in time */
	u64 channels;		/* SET_BACKEND_REQ_FD accepted */
};

struct vqf_vshm {
	pthread_mutex_t lock;	/* the channel: a request and its acks */
	int fd;			/* -1: none */
	bool broken;
	unsigned int pending;	/* acks owed for requests not waited for */
	int broken_fd;		/* eventfd: readable once the channel broke */
	unsigned int timeout_ms;	/* VQF_VHOST_SHMEM_TIMEOUT_MS */
	pthread_mutex_t stlock;	/* st: never waits on the channel */
	struct vqf_vshm_stats st;
};

/* Returns 0 or -ENOMEM. */
int vqf_vshm_init(struct vqf_vshm *s);
void vqf_vshm_fini(struct vqf_vshm *s);

/*
 * The channel from SET_BACKEND_REQ_FD: @fd (consumed, also on error)
 * must be a stream socket; it replaces any previous one.  Returns 0 or
 * -ENOTSOCK.
 */
int vqf_vshm_set_fd(struct vqf_vshm *s, int fd);

/* Closes the channel (the connection ends): pending acks are dropped. */
void vqf_vshm_close(struct vqf_vshm *s);

/* Whether a channel is there and not broken. */
bool vqf_vshm_ready(struct vqf_vshm *s);

/*
 * SHMEM_MAP of @fd's [@fd_off, +@len) at [@shm_off, +@len) of region
 * @shmid, writable or not; @fd is not closed.  SHMEM_UNMAP of that span.
 * With @wait, returns once the front-end acked: 0, -EREMOTEIO when it
 * refused; without, 0 once sent.  Both: -ENOTCONN without a working
 * channel, -EPIPE when the channel broke now (see above).
 */
int vqf_vshm_map(struct vqf_vshm *s, u8 shmid, int fd, u64 fd_off,
		 u64 shm_off, u64 len, bool writable, bool wait);
int vqf_vshm_unmap(struct vqf_vshm *s, u8 shmid, u64 shm_off, u64 len,
		   bool wait);

void vqf_vshm_get_stats(struct vqf_vshm *s, struct vqf_vshm_stats *out);

#endif /* VQF_VHOST_SHMEM_H */
