// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Runs every case of tests/vectors/req_vectors.h through the shared runner,
 * the same code the in-kernel KTAP module runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "req_vectors.h"

static void test_all_vectors(void **state)
{
	struct vqf_req_vec_scratch *s = malloc(sizeof(*s));
	unsigned int i, failed = 0;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < VQF_REQ_NR_VECTORS; i++) {
		const struct vqf_req_vector *v = &vqf_req_vectors[i];

		if (vqf_req_vector_run(v, s)) {
			print_error("vector %u \"%s\": %s (complete returned %d, expected %d)\n",
				    i, v->name, s->why, s->ret, v->err);
			failed++;
		}
	}
	free(s);
	assert_int_equal(failed, 0);
}

/* Every documented errno of vqf_req_complete() has at least one vector. */
static void test_every_errno_covered(void **state)
{
	static const int errs[] = { -ENODATA, -EOVERFLOW, -EFBIG, -EBADMSG,
				    -ENOMSG, -ERANGE, -EPROTO, -EREMOTEIO };
	unsigned int i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(errs); i++) {
		bool seen = false;

		for (j = 0; j < VQF_REQ_NR_VECTORS; j++)
			seen |= vqf_req_vectors[j].err == errs[i];
		assert_true(seen);
	}
}

/* The runner itself must catch a wrong expectation. */
static void test_runner_detects_wrong_expectation(void **state)
{
	struct vqf_req_vec_scratch *s = malloc(sizeof(*s));
	struct vqf_req_vector v = vqf_req_vectors[0];

	(void)state;
	assert_non_null(s);
	v.err = -EBADMSG;
	assert_int_equal(vqf_req_vector_run(&v, s), -1);
	v = vqf_req_vectors[0];
	v.payload_len = 0;	/* header says 104 bytes, pattern missing */
	assert_int_equal(vqf_req_vector_run(&v, s), -1);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_vectors),
		cmocka_unit_test(test_every_errno_covered),
		cmocka_unit_test(test_runner_detects_wrong_expectation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
