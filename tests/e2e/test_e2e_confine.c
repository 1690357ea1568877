// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_confine.c - a malicious guest against the whole simulated
 * stack with vqfuse's passthrough.  Every attack is a raw FUSE request
 * sent through the guest driver (vqf_gdrv_call), the way a guest kernel
 * that ignores the rules would send it.  Each must come back with its
 * errno, be counted where it was stopped - the device's parser
 * (vqf_fsdev_stats.dev.reject[]), the device's guard (vqf_fsdev_stats
 * .guard, vqf_guard.h: names, node ids, handles, special files) or the
 * passthrough (vqf_pt_stats refused_*) - and leave the host as it was:
 * the shared directory, a sibling directory that stands for the rest of
 * the host, and /etc.
 *
 * passthrough_ll is not run here: it casts nodeids to pointers and must
 * only ever serve a trusted guest.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "e2e.h"

static int setup(void **state)
{
	struct e2e *e;
	int ret = e2e_new(&e, NULL, VQF_SIM_FS_VQFUSE);

	if (ret) {
		fprintf(stderr, "e2e_new: %s\n", strerror(-ret));
		return -1;
	}
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	return e2e_free(*state);
}

/* What one step changed, to check "this counter and no other". */
struct snap {
	struct vqf_sim_stats s;
};

static struct snap snap(struct e2e *e)
{
	struct snap n = { e2e_stats(e) };

	return n;
}

#define D_PT(e, a, field) (e2e_stats(e).pt.field - (a)->s.pt.field)
#define D_REJ(e, a, r) \
	(e2e_stats(e).dev.dev.reject[r] - (a)->s.dev.dev.reject[r])

static uint64_t d_pt_refused(struct e2e *e, const struct snap *a)
{
	struct vqf_sim_stats s = e2e_stats(e);

	return e2e_refused(&s.pt) - e2e_refused(&a->s.pt);
}

#define D_G(e, a, field) (e2e_stats(e).dev.guard.field - (a)->s.dev.guard.field)

static uint64_t d_dev_refused(struct e2e *e, const struct snap *a)
{
	return e2e_stats(e).dev.refused - a->s.dev.refused;
}

static int raw_symlink(struct e2e *e, uint64_t parent, const char *name,
		       const char *target)
{
	struct fuse_entry_out eo;

	return raw_names(e, FUSE_SYMLINK, parent, NULL, 0, name, target,
			 &eo, sizeof(eo));
}

/* The share's top-level names, as one string, to see nothing appear. */
static void listing(struct e2e *e, char *buf, size_t size)
{
	char cmd[160];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "ls -A1 '%s'", e->dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, size - 1, p);
	buf[n] = 0;
	pclose(p);
}

static void host_absent(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void get_nodeid(struct e2e *e, const char *path, u64 *nodeid)
{
	assert_int_equal(vqf_gcli_get_nodeid(e->c, path, nodeid), 0);
	vqf_gcli_put_nodeid(e->c, *nodeid);
}

/* ---- names ----------------------------------------------------------- */

/*
 * "." and "..": fine for the parser, refused by the device's guard; LOOKUP
 * ".." is answered by the guard from what it knows of parents: the root's
 * parent is the root.
 */
static void test_dot_names(void **state)
{
	struct e2e *e = *state;
	struct fuse_entry_out eo;
	u64 sub, f;
	char before[4096], after[4096];
	struct snap a;

	assert_int_equal(vqf_gcli_mkdir(e->c, "sub", 0755), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "f", 1, 0644), 0);
	get_nodeid(e, "sub", &sub);
	get_nodeid(e, "f", &f);
	listing(e, before, sizeof(before));
	a = snap(e);

	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "..", &eo), 0);
	assert_int_equal(eo.nodeid, FUSE_ROOT_ID);
	assert_true(S_ISDIR(eo.attr.mode));
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, ".", &eo), -EPERM);
	assert_int_equal(raw_lookup(e, sub, "..", &eo), 0);
	assert_int_equal(eo.nodeid, FUSE_ROOT_ID);
	assert_int_equal(D_G(e, &a, dotdot_root), 2);
	assert_int_equal(raw_mkdir(e, FUSE_ROOT_ID, "..", 0755, NULL),
			 -EPERM);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, "..",
				    0), -EPERM);
	assert_int_equal(raw_rename(e, sub, "..", FUSE_ROOT_ID, "up", 0),
			 -EPERM);
	assert_int_equal(raw_link(e, f, FUSE_ROOT_ID, ".", NULL), -EPERM);
	assert_int_equal(raw_symlink(e, sub, "..", "/etc"), -EPERM);
	assert_int_equal(D_G(e, &a, name_dot), 6);
	assert_int_equal(d_pt_refused(e, &a), 0);
	assert_int_equal(d_dev_refused(e, &a), 0);

	listing(e, after, sizeof(after));
	assert_string_equal(before, after);
	host_absent(e2e_host(e, "up"));
	assert_true(e2e_out_intact(e));
}

/* Names that are paths: stopped by the device's parser (NAME_BAD). */
static void test_slash_names(void **state)
{
	struct e2e *e = *state;
	char esc[128], before[4096], after[4096];
	const char *outname = strrchr(e->out, '/') + 1;
	struct fuse_mknod_in mi = { .mode = S_IFREG | 0644 };
	struct fuse_entry_out eo;
	u64 f;
	struct snap a;
	unsigned int n = 0;

	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "f", 1, 0644), 0);
	get_nodeid(e, "f", &f);
	snprintf(esc, sizeof(esc), "../%s/planted", outname);
	listing(e, before, sizeof(before));
	a = snap(e);

	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "a/b", &eo), -EINVAL);
	n++;
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "../canary", &eo),
			 -EINVAL);
	n++;
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "/etc/passwd", &eo),
			 -EINVAL);
	n++;
	assert_int_equal(raw_mkdir(e, FUSE_ROOT_ID, "../escape", 0755, NULL),
			 -EINVAL);
	n++;
	assert_int_equal(raw_names(e, FUSE_MKNOD, FUSE_ROOT_ID, &mi,
				   sizeof(mi), esc, NULL, &eo, sizeof(eo)),
			 -EINVAL);
	n++;
	/* A symlink's name is a component; its target may hold '/'. */
	assert_int_equal(raw_symlink(e, FUSE_ROOT_ID, "x/../../y", "t"),
			 -EINVAL);
	n++;
	assert_int_equal(raw_create(e, FUSE_ROOT_ID, esc, O_RDWR, 0644, NULL,
				    NULL), -EINVAL);
	n++;
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, esc,
				    0), -EINVAL);
	n++;
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "../f", FUSE_ROOT_ID,
				    "g", 0), -EINVAL);
	n++;
	assert_int_equal(raw_link(e, f, FUSE_ROOT_ID, esc, NULL), -EINVAL);
	n++;
	/* The empty name. */
	assert_int_equal(raw_lookup_bytes(e, FUSE_ROOT_ID, "", 1, &eo),
			 -EINVAL);
	n++;
	assert_int_equal(D_REJ(e, &a, VQF_DEV_R_NAME_BAD), n);

	/* A name without its NUL. */
	assert_int_equal(raw_lookup_bytes(e, FUSE_ROOT_ID, "abc", 3, &eo),
			 -EINVAL);
	assert_int_equal(D_REJ(e, &a, VQF_DEV_R_NAME_UNTERM), 1);
	/* The parser stopped all of them: the backend saw none. */
	assert_int_equal(d_dev_refused(e, &a), n + 1);
	assert_int_equal(d_pt_refused(e, &a), 0);

	/*
	 * Too long: past the protocol's limit the parser stops it; past
	 * NAME_MAX but within the protocol, the passthrough does.
	 */
	{
		char *name = malloc(2000);

		assert_non_null(name);
		memset(name, 'n', 1999);
		name[1999] = 0;
		assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, name, &eo),
				 -ENAMETOOLONG);
		assert_int_equal(D_REJ(e, &a, VQF_DEV_R_NAME_LONG), 1);
		name[NAME_MAX + 1] = 0;
		assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, name, &eo),
				 -ENAMETOOLONG);
		assert_int_equal(raw_mkdir(e, FUSE_ROOT_ID, name, 0755, NULL),
				 -ENAMETOOLONG);
		assert_int_equal(D_PT(e, &a, refused_name_long), 2);
		assert_int_equal(d_pt_refused(e, &a), 2);
		assert_int_equal(d_dev_refused(e, &a), n + 2);
		free(name);
	}

	listing(e, after, sizeof(after));
	assert_string_equal(before, after);
	host_absent("/tmp/escape");
	host_absent(e2e_host(e, "../escape"));
	host_absent(e2e_out(e, "planted"));
	assert_true(e2e_out_intact(e));
}

/* ---- symlinks ---------------------------------------------------------- */

static void test_symlink_escape(void **state)
{
	struct e2e *e = *state;
	const char *secret = e2e_out(e, "canary");
	struct fuse_entry_out pw, etc, sec, outdir;
	struct stat pw0, pw1;
	struct snap a;
	u64 f;
	uint64_t fh;
	char buf[256];
	size_t len;
	void *data;

	assert_int_equal(stat("/etc/passwd", &pw0), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "f", 1, 0644), 0);
	get_nodeid(e, "f", &f);
	/* Made by the guest... */
	assert_int_equal(vqf_gcli_symlink(e->c, "/etc", "etc"), 0);
	assert_int_equal(vqf_gcli_symlink(e->c, "/etc/passwd", "pw"), 0);
	assert_int_equal(vqf_gcli_symlink(e->c, secret, "sec"), 0);
	/* ...and by the host: the guest cannot tell them apart. */
	assert_int_equal(symlink(e->out, e2e_host(e, "outdir")), 0);
	assert_int_equal(readlink(e2e_host(e, "pw"), buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "/etc/passwd", 11);

	/* A well-behaved client resolves absolute targets inside the
	 * share, where they do not exist.
	 */
	assert_true(vqf_gcli_open(e->c, "pw", O_RDONLY, 0) < 0);
	assert_true(vqf_gcli_open(e->c, "sec", O_RDWR | O_TRUNC, 0) < 0);
	assert_true(vqf_gcli_open(e->c, "outdir/canary", O_RDONLY, 0) < 0);
	assert_true(vqf_gcli_stat(e->c, "etc/passwd", &pw1) < 0);

	/* A malicious one sends the symlink's nodeid itself. */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "pw", &pw), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "etc", &etc), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "sec", &sec), 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "outdir", &outdir), 0);
	assert_true(S_ISLNK(pw.attr.mode) && S_ISLNK(etc.attr.mode) &&
		    S_ISLNK(sec.attr.mode) && S_ISLNK(outdir.attr.mode));
	a = snap(e);
	/* OPEN of a node that is no regular file: the guard. */
	assert_int_equal(raw_open(e, pw.nodeid, O_RDONLY, &fh), -ENXIO);
	assert_int_equal(raw_open(e, sec.nodeid, O_RDWR | O_TRUNC, &fh),
			 -ENXIO);
	assert_int_equal(D_G(e, &a, open_special), 2);
	/* By name, or without opening: the passthrough. */
	assert_int_equal(raw_create(e, FUSE_ROOT_ID, "sec", O_RDWR | O_TRUNC,
				    0644, NULL, &fh), -ELOOP);
	assert_int_equal(raw_truncate(e, sec.nodeid, 0), -ELOOP);
	assert_int_equal(D_PT(e, &a, refused_symlink), 2);
	assert_int_equal(d_pt_refused(e, &a), 2);

	/* A symlink to a directory is no parent. */
	a = snap(e);
	assert_int_equal(raw_lookup(e, etc.nodeid, "passwd", NULL), -ENOTDIR);
	assert_int_equal(raw_lookup(e, outdir.nodeid, "canary", NULL),
			 -ENOTDIR);
	assert_int_equal(raw_mknod(e, outdir.nodeid, "planted",
				   S_IFREG | 0644, 0, NULL), -ENOTDIR);
	assert_int_equal(raw_create(e, outdir.nodeid, "new", O_RDWR, 0644,
				    NULL, &fh), -ENOTDIR);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", outdir.nodeid,
				    "moved", 0), -ENOTDIR);
	assert_int_equal(raw_link(e, f, outdir.nodeid, "hard", NULL),
			 -ENOTDIR);
	assert_int_equal(raw_mkdir(e, etc.nodeid, "d", 0755, NULL),
			 -ENOTDIR);
	assert_int_equal(D_PT(e, &a, refused_not_dir), 7);
	assert_int_equal(d_pt_refused(e, &a), 7);

	assert_int_equal(raw_forget(e, pw.nodeid, 1), 0);
	assert_int_equal(raw_forget(e, etc.nodeid, 1), 0);
	assert_int_equal(raw_forget(e, sec.nodeid, 1), 0);
	assert_int_equal(raw_forget(e, outdir.nodeid, 1), 0);

	/* Nothing moved outside. */
	assert_int_equal(stat("/etc/passwd", &pw1), 0);
	assert_int_equal(pw1.st_size, pw0.st_size);
	assert_int_equal(pw1.st_mtim.tv_sec, pw0.st_mtim.tv_sec);
	assert_int_equal(pw1.st_mtim.tv_nsec, pw0.st_mtim.tv_nsec);
	assert_int_equal(pw1.st_ctim.tv_nsec, pw0.st_ctim.tv_nsec);
	data = e2e_host_read(secret, &len);
	assert_non_null(data);
	assert_true(len > 0);
	free(data);
	host_absent("/etc/d");
	assert_true(e2e_out_intact(e));
	assert_int_equal(access(e2e_host(e, "f"), F_OK), 0);
}

/* ---- nodeids and handles ---------------------------------------------- */

static void test_nodeids(void **state)
{
	struct e2e *e = *state;
	struct fuse_entry_out eo, eo2;
	unsigned int i, n = 16;
	struct snap a;
	u64 f;
	uint64_t fh, x;
	char buf[16];

	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "data", 4, 0644),
			 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "st"), "st", 2, 0644),
			 0);
	get_nodeid(e, "f", &f);

	/* Forged: numbers never issued, from a fixed seed. */
	srand(e2e_seed());
	a = snap(e);
	for (i = 0; i < n; i++) {
		x = (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^
		    (uint64_t)rand();
		if (x == FUSE_ROOT_ID || x == f)
			x ^= 0x8000000000000000ULL;
		assert_int_equal(raw_getattr(e, x, NULL), -ESTALE);
	}
	/* The device's guard stops them: the passthrough never sees one. */
	assert_int_equal(raw_getattr(e, 0xdeadbeef, NULL), -ESTALE);
	assert_int_equal(raw_mkdir(e, 77, "x", 0755, NULL), -ESTALE);
	assert_int_equal(raw_link(e, 0x4141414141ULL, FUSE_ROOT_ID, "l",
				  NULL), -ESTALE);
	assert_int_equal(D_G(e, &a, node_unknown), n + 3);
	assert_int_equal(d_pt_refused(e, &a), 0);
	assert_int_equal(access(e2e_host(e, "l"), F_OK), -1);

	/* Stale: issued, then forgotten (the guest client never looked
	 * "st" up, so this one lookup is all the server has).
	 */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "st", &eo), 0);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), 0);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	a = snap(e);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), -ESTALE);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), -ESTALE);
	assert_int_equal(raw_link(e, eo.nodeid, FUSE_ROOT_ID, "l", NULL),
			 -ESTALE);
	/* Looked up again: a new number; the old one stays dead. */
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "st", &eo2), 0);
	assert_true(eo2.nodeid != eo.nodeid);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), -ESTALE);
	assert_int_equal(raw_getattr(e, eo2.nodeid, NULL), 0);
	assert_int_equal(D_G(e, &a, node_unknown), 4);
	assert_int_equal(d_pt_refused(e, &a), 0);
	/* A FORGET of a stale or forged number changes nothing else. */
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	assert_int_equal(raw_forget(e, 0x123456789ULL, 1), 0);
	assert_int_equal(raw_getattr(e, eo2.nodeid, NULL), 0);
	assert_int_equal(raw_forget(e, eo2.nodeid, 1), 0);

	/* File handles: forged, another file's, released. */
	a = snap(e);
	assert_int_equal(raw_open(e, f, O_RDONLY, &fh), 0);
	assert_int_equal(raw_read(e, f, fh, 0, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "data", 4);
	assert_int_equal(raw_read(e, f, fh ^ 0x4242, 0, buf, sizeof(buf)),
			 -EBADF);
	assert_int_equal(raw_read(e, FUSE_ROOT_ID, fh, 0, buf, sizeof(buf)),
			 -EBADFD);
	assert_int_equal(raw_release(e, f, fh), 0);
	assert_int_equal(raw_read(e, f, fh, 0, buf, sizeof(buf)), -EBADF);
	assert_int_equal(raw_release(e, f, fh), -EBADF);
	assert_int_equal(D_G(e, &a, handle_unknown), 3);
	assert_int_equal(D_G(e, &a, handle_mismatch), 1);
	assert_int_equal(d_pt_refused(e, &a), 0);
	assert_int_equal(e2e_stats(e).pt.files, 0);
	assert_true(e2e_out_intact(e));
}

/* ---- device nodes, FIFOs, sockets ------------------------------------- */

static void test_devices(void **state)
{
	struct e2e *e = *state;
	struct fuse_entry_out eo;
	struct stat gs;
	struct snap a;
	uint64_t fh;
	int hfd, sfd;

	/*
	 * The guest makes device nodes, as with virtiofsd: its own kernel
	 * opens them, this server never does (below).  Only root may.
	 */
	if (!geteuid()) {
		struct stat hs;

		assert_int_equal(vqf_gcli_mknod(e->c, "mem", S_IFCHR | 0600,
						makedev(1, 1)), 0);
		assert_int_equal(lstat(e2e_host(e, "mem"), &hs), 0);
		assert_true(S_ISCHR(hs.st_mode));
		assert_int_equal(hs.st_rdev, makedev(1, 1));
		assert_int_equal(vqf_gcli_open(e->c, "mem", O_RDWR, 0),
				 -ENXIO);
		assert_int_equal(vqf_gcli_unlink(e->c, "mem"), 0);
		host_absent(e2e_host(e, "mem"));
	}
	/* Unless the server is told nodev. */
	{
		struct vqf_sim_cfg nc = { .nodev = true };
		struct e2e *n;

		assert_int_equal(e2e_new(&n, &nc, VQF_SIM_FS_VQFUSE), 0);
		a = snap(n);
		assert_int_equal(raw_mknod(n, FUSE_ROOT_ID, "mem",
					   S_IFCHR | 0666, makedev(1, 1),
					   NULL), -EPERM);
		assert_int_equal(raw_mknod(n, FUSE_ROOT_ID, "sda",
					   S_IFBLK | 0666, makedev(8, 0),
					   NULL), -EPERM);
		assert_int_equal(vqf_gcli_mknod(n->c, "kmsg", S_IFCHR | 0600,
						makedev(1, 11)), -EPERM);
		assert_int_equal(D_PT(n, &a, refused_mknod_dev), 3);
		assert_int_equal(d_pt_refused(n, &a), 3);
		host_absent(e2e_host(n, "mem"));
		host_absent(e2e_host(n, "sda"));
		host_absent(e2e_host(n, "kmsg"));
		assert_int_equal(e2e_free(n), 0);
	}

	/*
	 * Nor open one the host placed in the share (CVE-2020-35517), nor
	 * a FIFO or a socket.  The FIFO has a host reader and writer, so
	 * that a passthrough which did open it would not hang the test.
	 */
	assert_int_equal(mknod(e2e_host(e, "null"), S_IFCHR | 0666,
			       makedev(1, 3)), 0);
	assert_int_equal(mkfifo(e2e_host(e, "fifo"), 0666), 0);
	hfd = open(e2e_host(e, "fifo"), O_RDWR | O_NONBLOCK);
	assert_true(hfd >= 0);
	sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(sfd >= 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
			 e2e_host(e, "sock"));
		assert_int_equal(bind(sfd, (struct sockaddr *)&sa,
				      sizeof(sa)), 0);
	}
	/* Their attributes are fine to see. */
	assert_int_equal(vqf_gcli_stat(e->c, "null", &gs), 0);
	assert_true(S_ISCHR(gs.st_mode));
	assert_int_equal(gs.st_rdev, makedev(1, 3));
	assert_int_equal(vqf_gcli_stat(e->c, "fifo", &gs), 0);
	assert_true(S_ISFIFO(gs.st_mode));

	a = snap(e);
	/* OPEN by node id: the device's guard knows the type. */
	assert_int_equal(vqf_gcli_open(e->c, "null", O_RDWR, 0), -ENXIO);
	assert_int_equal(vqf_gcli_open(e->c, "fifo", O_RDONLY, 0), -ENXIO);
	assert_int_equal(vqf_gcli_open(e->c, "fifo", O_WRONLY, 0), -ENXIO);
	assert_int_equal(vqf_gcli_open(e->c, "sock", O_RDWR, 0), -ENXIO);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "null", &eo), 0);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), -ENXIO);
	assert_int_equal(D_G(e, &a, open_special), 5);
	/* O_CREAT without O_EXCL of the existing name: the passthrough. */
	assert_int_equal(raw_create(e, FUSE_ROOT_ID, "null", O_RDWR, 0644,
				    NULL, &fh), -EPERM);
	assert_int_equal(raw_create(e, FUSE_ROOT_ID, "fifo", O_WRONLY, 0644,
				    NULL, &fh), -EPERM);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	assert_int_equal(D_PT(e, &a, refused_special), 2);
	assert_int_equal(d_pt_refused(e, &a), 2);
	assert_int_equal(e2e_stats(e).pt.files, 0);

	/* Nothing was written into the FIFO. */
	{
		char c;

		assert_int_equal(read(hfd, &c, 1), -1);
		assert_int_equal(errno, EAGAIN);
	}
	close(hfd);
	close(sfd);
	assert_true(e2e_out_intact(e));
}

/* ---- renames and links out -------------------------------------------- */

static void test_rename_link_out(void **state)
{
	struct e2e *e = *state;
	const char *outname = strrchr(e->out, '/') + 1;
	char esc[128], esc2[128];
	struct snap a;
	u64 f, d;

	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "f", 1, 0644), 0);
	assert_int_equal(mkdir(e2e_host(e, "d"), 0755), 0);
	get_nodeid(e, "f", &f);
	get_nodeid(e, "d", &d);
	snprintf(esc, sizeof(esc), "../%s/f", outname);
	snprintf(esc2, sizeof(esc2), "../../%s/f", outname);

	a = snap(e);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, esc,
				    0), -EINVAL);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", d, esc2, 0),
			 -EINVAL);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, esc,
				    RENAME_EXCHANGE), -EINVAL);
	assert_int_equal(raw_link(e, f, FUSE_ROOT_ID, esc, NULL), -EINVAL);
	assert_int_equal(raw_link(e, f, d, esc2, NULL), -EINVAL);
	assert_int_equal(D_REJ(e, &a, VQF_DEV_R_NAME_BAD), 5);
	assert_int_equal(d_pt_refused(e, &a), 0);

	/* "..": the parent of the share is not reachable by name. */
	a = snap(e);
	assert_int_equal(raw_rename(e, d, "..", FUSE_ROOT_ID, "moved", 0),
			 -EPERM);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", d, "..", 0),
			 -EPERM);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "d", FUSE_ROOT_ID, "..",
				    RENAME_EXCHANGE), -EPERM);
	assert_int_equal(raw_link(e, f, d, "..", NULL), -EPERM);
	assert_int_equal(D_G(e, &a, name_dot), 4);
	/* RENAME_WHITEOUT would leave a 0:0 device node behind. */
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, "g",
				    RENAME_WHITEOUT), -EINVAL);
	assert_int_equal(raw_rename(e, FUSE_ROOT_ID, "f", FUSE_ROOT_ID, "g",
				    0x80), -EINVAL);
	assert_int_equal(D_PT(e, &a, refused_flags), 2);
	/* The root itself cannot be linked or moved (no name). */
	assert_int_equal(raw_link(e, FUSE_ROOT_ID, d, "root", NULL), -EPERM);
	assert_int_equal(d_pt_refused(e, &a), 2);

	host_absent(e2e_host(e, "g"));
	host_absent(e2e_host(e, "moved"));
	host_absent(e2e_host(e, "d/root"));
	host_absent(e2e_out(e, "f"));
	assert_int_equal(access(e2e_host(e, "f"), F_OK), 0);
	assert_int_equal(access(e2e_host(e, "d"), F_OK), 0);
	assert_true(e2e_out_intact(e));
}

/* Open descriptors of this process (the passthrough runs in it). */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * A guest that FORGETs an inode while a file of it is still open, then
 * goes away: the device's teardown must not leak the inode (its O_PATH fd
 * and struct; fuzz_device D3; valgrind and ASan check the struct).
 */
static void test_forget_open_file(void **state)
{
	struct fuse_entry_out eo;
	struct e2e *e = NULL;
	uint64_t fh;
	int before;

	(void)state;
	before = count_fds();
	assert_int_equal(e2e_new(&e, NULL, VQF_SIM_FS_VQFUSE), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "held"), "x", 1, 0644),
			 0);
	assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "held", &eo), 0);
	assert_int_equal(raw_open(e, eo.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(raw_forget(e, eo.nodeid, 1), 0);
	assert_int_equal(e2e_free(e), 0);
	assert_int_equal(count_fds(), before);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dot_names),
		T(test_slash_names),
		T(test_symlink_escape),
		T(test_nodeids),
		T(test_devices),
		T(test_rename_link_out),
		cmocka_unit_test(test_forget_open_file),
	};

	return cmocka_run_group_tests_name("e2e_confine", tests, NULL, NULL);
}
