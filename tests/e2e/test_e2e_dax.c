// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_dax.c - the device's DAX cache window: FUSE_SETUPMAPPING and
 * FUSE_REMOVEMAPPING sent raw through the driver, the window checked with
 * loads, stores and /proc/self/maps.
 *
 * In the simulator the guest's view of the window is the device's own
 * host address range (vqf_fsdev_shm()), so the test reads and writes the
 * file through base + moffset as a DAX guest would.  Every refused
 * request must leave every other mapping as it was: the test looks at
 * their protection and their bytes after each one.
 */
#include "e2e.h"
#include "vqf_dax.h"

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

#define WINDOW		(4ULL << 20)
#define FILE_BYTES	(64u << 10)

static u64 pg;

struct dax {
	struct e2e *e;
	u8 *base;
	u64 len;
	u64 nodeid;
	uint64_t fh_ro, fh_rw;
	u8 want[FILE_BYTES];	/* the host file's bytes */
};

static void req_ids(struct vqf_gdrv_call *cl)
{
	cl->req.in_h.uid = getuid();
	cl->req.in_h.gid = getgid();
	cl->req.in_h.pid = getpid();
}

static int setup_in(struct dax *x, u64 nodeid,
		    const struct fuse_setupmapping_in *in)
{
	struct vqf_gdrv_call cl;

	memset(&cl, 0, sizeof(cl));
	assert_int_equal(vqf_dax_req_setupmapping(&cl.req, 0, nodeid, in), 0);
	req_ids(&cl);
	return vqf_gdrv_call(vqf_sim_drv(x->e->s), &cl, 10000);
}

static int setup(struct dax *x, u64 fh, u64 foff, u64 len, u64 moff,
		 bool w)
{
	struct fuse_setupmapping_in in;

	vqf_dax_fill_setupmapping(&in, fh, foff, len, moff, w);
	return setup_in(x, x->nodeid, &in);
}

/* REMOVEMAPPING with @count in the header and @n entries after it. */
static int remove_raw(struct dax *x, u32 count,
		      const struct fuse_removemapping_one *one, u32 n)
{
	struct fuse_removemapping_in in = { .count = count };
	struct vqf_gdrv_call cl;
	int ret;

	memset(&cl, 0, sizeof(cl));
	ret = vqf_req_init(&cl.req, FUSE_REMOVEMAPPING, x->nodeid, 0);
	if (!ret)
		ret = vqf_req_add_in(&cl.req, &in, sizeof(in));
	if (!ret && n)
		ret = vqf_req_add_in(&cl.req, one, n * sizeof(*one));
	if (ret)
		return ret;
	req_ids(&cl);
	return vqf_gdrv_call(vqf_sim_drv(x->e->s), &cl, 10000);
}

static int remove1(struct dax *x, u64 moff, u64 len)
{
	struct fuse_removemapping_one one;

	vqf_dax_fill_removemapping_one(&one, moff, len);
	return remove_raw(x, 1, &one, 1);
}

/*
 * The protection of the window page at @moff as /proc/self/maps shows
 * it: "r--s", "rw-s" (a file mapping) or "---p" (blank).
 */
static void prot_at(struct dax *x, u64 moff, char perms[5])
{
	unsigned long a = (unsigned long)(x->base + moff), lo, hi;
	char line[512], p[8];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	strcpy(perms, "none");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) != 3)
			continue;
		if (a >= lo && a < hi) {
			memcpy(perms, p, 4);
			perms[4] = 0;
			break;
		}
	}
	fclose(f);
}

static void assert_prot(struct dax *x, u64 moff, u64 len, const char *want)
{
	char p[5];
	u64 o;

	for (o = 0; o < len; o += pg) {
		prot_at(x, moff + o, p);
		if (strcmp(p, want))
			fail_msg("window +%#llx: %s, want %s",
				 (unsigned long long)(moff + o), p, want);
	}
}

/* Window bytes [moff, +len) hold file bytes [foff, +len). */
static void assert_maps(struct dax *x, u64 moff, u64 foff, u64 len)
{
	assert_memory_equal(x->base + moff, x->want + foff, len);
}

static struct vqf_fsdev_stats dstats(struct dax *x)
{
	return e2e_stats(x->e).dev;
}

static struct dax *dax_new(enum vqf_sim_fs fs, u64 window)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct fuse_entry_out ent;
	struct dax *x = calloc(1, sizeof(*x));
	void *b;
	int ret;

	assert_non_null(x);
	pg = (u64)sysconf(_SC_PAGESIZE);
	cfg.dax_window = window;
	ret = e2e_new(&x->e, &cfg, (int)fs);
	if (ret) {
		free(x);
		return NULL;
	}
	e2e_fill(x->want, sizeof(x->want), 6);
	assert_int_equal(e2e_host_write(e2e_host(x->e, "f"), x->want,
					sizeof(x->want), 0644), 0);
	assert_int_equal(raw_lookup(x->e, FUSE_ROOT_ID, "f", &ent), 0);
	x->nodeid = ent.nodeid;
	assert_int_equal(raw_open(x->e, x->nodeid, O_RDONLY, &x->fh_ro), 0);
	assert_int_equal(raw_open(x->e, x->nodeid, O_RDWR, &x->fh_rw), 0);
	if (window) {
		assert_int_equal(vqf_fsdev_shm(vqf_sim_dev(x->e->s),
					       VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
					       &b, &x->len), 0);
		x->base = b;
		assert_true(x->len == window);
	}
	return x;
}

static void dax_free(struct dax *x)
{
	assert_int_equal(e2e_free(x->e), 0);
	free(x);
}

/* Map read-only and read-write, read and write through the window. */
static void test_map_rw(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	struct vqf_fsdev_stats st;
	u8 *host;
	size_t hl;

	(void)state;
	assert_non_null(x);
	assert_prot(x, 0, x->len, "---p");
	/* Read-only: file [pg, 3 pg) at window 0. */
	assert_int_equal(setup(x, x->fh_ro, pg, 2 * pg, 0, false), 0);
	assert_prot(x, 0, 2 * pg, "r--s");
	assert_prot(x, 2 * pg, pg, "---p");
	assert_maps(x, 0, pg, 2 * pg);
	/* Read-write: file [0, 4 pg) at the window's last 4 pages. */
	assert_int_equal(setup(x, x->fh_rw, 0, 4 * pg, x->len - 4 * pg, true),
			 0);
	assert_prot(x, x->len - 4 * pg, 4 * pg, "rw-s");
	assert_maps(x, x->len - 4 * pg, 0, 4 * pg);
	/* A store through the window is the host file's data. */
	memset(x->base + x->len - 3 * pg + 5, 0xa5, 100);
	memset(x->want + pg + 5, 0xa5, 100);
	assert_int_equal(msync(x->base + x->len - 4 * pg, 4 * pg, MS_SYNC), 0);
	host = e2e_host_read(e2e_host(x->e, "f"), &hl);
	assert_non_null(host);
	assert_int_equal(hl, FILE_BYTES);
	assert_memory_equal(host, x->want, FILE_BYTES);
	free(host);
	/* ...and the read-only mapping of the same bytes sees it. */
	assert_maps(x, 0, pg, 2 * pg);
	/* A mapping whose tail passes EOF is allowed (2 MiB ranges). */
	assert_int_equal(setup(x, x->fh_ro, FILE_BYTES - pg, 4 * pg,
			       8 * pg, false), 0);
	assert_maps(x, 8 * pg, FILE_BYTES - pg, pg);
	/* Upgrade: the identical span again, writable, replaces it. */
	assert_int_equal(setup(x, x->fh_rw, pg, 2 * pg, 0, true), 0);
	assert_prot(x, 0, 2 * pg, "rw-s");
	assert_maps(x, 0, pg, 2 * pg);
	/* Remove two in one batch: blank again, the third untouched. */
	{
		struct fuse_removemapping_one one[2];

		vqf_dax_fill_removemapping_one(&one[0], 0, 2 * pg);
		vqf_dax_fill_removemapping_one(&one[1], 8 * pg, 4 * pg);
		assert_int_equal(remove_raw(x, 2, one, 2), 0);
	}
	assert_prot(x, 0, 12 * pg, "---p");
	assert_prot(x, x->len - 4 * pg, 4 * pg, "rw-s");
	st = dstats(x);
	assert_int_equal(st.dax_setups, 4);
	assert_int_equal(st.dax_removes, 1);
	assert_int_equal(st.dax.replaced, 1);
	assert_int_equal(st.dax.removes, 2);
	assert_int_equal(st.dax_refused + st.dax_bad_fh + st.dax_mmap_errors,
			 0);
	dax_free(x);
}

/*
 * Linux's in-tree virtiofs names no handle (fh ~0, fs/fuse/dax.c): the
 * device opens the inode's file itself, read-write only for a writable
 * mapping.  Directories and forged or stale nodeids are refused.
 */
static void test_fh_none(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	struct fuse_entry_out ent;
	struct vqf_fsdev_stats st;
	u8 *host;
	size_t hl;

	(void)state;
	assert_non_null(x);
	assert_int_equal(setup(x, ~0ULL, 0, 2 * pg, 0, false), 0);
	assert_prot(x, 0, 2 * pg, "r--s");
	assert_maps(x, 0, 0, 2 * pg);
	assert_int_equal(setup(x, ~0ULL, 2 * pg, 2 * pg, 4 * pg, true), 0);
	assert_prot(x, 4 * pg, 2 * pg, "rw-s");
	memset(x->base + 4 * pg + 7, 0x5a, 50);
	memset(x->want + 2 * pg + 7, 0x5a, 50);
	assert_int_equal(msync(x->base + 4 * pg, 2 * pg, MS_SYNC), 0);
	host = e2e_host_read(e2e_host(x->e, "f"), &hl);
	assert_non_null(host);
	assert_memory_equal(host, x->want, FILE_BYTES);
	free(host);
	/* The upgrade of a handle-less read-only span. */
	assert_int_equal(setup(x, ~0ULL, 0, 2 * pg, 0, true), 0);
	assert_prot(x, 0, 2 * pg, "rw-s");
	/*
	 * Not a regular file: the root, a directory; a forged and a stale
	 * nodeid.  The device's guard stops them all (vqf_guard.h).
	 */
	{
		struct fuse_setupmapping_in in;

		vqf_dax_fill_setupmapping(&in, ~0ULL, 0, pg, 8 * pg, false);
		assert_int_equal(setup_in(x, FUSE_ROOT_ID, &in), -ENXIO);
		assert_int_equal(raw_mkdir(x->e, FUSE_ROOT_ID, "d", 0755,
					   &ent), 0);
		assert_int_equal(setup_in(x, ent.nodeid, &in), -ENXIO);
		assert_int_equal(setup_in(x, x->nodeid + (1ULL << 40), &in),
				 -ESTALE);
		assert_int_equal(setup_in(x, 0x7fffffffULL, &in), -ESTALE);
	}
	/* A forged handle: the guard's too. */
	assert_int_equal(setup(x, x->fh_ro + 12345, 0, pg, 8 * pg, false),
			 -EBADF);
	assert_prot(x, 8 * pg, pg, "---p");
	st = dstats(x);
	assert_int_equal(st.dax_setups, 3);
	assert_int_equal(st.dax_by_nodeid, 3);
	assert_int_equal(st.dax_bad_fh, 0);
	assert_int_equal(st.guard.open_special, 2);
	assert_int_equal(st.guard.node_unknown, 2);
	assert_int_equal(st.guard.handle_unknown, 1);
	assert_int_equal(st.dax_refused + st.dax_mmap_errors, 0);
	dax_free(x);
}

/* Two mappings that every refused request must leave alone. */
static void two_maps(struct dax *x)
{
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, 0, false), 0);
	assert_int_equal(setup(x, x->fh_rw, 2 * pg, 2 * pg, 4 * pg, true), 0);
}

static void assert_two_maps(struct dax *x)
{
	assert_prot(x, 0, 2 * pg, "r--s");
	assert_prot(x, 2 * pg, 2 * pg, "---p");
	assert_prot(x, 4 * pg, 2 * pg, "rw-s");
	assert_prot(x, 6 * pg, 2 * pg, "---p");
	assert_maps(x, 0, 0, 2 * pg);
	assert_maps(x, 4 * pg, 2 * pg, 2 * pg);
}

static void test_setup_refused(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	struct fuse_setupmapping_in in;
	struct vqf_fsdev_stats st;

	(void)state;
	assert_non_null(x);
	two_maps(x);
	/* Misaligned moffset, foffset, len; len 0. */
	assert_int_equal(setup(x, x->fh_ro, 0, pg, 6 * pg + pg / 2, false),
			 -EINVAL);
	assert_int_equal(setup(x, x->fh_ro, 512, pg, 6 * pg, false), -EINVAL);
	assert_int_equal(setup(x, x->fh_ro, 0, pg + 512, 6 * pg, false),
			 -EINVAL);
	assert_int_equal(setup(x, x->fh_ro, 0, 0, 6 * pg, false), -EINVAL);
	assert_two_maps(x);
	/* Outside the window, and overflowing. */
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, x->len - pg, false),
			 -ERANGE);
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, x->len, false),
			 -ERANGE);
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, ~0ULL & ~(pg - 1),
			       false), -ERANGE);
	assert_two_maps(x);
	/* Partial overlap with either mapping. */
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, pg, false), -EBUSY);
	assert_int_equal(setup(x, x->fh_ro, 0, 4 * pg, 2 * pg, false),
			 -EBUSY);
	assert_int_equal(setup(x, x->fh_ro, 0, 8 * pg, 0, false), -EBUSY);
	assert_two_maps(x);
	/* WRITE on a read-only handle, even for an identical span. */
	assert_int_equal(setup(x, x->fh_ro, 0, pg, 6 * pg, true), -EACCES);
	assert_int_equal(setup(x, x->fh_ro, 0, 2 * pg, 0, true), -EACCES);
	assert_two_maps(x);
	/* Starting at or past EOF; past off_t. */
	assert_int_equal(setup(x, x->fh_ro, FILE_BYTES, pg, 6 * pg, false),
			 -ENXIO);
	assert_int_equal(setup(x, x->fh_ro, ~0ULL & ~(pg - 1), pg, 6 * pg,
			       false), -EFBIG);
	/* No flags, unknown flags. */
	vqf_dax_fill_setupmapping(&in, x->fh_ro, 0, pg, 6 * pg, false);
	in.flags = 0;
	assert_int_equal(setup_in(x, x->nodeid, &in), -EOPNOTSUPP);
	in.flags = FUSE_SETUPMAPPING_FLAG_READ | 4;
	assert_int_equal(setup_in(x, x->nodeid, &in), -EOPNOTSUPP);
	/* Forged fh; a real fh on the wrong nodeid (the root): the guard. */
	assert_int_equal(setup(x, x->fh_ro + 12345, 0, pg, 6 * pg, false),
			 -EBADF);
	vqf_dax_fill_setupmapping(&in, x->fh_ro, 0, pg, 6 * pg, false);
	assert_int_equal(setup_in(x, FUSE_ROOT_ID, &in), -EBADFD);
	assert_two_maps(x);
	st = dstats(x);
	assert_int_equal(st.dax_setups, 2);
	assert_int_equal(st.dax_refused, 16);
	assert_int_equal(st.dax_bad_fh, 0);
	assert_int_equal(st.guard.handle_unknown, 1);
	assert_int_equal(st.guard.handle_mismatch, 1);
	assert_int_equal(st.dax.setup_unaligned, 4);
	assert_int_equal(st.dax.setup_out_of_window, 3);
	assert_int_equal(st.dax.setup_overlap, 3);
	assert_int_equal(st.dax.setup_write_denied, 2);
	assert_int_equal(st.dax.setup_beyond_eof, 1);
	assert_int_equal(st.dax.setup_file_limit, 1);
	assert_int_equal(st.dax.setup_bad_flags, 2);
	/* A released handle maps nothing. */
	assert_int_equal(raw_release(x->e, x->nodeid, x->fh_ro), 0);
	assert_int_equal(setup(x, x->fh_ro, 0, pg, 6 * pg, false), -EBADF);
	assert_two_maps(x);
	dax_free(x);
}

static void test_remove_refused(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	struct fuse_removemapping_one one[VQF_REMOVEMAPPING_MAX + 1];
	struct vqf_fsdev_stats st;
	u32 i;

	(void)state;
	assert_non_null(x);
	two_maps(x);
	/* Not mapped; a part of a mapping; more than one mapping. */
	assert_int_equal(remove1(x, 6 * pg, pg), -ENOENT);
	assert_int_equal(remove1(x, 0, pg), -ENOENT);
	assert_int_equal(remove1(x, 0, 6 * pg), -ENOENT);
	/* Misaligned, empty, outside the window. */
	assert_int_equal(remove1(x, pg / 2, pg), -EINVAL);
	assert_int_equal(remove1(x, 0, 0), -EINVAL);
	assert_int_equal(remove1(x, x->len, pg), -ERANGE);
	assert_two_maps(x);
	/* One good entry and one bad: nothing is removed. */
	vqf_dax_fill_removemapping_one(&one[0], 0, 2 * pg);
	vqf_dax_fill_removemapping_one(&one[1], 6 * pg, 2 * pg);
	assert_int_equal(remove_raw(x, 2, one, 2), -ENOENT);
	/* The same mapping twice. */
	vqf_dax_fill_removemapping_one(&one[1], 0, 2 * pg);
	assert_int_equal(remove_raw(x, 2, one, 2), -ENOTUNIQ);
	assert_two_maps(x);
	st = dstats(x);
	assert_int_equal(st.dax.remove_not_mapped, 4);
	assert_int_equal(st.dax.remove_unaligned, 2);
	assert_int_equal(st.dax.remove_out_of_window, 1);
	assert_int_equal(st.dax.remove_duplicate, 1);
	/*
	 * count 0, count too big, count and entries disagreeing: the
	 * parser or lib's check refuses them (whichever sees them first;
	 * the driver may refuse to send some); never a success.
	 */
	assert_true(remove_raw(x, 0, NULL, 0) < 0);
	for (i = 0; i <= VQF_REMOVEMAPPING_MAX; i++)
		vqf_dax_fill_removemapping_one(&one[i], 0, 2 * pg);
	assert_true(remove_raw(x, VQF_REMOVEMAPPING_MAX + 1, one,
			       VQF_REMOVEMAPPING_MAX + 1) < 0);
	assert_true(remove_raw(x, 2, one, 1) < 0);
	assert_true(remove_raw(x, 1, one, 2) < 0);
	assert_two_maps(x);
	st = dstats(x);
	assert_int_equal(st.dax_removes, 0);
	assert_int_equal(st.dax.removes, 0);
	/* And the two still come out cleanly. */
	vqf_dax_fill_removemapping_one(&one[1], 4 * pg, 2 * pg);
	assert_int_equal(remove_raw(x, 2, one, 2), 0);
	assert_prot(x, 0, 8 * pg, "---p");
	dax_free(x);
}

/* Shutdown (DESTROY + reset) leaves the whole window blank. */
static void test_reset(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	struct vqf_fsdev_stats st;

	(void)state;
	assert_non_null(x);
	two_maps(x);
	assert_int_equal(setup(x, x->fh_rw, 0, 16 * pg, x->len - 16 * pg,
			       true), 0);
	st = dstats(x);
	vqf_gdrv_shutdown(vqf_sim_drv(x->e->s));
	assert_prot(x, 0, x->len, "---p");
	assert_true(dstats(x).dax_resets > st.dax_resets);
	dax_free(x);
}

/* A slot table smaller than the window's pages: -ENOSPC, then reuse. */
static void test_many(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, WINDOW);
	u64 n = WINDOW / pg, i, nf = FILE_BYTES / pg;
	struct fuse_removemapping_one one;

	(void)state;
	assert_non_null(x);
	/* Every page of the window its own mapping. */
	for (i = 0; i < n; i++)
		assert_int_equal(setup(x, x->fh_ro, (i % nf) * pg, pg,
				       i * pg, false), 0);
	for (i = 0; i < n; i += n / 16)
		assert_maps(x, i * pg, (i % nf) * pg, pg);
	vqf_dax_fill_removemapping_one(&one, 5 * pg, pg);
	assert_int_equal(remove_raw(x, 1, &one, 1), 0);
	assert_prot(x, 5 * pg, pg, "---p");
	assert_int_equal(setup(x, x->fh_rw, 0, pg, 5 * pg, true), 0);
	assert_maps(x, 5 * pg, 0, pg);
	assert_int_equal(dstats(x).dax_setups, n + 1);
	dax_free(x);
}

/* passthrough_ll has no file-handle accessor: ENOSYS, as virtiofsd. */
static void test_ptll_enosys(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_PTLL, WINDOW);

	(void)state;
	if (!x)
		skip();
	assert_int_equal(setup(x, x->fh_ro, 0, pg, 0, false), -ENOSYS);
	assert_int_equal(remove1(x, 0, pg), -ENOSYS);
	assert_prot(x, 0, pg, "---p");
	assert_int_equal(dstats(x).dax_enosys, 2);
	dax_free(x);
}

/* No window: no region, and the backend (libfuse) answers ENOSYS. */
static void test_no_window(void **state)
{
	struct dax *x = dax_new(VQF_SIM_FS_VQFUSE, 0);
	void *b;
	u64 l;

	(void)state;
	assert_non_null(x);
	assert_int_equal(vqf_fsdev_shm(vqf_sim_dev(x->e->s),
				       VQF_VIRTIO_FS_SHMCAP_ID_CACHE, &b, &l),
			 -ENOENT);
	assert_int_equal(setup(x, x->fh_ro, 0, pg, 0, false), -ENOSYS);
	assert_int_equal(dstats(x).dax_setups + dstats(x).dax_enosys, 0);
	dax_free(x);
}

/* Window sizes the device refuses. */
static void test_bad_window(void **state)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	(void)state;
	cfg.dax_window = 3ULL << 20;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), -EINVAL);
	cfg.dax_window = 512;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_rw),
		cmocka_unit_test(test_fh_none),
		cmocka_unit_test(test_setup_refused),
		cmocka_unit_test(test_remove_refused),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_ptll_enosys),
		cmocka_unit_test(test_no_window),
		cmocka_unit_test(test_bad_window),
	};

	return cmocka_run_group_tests_name("e2e_dax", tests, NULL, NULL);
}
