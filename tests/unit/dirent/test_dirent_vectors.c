// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * READDIR(PLUS) walker vectors (tests/vectors/dirent_vectors.h): one
 * cmocka test per vector, and a check that every refusal has one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../vectors/dirent_vectors.h"

static void run_vector(void **state)
{
	unsigned int i = (unsigned int)(uintptr_t)*state;
	int line = vqf_dirent_vectors_run(i);

	if (line)
		print_error("vector %s: check at dirent_vectors.h:%d failed\n",
			    vqf_dirent_vectors_name(i), line);
	assert_int_equal(line, 0);
}

/* Every errno vqf_dirent.h documents is some case's answer. */
static void coverage(void **state)
{
	static const int refusals[] = {
		-ENODATA, -EBADMSG, -ENAMETOOLONG, -EOVERFLOW, -EBADE,
		-EILSEQ,
	};
	unsigned int i, j, k;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(refusals); k++) {
		bool seen[2] = { false, false };

		for (i = 0; i < ARRAY_SIZE(vqf_dirent_vecs); i++)
			for (j = 0; j < VQF_DIRENT_VEC_WANTS; j++)
				if (vqf_dirent_vecs[i].want[j] == refusals[k])
					seen[vqf_dirent_vecs[i].plus] = true;
		if (!seen[0] || !seen[1])
			print_error("errno %d lacks a %s case\n", refusals[k],
				    seen[0] ? "READDIRPLUS" : "READDIR");
		assert_true(seen[0] && seen[1]);
	}
}

int main(void)
{
	unsigned int n = vqf_dirent_vectors_count(), i;
	struct CMUnitTest *t = calloc(n + 1, sizeof(*t));
	int ret;

	if (!t)
		return 1;
	for (i = 0; i < n; i++) {
		t[i].name = vqf_dirent_vectors_name(i);
		t[i].test_func = run_vector;
		t[i].initial_state = (void *)(uintptr_t)i;
	}
	t[n].name = "coverage";
	t[n].test_func = coverage;
	ret = _cmocka_run_group_tests("dirent_vectors", t, n + 1, NULL, NULL);
	free(t);
	return ret;
}
