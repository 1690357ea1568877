// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * lib/vqf_forget: single FORGET layout, batching boundaries, queue
 * wrap-around, two-phase send, and a randomized run against a FIFO model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vqf_forget.h"
#include "vqf_fuse_ops.h"

#define IH	((u32)sizeof(struct fuse_in_header))
#define ONE	((u32)sizeof(struct fuse_forget_one))

static void test_single_forget_layout(void **state)
{
	struct vqf_forget_req f;

	(void)state;
	assert_int_equal(sizeof(f), 48);
	assert_int_equal(VQF_FORGET_ONE_SIZE, 48);
	assert_int_equal(vqf_forget_build_one(&f, 9, 42, 3), 0);
	assert_int_equal(f.ih.len, 48);
	assert_int_equal(f.ih.opcode, FUSE_FORGET);
	assert_int_equal(f.ih.unique, 9);
	assert_int_equal(f.ih.nodeid, 42);
	assert_int_equal(f.ih.uid, 0);
	assert_int_equal(f.arg.nlookup, 3);
	assert_int_equal(vqf_forget_build_one(&f, 9, 0, 3), -EINVAL);
	assert_int_equal(vqf_forget_build_one(&f, 9, 42, 0), -EINVAL);
	/* The table agrees: one fixed arg of that size, no reply, hiprio. */
	assert_int_equal(vqf_fuse_op(FUSE_FORGET)->in[0].size,
			 sizeof(f.arg));
}

static void test_queue_basics(void **state)
{
	struct fuse_forget_one slots[3];
	struct vqf_forget_queue q;

	(void)state;
	assert_int_equal(vqf_forget_queue_init(&q, NULL, 3), -EINVAL);
	assert_int_equal(vqf_forget_queue_init(&q, slots, 0), -EINVAL);
	assert_int_equal(vqf_forget_queue_init(&q, slots, 3), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 0, 1), -EINVAL);
	assert_int_equal(vqf_forget_queue_push(&q, 1, 0), -EINVAL);
	assert_int_equal(vqf_forget_queue_push(&q, 1, 1), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 2, 1), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 3, 1), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 4, 1), -ENOSPC);
	assert_int_equal(vqf_forget_queue_len(&q), 3);
	assert_int_equal(vqf_forget_consume(&q, 4), -EINVAL);
	assert_int_equal(vqf_forget_queue_len(&q), 3);
	assert_int_equal(vqf_forget_consume(&q, 2), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 5, 1), 0);
	assert_int_equal(vqf_forget_queue_push(&q, 6, 1), 0);
	assert_int_equal(vqf_forget_queue_len(&q), 3);
}

static void test_build_errors(void **state)
{
	struct fuse_forget_one slots[4];
	struct vqf_forget_queue q;
	u8 buf[256];
	u32 nr = 99;

	(void)state;
	vqf_forget_queue_init(&q, slots, 4);
	assert_int_equal(vqf_forget_build(&q, buf, sizeof(buf), 8192, 1, true,
					  &nr), -ENOENT);
	assert_int_equal(nr, 0);
	vqf_forget_queue_push(&q, 7, 2);
	assert_int_equal(vqf_forget_build(&q, buf, 47, 8192, 1, true, &nr),
			 -ENOSPC);
	assert_int_equal(vqf_forget_build(&q, buf, 256, 47, 1, true, &nr),
			 -ENOSPC);
	assert_int_equal(vqf_forget_build(&q, NULL, 256, 8192, 1, true, &nr),
			 -EINVAL);
	assert_int_equal(vqf_forget_build(&q, buf, 256, 8192, 1, true, NULL),
			 -EINVAL);
	assert_int_equal(vqf_forget_build(&q, buf, 48, 48, 1, true, &nr), 48);
	assert_int_equal(nr, 1);
}

static void check_batch(const u8 *buf, int len, u32 n, u64 unique,
			u64 first_node)
{
	struct fuse_in_header ih;
	struct fuse_batch_forget_in bin;
	u32 i;

	assert_int_equal(len, IH + 8 + n * ONE);
	memcpy(&ih, buf, sizeof(ih));
	memcpy(&bin, buf + IH, sizeof(bin));
	assert_int_equal(ih.len, len);
	assert_int_equal(ih.opcode, FUSE_BATCH_FORGET);
	assert_int_equal(ih.unique, unique);
	assert_int_equal(ih.nodeid, 0);
	assert_int_equal(bin.count, n);
	assert_int_equal(bin.dummy, 0);
	for (i = 0; i < n; i++) {
		struct fuse_forget_one e;

		memcpy(&e, buf + IH + 8 + i * ONE, sizeof(e));
		assert_int_equal(e.nodeid, first_node + i);
		assert_int_equal(e.nlookup, (first_node + i) * 10);
	}
}

static void test_batch_boundaries(void **state)
{
	static struct fuse_forget_one slots[1024];
	static u8 buf[16384];
	struct vqf_forget_queue q;
	u32 nr, i, k;
	int len;

	(void)state;
	assert_int_equal(vqf_forget_max_batch(0), 0);
	assert_int_equal(vqf_forget_max_batch(IH + 8 + ONE - 1), 0);
	assert_int_equal(vqf_forget_max_batch(IH + 8 + ONE), 1);
	assert_int_equal(vqf_forget_max_batch(VQF_FORGET_DEFAULT_MAX_REQ), 509);
	assert_int_equal(vqf_forget_max_batch(0xffffffffu),
			 (0xffffffffu - 48) / 16);

	for (k = 2; k <= 6; k++) {
		u32 max = IH + 8 + k * ONE;

		vqf_forget_queue_init(&q, slots, 1024);
		for (i = 1; i <= 20; i++)
			vqf_forget_queue_push(&q, i, i * 10);
		/* Exactly k fit; one byte less gives k - 1. */
		len = vqf_forget_build(&q, buf, sizeof(buf), max, 5, true, &nr);
		assert_int_equal(nr, k);
		check_batch(buf, len, k, 5, 1);
		len = vqf_forget_build(&q, buf, sizeof(buf), max - 1, 5, true,
				       &nr);
		if (k - 1 >= 2) {
			assert_int_equal(nr, k - 1);
			check_batch(buf, len, k - 1, 5, 1);
		} else {
			assert_int_equal(len, 48);	/* FORGET */
			assert_int_equal(nr, 1);
		}
		/* buf_size bounds it the same way. */
		len = vqf_forget_build(&q, buf, max, 1u << 20, 5, true, &nr);
		assert_int_equal(nr, k);
		/* The build did not remove anything. */
		assert_int_equal(vqf_forget_queue_len(&q), 20);
	}

	/* Default limit: 1000 queued go out as 509 + 491. */
	vqf_forget_queue_init(&q, slots, 1024);
	for (i = 1; i <= 1000; i++)
		vqf_forget_queue_push(&q, i, i * 10);
	len = vqf_forget_build(&q, buf, sizeof(buf),
			       VQF_FORGET_DEFAULT_MAX_REQ, 1, true, &nr);
	assert_true(len <= VQF_FORGET_DEFAULT_MAX_REQ);
	check_batch(buf, len, 509, 1, 1);
	assert_int_equal(vqf_forget_consume(&q, nr), 0);
	len = vqf_forget_build(&q, buf, sizeof(buf),
			       VQF_FORGET_DEFAULT_MAX_REQ, 2, true, &nr);
	check_batch(buf, len, 491, 2, 510);
	assert_int_equal(vqf_forget_consume(&q, nr), 0);
	assert_int_equal(vqf_forget_queue_len(&q), 0);
}

static void test_single_entry_and_no_batch(void **state)
{
	struct fuse_forget_one slots[4];
	struct vqf_forget_queue q;
	struct vqf_forget_req f;
	u8 buf[256];
	u32 nr;

	(void)state;
	vqf_forget_queue_init(&q, slots, 4);
	vqf_forget_queue_push(&q, 11, 4);
	/* One queued: FORGET even when batching is allowed (as Linux). */
	assert_int_equal(vqf_forget_build(&q, buf, sizeof(buf), 8192, 3, true,
					  &nr), 48);
	memcpy(&f, buf, sizeof(f));
	assert_int_equal(f.ih.opcode, FUSE_FORGET);
	assert_int_equal(f.ih.nodeid, 11);
	assert_int_equal(f.arg.nlookup, 4);
	vqf_forget_queue_push(&q, 12, 5);
	/* Server older than 7.16: FORGETs one by one, in order. */
	assert_int_equal(vqf_forget_build(&q, buf, sizeof(buf), 8192, 3,
					  false, &nr), 48);
	assert_int_equal(nr, 1);
	memcpy(&f, buf, sizeof(f));
	assert_int_equal(f.ih.nodeid, 11);
	vqf_forget_consume(&q, nr);
	vqf_forget_build(&q, buf, sizeof(buf), 8192, 4, false, &nr);
	memcpy(&f, buf, sizeof(f));
	assert_int_equal(f.ih.nodeid, 12);
	assert_int_equal(f.arg.nlookup, 5);
}

/* Randomized pushes, builds with random limits, partial sends. */
static u64 rng;

static u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (u32)(rng >> 11);
}

static void test_randomized_fifo(void **state)
{
	const char *seed = getenv("VQF_SEED");
	unsigned int iters = getenv("VQF_UNDER_VALGRIND") ? 2000 : 40000;
	static struct fuse_forget_one slots[37], model[100000];
	static u8 buf[1024];
	struct vqf_forget_queue q;
	u32 mhead = 0, mtail = 0, it, i, nr;
	u64 next = 1;

	(void)state;
	rng = seed ? strtoull(seed, NULL, 0) : 0xf0f0123ULL;
	if (!rng)
		rng = 1;
	vqf_forget_queue_init(&q, slots, 37);
	for (it = 0; it < iters && mtail < 99000; it++) {
		if (rnd() % 3) {
			u64 nl = rnd() % 5 + 1;
			int ret = vqf_forget_queue_push(&q, next, nl);

			if (mtail - mhead == 37) {
				assert_int_equal(ret, -ENOSPC);
			} else {
				assert_int_equal(ret, 0);
				model[mtail].nodeid = next;
				model[mtail++].nlookup = nl;
			}
			next++;
		} else {
			u32 max = rnd() % 600;
			bool batch = rnd() % 4;
			int len = vqf_forget_build(&q, buf, sizeof(buf), max,
						   it, batch, &nr);
			u32 want;

			if (mtail == mhead) {
				assert_int_equal(len, -ENOENT);
				continue;
			}
			if (max < 48) {
				assert_int_equal(len, -ENOSPC);
				continue;
			}
			want = batch ? VQF_MIN(mtail - mhead,
					       vqf_forget_max_batch(max)) : 1;
			if (want < 1)
				want = 1;
			assert_int_equal(nr, want);
			assert_true((u32)len <= max);
			if (nr == 1) {
				struct vqf_forget_req f;

				memcpy(&f, buf, sizeof(f));
				assert_int_equal(f.ih.nodeid,
						 model[mhead].nodeid);
				assert_int_equal(f.arg.nlookup,
						 model[mhead].nlookup);
			} else {
				for (i = 0; i < nr; i++) {
					struct fuse_forget_one e;

					memcpy(&e, buf + 48 + i * 16,
					       sizeof(e));
					assert_int_equal(e.nodeid,
						model[mhead + i].nodeid);
					assert_int_equal(e.nlookup,
						model[mhead + i].nlookup);
				}
			}
			/* Sometimes the ring was full: nothing consumed. */
			if (rnd() % 5) {
				assert_int_equal(vqf_forget_consume(&q, nr), 0);
				mhead += nr;
			}
		}
		assert_int_equal(vqf_forget_queue_len(&q), mtail - mhead);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_forget_layout),
		cmocka_unit_test(test_queue_basics),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_batch_boundaries),
		cmocka_unit_test(test_single_entry_and_no_batch),
		cmocka_unit_test(test_randomized_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
