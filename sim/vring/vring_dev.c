// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Device half of the split virtqueue: the host's side of virtio 1.2 2.7.
 *
 * Every value read from guest memory is read once into a local and checked
 * before use; guest addresses become host pointers only through the map.
 */
#include <stdlib.h>

#include "vqf_memguard.h"
#include "vqf_vring_dev.h"
#include "vring_hg.h"

struct vqf_vring_dev {
	/* Pop side. */
	const struct vqf_gmem *mem;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	struct vqf_vring_dev_stats *stats;
	unsigned int num;
	u32 pops;		/* chains consumed, read by need_notify */
	u16 mask;
	u16 last_avail;		/* next avail entry to pop */
	u16 avail_shadow;	/* avail->idx as last read (validated) */
	u16 used_flags;		/* shadow of used->flags */
	bool event_idx;
	bool indirect;
	bool notify_on_empty;
	bool broken;
	bool hg;		/* under valgrind: annotate hand-offs */

	/* Push side, on its own cache line so workers pushing do not slow
	 * the thread popping.
	 */
	_Alignas(64) u16 used_idx;
	u16 signalled_used;	/* used_idx at the last need_notify */
	bool signalled_valid;
	u32 pushes;

	struct vqf_vring_dev_stats own_stats;
};

static inline __virtio16 *dev_used_event(const struct vqf_vring_dev *dev)
{
	return &dev->avail->ring[dev->num];
}

static inline __virtio16 *dev_avail_event(const struct vqf_vring_dev *dev)
{
	return (__virtio16 *)&dev->used->ring[dev->num];
}

void vqf_vring_dev_reset(struct vqf_vring_dev *dev, u16 last_avail_idx,
			 u16 used_idx)
{
	dev->last_avail = last_avail_idx;
	dev->avail_shadow = last_avail_idx;
	dev->used_flags = 0;
	dev->pops = 0;
	dev->used_idx = used_idx;
	dev->signalled_used = used_idx;
	dev->signalled_valid = false;
	dev->pushes = 0;
	WRITE_ONCE(dev->broken, false);
}

int vqf_vring_dev_create(const struct vqf_vring_dev_cfg *cfg,
			 struct vqf_vring_dev **out)
{
	struct vqf_vring_dev *dev;
	unsigned int num = cfg->num;
	void *desc, *avail, *used;

	if (!VQF_IS_POW2(num) || num > VQF_VRING_MAX_NUM ||
	    (cfg->features & ~VQF_VRING_FEATURES) || !cfg->mem)
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
	/* The host view must keep the spec's alignment too: ring fields are
	 * accessed in place with single atomic loads and stores.
	 */
	if (!VQF_IS_ALIGNED((uintptr_t)desc, 16) ||
	    !VQF_IS_ALIGNED((uintptr_t)avail, 2) ||
	    !VQF_IS_ALIGNED((uintptr_t)used, 4))
		return -EINVAL;

	if (vqf_memguard_install())
		return -ENOTRECOVERABLE;
	dev = aligned_alloc(64, VQF_ALIGN(sizeof(*dev), 64));
	if (!dev)
		return -ENOMEM;
	memset(dev, 0, sizeof(*dev));
	dev->mem = cfg->mem;
	dev->desc = desc;
	dev->avail = avail;
	dev->used = used;
	dev->num = num;
	dev->mask = (u16)(num - 1);
	dev->event_idx = cfg->features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	dev->indirect = cfg->features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	dev->notify_on_empty =
		cfg->features & (1ULL << VIRTIO_F_NOTIFY_ON_EMPTY);
	dev->stats = cfg->stats ? cfg->stats : &dev->own_stats;
	dev->hg = vqf_hg_running();
	vqf_vring_dev_reset(dev, cfg->last_avail_idx, cfg->used_idx);

	/* Racy by design: the protocol tolerates stale reads of these. */
	vqf_hg_racy(&dev->avail->flags, 4);
	vqf_hg_racy(dev_used_event(dev), 2);
	vqf_hg_racy(&dev->used->flags, 4);
	vqf_hg_racy(dev_avail_event(dev), 2);
	vqf_hg_racy(&dev->last_avail, 2);
	vqf_hg_racy(&dev->pops, 4);
	vqf_hg_racy(&dev->broken, 1);
	*out = dev;
	return 0;
}

void vqf_vring_dev_destroy(struct vqf_vring_dev *dev)
{
	free(dev);
}

/* Count @err and decide whether the queue survives it. */
static int dev_error(struct vqf_vring_dev *dev, int err)
{
	struct vqf_vring_dev_stats *s = dev->stats;

	switch (err) {
	case -ENODATA:
		s->err_zero_len++;
		return err;
	case -ENOBUFS:
		s->err_no_bufs++;
		return err;
	case -EPROTO:
		s->err_avail_idx++;
		break;
	case -ERANGE:
		s->err_head++;
		break;
	case -ECHRNG:
		s->err_next++;
		break;
	case -ELOOP:
		s->err_loop++;
		break;
	case -EILSEQ:
		s->err_rd_after_wr++;
		break;
	case -EOVERFLOW:
		s->err_overflow++;
		break;
	case -EFAULT:
		s->err_fault++;
		break;
	case -EMLINK:
		s->err_nested_indirect++;
		break;
	case -ENOMSG:
		s->err_indirect_zero++;
		break;
	case -EBADR:
		s->err_indirect_align++;
		break;
	case -E2BIG:
		s->err_indirect_big++;
		break;
	case -EBADRQC:
		s->err_indirect_next++;
		break;
	case -EOPNOTSUPP:
		s->err_indirect_unneg++;
		break;
	case -EFBIG:
		s->err_total_len++;
		break;
	}
	WRITE_ONCE(dev->broken, true);
	return err;
}

/* Append one descriptor's buffer to @c, split at region boundaries. */
static inline int dev_seg(struct vqf_vring_dev *dev, struct vqf_chain *c,
			  u64 addr, u32 len, u16 flags)
{
	bool wr = flags & VRING_DESC_F_WRITE;
	unsigned int n;

	if (unlikely(!len))
		return -ENODATA;
	if (unlikely(addr + len - 1 < addr))
		return -EOVERFLOW;
	if (wr) {
		c->wr_bytes += len;
	} else {
		if (unlikely(c->nr_wr))
			return -EILSEQ;
		c->rd_bytes += len;
	}
	if (unlikely(c->rd_bytes + c->wr_bytes > (1ULL << 32)))
		return -EFBIG;

	n = c->nr_rd + c->nr_wr;
	for (;;) {
		u64 contig;
		void *p = vqf_gmem_find(dev->mem, addr, &contig);
		u32 piece;

		if (unlikely(!p))
			return -EFAULT;
		if (unlikely(n >= c->cap))
			return -ENOBUFS;
		piece = contig < len ? (u32)contig : len;
		c->seg[n].hva = p;
		c->seg[n].gpa = addr;
		c->seg[n].len = piece;
		n++;
		if (wr)
			c->nr_wr++;
		else
			c->nr_rd++;
		len -= piece;
		if (likely(!len))
			return 0;
		addr += piece;
		dev->stats->split_segs++;
	}
}

static bool dev_mapped(const struct vqf_gmem *mem, u64 gpa, u64 len)
{
	while (len) {
		u64 contig;

		if (!vqf_gmem_find(mem, gpa, &contig))
			return false;
		if (contig >= len)
			return true;
		gpa += contig;
		len -= contig;
	}
	return true;
}

/* Walk the indirect table at @addr (the chain's last descriptor). */
static int dev_indirect(struct vqf_vring_dev *dev, struct vqf_chain *c,
			u64 addr, u32 len, u16 flags)
{
	const struct vring_desc *tab;
	unsigned int n, i = 0, count = 0;
	int r;

	if (unlikely(!dev->indirect))
		return -EOPNOTSUPP;
	if (unlikely(flags & VRING_DESC_F_NEXT))
		return -EBADRQC;
	if (unlikely(!len))
		return -ENOMSG;
	if (unlikely(len % sizeof(struct vring_desc)))
		return -EBADR;
	n = len / sizeof(struct vring_desc);
	if (unlikely(n > dev->num))
		return -E2BIG;
	if (unlikely(addr + len - 1 < addr))
		return -EOVERFLOW;
	/* An aligned table inside one region is read in place; one that
	 * crosses regions or is misaligned (the spec does not forbid it) is
	 * copied an entry at a time.
	 */
	tab = VQF_IS_ALIGNED(addr, 16) ? vqf_gmem_ptr(dev->mem, addr, len) :
					 NULL;
	/* A region whose host start is not congruent to its guest start
	 * turns an aligned guest address into a misaligned host pointer.
	 */
	if (tab && !VQF_IS_ALIGNED((uintptr_t)tab, 16))
		tab = NULL;
	if (!tab && !dev_mapped(dev->mem, addr, len))
		return -EFAULT;
	c->indirect = true;
	dev->stats->indirect++;

	for (;;) {
		u64 daddr;
		u32 dlen;
		u16 dflags, dnext;

		if (likely(tab)) {
			daddr = le64_to_cpu(READ_ONCE(tab[i].addr));
			dlen = le32_to_cpu(READ_ONCE(tab[i].len));
			dflags = le16_to_cpu(READ_ONCE(tab[i].flags));
			dnext = le16_to_cpu(READ_ONCE(tab[i].next));
		} else {
			struct vring_desc d;

			if (vqf_gmem_read(dev->mem, addr + 16ULL * i, &d,
					  sizeof(d)))
				return -EFAULT;
			daddr = le64_to_cpu(d.addr);
			dlen = le32_to_cpu(d.len);
			dflags = le16_to_cpu(d.flags);
			dnext = le16_to_cpu(d.next);
		}
		if (unlikely(++count > n))
			return -ELOOP;
		c->ndesc++;
		if (unlikely(dflags & VRING_DESC_F_INDIRECT))
			return -EMLINK;
		r = dev_seg(dev, c, daddr, dlen, dflags);
		if (unlikely(r))
			return r;
		if (!(dflags & VRING_DESC_F_NEXT))
			return 0;
		if (unlikely(dnext >= n))
			return -ECHRNG;
		i = dnext;
	}
}

static int dev_pop(struct vqf_vring_dev *dev, struct vqf_chain *c)
{
	unsigned int i, count = 0;
	u16 head;
	int r;

	if (unlikely(READ_ONCE(dev->broken)))
		return -EIO;
	if (dev->last_avail == dev->avail_shadow) {
		u16 idx = le16_to_cpu(READ_ONCE(dev->avail->idx));

		if (unlikely((u16)(idx - dev->last_avail) > dev->num))
			return dev_error(dev, -EPROTO);
		if (idx == dev->last_avail)
			return 0;
		/* Ring entries and descriptors only after the index that
		 * exposes them: pairs with the smp_wmb() in the driver's
		 * publish (vqf_vring_drv_add()).
		 */
		smp_rmb();
		if (unlikely(dev->hg))
			vqf_hg_after(&dev->avail->idx);
		dev->avail_shadow = idx;
	}
	head = le16_to_cpu(READ_ONCE(dev->avail->ring[dev->last_avail &
						      dev->mask]));
	WRITE_ONCE(dev->last_avail, (u16)(dev->last_avail + 1));
	WRITE_ONCE(dev->pops, dev->pops + 1);

	c->nr_rd = 0;
	c->nr_wr = 0;
	c->rd_bytes = 0;
	c->wr_bytes = 0;
	c->ndesc = 0;
	c->indirect = false;
	c->head = head;
	if (unlikely(head >= dev->num))
		return dev_error(dev, -ERANGE);

	i = head;
	for (;;) {
		const struct vring_desc *d = &dev->desc[i];
		u64 addr = le64_to_cpu(READ_ONCE(d->addr));
		u32 len = le32_to_cpu(READ_ONCE(d->len));
		u16 flags = le16_to_cpu(READ_ONCE(d->flags));
		u16 next = le16_to_cpu(READ_ONCE(d->next));

		if (unlikely(++count > dev->num))
			return dev_error(dev, -ELOOP);
		c->ndesc++;
		if (flags & VRING_DESC_F_INDIRECT) {
			r = dev_indirect(dev, c, addr, len, flags);
			if (unlikely(r))
				return dev_error(dev, r);
			break;
		}
		r = dev_seg(dev, c, addr, len, flags);
		if (unlikely(r))
			return dev_error(dev, r);
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		if (unlikely(next >= dev->num))
			return dev_error(dev, -ECHRNG);
		i = next;
	}
	dev->stats->chains++;
	dev->stats->descs += c->ndesc;
	return 1;
}

static int dev_push(struct vqf_vring_dev *dev, u16 head, u32 len)
{
	struct vring_used_elem *e;

	if (unlikely(READ_ONCE(dev->broken)))
		return -EIO;
	if (unlikely(head >= dev->num)) {
		dev->stats->err_push++;
		return -EINVAL;
	}
	e = dev->used->ring + (dev->used_idx & dev->mask);
	WRITE_ONCE(e->id, cpu_to_le32(head));
	WRITE_ONCE(e->len, cpu_to_le32(len));
	dev->used_idx++;
	dev->pushes++;
	/* The entry (and the buffer contents) before the index: pairs with
	 * the smp_rmb() in vqf_vring_drv_get_buf() after it reads used->idx.
	 */
	smp_wmb();
	if (unlikely(dev->hg))
		vqf_hg_before(&dev->used->idx);
	WRITE_ONCE(dev->used->idx, cpu_to_le16(dev->used_idx));
	dev->stats->pushed++;
	return 0;
}

static bool dev_need_notify(struct vqf_vring_dev *dev)
{
	u16 old = dev->signalled_used, new = dev->used_idx;
	bool valid = dev->signalled_valid, need;

	if (old == new)
		return false;		/* nothing pushed since last time */
	/* used->idx before reading the driver's wishes: pairs with the
	 * smp_mb() in vqf_vring_drv_enable_cb() (and get_buf) between its
	 * used_event/flags store and its re-read of used->idx.
	 */
	smp_mb();
	dev->signalled_used = new;
	dev->signalled_valid = true;
	if (dev->notify_on_empty && READ_ONCE(dev->pops) == dev->pushes &&
	    le16_to_cpu(READ_ONCE(dev->avail->idx)) ==
	    READ_ONCE(dev->last_avail))
		need = true;
	else if (dev->event_idx)
		need = !valid ||
		       vring_need_event(le16_to_cpu(READ_ONCE(
				*dev_used_event(dev))), new, old);
	else
		need = !(le16_to_cpu(READ_ONCE(dev->avail->flags)) &
			 VRING_AVAIL_F_NO_INTERRUPT);
	if (need)
		dev->stats->interrupts_sent++;
	else
		dev->stats->interrupts_suppressed++;
	return need;
}

static void dev_disable_notify(struct vqf_vring_dev *dev)
{
	/* With EVENT_IDX the stale avail_event costs at most one kick. */
	if (dev->event_idx || (dev->used_flags & VRING_USED_F_NO_NOTIFY))
		return;
	dev->used_flags |= VRING_USED_F_NO_NOTIFY;
	WRITE_ONCE(dev->used->flags, cpu_to_le16(dev->used_flags));
}

static bool dev_avail_pending(const struct vqf_vring_dev *dev);

static bool dev_enable_notify(struct vqf_vring_dev *dev)
{
	dev->stats->notify_enabled++;
	if (dev->event_idx) {
		WRITE_ONCE(*dev_avail_event(dev), cpu_to_le16(dev->last_avail));
	} else if (dev->used_flags & VRING_USED_F_NO_NOTIFY) {
		dev->used_flags &= ~VRING_USED_F_NO_NOTIFY;
		WRITE_ONCE(dev->used->flags, cpu_to_le16(dev->used_flags));
	}
	/* Our wish before re-reading avail->idx: pairs with the smp_mb() in
	 * vqf_vring_drv_kick_prepare() between its avail->idx store and its
	 * read of avail_event/flags.  One of the two sides sees the other.
	 */
	smp_mb();
	return !dev_avail_pending(dev);
}

static bool dev_avail_pending(const struct vqf_vring_dev *dev)
{
	return le16_to_cpu(READ_ONCE(dev->avail->idx)) != dev->last_avail;
}

/*
 * The entry points below touch guest memory the front-end may truncate
 * under us (vhost-user hands it over as file descriptors): each runs under
 * a SIGBUS recovery point, and a fault there breaks the queue with its own
 * errno and counter instead of killing the process.
 */
static int dev_peer_fault(struct vqf_vring_dev *dev)
{
	dev->stats->err_peer_fault++;
	WRITE_ONCE(dev->broken, true);
	return -EHWPOISON;
}

int vqf_vring_dev_pop(struct vqf_vring_dev *dev, struct vqf_chain *c)
{
	struct vqf_memguard g;
	int r;

	if (sigsetjmp(g.env, 0))
		return dev_peer_fault(dev);
	vqf_memguard_enter(&g);
	r = dev_pop(dev, c);
	vqf_memguard_leave(&g);
	return r;
}

int vqf_vring_dev_push(struct vqf_vring_dev *dev, u16 head, u32 len)
{
	struct vqf_memguard g;
	int r;

	if (sigsetjmp(g.env, 0))
		return dev_peer_fault(dev);
	vqf_memguard_enter(&g);
	r = dev_push(dev, head, len);
	vqf_memguard_leave(&g);
	return r;
}

bool vqf_vring_dev_need_notify(struct vqf_vring_dev *dev)
{
	struct vqf_memguard g;
	bool r;

	if (sigsetjmp(g.env, 0)) {
		dev_peer_fault(dev);
		return true;	/* the driver learns of the broken queue */
	}
	vqf_memguard_enter(&g);
	r = dev_need_notify(dev);
	vqf_memguard_leave(&g);
	return r;
}

void vqf_vring_dev_disable_notify(struct vqf_vring_dev *dev)
{
	struct vqf_memguard g;

	if (sigsetjmp(g.env, 0)) {
		dev_peer_fault(dev);
		return;
	}
	vqf_memguard_enter(&g);
	dev_disable_notify(dev);
	vqf_memguard_leave(&g);
}

bool vqf_vring_dev_enable_notify(struct vqf_vring_dev *dev)
{
	struct vqf_memguard g;
	bool r;

	if (sigsetjmp(g.env, 0)) {
		dev_peer_fault(dev);
		return true;	/* nothing more to pop: pop says -EIO */
	}
	vqf_memguard_enter(&g);
	r = dev_enable_notify(dev);
	vqf_memguard_leave(&g);
	return r;
}

bool vqf_vring_dev_avail_pending(const struct vqf_vring_dev *dev)
{
	struct vqf_memguard g;
	bool r;

	/* Pending: the caller pops next and gets the broken queue's -EIO. */
	if (sigsetjmp(g.env, 0)) {
		dev_peer_fault((struct vqf_vring_dev *)dev);
		return true;
	}
	vqf_memguard_enter(&g);
	r = dev_avail_pending(dev);
	vqf_memguard_leave(&g);
	return r;
}

bool vqf_vring_dev_is_broken(const struct vqf_vring_dev *dev)
{
	return READ_ONCE(dev->broken);
}

const struct vqf_vring_dev_stats *
vqf_vring_dev_stats(const struct vqf_vring_dev *dev)
{
	return dev->stats;
}
