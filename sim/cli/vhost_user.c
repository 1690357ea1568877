// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vhost_user.c - `vqfuse-sim vhost-user`: the simulator's virtio-fs device
 * served to a real QEMU (-device vhost-user-fs-pci) over a vhost-user
 * socket, with the shared directory behind vqfuse's passthrough or
 * libfuse's passthrough_ll.  One connection: the program exits when the
 * front-end goes away, or at SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_passthrough.h"
#include "vqf_passthrough_ll.h"
#include "vqf_vhost.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

struct vu_opts {
	const char *socket, *shared, *tag;
	unsigned int queues, threads, queue_size;
	enum vqf_sim_fs fs;
	bool verbose, host_locks, direct_io;
	double timeout;
};

static const struct vqf_cli_num_opt vu_nums[] = {
	{ "--queues", false, 1, 64 },
	{ "--threads", false, 0, 256 },
	{ "--queue-size", false, 1, 1024 },
};

static int stop_fd = -1;

/*
 * The filesystem's ops as virtiofsd serves them by default: locks stay in
 * the guest (no -o posix_lock, no -o flock: the guest's fuse then keeps
 * POSIX, OFD and flock locks itself) and O_DIRECT is dropped from opens
 * (no allow_direct_io: the host file is opened buffered; the guest still
 * bypasses its own cache).  --host-locks and --allow-direct-io keep the
 * backend's own behaviour.
 */
static const struct fuse_lowlevel_ops *base_ops;
static struct fuse_lowlevel_ops vu_ops;
static bool vu_host_locks, vu_direct_io;

static void vu_init(void *userdata, struct fuse_conn_info *conn)
{
	if (base_ops->init)
		base_ops->init(userdata, conn);
	if (!vu_host_locks)
		conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
}

static void vu_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!vu_direct_io)
		fi->flags &= ~O_DIRECT;
	base_ops->open(req, ino, fi);
}

static void vu_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	if (!vu_direct_io)
		fi->flags &= ~O_DIRECT;
	base_ops->create(req, parent, name, mode, fi);
}

static const struct fuse_lowlevel_ops *wrap_ops(
	const struct fuse_lowlevel_ops *ops, size_t *op_size)
{
	base_ops = ops;
	memset(&vu_ops, 0, sizeof(vu_ops));
	memcpy(&vu_ops, ops, *op_size < sizeof(vu_ops) ? *op_size :
	       sizeof(vu_ops));
	*op_size = sizeof(vu_ops);
	vu_ops.init = vu_init;
	if (ops->open)
		vu_ops.open = vu_open;
	if (ops->create)
		vu_ops.create = vu_create;
	if (!vu_host_locks) {
		vu_ops.getlk = NULL;
		vu_ops.setlk = NULL;
		vu_ops.flock = NULL;
	}
	return &vu_ops;
}

static void on_signal(int sig)
{
	u64 one = 1;

	(void)sig;
	if (write(stop_fd, &one, sizeof(one)) < 0)
		return;	/* already signalled: the count is saturated */
}

void vqf_cli_vhost_usage(FILE *f)
{
	fprintf(f,
"Options of vhost-user (serve a QEMU vhost-user-fs-pci device):\n"
"  --socket PATH       unix socket to listen on (required); QEMU connects\n"
"                      with -chardev socket,id=ID,path=PATH\n"
"  --shared DIR        host directory to share (required, must exist)\n"
"  --queues N          request queues offered (1..64, default 1); QEMU's\n"
"                      num-request-queues must not exceed it\n"
"  --threads N         device worker threads (0..256, default 2)\n"
"  --queue-size N      largest ring size accepted (power of two, default\n"
"                      1024)\n"
"  --backend NAME      vqfuse (default) or passthrough_ll\n"
"  --timeout S         entry/attr validity given to the guest (default 0)\n"
"  --tag TAG           the device's tag (QEMU's own tag= is what the guest\n"
"                      sees)\n"
"  --host-locks        serve POSIX/OFD/flock locks on the host (default:\n"
"                      the guest keeps them, as virtiofsd without -o\n"
"                      posix_lock,flock)\n"
"  --allow-direct-io   open host files with the guest's O_DIRECT (default:\n"
"                      dropped, as virtiofsd without allow_direct_io)\n"
"  --verbose           log every vhost-user message to stderr\n"
"Exits 0 when the front-end disconnects or at SIGINT/SIGTERM, printing\n"
"the counters to stderr.\n");
}

/* One option of vhost-user, as vqf_cli_walk() found it. */
static int vu_set(void *arg, const char *name, const char *val,
		  const unsigned long long *num)
{
	struct vu_opts *o = arg;

	if (num && !strcmp(name, "--queues"))
		o->queues = (unsigned int)*num;
	else if (num && !strcmp(name, "--threads"))
		o->threads = (unsigned int)*num;
	else if (num)
		o->queue_size = (unsigned int)*num;
	else if (!strcmp(name, "--verbose"))
		o->verbose = true;
	else if (!strcmp(name, "--host-locks"))
		o->host_locks = true;
	else if (!strcmp(name, "--allow-direct-io"))
		o->direct_io = true;
	else if (!strcmp(name, "--backend"))
		return vqf_cli_parse_backend(name, val, &o->fs);
	else if (!strcmp(name, "--timeout"))
		return vqf_cli_parse_timeout(val, &o->timeout) ?
		       VQF_CLI_EXIT_USAGE : 0;
	else if (!*val)
		return vqf_cli_bad_usage("%s: empty value", name);
	else if (!strcmp(name, "--socket"))
		o->socket = val;
	else if (!strcmp(name, "--shared"))
		o->shared = val;
	else if (strlen(val) > VQF_FS_TAG_LEN)
		return vqf_cli_bad_usage("--tag: longer than %d bytes",
					 VQF_FS_TAG_LEN);
	else
		o->tag = val;
	return 0;
}

static const char *const vu_flags[] = {
	"--verbose", "--host-locks", "--allow-direct-io", NULL
};
static const char *const vu_strs[] = {
	"--socket", "--shared", "--backend", "--tag", "--timeout", NULL
};
static const struct vqf_cli_spec vu_spec = {
	.cmd = "vhost-user", .flags = vu_flags, .strs = vu_strs,
	.nums = vu_nums, .nnums = sizeof(vu_nums) / sizeof(*vu_nums),
	.set = vu_set,
};

static int parse(int argc, char **argv, struct vu_opts *o)
{
	struct stat st;
	int ret;

	memset(o, 0, sizeof(*o));
	o->queues = 1;
	o->threads = 2;
	o->queue_size = 1024;
	ret = vqf_cli_walk(&vu_spec, argc, argv, o);
	if (ret)
		return ret;
	if (!o->socket)
		return vqf_cli_bad_usage("vhost-user: --socket PATH is "
					 "required");
	if (!o->shared)
		return vqf_cli_bad_usage("vhost-user: --shared DIR is "
					 "required");
	if (o->queue_size & (o->queue_size - 1))
		return vqf_cli_bad_usage("--queue-size: %u is not a power of "
					 "two", o->queue_size);
	if (stat(o->shared, &st) || !S_ISDIR(st.st_mode))
		return vqf_cli_bad_usage("--shared: %s: not a directory",
					 o->shared);
	if (o->fs == VQF_SIM_FS_PTLL && o->timeout)
		return vqf_cli_bad_usage("--timeout: not with passthrough_ll");
	return 0;
}

static void print_stats(struct vqf_vhost *vh, unsigned int nq)
{
	struct vqf_vhost_stats s;
	unsigned int i;

	vqf_vhost_get_stats(vh, &s);
	fprintf(stderr, "%s: vhost-user: %llu messages, %llu refused "
		"(header %llu, unsupported %llu, size %llu, fds %llu+%llu, "
		"index %llu, value %llu, align %llu, regions %llu, "
		"ring outside memory %llu), %llu starts (%llu rings added), "
		"%llu stops (%llu live)\n", vqf_cli_prog,
		(unsigned long long)s.msgs, (unsigned long long)s.refused,
		(unsigned long long)s.bad_header,
		(unsigned long long)s.unsupported,
		(unsigned long long)s.bad_size,
		(unsigned long long)s.bad_fds,
		(unsigned long long)s.too_many_fds,
		(unsigned long long)s.bad_index,
		(unsigned long long)s.bad_value,
		(unsigned long long)s.bad_align,
		(unsigned long long)(s.too_many_regions + s.no_regions +
				     s.region_wrap + s.region_overlap +
				     s.region_file + s.region_fd +
				     s.mmap_failed),
		(unsigned long long)s.ring_fault,
		(unsigned long long)s.starts,
		(unsigned long long)s.ring_adds, (unsigned long long)s.stops,
		(unsigned long long)s.live_changes);
	fprintf(stderr, "%s: requests per queue:", vqf_cli_prog);
	for (i = 0; i < nq; i++)
		fprintf(stderr, " q%u=%llu", i,
			(unsigned long long)s.requests[i]);
	fprintf(stderr, "\n%s: device: %llu requests, %llu hiprio, "
		"%llu refused, %llu queue breaks, %llu MB in, %llu MB out\n",
		vqf_cli_prog, (unsigned long long)s.dev.requests,
		(unsigned long long)s.dev.hiprio,
		(unsigned long long)s.dev.refused,
		(unsigned long long)s.dev.queue_broken,
		(unsigned long long)(s.dev.bytes_in >> 20),
		(unsigned long long)(s.dev.bytes_out >> 20));
}

int vqf_cli_vhost_user(int argc, char **argv)
{
	struct vqf_vhost_cfg vc = { 0 };
	const struct fuse_lowlevel_ops *ops;
	struct vqf_backend *be = NULL;
	struct vqf_ptll *ptll = NULL;
	struct vqf_vhost *vh = NULL;
	struct vqf_pt *pt = NULL;
	struct sigaction sa;
	struct vu_opts o;
	int ret, lfd = -1, fd = -1, rc = VQF_CLI_EXIT_FAIL;
	size_t op_size;
	void *ud;

	ret = parse(argc, argv, &o);
	if (ret < 0) {
		vqf_cli_vhost_usage(stdout);
		return 0;
	}
	if (ret)
		return ret;
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0) {
		perror("eventfd");
		return VQF_CLI_EXIT_FAIL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.fs == VQF_SIM_FS_PTLL) {
		ptll = vqf_ptll_new(o.shared);
		if (!ptll)
			goto syserr;
		ops = vqf_ptll_ops(&op_size);
		ud = vqf_ptll_userdata(ptll);
	} else {
		struct vqf_pt_config pc = {
			.source = o.shared,
			.timeout = o.timeout,
		};

		pt = vqf_pt_new(&pc);
		if (!pt)
			goto syserr;
		ops = vqf_pt_ops(&op_size);
		ud = pt;
	}
	vu_host_locks = o.host_locks;
	vu_direct_io = o.direct_io;
	ops = wrap_ops(ops, &op_size);
	be = vqf_backend_new(ops, op_size, ud, NULL);
	if (!be)
		goto syserr;
	vc.tag = o.tag;
	vc.num_request_queues = o.queues;
	vc.queue_size_max = o.queue_size;
	vc.threads = o.threads;
	vc.be = be;
	vc.log = o.verbose ? stderr : NULL;
	ret = vqf_vhost_new(&vc, &vh);
	if (ret) {
		errno = -ret;
		goto syserr;
	}
	lfd = vqf_vhost_listen(o.socket);
	if (lfd < 0) {
		fprintf(stderr, "%s: %s: %s\n", vqf_cli_prog, o.socket,
			strerror(-lfd));
		goto out;
	}
	fprintf(stderr, "%s: vhost-user: listening on %s (%u request "
		"queues, %u threads, backend %s)\n", vqf_cli_prog, o.socket,
		o.queues, o.threads,
		o.fs == VQF_SIM_FS_PTLL ? "passthrough_ll" : "vqfuse");
	fd = vqf_vhost_accept(lfd, stop_fd);
	/* One front-end: nobody else may connect meanwhile. */
	close(lfd);
	lfd = -1;
	unlink(o.socket);
	if (fd == -EINTR) {
		rc = 0;
		goto out;
	}
	if (fd < 0) {
		fprintf(stderr, "%s: accept: %s\n", vqf_cli_prog,
			strerror(-fd));
		goto out;
	}
	ret = vqf_vhost_serve(vh, fd, stop_fd);
	fprintf(stderr, "%s: vhost-user: %s\n", vqf_cli_prog,
		ret == -EINTR ? "stopped by a signal" :
		!ret ? "front-end disconnected" : strerror(-ret));
	/* A signal or a disconnect is the normal end. */
	rc = (!ret || ret == -EINTR) ? 0 : VQF_CLI_EXIT_FAIL;
	print_stats(vh, 1 + o.queues);
	goto out;
syserr:
	fprintf(stderr, "%s: vhost-user: %s\n", vqf_cli_prog,
		strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0) {
		close(lfd);
		unlink(o.socket);
	}
	vqf_vhost_free(vh);
	vqf_backend_free(be);
	vqf_pt_free(pt);
	if (ptll)
		vqf_ptll_free(ptll);
	close(stop_fd);
	return rc;
}
