/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vhost_fe.h - the fake vhost-user front-end of test_vhost.c and
 * test_vhost_shmem.c: a socket pair to the back-end, a memfd as guest
 * RAM, sim/vring's driver half on the rings.
 *
 * A test defines NREQ, NQ (1 + NREQ), RING_NUM, RAM_SIZE, RAM_GPA,
 * RING_AREA and BUF_START, includes this, defines its struct fe starting with
 * VHOST_FE_FIELDS (and its own members after them), then includes
 * vhost_fe_wire.h for the functions, which use only these members.
 */
#ifndef VHOST_FE_H
#define VHOST_FE_H

#define VHOST_FE_FIELDS							\
	char dir[64];							\
	struct vqf_pt *pt;						\
	struct vqf_backend *be;						\
	struct vqf_vhost *vh;						\
	int sv[2];		/* [0] front-end, [1] back-end */	\
	pthread_t thr;							\
	int serve_ret;							\
	int memfd;							\
	u8 *ram;		/* the front-end's mapping */		\
	struct vqf_gmem gm;	/* the driver's view */			\
	struct vqf_vring_drv *vq[NQ];					\
	struct vqf_vring_addr addr[NQ];					\
	int kick[NQ], call[NQ];						\
	u64 bump;		/* next free guest address for buffers */ \
	u64 unique;							\
	bool hup_fails;		/* fuse_call() fails on a hang-up */	\
	bool no_acks;		/* REPLY_ACK not negotiated: set_*()	\
				 * send without NEED_REPLY */		\
	int fds_before;

#endif
