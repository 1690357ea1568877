// SPDX-License-Identifier: GPL-2.0
/*
 * POSIX operation suite for a virtio-fs mount, run inside the QEMU guest.
 *
 *   vqf-posix run DIR      exercise every operation under DIR (must be empty
 *                          or absent), print KTAP, leave known content behind
 *   vqf-posix verify DIR   check that content byte for byte and by metadata,
 *                          print KTAP; runs in the guest after a remount and
 *                          on the host after the guest exits, so what reached
 *                          the shared directory is checked, not a page cache
 *   vqf-posix users DIR    the multi-user part (vqf-posix-users.c): steps as
 *                          other users in children, run as root
 *
 * Exit status: 0 when every case passed, 1 otherwise.  Static, no deps.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "vqf-posix.h"

#define FUSE_SUPER_MAGIC 0x65735546
#define GIB (1ull << 30)

int dfd = -1;
static const char *top;
char *why;

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, VQF_WHY_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- expected leftovers: one table drives the writer and both checks ---- */

struct range {
	uint64_t off;
	uint64_t len;
};

struct pfile {
	const char *name;
	uint32_t seed;
	uint64_t size;
	/* Pattern ranges; everything else is a hole (zeros).  NULL: all. */
	const struct range *r;
	unsigned int nr;
};

static const struct range pwrite_r[] = {
	{ 0, 100 }, { 8192, 5000 }, { 200000, 1 },
};
static const struct range trunc_r[] = { { 0, 5000 } };
static const struct range big_r[] = {
	/* straddles the 32-bit offset boundary */
	{ 4 * GIB - 100, 200 }, { 5 * GIB, 4096 },
};

#define SEQ_SIZE (1024 * 1024 + 123)
#define APP_SIZE (300000)
#define MMAP_SIZE (3 * 4096 + 100)
#define DIRECT_SIZE (128 * 1024)
#define NDIR 1000

static const struct pfile pfiles[] = {
	{ "seq.bin", 1, SEQ_SIZE, NULL, 0 },
	{ "append.bin", 2, APP_SIZE, NULL, 0 },
	{ "pwrite.bin", 3, 200001, pwrite_r, 3 },
	{ "trunc.bin", 4, 20000, trunc_r, 1 },
	/* after RENAME_EXCHANGE each name holds the other's content */
	{ "xa", 6, 7000, NULL, 0 },
	{ "xb", 5, 3000, NULL, 0 },
	{ "link.orig", 7, 4096, NULL, 0 },
	{ "link.hard", 7, 4096, NULL, 0 },
	{ "mmap.bin", 8, MMAP_SIZE, NULL, 0 },
	{ "big.bin", 9, 5 * GIB + 4096, big_r, 2 },
	{ "direct.bin", 10, DIRECT_SIZE, NULL, 0 },
	{ "ren.dst", 11, 1234, NULL, 0 },
	{ "sub/moved", 12, 999, NULL, 0 },
};

#define SYMLINK_TARGET "target/of/the/link"
#define XATTR_KEEP "user.vqf.keep"
#define XATTR_KEEP_VAL "kept-value-0123456789"
#define CHOWN_UID 1234
#define CHOWN_GID 5678
static const struct timespec utime_want[2] = {
	{ 1000000000, 123456789 }, { 1200000000, 987654321 },
};

/* Top-level names that must exist after a run, and nothing else. */
static const char *const top_names[] = {
	"seq.bin", "append.bin", "pwrite.bin", "trunc.bin", "xa", "xb",
	"link.orig", "link.hard", "mmap.bin", "big.bin", "direct.bin",
	"ren.dst", "sub", "sym", "dir1000", "meta.chmod", "meta.chown",
	"meta.utime", "meta.xattr", "create.txt", "lock.bin", "open.txt",
	"stat.bin", "sync.bin",
};

static bool in_range(const struct pfile *f, uint64_t off)
{
	unsigned int i;

	if (!f->r)
		return true;
	for (i = 0; i < f->nr; i++)
		if (off >= f->r[i].off && off < f->r[i].off + f->r[i].len)
			return true;
	return false;
}

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

static int write_pattern(int fd, uint32_t seed, uint64_t off, uint64_t len)
{
	char buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		vqf_pat_fill(seed, off, buf, n);
		if (write_all(fd, buf, n, off))
			return -1;
		off += n;
		len -= n;
	}
	return 0;
}

/* Compare [off, off+len) of fd with what f says belongs there. */
static int check_span(int fd, const struct pfile *f, uint64_t off, uint64_t len)
{
	static char buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t got = pread(fd, buf, n, off);
		size_t i;

		if (got < 0)
			return fail("%s: pread at %llu: %s", f->name,
				    (unsigned long long)off, strerror(errno));
		if ((size_t)got != n)
			return fail("%s: short read at %llu: %zd of %zu",
				    f->name, (unsigned long long)off, got, n);
		for (i = 0; i < n; i++) {
			uint8_t want = in_range(f, off + i) ?
				vqf_pat_byte(f->seed, off + i) : 0;

			if ((uint8_t)buf[i] != want)
				return fail("%s: byte %llu is %#x, want %#x",
					    f->name,
					    (unsigned long long)(off + i),
					    (uint8_t)buf[i], want);
		}
		off += n;
		len -= n;
	}
	return 0;
}

static int verify_pfile(const struct pfile *f)
{
	struct stat st;
	unsigned int i;
	int fd, ret = 0;

	fd = openat(dfd, f->name, O_RDONLY);
	if (fd < 0)
		return fail("%s: open: %s", f->name, strerror(errno));
	if (fstat(fd, &st) || (uint64_t)st.st_size != f->size) {
		close(fd);
		return fail("%s: size %lld, want %llu", f->name,
			    (long long)st.st_size, (unsigned long long)f->size);
	}
	if (f->size <= 16ull << 20) {
		ret = check_span(fd, f, 0, f->size);
	} else {
		/* Sparse giant: every pattern byte, 64 KiB of hole around
		 * each range, the first and last 64 KiB.
		 */
		ret = check_span(fd, f, 0, 65536);
		if (!ret)
			ret = check_span(fd, f, f->size - 65536, 65536);
		for (i = 0; !ret && i < f->nr; i++)
			ret = check_span(fd, f, f->r[i].off - 65536,
					 f->r[i].len + 65536 +
					 (f->r[i].off + f->r[i].len + 65536 <=
					  f->size ? 65536 : 0));
	}
	close(fd);
	return ret;
}

static int read_small(const char *name, char *buf, size_t len)
{
	int fd = openat(dfd, name, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/* ---------------------------------- run ---------------------------------- */

static int t_create(void)
{
	struct stat st;
	int fd;

	CALL(fd = openat(dfd, "create.txt", O_CREAT | O_EXCL | O_WRONLY, 0644));
	CALL(fstat(fd, &st));
	close(fd);
	CHECK(st.st_mode == (S_IFREG | 0644), "mode %o", st.st_mode);
	CHECK(st.st_size == 0, "size %lld", (long long)st.st_size);
	EXPECT_ERR(openat(dfd, "create.txt", O_CREAT | O_EXCL | O_WRONLY,
			  0644), EEXIST);
	CALL(fd = openat(dfd, "create.txt", O_CREAT | O_WRONLY, 0600));
	close(fd);
	CALL(fstatat(dfd, "create.txt", &st, 0));
	CHECK(st.st_mode == (S_IFREG | 0644), "O_CREAT changed mode to %o",
	      st.st_mode);
	return 0;
}

static int t_open(void)
{
	struct stat st;
	char c;
	int fd;

	EXPECT_ERR(openat(dfd, "no-such-file", O_RDONLY), ENOENT);
	EXPECT_ERR(openat(dfd, "create.txt/x", O_RDONLY), ENOTDIR);
	CALL(fd = openat(dfd, "open.txt", O_CREAT | O_WRONLY, 0644));
	CALL(write(fd, "0123456789", 10));
	close(fd);
	CALL(fd = openat(dfd, "open.txt", O_WRONLY | O_TRUNC));
	CALL(fstat(fd, &st));
	CHECK(st.st_size == 0, "O_TRUNC left %lld bytes",
	      (long long)st.st_size);
	EXPECT_ERR(read(fd, &c, 1), EBADF);
	close(fd);
	CALL(fd = openat(dfd, "open.txt", O_RDONLY));
	EXPECT_ERR(write(fd, "x", 1), EBADF);
	close(fd);
	EXPECT_ERR(openat(dfd, ".", O_WRONLY), EISDIR);
	return 0;
}

static int t_write_read(void)
{
	static const size_t chunks[] = { 1, 4095, 4096, 65543, 3, 131072 };
	static char buf[131072];
	uint64_t off = 0;
	unsigned int i = 0;
	ssize_t n;
	int fd;

	CALL(fd = openat(dfd, "seq.bin", O_CREAT | O_WRONLY | O_EXCL, 0644));
	while (off < SEQ_SIZE) {
		size_t len = chunks[i++ % 6];

		if (len > SEQ_SIZE - off)
			len = SEQ_SIZE - off;
		vqf_pat_fill(1, off, buf, len);
		n = write(fd, buf, len);
		CHECK(n == (ssize_t)len, "write %zd of %zu at %llu: %s", n,
		      len, (unsigned long long)off, strerror(errno));
		off += len;
	}
	CALL(close(fd));
	/* read back with different chunking than the writes */
	CALL(fd = openat(dfd, "seq.bin", O_RDONLY));
	for (off = 0, i = 3;; i++) {
		size_t len = chunks[i % 6];

		n = read(fd, buf, len);
		CHECK(n >= 0, "read: %s", strerror(errno));
		if (!n)
			break;
		CHECK(vqf_pat_check(1, off, buf, n) == (size_t)n,
		      "mismatch near %llu", (unsigned long long)off);
		off += n;
	}
	close(fd);
	CHECK(off == SEQ_SIZE, "read %llu bytes, want %u",
	      (unsigned long long)off, SEQ_SIZE);
	return 0;
}

static int t_append(void)
{
	char buf[10000];
	uint64_t off = 0;
	int fd;

	CALL(fd = openat(dfd, "append.bin", O_CREAT | O_WRONLY | O_APPEND,
			 0644));
	while (off < APP_SIZE) {
		size_t len = 7777;

		if (len > APP_SIZE - off)
			len = APP_SIZE - off;
		/* O_APPEND must win over the file offset */
		CALL(lseek(fd, 0, SEEK_SET));
		vqf_pat_fill(2, off, buf, len);
		CHECK(write(fd, buf, len) == (ssize_t)len, "append: %s",
		      strerror(errno));
		off += len;
		CHECK(lseek(fd, 0, SEEK_CUR) == (off_t)off,
		      "offset after append %lld, want %llu",
		      (long long)lseek(fd, 0, SEEK_CUR),
		      (unsigned long long)off);
	}
	close(fd);
	return verify_pfile(&pfiles[1]);
}

static int t_pread_pwrite(void)
{
	const struct pfile *f = &pfiles[2];
	unsigned int i;
	int fd;

	CALL(fd = openat(dfd, f->name, O_CREAT | O_RDWR | O_EXCL, 0644));
	for (i = f->nr; i-- > 0;)
		CALL(write_pattern(fd, f->seed, f->r[i].off, f->r[i].len));
	CHECK(lseek(fd, 0, SEEK_CUR) == 0, "pwrite moved the offset");
	i = check_span(fd, f, 0, f->size);
	CHECK(lseek(fd, 0, SEEK_CUR) == 0, "pread moved the offset");
	close(fd);
	return i;
}

static int t_truncate(void)
{
	const struct pfile *f = &pfiles[3];
	char path[4096];
	struct stat st;
	int fd;

	CALL(fd = openat(dfd, f->name, O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(write_pattern(fd, f->seed, 0, 100000));
	CALL(ftruncate(fd, 5000));
	CALL(fstat(fd, &st));
	CHECK(st.st_size == 5000, "ftruncate: size %lld",
	      (long long)st.st_size);
	snprintf(path, sizeof(path), "%s/%s", top, f->name);
	CALL(truncate(path, f->size));
	CALL(fstat(fd, &st));
	CHECK(st.st_size == (off_t)f->size, "truncate: size %lld",
	      (long long)st.st_size);
	EXPECT_ERR(ftruncate(fd, -1), EINVAL);
	close(fd);
	return verify_pfile(f);
}

static int t_stat(void)
{
	struct stat a, b, c;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int fd;

	CALL(fd = openat(dfd, "stat.bin", O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(write(fd, "abc", 3));
	CALL(fstat(fd, &a));
	CALL(fstatat(dfd, "stat.bin", &b, 0));
	CALL(fstatat(dfd, "stat.bin", &c, AT_SYMLINK_NOFOLLOW));
	CHECK(a.st_ino == b.st_ino && b.st_ino == c.st_ino, "inode differs");
	CHECK(a.st_dev == b.st_dev, "dev differs");
	CHECK(S_ISREG(b.st_mode) && b.st_nlink == 1 && b.st_size == 3,
	      "mode %o nlink %lu size %lld", b.st_mode,
	      (unsigned long)b.st_nlink, (long long)b.st_size);
	nanosleep(&pause, NULL);
	CALL(write(fd, "d", 1));
	CALL(fstat(fd, &c));
	close(fd);
	CHECK(c.st_size == 4, "size %lld after write", (long long)c.st_size);
	CHECK(c.st_mtim.tv_sec > a.st_mtim.tv_sec ||
	      (c.st_mtim.tv_sec == a.st_mtim.tv_sec &&
	       c.st_mtim.tv_nsec > a.st_mtim.tv_nsec),
	      "mtime did not advance on write");
	CALL(fstatat(dfd, ".", &a, 0));
	CHECK(S_ISDIR(a.st_mode), "top is not a directory");
	return 0;
}

static int t_chmod(void)
{
	struct stat st;
	int fd;

	CALL(fd = openat(dfd, "meta.chmod", O_CREAT | O_WRONLY | O_EXCL,
			 0644));
	CALL(fchmod(fd, 0600));
	CALL(fstat(fd, &st));
	close(fd);
	CHECK((st.st_mode & 07777) == 0600, "fchmod: mode %o", st.st_mode);
	CALL(fchmodat(dfd, "meta.chmod", 0640, 0));
	CALL(fstatat(dfd, "meta.chmod", &st, 0));
	CHECK((st.st_mode & 07777) == 0640, "chmod: mode %o", st.st_mode);
	return 0;
}

static int t_chown(void)
{
	struct stat st;
	int fd;

	CALL(fd = openat(dfd, "meta.chown", O_CREAT | O_WRONLY | O_EXCL,
			 0644));
	close(fd);
	CALL(fchownat(dfd, "meta.chown", CHOWN_UID, CHOWN_GID, 0));
	CALL(fstatat(dfd, "meta.chown", &st, 0));
	CHECK(st.st_uid == CHOWN_UID && st.st_gid == CHOWN_GID,
	      "owner %u:%u", st.st_uid, st.st_gid);
	CALL(fchownat(dfd, "meta.chown", -1, -1, 0));
	CALL(fstatat(dfd, "meta.chown", &st, 0));
	CHECK(st.st_uid == CHOWN_UID && st.st_gid == CHOWN_GID,
	      "-1:-1 changed owner to %u:%u", st.st_uid, st.st_gid);
	return 0;
}

static int check_utime(const struct stat *st, bool atime)
{
	CHECK(st->st_mtim.tv_sec == utime_want[1].tv_sec &&
	      st->st_mtim.tv_nsec == utime_want[1].tv_nsec,
	      "mtime %lld.%09ld", (long long)st->st_mtim.tv_sec,
	      st->st_mtim.tv_nsec);
	CHECK(!atime || (st->st_atim.tv_sec == utime_want[0].tv_sec &&
			 st->st_atim.tv_nsec == utime_want[0].tv_nsec),
	      "atime %lld.%09ld", (long long)st->st_atim.tv_sec,
	      st->st_atim.tv_nsec);
	return 0;
}

static int t_utimensat(void)
{
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 7, 0 } };
	struct stat st;
	int fd;

	CALL(fd = openat(dfd, "meta.utime", O_CREAT | O_WRONLY | O_EXCL,
			 0644));
	close(fd);
	CALL(utimensat(dfd, "meta.utime", utime_want, 0));
	CALL(fstatat(dfd, "meta.utime", &st, 0));
	if (check_utime(&st, true))
		return -1;
	/* UTIME_OMIT leaves atime, the explicit mtime lands */
	CALL(utimensat(dfd, "meta.utime", omit, 0));
	CALL(fstatat(dfd, "meta.utime", &st, 0));
	CHECK(st.st_mtim.tv_sec == 7 && st.st_atim.tv_sec ==
	      utime_want[0].tv_sec, "UTIME_OMIT: atime %lld mtime %lld",
	      (long long)st.st_atim.tv_sec, (long long)st.st_mtim.tv_sec);
	CALL(utimensat(dfd, "meta.utime", utime_want, 0));
	CALL(fstatat(dfd, "meta.utime", &st, 0));
	return check_utime(&st, true);
}

static int make_pfile(const struct pfile *f)
{
	int fd = openat(dfd, f->name, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	if (fd < 0)
		return fail("create %s: %s", f->name, strerror(errno));
	if (write_pattern(fd, f->seed, 0, f->size)) {
		close(fd);
		return fail("write %s: %s", f->name, strerror(errno));
	}
	close(fd);
	return 0;
}

static int t_rename(void)
{
	/* ren.src carries ren.dst's final content (seed 11) */
	const struct pfile src = { "ren.src", 11, 1234, NULL, 0 };
	const struct pfile old = { "ren.dst", 99, 50, NULL, 0 };
	const struct pfile mv = { "moved", 12, 999, NULL, 0 };
	struct stat st;
	ino_t ino;

	if (make_pfile(&src) || make_pfile(&old))
		return -1;
	CALL(fstatat(dfd, "ren.src", &st, 0));
	ino = st.st_ino;
	CALL(renameat(dfd, "ren.src", dfd, "ren.dst"));
	EXPECT_ERR(fstatat(dfd, "ren.src", &st, 0), ENOENT);
	CALL(fstatat(dfd, "ren.dst", &st, 0));
	CHECK(st.st_ino == ino, "inode changed across rename");
	EXPECT_ERR(renameat(dfd, "ren.src", dfd, "ren.x"), ENOENT);
	/* across directories */
	CALL(mkdirat(dfd, "sub", 0755));
	if (make_pfile(&mv))
		return -1;
	CALL(renameat(dfd, "moved", dfd, "sub/moved"));
	EXPECT_ERR(fstatat(dfd, "moved", &st, 0), ENOENT);
	if (verify_pfile(&pfiles[11]))
		return -1;
	return verify_pfile(&pfiles[12]);
}

static int t_rename_noreplace(void)
{
	char buf[64];

	CALL(mkdirat(dfd, "nr", 0755));
	CALL(symlinkat("one", dfd, "nr/a"));
	CALL(symlinkat("two", dfd, "nr/b"));
	EXPECT_ERR(renameat2(dfd, "nr/a", dfd, "nr/b", RENAME_NOREPLACE),
		   EEXIST);
	CALL(readlinkat(dfd, "nr/b", buf, sizeof(buf)));
	CHECK(!memcmp(buf, "two", 3), "NOREPLACE replaced the target");
	CALL(renameat2(dfd, "nr/a", dfd, "nr/c", RENAME_NOREPLACE));
	EXPECT_ERR(readlinkat(dfd, "nr/a", buf, sizeof(buf)), ENOENT);
	CALL(unlinkat(dfd, "nr/b", 0));
	CALL(unlinkat(dfd, "nr/c", 0));
	CALL(unlinkat(dfd, "nr", AT_REMOVEDIR));
	return 0;
}

static int t_rename_exchange(void)
{
	const struct pfile a = { "xa", 5, 3000, NULL, 0 };
	const struct pfile b = { "xb", 6, 7000, NULL, 0 };
	struct stat sa, sb;

	if (make_pfile(&a) || make_pfile(&b))
		return -1;
	CALL(fstatat(dfd, "xa", &sa, 0));
	CALL(fstatat(dfd, "xb", &sb, 0));
	CALL(renameat2(dfd, "xa", dfd, "xb", RENAME_EXCHANGE));
	EXPECT_ERR(renameat2(dfd, "xa", dfd, "no-such", RENAME_EXCHANGE),
		   ENOENT);
	if (verify_pfile(&pfiles[4]) || verify_pfile(&pfiles[5]))
		return -1;
	CALL(fstatat(dfd, "xa", &sa, 0));
	CHECK(sa.st_ino == sb.st_ino, "xa did not take xb's inode");
	return 0;
}

static int t_link(void)
{
	struct stat a, b;
	int fd;

	if (make_pfile(&pfiles[6]))
		return -1;
	CALL(linkat(dfd, "link.orig", dfd, "link.hard", 0));
	CALL(fstatat(dfd, "link.orig", &a, 0));
	CALL(fstatat(dfd, "link.hard", &b, 0));
	CHECK(a.st_ino == b.st_ino, "hard link has another inode");
	CHECK(a.st_nlink == 2 && b.st_nlink == 2, "nlink %lu/%lu",
	      (unsigned long)a.st_nlink, (unsigned long)b.st_nlink);
	EXPECT_ERR(linkat(dfd, "link.orig", dfd, "link.hard", 0), EEXIST);
	/* a third name, dropped again: nlink follows */
	CALL(linkat(dfd, "link.hard", dfd, "link.tmp", 0));
	CALL(fd = openat(dfd, "link.tmp", O_RDONLY));
	CALL(fstat(fd, &a));
	close(fd);
	CHECK(a.st_nlink == 3, "nlink %lu, want 3", (unsigned long)a.st_nlink);
	CALL(unlinkat(dfd, "link.tmp", 0));
	CALL(fstatat(dfd, "link.orig", &a, 0));
	CHECK(a.st_nlink == 2, "nlink %lu after unlink, want 2",
	      (unsigned long)a.st_nlink);
	return verify_pfile(&pfiles[7]);
}

static int t_symlink(void)
{
	char buf[256];
	struct stat st;
	ssize_t n;
	int fd;

	CALL(symlinkat(SYMLINK_TARGET, dfd, "sym"));
	CALL(n = readlinkat(dfd, "sym", buf, sizeof(buf)));
	CHECK(n == (ssize_t)strlen(SYMLINK_TARGET) &&
	      !memcmp(buf, SYMLINK_TARGET, n), "readlink gave %.*s",
	      (int)n, buf);
	CALL(fstatat(dfd, "sym", &st, AT_SYMLINK_NOFOLLOW));
	CHECK(S_ISLNK(st.st_mode) && st.st_size == n, "lstat mode %o size %lld",
	      st.st_mode, (long long)st.st_size);
	EXPECT_ERR(fstatat(dfd, "sym", &st, 0), ENOENT);
	EXPECT_ERR(symlinkat("x", dfd, "sym"), EEXIST);
	EXPECT_ERR(readlinkat(dfd, "seq.bin", buf, sizeof(buf)), EINVAL);
	/* following a link to a real file */
	CALL(symlinkat("seq.bin", dfd, "sym2"));
	CALL(fd = openat(dfd, "sym2", O_RDONLY));
	CALL(fstat(fd, &st));
	close(fd);
	CHECK(st.st_size == SEQ_SIZE, "through link: size %lld",
	      (long long)st.st_size);
	CALL(unlinkat(dfd, "sym2", 0));
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Names e0000..e0999 each seen exactly once, "." and "..", nothing else. */
static int scan_dir1000(int fd, size_t bufsz)
{
	static unsigned char seen[NDIR];
	char buf[65536];
	int dots = 0, total = 0;
	long n;

	memset(seen, 0, sizeof(seen));
	CALL(lseek(fd, 0, SEEK_SET));
	while ((n = syscall(SYS_getdents64, fd, buf, bufsz)) > 0) {
		long pos = 0;

		while (pos < n) {
			struct linux_dirent64 *d = (void *)(buf + pos);
			char *end;
			long i;

			pos += d->d_reclen;
			if (!strcmp(d->d_name, ".") ||
			    !strcmp(d->d_name, "..")) {
				dots++;
				continue;
			}
			i = strtol(d->d_name + 1, &end, 10);
			CHECK(d->d_name[0] == 'e' && !*end && i >= 0 &&
			      i < NDIR && strlen(d->d_name) == 5,
			      "unexpected entry %s", d->d_name);
			CHECK(!seen[i]++, "entry %s listed twice", d->d_name);
			CHECK(d->d_type == DT_REG || d->d_type == DT_UNKNOWN,
			      "%s: d_type %u", d->d_name, d->d_type);
			total++;
		}
	}
	CHECK(n == 0, "getdents64: %s", strerror(errno));
	CHECK(dots == 2 && total == NDIR, "%d entries and %d dots", total,
	      dots);
	return 0;
}

static int verify_dir1000(void)
{
	char name[32], buf[32];
	int fd, i;

	CALL(fd = openat(dfd, "dir1000", O_RDONLY | O_DIRECTORY));
	i = scan_dir1000(fd, 65536);
	close(fd);
	if (i)
		return i;
	for (i = 0; i < NDIR; i++) {
		snprintf(name, sizeof(name), "dir1000/e%04d", i);
		CHECK(read_small(name, buf, sizeof(buf)) == 5 &&
		      !memcmp(buf, name + 8, 5), "%s: content '%s'", name,
		      buf);
	}
	return 0;
}

static int t_readdir(void)
{
	char name[32];
	long mid_pos = -1;
	int fd, i, n = 0, after = 0, again = 0;
	struct dirent *de;
	DIR *d;

	CALL(mkdirat(dfd, "dir1000", 0755));
	for (i = 0; i < NDIR; i++) {
		snprintf(name, sizeof(name), "dir1000/e%04d", i);
		CALL(fd = openat(dfd, name, O_CREAT | O_WRONLY | O_EXCL,
				 0644));
		CHECK(write(fd, name + 8, 5) == 5, "write %s", name);
		close(fd);
	}
	/* a small buffer forces many READDIR round trips and resumes */
	CALL(fd = openat(dfd, "dir1000", O_RDONLY | O_DIRECTORY));
	i = scan_dir1000(fd, 512);
	if (!i)
		i = scan_dir1000(fd, 65536);
	close(fd);
	if (i)
		return i;
	/* telldir/seekdir: resuming at a saved position lists the same tail */
	CALL(fd = openat(dfd, "dir1000", O_RDONLY | O_DIRECTORY));
	d = fdopendir(fd);
	CHECK(d, "fdopendir: %s", strerror(errno));
	while ((de = readdir(d))) {
		if (++n == NDIR / 2)
			mid_pos = telldir(d);
		else if (n > NDIR / 2)
			after++;
	}
	seekdir(d, mid_pos);
	while (readdir(d))
		again++;
	closedir(d);
	CHECK(n == NDIR + 2 && after == again, "readdir %d, tail %d vs %d", n,
	      after, again);
	return verify_dir1000();
}

static int t_mkdir_rmdir(void)
{
	struct stat st;
	int fd;

	CALL(mkdirat(dfd, "d", 0750));
	CALL(fstatat(dfd, "d", &st, 0));
	CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0750,
	      "mode %o", st.st_mode);
	EXPECT_ERR(mkdirat(dfd, "d", 0755), EEXIST);
	CALL(mkdirat(dfd, "d/e", 0755));
	CALL(fd = openat(dfd, "d/e/f", O_CREAT | O_WRONLY, 0644));
	close(fd);
	EXPECT_ERR(unlinkat(dfd, "d", AT_REMOVEDIR), ENOTEMPTY);
	EXPECT_ERR(unlinkat(dfd, "d/e/f", AT_REMOVEDIR), ENOTDIR);
	CALL(unlinkat(dfd, "d/e/f", 0));
	CALL(unlinkat(dfd, "d/e", AT_REMOVEDIR));
	CALL(unlinkat(dfd, "d", AT_REMOVEDIR));
	EXPECT_ERR(fstatat(dfd, "d", &st, 0), ENOENT);
	EXPECT_ERR(unlinkat(dfd, "d", AT_REMOVEDIR), ENOENT);
	return 0;
}

static int t_unlink(void)
{
	struct stat st;
	char buf[16];
	int fd;

	CALL(fd = openat(dfd, "gone", O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(write(fd, "still here", 10));
	CALL(unlinkat(dfd, "gone", 0));
	EXPECT_ERR(fstatat(dfd, "gone", &st, 0), ENOENT);
	/* an open file outlives its name */
	CHECK(pread(fd, buf, 10, 0) == 10 && !memcmp(buf, "still here", 10),
	      "open unlinked file unreadable: %s", strerror(errno));
	CALL(fstat(fd, &st));
	CHECK(st.st_nlink == 0, "nlink %lu after unlink",
	      (unsigned long)st.st_nlink);
	close(fd);
	EXPECT_ERR(unlinkat(dfd, "gone", 0), ENOENT);
	EXPECT_ERR(unlinkat(dfd, ".", 0), EISDIR);
	return 0;
}

static int verify_xattr(void)
{
	char path[4096], val[64];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/meta.xattr", top);
	CALL(n = getxattr(path, XATTR_KEEP, val, sizeof(val)));
	CHECK(n == (ssize_t)strlen(XATTR_KEEP_VAL) &&
	      !memcmp(val, XATTR_KEEP_VAL, n), "xattr value %.*s", (int)n,
	      val);
	return 0;
}

static int t_xattr(void)
{
	char val[64], list[256];
	ssize_t n;
	int fd;

	CALL(fd = openat(dfd, "meta.xattr", O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(fsetxattr(fd, "user.vqf.a", "alpha", 5, XATTR_CREATE));
	EXPECT_ERR(fsetxattr(fd, "user.vqf.a", "beta", 4, XATTR_CREATE),
		   EEXIST);
	EXPECT_ERR(fsetxattr(fd, "user.vqf.b", "beta", 4, XATTR_REPLACE),
		   ENODATA);
	CALL(fsetxattr(fd, XATTR_KEEP, XATTR_KEEP_VAL,
		       strlen(XATTR_KEEP_VAL), 0));
	CALL(n = fgetxattr(fd, "user.vqf.a", NULL, 0));
	CHECK(n == 5, "size query gave %zd", n);
	EXPECT_ERR(fgetxattr(fd, "user.vqf.a", val, 2), ERANGE);
	CALL(n = fgetxattr(fd, "user.vqf.a", val, sizeof(val)));
	CHECK(n == 5 && !memcmp(val, "alpha", 5), "value %.*s", (int)n, val);
	CALL(n = flistxattr(fd, list, sizeof(list)));
	CHECK(memmem(list, n, "user.vqf.a", 11) &&
	      memmem(list, n, XATTR_KEEP, sizeof(XATTR_KEEP)),
	      "listxattr misses names");
	CALL(fremovexattr(fd, "user.vqf.a"));
	EXPECT_ERR(fgetxattr(fd, "user.vqf.a", val, sizeof(val)), ENODATA);
	EXPECT_ERR(fremovexattr(fd, "user.vqf.a"), ENODATA);
	close(fd);
	return verify_xattr();
}

/* Child's view of the parent's lock: 0 if it sees what the parent holds. */
static int child_lock_probe(int fd, pid_t parent, bool expect_locked)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 50, .l_len = 10 };

	if (fcntl(fd, F_GETLK, &fl))
		return 10;
	if (expect_locked) {
		if (fl.l_type != F_WRLCK || fl.l_pid != parent)
			return 11;
		fl.l_type = F_WRLCK;
		if (fcntl(fd, F_SETLK, &fl) == 0 ||
		    (errno != EAGAIN && errno != EACCES))
			return 12;
		return 0;
	}
	if (fl.l_type != F_UNLCK)
		return 13;
	fl.l_type = F_WRLCK;
	return fcntl(fd, F_SETLK, &fl) ? 14 : 0;
}

static int run_child(int fd, bool expect_locked)
{
	pid_t parent = getpid(), pid;
	int st;

	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (!pid)
		_exit(child_lock_probe(fd, parent, expect_locked));
	CALL(waitpid(pid, &st, 0));
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st),
	      "child lock probe (locked=%d) failed: status %d",
	      expect_locked, WEXITSTATUS(st));
	return 0;
}

static int t_fcntl_lock(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	int fd, fl2, dup;

	CALL(fd = openat(dfd, "lock.bin", O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(fcntl(fd, F_SETLK, &fl));
	if (run_child(fd, true))
		return -1;
	fl.l_type = F_UNLCK;
	CALL(fcntl(fd, F_SETLK, &fl));
	if (run_child(fd, false))
		return -1;
	/* the other fcntl commands on a file of this mount */
	CALL(fl2 = fcntl(fd, F_GETFL));
	CHECK((fl2 & O_ACCMODE) == O_RDWR, "F_GETFL %#x", fl2);
	CALL(fcntl(fd, F_SETFL, fl2 | O_APPEND));
	CHECK(fcntl(fd, F_GETFL) & O_APPEND, "F_SETFL O_APPEND lost");
	CALL(fcntl(fd, F_SETFD, FD_CLOEXEC));
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "FD_CLOEXEC lost");
	CALL(dup = fcntl(fd, F_DUPFD, 100));
	CHECK(dup >= 100, "F_DUPFD gave %d", dup);
	close(dup);
	close(fd);
	return 0;
}

static int t_ofd_lock(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 10 };
	int a, b;

	CALL(a = openat(dfd, "lock.bin", O_RDWR));
	CALL(b = openat(dfd, "lock.bin", O_RDWR));
	CALL(fcntl(a, F_OFD_SETLK, &fl));
	/* same process, other open file description: conflicts */
	EXPECT_ERR(fcntl(b, F_OFD_SETLK, &fl), EAGAIN);
	fl.l_type = F_RDLCK;
	CALL(fcntl(b, F_OFD_GETLK, &fl));
	CHECK(fl.l_type == F_WRLCK && fl.l_pid == -1,
	      "F_OFD_GETLK type %d pid %d", fl.l_type, fl.l_pid);
	fl.l_type = F_UNLCK;
	fl.l_start = 0;
	fl.l_len = 10;
	fl.l_pid = 0;
	CALL(fcntl(a, F_OFD_SETLK, &fl));
	fl.l_type = F_WRLCK;
	CALL(fcntl(b, F_OFD_SETLK, &fl));
	/* closing the description drops its lock */
	close(b);
	CALL(fcntl(a, F_OFD_SETLK, &fl));
	close(a);
	return 0;
}

static int t_flock(void)
{
	int a, b;

	CALL(a = openat(dfd, "lock.bin", O_RDWR));
	CALL(b = openat(dfd, "lock.bin", O_RDWR));
	CALL(flock(a, LOCK_EX));
	EXPECT_ERR(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	CALL(flock(a, LOCK_UN));
	CALL(flock(b, LOCK_SH | LOCK_NB));
	CALL(flock(a, LOCK_SH | LOCK_NB));
	EXPECT_ERR(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	close(b);
	CALL(flock(a, LOCK_EX | LOCK_NB));
	close(a);
	return 0;
}

static int t_fsync(void)
{
	int fd;

	CALL(fd = openat(dfd, "sync.bin", O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(write(fd, "sync me", 7));
	CALL(fsync(fd));
	CALL(write(fd, "!", 1));
	CALL(fdatasync(fd));
	CALL(syncfs(fd));
	close(fd);
	CALL(fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY));
	CALL(fsync(fd));
	close(fd);
	return 0;
}

static int t_mmap(void)
{
	const struct pfile *f = &pfiles[8];
	uint8_t *p;
	int fd;

	CALL(fd = openat(dfd, f->name, O_CREAT | O_RDWR | O_EXCL, 0644));
	CALL(ftruncate(fd, f->size));
	p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	vqf_pat_fill(f->seed, 0, p, f->size);
	CALL(msync(p, f->size, MS_SYNC));
	CALL(munmap(p, f->size));
	close(fd);
	/* read() sees what the mapping wrote */
	if (verify_pfile(f))
		return -1;
	CALL(fd = openat(dfd, f->name, O_RDONLY));
	p = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(p != MAP_FAILED, "mmap ro: %s", strerror(errno));
	fd = vqf_pat_check(f->seed, 0, p, f->size) == f->size;
	munmap(p, f->size);
	CHECK(fd, "read-only mapping differs");
	return 0;
}

static int t_statfs(void)
{
	struct statfs s;

	CALL(fstatfs(dfd, &s));
	CHECK(s.f_type == FUSE_SUPER_MAGIC, "f_type %#lx",
	      (unsigned long)s.f_type);
	CHECK(s.f_bsize > 0 && s.f_blocks > 0 && s.f_bfree <= s.f_blocks &&
	      s.f_bavail <= s.f_bfree, "bsize %ld blocks %llu free %llu",
	      (long)s.f_bsize, (unsigned long long)s.f_blocks,
	      (unsigned long long)s.f_bfree);
	CHECK(s.f_namelen >= 255, "namelen %ld", (long)s.f_namelen);
	return 0;
}

static int t_big_offset(void)
{
	const struct pfile *f = &pfiles[9];
	struct stat st;
	unsigned int i;
	int fd, ret;

	CALL(fd = openat(dfd, f->name, O_CREAT | O_RDWR | O_EXCL, 0644));
	for (i = 0; i < f->nr; i++)
		CALL(write_pattern(fd, f->seed, f->r[i].off, f->r[i].len));
	CALL(fstat(fd, &st));
	CHECK((uint64_t)st.st_size == f->size, "size %lld",
	      (long long)st.st_size);
	CHECK(lseek(fd, 0, SEEK_END) == (off_t)f->size, "SEEK_END %lld",
	      (long long)lseek(fd, 0, SEEK_END));
	ret = check_span(fd, f, 2 * GIB, 4096);
	close(fd);
	return ret ? ret : verify_pfile(f);
}

static int t_o_direct(void)
{
	const struct pfile *f = &pfiles[10];
	uint8_t *buf;
	int fd, i, ret = 0;

	if (posix_memalign((void **)&buf, 4096, f->size))
		return fail("posix_memalign");
	fd = openat(dfd, f->name, O_CREAT | O_RDWR | O_EXCL | O_DIRECT, 0644);
	if (fd < 0) {
		free(buf);
		return fail("open O_DIRECT: %s", strerror(errno));
	}
	/* half as 4 KiB blocks, half as one 64 KiB write */
	for (i = 0; i < 16 && !ret; i++) {
		vqf_pat_fill(f->seed, i * 4096, buf, 4096);
		if (pwrite(fd, buf, 4096, i * 4096) != 4096)
			ret = fail("O_DIRECT pwrite %d: %s", i,
				   strerror(errno));
	}
	vqf_pat_fill(f->seed, 65536, buf, 65536);
	if (!ret && pwrite(fd, buf, 65536, 65536) != 65536)
		ret = fail("O_DIRECT 64K pwrite: %s", strerror(errno));
	memset(buf, 0, f->size);
	if (!ret && pread(fd, buf, f->size, 0) != (ssize_t)f->size)
		ret = fail("O_DIRECT pread: %s", strerror(errno));
	if (!ret && vqf_pat_check(f->seed, 0, buf, f->size) != f->size)
		ret = fail("O_DIRECT read back differs");
	close(fd);
	free(buf);
	return ret ? ret : verify_pfile(f);
}

/* -------------------------------- verify -------------------------------- */

static int v_files(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(pfiles) / sizeof(pfiles[0]); i++)
		if (verify_pfile(&pfiles[i]))
			return -1;
	return 0;
}

static int v_names(void)
{
	const unsigned int n = sizeof(top_names) / sizeof(top_names[0]);
	unsigned int i, found = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	CALL(fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY));
	d = fdopendir(fd);
	CHECK(d, "fdopendir: %s", strerror(errno));
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(de->d_name, top_names[i]))
				break;
		if (i == n) {
			fail("unexpected leftover %s", de->d_name);
			closedir(d);
			return -1;
		}
		found++;
	}
	closedir(d);
	CHECK(found == n, "%u of %u expected names", found, n);
	return 0;
}

static int v_meta(void)
{
	char buf[64];
	struct stat st, st2;
	ssize_t n;

	CALL(fstatat(dfd, "meta.chmod", &st, 0));
	CHECK((st.st_mode & 07777) == 0640, "meta.chmod mode %o", st.st_mode);
	CALL(fstatat(dfd, "meta.chown", &st, 0));
	CHECK(st.st_uid == CHOWN_UID && st.st_gid == CHOWN_GID,
	      "meta.chown owner %u:%u", st.st_uid, st.st_gid);
	CALL(fstatat(dfd, "meta.utime", &st, 0));
	if (check_utime(&st, false))
		return -1;
	CALL(n = readlinkat(dfd, "sym", buf, sizeof(buf)));
	CHECK(n == (ssize_t)strlen(SYMLINK_TARGET) &&
	      !memcmp(buf, SYMLINK_TARGET, n), "sym -> %.*s", (int)n, buf);
	CALL(fstatat(dfd, "link.orig", &st, 0));
	CALL(fstatat(dfd, "link.hard", &st2, 0));
	CHECK(st.st_ino == st2.st_ino && st.st_nlink == 2,
	      "hard link ino %llu/%llu nlink %lu",
	      (unsigned long long)st.st_ino, (unsigned long long)st2.st_ino,
	      (unsigned long)st.st_nlink);
	CALL(fstatat(dfd, "sync.bin", &st, 0));
	CHECK(st.st_size == 8 && read_small("sync.bin", buf, sizeof(buf)) == 8
	      && !memcmp(buf, "sync me!", 8), "sync.bin content");
	return verify_xattr();
}


static const struct tcase run_cases[] = {
	{ "create", t_create },
	{ "open", t_open },
	{ "write_read", t_write_read },
	{ "append", t_append },
	{ "pread_pwrite", t_pread_pwrite },
	{ "truncate", t_truncate },
	{ "stat", t_stat },
	{ "chmod", t_chmod },
	{ "chown", t_chown },
	{ "utimensat", t_utimensat },
	{ "rename", t_rename },
	{ "rename_noreplace", t_rename_noreplace },
	{ "rename_exchange", t_rename_exchange },
	{ "link", t_link },
	{ "symlink_readlink", t_symlink },
	{ "readdir_1000", t_readdir },
	{ "mkdir_rmdir", t_mkdir_rmdir },
	{ "unlink", t_unlink },
	{ "xattr", t_xattr },
	{ "fcntl_posix_lock", t_fcntl_lock },
	{ "fcntl_ofd_lock", t_ofd_lock },
	{ "flock", t_flock },
	{ "fsync_fdatasync", t_fsync },
	{ "mmap_shared", t_mmap },
	{ "statfs", t_statfs },
	{ "offset_beyond_4g", t_big_offset },
	{ "o_direct", t_o_direct },
};

static const struct tcase verify_cases[] = {
	{ "verify_names", v_names },
	{ "verify_content", v_files },
	{ "verify_dir1000", verify_dir1000 },
	{ "verify_metadata", v_meta },
};

int run_ktap(const char *suite, const struct tcase *c, unsigned int n)
{
	unsigned int i, bad = 0, skipped = 0;
	struct timespec t0, t1;
	int r;

	printf("KTAP version 1\n# Subtest: %s\n1..%u\n", suite, n);
	for (i = 0; i < n; i++) {
		why[0] = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = c[i].fn();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (r < 0) {
			bad++;
			printf("# %s: %s\nnot ok %u %s\n", c[i].name, why,
			       i + 1, c[i].name);
		} else if (r > 0) {
			skipped++;
			printf("ok %u %s # SKIP %s\n", i + 1, c[i].name, why);
		} else {
			printf("ok %u %s # %ld ms\n", i + 1, c[i].name,
			       (t1.tv_sec - t0.tv_sec) * 1000 +
			       (t1.tv_nsec - t0.tv_nsec) / 1000000);
		}
		fflush(stdout);
	}
	printf("# %s: %u passed, %u failed, %u skipped\n", suite,
	       n - bad - skipped, bad, skipped);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	bool run;

	if (argc != 3 || (strcmp(argv[1], "run") && strcmp(argv[1], "verify") &&
			  strcmp(argv[1], "users"))) {
		fprintf(stderr, "usage: %s run|verify|users DIR\n", argv[0]);
		return 2;
	}
	/* Shared: a case's children say why they failed. */
	why = mmap(NULL, VQF_WHY_LEN, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (why == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(0);
	if (!strcmp(argv[1], "users"))
		return vqf_posix_users(argv[2]);
	run = !strcmp(argv[1], "run");
	top = argv[2];
	if (run && mkdir(top, 0755) && errno != EEXIST) {
		perror(top);
		return 2;
	}
	dfd = open(top, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		perror(top);
		return 2;
	}
	if (run)
		return run_ktap("vqf-posix", run_cases,
				sizeof(run_cases) / sizeof(run_cases[0]));
	return run_ktap("vqf-posix-verify", verify_cases,
			sizeof(verify_cases) / sizeof(verify_cases[0]));
}
