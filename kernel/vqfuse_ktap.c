// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_ktap.c - vqfuse_test.ko: lib/'s shared test vectors in the kernel.
 *
 * Every tests/vectors/AREA_vectors.h provides
 *	unsigned int vqf_AREA_vectors_count(void);
 *	const char *vqf_AREA_vectors_name(unsigned int i);
 *	int vqf_AREA_vectors_run(unsigned int i);	(0 = pass)
 * (directly, or through vqfuse_ktap_adapt.h for headers shaped otherwise),
 * and the build lists them all in VQF_ALL_SUITES() (kernel/stage.sh); a
 * header with neither is a skipped suite.  The module runs them at load
 * time, prints KTAP to the kernel log, and fails to load (-EINVAL) if any
 * case failed, so `insmod` alone is a verdict.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include "vqf_vectors_all.h"
#include "vqfuse_ktap_adapt.h"
#include "vqfuse_ktap_glue.h"

struct vqf_suite {
	const char *name;
	unsigned int (*count)(void);
	const char *(*case_name)(unsigned int i);
	int (*run)(unsigned int i);
};

#define VQF_SUITE_ENTRY(area) {					\
	.name = #area,						\
	.count = vqf_##area##_vectors_count,			\
	.case_name = vqf_##area##_vectors_name,			\
	.run = vqf_##area##_vectors_run,			\
},

static const struct vqf_suite vqf_suites[] = {
	VQF_SUITE_ENTRY(glue)
	VQF_ALL_SUITES(VQF_SUITE_ENTRY)
};

/* vqf_skipped[]: generated, the areas without a runner. */

/* Each suite is one KTAP subtest with its cases as numbered sub-results. */
static int __init vqf_ktap_init(void)
{
	unsigned int s, i, n, failed_suites = 0;

	pr_info("KTAP version 1\n");
	pr_info("1..%zu\n", ARRAY_SIZE(vqf_suites) + ARRAY_SIZE(vqf_skipped));
	for (s = 0; s < ARRAY_SIZE(vqf_suites); s++) {
		const struct vqf_suite *su = &vqf_suites[s];
		unsigned int failed = 0;

		n = su->count();
		pr_info("    KTAP version 1\n");
		pr_info("    # Subtest: %s\n", su->name);
		pr_info("    1..%u\n", n);
		for (i = 0; i < n; i++) {
			int r = su->run(i);

			if (r) {
				failed++;
				pr_info("    not ok %u %s\n", i + 1,
					su->case_name(i));
				pr_info("    # %s: returned %d\n",
					su->case_name(i), r);
			} else {
				pr_info("    ok %u %s\n", i + 1, su->case_name(i));
			}
			cond_resched();
		}
		if (failed) {
			failed_suites++;
			pr_info("not ok %u %s\n", s + 1, su->name);
		} else {
			pr_info("ok %u %s\n", s + 1, su->name);
		}
	}
	for (i = 0; i < ARRAY_SIZE(vqf_skipped); i++)
		pr_info("ok %zu %s # SKIP no vqf_%s_vectors_run()\n",
			ARRAY_SIZE(vqf_suites) + i + 1, vqf_skipped[i],
			vqf_skipped[i]);
	pr_info("# vqfuse_test: %u of %zu suites failed\n", failed_suites,
		ARRAY_SIZE(vqf_suites));
	return failed_suites ? -EINVAL : 0;
}
module_init(vqf_ktap_init);

static void __exit vqf_ktap_exit(void)
{
}
module_exit(vqf_ktap_exit);

MODULE_DESCRIPTION("vqfuse: lib/ test vectors as KTAP");
MODULE_LICENSE("GPL");
