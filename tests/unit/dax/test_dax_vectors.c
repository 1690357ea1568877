// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Runs tests/vectors/dax_vectors.h (device-side validation of SETUPMAPPING
 * and REMOVEMAPPING, interval tree boundaries, the vqf_req round trip),
 * the same tables the in-kernel KTAP module runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "dax_vectors.h"

static void test_all_vectors(void **state)
{
	unsigned int i, failed = 0;
	int line;

	assert_true(vqf_dax_vectors_count() > 40);
	for (i = 0; i < vqf_dax_vectors_count(); i++) {
		line = vqf_dax_vectors_run(i);
		if (line) {
			print_error("vector %u \"%s\": check at dax_vectors.h:%d failed\n",
				    i, vqf_dax_vectors_name(i), line);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* Every distinct rejection has its own errno. */
static void test_errnos_distinct(void **state)
{
	int seen[64], n = 0, j;
	unsigned int i;

	for (i = 0; i < VQF_DAX_NR_SETUP; i++) {
		int e = vqf_dax_setup_vecs[i].err;
		size_t c = vqf_dax_setup_vecs[i].ctr;

		if (!e)
			continue;
		for (j = 0; j < n; j++)
			if (seen[j] == e)
				break;
		if (j == n)
			seen[n++] = e;
		/* same errno -> same counter */
		for (j = 0; j < (int)i; j++)
			if (vqf_dax_setup_vecs[j].err == e)
				assert_int_equal(vqf_dax_setup_vecs[j].ctr, c);
	}
	assert_int_equal(n, 9);
	n = 0;
	for (i = 0; i < VQF_DAX_NR_REMOVE; i++) {
		int e = vqf_dax_remove_vecs[i].err;

		if (!e)
			continue;
		for (j = 0; j < n; j++)
			if (seen[j] == e)
				break;
		if (j == n)
			seen[n++] = e;
		for (j = 0; j < (int)i; j++)
			if (vqf_dax_remove_vecs[j].err == e)
				assert_int_equal(vqf_dax_remove_vecs[j].ctr,
						 vqf_dax_remove_vecs[i].ctr);
	}
	assert_int_equal(n, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_vectors),
		cmocka_unit_test(test_errnos_distinct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
