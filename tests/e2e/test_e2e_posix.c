// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_posix - the client's share of POSIX fidelity over the whole
 * simulated machine, without a mount (tests/mount's test_mount_posix runs
 * the multi-user suite through one): the caller's credentials in each
 * request, set-ID bits cleared by a user's write, paths longer than
 * PATH_MAX from the root, an unlinked inode forgotten as soon as it is
 * unused, and no lock request for an unlock nobody needs.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"

static int setup_cache(void **state, enum vqf_gcli_cache cache)
{
	struct vqf_sim_cfg sc = { .cli = { .cache = cache } };
	struct e2e *e;
	int ret = e2e_new(&e, &sc, VQF_SIM_FS_VQFUSE);

	if (ret) {
		fprintf(stderr, "e2e_new: %s\n", strerror(-ret));
		return -1;
	}
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_cache(state, VQF_GCLI_CACHE_NONE);
}

static int setup_always(void **state)
{
	return setup_cache(state, VQF_GCLI_CACHE_ALWAYS);
}

static int teardown(void **state)
{
	struct e2e *e = *state;

	vqf_gcli_set_creds(e->c, NULL);	/* a failed case may leave them */
	return e2e_free(e);
}

static void host_owner(struct e2e *e, const char *name, uid_t uid, gid_t gid)
{
	struct stat st;

	assert_int_equal(lstat(e2e_host(e, name), &st), 0);
	assert_int_equal(st.st_uid, uid);
	assert_int_equal(st.st_gid, gid);
}

static void make(struct e2e *e, const char *path, mode_t mode)
{
	int fd = vqf_gcli_open(e->c, path, O_CREAT | O_EXCL | O_WRONLY, mode);

	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_write(e->c, fd, "x", 1), 1);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
}

static void *make_uncredited(void *arg)
{
	make(arg, "thread", 0644);
	return NULL;
}

/* Each thread's calls carry what it set, or the client's own. */
static void test_creds(void **state)
{
	const struct vqf_gcli_creds alice = { 4001, 4002, 77 };
	struct e2e *e = *state;
	pthread_t t;

	if (geteuid())
		skip();		/* the server creates as the caller as root */
	assert_int_equal(chmod(e->dir, 0777), 0);
	vqf_gcli_set_creds(e->c, &alice);
	make(e, "file", 0644);
	assert_int_equal(vqf_gcli_mkdir(e->c, "dir", 0755), 0);
	assert_int_equal(vqf_gcli_symlink(e->c, "file", "link"), 0);
	assert_int_equal(vqf_gcli_mknod(e->c, "fifo", S_IFIFO | 0644, 0), 0);
	host_owner(e, "file", 4001, 4002);
	host_owner(e, "dir", 4001, 4002);
	host_owner(e, "link", 4001, 4002);
	host_owner(e, "fifo", 4001, 4002);
	/* Another thread has not said who it is: the client's creds. */
	assert_int_equal(pthread_create(&t, NULL, make_uncredited, e), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	host_owner(e, "thread", 0, 0);
	vqf_gcli_set_creds(e->c, NULL);
	make(e, "again", 0644);
	host_owner(e, "again", 0, 0);
}

static mode_t host_mode(struct e2e *e, const char *name)
{
	struct stat st;

	assert_int_equal(lstat(e2e_host(e, name), &st), 0);
	return st.st_mode & 07777;
}

static void write_as(struct e2e *e, const char *name, uid_t uid)
{
	const struct vqf_gcli_creds cr = { uid, uid, 1 };
	int fd;

	fd = vqf_gcli_open(e->c, name, O_WRONLY, 0);
	assert_true(fd >= 0);
	vqf_gcli_set_creds(e->c, &cr);
	assert_int_equal(vqf_gcli_write(e->c, fd, "more", 4), 4);
	vqf_gcli_set_creds(e->c, NULL);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
}

/* file_remove_privs(): a user's write clears S_ISUID and S_ISGID. */
static void test_killpriv(void **state)
{
	struct e2e *e = *state;

	make(e, "suid", 0644);
	assert_int_equal(vqf_gcli_chmod(e->c, "suid", 06775), 0);
	assert_int_equal(host_mode(e, "suid"), 06775);
	/* Root (CAP_FSETID) keeps them; nor does a no-op write request. */
	write_as(e, "suid", 0);
	assert_int_equal(host_mode(e, "suid"), 06775);
	write_as(e, "suid", 4001);
	assert_int_equal(host_mode(e, "suid"), 0775);
	/* S_ISGID without group execute is a mandatory-locking mark. */
	make(e, "sgid", 0644);
	assert_int_equal(vqf_gcli_chmod(e->c, "sgid", 02664), 0);
	write_as(e, "sgid", 4001);
	assert_int_equal(host_mode(e, "sgid"), 02664);
}

/*
 * Paths from the root longer than PATH_MAX (what a bridge builds for a
 * host path relative to a deep directory): only a component is bounded.
 */
static void test_long_path(void **state)
{
	static char p[PATH_MAX + 1200], name[NAME_MAX + 2];
	struct e2e *e = *state;
	struct stat st;
	size_t len = 0;

	while (len < PATH_MAX + 800) {
		if (len)
			p[len++] = '/';
		memset(p + len, 'a' + (char)(len % 26), 200);
		len += 200;
		p[len] = 0;
		assert_int_equal(vqf_gcli_mkdir(e->c, p, 0755), 0);
	}
	strcat(p, "/file");
	make(e, p, 0644);
	assert_int_equal(vqf_gcli_stat(e->c, p, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(vqf_gcli_truncate(e->c, p, 0), 0);
	assert_int_equal(vqf_gcli_unlink(e->c, p), 0);
	memset(name, 'n', NAME_MAX + 1);
	assert_int_equal(vqf_gcli_mkdir(e->c, name, 0755), -ENAMETOOLONG);
	name[NAME_MAX] = 0;
	assert_int_equal(vqf_gcli_mkdir(e->c, name, 0755), 0);
}

static u64 forgets(struct e2e *e)
{
	return e2e_stats(e).cli.forgets;
}

static u64 server_inodes(struct e2e *e)
{
	vqf_gdrv_forget_flush(e->g);
	return e2e_stats(e).pt.inodes;
}

/*
 * The last name of an inode goes: unused, it is forgotten at once and
 * the server lets the file go; open, at the last close; another link
 * keeps it.
 */
static void test_prompt_forget(void **state)
{
	struct e2e *e = *state;
	u64 f0, in0;
	int fd;

	in0 = server_inodes(e);
	make(e, "gone", 0644);
	assert_int_equal(vqf_gcli_mkdir(e->c, "dir", 0755), 0);
	f0 = forgets(e);
	assert_int_equal(vqf_gcli_unlink(e->c, "gone"), 0);
	assert_int_equal(vqf_gcli_rmdir(e->c, "dir"), 0);
	assert_true(forgets(e) > f0);
	assert_int_equal(server_inodes(e), in0);

	make(e, "held", 0644);
	fd = vqf_gcli_open(e->c, "held", O_RDONLY, 0);
	assert_true(fd >= 0);
	f0 = forgets(e);
	assert_int_equal(vqf_gcli_unlink(e->c, "held"), 0);
	assert_int_equal(forgets(e), f0);
	assert_int_equal(server_inodes(e), in0 + 1);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(forgets(e) > f0);
	assert_int_equal(server_inodes(e), in0);

	make(e, "one", 0644);
	assert_int_equal(vqf_gcli_link(e->c, "one", "two"), 0);
	f0 = forgets(e);
	assert_int_equal(vqf_gcli_unlink(e->c, "one"), 0);
	assert_int_equal(forgets(e), f0);
	assert_int_equal(vqf_gcli_unlink(e->c, "two"), 0);
	assert_true(forgets(e) > f0);
	assert_int_equal(server_inodes(e), in0);
}

/* An unlock where no POSIX lock was ever asked for sends nothing. */
static void test_unlock_free(void **state)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	struct e2e *e = *state;
	u64 n;
	int fd;

	make(e, "lk", 0644);
	fd = vqf_gcli_open(e->c, "lk", O_RDWR, 0);
	assert_true(fd >= 0);
	n = e2e_sent(e, FUSE_SETLK);
	assert_int_equal(vqf_gcli_lock_owner(e->c, fd, F_SETLK, &fl, 42), 0);
	assert_int_equal(e2e_sent(e, FUSE_SETLK), n);
	fl.l_type = F_WRLCK;
	assert_int_equal(vqf_gcli_lock_owner(e->c, fd, F_SETLK, &fl, 42), 0);
	fl.l_type = F_UNLCK;
	assert_int_equal(vqf_gcli_lock_owner(e->c, fd, F_SETLK, &fl, 42), 0);
	assert_int_equal(e2e_sent(e, FUSE_SETLK), n + 2);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TA(fn) cmocka_unit_test_setup_teardown(fn, setup_always, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_creds),
		T(test_killpriv),
		T(test_long_path),
		T(test_prompt_forget),
		TA(test_prompt_forget),
		T(test_unlock_free),
	};

	return cmocka_run_group_tests_name("e2e_posix", tests, NULL, NULL);
}
