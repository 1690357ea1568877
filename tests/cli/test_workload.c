// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_workload.c - vqf_wl_run() over plain syscalls and over the
 * simulated machine: operation counts per phase, and that what the
 * workload promises to catch is caught: a failing or lying filesystem
 * (errno and message naming the operation and path), data that differs,
 * something left behind in the shared directory.
 */
#define _GNU_SOURCE
#include "vqf_wl_sim.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static const char *const sf_phases[] = {
	"create", "ls-l", "read", "append", "rename", "delete-renamed",
};

struct fixture {
	char dir[64];
	struct vqf_wl_fs fs;
};

static int count_entries(const char *dir)
{
	char cmd[128];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char p[96];
	FILE *f;

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/vqf-wl-test.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	/* Something that must survive every run. */
	snprintf(p, sizeof(p), "%s/canary", fx->dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("keep\n", f);
	fclose(f);
	assert_int_equal(vqf_wl_posix_open(fx->dir, &fx->fs), 0);
	*state = fx;
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(p);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	vqf_wl_posix_close(&fx->fs);
	nftw(fx->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static void check_left_as_found(struct fixture *fx)
{
	char p[96];

	assert_int_equal(count_entries(fx->dir), 1);
	snprintf(p, sizeof(p), "%s/canary", fx->dir);
	assert_int_equal(access(p, R_OK), 0);
}

static void test_smallfile_counts(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_cfg cfg = {
		.kind = VQF_WL_SMALLFILE, .jobs = 3, .files = 17,
		.size = 5000, .bs = 1024,
	};
	struct vqf_wl_result res;

	assert_int_equal(vqf_wl_run(&fx->fs, &cfg, &res), 0);
	assert_int_equal(res.err, 0);
	assert_false(res.has_counters);
	assert_int_equal(res.nphases, 6);
	for (unsigned int i = 0; i < 6; i++) {
		assert_string_equal(res.phase[i].name, sf_phases[i]);
		assert_int_equal(res.phase[i].ops, 3 * 17);
		assert_true(res.phase[i].secs > 0);
	}
	/* create, read and append move the file size each. */
	assert_int_equal(res.phase[0].bytes, 3 * 17 * 5000);
	assert_int_equal(res.phase[2].bytes, 3 * 17 * 5000);
	assert_int_equal(res.phase[3].bytes, 3 * 17 * 5000);
	assert_int_equal(res.phase[1].bytes, 0);
	check_left_as_found(fx);
}

static void test_io_counts(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_result res;

	for (int k = VQF_WL_SEQREAD; k < VQF_WL_NR_KINDS; k++) {
		/* Not a multiple of bs: the last I/O is short. */
		struct vqf_wl_cfg cfg = {
			.kind = k, .jobs = 2, .size = 10 * 4096 + 100,
			.bs = 4096, .seed = 7,
		};

		assert_int_equal(vqf_wl_run(&fx->fs, &cfg, &res), 0);
		assert_int_equal(res.nphases, 1);
		assert_string_equal(res.phase[0].name, vqf_wl_kind_name(k));
		assert_int_equal(res.phase[0].ops, 2 * 11);
		assert_int_equal(res.phase[0].bytes, 2 * cfg.size);
		check_left_as_found(fx);
	}
}

static void test_bad_cfg(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_cfg cfg = { .kind = VQF_WL_NR_KINDS };
	struct vqf_wl_result res;
	enum vqf_wl_kind k;

	assert_int_equal(vqf_wl_run(&fx->fs, &cfg, &res), -EINVAL);
	cfg.kind = VQF_WL_SMALLFILE;
	cfg.jobs = 100000;
	assert_int_equal(vqf_wl_run(&fx->fs, &cfg, &res), -EINVAL);
	assert_int_equal(vqf_wl_run(NULL, &cfg, &res), -EINVAL);
	assert_int_equal(vqf_wl_kind_parse("randread", &k), 0);
	assert_int_equal(k, VQF_WL_RANDREAD);
	assert_int_equal(vqf_wl_kind_parse("nope", &k), -EINVAL);
	assert_null(vqf_wl_kind_name(VQF_WL_NR_KINDS));
	check_left_as_found(fx);
}

/*
 * A filesystem that misbehaves on purpose: wraps the posix one and, per
 * mode, fails the Nth pread, flips a byte of it, or leaves a file in the
 * root when the workload makes its directory.
 */
enum evil { EVIL_EIO, EVIL_FLIP, EVIL_LITTER, EVIL_STAT };

struct evil_fs {
	struct vqf_wl_fs inner;
	enum evil mode;
	int calls;
	const char *dir;
};

static struct evil_fs evil;

static int e_open(void *c, const char *p, int fl, mode_t m)
{
	return evil.inner.open(evil.inner.ctx, p, fl, m);
}

static int e_close(void *c, int fd)
{
	return evil.inner.close(evil.inner.ctx, fd);
}

static ssize_t e_pread(void *c, int fd, void *buf, size_t n, off_t off)
{
	ssize_t r = evil.inner.pread(evil.inner.ctx, fd, buf, n, off);

	if (++evil.calls == 5) {
		if (evil.mode == EVIL_EIO)
			return -EIO;
		if (evil.mode == EVIL_FLIP && r > 0)
			((char *)buf)[r - 1] ^= 1;
	}
	return r;
}

static ssize_t e_pwrite(void *c, int fd, const void *b, size_t n, off_t o)
{
	return evil.inner.pwrite(evil.inner.ctx, fd, b, n, o);
}

static ssize_t e_write(void *c, int fd, const void *b, size_t n)
{
	return evil.inner.write(evil.inner.ctx, fd, b, n);
}

static int e_stat(void *c, const char *p, struct stat *st)
{
	int r = evil.inner.stat(evil.inner.ctx, p, st);

	if (evil.mode == EVIL_STAT && !r && ++evil.calls == 3)
		st->st_size++;
	return r;
}

static int e_unlink(void *c, const char *p)
{
	return evil.inner.unlink(evil.inner.ctx, p);
}

static int e_rename(void *c, const char *a, const char *b)
{
	return evil.inner.rename(evil.inner.ctx, a, b);
}

static int e_mkdir(void *c, const char *p, mode_t m)
{
	if (evil.mode == EVIL_LITTER && !strchr(p, '/')) {
		int fd = evil.inner.open(evil.inner.ctx, "litter",
					 O_WRONLY | O_CREAT, 0644);

		if (fd >= 0)
			evil.inner.close(evil.inner.ctx, fd);
	}
	return evil.inner.mkdir(evil.inner.ctx, p, m);
}

static int e_rmdir(void *c, const char *p)
{
	return evil.inner.rmdir(evil.inner.ctx, p);
}

static int e_readdir(void *c, const char *p, vqf_wl_dirent_fn fn, void *a)
{
	return evil.inner.readdir(evil.inner.ctx, p, fn, a);
}

static const struct vqf_wl_fs evil_ops = {
	.name = "evil", .open = e_open, .close = e_close, .pread = e_pread,
	.pwrite = e_pwrite, .write = e_write, .stat = e_stat,
	.unlink = e_unlink, .rename = e_rename, .mkdir = e_mkdir,
	.rmdir = e_rmdir, .readdir = e_readdir,
};

static int run_evil(struct fixture *fx, enum evil mode,
		    enum vqf_wl_kind kind, struct vqf_wl_result *res)
{
	struct vqf_wl_cfg cfg = {
		.kind = kind, .jobs = 1, .files = 10, .size = 64 << 10,
		.bs = 4096,
	};

	evil.inner = fx->fs;
	evil.mode = mode;
	evil.calls = 0;
	return vqf_wl_run(&evil_ops, &cfg, res);
}

static void test_fail_eio(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_result res;

	assert_int_equal(run_evil(fx, EVIL_EIO, VQF_WL_SMALLFILE, &res),
			 -EIO);
	assert_int_equal(res.err, -EIO);
	/* create and ls-l done, read failed. */
	assert_int_equal(res.nphases, 2);
	assert_non_null(strstr(res.errmsg, "read: pread(vqf-wl."));
	assert_non_null(strstr(res.errmsg, "/j0/f"));
	assert_non_null(strstr(res.errmsg, "on evil"));
	assert_non_null(strstr(res.errmsg, "(errno 5)"));
	check_left_as_found(fx);

	assert_int_equal(run_evil(fx, EVIL_EIO, VQF_WL_RANDREAD, &res), -EIO);
	assert_int_equal(res.nphases, 0);
	assert_non_null(strstr(res.errmsg, "randread: pread("));
	check_left_as_found(fx);
}

static void test_fail_data(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_result res;

	assert_int_equal(run_evil(fx, EVIL_FLIP, VQF_WL_SEQREAD, &res), -EIO);
	assert_non_null(strstr(res.errmsg, "data differs"));
	check_left_as_found(fx);
	assert_int_equal(run_evil(fx, EVIL_STAT, VQF_WL_SMALLFILE, &res),
			 -EIO);
	assert_non_null(strstr(res.errmsg,
				"ls-l: lstat (wrong type or size)"));
	check_left_as_found(fx);
}

static void test_fail_litter(void **state)
{
	struct fixture *fx = *state;
	struct vqf_wl_result res;
	char p[96];

	assert_int_equal(run_evil(fx, EVIL_LITTER, VQF_WL_SEQWRITE, &res),
			 -EEXIST);
	assert_non_null(strstr(res.errmsg, "left behind(litter)"));
	/* All phases ran; only the check failed. */
	assert_int_equal(res.nphases, 1);
	snprintf(p, sizeof(p), "%s/litter", fx->dir);
	assert_int_equal(unlink(p), 0);
	check_left_as_found(fx);
}

/*
 * Smallfile, 2 jobs x 8 files, on a machine made from @sc over the
 * fixture's directory; job j in guest j % guests.  The caller frees it.
 */
static struct vqf_sim *sim_smallfile(struct fixture *fx,
				     struct vqf_sim_cfg *sc,
				     struct vqf_wl_result *res)
{
	struct vqf_wl_cfg cfg = {
		.kind = VQF_WL_SMALLFILE, .jobs = 2, .files = 8,
		.job_init = vqf_wl_sim_job_init,
	};
	struct vqf_wl_fs fs;
	struct vqf_sim *s;

	sc->shared = fx->dir;
	assert_int_equal(vqf_sim_new(sc, &s), 0);
	cfg.job_arg = s;
	vqf_wl_sim_fs(s, "sim", &fs);
	assert_int_equal(vqf_wl_run(&fs, &cfg, res), 0);
	assert_int_equal(res->nphases, 6);
	return s;
}

/* Through the simulated machine: the transport counters come along. */
static void test_sim(void **state)
{
	struct fixture *fx = *state;
	/* Every kick through the queue thread: replies come by interrupt. */
	struct vqf_sim_cfg sc = { .handoff = true };
	struct vqf_wl_result res;
	struct vqf_sim *s = sim_smallfile(fx, &sc, &res);

	assert_true(res.has_counters);
	assert_int_equal(res.nphases, 6);
	for (unsigned int i = 0; i < 6; i++) {
		const struct vqf_wl_counters *d = &res.phase[i].delta;

		assert_int_equal(res.phase[i].ops, 16);
		/* cache=none: at least one request per operation, and
		 * completions signalled by interrupts.
		 */
		assert_true(d->requests >= 16);
		assert_true(d->kicks >= 1 &&
			    d->kicks <= d->requests + d->forgets);
		assert_true(d->interrupts >= 1);
		assert_true(d->drv_copied > 0);
	}
	/*
	 * ls-l, cache=none: per job directory LOOKUP top and job, OPENDIR,
	 * READDIRPLUS (one full, one empty), RELEASEDIR; per entry the
	 * lstat's three LOOKUPs and the lgetxattr's three and GETXATTR.
	 */
	assert_int_equal(res.phase[1].delta.lookups, 2 * 2 + 16 * 6);
	assert_int_equal(res.phase[1].delta.requests, 2 * 6 + 16 * 7);
	assert_true(res.phase[0].delta.cli_copied >= 16 * 4096);
	vqf_sim_free(s);
	check_left_as_found(fx);
}

/*
 * cache=always: what create looked up stays, and READDIRPLUS fills the
 * dentries, so ls -l sends no LOOKUP at all: per job directory OPENDIR,
 * two READDIRPLUS and RELEASEDIR, per entry the GETXATTR (xattrs are not
 * cached, as in fs/fuse without posix_acl).  Later phases find their
 * files without a LOOKUP either.
 */
static void test_sim_always(void **state)
{
	struct fixture *fx = *state;
	struct vqf_sim_cfg sc = {
		.cli = { .cache = VQF_GCLI_CACHE_ALWAYS },
	};
	struct vqf_wl_result res;
	struct vqf_sim *s = sim_smallfile(fx, &sc, &res);

	assert_string_equal(res.phase[1].name, "ls-l");
	assert_int_equal(res.phase[1].delta.lookups, 0);
	assert_int_equal(res.phase[1].delta.requests, 2 * 4 + 16);
	for (unsigned int i = 2; i < 6; i++)
		assert_int_equal(res.phase[i].delta.lookups, 0);
	vqf_sim_free(s);
	check_left_as_found(fx);
}

/*
 * Two guests on one backend with cache=shared: each job works through
 * its own guest, and every phase of both goes through the hub.
 */
static void test_sim_guests(void **state)
{
	struct fixture *fx = *state;
	struct vqf_sim_cfg sc = {
		.guests = 2,
		.cli = { .cache = VQF_GCLI_CACHE_SHARED },
	};
	struct vqf_sim_stats g0, g1;
	struct vqf_wl_result res;
	struct vqf_sim *s = sim_smallfile(fx, &sc, &res);

	vqf_sim_get_stats_n(s, 0, &g0);
	vqf_sim_get_stats_n(s, 1, &g1);
	/* Job 1's 8 creates, at least, came from guest 1. */
	assert_true(g1.cli.requests >= 8 * 5);
	assert_true(g0.cli.requests >= 8 * 5);
	assert_true(g0.hub.requests >= g0.cli.requests);
	assert_int_equal(g0.hub.forget_clamped, 0);
	assert_int_equal(g0.hub.ports, 2);
	vqf_sim_free(s);
	check_left_as_found(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_smallfile_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_io_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_cfg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_eio, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fail_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fail_litter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sim_guests, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sim_always, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
