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
 * socket the front-end gave with SET_BACKEND_REQ_FD, which must be a
 * connected stream socket): SHMEM_MAP puts a file's pages at an offset
 * of a region, SHMEM_UNMAP takes them away.  Every request goes with
 * NEED_REPLY and the front-end answers each, in order, with a u64 status
 * (0: done).
 *
 * struct vqf_vshm is that channel.  vhost-user gives a back-end request no
 * id, so acks are matched by order: every request sent is queued as
 * outstanding (its code), and each ack answers the oldest one.  An ack is
 * taken only when its header says version 1, REPLY and size 8, and its
 * request code is the oldest outstanding request's; it is never credited
 * to another request.  A request that must be known done (a guest's
 * SETUPMAPPING; the version table's map at the INIT that asks for it)
 * waits for its own ack, up to VQF_VHOST_SHMEM_TIMEOUT_MS;
 * one that must not block its sender (the unmappings of a reset, which the
 * front-end's own stop sequence triggers while it may not serve the
 * channel) stays outstanding, and its ack is read by the next request, or
 * by vqf_vshm_poll() when the serving thread sees the channel readable
 * while idle.  Both are needed: only the check right before a send sees
 * bytes that came after the idle look, and only the idle reads drain a
 * reset's acks when no request follows - a front-end writing them blocks
 * once some 278 lie unread (20-byte writes, an AF_UNIX stream socket's
 * default buffer), and QEMU writes them from its main loop.  The channel
 * is FIFO, so a map sent after an unmap takes effect after it.
 *
 * The channel breaks, and stays broken until the connection ends, on:
 * EOF or a socket error (-EPIPE), no ack in time (-ETIMEDOUT), an ack
 * that is malformed (-EPROTO), one for another request code than the
 * oldest outstanding (-EBADMSG), and bytes when nothing is outstanding
 * (-EBADE: an unsolicited ack, or a duplicate).  Bytes with nothing
 * outstanding are looked for before each request is sent, right after
 * the ack that emptied the queue is read (then the request it answered
 * fails with -EBADE too: which of the two acks was its own is unknown),
 * and while idle (vqf_vshm_poll()).  The request that finds the break
 * fails with that errno, counted in its own field; every later one gets
 * -ENOTCONN, and @broken_fd becomes readable so that the connection is
 * ended.  The residual window: a duplicate that is not yet in the socket
 * when the ack it copies is read and checked, and that arrives after the
 * next request was sent, is taken for that request's ack when the codes
 * match; the genuine ack then comes with nothing outstanding and breaks
 * the channel - at most one request misreported, and only by a
 * front-end that already misbehaves (which could equally ack a map it
 * refused: a front-end's acks about its own address space are believed).
 *
 * A stop never waits for the front-end: vqf_vshm_cancel() (the device
 * stop, a new channel, the window's teardown at a guest's DESTROY) ends
 * every wait at once with -ECANCELED and
 * refuses new waiting requests while it is raised; requests that do not
 * wait still go out (the reset's unmappings), but a socket too full to
 * take them breaks the channel instead of blocking (-ECANCELED too,
 * counted in cancelled and breaks).  A cancelled
 * request stays outstanding (its late ack is read and counted as any
 * other), and a cancelled SHMEM_MAP is followed at once by a SHMEM_UNMAP
 * of its span, so that whatever the front-end did with the map, the span
 * ends up empty - as the device, which saw the map fail, believes - and
 * a later map of the span goes out after that unmap.
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
	u64 breaks;		/* the channel broke (any cause below) */
	u64 timeouts;		/* -ETIMEDOUT: no ack in time */
	u64 acks_malformed;	/* -EPROTO: version, REPLY or size wrong */
	u64 acks_mismatched;	/* -EBADMSG: not the oldest's request code */
	u64 acks_unsolicited;	/* -EBADE: bytes with nothing outstanding */
	u64 cancelled;		/* -ECANCELED: requests a stop ended */
	u64 undo_unmaps;	/* SHMEM_UNMAPs sent after a cancelled MAP */
	u64 channels;		/* SET_BACKEND_REQ_FD accepted */
	u64 chan_not_socket;	/* -ENOTSOCK: refused, not a socket */
	u64 chan_not_stream;	/* -EPROTOTYPE: not SOCK_STREAM */
	u64 chan_unconnected;	/* -ENOTCONN: listening or not connected */
	/* Not a count: the requests sent that wait for their ack right
	 * now (a test sees a wait begin without timing it).
	 */
	u64 waiting;
};

#define VQF_VSHM_MAX_OUT	1024	/* outstanding before one must be acked */
#define VQF_VSHM_ACK_SIZE	20	/* VQF_VHOST_HDR_SIZE + u64 status */

struct vqf_vshm {
	pthread_mutex_t lock;	/* the channel: a request and its acks */
	int fd;			/* -1: none */
	bool broken;
	bool hup;		/* vqf_vshm_poll() saw EOF: watch no more */
	/* The outstanding requests' codes, oldest at out_head. */
	u8 out[VQF_VSHM_MAX_OUT];
	unsigned int out_head, out_n;
	u8 ack[VQF_VSHM_ACK_SIZE];	/* the ack being read... */
	unsigned int ack_len;		/* ...and its bytes so far */
	int broken_fd;		/* eventfd: readable once the channel broke */
	/* eventfd (EFD_SEMAPHORE): counts the cancels raised, so it is
	 * readable while waits are cancelled
	 */
	int cancel_fd;
	unsigned int timeout_ms;	/* VQF_VHOST_SHMEM_TIMEOUT_MS */
	pthread_mutex_t stlock;	/* st: never waits on the channel */
	struct vqf_vshm_stats st;
};

/* Returns 0 or -ENOMEM. */
int vqf_vshm_init(struct vqf_vshm *s);
void vqf_vshm_fini(struct vqf_vshm *s);

/*
 * The channel from SET_BACKEND_REQ_FD: @fd (consumed, also on error)
 * replaces any previous one (whose waits are cancelled first).  Returns
 * 0, -ENOTSOCK (not a socket), -EPROTOTYPE (not SOCK_STREAM) or
 * -ENOTCONN (listening, or not connected), each counted.
 */
int vqf_vshm_set_fd(struct vqf_vshm *s, int fd);

/*
 * Closes the channel (the connection ends): outstanding requests are
 * dropped.  No request may be in progress (the device is stopped).
 */
void vqf_vshm_close(struct vqf_vshm *s);

/* Whether a channel is there and not broken. */
bool vqf_vshm_ready(struct vqf_vshm *s);

/*
 * With @on, ends every wait for an ack now (-ECANCELED) and refuses
 * waiting requests until as many calls with !@on; see above.  Never
 * blocks: for the device stop, before it joins the threads that may be
 * waiting.
 */
void vqf_vshm_cancel(struct vqf_vshm *s, bool on);

/*
 * For the thread that serves the connection (the only one that calls
 * vqf_vshm_set_fd() and vqf_vshm_close()): the channel's descriptor to
 * watch for POLLIN while idle, or -1.  When it is readable,
 * vqf_vshm_poll() reads the acks that came in full and breaks the
 * channel on bytes nobody owes; at EOF it only stops the watch (the
 * next request breaks it: a front-end that exits closes its channel and
 * the connection together, and the connection's end is the one that
 * tells).  It never blocks, and returns false when a request held the
 * channel (that request reads it itself: look again a little later
 * rather than at once).
 */
int vqf_vshm_watch_fd(struct vqf_vshm *s);
bool vqf_vshm_poll(struct vqf_vshm *s);

/*
 * SHMEM_MAP of @fd's [@fd_off, +@len) at [@shm_off, +@len) of region
 * @shmid, writable or not; @fd is not closed.  SHMEM_UNMAP of that span.
 * With @wait, returns once the front-end acked: 0, -EREMOTEIO when it
 * refused; without, 0 once sent.  Both: -ENOTCONN without a working
 * channel; -ECANCELED when a stop ended the wait (or came before it);
 * -EPIPE, -ETIMEDOUT, -EPROTO, -EBADMSG or -EBADE when the channel broke
 * now (see above).
 */
int vqf_vshm_map(struct vqf_vshm *s, u8 shmid, int fd, u64 fd_off,
		 u64 shm_off, u64 len, bool writable, bool wait);
int vqf_vshm_unmap(struct vqf_vshm *s, u8 shmid, u64 shm_off, u64 len,
		   bool wait);

void vqf_vshm_get_stats(struct vqf_vshm *s, struct vqf_vshm_stats *out);

#endif /* VQF_VHOST_SHMEM_H */
