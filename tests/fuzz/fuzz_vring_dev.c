// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_vring_dev - sim/vring device half walking a hostile descriptor
 * table and available ring in guest memory.
 *
 * Input: u8 queue size (1 << (b % 6)), u8 features (bit 0 EVENT_IDX,
 * bit 1 INDIRECT_DESC, bit 2 NOTIFY_ON_EMPTY), u16 starting index, u16
 * split (guest memory is one region, or two adjacent regions split at this
 * offset, so buffers may cross regions), then the guest memory image
 * (MEM bytes from guest address BASE; rings laid out from BASE by
 * vqf_vring_layout(), the rest is buffers and indirect tables).
 *
 * Each region is an exactly-sized heap block.  Invariants: every segment
 * of a popped chain lies inside one region, its host pointer matches its
 * guest address, lengths add up to the chain's totals; writing the whole
 * writable part stays inside guest memory; return values are documented;
 * a broken queue stays broken until reset.
 */
#include "fuzz_common.h"
#include "vqf_vring_dev.h"

#define BASE	0x10000ULL
#define MEM	16384
#define MAXSEG	64

struct mem {
	struct vqf_gmem map;
	u8 *hva[2];
	u64 gpa[2], size[2];
	unsigned int nr;
};

static void check_seg(const struct mem *m, const struct vqf_seg *s)
{
	unsigned int i;

	FZ_CHECK(s->len > 0);
	for (i = 0; i < m->nr; i++) {
		if (s->gpa >= m->gpa[i] &&
		    s->gpa + s->len <= m->gpa[i] + m->size[i]) {
			FZ_CHECK(s->hva == m->hva[i] + (s->gpa - m->gpa[i]));
			return;
		}
	}
	FZ_CHECK(!"segment outside one guest memory region");
}

static bool documented(int r)
{
	switch (r) {
	case -EPROTO: case -ERANGE: case -ECHRNG: case -ELOOP: case -EILSEQ:
	case -EOVERFLOW: case -EFAULT: case -ENODATA: case -EMLINK:
	case -ENOMSG: case -EBADR: case -E2BIG: case -EBADRQC:
	case -EOPNOTSUPP: case -EFBIG: case -ENOBUFS: case -EIO:
		return true;
	default:
		return false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vqf_vring_dev_stats stats;
	struct vqf_vring_dev_cfg cfg;
	struct vqf_vring_dev *dev;
	struct vqf_seg seg[MAXSEG];
	struct vqf_chain c;
	struct mem m;
	u64 split, done = 0, need;
	u8 b, *img;
	unsigned int i, rounds;
	struct fz f;
	int r;

	memset(&m, 0, sizeof(m));
	memset(&cfg, 0, sizeof(cfg));
	fz_init(&f, data, size);
	cfg.num = 1u << (fz_u8(&f) % 6);
	b = fz_u8(&f);
	if (b & 1)
		cfg.features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (b & 2)
		cfg.features |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	if (b & 4)
		cfg.features |= 1ULL << VIRTIO_F_NOTIFY_ON_EMPTY;
	cfg.last_avail_idx = cfg.used_idx = fz_u16(&f);
	split = fz_u16(&f) % MEM;
	need = vqf_vring_layout(cfg.num, BASE, 4, &cfg.addr);
	FZ_CHECK(need && need <= MEM);
	/* The rings must lie in one region: split only after them. */
	if (split && split < need)
		split = 0;

	img = calloc(1, MEM);
	FZ_CHECK(img);
	fz_take(&f, img, MEM);
	vqf_gmem_init(&m.map);
	m.nr = split ? 2 : 1;
	m.gpa[0] = BASE;
	m.size[0] = split ? split : MEM;
	m.gpa[1] = BASE + split;
	m.size[1] = MEM - split;
	for (i = 0; i < m.nr; i++) {
		m.hva[i] = malloc(m.size[i]);
		FZ_CHECK(m.hva[i]);
		memcpy(m.hva[i], img + (m.gpa[i] - BASE), m.size[i]);
		FZ_CHECK(vqf_gmem_add(&m.map, m.gpa[i], m.size[i],
				      m.hva[i]) == 0);
	}
	free(img);

	memset(&stats, 0, sizeof(stats));
	cfg.mem = &m.map;
	cfg.stats = &stats;
	FZ_CHECK(vqf_vring_dev_create(&cfg, &dev) == 0);

	for (rounds = 0; rounds < 4 * cfg.num + 4; rounds++) {
		u64 rd = 0, wr = 0;

		c.seg = seg;
		c.cap = (rounds & 1) ? 2 : MAXSEG;	/* -ENOBUFS too */
		r = vqf_vring_dev_pop(dev, &c);
		if (r == 0)
			break;
		if (r < 0 && r != -ENODATA && r != -ENOBUFS) {
			FZ_CHECK(documented(r));
			FZ_CHECK(vqf_vring_dev_is_broken(dev));
			FZ_CHECK(vqf_vring_dev_pop(dev, &c) == -EIO);
			FZ_CHECK(vqf_vring_dev_push(dev, 0, 0) == -EIO);
			break;
		}
		FZ_CHECK(c.head < cfg.num);
		if (r > 0) {
			FZ_CHECK(c.nr_rd + c.nr_wr <= c.cap);
			for (i = 0; i < c.nr_rd + c.nr_wr; i++) {
				check_seg(&m, &seg[i]);
				if (i < c.nr_rd)
					rd += seg[i].len;
				else
					wr += seg[i].len;
			}
			FZ_CHECK(rd == c.rd_bytes && wr == c.wr_bytes);
			for (i = c.nr_rd; i < c.nr_rd + c.nr_wr; i++)
				memset(seg[i].hva, 0x5a, seg[i].len);
		}
		FZ_CHECK(vqf_vring_dev_push(dev, c.head,
					    r > 0 ? (u32)wr : 0) == 0);
		(void)vqf_vring_dev_need_notify(dev);
		done++;
	}
	if (!vqf_vring_dev_is_broken(dev)) {
		(void)vqf_vring_dev_enable_notify(dev);
		vqf_vring_dev_disable_notify(dev);
	}
	FZ_CHECK(stats.pushed == done || vqf_vring_dev_is_broken(dev));

	vqf_vring_dev_destroy(dev);
	for (i = 0; i < m.nr; i++)
		free(m.hva[i]);
	return 0;
}
