// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dev_reply(): fuse_out_header + payload pieces scattered over
 * device-writable segments of any split; too-small space; bad errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vqf_dev.h"

#define HDR	((u32)sizeof(struct fuse_out_header))
#define CANARY	0xc5

static u8 src[256];
static u8 dst[512];
static u8 model[512];

static void fill_src(void)
{
	unsigned int k;

	for (k = 0; k < sizeof(src); k++)
		src[k] = (u8)(k * 13 + 5);
}

static unsigned int seed_from_env(void)
{
	const char *s = getenv("VQF_SEED");

	return s ? (unsigned int)strtoul(s, NULL, 0) : 0x5eed;
}

static bool under_valgrind(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

/* The bytes a correct reply of @p pieces must leave in the first segs. */
static u32 build_model(u64 unique, int error, const struct vqf_dev_piece *pc,
		       u32 npc)
{
	struct fuse_out_header oh = { .error = error, .unique = unique };
	u32 off = HDR, k;

	for (k = 0; k < npc; k++) {
		memcpy(model + off, pc[k].base, pc[k].len);
		off += pc[k].len;
	}
	oh.len = off;
	memcpy(model, &oh, HDR);
	return off;
}

/*
 * Writable space of @room bytes split as [0,a) [] [a,b) [b,room), placed
 * contiguously in dst with a canary after it; check the reply.
 */
static void check_split(const struct vqf_dev_piece *pc, u32 npc, u32 want,
			u32 room, u32 a, u32 b)
{
	struct vqf_dev_wseg ws[4] = {
		{ dst, a }, { dst + a, 0 }, { dst + a, b - a },
		{ dst + b, room - b },
	};
	struct vqf_dev_stats st = { 0 };
	int ret;

	memset(dst, CANARY, sizeof(dst));
	ret = vqf_dev_reply(ws, 4, 77, 0, pc, npc, &st);
	if (want > room) {
		assert_int_equal(ret, room < HDR ? -ENOBUFS : -EMSGSIZE);
		assert_int_equal(room < HDR ? st.reply_no_room :
				 st.reply_overflow, 1);
		assert_int_equal(dst[0], CANARY);
		assert_int_equal(st.replies, 0);
		return;
	}
	assert_int_equal(ret, want);
	assert_memory_equal(dst, model, want);
	assert_int_equal(dst[want], CANARY);
	assert_int_equal(st.replies, 1);
}

/* Every split of the writable space, exact, with slack, and too small. */
static void all_splits(void **state)
{
	struct vqf_dev_piece pc[3] = {
		{ src, 7 }, { src + 7, 0 }, { src + 50, 13 },
	};
	u32 want, room, a, b;

	(void)state;
	fill_src();
	want = build_model(77, 0, pc, 3);
	assert_int_equal(want, HDR + 20);
	for (room = 0; room <= want + 3; room++)
		for (a = 0; a <= room; a++)
			for (b = a; b <= room; b++)
				check_split(pc, 3, want, room, a, b);
}

static void header_only_splits(void **state)
{
	u32 want, a, b;

	(void)state;
	want = build_model(77, 0, NULL, 0);
	for (a = 0; a <= HDR; a++)
		for (b = a; b <= HDR; b++)
			check_split(NULL, 0, want, HDR, a, b);
}

static void no_segments(void **state)
{
	struct vqf_dev_stats st = { 0 };

	(void)state;
	assert_int_equal(vqf_dev_reply(NULL, 0, 1, -ENOENT, NULL, 0, &st),
			 -ENOBUFS);
	assert_int_equal(st.reply_no_room, 1);
	/* Stats are optional. */
	assert_int_equal(vqf_dev_reply(NULL, 0, 1, 0, NULL, 0, NULL), -ENOBUFS);
}

static void error_reply(void **state)
{
	struct vqf_dev_wseg ws = { dst, sizeof(dst) };
	const struct fuse_out_header *oh = (const void *)dst;
	struct vqf_dev_stats st = { 0 };

	(void)state;
	memset(dst, CANARY, sizeof(dst));
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, -ENOENT, NULL, 0, &st), HDR);
	assert_int_equal(oh->len, HDR);
	assert_int_equal(oh->error, -ENOENT);
	assert_int_equal(oh->unique, 9);
	assert_int_equal(dst[HDR], CANARY);
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, -4095, NULL, 0, &st), HDR);
}

static void bad_errors(void **state)
{
	struct vqf_dev_wseg ws = { dst, sizeof(dst) };
	struct vqf_dev_piece pc = { src, 4 };
	struct vqf_dev_piece empty = { src, 0 };
	struct vqf_dev_stats st = { 0 };

	(void)state;
	memset(dst, CANARY, sizeof(dst));
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, 1, NULL, 0, &st), -ERANGE);
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, -4096, NULL, 0, &st),
			 -ERANGE);
	assert_int_equal(st.reply_bad_error, 2);
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, -EIO, &pc, 1, &st), -EINVAL);
	assert_int_equal(st.reply_err_payload, 1);
	/* An empty piece is no payload. */
	assert_int_equal(vqf_dev_reply(&ws, 1, 9, -EIO, &empty, 1, &st), HDR);
	assert_int_equal(st.replies, 1);
}

/* Random pieces over random segments, checked against the model. */
static void randomized(void **state)
{
	unsigned int seed = seed_from_env(), iters, it;
	struct vqf_dev_piece pc[6];
	struct vqf_dev_wseg ws[12];

	(void)state;
	fill_src();
	srand(seed);
	iters = under_valgrind() ? 300 : 5000;
	for (it = 0; it < iters; it++) {
		u32 npc = rand() % 7, nws = rand() % 13, k, off = 0, room = 0;
		struct vqf_dev_stats st = { 0 };
		u32 want;
		int ret;

		for (k = 0; k < npc; k++) {
			pc[k].len = rand() % 40;
			pc[k].base = src + rand() % (sizeof(src) - 40);
		}
		want = build_model(it, 0, pc, npc);
		for (k = 0; k < nws; k++) {
			ws[k].len = rand() % 50;
			ws[k].base = dst + off;
			off += ws[k].len;
		}
		room = off;
		memset(dst, CANARY, sizeof(dst));
		ret = vqf_dev_reply(ws, nws, it, 0, pc, npc, &st);
		if (room < HDR) {
			assert_int_equal(ret, -ENOBUFS);
		} else if (want > room) {
			assert_int_equal(ret, -EMSGSIZE);
		} else {
			if (ret != (int)want)
				print_error("seed %#x iteration %u\n", seed, it);
			assert_int_equal(ret, want);
			assert_memory_equal(dst, model, want);
		}
		if (ret < 0)
			assert_int_equal(dst[0], CANARY);
		else
			assert_int_equal(dst[want], CANARY);
	}
}

/* A notification: unique 0, the code in the error field, its payload. */
static void notifications(void **state)
{
	struct vqf_dev_wseg ws[2] = { { dst, 10 }, { dst + 10, 40 } };
	struct vqf_dev_wseg tiny = { dst, HDR - 1 };
	struct vqf_dev_piece pc = { src, 24 };
	struct vqf_dev_stats st = { 0 };
	struct fuse_out_header oh;

	(void)state;
	memset(dst, CANARY, sizeof(dst));
	assert_int_equal(vqf_dev_notify(ws, 2, FUSE_NOTIFY_INVAL_INODE, &pc,
					1, &st), HDR + 24);
	memcpy(&oh, dst, sizeof(oh));
	assert_int_equal(oh.len, HDR + 24);
	assert_int_equal(oh.error, FUSE_NOTIFY_INVAL_INODE);
	assert_int_equal(oh.unique, 0);
	assert_memory_equal(dst + HDR, src, 24);
	assert_int_equal(dst[HDR + 24], CANARY);
	assert_int_equal(st.replies, 1);

	/* Codes outside the protocol's, no room, too much payload. */
	assert_int_equal(vqf_dev_notify(ws, 2, 0, NULL, 0, &st), -ERANGE);
	assert_int_equal(vqf_dev_notify(ws, 2, -EIO, NULL, 0, &st), -ERANGE);
	assert_int_equal(vqf_dev_notify(ws, 2, FUSE_NOTIFY_CODE_MAX, NULL, 0,
					&st), -ERANGE);
	assert_int_equal(st.reply_bad_error, 3);
	assert_int_equal(vqf_dev_notify(&tiny, 1, FUSE_NOTIFY_POLL, NULL, 0,
					&st), -ENOBUFS);
	pc.len = 40;
	assert_int_equal(vqf_dev_notify(ws, 2, FUSE_NOTIFY_POLL, &pc, 1, &st),
			 -EMSGSIZE);
	assert_int_equal(st.reply_no_room, 1);
	assert_int_equal(st.reply_overflow, 1);
	assert_int_equal(st.replies, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(all_splits),
		cmocka_unit_test(header_only_splits),
		cmocka_unit_test(no_segments),
		cmocka_unit_test(error_reply),
		cmocka_unit_test(bad_errors),
		cmocka_unit_test(notifications),
		cmocka_unit_test(randomized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
