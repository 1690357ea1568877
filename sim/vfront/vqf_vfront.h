/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vfront.h - the simulated guest's virtio-fs device as a vhost-user
 * front-end: what QEMU's vhost-user-fs-pci is to a guest, so that the
 * simulated driver and client (vqf_gdrv, vqf_gcli) run against any
 * vhost-user-fs back-end in another process - virtiofsd, or
 * `vqfuse-sim vhost-user` - with no VM.
 *
 * Protocol: QEMU's docs/interop/vhost-user.rst, in the order QEMU 7.2
 * (Debian 12) sends it.  At connect: GET_FEATURES, GET_PROTOCOL_FEATURES
 * and SET_PROTOCOL_FEATURES (MQ, REPLY_ACK, and with SHMEM offered also
 * BACKEND_REQ and BACKEND_SEND_FD), GET_QUEUE_NUM, SET_BACKEND_REQ_FD,
 * GET_SHMEM_CONFIG, SET_OWNER.  At the driver's DRIVER_OK: SET_FEATURES,
 * SET_MEM_TABLE (the guest RAM's memfd), then per ring SET_VRING_NUM,
 * SET_VRING_BASE, SET_VRING_ADDR, SET_VRING_KICK and SET_VRING_CALL (the
 * driver's eventfds), then SET_VRING_ENABLE for each.  At a reset:
 * GET_VRING_BASE per ring, which stops it.  With REPLY_ACK every message
 * without a reply of its own asks for one, so a refusal is seen where it
 * happens.
 *
 * The device's config space (tag, num_request_queues) is the front-end's,
 * as QEMU's: the request queues are the configured number capped by what
 * GET_QUEUE_NUM says the back-end takes (1 without MQ).  The back-end's
 * virtio features pass through to the driver, minus
 * VHOST_USER_F_PROTOCOL_FEATURES and VIRTIO_FS_F_NOTIFICATION (QEMU does
 * not offer a notification queue to vhost-user-fs either).
 *
 * Shared memory: GET_SHMEM_CONFIG's regions are reserved here
 * (PROT_NONE), and the back-end channel is served by a thread of the
 * front-end's own: SHMEM_MAP maps the file it sends into its region,
 * SHMEM_UNMAP puts the reservation back, each answered in order (REPLY
 * with a u64 status: 0, or the positive errno).  vqf_vfront_shm() gives
 * the guest client a region's address (the DAX window, the version
 * table).
 *
 * Trust: the back-end is not trusted.  Every reply is checked (request
 * code, REPLY flag, size, value ranges) and every back-end request too
 * (code, size, descriptor count, region, alignment, bounds, flags) before
 * anything is mapped: a refused SHMEM_MAP or SHMEM_UNMAP changes nothing,
 * closes what came with it, is answered with a non-zero status and is
 * counted in exactly one cause.  The back-end is "lost" - once, with
 * one errno - when it hangs up (-ENOTCONN), when a reply does not come
 * in cfg.reply_timeout_ms (-ETIMEDOUT), when a reply or the channel
 * cannot be followed (-EPROTO), or when an ack refuses a message
 * (-EREMOTEIO): cfg.lost is called, every later message fails at once
 * with -ENOTCONN, and the driver fails its calls (vqf_gdrv_lost()).
 */
#ifndef VQF_VFRONT_H
#define VQF_VFRONT_H

#include "vqf_gdrv.h"
#include "vqf_gram.h"

#include <stdbool.h>
#include <stdio.h>

struct vqf_vfront_cfg {
	/* The back-end's listening socket; or, with @socket NULL, @fd: a
	 * connected stream socket the front-end takes over (closes).
	 */
	const char *socket;
	int fd;
	struct vqf_gram *ram;		/* vqf_gram_new_shared(); required */
	const char *tag;		/* config space tag (NULL: "vqfuse") */
	unsigned int num_request_queues;	/* wanted (0: 1) */
	unsigned int queue_size_max;	/* per ring (0: 1024) */
	bool no_shmem;			/* never negotiate SHMEM */
	/* Never accepted, even when offered (tests: a back-end seen as
	 * offering less): virtio feature bits, protocol feature bits.
	 */
	u64 features_mask;
	u64 protocol_mask;
	/* How long a reply may take (0: 60 s: far beyond any message a
	 * working back-end answers, even under valgrind).
	 */
	unsigned int reply_timeout_ms;
	/* Called once when the back-end is lost, from the thread that saw
	 * it (the front-end's own thread or a caller of the ops).
	 */
	void (*lost)(void *ctx, int err);
	void *lost_ctx;
	FILE *log;			/* one line per message; NULL: quiet */
};

/* Counters.  A refused back-end request is in shm_refused and one cause. */
struct vqf_vfront_stats {
	u64 msgs;		/* messages sent */
	u64 replies;		/* replies and acks read */
	u64 features;		/* offered by the back-end (GET_FEATURES) */
	u64 protocol_features;	/* offered (GET_PROTOCOL_FEATURES) */
	u64 protocol_acked;	/* negotiated (SET_PROTOCOL_FEATURES) */
	u64 queue_num;		/* GET_QUEUE_NUM's answer (0: not asked) */
	u64 shm_regions;	/* regions reserved from GET_SHMEM_CONFIG */
	u64 shm_config_bad;	/* a GET_SHMEM_CONFIG reply refused */
	u64 starts;		/* DRIVER_OK carried out */
	u64 stops;		/* resets that stopped running rings */
	u64 kicks;		/* kick eventfd writes */
	u64 channel_msgs;	/* back-end requests read */
	u64 shm_maps;		/* SHMEM_MAPs carried out */
	u64 shm_unmaps;		/* SHMEM_UNMAPs carried out */
	u64 shm_refused;	/* back-end requests refused, all causes */
	u64 shm_bad_header;	/* -EPROTO: version, flags, unknown code */
	u64 shm_bad_size;	/* -EMSGSIZE: payload size */
	u64 shm_bad_fds;	/* -EBADF: descriptor count */
	u64 shm_bad_region;	/* -ENOENT: shmid not a reserved region */
	u64 shm_bad_range;	/* -ERANGE: unaligned, empty, past the end */
	u64 shm_bad_flags;	/* -EINVAL: unknown flag bits */
	u64 shm_map_failed;	/* -ENOMEM etc.: the mmap itself failed */
	u64 lost;		/* 0 or 1 */
	s64 lost_err;		/* the errno it was lost with */
};

struct vqf_vfront;

/*
 * Connects (cfg.socket) or takes cfg.fd, and negotiates up to
 * SET_OWNER.  Returns 0; -EINVAL (no RAM or a RAM without a memfd);
 * -ENODEV (the back-end offers no VIRTIO_F_VERSION_1); the connect's
 * errno; what a lost back-end gives.  On error cfg.fd is closed.
 */
int vqf_vfront_new(const struct vqf_vfront_cfg *cfg, struct vqf_vfront **out);

/* Stops the rings (if running), hangs up, unmaps the regions, frees. */
void vqf_vfront_free(struct vqf_vfront *f);

/* The transport ops for vqf_gdrv_new_ops(), with the front-end as dev. */
const struct vqf_gdrv_dev_ops *vqf_vfront_dev_ops(void);

/* The same functions by name (see vqf_fsdev.h for their meaning). */
u64 vqf_vfront_features(struct vqf_vfront *f);
int vqf_vfront_set_features(struct vqf_vfront *f, u64 features);
void vqf_vfront_read_config(struct vqf_vfront *f,
			    struct vqf_virtio_fs_config *cfg);
unsigned int vqf_vfront_queue_max(struct vqf_vfront *f, unsigned int idx);
int vqf_vfront_set_queue(struct vqf_vfront *f, unsigned int idx,
			 unsigned int num, const struct vqf_vring_addr *addr,
			 int kick_fd, int call_fd);
/* DRIVER_OK starts the rings (a failure there loses the back-end, and
 * returns the errno it was lost with); 0 stops them.
 */
int vqf_vfront_set_status(struct vqf_vfront *f, u8 status);
u8 vqf_vfront_get_status(struct vqf_vfront *f);
int vqf_vfront_kick(struct vqf_vfront *f, unsigned int idx);

/*
 * Shared memory region @id (VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
 * _VERSION): its address here and size.  Returns 0, or -ENOENT when the
 * back-end has no such region (or SHMEM was not negotiated).  What is
 * not mapped by the back-end faults when touched.
 */
int vqf_vfront_shm(struct vqf_vfront *f, u8 id, void **base, u64 *len);

/* Whether the back-end is lost (and with which errno, if @err). */
bool vqf_vfront_is_lost(struct vqf_vfront *f, int *err);

/* A consistent copy of the counters (any thread, any time). */
void vqf_vfront_get_stats(struct vqf_vfront *f, struct vqf_vfront_stats *out);

#endif /* VQF_VFRONT_H */
