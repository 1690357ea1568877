// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_daxauto.c - dax=auto (vqf_gcli_cfg.dax_auto, `vqfuse-sim run
 * --dax=auto`): which files went through the window, told by the
 * requests on the wire and the counters, never by time.  A small file
 * read once is one READ and no SETUPMAPPING, read again it maps; random
 * reads over a file eight times the window back off to READ; the same
 * file streamed stays in the window; mmap maps a small file at its first
 * access; writes of a backed-off file are WRITEs the host sees; dax=always
 * maps all of it.  Every byte is checked against the host.
 */
#include "e2e.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#define KIB	1024
#define RANGE	(64 * KIB)		/* small_size 16 KiB, used 32 KiB */
#define WINDOW	(8 * RANGE)
#define BIGF	(64 * RANGE)		/* eight times the window */

static struct e2e *machine(bool dax_auto)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	cfg.dax_window = WINDOW;
	cfg.dax_guest = true;
	cfg.dax_range = RANGE;
	cfg.ram = 64 * 1024 * 1024;
	cfg.cli.dax_auto = dax_auto;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	return e;
}

static char *host_file(struct e2e *e, const char *name, size_t len,
		       unsigned int seed)
{
	char *buf = malloc(len);

	assert_non_null(buf);
	e2e_fill(buf, len, seed);
	assert_int_equal(e2e_host_write(e2e_host(e, name), buf, len, 0644),
			 0);
	return buf;
}

/* Open @name, read all @len bytes, compare, close. */
static void read_whole(struct e2e *e, const char *name, const char *want,
		       size_t len)
{
	char *back = malloc(len + 1);
	int fd;

	assert_non_null(back);
	fd = vqf_gcli_open(e->c, name, O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, len + 1, 0), len);
	assert_memory_equal(back, want, len);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	free(back);
}

/* A small file read once: READ, no mapping; read again: it maps. */
static void test_small_read_once(void **state)
{
	struct e2e *e = machine(true);
	char *want = host_file(e, "small", 4 * KIB, 3);
	struct vqf_gcli_stats cs;
	struct vqf_dax_stats ds;

	(void)state;
	read_whole(e, "small", want, 4 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 0);
	assert_int_equal(e2e_sent(e, FUSE_READ), 1);
	cs = e2e_stats(e).cli;
	assert_int_equal(cs.dax_fuse_reads, 1);
	assert_int_equal(cs.dax_reads, 0);
	read_whole(e, "small", want, 4 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 1);
	assert_int_equal(e2e_sent(e, FUSE_READ), 1);
	/* and stays mapped: no request at all the third time */
	read_whole(e, "small", want, 4 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 1);
	assert_int_equal(e2e_sent(e, FUSE_READ), 1);
	cs = e2e_stats(e).cli;
	assert_int_equal(cs.dax_reads, 2);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_int_equal(ds.pol_small, 1);
	assert_int_equal(ds.pol_window, 1);
	/* a file of 16 KiB (small_size) is not small: maps at once */
	free(want);
	want = host_file(e, "notsmall", 16 * KIB, 4);
	read_whole(e, "notsmall", want, 16 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 2);
	assert_int_equal(e2e_sent(e, FUSE_READ), 1);
	free(want);
	assert_int_equal(e2e_free(e), 0);
}

/* dax=always: the same small file maps at its first read. */
static void test_always_maps_small(void **state)
{
	struct e2e *e = machine(false);
	char *want = host_file(e, "small", 4 * KIB, 3);
	struct vqf_dax_stats ds;

	(void)state;
	read_whole(e, "small", want, 4 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 1);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	vqf_gcli_get_dax_stats(e->c, &ds);
	assert_int_equal(ds.pol_window + ds.pol_small + ds.pol_thrash +
			 ds.pol_backoff + ds.pol_mmap, 0);
	free(want);
	assert_int_equal(e2e_free(e), 0);
}

/* 4 KiB reads of @name (@len bytes) in a seeded random order, checked. */
static void rand_reads(struct e2e *e, int fd, const char *want, size_t len,
		       bool sequential)
{
	size_t nb = len / (4 * KIB), b;
	u32 *perm = malloc(nb * sizeof(*perm));
	u64 seed = 0x5eed;
	char buf[4 * KIB];

	assert_non_null(perm);
	for (b = 0; b < nb; b++)
		perm[b] = (u32)b;
	for (b = nb - 1; !sequential && b > 0; b--) {
		u32 t;
		size_t k;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		k = (size_t)(seed % (b + 1));
		t = perm[b];
		perm[b] = perm[k];
		perm[k] = t;
	}
	for (b = 0; b < nb; b++) {
		off_t off = (off_t)perm[b] * 4 * KIB;

		assert_int_equal(vqf_gcli_pread(e->c, fd, buf, sizeof(buf),
						off), sizeof(buf));
		assert_memory_equal(buf, want + off, sizeof(buf));
	}
	free(perm);
}

/*
 * Random 4 KiB reads over a file eight times the window: ranges are
 * reclaimed before they are used again, the inode backs off and the rest
 * goes through READ; a second inode read sequentially meanwhile stays in
 * the window.  Then writes of the backed-off file are WRITEs.
 */
static void test_thrash_backs_off(void **state)
{
	struct e2e *e = machine(true);
	char *want = host_file(e, "big", BIGF, 7);
	char *seq = host_file(e, "seq", BIGF, 8);
	u64 reads, setups, nb = BIGF / (4 * KIB);
	struct vqf_gcli_stats cs;
	struct vqf_dax_stats ds;
	char blk[4 * KIB];
	int fd;

	(void)state;
	fd = vqf_gcli_open(e->c, "big", O_RDWR, 0);
	assert_true(fd >= 0);
	rand_reads(e, fd, want, BIGF, false);
	reads = e2e_sent(e, FUSE_READ);
	setups = e2e_sent(e, FUSE_SETUPMAPPING);
	vqf_gcli_get_dax_stats(e->c, &ds);
	cs = e2e_stats(e).cli;
	print_message("thrash: %llu reads: %llu READ, %llu SETUPMAPPING, %llu wasted, %llu verdicts, %llu backed off\n",
		      (unsigned long long)nb, (unsigned long long)reads,
		      (unsigned long long)setups,
		      (unsigned long long)ds.wasted,
		      (unsigned long long)ds.pol_thrash,
		      (unsigned long long)ds.pol_backoff);
	assert_true(ds.pol_thrash >= 1);
	assert_true(ds.wasted >= VQF_DAX_POL_THRASH_MIN_DEFAULT);
	/* most reads went through READ, few mapped */
	assert_true(reads >= nb / 2);
	assert_true(setups <= nb / 8);
	assert_int_equal(cs.dax_fuse_reads, reads);
	assert_int_equal(reads, ds.pol_thrash + ds.pol_backoff);

	/*
	 * Still backing off (the clock counts window accesses the slow way,
	 * so the streaming below could end a short backoff): an overwrite
	 * of unmapped bytes is a WRITE.
	 */
	{
		u64 w0 = e2e_sent(e, FUSE_WRITE);
		off_t off = BIGF - RANGE;

		memset(blk, 'Z', sizeof(blk));
		assert_int_equal(vqf_gcli_pwrite(e->c, fd, blk, sizeof(blk),
						 off), sizeof(blk));
		assert_int_equal(e2e_sent(e, FUSE_WRITE), w0 + 1);
		memcpy(want + off, blk, sizeof(blk));
		assert_true(e2e_host_equal(e, "big", want, BIGF));
		cs = e2e_stats(e).cli;
		assert_int_equal(cs.dax_fuse_writes, 1);
		/* and read back through READ, the host's bytes */
		memset(blk, 0, sizeof(blk));
		assert_int_equal(vqf_gcli_pread(e->c, fd, blk, sizeof(blk),
						off), sizeof(blk));
		assert_memory_equal(blk, want + off, sizeof(blk));
	}
	/* streaming another file meanwhile: every range used, no backoff */
	{
		int sfd = vqf_gcli_open(e->c, "seq", O_RDONLY, 0);
		u64 r0 = e2e_sent(e, FUSE_READ), t0 = ds.pol_thrash;

		assert_true(sfd >= 0);
		rand_reads(e, sfd, seq, BIGF, true);
		assert_int_equal(e2e_sent(e, FUSE_READ), r0);
		vqf_gcli_get_dax_stats(e->c, &ds);
		assert_int_equal(ds.pol_thrash, t0);
		assert_int_equal(vqf_gcli_close(e->c, sfd), 0);
	}

	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	free(want);
	free(seq);
	assert_int_equal(e2e_free(e), 0);
}

/* dax=always on the same random reads: everything through the window. */
static void test_always_thrashes(void **state)
{
	struct e2e *e = machine(false);
	char *want = host_file(e, "big", BIGF, 7);
	u64 nb = BIGF / (4 * KIB);
	int fd;

	(void)state;
	fd = vqf_gcli_open(e->c, "big", O_RDONLY, 0);
	assert_true(fd >= 0);
	rand_reads(e, fd, want, BIGF, false);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	/* a SETUPMAPPING for most reads: the thrash auto avoids */
	assert_true(e2e_sent(e, FUSE_SETUPMAPPING) >= nb / 2);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	free(want);
	assert_int_equal(e2e_free(e), 0);
}

/* mmap under auto: a small file maps at its first access, no READ. */
static void test_mmap_maps(void **state)
{
	struct e2e *e = machine(true);
	char *want = host_file(e, "mm", 4 * KIB, 9);
	struct vqf_gcli_map *m = NULL;
	struct vqf_gcli_mref ref;
	int fd;

	(void)state;
	fd = vqf_gcli_open(e->c, "mm", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_mmap(e->c, fd, 0, 4 * KIB, PROT_READ, &m),
			 0);
	assert_int_equal(vqf_gcli_mmap_get(e->c, m, 100, false, &ref), 0);
	assert_memory_equal(ref.addr, want + 100, 64);
	vqf_gcli_mmap_put(e->c, m, &ref);
	assert_int_equal(e2e_sent(e, FUSE_SETUPMAPPING), 1);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	/* read() of the mapped bytes: a hit, no READ either */
	read_whole(e, "mm", want, 4 * KIB);
	assert_int_equal(e2e_sent(e, FUSE_READ), 0);
	assert_int_equal(vqf_gcli_munmap(e->c, m), 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	free(want);
	assert_int_equal(e2e_free(e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_read_once),
		cmocka_unit_test(test_always_maps_small),
		cmocka_unit_test(test_thrash_backs_off),
		cmocka_unit_test(test_always_thrashes),
		cmocka_unit_test(test_mmap_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
