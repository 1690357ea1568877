// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_device - the whole device loop: a guest writes arbitrary bytes into
 * ring memory and kicks; the simulated virtio-fs device (sim/device, inline
 * kicks, no worker threads) serves the chains through vqfuse's own
 * passthrough (sim/passthrough via sim/backend and libfuse3) from a
 * temporary directory; the harness checks invariants after every step.
 *
 * One input is one deterministic program.  Per input the harness rebuilds
 * the shared directory (a fixed small tree), creates passthrough, backend
 * and device, runs the steps and frees them again: the backend's INIT
 * state and the passthrough's inode table cannot be reset through the
 * device, and nothing (no thread, no file, no fd) outlives an input.
 *
 * Guest memory: one region of MEM bytes at guest address BASE.  Queue i
 * (0 hiprio, 1 and 2 request queues; no notification queue, so no device
 * thread) has its rings at BASE + i * QAREA; buffers and indirect tables
 * are allocated from BASE + BUF0 upwards, wrapping around.
 *
 * Input: one byte of bring-up configuration, then steps.
 *   cfg      queue size 2 << (b & 7) % 6 (2..64), bit 3 EVENT_IDX,
 *            bit 4 INDIRECT_DESC, bit 5 also set up request queue 2,
 *            bit 6 no bring-up (the steps have to do it), bit 7 serve
 *            through a port of a vqf_hub (sim/hub: unique renumbering,
 *            per-guest lookup counts, a 16-slot version table, entry
 *            replies extended for a guest whose INIT asks for it)
 *   step     [op % 10][arguments]; integers little-endian, missing bytes
 *            read as 0 (fuzz_common.h)
 *   0 POKE      u16 off, u8 n, n bytes: raw write at BASE + off % MEM
 *   1 RAW       u8 q, u8 shape, u16 len, len bytes: a chain on queue q % 4
 *               whose readable part holds exactly these bytes
 *   2 REQ       u8 q, u8 shape, u8 opcode, u8 sel, u8 hx, [u64 nodeid],
 *               [s8 len delta], u16 blen, blen bytes: a chain holding a
 *               well-formed fuse_in_header (len 40 + blen, a fresh unique,
 *               opcode, nodeid) and the body
 *       sel      low nibble nodeid: 0 root, 1..8 the nodeids learnt from
 *                earlier replies (LOOKUP, CREATE, ...; a guess of the
 *                passthrough's numbering before any), 9 zero, 15 raw u64;
 *                high nibble 1..8: patch a learnt value into the body
 *       hx       bit 0 uid/gid 1000 (not root: the passthrough switches
 *                fsuid); bit 1 the patch is a nodeid, else a file handle;
 *                bits 2-4 patch offset / 8; bit 5 a len delta follows
 *   3 PUBLISH   u8 q, u8 n: the guest's avail idx += n
 *   4 KICK      u8 q: vqf_fsdev_kick(q % 4; 255 -> 200)
 *   5 STATUS    u8 status: vqf_fsdev_set_status(), 0 resets
 *   6 FEATURES  u64: vqf_fsdev_set_features()
 *   7 SETQ      u8 q, u8 log2 num, u16 off: vqf_fsdev_set_queue() with
 *               rings laid out from BASE + off % MEM (16-aligned)
 *   8 BRINGUP   u8 cfg: reset and the whole virtio 3.1.1 sequence
 *   9 CONFIG    read the config space and features, check them
 *   shape: bits 0-1 readable pieces - 1; bits 2-3 writable bytes
 *   (0, 16, 160, 4112); bit 4 writable part in two pieces; bit 5 through
 *   an indirect table; bit 6 write the ring entry but do not publish it.
 *
 * Invariants (abort() on violation):
 *   - a kick on a queue that is not running returns -ENOENT and changes
 *     neither guest memory nor counters;
 *   - a kick pops every chain made available (avail idx - the device's
 *     position, at most the queue size), unless the queue breaks (then
 *     NEEDS_RESET is set); each pop is pushed before the kick returns:
 *     requests + hiprio + chain_errors grows by exactly the used idx
 *     advance, and used idx equals the device's count;
 *   - replies grows by the used entries with a non-zero length, and no
 *     used length is in 1..15;
 *   - on kicks where no writable buffer overlaps a ring, a descriptor
 *     table, a readable buffer or another writable buffer (so that the
 *     harness's own walk of every chain, done before the kick, is what the
 *     device saw): each used id is a head that was made available in this
 *     kick and is returned once per time it was made available; used len
 *     <= the chain's writable bytes; if len >= 16, fuse_out_header.len ==
 *     used len, its unique is the request's, its error is in [-4095, 0]
 *     and an error carries no payload; a request with a whole header,
 *     an opcode that takes a reply and >= 16 writable bytes gets a reply;
 *     the device wrote nothing in guest memory but the writable buffers
 *     of these chains and its own used-ring fields;
 *   - host side, after every kick: the shared directory still exists (the
 *     same inode), the folder holding it contains only it, the sibling
 *     folder "outside" (the target of symlinks inside the share) and the
 *     file in it are untouched; the thread's fsuid/fsgid are back to 0;
 *   - after the input: every fd the input opened is closed.
 *
 * Disk use: RLIMIT_FSIZE caps files at FILE_CAP (SIGXFSZ ignored: the
 * write fails with EFBIG), and fallocate() is wrapped below to refuse
 * ranges past FILE_CAP the same way (ext4 and tmpfs do not apply the
 * rlimit to FALLOC_FL_KEEP_SIZE).  The share is emptied before each input.
 */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "vqf_fsdev.h"
#include "vqf_hub.h"
#include "vqf_passthrough.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BASE		0x100000ULL
#define MEM		32768u
#define NQ		3
#define QAREA		2048u
#define BUF0		(NQ * QAREA)
#define QNUM_MAX	64
#define MAXWALK		(2 * QNUM_MAX + 2)
#define MAXSTEPS	512
#define POOL		8
#define FILE_CAP	(4u << 20)
#define TAG		"vqfuse-fuzz"
#define GUEST_UID	1000
#define FD_WINDOW	32

enum {
	OP_POKE, OP_RAW, OP_REQ, OP_PUBLISH, OP_KICK, OP_STATUS, OP_FEATURES,
	OP_SETQ, OP_BRINGUP, OP_CONFIG, OP_NR
};

static const u32 wclass[4] = { 0, 16, 160, 4112 };

/* ---- per process: the share, its sentinels, guest memory ------------- */

static char g_parent[PATH_MAX], g_box[PATH_MAX], g_root[PATH_MAX];
static char g_out[PATH_MAX], g_secret[PATH_MAX];
static struct stat g_st_parent, g_st_out, g_st_secret;
static ino_t g_root_ino;
static int g_kick_fd, g_call_fd;
static bool g_trace;		/* env VQF_FUZZ_TRACE: print each reply */
static bool g_xfsz_ignored;
static u8 *g_mem;
static struct vqf_gmem g_map;
static u8 g_snap[MEM], g_cover[MEM], g_allow[MEM];

/*
 * The passthrough calls fallocate() from libc; these definitions in the
 * executable take its place (both names: fallocate64 with 64-bit off_t).
 * Beyond FILE_CAP they fail as RLIMIT_FSIZE would; otherwise they are the
 * system call.
 */
int vqf_fz_fallocate(int fd, int mode, off_t off, off_t len)
	__asm__("fallocate");
int vqf_fz_fallocate64(int fd, int mode, off_t off, off_t len)
	__asm__("fallocate64");

int vqf_fz_fallocate(int fd, int mode, off_t off, off_t len)
{
	if (off < 0 || len <= 0 || off > (off_t)FILE_CAP ||
	    len > (off_t)FILE_CAP - off) {
		errno = off < 0 || len <= 0 ? EINVAL : EFBIG;
		return -1;
	}
	return syscall(SYS_fallocate, fd, mode, off, len);
}

int vqf_fz_fallocate64(int fd, int mode, off_t off, off_t len)
{
	return vqf_fz_fallocate(fd, mode, off, len);
}

/*
 * Harness workaround D2 (see docs/fuzzing.md, "Crashes found"): a
 * contended SETLKW, or a blocking flock, waits in the passthrough's
 * wait_lock() until the lock is free or the request is INTERRUPTed.  With
 * inline kicks the waiting thread is the kicking one, so neither the
 * unlock nor an INTERRUPT can ever arrive and the device hangs.  Here a
 * request counts as interrupted at once (the guest gave up immediately):
 * the wait ends with EINTR after one try.  wait_lock() is the passthrough's
 * only caller; this definition in the executable takes libfuse's place.
 */
int vqf_fz_req_interrupted(fuse_req_t req) __asm__("fuse_req_interrupted");

int vqf_fz_req_interrupted(fuse_req_t req)
{
	(void)req;
	return 1;
}

static void quiet_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

static int rm_cb(const char *path, const struct stat *sb, int flag,
		 struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void cleanup_parent(void)
{
	if (g_parent[0])
		rm_tree(g_parent);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	FZ_CHECK(fd >= 0);
	FZ_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* The share's contents at the start of every input. */
static void build_root(void)
{
	char p[PATH_MAX], t[PATH_MAX];
	struct stat st;

	rm_tree(g_root);
	FZ_CHECK(mkdir(g_root, 0777) == 0);
	/* umask 0 (the passthrough sets it): the guest's uid may create. */
	FZ_CHECK(chmod(g_root, 0777) == 0);
	FZ_CHECK(stat(g_root, &st) == 0);
	g_root_ino = st.st_ino;
	put_file(g_root, "f", "hello, world\n");
	snprintf(p, sizeof(p), "%s/d", g_root);
	FZ_CHECK(mkdir(p, 0755) == 0);
	put_file(p, "g", "in d\n");
	/* Escape attempts for the guest: relative and absolute. */
	snprintf(p, sizeof(p), "%s/l", g_root);
	FZ_CHECK(symlink("../../outside", p) == 0);
	snprintf(p, sizeof(p), "%s/a", g_root);
	FZ_CHECK(symlink(g_out, p) == 0);
	snprintf(p, sizeof(p), "%s/s", g_root);
	snprintf(t, sizeof(t), "%s/secret", g_out);
	FZ_CHECK(symlink(t, p) == 0);
	/* Opening a FIFO would block the device thread (CVE-2020-35517). */
	snprintf(p, sizeof(p), "%s/p", g_root);
	FZ_CHECK(mkfifo(p, 0666) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rlimit rl = { FILE_CAP, FILE_CAP };
	const char *tmp = getenv("VQF_FUZZ_TMPDIR");

	(void)argc;
	(void)argv;
	/* tmpfs if there is one: creating inodes on ext4 costs most of an
	 * input's time (6x fewer execs/s measured).
	 */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK | X_OK) ? NULL : "/dev/shm";
	if (!tmp || !*tmp)
		tmp = getenv("TMPDIR");
	snprintf(g_parent, sizeof(g_parent), "%s/vqf-fuzz-dev-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	FZ_CHECK(mkdtemp(g_parent));
	atexit(cleanup_parent);
	snprintf(g_box, sizeof(g_box), "%s/box", g_parent);
	snprintf(g_root, sizeof(g_root), "%s/root", g_box);
	snprintf(g_out, sizeof(g_out), "%s/outside", g_parent);
	snprintf(g_secret, sizeof(g_secret), "%s/secret", g_out);
	FZ_CHECK(mkdir(g_box, 0755) == 0);
	FZ_CHECK(mkdir(g_out, 0755) == 0);
	put_file(g_out, "secret", "not for the guest\n");
	FZ_CHECK(stat(g_parent, &g_st_parent) == 0);
	FZ_CHECK(stat(g_out, &g_st_out) == 0);
	FZ_CHECK(stat(g_secret, &g_st_secret) == 0);

	g_trace = getenv("VQF_FUZZ_TRACE");
	FZ_CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	fuse_set_log_func(quiet_log);

	g_kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g_call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	FZ_CHECK(g_kick_fd >= 0 && g_call_fd >= 0);
	g_mem = aligned_alloc(4096, MEM);
	FZ_CHECK(g_mem);
	vqf_gmem_init(&g_map);
	FZ_CHECK(vqf_gmem_add(&g_map, BASE, MEM, g_mem) == 0);
	return 0;
}

/* ---- guest memory helpers ------------------------------------------- */

static bool in_mem(u64 gpa, u64 len, u32 *off)
{
	if (gpa < BASE || gpa - BASE > MEM || len > MEM - (gpa - BASE))
		return false;
	*off = (u32)(gpa - BASE);
	return true;
}

static u16 r16(u64 gpa)
{
	u16 v;

	memcpy(&v, g_mem + (gpa - BASE), 2);
	return le16_to_cpu(v);
}

static u32 r32(u64 gpa)
{
	u32 v;

	memcpy(&v, g_mem + (gpa - BASE), 4);
	return le32_to_cpu(v);
}

static void w16(u64 gpa, u16 v)
{
	v = cpu_to_le16(v);
	memcpy(g_mem + (gpa - BASE), &v, 2);
}

static void wdesc(u64 gpa, u64 addr, u32 len, u16 flags, u16 next)
{
	struct vring_desc d = {
		.addr = cpu_to_le64(addr),
		.len = cpu_to_le32(len),
		.flags = cpu_to_le16(flags),
		.next = cpu_to_le16(next),
	};

	memcpy(g_mem + (gpa - BASE), &d, sizeof(d));
}

/* ---- per input: device, model of the guest's queues ----------------- */

struct mq {
	bool desc;		/* described with set_queue */
	bool run;		/* started by DRIVER_OK */
	bool broken;		/* the device broke it in a kick */
	unsigned int num;
	struct vqf_vring_addr a;
	u16 avail;		/* the guest's next avail idx */
	u16 last;		/* the device's last_avail_idx */
	u16 used;		/* the device's used idx */
	u16 next_desc;		/* next descriptor slot to fill */
};

struct ctx {
	struct vqf_pt *pt;
	struct vqf_backend *be;
	struct vqf_hub *hub;		/* cfg bit 7, else NULL */
	struct vqf_hub_port *port;
	struct vqf_fsdev *d;
	struct mq q[NQ];
	u64 features;
	u32 bufpos;
	u64 unique;
	u64 node[POOL], fh[POOL];
	unsigned int nnode, nfh;
};

/* The harness's own walk of a chain, before the kick. */
struct walk {
	bool ok;
	u16 head;
	bool matched;
	u64 rd, wr;
	unsigned int nseg;
	u32 hdrn;
	u8 hdr[sizeof(struct fuse_in_header)];
	unsigned int nws;
	u32 ws_off[MAXWALK], ws_len[MAXWALK];
};

static struct walk g_walk[QNUM_MAX];

static u32 buf_alloc(struct ctx *c, u32 len, u32 align)
{
	u32 p = (c->bufpos + align - 1) & ~(align - 1);

	if (len > MEM - BUF0)
		len = MEM - BUF0;
	if (p + len > MEM)
		p = BUF0;
	c->bufpos = p + len;
	return p;
}

static void model_reset(struct ctx *c)
{
	memset(c->q, 0, sizeof(c->q));
	c->features = 0;
}

static void model_started(struct ctx *c)
{
	unsigned int i;

	for (i = 0; i < NQ; i++) {
		struct mq *q = &c->q[i];

		q->run = q->desc;
		q->broken = false;
		q->avail = q->last = q->used = q->next_desc = 0;
	}
}

static int setq(struct ctx *c, unsigned int idx, unsigned int num, u64 gpa)
{
	struct vqf_vring_addr a;
	u64 need = vqf_vring_layout(num, gpa, 4, &a);
	u32 off;
	int r;

	/* Fresh rings, as a driver allocates them. */
	if (need && in_mem(gpa, need, &off))
		memset(g_mem + off, 0, need);
	r = vqf_fsdev_set_queue(c->d, idx, num, need ? &a : NULL,
				g_kick_fd, g_call_fd);
	FZ_CHECK(r == 0 || r == -EPERM || r == -ENOENT || r == -EINVAL ||
		 r == -EFAULT);
	if (!r) {
		FZ_CHECK(idx < NQ);
		c->q[idx].desc = true;
		c->q[idx].num = num;
		c->q[idx].a = a;
	}
	return r;
}

static void set_status(struct ctx *c, u8 s)
{
	u8 old = vqf_fsdev_get_status(c->d);
	int r = vqf_fsdev_set_status(c->d, s);

	FZ_CHECK(r == 0 || r == -EINVAL || r == -EIO);
	if (!s) {
		FZ_CHECK(r == 0 && vqf_fsdev_get_status(c->d) == 0);
		model_reset(c);
		return;
	}
	if (!r && !(old & VQF_S_DRIVER_OK) &&
	    (vqf_fsdev_get_status(c->d) & VQF_S_DRIVER_OK))
		model_started(c);
}

static void bringup(struct ctx *c, u8 b)
{
	unsigned int num = 2u << ((b & 7) % 6), i;
	unsigned int nq = (b & 32) ? 3 : 2;
	u64 want = 1ULL << VIRTIO_F_VERSION_1;
	const u8 drv = VQF_S_ACKNOWLEDGE | VQF_S_DRIVER;

	if (b & 8)
		want |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (b & 16)
		want |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	set_status(c, 0);
	set_status(c, VQF_S_ACKNOWLEDGE);
	set_status(c, drv);
	FZ_CHECK(vqf_fsdev_set_features(c->d, want) == 0);
	c->features = want;
	set_status(c, drv | VQF_S_FEATURES_OK);
	FZ_CHECK(vqf_fsdev_get_status(c->d) & VQF_S_FEATURES_OK);
	for (i = 0; i < nq; i++)
		FZ_CHECK(setq(c, i, num, BASE + i * QAREA) == 0);
	set_status(c, drv | VQF_S_FEATURES_OK | VQF_S_DRIVER_OK);
	FZ_CHECK(vqf_fsdev_get_status(c->d) & VQF_S_DRIVER_OK);
}

/* ---- placing chains --------------------------------------------------- */

static void place(struct ctx *c, unsigned int qi, u8 shape, const u8 *req,
		  u32 len)
{
	unsigned int nr = (shape & 3) + 1, nw, total, i, k;
	u32 wlen = wclass[(shape >> 2) & 3], off, piece, done = 0;
	u32 addr[8], plen[8];
	u16 flags[8], head;
	bool ind = shape & 32;
	struct mq *q;

	if (qi >= NQ || !c->q[qi].desc)
		return;
	q = &c->q[qi];
	nw = !wlen ? 0 : (shape & 16) ? 2 : 1;
	if (nr > len)
		nr = len ? len : 1;
	while (nr + nw > q->num) {
		if (nr > 1)
			nr--;
		else
			nw--;
	}
	total = nr + nw;
	for (i = 0; i < nr; i++) {
		piece = i + 1 < nr ? len / nr : len - done;
		off = buf_alloc(c, piece, 8);
		memcpy(g_mem + off, req + done, piece);
		done += piece;
		addr[i] = off;
		plen[i] = piece;
		flags[i] = 0;
	}
	for (k = 0; k < nw; k++, i++) {
		piece = nw == 2 ? (k ? wlen - wlen / 2 : wlen / 2) : wlen;
		off = buf_alloc(c, piece, 8);
		memset(g_mem + off, 0xee, piece);
		addr[i] = off;
		plen[i] = piece;
		flags[i] = VRING_DESC_F_WRITE;
	}
	if (ind) {
		u32 t = buf_alloc(c, 16 * total, 16);

		for (i = 0; i < total; i++)
			wdesc(BASE + t + 16 * i, BASE + addr[i], plen[i],
			      flags[i] | (i + 1 < total ? VRING_DESC_F_NEXT :
					  0), i + 1);
		head = q->next_desc;
		wdesc(q->a.desc + 16ULL * head, BASE + t, 16 * total,
		      VRING_DESC_F_INDIRECT, 0);
		q->next_desc = (head + 1) % q->num;
	} else {
		head = q->next_desc;
		for (i = 0; i < total; i++) {
			u16 d = (head + i) % q->num;

			wdesc(q->a.desc + 16ULL * d, BASE + addr[i], plen[i],
			      flags[i] | (i + 1 < total ? VRING_DESC_F_NEXT :
					  0), (d + 1) % q->num);
		}
		q->next_desc = (head + total) % q->num;
	}
	w16(q->a.avail + 4 + 2 * (q->avail % q->num), head);
	if (!(shape & 64)) {
		q->avail++;
		w16(q->a.avail + 2, q->avail);
	}
}

static u64 pool_get(const u64 *pool, unsigned int n, unsigned int k,
		    u64 guess_base)
{
	if (n)
		return pool[(k - 1) % n];
	/* The passthrough's numbering: table index, generation 1 above. */
	return (1ULL << 32) | (guess_base + k);
}

static void pool_add(u64 *pool, unsigned int *n, u64 v)
{
	if (*n == POOL) {
		memmove(pool, pool + 1, (POOL - 1) * sizeof(*pool));
		(*n)--;
	}
	pool[(*n)++] = v;
}

static void step_req(struct ctx *c, struct fz *f)
{
	static u8 buf[sizeof(struct fuse_in_header) + 65536];
	struct fuse_in_header *h = (struct fuse_in_header *)buf;
	u8 qi = fz_u8(f), shape = fz_u8(f), op = fz_u8(f), sel = fz_u8(f);
	u8 hx = fz_u8(f);
	unsigned int ns = sel & 15, ps = sel >> 4;
	u64 nodeid, pv = 0;
	s8 delta = 0;
	u32 blen, pofs;

	if (ns == 0)
		nodeid = FUSE_ROOT_ID;
	else if (ns <= POOL)
		nodeid = pool_get(c->node, c->nnode, ns, 1);
	else if (ns == 15)
		nodeid = fz_u64(f);
	else
		nodeid = ns == 9 ? 0 : ns;
	if (hx & 32)
		delta = (s8)fz_u8(f);
	blen = fz_u16(f);
	blen = fz_take(f, buf + sizeof(*h), blen);
	memset(h, 0, sizeof(*h));
	h->len = sizeof(*h) + blen + delta;
	h->opcode = op;
	h->unique = ++c->unique;
	h->nodeid = nodeid;
	h->uid = h->gid = (hx & 1) ? GUEST_UID : 0;
	h->pid = 1;
	if (ps >= 1 && ps <= POOL) {
		pv = (hx & 2) ? pool_get(c->node, c->nnode, ps, 1) :
				pool_get(c->fh, c->nfh, ps, 0);
		pofs = ((hx >> 2) & 7) * 8;
		if (pofs + 8 <= blen)
			memcpy(buf + sizeof(*h) + pofs, &pv, 8);
	}
	place(c, qi % 4, shape, buf, sizeof(*h) + blen);
}

static void step_raw(struct ctx *c, struct fz *f)
{
	static u8 buf[65536];
	u8 qi = fz_u8(f), shape = fz_u8(f);
	u32 len = fz_u16(f);

	len = fz_take(f, buf, len);
	place(c, qi % 4, shape, buf, len);
}

/* ---- the kick and its invariants ------------------------------------ */

/* Marks [off, off+len) in the cover map; true if it was already used. */
static bool cover(u32 off, u64 len, u8 bit, u8 clash)
{
	bool hit = false;
	u64 i;

	for (i = 0; i < len; i++) {
		hit |= g_cover[off + i] & clash;
		g_cover[off + i] |= bit;
	}
	return hit;
}

#define C_READ	1
#define C_WRITE	2

/* Same rules as sim/vring's pop (vring_dev.c), on the pre-kick image. */
static bool walk(const struct ctx *c, const struct mq *q, u16 head,
		 struct walk *w)
{
	u64 tbl = q->a.desc;
	unsigned int tsize = q->num, i = head, count = 0;
	bool ind = false, alias = false;

	memset(w, 0, offsetof(struct walk, ws_off));
	w->head = head;
	if (head >= q->num)
		return false;
	for (;;) {
		struct vring_desc d;
		u64 addr;
		u32 len, off;
		u16 flags;

		if (++count > tsize || !in_mem(tbl + 16ULL * i, 16, &off))
			return alias;
		memcpy(&d, g_mem + off, sizeof(d));
		addr = le64_to_cpu(d.addr);
		len = le32_to_cpu(d.len);
		flags = le16_to_cpu(d.flags);
		if (flags & VRING_DESC_F_INDIRECT) {
			if (ind || (flags & VRING_DESC_F_NEXT) ||
			    !(c->features &
			      (1ULL << VIRTIO_RING_F_INDIRECT_DESC)) ||
			    !len || len % 16 || len / 16 > q->num ||
			    !in_mem(addr, len, &off))
				return alias;
			alias |= cover(off, len, C_READ, C_WRITE);
			tbl = addr;
			tsize = len / 16;
			i = 0;
			count = 0;
			ind = true;
			continue;
		}
		if (!len || !in_mem(addr, len, &off))
			return alias;
		w->nseg++;
		if (flags & VRING_DESC_F_WRITE) {
			if (w->nws == MAXWALK)
				return alias;
			w->ws_off[w->nws] = off;
			w->ws_len[w->nws++] = len;
			w->wr += len;
		} else {
			u32 k;

			if (w->nws)
				return alias;
			alias |= cover(off, len, C_READ, C_WRITE);
			k = len < sizeof(w->hdr) - w->hdrn ?
			    len : sizeof(w->hdr) - w->hdrn;
			memcpy(w->hdr + w->hdrn, g_mem + off, k);
			w->hdrn += k;
			w->rd += len;
		}
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		i = le16_to_cpu(d.next);
		if (i >= tsize)
			return alias;
	}
	w->ok = true;
	return alias;
}

static void check_host(void)
{
	struct stat st;
	struct dirent *de;
	DIR *dir;
	int n = 0;

	FZ_CHECK(stat(g_root, &st) == 0 && S_ISDIR(st.st_mode) &&
		 st.st_ino == g_root_ino);
	FZ_CHECK(stat(g_parent, &st) == 0);
	FZ_CHECK(st.st_mtim.tv_sec == g_st_parent.st_mtim.tv_sec &&
		 st.st_mtim.tv_nsec == g_st_parent.st_mtim.tv_nsec &&
		 st.st_nlink == g_st_parent.st_nlink);
	FZ_CHECK(stat(g_out, &st) == 0);
	FZ_CHECK(st.st_mtim.tv_sec == g_st_out.st_mtim.tv_sec &&
		 st.st_mtim.tv_nsec == g_st_out.st_mtim.tv_nsec &&
		 st.st_ctim.tv_nsec == g_st_out.st_ctim.tv_nsec &&
		 st.st_mode == g_st_out.st_mode &&
		 st.st_uid == g_st_out.st_uid);
	FZ_CHECK(stat(g_secret, &st) == 0);
	FZ_CHECK(st.st_size == g_st_secret.st_size &&
		 st.st_mtim.tv_nsec == g_st_secret.st_mtim.tv_nsec &&
		 st.st_ctim.tv_nsec == g_st_secret.st_ctim.tv_nsec &&
		 st.st_mode == g_st_secret.st_mode &&
		 st.st_uid == g_st_secret.st_uid &&
		 st.st_nlink == g_st_secret.st_nlink);
	dir = opendir(g_box);
	FZ_CHECK(dir);
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		FZ_CHECK(!strcmp(de->d_name, "root"));
		n++;
	}
	closedir(dir);
	FZ_CHECK(n == 1);
	/* The passthrough switches fsuid/fsgid around creates. */
	FZ_CHECK(syscall(SYS_setfsuid, -1) == 0);
	FZ_CHECK(syscall(SYS_setfsgid, -1) == 0);
}

static u32 r32hdr(const struct walk *w)
{
	u32 op;

	memcpy(&op, w->hdr + 4, 4);
	return op;
}

static bool replies_to(u32 op)
{
	return op != FUSE_FORGET && op != FUSE_BATCH_FORGET &&
	       op != FUSE_INTERRUPT;
}

/* Gathers @len bytes from the start of @w's writable part. */
static void gather(const struct walk *w, void *dst, u32 len)
{
	unsigned int i;
	u32 k = 0;

	for (i = 0; i < w->nws && k < len; i++) {
		u32 n = w->ws_len[i] < len - k ? w->ws_len[i] : len - k;

		memcpy((u8 *)dst + k, g_mem + w->ws_off[i], n);
		k += n;
	}
}

/* Nodeids and file handles from successful replies, for later steps. */
static void learn(struct ctx *c, const struct walk *w, u32 len)
{
	u8 out[16 + sizeof(struct fuse_entry_out) +
	       sizeof(struct fuse_open_out)];
	struct fuse_in_header in;
	struct fuse_out_header oh;
	u64 v;

	if (w->hdrn < sizeof(in) || len < 16 + sizeof(struct fuse_open_out))
		return;
	memcpy(&in, w->hdr, sizeof(in));
	memset(out, 0, sizeof(out));
	gather(w, out, len < sizeof(out) ? len : sizeof(out));
	memcpy(&oh, out, sizeof(oh));
	if (oh.error)
		return;
	switch (in.opcode) {
	case FUSE_LOOKUP: case FUSE_MKNOD: case FUSE_MKDIR: case FUSE_SYMLINK:
	case FUSE_LINK: case FUSE_CREATE: case FUSE_TMPFILE:
		if (len < 16 + sizeof(struct fuse_entry_out))
			return;
		memcpy(&v, out + 16, 8);	/* entry_out.nodeid */
		if (v)
			pool_add(c->node, &c->nnode, v);
		if ((in.opcode == FUSE_CREATE || in.opcode == FUSE_TMPFILE) &&
		    len >= sizeof(out)) {
			memcpy(&v, out + 16 + sizeof(struct fuse_entry_out), 8);
			pool_add(c->fh, &c->nfh, v);
		}
		break;
	case FUSE_OPEN: case FUSE_OPENDIR:
		memcpy(&v, out + 16, 8);	/* open_out.fh */
		pool_add(c->fh, &c->nfh, v);
		break;
	}
}

static void allow(u32 off, u32 len)
{
	memset(g_allow + off, 1, len);
}

/*
 * Did the device change a byte of guest memory it was not allowed to?
 * Blocks equal to the snapshot (nearly all of them) are passed by one
 * memcmp() each: a byte loop over all of guest memory on every kick was
 * a fifth of the fuzzer's time, each comparison traced for coverage.
 */
static bool written_outside_allowed(void)
{
	const u32 blk = 256;
	u32 b, i;

	for (b = 0; b < MEM; b += blk) {
		if (!memcmp(g_mem + b, g_snap + b, blk))
			continue;
		for (i = b; i < b + blk; i++)
			if (g_mem[i] != g_snap[i] && !g_allow[i])
				return true;
	}
	return false;
}

static void kick(struct ctx *c, unsigned int idx)
{
	struct vqf_fsdev_stats a, b;
	struct mq *q = idx < NQ ? &c->q[idx] : NULL;
	bool live = q && q->run && !q->broken, alias = false;
	unsigned int lim = 0, i, j, nz = 0;
	u64 pops, term, served;
	u16 navail;
	u32 off;
	int r;

	memcpy(g_snap, g_mem, MEM);
	if (live) {
		navail = (u16)(r16(q->a.avail + 2) - q->last);
		lim = navail <= q->num ? navail : 0;
		memset(g_cover, 0, MEM);
		for (i = 0; i < NQ; i++) {
			const struct mq *o = &c->q[i];

			if (!o->desc)
				continue;
			FZ_CHECK(in_mem(o->a.desc, 16ULL * o->num, &off));
			cover(off, 16 * o->num, C_READ, 0);
			FZ_CHECK(in_mem(o->a.avail, 6 + 2 * o->num, &off));
			cover(off, 6 + 2 * o->num, C_READ, 0);
			FZ_CHECK(in_mem(o->a.used, 6 + 8 * o->num, &off));
			cover(off, 6 + 8 * o->num, C_READ, 0);
		}
		for (i = 0; i < lim; i++) {
			u16 h = r16(q->a.avail + 4 + 2 * ((q->last + i) %
							 q->num));

			alias |= walk(c, q, h, &g_walk[i]);
		}
		for (i = 0; i < lim; i++)
			for (j = 0; j < g_walk[i].nws; j++)
				alias |= cover(g_walk[i].ws_off[j],
					       g_walk[i].ws_len[j], C_WRITE,
					       C_READ | C_WRITE);
	}

	vqf_fsdev_get_stats(c->d, &a);
	r = vqf_fsdev_kick(c->d, idx);
	vqf_fsdev_get_stats(c->d, &b);
	if (!live) {
		FZ_CHECK(r == -ENOENT);
		FZ_CHECK(!memcmp(&a, &b, sizeof(a)));
		FZ_CHECK(!memcmp(g_snap, g_mem, MEM));
		return;
	}
	FZ_CHECK(r == 0);
	FZ_CHECK(b.kicks == a.kicks + 1);
	pops = (b.requests + b.hiprio + b.chain_errors) -
	       (a.requests + a.hiprio + a.chain_errors);
	FZ_CHECK(pops <= lim);
	FZ_CHECK(idx == 0 ? b.requests == a.requests : b.hiprio == a.hiprio);
	FZ_CHECK(b.queue_broken - a.queue_broken <= 1);
	if (b.queue_broken != a.queue_broken) {
		q->broken = true;
		FZ_CHECK(vqf_fsdev_get_status(c->d) & VQF_S_NEEDS_RESET);
	} else {
		FZ_CHECK(pops == lim);
	}
	if (pops)
		FZ_CHECK(r16(q->a.used + 2) == (u16)(q->used + pops));

	memset(g_allow, 0, MEM);
	in_mem(q->a.used, 4, &off);
	allow(off, 4);				/* flags, idx */
	allow(off + 4 + 8 * q->num, 2);		/* avail_event */
	for (i = 0; i < pops && !alias; i++) {
		u64 e = q->a.used + 4 + 8 * ((q->used + i) % q->num);
		u32 id = r32(e), len = r32(e + 4);
		struct walk *w = NULL;

		in_mem(e, 8, &off);
		allow(off, 8);
		FZ_CHECK(id < q->num);
		FZ_CHECK(len == 0 || len >= sizeof(struct fuse_out_header));
		nz += len != 0;
		/* Returned once per time it was made available. */
		for (j = 0; j < lim; j++) {
			if (!g_walk[j].matched && g_walk[j].head == id) {
				w = &g_walk[j];
				break;
			}
		}
		FZ_CHECK(w);
		w->matched = true;
		if (!w->ok)
			continue;
		for (j = 0; j < w->nws; j++)
			allow(w->ws_off[j], w->ws_len[j]);
		FZ_CHECK(len <= w->wr);
		if (len >= sizeof(struct fuse_out_header)) {
			struct fuse_out_header oh;

			gather(w, &oh, sizeof(oh));
			if (g_trace)
				fprintf(stderr,
					"q%u head %u op %u: len %u error %d\n",
					idx, id, w->hdrn >= 8 ? r32hdr(w) : 0,
					len, oh.error);
			FZ_CHECK(oh.len == len);
			FZ_CHECK(oh.error <= 0 && oh.error >= -4095);
			FZ_CHECK(!oh.error || len == sizeof(oh));
			/* The parser copies the header only when all 40
			 * bytes are there; before that the reply's unique
			 * is 0.
			 */
			if (w->hdrn == sizeof(struct fuse_in_header))
				FZ_CHECK(!memcmp(&oh.unique, w->hdr + 8, 8));
			learn(c, w, len);
		} else if (w->wr >= sizeof(struct fuse_out_header) &&
			   w->hdrn == sizeof(struct fuse_in_header) &&
			   w->nseg <= q->num + 16) {
			/* Room for a reply and no -ENOBUFS (fsdev.c gives a
			 * chain num + 16 segments): only NOREPLY opcodes
			 * come back empty.
			 */
			u32 op;

			memcpy(&op, w->hdr + 4, 4);
			FZ_CHECK(!replies_to(op));
		}
	}
	/* With aliasing, later replies may overwrite earlier used entries:
	 * only the final used idx (checked above) is reliable.
	 */
	/* Each served chain ends in one terminal counter, except a refused
	 * NOREPLY request (counted in refused only, see docs/fuzzing.md).
	 */
	term = (b.replies + b.no_reply + b.refused_no_room +
		b.backend_errors) - (a.replies + a.no_reply +
				     a.refused_no_room + a.backend_errors);
	served = (b.requests + b.hiprio) - (a.requests + a.hiprio);
	FZ_CHECK(term <= served && served <= term + (b.refused - a.refused));
	if (!alias) {
		FZ_CHECK(b.replies - a.replies == nz);
		FZ_CHECK(pops - nz >= term - (b.replies - a.replies) +
				      (b.chain_errors - a.chain_errors));
		FZ_CHECK(!written_outside_allowed());
	}
	q->used += pops;
	q->last += pops;
	check_host();
}

/* ---- the input ------------------------------------------------------ */

static void step_config(struct ctx *c)
{
	struct vqf_virtio_fs_config fc;

	vqf_fsdev_read_config(c->d, &fc);
	FZ_CHECK(!strncmp((const char *)fc.tag, TAG, sizeof(fc.tag)));
	FZ_CHECK(le32_to_cpu(fc.num_request_queues) == 2);
	FZ_CHECK(fc.notify_buf_size == 0);
	FZ_CHECK(vqf_fsdev_features(c->d) ==
		 ((1ULL << VIRTIO_F_VERSION_1) |
		  (1ULL << VIRTIO_RING_F_EVENT_IDX) |
		  (1ULL << VIRTIO_RING_F_INDIRECT_DESC)));
	FZ_CHECK(vqf_fsdev_first_request_queue(c->d) == 1);
	FZ_CHECK(vqf_fsdev_num_queues(c->d) == 3);
}

static void run(struct ctx *c, struct fz *f)
{
	unsigned int n;

	for (n = 0; f->n && n < MAXSTEPS; n++) {
		u8 op = fz_u8(f) % OP_NR, x, y;
		u16 off;

		switch (op) {
		case OP_POKE:
			off = fz_u16(f) % MEM;
			x = fz_u8(f);
			fz_take(f, g_mem + off, x < MEM - off ? x : MEM - off);
			break;
		case OP_RAW:
			step_raw(c, f);
			break;
		case OP_REQ:
			step_req(c, f);
			break;
		case OP_PUBLISH:
			x = fz_u8(f) % 4;
			y = fz_u8(f);
			if (x < NQ && c->q[x].desc) {
				c->q[x].avail += y;
				w16(c->q[x].a.avail + 2, c->q[x].avail);
			}
			break;
		case OP_KICK:
			x = fz_u8(f);
			kick(c, x == 255 ? 200 : x % 4);
			break;
		case OP_STATUS:
			set_status(c, fz_u8(f));
			break;
		case OP_FEATURES: {
			u64 v = fz_u64(f);
			int r = vqf_fsdev_set_features(c->d, v);

			FZ_CHECK(r == 0 || r == -EPERM || r == -EINVAL);
			if (!r)
				c->features = v;
			break;
		}
		case OP_SETQ:
			x = fz_u8(f);
			y = fz_u8(f);
			off = fz_u16(f) % MEM;
			setq(c, x % 4, 1u << (y % 8), BASE + (off & ~15u));
			break;
		case OP_BRINGUP:
			bringup(c, fz_u8(f));
			break;
		case OP_CONFIG:
			step_config(c);
			break;
		}
	}
}

static int hub_serve(void *ctx, void *req, size_t len,
		     vqf_backend_reply_fn reply, void *rctx)
{
	return vqf_hub_process(ctx, req, len, reply, rctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vqf_pt_config pc = {
		.timeout = 0,
		.io = VQF_PT_IO_PREAD,	/* no per-thread rings outliving us */
		.nodev = true,		/* no random device nodes as root */
	};
	struct vqf_fsdev_cfg dc = {
		.tag = TAG,
		.num_request_queues = 2,
		.queue_size_max = QNUM_MAX,
		.threads = 0,
		.inline_kick = true,
	};
	const struct fuse_lowlevel_ops *ops;
	static struct ctx c;
	bool was_open[FD_WINDOW];
	size_t op_size;
	struct fz f;
	int fd0, i;
	u8 cfg;

	/* The fds from the lowest free one up: none may stay open. */
	fd0 = dup(0);
	FZ_CHECK(fd0 >= 0);
	close(fd0);
	for (i = 0; i < FD_WINDOW; i++)
		was_open[i] = fcntl(fd0 + i, F_GETFD) >= 0;
	/* After LLVMFuzzerInitialize libFuzzer installs its own SIGXFSZ
	 * handler (-handle_xfsz): a write past FILE_CAP must fail with
	 * EFBIG, not end the run.
	 */
	if (!g_xfsz_ignored) {
		signal(SIGXFSZ, SIG_IGN);
		g_xfsz_ignored = true;
	}
	fz_init(&f, data, size);
	memset(&c, 0, sizeof(c));
	c.bufpos = BUF0;
	memset(g_mem, 0, MEM);
	build_root();

	pc.source = g_root;
	c.pt = vqf_pt_new(&pc);
	FZ_CHECK(c.pt);
	ops = vqf_pt_ops(&op_size);
	c.be = vqf_backend_new(ops, op_size, c.pt, NULL);
	FZ_CHECK(c.be);
	dc.be = c.be;
	dc.serve = NULL;
	dc.ver_table = NULL;
	cfg = fz_u8(&f);
	if (cfg & 128) {
		struct vqf_hub_cfg hc = { .be = c.be, .nr_slots = 16 };

		FZ_CHECK(vqf_hub_new(&hc, &c.hub) == 0);
		FZ_CHECK(vqf_hub_port_new(c.hub, &c.port) == 0);
		dc.serve = hub_serve;
		dc.serve_ctx = c.port;
		dc.ver_table = vqf_hub_table(c.hub, &dc.ver_table_size);
	}
	FZ_CHECK(vqf_fsdev_new(&dc, &g_map, &c.d) == 0);

	if (!(cfg & 64))
		bringup(&c, cfg);
	run(&c, &f);

	vqf_fsdev_free(c.d);
	vqf_hub_port_free(c.port);
	vqf_hub_free(c.hub);
	vqf_backend_free(c.be);
	vqf_pt_free(c.pt);
	check_host();
	for (i = 0; i < FD_WINDOW; i++) {
		char p[64], t[PATH_MAX];
		ssize_t n;

		if ((fcntl(fd0 + i, F_GETFD) >= 0) == was_open[i])
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd0 + i);
		n = readlink(p, t, sizeof(t) - 1);
		t[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "fd %d: %s\n", fd0 + i, n > 0 ? t : "?");
		FZ_CHECK(!"an fd opened by the input is still open");
	}
	return 0;
}
