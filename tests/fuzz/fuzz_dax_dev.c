// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_dax_dev - lib/vqf_dax_dev.h: SETUPMAPPING / REMOVEMAPPING
 * validation against a DAX window, from an untrusted guest.
 *
 * Input: u8 alignment (4 KiB << b % 3), u8 window (1..64 alignment units),
 * u8 slots (1..16), then ops: u8 op; setup: u8 size delta, u64 file size,
 * u64 max bytes, u8 writable, then the fuse_setupmapping_in bytes; remove:
 * u8 count, u8 size delta, then the entries; lookup: u64 offset; reset.
 * Offsets and lengths are taken as raw u64s, but an op bit can snap them
 * to the alignment so that accepted requests are common too.
 *
 * A model (the list of committed spans) decides what must be accepted:
 * a setup passes exactly when it is well-formed and its span is free or
 * identical to one mapping (and a slot is left for a new one); a remove
 * passes exactly when every entry names one mapping, once.  After every
 * op vqf_dax_dev_check() must hold, lookups must agree with the model,
 * and a rejection must move exactly its own counter.
 */
#include "fuzz_common.h"
#include "vqf_dax_dev.h"

#define MAXSLOTS	16

struct span {
	u64 moff, len;
};

struct st {
	struct vqf_dax_dev_map m;
	struct vqf_dax_dev_mapping slots[MAXSLOTS];
	struct vqf_dax_dev_stats stats;
	struct span model[MAXSLOTS];
	unsigned int nmodel, nslots;
	u64 align, window;
};

static u64 stats_sum(const struct vqf_dax_dev_stats *s)
{
	const u64 *p = (const u64 *)s;
	u64 n = 0;
	size_t i;

	for (i = 0; i < sizeof(*s) / sizeof(u64); i++)
		n += p[i];
	return n;
}

static int model_find(const struct st *s, u64 moff, u64 len)
{
	unsigned int i;

	for (i = 0; i < s->nmodel; i++)
		if (s->model[i].moff == moff && s->model[i].len == len)
			return i;
	return -1;
}

static bool model_overlap_other(const struct st *s, u64 moff, u64 len)
{
	unsigned int i;

	for (i = 0; i < s->nmodel; i++) {
		const struct span *p = &s->model[i];

		if (p->moff == moff && p->len == len)
			continue;
		if (moff < p->moff + p->len && p->moff < moff + len)
			return true;
	}
	return false;
}

static u64 snap(struct st *s, u64 v, bool on, u64 range)
{
	return on ? (v % range) & ~(s->align - 1) : v;
}

static void op_setup(struct fz *f, struct st *s, u8 o)
{
	struct fuse_setupmapping_in raw, in;
	const struct vqf_dax_dev_mapping *rep, *rec;
	struct vqf_dax_dev_limits lim;
	u64 before = stats_sum(&s->stats);
	size_t size = sizeof(raw);
	u8 buf[sizeof(raw) + 8];
	bool ok;
	int rc, idx;

	if (o & 0x80)
		size = fz_u8(f) % sizeof(buf);
	lim.file_size = fz_u64(f);
	lim.max_bytes = fz_u64(f);
	lim.writable = fz_u8(f) & 1;
	memset(&raw, 0, sizeof(raw));
	fz_take(f, &raw, sizeof(raw));
	if (o & 0x40) {
		raw.moffset = snap(s, raw.moffset, true, s->window);
		raw.len = snap(s, raw.len, true, s->window) + s->align;
		raw.foffset = snap(s, raw.foffset, true, 1ULL << 40);
		raw.flags &= 3;
		if (!raw.flags)
			raw.flags = FUSE_SETUPMAPPING_FLAG_READ;
		lim.file_size |= raw.foffset + 1;
		lim.max_bytes = ~0ULL;
	}
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &raw, sizeof(raw));
	rc = vqf_dax_dev_setup_check(&s->m, buf, size, &lim, &s->stats, &in,
				     &rep);
	if (rc) {
		FZ_CHECK(stats_sum(&s->stats) == before + 1);
		if (rc == -EBUSY)
			FZ_CHECK(model_overlap_other(s, raw.moffset,
						     raw.len));
		if (rc == -ENOSPC)
			FZ_CHECK(s->nmodel == s->nslots);
		return;
	}
	FZ_CHECK(stats_sum(&s->stats) == before);
	FZ_CHECK(size == sizeof(raw));
	FZ_CHECK(!memcmp(&in, &raw, sizeof(in)));
	/* What the model says about an accepted request. */
	ok = in.len && !(in.moffset % s->align) && !(in.len % s->align) &&
	     !(in.foffset % s->align) && in.moffset + in.len > in.moffset &&
	     in.moffset + in.len <= s->window && in.foffset < lim.file_size &&
	     in.foffset + in.len >= in.foffset &&
	     in.foffset + in.len <= lim.max_bytes &&
	     (lim.writable || !(in.flags & FUSE_SETUPMAPPING_FLAG_WRITE)) &&
	     !model_overlap_other(s, in.moffset, in.len);
	FZ_CHECK(ok);
	idx = model_find(s, in.moffset, in.len);
	FZ_CHECK((idx >= 0) == (rep != NULL));
	if (o & 0x20)
		return;		/* host side failed: no commit */
	rec = vqf_dax_dev_setup_commit(&s->m, 7, &in, &s->stats);
	FZ_CHECK(rec);
	FZ_CHECK(rec->foffset == in.foffset && rec->flags == in.flags);
	if (idx < 0) {
		FZ_CHECK(s->nmodel < s->nslots);
		s->model[s->nmodel].moff = in.moffset;
		s->model[s->nmodel++].len = in.len;
	}
}

static void op_remove(struct fz *f, struct st *s, u8 o)
{
	u8 buf[sizeof(struct fuse_removemapping_in) +
	       40 * sizeof(struct fuse_removemapping_one)];
	struct fuse_removemapping_one *ents = NULL, e;
	struct fuse_removemapping_in hdr;
	u64 before = stats_sum(&s->stats);
	unsigned int n = fz_u8(f) % 41, i, k;
	size_t size = sizeof(hdr) + n * sizeof(e);
	u32 count = 0;
	int rc;

	/* The wire puts the u64 entries at offset 4: write them by bytes. */
	memset(buf, 0, sizeof(buf));
	hdr.count = n;
	if (o & 0x80) {
		hdr.count = fz_u32(f);
		size = fz_u16(f) % (sizeof(buf) + 1);
	}
	memcpy(buf, &hdr, sizeof(hdr));
	for (i = 0; i < n; i++) {
		if ((o & 0x40) && s->nmodel) {
			k = fz_u8(f) % s->nmodel;
			e.moffset = s->model[k].moff;
			e.len = s->model[k].len;
		} else {
			e.moffset = fz_u64(f);
			e.len = fz_u64(f);
		}
		memcpy(buf + sizeof(hdr) + i * sizeof(e), &e, sizeof(e));
	}
	ents = malloc(VQF_REMOVEMAPPING_MAX * sizeof(*ents));
	FZ_CHECK(ents);
	rc = vqf_dax_dev_remove_check(&s->m, buf, size, &s->stats, ents,
				      &count);
	if (rc) {
		FZ_CHECK(stats_sum(&s->stats) == before + 1);
		free(ents);
		return;
	}
	FZ_CHECK(count == hdr.count && count >= 1 && count <= n);
	for (i = 0; i < count; i++) {
		FZ_CHECK(model_find(s, ents[i].moffset, ents[i].len) >= 0);
		for (k = 0; k < i; k++)
			FZ_CHECK(ents[k].moffset != ents[i].moffset);
	}
	if (!(o & 0x20)) {
		vqf_dax_dev_remove_commit(&s->m, ents, count, &s->stats);
		for (i = 0; i < count; i++) {
			int j = model_find(s, ents[i].moffset, ents[i].len);

			s->model[j] = s->model[--s->nmodel];
		}
	}
	free(ents);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st *s = calloc(1, sizeof(*s));
	unsigned int steps = 0, i;
	const char *why = NULL;
	struct fz f;

	FZ_CHECK(s);
	fz_init(&f, data, size);
	s->align = 4096ULL << (fz_u8(&f) % 3);
	s->window = s->align * (1 + fz_u8(&f) % 64);
	s->nslots = 1 + fz_u8(&f) % MAXSLOTS;
	FZ_CHECK(vqf_dax_dev_map_init(&s->m, s->window, s->align, s->slots,
				      s->nslots) == 0);

	while (f.n && steps++ < 512) {
		u8 o = fz_u8(&f);
		u64 off;
		const struct vqf_dax_dev_mapping *hit;

		switch (o & 3) {
		case 0:
			op_setup(&f, s, o);
			break;
		case 1:
			op_remove(&f, s, o);
			break;
		case 2:
			off = fz_u64(&f);
			if (o & 0x40)
				off %= s->window;
			hit = vqf_dax_dev_lookup(&s->m, off);
			for (i = 0; i < s->nmodel; i++)
				if (off - s->model[i].moff < s->model[i].len)
					break;
			FZ_CHECK((hit != NULL) == (i < s->nmodel));
			break;
		default:
			if ((o & 0xfc) == 0xfc) {
				vqf_dax_dev_reset(&s->m);
				s->nmodel = 0;
			}
			break;
		}
		FZ_CHECK(vqf_dax_dev_check(&s->m, &why) == 0);
		FZ_CHECK(s->m.nr_used == s->nmodel);
	}
	free(s);
	return 0;
}
