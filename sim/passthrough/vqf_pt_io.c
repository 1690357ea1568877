// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_pt_io.c - file data I/O: pread/pwrite, or io_uring for large ones.
 *
 * A single small pread is one syscall either way, so io_uring only pays
 * when it batches: a large READ/WRITE is cut into io_chunk pieces that are
 * submitted together and reaped with one io_uring_submit_and_wait() call,
 * letting the host block layer work on all of them at once.  Each worker
 * thread has its own ring (no locking, no cross-thread completion), made on
 * first use and torn down when the thread exits.  Where io_uring is not
 * available (old kernel, seccomp, kernel.io_uring_disabled) everything
 * goes through pread/pwrite; VQF_PT_IO=pread forces that for tests.
 */
#define _GNU_SOURCE
#include "vqf_pt_int.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#define RING_ENTRIES 64

static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static __thread struct io_uring tls_ring;
static __thread int tls_ring_state;	/* 0 untried, 1 ok, -1 failed */

static void ring_destroy(void *p)
{
	io_uring_queue_exit(p);
}

static void ring_key_init(void)
{
	pthread_key_create(&ring_key, ring_destroy);
}

static struct io_uring *thread_ring(void)
{
	if (tls_ring_state == 0) {
		pthread_once(&ring_once, ring_key_init);
		if (io_uring_queue_init(RING_ENTRIES, &tls_ring, 0) == 0) {
			tls_ring_state = 1;
			pthread_setspecific(ring_key, &tls_ring);
		} else {
			tls_ring_state = -1;
		}
	}
	return tls_ring_state == 1 ? &tls_ring : NULL;
}

bool pt_io_uring_works(void)
{
	struct io_uring r;

	if (io_uring_queue_init(2, &r, 0))
		return false;
	io_uring_queue_exit(&r);
	return true;
}

static ssize_t sync_io(int fd, void *buf, size_t len, off_t off, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (char *)buf + done, len - done,
					off + done) :
				 pread(fd, (char *)buf + done, len - done,
				       off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/*
 * Submits every chunk at once and reaps them all.  The result is the
 * length of the contiguous prefix that completed in full, as a short
 * pread would report; the first error counts only if nothing before it
 * was transferred.
 */
static ssize_t uring_io(struct io_uring *ring, int fd, void *buf, size_t len,
			off_t off, size_t chunk, bool wr)
{
	size_t nchunks = (len + chunk - 1) / chunk, i, got = 0;
	ssize_t res[RING_ENTRIES];
	ssize_t total = 0;
	int first_err = 0;

	if (nchunks > RING_ENTRIES)
		return -E2BIG;
	for (i = 0; i < nchunks; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		size_t n = i + 1 < nchunks ? chunk : len - i * chunk;

		if (!sqe)
			return -EBUSY;	/* cannot happen: ring was empty */
		if (wr)
			io_uring_prep_write(sqe, fd, (char *)buf + i * chunk,
					    n, off + i * chunk);
		else
			io_uring_prep_read(sqe, fd, (char *)buf + i * chunk,
					   n, off + i * chunk);
		sqe->user_data = i;
		res[i] = 0;
	}
	while (got < nchunks) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait(ring, nchunks - got);

		if (ret < 0 && ret != -EINTR)
			return ret;
		while (io_uring_peek_cqe(ring, &cqe) == 0) {
			size_t c = cqe->user_data;

			res[c] = cqe->res;
			/* The kernel wrote it: memcheck cannot see that. */
			if (!wr && cqe->res > 0)
				VALGRIND_MAKE_MEM_DEFINED(
					(char *)buf + c * chunk, cqe->res);
			io_uring_cqe_seen(ring, cqe);
			got++;
		}
	}
	for (i = 0; i < nchunks; i++) {
		size_t want = i + 1 < nchunks ? chunk : len - i * chunk;

		if (res[i] < 0) {
			first_err = (int)res[i];
			break;
		}
		total += res[i];
		if ((size_t)res[i] < want)
			break;
	}
	return total ? total : first_err;
}

static ssize_t do_io(struct vqf_pt *pt, int fd, void *buf, size_t len,
		     off_t off, bool wr)
{
	struct io_uring *ring;

	if (pt->uring && len >= pt->uring_min &&
	    len <= pt->io_chunk * RING_ENTRIES) {
		ring = thread_ring();
		if (ring) {
			ssize_t n = uring_io(ring, fd, buf, len, off,
					     pt->io_chunk, wr);

			PT_STAT(pt, uring_ios);
			/* Finish a short transfer the plain way. */
			if (n >= 0 && (size_t)n < len) {
				ssize_t m = sync_io(fd, (char *)buf + n,
						    len - n, off + n, wr);

				if (m > 0)
					n += m;
			}
			return n;
		}
	}
	PT_STAT(pt, sync_ios);
	return sync_io(fd, buf, len, off, wr);
}

ssize_t pt_io_read(struct vqf_pt *pt, int fd, void *buf, size_t len,
		   off_t off)
{
	return do_io(pt, fd, buf, len, off, false);
}

ssize_t pt_io_write(struct vqf_pt *pt, int fd, const void *buf, size_t len,
		    off_t off)
{
	return do_io(pt, fd, (void *)buf, len, off, true);
}
