// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_cache.c - the guest client's cache modes against changes made
 * in the shared directory behind its back.
 *
 * Every case counts the FUSE requests the client sent: a cache that
 * answers sends none; one that expired or was invalidated sends exactly
 * the LOOKUP, GETATTR or READ that Linux would.  Time is a fake clock the
 * test moves: no sleeps.  Invalidations come from the server side
 * (fuse_lowlevel_notify_inval_*() on the backend's session) through the
 * device's notification queue, as a host that watches its tree would send
 * them.
 */
#include "e2e.h"
#include "vqf_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#define SEC	1000000000ULL

static u64 clk;

static u64 fake_clock(void *arg)
{
	return *(u64 *)arg;
}

static struct e2e *machine(enum vqf_gcli_cache mode, bool writeback)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	clk = 1000 * SEC;
	cfg.notification = true;
	cfg.cli.cache = mode;
	cfg.cli.writeback = writeback;
	cfg.cli.timeout_ns = SEC;
	cfg.cli.clock = fake_clock;
	cfg.cli.clock_arg = &clk;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	return e;
}

static void done(struct e2e *e)
{
	assert_int_equal(e2e_free(e), 0);
}

static u64 reqs(struct e2e *e)
{
	return e2e_stats(e).cli.requests;
}

static void host_put(struct e2e *e, const char *name, const char *data)
{
	assert_int_equal(e2e_host_write(e2e_host(e, name), data, strlen(data),
					0644), 0);
}

static off_t guest_size(struct e2e *e, const char *path)
{
	struct stat st;

	assert_int_equal(vqf_gcli_stat(e->c, path, &st), 0);
	return st.st_size;
}

static u64 nodeid_of(struct e2e *e, const char *path)
{
	u64 n;

	assert_int_equal(vqf_gcli_get_nodeid(e->c, path, &n), 0);
	vqf_gcli_put_nodeid(e->c, n);
	return n;
}

static struct fuse_session *session(struct e2e *e)
{
	return vqf_backend_session(vqf_sim_backend(e->s));
}

/* Waits (bounded) until the client applied @n more notifications. */
static void wait_notified(struct e2e *e, u64 before, u64 n)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	for (i = 0; i < 5000; i++) {
		struct vqf_gcli_stats s = e2e_stats(e).cli;

		if (s.notify_inval_inode + s.notify_inval_entry >= before + n)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("notification not delivered");
}

static u64 notified(struct e2e *e)
{
	struct vqf_gcli_stats s = e2e_stats(e).cli;

	return s.notify_inval_inode + s.notify_inval_entry;
}

static void notify_inode(struct e2e *e, u64 nodeid)
{
	u64 n = notified(e);

	assert_int_equal(fuse_lowlevel_notify_inval_inode(session(e), nodeid,
							  0, 0), 0);
	wait_notified(e, n, 1);
}

static void notify_entry(struct e2e *e, u64 parent, const char *name)
{
	u64 n = notified(e);

	assert_int_equal(fuse_lowlevel_notify_inval_entry(session(e), parent,
							  name, strlen(name)),
			 0);
	wait_notified(e, n, 1);
}

/* ---- attributes ------------------------------------------------------- */

static void test_attr_none(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_NONE, false);
	u64 r;

	(void)state;
	host_put(e, "f", "1");
	assert_int_equal(guest_size(e, "f"), 1);
	host_put(e, "f", "12345");
	r = reqs(e);
	assert_int_equal(guest_size(e, "f"), 5);	/* at once */
	assert_int_equal(reqs(e) - r, 1);		/* its LOOKUP */
	host_put(e, "f", "123");
	assert_int_equal(guest_size(e, "f"), 3);
	assert_int_equal(reqs(e) - r, 2);
	done(e);
}

static void test_attr_auto(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_AUTO, false);
	u64 r;

	(void)state;
	host_put(e, "f", "1");
	assert_int_equal(guest_size(e, "f"), 1);
	host_put(e, "f", "12345");
	r = reqs(e);
	assert_int_equal(guest_size(e, "f"), 1);	/* cached */
	clk += SEC / 2;
	assert_int_equal(guest_size(e, "f"), 1);	/* still */
	assert_int_equal(reqs(e) - r, 0);
	clk += SEC / 2;					/* timeout */
	assert_int_equal(guest_size(e, "f"), 5);
	assert_int_equal(reqs(e) - r, 1);		/* one LOOKUP */
	assert_int_equal(guest_size(e, "f"), 5);
	assert_int_equal(reqs(e) - r, 1);
	assert_true(e2e_stats(e).cli.dentry_hits >= 3);
	done(e);
}

static void test_attr_always(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, false);
	u64 r, g;

	(void)state;
	host_put(e, "f", "1");
	assert_int_equal(guest_size(e, "f"), 1);
	host_put(e, "f", "12345");
	r = reqs(e);
	clk += 3600 * SEC;
	assert_int_equal(guest_size(e, "f"), 1);	/* never expires */
	assert_int_equal(reqs(e) - r, 0);
	g = e2e_sent(e, FUSE_GETATTR);
	notify_inode(e, nodeid_of(e, "f"));
	assert_int_equal(guest_size(e, "f"), 5);
	assert_int_equal(reqs(e) - r, 1);
	assert_int_equal(e2e_sent(e, FUSE_GETATTR) - g, 1);	/* the entry stays */
	assert_int_equal(e2e_stats(e).cli.notify_refused, 0);
	done(e);
}

/* A local change never leaves a stale cached value behind. */
static void test_attr_own_changes(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, false);
	struct stat st;
	int fd;

	(void)state;
	host_put(e, "f", "12345");
	assert_int_equal(guest_size(e, "f"), 5);
	assert_int_equal(vqf_gcli_truncate(e->c, "f", 2), 0);
	assert_int_equal(guest_size(e, "f"), 2);
	assert_int_equal(vqf_gcli_chmod(e->c, "f", 0600), 0);
	assert_int_equal(vqf_gcli_stat(e->c, "f", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	fd = vqf_gcli_open(e->c, "f", O_WRONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "abcdefgh", 8, 0), 8);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(guest_size(e, "f"), 8);
	assert_int_equal(vqf_gcli_link(e->c, "f", "g"), 0);
	assert_int_equal(vqf_gcli_stat(e->c, "f", &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(vqf_gcli_unlink(e->c, "g"), 0);
	assert_int_equal(vqf_gcli_stat(e->c, "g", &st), -ENOENT);
	assert_int_equal(vqf_gcli_stat(e->c, "f", &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(vqf_gcli_rename(e->c, "f", "h", 0), 0);
	assert_int_equal(vqf_gcli_stat(e->c, "f", &st), -ENOENT);
	assert_int_equal(guest_size(e, "h"), 8);
	assert_int_equal(vqf_gcli_mkdir(e->c, "d", 0755), 0);
	assert_int_equal(vqf_gcli_rmdir(e->c, "d"), 0);
	assert_int_equal(vqf_gcli_stat(e->c, "d", &st), -ENOENT);
	done(e);
}

/* ---- names ------------------------------------------------------------ */

static void test_negative(void **state)
{
	enum vqf_gcli_cache modes[] = { VQF_GCLI_CACHE_NONE,
					VQF_GCLI_CACHE_AUTO,
					VQF_GCLI_CACHE_ALWAYS };
	unsigned int m;

	(void)state;
	for (m = 0; m < 3; m++) {
		struct e2e *e = machine(modes[m], false);
		struct stat st;
		u64 r;

		assert_int_equal(vqf_gcli_stat(e->c, "n", &st), -ENOENT);
		host_put(e, "n", "x");
		r = reqs(e);
		if (modes[m] == VQF_GCLI_CACHE_NONE) {
			assert_int_equal(vqf_gcli_stat(e->c, "n", &st), 0);
			assert_int_equal(reqs(e) - r, 1);
			done(e);
			continue;
		}
		/* The negative entry answers, without a request. */
		assert_int_equal(vqf_gcli_stat(e->c, "n", &st), -ENOENT);
		assert_int_equal(reqs(e) - r, 0);
		assert_int_equal(e2e_stats(e).cli.dentry_neg_hits, 1);
		clk += 2 * SEC;
		if (modes[m] == VQF_GCLI_CACHE_AUTO) {
			assert_int_equal(vqf_gcli_stat(e->c, "n", &st), 0);
			assert_int_equal(reqs(e) - r, 1);
		} else {
			assert_int_equal(vqf_gcli_stat(e->c, "n", &st),
					 -ENOENT);
			assert_int_equal(reqs(e) - r, 0);
			notify_entry(e, FUSE_ROOT_ID, "n");
			assert_int_equal(vqf_gcli_stat(e->c, "n", &st), 0);
			assert_int_equal(reqs(e) - r, 1);
		}
		done(e);
	}
}

/* A rename or unlink on the host, seen per mode. */
static void test_host_rename(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, false);
	struct stat st;
	u64 r;

	(void)state;
	assert_int_equal(mkdir(e2e_host(e, "d"), 0755), 0);
	host_put(e, "d/r", "abc");
	assert_int_equal(guest_size(e, "d/r"), 3);
	assert_int_equal(rename(e2e_host(e, "d/r"), e2e_host(e, "d/r2")), 0);
	r = reqs(e);
	assert_int_equal(guest_size(e, "d/r"), 3);	/* stale name */
	assert_int_equal(reqs(e) - r, 0);
	notify_entry(e, nodeid_of(e, "d"), "r");
	assert_int_equal(vqf_gcli_stat(e->c, "d/r", &st), -ENOENT);
	assert_int_equal(guest_size(e, "d/r2"), 3);
	assert_int_equal(reqs(e) - r, 2);		/* two LOOKUPs */
	done(e);
}

/* The device is not trusted: malformed notifications change nothing. */
static void test_notify_refused(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, false);
	struct {
		struct fuse_notify_inval_entry_out ie;
		char name[8];
	} m;
	struct fuse_notify_inval_inode_out ii = { .ino = FUSE_ROOT_ID };
	u64 r;

	(void)state;
	host_put(e, "a", "1");
	assert_int_equal(guest_size(e, "a"), 1);
	host_put(e, "a", "12");
	memset(&m, 0, sizeof(m));
	m.ie.parent = FUSE_ROOT_ID;
	m.ie.namelen = 1;
	memcpy(m.name, "a", 2);
	/* Short, long, unterminated, a '/' in the name, unknown code. */
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_INODE, &ii,
					 sizeof(ii) - 1), -EINVAL);
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_ENTRY, &m,
					 sizeof(m.ie) + 3), -EINVAL);
	m.name[1] = 'x';
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_ENTRY, &m,
					 sizeof(m.ie) + 2), -EINVAL);
	memcpy(m.name, "/", 2);
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_ENTRY, &m,
					 sizeof(m.ie) + 2), -EINVAL);
	m.ie.namelen = 300;
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_ENTRY, &m,
					 sizeof(m)), -EINVAL);
	assert_int_equal(vqf_gcli_notify(e->c, 77, &ii, sizeof(ii)), -EINVAL);
	assert_int_equal(e2e_stats(e).cli.notify_refused, 6);
	r = reqs(e);
	assert_int_equal(guest_size(e, "a"), 1);	/* nothing dropped */
	assert_int_equal(reqs(e) - r, 0);
	/* A well-formed one for an unknown inode is harmless. */
	ii.ino = 0xdead0000;
	assert_int_equal(vqf_gcli_notify(e->c, FUSE_NOTIFY_INVAL_INODE, &ii,
					 sizeof(ii)), 0);
	done(e);
}

/* ---- data ------------------------------------------------------------- */

static void read_at(struct e2e *e, int fd, char want)
{
	char buf[4096];
	ssize_t i;

	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, sizeof(buf), 0),
			 sizeof(buf));
	for (i = 0; i < (ssize_t)sizeof(buf); i++)
		if (buf[i] != want)
			fail_msg("byte %zd: '%c', want '%c'", i, buf[i],
				 want);
}

static void host_fill(struct e2e *e, const char *name, char c, size_t n)
{
	char *buf = malloc(n);

	assert_non_null(buf);
	memset(buf, c, n);
	assert_int_equal(e2e_host_write(e2e_host(e, name), buf, n, 0644), 0);
	free(buf);
}

static void test_pages(void **state)
{
	enum vqf_gcli_cache modes[] = { VQF_GCLI_CACHE_NONE,
					VQF_GCLI_CACHE_AUTO,
					VQF_GCLI_CACHE_ALWAYS };
	unsigned int m;

	(void)state;
	for (m = 0; m < 3; m++) {
		enum vqf_gcli_cache mode = modes[m];
		struct e2e *e = machine(mode, false);
		u64 rd;
		int fd;

		host_fill(e, "p", 'A', 8192);
		fd = vqf_gcli_open(e->c, "p", O_RDONLY, 0);
		assert_true(fd >= 0);
		rd = e2e_sent(e, FUSE_READ);
		read_at(e, fd, 'A');
		read_at(e, fd, 'A');
		/* The page cache answers the second read. */
		assert_int_equal(e2e_sent(e, FUSE_READ) - rd,
				 mode == VQF_GCLI_CACHE_NONE ? 2 : 1);
		host_fill(e, "p", 'B', 8192);
		rd = e2e_sent(e, FUSE_READ);
		read_at(e, fd, mode == VQF_GCLI_CACHE_NONE ? 'B' : 'A');
		assert_int_equal(e2e_sent(e, FUSE_READ) - rd,
				 mode == VQF_GCLI_CACHE_NONE ? 1 : 0);
		assert_int_equal(vqf_gcli_close(e->c, fd), 0);
		/* Close-to-open: auto drops its pages at open. */
		fd = vqf_gcli_open(e->c, "p", O_RDONLY, 0);
		assert_true(fd >= 0);
		rd = e2e_sent(e, FUSE_READ);
		read_at(e, fd, mode == VQF_GCLI_CACHE_ALWAYS ? 'A' : 'B');
		assert_int_equal(e2e_sent(e, FUSE_READ) - rd,
				 mode == VQF_GCLI_CACHE_ALWAYS ? 0 : 1);
		if (mode == VQF_GCLI_CACHE_ALWAYS) {
			notify_inode(e, nodeid_of(e, "p"));
			read_at(e, fd, 'B');
			assert_int_equal(e2e_sent(e, FUSE_READ) - rd, 1);
			assert_true(e2e_stats(e).cli.pages_invalidated > 0);
		}
		assert_int_equal(vqf_gcli_close(e->c, fd), 0);
		done(e);
	}
}

/* A size or mtime seen to change drops the pages (auto_inval_data). */
static void test_pages_auto_inval(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_AUTO, false);
	char buf[16];
	u64 rd;
	int fd;

	(void)state;
	host_fill(e, "q", 'A', 4096);
	fd = vqf_gcli_open(e->c, "q", O_RDONLY, 0);
	assert_true(fd >= 0);
	read_at(e, fd, 'A');
	host_fill(e, "q", 'C', 4100);
	clk += 2 * SEC;		/* the attributes expire, the file is open */
	rd = e2e_sent(e, FUSE_READ);
	read_at(e, fd, 'C');
	assert_int_equal(e2e_sent(e, FUSE_READ) - rd, 1);
	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, sizeof(buf), 4090), 10);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	done(e);
}

/* ---- writeback -------------------------------------------------------- */

static void test_writeback(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_AUTO, true);
	char *buf = malloc(10100), back[10100];
	struct stat st;
	u64 wr;
	int fd;

	(void)state;
	assert_non_null(buf);
	e2e_fill(buf, 10100, 7);
	fd = vqf_gcli_open(e->c, "w", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	wr = e2e_sent(e, FUSE_WRITE);
	assert_int_equal(vqf_gcli_write(e->c, fd, buf, 3000), 3000);
	assert_int_equal(vqf_gcli_write(e->c, fd, buf + 3000, 4000), 4000);
	assert_int_equal(vqf_gcli_write(e->c, fd, buf + 7000, 3000), 3000);
	/* Nothing reached the host yet; the guest knows the size. */
	assert_int_equal(e2e_sent(e, FUSE_WRITE) - wr, 0);
	assert_true(e2e_host_equal(e, "w", "", 0));
	assert_int_equal(vqf_gcli_fstat(e->c, fd, &st), 0);
	assert_int_equal(st.st_size, 10000);
	assert_int_equal(guest_size(e, "w"), 10000);
	/* fsync writes back: contiguous dirty bytes in one WRITE. */
	assert_int_equal(vqf_gcli_fsync(e->c, fd, false), 0);
	assert_int_equal(e2e_sent(e, FUSE_WRITE) - wr, 1);
	assert_true(e2e_host_equal(e, "w", buf, 10000));
	assert_int_equal(vqf_gcli_write(e->c, fd, buf + 10000, 100), 100);
	assert_true(e2e_host_equal(e, "w", buf, 10000));
	/* close: written back before FLUSH. */
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "w", buf, 10100));
	assert_int_equal(e2e_sent(e, FUSE_WRITE) - wr, 2);
	/* Read back through the client. */
	fd = vqf_gcli_open(e->c, "w", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pread(e->c, fd, back, sizeof(back), 0),
			 10100);
	assert_memory_equal(back, buf, 10100);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_stats(e).cli.wb_pages >= 3);
	free(buf);
	done(e);
}

/* Without writeback every write is on the host when write() returns. */
static void test_write_through(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_AUTO, false);
	u64 wr;
	int fd;

	(void)state;
	fd = vqf_gcli_open(e->c, "t", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	wr = e2e_sent(e, FUSE_WRITE);
	assert_int_equal(vqf_gcli_write(e->c, fd, "abc", 3), 3);
	assert_true(e2e_host_equal(e, "t", "abc", 3));
	assert_int_equal(vqf_gcli_write(e->c, fd, "def", 3), 3);
	assert_true(e2e_host_equal(e, "t", "abcdef", 6));
	assert_int_equal(e2e_sent(e, FUSE_WRITE) - wr, 2);
	assert_int_equal(guest_size(e, "t"), 6);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	done(e);
}

/* A whole page written through is cached: reading it back sends nothing;
 * with writeback the client's own writeback does not drop its pages.
 */
static void test_written_pages_cached(void **state)
{
	bool wb;

	(void)state;
	for (wb = false; ; wb = true) {
		struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, wb);
		char page[4096], back[4096];
		u64 rd;
		int fd;

		memset(page, 'w', sizeof(page));
		fd = vqf_gcli_open(e->c, "wp", O_CREAT | O_RDWR, 0644);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_pwrite(e->c, fd, page, 4096, 0),
				 4096);
		assert_int_equal(vqf_gcli_fsync(e->c, fd, false), 0);
		clk += 3600 * SEC;
		rd = e2e_sent(e, FUSE_READ);
		assert_int_equal(vqf_gcli_pread(e->c, fd, back, 4096, 0), 4096);
		assert_memory_equal(back, page, 4096);
		assert_int_equal(e2e_sent(e, FUSE_READ) - rd, 0);
		assert_int_equal(vqf_gcli_close(e->c, fd), 0);
		assert_true(e2e_host_equal(e, "wp", page, 4096));
		done(e);
		if (wb)
			break;
	}
}

/* Partial pages are read first; holes read as zeros; truncation cuts. */
static void test_writeback_edges(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_ALWAYS, true);
	char buf[8200], want[8200];
	u64 rd;
	int fd;

	(void)state;
	host_put(e, "m", "0123456789");
	fd = vqf_gcli_open(e->c, "m", O_WRONLY, 0);	/* RMW needs reads */
	assert_true(fd >= 0);
	rd = e2e_sent(e, FUSE_READ);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "AB", 2, 3), 2);
	assert_int_equal(e2e_sent(e, FUSE_READ) - rd, 1);
	assert_true(e2e_host_equal(e, "m", "0123456789", 10));
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "m", "012AB56789", 10));

	/* Extend with a hole; read before and after writeback. */
	fd = vqf_gcli_open(e->c, "m", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "X", 1, 8192), 1);
	memset(want, 0, sizeof(want));
	memcpy(want, "012AB56789", 10);
	want[8192] = 'X';
	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, sizeof(buf), 0), 8193);
	assert_memory_equal(buf, want, 8193);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "m", want, 8193));

	/* A read-ahead over a dirty page keeps the dirty bytes. */
	host_fill(e, "ra", 'h', 3 * 4096);
	fd = vqf_gcli_open(e->c, "ra", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, "D", 1, 4096), 1);
	rd = e2e_sent(e, FUSE_READ);
	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, 8200, 0), 8200);
	assert_int_equal(e2e_sent(e, FUSE_READ) - rd, 1);	/* one READ */
	assert_int_equal(buf[4095], 'h');
	assert_int_equal(buf[4096], 'D');
	assert_int_equal(buf[4097], 'h');
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);

	/* Dirty bytes past a truncation never reach the host. */
	fd = vqf_gcli_open(e->c, "m", O_RDWR, 0);
	assert_true(fd >= 0);
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(vqf_gcli_pwrite(e->c, fd, buf, 8000, 0), 8000);
	assert_int_equal(vqf_gcli_ftruncate(e->c, fd, 100), 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_true(e2e_host_equal(e, "m", buf, 100));
	done(e);
}

/* tar sets mtime before close: the dirty pages must not move it. */
static void test_writeback_then_utimens(void **state)
{
	struct e2e *e = machine(VQF_GCLI_CACHE_AUTO, true);
	struct timespec ts[2] = { { 1000, 0 }, { 1262401445, 123456789 } };
	struct stat st;
	int fd;

	(void)state;
	fd = vqf_gcli_open(e->c, "u", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_write(e->c, fd, "data", 4), 4);
	assert_int_equal(vqf_gcli_utimens(e->c, "u", ts), 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	assert_int_equal(stat(e2e_host(e, "u"), &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, ts[1].tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, ts[1].tv_nsec);
	assert_true(e2e_host_equal(e, "u", "data", 4));
	done(e);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_none),
		cmocka_unit_test(test_attr_auto),
		cmocka_unit_test(test_attr_always),
		cmocka_unit_test(test_attr_own_changes),
		cmocka_unit_test(test_negative),
		cmocka_unit_test(test_host_rename),
		cmocka_unit_test(test_notify_refused),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_pages_auto_inval),
		cmocka_unit_test(test_writeback),
		cmocka_unit_test(test_write_through),
		cmocka_unit_test(test_written_pages_cached),
		cmocka_unit_test(test_writeback_edges),
		cmocka_unit_test(test_writeback_then_utimens),
	};

	e2e_pick_fs(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
