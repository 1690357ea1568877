// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vhost_user.c - `vqfuse-sim vhost-user`: the simulator's virtio-fs device
 * served to a real QEMU (-device vhost-user-fs-pci) over a vhost-user
 * socket, with the shared directory behind vqfuse's passthrough or
 * libfuse's passthrough_ll.  One connection: the program exits when the
 * front-end goes away, or at SIGINT/SIGTERM, as the vhost-user spec's
 * backend program conventions ask.  It takes virtiofsd's command line too
 * (vu_compat.c) and serves virtiofsd's cache policy (vu_policy.c), so it
 * can be started in virtiofsd's place.
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_passthrough.h"
#include "vqf_passthrough_ll.h"
#include "vqf_nullfs.h"
#include "vqf_vhost.h"
#include "vqf_vu.h"
#include "vqf_vu_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#ifndef VQF_VERSION
#define VQF_VERSION "unknown"
#endif

static int stop_fd = -1;
static struct vqf_vu_conf conf = { .notify_fd = -1 };

static void on_signal(int sig)
{
	u64 one = 1;

	(void)sig;
	if (write(stop_fd, &one, sizeof(one)) < 0)
		return;	/* already signalled: the count is saturated */
}

void vqf_cli_vhost_usage(FILE *f)
{
	vqf_vu_usage(f);
}

/*
 * --syslog: the log as a stream whose lines go to syslog(3), so that
 * every message (and the back-end's --verbose trace) takes one path.
 */
static ssize_t syslog_write(void *cookie, const char *buf, size_t size)
{
	size_t n = size && buf[size - 1] == '\n' ? size - 1 : size;

	(void)cookie;
	syslog(LOG_INFO, "%.*s", (int)n, buf);
	return (ssize_t)size;
}

static FILE *open_log(const struct vqf_vu_opts *o)
{
	static const cookie_io_functions_t io = { .write = syslog_write };
	FILE *f;

	if (!o->syslog)
		return stderr;
	/* connected now: the sandbox will hide /dev/log */
	openlog(vqf_cli_prog, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	f = fopencookie(NULL, "w", io);
	if (!f)
		return stderr;
	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

static FILE *log_out;
static enum vqf_vu_log log_level;

static void vu_log(enum vqf_vu_log level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void vu_log(enum vqf_vu_log level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fprintf(log_out, "%s: ", vqf_cli_prog);
	va_start(ap, fmt);
	vfprintf(log_out, fmt, ap);
	va_end(ap);
	fputc('\n', log_out);
}

/*
 * --fd: a socket the caller made and listens on (libvirt's way).  Checked
 * where it enters: a unix stream socket that is listening.
 */
static int check_listen_fd(int fd)
{
	int v, domain, type;
	socklen_t len = sizeof(v);

	if (fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len))
		return -ENOTSOCK;
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    domain != AF_UNIX || type != SOCK_STREAM)
		return -EPROTOTYPE;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) || !v)
		return -EINVAL;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC))
		return -errno;
	return 0;
}

/*
 * Options that virtiofsd has and that change nothing here, and what
 * --trust-guest gives up: say so.
 */
static void log_noops(const struct vqf_vu_opts *o)
{
	if (!vqf_vu_backend_safe(o->fs))
		vu_log(VQF_VU_LOG_WARN, "--trust-guest: serving "
		       "passthrough_ll, which is not audited to face a "
		       "hostile guest (docs/guard.md): guest node ids and "
		       "directory handles are its pointers, so an id the "
		       "device's guard lets through is memory corruption; "
		       "behind the guard, the sandbox, Landlock, the "
		       "capabilities and seccomp are what stand between "
		       "the guest and the host");
	if (o->announce_submounts)
		vu_log(VQF_VU_LOG_WARN, "announce-submounts: libfuse's "
		       "low-level API cannot flag submounts; the guest sees "
		       "one file system");
}

static int setup_listen(const struct vqf_vu_opts *o)
{
	struct group *g;
	int lfd, ret;

	if (o->fd >= 0) {
		ret = check_listen_fd(o->fd);
		if (ret) {
			vu_log(VQF_VU_LOG_ERROR, "--fd=%d: not a listening "
			       "unix stream socket (%s)", o->fd,
			       strerror(-ret));
			return ret;
		}
		return o->fd;
	}
	lfd = vqf_vhost_listen(o->socket);
	if (lfd < 0) {
		vu_log(VQF_VU_LOG_ERROR, "%s: %s", o->socket, strerror(-lfd));
		return lfd;
	}
	g = o->socket_group ? getgrnam(o->socket_group) : NULL;
	if (o->socket_group && (!g || chown(o->socket, (uid_t)-1, g->gr_gid) ||
				chmod(o->socket, 0660))) {
		ret = g ? -errno : -ENOENT;
		vu_log(VQF_VU_LOG_ERROR, "--socket-group=%s: %s",
		       o->socket_group, strerror(-ret));
		close(lfd);
		unlink(o->socket);
		return ret;
	}
	return lfd;
}

/*
 * The device's guard (docs/guard.md): "guard: N refused" (every refusal
 * counter summed: an honest guest kernel gets 0), then each cause that is
 * not 0 under its counter's name, what it checked and holds now, and the
 * LOOKUP ".." and FORGET entries it rewrote or dropped.
 */
static void print_guard(const struct vqf_guard_stats *g)
{
	const struct {
		const char *name;
		u64 n;
	} c[] = {
#define CAUSE(name, err)	{ #name, g->name },
		VQF_GUARD_REFUSALS(CAUSE)
#undef CAUSE
	};
	unsigned int i, shown = 0;
	u64 sum = 0;

	for (i = 0; i < ARRAY_SIZE(c); i++)
		sum += c[i].n;
	fprintf(log_out, "%s: guard: %llu refused", vqf_cli_prog,
		(unsigned long long)sum);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		if (!c[i].n)
			continue;
		fprintf(log_out, "%s%s %llu", shown++ ? ", " : " (",
			c[i].name, (unsigned long long)c[i].n);
	}
	fprintf(log_out, "%s, %llu checked, %llu nodes and %llu handles "
		"held, LOOKUP .. %llu to a parent and %llu to the root, "
		"forgets %llu (%llu unknown, %llu clamped)\n",
		shown ? ")" : "", (unsigned long long)g->checked,
		(unsigned long long)g->nodes,
		(unsigned long long)g->handles,
		(unsigned long long)g->dotdot_parent,
		(unsigned long long)g->dotdot_root,
		(unsigned long long)g->forgets,
		(unsigned long long)g->forget_unknown,
		(unsigned long long)g->forget_clamped);
}

static void print_stats(struct vqf_vhost *vh, unsigned int nq)
{
	struct vqf_vhost_stats s;
	unsigned int i;
	u64 other;

	vqf_vhost_get_stats(vh, &s);
	fprintf(log_out, "%s: vhost-user: %llu messages, %llu refused "
		"(header %llu, unsupported %llu, size %llu, fds %llu+%llu, "
		"index %llu, value %llu, align %llu, regions %llu, "
		"ring outside memory %llu, not negotiated %llu, back-end "
		"channel %llu), %llu starts (%llu rings added), "
		"%llu stops (%llu live)\n", vqf_cli_prog,
		(unsigned long long)s.msgs, (unsigned long long)s.refused,
		(unsigned long long)s.bad_header,
		(unsigned long long)s.unsupported,
		(unsigned long long)s.bad_size,
		(unsigned long long)(s.bad_fds + s.ring_fd),
		(unsigned long long)s.too_many_fds,
		(unsigned long long)s.bad_index,
		(unsigned long long)s.bad_value,
		(unsigned long long)s.bad_align,
		(unsigned long long)(s.too_many_regions + s.no_regions +
				     s.region_wrap + s.region_overlap +
				     s.region_file + s.region_fd +
				     s.mmap_failed),
		(unsigned long long)s.ring_fault,
		(unsigned long long)s.not_negotiated,
		(unsigned long long)s.backend_fd_bad,
		(unsigned long long)s.starts,
		(unsigned long long)s.ring_adds, (unsigned long long)s.stops,
		(unsigned long long)s.live_changes);
	fprintf(log_out, "%s: requests per queue:", vqf_cli_prog);
	for (i = 0; i < nq; i++)
		fprintf(log_out, " q%u=%llu", i,
			(unsigned long long)s.requests[i]);
	/* the data path: with a DAX window, mapped data moves without
	 * READ/WRITE, through SETUPMAPPING/REMOVEMAPPING
	 */
	other = 0;
	for (i = 0; i < VQF_VHOST_OPCODES; i++)
		if (i != FUSE_READ && i != FUSE_WRITE &&
		    i != FUSE_SETUPMAPPING && i != FUSE_REMOVEMAPPING)
			other += s.by_opcode[i];
	fprintf(log_out, "\n%s: requests by opcode: READ=%llu WRITE=%llu "
		"SETUPMAPPING=%llu REMOVEMAPPING=%llu other=%llu",
		vqf_cli_prog, (unsigned long long)s.by_opcode[FUSE_READ],
		(unsigned long long)s.by_opcode[FUSE_WRITE],
		(unsigned long long)s.by_opcode[FUSE_SETUPMAPPING],
		(unsigned long long)s.by_opcode[FUSE_REMOVEMAPPING],
		(unsigned long long)other);
	fprintf(log_out, "\n%s: device: %llu requests, %llu hiprio, "
		"%llu refused, %llu queue breaks, %llu MB in, %llu MB out\n",
		vqf_cli_prog, (unsigned long long)s.dev.requests,
		(unsigned long long)s.dev.hiprio,
		(unsigned long long)s.dev.refused,
		(unsigned long long)s.dev.queue_broken,
		(unsigned long long)(s.dev.bytes_in >> 20),
		(unsigned long long)(s.dev.bytes_out >> 20));
	print_guard(&s.dev.guard);
}

/* One front-end of --guests N: its device, socket and serving thread. */
struct vu_guest {
	unsigned int idx;
	struct vqf_vhost *vh;
	char sock[PATH_MAX];
	int lfd;
	pthread_t thr;
	bool thr_on;
	int ret;
};

static void *guest_main(void *arg)
{
	struct vu_guest *g = arg;
	int fd = vqf_vhost_accept(g->lfd, stop_fd);

	/* One front-end per socket: nobody else may connect meanwhile. */
	close(g->lfd);
	g->lfd = -1;
	vqf_vu_socket_gone(&conf, g->idx, g->sock);
	if (fd < 0) {
		g->ret = fd;
		return NULL;
	}
	g->ret = vqf_vhost_serve(g->vh, fd, stop_fd);
	close(fd);
	vu_log(g->ret && g->ret != -EINTR ? VQF_VU_LOG_ERROR :
	       VQF_VU_LOG_INFO, "vhost-user: guest %u: %s", g->idx,
	       g->ret == -EINTR ? "stopped by a signal" :
	       !g->ret ? "front-end disconnected" : strerror(-g->ret));
	return NULL;
}

/*
 * --guests N: N devices on one backend and one hub, guest i on socket
 * PATH.i, each served by its own thread; the program ends when every
 * front-end has gone (or at a signal), as one virtiofsd serving several
 * VMs' sockets would.
 */
/*
 * The sockets of --guests N, made before the sandbox is entered; @socks
 * gets their paths for the parent that stays outside.
 */
static struct vu_guest *listen_guests(const struct vqf_vu_opts *o,
				      const char **socks)
{
	struct vu_guest *g = calloc(o->shm.guests, sizeof(*g));
	unsigned int i;

	if (!g)
		return NULL;
	for (i = 0; i < o->shm.guests; i++)
		g[i].lfd = -1;
	for (i = 0; i < o->shm.guests; i++) {
		g[i].idx = i;
		snprintf(g[i].sock, sizeof(g[i].sock), "%s.%u", o->socket, i);
		g[i].lfd = vqf_vhost_listen(g[i].sock);
		if (g[i].lfd < 0) {
			vu_log(VQF_VU_LOG_ERROR, "%s: %s", g[i].sock,
			       strerror(-g[i].lfd));
			while (i--) {
				close(g[i].lfd);
				unlink(g[i].sock);
			}
			free(g);
			return NULL;
		}
		socks[i] = g[i].sock;
	}
	return g;
}

static int serve_guests(struct vqf_vu_opts *o, const struct vqf_vhost_cfg *vc0,
			struct vu_guest *g)
{
	unsigned int i, n = o->shm.guests;
	int rc = 0;

	for (i = 0; i < n; i++) {
		struct vqf_vhost_cfg vc = *vc0;
		int ret;

		vqf_vu_shm_guest(&o->shm, i, &vc);
		ret = vqf_vhost_new(&vc, &g[i].vh);
		if (ret) {
			vu_log(VQF_VU_LOG_ERROR, "vhost-user: guest %u: %s", i,
			       strerror(-ret));
			rc = VQF_CLI_EXIT_FAIL;
			break;
		}
		vqf_vu_shm_attach(&o->shm, i, g[i].vh);
	}
	if (!rc)
		vu_log(VQF_VU_LOG_INFO, "vhost-user: listening on %s.0 .. "
		       "%s.%u (%u guests, %u request queues each, one version "
		       "table)", o->socket, o->socket, n - 1, n, o->queues);
	for (i = 0; !rc && i < n; i++) {
		if (pthread_create(&g[i].thr, NULL, guest_main, &g[i])) {
			rc = VQF_CLI_EXIT_FAIL;
			break;
		}
		g[i].thr_on = true;
	}
	if (rc)
		on_signal(0);	/* the threads already started end */
	for (i = 0; i < n; i++) {
		if (g[i].thr_on) {
			pthread_join(g[i].thr, NULL);
			if (g[i].ret && g[i].ret != -EINTR)
				rc = VQF_CLI_EXIT_FAIL;
		}
		if (g[i].lfd >= 0) {
			close(g[i].lfd);
			g[i].lfd = -1;
			vqf_vu_socket_gone(&conf, i, g[i].sock);
		}
	}
	for (i = 0; i < n; i++)
		vqf_vu_shm_attach(&o->shm, i, NULL);
	for (i = 0; i < n; i++) {
		if (!g[i].vh)
			continue;
		if (log_level >= VQF_VU_LOG_INFO) {
			fprintf(log_out, "%s: guest %u:\n", vqf_cli_prog, i);
			print_stats(g[i].vh, 1 + o->queues);
			vqf_vu_shm_print(&o->shm, g[i].vh, log_out);
		}
		vqf_vhost_free(g[i].vh);
	}
	if (log_level >= VQF_VU_LOG_INFO)
		vqf_vu_shm_print_hub(&o->shm, log_out);
	return rc;
}

/* Landlock, capabilities, seccomp: after the sandbox, before serving. */
static int confine(const struct vqf_vu_opts *o)
{
	int ret = vqf_vu_landlock(o, &conf);

	if (ret) {
		vu_log(VQF_VU_LOG_ERROR, "vhost-user: Landlock: %s",
		       strerror(-ret));
		return ret;
	}
	ret = vqf_vu_caps(o, &conf);
	if (ret) {
		vu_log(VQF_VU_LOG_ERROR, "vhost-user: dropping capabilities "
		       "(--modcaps=%s): %s", o->modcaps ? o->modcaps : "",
		       strerror(-ret));
		return ret;
	}
	ret = vqf_vu_seccomp(&conf);
	if (ret) {
		vu_log(VQF_VU_LOG_ERROR, "vhost-user: seccomp: %s",
		       strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * virtiofsd's default: RLIMIT_NOFILE up to min(1000000, fs.file-max -
 * 16384) when it is lower.  The passthrough keeps an O_PATH descriptor
 * per inode the guest holds, so a guest with 20 000 files looked up
 * needs that many: at a shell's 1024, or even 20 000, it got EMFILE
 * where virtiofsd went on (found by bench-daemons).  Without the
 * privilege to raise the hard limit, up to it.
 */
static void raise_nofile(void)
{
	unsigned long long max = 0, want;
	struct rlimit rl;
	FILE *f;

	f = fopen("/proc/sys/fs/file-max", "r");
	if (f) {
		if (fscanf(f, "%llu", &max) != 1)
			max = 0;
		fclose(f);
	}
	if (max <= 16384 || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	want = max - 16384 < 1000000 ? max - 16384 : 1000000;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (rl.rlim_max < want) {
		struct rlimit up = { .rlim_cur = want, .rlim_max = want };

		if (!setrlimit(RLIMIT_NOFILE, &up))
			return;
		rl.rlim_cur = rl.rlim_max;
	}
	if (setrlimit(RLIMIT_NOFILE, &rl))
		vu_log(VQF_VU_LOG_WARN, "RLIMIT_NOFILE left at its value: %s",
		       strerror(errno));
}

/* @usage: the --help of the name the daemon was started under. */
static int vhost_user(int argc, char **argv, void (*usage)(FILE *f))
{
	struct vqf_vhost_cfg vc = { 0 };
	struct vqf_backend_config bc = { 0 };
	const struct fuse_lowlevel_ops *ops;
	const char *socks[VQF_VU_GUESTS_MAX + 1] = { 0 };
	struct vqf_backend *be = NULL;
	struct vqf_ptll *ptll = NULL;
	struct vqf_vhost *vh = NULL;
	struct vu_guest *g = NULL;
	struct vqf_vu_policy pol;
	struct vqf_pt *pt = NULL;
	struct sigaction sa;
	struct vqf_vu_opts o;
	int ret, lfd = -1, fd = -1, rc = VQF_CLI_EXIT_FAIL;
	char desc[256], where[PATH_MAX], cdesc[512], poll[40] = "";
	size_t op_size;
	void *ud;

	ret = vqf_vu_parse(argc, argv, &o);
	if (ret < 0) {
		usage(stdout);
		return 0;
	}
	if (ret)
		return ret;
	if (o.print_caps || o.version) {
		if (o.print_caps)
			vqf_vu_print_capabilities(stdout);
		else
			printf("%s %s\n", vqf_cli_prog, VQF_VERSION);
		vqf_vu_opts_release(&o);
		return 0;
	}
	/*
	 * Only stdio and --fd's socket are the caller's to give: any other
	 * descriptor it left open (a directory above all) would reach past
	 * the sandbox's root.
	 */
	vqf_vu_close_all_but(o.fd, -1);
	log_out = open_log(&o);
	log_level = o.log_level;
	if (o.rlimit_nofile) {
		/* As virtiofsd: the soft limit, and the hard one if below. */
		struct rlimit rl;

		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = o.rlimit_nofile;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			vu_log(VQF_VU_LOG_ERROR, "--rlimit-nofile=%llu: %s",
			       o.rlimit_nofile, strerror(errno));
			goto out;
		}
	} else if (!o.rlimit_set) {
		raise_nofile();
	}
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0)
		goto syserr;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* The sockets exist before the sandbox hides their paths. */
	if (o.shm.guests > 1) {
		g = listen_guests(&o, socks);
		if (!g)
			goto out;
	} else {
		lfd = setup_listen(&o);
		if (lfd < 0)
			goto out;
		socks[0] = o.socket;
	}
	ret = vqf_vu_sandbox_enter(&o, &conf, socks, log_out);
	if (ret)
		goto out;
	if (confine(&o))
		goto out;
	vqf_vu_policy_of(&o, &pol);
	if (o.fs == VQF_SIM_FS_PTLL) {
		ptll = vqf_ptll_new(o.shared);
		if (!ptll)
			goto syserr;
		ops = vqf_ptll_ops(&op_size);
		ud = vqf_ptll_userdata(ptll);
	} else if (o.fs == VQF_SIM_FS_NULL) {
		ops = vqf_nullfs_ops(&op_size);
		ud = NULL;
	} else {
		/*
		 * io_uring makes system calls that seccomp does not see:
		 * under a filter, file data moves by pread/pwrite.
		 */
		struct vqf_pt_config pc = {
			.source = o.shared,
			.timeout = pol.timeout,
			.io = conf.seccomp == VQF_VU_SECCOMP_NONE ?
			      VQF_PT_IO_AUTO : VQF_PT_IO_PREAD,
		};

		pt = vqf_pt_new(&pc);
		if (!pt)
			goto syserr;
		ops = vqf_pt_ops(&op_size);
		ud = pt;
	}
	ops = vqf_vu_policy_ops(&pol, ops, &op_size);
	bc.hostile_safe = vqf_vu_backend_safe(o.fs);
	be = vqf_backend_new(ops, op_size, ud, &bc);
	if (!be)
		goto syserr;
	ret = vqf_vu_shm_setup(&o.shm, be, pt, o.shared, &vc);
	if (ret) {
		errno = -ret;
		goto syserr;
	}
	vc.tag = o.tag;
	vc.num_request_queues = o.queues;
	vc.queue_size_max = o.queue_size;
	vc.threads = o.threads;
	vc.poll_ns = (u64)o.poll_us * 1000;
	vc.be = be;
	vc.log = o.log_level >= VQF_VU_LOG_DEBUG ? log_out : NULL;
	vc.readonly = o.readonly;	/* EROFS for every change */
	log_noops(&o);
	vqf_vu_conf_describe(&conf, cdesc, sizeof(cdesc));
	vu_log(VQF_VU_LOG_INFO, "vhost-user: confined: %s%s", cdesc,
	       o.readonly ? "; read-only" : "");
	if (o.shm.guests > 1) {
		rc = serve_guests(&o, &vc, g);
		goto out;
	}
	ret = vqf_vhost_new(&vc, &vh);
	if (ret) {
		errno = -ret;
		goto syserr;
	}
	vqf_vu_shm_attach(&o.shm, 0, vh);
	vqf_vu_policy_describe(&o, &pol, desc, sizeof(desc));
	if (o.socket)
		snprintf(where, sizeof(where), "%s", o.socket);
	else
		snprintf(where, sizeof(where), "--fd=%d", o.fd);
	if (o.poll_us)
		snprintf(poll, sizeof(poll), ", polling up to %u us",
			 o.poll_us);
	vu_log(VQF_VU_LOG_INFO, "vhost-user: listening on %s (%u request "
	       "queues, %u threads%s, backend %s; %s)", where,
	       o.queues, o.threads, poll,
	       o.fs == VQF_SIM_FS_PTLL ? "passthrough_ll" :
	       o.fs == VQF_SIM_FS_NULL ? "null" : "vqfuse", desc);
	fd = vqf_vhost_accept(lfd, stop_fd);
	/* One front-end: nobody else may connect meanwhile. */
	close(lfd);
	lfd = -1;
	if (o.socket)
		vqf_vu_socket_gone(&conf, 0, o.socket);
	if (fd == -EINTR) {
		rc = 0;
		goto out;
	}
	if (fd < 0) {
		vu_log(VQF_VU_LOG_ERROR, "accept: %s", strerror(-fd));
		goto out;
	}
	ret = vqf_vhost_serve(vh, fd, stop_fd);
	vu_log(ret && ret != -EINTR ? VQF_VU_LOG_ERROR : VQF_VU_LOG_INFO,
	       "vhost-user: %s", ret == -EINTR ? "stopped by a signal" :
	       !ret ? "front-end disconnected" : strerror(-ret));
	/* A signal or a disconnect is the normal end. */
	rc = (!ret || ret == -EINTR) ? 0 : VQF_CLI_EXIT_FAIL;
	if (log_level >= VQF_VU_LOG_INFO) {
		print_stats(vh, 1 + o.queues);
		vqf_vu_shm_print(&o.shm, vh, log_out);
		vqf_vu_shm_print_hub(&o.shm, log_out);
	}
	goto out;
syserr:
	vu_log(VQF_VU_LOG_ERROR, "vhost-user: %s", strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0) {
		close(lfd);
		if (o.socket)
			vqf_vu_socket_gone(&conf, 0, o.socket);
	}
	for (unsigned int i = 0; g && i < o.shm.guests; i++) {
		if (g[i].lfd >= 0) {
			close(g[i].lfd);
			vqf_vu_socket_gone(&conf, i, g[i].sock);
		}
	}
	free(g);
	vqf_vu_shm_attach(&o.shm, 0, NULL);
	vqf_vhost_free(vh);
	vqf_vu_shm_free(&o.shm);
	vqf_backend_free(be);
	vqf_pt_free(pt);
	if (ptll)
		vqf_ptll_free(ptll);
	if (stop_fd >= 0)
		close(stop_fd);
	if (conf.notify_fd >= 0)
		close(conf.notify_fd);
	if (log_out && log_out != stderr)
		fclose(log_out);
	vqf_vu_opts_release(&o);
	return rc;
}

int vqf_cli_vhost_user(int argc, char **argv)
{
	return vhost_user(argc, argv, vqf_cli_vhost_usage);
}

int vqf_cli_virtiofsd(int argc, char **argv)
{
	return vhost_user(argc, argv, vqf_vu_virtiofsd_usage);
}
