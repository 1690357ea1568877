// SPDX-License-Identifier: GPL-2.0
/*
 * vqf-posix users DIR - the multi-user part of the POSIX suite.  Run as
 * root; every step "as" another user runs in a child that has become
 * that user (setgroups, setresgid, setresuid: the kernel then fills
 * FUSE's in-header from those credentials, and the capabilities are
 * gone).  What each case checks is what a local file system (ext4,
 * tmpfs) does, so the suite passes there too; docs/posix.md lists what
 * a FUSE mount cannot give.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vqf-posix.h"

#define PLEN (2 * PATH_MAX)	/* DIR plus a name */
#define STAFF 4100		/* a group alice and bob are not in */

struct who {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[2];
};

static const struct who alice = { 4001, 4001, 1, { 4001 } };
static const struct who bob = { 4002, 4002, 1, { 4002 } };
/* In STAFF through a supplementary group only. */
static const struct who carol = { 4003, 4003, 2, { 4003, STAFF } };

static char base[PATH_MAX];

/* @fn(@arg) in a child that is @w; 0 if it returned 0. */
static int as(const struct who *w, int (*fn)(const char *), const char *arg)
{
	pid_t pid;
	int st;

	why[0] = 0;
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (!pid) {
		if (w && (setgroups(w->ngroups, w->groups) ||
			  setresgid(w->gid, w->gid, w->gid) ||
			  setresuid(w->uid, w->uid, w->uid))) {
			fail("cannot become uid %u: %s", w->uid,
			     strerror(errno));
			_exit(1);
		}
		_exit(fn(arg) ? 1 : 0);
	}
	CALL(waitpid(pid, &st, 0));
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	if (!why[0])
		fail("child as uid %d: status %#x", w ? (int)w->uid : 0, st);
	return -1;
}

/* DIR/@name/@sub into @out. */
static const char *at(char *out, const char *name, const char *sub)
{
	snprintf(out, PLEN, "%s/%s%s%s", base, name, sub ? "/" : "",
		 sub ? sub : "");
	return out;
}

/* A fresh case directory DIR/@name with @mode, owned by @uid:@gid. */
static int case_dir(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	char p[PLEN];

	at(p, name, NULL);
	CALL(mkdir(p, 0700));
	CALL(chown(p, uid, gid));
	CALL(chmod(p, mode));
	return 0;
}

static int file_at(const char *p, mode_t mode, uid_t uid, gid_t gid)
{
	int fd;

	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600));
	CALL(write(fd, "data\n", 5));
	close(fd);
	CALL(chown(p, uid, gid));
	CALL(chmod(p, mode));
	return 0;
}

/* lstat(@p) must show @uid:@gid and, for the bits in @mask, @mode. */
static int owner_is(const char *p, uid_t uid, gid_t gid, mode_t mask,
		    mode_t mode)
{
	struct stat st;

	CALL(lstat(p, &st));
	CHECK(st.st_uid == uid && st.st_gid == gid,
	      "%s: owner %u:%u, want %u:%u", p, st.st_uid, st.st_gid, uid,
	      gid);
	CHECK((st.st_mode & mask) == mode, "%s: mode %#o, want %#o in %#o",
	      p, st.st_mode, mode, mask);
	return 0;
}

/* ---- a user creates: the objects are theirs ---------------------------- */

static char cpath[PLEN];

static int c_create(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/f", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0644));
	CALL(write(fd, "x", 1));
	close(fd);
	snprintf(p, sizeof(p), "%s/d", d);
	CALL(mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/l", d);
	CALL(symlink("f", p));
	snprintf(p, sizeof(p), "%s/p", d);
	CALL(mkfifo(p, 0644));
	return 0;
}

static int t_create_owner(void)
{
	static const char *const names[] = { "f", "d", "l", "p" };
	char p[PLEN];

	if (case_dir("create", 0777, 0, 0))
		return -1;
	if (as(&alice, c_create, at(cpath, "create", NULL)))
		return -1;
	for (unsigned int i = 0; i < 4; i++)
		if (owner_is(at(p, "create", names[i]), alice.uid, alice.gid,
			     0, 0))
			return -1;
	return 0;
}

/* ---- permission bits: EACCES ------------------------------------------- */

static int c_eacces(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/secret", d);
	EXPECT_ERR(open(p, O_RDONLY), EACCES);
	snprintf(p, sizeof(p), "%s/pub", d);
	EXPECT_ERR(open(p, O_WRONLY), EACCES);
	EXPECT_ERR(access(p, W_OK), EACCES);
	CALL(fd = open(p, O_RDONLY));
	close(fd);
	EXPECT_ERR(unlink(p), EACCES);
	snprintf(p, sizeof(p), "%s/new", d);
	EXPECT_ERR(open(p, O_CREAT | O_WRONLY, 0644), EACCES);
	EXPECT_ERR(mkdir(p, 0755), EACCES);
	snprintf(p, sizeof(p), "%s/closed/x", d);
	EXPECT_ERR(open(p, O_RDONLY), EACCES);
	snprintf(p, sizeof(p), "%s/script", d);
	EXPECT_ERR(access(p, X_OK), EACCES);
	return 0;
}

static int t_eacces(void)
{
	char p[PLEN];

	if (case_dir("eacces", 0755, 0, 0) ||
	    file_at(at(p, "eacces", "secret"), 0600, 0, 0) ||
	    file_at(at(p, "eacces", "pub"), 0644, 0, 0) ||
	    file_at(at(p, "eacces", "script"), 0644, 0, 0))
		return -1;
	CALL(mkdir(at(p, "eacces", "closed"), 0700));
	if (file_at(at(p, "eacces", "closed/x"), 0644, 0, 0))
		return -1;
	return as(&alice, c_eacces, at(cpath, "eacces", NULL));
}

/* ---- sticky directories ------------------------------------------------ */

static int c_sticky_make(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/a", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0666));
	close(fd);
	return 0;
}

static int c_sticky_other(const char *d)
{
	char p[PLEN], q[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/a", d);
	snprintf(q, sizeof(q), "%s/b", d);
	EXPECT_ERR(unlink(p), EPERM);
	EXPECT_ERR(rename(p, q), EPERM);
	/* writable by all: the sticky bit only guards the name */
	CALL(fd = open(p, O_WRONLY));
	close(fd);
	return 0;
}

static int c_sticky_owner(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/a", d);
	CALL(unlink(p));
	return 0;
}

static int t_sticky(void)
{
	char p[PLEN];
	struct stat st;

	if (case_dir("sticky", 01777, 0, 0))
		return -1;
	at(p, "sticky", NULL);
	if (as(&alice, c_sticky_make, p) || as(&bob, c_sticky_other, p) ||
	    as(&alice, c_sticky_owner, p))
		return -1;
	EXPECT_ERR(lstat(at(p, "sticky", "a"), &st), ENOENT);
	return 0;
}

/* ---- set-group-ID directories ----------------------------------------- */

static int c_setgid(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/f", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
	close(fd);
	snprintf(p, sizeof(p), "%s/d", d);
	CALL(mkdir(p, 0755));
	/* not in STAFF: a new file's S_ISGID goes (inode_init_owner) */
	snprintf(p, sizeof(p), "%s/g", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 02755));
	close(fd);
	return 0;
}

static int t_setgid_dir(void)
{
	char p[PLEN];

	if (case_dir("setgid", 02777, 0, STAFF) ||
	    as(&alice, c_setgid, at(cpath, "setgid", NULL)))
		return -1;
	/* the directory's group, and subdirectories stay set-group-ID */
	if (owner_is(at(p, "setgid", "f"), alice.uid, STAFF, 07777, 0644) ||
	    owner_is(at(p, "setgid", "d"), alice.uid, STAFF, 07777, 02755) ||
	    owner_is(at(p, "setgid", "g"), alice.uid, STAFF, 07777, 0755))
		return -1;
	return 0;
}

/* ---- supplementary groups --------------------------------------------- */

static int c_supp_member(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/r", d);
	CALL(fd = open(p, O_RDONLY));
	close(fd);
	snprintf(p, sizeof(p), "%s/f", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 02755));
	close(fd);
	snprintf(p, sizeof(p), "%s/d", d);
	CALL(mkdir(p, 0750));
	return 0;
}

static int c_supp_other(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/r", d);
	EXPECT_ERR(open(p, O_RDONLY), EACCES);
	return 0;
}

/* The test folder is on a virtio-fs mount (in-tree virtiofs or vqfuse). */
static bool on_virtio_fs(void)
{
	char dev[256], mnt[PATH_MAX], type[64];
	bool virtio = false;
	size_t best = 0;
	FILE *m;

	m = fopen("/proc/self/mounts", "r");
	while (m && fscanf(m, "%255s %4095s %63s %*[^\n]", dev, mnt,
			   type) == 3) {
		size_t n = strlen(mnt);

		if (!strncmp(base, mnt, n) && (base[n] == '/' || !base[n] ||
					       n == 1) && n >= best) {
			best = n;
			virtio = !strcmp(type, "virtiofs") ||
				 !strcmp(type, "vqfuse");
		}
	}
	if (m)
		fclose(m);
	return virtio;
}

/*
 * Linux before 6.2 sends a guest's caller without supplementary groups
 * (FUSE_CREATE_SUPP_GROUP): a server cannot create as a member of a
 * group the caller has only as a supplementary one.
 */
static bool old_virtio_fs(void)
{
	struct utsname u;
	unsigned int maj = 0, min = 0;

	if (!on_virtio_fs() || uname(&u) ||
	    sscanf(u.release, "%u.%u", &maj, &min) < 2)
		return false;
	return maj < 6 || (maj == 6 && min < 2);
}

static int t_supp_groups(void)
{
	char p[PLEN];

	if (old_virtio_fs()) {
		fail("this guest kernel (< 6.2) lacks FUSE_CREATE_SUPP_GROUP");
		return 1;
	}
	/*
	 * 6.2+ sends the caller's group only to a daemon that sets
	 * FUSE_CREATE_SUPP_GROUP in its INIT reply; neither QEMU 7.2's
	 * virtiofsd nor vqfuse-sim does, so a member's create is refused
	 * by the host.  The host says when its daemon does.
	 */
	if (on_virtio_fs() && !getenv("VQF_DAEMON_SUPP_GROUP")) {
		fail("the daemon does not set FUSE_CREATE_SUPP_GROUP");
		return 1;
	}
	if (case_dir("supp", 02770, 0, STAFF) ||
	    file_at(at(p, "supp", "r"), 0640, 0, STAFF) ||
	    as(&carol, c_supp_member, at(cpath, "supp", NULL)) ||
	    as(&bob, c_supp_other, cpath))
		return -1;
	/* a member keeps S_ISGID on what it creates */
	if (owner_is(at(p, "supp", "f"), carol.uid, STAFF, 07777, 02755) ||
	    owner_is(at(p, "supp", "d"), carol.uid, STAFF, 07777, 02750))
		return -1;
	return 0;
}

/* ---- chmod ---------------------------------------------------------------- */

static int c_chmod_make(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/f", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
	close(fd);
	snprintf(p, sizeof(p), "%s/g", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
	close(fd);
	return 0;
}

static int c_chmod_other(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/f", d);
	EXPECT_ERR(chmod(p, 0777), EPERM);
	return 0;
}

static int c_chmod_owner(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/f", d);
	CALL(chmod(p, 02750));
	/* g belongs to STAFF now: S_ISGID silently dropped */
	snprintf(p, sizeof(p), "%s/g", d);
	CALL(chmod(p, 02755));
	return 0;
}

static int t_chmod(void)
{
	char p[PLEN];

	if (case_dir("chmod", 0777, 0, 0))
		return -1;
	at(cpath, "chmod", NULL);
	if (as(&alice, c_chmod_make, cpath))
		return -1;
	CALL(chown(at(p, "chmod", "g"), alice.uid, STAFF));
	if (as(&bob, c_chmod_other, cpath) || as(&alice, c_chmod_owner, cpath))
		return -1;
	if (owner_is(at(p, "chmod", "f"), alice.uid, alice.gid, 07777,
		     02750) ||
	    owner_is(at(p, "chmod", "g"), alice.uid, STAFF, 07777, 0755))
		return -1;
	CALL(chmod(at(p, "chmod", "f"), 0600));
	return owner_is(p, alice.uid, alice.gid, 07777, 0600);
}

/* ---- chown ---------------------------------------------------------------- */

static int c_chown_alice(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/f", d);
	EXPECT_ERR(chown(p, bob.uid, -1), EPERM);
	EXPECT_ERR(chown(p, -1, STAFF), EPERM);
	CALL(chown(p, alice.uid, alice.gid));	/* no change: allowed */
	snprintf(p, sizeof(p), "%s/c", d);
	EXPECT_ERR(chown(p, -1, alice.gid), EPERM);
	return 0;
}

static int c_chown_carol(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/c", d);
	CALL(fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644));
	close(fd);
	/* a group the owner is in, if only as a supplementary one */
	CALL(chown(p, -1, STAFF));
	return 0;
}

static int t_chown(void)
{
	char p[PLEN];
	int fd;

	if (case_dir("chown", 0777, 0, 0))
		return -1;
	at(cpath, "chown", NULL);
	CALL(fd = open(at(p, "chown", "f"), O_CREAT | O_EXCL | O_WRONLY,
		       0644));
	close(fd);
	CALL(chown(p, alice.uid, alice.gid));
	if (as(&carol, c_chown_carol, cpath) ||
	    as(&alice, c_chown_alice, cpath))
		return -1;
	if (owner_is(at(p, "chown", "c"), carol.uid, STAFF, 0, 0))
		return -1;
	CALL(chown(at(p, "chown", "f"), bob.uid, bob.gid));
	return owner_is(p, bob.uid, bob.gid, 0, 0);
}

/* ---- utimensat ------------------------------------------------------------ */

static const struct timespec set_times[2] = {
	{ 1000000000, 0 }, { 1100000000, 0 },
};

static int c_utime_other(const char *d)
{
	const struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/w", d);
	/* write access lets anyone set "now", not a chosen time */
	CALL(utimensat(AT_FDCWD, p, NULL, 0));
	CALL(utimensat(AT_FDCWD, p, now, 0));
	EXPECT_ERR(utimensat(AT_FDCWD, p, set_times, 0), EPERM);
	snprintf(p, sizeof(p), "%s/r", d);
	EXPECT_ERR(utimensat(AT_FDCWD, p, NULL, 0), EACCES);
	EXPECT_ERR(utimensat(AT_FDCWD, p, set_times, 0), EPERM);
	return 0;
}

static int c_utime_owner(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/r", d);
	CALL(utimensat(AT_FDCWD, p, set_times, 0));
	return 0;
}

static int t_utimensat(void)
{
	char p[PLEN];
	struct stat st;

	if (case_dir("utime", 0777, 0, 0) ||
	    file_at(at(p, "utime", "w"), 0666, alice.uid, alice.gid) ||
	    file_at(at(p, "utime", "r"), 0644, alice.uid, alice.gid))
		return -1;
	at(cpath, "utime", NULL);
	if (as(&bob, c_utime_other, cpath) || as(&alice, c_utime_owner, cpath))
		return -1;
	CALL(stat(at(p, "utime", "r"), &st));
	CHECK(st.st_mtime == set_times[1].tv_sec &&
	      st.st_atime == set_times[0].tv_sec, "times %ld %ld",
	      (long)st.st_atime, (long)st.st_mtime);
	return 0;
}

/* ---- set-user-ID and set-group-ID bits cleared ----------------------------- */

static int c_killpriv(const char *d)
{
	char p[PLEN];
	int fd;

	snprintf(p, sizeof(p), "%s/w", d);
	CALL(fd = open(p, O_WRONLY));
	CALL(write(fd, "more", 4));
	close(fd);
	snprintf(p, sizeof(p), "%s/t", d);
	CALL(truncate(p, 1));
	return 0;
}

static int t_killpriv(void)
{
	char p[PLEN];
	int fd;

	if (case_dir("killpriv", 0777, 0, 0) ||
	    file_at(at(p, "killpriv", "w"), 06775, alice.uid, alice.gid) ||
	    file_at(at(p, "killpriv", "t"), 06775, alice.uid, alice.gid) ||
	    file_at(at(p, "killpriv", "root"), 06755, 0, 0) ||
	    file_at(at(p, "killpriv", "c"), 06755, alice.uid, alice.gid))
		return -1;
	/* written or truncated by a user: both bits go */
	if (as(&alice, c_killpriv, at(cpath, "killpriv", NULL)) ||
	    owner_is(at(p, "killpriv", "w"), alice.uid, alice.gid, 07777,
		     0775) ||
	    owner_is(at(p, "killpriv", "t"), alice.uid, alice.gid, 07777,
		     0775))
		return -1;
	/* written by root (CAP_FSETID): they stay */
	CALL(fd = open(at(p, "killpriv", "root"), O_WRONLY));
	CALL(write(fd, "more", 4));
	close(fd);
	if (owner_is(p, 0, 0, 07777, 06755))
		return -1;
	/* chown clears them whoever does it */
	CALL(chown(at(p, "killpriv", "c"), bob.uid, bob.gid));
	return owner_is(p, bob.uid, bob.gid, 07777, 0755);
}

/* ---- device nodes and FIFOs ------------------------------------------------ */

static int c_mknod_user(const char *d)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s/uchr", d);
	EXPECT_ERR(mknod(p, S_IFCHR | 0600, makedev(1, 3)), EPERM);
	snprintf(p, sizeof(p), "%s/ufifo", d);
	CALL(mknod(p, S_IFIFO | 0600, 0));
	return 0;
}

static int t_mknod(void)
{
	static const struct {
		const char *name;
		mode_t mode;
		dev_t dev;
	} n[] = {
		{ "fifo", S_IFIFO | 0644, 0 },
		{ "chr", S_IFCHR | 0600, 0 },
		{ "blk", S_IFBLK | 0600, 0 },
	};
	char p[PLEN];
	struct stat st;

	if (case_dir("mknod", 0777, 0, 0))
		return -1;
	for (unsigned int i = 0; i < 3; i++) {
		dev_t dev = i == 1 ? makedev(1, 3) : i == 2 ? makedev(7, 0) :
			    n[i].dev;

		CALL(mknod(at(p, "mknod", n[i].name), n[i].mode, dev));
		CALL(lstat(p, &st));
		CHECK(st.st_mode == n[i].mode && (i == 0 || st.st_rdev == dev),
		      "%s: mode %#o rdev %#lx", n[i].name, st.st_mode,
		      (unsigned long)st.st_rdev);
	}
	if (as(&alice, c_mknod_user, at(cpath, "mknod", NULL)))
		return -1;
	return owner_is(at(p, "mknod", "ufifo"), alice.uid, alice.gid,
			S_IFMT | 07777, S_IFIFO | 0600);
}

/* ---- the longest path the kernel takes ------------------------------------ */

/*
 * From DIR/path (itself below the mount's root, so the bridge sees a
 * longer path still): components of up to 255 bytes making a relative
 * path of exactly 4095 bytes, the longest the kernel accepts.
 */
static int c_long_path(const char *d)
{
	static char p[4200];
	size_t len = 0;
	struct stat st;
	int fd;

	CALL(chdir(d));
	while (4095 - len > 256) {
		if (len)
			p[len++] = '/';
		memset(p + len, 'a' + (char)(len % 26), 200);
		len += 200;
		p[len] = 0;
		CALL(mkdir(p, 0755));
	}
	p[len++] = '/';
	memset(p + len, 'z', 4095 - len);
	len = 4095;
	p[len] = 0;
	CALL(fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0644));
	CALL(write(fd, "deep", 4));
	close(fd);
	CALL(stat(p, &st));
	CHECK(st.st_size == 4, "size %lld", (long long)st.st_size);
	CALL(chmod(p, 0600));
	CALL(truncate(p, 2));
	CALL(unlink(p));
	/* one more byte is the kernel's limit, not the file system's */
	p[len++] = 'z';
	p[len] = 0;
	EXPECT_ERR(open(p, O_CREAT | O_RDWR, 0644), ENAMETOOLONG);
	return 0;
}

static int t_path_max(void)
{
	if (case_dir("path", 0755, 0, 0))
		return -1;
	return as(NULL, c_long_path, at(cpath, "path", NULL));
}

/* ---- space given back after unlink ------------------------------------------ */

#define SPACE_FILES 3
#define SPACE_SIZE (16u << 20)

static unsigned long long free_bytes(void)
{
	struct statvfs sv;

	if (statvfs(base, &sv))
		return 0;
	return (unsigned long long)sv.f_bfree * sv.f_frsize;
}

static int t_unlink_space(void)
{
	unsigned long long before, now = 0;
	char p[PLEN], *buf;
	int fd = -1, held = -1;

	if (case_dir("space", 0755, 0, 0))
		return -1;
	buf = malloc(1 << 20);
	if (!buf)
		return fail("out of memory");
	memset(buf, 0x5a, 1 << 20);
	for (unsigned int i = 0; i < SPACE_FILES; i++) {
		snprintf(p, sizeof(p), "%s/space/f%u", base, i);
		fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		for (unsigned int mb = 0; fd >= 0 && mb < SPACE_SIZE >> 20;
		     mb++)
			if (write(fd, buf, 1 << 20) != 1 << 20)
				break;
		if (fd < 0 || fsync(fd)) {
			free(buf);
			return fail("writing %s: %s", p, strerror(errno));
		}
		/* the last one is unlinked while still open */
		if (i + 1 == SPACE_FILES)
			held = fd;
		else
			close(fd);
	}
	free(buf);
	/*
	 * Counted from here, with the files written and synced: the host
	 * disk is shared with whatever else runs there (a kernel build
	 * writes faster than these files), so only the short time from the
	 * unlinks to the space coming back is exposed to other writers.
	 */
	before = free_bytes();
	for (unsigned int i = 0; i < SPACE_FILES; i++) {
		snprintf(p, sizeof(p), "%s/space/f%u", base, i);
		CALL(unlink(p));
	}
	close(held);
	/*
	 * The FORGET that lets the server close the inode may still be on
	 * its way: wait for it, far beyond any delay it could have.  Half
	 * the bytes is the bound, for other writers on the same disk.
	 */
	for (unsigned int i = 0; i < 600; i++) {
		now = free_bytes();
		if (now >= before + SPACE_FILES * (SPACE_SIZE / 2))
			return 0;
		usleep(50000);
	}
	return fail("%llu bytes free before unlink, %llu after",
		    before, now);
}

static const struct tcase users_cases[] = {
	{ "users_create_owner", t_create_owner },
	{ "users_eacces", t_eacces },
	{ "users_sticky", t_sticky },
	{ "users_setgid_dir", t_setgid_dir },
	{ "users_supp_groups", t_supp_groups },
	{ "users_chmod", t_chmod },
	{ "users_chown", t_chown },
	{ "users_utimensat", t_utimensat },
	{ "users_killpriv", t_killpriv },
	{ "users_mknod", t_mknod },
	{ "users_path_max", t_path_max },
	{ "users_unlink_space", t_unlink_space },
};

int vqf_posix_users(const char *dir)
{
	if (geteuid()) {
		fprintf(stderr, "vqf-posix users: run as root\n");
		return 2;
	}
	if (!realpath(dir, base) && (mkdir(dir, 0755) || !realpath(dir, base))) {
		perror(dir);
		return 2;
	}
	return run_ktap("vqf-posix-users", users_cases,
			sizeof(users_cases) / sizeof(users_cases[0]));
}
