// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vu_policy.c - vhost-user's command line (ours, the Rust virtiofsd's
 * separate options and the legacy C virtiofsd's "-o" list) and the serving
 * policy it selects, without sockets: the options parsed, the policy
 * derived, and the backend's ops wrapped and called as libfuse would call
 * them (open flags and reply flags, INIT's wanted capabilities, the ops a
 * policy takes away).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <valgrind/valgrind.h>

#include "vqf_vu.h"

static char dir[64];

/* vqf_vu_parse() of a NULL-terminated list; "DIR" stands for the dir. */
static int parse_v(struct vqf_vu_opts *o, va_list ap)
{
	static char src[512];
	char *argv[32];
	int argc = 0;
	const char *a;

	while ((a = va_arg(ap, const char *)) && argc < 31) {
		if (strstr(a, "DIR")) {
			const char *p = strstr(a, "DIR");

			snprintf(src, sizeof(src), "%.*s%s%s", (int)(p - a), a,
				 dir, p + 3);
			a = src;
		}
		argv[argc++] = (char *)a;
	}
	argv[argc] = NULL;
	return vqf_vu_parse(argc, argv, o);
}

static int parse(struct vqf_vu_opts *o, ...)
{
	va_list ap;
	int ret;

	va_start(ap, o);
	ret = parse_v(o, ap);
	va_end(ap);
	return ret;
}

static void test_defaults(void **state)
{
	struct vqf_vu_policy p;
	struct vqf_vu_opts o;

	(void)state;
	assert_int_equal(parse(&o, "--socket", "/tmp/x.sock", "--shared",
			       "DIR", NULL), 0);
	assert_int_equal(o.cache, VQF_VU_CACHE_AUTO);
	assert_int_equal(o.fd, -1);
	assert_int_equal(o.threads, 2);
	assert_int_equal(o.log_level, VQF_VU_LOG_INFO);
	vqf_vu_policy_of(&o, &p);
	/*
	 * virtiofsd's defaults: auto, 1 s, readdirplus, no xattr, locks in
	 * the guest, O_DIRECT dropped.
	 */
	assert_true(p.timeout == 1);
	assert_false(p.direct_io);
	assert_false(p.keep_cache);
	assert_true(p.readdirplus);
	assert_false(p.xattr);
	assert_false(p.writeback);
	assert_false(p.posix_locks);
	assert_false(p.flock);
	assert_false(p.allow_direct_io);
}

/* Each cache mode, through --cache, --cache=, -o cache=. */
static void test_cache_modes(void **state)
{
	static const struct {
		const char *name;
		enum vqf_vu_cache cache;
		double timeout;
		bool direct_io, keep_cache, readdirplus;
	} m[] = {
		{ "never", VQF_VU_CACHE_NEVER, 0, true, false, false },
		{ "none", VQF_VU_CACHE_NEVER, 0, true, false, false },
		{ "metadata", VQF_VU_CACHE_METADATA, 86400, true, false,
		  true },
		{ "auto", VQF_VU_CACHE_AUTO, 1, false, false, true },
		{ "always", VQF_VU_CACHE_ALWAYS, 86400, false, true, true },
	};
	char eq[64], o_list[96];

	(void)state;
	for (unsigned int i = 0; i < sizeof(m) / sizeof(*m); i++) {
		struct vqf_vu_policy p;
		struct vqf_vu_opts o[3];

		snprintf(eq, sizeof(eq), "--cache=%s", m[i].name);
		snprintf(o_list, sizeof(o_list), "source=DIR,cache=%s",
			 m[i].name);
		assert_int_equal(parse(&o[0], "--socket-path=/tmp/s",
				       "--shared-dir", "DIR", "--cache",
				       m[i].name, NULL), 0);
		assert_int_equal(parse(&o[1], "--socket-path=/tmp/s",
				       "--shared-dir=DIR", eq, NULL), 0);
		assert_int_equal(parse(&o[2], "--socket-path=/tmp/s", "-o",
				       o_list, NULL), 0);
		for (int k = 0; k < 3; k++) {
			assert_int_equal(o[k].cache, m[i].cache);
			vqf_vu_policy_of(&o[k], &p);
			assert_true(p.timeout == m[i].timeout);
			assert_int_equal(p.direct_io, m[i].direct_io);
			assert_int_equal(p.keep_cache, m[i].keep_cache);
			assert_int_equal(p.readdirplus, m[i].readdirplus);
			vqf_vu_opts_release(&o[k]);
		}
	}
}

/* libvirt's two command lines give one daemon (qemu_virtiofs.c). */
static void test_libvirt_forms(void **state)
{
	struct vqf_vu_opts a, b;
	struct vqf_vu_policy pa, pb;

	(void)state;
	assert_int_equal(parse(&a, "--fd=3", "-o",
			       "source=DIR,cache=always,sandbox=chroot,"
			       "xattr,flock,posix_lock",
			       "--thread-pool-size=8", "-d", NULL), 0);
	assert_int_equal(parse(&b, "--fd=3", "--shared-dir", "DIR",
			       "--cache", "always", "--sandbox", "chroot",
			       "--xattr", "--host-locks",
			       "--thread-pool-size=8", "--log-level", "debug",
			       NULL), 0);
	vqf_vu_policy_of(&a, &pa);
	vqf_vu_policy_of(&b, &pb);
	assert_memory_equal(&pa, &pb, sizeof(pa));
	assert_string_equal(a.shared, dir);
	assert_string_equal(b.shared, dir);
	assert_int_equal(a.fd, 3);
	assert_int_equal(a.threads, 8);
	assert_int_equal(a.log_level, VQF_VU_LOG_DEBUG);
	assert_int_equal(b.log_level, VQF_VU_LOG_DEBUG);
	assert_string_equal(a.sandbox, "chroot");
	assert_true(pa.xattr && pa.flock && pa.posix_locks);
	vqf_vu_opts_release(&a);
	vqf_vu_opts_release(&b);
}

/* Single-dash forms and the legacy flags, each one setting its field. */
static void test_legacy_flags(void **state)
{
	struct vqf_vu_policy p;
	struct vqf_vu_opts o;

	(void)state;
	assert_int_equal(parse(&o, "--socket-path", "/tmp/s",
			       "-osource=DIR,writeback,allow_direct_io,"
			       "no_readdirplus,timeout=2.5,log_level=warn,"
			       "no_posix_acl,announce_submounts", "-f",
			       NULL), 0);
	vqf_vu_policy_of(&o, &p);
	assert_true(p.writeback && p.allow_direct_io);
	assert_false(p.readdirplus);
	assert_true(p.timeout == 2.5);
	assert_int_equal(o.log_level, VQF_VU_LOG_WARN);
	assert_true(o.announce_submounts);
	vqf_vu_opts_release(&o);
	/* later wins, as in virtiofsd */
	assert_int_equal(parse(&o, "--socket", "/tmp/s", "-o=source=DIR",
			       "-o", "xattr", "-o", "no_xattr",
			       "--syslog", "--rlimit-nofile=4096", NULL), 0);
	assert_false(o.xattr);
	assert_true(o.syslog);
	assert_int_equal(o.rlimit_nofile, 4096);
	vqf_vu_opts_release(&o);
}

/* libvirt doubles a comma inside the source path. */
static void test_comma_escape(void **state)
{
	char cdir[96], arg[160];
	struct vqf_vu_opts o;

	(void)state;
	snprintf(cdir, sizeof(cdir), "%s/a,b", dir);
	assert_int_equal(mkdir(cdir, 0700), 0);
	snprintf(arg, sizeof(arg), "source=%s/a,,b,xattr", dir);
	assert_int_equal(parse(&o, "--fd", "5", "-o", arg, NULL), 0);
	assert_string_equal(o.shared, cdir);
	assert_true(o.xattr);
	vqf_vu_opts_release(&o);
	rmdir(cdir);
}

/*
 * vqf_vu_parse() of a NULL-terminated list must refuse it with exit 2
 * and @needle in what it says on stderr: each refusal names its cause.
 */
static void refused(const char *needle, ...)
{
	char path[] = "/tmp/vqf-vu-err.XXXXXX", err[1024];
	struct vqf_vu_opts o;
	int fd, save, ret;
	va_list ap;
	ssize_t n;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stderr);
	save = dup(2);
	assert_true(save >= 0 && dup2(fd, 2) == 2);
	va_start(ap, needle);
	ret = parse_v(&o, ap);
	va_end(ap);
	fflush(stderr);
	dup2(save, 2);
	close(save);
	n = pread(fd, err, sizeof(err) - 1, 0);
	close(fd);
	err[n > 0 ? n : 0] = 0;
	if (!ret)
		vqf_vu_opts_release(&o);
	if (ret != 2 || !strstr(err, needle))
		print_error("want exit 2 and '%s', got %d: %s\n", needle, ret,
			    err);
	assert_int_equal(ret, 2);
	assert_non_null(strstr(err, needle));
}

/* Everything refused is refused with exit 2, never ignored. */
static void test_refused(void **state)
{
	static const struct {
		const char *arg, *val, *says;
	} bad[] = {
		{ "--bogus", NULL, "unknown option '--bogus'" },
		{ "-z", NULL, "unknown option '-z'" },
		{ "-o", "bogus", "unknown option '-o bogus'" },
		{ "-o", "cache=sometimes", "-o cache: unknown cache mode" },
		{ "--cache=sometimes", NULL, "--cache: unknown cache mode" },
		{ "--uid-map=:0:0:1", NULL,
		  "--uid-map=:0:0:1: not :namespace_id:host_id:count:" },
		{ "--uid-map=:0:0:0:", NULL, ":0:0:0:: a count of 0" },
		{ "--uid-map=:0:x:1:", NULL, ":0:x:1:: not :namespace_id" },
		{ "--gid-map=/0/0/1:", NULL,
		  "--gid-map=/0/0/1:: not :namespace_id" },
		{ "--uid-map=:0:4294967296:1:", NULL,
		  ":0:4294967296:1:: not :namespace_id" },
		{ "--uid-map=:-1:0:1:", NULL, ":-1:0:1:: not :namespace_id" },
		{ "--uid-map=:0x10:0:1:", NULL,
		  ":0x10:0:1:: not :namespace_id" },
		{ "--uid-map=: 1:0:1:", NULL, ": 1:0:1:: not :namespace_id" },
		{ "--uid-map=:1:0:1::", NULL,
		  ":1:0:1::: text after the closing ':'" },
		{ "--uid-map=:", NULL, "--uid-map=:: not :namespace_id" },
		{ "--uid-map=", NULL, "--uid-map: empty value" },
		{ "--translate-uid=map", NULL, "map: unknown type" },
		{ "--translate-uid=map:1:1:", NULL,
		  "map:1:1:: not map:from:to:count" },
		{ "--translate-uid=map:1:1:1:5", NULL,
		  "map:1:1:1:5: not map:from:to:count" },
		{ "--translate-uid=forbid-guest:1", NULL,
		  "forbid-guest:1: not forbid-guest:base:count" },
		{ "--translate-uid=squash-guest:0:1000:65536", NULL,
		  "translating ids (squash-guest) is not implemented" },
		{ "--translate-gid=map:0:1000:1", NULL,
		  "--translate-gid=map:0:1000:1: translating ids (map)" },
		{ "--translate-uid=x:1:1:1", NULL, "x:1:1:1: unknown type" },
		{ "--modcaps=+", NULL, "'+' is not +name or -name" },
		{ "--modcaps=", NULL, "--modcaps: empty value" },
		{ "-o", "modcaps=", "--modcaps: empty list" },
		{ "--modcaps=+chown::-fsetid", NULL,
		  "'' is not +name or -name" },
		{ "--modcaps=+chown:", NULL, "'' is not +name or -name" },
		{ "--modcaps=+chown,-fsetid", NULL,
		  "'+chown,-fsetid' is not +name" },
		{ "--modcaps=++chown", NULL, "'++chown' is not +name" },
		{ "--modcaps=+12", NULL, "'+12' is not +name" },
		{ "--modcaps=+bogus", NULL, "'+bogus' is not +name" },
		{ "--modcaps=chown", NULL, "'chown' is not +name" },
		{ "-o", "modcaps=-nope", "'-nope' is not +name" },
		{ "--xattrmap=:map::x.:", NULL,
		  "virtiofsd's --xattrmap is not supported" },
		{ "--posix-acl", NULL, "virtiofsd's --posix-acl is not" },
		{ "-o", "posix_acl", "virtiofsd's -o posix_acl is not" },
		{ "-o", "killpriv_v2", "virtiofsd's -o killpriv_v2 is not" },
		{ "--daemonize", NULL, "virtiofsd's --daemonize is not" },
		{ "--inode-file-handles=prefer", NULL,
		  "virtiofsd's --inode-file-handles is not" },
		{ "--sandbox=jail", NULL, "--sandbox: unknown value 'jail'" },
		{ "--seccomp=maybe", NULL,
		  "--seccomp: unknown value 'maybe'" },
		{ "--log-level=loud", NULL, "unknown log level 'loud'" },
		{ "--thread-pool-size=257", NULL,
		  "--thread-pool-size: invalid value '257'" },
		{ "--fd=-1", NULL, "--fd: invalid value '-1'" },
		{ "--socket-group=no-such-group-here", NULL,
		  "no group 'no-such-group-here'" },
		{ "--xattr=yes", NULL, "--xattr takes no value" },
		{ "-dx", NULL, "-d takes no value" },
	};
	struct vqf_vu_opts o;

	(void)state;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		refused(bad[i].says, "--socket", "/tmp/s", "--shared", "DIR",
			bad[i].arg, bad[i].val, NULL);
	/* what must go together */
	refused("--socket PATH (or --socket-path, or --fd N) is required",
		"--shared", "DIR", NULL);
	refused("--shared DIR (or --shared-dir, or -o source=) is required",
		"--fd=3", NULL);
	refused("--fd and --socket-path (--socket) exclude each other",
		"--fd=3", "--socket-path=/tmp/s", "--shared", "DIR", NULL);
	refused("--socket-group needs --socket-path", "--fd=3",
		"--socket-group=root", "--shared", "DIR", NULL);
	refused("--shared: /nonexistent: not a directory", "--fd=3",
		"--shared", "/nonexistent", NULL);
	refused("--queue-size: 3 is not a power of two", "--fd=3",
		"--shared", "DIR", "--queue-size=3", NULL);
	refused("--guests: needs --socket PATH", "--fd=3", "--shared", "DIR",
		"--guests=2", NULL);
	refused("--rlimit-nofile=8: too few descriptors: need at least",
		"--fd=3", "--shared", "DIR", "--rlimit-nofile=8", NULL);
	/* an unsafe backend only with --trust-guest */
	refused("give --trust-guest", "--fd=3", "--shared", "DIR",
		"--backend", "passthrough_ll", NULL);
	assert_int_equal(parse(&o, "--fd=3", "--shared", "DIR", "--backend",
			       "passthrough_ll", "--trust-guest", NULL), 0);
	vqf_vu_opts_release(&o);
	refused("--uid-map, --gid-map: need --sandbox=namespace", "--fd=3",
		"--shared", "DIR", "--sandbox", "none", "--uid-map=:0:0:1:",
		NULL);
	/* the sandbox's root cannot hold / or /proc; unconfined, it can */
	refused("--shared-dir=/: the sandbox's root cannot be the host's /",
		"--fd=3", "--shared", "/", NULL);
	refused("--shared-dir=/proc/sys: the sandbox's root keeps /proc",
		"--fd=3", "--shared", "/proc/sys", "--sandbox=chroot", NULL);
	assert_int_equal(parse(&o, "--fd=3", "--shared", "/",
			       "--sandbox=none", NULL), 0);
	vqf_vu_opts_release(&o);
	/* at most VQF_VU_IDMAPS maps: 8 are taken, a 9th is refused */
	assert_int_equal(VQF_VU_IDMAPS, 8);
	assert_int_equal(parse(&o, "--fd=3", "--shared", "DIR",
			       "--uid-map=:0:0:1:", "--uid-map=:1:1:1:",
			       "--uid-map=:2:2:1:", "--uid-map=:3:3:1:",
			       "--uid-map=:4:4:1:", "--uid-map=:5:5:1:",
			       "--uid-map=:6:6:1:", "--uid-map=:7:7:1:",
			       NULL), 0);
	assert_int_equal(o.n_uid_map, 8);
	vqf_vu_opts_release(&o);
	refused("--uid-map: more than 8 maps", "--fd=3", "--shared", "DIR",
		"--uid-map=:0:0:1:", "--uid-map=:1:1:1:", "--uid-map=:2:2:1:",
		"--uid-map=:3:3:1:", "--uid-map=:4:4:1:", "--uid-map=:5:5:1:",
		"--uid-map=:6:6:1:", "--uid-map=:7:7:1:", "--uid-map=:8:8:1:",
		NULL);
	refused("--timeout, --cache: not with passthrough_ll", "--fd", "3",
		"--shared", "DIR", "--backend", "passthrough_ll",
		"--trust-guest", "--cache=always", NULL);
	/* --print-capabilities needs nothing else */
	assert_int_equal(parse(&o, "--print-capabilities", NULL), 0);
	assert_true(o.print_caps);
	assert_int_equal(parse(&o, "--help", NULL), -1);
}

/* The confinement options, as virtiofsd reads them. */
static void test_confine_opts(void **state)
{
	struct vqf_vu_opts o;

	(void)state;
	assert_int_equal(parse(&o, "--fd=3", "--shared", "DIR", NULL), 0);
	assert_int_equal(vqf_vu_sandbox_of(&o), VQF_VU_SANDBOX_NAMESPACE);
	assert_int_equal(vqf_vu_seccomp_of(&o), VQF_VU_SECCOMP_KILL);
	assert_false(o.readonly);
	vqf_vu_opts_release(&o);
	assert_int_equal(parse(&o, "--fd=3", "--shared", "DIR",
			       "--sandbox=chroot", "--seccomp=trap",
			       "--readonly", "--modcaps=+sys_admin:-CAP_CHOWN",
			       "--translate-uid=map:1000:1000:1",
			       "--translate-gid=host:5:5:10", NULL), 0);
	assert_int_equal(vqf_vu_sandbox_of(&o), VQF_VU_SANDBOX_CHROOT);
	assert_int_equal(vqf_vu_seccomp_of(&o), VQF_VU_SECCOMP_TRAP);
	assert_true(o.readonly);
	assert_string_equal(o.modcaps, "+sys_admin:-CAP_CHOWN");
	vqf_vu_opts_release(&o);
	assert_int_equal(parse(&o, "--fd=3", "-o",
			       "source=DIR,sandbox=none,readonly,"
			       "modcaps=-fsetid", "--seccomp=none", NULL), 0);
	assert_int_equal(vqf_vu_sandbox_of(&o), VQF_VU_SANDBOX_NONE);
	assert_int_equal(vqf_vu_seccomp_of(&o), VQF_VU_SECCOMP_NONE);
	assert_true(o.readonly);
	assert_string_equal(o.modcaps, "-fsetid");
	vqf_vu_opts_release(&o);
	/* the first character is the separator, and closes the map */
	assert_int_equal(parse(&o, "--fd=3", "--shared", "DIR",
			       "--uid-map=:0:1000:1:", "--uid-map=/1/100000/"
			       "65536/", "--gid-map=:0:1000:1:", NULL), 0);
	assert_int_equal(o.n_uid_map, 2);
	assert_int_equal(o.n_gid_map, 1);
	assert_int_equal(o.uid_map[0].outside, 1000);
	assert_int_equal(o.uid_map[1].inside, 1);
	assert_int_equal(o.uid_map[1].outside, 100000);
	assert_int_equal(o.uid_map[1].count, 65536);
	vqf_vu_opts_release(&o);
}

static void test_capabilities(void **state)
{
	char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	assert_non_null(f);
	vqf_vu_print_capabilities(f);
	fclose(f);
	assert_non_null(strstr(buf, "\"type\": \"fs\""));
	assert_non_null(strstr(buf, "\"separate-options\""));
}

/* A backend that records what libfuse would have handed it. */
static struct fuse_file_info seen_fi;
static int seen_opens, seen_inits;

static void rec_init(void *ud, struct fuse_conn_info *conn)
{
	(void)ud;
	seen_inits++;
	conn->want |= FUSE_CAP_FLOCK_LOCKS | FUSE_CAP_POSIX_LOCKS;
}

static void rec_open(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	(void)req;
	(void)ino;
	seen_fi = *fi;
	seen_opens++;
}

static void rec_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	rec_open(req, 0, fi);
}

static void rec_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 size_t size)
{
	(void)req;
	(void)ino;
	(void)name;
	(void)size;
}

static void rec_rdp(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)req;
	(void)ino;
	(void)size;
	(void)off;
	(void)fi;
}

static void rec_flock(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi, int op)
{
	(void)req;
	(void)ino;
	(void)fi;
	(void)op;
}

static const struct fuse_lowlevel_ops rec_ops = {
	.init = rec_init, .open = rec_open, .create = rec_create,
	.getxattr = rec_getxattr, .setxattr = NULL,
	.readdirplus = rec_rdp, .flock = rec_flock,
};

static const struct fuse_lowlevel_ops *wrap(const struct vqf_vu_policy *p)
{
	size_t n = sizeof(rec_ops);

	return vqf_vu_policy_ops(p, &rec_ops, &n);
}

static void test_ops_open(void **state)
{
	const struct fuse_lowlevel_ops *ops;
	struct fuse_file_info fi;
	struct vqf_vu_policy p;
	struct vqf_vu_opts o;

	(void)state;
	/* cache=never: direct I/O, O_DIRECT dropped */
	assert_int_equal(parse(&o, "--socket", "/tmp/s", "--shared", "DIR",
			       "--cache=never", NULL), 0);
	vqf_vu_policy_of(&o, &p);
	ops = wrap(&p);
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY | O_DIRECT | O_APPEND;
	ops->open(NULL, 2, &fi);
	assert_int_equal(seen_opens, 1);
	assert_true(seen_fi.direct_io);
	assert_false(seen_fi.keep_cache);
	assert_int_equal(seen_fi.flags, O_WRONLY | O_APPEND);

	/*
	 * always + writeback + allow_direct_io: keep cache, O_RDWR, no
	 * append, O_DIRECT kept
	 */
	assert_int_equal(parse(&o, "--socket", "/tmp/s", "--shared", "DIR",
			       "--cache=always", "--writeback",
			       "--allow-direct-io", NULL), 0);
	vqf_vu_policy_of(&o, &p);
	ops = wrap(&p);
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY | O_DIRECT | O_APPEND | O_CREAT;
	ops->create(NULL, 1, "f", 0644, &fi);
	assert_int_equal(seen_opens, 2);
	assert_false(seen_fi.direct_io);
	assert_true(seen_fi.keep_cache);
	assert_int_equal(seen_fi.flags, O_RDWR | O_DIRECT | O_CREAT);
}

static void test_ops_init(void **state)
{
	const struct fuse_lowlevel_ops *ops;
	struct fuse_conn_info conn;
	struct vqf_vu_policy p;
	struct vqf_vu_opts o;
	int inits = seen_inits;

	(void)state;
	assert_int_equal(parse(&o, "--socket", "/tmp/s", "--shared", "DIR",
			       NULL), 0);
	vqf_vu_policy_of(&o, &p);
	ops = wrap(&p);
	memset(&conn, 0, sizeof(conn));
	conn.capable = FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_READDIRPLUS |
		       FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS;
	conn.want = FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	ops->init(NULL, &conn);
	assert_int_equal(seen_inits, inits + 1);
	/* the guest keeps locks; no writeback unless asked */
	assert_int_equal(conn.want & (FUSE_CAP_POSIX_LOCKS |
				      FUSE_CAP_FLOCK_LOCKS), 0);
	assert_int_equal(conn.want & FUSE_CAP_WRITEBACK_CACHE, 0);
	assert_true(conn.want & FUSE_CAP_READDIRPLUS);
	/* default policy: xattrs answered ENOSYS (no op), no flock op */
	assert_null(ops->getxattr);
	assert_null(ops->flock);
	assert_non_null(ops->readdirplus);

	assert_int_equal(parse(&o, "--socket", "/tmp/s", "-o",
			       "source=DIR,cache=none,xattr,flock,writeback",
			       NULL), 0);
	vqf_vu_policy_of(&o, &p);
	ops = wrap(&p);
	conn.want = FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	ops->init(NULL, &conn);
	assert_true(conn.want & FUSE_CAP_FLOCK_LOCKS);
	assert_false(conn.want & FUSE_CAP_POSIX_LOCKS);
	assert_true(conn.want & FUSE_CAP_WRITEBACK_CACHE);
	/* cache=none: no READDIRPLUS, as virtiofsd */
	assert_false(conn.want & (FUSE_CAP_READDIRPLUS |
				  FUSE_CAP_READDIRPLUS_AUTO));
	assert_null(ops->readdirplus);
	assert_non_null(ops->getxattr);
	assert_non_null(ops->flock);
	/* writeback the front-end did not offer stays off */
	conn.capable = 0;
	conn.want = 0;
	ops->init(NULL, &conn);
	assert_false(conn.want & FUSE_CAP_WRITEBACK_CACHE);
	vqf_vu_opts_release(&o);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/vqf-vu-policy.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

/*
 * --seccomp=kill lets the daemon make Unix sockets (syslog) and no other:
 * in a child, AF_UNIX works and AF_INET kills it.  Not under valgrind,
 * whose own system calls the filter would refuse.
 */
static void test_seccomp_socket(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (RUNNING_ON_VALGRIND)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct vqf_vu_conf c = { .seccomp = VQF_VU_SECCOMP_KILL };
		int fd;

		if (vqf_vu_seccomp(&c))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			_exit(3);
		close(fd);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		_exit(fd < 0 ? 4 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status))
		fail_msg("the child exited with %d (2: no filter, 3: no Unix "
			 "socket, 4/5: an AF_INET socket was allowed)",
			 WEXITSTATUS(status));
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_cache_modes),
		cmocka_unit_test(test_libvirt_forms),
		cmocka_unit_test(test_legacy_flags),
		cmocka_unit_test(test_comma_escape),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_confine_opts),
		cmocka_unit_test(test_capabilities),
		cmocka_unit_test(test_ops_open),
		cmocka_unit_test(test_ops_init),
		cmocka_unit_test(test_seccomp_socket),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
