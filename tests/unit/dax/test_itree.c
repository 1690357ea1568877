// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Interval tree: fixed cases for boundaries, adjacency and the checker, and
 * a seeded randomized insert/remove/query sequence checked after every step
 * against a brute-force model (an array with an in-tree flag).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vqf_itree.h"
#include "dax_test_rand.h"

#define U64_MAX_	UINT64_MAX

struct item {
	struct vqf_itree_node itn;
	bool in;
	unsigned int id;
};

static void assert_tree_ok(const struct vqf_itree_root *root)
{
	const char *why = NULL;
	int ret = vqf_itree_check(root, &why);

	if (ret)
		fail_msg("tree invariant broken: %s", why);
}

static void insert_item(struct vqf_itree_root *root, struct item *it,
			u64 start, u64 last)
{
	it->itn.start = start;
	it->itn.last = last;
	assert_int_equal(vqf_itree_insert(root, &it->itn), 0);
	it->in = true;
}

/* Number of results of [start, last], checking order and intersection. */
static unsigned int count_query(const struct vqf_itree_root *root,
				u64 start, u64 last)
{
	struct vqf_itree_node *n;
	unsigned int cnt = 0;
	u64 prev = 0;

	for (n = vqf_itree_iter_first(root, start, last); n;
	     n = vqf_itree_iter_next(n, start, last)) {
		assert_true(n->start <= last && start <= n->last);
		assert_true(n->start >= prev);
		prev = n->start;
		cnt++;
	}
	return cnt;
}

static unsigned int height(const struct vqf_itree_node *n)
{
	unsigned int l, r;

	if (!n)
		return 0;
	l = height(n->left);
	r = height(n->right);
	return 1 + (l > r ? l : r);
}

static void test_empty(void **state)
{
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;

	assert_true(vqf_itree_empty(&root));
	assert_null(vqf_itree_iter_first(&root, 0, U64_MAX_));
	assert_null(vqf_itree_first(&root));
	assert_tree_ok(&root);
}

static void test_bad_interval_refused(void **state)
{
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct item a = { 0 }, b = { 0 };

	insert_item(&root, &a, 5, 10);
	b.itn.start = 11;
	b.itn.last = 10;
	assert_int_equal(vqf_itree_insert(&root, &b.itn), -EINVAL);
	assert_int_equal(root.count, 1);
	assert_tree_ok(&root);
	/* an empty query (start > last) finds nothing */
	assert_null(vqf_itree_iter_first(&root, 10, 5));
}

static void test_boundaries(void **state)
{
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct item it[5] = { 0 };

	insert_item(&root, &it[0], 0, 0);
	insert_item(&root, &it[1], U64_MAX_, U64_MAX_);
	insert_item(&root, &it[2], 0, U64_MAX_);
	insert_item(&root, &it[3], U64_MAX_ - 1, U64_MAX_);
	insert_item(&root, &it[4], 1, U64_MAX_ - 1);
	assert_tree_ok(&root);

	assert_int_equal(count_query(&root, 0, 0), 2);
	assert_int_equal(count_query(&root, U64_MAX_, U64_MAX_), 3);
	assert_int_equal(count_query(&root, 0, U64_MAX_), 5);
	assert_int_equal(count_query(&root, U64_MAX_ - 1, U64_MAX_ - 1), 3);
	assert_int_equal(count_query(&root, 1, 1), 2);
	/* the first node in order is the one at 0 with the smallest start */
	assert_int_equal(vqf_itree_first(&root)->start, 0);

	vqf_itree_remove(&root, &it[2].itn);
	assert_tree_ok(&root);
	assert_int_equal(count_query(&root, U64_MAX_, U64_MAX_), 2);
	assert_int_equal(root.node->subtree_last, U64_MAX_);
	vqf_itree_remove(&root, &it[1].itn);
	vqf_itree_remove(&root, &it[3].itn);
	assert_tree_ok(&root);
	/* the largest end left is U64_MAX - 1 */
	assert_int_equal(root.node->subtree_last, U64_MAX_ - 1);
	assert_int_equal(count_query(&root, U64_MAX_, U64_MAX_), 0);
}

static void test_adjacent(void **state)
{
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct item it[3] = { 0 };
	struct vqf_itree_node *n;

	insert_item(&root, &it[1], 10, 19);
	insert_item(&root, &it[0], 0, 9);
	insert_item(&root, &it[2], 20, 29);
	assert_tree_ok(&root);

	n = vqf_itree_iter_first(&root, 9, 9);
	assert_ptr_equal(n, &it[0].itn);
	assert_null(vqf_itree_iter_next(n, 9, 9));
	n = vqf_itree_iter_first(&root, 10, 10);
	assert_ptr_equal(n, &it[1].itn);
	assert_null(vqf_itree_iter_next(n, 10, 10));
	n = vqf_itree_iter_first(&root, 9, 20);
	assert_ptr_equal(n, &it[0].itn);
	n = vqf_itree_iter_next(n, 9, 20);
	assert_ptr_equal(n, &it[1].itn);
	n = vqf_itree_iter_next(n, 9, 20);
	assert_ptr_equal(n, &it[2].itn);
	assert_null(vqf_itree_iter_next(n, 9, 20));
	assert_null(vqf_itree_iter_first(&root, 30, 40));
	/* in-order walk */
	n = vqf_itree_first(&root);
	assert_ptr_equal(n, &it[0].itn);
	n = vqf_itree_next(n);
	assert_ptr_equal(n, &it[1].itn);
	n = vqf_itree_next(n);
	assert_ptr_equal(n, &it[2].itn);
	assert_null(vqf_itree_next(n));
}

/* Ascending and descending runs drive every rotation case; height bound. */
static void test_sequential_height(void **state)
{
	enum { N = 1023 };
	static struct item it[N];
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	int i;

	for (i = 0; i < N; i++)
		insert_item(&root, &it[i], (u64)i * 2, (u64)i * 2 + 1);
	assert_tree_ok(&root);
	/* 2 * log2(N + 1) = 20 */
	assert_true(height(root.node) <= 20);
	for (i = 0; i < N; i += 2)
		vqf_itree_remove(&root, &it[i].itn);
	assert_tree_ok(&root);
	for (i = N - 2; i >= 0; i -= 2)
		vqf_itree_remove(&root, &it[i].itn);
	assert_tree_ok(&root);
	assert_true(vqf_itree_empty(&root));
	for (i = N - 1; i >= 0; i--)
		insert_item(&root, &it[i], 5, 5 + (u64)i); /* equal starts */
	assert_tree_ok(&root);
	assert_true(height(root.node) <= 20);
	assert_int_equal(count_query(&root, 1000, 1000), N - 995);
	for (i = 0; i < N; i++)
		vqf_itree_remove(&root, &it[i].itn);
	assert_tree_ok(&root);
}

/* The checker must be able to fail: corrupt one thing at a time. */
static void test_checker_detects(void **state)
{
	enum { N = 40 };
	struct item it[N] = { 0 };
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct vqf_itree_node *r, *save;
	const char *why;
	u64 v;
	int i;

	for (i = 0; i < N; i++)
		insert_item(&root, &it[i], (u64)i * 7 % 100, (u64)i * 7 % 100 + 3);
	assert_tree_ok(&root);
	r = root.node;

	v = r->subtree_last;
	r->subtree_last = v + 1;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	assert_non_null(strstr(why, "I6"));
	r->subtree_last = v;

	r->red = true;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	assert_non_null(strstr(why, "I4"));
	r->red = false;

	/* a black leaf turned red keeps I4 only if its parent is black; a
	 * red leaf turned black always unbalances the black height */
	for (i = 0; i < N; i++)
		if (it[i].itn.red && !it[i].itn.left && !it[i].itn.right)
			break;
	if (i < N) {
		it[i].itn.red = false;
		assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
		assert_non_null(strstr(why, "I5"));
		it[i].itn.red = true;
	}

	v = r->start;
	r->start = U64_MAX_ - 1;	/* larger than its right subtree */
	r->last = U64_MAX_;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	r->start = v;
	r->last = v + 3;
	assert_tree_ok(&root);

	root.count++;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	assert_non_null(strstr(why, "I7"));
	root.count--;

	save = r->left->parent;
	r->left->parent = r->left;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	assert_non_null(strstr(why, "I3"));
	r->left->parent = save;

	/* a cycle: the rightmost node's right child points at the root */
	save = r;
	while (save->right)
		save = save->right;
	save->right = r;
	assert_int_equal(vqf_itree_check(&root, &why), -EUCLEAN);
	save->right = NULL;
	assert_tree_ok(&root);
}

/* ---- randomized against a model ---- */

#define POOL 192

static void rand_interval(struct dax_rand *r, u64 *start, u64 *last)
{
	u64 a, b;

	switch (dax_rand_below(r, 4)) {
	case 0:	/* small domain: overlaps, duplicates, adjacency */
		a = dax_rand_below(r, 64);
		b = a + dax_rand_below(r, 8);
		break;
	case 1:	/* at the top of the u64 range */
		b = U64_MAX_ - dax_rand_below(r, 4);
		a = b - dax_rand_below(r, 16);
		break;
	case 2:	/* at zero */
		a = dax_rand_below(r, 3);
		b = a + dax_rand_below(r, 1u << 20);
		break;
	default:
		a = dax_rand_u64(r);
		b = dax_rand_u64(r);
		if (a > b) {
			u64 t = a;

			a = b;
			b = t;
		}
		break;
	}
	*start = a;
	*last = b;
}

static void check_query_against_model(const struct vqf_itree_root *root,
				      const struct item *pool, u64 qs, u64 ql)
{
	bool seen[POOL] = { false };
	struct vqf_itree_node *n;
	unsigned int i, got = 0, want = 0;
	u64 prev = 0;

	for (n = vqf_itree_iter_first(root, qs, ql); n;
	     n = vqf_itree_iter_next(n, qs, ql)) {
		const struct item *it = vqf_itree_entry(n, struct item, itn);

		assert_true(it >= pool && it < pool + POOL);
		assert_true(it->in);
		assert_false(seen[it->id]);
		seen[it->id] = true;
		assert_true(n->start >= prev);
		prev = n->start;
		got++;
	}
	for (i = 0; i < POOL; i++) {
		bool hit = pool[i].in && qs <= ql &&
			   pool[i].itn.start <= ql && qs <= pool[i].itn.last;

		if (hit)
			want++;
		if (hit != seen[i])
			fail_msg("query [%llu,%llu]: item %u (%llu,%llu) hit %d seen %d",
				 (unsigned long long)qs, (unsigned long long)ql,
				 i, (unsigned long long)pool[i].itn.start,
				 (unsigned long long)pool[i].itn.last, hit,
				 seen[i]);
	}
	assert_int_equal(got, want);
}

static void test_random_vs_model(void **state)
{
	static struct item pool[POOL];
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct dax_rand r = { dax_test_seed(0x17ee, "itree") };
	unsigned int steps = dax_under_valgrind() ? 10000 : 100000;
	unsigned int i, step, in = 0;
	struct vqf_itree_node *n;
	u64 s, l;

	memset(pool, 0, sizeof(pool));
	for (i = 0; i < POOL; i++)
		pool[i].id = i;

	for (step = 0; step < steps; step++) {
		/* bias towards growth then shrinkage in long waves */
		unsigned int grow = (step / 2000) % 2 ? 35 : 65;

		i = dax_rand_below(&r, POOL);
		if (dax_rand_below(&r, 100) < grow) {
			if (!pool[i].in) {
				rand_interval(&r, &s, &l);
				insert_item(&root, &pool[i], s, l);
				in++;
			}
		} else if (pool[i].in) {
			vqf_itree_remove(&root, &pool[i].itn);
			pool[i].in = false;
			in--;
		}
		assert_tree_ok(&root);
		assert_int_equal(root.count, in);

		rand_interval(&r, &s, &l);
		check_query_against_model(&root, pool, s, l);
		/* a point query at an existing node's edges */
		n = vqf_itree_first(&root);
		if (n) {
			check_query_against_model(&root, pool, n->last,
						  n->last);
			check_query_against_model(&root, pool, n->start - 1,
						  n->start - 1);
		}
	}
	print_message("itree: %u steps, %u nodes at end\n", steps, in);
	check_query_against_model(&root, pool, 0, U64_MAX_);
	for (i = 0; i < POOL; i++)
		if (pool[i].in)
			vqf_itree_remove(&root, &pool[i].itn);
	assert_tree_ok(&root);
	assert_true(vqf_itree_empty(&root));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bad_interval_refused),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_adjacent),
		cmocka_unit_test(test_sequential_height),
		cmocka_unit_test(test_checker_detects),
		cmocka_unit_test(test_random_vs_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
