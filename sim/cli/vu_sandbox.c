// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_sandbox.c - `vqfuse-sim vhost-user --sandbox=namespace|chroot|none`,
 * as virtiofsd's sandbox: the daemon that serves a guest sees nothing of
 * the host's file system but the shared directory.
 *
 * namespace (the default): the program forks; the child runs in new
 * mount, pid, net, ipc and uts namespaces (and a user namespace when
 * started unprivileged, or with --uid-map/--gid-map), its root a small
 * read-only tmpfs that holds the shared directory at its host path and a
 * proc of the child's own pid namespace (subset=pid: no /proc/sys, no
 * sysrq-trigger) at /proc; the old root is detached (pivot_root).  The
 * host path stays valid so that every backend and the hub keep their
 * paths, and /proc/self/fd/N (libfuse's passthrough_ll and the version
 * table's read-only reopen go through it) resolves.
 * chroot: the same root in a private mount namespace, entered with
 * chroot(2); no pid, net, ipc or uts namespace, so its /proc holds only
 * the serving process's own directory (own_proc_dir()).
 * none: nothing; Landlock, capabilities and seccomp still apply.
 *
 * In both sandboxes the parent stays outside: it waits, forwards
 * SIGTERM, SIGINT and SIGHUP, removes a socket once the child accepted
 * on it (the child cannot reach its path), and exits with the child's
 * status.
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_vu.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE		1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC	O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE		0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH	0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY	0x00000001
#endif
#ifndef SYS_open_tree
#define SYS_open_tree		428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount		429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr	442
#endif

struct vu_mount_attr {
	u64 attr_set, attr_clr, propagation, userns_fd;
};

enum vqf_vu_sandbox vqf_vu_sandbox_of(const struct vqf_vu_opts *o)
{
	if (!o->sandbox || !strcmp(o->sandbox, "namespace"))
		return VQF_VU_SANDBOX_NAMESPACE;
	if (!strcmp(o->sandbox, "chroot"))
		return VQF_VU_SANDBOX_CHROOT;
	return VQF_VU_SANDBOX_NONE;
}

enum vqf_vu_seccomp vqf_vu_seccomp_of(const struct vqf_vu_opts *o)
{
	if (!o->seccomp || !strcmp(o->seccomp, "kill"))
		return VQF_VU_SECCOMP_KILL;
	if (!strcmp(o->seccomp, "log"))
		return VQF_VU_SECCOMP_LOG;
	if (!strcmp(o->seccomp, "trap"))
		return VQF_VU_SECCOMP_TRAP;
	return VQF_VU_SECCOMP_NONE;
}

static FILE *sb_log;

static int sb_fail(const char *what)
{
	int err = errno;

	fprintf(sb_log, "%s: vhost-user: sandbox: %s: %s\n", vqf_cli_prog,
		what, strerror(err));
	return -err;
}

/* ---- the parent that stays outside ---- */

static pid_t sb_child;

static void sb_forward(int sig)
{
	if (sb_child > 0)
		kill(sb_child, sig);
}

static void sb_unlink(const char *path)
{
	struct stat st;

	if (path && !lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
}

void vqf_vu_close_all_but(int a, int b)
{
	int keep[2] = { a < b ? a : b, a < b ? b : a };
	unsigned int from = 3, i;

	for (i = 0; i < 2; i++) {
		if (keep[i] < 3)
			continue;
		if ((unsigned int)keep[i] > from)
			close_range(from, (unsigned int)keep[i] - 1, 0);
		from = (unsigned int)keep[i] + 1;
	}
	close_range(from, ~0u, 0);
}

/*
 * The parent's whole life: wait for @pid, forward the stop signals,
 * remove the sockets it names through @nfd (-1: none), exit with its
 * status.  @life: kept open until the parent exits (see sb_fork()).
 */
static void __attribute__((noreturn)) sb_parent(pid_t pid, int nfd,
						int life,
						const char *const *socks)
{
	struct sigaction sa;
	unsigned int i, n = 0;
	unsigned char b;
	int st = 0, sig;
	ssize_t r;

	sb_child = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sb_forward;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* Nothing of the daemon's stays open here: the child serves. */
	vqf_vu_close_all_but(nfd, life);
	for (n = 0; socks && socks[n]; n++)
		;
	while (nfd >= 0) {
		r = read(nfd, &b, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (b < n)
			sb_unlink(socks[b]);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	for (i = 0; i < n; i++)
		sb_unlink(socks[i]);
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	fprintf(sb_log, "%s: vhost-user: the confined daemon was killed by "
		"signal %d (%s)%s\n", vqf_cli_prog, sig, strsignal(sig),
		sig == SIGSYS ? ": a system call outside the seccomp "
		"allowlist; --seccomp=log names it in the audit log (see "
		"docs/virtiofsd-compat.md)" : "");
	fflush(sb_log);
	_exit(VQF_CLI_EXIT_FAIL);
}

/*
 * fork(); returns in the child.  @nfd_w: the child's end of the notify
 * pipe (kept), @nfd_r the parent's (-1: this parent only waits).
 */
static int sb_fork(int nfd_r, int nfd_w, const char *const *socks)
{
	struct pollfd alive;
	int life[2];
	pid_t pid;

	/* The parent keeps life[1] open until it exits: its hang-up tells
	 * the child whether the parent died before PDEATHSIG was set
	 * (getppid() says 0 in a new pid namespace either way).
	 */
	if (pipe2(life, O_CLOEXEC))
		return sb_fail("pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return sb_fail("fork");
	if (pid) {
		close(life[0]);
		if (nfd_w >= 0)
			close(nfd_w);
		sb_parent(pid, nfd_r, life[1], socks);
	}
	close(life[1]);
	if (nfd_r >= 0)
		close(nfd_r);
	/* Killed with -9, the parent takes the child along. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alive.fd = life[0];
	alive.events = POLLIN;
	if (poll(&alive, 1, 0) != 0)
		_exit(VQF_CLI_EXIT_FAIL);	/* it already did */
	close(life[0]);
	return 0;
}

/* ---- the user namespace ---- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
}

static void map_text(const struct vqf_vu_idmap *m, unsigned int n,
		     unsigned int self, char *buf, size_t size)
{
	size_t off = 0;
	unsigned int i;

	if (!n) {
		/* virtiofsd's default: the caller is root inside */
		snprintf(buf, size, "0 %u 1\n", self);
		return;
	}
	buf[0] = 0;
	for (i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%u %u %u\n",
					m[i].inside, m[i].outside,
					m[i].count);
}

/*
 * The child makes the user namespace; the parent, still outside it,
 * writes the maps (a single map of itself as an unprivileged user, any
 * maps as root), then lets the child go on.
 */
static int sb_userns(const struct vqf_vu_opts *o, int nfd_r, int nfd_w,
		     const char *const *socks)
{
	int c2p[2], p2c[2];
	char path[64], text[VQF_VU_IDMAPS * 40];
	char b = 0;
	pid_t pid;
	int ret;

	if (pipe2(c2p, O_CLOEXEC) || pipe2(p2c, O_CLOEXEC))
		return sb_fail("pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return sb_fail("fork");
	if (!pid) {
		close(c2p[0]);
		close(p2c[1]);
		if (nfd_r >= 0)
			close(nfd_r);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWUSER))
			_exit((sb_fail("unshare(CLONE_NEWUSER)"), 1));
		if (write(c2p[1], &b, 1) != 1 || read(p2c[0], &b, 1) != 1 ||
		    b != 'y')
			_exit(1);
		close(c2p[1]);
		close(p2c[0]);
		/* root inside where 0 is mapped; harmless where not */
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
			errno = 0;
		return 0;
	}
	close(c2p[1]);
	close(p2c[0]);
	if (read(c2p[0], &b, 1) != 1) {
		waitpid(pid, NULL, 0);
		_exit(1);
	}
	ret = 0;
	if (geteuid()) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		ret = write_file(path, "deny");
	}
	map_text(o->uid_map, o->n_uid_map, geteuid(), text, sizeof(text));
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (!ret)
		ret = write_file(path, text);
	map_text(o->gid_map, o->n_gid_map, getegid(), text, sizeof(text));
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (!ret)
		ret = write_file(path, text);
	if (ret) {
		errno = -ret;
		sb_fail(geteuid() ? "writing the user namespace's maps (an "
			"unprivileged user maps only itself: --uid-map=:N:"
			"OWN_UID:1:)" : "writing the user namespace's maps");
	}
	b = ret ? 'n' : 'y';
	if (write(p2c[1], &b, 1) != 1)
		errno = 0;
	close(p2c[1]);
	close(c2p[0]);
	if (nfd_w >= 0)
		close(nfd_w);
	/* no life pipe: a parent that died before the child's PDEATHSIG
	 * closed p2c, and the child's read above ends it
	 */
	sb_parent(pid, nfd_r, -1, socks);
}

/* ---- the root ---- */

const char *vqf_vu_sandbox_unfit(const char *shared)
{
	char real[PATH_MAX];

	/* a path that does not resolve is sandbox_enter()'s to report */
	if (!realpath(shared, real))
		return NULL;
	if (!strcmp(real, "/"))
		return "the sandbox's root cannot be the host's /";
	if (!strcmp(real, "/proc") || !strncmp(real, "/proc/", 6))
		return "the sandbox's root keeps /proc for its own proc";
	return NULL;
}

/* mkdir -p of @rel (relative to the current directory). */
static int mkdirs(const char *rel)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", rel);
	for (p = buf; (p = strchr(p + 1, '/'));) {
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int set_ro(const char *path, unsigned int flags)
{
	struct vu_mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a,
			    sizeof(a));
}

/*
 * chroot mode shares the host's pid namespace, and a proc mounted there
 * lists every host process: /proc/PID/root of any one this process may
 * ptrace (a root process with no more capabilities than ours, such as
 * another guest's daemon) leads out of the root where Landlock is
 * missing.  The root gets only this process's own proc directory, at its
 * pid and as "self", for the /proc/self/fd paths the backends and the
 * hub reopen files through (and LeakSanitizer's /proc/self/maps).
 * Called in the root, before it is made read-only.
 */
static int own_proc_dir(void)
{
	char pid[24], host[40], here[40];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(host, sizeof(host), "/proc/%s", pid);
	snprintf(here, sizeof(here), "proc/%s", pid);
	if (mkdir(here, 0555))
		return sb_fail("/proc/PID in the root");
	if (mount(host, here, NULL, MS_BIND, NULL))
		return sb_fail("binding this process's /proc/PID");
	if (symlink(pid, "proc/self"))
		return sb_fail("/proc/self in the root");
	return 0;
}

/*
 * In a private mount namespace: a tmpfs over the shared directory's path
 * becomes the new root; in it the shared directory (a recursive clone
 * made before the tmpfs hid it) at its own path and a fresh proc.  Leaves
 * the current directory at the tmpfs's root.
 */
static int build_root(const struct vqf_vu_opts *o, struct vqf_vu_conf *c,
		      bool own_pids)
{
	const char *rel = c->shared + 1;
	int tree;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return sb_fail("making the mounts private");
	tree = (int)syscall(SYS_open_tree, AT_FDCWD, c->shared,
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
			    AT_RECURSIVE);
	if (tree < 0)
		return sb_fail("cloning the shared directory's mounts");
	if (mount("vqfuse-root", c->shared, "tmpfs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k"))
		return sb_fail("the root tmpfs");
	if (chdir(c->shared))
		return sb_fail("chdir into the root tmpfs");
	if (*rel && mkdirs(rel))
		return sb_fail("the shared directory's path in the root");
	if (mkdir("proc", 0555))
		return sb_fail("/proc in the root");
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, *rel ? rel : ".",
		    MOVE_MOUNT_F_EMPTY_PATH))
		return sb_fail("mounting the shared directory in the root");
	close(tree);
	if (o->readonly && set_ro(*rel ? rel : ".", AT_RECURSIVE))
		return sb_fail("--readonly: the shared directory read-only");
	if (own_pids) {
		if (mount("proc", "proc", "proc",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid"))
			return sb_fail("mounting /proc");
	} else if (own_proc_dir()) {
		return -1;
	}
	/* the tmpfs itself: nothing may be made in the root */
	if (*rel && set_ro(".", 0))
		return sb_fail("the root read-only");
	return 0;
}

static int enter_namespace(const struct vqf_vu_opts *o,
			   struct vqf_vu_conf *c, int nfd[2],
			   const char *const *socks)
{
	if (c->userns && sb_userns(o, nfd[0], nfd[1], socks))
		return -EPERM;
	if (unshare(CLONE_NEWPID))
		return sb_fail("unshare(CLONE_NEWPID)");
	/* In the user namespace, the middle process only waits. */
	if (sb_fork(c->userns ? -1 : nfd[0], nfd[1], socks))
		return -EAGAIN;
	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
		    CLONE_NEWUTS))
		return sb_fail("unshare(mount, net, ipc, uts)");
	if (build_root(o, c, true))
		return -EPERM;
	if (syscall(SYS_pivot_root, ".", "."))
		return sb_fail("pivot_root");
	/* the old root, stacked under the new one, goes */
	if (umount2(".", MNT_DETACH))
		return sb_fail("detaching the old root");
	if (chdir("/"))
		return sb_fail("chdir /");
	return 0;
}

static int enter_chroot(const struct vqf_vu_opts *o, struct vqf_vu_conf *c,
			int nfd[2], const char *const *socks)
{
	if (sb_fork(nfd[0], nfd[1], socks))
		return -EAGAIN;
	if (unshare(CLONE_NEWNS))
		return sb_fail("unshare(CLONE_NEWNS)");
	if (build_root(o, c, false))
		return -EPERM;
	if (chroot("."))
		return sb_fail("chroot");
	if (chdir("/"))
		return sb_fail("chdir /");
	return 0;
}

int vqf_vu_sandbox_enter(const struct vqf_vu_opts *o, struct vqf_vu_conf *c,
			 const char *const *socks, FILE *log)
{
	int nfd[2] = { -1, -1 };
	int ret;

	sb_log = log;
	c->sandbox = vqf_vu_sandbox_of(o);
	c->seccomp = vqf_vu_seccomp_of(o);
	c->notify_fd = -1;
	c->userns = c->sandbox == VQF_VU_SANDBOX_NAMESPACE &&
		    (geteuid() || o->n_uid_map || o->n_gid_map);
	if (!realpath(o->shared, c->shared))
		return sb_fail(o->shared);
	if (c->sandbox == VQF_VU_SANDBOX_NONE)
		return 0;
	/* What a confined process cannot load later: the time zone. */
	tzset();
	if (pipe2(nfd, O_CLOEXEC))
		return sb_fail("pipe");
	if (c->sandbox == VQF_VU_SANDBOX_NAMESPACE)
		ret = enter_namespace(o, c, nfd, socks);
	else
		ret = enter_chroot(o, c, nfd, socks);
	c->notify_fd = nfd[1];
	return ret;
}

void vqf_vu_socket_gone(const struct vqf_vu_conf *c, unsigned int i,
			const char *path)
{
	unsigned char b = (unsigned char)i;

	if (c->notify_fd < 0) {
		unlink(path);
		return;
	}
	if (write(c->notify_fd, &b, 1) != 1)
		errno = 0;	/* the parent removes it at the end anyway */
}

void vqf_vu_conf_describe(const struct vqf_vu_conf *c, char *buf,
			  size_t size)
{
	static const char *const sm[] = {
		[VQF_VU_SECCOMP_KILL] = "kill", [VQF_VU_SECCOMP_LOG] = "log",
		[VQF_VU_SECCOMP_TRAP] = "trap", [VQF_VU_SECCOMP_NONE] = "none",
	};
	char ll[96], sc[64];

	if (c->landlock_abi)
		snprintf(ll, sizeof(ll), "Landlock ABI %d", c->landlock_abi);
	else
		snprintf(ll, sizeof(ll), "no Landlock (%s)", c->landlock_why);
	if (c->seccomp == VQF_VU_SECCOMP_NONE)
		snprintf(sc, sizeof(sc), "seccomp none");
	else
		snprintf(sc, sizeof(sc), "seccomp %s (%u syscalls allowed)",
			 sm[c->seccomp], c->nr_syscalls);
	snprintf(buf, size, "sandbox %s%s; root %s; %s; capabilities %s; %s",
		 c->sandbox == VQF_VU_SANDBOX_NAMESPACE ? "namespace (mount, "
		 "pid, net, ipc, uts" : c->sandbox == VQF_VU_SANDBOX_CHROOT ?
		 "chroot (mount" : "none",
		 c->sandbox == VQF_VU_SANDBOX_NONE ? "" :
		 c->userns ? ", user)" : ")",
		 c->sandbox == VQF_VU_SANDBOX_NONE ? "the host's /" :
		 "a read-only tmpfs with the shared directory and /proc",
		 sc, c->caps, ll);
}
