/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vring_thread.h - run a device half in its own thread.
 *
 * The thread sleeps on an eventfd "kick" while the driver has nothing for
 * it, pops every available chain, hands each to a serve callback, pushes
 * the result and writes an eventfd "interrupt" when the driver asked for
 * one.  Event suppression runs both ways: the thread asks for kicks only
 * when it is about to sleep (vqf_vring_dev_enable_notify), and interrupts
 * only when vqf_vring_dev_need_notify says so.
 *
 * This is the synchronous pattern (serve returns before the chain is
 * pushed).  A device that completes chains later, from worker threads,
 * uses the vqf_vring_dev_* calls directly: pop in one thread, push +
 * need_notify under a lock in the workers (see vqf_vring_dev.h).
 */
#ifndef VQF_VRING_THREAD_H
#define VQF_VRING_THREAD_H

#include "vqf_vring_dev.h"

/*
 * Serve one chain; return the bytes written into its writable segments.
 * Runs in the device thread.  @c is valid only during the call.
 */
typedef u32 (*vqf_vring_serve_fn)(void *priv, const struct vqf_chain *c);

struct vqf_vring_thread_cfg {
	struct vqf_vring_dev *dev;	/* used only by the thread until stop */
	int kick_fd;		/* eventfd the driver writes to kick */
	int call_fd;		/* eventfd the thread writes to interrupt */
	vqf_vring_serve_fn serve;
	void *priv;
	unsigned int max_segs;	/* segments per chain (0: 1024) */
};

struct vqf_vring_thread;

/**
 * vqf_vring_thread_start() - start serving.
 *
 * Return: 0; -EINVAL for a missing dev/serve or negative fds; -ENOMEM;
 * another negative errno if the thread or its stop eventfd cannot be made.
 */
int vqf_vring_thread_start(const struct vqf_vring_thread_cfg *cfg,
			   struct vqf_vring_thread **out);

/**
 * vqf_vring_thread_stop() - stop the thread, wait for it and free it.
 *
 * Return: 0 if it was serving normally, or the errno with which the queue
 * broke (the thread stops serving a broken queue and waits for stop).
 */
int vqf_vring_thread_stop(struct vqf_vring_thread *t);

/* Signal an eventfd (kick or interrupt).  Return: 0 or -errno. */
int vqf_eventfd_signal(int fd);

/**
 * vqf_eventfd_wait() - wait for an eventfd and consume its count.
 * @fd:         an eventfd
 * @timeout_ms: as poll(2): -1 forever, 0 don't wait
 *
 * Return: the count read (> 0), 0 on timeout, or -errno.
 */
s64 vqf_eventfd_wait(int fd, int timeout_ms);

/**
 * vqf_eventfd_wait_stop() - sleep until @fd or @stop_fd is signalled.
 * @fd:      an eventfd (kick or interrupt), or -1 to wait for @stop_fd only
 * @stop_fd: an eventfd that asks the sleeper to stop; left signalled, so
 *           every sleeper on it sees it
 *
 * Consumes @fd's count.  Return: the count read from @fd (> 0), 0 when
 * woken without one, or -1 when @stop_fd is signalled (or poll failed).
 */
s64 vqf_eventfd_wait_stop(int fd, int stop_fd);

#endif /* VQF_VRING_THREAD_H */
