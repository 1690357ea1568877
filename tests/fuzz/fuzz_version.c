// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_version - lib/vqf_version.h: both halves driven by a program read
 * from the input, with a hostile host that may write any value into any
 * slot at any time, and hostile indices, lengths and versions everywhere.
 *
 * Input: u8 device slots, u8 guest-visible slots, then ops of one byte
 * each followed by their operands (see the switch).  Invariants: every
 * slot pointer handed out lies inside the guest's view; the allocator
 * matches a bitmap model; a VALID answer matches the table at that moment;
 * every return value is one the header documents.
 */
#include "fuzz_common.h"
#include "vqf_version.h"

#define MAXN	64
#define NOBJ	4

struct st {
	s64 *table;
	u64 n, g;
	u64 bitmap[1];
	bool used[MAXN];
	struct vqf_ver_dev dev;
	struct vqf_ver_table gt;
	struct vqf_ver_inode vi[NOBJ];
	struct vqf_ver_stamp last[NOBJ];
	struct vqf_ver_dentry de[NOBJ];
};

static bool slot_ok(const struct st *s, const s64 *p)
{
	return !p || (p >= s->table + 1 && p < s->table + s->g);
}

/* Indices: mostly small, sometimes the hostile edges. */
static u64 pick_index(struct fz *f, const struct st *s)
{
	u8 k = fz_u8(f);

	switch (k >> 5) {
	case 0:
		return s->n;
	case 1:
		return s->n + 1;
	case 2:
		return ~0ULL - (k & 3);
	case 3:
		return fz_u64(f);
	default:
		return k % (s->n + 2);
	}
}

static void op(struct fz *f, struct st *s)
{
	u8 o = fz_u8(f);
	unsigned int i = fz_u8(f) % NOBJ, j = (i + 1 + o / 16) % NOBJ;
	struct fuse_entryver_out ev;
	struct vqf_ver_stamp st;
	enum vqf_ver_state vs;
	u64 idx, tot, gst, before_free;
	u8 buf[40];
	size_t len;
	int rc;
	s64 v;

	switch (o % 14) {
	case 0:
		before_free = s->dev.nr_free;
		idx = vqf_ver_dev_alloc(&s->dev);
		if (!before_free) {
			FZ_CHECK(idx == 0);
			break;
		}
		FZ_CHECK(idx > 0 && idx < s->n && !s->used[idx]);
		s->used[idx] = true;
		break;
	case 1:
		idx = pick_index(f, s);
		rc = vqf_ver_dev_release(&s->dev, idx);
		if (idx == 0)
			FZ_CHECK(rc == -EINVAL);
		else if (idx >= s->n)
			FZ_CHECK(rc == -ERANGE);
		else if (!s->used[idx])
			FZ_CHECK(rc == -ENOENT);
		else
			FZ_CHECK(rc == 0);
		if (!rc)
			s->used[idx] = false;
		break;
	case 2:
		idx = pick_index(f, s);
		v = vqf_ver_dev_bump(&s->dev, idx);
		if (idx == 0)
			FZ_CHECK(v == 0);
		else if (idx >= s->n)
			FZ_CHECK(v == -ERANGE);
		else
			FZ_CHECK(v == s->table[idx]);
		break;
	case 3:
		tot = fz_u8(f);
		gst = fz_u8(f);
		idx = fz_u8(f) % s->n;
		rc = vqf_ver_dev_forget(&s->dev, &tot,
					(o & 16) ? &gst : NULL, fz_u64(f),
					&idx);
		FZ_CHECK(rc == 0 || rc == 1 || rc == -EOVERFLOW);
		if (rc == 1)
			FZ_CHECK(tot == 0);
		if (!tot && idx)
			FZ_CHECK(!s->used[idx]);	/* release refused */
		/* re-sync the model: forget may have released a slot */
		for (idx = 1; idx < s->n; idx++)
			s->used[idx] = s->bitmap[0] >> idx & 1;
		break;
	case 4:		/* the host writes whatever it likes */
		idx = fz_u8(f) % s->n;
		s->table[idx] = (s64)fz_u64(f);
		break;
	case 5:
		len = fz_u8(f) % sizeof(buf);
		memset(buf, 0, sizeof(buf));
		fz_take(f, buf, len);
		rc = vqf_ver_entryver_parse(&s->gt, buf, len, &ev);
		FZ_CHECK(rc == 1 || rc == 0 || rc == -EMSGSIZE || rc == -E2BIG);
		FZ_CHECK(rc == 1 || (!ev.version_index && !ev.initial_version));
		FZ_CHECK((rc == 1) == (len == sizeof(ev)));
		break;
	case 6:
		ev.version_index = pick_index(f, s);
		ev.initial_version = (s64)fz_u64(f);
		st = vqf_ver_sample(&s->gt, &s->vi[i]);
		FZ_CHECK(slot_ok(s, st.slot));
		s->last[i] = vqf_ver_inode_set_entry(&s->gt, &s->vi[i], &ev,
						     &st);
		FZ_CHECK(slot_ok(s, s->last[i].slot));
		FZ_CHECK(s->last[i].version >= 0 || !s->last[i].slot);
		if (ev.version_index == 0 || ev.version_index >= s->g)
			FZ_CHECK(!s->vi[i].slot);
		else
			FZ_CHECK(s->vi[i].slot ==
				 s->table + ev.version_index);
		break;
	case 7:
		if (o & 16)
			s->last[i] = vqf_ver_sample(&s->gt, &s->vi[i]);
		if (!vqf_ver_attr_older(&s->gt, &s->vi[i], &s->last[i])) {
			FZ_CHECK(s->last[i].slot == s->vi[i].slot);
			vqf_ver_attr_publish(&s->vi[i], &s->last[i]);
			FZ_CHECK(s->vi[i].attr_version >= s->last[i].version);
		}
		break;
	case 8:
		v = s->vi[i].attr_version;
		FZ_CHECK(vqf_ver_attr_local_change(&s->gt, &s->vi[i]) >=
			 (s->vi[i].slot ? v : 1));
		FZ_CHECK(s->vi[i].valid_version == 0);
		break;
	case 9:
		vs = vqf_ver_inode_check(&s->gt, &s->vi[i]);
		FZ_CHECK(vs == VQF_VER_UNKNOWN || vs == VQF_VER_VALID ||
			 vs == VQF_VER_STALE);
		FZ_CHECK((vs == VQF_VER_UNKNOWN) == !s->vi[i].slot);
		if (vs == VQF_VER_VALID)
			FZ_CHECK(*s->vi[i].slot == s->vi[i].valid_version &&
				 s->vi[i].valid_version > 0);
		break;
	case 10:
		st = vqf_ver_sample(&s->gt, &s->vi[j]);
		vqf_ver_dentry_set(&s->gt, &s->de[i],
				   (o & 16) ? NULL : &s->last[i], &st);
		FZ_CHECK(slot_ok(s, s->de[i].slot));
		FZ_CHECK(slot_ok(s, s->de[i].parent_slot));
		break;
	case 11: {
		const struct vqf_ver_dentry *d = &s->de[i];
		bool pok, iok;

		vs = vqf_ver_dentry_check(&s->gt, d);
		pok = d->parent_slot && d->parent_version > 0 &&
		      *d->parent_slot == d->parent_version;
		iok = !d->negative && d->slot && d->version > 0 &&
		      *d->slot == d->version;
		if (vs == VQF_VER_VALID)
			FZ_CHECK(pok || iok);
		if (pok)
			FZ_CHECK(vs == VQF_VER_VALID);
		if (vs == VQF_VER_UNKNOWN)
			FZ_CHECK(!d->parent_slot && (d->negative || !d->slot));
		break;
	}
	case 12:
		idx = pick_index(f, s);
		FZ_CHECK(slot_ok(s, vqf_ver_table_slot(&s->gt, idx)));
		break;
	default:
		idx = pick_index(f, s);
		vqf_ver_dev_fill_entryver(&s->dev, idx, &ev);
		if (idx && idx < s->n)
			FZ_CHECK(ev.version_index == idx &&
				 ev.initial_version == s->table[idx]);
		else
			FZ_CHECK(!ev.version_index && !ev.initial_version);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st s;
	struct fz f;
	unsigned int k, steps = 0;
	u64 free_bits = 0;

	memset(&s, 0, sizeof(s));
	fz_init(&f, data, size);
	s.n = 2 + fz_u8(&f) % (MAXN - 1);
	s.g = fz_u8(&f) % (s.n + 1);
	/* Exactly sized, so a read past the table is an ASan report. */
	s.table = malloc(s.n * sizeof(s64));
	FZ_CHECK(s.table);
	FZ_CHECK(vqf_ver_dev_init(&s.dev, s.table, s.n * sizeof(s64),
				  s.bitmap, sizeof(s.bitmap)) == 0);
	FZ_CHECK(vqf_ver_table_init(&s.gt, s.g ? s.table : NULL,
				    s.g * sizeof(s64)) == 0);
	for (k = 0; k < NOBJ; k++) {
		vqf_ver_inode_init(&s.vi[k]);
		vqf_ver_dentry_init(&s.de[k]);
		s.last[k] = vqf_ver_sample(&s.gt, &s.vi[k]);
	}
	while (f.n && steps++ < 4096)
		op(&f, &s);

	for (k = 1; k < s.n; k++)
		free_bits += !(s.bitmap[0] >> k & 1);
	FZ_CHECK(free_bits == s.dev.nr_free);
	FZ_CHECK(s.bitmap[0] & 1);
	free(s.table);
	return 0;
}
