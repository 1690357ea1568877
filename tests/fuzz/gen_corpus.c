// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gen_corpus - seed corpora for every harness in tests/fuzz/, in each
 * harness's input format, built from valid (and deliberately invalid)
 * inputs the project already describes:
 *
 *   fuzz_dev_parse     every request of tests/vectors/dev_vectors.h (one per
 *                      opcode and each rejection reason), whole and split
 *   fuzz_req_complete  well-formed replies for the reply shapes virtio-fs
 *                      uses (fixed args, argvar entryver present/absent,
 *                      pages, errors)
 *   fuzz_version       programs of lookups, bumps, checks, renames, forgets
 *   fuzz_vring_dev     rings written by the driver half: direct and
 *                      indirect chains, wrap-around indices, two regions
 *   fuzz_vring_drv     buffers plus a device that answers in order
 *   fuzz_dax_dev       mappings set up, upgraded, looked up, removed, and
 *                      every rejection once
 *   fuzz_device        step programs: bring-up, INIT, then every opcode
 *                      the passthrough serves after what it needs (a
 *                      lookup, an open); raw, split and indirect chains,
 *                      unpublished entries, a runaway avail idx, resets
 *   fuzz_vhost         QEMU's vhost-user handshake with 3 rings and a stop;
 *                      a handshake followed by refused messages
 *
 * Usage: gen_corpus OUTDIR  (creates OUTDIR/<harness>/seed-NNN).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vqf_dev.h"
#include "vqf_dax_dev.h"
#include "vqf_fuse_ext.h"
#include "vqf_vring_drv.h"
#include "vectors/dev_vectors.h"

static const char *outdir;

struct out {
	unsigned char buf[32768];
	size_t n;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->buf)) {
		fprintf(stderr, "gen_corpus: seed too large\n");
		exit(1);
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
}

static void put8(struct out *o, unsigned int v)
{
	unsigned char b = v;

	put(o, &b, 1);
}

static void put16(struct out *o, unsigned int v)
{
	put8(o, v);
	put8(o, v >> 8);
}

static void put32(struct out *o, u32 v)
{
	put16(o, v);
	put16(o, v >> 16);
}

static void put64(struct out *o, u64 v)
{
	put32(o, v);
	put32(o, v >> 32);
}

static void mkdir_p(const char *d)
{
	if (mkdir(d, 0755) && errno != EEXIST) {
		perror(d);
		exit(1);
	}
}

static void emit(const char *target, struct out *o)
{
	static unsigned int seq;
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/%s/seed-%03u", outdir, target, seq++);
	fp = fopen(path, "wb");
	if (!fp || fwrite(o->buf, 1, o->n, fp) != o->n || fclose(fp)) {
		perror(path);
		exit(1);
	}
	o->n = 0;
}

/* ---------------------------------------------------------------------- */

static void gen_dev_parse(void)
{
	struct vqf_dev_vec_ctx *c = vqf_dev_vec_ctx();
	struct out o = { .n = 0 };
	unsigned int i;

	for (i = 0; i < vqf_dev_vectors_count(); i++) {
		const struct vqf_dev_vec *v = &vqf_dev_vecs[i];
		u32 total = vqf_dev_vec_build(v, i, c);
		unsigned int mode = (v->hiprio ? 1 : 0) | (v->uninit ? 2 : 0) |
			(v->max_write == 4096 ? 4 : 0) |
			(v->name_max == 16 ? 8 : 0) |
			(v->forget_max == 2 ? 16 : 0);

		if (total > 8192)
			continue;	/* keep the corpus small */
		put8(&o, mode);
		put64(&o, v->flags);
		put8(&o, 0);
		put(&o, c->img, total);
		emit("fuzz_dev_parse", &o);
		/* the same split after the header and inside the first arg */
		put8(&o, mode);
		put64(&o, v->flags);
		put8(&o, 2);
		put16(&o, sizeof(struct fuse_in_header));
		put16(&o, sizeof(struct fuse_in_header) + 3);
		put(&o, c->img, total);
		emit("fuzz_dev_parse", &o);
	}
}

/* ---------------------------------------------------------------------- */

static void reply(struct out *o, u32 len, s32 error, u32 payload)
{
	struct fuse_out_header h = { .len = len, .error = error,
				     .unique = 0x1234 };
	u32 k;

	put(o, &h, sizeof(h));
	for (k = 0; k < payload; k++)
		put8(o, k * 7);
}

static void gen_req_complete(void)
{
	struct out o = { .n = 0 };
	const u32 h = sizeof(struct fuse_out_header);

	/* GETATTR: one fixed out arg */
	put8(&o, 1 | 1 << 2); put8(&o, 0); put16(&o, 104); put32(&o, h + 104);
	reply(&o, h + 104, 0, 104);
	emit("fuzz_req_complete", &o);
	/* LOOKUP: entry_out + argvar entryver, present and absent */
	put8(&o, 1 | 2 << 2); put8(&o, 1); put16(&o, 128); put16(&o, 16);
	put32(&o, h + 144);
	reply(&o, h + 144, 0, 144);
	emit("fuzz_req_complete", &o);
	put8(&o, 1 | 2 << 2); put8(&o, 1); put16(&o, 128); put16(&o, 16);
	put32(&o, h + 128);
	reply(&o, h + 128, 0, 128);
	emit("fuzz_req_complete", &o);
	/* an error reply, and one that carries payload (invalid) */
	put8(&o, 1 | 1 << 2); put8(&o, 0); put16(&o, 104); put32(&o, h);
	reply(&o, h, -2, 0);
	emit("fuzz_req_complete", &o);
	put8(&o, 1 | 1 << 2); put8(&o, 0); put16(&o, 104); put32(&o, h + 8);
	reply(&o, h + 8, -2, 8);
	emit("fuzz_req_complete", &o);
	/* READ into two page descs, short reply, zeroing */
	put8(&o, 1 | 1 << 2); put8(&o, 2 | 4 | 1); put16(&o, 512);
	put8(&o, 1); put16(&o, 100); put16(&o, 300); put16(&o, 0);
	put16(&o, 212);
	put32(&o, h + 200);
	reply(&o, h + 200, 0, 200);
	emit("fuzz_req_complete", &o);
	/* FORGET: noreply */
	put8(&o, 1); put8(&o, 8); put32(&o, 0);
	emit("fuzz_req_complete", &o);
}

/* ---------------------------------------------------------------------- */

/* fuzz_version ops: see the switch in fuzz_version.c (op % 14). */
enum { V_ALLOC, V_RELEASE, V_BUMP, V_FORGET, V_HOST, V_PARSE, V_ENTRY,
       V_ATTR, V_LOCAL, V_CHECK, V_DSET, V_DCHECK, V_SLOT, V_FILL };

static void vop(struct out *o, unsigned int op, unsigned int obj)
{
	put8(o, op);
	put8(o, obj);
}

/* pick_index(): k >> 5 >= 4 selects k % (n + 2) */
static void vidx(struct out *o, unsigned int idx)
{
	put8(o, 0x80 | idx);
}

static void gen_version(void)
{
	struct out o = { .n = 0 };
	unsigned int i;

	/* lookup, check, change, check, revalidate, dentries */
	put8(&o, 14); put8(&o, 16);
	for (i = 0; i < 3; i++)
		vop(&o, V_ALLOC, 0);
	for (i = 0; i < 3; i++) {
		vop(&o, V_ENTRY, i); vidx(&o, i + 1); put64(&o, 1);
		vop(&o, V_ATTR, i);
		vop(&o, V_CHECK, i);
	}
	vop(&o, V_DSET, 1); vop(&o, V_DCHECK, 1);
	vop(&o, V_DSET | 16, 2); vop(&o, V_DCHECK, 2);
	vop(&o, V_BUMP, 0); vidx(&o, 1);
	vop(&o, V_DCHECK, 1); vop(&o, V_DCHECK, 2);
	vop(&o, V_BUMP, 0); vidx(&o, 2);
	vop(&o, V_CHECK, 1); vop(&o, V_DCHECK, 1);
	vop(&o, V_ATTR | 16, 1); vop(&o, V_CHECK, 1);
	vop(&o, V_LOCAL, 1); vop(&o, V_ATTR, 1); vop(&o, V_CHECK, 1);
	emit("fuzz_version", &o);

	/* table full, recycling through forget, hostile host */
	put8(&o, 6); put8(&o, 6);
	for (i = 0; i < 7; i++)
		vop(&o, V_ALLOC, 0);
	vop(&o, V_FORGET | 16, 0); put8(&o, 1); put8(&o, 1); put8(&o, 3);
	put64(&o, 1);
	vop(&o, V_ALLOC, 0);
	vop(&o, V_ENTRY, 0); vidx(&o, 3); put64(&o, 3);
	vop(&o, V_HOST, 0); put8(&o, 3); put64(&o, 1);
	vop(&o, V_CHECK, 0);
	vop(&o, V_ENTRY, 0); put8(&o, 0); put64(&o, 1);	/* index == n */
	vop(&o, V_ENTRY, 1); put8(&o, 0x40); put64(&o, 1);	/* U64_MAX */
	vop(&o, V_SLOT, 0); put8(&o, 0x20);
	vop(&o, V_FILL, 0); vidx(&o, 2);
	vop(&o, V_RELEASE, 0); vidx(&o, 0);
	vop(&o, V_RELEASE, 0); vidx(&o, 2);
	vop(&o, V_RELEASE, 0); vidx(&o, 2);
	emit("fuzz_version", &o);

	/* entryver lengths */
	put8(&o, 8); put8(&o, 8);
	for (i = 0; i < 18; i += 1) {
		unsigned int k;

		vop(&o, V_PARSE, 0);
		put8(&o, i);
		for (k = 0; k < i; k++)
			put8(&o, k == 0 ? 1 : k == 8 ? 1 : 0);
	}
	emit("fuzz_version", &o);
}

/* ---------------------------------------------------------------------- */

#define VBASE	0x10000ULL
#define VMEM	16384

static void gen_vring_dev_one(unsigned int log2, unsigned int feat,
			      u16 start, u16 split, unsigned int nbuf,
			      bool indirect)
{
	static unsigned char mem[VMEM];
	struct vqf_vring_indirect_ops iops;
	struct vqf_vring_ipool pool;
	struct vqf_vring_drv_cfg cfg;
	struct vqf_vring_drv *vq;
	struct vqf_gmem map;
	struct out o = { .n = 0 };
	unsigned int i;
	u64 need;

	memset(mem, 0, sizeof(mem));
	memset(&cfg, 0, sizeof(cfg));
	cfg.num = 1u << log2;
	if (feat & 1)
		cfg.features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (feat & 2)
		cfg.features |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	if (feat & 4)
		cfg.features |= 1ULL << VIRTIO_F_NOTIFY_ON_EMPTY;
	cfg.start_idx = start;
	need = vqf_vring_layout(cfg.num, VBASE, 4, &cfg.addr);
	vqf_gmem_init(&map);
	vqf_gmem_add(&map, VBASE, VMEM, mem);
	cfg.mem = &map;
	if (indirect) {
		vqf_vring_ipool_init(&pool, mem + 4096, VBASE + 4096, 4, 8);
		vqf_vring_ipool_ops(&pool, &iops);
		cfg.iops = &iops;
	}
	if (vqf_vring_drv_create(&cfg, &vq)) {
		fprintf(stderr, "gen_corpus: driver create failed\n");
		exit(1);
	}
	for (i = 0; i < nbuf; i++) {
		/* header + arg readable, header + payload writable; the
		 * buffers straddle @split when it is set
		 */
		struct vqf_vring_gseg rd[2] = {
			{ VBASE + 8192 + 256 * i, 40 },
			{ VBASE + 8192 + 256 * i + 40, 16 },
		};
		struct vqf_vring_gseg wr[2] = {
			{ VBASE + 12288 + 512 * i, 16 },
			{ VBASE + 12288 + 512 * i + 16, 120 },
		};

		if (vqf_vring_drv_add(vq, rd, 2, wr, 2, &mem[i]))
			break;
	}
	(void)need;
	put8(&o, log2);
	put8(&o, feat);
	put16(&o, start);
	put16(&o, split);
	put(&o, mem, VMEM);
	emit("fuzz_vring_dev", &o);
	vqf_vring_drv_destroy(vq);
	if (indirect)
		vqf_vring_ipool_fini(&pool);
}

static void gen_vring_dev(void)
{
	gen_vring_dev_one(2, 0, 0, 0, 3, false);
	gen_vring_dev_one(3, 1, 65534, 0, 6, false);
	gen_vring_dev_one(2, 2, 0, 0, 3, true);
	gen_vring_dev_one(4, 7, 100, 12288 + 8, 5, true);
	gen_vring_dev_one(0, 0, 0, 8192 + 20, 1, false);
}

static void gen_vring_drv(void)
{
	struct out o = { .n = 0 };
	unsigned int i;

	/* four 1+1 buffers; the device answers them in order */
	put8(&o, 3); put8(&o, 0); put16(&o, 0); put8(&o, 4);
	for (i = 0; i < 4; i++) {
		put8(&o, 1 | 1 << 2); put16(&o, 40); put16(&o, 60);
	}
	put8(&o, 4);
	for (i = 0; i < 4; i++) {
		put16(&o, 2 * i); put32(&o, 16);
	}
	put8(&o, 0);
	emit("fuzz_vring_drv", &o);
	/* the same, strict lengths, EVENT_IDX, near the wrap */
	put8(&o, 3); put8(&o, 3); put16(&o, 65533); put8(&o, 4);
	for (i = 0; i < 4; i++) {
		put8(&o, 1 | 1 << 2); put16(&o, 40); put16(&o, 60);
	}
	put8(&o, 2);
	put16(&o, 0); put32(&o, 61);
	put16(&o, 2); put32(&o, 10);
	put8(&o, 0);
	put8(&o, 2);
	put16(&o, 4); put32(&o, 0);
	put16(&o, 4); put32(&o, 0);
	put8(&o, 0);
	emit("fuzz_vring_drv", &o);
}

/* fuzz_dax_dev ops: o & 3 = setup, remove, lookup, reset (o = 0xff). */
static void dax_setup(struct out *o, u64 moff, u64 len, u64 foff, u64 flags)
{
	struct fuse_setupmapping_in in = {
		.fh = 1, .foffset = foff, .len = len, .flags = flags,
		.moffset = moff,
	};

	put8(o, 0x00);
	put64(o, 1ULL << 30);		/* file size */
	put64(o, ~0ULL);		/* max bytes */
	put8(o, 1);			/* writable */
	put(o, &in, sizeof(in));
}

static void dax_remove(struct out *o, unsigned int n, const u64 *spans)
{
	unsigned int i;

	put8(o, 0x01);
	put8(o, n);
	for (i = 0; i < n; i++) {
		put64(o, spans[2 * i]);
		put64(o, spans[2 * i + 1]);
	}
}

static void gen_dax_dev(void)
{
	const u64 a = 4096, r = FUSE_SETUPMAPPING_FLAG_READ,
		  w = FUSE_SETUPMAPPING_FLAG_WRITE;
	const u64 two[] = { 0, 2 * a, 4 * a, a };
	struct out o = { .n = 0 };

	/* 4 KiB alignment, 16 units, 4 slots: map, upgrade, lookup, remove */
	put8(&o, 0); put8(&o, 15); put8(&o, 3);
	dax_setup(&o, 0, 2 * a, 0, r);
	dax_setup(&o, 4 * a, a, 8 * a, r);
	dax_setup(&o, 0, 2 * a, 0, r | w);
	put8(&o, 0x02); put64(&o, a);
	dax_remove(&o, 2, two);
	put8(&o, 0x02); put64(&o, a);
	emit("fuzz_dax_dev", &o);

	/* every rejection once */
	put8(&o, 1); put8(&o, 7); put8(&o, 0);
	dax_setup(&o, 0, 0, 0, r);			/* len 0 */
	dax_setup(&o, 100, 8192, 0, r);			/* unaligned */
	dax_setup(&o, 0, 8192, 0, 4);			/* flags */
	dax_setup(&o, 8 * 8192, 8192, 0, r);		/* past window */
	dax_setup(&o, 0, 8192, 1ULL << 31, r);		/* past EOF */
	dax_setup(&o, 0, 8192, 0, r);
	dax_setup(&o, 0, 16384, 0, r);			/* overlap */
	dax_setup(&o, 8192, 8192, 0, r);		/* no slot */
	dax_remove(&o, 0, NULL);			/* empty */
	dax_remove(&o, 2, (const u64 []){ 0, 8192, 0, 8192 }); /* dup */
	put8(&o, 0xff);
	emit("fuzz_dax_dev", &o);
}

/* ---------------------------------------------------------------------- */
/* fuzz_vhost: message records (see the top of fuzz_vhost.c). */

/* ctl: descriptors | kind << 4 | 0x80 (NEED_REPLY). */
static void vh_rec(struct out *o, unsigned int ctl, unsigned int req,
		   const void *p, unsigned int n)
{
	put8(o, ctl);
	put8(o, req);
	put16(o, n);
	if (n)
		put(o, p, n);
}

static void vh_u64(struct out *o, unsigned int ctl, unsigned int req,
		   u64 v)
{
	vh_rec(o, ctl, req, &v, 8);
}

static void vh_state(struct out *o, unsigned int req, u32 idx, u32 num)
{
	u32 st[2] = { idx, num };

	vh_rec(o, 0x80, req, st, 8);
}

/*
 * What QEMU 7.2 sends for vhost-user-fs-pci with 2 request queues, with
 * protocol features @pf; with BACKEND_REQ the channel and, with SHMEM,
 * GET_SHMEM_CONFIG follow them (as the patched QEMU sends them).
 */
static void vh_handshake_pf(struct out *o, unsigned int nrings, u64 pf)
{
	const u64 ua = 0x7f0000000000ULL;
	u64 mem[5] = { 1, 0, 65536, ua, 0 };
	unsigned int i;

	mem[0] = 1;	/* nregions 1, padding 0 */
	vh_rec(o, 0, 1, NULL, 0);			/* GET_FEATURES */
	vh_rec(o, 0, 15, NULL, 0);			/* GET_PROTOCOL_F. */
	vh_u64(o, 0, 16, pf);				/* MQ | REPLY_ACK */
	if (pf & (1ULL << 5))
		vh_rec(o, 0xb1, 21, NULL, 0);		/* the channel */
	if (pf & (1ULL << 20))
		vh_rec(o, 0, 44, NULL, 0);		/* GET_SHMEM_CONFIG */
	vh_rec(o, 0, 17, NULL, 0);			/* GET_QUEUE_NUM */
	vh_rec(o, 0x80, 3, NULL, 0);			/* SET_OWNER */
	vh_u64(o, 0x80, 2, (1ULL << 32) | (1ULL << 29) | (1ULL << 30));
	vh_rec(o, 0x81, 5, mem, sizeof(mem));		/* SET_MEM_TABLE */
	for (i = 0; i < nrings; i++) {
		u64 a[5] = { i, ua + i * 4096, ua + i * 4096 + 2048,
			     ua + i * 4096 + 1024, 0 };

		vh_state(o, 8, i, 8);			/* NUM */
		vh_state(o, 10, i, 0);			/* BASE */
		vh_rec(o, 0x80, 9, a, sizeof(a));	/* ADDR */
		vh_u64(o, 0x91, 12, i);			/* KICK, eventfd */
		vh_u64(o, 0x91, 13, i);			/* CALL, eventfd */
	}
	for (i = 0; i < nrings; i++)
		vh_state(o, 18, i, 1);			/* ENABLE */
	put8(o, 0);
	put8(o, 0xff);					/* sync: start */
}

static void vh_handshake(struct out *o, unsigned int nrings)
{
	vh_handshake_pf(o, nrings, 9);
}

static void gen_vhost(void)
{
	const char *T = "fuzz_vhost";
	struct out o = { .n = 0 };
	u64 mem[9] = { 2, 0, 65536, 0x1000, 0, 4096, 8192, 0x2000, 0 };
	unsigned int i;

	vh_handshake(&o, 3);
	for (i = 0; i < 3; i++)
		vh_state(&o, 18, i, 0);
	for (i = 0; i < 3; i++)
		vh_state(&o, 11, i, 0);			/* GET_VRING_BASE */
	emit(T, &o);

	/* Refusals: sizes, fds, indices, overlapping regions. */
	vh_handshake(&o, 2);
	vh_rec(&o, 0x80, 2, mem, 4);			/* short */
	vh_u64(&o, 0x80, 12, 1);			/* kick, no fd */
	vh_u64(&o, 0x8c, 13, 1);			/* 12 fds */
	vh_state(&o, 8, 9, 8);				/* index */
	vh_rec(&o, 0x82, 5, mem, 8 + 64);		/* overlap */
	vh_rec(&o, 0xa1, 5, mem, 8 + 32);		/* empty memfd */
	vh_rec(&o, 0xb1, 5, mem, 8 + 32);		/* pipe */
	vh_rec(&o, 0x80, 99, NULL, 0);			/* unknown */
	put8(&o, 0x40); put8(&o, 1); put16(&o, 0); put32(&o, 2);
	emit(T, &o);

	/* SHMEM: the channel, the config, a start (the table's map), a
	 * stop; then the refusals of the two messages.
	 */
	vh_handshake_pf(&o, 3, 9 | (1ULL << 5) | (1ULL << 10) | (1ULL << 20));
	for (i = 0; i < 3; i++)
		vh_state(&o, 11, i, 0);
	vh_rec(&o, 0x91, 21, NULL, 0);			/* an eventfd */
	vh_rec(&o, 0x80, 21, NULL, 0);			/* no fd */
	vh_u64(&o, 0x80, 44, 0);			/* a payload */
	vh_u64(&o, 0, 16, 9);
	vh_rec(&o, 0x80, 44, NULL, 0);			/* not negotiated */
	vh_rec(&o, 0xb1, 21, NULL, 0);
	emit(T, &o);
}

/* ---------------------------------------------------------------------- */
/* fuzz_device: step programs (see the top of fuzz_device.c). */

enum {
	D_POKE, D_RAW, D_REQ, D_PUBLISH, D_KICK, D_STATUS, D_FEATURES,
	D_SETQ, D_BRINGUP, D_CONFIG
};

/* Queue size 32, EVENT_IDX, INDIRECT_DESC, both request queues. */
#define D_CFG		(4 | 8 | 16 | 32)
#define D_SHAPE		(3 << 2)	/* one readable piece, 4112 writable */
#define D_NODE(k)	(k)		/* sel: k-th learnt nodeid */
#define D_PATCH(k)	((k) << 4)	/* sel: patch the k-th learnt value */
#define D_HX_NODE	2		/* hx: the patch is a nodeid */
#define D_HX_OFS(o)	(((o) / 8) << 2)
#define D_GUESS_NODE(k)	((1ULL << 32) | ((k) + 1))
#define D_GUESS_FH(k)	((1ULL << 32) | (k))

static void d_req(struct out *o, unsigned int q, unsigned int shape,
		  unsigned int op, unsigned int sel, unsigned int hx,
		  const void *body, unsigned int blen)
{
	put8(o, D_REQ);
	put8(o, q);
	put8(o, shape);
	put8(o, op);
	put8(o, sel);
	put8(o, hx);
	put16(o, blen);
	put(o, body, blen);
	put8(o, D_KICK);
	put8(o, q);
}

/* A request on request queue 1 with room for any reply. */
static void d_op(struct out *o, unsigned int op, unsigned int sel,
		 unsigned int hx, const void *body, unsigned int blen)
{
	d_req(o, 1, D_SHAPE, op, sel, hx, body, blen);
}

/* Appends @n1 and (if any) @n2, NUL-terminated, at @b + @k: the new end. */
static unsigned int put_names(unsigned char *b, unsigned int k,
			      const char *n1, const char *n2)
{
	memcpy(b + k, n1, strlen(n1) + 1);
	k += strlen(n1) + 1;
	if (n2) {
		memcpy(b + k, n2, strlen(n2) + 1);
		k += strlen(n2) + 1;
	}
	return k;
}

static void d_name(struct out *o, unsigned int op, unsigned int sel,
		   const void *arg, unsigned int alen, const char *n1,
		   const char *n2)
{
	unsigned char b[512];
	unsigned int k;

	memcpy(b, arg, alen);
	k = put_names(b, alen, n1, n2);
	d_op(o, op, sel, 0, b, k);
}

static void d_init_body(struct fuse_init_in *ii)
{
	memset(ii, 0, sizeof(*ii));
	ii->major = FUSE_KERNEL_VERSION;
	ii->minor = FUSE_KERNEL_MINOR_VERSION;
	ii->max_readahead = 65536;
	ii->flags = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS | FUSE_BIG_WRITES |
		    FUSE_DONT_MASK | FUSE_FLOCK_LOCKS | FUSE_DO_READDIRPLUS |
		    FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES;
}

/* Seeds through the hub (cfg bit 7), with versions asked for at INIT. */
static bool d_hub;

/* Bring-up, INIT and LOOKUP "f" (the first learnt nodeid). */
static void d_start(struct out *o)
{
	struct fuse_init_in ii;

	put8(o, D_CFG | (d_hub ? 128 : 0));
	d_init_body(&ii);
	if (d_hub) {
		ii.flags |= FUSE_INIT_EXT;
		ii.flags2 = VQF_FUSE_INIT_SHARED_VERSION;
	}
	d_op(o, FUSE_INIT, 0, 0, &ii, sizeof(ii));
	d_op(o, FUSE_LOOKUP, 0, 0, "f", 2);
}

/* ... and OPEN it read-write (the first learnt file handle). */
static void d_start_open(struct out *o)
{
	struct fuse_open_in oi = { .flags = O_RDWR };

	d_start(o);
	d_op(o, FUSE_OPEN, D_NODE(1), 0, &oi, sizeof(oi));
}

static void d_lk(struct out *o, unsigned int op, unsigned int type)
{
	struct fuse_lk_in lk = {
		.owner = 42,
		.lk = { .start = 0, .end = 100, .type = type, .pid = 1 },
	};

	d_op(o, op, D_NODE(1) | D_PATCH(1), 0, &lk, sizeof(lk));
}

static void gen_device_set(void)
{
	const char *T = "fuzz_device";
	struct out o = { .n = 0 };
	unsigned char b[512];

	/* Every opcode the passthrough serves, after what it needs. */
	d_start(&o);
	emit(T, &o);
	{
		struct fuse_forget_in fi = { .nlookup = 1 };

		d_start(&o);
		d_req(&o, 0, 0, FUSE_FORGET, D_NODE(1), 0, &fi, sizeof(fi));
		d_op(&o, FUSE_GETATTR, D_NODE(1), 0, b, 0);
		emit(T, &o);
	}
	{
		struct fuse_getattr_in gi = { 0 };

		d_start(&o);
		d_op(&o, FUSE_GETATTR, D_NODE(1), 0, &gi, sizeof(gi));
		d_op(&o, FUSE_GETATTR, 0, 0, &gi, sizeof(gi));
		emit(T, &o);
	}
	{
		struct fuse_setattr_in si = {
			.valid = FATTR_SIZE | FATTR_MODE | FATTR_MTIME,
			.size = 3, .mode = 0600, .mtime = 12345,
		};

		d_start(&o);
		d_op(&o, FUSE_SETATTR, D_NODE(1), 0, &si, sizeof(si));
		emit(T, &o);
	}
	d_start(&o);
	d_op(&o, FUSE_LOOKUP, 0, 0, "l", 2);
	d_op(&o, FUSE_READLINK, D_NODE(2), 0, b, 0);
	d_op(&o, FUSE_LOOKUP, D_NODE(2), 0, "secret", 7);
	emit(T, &o);
	d_start(&o);
	d_name(&o, FUSE_SYMLINK, 0, b, 0, "sl", "../../outside/secret");
	d_op(&o, FUSE_LOOKUP, 0, 0, "sl", 3);
	emit(T, &o);
	{
		struct fuse_mknod_in mi = { .mode = S_IFREG | 0644 };

		d_start(&o);
		d_name(&o, FUSE_MKNOD, 0, &mi, sizeof(mi), "n", NULL);
		mi.mode = S_IFIFO | 0600;
		d_name(&o, FUSE_MKNOD, 0, &mi, sizeof(mi), "q", NULL);
		mi.mode = S_IFCHR | 0600;
		mi.rdev = 0x0103;
		d_name(&o, FUSE_MKNOD, 0, &mi, sizeof(mi), "z", NULL);
		emit(T, &o);
	}
	{
		struct fuse_mkdir_in mi = { .mode = 0755 };

		d_start(&o);
		d_name(&o, FUSE_MKDIR, 0, &mi, sizeof(mi), "e", NULL);
		d_name(&o, FUSE_MKDIR, D_NODE(2), &mi, sizeof(mi), "e2", NULL);
		d_name(&o, FUSE_RMDIR, 0, b, 0, "d", NULL);
		d_name(&o, FUSE_RMDIR, D_NODE(2), b, 0, "e2", NULL);
		emit(T, &o);
	}
	d_start(&o);
	d_name(&o, FUSE_UNLINK, 0, b, 0, "f", NULL);
	d_name(&o, FUSE_UNLINK, 0, b, 0, "..", NULL);
	d_op(&o, FUSE_GETATTR, D_NODE(1), 0, b, 16);
	emit(T, &o);
	{
		struct fuse_rename_in ri = { .newdir = FUSE_ROOT_ID };
		struct fuse_rename2_in r2 = { .newdir = FUSE_ROOT_ID,
					      .flags = 1 /* NOREPLACE */ };

		d_start(&o);
		d_name(&o, FUSE_RENAME, 0, &ri, sizeof(ri), "f", "g");
		d_name(&o, FUSE_RENAME2, 0, &r2, sizeof(r2), "g", "d");
		ri.newdir = D_GUESS_NODE(1);
		d_name(&o, FUSE_RENAME, 0, &ri, sizeof(ri), "g", "x");
		emit(T, &o);
	}
	{
		struct fuse_link_in li = { .oldnodeid = D_GUESS_NODE(1) };

		d_start(&o);
		memcpy(b, &li, sizeof(li));
		memcpy(b + sizeof(li), "h", 2);
		d_op(&o, FUSE_LINK, D_PATCH(1), D_HX_NODE | D_HX_OFS(0), b,
		     sizeof(li) + 2);
		emit(T, &o);
	}
	{
		struct fuse_read_in ri = { .size = 4096 };
		struct fuse_write_in wi = { .size = 5, .offset = 3 };

		d_start_open(&o);
		d_op(&o, FUSE_READ, D_NODE(1) | D_PATCH(1), 0, &ri,
		     sizeof(ri));
		memcpy(b, &wi, sizeof(wi));
		memcpy(b + sizeof(wi), "HELLO", 5);
		d_op(&o, FUSE_WRITE, D_NODE(1) | D_PATCH(1), 0, b,
		     sizeof(wi) + 5);
		emit(T, &o);
	}
	d_start(&o);
	d_op(&o, FUSE_STATFS, 0, 0, b, 0);
	emit(T, &o);
	{
		struct fuse_release_in rl = { .flags = O_RDWR };
		struct fuse_fsync_in fs = { .fsync_flags = 1 };
		struct fuse_flush_in fl = { .lock_owner = 42 };

		d_start_open(&o);
		d_op(&o, FUSE_FSYNC, D_NODE(1) | D_PATCH(1), 0, &fs,
		     sizeof(fs));
		d_op(&o, FUSE_FLUSH, D_NODE(1) | D_PATCH(1), 0, &fl,
		     sizeof(fl));
		d_op(&o, FUSE_RELEASE, D_NODE(1) | D_PATCH(1), 0, &rl,
		     sizeof(rl));
		d_op(&o, FUSE_RELEASE, D_NODE(1) | D_PATCH(1), 0, &rl,
		     sizeof(rl));
		emit(T, &o);
	}
	{
		struct { u32 size, flags; } sx = { 3, 0 };
		struct fuse_getxattr_in gx = { .size = 64 };

		d_start(&o);
		memcpy(b, &sx, 8);
		memcpy(b + 8, "user.x\0val", 10);
		d_op(&o, FUSE_SETXATTR, D_NODE(1), 0, b, 18);
		d_name(&o, FUSE_GETXATTR, D_NODE(1), &gx, sizeof(gx),
		       "user.x", NULL);
		d_op(&o, FUSE_LISTXATTR, D_NODE(1), 0, &gx, sizeof(gx));
		gx.size = 0;
		d_op(&o, FUSE_LISTXATTR, 0, 0, &gx, sizeof(gx));
		d_name(&o, FUSE_REMOVEXATTR, D_NODE(1), b, 0, "user.x", NULL);
		emit(T, &o);
	}
	{
		struct fuse_open_in oi = { .flags = O_RDONLY | O_DIRECTORY };
		struct fuse_read_in ri = { .size = 4096 };
		struct fuse_release_in rl = { 0 };
		struct fuse_fsync_in fs = { 0 };

		d_start(&o);
		d_op(&o, FUSE_OPENDIR, 0, 0, &oi, sizeof(oi));
		d_op(&o, FUSE_READDIR, D_PATCH(1), 0, &ri, sizeof(ri));
		d_op(&o, FUSE_READDIRPLUS, D_PATCH(1), 0, &ri, sizeof(ri));
		d_op(&o, FUSE_FSYNCDIR, D_PATCH(1), 0, &fs, sizeof(fs));
		d_op(&o, FUSE_RELEASEDIR, D_PATCH(1), 0, &rl, sizeof(rl));
		emit(T, &o);
	}
	d_start_open(&o);
	d_lk(&o, FUSE_GETLK, F_WRLCK);
	d_lk(&o, FUSE_SETLK, F_WRLCK);
	d_lk(&o, FUSE_SETLKW, F_RDLCK);
	d_lk(&o, FUSE_SETLK, F_UNLCK);
	emit(T, &o);
	{
		struct fuse_access_in ai = { .mask = 4 };

		d_start(&o);
		d_op(&o, FUSE_ACCESS, D_NODE(1), 0, &ai, sizeof(ai));
		emit(T, &o);
	}
	{
		struct fuse_create_in ci = { .flags = O_CREAT | O_RDWR,
					     .mode = S_IFREG | 0644 };
		struct fuse_write_in wi = { .size = 4 };

		d_start(&o);
		d_name(&o, FUSE_CREATE, 0, &ci, sizeof(ci), "c", NULL);
		memcpy(b, &wi, sizeof(wi));
		memcpy(b + sizeof(wi), "data", 4);
		d_op(&o, FUSE_WRITE, D_NODE(2) | D_PATCH(1), 0, b,
		     sizeof(wi) + 4);
		/* as the guest's user 1000 (fsuid switched) */
		d_req(&o, 1, D_SHAPE, FUSE_MKNOD, 0, 1, b, 0);
		emit(T, &o);
	}
	{
		struct fuse_interrupt_in ii = { .unique = 2 };

		d_start(&o);
		d_req(&o, 0, 0, FUSE_INTERRUPT, 0, 0, &ii, sizeof(ii));
		emit(T, &o);
	}
	{
		struct fuse_bmap_in bm = { .block = 1, .blocksize = 512 };

		d_start(&o);
		d_op(&o, FUSE_BMAP, D_NODE(1), 0, &bm, sizeof(bm));
		d_op(&o, FUSE_DESTROY, 0, 0, b, 0);
		d_op(&o, FUSE_GETATTR, 0, 0, b, 16);
		emit(T, &o);
	}
	{
		struct fuse_ioctl_in io = { .cmd = 0x5401, .out_size = 64 };
		struct fuse_poll_in po = { .events = 1 };

		d_start_open(&o);
		d_op(&o, FUSE_IOCTL, D_NODE(1) | D_PATCH(1), 0, &io,
		     sizeof(io));
		d_op(&o, FUSE_POLL, D_NODE(1) | D_PATCH(1), 0, &po,
		     sizeof(po));
		d_op(&o, FUSE_NOTIFY_REPLY, 0, 0, b, 24);
		emit(T, &o);
	}
	{
		struct fuse_batch_forget_in bf = { .count = 2 };
		struct fuse_forget_one fo[2] = {
			{ .nodeid = D_GUESS_NODE(1), .nlookup = 1 },
			{ .nodeid = 77, .nlookup = 1 },
		};

		d_start(&o);
		memcpy(b, &bf, sizeof(bf));
		memcpy(b + sizeof(bf), fo, sizeof(fo));
		d_req(&o, 0, 0, FUSE_BATCH_FORGET, 0, 0, b,
		      sizeof(bf) + sizeof(fo));
		d_op(&o, FUSE_GETATTR, D_NODE(1), 0, b, 16);
		emit(T, &o);
	}
	{
		struct fuse_fallocate_in fa = { .length = 8192 };
		struct fuse_lseek_in ls = { .whence = 3 /* SEEK_DATA */ };
		struct fuse_copy_file_range_in cr = {
			.nodeid_out = D_GUESS_NODE(1),
			.fh_out = D_GUESS_FH(1), .off_out = 100, .len = 10,
		};

		d_start_open(&o);
		d_op(&o, FUSE_FALLOCATE, D_NODE(1) | D_PATCH(1), 0, &fa,
		     sizeof(fa));
		fa.offset = 1ULL << 40;
		d_op(&o, FUSE_FALLOCATE, D_NODE(1) | D_PATCH(1), 0, &fa,
		     sizeof(fa));
		d_op(&o, FUSE_LSEEK, D_NODE(1) | D_PATCH(1), 0, &ls,
		     sizeof(ls));
		d_op(&o, FUSE_COPY_FILE_RANGE, D_NODE(1) | D_PATCH(1), 0, &cr,
		     sizeof(cr));
		emit(T, &o);
	}
	d_start(&o);
	d_op(&o, FUSE_SETUPMAPPING, D_NODE(1), 0, b, 40);
	d_op(&o, FUSE_REMOVEMAPPING, D_NODE(1), 0, b, 8);
	d_op(&o, FUSE_SYNCFS, 0, 0, b, 8);
	d_op(&o, 99, 0, 0, b, 8);
	emit(T, &o);
	{
		struct fuse_create_in ci = { .flags = O_RDWR,
					     .mode = S_IFREG | 0600 };

		d_start(&o);
		d_name(&o, FUSE_TMPFILE, 0, &ci, sizeof(ci), "t", NULL);
		emit(T, &o);
	}

	/* Ring level. */
	{
		struct {
			struct fuse_in_header h;
			struct fuse_init_in ii;
		} r = { .h = { .len = sizeof(r), .opcode = FUSE_INIT,
			       .unique = 1 } };

		d_init_body(&r.ii);
		/* raw INIT over 4 readable pieces, split writable part */
		put8(&o, D_CFG);
		put8(&o, D_RAW);
		put8(&o, 1);
		put8(&o, 3 | D_SHAPE | 16);
		put16(&o, sizeof(r));
		put(&o, &r, sizeof(r));
		put8(&o, D_KICK);
		put8(&o, 1);
		/* through an indirect table, on queue 2 */
		r.h.unique = 2;
		put8(&o, D_RAW);
		put8(&o, 2);
		put8(&o, 1 | D_SHAPE | 32);
		put16(&o, sizeof(r));
		put(&o, &r, sizeof(r));
		put8(&o, D_KICK);
		put8(&o, 2);
		emit(T, &o);
	}
	/* Two chains made available unpublished, then published at once;
	 * one with a header-only reply space.
	 */
	d_start(&o);
	put8(&o, D_REQ); put8(&o, 1); put8(&o, D_SHAPE | 64);
	put8(&o, FUSE_GETATTR); put8(&o, 1); put8(&o, 0); put16(&o, 16);
	put(&o, b, 16);
	put8(&o, D_REQ); put8(&o, 1); put8(&o, (1 << 2) | 64);
	put8(&o, FUSE_GETATTR); put8(&o, 1); put8(&o, 0); put16(&o, 16);
	put(&o, b, 16);
	put8(&o, D_PUBLISH); put8(&o, 1); put8(&o, 2);
	put8(&o, D_KICK); put8(&o, 1);
	emit(T, &o);
	/* Hostile: avail idx far ahead, wrong queues, reset, bring-up. */
	d_start(&o);
	put8(&o, D_POKE); put16(&o, 2048 + 16 * 32 + 2); put8(&o, 2);
	put16(&o, 1000);
	put8(&o, D_KICK); put8(&o, 1);
	put8(&o, D_KICK); put8(&o, 1);
	put8(&o, D_KICK); put8(&o, 3);
	put8(&o, D_KICK); put8(&o, 255);
	put8(&o, D_CONFIG);
	put8(&o, D_STATUS); put8(&o, 0);
	put8(&o, D_KICK); put8(&o, 1);
	put8(&o, D_BRINGUP); put8(&o, 1 | 8);
	d_op(&o, FUSE_LOOKUP, 0, 0, "d", 2);
	emit(T, &o);
	/* The virtio 3.1.1 sequence step by step (cfg bit 6: none done). */
	put8(&o, 64);
	put8(&o, D_STATUS); put8(&o, 1);
	put8(&o, D_STATUS); put8(&o, 3);
	put8(&o, D_FEATURES); put64(&o, 1ULL << 32);
	put8(&o, D_STATUS); put8(&o, 11);
	put8(&o, D_SETQ); put8(&o, 0); put8(&o, 3); put16(&o, 0);
	put8(&o, D_SETQ); put8(&o, 1); put8(&o, 4); put16(&o, 4096);
	put8(&o, D_STATUS); put8(&o, 15);
	put8(&o, D_CONFIG);
	{
		struct fuse_init_in ii;

		d_init_body(&ii);
		d_op(&o, FUSE_INIT, 0, 0, &ii, sizeof(ii));
	}
	emit(T, &o);
}

/* ---- fuzz_vu_rings: records of FUSE requests (see its header) ------- */

/* Reply buffer classes (fuzz_vu_rings.c in_class[]). */
#define VU_IN_16	3
#define VU_IN_144	8
#define VU_IN_4112	12
#define VU_IN_64K	15

/* ctl bits */
#define VU_REQ		0x01	/* request ring, else hiprio */
#define VU_RAW		0x02
#define VU_USER		0x04
#define VU_BATCH	0x08

/*
 * One record: @sel's low nibble picks the nodeid (0 root, n: the n-th
 * learnt), its high nibble a learnt value patched at body offset
 * 8 * (@pt & 7) (@pt bit 3: a nodeid, else a handle); @in a class.
 */
static void vu_rec(struct out *o, unsigned int ctl, unsigned int op,
		   unsigned int sel, unsigned int pt, unsigned int in,
		   const void *body, size_t blen)
{
	put8(o, ctl);
	if (!(ctl & VU_RAW)) {
		put8(o, op);
		put8(o, sel);
	}
	put8(o, (in << 4) | (pt & 15));
	put16(o, blen);
	if (blen)
		put(o, body, blen);
}

/* A request naming @name after a fixed part of @flen bytes. */
static void vu_named(struct out *o, unsigned int ctl, unsigned int op,
		     unsigned int sel, const void *fixed, size_t flen,
		     const char *name, const char *name2)
{
	unsigned char b[256];
	size_t n;

	if (flen)
		memcpy(b, fixed, flen);
	n = put_names(b, flen, name, name2);
	vu_rec(o, ctl, op, sel, 0, VU_IN_4112, b, n);
}

static void vu_lookup(struct out *o, unsigned int sel, const char *name)
{
	vu_named(o, VU_REQ, FUSE_LOOKUP, sel, NULL, 0, name, NULL);
}

/* READ/WRITE/READDIR(PLUS) of the @k-th learnt handle. */
static void vu_rw(struct out *o, unsigned int op, unsigned int sel,
		  unsigned int k, u64 off, u32 size, const char *data)
{
	unsigned char b[64 + 64];
	size_t n;

	if (op == FUSE_WRITE) {
		struct fuse_write_in wi = { .offset = off,
					    .size = strlen(data) };

		memcpy(b, &wi, sizeof(wi));
		memcpy(b + sizeof(wi), data, strlen(data));
		n = sizeof(wi) + strlen(data);
	} else {
		struct fuse_read_in ri = { .offset = off, .size = size };

		memcpy(b, &ri, sizeof(ri));
		n = sizeof(ri);
	}
	vu_rec(o, VU_REQ, op, sel | k << 4, 0, size > 4096 ? VU_IN_64K :
	       VU_IN_4112, b, n);
}

/* RELEASE or RELEASEDIR of the @k-th learnt handle, by the fuzzer. */
static void vu_release(struct out *o, unsigned int op, unsigned int sel,
		       unsigned int k)
{
	struct fuse_release_in ri = { 0 };

	vu_rec(o, VU_REQ, op, sel | k << 4, 0, VU_IN_16, &ri, sizeof(ri));
}

static void vu_create(struct out *o, const char *name)
{
	struct fuse_create_in ci = { .flags = O_RDWR | O_CREAT,
				     .mode = S_IFREG | 0644 };

	vu_named(o, VU_REQ, FUSE_CREATE, 0, &ci, sizeof(ci), name, NULL);
}

static void vu_open(struct out *o, unsigned int op, unsigned int sel,
		    u32 flags)
{
	struct fuse_open_in oi = { .flags = flags };

	vu_rec(o, VU_REQ, op, sel, 0, VU_IN_144, &oi, sizeof(oi));
}

static void gen_vu_rings(void)
{
	static const char *const t = "fuzz_vu_rings";
	struct fuse_getattr_in ga = { 0 };
	struct fuse_setattr_in sa = { .valid = FATTR_SIZE, .size = 3 };
	struct fuse_mkdir_in mk = { .mode = 0755 };
	struct fuse_rename_in rn = { .newdir = FUSE_ROOT_ID };
	struct fuse_link_in ln = { 0 };
	struct fuse_getxattr_in gx = { .size = 256 };
	struct fuse_setxattr_in sx = { .size = 2 };
	struct fuse_forget_in fg = { .nlookup = 1 };
	struct fuse_interrupt_in it = { .unique = 12345 };
	struct fuse_fallocate_in fa = { .offset = 0, .length = 8192 };
	struct fuse_lseek_in ls = { .offset = 0, .whence = 3 };
	struct fuse_lk_in lk = { .owner = 7, .lk = { .start = 0,
		.end = 100, .type = F_WRLCK, .pid = 1 } };
	struct fuse_copy_file_range_in cf = { .len = 5 };
	struct fuse_in_header raw = { .len = 40, .opcode = FUSE_GETATTR,
				      .unique = 99, .nodeid = 1 };
	unsigned char xb[64];
	struct out o = { .n = 0 };

	/* Nothing but the set-up's INIT and the clean-up. */
	emit(t, &o);
	/* LOOKUP, GETATTR; the root too, and STATFS. */
	vu_lookup(&o, 0, "f");
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 1, 0, VU_IN_144, &ga, sizeof(ga));
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 0, 0, VU_IN_144, &ga, sizeof(ga));
	vu_rec(&o, VU_REQ, FUSE_STATFS, 0, 0, VU_IN_144, NULL, 0);
	emit(t, &o);
	/* A file: OPEN, READ, WRITE, READ, FLUSH, FSYNC, RELEASE. */
	vu_lookup(&o, 0, "f");
	vu_open(&o, FUSE_OPEN, 1, O_RDWR);
	vu_rw(&o, FUSE_READ, 1, 1, 0, 4096, NULL);
	vu_rw(&o, FUSE_WRITE, 1, 1, 7, 0, "there\n");
	vu_rw(&o, FUSE_READ, 1, 1, 0, 65536, NULL);
	vu_rec(&o, VU_REQ, FUSE_FLUSH, 1 | 1 << 4, 0, VU_IN_16, xb, 24);
	vu_rec(&o, VU_REQ, FUSE_FSYNC, 1 | 1 << 4, 0, VU_IN_16, xb, 16);
	vu_release(&o, FUSE_RELEASE, 1, 1);
	emit(t, &o);
	/* CREATE, WRITE, SETATTR (truncate), READ; left for the clean-up. */
	vu_create(&o, "n");
	vu_rw(&o, FUSE_WRITE, 1, 1, 0, 0, "new file");
	vu_rec(&o, VU_REQ, FUSE_SETATTR, 1, 0, VU_IN_144, &sa, sizeof(sa));
	vu_rw(&o, FUSE_READ, 1, 1, 0, 4096, NULL);
	emit(t, &o);
	/* Directories: MKDIR, OPENDIR, READDIR, READDIRPLUS, RELEASEDIR. */
	vu_named(&o, VU_REQ, FUSE_MKDIR, 0, &mk, sizeof(mk), "m", NULL);
	vu_open(&o, FUSE_OPENDIR, 0, O_RDONLY);
	vu_rw(&o, FUSE_READDIR, 0, 1, 0, 4096, NULL);
	vu_rw(&o, FUSE_READDIRPLUS, 0, 1, 0, 4096, NULL);
	vu_release(&o, FUSE_RELEASEDIR, 0, 1);
	vu_lookup(&o, 0, "d");
	vu_open(&o, FUSE_OPENDIR, 2, O_RDONLY);
	vu_rw(&o, FUSE_READDIRPLUS, 2, 2, 0, 4096, NULL);
	emit(t, &o);
	/* Names: SYMLINK, READLINK, LINK, RENAME, UNLINK, RMDIR. */
	vu_named(&o, VU_REQ, FUSE_SYMLINK, 0, NULL, 0, "s", "f");
	vu_rec(&o, VU_REQ, FUSE_READLINK, 1, 0, VU_IN_4112, NULL, 0);
	vu_lookup(&o, 0, "f");
	/* LINK's oldnodeid: the second learnt nodeid ("f"), patched. */
	memcpy(xb, &ln, sizeof(ln));
	memcpy(xb + sizeof(ln), "h", 2);
	vu_rec(&o, VU_REQ, FUSE_LINK, 2 << 4, 8, VU_IN_4112, xb,
	       sizeof(ln) + 2);
	vu_named(&o, VU_REQ, FUSE_RENAME, 0, &rn, sizeof(rn), "h", "h2");
	vu_named(&o, VU_REQ, FUSE_UNLINK, 0, NULL, 0, "h2", NULL);
	vu_named(&o, VU_REQ, FUSE_RMDIR, 0, NULL, 0, "d", NULL);
	vu_named(&o, VU_REQ, FUSE_MKDIR, 0, &mk, sizeof(mk), "e", NULL);
	vu_named(&o, VU_REQ, FUSE_RMDIR, 0, NULL, 0, "e", NULL);
	emit(t, &o);
	/* xattrs, as an unprivileged user too. */
	vu_lookup(&o, 0, "f");
	memcpy(xb, &sx, sizeof(sx));
	memcpy(xb + sizeof(sx), "user.a\0hi", 9);
	vu_rec(&o, VU_REQ, FUSE_SETXATTR, 1, 0, VU_IN_16, xb,
	       sizeof(sx) + 9);
	memcpy(xb, &gx, sizeof(gx));
	memcpy(xb + sizeof(gx), "user.a", 7);
	vu_rec(&o, VU_REQ, FUSE_GETXATTR, 1, 0, VU_IN_4112, xb,
	       sizeof(gx) + 7);
	vu_rec(&o, VU_REQ, FUSE_LISTXATTR, 1, 0, VU_IN_4112, &gx,
	       sizeof(gx));
	vu_rec(&o, VU_REQ | VU_USER, FUSE_REMOVEXATTR, 1, 0, VU_IN_16,
	       "user.a", 7);
	emit(t, &o);
	/* Locks (SETLKW is sent as SETLK), FALLOCATE, LSEEK, COPY. */
	vu_create(&o, "k");
	vu_rec(&o, VU_REQ, FUSE_SETLK, 1 | 1 << 4, 0, VU_IN_16, &lk,
	       sizeof(lk));
	vu_rec(&o, VU_REQ, FUSE_GETLK, 1 | 1 << 4, 0, VU_IN_144, &lk,
	       sizeof(lk));
	lk.owner = 8;
	vu_rec(&o, VU_REQ, FUSE_SETLKW, 1 | 1 << 4, 0, VU_IN_16, &lk,
	       sizeof(lk));
	vu_rec(&o, VU_REQ, FUSE_FALLOCATE, 1 | 1 << 4, 0, VU_IN_16, &fa,
	       sizeof(fa));
	vu_rec(&o, VU_REQ, FUSE_LSEEK, 1 | 1 << 4, 0, VU_IN_144, &ls,
	       sizeof(ls));
	vu_create(&o, "c");
	vu_rw(&o, FUSE_WRITE, 1, 1, 0, 0, "copy me");
	/* From "k" (fh_in: its handle); nodeid_out: "c", patched. */
	cf.fh_in = 0;
	vu_rec(&o, VU_REQ, FUSE_COPY_FILE_RANGE, 1 | 2 << 4, 8 | 2,
	       VU_IN_144, &cf, sizeof(cf));
	emit(t, &o);
	/* Several in flight on both rings; FORGET and INTERRUPT on hiprio. */
	vu_rec(&o, VU_REQ | VU_BATCH, FUSE_LOOKUP, 0, 0, VU_IN_144, "f", 2);
	vu_rec(&o, VU_REQ | VU_BATCH, FUSE_LOOKUP, 0, 0, VU_IN_144, "d", 2);
	vu_rec(&o, VU_BATCH, FUSE_INTERRUPT, 0, 0, VU_IN_16, &it,
	       sizeof(it));
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 0, 0, VU_IN_144, &ga, sizeof(ga));
	vu_rec(&o, 0, FUSE_FORGET, 1, 0, 0, &fg, sizeof(fg));
	emit(t, &o);
	/* Descriptor layouts: pieces on both sides; small reply buffers. */
	vu_rec(&o, VU_REQ | 0x30 | 0x80, FUSE_LOOKUP, 0, 0, VU_IN_4112,
	       "f", 2);
	vu_rec(&o, VU_REQ | 0x10 | 0x40, FUSE_GETATTR, 1, 0, VU_IN_144, &ga,
	       sizeof(ga));
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 1, 0, VU_IN_16, &ga, sizeof(ga));
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 1, 0, 1, &ga, sizeof(ga));
	vu_rec(&o, VU_REQ, FUSE_GETATTR, 1, 0, 0, &ga, sizeof(ga));
	emit(t, &o);
	/* Raw: a whole GETATTR, a short header, a wrong length. */
	memcpy(xb, &raw, sizeof(raw));
	memset(xb + sizeof(raw), 0, 16);
	raw.len = 56;
	memcpy(xb, &raw, sizeof(raw));
	vu_rec(&o, VU_REQ | VU_RAW, 0, 0, 0, VU_IN_144, xb, 56);
	vu_rec(&o, VU_REQ | VU_RAW, 0, 0, 0, VU_IN_144, xb, 20);
	raw.len = 4000;
	memcpy(xb, &raw, sizeof(raw));
	vu_rec(&o, VU_REQ | VU_RAW, 0, 0, 0, VU_IN_144, xb, 56);
	emit(t, &o);
	/* DESTROY, then requests to a session that is gone. */
	vu_lookup(&o, 0, "f");
	vu_rec(&o, VU_REQ, FUSE_DESTROY, 0, 0, VU_IN_16, NULL, 0);
	vu_lookup(&o, 0, "f");
	emit(t, &o);
}

/* Every device seed twice: straight into the backend, then via the hub. */
static void gen_device(void)
{
	d_hub = false;
	gen_device_set();
	d_hub = true;
	gen_device_set();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	mkdir_p(outdir);
	gen_dev_parse();
	gen_req_complete();
	gen_version();
	gen_vring_dev();
	gen_vring_drv();
	gen_dax_dev();
	gen_device();
	gen_vhost();
	gen_vu_rings();
	return 0;
}
