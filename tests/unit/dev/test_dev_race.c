// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A guest that rewrites its request while the device parses it.
 *
 * A writer thread keeps flipping bytes of a request (header, fixed args,
 * names, payload) while the main thread parses it over and over.  Whatever
 * the parser accepts must be consistent with itself: that only holds if
 * every length it uses was read once and every check ran on the copy it
 * hands out.  A double fetch shows up as a flattened length that disagrees
 * with in.len, a name whose strlen differs from its recorded length, a '/'
 * in a component, or a payload view that disagrees with its size field.
 *
 * The race on the request bytes is the point (guest memory is shared), so
 * this test has no helgrind entry.  Bounded: ~0.4 s per request shape
 * (less under valgrind).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "vqf_dev.h"

static u8 img[512];
static u32 img_len;
static u8 pristine[512];
static atomic_int stop;

static bool under_valgrind(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Damage one byte past the first 8 (keep len and opcode), hold it a moment,
 * put it back: the request is valid most of the time and torn whenever a
 * parse overlaps a change.
 */
static void *guest(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	volatile u8 *p = img;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		u32 k = 8 + rand_r(&seed) % (img_len - 8);
		int spin = rand_r(&seed) % 64;

		switch (rand_r(&seed) % 3) {
		case 0:
			p[k] = 0;
			break;
		case 1:
			p[k] = '/';
			break;
		default:
			p[k] = (u8)rand_r(&seed);
		}
		while (spin--)
			(void)p[k];
		p[k] = pristine[k];
	}
	return NULL;
}

static void race(const void *req_bytes, u32 len, u32 opcode)
{
	static struct vqf_dev_req req;
	static u8 flat[512];
	struct vqf_dev_seg seg[3];
	struct vqf_dev_conn conn;
	pthread_t th;
	double end;
	unsigned long parses = 0, accepted = 0;

	memcpy(img, req_bytes, len);
	memcpy(pristine, req_bytes, len);
	img_len = len;
	seg[0] = (struct vqf_dev_seg){ img, 41 };
	seg[1] = (struct vqf_dev_seg){ img + 41, 9 };
	seg[2] = (struct vqf_dev_seg){ img + 50, len - 50 };
	vqf_dev_conn_init(&conn);
	conn.initialized = true;
	conn.minor = 38;

	atomic_store(&stop, 0);
	assert_int_equal(pthread_create(&th, NULL, guest,
					(void *)(uintptr_t)opcode), 0);
	end = now_s() + (under_valgrind() ? 0.15 : 0.4);
	while (now_s() < end) {
		int k;

		for (k = 0; k < 200; k++, parses++) {
			if (vqf_dev_parse(&conn, seg, 3, false, &req, NULL))
				continue;
			accepted++;
			assert_int_equal(req.in.opcode, opcode);
			assert_int_equal(req.in.len, len);
			assert_int_equal(vqf_dev_flat_len(&req), len);
			assert_int_equal(vqf_dev_flatten(&req, flat,
							 sizeof(flat)), len);
			if (req.name) {
				assert_int_equal(strlen(req.name),
						 req.name_len);
				if (opcode != FUSE_SETXATTR)
					assert_null(memchr(req.name, '/',
							   req.name_len));
			}
			if (req.name2) {
				assert_int_equal(strlen(req.name2),
						 req.name2_len);
				assert_null(memchr(req.name2, '/',
						   req.name2_len));
			}
			if (opcode == FUSE_WRITE)
				assert_int_equal(req.data.len,
						 req.arg.write.size);
			if (opcode == FUSE_SETXATTR)
				assert_int_equal(req.data.len,
						 req.arg.setxattr.size);
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	print_message("opcode %u: %lu parses, %lu accepted\n", opcode, parses,
		      accepted);
	assert_true(accepted > 0);
}

static void race_rename(void **state)
{
	struct {
		struct fuse_in_header h;
		struct fuse_rename_in r;
		char names[40];
	} __attribute__((packed)) m = {
		.h = { .len = 40 + 8 + 40, .opcode = FUSE_RENAME, .unique = 2 },
		.r = { .newdir = 1 },
		.names = "old-name-here\0new-name-there-xxxxxxxxxx",
	};

	(void)state;
	race(&m, sizeof(m), FUSE_RENAME);
}

static void race_write(void **state)
{
	struct {
		struct fuse_in_header h;
		struct fuse_write_in w;
		u8 data[100];
	} __attribute__((packed)) m = {
		.h = { .len = 40 + 40 + 100, .opcode = FUSE_WRITE, .unique = 4 },
		.w = { .size = 100 },
	};

	(void)state;
	race(&m, sizeof(m), FUSE_WRITE);
}

static void race_setxattr(void **state)
{
	struct {
		struct fuse_in_header h;
		u32 size, flags;
		char name[11];
		u8 value[20];
	} __attribute__((packed)) m = {
		.h = { .len = 40 + 8 + 11 + 20, .opcode = FUSE_SETXATTR,
		       .unique = 6 },
		.size = 20,
		.name = "user.racer",
	};

	(void)state;
	race(&m, sizeof(m), FUSE_SETXATTR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(race_rename),
		cmocka_unit_test(race_write),
		cmocka_unit_test(race_setxattr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
