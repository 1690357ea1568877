// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_daxmm.c - the guest client's DAX mmap (fault semantics over
 * the cache window), reclaim under pressure with concurrent readers,
 * writers and mmap users, and eviction of DAX inodes from the client's
 * inode cache with batched REMOVEMAPPING.
 */
#include "e2e.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#define KIB	1024
#define MIB	(1024 * 1024)

/* @stale: vqf_gcli_cfg.dax_stale (0: the default deferral, -1: none). */
static struct e2e *machine_stale(u64 window, u64 range, unsigned int icache,
				 int stale)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	cfg.dax_window = window;
	cfg.dax_guest = true;
	cfg.dax_range = range;
	cfg.ram = 64 * MIB;
	cfg.cli.icache_max = icache;
	cfg.cli.dax_stale = stale;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	return e;
}

static struct e2e *machine(u64 window, u64 range, unsigned int icache)
{
	return machine_stale(window, range, icache, 0);
}

static struct vqf_gcli_mm_stats mm(struct e2e *e)
{
	struct vqf_gcli_mm_stats s;

	vqf_gcli_get_mm_stats(e->c, &s);
	return s;
}

/* Copies @len bytes at @off of @m to (@store: from) @buf, a get per extent. */
static int mcopy(struct e2e *e, struct vqf_gcli_map *m, size_t off,
		 void *buf, size_t len, bool store)
{
	struct vqf_gcli_mref r;
	size_t done = 0;
	int ret;

	while (done < len) {
		size_t n;

		ret = vqf_gcli_mmap_get(e->c, m, off + done, store, &r);
		if (ret)
			return ret;
		n = len - done < r.len ? len - done : r.len;
		if (store)
			memcpy(r.addr, (char *)buf + done, n);
		else
			memcpy((char *)buf + done, r.addr, n);
		vqf_gcli_mmap_put(e->c, m, &r);
		done += n;
	}
	return 0;
}

static int mload(struct e2e *e, struct vqf_gcli_map *m, size_t off,
		 void *out, size_t len)
{
	return mcopy(e, m, off, out, len, false);
}

static int mstore(struct e2e *e, struct vqf_gcli_map *m, size_t off,
		  const void *in, size_t len)
{
	return mcopy(e, m, off, (void *)in, len, true);
}

/*
 * Loads and stores through a mapping: no READ/WRITE, faults only on the
 * first touch of a range, stores seen by the host and by read(), a host
 * write seen through the mapping; msync(MS_SYNC) is one FSYNC; the
 * mapping outlives close() and RELEASE waits for munmap.
 */
static void test_mmap_basic(void **state)
{
	struct e2e *e = machine(8 * MIB, 2 * MIB, 0);
	size_t len = 5 * MIB + 100;
	char *buf = malloc(len), *back = malloc(len);
	struct vqf_gcli_map *m;
	struct vqf_gcli_mref r;
	struct vqf_gcli_mm_stats s;
	u64 rel, fsyncs;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	e2e_fill(buf, len, 3);
	assert_int_equal(e2e_host_write(e2e_host(e, "m"), buf, len, 0644), 0);
	fd = vqf_gcli_open(e->c, "m", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_mmap(e->c, fd, 0, len, PROT_READ |
				       PROT_WRITE, &m), 0);
	assert_int_equal(mload(e, m, 0, back, len), 0);
	assert_memory_equal(back, buf, len);
	s = mm(e);
	assert_int_equal(s.faults, 3);		/* one per 2 MiB range */
	assert_int_equal(mload(e, m, 0, back, len), 0);
	assert_int_equal(mm(e).faults, 3);	/* entries present: no fault */
	/* A store on a read-only entry faults once more (upgrade). */
	assert_int_equal(mstore(e, m, 4096, "mapped", 6), 0);
	memcpy(buf + 4096, "mapped", 6);
	assert_int_equal(mm(e).faults, 4);
	assert_true(e2e_host_equal(e, "m", buf, len));
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, 6, 4096), 6);
	assert_memory_equal(back, "mapped", 6);
	/* write() is seen through the mapping, and the host's writes too. */
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "WRITE", 5, 3 * MIB), 5);
	{
		int hfd = open(e2e_host(e, "m"), O_WRONLY);

		assert_true(hfd >= 0);
		assert_int_equal(pwrite(hfd, "HOST", 4, 5 * MIB), 4);
		close(hfd);
	}
	assert_int_equal(mload(e, m, 3 * MIB, back, 5), 0);
	assert_memory_equal(back, "WRITE", 5);
	assert_int_equal(mload(e, m, 5 * MIB, back, 4), 0);
	assert_memory_equal(back, "HOST", 4);
	/* The last page past EOF is there (zeros), the next one SIGBUS. */
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, len - 1, false, &r), 0);
	assert_int_equal(r.len, 1 + ((4096 - len % 4096) % 4096));
	vqf_gcli_mmap_put(e->c, m, &r);
	fsyncs = e2e_sent(e, FUSE_FSYNC);
	assert_int_equal(vqf_gcli_msync(e->c, m, MS_ASYNC), 0);
	assert_int_equal(e2e_sent(e, FUSE_FSYNC), fsyncs);
	assert_int_equal(vqf_gcli_msync(e->c, m, MS_SYNC), 0);
	assert_int_equal(e2e_sent(e, FUSE_FSYNC), fsyncs + 1);
	assert_int_equal(vqf_gcli_msync(e->c, m, MS_SYNC | MS_ASYNC),
			 -EINVAL);
	/* close() keeps the open file for the mapping. */
	rel = e2e_sent(e, FUSE_RELEASE);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(e2e_sent(e, FUSE_RELEASE), rel);
	assert_int_equal(mstore(e, m, 2 * MIB - 3, "edge", 4), 0);
	memcpy(buf + 2 * MIB - 3, "edge", 4);
	memcpy(buf + 3 * MIB, "WRITE", 5);
	memcpy(buf + 5 * MIB, "HOST", 4);
	assert_true(e2e_host_equal(e, "m", buf, len));
	/* munmap with a get in progress is refused. */
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 0, false, &r), 0);
	assert_int_equal(vqf_gcli_munmap(e->c, m), -EBUSY);
	vqf_gcli_mmap_put(e->c, m, &r);
	assert_int_equal(vqf_gcli_munmap(e->c, m), 0);
	assert_int_equal(e2e_sent(e, FUSE_RELEASE), rel + 1);
	assert_int_equal(e2e_sent(e, FUSE_READ) + e2e_sent(e, FUSE_WRITE), 0);
	s = mm(e);
	assert_int_equal(s.maps, 1);
	assert_int_equal(s.unmaps, 1);
	free(buf);
	free(back);
	assert_int_equal(e2e_free(e), 0);
}

/* mmap(2)'s refusals, and SIGSEGV/SIGBUS as errors. */
static void test_mmap_errors(void **state)
{
	struct e2e *e = machine(4 * MIB, 2 * MIB, 0);
	struct vqf_gcli_map *m;
	struct vqf_gcli_mref r;
	int ro, wo, rw, ap;

	(void)state;
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "0123456789", 10,
					0644), 0);
	assert_int_equal(vqf_gcli_mkdir(e->c, "d", 0755), 0);
	ro = vqf_gcli_open(e->c, "f", O_RDONLY, 0);
	wo = vqf_gcli_open(e->c, "f", O_WRONLY, 0);
	rw = vqf_gcli_open(e->c, "f", O_RDWR, 0);
	ap = vqf_gcli_open(e->c, "f", O_RDWR | O_APPEND, 0);
	assert_true(ro >= 0 && wo >= 0 && rw >= 0 && ap >= 0);
	assert_int_equal(vqf_gcli_mmap(e->c, 999, 0, 10, PROT_READ, &m),
			 -EBADF);
	assert_int_equal(vqf_gcli_mmap(e->c, wo, 0, 10, PROT_READ, &m),
			 -EACCES);
	assert_int_equal(vqf_gcli_mmap(e->c, ro, 0, 10, PROT_WRITE, &m),
			 -EACCES);
	assert_int_equal(vqf_gcli_mmap(e->c, ap, 0, 10, PROT_WRITE, &m),
			 -EACCES);
	assert_int_equal(vqf_gcli_mmap(e->c, rw, 100, 10, PROT_READ, &m),
			 -EINVAL);
	assert_int_equal(vqf_gcli_mmap(e->c, rw, 0, 0, PROT_READ, &m),
			 -EINVAL);
	assert_int_equal(vqf_gcli_mmap(e->c, rw, -4096, 10, PROT_READ, &m),
			 -EINVAL);
	assert_int_equal(vqf_gcli_mmap(e->c, rw, 0, 10, PROT_EXEC, &m),
			 -EINVAL);
	{
		int dfd = vqf_gcli_open(e->c, "d", O_RDONLY | O_DIRECTORY, 0);

		assert_true(dfd >= 0);
		assert_int_equal(vqf_gcli_mmap(e->c, dfd, 0, 10, PROT_READ,
					       &m), -ENODEV);
		assert_int_equal(vqf_gcli_close(e->c, dfd), 0);
	}
	/* Read-only mapping: stores are SIGSEGV, beyond it too. */
	assert_int_equal(vqf_gcli_mmap(e->c, ro, 0, 3 * 4096, PROT_READ, &m),
			 0);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 0, true, &r), -EACCES);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 3 * 4096, false, &r),
			 -EFAULT);
	/* Past the page holding EOF: SIGBUS. */
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 4096, false, &r), -ENXIO);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 5, false, &r), 0);
	assert_int_equal(r.len, 4096 - 5);
	assert_memory_equal(r.addr, "56789\0", 6);
	vqf_gcli_mmap_put(e->c, m, &r);
	/* The file grows: the page is there at the next fault. */
	assert_int_equal(vqf_gcli_pwrite(e->c, rw, "X", 1, 4096 + 10), 1);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 4096, false, &r), 0);
	assert_int_equal(r.len, 4096);
	vqf_gcli_mmap_put(e->c, m, &r);
	assert_int_equal(vqf_gcli_munmap(e->c, m), 0);
	/* PROT_NONE: nothing may be accessed. */
	assert_int_equal(vqf_gcli_mmap(e->c, rw, 0, 10, 0, &m), 0);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 0, false, &r), -EACCES);
	assert_int_equal(vqf_gcli_munmap(e->c, m), 0);
	assert_int_equal(vqf_gcli_close(e->c, ro), 0);
	assert_int_equal(vqf_gcli_close(e->c, wo), 0);
	assert_int_equal(vqf_gcli_close(e->c, rw), 0);
	assert_int_equal(vqf_gcli_close(e->c, ap), 0);
	assert_int_equal(e2e_free(e), 0);
}

/* Without a window there is no mmap (the client has no page cache map). */
static void test_mmap_nodax(void **state)
{
	struct e2e *e = NULL;
	struct vqf_gcli_map *m;
	int fd;

	(void)state;
	assert_int_equal(e2e_new(&e, NULL, VQF_SIM_FS_VQFUSE), 0);
	fd = vqf_gcli_open(e->c, "n", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_mmap(e->c, fd, 0, 10, PROT_READ, &m),
			 -ENODEV);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(e2e_free(e), 0);
}

/*
 * Truncation and reclaim zap entries: the next access faults and sees the
 * file as it is; past the new EOF is SIGBUS.
 */
static void test_mmap_zap(void **state)
{
	/* Two 64 KiB ranges in front of a 1 MiB file. */
	struct e2e *e = machine(128 * KIB, 64 * KIB, 0);
	size_t len = MIB, off;
	char *buf = malloc(len), *back = malloc(len);
	struct vqf_gcli_map *m;
	struct vqf_gcli_mref r;
	struct vqf_dax_stats ds;
	struct vqf_gcli_mm_stats s;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	e2e_fill(buf, len, 8);
	assert_int_equal(e2e_host_write(e2e_host(e, "z"), buf, len, 0644), 0);
	fd = vqf_gcli_open(e->c, "z", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_mmap(e->c, fd, 0, len, PROT_READ |
				       PROT_WRITE, &m), 0);
	for (off = 0; off < len; off += 64 * KIB) {
		memset(buf + off + 7, (int)(off >> 16), 9);
		assert_int_equal(mstore(e, m, off + 7, buf + off + 7, 9), 0);
	}
	assert_int_equal(mload(e, m, 0, back, len), 0);
	assert_memory_equal(back, buf, len);
	s = mm(e);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_true(ds.reclaimed_bg + ds.reclaimed_direct >= 14);
	assert_true(s.zapped >= 14);
	assert_true(s.faults >= 32);
	assert_true(s.fault_waits > 0);	/* no free range: waited, retried */
	assert_true(e2e_host_equal(e, "z", buf, len));
	/* Truncation zaps every entry; past the new EOF is SIGBUS. */
	assert_int_equal(mload(e, m, 0, back, 10), 0);
	assert_int_equal(vqf_gcli_ftruncate(e->c, fd, 4096 + 1), 0);
	assert_true(mm(e).zapped > s.zapped);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 2 * 4096, false, &r),
			 -ENXIO);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 4096, false, &r), 0);
	assert_int_equal(r.len, 4096);
	assert_int_equal(*(char *)r.addr, buf[4096]);
	assert_int_equal(((char *)r.addr)[1], 0);
	vqf_gcli_mmap_put(e->c, m, &r);
	assert_int_equal(vqf_gcli_munmap(e->c, m), 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(e2e_sent(e, FUSE_READ) + e2e_sent(e, FUSE_WRITE), 0);
	free(buf);
	free(back);
	assert_int_equal(e2e_free(e), 0);
}

/*
 * A DAX inode evicted from the client's inode cache once nothing holds it
 * (icache_max 1: other inodes push it out): its 300 ranges go in
 * REMOVEMAPPING batches of 256 + 44, then FORGET; opened again, it maps
 * afresh.  Without deferred teardown (dax_stale -1): the upstream path.
 */
static void test_evict(void **state)
{
	/* 4 KiB ranges: 300 of them from a 1.2 MB file. */
	struct e2e *e = machine_stale(2 * MIB, 4 * KIB, 1, -1);
	size_t len = 300 * 4 * KIB;
	char *buf = malloc(len), *back = malloc(len);
	struct vqf_dax_stats ds;
	u64 removes, forgets;
	unsigned int i;
	int fd;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	e2e_fill(buf, len, 21);
	assert_int_equal(e2e_host_write(e2e_host(e, "ev"), buf, len, 0644),
			 0);
	fd = vqf_gcli_open(e->c, "ev", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, len, 0), len);
	assert_memory_equal(back, buf, len);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_int_equal(ds.setups, 300);
	assert_int_equal(ds.removed, 0);
	removes = e2e_sent(e, FUSE_REMOVEMAPPING);
	forgets = e2e_stats(e).cli.forgets;
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(mm(e).evicted, 0);
	for (i = 0; i < 8 && !mm(e).evicted; i++) {
		char name[16];

		snprintf(name, sizeof(name), "o%u", i);
		fd = vqf_gcli_open(e->c, name, O_CREAT | O_RDWR, 0644);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	}
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_int_equal(ds.removed, 300);
	assert_int_equal(e2e_sent(e, FUSE_REMOVEMAPPING), removes + 2);
	assert_int_equal(mm(e).evicted, 1);
	assert_true(e2e_stats(e).cli.forgets > forgets);
	/* Back again: mapped afresh, same bytes. */
	fd = vqf_gcli_open(e->c, "ev", O_RDONLY, 0);
	assert_true(fd >= 0);
	memset(back, 0, len);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, len, 0), len);
	assert_memory_equal(back, buf, len);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_int_equal(ds.setups, 600);
	assert_int_equal(ds.evict_in_use, 0);
	free(buf);
	free(back);
	assert_int_equal(e2e_free(e), 0);
}

/*
 * Deferred teardown (the default): evicted read-only files leave their
 * ranges mapped on the host, the next files' SETUPMAPPINGs replace them,
 * and when more are evicted than the bound (a quarter of 16 ranges: 4)
 * the oldest go in one REMOVEMAPPING naming the root, which the device's
 * guard accepts although their own nodeids were forgotten.  Every byte
 * read through a replaced mapping is the new file's.
 */
static void test_evict_deferred(void **state)
{
	struct e2e *e = machine(16 * 4 * KIB, 4 * KIB, 1);
	char buf[4 * KIB], back[4 * KIB];
	struct vqf_dax_stats ds;
	struct vqf_sim_stats st;
	u64 removes;
	unsigned int i;
	int fd;

	(void)state;
	for (i = 0; i < 12; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%u", i);
		e2e_fill(buf, sizeof(buf), 40 + i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), buf,
						sizeof(buf), 0644), 0);
	}
	removes = e2e_sent(e, FUSE_REMOVEMAPPING);
	/* each file read, closed, and pushed out by the next (icache 1) */
	for (i = 0; i < 12; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%u", i);
		e2e_fill(buf, sizeof(buf), 40 + i);
		fd = vqf_gcli_open(e->c, name, O_RDONLY, 0);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_pread(e->c, fd, back, sizeof(back),
						0), sizeof(back));
		assert_memory_equal(back, buf, sizeof(buf));
		assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	}
	vqf_gcli_get_dax_stats(e->c, &ds);
	/* one file's range at a time: each replaced the last one's */
	print_message("evicted %llu deferred %llu reused %llu\n",
		      (unsigned long long)mm(e).evicted,
		      (unsigned long long)ds.stale_deferred,
		      (unsigned long long)ds.stale_reused);
	/* d(i) goes at d(i + 1)'s close: d(i + 2) replaces its range */
	assert_int_equal(mm(e).evicted, 11);
	assert_int_equal(ds.stale_deferred, 11);
	assert_int_equal(ds.stale_reused, 10);
	assert_int_equal(e2e_sent(e, FUSE_REMOVEMAPPING), removes);
	st = e2e_stats(e);
	assert_int_equal(st.dev.dax.replaced, ds.stale_reused);

	/* eight files held open, then evicted together: 8 > 4 */
	{
		int fds[8];

		for (i = 0; i < 8; i++) {
			char name[16];

			snprintf(name, sizeof(name), "d%u", i);
			fds[i] = vqf_gcli_open(e->c, name, O_RDONLY, 0);
			assert_true(fds[i] >= 0);
			assert_int_equal(vqf_gcli_pread(e->c, fds[i], back,
							sizeof(back), 0),
					 sizeof(back));
		}
		for (i = 0; i < 8; i++)
			assert_int_equal(vqf_gcli_close(e->c, fds[i]), 0);
	}
	/* push the last one out too */
	fd = vqf_gcli_open(e->c, "d11", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	vqf_gcli_get_dax_stats(e->c, &ds);
	print_message("evicted %llu deferred %llu reused %llu flushed %llu/%llu\n",
		      (unsigned long long)mm(e).evicted,
		      (unsigned long long)ds.stale_deferred,
		      (unsigned long long)ds.stale_reused,
		      (unsigned long long)ds.stale_flushed,
		      (unsigned long long)ds.stale_flushes);
	/* the bound held, by flushes only (read-only files) */
	assert_true(ds.stale_deferred - ds.stale_reused - ds.stale_flushed <=
		    4);
	assert_true(ds.stale_flushes >= 1);
	assert_int_equal(e2e_sent(e, FUSE_REMOVEMAPPING),
			 removes + ds.stale_flushes);
	st = e2e_stats(e);
	/* the flush named the root: nothing refused, by lib or the guard */
	assert_int_equal(st.dev.dax_refused, 0);
	assert_int_equal(st.dev.guard.node_unknown, 0);
	assert_int_equal(st.dev.dax_removes, ds.stale_flushes);
	assert_int_equal(ds.remove_errors, 0);
	assert_int_equal(e2e_free(e), 0);
}

/* ---- threads ---------------------------------------------------------- */

enum role { R_IO, R_MMAP };

struct worker {
	struct e2e *e;
	enum role role;
	int fd;
	struct vqf_gcli_map *m;	/* R_MMAP: the whole file */
	unsigned int id, iters;
	size_t base, region;	/* the file bytes it owns */
	char *model;		/* what they must hold */
	char why[96];
	pthread_t t;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int seed = e2e_seed() + 77 * w->id, i;
	char buf[12 * KIB];

	for (i = 0; i < w->iters && !w->why[0]; i++) {
		size_t len = 1 + (size_t)rand_r(&seed) % sizeof(buf);
		size_t off = (size_t)rand_r(&seed) % (w->region - len);
		size_t at = w->base + off;
		int op = rand_r(&seed) % 4, ret;

		if (op == 0) {
			/* a store: pwrite or through the mapping */
			memset(buf, 'A' + (int)((w->id * 7 + i) % 26), len);
			if (w->role == R_MMAP) {
				ret = mstore(w->e, w->m, at, buf, len);
			} else {
				ssize_t n = vqf_gcli_pwrite(w->e->c, w->fd,
							    buf, len,
							    (off_t)at);

				ret = n == (ssize_t)len ? 0 : -EIO;
			}
			if (ret)
				snprintf(w->why, sizeof(w->why),
					 "store at %zu: %d", at, ret);
			memcpy(w->model + off, buf, len);
			continue;
		}
		/* A load, both ways: mapping and read() must agree. */
		if (w->role == R_MMAP && op != 1) {
			struct vqf_gcli_mref r;
			size_t n;

			/* Hold the entry a while: reclaim must wait. */
			ret = vqf_gcli_mmap_get(w->e->c, w->m, at, false, &r);
			if (ret) {
				snprintf(w->why, sizeof(w->why),
					 "get at %zu: %d", at, ret);
				break;
			}
			n = len < r.len ? len : r.len;
			if (memcmp(r.addr, w->model + off, n / 2))
				snprintf(w->why, sizeof(w->why),
					 "mmap load at %zu differs", at);
			sched_yield();
			if (memcmp((char *)r.addr + n / 2,
				   w->model + off + n / 2, n - n / 2))
				snprintf(w->why, sizeof(w->why),
					 "mmap load at %zu differs (late)",
					 at + n / 2);
			vqf_gcli_mmap_put(w->e->c, w->m, &r);
		} else if (w->role == R_MMAP || op == 1) {
			ssize_t n = vqf_gcli_pread(w->e->c, w->fd, buf, len,
						   (off_t)at);

			if (n != (ssize_t)len || memcmp(buf, w->model + off,
							len))
				snprintf(w->why, sizeof(w->why),
					 "read at %zu: %zd or differs", at,
					 n);
		} else {
			ret = mload(w->e, w->m, at, buf, len);
			if (ret || memcmp(buf, w->model + off, len))
				snprintf(w->why, sizeof(w->why),
					 "io thread mmap load at %zu: %d", at,
					 ret);
		}
	}
	return NULL;
}

/*
 * Two files of 1 MiB in front of a window of four 64 KiB ranges (the data
 * is 8x the window).  Per file, one thread reads and writes with
 * pread/pwrite (and checks through a mapping), one loads and stores
 * through a mapping (holding each entry across a yield, and checks with
 * pread).  Each owns a region; every byte loaded or read must be its last
 * store.  Reclaim (background and direct) zaps entries while others are
 * pinned and must wait for them; at the end the host files hold every
 * last store.
 */
static void test_threads(void **state)
{
	struct e2e *e = machine(256 * KIB, 64 * KIB, 0);
	const unsigned int nfiles = 2, per = 2, nthr = nfiles * per;
	size_t flen = MIB, region = flen / per;
	struct vqf_gcli_map *maps[2];
	struct vqf_gcli_mm_stats s;
	struct vqf_dax_stats ds;
	struct worker w[4];
	char *model[2];
	int fds[2];
	unsigned int i;

	(void)state;
	for (i = 0; i < nfiles; i++) {
		char name[8];

		snprintf(name, sizeof(name), "t%u", i);
		model[i] = malloc(flen);
		assert_non_null(model[i]);
		e2e_fill(model[i], flen, 40 + i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), model[i],
						flen, 0644), 0);
		fds[i] = vqf_gcli_open(e->c, name, O_RDWR, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(vqf_gcli_mmap(e->c, fds[i], 0, flen,
					       PROT_READ | PROT_WRITE,
					       &maps[i]), 0);
	}
	for (i = 0; i < nthr; i++) {
		unsigned int f = i % nfiles, k = i / nfiles;

		w[i] = (struct worker){
			.e = e, .role = k ? R_MMAP : R_IO, .fd = fds[f],
			.m = maps[f], .id = i,
			.iters = e2e_slow() ? 150 : 3000,
			.base = k * region, .region = region,
			.model = model[f] + k * region,
		};
		assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]),
				 0);
	}
	for (i = 0; i < nthr; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].why[0])
			fail_msg("thread %u: %s", i, w[i].why);
	}
	for (i = 0; i < nfiles; i++) {
		char name[8];

		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(vqf_gcli_munmap(e->c, maps[i]), 0);
		assert_int_equal(vqf_gcli_close(e->c, fds[i]), 0);
		assert_true(e2e_host_equal(e, name, model[i], flen));
		free(model[i]);
	}
	vqf_gcli_get_dax_stats(e->c, &ds);
	s = mm(e);
	print_message("reclaimed bg %llu direct %llu, in-use skips %llu, "
		      "waits %llu; faults %llu (waited %llu), zapped %llu, "
		      "pin waits %llu\n",
		      (unsigned long long)ds.reclaimed_bg,
		      (unsigned long long)ds.reclaimed_direct,
		      (unsigned long long)ds.skipped_in_use,
		      (unsigned long long)ds.waits,
		      (unsigned long long)s.faults,
		      (unsigned long long)s.fault_waits,
		      (unsigned long long)s.zapped,
		      (unsigned long long)s.pin_waits);
	assert_true(ds.reclaimed_bg + ds.reclaimed_direct > 0);
	assert_true(s.zapped > 0);
	assert_true(s.faults > 0);
	assert_int_equal(ds.evict_in_use, 0);
	assert_int_equal(ds.setup_errors + ds.upgrade_errors +
			 ds.remove_errors, 0);
	assert_int_equal(e2e_sent(e, FUSE_READ) + e2e_sent(e, FUSE_WRITE), 0);
	assert_int_equal(e2e_free(e), 0);
}

struct churn {
	struct e2e *e;
	unsigned int id, iters, nfiles;
	const char *data;	/* every file holds these bytes */
	size_t flen;
	char why[96];
	pthread_t t;
};

/* Open, read a random piece (through read() or a mapping), close. */
static void *churn_work(void *arg)
{
	struct churn *w = arg;
	unsigned int seed = e2e_seed() + 31 * w->id, i;
	char buf[8 * KIB], name[16];

	for (i = 0; i < w->iters && !w->why[0]; i++) {
		size_t len = 1 + (size_t)rand_r(&seed) % sizeof(buf);
		size_t off = (size_t)rand_r(&seed) % (w->flen - len);
		struct vqf_gcli_map *m;
		int fd, ret;

		snprintf(name, sizeof(name), "c%u",
			 (unsigned int)rand_r(&seed) % w->nfiles);
		fd = vqf_gcli_open(w->e->c, name, O_RDONLY, 0);
		if (fd < 0) {
			snprintf(w->why, sizeof(w->why), "open: %d", fd);
			break;
		}
		if (rand_r(&seed) % 2) {
			ret = vqf_gcli_pread(w->e->c, fd, buf, len,
					     (off_t)off) == (ssize_t)len ? 0 :
			      -EIO;
		} else {
			ret = vqf_gcli_mmap(w->e->c, fd, 0, w->flen,
					    PROT_READ, &m);
			if (!ret) {
				ret = mload(w->e, m, off, buf, len);
				vqf_gcli_munmap(w->e->c, m);
			}
		}
		if (ret || memcmp(buf, w->data + off, len))
			snprintf(w->why, sizeof(w->why),
				 "%s at %zu: %d or differs", name, off, ret);
		vqf_gcli_close(w->e->c, fd);
	}
	return NULL;
}

/*
 * Eviction racing reclaim: three threads open, read (read() or mmap) and
 * close six files in front of a window of four 64 KiB ranges while the
 * inode cache keeps at most two inodes, so mapped inodes are evicted
 * (REMOVEMAPPING, FORGET) and looked up again all along, while the
 * reclaimer works on them.
 */
static void test_evict_threads(void **state)
{
	struct e2e *e = machine(256 * KIB, 64 * KIB, 2);
	const unsigned int nthr = 3, nfiles = 6;
	size_t flen = 320 * KIB;
	char *data = malloc(flen);
	struct vqf_dax_stats ds;
	struct churn w[3];
	unsigned int i;

	(void)state;
	assert_non_null(data);
	e2e_fill(data, flen, 60);
	for (i = 0; i < nfiles; i++) {
		char name[16];

		snprintf(name, sizeof(name), "c%u", i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), data, flen,
						0644), 0);
	}
	for (i = 0; i < nthr; i++) {
		w[i] = (struct churn){ .e = e, .id = i, .nfiles = nfiles,
				       .iters = e2e_slow() ? 60 : 1500,
				       .data = data, .flen = flen };
		assert_int_equal(pthread_create(&w[i].t, NULL, churn_work,
						&w[i]), 0);
	}
	for (i = 0; i < nthr; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].why[0])
			fail_msg("thread %u: %s", i, w[i].why);
	}
	vqf_gcli_get_dax_stats(e->c, &ds);
	print_message("evicted %llu inodes, %llu ranges removed, reclaimed "
		      "bg %llu direct %llu\n",
		      (unsigned long long)mm(e).evicted,
		      (unsigned long long)ds.removed,
		      (unsigned long long)ds.reclaimed_bg,
		      (unsigned long long)ds.reclaimed_direct);
	assert_true(mm(e).evicted > 0);
	assert_true(ds.removed > 0);
	assert_int_equal(ds.evict_in_use, 0);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	free(data);
	assert_int_equal(e2e_free(e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mmap_basic),
		cmocka_unit_test(test_mmap_errors),
		cmocka_unit_test(test_mmap_nodax),
		cmocka_unit_test(test_mmap_zap),
		cmocka_unit_test(test_evict),
		cmocka_unit_test(test_evict_deferred),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_evict_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
