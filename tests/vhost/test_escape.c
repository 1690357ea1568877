// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_escape.c - a hostile guest against the real daemon (issue 26):
 * `vqfuse-sim vhost-user` started as a program, with each backend it
 * offers (vqfuse's passthrough, null, passthrough_ll with --trust-guest)
 * in each sandbox mode (namespace, chroot, none): nine runs.  A fake
 * front-end (vhost_fe.h) sends INIT, then through the ring: LOOKUP ".."
 * at the root and climbing from below, names with '/' and dot names,
 * forged node ids (0x4141414141414141 on GETATTR, OPEN, READ, LOOKUP)
 * and handles (forged, another node's, released), OPEN of a FIFO, a char
 * device (1:3), a symlink to a host file outside the share, CREATE over
 * that symlink, LOOKUP through a symlink to a host directory, a regular
 * file that the host swaps for a FIFO or a symlink after the guest looked
 * it up.  Every reply's errno is checked (docs/guard.md), nothing outside
 * the share is named, read, opened or changed (the host file's bytes and
 * mtime), the daemon answers after every forged id and exits 0 on the
 * hang-up; its log's "guard:" line must count exactly the refusals seen.
 *
 * Then the parent outside a namespace sandbox killed with SIGKILL takes
 * its sandboxed child along (PR_SET_PDEATHSIG) and leaves no usable
 * socket.
 *
 * argv[1]: vqfuse-sim; argv[2] (optional): its ASan+UBSan twin, which the
 * sanitizer build of this program runs instead.  VQF_CLI_WRAP (words, as
 * the CLI scripts take it: a valgrind command line) runs the daemon under
 * it: only the runs without a sandbox, with --seccomp=none (valgrind's
 * own calls are not on the allowlist), and not the SIGKILL case.  Needs
 * root (the sandboxes, the device node); skipped without.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vqf_passthrough.h"
#include "vqf_vhost.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_thread.h"

#include "vhost_fe.h"
#include "vhost_daemon.h"

#define NREQ		1
#define NQ		(1 + NREQ)
#define RING_NUM	64
#define RAM_SIZE	(8u << 20)
#define RAM_GPA		0x100000ull
#define RING_AREA	0x10000ull
#define BUF_START	(NQ * RING_AREA)

struct fe {
	VHOST_FE_FIELDS
};

#include "vhost_fe_wire.h"

#define FORGED		0x4141414141414141ull
#define SECRET		"host secret: never served\n"
#define Q		1	/* the request queue */

enum be { BE_VQFUSE, BE_NULL, BE_PTLL };
static const char *const be_name[] = { "vqfuse", "null", "passthrough_ll" };

/* The guard's refusal counters, as the daemon's log names them: all of
 * them, so that a refusal the test did not expect is caught too.
 */
enum cause {
#define CAUSE(name, err)	C_##name,
	VQF_GUARD_REFUSALS(CAUSE)
#undef CAUSE
	C_NCAUSE
};
static const char *const cause_name[C_NCAUSE] = {
#define CAUSE(name, err)	#name,
	VQF_GUARD_REFUSALS(CAUSE)
#undef CAUSE
};

static const char *sim_bin;

struct run {
	enum be be;
	const char *sandbox;
};

struct esc {
	const struct run *run;
	char dir[64];		/* shared/, outside/, the socket s, log */
	char shared[128], outside[128], secret[160];
	pid_t pid;
	struct fe *f;
	unsigned int want[C_NCAUSE];	/* refusals expected in the log */
	struct stat secret_st;
	u64 root_ino;
	unsigned int parsed_out;	/* refused by lib's parser first */
	char notes[256];	/* what the backend itself answered */
	u64 held[8];		/* handle values open now (the guard's) */
	unsigned int nheld;
};

static char **wrap_words(unsigned int *n)
{
	static char buf[512];
	static char *w[24];
	const char *env = getenv("VQF_CLI_WRAP");
	char *p, *save = NULL;

	*n = 0;
	if (!env || !*env)
		return w;
	snprintf(buf, sizeof(buf), "%s", env);
	for (p = strtok_r(buf, " ", &save); p && *n < 20;
	     p = strtok_r(NULL, " ", &save))
		w[(*n)++] = p;
	return w;
}

static void path_in(const struct esc *e, const char *name, char *out,
		    size_t size)
{
	snprintf(out, size, "%s/%s", e->dir, name);
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void in_share(const struct esc *e, const char *name, char *out,
		     size_t size)
{
	snprintf(out, size, "%s/%s", e->shared, name);
}

/*
 * The host side: shared/ holds f, sub/deep/, swap and swap2 (regular
 * files the host replaces later), fifo, null (char 1:3), passwd (a
 * symlink to outside/secret) and outdir (a symlink to outside/).
 */
static void host_tree(struct esc *e)
{
	char p[192];

	strcpy(e->dir, "/tmp/vqf-escape-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	assert_int_equal(chmod(e->dir, 0755), 0);
	path_in(e, "shared", e->shared, sizeof(e->shared));
	path_in(e, "outside", e->outside, sizeof(e->outside));
	snprintf(e->secret, sizeof(e->secret), "%s/secret", e->outside);
	assert_int_equal(mkdir(e->shared, 0755), 0);
	assert_int_equal(mkdir(e->outside, 0755), 0);
	put_file(e->secret, SECRET);
	/* an old mtime: a change by the daemon cannot hide in the clock */
	{
		struct timespec ts[2] = { { 1000000, 0 }, { 1000000, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, e->secret, ts, 0), 0);
	}
	assert_int_equal(stat(e->secret, &e->secret_st), 0);
	in_share(e, "f", p, sizeof(p));
	put_file(p, "hello\n");
	in_share(e, "swap", p, sizeof(p));
	put_file(p, "orig\n");
	in_share(e, "swap2", p, sizeof(p));
	put_file(p, "orig\n");
	in_share(e, "sub", p, sizeof(p));
	assert_int_equal(mkdir(p, 0755), 0);
	in_share(e, "sub/deep", p, sizeof(p));
	assert_int_equal(mkdir(p, 0755), 0);
	in_share(e, "fifo", p, sizeof(p));
	assert_int_equal(mkfifo(p, 0666), 0);
	in_share(e, "null", p, sizeof(p));
	assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
	in_share(e, "passwd", p, sizeof(p));
	assert_int_equal(symlink(e->secret, p), 0);
	in_share(e, "outdir", p, sizeof(p));
	assert_int_equal(symlink(e->outside, p), 0);
}

/* The daemon: the program, the run's backend and sandbox, @extra. */
static void spawn(struct esc *e, const char *const *extra)
{
	char sock[96], be_opt[48], sb_opt[48];
	const char *argv[48];
	unsigned int a = 0, i, nw;
	char **w = wrap_words(&nw);

	path_in(e, "s", sock, sizeof(sock));
	snprintf(be_opt, sizeof(be_opt), "--backend=%s",
		 be_name[e->run->be]);
	snprintf(sb_opt, sizeof(sb_opt), "--sandbox=%s", e->run->sandbox);
	for (i = 0; i < nw; i++)
		argv[a++] = w[i];
	argv[a++] = sim_bin;
	argv[a++] = "vhost-user";
	argv[a++] = "--socket";
	argv[a++] = sock;
	argv[a++] = "--shared";
	argv[a++] = e->shared;
	argv[a++] = "--threads";
	argv[a++] = "2";
	argv[a++] = be_opt;
	argv[a++] = sb_opt;
	if (e->run->be == BE_PTLL)
		argv[a++] = "--trust-guest";
	if (nw)
		argv[a++] = "--seccomp=none";
	while (extra && *extra && a < 46)
		argv[a++] = *extra++;
	argv[a] = NULL;
	e->pid = daemon_spawn(e->dir, argv);
}

/* A front-end, once the daemon listens. */
static void connect_fe(struct esc *e)
{
	char sock[96];
	struct fe *f;

	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->sv[1] = -1;
	f->hup_fails = true;	/* a crash fails now, not at the bound */
	fe_ram_init(f);
	path_in(e, "s", sock, sizeof(sock));
	f->sv[0] = daemon_connect(e->dir, &e->pid, sock);
	e->f = f;
}

static void handshake(struct fe *f)
{
	u64 feat, pf;

	feat = fe_handshake_begin(f, &pf);
	pf &= (1ull << VQF_VHOST_PF_REPLY_ACK) | (1ull << VQF_VHOST_PF_MQ);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	fe_handshake_end(f, feat);
}

static void fe_close(struct esc *e)
{
	if (!e->f)
		return;
	if (e->f->sv[0] >= 0)
		close(e->f->sv[0]);
	fe_ram_free(e->f);
	free(e->f);
	e->f = NULL;
}

static bool need_root(void)
{
	if (!sim_bin || geteuid()) {
		print_message("skipped: needs root and the program's path\n");
		return false;
	}
	return true;
}

static int setup(void **state)
{
	const struct run *r = *state;
	struct esc *e;
	unsigned int nw;

	wrap_words(&nw);
	/* skipped in the case itself: cmocka fails a setup that skips */
	if (!need_root() || (nw && strcmp(r->sandbox, "none"))) {
		*state = NULL;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->run = r;
	host_tree(e);
	spawn(e, NULL);
	connect_fe(e);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct esc *e = *state;

	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (!e)
		return 0;
	fe_close(e);
	if (e->pid > 0) {
		kill(e->pid, SIGKILL);
		waitpid(e->pid, NULL, 0);
	}
	rm_dir(e->dir);
	free(e);
	return 0;
}

/* ---- requests -------------------------------------------------------- */

static int call(struct esc *e, u32 op, u64 node, const void *arg, u32 alen,
		void *rep, u32 out)
{
	/* a hang fails in fuse_call(), at its bound */
	return fuse_call(e->f, Q, op, node, arg, alen, rep, out).error;
}

/* A refusal the guard must count under @c. */
static void refused_at(struct esc *e, int err, int want, enum cause c,
		       int line)
{
	if (err != -want)
		fail_msg("%s, sandbox %s, line %d: got %d, want -%d (%s)",
			 be_name[e->run->be], e->run->sandbox, line, err,
			 want, cause_name[c]);
	e->want[c]++;
}

#define refused(e, err, want, c) refused_at(e, err, want, c, __LINE__)

/*
 * A name lib's parser refuses before the guard sees it (empty, with '/',
 * without NUL: EINVAL), counted in the device's "refused".
 */
static void unparsed_at(struct esc *e, int err, int line)
{
	if (err != -EINVAL)
		fail_msg("%s, sandbox %s, line %d: got %d, want -EINVAL",
			 be_name[e->run->be], e->run->sandbox, line, err);
	e->parsed_out++;
}

#define unparsed(e, err) unparsed_at(e, err, __LINE__)

static void hold(struct esc *e, u64 fh)
{
	assert_true(e->nheld < 8);
	e->held[e->nheld++] = fh;
}

static void drop(struct esc *e, u64 fh)
{
	unsigned int i;

	for (i = 0; i < e->nheld; i++)
		if (e->held[i] == fh) {
			e->held[i] = e->held[--e->nheld];
			return;
		}
	fail_msg("handle %#llx not held", (unsigned long long)fh);
}

/*
 * A handle used where it does not belong: EBADFD if the guest holds that
 * value at all (on another node, or of the other kind), else EBADF.
 */
static void bad_fh_at(struct esc *e, int err, u64 fh, int line)
{
	unsigned int i;

	for (i = 0; i < e->nheld; i++)
		if (e->held[i] == fh) {
			refused_at(e, err, EBADFD, C_handle_mismatch, line);
			return;
		}
	refused_at(e, err, EBADF, C_handle_unknown, line);
}

#define bad_fh(e, err, fh) bad_fh_at(e, err, fh, __LINE__)

static int lookup(struct esc *e, u64 parent, const char *name,
		  struct fuse_entry_out *eo)
{
	memset(eo, 0, sizeof(*eo));
	return call(e, FUSE_LOOKUP, parent, name, (u32)strlen(name) + 1, eo,
		    sizeof(*eo));
}

static int getattr(struct esc *e, u64 node, struct fuse_attr_out *ao)
{
	struct fuse_getattr_in gi = { 0 };

	return call(e, FUSE_GETATTR, node, &gi, sizeof(gi), ao, sizeof(*ao));
}

static int open_(struct esc *e, u64 node, u32 flags, u64 *fh)
{
	struct fuse_open_in oi = { .flags = flags };
	struct fuse_open_out oo = { 0 };
	int err = call(e, FUSE_OPEN, node, &oi, sizeof(oi), &oo, sizeof(oo));

	*fh = oo.fh;
	return err;
}

/* READ of up to 4 KiB at 0; *@got: the bytes that came. */
static int read_(struct esc *e, u64 node, u64 fh, char *buf, u32 *got)
{
	struct fuse_read_in ri = { .fh = fh, .size = 4096 };
	struct fuse_out_header oh;

	memset(buf, 0, 4097);
	oh = fuse_call(e->f, Q, FUSE_READ, node, &ri, sizeof(ri), buf, 4096);
	*got = oh.len - (u32)sizeof(oh);
	return oh.error;
}

static int release(struct esc *e, u32 op, u64 node, u64 fh)
{
	struct fuse_release_in ri = { .fh = fh };

	return call(e, op, node, &ri, sizeof(ri), NULL, 0);
}

/* CREATE @name with @flags; the entry and handle, when it succeeds. */
static int create(struct esc *e, const char *name, u32 flags,
		  struct fuse_entry_out *eo, u64 *fh)
{
	struct {
		struct fuse_create_in ci;
		char name[64];
	} a = { .ci = { .flags = flags, .mode = S_IFREG | 0644 } };
	struct {
		struct fuse_entry_out eo;
		struct fuse_open_out oo;
	} r;
	int err;

	memset(&r, 0, sizeof(r));
	snprintf(a.name, sizeof(a.name), "%s", name);
	err = call(e, FUSE_CREATE, 1, &a,
		   (u32)(sizeof(a.ci) + strlen(name) + 1), &r, sizeof(r));
	*eo = r.eo;
	*fh = r.oo.fh;
	return err;
}

/* The daemon still serves: the root's attributes. */
static void alive(struct esc *e)
{
	struct fuse_attr_out ao;

	assert_int_equal(getattr(e, 1, &ao), 0);
	assert_true(S_ISDIR(ao.attr.mode));
	assert_int_equal(ao.attr.ino, e->root_ino);
}

/* The host file outside the share: same bytes, size and mtime. */
static void secret_intact(struct esc *e)
{
	struct stat st;
	char buf[128];
	ssize_t n;
	int fd;

	assert_int_equal(stat(e->secret, &st), 0);
	assert_int_equal(st.st_size, e->secret_st.st_size);
	assert_int_equal(st.st_mtim.tv_sec, e->secret_st.st_mtim.tv_sec);
	assert_int_equal(st.st_ino, e->secret_st.st_ino);
	fd = open(e->secret, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_int_equal(n, (ssize_t)strlen(SECRET));
	buf[n] = 0;
	assert_string_equal(buf, SECRET);
}

/* No reply may carry the host file's bytes. */
static void no_secret(const char *buf, u32 len)
{
	assert_null(memmem(buf, len, "host secret", 11));
}

/* ---- the attempts ---------------------------------------------------- */

/* Notes what the backend answered where the guard leaves it the say. */
static void note(struct esc *e, const char *what, int err)
{
	size_t n = strlen(e->notes);

	snprintf(e->notes + n, sizeof(e->notes) - n, " %s=%s", what,
		 err ? strerrorname_np(-err) : "0");
}

static bool real_fs(const struct esc *e)
{
	return e->run->be != BE_NULL;
}

/*
 * LOOKUP ".." at the root, again and again, and from below: always the
 * root itself (nodeid 1, the share's inode) or the directory above inside
 * the share, never the share's host parent or /.
 */
static void climb(struct esc *e)
{
	struct fuse_entry_out eo, sub, deep;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		assert_int_equal(lookup(e, 1, "..", &eo), 0);
		assert_int_equal(eo.nodeid, 1);
		assert_int_equal(eo.attr.ino, e->root_ino);
		assert_true(S_ISDIR(eo.attr.mode));
	}
	assert_int_equal(lookup(e, 1, "sub", &sub), 0);
	if (!real_fs(e)) {
		/* null: every name is one regular file */
		assert_true(S_ISREG(sub.attr.mode));
		refused(e, lookup(e, sub.nodeid, "..", &eo), ENOTDIR,
			C_dotdot_notdir);
		return;
	}
	assert_true(S_ISDIR(sub.attr.mode));
	assert_int_equal(lookup(e, sub.nodeid, "..", &eo), 0);
	assert_int_equal(eo.nodeid, 1);
	assert_int_equal(eo.attr.ino, e->root_ino);
	assert_int_equal(lookup(e, sub.nodeid, "deep", &deep), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(lookup(e, deep.nodeid, "..", &eo), 0);
		assert_int_equal(eo.nodeid, sub.nodeid);
		assert_int_equal(eo.attr.ino, sub.attr.ino);
		assert_int_equal(lookup(e, eo.nodeid, "..", &eo), 0);
		assert_int_equal(eo.nodeid, 1);
		assert_int_equal(lookup(e, eo.nodeid, "..", &eo), 0);
		assert_int_equal(eo.nodeid, 1);
	}
}

/* Names no guest kernel sends: with '/', empty, dots, without NUL. */
static void names(struct esc *e)
{
	static const char *const slash[] = {
		"../outside", "sub/deep", "/", "a/", "/etc",
	};
	struct fuse_entry_out eo;
	struct {
		struct fuse_mkdir_in mi;
		char name[8];
	} md = { .mi = { .mode = 0755 } };
	unsigned int i;
	u64 fh;

	for (i = 0; i < ARRAY_SIZE(slash); i++)
		unparsed(e, lookup(e, 1, slash[i], &eo));
	unparsed(e, lookup(e, 1, "", &eo));
	refused(e, lookup(e, 1, ".", &eo), EPERM, C_name_dot);
	/* three bytes, no NUL */
	unparsed(e, call(e, FUSE_LOOKUP, 1, "abc", 3, &eo, sizeof(eo)));
	strcpy(md.name, "..");
	refused(e, call(e, FUSE_MKDIR, 1, &md, sizeof(md.mi) + 3, &eo,
			sizeof(eo)), EPERM, C_name_dot);
	unparsed(e, create(e, "../escaped", O_CREAT | O_WRONLY, &eo, &fh));
	assert_int_equal(access("/tmp/escaped", F_OK), -1);
}

/* Forged node ids: refused, the daemon answers afterwards. */
static void forged_ids(struct esc *e)
{
	static const u64 ids[] = {
		FORGED, 0, ~0ull, 0x10000, 1ull << 40, 0x7fffffffffffull,
	};
	struct fuse_attr_out ao;
	struct fuse_entry_out eo;
	char buf[4097];
	unsigned int i;
	u32 got;
	u64 fh;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		refused(e, getattr(e, ids[i], &ao), ESTALE, C_node_unknown);
		refused(e, open_(e, ids[i], O_RDONLY, &fh), ESTALE,
			C_node_unknown);
		refused(e, read_(e, ids[i], FORGED, buf, &got), ESTALE,
			C_node_unknown);
		refused(e, lookup(e, ids[i], "f", &eo), ESTALE,
			C_node_unknown);
		refused(e, lookup(e, ids[i], "..", &eo), ESTALE,
			C_node_unknown);
		alive(e);
	}
}

/* Handles: forged, another node's, a directory's, released. */
static void handles(struct esc *e)
{
	struct fuse_entry_out f;
	struct fuse_open_out oo = { 0 };
	struct fuse_open_in oi = { 0 };
	char buf[4097];
	u64 fh, dfh;
	u32 got;

	assert_int_equal(lookup(e, 1, "f", &f), 0);
	assert_int_equal(open_(e, f.nodeid, O_RDONLY, &fh), 0);
	hold(e, fh);
	assert_int_equal(read_(e, f.nodeid, fh, buf, &got), 0);
	assert_int_equal(got, real_fs(e) ? 6 : 0);
	if (real_fs(e))
		assert_string_equal(buf, "hello\n");
	bad_fh(e, read_(e, f.nodeid, FORGED, buf, &got), FORGED);
	bad_fh(e, read_(e, f.nodeid, fh + 1, buf, &got), fh + 1);
	bad_fh(e, read_(e, f.nodeid, fh ^ FORGED, buf, &got), fh ^ FORGED);
	/* the root's directory handle on READ, on the root and on f */
	assert_int_equal(call(e, FUSE_OPENDIR, 1, &oi, sizeof(oi), &oo,
			      sizeof(oo)), 0);
	dfh = oo.fh;
	hold(e, dfh);
	bad_fh(e, read_(e, 1, dfh, buf, &got), dfh);
	if (dfh != fh)
		bad_fh(e, read_(e, f.nodeid, dfh, buf, &got), dfh);
	/* f's handle on another node, and READDIR of it */
	bad_fh(e, read_(e, 1, fh, buf, &got), fh);
	if (real_fs(e)) {
		struct fuse_entry_out sub;

		assert_int_equal(lookup(e, 1, "sub", &sub), 0);
		bad_fh(e, read_(e, sub.nodeid, fh, buf, &got), fh);
	}
	assert_int_equal(release(e, FUSE_RELEASEDIR, 1, dfh), 0);
	drop(e, dfh);
	bad_fh(e, release(e, FUSE_RELEASEDIR, 1, dfh), dfh);
	assert_int_equal(release(e, FUSE_RELEASE, f.nodeid, fh), 0);
	drop(e, fh);
	bad_fh(e, read_(e, f.nodeid, fh, buf, &got), fh);
	bad_fh(e, release(e, FUSE_RELEASE, f.nodeid, fh), fh);
	alive(e);
}

/*
 * OPEN of @name, which the host made a FIFO, a device or a symlink: the
 * guard refuses it at once (the entry said what it is).  The null
 * backend serves no host file: its every name is its empty file.
 */
static void open_special(struct esc *e, const char *name, mode_t type)
{
	static const u32 flags[] = {
		O_RDONLY, O_WRONLY | O_NONBLOCK, O_RDWR | O_TRUNC,
	};
	struct fuse_entry_out eo;
	char buf[4097];
	unsigned int i;
	u32 got;
	u64 fh;

	assert_int_equal(lookup(e, 1, name, &eo), 0);
	if (!real_fs(e)) {
		assert_true(S_ISREG(eo.attr.mode));
		assert_int_equal(open_(e, eo.nodeid, O_RDONLY, &fh), 0);
		assert_int_equal(read_(e, eo.nodeid, fh, buf, &got), 0);
		assert_int_equal(got, 0);
		assert_int_equal(release(e, FUSE_RELEASE, eo.nodeid, fh), 0);
		return;
	}
	assert_int_equal(eo.attr.mode & S_IFMT, type);
	for (i = 0; i < ARRAY_SIZE(flags); i++)
		refused(e, open_(e, eo.nodeid, flags[i], &fh), ENXIO,
			C_open_special);
	bad_fh(e, read_(e, eo.nodeid, FORGED, buf, &got), FORGED);
	bad_fh(e, read_(e, eo.nodeid, 0, buf, &got), 0);
}

/*
 * CREATE over the symlink's name (with O_TRUNC), over the FIFO's and the
 * device's: nothing is opened through them.
 */
static void create_over(struct esc *e)
{
	static const char *const name[] = { "passwd", "fifo", "null" };
	static const u32 flags[] = {
		O_CREAT | O_WRONLY | O_TRUNC, O_CREAT | O_RDONLY,
		O_CREAT | O_RDWR | O_APPEND,
	};
	struct fuse_entry_out eo;
	unsigned int i, j;
	char p[192];
	u64 fh;
	int err;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			err = create(e, name[i], flags[j], &eo, &fh);
			if (!j)
				note(e, name[i], err);
			if (real_fs(e) && !err)
				fail_msg("%s: CREATE over %s (flags %#x) "
					 "opened it", be_name[e->run->be],
					 name[i], flags[j]);
			if (!err)
				assert_int_equal(release(e, FUSE_RELEASE,
							 eo.nodeid, fh), 0);
		}
		secret_intact(e);
	}
	/* the symlink is still the host's symlink */
	in_share(e, "passwd", p, sizeof(p));
	{
		char t[192];
		ssize_t n = readlink(p, t, sizeof(t) - 1);

		assert_true(n > 0);
		t[n] = 0;
		assert_string_equal(t, e->secret);
	}
}

/* LOOKUP through the symlink to a host directory outside the share. */
static void through_link(struct esc *e)
{
	struct fuse_entry_out out, eo;
	struct fuse_open_in oi = { 0 };
	struct fuse_open_out oo;
	int err;

	assert_int_equal(lookup(e, 1, "outdir", &out), 0);
	if (!real_fs(e))
		return;
	assert_true(S_ISLNK(out.attr.mode));
	err = lookup(e, out.nodeid, "secret", &eo);
	note(e, "outdir/secret", err);
	assert_int_not_equal(err, 0);
	refused(e, lookup(e, out.nodeid, "..", &eo), ENOTDIR,
		C_dotdot_notdir);
	refused(e, call(e, FUSE_OPENDIR, out.nodeid, &oi, sizeof(oi), &oo,
			sizeof(oo)), ENOTDIR, C_opendir_notdir);
}

/*
 * A regular file the guest looked up, which the host then replaces by a
 * FIFO (swap) or by a symlink to the host file (swap2): OPEN answers at
 * once, and whatever it opens is not the FIFO nor the host file.
 */
static void swapped(struct esc *e)
{
	struct fuse_entry_out s1, s2;
	char p[192], buf[4097];
	u32 got;
	u64 fh;
	int err;

	assert_int_equal(lookup(e, 1, "swap", &s1), 0);
	assert_int_equal(lookup(e, 1, "swap2", &s2), 0);
	if (!real_fs(e))
		return;
	in_share(e, "swap", p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0666), 0);
	in_share(e, "swap2", p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(e->secret, p), 0);

	err = open_(e, s1.nodeid, O_RDONLY, &fh);
	note(e, "swap-to-fifo", err);
	if (!err) {
		/* the inode looked up, now unlinked: its old bytes */
		assert_int_equal(read_(e, s1.nodeid, fh, buf, &got), 0);
		assert_true(got == 0 || !strcmp(buf, "orig\n"));
		assert_int_equal(release(e, FUSE_RELEASE, s1.nodeid, fh), 0);
	}
	err = open_(e, s2.nodeid, O_RDWR | O_TRUNC, &fh);
	note(e, "swap-to-link", err);
	if (!err) {
		assert_int_equal(read_(e, s2.nodeid, fh, buf, &got), 0);
		no_secret(buf, got);
		assert_int_equal(release(e, FUSE_RELEASE, s2.nodeid, fh), 0);
	}
	secret_intact(e);
	alive(e);
}

/* The "guard:" line of the daemon's log against the refusals seen. */
static void check_log(struct esc *e)
{
	static char lg[65536];
	unsigned long long n, sum = 0;
	char key[48];
	const char *g, *p;
	unsigned int c;

	daemon_log(e->dir, lg, sizeof(lg));
	p = strstr(lg, "device: ");
	if (!p || sscanf(p, "device: %*u requests, %*u hiprio, %llu refused",
			 &n) != 1 || n != e->parsed_out)
		fail_msg("want the device's %u refused:\n%s", e->parsed_out,
			 lg);
	g = strstr(lg, "guard: ");
	if (!g)
		fail_msg("no guard line in the daemon's log:\n%s", lg);
	for (c = 0; c < C_NCAUSE; c++)
		sum += e->want[c];
	if (sscanf(g, "guard: %llu refused", &n) != 1 || n != sum)
		fail_msg("want %llu refused:\n%.400s", sum, g);
	for (c = 0; c < C_NCAUSE; c++) {
		/* "(name N" or ", name N" */
		snprintf(key, sizeof(key), "%s ", cause_name[c]);
		p = strstr(g, key);
		if (p && p[-1] != '(' && p[-1] != ' ')
			p = NULL;
		if (!e->want[c]) {
			if (p && p < strchr(g, '\n'))
				fail_msg("%s counted:\n%.400s", cause_name[c],
					 g);
			continue;
		}
		if (!p || sscanf(p + strlen(key), "%llu", &n) != 1 ||
		    n != e->want[c])
			fail_msg("want %s %u:\n%.400s", cause_name[c],
				 e->want[c], g);
	}
	if (strstr(lg, "killed by signal") || strstr(lg, "runtime error") ||
	    strstr(lg, "AddressSanitizer"))
		fail_msg("the daemon's log:\n%s", lg);
}

static void test_escape(void **state)
{
	struct esc *e = *state;
	struct fuse_attr_out ao;
	struct stat st;
	long long t0 = mono_ms();
	unsigned int nw;
	char **w = wrap_words(&nw);
	int rc;

	if (!e)
		skip();

	rings_create(e->f, NULL);
	handshake(e->f);
	fuse_init(e->f, Q);
	assert_int_equal(getattr(e, 1, &ao), 0);
	e->root_ino = ao.attr.ino;
	if (e->run->be != BE_NULL) {
		/* the backends that serve host files give host inodes */
		assert_int_equal(stat(e->shared, &st), 0);
		assert_int_equal(ao.attr.ino, st.st_ino);
	}
	climb(e);
	names(e);
	forged_ids(e);
	handles(e);
	open_special(e, "fifo", S_IFIFO);
	open_special(e, "null", S_IFCHR);
	open_special(e, "passwd", S_IFLNK);
	create_over(e);
	through_link(e);
	swapped(e);
	secret_intact(e);
	alive(e);

	fe_close(e);
	rc = daemon_wait(&e->pid);
	if (rc) {
		static char lg[65536];

		daemon_log(e->dir, lg, sizeof(lg));
		fail_msg("the daemon exited %d:\n%s", rc, lg);
	}
	check_log(e);
	print_message("%s, sandbox %s: %lld ms (%s%s%s); CREATE over, then "
		      "OPEN:%s\n", be_name[e->run->be], e->run->sandbox,
		      mono_ms() - t0, nw ? w[0] : "", nw ? " " : "",
		      strrchr(sim_bin, '/') ? strrchr(sim_bin, '/') + 1 :
		      sim_bin, e->notes);
}

/* ---- SIGKILL of the parent outside the sandbox ------------------------ */

static pid_t child_of(pid_t pid)
{
	char p[64], buf[64];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", pid, pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return (pid_t)atoi(buf);
}

static void test_pdeathsig(void **state)
{
	static const struct run r = { BE_VQFUSE, "namespace" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct esc *e;
	long long t0;
	pid_t child, w;
	int st = 0, s, ret;
	unsigned int nw;

	wrap_words(&nw);
	if (!need_root() || nw)
		skip();
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->run = &r;
	*state = e;	/* teardown() cleans up, even after a failure */
	/* the orphaned child comes to us: its end is seen, and reaped */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	host_tree(e);
	spawn(e, NULL);
	connect_fe(e);
	rings_create(e->f, NULL);
	handshake(e->f);
	fuse_init(e->f, Q);
	{
		struct fuse_attr_out ao;

		assert_int_equal(getattr(e, 1, &ao), 0);
		e->root_ino = ao.attr.ino;
	}
	child = child_of(e->pid);
	assert_true(child > 0);
	assert_int_equal(kill(child, 0), 0);

	assert_int_equal(kill(e->pid, SIGKILL), 0);
	assert_int_equal(waitpid(e->pid, &st, 0), e->pid);
	e->pid = 0;
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	t0 = mono_ms();
	while ((w = waitpid(child, &st, WNOHANG)) == 0 &&
	       mono_ms() - t0 < DAEMON_WAIT_MS)
		usleep(10000);
	if (w != child)
		fail_msg("the sandboxed child %d outlived its parent",
			 (int)child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	print_message("the child ended %lld ms after its parent\n",
		      mono_ms() - t0);
	assert_int_equal(kill(child, 0), -1);
	/* the front-end's connection ended */
	{
		char b;

		ret = (int)recv(e->f->sv[0], &b, 1, 0);
		assert_true(ret == 0 || (ret < 0 && errno == ECONNRESET));
	}
	/* the socket: gone, or nobody listens */
	path_in(e, "s", sa.sun_path, sizeof(sa.sun_path));
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	ret = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	assert_int_equal(ret, -1);
	assert_true(errno == ENOENT || errno == ECONNREFUSED);
	close(s);
}

#define RUN(b, s)	{ b, s }
#define CASE(name, r)	\
	{ name, test_escape, setup, teardown, (void *)&(r) }

int main(int argc, char **argv)
{
	static const struct run runs[] = {
		RUN(BE_VQFUSE, "namespace"), RUN(BE_VQFUSE, "chroot"),
		RUN(BE_VQFUSE, "none"),
		RUN(BE_NULL, "namespace"), RUN(BE_NULL, "chroot"),
		RUN(BE_NULL, "none"),
		RUN(BE_PTLL, "namespace"), RUN(BE_PTLL, "chroot"),
		RUN(BE_PTLL, "none"),
	};
	const struct CMUnitTest tests[] = {
		CASE("vqfuse_namespace", runs[0]),
		CASE("vqfuse_chroot", runs[1]),
		CASE("vqfuse_none", runs[2]),
		CASE("null_namespace", runs[3]),
		CASE("null_chroot", runs[4]),
		CASE("null_none", runs[5]),
		CASE("passthrough_ll_namespace", runs[6]),
		CASE("passthrough_ll_chroot", runs[7]),
		CASE("passthrough_ll_none", runs[8]),
		cmocka_unit_test_teardown(test_pdeathsig, teardown),
	};

	sim_bin = argc > 1 ? argv[1] : NULL;
#if defined(__SANITIZE_ADDRESS__)
	if (argc > 2)
		sim_bin = argv[2];	/* the daemon's sanitizer twin */
#endif
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
