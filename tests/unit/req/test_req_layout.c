// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Runs tests/vectors/req_layout_vectors.h through its AREA interface, the
 * way the in-kernel KTAP module does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "req_layout_vectors.h"

static void test_layout_vectors(void **state)
{
	unsigned int i, failed = 0;

	(void)state;
	assert_true(vqf_req_layout_vectors_count() >= 10);
	for (i = 0; i < vqf_req_layout_vectors_count(); i++) {
		if (vqf_req_layout_vectors_run(i)) {
			print_error("layout vector %u \"%s\": %s\n", i,
				    vqf_req_layout_vectors_name(i),
				    vqf_req_layout_scratch.why);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	assert_int_equal(vqf_req_layout_vectors_run(i), -1);
}

/* The runner must notice a wrong expectation. */
static void test_runner_detects(void **state)
{
	struct vqf_req_layout_vector v = vqf_req_layout_vectors[6];

	(void)state;
	assert_int_equal(vqf_req_layout_vector_run(&v,
				&vqf_req_layout_scratch), 0);
	v.sg_len[4]--;
	assert_int_equal(vqf_req_layout_vector_run(&v,
				&vqf_req_layout_scratch), -1);
	v = vqf_req_layout_vectors[6];
	v.nr_writable++;
	assert_int_equal(vqf_req_layout_vector_run(&v,
				&vqf_req_layout_scratch), -1);
	v = vqf_req_layout_vectors[6];
	v.sg_len[7] = 3996;	/* one element more than built */
	assert_int_equal(vqf_req_layout_vector_run(&v,
				&vqf_req_layout_scratch), -1);
	v = vqf_req_layout_vectors[6];
	v.in_len++;
	assert_int_equal(vqf_req_layout_vector_run(&v,
				&vqf_req_layout_scratch), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_vectors),
		cmocka_unit_test(test_runner_detects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
