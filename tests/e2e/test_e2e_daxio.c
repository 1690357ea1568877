// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_daxio.c - the guest client's DAX path: file data read and
 * written through the device's cache window (lib/vqf_dax allocator,
 * SETUPMAPPING/REMOVEMAPPING), with no READ or WRITE request, checked
 * against the host file byte for byte; growing writes are WRITE
 * requests; a window smaller than the file forces reclaim; truncation
 * removes mappings.
 */
#include "e2e.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#define MIB	(1024 * 1024)

static struct e2e *machine(u64 window)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	cfg.dax_window = window;
	cfg.dax_guest = true;
	cfg.dax_range = 2 * MIB;
	cfg.ram = 64 * MIB;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	return e;
}

/*
 * Write and read back through the window: writes that grow the file are
 * WRITE requests (fuse_dax_write_iter), every other byte moves with no
 * data request at all.
 */
static void test_write_read(void **state)
{
	struct e2e *e = machine(8 * MIB);
	size_t len = 5 * MIB + 123;
	char *buf = malloc(len), *back = malloc(len);
	struct vqf_dax_stats ds;
	struct vqf_gcli_stats cs;
	u64 writes;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	e2e_fill(buf, len, 11);
	fd = vqf_gcli_open(e->c, "d", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);	/* write-only: opened read-write on the wire */
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, buf, len, 0), len);
	writes = e2e_sent(e, FUSE_WRITE);
	assert_true(writes > 0);
	assert_int_equal(e2e_sent(e, FUSE_SETATTR), 0);
	/* Within the size: through the window, no WRITE. */
	e2e_fill(buf, len, 12);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, buf, len, 0), len);
	assert_int_equal(e2e_sent(e, FUSE_WRITE), writes);
	/* MAP_SHARED: the host file has the bytes before any close. */
	assert_true(e2e_host_equal(e, "d", buf, len));
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	fd = vqf_gcli_open(e->c, "d", O_RDONLY, 0);
	assert_true(fd >= 0);
	memset(back, 0, len);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, len + 99, 0), len);
	assert_memory_equal(back, buf, len);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, 10, len), 0);
	/* The host changes the file: the shared mapping shows it at once. */
	{
		int hfd = open(e2e_host(e, "d"), O_WRONLY);

		assert_true(hfd >= 0);
		assert_int_equal(pwrite(hfd, "HOST", 4, 100), 4);
		close(hfd);
	}
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, 4, 100), 4);
	assert_memory_equal(back, "HOST", 4);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(e2e_sent(e, FUSE_WRITE), writes);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	assert_true(e2e_sent(e, FUSE_SETUPMAPPING) >= 3);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_true(ds.setups >= 3);
	assert_int_equal(ds.setup_errors, 0);
	cs = e2e_stats(e).cli;
	assert_true(cs.dax_extends >= 1);
	assert_true(cs.dax_reads >= 2);
	free(buf);
	free(back);
	assert_int_equal(e2e_free(e), 0);
}

/* A file five times the window: ranges are reclaimed and reused. */
static void test_reclaim(void **state)
{
	struct e2e *e = machine(4 * MIB);	/* two 2 MiB ranges */
	size_t len = 10 * MIB, chunk = 256 * 1024, off;
	char *buf = malloc(len), *back = malloc(chunk);
	struct vqf_dax_stats ds;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	e2e_fill(buf, len, 5);
	assert_int_equal(e2e_host_write(e2e_host(e, "big"), buf, len, 0644),
			 0);
	fd = vqf_gcli_open(e->c, "big", O_RDWR, 0);
	assert_true(fd >= 0);
	for (off = 0; off < len; off += chunk) {
		assert_int_equal(vqf_gcli_pread(e->c, fd, back, chunk,
						(off_t)off), chunk);
		if (memcmp(back, buf + off, chunk))
			fail_msg("bytes differ at %zu", off);
	}
	/* And writes across it, seen by the host. */
	memset(back, 'W', chunk);
	for (off = 0; off < len; off += 3 * MIB) {
		assert_int_equal(vqf_gcli_pwrite(e->c, fd, back, 100,
						 (off_t)off), 100);
		memset(buf + off, 'W', 100);
	}
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "big", buf, len));
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_true(ds.reclaimed_bg + ds.reclaimed_direct > 0);
	assert_true(ds.setups >= 5);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	assert_int_equal(e2e_sent(e, FUSE_WRITE), 0);
	free(buf);
	free(back);
	assert_int_equal(e2e_free(e), 0);
}

/* Truncation removes the ranges past the new size. */
static void test_truncate(void **state)
{
	struct e2e *e = machine(8 * MIB);
	size_t len = 6 * MIB;
	char *buf = malloc(len), tail[8];
	struct vqf_dax_stats ds;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(buf);
	e2e_fill(buf, len, 9);
	fd = vqf_gcli_open(e->c, "t", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, buf, len, 0), len);
	/* WRITE grew it; reading it back maps its three ranges. */
	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, len, 0), len);
	assert_int_equal(vqf_gcli_ftruncate(e->c, fd, MIB), 0);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_true(ds.removed >= 2);
	assert_true(e2e_sent(e, FUSE_REMOVEMAPPING) >= 1);
	assert_int_equal(stat(e2e_host(e, "t"), &st), 0);
	assert_int_equal(st.st_size, MIB);
	assert_int_equal(vqf_gcli_pread(e->c, fd, tail, sizeof(tail),
					MIB + 5), 0);
	/* Grow again: the extension reads back as zeros. */
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "Z", 1, 3 * MIB), 1);
	assert_int_equal(vqf_gcli_pread(e->c, fd, tail, 4, 2 * MIB), 4);
	assert_memory_equal(tail, "\0\0\0\0", 4);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	free(buf);
	assert_int_equal(e2e_free(e), 0);
}

struct worker {
	struct e2e *e;
	int fd;
	unsigned int id, iters;
	size_t region;		/* bytes of the file this thread owns */
	char *model;		/* what its region must hold */
	int bad;
	pthread_t t;
};

/* Random reads and writes in its own region, each read checked. */
static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int seed = 0x5eed + w->id, i;
	size_t base = w->id * w->region;
	char buf[8192];

	for (i = 0; i < w->iters && !w->bad; i++) {
		size_t len = 1 + (size_t)rand_r(&seed) % sizeof(buf);
		size_t off = (size_t)rand_r(&seed) % (w->region - len);

		if (rand_r(&seed) % 3 == 0) {
			memset(buf, 'a' + (int)((w->id + i) % 26), len);
			if (vqf_gcli_pwrite(w->e->c, w->fd, buf, len,
					    (off_t)(base + off)) != (ssize_t)len)
				w->bad = 1;
			memcpy(w->model + off, buf, len);
		} else {
			if (vqf_gcli_pread(w->e->c, w->fd, buf, len,
					   (off_t)(base + off)) != (ssize_t)len ||
			    memcmp(buf, w->model + off, len))
				w->bad = 2;
		}
	}
	return NULL;
}

/*
 * Four threads over a file four times the window (two ranges): ranges are
 * reclaimed while others copy through them; no byte read differs from the
 * thread's model, none is lost on the host.
 */
static void test_threads(void **state)
{
	struct e2e *e = machine(4 * MIB);
	unsigned int nthr = 4, i;
	size_t region = 4 * MIB;
	struct worker w[4];
	struct vqf_dax_stats ds;
	char *all = calloc(1, nthr * region);
	int fd;

	(void)state;
	assert_non_null(all);
	assert_int_equal(e2e_host_write(e2e_host(e, "mt"), all, nthr * region,
					0644), 0);
	fd = vqf_gcli_open(e->c, "mt", O_RDWR, 0);
	assert_true(fd >= 0);
	for (i = 0; i < nthr; i++) {
		w[i] = (struct worker){ .e = e, .fd = fd, .id = i,
					.iters = e2e_slow() ? 100 : 2000,
					.region = region,
					.model = all + i * region };
		assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]),
				 0);
	}
	for (i = 0; i < nthr; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].bad)
			fail_msg("thread %u: %s", i, w[i].bad == 1 ?
				 "short write" : "read differs");
	}
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "mt", all, nthr * region));
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_true(ds.reclaimed_bg + ds.reclaimed_direct + ds.waits > 0);
	assert_int_equal(ds.evict_in_use, 0);
	assert_int_equal(e2e_sent(e, FUSE_READ) + e2e_sent(e, FUSE_WRITE), 0);
	free(all);
	assert_int_equal(e2e_free(e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_reclaim),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
