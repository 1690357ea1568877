/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_ktap_adapt.h - count/name/run for vectors headers that iterate
 * their tables their own way (see vqfuse_ktap.c for the three functions).
 *
 * Included after the vectors headers; stage.sh defines VQF_ADAPT_<AREA> only
 * for a header that is present and does not define the functions itself.
 */
#ifndef VQFUSE_KTAP_ADAPT_H
#define VQFUSE_KTAP_ADAPT_H

#include <linux/printk.h>

#ifdef VQF_ADAPT_REQ
/* A few KiB of scratch: static, the runner is called from one thread. */
static struct vqf_req_vec_scratch vqf_ktap_req_scratch;

static inline unsigned int vqf_req_vectors_count(void)
{
	return VQF_REQ_NR_VECTORS;
}

static inline const char *vqf_req_vectors_name(unsigned int i)
{
	return vqf_req_vectors[i].name;
}

static inline int vqf_req_vectors_run(unsigned int i)
{
	struct vqf_req_vec_scratch *s = &vqf_ktap_req_scratch;

	if (!vqf_req_vector_run(&vqf_req_vectors[i], s))
		return 0;
	pr_info("    # %s: %s (returned %d, want %d)\n",
		vqf_req_vectors[i].name, s->why ? s->why : "?", s->ret,
		vqf_req_vectors[i].err);
	return -1;
}
#endif

#ifdef VQF_ADAPT_VERSION
/* Five tables, numbered one after the other in this order. */
static inline unsigned int vqf_version_vectors_count(void)
{
	return ARRAY_SIZE(vqf_ver_index_vecs) +
	       ARRAY_SIZE(vqf_ver_parse_vecs) +
	       ARRAY_SIZE(vqf_ver_entry_vecs) +
	       ARRAY_SIZE(vqf_ver_order_vecs) +
	       ARRAY_SIZE(vqf_ver_dentry_vecs);
}

static inline const char *vqf_version_vectors_name(unsigned int i)
{
	if (i < ARRAY_SIZE(vqf_ver_index_vecs))
		return vqf_ver_index_vecs[i].name;
	i -= ARRAY_SIZE(vqf_ver_index_vecs);
	if (i < ARRAY_SIZE(vqf_ver_parse_vecs))
		return vqf_ver_parse_vecs[i].name;
	i -= ARRAY_SIZE(vqf_ver_parse_vecs);
	if (i < ARRAY_SIZE(vqf_ver_entry_vecs))
		return vqf_ver_entry_vecs[i].name;
	i -= ARRAY_SIZE(vqf_ver_entry_vecs);
	if (i < ARRAY_SIZE(vqf_ver_order_vecs))
		return vqf_ver_order_vecs[i].name;
	i -= ARRAY_SIZE(vqf_ver_order_vecs);
	if (i < ARRAY_SIZE(vqf_ver_dentry_vecs))
		return vqf_ver_dentry_vecs[i].name;
	return "?";
}

static inline int vqf_version_vectors_run(unsigned int i)
{
	if (i < ARRAY_SIZE(vqf_ver_index_vecs))
		return vqf_ver_run_index_vec(&vqf_ver_index_vecs[i]);
	i -= ARRAY_SIZE(vqf_ver_index_vecs);
	if (i < ARRAY_SIZE(vqf_ver_parse_vecs))
		return vqf_ver_run_parse_vec(&vqf_ver_parse_vecs[i]);
	i -= ARRAY_SIZE(vqf_ver_parse_vecs);
	if (i < ARRAY_SIZE(vqf_ver_entry_vecs))
		return vqf_ver_run_entry_vec(&vqf_ver_entry_vecs[i]);
	i -= ARRAY_SIZE(vqf_ver_entry_vecs);
	if (i < ARRAY_SIZE(vqf_ver_order_vecs))
		return vqf_ver_run_order_vec(&vqf_ver_order_vecs[i]);
	i -= ARRAY_SIZE(vqf_ver_order_vecs);
	if (i < ARRAY_SIZE(vqf_ver_dentry_vecs))
		return vqf_ver_run_dentry_vec(&vqf_ver_dentry_vecs[i]);
	return -1;
}
#endif

#endif /* VQFUSE_KTAP_ADAPT_H */
