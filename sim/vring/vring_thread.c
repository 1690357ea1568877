// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A device half in its own thread, woken by an eventfd kick.
 */
#include <pthread.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "vqf_vring_thread.h"

struct vqf_vring_thread {
	struct vqf_vring_thread_cfg cfg;
	struct vqf_seg *seg;
	int stop_fd;
	int err;
	pthread_t tid;
};

int vqf_eventfd_signal(int fd)
{
	u64 one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

s64 vqf_eventfd_wait(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	u64 v;
	int r;

	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (!r)
		return 0;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return errno == EAGAIN ? 0 : -errno;
	return (s64)v;
}

s64 vqf_eventfd_wait_stop(int fd, int stop_fd)
{
	struct pollfd p[2] = {
		{ .fd = stop_fd, .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	u64 v;

	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return -1;
	if (p[0].revents)
		return -1;
	if ((p[1].revents & POLLIN) && read(fd, &v, sizeof(v)) == sizeof(v))
		return (s64)v;
	return 0;
}

/* Sleep until a kick or stop.  Return: false when asked to stop. */
static bool thread_sleep(struct vqf_vring_thread *t, bool broken)
{
	return vqf_eventfd_wait_stop(broken ? -1 : t->cfg.kick_fd,
				     t->stop_fd) >= 0;
}

static void *thread_main(void *arg)
{
	struct vqf_vring_thread *t = arg;
	struct vqf_vring_dev *dev = t->cfg.dev;
	struct vqf_chain c = { .seg = t->seg, .cap = t->cfg.max_segs };
	int r;

	for (;;) {
		vqf_vring_dev_disable_notify(dev);
		while ((r = vqf_vring_dev_pop(dev, &c)) != 0) {
			u32 len = 0;

			if (r < 0 && r != -ENODATA && r != -ENOBUFS)
				goto broken;
			if (r > 0)
				len = t->cfg.serve(t->cfg.priv, &c);
			r = vqf_vring_dev_push(dev, c.head, len);
			if (r)
				goto broken;
			if (vqf_vring_dev_need_notify(dev))
				vqf_eventfd_signal(t->cfg.call_fd);
		}
		if (!vqf_vring_dev_enable_notify(dev))
			continue;
		if (!thread_sleep(t, false))
			return NULL;
	}
broken:
	t->err = r;
	while (thread_sleep(t, true))
		;
	return NULL;
}

int vqf_vring_thread_start(const struct vqf_vring_thread_cfg *cfg,
			   struct vqf_vring_thread **out)
{
	struct vqf_vring_thread *t;
	int r;

	if (!cfg->dev || !cfg->serve || cfg->kick_fd < 0 || cfg->call_fd < 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	if (!t->cfg.max_segs)
		t->cfg.max_segs = 1024;
	t->seg = calloc(t->cfg.max_segs, sizeof(*t->seg));
	t->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (!t->seg || t->stop_fd < 0) {
		r = t->seg ? -errno : -ENOMEM;
		goto fail;
	}
	r = -pthread_create(&t->tid, NULL, thread_main, t);
	if (r)
		goto fail;
	*out = t;
	return 0;
fail:
	if (t->stop_fd >= 0)
		close(t->stop_fd);
	free(t->seg);
	free(t);
	return r;
}

int vqf_vring_thread_stop(struct vqf_vring_thread *t)
{
	int err;

	vqf_eventfd_signal(t->stop_fd);
	pthread_join(t->tid, NULL);
	err = t->err;
	close(t->stop_fd);
	free(t->seg);
	free(t);
	return err;
}
