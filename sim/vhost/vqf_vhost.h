/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vhost.h - the simulator's virtio-fs device (vqf_fsdev) as a
 * vhost-user back-end, so that a real QEMU (vhost-user-fs-pci) drives it.
 *
 * Protocol: QEMU's docs/interop/vhost-user.rst.  The front-end sends a
 * 12-byte header {request, flags, size} and @size payload bytes on a unix
 * stream socket, file descriptors riding along (SCM_RIGHTS).  What is
 * served: GET/SET_FEATURES, GET/SET_PROTOCOL_FEATURES (offered: MQ,
 * REPLY_ACK), SET_OWNER, RESET_OWNER, GET_QUEUE_NUM, SET_MEM_TABLE,
 * SET_VRING_NUM/ADDR/BASE/KICK/CALL/ERR/ENABLE and GET_VRING_BASE.
 * With a DAX window or a version table configured, also protocol
 * features BACKEND_REQ, BACKEND_SEND_FD and SHMEM, SET_BACKEND_REQ_FD
 * and GET_SHMEM_CONFIG (vqf_vhost_shmem.h): shmid 0 is the window,
 * whose SETUPMAPPING/REMOVEMAPPING the device checks with lib's
 * vqf_dax_dev and carries out as SHMEM_MAP/SHMEM_UNMAP of the host
 * file; shmid 1 is the version table, mapped read-only at the first
 * INIT of a device run that asks for it (FUSE_INIT_EXT and
 * VQF_FUSE_INIT_SHARED_VERSION), which waits for the front-end's ack
 * before it is served: a guest is promised the table (by @serve, e.g.
 * the hub) only once the region holds it.  A map that fails (refused,
 * no channel, a stop, no ack in time) takes the ask out of the INIT, so
 * the guest is answered, and runs, without the table (table_unoffered).
 * Both are served only while SHMEM, BACKEND_REQ,
 * BACKEND_SEND_FD and REPLY_ACK are negotiated and the channel is there
 * at the device's start; otherwise SETUPMAPPING is ENOSYS as without a
 * window, and no INIT gets the table.  A device stop, DESTROY and a
 * disconnect unmap the window; a stop and a disconnect unmap the table.
 * Everything else is refused (-EOPNOTSUPP).
 *
 * Mapping onto the device: vqf_fsdev models a virtio-pci device that
 * starts its queues at DRIVER_OK and stops them all at a reset.  Whenever
 * the socket is drained, the back-end compares the set of ready rings
 * (size, addresses inside guest memory, kick fd, enabled or no protocol
 * features; features and memory table known) with the rings the device
 * runs: it starts the device once the hiprio ring and the first request
 * ring are ready, adds rings that become ready later to the running
 * device (vqf_fsdev_add_queue(); QEMU enables them one by one, and kicks
 * every ring itself when it starts them), and stops the whole device when
 * a running ring is stopped (GET_VRING_BASE) or disabled, as QEMU stops
 * all rings of a vhost-user-fs device together.  A running ring
 * reconfigured, new features or a new memory table stop it too and
 * restart it on the ready rings at once ("live change").  A stop drops
 * chains popped and not yet answered (as a virtio reset does) and the
 * FUSE connection, in the device and in the backend (vqf_backend_reset():
 * a guest that reboots without unmounting is served its next INIT).
 * SET_VRING_CALL while running swaps the eventfd under the device (dup3
 * onto a descriptor number the device keeps) without stopping it.
 *
 * Trust: the front-end is not trusted.  Every message is checked (header,
 * size for its type, descriptor count, index, values, regions) before
 * anything changes; a refusal changes nothing, closes the descriptors that
 * came with the message, is counted in exactly one field of struct
 * vqf_vhost_stats and, when the front-end asked for it (REPLY_ACK), is
 * answered with a non-zero status.  Only a stream that cannot be followed
 * any more (a header with a payload size past VQF_VHOST_MAX_PAYLOAD, a
 * short read) ends the connection.  Limit: a front-end that shrinks a
 * memory file after SET_MEM_TABLE makes the back-end's access to it
 * SIGBUS, as with every vhost-user back-end that maps guest memory.
 */
#ifndef VQF_VHOST_H
#define VQF_VHOST_H

#include "vqf_backend.h"
#include "vqf_fsdev.h"
#include "vqf_vhost_shmem.h"

#include <stdbool.h>
#include <stdio.h>

/* Requests (front-end -> back-end). */
enum vqf_vhost_request {
	VQF_VHOST_GET_FEATURES		= 1,
	VQF_VHOST_SET_FEATURES		= 2,
	VQF_VHOST_SET_OWNER		= 3,
	VQF_VHOST_RESET_OWNER		= 4,
	VQF_VHOST_SET_MEM_TABLE		= 5,
	VQF_VHOST_SET_LOG_BASE		= 6,
	VQF_VHOST_SET_LOG_FD		= 7,
	VQF_VHOST_SET_VRING_NUM		= 8,
	VQF_VHOST_SET_VRING_ADDR	= 9,
	VQF_VHOST_SET_VRING_BASE	= 10,
	VQF_VHOST_GET_VRING_BASE	= 11,
	VQF_VHOST_SET_VRING_KICK	= 12,
	VQF_VHOST_SET_VRING_CALL	= 13,
	VQF_VHOST_SET_VRING_ERR		= 14,
	VQF_VHOST_GET_PROTOCOL_FEATURES	= 15,
	VQF_VHOST_SET_PROTOCOL_FEATURES	= 16,
	VQF_VHOST_GET_QUEUE_NUM		= 17,
	VQF_VHOST_SET_VRING_ENABLE	= 18,
	VQF_VHOST_REQUEST_MAX		= 45,	/* names known up to here */
};

#define VQF_VHOST_VERSION		0x1
#define VQF_VHOST_FLAG_VERSION_MASK	0x3
#define VQF_VHOST_FLAG_REPLY		(1u << 2)
#define VQF_VHOST_FLAG_NEED_REPLY	(1u << 3)

#define VQF_VHOST_F_PROTOCOL_FEATURES	30	/* a virtio feature bit */
#define VQF_VHOST_PF_MQ			0	/* protocol feature bits */
#define VQF_VHOST_PF_REPLY_ACK		3
#define VQF_VHOST_VRING_IDX_MASK	0xffull
#define VQF_VHOST_VRING_NOFD		(1ull << 8)
#define VQF_VHOST_VRING_F_LOG		0

#define VQF_VHOST_MAX_REGIONS	8	/* per SET_MEM_TABLE, as QEMU */
#define VQF_VHOST_MAX_FDS	8	/* per message */
#define VQF_VHOST_MAX_QUEUES	(1 + 64)	/* hiprio + request queues */
#define VQF_VHOST_HDR_SIZE	12
#define VQF_VHOST_OPCODES	64	/* FUSE opcodes counted one by one */

struct vqf_vhost_hdr {
	u32 request;
	u32 flags;
	u32 size;	/* payload bytes after the header */
} __attribute__((packed));

struct vqf_vhost_state {
	u32 index;
	u32 num;
};

struct vqf_vhost_addr {
	u32 index;
	u32 flags;
	u64 desc;	/* front-end (QEMU) virtual addresses */
	u64 used;
	u64 avail;
	u64 log;	/* guest physical, only with VRING_F_LOG */
};

struct vqf_vhost_region {
	u64 gpa;
	u64 size;
	u64 uaddr;	/* where the front-end mapped it */
	u64 mmap_offset;	/* of gpa in the file */
};

struct vqf_vhost_mem {
	u32 nregions;
	u32 padding;
	struct vqf_vhost_region r[VQF_VHOST_MAX_REGIONS];
};

union vqf_vhost_payload {
	u64 u64;
	struct vqf_vhost_state state;
	struct vqf_vhost_addr addr;
	struct vqf_vhost_mem mem;
	struct vqf_vhost_shmem_config shmem;	/* a reply only */
};

#define VQF_VHOST_MAX_PAYLOAD	((u32)sizeof(union vqf_vhost_payload))

/* A message as read: on the wire the payload follows the 12-byte header
 * directly; here it is aligned.
 */
struct vqf_vhost_msg {
	struct vqf_vhost_hdr hdr;
	u32 pad;
	union vqf_vhost_payload p;
};

/*
 * Checks a request's shape alone (no state): @m holds the header and
 * hdr.size payload bytes (hdr.size <= VQF_VHOST_MAX_PAYLOAD), @nfds
 * descriptors came with it.  Returns 0 or
 *   -EPROTO      version not 1, REPLY set, or an unknown flag bit
 *   -EOPNOTSUPP  a request this back-end does not serve
 *   -EMSGSIZE    payload size wrong for the request
 *   -E2BIG       SET_MEM_TABLE with more than VQF_VHOST_MAX_REGIONS
 *   -ENODATA     SET_MEM_TABLE with no region
 *   -EBADF       descriptor count wrong for the request
 * (SET_BACKEND_REQ_FD and GET_SHMEM_CONFIG pass it too: whether they
 * were negotiated is state.)
 */
int vqf_vhost_msg_check(const struct vqf_vhost_msg *m, unsigned int nfds);

/* The request's name ("SET_VRING_KICK"), or "?" for an unknown one. */
const char *vqf_vhost_request_name(u32 request);

struct vqf_vhost_cfg {
	const char *tag;		/* unused by QEMU, whose tag is its
					 * own; the device wants one */
	unsigned int num_request_queues;	/* 1..64 (0: 1) */
	unsigned int queue_size_max;	/* 0: 1024 */
	unsigned int threads;		/* vqf_fsdev_cfg.threads */
	/*
	 * vqf_fsdev_cfg.poll_ns: after serving, each request queue's thread
	 * polls its available ring for up to this many ns (adaptive), kicks
	 * suppressed, before sleeping on the kick eventfd (0: at once).
	 * Kicks come from another process, so the queue's thread is what
	 * serves them: no inline or direct kicks here.
	 */
	u64 poll_ns;
	bool readonly;			/* vqf_fsdev_cfg.readonly */
	struct vqf_backend *be;		/* required unless @serve */
	FILE *log;			/* one line per message; NULL: quiet */
	/*
	 * vqf_fsdev_cfg.serve/serve_ctx (e.g. a vqf_hub port).  A device
	 * stop then calls @serve_reset instead of vqf_backend_reset(@be):
	 * it must make the next INIT be served (a fresh hub port).
	 */
	int (*serve)(void *ctx, void *req, size_t len,
		     vqf_backend_reply_fn reply, void *rctx);
	void *serve_ctx;
	void (*serve_reset)(void *ctx);
	/*
	 * Shared memory region 0: a DAX window of this many bytes (a power
	 * of two, at least a page; 0: none).  @dax_ops gives file_fd and
	 * node_fd (vqf_fsdev_dax_ops; map/unmap are the back-end's own).
	 */
	u64 dax_window;
	const struct vqf_fsdev_dax_ops *dax_ops;
	void *dax_ctx;
	/* Passed to the device (vqf_fsdev_cfg.dax_writable, .dax_inode_min). */
	void (*dax_writable)(void *ctx, u64 nodeid, int delta);
	void *dax_writable_ctx;
	u64 dax_inode_min;
	/*
	 * Shared memory region 1: the version table, @ver_table_size bytes
	 * (0: none) of @ver_table_fd, a read-only descriptor the caller keeps
	 * open while the back-end lives; it is what the front-end maps.
	 * With a table, every request passes through the back-end on its
	 * way to @serve or @be: an INIT asking for the table reaches them
	 * only once it is mapped, or no longer asking (see above).
	 */
	int ver_table_fd;
	u64 ver_table_size;
	/* How long a mapping waits for its ack (0: 30 s; tests shorten it). */
	unsigned int shmem_timeout_ms;
};

/* Counters.  Each refused message is in `refused` and in one cause. */
struct vqf_vhost_stats {
	u64 msgs;		/* messages read */
	u64 replies;		/* replies sent (acks included) */
	u64 acks_failed;	/* REPLY_ACK answers with a non-zero status */
	u64 refused;		/* messages refused, all causes */
	u64 bad_header;		/* -EPROTO */
	u64 unsupported;	/* -EOPNOTSUPP */
	u64 bad_size;		/* -EMSGSIZE */
	u64 too_many_regions;	/* -E2BIG */
	u64 no_regions;		/* -ENODATA */
	u64 bad_fds;		/* -EBADF: fd count wrong for the request */
	u64 too_many_fds;	/* -ETOOMANYREFS: more than 8 fds (dropped) */
	u64 not_negotiated;	/* -ENOPROTOOPT: its protocol feature not
				 * negotiated (or no region configured) */
	u64 backend_fd_bad;	/* -ENOTSOCK: SET_BACKEND_REQ_FD not a
				 * stream socket */
	u64 bad_index;		/* -ERANGE: ring index past the queues */
	u64 bad_value;		/* -EINVAL: features, size, enable, flags */
	u64 bad_align;		/* -EDOM: ring address misaligned */
	u64 region_wrap;	/* -EOVERFLOW: a region wraps 2^64 */
	u64 region_overlap;	/* -EEXIST: regions overlap (gpa or uaddr) */
	u64 region_file;	/* -ENXIO: region past its file's end */
	u64 region_fd;		/* -ENODEV: fd not a regular file */
	u64 ring_fd;		/* -EBADFD: KICK/CALL/ERR fd not an
				 * eventfd */
	u64 mmap_failed;	/* -ENOMEM: mmap of a region failed */
	u64 ring_fault;		/* -EFAULT: ring not inside guest memory */
	u64 fatal;		/* stream errors that ended the connection */
	u64 starts;		/* device (re)starts */
	u64 stops;		/* device stops */
	u64 live_changes;	/* stops forced by a change while running */
	u64 start_failed;	/* a start or ring add the device refused */
	u64 ring_adds;		/* rings added to the running device */
	u64 requests[VQF_VHOST_MAX_QUEUES];	/* chains popped per ring */
	/* chains popped by FUSE opcode (below VQF_VHOST_OPCODES; the rest,
	 * and chains too short for a header, are not counted here)
	 */
	u64 by_opcode[VQF_VHOST_OPCODES];
	u64 shm_served;		/* starts with the regions served */
	u64 shm_unserved;	/* starts with SHMEM negotiated, but not
				 * what serving needs (features, channel) */
	u64 table_maps;		/* version table SHMEM_MAPs acked (INIT) */
	u64 table_unoffered;	/* INITs that asked for the table and were
				 * answered without it: the map failed */
	u64 channel_breaks;	/* connections ended by a broken channel */
	struct vqf_vshm_stats shm;
	struct vqf_fsdev_stats dev;
};

struct vqf_vhost;

/*
 * Creates the back-end and its device (reset).  Returns 0, -EINVAL (no
 * backend or serve, bad queue count, a table size without a descriptor,
 * what vqf_fsdev_new() refuses), -ENOMEM.
 */
int vqf_vhost_new(const struct vqf_vhost_cfg *cfg, struct vqf_vhost **out);

/* Stops the device, unmaps guest memory, closes descriptors, frees. */
void vqf_vhost_free(struct vqf_vhost *vh);

/*
 * Serves the front-end on the connected stream socket @fd (not closed)
 * until it disconnects (returns 0), the stream cannot be followed
 * (-EPROTO: short read or oversized payload; the errno of a failed
 * recvmsg/sendmsg), the back-end channel broke (-EPIPE) or @stop_fd
 * (-1: none) becomes readable (-EINTR).
 * Afterwards the device is stopped, guest memory unmapped and every
 * descriptor received closed: the back-end can serve a new connection.
 */
int vqf_vhost_serve(struct vqf_vhost *vh, int fd, int stop_fd);

/*
 * vqf_fsdev_dax_resized() on the device: the mappings of @nodeid's file
 * mapped again where its size change may have left pages QEMU replaced
 * (SHMEM_UNMAP and SHMEM_MAP past a new end, SHMEM_MAP over the pages a
 * growth covered; each waits for the front-end's ack).  Any thread,
 * while vqf_vhost_serve() runs or not.
 */
int vqf_vhost_dax_resized(struct vqf_vhost *vh, u64 nodeid, u64 old_size,
			  u64 new_size);

/* A consistent copy of the counters (any thread, any time). */
void vqf_vhost_get_stats(struct vqf_vhost *vh, struct vqf_vhost_stats *out);

/*
 * A listening unix socket at @path (a stale socket file there is
 * replaced; any other file is not).  Returns the fd or -errno.
 */
int vqf_vhost_listen(const char *path);

/* One connection from @lfd; -EINTR when @stop_fd (-1: none) is readable
 * first.  Returns the fd or -errno.
 */
int vqf_vhost_accept(int lfd, int stop_fd);

#endif /* VQF_VHOST_H */
