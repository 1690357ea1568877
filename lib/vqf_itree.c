// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_itree.c - augmented red-black interval tree (see vqf_itree.h).
 *
 * Plain red-black tree with explicit parent pointers and NULL leaves.  The
 * augmentation is kept correct at two kinds of points only:
 *   - a rotation moves a whole subtree under a new top; the new top covers
 *     the same node set as the old one, so it inherits the old top's
 *     subtree_last and only the node pushed down is recomputed;
 *   - a structural insert or splice changes the node set of every ancestor
 *     of the touched spot; insert raises subtree_last on the way down,
 *     remove recomputes from the splice point up to the root.
 * Recolouring never changes the augmentation.
 */
#include "vqf_itree.h"

static u64 itree_compute_last(const struct vqf_itree_node *n)
{
	u64 m = n->last;

	if (n->left && n->left->subtree_last > m)
		m = n->left->subtree_last;
	if (n->right && n->right->subtree_last > m)
		m = n->right->subtree_last;
	return m;
}

static bool itree_is_red(const struct vqf_itree_node *n)
{
	return n && n->red;
}

/* Make @new take @old's place under @old's parent (or as the root). */
static void itree_replace_child(struct vqf_itree_root *root,
				struct vqf_itree_node *old,
				struct vqf_itree_node *new)
{
	struct vqf_itree_node *p = old->parent;

	if (!p)
		root->node = new;
	else if (p->left == old)
		p->left = new;
	else
		p->right = new;
	if (new)
		new->parent = p;
}

/*
 *     x              y
 *    / \            / \
 *   a   y    ->    x   c
 *      / \        / \
 *     b   c      a   b
 */
static void itree_rotate_left(struct vqf_itree_root *root,
			      struct vqf_itree_node *x)
{
	struct vqf_itree_node *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	itree_replace_child(root, x, y);
	y->left = x;
	x->parent = y;
	y->subtree_last = x->subtree_last;
	x->subtree_last = itree_compute_last(x);
}

static void itree_rotate_right(struct vqf_itree_root *root,
			       struct vqf_itree_node *x)
{
	struct vqf_itree_node *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	itree_replace_child(root, x, y);
	y->right = x;
	x->parent = y;
	y->subtree_last = x->subtree_last;
	x->subtree_last = itree_compute_last(x);
}

static void itree_insert_fixup(struct vqf_itree_root *root,
			       struct vqf_itree_node *n)
{
	struct vqf_itree_node *p, *g, *u;

	/* Only I4 can be broken, and only between n and its parent. */
	while ((p = n->parent) && p->red) {
		g = p->parent;	/* exists: a red node is never the root */
		if (p == g->left) {
			u = g->right;
			if (itree_is_red(u)) {
				p->red = false;
				u->red = false;
				g->red = true;
				n = g;
				continue;
			}
			if (n == p->right) {
				itree_rotate_left(root, p);
				n = p;
				p = n->parent;
			}
			p->red = false;
			g->red = true;
			itree_rotate_right(root, g);
		} else {
			u = g->left;
			if (itree_is_red(u)) {
				p->red = false;
				u->red = false;
				g->red = true;
				n = g;
				continue;
			}
			if (n == p->left) {
				itree_rotate_right(root, p);
				n = p;
				p = n->parent;
			}
			p->red = false;
			g->red = true;
			itree_rotate_left(root, g);
		}
	}
	root->node->red = false;
}

int vqf_itree_insert(struct vqf_itree_root *root, struct vqf_itree_node *node)
{
	struct vqf_itree_node **link = &root->node, *parent = NULL;
	bool leftmost = true;

	if (node->start > node->last)
		return -EINVAL;

	while (*link) {
		parent = *link;
		/* node will be in parent's subtree: keep I6 on the way down */
		if (parent->subtree_last < node->last)
			parent->subtree_last = node->last;
		if (node->start < parent->start) {
			link = &parent->left;
		} else {
			link = &parent->right;
			leftmost = false;
		}
	}
	node->parent = parent;
	node->left = NULL;
	node->right = NULL;
	node->red = true;
	node->subtree_last = node->last;
	*link = node;
	if (leftmost)
		root->leftmost = node;
	root->count++;
	itree_insert_fixup(root, node);
	return 0;
}

static struct vqf_itree_node *itree_min(struct vqf_itree_node *n)
{
	while (n->left)
		n = n->left;
	return n;
}

/*
 * Restore I4/I5 after a black node was spliced out above @x (which may be
 * NULL, hence @parent).  x carries an "extra black" that is pushed up or
 * resolved by rotation.
 */
static void itree_remove_fixup(struct vqf_itree_root *root,
			       struct vqf_itree_node *x,
			       struct vqf_itree_node *parent)
{
	struct vqf_itree_node *w;

	while (x != root->node && !itree_is_red(x)) {
		if (x == parent->left) {
			/* x's side is one black short, so w exists (I5) */
			w = parent->right;
			if (w->red) {
				w->red = false;
				parent->red = true;
				itree_rotate_left(root, parent);
				w = parent->right;
			}
			if (!itree_is_red(w->left) && !itree_is_red(w->right)) {
				w->red = true;
				x = parent;
				parent = x->parent;
				continue;
			}
			if (!itree_is_red(w->right)) {
				w->left->red = false;
				w->red = true;
				itree_rotate_right(root, w);
				w = parent->right;
			}
			w->red = parent->red;
			parent->red = false;
			w->right->red = false;
			itree_rotate_left(root, parent);
			x = root->node;
		} else {
			w = parent->left;
			if (w->red) {
				w->red = false;
				parent->red = true;
				itree_rotate_right(root, parent);
				w = parent->left;
			}
			if (!itree_is_red(w->left) && !itree_is_red(w->right)) {
				w->red = true;
				x = parent;
				parent = x->parent;
				continue;
			}
			if (!itree_is_red(w->left)) {
				w->right->red = false;
				w->red = true;
				itree_rotate_left(root, w);
				w = parent->left;
			}
			w->red = parent->red;
			parent->red = false;
			w->left->red = false;
			itree_rotate_right(root, parent);
			x = root->node;
		}
	}
	if (x)
		x->red = false;
}

void vqf_itree_remove(struct vqf_itree_root *root, struct vqf_itree_node *node)
{
	struct vqf_itree_node *x, *xparent, *y, *n;
	bool removed_red;

	if (root->leftmost == node)
		root->leftmost = vqf_itree_next(node);

	if (!node->left || !node->right) {
		/* At most one child: splice node itself out. */
		x = node->left ? node->left : node->right;
		xparent = node->parent;
		removed_red = node->red;
		itree_replace_child(root, node, x);
	} else {
		/*
		 * Two children: the successor y (no left child) takes node's
		 * place and colour; the colour that disappears is y's.
		 */
		y = itree_min(node->right);
		removed_red = y->red;
		x = y->right;
		if (y->parent == node) {
			xparent = y;
		} else {
			xparent = y->parent;
			itree_replace_child(root, y, x);
			y->right = node->right;
			y->right->parent = y;
		}
		itree_replace_child(root, node, y);
		y->left = node->left;
		y->left->parent = y;
		y->red = node->red;
	}

	/*
	 * Every ancestor of the splice point lost a node: recompute I6 up to
	 * the root (y, if it moved, is on this path) before rotations rely
	 * on it.
	 */
	for (n = xparent; n; n = n->parent)
		n->subtree_last = itree_compute_last(n);

	if (!removed_red)
		itree_remove_fixup(root, x, xparent);
	root->count--;
}

struct vqf_itree_node *vqf_itree_first(const struct vqf_itree_root *root)
{
	return root->leftmost;
}

struct vqf_itree_node *vqf_itree_next(const struct vqf_itree_node *node)
{
	const struct vqf_itree_node *prev;

	if (node->right)
		return itree_min(node->right);
	do {
		prev = node;
		node = node->parent;
	} while (node && node->right == prev);
	return (struct vqf_itree_node *)node;
}

/*
 * The leftmost node of @n's subtree intersecting [start, last], given that
 * start <= n->subtree_last.  An interval intersects the query iff
 *   C1: node->start <= last  and  C2: start <= node->last.
 * If the left subtree has any node meeting C2, the leftmost such node N is
 * the answer when it meets C1, and nothing is when it does not: every node
 * after N in order starts at or after N (I2) and fails C1 too.
 */
static struct vqf_itree_node *itree_subtree_search(struct vqf_itree_node *n,
						   u64 start, u64 last)
{
	for (;;) {
		if (n->left && start <= n->left->subtree_last) {
			n = n->left;
			continue;
		}
		if (n->start > last)
			return NULL;
		if (start <= n->last)
			return n;
		n = n->right;
		if (!n || n->subtree_last < start)
			return NULL;
	}
}

struct vqf_itree_node *vqf_itree_iter_first(const struct vqf_itree_root *root,
					    u64 start, u64 last)
{
	if (!root->node || start > last)
		return NULL;
	/* Everything ends before the query, or starts after it. */
	if (root->node->subtree_last < start || root->leftmost->start > last)
		return NULL;
	return itree_subtree_search(root->node, start, last);
}

struct vqf_itree_node *vqf_itree_iter_next(const struct vqf_itree_node *node,
					   u64 start, u64 last)
{
	struct vqf_itree_node *rb = node->right, *cur;
	const struct vqf_itree_node *prev;

	cur = (struct vqf_itree_node *)node;
	for (;;) {
		/* Loop invariant: cur meets C1 and rb == cur->right. */
		if (rb && start <= rb->subtree_last)
			return itree_subtree_search(rb, start, last);

		/* Climb until we arrive from a left child: the successor. */
		do {
			prev = cur;
			cur = cur->parent;
			if (!cur)
				return NULL;
		} while (cur->right == prev);

		if (cur->start > last)
			return NULL;
		if (start <= cur->last)
			return cur;
		rb = cur->right;
	}
}

/* Black nodes from @n up to the root, or -1 if the walk exceeds @limit. */
static long itree_black_height(const struct vqf_itree_node *n,
			       unsigned long limit)
{
	unsigned long steps = 0;
	long bh = 0;

	for (; n; n = n->parent) {
		if (++steps > limit)
			return -1;
		if (!n->red)
			bh++;
	}
	return bh;
}

/* In-order successor that gives up (NULL, *bad set) after @limit steps. */
static const struct vqf_itree_node *
itree_next_bounded(const struct vqf_itree_node *n, unsigned long limit,
		   bool *bad)
{
	const struct vqf_itree_node *prev;
	unsigned long steps = 0;

	if (n->right) {
		n = n->right;
		while (n->left) {
			if (++steps > limit)
				goto cycle;
			n = n->left;
		}
		return n;
	}
	do {
		if (++steps > limit)
			goto cycle;
		prev = n;
		n = n->parent;
	} while (n && n->right == prev);
	return n;
cycle:
	*bad = true;
	return NULL;
}

/* NULL if @root is sound, else the first invariant found broken. */
static const char *itree_violation(const struct vqf_itree_root *root)
{
	const struct vqf_itree_node *n, *prev = NULL;
	unsigned long limit = root->count + 1, visited = 0;
	long ref_bh = -1, bh;
	bool bad = false;

	n = root->node;
	if (!n) {
		if (root->leftmost || root->count)
			return "I7: empty tree with leftmost or count";
		return NULL;
	}
	if (n->parent)
		return "I3: root has a parent";
	if (n->red)
		return "I4: root is red";
	while (n->left) {
		if (++visited > limit)
			return "I3: left spine longer than count";
		n = n->left;
	}
	if (n != root->leftmost)
		return "I7: leftmost is not the first node";

	visited = 0;
	for (; n; n = itree_next_bounded(n, limit, &bad)) {
		if (++visited > root->count)
			return "I7/I3: more nodes than count (or a cycle)";
		if (n->start > n->last)
			return "I1: start > last";
		if (prev && prev->start > n->start)
			return "I2: in-order starts decrease";
		if ((n->left && n->left->parent != n) ||
		    (n->right && n->right->parent != n))
			return "I3: child's parent pointer is wrong";
		if (n->red && (itree_is_red(n->left) || itree_is_red(n->right)))
			return "I4: red node with a red child";
		if (n->subtree_last != itree_compute_last(n))
			return "I6: subtree_last is stale";
		if (!n->left || !n->right) {
			bh = itree_black_height(n, limit);
			if (bh < 0)
				return "I3: parent chain longer than count";
			if (ref_bh < 0)
				ref_bh = bh;
			else if (bh != ref_bh)
				return "I5: black heights differ";
		}
		prev = n;
	}
	if (bad)
		return "I3: successor walk does not terminate";
	if (visited != root->count)
		return "I7: count does not match the nodes";
	return NULL;
}

int vqf_itree_check(const struct vqf_itree_root *root, const char **why)
{
	const char *v = itree_violation(root);

	if (why)
		*why = v;
	return v ? -EUCLEAN : 0;
}
