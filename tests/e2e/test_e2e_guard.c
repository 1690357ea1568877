// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_guard.c - the device's guard (sim/device/vqf_guard.h) on the
 * whole simulated machine, in front of each backend: vqfuse's
 * passthrough, libfuse3's passthrough_ll and the null backend.
 *
 * Every request is a raw FUSE request through the guest driver, as a
 * guest kernel that breaks the rules would send it.  A refused one must
 * come back with the guard's errno, be counted in vqf_fsdev_stats.guard
 * and never reach the backend (vqf_backend_stats.requests unchanged).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "e2e.h"

#define FORGED	0x4141414141414141ULL
/* e2e.h's raw_names(): the calls below are many. */
#define raw	raw_names

static struct e2e *machine(int fs, const struct vqf_sim_cfg *tmpl)
{
	struct e2e *e;
	int ret = e2e_new(&e, tmpl, fs);

	if (ret) {
		fprintf(stderr, "e2e_new: %s\n", strerror(-ret));
		return NULL;
	}
	return e;
}

static struct vqf_guard_stats gst(struct e2e *e)
{
	return e2e_stats(e).dev.guard;
}

static uint64_t be_requests(struct e2e *e)
{
	return e2e_stats(e).be.requests;
}

static int raw_opendir(struct e2e *e, uint64_t nodeid, uint64_t *fh)
{
	struct fuse_open_in oi = { 0 };
	struct fuse_open_out oo = { 0 };
	int ret = raw(e, FUSE_OPENDIR, nodeid, &oi, sizeof(oi), NULL, NULL,
		      &oo, sizeof(oo));

	if (!ret && fh)
		*fh = oo.fh;
	return ret;
}

static int raw_readdir(struct e2e *e, uint64_t nodeid, uint64_t fh)
{
	struct fuse_read_in ri = { .fh = fh, .size = 4096 };
	static char buf[4096];

	return raw(e, FUSE_READDIR, nodeid, &ri, sizeof(ri), NULL, NULL,
		   buf, sizeof(buf));
}

/* ---- node ids ---------------------------------------------------------- */

/* Forged, stale and partly forgotten ids, per backend. */
static void forged_stale(int fs)
{
	struct e2e *e = machine(fs, NULL);
	struct fuse_entry_out eo;
	struct vqf_guard_stats g0, g1;
	struct vqf_fsdev_stats d0, d1;
	uint64_t fh, b0;
	const char *name = fs == VQF_SIM_FS_NULL ? "any" : "f";

	assert_non_null(e);
	if (fs != VQF_SIM_FS_NULL)
		assert_int_equal(e2e_host_write(e2e_host(e, "f"), "data", 4,
						0644), 0);
	g0 = gst(e);
	d0 = e2e_stats(e).dev;
	b0 = be_requests(e);
	/* Never handed out: the backend (pointers for ptll) never sees it. */
	assert_int_equal(raw_getattr(e, FORGED, NULL), -ESTALE);
	assert_int_equal(raw_open(e, FORGED, O_RDONLY, &fh), -ESTALE);
	assert_int_equal(raw_opendir(e, FORGED, &fh), -ESTALE);
	assert_int_equal(raw_mkdir(e, FORGED, "x", 0755, NULL), -ESTALE);
	assert_int_equal(raw_link(e, FORGED, FUSE_ROOT_ID, "l", NULL),
			 -ESTALE);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, name, FORGED, "x", 0),
			 -ESTALE);
	/* A FORGET of it is dropped. */
	assert_int_equal(raw_forget(e, FORGED, 1), 0);
	assert_int_equal(be_requests(e), b0);
	g1 = gst(e);
	assert_int_equal(g1.node_unknown - g0.node_unknown, 6);
	assert_int_equal(g1.forget_unknown - g0.forget_unknown, 1);
	/* Each chain ended once: six answered, the FORGET not. */
	d1 = e2e_stats(e).dev;
	assert_int_equal(d1.replies - d0.replies, 6);
	assert_int_equal(d1.no_reply - d0.no_reply, 1);
	assert_int_equal(d1.refused_no_room - d0.refused_no_room, 0);
	assert_int_equal(d1.backend_errors - d0.backend_errors, 0);

	/* Two lookups, two forgets: usable until the second. */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, name, &eo), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, name, &eo), 0);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), 0);
	g0 = gst(e);
	/* One too many: clamped to the one left. */
	assert_int_equal(raw_forget(e, eo.nodeid, 5), 0);
	g1 = gst(e);
	assert_int_equal(g1.forget_clamped - g0.forget_clamped, 1);
	b0 = be_requests(e);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), -ESTALE);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	assert_int_equal(be_requests(e), b0);
	assert_int_equal(gst(e).node_unknown - g1.node_unknown, 1);
	assert_int_equal(gst(e).forget_unknown - g1.forget_unknown, 1);
	assert_int_equal(e2e_free(e), 0);
}

static void test_forged_stale_vqfuse(void **state)
{
	(void)state;
	forged_stale(VQF_SIM_FS_VQFUSE);
}

static void test_forged_stale_ptll(void **state)
{
	(void)state;
#ifdef VQF_TEST_PTLL
	forged_stale(VQF_SIM_FS_PTLL);
#else
	skip();
#endif
}

static void test_forged_stale_null(void **state)
{
	(void)state;
	forged_stale(VQF_SIM_FS_NULL);
}

/* ---- handles ----------------------------------------------------------- */

static void handles(int fs)
{
	struct e2e *e = machine(fs, NULL);
	struct fuse_entry_out eo, eo2;
	struct vqf_guard_stats g0, g1;
	uint64_t fh = 0, dfh = 0, b0;
	char buf[16];

	assert_non_null(e);
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "data", 4, 0644),
			 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "g"), "gggg", 4, 0644),
			 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f", &eo), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "g", &eo2), 0);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(raw_opendir(e, FUSE_ROOT_ID, &dfh), 0);
	assert_int_equal(raw_read(e, eo.nodeid, fh, 0, buf, sizeof(buf)), 4);
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, dfh) >= 0, 1);

	g0 = gst(e);
	b0 = be_requests(e);
	/* Forged; another node's; the other kind. */
	assert_int_equal(raw_read(e, eo.nodeid, fh ^ FORGED, 0, buf,
				  sizeof(buf)), -EBADF);
	assert_int_equal(raw_read(e, eo2.nodeid, fh, 0, buf, sizeof(buf)),
			 -EBADFD);
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, fh ^ FORGED), -EBADF);
	assert_int_equal(raw_readdir(e, eo.nodeid, fh), -EBADFD);
	assert_int_equal(raw_read(e, FUSE_ROOT_ID, dfh, 0, buf, sizeof(buf)),
			 -EBADFD);
	assert_int_equal(be_requests(e), b0);
	g1 = gst(e);
	assert_int_equal(g1.handle_unknown - g0.handle_unknown, 2);
	assert_int_equal(g1.handle_mismatch - g0.handle_mismatch, 3);

	/* Released: gone, and a second RELEASE never reaches the backend. */
	assert_int_equal(raw_release(e, eo.nodeid, fh), 0);
	b0 = be_requests(e);
	assert_int_equal(raw_read(e, eo.nodeid, fh, 0, buf, sizeof(buf)),
			 -EBADF);
	assert_int_equal(raw_release(e, eo.nodeid, fh), -EBADF);
	assert_int_equal(be_requests(e), b0);
	assert_int_equal(gst(e).handles, 1);	/* the directory's */
	{
		struct fuse_release_in ri = { .fh = dfh };

		assert_int_equal(raw(e, FUSE_RELEASEDIR, FUSE_ROOT_ID, &ri,
				     sizeof(ri), NULL, NULL, NULL, 0), 0);
	}
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, dfh), -EBADF);
	assert_int_equal(gst(e).handles, 0);
	assert_int_equal(e2e_free(e), 0);
}

static void test_handles_vqfuse(void **state)
{
	(void)state;
	handles(VQF_SIM_FS_VQFUSE);
}

static void test_handles_ptll(void **state)
{
	(void)state;
#ifdef VQF_TEST_PTLL
	handles(VQF_SIM_FS_PTLL);
#else
	skip();
#endif
}

/* ---- per guest ---------------------------------------------------------- */

static void test_per_guest(void **state)
{
	struct vqf_sim_cfg cfg = { .guests = 2 };
	struct e2e *e = machine(VQF_SIM_FS_VQFUSE, &cfg);
	struct vqf_gdrv *a;
	struct fuse_entry_out eo, eo2;
	struct vqf_fsdev_stats sb;
	uint64_t fh;

	(void)state;
	assert_non_null(e);
	a = e->g;
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "data", 4, 0644),
			 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f", &eo), 0);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), 0);
	/* Guest B: A's id and handle are not B's. */
	e->g = vqf_sim_drv_n(e->s, 1);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), -ESTALE);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), -ESTALE);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	vqf_fsdev_get_stats(vqf_sim_dev_n(e->s, 1), &sb);
	assert_int_equal(sb.guard.node_unknown, 2);
	assert_int_equal(sb.guard.forget_unknown, 1);
	/* Once B looks it up itself (the same backend id), it may. */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f", &eo2), 0);
	assert_int_equal(eo2.nodeid, eo.nodeid);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), 0);
	{
		char buf[8];

		/* ...but not A's handle. */
		assert_int_equal(raw_read(e, eo.nodeid, fh, 0, buf,
					  sizeof(buf)), -EBADF);
	}
	e->g = a;
	/* A's forget was not spent by B. */
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), 0);
	assert_int_equal(raw_release(e, eo.nodeid, fh), 0);
	assert_int_equal(e2e_free(e), 0);
}

/* ---- names --------------------------------------------------------------- */

static void test_dot_names(void **state)
{
	static const char *const bad[] = { ".", ".." };
	struct e2e *e = machine(VQF_SIM_FS_VQFUSE, NULL);
	struct fuse_mknod_in mi = { .mode = S_IFREG | 0644 };
	struct fuse_mkdir_in di = { .mode = 0755 };
	struct fuse_create_in ci = { .flags = O_RDWR, .mode = 0644 };
	struct fuse_rename_in ri = { .newdir = FUSE_ROOT_ID };
	struct fuse_rename2_in r2 = { .newdir = FUSE_ROOT_ID };
	struct fuse_link_in li;
	struct fuse_entry_out eo;
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} co;
	struct vqf_guard_stats g0;
	uint64_t b0;
	unsigned int i, n = 0;

	(void)state;
	assert_non_null(e);
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "f", 1, 0644), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f", &eo), 0);
	li.oldnodeid = eo.nodeid;
	g0 = gst(e);
	b0 = be_requests(e);
	for (i = 0; i < 2; i++) {
		const char *s = bad[i];

#define NO(call) do { assert_int_equal(call, -EPERM); n++; } while (0)
		NO(raw(e, FUSE_MKNOD, FUSE_ROOT_ID, &mi, sizeof(mi), s, NULL,
		       &eo, sizeof(eo)));
		NO(raw(e, FUSE_MKDIR, FUSE_ROOT_ID, &di, sizeof(di), s, NULL,
		       &eo, sizeof(eo)));
		NO(raw(e, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, s, NULL, NULL,
		       0));
		NO(raw(e, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, s, NULL, NULL,
		       0));
		NO(raw(e, FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, s, "/etc",
		       &eo, sizeof(eo)));
		NO(raw(e, FUSE_RENAME, FUSE_ROOT_ID, &ri, sizeof(ri), s, "y",
		       NULL, 0));
		NO(raw(e, FUSE_RENAME, FUSE_ROOT_ID, &ri, sizeof(ri), "f", s,
		       NULL, 0));
		NO(raw(e, FUSE_RENAME2, FUSE_ROOT_ID, &r2, sizeof(r2), s, "y",
		       NULL, 0));
		NO(raw(e, FUSE_RENAME2, FUSE_ROOT_ID, &r2, sizeof(r2), "f", s,
		       NULL, 0));
		NO(raw(e, FUSE_LINK, FUSE_ROOT_ID, &li, sizeof(li), s, NULL,
		       &eo, sizeof(eo)));
		NO(raw(e, FUSE_CREATE, FUSE_ROOT_ID, &ci, sizeof(ci), s, NULL,
		       &co, sizeof(co)));
#undef NO
	}
	/* LOOKUP "." too; ".." is answered (below). */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, ".", &eo), -EPERM);
	n++;
	assert_int_equal(gst(e).name_dot - g0.name_dot, n);
	assert_int_equal(be_requests(e), b0);
	/* Empty names and '/': lib/'s parser already (EINVAL). */
	assert_int_equal(raw(e, FUSE_MKDIR, FUSE_ROOT_ID, &di, sizeof(di),
			     "a/b", NULL, &eo, sizeof(eo)), -EINVAL);
	assert_int_equal(raw(e, FUSE_MKDIR, FUSE_ROOT_ID, &di, sizeof(di),
			     "", NULL, &eo, sizeof(eo)), -EINVAL);
	assert_true(e2e_out_intact(e));
	assert_int_equal(e2e_free(e), 0);
}

/* LOOKUP "..": from the device's knowledge of parents, never climbing. */
static void dotdot(int fs)
{
	struct e2e *e = machine(fs, NULL);
	struct fuse_entry_out a, b, f, up;
	struct vqf_guard_stats g0;

	assert_non_null(e);
	assert_int_equal(raw_mkdir(e, FUSE_ROOT_ID, "a", 0755, &a), 0);
	assert_int_equal(raw_mkdir(e, a.nodeid, "b", 0755, &b), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "a/f"), "f", 1, 0644),
			 0);
	assert_int_equal(raw_lookup(e, a.nodeid, "f", &f), 0);
	g0 = gst(e);
	assert_int_equal(raw_lookup(e, b.nodeid, "..", &up), 0);
	assert_int_equal(up.nodeid, a.nodeid);
	assert_int_equal(raw_lookup(e, a.nodeid, "..", &up), 0);
	assert_int_equal(up.nodeid, FUSE_ROOT_ID);
	assert_true(S_ISDIR(up.attr.mode));
	/* At the root: the root, whatever lies above the share. */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "..", &up), 0);
	assert_int_equal(up.nodeid, FUSE_ROOT_ID);
	assert_int_equal(raw_lookup(e, f.nodeid, "..", &up), -ENOTDIR);
	assert_int_equal(gst(e).dotdot_parent - g0.dotdot_parent, 1);
	assert_int_equal(gst(e).dotdot_root - g0.dotdot_root, 2);
	assert_int_equal(gst(e).dotdot_notdir - g0.dotdot_notdir, 1);
	/* A rename moves what the device knows: b's parent is now c. */
	assert_int_equal(raw_mkdir(e, FUSE_ROOT_ID, "c", 0755, &up), 0);
	assert_int_equal(raw_rename(e, a.nodeid, "b", up.nodeid, "b", 0), 0);
	assert_int_equal(raw_lookup(e, b.nodeid, "..", &f), 0);
	assert_int_equal(f.nodeid, up.nodeid);
	/* Forgetting the root's synthesized entries changes nothing. */
	assert_int_equal(raw_forget(e, FUSE_ROOT_ID, 3), 0);
	assert_int_equal(raw_getattr(e, FUSE_ROOT_ID, NULL), 0);
	assert_true(e2e_out_intact(e));
	assert_int_equal(e2e_free(e), 0);
}

static void test_dotdot_vqfuse(void **state)
{
	(void)state;
	dotdot(VQF_SIM_FS_VQFUSE);
}

static void test_dotdot_ptll(void **state)
{
	(void)state;
#ifdef VQF_TEST_PTLL
	dotdot(VQF_SIM_FS_PTLL);
#else
	skip();
#endif
}

/* ---- special files ------------------------------------------------------ */

static void specials(int fs)
{
	struct e2e *e = machine(fs, NULL);
	struct fuse_entry_out fifo, dev, sl;
	struct vqf_guard_stats g0;
	uint64_t fh, b0, nspecial = 2;

	assert_non_null(e);
	/* A FIFO nobody reads: an open that blocked would hang the test. */
	assert_int_equal(mkfifo(e2e_host(e, "fifo"), 0666), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "fifo", &fifo), 0);
	g0 = gst(e);
	b0 = be_requests(e);
	assert_int_equal(raw_open(e, fifo.nodeid, O_RDONLY, &fh), -ENXIO);
	assert_int_equal(raw_open(e, fifo.nodeid, O_WRONLY, &fh), -ENXIO);
	assert_int_equal(raw_opendir(e, fifo.nodeid, &fh), -ENOTDIR);
	assert_int_equal(raw_open(e, FUSE_ROOT_ID, O_RDONLY, &fh), -EISDIR);
	if (!geteuid()) {
		assert_int_equal(mknod(e2e_host(e, "kmsg"), S_IFCHR | 0600,
				       makedev(1, 11)), 0);
		assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "kmsg", &dev), 0);
		b0++;		/* the LOOKUP */
		assert_int_equal(raw_open(e, dev.nodeid, O_RDONLY, &fh),
				 -ENXIO);
		nspecial++;
	}
	assert_int_equal(be_requests(e), b0);
	assert_int_equal(gst(e).open_special - g0.open_special, nspecial);
	assert_int_equal(gst(e).open_dir - g0.open_dir, 1);
	assert_int_equal(gst(e).opendir_notdir - g0.opendir_notdir, 1);
	/*
	 * CREATE by name over the FIFO and through a symlink to a host file
	 * outside: the backend's own business (the guard cannot know what a
	 * name is), and it must neither block nor follow.
	 */
	assert_int_equal(symlink(e2e_out(e, "canary"), e2e_host(e, "sl")), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "sl", &sl), 0);
	assert_int_equal(raw_open(e, sl.nodeid, O_RDONLY, &fh), -ENXIO);
	assert_true(raw_create(e, FUSE_ROOT_ID, "fifo", O_WRONLY, 0644, NULL,
			       &fh) < 0);
	assert_true(raw_create(e, FUSE_ROOT_ID, "sl", O_RDWR | O_TRUNC, 0644,
			       NULL, &fh) < 0);
	assert_true(e2e_out_intact(e));
	assert_int_equal(e2e_free(e), 0);
}

static void test_specials_vqfuse(void **state)
{
	(void)state;
	specials(VQF_SIM_FS_VQFUSE);
}

static void test_specials_ptll(void **state)
{
	(void)state;
#ifdef VQF_TEST_PTLL
	specials(VQF_SIM_FS_PTLL);
#else
	skip();
#endif
}

/* The null backend: one regular file, one directory. */
static void test_specials_null(void **state)
{
	struct e2e *e = machine(VQF_SIM_FS_NULL, NULL);
	struct fuse_entry_out eo;
	uint64_t fh;

	(void)state;
	assert_non_null(e);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "x", &eo), 0);
	assert_int_equal(raw_opendir(e, eo.nodeid, &fh), -ENOTDIR);
	assert_int_equal(raw_open(e, FUSE_ROOT_ID, O_RDONLY, &fh), -EISDIR);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(raw_release(e, eo.nodeid, fh), 0);
	assert_int_equal(e2e_free(e), 0);
}

/* ---- read-only ----------------------------------------------------------- */

static void test_readonly(void **state)
{
	struct vqf_sim_cfg cfg = { .readonly = true };
	struct e2e *e = machine(VQF_SIM_FS_VQFUSE, &cfg);
	struct fuse_setattr_in sa = { .valid = FATTR_MODE, .mode = 0600 };
	struct fuse_mknod_in mi = { .mode = S_IFREG | 0644 };
	struct fuse_mkdir_in di = { .mode = 0755 };
	struct fuse_rename_in ri = { .newdir = FUSE_ROOT_ID };
	struct fuse_rename2_in r2 = { .newdir = FUSE_ROOT_ID };
	struct fuse_link_in li;
	struct fuse_write_in wi = { .size = 1 };
	struct fuse_setxattr_in xi = { .size = 1 };
	struct fuse_fallocate_in fa = { .length = 1 };
	struct fuse_copy_file_range_in cr = { .len = 1 };
	struct fuse_entry_out eo;
	struct vqf_guard_stats g0;
	uint64_t fh, b0;
	char wbuf[sizeof(wi) + 1], xbuf[sizeof(xi) + 8];
	const uint32_t xl = FUSE_COMPAT_SETXATTR_IN_SIZE;
	char buf[8];
	unsigned int n = 0;

	(void)state;
	assert_non_null(e);
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "data", 4, 0644),
			 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f", &eo), 0);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(raw_read(e, eo.nodeid, fh, 0, buf, sizeof(buf)), 4);
	li.oldnodeid = eo.nodeid;
	wi.fh = fa.fh = cr.fh_in = cr.fh_out = fh;
	cr.nodeid_out = eo.nodeid;
	memcpy(wbuf, &wi, sizeof(wi));
	wbuf[sizeof(wi)] = 'x';
	memcpy(xbuf, &xi, xl);
	memcpy(xbuf + xl, "user.a\0v", 8);
	g0 = gst(e);
	b0 = be_requests(e);
#define RO(call) do { assert_int_equal(call, -EROFS); n++; } while (0)
	RO(raw(e, FUSE_SETATTR, eo.nodeid, &sa, sizeof(sa), NULL, NULL, buf,
	       0));
	RO(raw(e, FUSE_MKNOD, FUSE_ROOT_ID, &mi, sizeof(mi), "n", NULL, &eo,
	       sizeof(eo)));
	RO(raw(e, FUSE_MKDIR, FUSE_ROOT_ID, &di, sizeof(di), "d", NULL, &eo,
	       sizeof(eo)));
	RO(raw(e, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "f", NULL, NULL, 0));
	RO(raw(e, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "f", NULL, NULL, 0));
	RO(raw(e, FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "s", "t", &eo,
	       sizeof(eo)));
	RO(raw(e, FUSE_RENAME, FUSE_ROOT_ID, &ri, sizeof(ri), "f", "g", NULL,
	       0));
	RO(raw(e, FUSE_RENAME2, FUSE_ROOT_ID, &r2, sizeof(r2), "f", "g", NULL,
	       0));
	RO(raw(e, FUSE_LINK, FUSE_ROOT_ID, &li, sizeof(li), "h", NULL, &eo,
	       sizeof(eo)));
	RO(raw_create(e, FUSE_ROOT_ID, "c", O_RDWR, 0644, NULL, &fh));
	RO(raw(e, FUSE_WRITE, li.oldnodeid, wbuf, sizeof(wbuf), NULL, NULL,
	       buf, sizeof(struct fuse_write_out)));
	RO(raw(e, FUSE_SETXATTR, li.oldnodeid, xbuf, xl + 8, NULL, NULL,
	       NULL, 0));
	RO(raw(e, FUSE_REMOVEXATTR, li.oldnodeid, NULL, 0, "user.a", NULL,
	       NULL, 0));
	RO(raw(e, FUSE_FALLOCATE, li.oldnodeid, &fa, sizeof(fa), NULL, NULL,
	       NULL, 0));
	RO(raw(e, FUSE_COPY_FILE_RANGE, li.oldnodeid, &cr, sizeof(cr), NULL,
	       NULL, buf, sizeof(struct fuse_write_out)));
	RO(raw_open(e, li.oldnodeid, O_WRONLY, &fh));
	RO(raw_open(e, li.oldnodeid, O_RDWR, &fh));
	RO(raw_open(e, li.oldnodeid, O_RDONLY | O_TRUNC, &fh));
#undef RO
	assert_int_equal(gst(e).readonly - g0.readonly, n);
	assert_int_equal(be_requests(e), b0);
	assert_true(e2e_host_equal(e, "f", "data", 4));
	assert_int_equal(e2e_free(e), 0);
}

/* ---- passthrough_ll's pointers ------------------------------------------ */

/* The crash: a forged id straight into lo_inode(). */
static void test_ptll_forged(void **state)
{
	(void)state;
#ifdef VQF_TEST_PTLL
	struct e2e *e = machine(VQF_SIM_FS_PTLL, NULL);
	uint64_t fh = 0, dfh = 0, b0;

	assert_non_null(e);
	assert_int_equal(raw_opendir(e, FUSE_ROOT_ID, &dfh), 0);
	b0 = be_requests(e);
	assert_int_equal(raw_getattr(e, FORGED, NULL), -ESTALE);
	assert_int_equal(raw_lookup(e, FORGED, "x", NULL), -ESTALE);
	assert_int_equal(raw_open(e, FORGED, O_RDONLY, &fh), -ESTALE);
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, FORGED), -EBADF);
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, dfh + 8), -EBADF);
	assert_int_equal(raw_forget(e, FORGED, 1), 0);
	assert_int_equal(be_requests(e), b0);
	assert_int_equal(raw_readdir(e, FUSE_ROOT_ID, dfh) >= 0, 1);
	{
		/* passthrough_ll frees no open directory at its end. */
		struct fuse_release_in ri = { .fh = dfh };

		assert_int_equal(raw(e, FUSE_RELEASEDIR, FUSE_ROOT_ID, &ri,
				     sizeof(ri), NULL, NULL, NULL, 0), 0);
	}
	assert_int_equal(e2e_free(e), 0);
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_stale_vqfuse),
		cmocka_unit_test(test_forged_stale_ptll),
		cmocka_unit_test(test_forged_stale_null),
		cmocka_unit_test(test_handles_vqfuse),
		cmocka_unit_test(test_handles_ptll),
		cmocka_unit_test(test_per_guest),
		cmocka_unit_test(test_dot_names),
		cmocka_unit_test(test_dotdot_vqfuse),
		cmocka_unit_test(test_dotdot_ptll),
		cmocka_unit_test(test_specials_vqfuse),
		cmocka_unit_test(test_specials_ptll),
		cmocka_unit_test(test_specials_null),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_ptll_forged),
	};

	return cmocka_run_group_tests_name("e2e_guard", tests, NULL, NULL);
}
