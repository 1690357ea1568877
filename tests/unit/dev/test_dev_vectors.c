// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Device-side parser vectors (tests/vectors/dev_vectors.h): one cmocka
 * test per vector, each over every split the runner makes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../vectors/dev_vectors.h"

static void run_vector(void **state)
{
	unsigned int i = (unsigned int)(uintptr_t)*state;
	const struct vqf_dev_vec_fail *f;
	int line = vqf_dev_vectors_run(i);

	if (line) {
		f = vqf_dev_vectors_last();
		print_error("vector %s: check at dev_vectors.h:%d failed: got %lld want %lld (cuts %u,%u)\n",
			    vqf_dev_vectors_name(i), line, (long long)f->got,
			    (long long)f->want, f->cut1, f->cut2);
	}
	assert_int_equal(line, 0);
}

/* Every reason has a vector, and every table opcode a well-formed one. */
static void coverage(void **state)
{
	bool reason_seen[VQF_DEV_R_NR] = { false };
	const struct vqf_fuse_op *op;
	unsigned int i, k;

	(void)state;
	for (i = 0; i < vqf_dev_vectors_count(); i++)
		reason_seen[vqf_dev_vecs[i].reason] = true;
	for (k = 0; k < VQF_DEV_R_NR; k++) {
		if (!reason_seen[k])
			print_error("no vector for reason %s\n",
				    vqf_dev_reason_name(k));
		assert_true(reason_seen[k]);
		assert_int_equal(vqf_dev_reason_errno(k),
				 vqf_dev_vec_parse_errno[k]);
	}
	for (k = 0; (op = vqf_fuse_op_at(k)); k++) {
		bool ok = false;

		for (i = 0; i < vqf_dev_vectors_count(); i++)
			ok |= vqf_dev_vecs[i].opcode == op->opcode &&
			      vqf_dev_vecs[i].reason == VQF_DEV_OK;
		if (!ok)
			print_error("no well-formed vector for %s\n", op->name);
		assert_true(ok);
	}
}

int main(void)
{
	unsigned int n = vqf_dev_vectors_count(), i;
	struct CMUnitTest *t = calloc(n + 1, sizeof(*t));
	int ret;

	if (!t)
		return 1;
	for (i = 0; i < n; i++) {
		t[i].name = vqf_dev_vectors_name(i);
		t[i].test_func = run_vector;
		t[i].initial_state = (void *)(uintptr_t)i;
	}
	t[n].name = "coverage";
	t[n].test_func = coverage;
	ret = _cmocka_run_group_tests("dev_vectors", t, n + 1, NULL, NULL);
	free(t);
	return ret;
}
