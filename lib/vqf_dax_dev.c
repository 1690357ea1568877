// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dax_dev.c - device-side validation of DAX mapping requests and the
 * device's map of the window (see vqf_dax_dev.h for the rules).
 *
 * Every bound is checked in a form that cannot overflow (x > limit - len
 * after len <= limit) because moffset, foffset and len are all chosen by
 * the guest.
 */
#include "vqf_dax_dev.h"

#define DEV_SETUP_FLAGS	(FUSE_SETUPMAPPING_FLAG_READ | \
			 FUSE_SETUPMAPPING_FLAG_WRITE)

static struct vqf_dax_dev_mapping *itn_mapping(struct vqf_itree_node *n)
{
	return n ? vqf_itree_entry(n, struct vqf_dax_dev_mapping, itn) : NULL;
}

void vqf_dax_dev_reset(struct vqf_dax_dev_map *m)
{
	u32 i;

	vqf_itree_init(&m->tree);
	m->free = NULL;
	for (i = m->nr_slots; i > 0; i--) {
		m->slots[i - 1].next_free = m->free;
		m->free = &m->slots[i - 1];
	}
	m->nr_used = 0;
}

int vqf_dax_dev_map_init(struct vqf_dax_dev_map *m, u64 window_size,
			 u64 align, struct vqf_dax_dev_mapping *slots,
			 u32 nr_slots)
{
	if (!VQF_IS_POW2(align) || !window_size ||
	    !VQF_IS_ALIGNED(window_size, align) || !nr_slots)
		return -EINVAL;
	m->window_size = window_size;
	m->align = align;
	m->slots = slots;
	m->nr_slots = nr_slots;
	vqf_dax_dev_reset(m);
	return 0;
}

static bool dev_aligned(const struct vqf_dax_dev_map *m, u64 v)
{
	return VQF_IS_ALIGNED(v, m->align);
}

/* [moffset, moffset + len) inside the window; len != 0. */
static bool dev_in_window(const struct vqf_dax_dev_map *m, u64 moffset,
			  u64 len)
{
	return len <= m->window_size && moffset <= m->window_size - len;
}

/*
 * The mapping occupying exactly [moffset, moffset + len), NULL if the span
 * is free; *@overlap if it partly overlaps anything else.
 */
static struct vqf_dax_dev_mapping *
dev_find_span(const struct vqf_dax_dev_map *m, u64 moffset, u64 len,
	      bool *overlap)
{
	u64 last = moffset + len - 1;
	struct vqf_itree_node *n;

	*overlap = false;
	n = vqf_itree_iter_first(&m->tree, moffset, last);
	if (!n)
		return NULL;
	if (n->start != moffset || n->last != last ||
	    vqf_itree_iter_next(n, moffset, last)) {
		*overlap = true;
		return NULL;
	}
	return itn_mapping(n);
}

/* Structural part shared by check and commit; no counters. */
static int dev_setup_fits(const struct vqf_dax_dev_map *m,
			  const struct fuse_setupmapping_in *in,
			  struct vqf_dax_dev_mapping **found)
{
	bool overlap;

	*found = dev_find_span(m, in->moffset, in->len, &overlap);
	if (overlap)
		return -EBUSY;
	if (!*found && !m->free)
		return -ENOSPC;
	return 0;
}

int vqf_dax_dev_setup_check(const struct vqf_dax_dev_map *m,
			    const void *arg, size_t size,
			    const struct vqf_dax_dev_limits *lim,
			    struct vqf_dax_dev_stats *st,
			    struct fuse_setupmapping_in *in,
			    const struct vqf_dax_dev_mapping **replaces)
{
	struct vqf_dax_dev_mapping *found;
	int ret;

	*replaces = NULL;
	if (size != sizeof(*in)) {
		st->setup_bad_size++;
		return -EBADMSG;
	}
	memcpy(in, arg, sizeof(*in));

	if ((in->flags & ~(u64)DEV_SETUP_FLAGS) ||
	    !(in->flags & DEV_SETUP_FLAGS)) {
		st->setup_bad_flags++;
		return -EOPNOTSUPP;
	}
	if (!in->len || !dev_aligned(m, in->len) ||
	    !dev_aligned(m, in->moffset) || !dev_aligned(m, in->foffset)) {
		st->setup_unaligned++;
		return -EINVAL;
	}
	if (!dev_in_window(m, in->moffset, in->len)) {
		st->setup_out_of_window++;
		return -ERANGE;
	}
	if (in->len > lim->max_bytes ||
	    in->foffset > lim->max_bytes - in->len) {
		st->setup_file_limit++;
		return -EFBIG;
	}
	if (in->foffset >= lim->file_size) {
		st->setup_beyond_eof++;
		return -ENXIO;
	}
	if ((in->flags & FUSE_SETUPMAPPING_FLAG_WRITE) && !lim->writable) {
		st->setup_write_denied++;
		return -EACCES;
	}
	ret = dev_setup_fits(m, in, &found);
	if (ret == -EBUSY)
		st->setup_overlap++;
	else if (ret == -ENOSPC)
		st->setup_no_slot++;
	else
		*replaces = found;
	return ret;
}

const struct vqf_dax_dev_mapping *
vqf_dax_dev_setup_commit(struct vqf_dax_dev_map *m, u64 nodeid,
			 const struct fuse_setupmapping_in *in,
			 struct vqf_dax_dev_stats *st)
{
	struct vqf_dax_dev_mapping *d;

	if (!in->len || !dev_in_window(m, in->moffset, in->len) ||
	    dev_setup_fits(m, in, &d))
		return NULL;
	if (d) {
		st->replaced++;
	} else {
		d = m->free;
		m->free = d->next_free;
		d->itn.start = in->moffset;
		d->itn.last = in->moffset + in->len - 1;
		vqf_itree_insert(&m->tree, &d->itn);
		m->nr_used++;
	}
	d->next_free = NULL;
	d->nodeid = nodeid;
	d->fh = in->fh;
	d->foffset = in->foffset;
	d->flags = in->flags;
	st->setups++;
	return d;
}

int vqf_dax_dev_remove_check(const struct vqf_dax_dev_map *m,
			     const void *args, size_t size,
			     struct vqf_dax_dev_stats *st,
			     struct fuse_removemapping_one *ents, u32 *count)
{
	const size_t hdr = sizeof(struct fuse_removemapping_in);
	const size_t one = sizeof(struct fuse_removemapping_one);
	struct fuse_removemapping_in rin;
	const u8 *p = args;
	bool overlap;
	u32 i, j;

	*count = 0;
	if (size < hdr) {
		st->remove_bad_size++;
		return -EBADMSG;
	}
	memcpy(&rin, p, hdr);
	if (!rin.count) {
		st->remove_empty++;
		return -ENODATA;
	}
	if (rin.count > VQF_REMOVEMAPPING_MAX) {
		st->remove_too_many++;
		return -E2BIG;
	}
	if (size != hdr + (size_t)rin.count * one) {
		st->remove_bad_size++;
		return -EBADMSG;
	}
	/* Entries sit at offset 4: copy each, never dereference in place. */
	for (i = 0; i < rin.count; i++)
		memcpy(&ents[i], p + hdr + (size_t)i * one, one);

	for (i = 0; i < rin.count; i++) {
		const struct fuse_removemapping_one *e = &ents[i];

		if (!e->len || !dev_aligned(m, e->len) ||
		    !dev_aligned(m, e->moffset)) {
			st->remove_unaligned++;
			return -EINVAL;
		}
		if (!dev_in_window(m, e->moffset, e->len)) {
			st->remove_out_of_window++;
			return -ERANGE;
		}
		if (!dev_find_span(m, e->moffset, e->len, &overlap)) {
			st->remove_not_mapped++;
			return -ENOENT;
		}
		/* mappings are disjoint: same moffset means same mapping */
		for (j = 0; j < i; j++) {
			if (ents[j].moffset == e->moffset) {
				st->remove_duplicate++;
				return -ENOTUNIQ;
			}
		}
	}
	*count = rin.count;
	return 0;
}

void vqf_dax_dev_remove_commit(struct vqf_dax_dev_map *m,
			       const struct fuse_removemapping_one *ents,
			       u32 count, struct vqf_dax_dev_stats *st)
{
	struct vqf_dax_dev_mapping *d;
	bool overlap;
	u32 i;

	for (i = 0; i < count; i++) {
		if (!ents[i].len ||
		    !dev_in_window(m, ents[i].moffset, ents[i].len))
			continue;
		d = dev_find_span(m, ents[i].moffset, ents[i].len, &overlap);
		if (!d)
			continue;
		vqf_itree_remove(&m->tree, &d->itn);
		d->next_free = m->free;
		m->free = d;
		m->nr_used--;
		st->removes++;
	}
}

const struct vqf_dax_dev_mapping *
vqf_dax_dev_lookup(const struct vqf_dax_dev_map *m, u64 moffset)
{
	return itn_mapping(vqf_itree_iter_first(&m->tree, moffset, moffset));
}

static const char *dev_violation(const struct vqf_dax_dev_map *m)
{
	const struct vqf_dax_dev_mapping *f;
	const struct vqf_itree_node *n, *prev = NULL;
	const char *why;
	u32 nfree = 0;

	if (vqf_itree_check(&m->tree, &why))
		return why;
	if (m->tree.count != m->nr_used || m->nr_used > m->nr_slots)
		return "nr_used differs from the tree";
	for (f = m->free; f; f = f->next_free) {
		if (++nfree > m->nr_slots)
			return "free list longer than the slots";
		if (f < m->slots || f >= m->slots + m->nr_slots)
			return "free list holds a foreign slot";
	}
	if (nfree + m->nr_used != m->nr_slots)
		return "slots lost";
	for (n = vqf_itree_first(&m->tree); n; n = vqf_itree_next(n)) {
		if (!dev_aligned(m, n->start) || !dev_aligned(m, n->last + 1))
			return "mapping not aligned";
		if (!dev_in_window(m, n->start, n->last - n->start + 1))
			return "mapping outside the window";
		if (prev && prev->last >= n->start)
			return "mappings overlap";
		prev = n;
	}
	return NULL;
}

int vqf_dax_dev_check(const struct vqf_dax_dev_map *m, const char **why)
{
	const char *v = dev_violation(m);

	if (why)
		*why = v;
	return v ? -EUCLEAN : 0;
}
