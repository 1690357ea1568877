// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_confine.c - an untrusted guest against vqfuse's passthrough.  Each
 * attack is a raw FUSE request; each must be refused with its errno, be
 * counted in exactly its vqf_pt_stats field, and leave the host untouched
 * (checked by syscalls on the shared directory and on a sibling directory
 * "out" that stands for the rest of the host).
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
#include <sys/xattr.h>
#include <unistd.h>

#include "tf_fs.h"

static int setup(void **state)
{
	struct tf_fs *f = tf_fs_new(TF_VQF_PT);

	*state = f;
	return f ? 0 : -1;
}

static int teardown(void **state)
{
	tf_fs_free(*state);
	return 0;
}

static const char *out_path(struct tf_fs *f, const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", f->out, name);
	return buf;
}

/* The sum of every refusal counter, to check "exactly one" each time. */
static uint64_t refused(struct tf_fs *f)
{
	struct vqf_pt_stats s = tf_pt_stats(f);

	return s.refused_name_slash + s.refused_name_dot +
	       s.refused_name_empty + s.refused_name_long +
	       s.refused_forged_nodeid + s.refused_stale_nodeid +
	       s.refused_bad_fh + s.refused_not_dir + s.refused_symlink +
	       s.refused_special + s.refused_mknod_dev + s.refused_flags;
}

static void test_names(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	char longname[300];
	struct stat st;

	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "..", NULL), -EPERM);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, ".", NULL), -EPERM);
	assert_int_equal(tf_pt_stats(f).refused_name_dot, 2);
	assert_int_equal(tf_mkdir(t, FUSE_ROOT_ID, "../escape", 0755, NULL),
			 -EINVAL);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "a/b", NULL), -EINVAL);
	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "/etc/x", S_IFREG | 0644, 0,
				  NULL), -EINVAL);
	assert_int_equal(tf_symlink(t, FUSE_ROOT_ID, "x/../../y", "t", NULL),
			 -EINVAL);
	assert_int_equal(tf_pt_stats(f).refused_name_slash, 4);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "", NULL), -ENOENT);
	assert_int_equal(tf_pt_stats(f).refused_name_empty, 1);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(tf_mkdir(t, FUSE_ROOT_ID, longname, 0755, NULL),
			 -ENAMETOOLONG);
	assert_int_equal(tf_pt_stats(f).refused_name_long, 1);
	assert_int_equal(refused(f), 8);

	/* Nothing appeared next to the shared directory. */
	assert_int_equal(stat("/tmp/escape", &st), -1);
	assert_int_equal(stat(tf_host(f, "../escape"), &st), -1);
}

static void test_rename_out(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct stat st;
	char name[80];

	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "f", S_IFREG | 0644, 0,
				  NULL), 0);
	/* Rename target naming the sibling directory through "..". */
	snprintf(name, sizeof(name), "../%s/f", strrchr(f->out, '/') + 1);
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, name, 0),
			 -EINVAL);
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, "..", 0),
			 -EPERM);
	assert_int_equal(tf_link(t, 0, FUSE_ROOT_ID, name, NULL), -EINVAL);
	/* RENAME_WHITEOUT would leave a 0:0 device node behind. */
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, "g",
				   RENAME_WHITEOUT), -EINVAL);
	assert_int_equal(tf_pt_stats(f).refused_flags, 1);
	assert_int_equal(refused(f), 4);
	assert_int_equal(stat(out_path(f, "f"), &st), -1);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_int_equal(stat(tf_host(f, "g"), &st), -1);
}

static void test_symlink_out(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, d;
	char buf[64];
	struct stat st;
	uint64_t fh;
	int fd;

	/* A secret outside, and two symlinks to it: one made by the guest,
	 * one by the host (the guest cannot tell them apart). */
	fd = open(out_path(f, "secret"), O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "SECRET", 6), 6);
	close(fd);
	assert_int_equal(setxattr(out_path(f, "secret"), "user.s", "S", 1, 0),
			 0);
	assert_int_equal(tf_symlink(t, FUSE_ROOT_ID, "esc",
				    out_path(f, "secret"), &e), 0);
	assert_int_equal(symlink(f->out, tf_host(f, "outdir")), 0);

	/* Looked up, a symlink is the link itself... */
	assert_true(S_ISLNK(e.attr.mode));
	assert_int_equal(tf_readlink(t, e.nodeid, buf, sizeof(buf)),
			 (int)strlen(out_path(f, "secret")));
	/* ...which is never opened through. */
	assert_int_equal(tf_open(t, e.nodeid, O_RDONLY, &fh), -ELOOP);
	assert_int_equal(tf_open(t, e.nodeid, O_RDWR | O_TRUNC, &fh), -ELOOP);
	assert_int_equal(tf_pt_stats(f).refused_symlink, 2);
	/* CREATE on the symlink's name: no O_CREAT through it. */
	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "esc", O_RDWR | O_TRUNC,
				   0644, NULL, &fh), -ELOOP);
	assert_int_equal(tf_pt_stats(f).refused_symlink, 3);
	/* Truncate by nodeid: the file is not reopened through the link. */
	{
		struct fuse_setattr_in sa = { .valid = FATTR_SIZE };

		assert_int_equal(tf_setattr(t, e.nodeid, &sa, NULL), -ELOOP);
	}
	assert_int_equal(tf_pt_stats(f).refused_symlink, 4);
	/* Its xattrs are the link's, not the target's. */
	assert_true(tf_getxattr(t, e.nodeid, "user.s", buf, sizeof(buf)) < 0);

	/* A directory symlink is no parent. */
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "outdir", &d), 0);
	assert_true(S_ISLNK(d.attr.mode));
	assert_int_equal(tf_lookup(t, d.nodeid, "secret", NULL), -ENOTDIR);
	assert_int_equal(tf_mknod(t, d.nodeid, "planted", S_IFREG | 0644, 0,
				  NULL), -ENOTDIR);
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "esc", d.nodeid, "moved",
				   0), -ENOTDIR);
	assert_int_equal(tf_pt_stats(f).refused_not_dir, 3);
	assert_int_equal(tf_opendir(t, d.nodeid, &fh), -ENOTDIR);
	assert_int_equal(refused(f), 7);

	/* The outside is as it was. */
	assert_int_equal(stat(out_path(f, "planted"), &st), -1);
	assert_int_equal(stat(out_path(f, "moved"), &st), -1);
	assert_int_equal(stat(out_path(f, "secret"), &st), 0);
	assert_int_equal(st.st_size, 6);
}

static void test_nodeids(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, e2;
	struct vqf_pt_stats s;
	uint64_t fh, fh2;

	/* Never issued: out of the table, or a pointer-looking number. */
	assert_int_equal(tf_getattr(t, 0xdeadbeef, NULL), -EBADF);
	assert_int_equal(tf_getattr(t, (uint64_t)(uintptr_t)&e, NULL),
			 -EBADF);
	assert_int_equal(tf_mkdir(t, 77, "x", 0755, NULL), -EBADF);
	assert_int_equal(tf_pt_stats(f).refused_forged_nodeid, 3);

	/* Issued, then forgotten: stale, even once its slot is reused. */
	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "a", S_IFREG | 0644, 0, &e),
			 0);
	tf_forget(t, e.nodeid, 1);
	assert_int_equal(tf_getattr(t, e.nodeid, NULL), -ESTALE);
	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "b", S_IFREG | 0644, 0,
				  &e2), 0);
	assert_int_equal((uint32_t)e2.nodeid, (uint32_t)e.nodeid);
	assert_true(e2.nodeid != e.nodeid);
	assert_int_equal(tf_getattr(t, e.nodeid, NULL), -ESTALE);
	/* A FORGET of a stale or forged id changes nothing but a counter. */
	tf_forget(t, e.nodeid, 1);
	tf_forget(t, 0x1234567, 1);
	assert_int_equal(tf_getattr(t, e2.nodeid, NULL), 0);
	s = tf_pt_stats(f);
	assert_int_equal(s.refused_stale_nodeid, 3);
	assert_int_equal(s.refused_forged_nodeid, 4);

	/* File handles: forged, someone else's, released. */
	assert_int_equal(tf_open(t, e2.nodeid, O_RDWR, &fh), 0);
	assert_int_equal(tf_read(t, e2.nodeid, 0x42, 0, NULL, 10), -EBADF);
	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "c", S_IFREG | 0644, 0, &e),
			 0);
	assert_int_equal(tf_write(t, e.nodeid, fh, 0, "x", 1), -EBADF);
	assert_int_equal(tf_release(t, e2.nodeid, fh, false), 0);
	assert_int_equal(tf_read(t, e2.nodeid, fh, 0, NULL, 10), -EBADF);
	assert_int_equal(tf_release(t, e2.nodeid, fh, false), -EBADF);
	/* A directory handle is not a file handle's fd, and vice versa. */
	assert_int_equal(tf_opendir(t, FUSE_ROOT_ID, &fh2), 0);
	assert_int_equal(tf_readdir(t, e2.nodeid, fh2, 0, 4096, false),
			 -EBADF);
	assert_int_equal(tf_release(t, FUSE_ROOT_ID, fh2, true), 0);
	assert_int_equal(tf_pt_stats(f).refused_bad_fh, 5);
	assert_int_equal(refused(f), 12);
	assert_int_equal(tf_pt_stats(f).files, 0);
}

static void test_devices(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, p;
	struct stat st;
	uint64_t fh;

	/* The guest makes device nodes, as with virtiofsd (its kernel opens
	 * them, never this server; the nodev refusal: test_e2e_confine)...
	 */
	if (!geteuid()) {
		assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "mem",
					  S_IFCHR | 0600, makedev(1, 1),
					  NULL), 0);
		assert_int_equal(lstat(tf_host(f, "mem"), &st), 0);
		assert_true(S_ISCHR(st.st_mode));
		assert_int_equal(st.st_rdev, makedev(1, 1));
		assert_int_equal(tf_unlink(t, FUSE_ROOT_ID, "mem"), 0);
	} else {
		assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "mem",
					  S_IFCHR | 0600, makedev(1, 1),
					  NULL), -EPERM);
	}
	assert_int_equal(tf_pt_stats(f).refused_mknod_dev, 0);
	assert_int_equal(lstat(tf_host(f, "mem"), &st), -1);

	/* ...nor open one that is there (CVE-2020-35517), nor a FIFO
	 * (opening it would hang a worker). */
	if (mknod(tf_host(f, "null"), S_IFCHR | 0666, makedev(1, 3)) == 0) {
		assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "null", &e), 0);
		assert_true(S_ISCHR(e.attr.mode));
		assert_int_equal(tf_open(t, e.nodeid, O_RDWR, &fh), -EPERM);
		/* CREATE without O_EXCL of the existing name: same. */
		assert_int_equal(tf_create(t, FUSE_ROOT_ID, "null", O_RDWR,
					   0644, NULL, &fh), -EPERM);
		assert_int_equal(tf_pt_stats(f).refused_special, 2);
	}
	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "fifo", S_IFIFO | 0600, 0,
				  &p), 0);
	assert_int_equal(tf_open(t, p.nodeid, O_RDONLY, &fh), -EPERM);
	assert_int_equal(tf_getattr(t, p.nodeid, NULL), 0);
	assert_int_equal(tf_pt_stats(f).files, 0);
}

/* Malformed bytes stop at the backend; the filesystem never sees them. */
static void test_backend_shapes(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct vqf_backend_stats bs;
	struct fuse_setxattr_in sx = { .size = 1 << 20 };

	tf_begin(&t->m, FUSE_SETXATTR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &sx, FUSE_COMPAT_SETXATTR_IN_SIZE);
	tf_puts(&t->m, "user.x");
	tf_put(&t->m, "v", 1);
	assert_int_equal(tf_call(t), -EOVERFLOW);
	tf_begin(&t->m, FUSE_MKDIR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &sx, sizeof(struct fuse_mkdir_in));
	tf_put(&t->m, "noterm", 6);
	assert_int_equal(tf_call(t), -ENAMETOOLONG);
	vqf_backend_get_stats(t->be, &bs);
	assert_int_equal(bs.bad_payload, 1);
	assert_int_equal(bs.bad_string, 1);
	assert_int_equal(refused(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_out, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlink_out, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nodeids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_shapes, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
