// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_ring - the vqfuse split virtqueue under the kernel's
 * tools/virtio/ringtest workload, so that its figures compare one to one
 * with ringtest's virtio_ring_0_9 built from the same tree.
 *
 * Same threads, loops and options as ringtest's main.c: a guest thread
 * adds one-descriptor buffers and reaps used ones, a host thread pops and
 * returns them; by default both poll (no notifications), ring size 256,
 * batch 1, unlimited outstanding, 10^7 buffers.  --sleep switches to
 * eventfd kicks and interrupts with event-index suppression, each
 * notification costing ringtest's simulated vmexit/vmentry.
 *
 * Unlike ringtest, everything goes through the full API: the device
 * translates and validates every descriptor through the guest memory map,
 * the driver validates every used entry.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "vqf_vring_drv.h"
#include "vqf_vring_dev.h"

#define RING_GPA	0x100000ULL
#define BUF_GPA		0x40000000ULL

static long runcycles = 10000000;
static long max_outstanding = INT_MAX;
static long batch = 1;
static unsigned int ring_size = 256;
static bool do_sleep, do_relax, do_exit = true;
static int kickfd, callfd;

static struct vqf_vring_drv *drv;
static struct vqf_vring_dev *dev;

static inline void busy_wait(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (do_relax)
		__builtin_ia32_pause();
	else
#endif
		__asm__ __volatile__("" ::: "memory");
}

/* ringtest's simulated exit cost around each notification */
static inline void wait_cycles(unsigned long long cycles)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned long long t = __rdtsc();

	while (__rdtsc() - t < cycles)
		;
#endif
}

static void notify(int fd)
{
	u64 v = 1;

	if (do_exit)
		wait_cycles(500);
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		abort();
	if (do_exit)
		wait_cycles(500);
}

static void wait_for_notify(int fd)
{
	u64 v;

	if (do_exit)
		wait_cycles(500);
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		abort();
	if (do_exit)
		wait_cycles(500);
}

static void set_affinity(const char *arg)
{
	cpu_set_t set;

	if (!arg)
		return;
	CPU_ZERO(&set);
	CPU_SET(atoi(arg), &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		perror("affinity");
}

static void run_guest(void)
{
	static const struct vqf_vring_gseg seg = { BUF_GPA, 16 };
	long started = 0, completed = 0, tokick = batch;
	void *cookie;
	u32 len;
	int r;

	if (!do_sleep)
		vqf_vring_drv_disable_cb(drv);	/* polling: no interrupts */
	for (;;) {
		if (do_sleep)
			vqf_vring_drv_disable_cb(drv);
		do {
			if (started < runcycles &&
			    started - completed < max_outstanding) {
				r = vqf_vring_drv_add(drv, &seg, 1, NULL, 0,
						      (void *)&seg);
				if (__builtin_expect(r == 0, 1)) {
					++started;
					if (!--tokick) {
						tokick = batch;
						if (do_sleep &&
						    vqf_vring_drv_kick_prepare(drv))
							notify(kickfd);
					}
				}
			} else {
				r = -1;
			}
			if (vqf_vring_drv_get_buf(drv, &cookie, &len) > 0) {
				if (++completed == runcycles)
					return;
				r = 0;
			}
		} while (r == 0);
		if (vqf_vring_drv_is_broken(drv))
			abort();
		if (do_sleep) {
			if (!vqf_vring_drv_more_used(drv) &&
			    vqf_vring_drv_enable_cb(drv))
				wait_for_notify(callfd);
		} else {
			while (!vqf_vring_drv_more_used(drv))
				busy_wait();
		}
	}
}

static void run_host(void)
{
	struct vqf_seg segs[4];
	struct vqf_chain c = { .seg = segs, .cap = 4 };
	long completed = 0;
	int r;

	if (!do_sleep)
		vqf_vring_dev_disable_notify(dev);	/* polling: no kicks */
	for (;;) {
		if (do_sleep) {
			if (!vqf_vring_dev_avail_pending(dev) &&
			    vqf_vring_dev_enable_notify(dev))
				wait_for_notify(kickfd);
			vqf_vring_dev_disable_notify(dev);
		} else {
			while (!vqf_vring_dev_avail_pending(dev))
				busy_wait();
		}
		while ((r = vqf_vring_dev_pop(dev, &c)) > 0) {
			if (vqf_vring_dev_push(dev, c.head, 0))
				abort();
			if (do_sleep && vqf_vring_dev_need_notify(dev))
				notify(callfd);
			if (++completed == runcycles)
				return;
		}
		if (r < 0)
			abort();
	}
}

static void *start_guest(void *arg)
{
	set_affinity(arg);
	run_guest();
	return NULL;
}

static void *start_host(void *arg)
{
	set_affinity(arg);
	run_host();
	return NULL;
}

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "host-affinity", required_argument, NULL, 'H' },
	{ "guest-affinity", required_argument, NULL, 'G' },
	{ "ring-size", required_argument, NULL, 'R' },
	{ "run-cycles", required_argument, NULL, 'C' },
	{ "outstanding", required_argument, NULL, 'o' },
	{ "batch", required_argument, NULL, 'b' },
	{ "sleep", no_argument, NULL, 's' },
	{ "relax", no_argument, NULL, 'x' },
	{ "exit", no_argument, NULL, 'e' },
	{ 0 }
};

static void usage(void)
{
	fprintf(stderr, "Usage: bench_ring [--host-affinity H] "
		"[--guest-affinity G] [--ring-size R (256)] "
		"[--run-cycles C (10000000)] [--batch b] [--outstanding o] "
		"[--sleep] [--relax] [--exit]\n");
}

int main(int argc, char **argv)
{
	u64 features = 1ULL << VIRTIO_RING_F_EVENT_IDX;
	struct vqf_vring_drv_cfg dc = { 0 };
	struct vqf_vring_dev_cfg vc = { 0 };
	/* each thread's counters on its own cache lines */
	static struct vqf_vring_drv_stats ds __attribute__((__aligned__(64)));
	static struct vqf_vring_dev_stats vs __attribute__((__aligned__(64)));
	char *host_arg = NULL, *guest_arg = NULL;
	static u8 bufmem[4096] __attribute__((__aligned__(4096)));
	struct vqf_vring_addr addr;
	struct vqf_gmem mem;
	struct timespec t0, t1;
	pthread_t host, guest;
	u64 ring_bytes;
	void *ring;
	double secs;
	int o;

	while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (o) {
		case 'H':
			host_arg = optarg;
			break;
		case 'G':
			guest_arg = optarg;
			break;
		case 'R':
			ring_size = strtoul(optarg, NULL, 0);
			break;
		case 'C':
			runcycles = strtol(optarg, NULL, 0);
			break;
		case 'o':
			max_outstanding = strtol(optarg, NULL, 0);
			break;
		case 'b':
			batch = strtol(optarg, NULL, 0);
			break;
		case 's':
			do_sleep = true;
			break;
		case 'x':
			do_relax = true;
			break;
		case 'e':
			do_exit = true;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (runcycles <= 0 || batch <= 0 || max_outstanding <= 0) {
		usage();
		return 2;
	}
	if (batch > max_outstanding)
		batch = max_outstanding;

	ring_bytes = vqf_vring_layout(ring_size, RING_GPA, 4096, &addr);
	if (!ring_bytes) {
		usage();
		return 2;
	}
	ring_bytes = VQF_ALIGN(ring_bytes, 4096);
	ring = aligned_alloc(4096, ring_bytes);
	if (!ring)
		return 3;
	vqf_gmem_init(&mem);
	if (vqf_gmem_add(&mem, RING_GPA, ring_bytes, ring) ||
	    vqf_gmem_add(&mem, BUF_GPA, sizeof(bufmem), bufmem))
		return 3;
	memcpy(bufmem, "Hello, world!", 14);

	dc.num = vc.num = ring_size;
	dc.features = vc.features = features;
	dc.addr = vc.addr = addr;
	dc.mem = vc.mem = &mem;
	dc.stats = &ds;
	vc.stats = &vs;
	if (vqf_vring_drv_create(&dc, &drv) || vqf_vring_dev_create(&vc, &dev))
		return 3;
	kickfd = eventfd(0, 0);
	callfd = eventfd(0, 0);
	if (kickfd < 0 || callfd < 0)
		return 3;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&host, NULL, start_host, host_arg) ||
	    pthread_create(&guest, NULL, start_guest, guest_arg))
		return 3;
	pthread_join(guest, NULL);
	pthread_join(host, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;

	printf("vqfuse ring: %ld buffers in %.3f s: %.0f buffers/s, "
	       "%.1f ns/buffer (ring %u, batch %ld, %s)\n",
	       runcycles, secs, runcycles / secs, secs * 1e9 / runcycles,
	       ring_size, batch, do_sleep ? "sleep" : "poll");
	printf("  kicks %llu sent %llu suppressed; interrupts %llu sent %llu "
	       "suppressed; %llu descriptors, %llu chains\n",
	       (unsigned long long)ds.kicks_sent,
	       (unsigned long long)ds.kicks_suppressed,
	       (unsigned long long)vs.interrupts_sent,
	       (unsigned long long)vs.interrupts_suppressed,
	       (unsigned long long)vs.descs, (unsigned long long)vs.chains);
	vqf_vring_drv_destroy(drv);
	vqf_vring_dev_destroy(dev);
	free(ring);
	return 0;
}
