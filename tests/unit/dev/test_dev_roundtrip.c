// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Round trip for every opcode of the table (tests/vectors/dev_rt_vectors.h):
 * vqf_req builds and lays out, vqf_dev parses and replies, vqf_req
 * validates and copies out.  One cmocka test per opcode and reply kind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../vectors/dev_rt_vectors.h"

static void run_vector(void **state)
{
	unsigned int i = (unsigned int)(uintptr_t)*state;
	int line = vqf_dev_rt_vectors_run(i);

	if (line)
		print_error("%s: check at dev_rt_vectors.h:%d failed\n",
			    vqf_dev_rt_vectors_name(i), line);
	assert_int_equal(line, 0);
}

int main(void)
{
	unsigned int n = vqf_dev_rt_vectors_count(), i;
	struct CMUnitTest *t = calloc(n, sizeof(*t));
	int ret;

	if (!t)
		return 1;
	for (i = 0; i < n; i++) {
		t[i].name = vqf_dev_rt_vectors_name(i);
		t[i].test_func = run_vector;
		t[i].initial_state = (void *)(uintptr_t)i;
	}
	/* 45 opcodes in the list: all of them must be there. */
	if (n < 2 * 45) {
		fprintf(stderr, "table has %u opcodes, expected >= 45\n", n / 2);
		free(t);
		return 1;
	}
	ret = _cmocka_run_group_tests("dev_roundtrip", t, n, NULL, NULL);
	free(t);
	return ret;
}
