// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_ops.c - every operation a guest needs, as raw FUSE requests through
 * vqf_backend, with the host directory checked after each step by plain
 * syscalls.  Runs against vqfuse's passthrough (io_uring, then the
 * pread/pwrite fallback) and against libfuse3's example passthrough_ll
 * where that example implements the operation.
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
#include <sys/xattr.h>
#include <unistd.h>

#include "tf_fs.h"

#define BIG (300 * 1024)	/* above the io_uring threshold */

static int setup_kind(void **state, enum tf_kind kind)
{
	struct tf_fs *f = tf_fs_new(kind);

	*state = f;
	return f ? 0 : -1;
}

static int setup_pt(void **state)
{
	return setup_kind(state, TF_VQF_PT);
}

static int setup_pt_pread(void **state)
{
	return setup_kind(state, TF_VQF_PT_PREAD);
}

static int setup_ptll(void **state)
{
	return setup_kind(state, TF_PTLL);
}

static int teardown(void **state)
{
	tf_fs_free(*state);
	return 0;
}

static void test_dirs(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, e2;
	struct fuse_attr a;
	struct stat st;

	assert_int_equal(tf_mkdir(t, FUSE_ROOT_ID, "d", 0750, &e), 0);
	assert_int_equal(stat(tf_host(f, "d"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(e.attr.ino, st.st_ino);

	assert_int_equal(tf_mkdir(t, e.nodeid, "sub", 0700, &e2), 0);
	assert_int_equal(stat(tf_host(f, "d/sub"), &st), 0);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "d", &e2), 0);
	assert_int_equal(e2.nodeid, e.nodeid);
	assert_int_equal(tf_getattr(t, e.nodeid, &a), 0);
	assert_int_equal(a.mode & 07777, 0750);
	assert_int_equal(tf_mkdir(t, FUSE_ROOT_ID, "d", 0750, NULL), -EEXIST);
	assert_int_equal(tf_rmdir(t, FUSE_ROOT_ID, "d"), -ENOTEMPTY);
	assert_int_equal(tf_rmdir(t, e.nodeid, "sub"), 0);
	assert_int_equal(tf_rmdir(t, FUSE_ROOT_ID, "d"), 0);
	assert_int_equal(stat(tf_host(f, "d"), &st), -1);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "d", NULL), -ENOENT);
}

static void check_host_bytes(struct tf_fs *f, const char *name, off_t off,
			     const char *want, size_t len)
{
	char *buf = malloc(len);
	int fd = open(tf_host(f, name), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, off), len);
	assert_memory_equal(buf, want, len);
	close(fd);
	free(buf);
}

static void test_file_io(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_setattr_in sa = { 0 };
	struct fuse_entry_out e;
	struct fuse_attr a;
	struct stat st;
	uint64_t fh, fh2;
	char *big = malloc(BIG), *back = malloc(BIG);
	size_t i;

	for (i = 0; i < BIG; i++)
		big[i] = (char)(i * 7 + i / 4096);
	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "f", O_RDWR, 0640, &e,
				   &fh), 0);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);

	assert_int_equal(tf_write(t, e.nodeid, fh, 0, "hello", 5), 5);
	check_host_bytes(f, "f", 0, "hello", 5);
	assert_int_equal(tf_write(t, e.nodeid, fh, 4096, big, BIG), BIG);
	check_host_bytes(f, "f", 4096, big, BIG);
	assert_int_equal(tf_read(t, e.nodeid, fh, 4096, back, BIG), BIG);
	assert_memory_equal(back, big, BIG);
	assert_int_equal(tf_read(t, e.nodeid, fh, 0, back, 5), 5);
	assert_memory_equal(back, "hello", 5);
	/* Reading across EOF is short. */
	assert_int_equal(tf_read(t, e.nodeid, fh, 4096 + BIG - 10, back, 100),
			 10);

	/* A second open of the same inode, read-only. */
	assert_int_equal(tf_open(t, e.nodeid, O_RDONLY, &fh2), 0);
	assert_int_equal(tf_read(t, e.nodeid, fh2, 1, back, 4), 4);
	assert_memory_equal(back, "ello", 4);
	assert_int_equal(tf_release(t, e.nodeid, fh2, false), 0);

	/* truncate, chmod, times; by path (no fh) */
	sa.valid = FATTR_SIZE;
	sa.size = 3;
	assert_int_equal(tf_setattr(t, e.nodeid, &sa, &a), 0);
	assert_int_equal(a.size, 3);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 3);
	sa.valid = FATTR_MODE;
	sa.mode = 0604;
	assert_int_equal(tf_setattr(t, e.nodeid, &sa, &a), 0);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	sa.valid = FATTR_MTIME | FATTR_ATIME;
	sa.mtime = 1000000;
	sa.atime = 2000000;
	assert_int_equal(tf_setattr(t, e.nodeid, &sa, &a), 0);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_int_equal(st.st_mtime, 1000000);
	assert_int_equal(st.st_atime, 2000000);
	/* ... and through the open file */
	sa.valid = FATTR_SIZE | FATTR_FH;
	sa.fh = fh;
	sa.size = 1;
	assert_int_equal(tf_setattr(t, e.nodeid, &sa, &a), 0);
	assert_int_equal(stat(tf_host(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 1);

	assert_int_equal(tf_flush(t, e.nodeid, fh, 1), 0);
	assert_int_equal(tf_fsync(t, e.nodeid, fh, false), 0);
	assert_int_equal(tf_release(t, e.nodeid, fh, false), 0);

	/* create of an existing name without O_EXCL opens it */
	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "f", O_RDWR, 0600, &e,
				   &fh), 0);
	assert_int_equal(tf_read(t, e.nodeid, fh, 0, back, 10), 1);
	assert_int_equal(tf_release(t, e.nodeid, fh, false), 0);
	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "f", O_RDWR | O_EXCL,
				   0600, NULL, &fh), -EEXIST);
	assert_int_equal(tf_unlink(t, FUSE_ROOT_ID, "f"), 0);
	assert_int_equal(stat(tf_host(f, "f"), &st), -1);

	/* Large transfers took the io_uring path, small ones pread. */
	if (f->kind == TF_VQF_PT_PREAD) {
		assert_int_equal(tf_pt_stats(f).uring_ios, 0);
		assert_true(tf_pt_stats(f).sync_ios >= 4);
	} else if (f->kind == TF_VQF_PT && vqf_pt_uses_uring(f->pt)) {
		assert_int_equal(tf_pt_stats(f).uring_ios, 2);
		assert_true(tf_pt_stats(f).sync_ios >= 4);
	}
	free(big);
	free(back);
}

static void test_links_rename(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, l;
	char buf[64];
	struct stat st;
	uint64_t fh;
	ssize_t n;

	assert_int_equal(tf_symlink(t, FUSE_ROOT_ID, "s", "some/target", &l),
			 0);
	n = readlink(tf_host(f, "s"), buf, sizeof(buf));
	assert_int_equal(n, 11);
	assert_int_equal(tf_readlink(t, l.nodeid, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "some/target");
	assert_true(S_ISLNK(l.attr.mode));

	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "a", O_RDWR, 0644, &e,
				   &fh), 0);
	assert_int_equal(tf_write(t, e.nodeid, fh, 0, "AAAA", 4), 4);
	assert_int_equal(tf_release(t, e.nodeid, fh, false), 0);
	assert_int_equal(tf_link(t, e.nodeid, FUSE_ROOT_ID, "h", &l), 0);
	assert_int_equal(l.nodeid, e.nodeid);
	assert_int_equal(stat(tf_host(f, "a"), &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(tf_unlink(t, FUSE_ROOT_ID, "h"), 0);
	assert_int_equal(stat(tf_host(f, "a"), &st), 0);
	assert_int_equal(st.st_nlink, 1);

	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "a", FUSE_ROOT_ID, "b", 0),
			 0);
	assert_int_equal(access(tf_host(f, "a"), F_OK), -1);
	check_host_bytes(f, "b", 0, "AAAA", 4);

	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "c", O_RDWR, 0644, &e,
				   &fh), 0);
	assert_int_equal(tf_write(t, e.nodeid, fh, 0, "CCCC", 4), 4);
	assert_int_equal(tf_release(t, e.nodeid, fh, false), 0);
	if (f->kind == TF_PTLL)
		return;	/* passthrough_ll refuses rename flags (EINVAL) */
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "b", FUSE_ROOT_ID, "c",
				   RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(tf_rename(t, FUSE_ROOT_ID, "b", FUSE_ROOT_ID, "c",
				   RENAME_EXCHANGE), 0);
	check_host_bytes(f, "b", 0, "CCCC", 4);
	check_host_bytes(f, "c", 0, "AAAA", 4);
}

static void test_mknod_fifo(void **state)
{
	struct tf_fs *f = *state;
	struct fuse_entry_out e;
	struct stat st;

	assert_int_equal(tf_mknod(&f->t, FUSE_ROOT_ID, "p", S_IFIFO | 0600, 0,
				  &e), 0);
	assert_int_equal(lstat(tf_host(f, "p"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_true(S_ISFIFO(e.attr.mode));
	assert_int_equal(tf_unlink(&f->t, FUSE_ROOT_ID, "p"), 0);
}

static void test_readdir(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	const char *names[] = { "one", "two", "three" };
	uint64_t fh;
	int i, len;

	for (i = 0; i < 3; i++)
		assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, names[i],
					  S_IFREG | 0644, 0, NULL), 0);
	assert_int_equal(tf_opendir(t, FUSE_ROOT_ID, &fh), 0);
	len = tf_readdir(t, FUSE_ROOT_ID, fh, 0, 4096, false);
	assert_true(len > 0);
	for (i = 0; i < 3; i++)
		assert_true(tf_dir_has(t, len, false, names[i]));
	assert_true(tf_dir_has(t, len, false, ".."));
	/* From the start again, with attributes. */
	len = tf_readdir(t, FUSE_ROOT_ID, fh, 0, 4096, true);
	assert_true(len > 0);
	for (i = 0; i < 3; i++)
		assert_true(tf_dir_has(t, len, true, names[i]));
	/* A tiny buffer returns one entry at a time, none lost. */
	len = tf_readdir(t, FUSE_ROOT_ID, fh, 0, 40, false);
	assert_true(len > 0 && len <= 40);
	assert_int_equal(tf_fsync(t, FUSE_ROOT_ID, fh, true), 0);
	assert_int_equal(tf_release(t, FUSE_ROOT_ID, fh, true), 0);
}

static void test_statfs(void **state)
{
	struct tf_fs *f = *state;
	struct fuse_kstatfs st;

	assert_int_equal(tf_statfs(&f->t, FUSE_ROOT_ID, &st), 0);
	assert_true(st.bsize > 0);
	assert_true(st.blocks > 0);
}

static void test_xattr(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e;
	char buf[64];
	int n;

	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "x", S_IFREG | 0644, 0, &e),
			 0);
	assert_int_equal(tf_setxattr(t, e.nodeid, "user.k", "value", 5, 0), 0);
	n = getxattr(tf_host(f, "x"), "user.k", buf, sizeof(buf));
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "value", 5);
	assert_int_equal(tf_getxattr(t, e.nodeid, "user.k", NULL, 0), 5);
	assert_int_equal(tf_getxattr(t, e.nodeid, "user.k", buf, 64), 5);
	assert_memory_equal(buf, "value", 5);
	assert_int_equal(tf_getxattr(t, e.nodeid, "user.k", buf, 2), -ERANGE);
	n = tf_listxattr(t, e.nodeid, buf, sizeof(buf));
	assert_true(n >= 7);
	assert_non_null(memmem(buf, n, "user.k", 7));
	assert_int_equal(tf_setxattr(t, e.nodeid, "user.k", "v", 1,
				     XATTR_CREATE), -EEXIST);
	assert_int_equal(tf_removexattr(t, e.nodeid, "user.k"), 0);
	assert_int_equal(getxattr(tf_host(f, "x"), "user.k", buf, 64), -1);
	assert_int_equal(tf_getxattr(t, e.nodeid, "user.k", buf, 64),
			 -ENODATA);
}

static void test_locks(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_file_lock lk = {
		.start = 0, .end = 9, .type = F_WRLCK, .pid = 1
	};
	struct fuse_entry_out e;
	uint64_t fh1, fh2;

	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "l", O_RDWR, 0644, &e,
				   &fh1), 0);
	assert_int_equal(tf_open(t, e.nodeid, O_RDWR, &fh2), 0);

	/* flock: whole-file, per open file */
	assert_int_equal(tf_setlk(t, e.nodeid, fh1, 1, &lk, false, true), 0);
	assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, false, true),
			 -EWOULDBLOCK);
	lk.type = F_UNLCK;
	assert_int_equal(tf_setlk(t, e.nodeid, fh1, 1, &lk, false, true), 0);
	lk.type = F_WRLCK;
	assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, false, true), 0);
	lk.type = F_UNLCK;
	assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, false, true), 0);

	if (f->kind != TF_PTLL) {	/* passthrough_ll: no POSIX locks */
		/* POSIX: owners 1 and 2 conflict; FLUSH of 1 releases. */
		lk.type = F_WRLCK;
		assert_int_equal(tf_setlk(t, e.nodeid, fh1, 1, &lk, false,
					  false), 0);
		assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, false,
					  false), -EAGAIN);
		lk.start = 5;
		assert_int_equal(tf_getlk(t, e.nodeid, fh2, 2, &lk), 0);
		assert_int_equal(lk.type, F_WRLCK);
		assert_int_equal(lk.start, 0);
		/* Same owner again: no conflict with itself. */
		lk = (struct fuse_file_lock){ .end = 9, .type = F_WRLCK };
		assert_int_equal(tf_setlk(t, e.nodeid, fh1, 1, &lk, false,
					  false), 0);
		assert_int_equal(tf_flush(t, e.nodeid, fh1, 1), 0);
		assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, true,
					  false), 0);
		lk.type = F_UNLCK;
		assert_int_equal(tf_setlk(t, e.nodeid, fh2, 2, &lk, false,
					  false), 0);
	}
	assert_int_equal(tf_release(t, e.nodeid, fh1, false), 0);
	assert_int_equal(tf_release(t, e.nodeid, fh2, false), 0);
}

static void test_alloc_seek_copy(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e, e2;
	struct stat st;
	uint64_t fh, fh2, off;

	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "sp", O_RDWR, 0644, &e,
				   &fh), 0);
	assert_int_equal(tf_fallocate(t, e.nodeid, fh, 0, 0, 1 << 20), 0);
	assert_int_equal(stat(tf_host(f, "sp"), &st), 0);
	assert_int_equal(st.st_size, 1 << 20);
	assert_true(st.st_blocks * 512 >= 1 << 20);
	/* Punch the file empty, then write data at 512 KiB only. */
	assert_int_equal(tf_fallocate(t, e.nodeid, fh, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
	assert_int_equal(tf_write(t, e.nodeid, fh, 512 << 10, "data", 4), 4);
	assert_int_equal(tf_lseek(t, e.nodeid, fh, 0, SEEK_DATA, &off), 0);
	assert_int_equal(off, 512 << 10);
	assert_int_equal(tf_lseek(t, e.nodeid, fh, 512 << 10, SEEK_HOLE,
				  &off), 0);
	assert_true(off > 512 << 10);

	assert_int_equal(tf_create(t, FUSE_ROOT_ID, "cp", O_RDWR, 0644, &e2,
				   &fh2), 0);
	assert_int_equal(tf_copy_file_range(t, e.nodeid, fh, 512 << 10,
					    e2.nodeid, fh2, 10, 4), 4);
	check_host_bytes(f, "cp", 10, "data", 4);
	assert_int_equal(tf_release(t, e.nodeid, fh, false), 0);
	assert_int_equal(tf_release(t, e2.nodeid, fh2, false), 0);
}

static void test_forget(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_entry_out e;
	struct vqf_pt_stats s;

	assert_int_equal(tf_mknod(t, FUSE_ROOT_ID, "g", S_IFREG | 0644, 0, &e),
			 0);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "g", NULL), 0);
	s = tf_pt_stats(f);
	assert_int_equal(s.inodes, 2);
	tf_forget(t, e.nodeid, 1);
	assert_int_equal(tf_getattr(t, e.nodeid, NULL), 0);
	/* BATCH_FORGET drops the last reference. */
	{
		struct fuse_batch_forget_in b = { .count = 1 };
		struct fuse_forget_one one = { .nodeid = e.nodeid,
					       .nlookup = 1 };

		tf_begin(&t->m, FUSE_BATCH_FORGET, 0, 0);
		tf_put(&t->m, &b, sizeof(b));
		tf_put(&t->m, &one, sizeof(one));
		assert_int_equal(tf_send(t), VQF_BE_NO_REPLY);
	}
	s = tf_pt_stats(f);
	assert_int_equal(s.inodes, 1);
	assert_int_equal(tf_getattr(t, e.nodeid, NULL), -ESTALE);
	assert_int_equal(tf_lookup(t, FUSE_ROOT_ID, "g", NULL), 0);
}

/* io_uring is detected at start; VQF_PT_IO=pread turns it off. */
static void test_io_modes(void **state)
{
	struct vqf_pt_config cfg = { .source = "/tmp" };
	struct vqf_pt *pt;

	(void)state;
	setenv("VQF_PT_IO", "pread", 1);
	pt = vqf_pt_new(&cfg);
	unsetenv("VQF_PT_IO");
	assert_non_null(pt);
	assert_false(vqf_pt_uses_uring(pt));
	vqf_pt_free(pt);
	cfg.io = VQF_PT_IO_PREAD;
	pt = vqf_pt_new(&cfg);
	assert_non_null(pt);
	assert_false(vqf_pt_uses_uring(pt));
	vqf_pt_free(pt);
	cfg.source = "/nonexistent-vqf";
	assert_null(vqf_pt_new(&cfg));
	assert_int_equal(errno, ENOENT);
	cfg.source = "/etc/passwd";
	assert_null(vqf_pt_new(&cfg));
	assert_int_equal(errno, ENOTDIR);
}

/* New inodes belong to the caller named in the request header. */
static void set_caller(struct tf_msg *m, uint32_t uid, uint32_t gid)
{
	struct fuse_in_header h;

	memcpy(&h, m->buf, sizeof(h));
	h.uid = uid;
	h.gid = gid;
	memcpy(m->buf, &h, sizeof(h));
}

static void test_creds(void **state)
{
	struct tf_fs *f = *state;
	struct tf *t = &f->t;
	struct fuse_create_in ci = { .flags = O_RDWR, .mode = 0644 };
	struct fuse_mkdir_in mi = { .mode = 0777 };
	struct stat st;

	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(f->dir, 0777), 0);
	tf_begin(&t->m, FUSE_MKDIR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &mi, sizeof(mi));
	tf_puts(&t->m, "ud");
	set_caller(&t->m, 1234, 5678);
	assert_int_equal(tf_call(t), 0);
	assert_int_equal(stat(tf_host(f, "ud"), &st), 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);

	tf_begin(&t->m, FUSE_CREATE, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &ci, sizeof(ci));
	tf_puts(&t->m, "uf");
	set_caller(&t->m, 4321, 8765);
	assert_int_equal(tf_call(t), 0);
	assert_int_equal(stat(tf_host(f, "uf"), &st), 0);
	assert_int_equal(st.st_uid, 4321);
	assert_int_equal(st.st_gid, 8765);

	/* The caller's rights apply: 4321 may not write into root's 0755
	 * shared directory... */
	assert_int_equal(chmod(f->dir, 0755), 0);
	tf_begin(&t->m, FUSE_MKDIR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &mi, sizeof(mi));
	tf_puts(&t->m, "denied");
	set_caller(&t->m, 4321, 8765);
	assert_int_equal(tf_call(t), -EACCES);
	/* ...and the worker is root again afterwards. */
	assert_int_equal(tf_mkdir(t, FUSE_ROOT_ID, "rootdir", 0755, NULL), 0);
	assert_int_equal(stat(tf_host(f, "rootdir"), &st), 0);
	assert_int_equal(st.st_uid, 0);
}

/* Workers each in their own directory, all through one backend. */
#define THREADS 4

struct worker {
	struct tf_fs *f;
	int id, iters, ok;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct tf *t = calloc(1, sizeof(*t));
	struct fuse_entry_out d, e;
	char name[16], buf[64];
	uint64_t fh;
	int i;

	if (!t)
		return NULL;
	tf_setup(t, w->f->t.be);
	/* Disjoint uniques per thread. */
	t->unique = 1000000 * (uint64_t)(w->id + 1);
	snprintf(name, sizeof(name), "w%d", w->id);
	if (tf_mkdir(t, FUSE_ROOT_ID, name, 0755, &d))
		goto out;
	for (i = 0; i < w->iters; i++) {
		int n = snprintf(buf, sizeof(buf), "worker %d iter %d",
				 w->id, i);

		if (tf_create(t, d.nodeid, "f", O_RDWR, 0644, &e, &fh) ||
		    tf_write(t, e.nodeid, fh, 0, buf, n) != n ||
		    tf_read(t, e.nodeid, fh, 0, buf + 32, n) != n ||
		    memcmp(buf, buf + 32, n) ||
		    tf_release(t, e.nodeid, fh, false) ||
		    tf_unlink(t, d.nodeid, "f"))
			continue;
		tf_forget(t, e.nodeid, 1);
		w->ok++;
	}
	tf_rmdir(t, FUSE_ROOT_ID, name);
out:
	tf_teardown(t);
	free(t);
	return NULL;
}

static void test_threads(void **state)
{
	struct tf_fs *f = *state;
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct vqf_pt_stats s;
	int i, iters = getenv("VQF_UNDER_VALGRIND") ? 20 : 300;

	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .f = f, .id = i, .iters = iters };
		assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]),
				 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].ok, iters);
	}
	s = tf_pt_stats(f);
	assert_int_equal(s.files, 0);
	assert_int_equal(s.inodes, 1 + THREADS);	/* root + dirs */
	assert_int_equal(vqf_backend_inflight(f->t.be), 0);
}

#define ALL(setup) \
	cmocka_unit_test_setup_teardown(test_dirs, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_file_io, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_links_rename, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_mknod_fifo, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_readdir, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_statfs, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_xattr, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_locks, setup, teardown), \
	cmocka_unit_test_setup_teardown(test_alloc_seek_copy, setup, teardown)

int main(void)
{
	const struct CMUnitTest pt[] = {
		ALL(setup_pt),
		cmocka_unit_test_setup_teardown(test_forget, setup_pt,
						teardown),
		cmocka_unit_test_setup_teardown(test_creds, setup_pt,
						teardown),
		cmocka_unit_test(test_io_modes),
		cmocka_unit_test_setup_teardown(test_threads, setup_pt,
						teardown),
	};
	const struct CMUnitTest pt_pread[] = {
		ALL(setup_pt_pread),
	};
#ifdef VQF_TEST_PTLL
	const struct CMUnitTest ptll[] = {
		ALL(setup_ptll),
	};
#endif
	int fails = 0;

	fails += cmocka_run_group_tests_name("vqf_passthrough", pt, NULL,
					     NULL);
	fails += cmocka_run_group_tests_name("vqf_passthrough_pread",
					     pt_pread, NULL, NULL);
#ifdef VQF_TEST_PTLL
	fails += cmocka_run_group_tests_name("passthrough_ll", ptll, NULL,
					     NULL);
#else
	(void)setup_ptll;
#endif
	return fails;
}
