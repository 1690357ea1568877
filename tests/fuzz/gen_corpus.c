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
 *
 * Usage: gen_corpus OUTDIR  (creates OUTDIR/<harness>/seed-NNN).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vqf_dev.h"
#include "vqf_dax_dev.h"
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
	return 0;
}
