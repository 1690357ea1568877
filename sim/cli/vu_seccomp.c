// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_seccomp.c - `--seccomp=kill|log|trap|none`: the daemon's system call
 * allowlist (libseccomp), as virtiofsd's.  Installed once the sandbox is
 * entered, before any backend, hub or serving thread exists, on every
 * thread (SCMP_FLTATR_CTL_TSYNC) and with NoNewPrivs.  A call outside the
 * list kills the process (kill, the default), is allowed and written to
 * the audit log (log), or raises SIGSYS, which names the call on stderr
 * and makes it fail with ENOSYS (trap).
 *
 * The list covers every path the daemon has: vhost-user serving (the
 * socket, SCM_RIGHTS, eventfds, guest memory maps), vqfuse's passthrough,
 * passthrough_ll and null, DAX (the window's mmaps, SHMEM_MAP's
 * descriptors), the version table (memfd) and --guests (the hub's
 * threads and inotify), --host-locks (OFD locks, flock), xattrs,
 * syslog, and the sanitizer builds' run time.  How to find a missing
 * call: docs/virtiofsd-compat.md, "The syscall allowlist".
 */
#define _GNU_SOURCE
#include "vqf_vu.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const vu_syscalls[] = {
	/* memory, threads, signals, time: libc and pthreads */
	"brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync",
	"mincore", "membarrier", "clone", "clone3", "set_robust_list",
	"get_robust_list", "set_tid_address", "rseq", "futex", "futex_waitv", "exit",
	"exit_group", "gettid", "getpid", "getppid", "tgkill", "tkill",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigtimedwait",
	"sigaltstack", "restart_syscall", "nanosleep", "clock_nanosleep",
	"clock_gettime", "clock_getres", "gettimeofday", "time",
	"sched_yield", "sched_getaffinity", "getrandom", "prctl",
	"getrlimit", "prlimit64", "uname", "arch_prctl",
	/* descriptors and polling */
	"close", "close_range", "dup", "dup2", "dup3", "fcntl", "pipe2",
	"eventfd2", "poll", "ppoll", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "select",
	"pselect6", "ioctl",
	/* the vhost-user socket, syslog */
	"accept", "accept4", "recvmsg", "sendmsg", "recvfrom", "sendto",
	"shutdown", "getsockopt", "setsockopt", "getsockname",
	"getpeername", "connect",
	/* guest memory, the DAX window, the version table */
	"memfd_create", "ftruncate", "fallocate",
	/* files: the backends' FUSE operations */
	"read", "write", "readv", "writev", "pread64", "pwrite64",
	"preadv", "pwritev", "preadv2", "pwritev2", "lseek",
	"copy_file_range", "sendfile", "splice", "fadvise64", "readahead",
	"open", "openat", "openat2", "stat", "fstat", "lstat",
	"newfstatat", "statx", "fstatfs", "statfs", "getdents64", "getdents",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
	"renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
	"readlink", "readlinkat", "mknod", "mknodat", "chmod", "fchmod",
	"fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"truncate", "fsync", "fdatasync", "sync_file_range", "utimensat",
	"access", "faccessat", "faccessat2", "umask", "fchdir", "chdir",
	"getcwd",
	"getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr",
	"fsetxattr", "listxattr", "llistxattr", "flistxattr",
	"removexattr", "lremovexattr", "fremovexattr", "flock",
	/* callers' credentials (vqfuse's passthrough) */
	"setfsuid", "setfsgid", "setgroups", "getgroups", "getuid",
	"geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"capget",
	/* the hub's watcher */
	"inotify_init1", "inotify_add_watch", "inotify_rm_watch",
#if defined(__SANITIZE_ADDRESS__)
	/* LeakSanitizer's stop-the-world at exit, the reports */
	"ptrace", "wait4", "waitid", "kill", "sched_getparam",
	"getpriority", "sysinfo", "sched_setaffinity", "personality",
	"pipe", "process_vm_readv",
#endif
	NULL
};

/* --seccomp=trap: name the call, make it fail with ENOSYS. */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	static const char msg[] = "vqfuse: seccomp: blocked system call ";
	char num[16];
	int n = 0, v = si->si_syscall;
	ucontext_t *uc = ctx;

	(void)sig;
	do {
		num[sizeof(num) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < 15);
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, num + sizeof(num) - n, (size_t)n) < 0 ||
	    write(2, "\n", 1) < 0)
		n = 0;
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = (unsigned long long)-ENOSYS;
#else
	(void)uc;
	_exit(1);
#endif
}

int vqf_vu_seccomp(struct vqf_vu_conf *c)
{
	static const u32 act[] = {
		[VQF_VU_SECCOMP_KILL] = SCMP_ACT_KILL_PROCESS,
		[VQF_VU_SECCOMP_LOG] = SCMP_ACT_LOG,
		[VQF_VU_SECCOMP_TRAP] = SCMP_ACT_TRAP,
	};
	scmp_filter_ctx ctx;
	unsigned int i;
	int nr, ret;

	if (c->seccomp == VQF_VU_SECCOMP_NONE)
		return 0;
	if (c->seccomp == VQF_VU_SECCOMP_TRAP) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSYS, &sa, NULL);
	}
	ctx = seccomp_init(act[c->seccomp]);
	if (!ctx)
		return -ENOMEM;
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (!ret)
		ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	c->nr_syscalls = 0;
	for (i = 0; !ret && vu_syscalls[i]; i++) {
		nr = seccomp_syscall_resolve_name(vu_syscalls[i]);
		if (nr < 0)
			continue;	/* not on this architecture */
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (!ret)
			c->nr_syscalls++;
	}
	/* Unix sockets only (syslog's): a daemon that a guest took over
	 * must not reach the network, even without --sandbox=namespace.
	 */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket),
				       1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (!ret) {
		c->nr_syscalls++;
		ret = seccomp_load(ctx);
	}
	seccomp_release(ctx);
	return ret;
}
