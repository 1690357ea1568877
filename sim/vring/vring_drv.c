// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Driver half of the split virtqueue: the guest's side of virtio 1.2 2.7.
 *
 * The free list and every chain's shape live in private memory (as Linux's
 * desc_extra), so the device can neither redirect the free list nor make
 * the driver free descriptors it does not own by rewriting the table.
 */
#include <stdlib.h>

#include "vqf_vring_drv.h"
#include "vring_hg.h"

enum {
	DS_FREE,	/* on the free list, never completed as a head */
	DS_DONE,	/* on the free list, last used as a completed head */
	DS_HEAD,	/* head of an in-flight chain */
	DS_BODY,	/* later descriptor of an in-flight chain */
};

struct drv_desc {
	void *cookie;			/* DS_HEAD: the buffer's cookie */
	struct vring_desc *itab;	/* DS_HEAD: indirect table or NULL */
	u64 itab_gpa;
	u64 wr_bytes;			/* DS_HEAD: writable bytes of chain */
	u16 next;			/* free list / chain link */
	u16 ndesc;			/* DS_HEAD: table entries used */
	u16 itab_n;			/* DS_HEAD: entries in itab */
	u8 state;
};

struct vqf_vring_drv {
	/* Hot, driver-private state first; the device never reads it. */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	struct drv_desc *st;
	struct vqf_vring_drv_stats *stats;
	u16 mask;
	u16 free_head;
	u16 num_free;
	u16 in_flight;		/* heads published and not yet used */
	u16 avail_idx;		/* next avail->idx to publish */
	u16 kicked_idx;		/* avail_idx at the last kick_prepare */
	u16 last_used;		/* next used entry to take */
	u16 used_shadow;	/* used->idx as last read (validated) */
	u16 avail_flags;	/* shadow of avail->flags */
	bool event_idx;
	bool broken;
	bool hg;		/* under valgrind: annotate hand-offs */
	unsigned int num;
	unsigned int indirect_min;	/* 0: no indirect */
	unsigned int flags;
	unsigned int detach_pos;
	u16 start_idx;
	struct vqf_vring_indirect_ops iops;
	struct vqf_vring_drv_stats own_stats;
};

/* The event indices live just past each ring (spec 2.7.10). */
static inline __virtio16 *drv_used_event(struct vqf_vring_drv *vq)
{
	return &vq->avail->ring[vq->num];
}

static inline __virtio16 *drv_avail_event(struct vqf_vring_drv *vq)
{
	return (__virtio16 *)&vq->used->ring[vq->num];
}

static void drv_init_rings(struct vqf_vring_drv *vq)
{
	unsigned int i;

	memset(vq->desc, 0, vqf_vring_desc_bytes(vq->num));
	memset(vq->avail, 0, vqf_vring_avail_bytes(vq->num));
	memset(vq->used, 0, vqf_vring_used_bytes(vq->num));
	vq->avail->idx = cpu_to_le16(vq->start_idx);
	vq->used->idx = cpu_to_le16(vq->start_idx);

	for (i = 0; i < vq->num; i++) {
		vq->st[i] = (struct drv_desc){ .next = (u16)(i + 1) };
		vq->st[i].state = DS_FREE;
	}
	vq->free_head = 0;
	vq->num_free = vq->num;		/* <= 32768 fits in u16 */
	vq->in_flight = 0;
	vq->avail_idx = vq->start_idx;
	vq->kicked_idx = vq->start_idx;
	vq->last_used = vq->start_idx;
	vq->used_shadow = vq->start_idx;
	vq->avail_flags = 0;
	vq->broken = false;
	vq->detach_pos = 0;

	/* Indices, flags and event indices are read racily by design. */
	vqf_hg_racy(&vq->avail->flags, 4);
	vqf_hg_racy(drv_used_event(vq), 2);
	vqf_hg_racy(&vq->used->flags, 4);
	vqf_hg_racy(drv_avail_event(vq), 2);
}

int vqf_vring_drv_create(const struct vqf_vring_drv_cfg *cfg,
			 struct vqf_vring_drv **out)
{
	struct vqf_vring_drv *vq;
	unsigned int num = cfg->num;
	void *desc, *avail, *used;

	if (!VQF_IS_POW2(num) || num > VQF_VRING_MAX_NUM ||
	    (cfg->features & ~VQF_VRING_FEATURES) ||
	    (cfg->flags & ~VQF_VRING_DRV_STRICT_LEN) || !cfg->mem)
		return -EINVAL;
	if (!VQF_IS_ALIGNED(cfg->addr.desc, 16) ||
	    !VQF_IS_ALIGNED(cfg->addr.avail, 2) ||
	    !VQF_IS_ALIGNED(cfg->addr.used, 4))
		return -EINVAL;
	desc = vqf_gmem_ptr(cfg->mem, cfg->addr.desc, vqf_vring_desc_bytes(num));
	avail = vqf_gmem_ptr(cfg->mem, cfg->addr.avail,
			     vqf_vring_avail_bytes(num));
	used = vqf_gmem_ptr(cfg->mem, cfg->addr.used, vqf_vring_used_bytes(num));
	if (!desc || !avail || !used)
		return -EFAULT;

	/* Cache-line aligned: the device thread must not share its lines. */
	vq = aligned_alloc(64, VQF_ALIGN(sizeof(*vq), 64));
	if (!vq)
		return -ENOMEM;
	memset(vq, 0, sizeof(*vq));
	vq->st = calloc(num, sizeof(*vq->st));
	if (!vq->st) {
		free(vq);
		return -ENOMEM;
	}
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	vq->num = num;
	vq->mask = (u16)(num - 1);
	vq->event_idx = cfg->features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	if ((cfg->features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC)) &&
	    cfg->iops && cfg->iops->alloc && cfg->iops->free) {
		vq->iops = *cfg->iops;
		vq->indirect_min = cfg->indirect_min ? cfg->indirect_min : 2;
	}
	vq->flags = cfg->flags;
	vq->start_idx = cfg->start_idx;
	vq->stats = cfg->stats ? cfg->stats : &vq->own_stats;
	vq->hg = vqf_hg_running();
	drv_init_rings(vq);
	*out = vq;
	return 0;
}

void vqf_vring_drv_destroy(struct vqf_vring_drv *vq)
{
	if (!vq)
		return;
	free(vq->st);
	free(vq);
}

static inline u16 vring_flags(unsigned int i, unsigned int total,
			      unsigned int nrd)
{
	u16 f = i + 1 < total ? VRING_DESC_F_NEXT : 0;

	if (i >= nrd)
		f |= VRING_DESC_F_WRITE;
	return f;
}

static inline const struct vqf_vring_gseg *
seg_at(const struct vqf_vring_gseg *rd, unsigned int nrd,
	const struct vqf_vring_gseg *wr, unsigned int i)
{
	return i < nrd ? &rd[i] : &wr[i - nrd];
}

/* Publish @head on the available ring. */
static inline void drv_publish(struct vqf_vring_drv *vq, u16 head)
{
	WRITE_ONCE(vq->avail->ring[vq->avail_idx & vq->mask],
		   cpu_to_le16(head));
	vq->avail_idx++;
	/* Descriptors and ring entry before the index: pairs with the
	 * smp_rmb() in vqf_vring_dev_pop() after it reads avail->idx.
	 */
	smp_wmb();
	if (unlikely(vq->hg))
		vqf_hg_before(&vq->avail->idx);
	WRITE_ONCE(vq->avail->idx, cpu_to_le16(vq->avail_idx));
}

int vqf_vring_drv_add(struct vqf_vring_drv *vq,
		      const struct vqf_vring_gseg *rd, unsigned int nrd,
		      const struct vqf_vring_gseg *wr, unsigned int nwr,
		      void *cookie)
{
	unsigned int total = nrd + nwr, i, n;
	struct vring_desc *itab = NULL;
	u64 itab_gpa = 0, bytes = 0, wr_bytes = 0;
	struct drv_desc *hs;
	u16 head, idx;

	if (unlikely(vq->broken))
		return -EIO;
	if (unlikely(!total || !cookie || total < nrd))
		return -EINVAL;
	if (total == 1) {
		/* The common single-descriptor buffer, without the loops. */
		const struct vqf_vring_gseg *s = nrd ? rd : wr;
		struct vring_desc *d;

		if (unlikely(!s->len))
			return -EINVAL;
		if (unlikely(!vq->num_free))
			return -ENOSPC;
		head = vq->free_head;
		hs = &vq->st[head];
		d = &vq->desc[head];
		d->addr = cpu_to_le64(s->addr);
		d->len = cpu_to_le32(s->len);
		d->flags = cpu_to_le16(nrd ? 0 : VRING_DESC_F_WRITE);
		vq->free_head = hs->next;
		vq->num_free--;
		hs->itab = NULL;
		hs->itab_n = 0;
		hs->ndesc = 1;
		wr_bytes = nrd ? 0 : s->len;
		vq->stats->descs_added++;
		goto publish;
	}
	if (unlikely(total > vq->num))
		return -E2BIG;
	for (i = 0; i < total; i++) {
		const struct vqf_vring_gseg *s = seg_at(rd, nrd, wr, i);

		if (unlikely(!s->len))
			return -EINVAL;
		bytes += s->len;
		if (i >= nrd)
			wr_bytes += s->len;
	}
	if (unlikely(bytes > (1ULL << 32)))
		return -EFBIG;

	if (vq->indirect_min && total > 1 && vq->num_free &&
	    (total >= vq->indirect_min || total > vq->num_free) &&
	    vq->iops.alloc(vq->iops.priv, total, &itab, &itab_gpa) == 0) {
		for (i = 0; i < total; i++) {
			const struct vqf_vring_gseg *s = seg_at(rd, nrd, wr, i);

			itab[i].addr = cpu_to_le64(s->addr);
			itab[i].len = cpu_to_le32(s->len);
			itab[i].flags = cpu_to_le16(vring_flags(i, total, nrd));
			itab[i].next = cpu_to_le16((u16)(i + 1));
		}
		head = vq->free_head;
		hs = &vq->st[head];
		vq->desc[head].addr = cpu_to_le64(itab_gpa);
		vq->desc[head].len = cpu_to_le32(total * 16);
		vq->desc[head].flags = cpu_to_le16(VRING_DESC_F_INDIRECT);
		vq->free_head = hs->next;
		vq->num_free--;
		hs->itab = itab;
		hs->itab_gpa = itab_gpa;
		hs->itab_n = (u16)total;
		hs->ndesc = 1;
		vq->stats->indirect_added++;
		vq->stats->descs_added += total + 1;
	} else {
		if (unlikely(vq->num_free < total))
			return -ENOSPC;
		head = vq->free_head;
		idx = head;
		for (i = 0; i < total; i++) {
			const struct vqf_vring_gseg *s = seg_at(rd, nrd, wr, i);
			struct vring_desc *d = &vq->desc[idx];

			d->addr = cpu_to_le64(s->addr);
			d->len = cpu_to_le32(s->len);
			d->flags = cpu_to_le16(vring_flags(i, total, nrd));
			d->next = cpu_to_le16(vq->st[idx].next);
			if (i)
				vq->st[idx].state = DS_BODY;
			idx = vq->st[idx].next;
		}
		n = total;
		vq->free_head = idx;
		vq->num_free -= n;
		hs = &vq->st[head];
		hs->itab = NULL;
		hs->itab_n = 0;
		hs->ndesc = (u16)n;
		vq->stats->descs_added += n;
	}
publish:
	hs->cookie = cookie;
	hs->wr_bytes = wr_bytes;
	hs->state = DS_HEAD;
	vq->in_flight++;
	vq->stats->bufs_added++;
	drv_publish(vq, head);
	return 0;
}

bool vqf_vring_drv_kick_prepare(struct vqf_vring_drv *vq)
{
	u16 old = vq->kicked_idx, new = vq->avail_idx;
	bool need;

	if (old == new)
		return false;
	/* avail->idx before reading the device's wishes: pairs with the
	 * smp_mb() in vqf_vring_dev_enable_notify() between its avail_event
	 * (or flags) store and its re-read of avail->idx.
	 */
	smp_mb();
	vq->kicked_idx = new;
	if (vq->event_idx)
		need = vring_need_event(le16_to_cpu(READ_ONCE(
				*drv_avail_event(vq))), new, old);
	else
		need = !(le16_to_cpu(READ_ONCE(vq->used->flags)) &
			 VRING_USED_F_NO_NOTIFY);
	if (need)
		vq->stats->kicks_sent++;
	else
		vq->stats->kicks_suppressed++;
	return need;
}

static inline int drv_bad(struct vqf_vring_drv *vq, u64 *counter, int err)
{
	(*counter)++;
	vq->broken = true;
	return err;
}

/* Return the chain at @head to the free list. */
static inline void drv_detach(struct vqf_vring_drv *vq, u16 head)
{
	struct drv_desc *hs = &vq->st[head];
	u16 i = head, n;

	if (hs->itab)
		vq->iops.free(vq->iops.priv, hs->itab, hs->itab_gpa,
			      hs->itab_n);
	for (n = 1; n < hs->ndesc; n++) {
		i = vq->st[i].next;
		vq->st[i].state = DS_FREE;
	}
	vq->st[i].next = vq->free_head;
	vq->free_head = head;
	vq->num_free += hs->ndesc;
	vq->in_flight--;
	hs->cookie = NULL;
	hs->itab = NULL;
	hs->state = DS_DONE;
}

int vqf_vring_drv_get_buf(struct vqf_vring_drv *vq, void **cookie, u32 *len)
{
	struct vqf_vring_drv_stats *s = vq->stats;
	struct vring_used_elem *e;
	struct drv_desc *hs;
	u32 id, l;

	if (unlikely(vq->broken))
		return -EIO;
	if (vq->last_used == vq->used_shadow) {
		u16 idx = le16_to_cpu(READ_ONCE(vq->used->idx));

		if (idx == vq->last_used)
			return 0;
		if (unlikely((u16)(idx - vq->last_used) > vq->in_flight))
			return drv_bad(vq, &s->err_used_idx, -EPROTO);
		/* Entries only after the index that exposes them: pairs
		 * with the smp_wmb() in vqf_vring_dev_push().
		 */
		smp_rmb();
		if (unlikely(vq->hg))
			vqf_hg_after(&vq->used->idx);
		vq->used_shadow = idx;
	}
	e = &vq->used->ring[vq->last_used & vq->mask];
	id = le32_to_cpu(READ_ONCE(e->id));
	l = le32_to_cpu(READ_ONCE(e->len));
	if (unlikely(id >= vq->num))
		return drv_bad(vq, &s->err_used_range, -ERANGE);
	hs = &vq->st[id];
	if (unlikely(hs->state != DS_HEAD)) {
		if (hs->state == DS_BODY)
			return drv_bad(vq, &s->err_used_not_head, -EBADSLT);
		if (hs->state == DS_DONE)
			return drv_bad(vq, &s->err_used_twice, -EALREADY);
		return drv_bad(vq, &s->err_used_not_inflight, -ENOENT);
	}
	if (unlikely(l > hs->wr_bytes)) {
		if (vq->flags & VQF_VRING_DRV_STRICT_LEN)
			return drv_bad(vq, &s->err_used_len, -EMSGSIZE);
		s->used_len_clamped++;
		l = (u32)hs->wr_bytes;
	}
	*cookie = hs->cookie;
	*len = l;
	drv_detach(vq, (u16)id);
	vq->last_used++;
	s->bufs_used++;
	if (vq->event_idx && !(vq->avail_flags & VRING_AVAIL_F_NO_INTERRUPT)) {
		WRITE_ONCE(*drv_used_event(vq), cpu_to_le16(vq->last_used));
		/* used_event before the next read of used->idx: pairs with
		 * the smp_mb() in vqf_vring_dev_need_notify(), so a caller
		 * that stops at an empty ring gets the interrupt.
		 */
		smp_mb();
	}
	return 1;
}

bool vqf_vring_drv_more_used(const struct vqf_vring_drv *vq)
{
	return le16_to_cpu(READ_ONCE(vq->used->idx)) != vq->last_used;
}

u16 vqf_vring_drv_used_idx(const struct vqf_vring_drv *vq)
{
	return le16_to_cpu(READ_ONCE(vq->used->idx));
}

void vqf_vring_drv_disable_cb(struct vqf_vring_drv *vq)
{
	if (vq->avail_flags & VRING_AVAIL_F_NO_INTERRUPT)
		return;
	vq->avail_flags |= VRING_AVAIL_F_NO_INTERRUPT;
	if (vq->event_idx)
		/* The device ignores the flag with EVENT_IDX: park
		 * used_event half the index space away, out of reach of
		 * the next (at most num) completions.
		 */
		WRITE_ONCE(*drv_used_event(vq),
			   cpu_to_le16((u16)(vq->last_used + 0x8000)));
	else
		WRITE_ONCE(vq->avail->flags, cpu_to_le16(vq->avail_flags));
}

bool vqf_vring_drv_enable_cb(struct vqf_vring_drv *vq)
{
	if (vq->avail_flags & VRING_AVAIL_F_NO_INTERRUPT) {
		vq->avail_flags &= ~VRING_AVAIL_F_NO_INTERRUPT;
		if (!vq->event_idx)
			WRITE_ONCE(vq->avail->flags,
				   cpu_to_le16(vq->avail_flags));
	}
	if (vq->event_idx)
		WRITE_ONCE(*drv_used_event(vq), cpu_to_le16(vq->last_used));
	/* Our wish before re-reading used->idx: pairs with the smp_mb() in
	 * vqf_vring_dev_need_notify() between its used->idx store and its
	 * read of used_event/flags.  One of the two sides sees the other.
	 */
	smp_mb();
	return !vqf_vring_drv_more_used(vq);
}

void *vqf_vring_drv_detach_unused(struct vqf_vring_drv *vq)
{
	for (; vq->detach_pos < vq->num; vq->detach_pos++) {
		struct drv_desc *hs = &vq->st[vq->detach_pos];

		if (hs->state == DS_HEAD) {
			void *cookie = hs->cookie;

			drv_detach(vq, (u16)vq->detach_pos);
			vq->stats->detached++;
			return cookie;
		}
	}
	return NULL;
}

int vqf_vring_drv_reset(struct vqf_vring_drv *vq)
{
	if (vq->in_flight)
		return -EBUSY;
	drv_init_rings(vq);
	return 0;
}

bool vqf_vring_drv_is_broken(const struct vqf_vring_drv *vq)
{
	return vq->broken;
}

unsigned int vqf_vring_drv_num_free(const struct vqf_vring_drv *vq)
{
	return vq->num_free;
}

const struct vqf_vring_drv_stats *
vqf_vring_drv_stats(const struct vqf_vring_drv *vq)
{
	return vq->stats;
}
