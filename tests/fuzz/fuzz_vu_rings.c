// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_vu_rings - a vhost-user-fs daemon driven with mutated FUSE requests
 * through real split rings, as a guest would drive it behind QEMU's
 * vhost-user-fs-pci.  fuzz_vhost mutates the vhost-user messages; here the
 * vhost-user side is a well-behaved front-end (sim/vfront) and what the
 * fuzzer chooses is the FUSE traffic: requests, their descriptor layout,
 * the queue, the reply buffer sizes, the nodeids and file handles they
 * name.
 *
 * Set-up, once per process: guest RAM (a memfd, vqf_gram_new_shared()),
 * a hiprio ring and one request ring (size QNUM, EVENT_IDX and
 * INDIRECT_DESC when offered) driven by sim/vring's driver half, the
 * front-end connected, the device brought up (virtio 3.1.1) and FUSE INIT
 * sent and answered.  The daemon is ours in this process - sim/vhost's
 * back-end served in a thread on one end of a socketpair, over sim/backend
 * and sim/passthrough on a temporary directory - or, with env
 * VQF_FUZZ_CONNECT=SOCKET, any vhost-user-fs daemon listening there
 * (virtiofsd, `vqfuse-sim vhost-user`; docs/fuzzing.md has the commands).
 *
 * Input: records until the input or MAXRECS records are used up:
 *   u8  ctl    bit 0 the request ring (else hiprio); bit 1 raw: the body
 *              is the whole request, no header from the harness; bit 2
 *              uid/gid 1000 (else root); bit 3 batch: do not kick yet, the
 *              next record joins this one in flight (at most MAXFLIGHT);
 *              bits 4-5 readable part in 1, 2 (header | body) or 3 pieces;
 *              bits 6-7 writable part in 1, 2 or 3 pieces (3: 1)
 *   u8  op     FUSE opcode (op and sel are not read for raw)
 *   u8  sel    low nibble: nodeid: 0 the root, 1-8 a nodeid learnt from a
 *              reply this input (LOOKUP, CREATE, READDIRPLUS, ...), 9
 *              zero, 10 ~0, 15 a raw u64 follows, else the root; high
 *              nibble 1-8: patch a learnt value into the body (below)
 *   u8  pt     bits 0-2 patch offset / 8; bit 3 the patch is a learnt
 *              nodeid, else a learnt file handle (OPEN, OPENDIR, CREATE);
 *              bits 4-7 reply buffer size class (in_class[])
 *  [u64 nodeid]
 *   u16 blen   body bytes (at most MAXBODY and what is left)
 *   body
 * A record is placed as one descriptor chain (readable: the request;
 * writable: the reply buffer, poisoned) and, unless batched, the ring is
 * kicked and the harness waits for every chain in flight on the call
 * eventfds - up to WAIT_MS, far beyond any request, so that a hang is a
 * finding and never a timing-dependent one.
 *
 * What a driver that cannot be interrupted needs: SETLKW is sent as SETLK
 * (a contended lock waits for good by the protocol; a guest would send
 * INTERRUPT), FALLOCATE's range is cut to FILE_CAP (tmpfs allocates it).
 *
 * Invariants checked on every used entry (abort() on violation):
 *   - the used ring is sane (sim/vring's checks, VQF_VRING_DRV_STRICT_LEN:
 *     used len <= the writable bytes, ids made available, once);
 *   - the request's readable buffer is unchanged;
 *   - FORGET and BATCH_FORGET are returned with used len 0; no used len
 *     is in 1..15;
 *   - used len >= 16: fuse_out_header.len == used len, its unique is the
 *     request's (whole request headers), error in [-4095, 0] and an error
 *     carries no payload; a successful reply of a fixed-size answer has
 *     exactly that size (entry, attr, open, create, write, statfs), READ
 *     and READDIR(PLUS) no more than asked for;
 *   - our daemon only (in this process): every request that takes a reply
 *     and has >= 16 writable bytes gets one; after each input, once the
 *     harness has released every file handle and forgotten every nodeid
 *     the input obtained (as a guest's umount does), the process holds
 *     exactly the descriptors it held before the input (when every such
 *     reply was seen whole; else the input is "uncertain", see below).
 * Connect mode: a daemon that hangs up is a finding too.
 *
 * Bounded state: at the end of every input the harness releases what the
 * input opened, then (once those are answered) forgets on the hiprio ring
 * what it looked up, as Linux sends forgets; then it empties the shared
 * directory and puts back its small tree (f, d/g, l -> f); with
 * VQF_FUZZ_CONNECT only if VQF_FUZZ_SHARE names the daemon's directory.
 * Files are capped at FILE_CAP by RLIMIT_FSIZE.  An input after which the
 * harness cannot know what the daemon holds is "uncertain": a DESTROY on
 * another daemon, a reply that did not fit its buffer, a forget on a
 * request ring or not well-formed (some daemons serve those, ours refuses
 * them), the V1 bypass in node_sub() when asked for.  Its descriptor check is skipped, and when our
 * daemon holds more than FD_SLACK descriptors over the start, the whole
 * stack is rebuilt.
 */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "vqf_passthrough.h"
#include "vqf_vfront.h"
#include "vqf_vhost.h"
#include "vqf_vring_drv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define RAM_SIZE	(4u << 20)	/* <= FILE_CAP: a memfd is a file too */
#define QNUM		128
#define IPOOL_PER	8
#define MAXFLIGHT	16
#define MAXRECS		64
#define MAXBODY		(64u << 10)
#define NTRACK		128
#define FILE_CAP	(4u << 20)
#define WAIT_MS		60000
#define FD_SLACK	64
#define FD_MAP		1024
#define POISON		0xa5
#define GUEST_ID	1000

static const u32 in_class[16] = {
	0, 8, 15, 16, 24, 32, 64, 120, 144, 160, 512, 4096, 4112, 8208,
	32784, 65552
};

struct rq {
	u8 *out, *in;		/* in guest RAM */
	u8 *copy;		/* what was sent, to check it stayed */
	u32 out_len, in_len;
	u32 opcode;
	u64 unique, nodeid;
	bool whole;		/* a whole header whose len is right */
	bool done;
};

struct queue {
	struct vqf_vring_drv *vr;
	void *ring, *ipool_mem;
	struct vqf_vring_ipool ip;
	struct vqf_vring_indirect_ops iops;
	int kick_fd, call_fd;
	bool added;
};

struct node {
	u64 nodeid, nlookup;
};

struct fhandle {
	u64 fh, nodeid;
	bool dir;
};

static struct {
	bool up, inproc, strict;
	struct vqf_gram *ram;
	struct vqf_vfront *fe;
	struct queue q[2];
	u64 features;
	/* our daemon */
	struct vqf_pt *pt;
	struct vqf_backend *be;
	struct vqf_vhost *vh;
	pthread_t srv;
	int sv[2];
	char parent[PATH_MAX];
	/* the shared directory the harness resets, or "" */
	char share[PATH_MAX];
	int fd_start, fd_base;	/* after set-up; at the input's start */
	u8 fd_map[FD_MAP / 8];	/* which were open at the input's start */
	int lost;
	u64 unique;
	/* per input */
	struct rq rq[MAXFLIGHT];
	unsigned int nrq;
	struct node node[NTRACK];
	unsigned int nnode;
	struct fhandle fh[NTRACK];
	unsigned int nfh;
	bool uncertain, destroyed;
	bool lax_forget;	/* env VQF_FUZZ_LAX_FORGET: the V1 bypass */
	bool verbose;
} g;

/* ---- the shared directory ------------------------------------------- */

static int rm_cb(const char *path, const struct stat *sb, int flag,
		 struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level > 0)	/* the share itself stays: the daemon's root */
		remove(path);
	return 0;
}

static void mkfile(const char *rel, const char *text)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", g.share, rel);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0)
		perror("fuzz_vu_rings: write");
	close(fd);
}

/* Empties the share and puts back the tree the seeds name. */
static void share_reset(void)
{
	char p[PATH_MAX];

	if (!g.share[0])
		return;
	nftw(g.share, rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	mkfile("f", "hello, world\n");
	snprintf(p, sizeof(p), "%s/d", g.share);
	if (!mkdir(p, 0777))
		chmod(p, 0777);
	mkfile("d/g", "in d\n");
	snprintf(p, sizeof(p), "%s/l", g.share);
	if (symlink("f", p))
		(void)0;	/* a leftover the daemon still holds: fine */
}

/*
 * The descriptors open now (below FD_MAP, in @map) and their number;
 * with @before, the ones not open then are printed (a leak report).
 */
static int scan_fds(u8 *map, const u8 *before)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	if (map)
		memset(map, 0, FD_MAP / 8);
	while ((e = readdir(d))) {
		char p[300], t[PATH_MAX];
		int fd = atoi(e->d_name);
		ssize_t k;

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		n++;
		if (map && fd < FD_MAP)
			map[fd / 8] |= 1 << fd % 8;
		if (!before || (fd < FD_MAP && before[fd / 8] & 1 << fd % 8))
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		k = readlink(p, t, sizeof(t) - 1);
		t[k > 0 ? k : 0] = 0;
		fprintf(stderr, "  new fd %d: %s\n", fd, t);
	}
	closedir(d);
	return n;
}

/* ---- the stack ----------------------------------------------------- */

static void *serve_main(void *arg)
{
	(void)arg;
	vqf_vhost_serve(g.vh, g.sv[1], -1);
	return NULL;
}

static void on_lost(void *ctx, int err)
{
	(void)ctx;
	__atomic_store_n(&g.lost, err ? err : -ENOTCONN, __ATOMIC_RELEASE);
}

static void quiet_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* Our daemon: passthrough, backend, vhost-user back-end in a thread. */
static int daemon_up(void)
{
	struct vqf_pt_config pc = {
		.source = g.share,
		.io = VQF_PT_IO_PREAD,
		.nodev = true,
	};
	struct vqf_vhost_cfg vc = { .num_request_queues = 1 };
	const struct fuse_lowlevel_ops *ops;
	const char *t = getenv("VQF_FUZZ_THREADS");
	size_t osz;

	g.pt = vqf_pt_new(&pc);
	FZ_CHECK(g.pt);
	ops = vqf_pt_ops(&osz);
	g.be = vqf_backend_new(ops, osz, g.pt, NULL);
	FZ_CHECK(g.be);
	vc.be = g.be;
	vc.queue_size_max = QNUM;
	/* 0: each ring served in its own thread, in order (deterministic) */
	vc.threads = t ? (unsigned int)atoi(t) : 0;
	FZ_CHECK(!vqf_vhost_new(&vc, &g.vh));
	FZ_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g.sv));
	FZ_CHECK(!pthread_create(&g.srv, NULL, serve_main, NULL));
	return g.sv[0];
}

static void queue_up(unsigned int idx)
{
	struct queue *q = &g.q[idx];
	struct vqf_vring_drv_cfg vc = {
		.num = QNUM,
		.flags = VQF_VRING_DRV_STRICT_LEN,
	};
	u64 need = vqf_vring_layout(QNUM, 0, 4, &vc.addr);

	q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	FZ_CHECK(q->kick_fd >= 0 && q->call_fd >= 0);
	q->ring = vqf_gram_alloc(g.ram, need, true);
	FZ_CHECK(q->ring);
	vqf_vring_layout(QNUM, vqf_gram_gpa(g.ram, q->ring), 4, &vc.addr);
	vc.features = g.features & VQF_VRING_FEATURES;
	vc.mem = vqf_gram_gmem(g.ram);
	if (g.features & (1ull << VIRTIO_RING_F_INDIRECT_DESC)) {
		size_t isz = (size_t)QNUM * IPOOL_PER * 16;

		q->ipool_mem = vqf_gram_alloc(g.ram, isz, true);
		FZ_CHECK(q->ipool_mem);
		FZ_CHECK(!vqf_vring_ipool_init(&q->ip, q->ipool_mem,
					       vqf_gram_gpa(g.ram, q->ipool_mem),
					       QNUM, IPOOL_PER));
		vqf_vring_ipool_ops(&q->ip, &q->iops);
		vc.iops = &q->iops;
	}
	FZ_CHECK(!vqf_vring_drv_create(&vc, &q->vr));
	FZ_CHECK(!vqf_vfront_set_queue(g.fe, idx, QNUM, &vc.addr, q->kick_fd,
				       q->call_fd));
}

static void queue_down(struct queue *q)
{
	vqf_vring_drv_destroy(q->vr);
	if (q->ipool_mem) {
		vqf_vring_ipool_fini(&q->ip);
		vqf_gram_release(g.ram, q->ipool_mem);
	}
	vqf_gram_release(g.ram, q->ring);
	close(q->kick_fd);
	close(q->call_fd);
	memset(q, 0, sizeof(*q));
}

static int send_init(void);

static void stack_up(void)
{
	struct vqf_vfront_cfg fc = { .fd = -1, .no_shmem = true };
	const char *conn = getenv("VQF_FUZZ_CONNECT");
	u8 s = VQF_S_ACKNOWLEDGE | VQF_S_DRIVER;
	int ret;

	g.ram = vqf_gram_new_shared(RAM_SIZE);
	FZ_CHECK(g.ram);
	fc.ram = g.ram;
	fc.queue_size_max = QNUM;
	fc.lost = on_lost;
	if (conn && *conn)
		fc.socket = conn;
	else
		fc.fd = daemon_up();
	ret = vqf_vfront_new(&fc, &g.fe);
	if (ret) {
		fprintf(stderr, "fuzz_vu_rings: cannot connect to %s: %s\n",
			fc.socket ? fc.socket : "our daemon", strerror(-ret));
		abort();
	}
	/* What Linux's virtio-fs driver takes: rings with event indices
	 * and indirect descriptors where offered.
	 */
	g.features = vqf_vfront_features(g.fe) &
		     ((1ull << VIRTIO_F_VERSION_1) |
		      (1ull << VIRTIO_RING_F_EVENT_IDX) |
		      (1ull << VIRTIO_RING_F_INDIRECT_DESC));
	FZ_CHECK(!vqf_vfront_set_status(g.fe, s));
	FZ_CHECK(!vqf_vfront_set_features(g.fe, g.features));
	s |= VQF_S_FEATURES_OK;
	FZ_CHECK(!vqf_vfront_set_status(g.fe, s));
	FZ_CHECK(vqf_vfront_get_status(g.fe) & VQF_S_FEATURES_OK);
	queue_up(0);
	queue_up(1);
	FZ_CHECK(!vqf_vfront_set_status(g.fe, s | VQF_S_DRIVER_OK));
	g.up = true;
	ret = send_init();
	if (ret) {
		fprintf(stderr, "fuzz_vu_rings: INIT refused: %d\n", ret);
		abort();
	}
	g.fd_start = scan_fds(NULL, NULL);
}

static void stack_down(void)
{
	vqf_vfront_free(g.fe);	/* stops the rings, hangs up */
	g.fe = NULL;
	if (g.inproc) {
		shutdown(g.sv[0], SHUT_RDWR);
		pthread_join(g.srv, NULL);
		close(g.sv[0]);
		close(g.sv[1]);
		vqf_vhost_free(g.vh);
		vqf_backend_free(g.be);
		vqf_pt_free(g.pt);
	}
	queue_down(&g.q[0]);
	queue_down(&g.q[1]);
	vqf_gram_free(g.ram);
	g.up = false;
}

static void cleanup_parent(void)
{
	if (g.up && g.inproc)
		stack_down();
	if (g.parent[0]) {
		g.share[0] = 0;
		nftw(g.parent, rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		rmdir(g.parent);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rlimit rl = { FILE_CAP, FILE_CAP };
	const char *conn = getenv("VQF_FUZZ_CONNECT");
	const char *tmp = getenv("VQF_FUZZ_TMPDIR");
	const char *share = getenv("VQF_FUZZ_SHARE");

	(void)argc;
	(void)argv;
	g.verbose = getenv("VQF_FUZZ_VERBOSE");
	g.lax_forget = getenv("VQF_FUZZ_LAX_FORGET");
	g.inproc = !conn || !*conn;
	g.strict = g.inproc;
	if (g.inproc) {
		/* tmpfs if there is one: the tree is rebuilt per input. */
		if (!tmp || !*tmp)
			tmp = access("/dev/shm", W_OK | X_OK) ? NULL :
			      "/dev/shm";
		if (!tmp || !*tmp)
			tmp = getenv("TMPDIR");
		snprintf(g.parent, sizeof(g.parent), "%s/vqf-fuzz-vu-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		FZ_CHECK(mkdtemp(g.parent));
		snprintf(g.share, sizeof(g.share), "%s/root", g.parent);
		FZ_CHECK(!mkdir(g.share, 0777) && !chmod(g.share, 0777));
		FZ_CHECK(!setrlimit(RLIMIT_FSIZE, &rl));
		fuse_set_log_func(quiet_log);
	} else if (share && *share) {
		snprintf(g.share, sizeof(g.share), "%s", share);
	}
	atexit(cleanup_parent);
	share_reset();
	return 0;
}

/* ---- requests ------------------------------------------------------ */

static bool no_reply(u32 op)
{
	return op == FUSE_FORGET || op == FUSE_BATCH_FORGET;
}

/* Replies that may or may not come (libfuse answers neither). */
static bool maybe_reply(u32 op)
{
	return op == FUSE_INTERRUPT || op == FUSE_NOTIFY_REPLY;
}

/* A successful reply's exact payload size, or -1 if it varies. */
static int fixed_size(u32 op)
{
	switch (op) {
	case FUSE_LOOKUP: case FUSE_MKNOD: case FUSE_MKDIR:
	case FUSE_SYMLINK: case FUSE_LINK:
		return sizeof(struct fuse_entry_out);
	case FUSE_GETATTR: case FUSE_SETATTR:
		return sizeof(struct fuse_attr_out);
	case FUSE_OPEN: case FUSE_OPENDIR:
		return sizeof(struct fuse_open_out);
	case FUSE_CREATE: case FUSE_TMPFILE:
		return sizeof(struct fuse_entry_out) +
		       sizeof(struct fuse_open_out);
	case FUSE_WRITE:
		return sizeof(struct fuse_write_out);
	case FUSE_STATFS:
		return sizeof(struct fuse_statfs_out);
	}
	return -1;
}

/*
 * Reply bytes that must fit for the harness to know what the daemon now
 * holds (a nodeid reference, a handle); 0 for requests that give none.
 */
static u32 holds_need(const struct rq *r)
{
	int n = fixed_size(r->opcode);

	switch (r->opcode) {
	case FUSE_LOOKUP: case FUSE_MKNOD: case FUSE_MKDIR:
	case FUSE_SYMLINK: case FUSE_LINK: case FUSE_OPEN:
	case FUSE_OPENDIR: case FUSE_CREATE: case FUSE_TMPFILE:
		return sizeof(struct fuse_out_header) + n;
	case FUSE_READDIRPLUS:
		return ~0u;	/* replaced by the size asked for */
	}
	return 0;
}

static void node_add(u64 nodeid, u64 n)
{
	unsigned int i;

	if (!nodeid || !n)
		return;
	for (i = 0; i < g.nnode; i++)
		if (g.node[i].nodeid == nodeid) {
			g.node[i].nlookup += n;
			return;
		}
	if (g.nnode == NTRACK) {
		g.uncertain = true;
		return;
	}
	g.node[g.nnode].nodeid = nodeid;
	g.node[g.nnode++].nlookup = n;
}

static bool fh_on(u64 nodeid);

/*
 * The fuzzer's own FORGET: what the harness will not forget again.  A
 * RELEASE after its node's FORGET must still close the file (V1 in
 * docs/fuzzing.md, fixed in the guard); VQF_FUZZ_LAX_FORGET=1 puts the
 * old bypass back for a daemon that has not fixed it: such an input is
 * then not held to the descriptor check.
 */
static void node_sub(u64 nodeid, u64 n)
{
	unsigned int i;

	for (i = 0; i < g.nnode; i++)
		if (g.node[i].nodeid == nodeid) {
			g.node[i].nlookup -= n < g.node[i].nlookup ? n :
					     g.node[i].nlookup;
			if (!g.node[i].nlookup && fh_on(nodeid) &&
			    g.lax_forget)
				g.uncertain = true;
			return;
		}
}

static void fh_add(u64 fh, u64 nodeid, bool dir)
{
	if (g.nfh == NTRACK) {
		g.uncertain = true;
		return;
	}
	g.fh[g.nfh].fh = fh;
	g.fh[g.nfh].nodeid = nodeid;
	g.fh[g.nfh++].dir = dir;
}

static bool fh_on(u64 nodeid)
{
	unsigned int i;

	for (i = 0; i < g.nfh; i++)
		if (g.fh[i].nodeid == nodeid)
			return true;
	return false;
}

static void fh_del(u64 fh, bool dir)
{
	unsigned int i;

	for (i = 0; i < g.nfh; i++)
		if (g.fh[i].fh == fh && g.fh[i].dir == dir) {
			g.fh[i] = g.fh[--g.nfh];
			return;
		}
}

static u64 rd64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * What a request's body tells before it is sent (FORGETs).  A forget on
 * a request ring is served by some daemons and refused by others (ours):
 * the harness no longer knows the counts.
 */
static void before_send(const struct rq *r, unsigned int qi)
{
	const u8 *b = r->copy + sizeof(struct fuse_in_header);
	u32 blen = r->out_len - sizeof(struct fuse_in_header);
	u32 i, n;

	/* A daemon may serve a request whose length is off, or refuse
	 * it: what it holds afterwards is its own choice.
	 */
	if (!r->whole && r->out_len >= sizeof(struct fuse_in_header) &&
	    (no_reply(r->opcode) || holds_need(r) ||
	     r->opcode == FUSE_DESTROY))
		g.uncertain = true;
	if (!r->whole)
		return;
	if (no_reply(r->opcode) && qi)
		g.uncertain = true;
	/* Only a well-formed forget is sure to be served (ours refuses
	 * any other size); for anything else the counts are unknown.
	 */
	if (r->opcode == FUSE_FORGET) {
		if (blen == sizeof(struct fuse_forget_in))
			node_sub(r->nodeid, rd64(b));
		else
			g.uncertain = true;
	}
	if (r->opcode == FUSE_BATCH_FORGET) {
		n = 0;
		if (blen >= 8)
			memcpy(&n, b, sizeof(n));
		if (blen < 8 || blen != 8 + 16 * (u64)n) {
			g.uncertain = true;
			n = 0;
		}
		for (i = 0; i < n; i++)
			node_sub(rd64(b + 8 + 16 * i), rd64(b + 16 + 16 * i));
	}
}

/* READDIRPLUS: each entry with a nodeid is a lookup (not "." or ".."). */
static void learn_dirplus(const u8 *p, u32 len)
{
	const u32 ent = sizeof(struct fuse_entry_out);
	const u32 dh = offsetof(struct fuse_dirent, name);

	while (len >= ent + dh) {
		struct fuse_entry_out e;
		struct fuse_dirent d;
		u32 sz;

		memcpy(&e, p, sizeof(e));
		memcpy(&d, p + ent, dh);
		sz = ent + ((dh + d.namelen + 7) & ~7u);
		if (d.namelen > len - ent - dh || sz > len)
			break;
		if (!(d.namelen == 1 && p[ent + dh] == '.') &&
		    !(d.namelen == 2 && p[ent + dh] == '.' &&
		      p[ent + dh + 1] == '.'))
			node_add(e.nodeid, 1);
		p += sz;
		len -= sz;
	}
}

static void learn(const struct rq *r, const u8 *pl, u32 plen)
{
	const u8 *b = r->copy + sizeof(struct fuse_in_header);
	u32 blen = r->out_len - sizeof(struct fuse_in_header);
	struct fuse_entry_out e;
	struct fuse_open_out o;

	switch (r->opcode) {
	case FUSE_LOOKUP: case FUSE_MKNOD: case FUSE_MKDIR:
	case FUSE_SYMLINK: case FUSE_LINK:
		memcpy(&e, pl, sizeof(e));
		node_add(e.nodeid, 1);
		break;
	case FUSE_CREATE: case FUSE_TMPFILE:
		memcpy(&e, pl, sizeof(e));
		memcpy(&o, pl + sizeof(e), sizeof(o));
		node_add(e.nodeid, 1);
		fh_add(o.fh, e.nodeid, false);
		break;
	case FUSE_OPEN: case FUSE_OPENDIR:
		memcpy(&o, pl, sizeof(o));
		fh_add(o.fh, r->nodeid, r->opcode == FUSE_OPENDIR);
		break;
	case FUSE_READDIRPLUS:
		learn_dirplus(pl, plen);
		break;
	case FUSE_RELEASE: case FUSE_RELEASEDIR:
		if (blen >= 8)
			fh_del(rd64(b), r->opcode == FUSE_RELEASEDIR);
		break;
	}
}

/* The driver's checks of one used entry, then what it teaches. */
static void complete(struct rq *r, u32 len)
{
	struct fuse_in_header ih;
	struct fuse_out_header oh;
	u32 need = holds_need(r);
	int fs;

	FZ_CHECK(!r->done);
	r->done = true;
	FZ_CHECK(len <= r->in_len);
	/* A device must not write into a device-readable buffer. */
	FZ_CHECK(!memcmp(r->out, r->copy, r->out_len));
	if (r->opcode == FUSE_READDIRPLUS && r->whole &&
	    r->out_len >= sizeof(ih) + 20) {
		u32 sz;

		memcpy(&sz, r->copy + sizeof(ih) + 16, sizeof(sz));
		need = sizeof(oh) + sz;
	} else if (r->opcode == FUSE_READDIRPLUS) {
		need = ~0u;
	}
	if (need && r->in_len < need)
		g.uncertain = true;
	if (g.verbose)
		fprintf(stderr, "op %u unique %llu in %u: used %u\n",
			r->opcode, (unsigned long long)r->unique, r->in_len,
			len);
	if (!r->whole) {
		FZ_CHECK(!len || len >= sizeof(oh));
	} else if (no_reply(r->opcode)) {
		FZ_CHECK(len == 0);
	} else if (!len) {
		/* Our daemon answers whatever takes an answer and fits a
		 * header (an EIO when the reply itself does not fit).
		 */
		FZ_CHECK(!g.strict || maybe_reply(r->opcode) ||
			 r->in_len < sizeof(oh));
	}
	/* A DESTROY with no room for its answer may not have been served
	 * (ours refuses such a chain): the harness cannot know.
	 */
	if (!len && r->whole && r->opcode == FUSE_DESTROY)
		g.uncertain = true;
	if (!len)
		return;
	FZ_CHECK(len >= sizeof(oh));
	memcpy(&oh, r->in, sizeof(oh));
	if (g.verbose)
		fprintf(stderr, "  len %u error %d unique %llu\n", oh.len,
			oh.error, (unsigned long long)oh.unique);
	FZ_CHECK(oh.len == len);
	FZ_CHECK(oh.error <= 0 && oh.error >= -4095);
	FZ_CHECK(!oh.error || len == sizeof(oh));
	if (!r->whole)
		return;
	FZ_CHECK(oh.unique == r->unique);
	if (oh.error)
		return;
	/* Only a DESTROY answered 0 ended the session. */
	if (r->opcode == FUSE_DESTROY)
		g.destroyed = true;
	fs = fixed_size(r->opcode);
	if (fs >= 0)
		FZ_CHECK(len - sizeof(oh) == (u32)fs);
	if ((r->opcode == FUSE_READ || r->opcode == FUSE_READDIR ||
	     r->opcode == FUSE_READDIRPLUS) &&
	    r->out_len >= sizeof(ih) + 20) {
		u32 sz;

		memcpy(&sz, r->copy + sizeof(ih) + 16, sizeof(sz));
		FZ_CHECK(len - sizeof(oh) <= sz);
	}
	learn(r, r->in + sizeof(oh), len - sizeof(oh));
}

/* Splits [0, len) into up to @n pieces at points from @cut. */
static unsigned int split(u64 gpa, u32 len, unsigned int n, u32 cut,
			  struct vqf_vring_gseg *s)
{
	unsigned int k = 0;
	u32 a, b;

	if (!len)
		return 0;
	a = n >= 2 ? 1 + cut % len : len;
	b = n >= 3 && a < len ? a + 1 + (cut >> 16) % (len - a) : len;
	if (a > len)
		a = len;
	s[k].addr = gpa;
	s[k++].len = a;
	if (a < len) {
		s[k].addr = gpa + a;
		s[k++].len = b - a;
	}
	if (b < len) {
		s[k].addr = gpa + b;
		s[k++].len = len - b;
	}
	return k;
}

/*
 * Puts @len request bytes (@hdr_len of them a header) with an in-buffer
 * of @in_len on queue @qi.  Returns false when the ring or RAM is full.
 */
static bool place(unsigned int qi, const u8 *req, u32 len, u32 in_len,
		  unsigned int osplit, unsigned int isplit, u32 cut)
{
	struct queue *q = &g.q[qi];
	struct vqf_vring_gseg rd[3], wr[3];
	struct rq *r = &g.rq[g.nrq];
	struct fuse_in_header ih;
	unsigned int nrd, nwr;
	int ret;

	if (g.nrq == MAXFLIGHT || !len)
		return false;
	memset(r, 0, sizeof(*r));
	r->out = vqf_gram_alloc(g.ram, len, false);
	r->in = in_len ? vqf_gram_alloc(g.ram, in_len, false) : NULL;
	r->copy = malloc(len);
	if (!r->out || (in_len && !r->in) || !r->copy)
		goto fail;
	memcpy(r->out, req, len);
	memcpy(r->copy, req, len);
	if (in_len)
		memset(r->in, POISON, in_len);
	r->out_len = len;
	r->in_len = in_len;
	if (len >= sizeof(ih)) {
		memcpy(&ih, req, sizeof(ih));
		/* What the checks may hold the daemon to: a request that
		 * says its own length (raw ones need not).
		 */
		r->whole = ih.len == len;
		r->opcode = ih.opcode;
		r->unique = ih.unique;
		r->nodeid = ih.nodeid;
	}
	/* Header on its own, as Linux puts it, when split in two. */
	if (osplit == 2 && len > sizeof(ih))
		cut = sizeof(ih) - 1;
	nrd = split(vqf_gram_gpa(g.ram, r->out), len, osplit, cut, rd);
	nwr = split(in_len ? vqf_gram_gpa(g.ram, r->in) : 0, in_len, isplit,
		    cut >> 8, wr);
	ret = vqf_vring_drv_add(q->vr, rd, nrd, wr, nwr, r);
	if (ret == -ENOSPC)
		goto fail;
	FZ_CHECK(!ret);
	before_send(r, qi);
	q->added = true;
	g.nrq++;
	return true;
fail:
	vqf_gram_release(g.ram, r->out);
	vqf_gram_release(g.ram, r->in);
	free(r->copy);
	return false;
}

static unsigned int in_flight(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < g.nrq; i++)
		n += !g.rq[i].done;
	return n;
}

static void reap(struct queue *q)
{
	void *cookie;
	u32 len;
	int ret;

	while ((ret = vqf_vring_drv_get_buf(q->vr, &cookie, &len)) > 0)
		complete(cookie, len);
	if (ret < 0)
		fprintf(stderr, "fuzz_vu_rings: used ring: %s\n",
			strerror(-ret));
	FZ_CHECK(ret == 0);
}

/* Kicks what was added and waits until every request came back. */
static void flush(void)
{
	unsigned int i, waited = 0;

	for (i = 0; i < 2; i++) {
		struct queue *q = &g.q[i];

		if (q->added && vqf_vring_drv_kick_prepare(q->vr))
			FZ_CHECK(!vqf_vfront_kick(g.fe, i));
		q->added = false;
	}
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = g.q[0].call_fd, .events = POLLIN },
			{ .fd = g.q[1].call_fd, .events = POLLIN },
		};
		bool idle = true;
		u64 v;
		int lost;

		for (i = 0; i < 2; i++) {
			vqf_vring_drv_disable_cb(g.q[i].vr);
			reap(&g.q[i]);
			if (!vqf_vring_drv_enable_cb(g.q[i].vr))
				idle = false;	/* more arrived: reap again */
		}
		if (!in_flight())
			break;
		if (!idle)
			continue;
		lost = __atomic_load_n(&g.lost, __ATOMIC_ACQUIRE);
		if (lost) {
			fprintf(stderr, "fuzz_vu_rings: daemon lost (%s) with "
				"%u requests in flight\n", strerror(-lost),
				in_flight());
			abort();
		}
		/* Slices, so that a lost daemon is seen; the sum bounds a
		 * hang only: nothing working waits that long.
		 */
		if (poll(pf, 2, 100) == 0)
			waited += 100;
		if (waited >= WAIT_MS) {
			fprintf(stderr, "fuzz_vu_rings: %u requests not "
				"answered in %u ms: hang\n", in_flight(),
				WAIT_MS);
			abort();
		}
		for (i = 0; i < 2; i++)
			if (read(g.q[i].call_fd, &v, sizeof(v)) < 0 &&
			    errno != EAGAIN)
				abort();
	}
}

/* The buffers of the requests that came back. */
static void release_all(void)
{
	unsigned int i;

	for (i = 0; i < g.nrq; i++) {
		vqf_gram_release(g.ram, g.rq[i].out);
		vqf_gram_release(g.ram, g.rq[i].in);
		free(g.rq[i].copy);
	}
	g.nrq = 0;
}

/*
 * A request from the harness itself (INIT, the input's clean-up); forgets
 * go on the hiprio ring, as Linux sends them (ours refuses them on a
 * request ring).
 */
static void own_request(u32 op, u64 nodeid, const void *body, u32 blen,
			u32 in_len)
{
	unsigned int qi = no_reply(op) ? 0 : 1;
	struct fuse_in_header ih = {
		.len = sizeof(ih) + blen,
		.opcode = op,
		.unique = ++g.unique,
		.nodeid = nodeid,
	};
	u8 buf[sizeof(ih) + 8 + 16 * NTRACK];

	FZ_CHECK(blen <= sizeof(buf) - sizeof(ih));
	memcpy(buf, &ih, sizeof(ih));
	memcpy(buf + sizeof(ih), body, blen);
	if (!place(qi, buf, sizeof(ih) + blen, in_len, 2, 1, 0)) {
		flush();
		release_all();
		FZ_CHECK(place(qi, buf, sizeof(ih) + blen, in_len, 2, 1, 0));
	}
}

/* INIT, as Linux's virtio-fs mount sends it; the reply's error. */
static int send_init(void)
{
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION,
		.minor = FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = 128 << 10,
		.flags = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS |
			 FUSE_ATOMIC_O_TRUNC | FUSE_EXPORT_SUPPORT |
			 FUSE_BIG_WRITES | FUSE_DONT_MASK | FUSE_FLOCK_LOCKS |
			 FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
			 FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS |
			 FUSE_HANDLE_KILLPRIV | FUSE_MAX_PAGES,
	};
	struct fuse_out_header oh;

	release_all();
	own_request(FUSE_INIT, 0, &ii, sizeof(ii), 4096);
	flush();
	memcpy(&oh, g.rq[0].in, sizeof(oh));
	release_all();
	g.destroyed = false;
	return oh.error;
}

/* After the fuzzer's DESTROY: a new session, or still the old one. */
static void reinit(void)
{
	struct fuse_getattr_in gi = { 0 };
	struct fuse_out_header oh;

	if (!send_init())
		return;
	/* Refused: the DESTROY did not end the session (it had no room
	 * for its reply, say).  The session must still serve.
	 */
	own_request(FUSE_GETATTR, FUSE_ROOT_ID, &gi, sizeof(gi), 4096);
	flush();
	memcpy(&oh, g.rq[0].in, sizeof(oh));
	release_all();
	if (oh.error) {
		fprintf(stderr, "fuzz_vu_rings: after DESTROY neither INIT "
			"nor GETATTR served (%d)\n", oh.error);
		abort();
	}
}

/* ---- one input ----------------------------------------------------- */

static u64 pick_node(unsigned int sel, struct fz *f)
{
	switch (sel) {
	case 0:
		return FUSE_ROOT_ID;
	case 9:
		return 0;
	case 10:
		return ~0ull;
	case 15:
		return fz_u64(f);
	}
	if (sel <= 8 && g.nnode)
		return g.node[(sel - 1) % g.nnode].nodeid;
	return FUSE_ROOT_ID;
}

/* What a driver that cannot interrupt, or a bounded disk, needs. */
static void tame(u32 *op, u8 *body, u32 blen)
{
	u64 v;
	int i;

	if (*op == FUSE_SETLKW)
		*op = FUSE_SETLK;
	if (*op == FUSE_FALLOCATE && blen >= 24) {
		for (i = 8; i <= 16; i += 8) {
			v = rd64(body + i) % FILE_CAP;
			memcpy(body + i, &v, sizeof(v));
		}
	}
}

static void record(struct fz *f)
{
	static u8 req[sizeof(struct fuse_in_header) + MAXBODY];
	struct fuse_in_header ih = { 0 };
	u8 ctl = fz_u8(f), *body = req + sizeof(ih);
	unsigned int qi = ctl & 1, osplit = (ctl >> 4 & 3) + 1;
	unsigned int isplit = (ctl >> 6) % 3 + 1;
	bool raw = ctl & 2;
	u32 op = 0, blen, in_len, cut;
	u8 sel = 0, pt = 0;

	if (!raw) {
		op = fz_u8(f);
		sel = fz_u8(f);
		pt = fz_u8(f);
		ih.nodeid = pick_node(sel & 15, f);
	} else {
		pt = fz_u8(f);
	}
	in_len = in_class[pt >> 4];
	blen = fz_u16(f);
	if (blen > MAXBODY)
		blen = MAXBODY;
	cut = (u32)fz_take(f, body, blen);
	blen = cut;
	cut = blen * 2654435761u;	/* cut points: the body's length */
	if (raw) {
		if (!place(qi, body, blen, in_len, osplit, isplit, cut))
			return;
	} else {
		unsigned int k = sel >> 4, off = (pt & 7) * 8;

		tame(&op, body, blen);
		if (k >= 1 && k <= 8 && off + 8 <= blen) {
			u64 v = 0;

			if ((pt & 8) && g.nnode)
				v = g.node[(k - 1) % g.nnode].nodeid;
			else if (!(pt & 8) && g.nfh)
				v = g.fh[(k - 1) % g.nfh].fh;
			memcpy(body + off, &v, sizeof(v));
		}
		ih.len = sizeof(ih) + blen;
		ih.opcode = op;
		ih.unique = ++g.unique;
		ih.uid = ih.gid = ctl & 4 ? GUEST_ID : 0;
		ih.pid = 1;
		memcpy(req, &ih, sizeof(ih));
		if (!place(qi, req, sizeof(ih) + blen, in_len, osplit, isplit,
			   cut))
			return;
	}
	if (!(ctl & 8) || g.nrq == MAXFLIGHT) {
		flush();
		release_all();
	}
}

/* As a guest's umount: every handle released, every nodeid forgotten. */
static void forget_all(void)
{
	struct {
		struct fuse_batch_forget_in h;
		struct fuse_forget_one one[NTRACK];
	} bf;
	unsigned int i, n = 0;

	for (i = 0; i < g.nfh; i++) {
		struct fuse_release_in ri = { .fh = g.fh[i].fh };

		own_request(g.fh[i].dir ? FUSE_RELEASEDIR : FUSE_RELEASE,
			    g.fh[i].nodeid, &ri, sizeof(ri), 16);
		if (g.nrq == MAXFLIGHT) {
			flush();
			release_all();
		}
	}
	g.nfh = 0;
	/*
	 * Every RELEASE answered before the forgets go: a FORGET that
	 * overtakes a RELEASE on the other ring leaks the file in our
	 * daemon (V1), which the fuzzer's own requests may show.
	 */
	flush();
	release_all();
	memset(&bf, 0, sizeof(bf));
	for (i = 0; i < g.nnode; i++) {
		if (!g.node[i].nlookup)
			continue;
		if (g.verbose)
			fprintf(stderr, "forget %#llx x %llu\n",
				(unsigned long long)g.node[i].nodeid,
				(unsigned long long)g.node[i].nlookup);
		bf.one[n].nodeid = g.node[i].nodeid;
		bf.one[n++].nlookup = g.node[i].nlookup;
	}
	g.nnode = 0;
	if (n) {
		bf.h.count = n;
		own_request(FUSE_BATCH_FORGET, 0, &bf,
			    sizeof(bf.h) + n * sizeof(bf.one[0]), 0);
	}
	flush();
	release_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool xfsz;
	unsigned int n = 0;
	struct fz f;
	int fds;

	/* libFuzzer handles SIGXFSZ after LLVMFuzzerInitialize: a write
	 * past FILE_CAP must fail with EFBIG, not end the run.
	 */
	if (!xfsz && g.inproc) {
		signal(SIGXFSZ, SIG_IGN);
		xfsz = true;
	}
	if (!g.up)
		stack_up();
	g.uncertain = false;
	g.fd_base = scan_fds(g.fd_map, NULL);
	fz_init(&f, data, size);
	while (f.n && n++ < MAXRECS)
		record(&f);
	flush();
	release_all();
	if (g.destroyed) {
		/* The session is gone.  Ours drops what it held of it, as
		 * virtiofsd does (V2, fixed): checked.  What another daemon
		 * keeps is its own business.
		 */
		g.nfh = g.nnode = 0;
		if (!g.inproc)
			g.uncertain = true;
		reinit();
	}
	forget_all();
	share_reset();
	if (!g.inproc)
		return 0;
	fds = scan_fds(NULL, NULL);
	if (g.verbose)
		fprintf(stderr, "descriptors: %d before, %d after%s\n",
			g.fd_base, fds, g.uncertain ? " (uncertain)" : "");
	if (!g.uncertain && fds > g.fd_base) {
		fprintf(stderr, "fuzz_vu_rings: %d descriptors after the "
			"input released and forgot all it obtained, %d "
			"before\n", fds, g.fd_base);
		scan_fds(NULL, g.fd_map);
		abort();
	}
	/* Fewer is no finding: a guessed handle may close what an earlier,
	 * uncertain input left.
	 */
	if (fds > g.fd_start + FD_SLACK) {
		stack_down();
		stack_up();
	}
	return 0;
}
