// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Random steps of both halves checked against a plain model after every
 * step: which buffers are available, held by the device, used, and what
 * the device must see and the driver must get back.  Fixed seed; VQF_SEED
 * overrides.
 */
#include "vring_fixture.h"

#define MAXB	64		/* model slots (>= largest num used) */
#define MAXS	5		/* segments per buffer */

struct mbuf {
	struct vqf_vring_gseg s[MAXS];
	unsigned int nrd, nwr;
	u64 wr_bytes;
	u16 head;		/* once popped */
	u32 len;		/* once pushed */
	u8 tag;			/* pattern the device writes */
	bool indirect;
};

struct model {
	struct mbuf b[MAXB];	/* indexed by cookie - 1 */
	unsigned int avail[MAXB], navail;	/* FIFO: added, not popped */
	unsigned int held[MAXB], nheld;		/* popped, not pushed */
	unsigned int used[MAXB], nused;		/* FIFO: pushed, not taken */
	bool busy[MAXB];
	unsigned int descs;			/* descriptors in use */
};

static void fifo_del(unsigned int *q, unsigned int *n, unsigned int i)
{
	memmove(&q[i], &q[i + 1], (*n - i - 1) * sizeof(*q));
	(*n)--;
}

static u64 rnd_addr(u32 len)
{
	/* Anywhere in the two adjacent buffer regions, often straddling. */
	if (rand() % 4 == 0)
		return BUF2_GPA - 1 - rand() % (len < 64 ? len : 64);
	return BUF_GPA + rand() % (2 * BUF_SIZE - len);
}

static void step_add(struct fx *f, struct model *m)
{
	unsigned int id, i, n = 1 + rand() % MAXS;
	struct mbuf *b;
	u64 ind0 = f->ds.indirect_added;
	int r;

	for (id = 0; id < MAXB && m->busy[id]; id++)
		;
	if (id == MAXB)
		return;
	b = &m->b[id];
	memset(b, 0, sizeof(*b));
	b->nrd = rand() % (n + 1);
	b->nwr = n - b->nrd;
	for (i = 0; i < n; i++) {
		b->s[i].len = 1 + rand() % 200;
		b->s[i].addr = rnd_addr(b->s[i].len);
		if (i >= b->nrd)
			b->wr_bytes += b->s[i].len;
	}
	r = vqf_vring_drv_add(f->drv, b->s, b->nrd, b->s + b->nrd, b->nwr,
			      (void *)(uintptr_t)(id + 1));
	if (n > f->num) {
		assert_int_equal(r, -E2BIG);
		return;
	}
	if (r == -ENOSPC) {
		/* only when neither a table nor enough descriptors fit */
		assert_true(vqf_vring_drv_num_free(f->drv) < n);
		return;
	}
	assert_int_equal(r, 0);
	b->indirect = f->ds.indirect_added != ind0;
	assert_true(!b->indirect || n > 1);
	m->busy[id] = true;
	m->avail[m->navail++] = id;
	m->descs += b->indirect ? 1 : n;
}

static void step_pop(struct fx *f, struct model *m)
{
	int r = vqf_vring_dev_pop(f->dev, &f->c);
	unsigned int id, i, k, off;
	struct mbuf *b;

	if (!m->navail) {
		assert_int_equal(r, 0);
		return;
	}
	assert_int_equal(r, 1);
	id = m->avail[0];
	fifo_del(m->avail, &m->navail, 0);
	b = &m->b[id];
	b->head = f->c.head;
	assert_int_equal(f->c.indirect, b->indirect);
	/* segments, re-joined across region splits, are the buffer's */
	k = 0;
	off = 0;
	for (i = 0; i < b->nrd + b->nwr; i++) {
		u32 left = b->s[i].len;

		while (left) {
			struct vqf_seg *s = &f->seg[k];
			u64 contig = 0;

			assert_true(k < f->c.nr_rd + f->c.nr_wr);
			assert_int_equal(k < f->c.nr_rd, i < b->nrd);
			assert_int_equal(s->gpa, b->s[i].addr + off);
			assert_true(s->len <= left);
			assert_ptr_equal(vqf_gmem_find(&f->mem, s->gpa, &contig),
					 s->hva);
			left -= s->len;
			off = left ? off + s->len : 0;
			k++;
		}
	}
	assert_int_equal(k, f->c.nr_rd + f->c.nr_wr);
	m->held[m->nheld++] = id;
}

static void step_push(struct fx *f, struct model *m)
{
	unsigned int pick, id, k;
	struct mbuf *b;

	if (!m->nheld)
		return;
	pick = rand() % m->nheld;	/* out of order */
	id = m->held[pick];
	fifo_del(m->held, &m->nheld, pick);
	b = &m->b[id];
	b->len = b->wr_bytes ? rand() % (b->wr_bytes + 1) : 0;
	b->tag = (u8)rand();
	for (k = 0; k < b->nwr; k++) {
		u64 left = b->s[b->nrd + k].len, gpa = b->s[b->nrd + k].addr;

		/* write through the device's view of guest memory */
		while (left) {
			u64 contig = 0;
			u8 *p = vqf_gmem_find(&f->mem, gpa, &contig);
			u64 n = contig < left ? contig : left;

			memset(p, b->tag, n);
			gpa += n;
			left -= n;
		}
	}
	assert_int_equal(vqf_vring_dev_push(f->dev, b->head, b->len), 0);
	m->used[m->nused++] = id;
}

static void step_get(struct fx *f, struct model *m)
{
	void *cookie;
	u32 len;
	int r = vqf_vring_drv_get_buf(f->drv, &cookie, &len);
	unsigned int id;
	struct mbuf *b;

	if (!m->nused) {
		assert_int_equal(r, 0);
		return;
	}
	assert_int_equal(r, 1);
	id = m->used[0];
	fifo_del(m->used, &m->nused, 0);
	b = &m->b[id];
	assert_ptr_equal(cookie, (void *)(uintptr_t)(id + 1));
	assert_int_equal(len, b->len);
	if (b->nwr) {
		/* the last writable segment keeps the tag unless a later
		 * buffer overlapped it; check its first byte only when the
		 * buffer is the only one in flight
		 */
		if (m->navail + m->nheld + m->nused == 0) {
			u64 contig = 0;
			u8 *p = vqf_gmem_find(&f->mem,
					      b->s[b->nrd].addr, &contig);

			assert_int_equal(*p, b->tag);
		}
	}
	m->busy[id] = false;
	m->descs -= b->indirect ? 1 : b->nrd + b->nwr;
}

static void step_notify(struct fx *f, struct model *m)
{
	switch (rand() % 4) {
	case 0:
		vqf_vring_drv_disable_cb(f->drv);
		break;
	case 1:
		/* true exactly when nothing is waiting in the used ring */
		assert_int_equal(vqf_vring_drv_enable_cb(f->drv), !m->nused);
		break;
	case 2:
		vqf_vring_dev_disable_notify(f->dev);
		break;
	default:
		assert_int_equal(vqf_vring_dev_enable_notify(f->dev),
				 !m->navail);
	}
	(void)vqf_vring_drv_kick_prepare(f->drv);
	(void)vqf_vring_dev_need_notify(f->dev);
}

static void test_model(void **state)
{
	unsigned int seed = fx_seed();
	unsigned int runs = fx_under_valgrind() ? 20 : 200, run, step;
	static struct model m;

	srand(seed);
	print_message("seed %u\n", seed);
	for (run = 0; run < runs; run++) {
		unsigned int num = 1u << (rand() % 7);	/* 1 .. 64 */
		u64 feat = (rand() % 2 ? F_EVENT : 0) |
			   (rand() % 2 ? F_INDIRECT : 0);
		struct fx f;

		fx_init(&f, num, feat, (u16)(65536 - rand() % 300),
			rand() % 4);
		memset(&m, 0, sizeof(m));
		for (step = 0; step < 2000; step++) {
			switch (rand() % 9) {
			case 0:
			case 1:
			case 2:
				step_add(&f, &m);
				break;
			case 3:
			case 4:
				step_pop(&f, &m);
				break;
			case 5:
			case 6:
				step_push(&f, &m);
				break;
			case 7:
				step_get(&f, &m);
				break;
			default:
				step_notify(&f, &m);
			}
			assert_int_equal(vqf_vring_drv_num_free(f.drv),
					 num - m.descs);
			assert_int_equal(vqf_vring_dev_avail_pending(f.dev),
					 m.navail > 0);
			assert_int_equal(vqf_vring_drv_more_used(f.drv),
					 m.nused > 0);
			assert_false(vqf_vring_drv_is_broken(f.drv));
			assert_false(vqf_vring_dev_is_broken(f.dev));
		}
		assert_int_equal(f.ds.bufs_added, f.vs.chains + m.navail);
		fx_fini(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
