// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_shared.c - the coherence matrix of issue 7: two guests on one
 * backend (through the hub), guest A caching with each mode, changes made
 * by guest B or directly on the host, and what A then sees.
 *
 * For every cell A looks at the names involved (lstat: result, inode,
 * mode, size, links, ctime) twice before the change - the second look
 * must send no request in any caching mode - then B or the host makes the
 * change, and A looks again:
 *   none    the truth (what the host's lstat says), with requests;
 *   shared  the truth at once, with requests (the version table told A
 *           to revalidate); a further look sends none;
 *   always  the old answer, with no request, even much later;
 *   auto    the old answer until its timeout, the truth after it.
 * Host edits reach the table through inotify; vqf_hub_sync() applies
 * those already queued, so nothing here waits on a timer.
 */
#define _GNU_SOURCE
#include "e2e.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <cmocka.h>

#define SEC	1000000000ULL

enum change {
	CH_CREATE, CH_UNLINK, CH_RENAME, CH_CHMOD, CH_TRUNCATE, CH_WRITE,
	CH_SETXATTR, CH_NR
};

static const char *const change_name[CH_NR] = {
	"create", "unlink", "rename", "chmod", "truncate", "write",
	"setxattr",
};

static const char *const mode_name[] = {
	"none", "auto", "always", "shared",
};

static u64 clk;

static u64 fake_clock(void *arg)
{
	return *(u64 *)arg;
}

/* One name as A or the host sees it. */
struct look {
	int rc;
	u64 ino, size, nlink, ctime;
	u32 mode;
};

struct view {
	struct look l[2];
};

static void from_stat(struct look *l, int rc, const struct stat *st)
{
	memset(l, 0, sizeof(*l));
	l->rc = rc;
	if (rc)
		return;
	l->ino = st->st_ino;
	l->size = (u64)st->st_size;
	l->nlink = st->st_nlink;
	l->mode = st->st_mode;
	l->ctime = (u64)st->st_ctim.tv_sec * SEC + (u64)st->st_ctim.tv_nsec;
}

static bool same(const struct view *a, const struct view *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void names(enum change ch, int actor, char n[2][64])
{
	snprintf(n[0], 64, "%s-%d", change_name[ch], actor);
	snprintf(n[1], 64, "%s-%d.new", change_name[ch], actor);
}

static struct view guest_view(struct vqf_gcli *c, char n[2][64])
{
	struct view v;
	struct stat st;
	int i, rc;

	memset(&v, 0, sizeof(v));
	for (i = 0; i < 2; i++) {
		rc = vqf_gcli_lstat(c, n[i], &st);
		from_stat(&v.l[i], rc, &st);
	}
	return v;
}

static struct view host_view(struct e2e *e, char n[2][64])
{
	struct view v;
	struct stat st;
	int i, rc;

	memset(&v, 0, sizeof(v));
	for (i = 0; i < 2; i++) {
		rc = lstat(e2e_host(e, n[i]), &st) ? -errno : 0;
		from_stat(&v.l[i], rc, &st);
	}
	return v;
}

static u64 requests(struct e2e *e, unsigned int guest)
{
	struct vqf_sim_stats st;

	vqf_sim_get_stats_n(e->s, guest, &st);
	return st.cli.requests;
}

/* Host edits already queued are in the table when this returns. */
static void settle(struct e2e *e)
{
	if (vqf_sim_hub(e->s))
		assert_int_equal(vqf_hub_sync(vqf_sim_hub(e->s)), 0);
}

static bool have_user_xattr(struct e2e *e)
{
	const char *p = e2e_host(e, "xattr-probe");
	bool ok;

	assert_int_equal(e2e_host_write(p, "x", 1, 0644), 0);
	ok = !setxattr(p, "user.probe", "1", 1, 0);
	unlink(p);
	return ok;
}

/* Before A looks: what the change will act on. */
static void prepare(struct e2e *e, enum change ch, char n[2][64])
{
	if (ch != CH_CREATE)
		assert_int_equal(e2e_host_write(e2e_host(e, n[0]), "hello",
						5, 0644), 0);
}

/* Guest B (actor 0) or the host (actor 1) makes the change. */
static void act(struct e2e *e, enum change ch, int actor, char n[2][64])
{
	struct vqf_gcli *b = vqf_sim_cli_n(e->s, 1);
	const char *h0 = e2e_host(e, n[0]), *h1 = e2e_host(e, n[1]);
	int fd;

	/* ctime has the kernel's coarse granularity: let it move. */
	usleep(20000);
	if (actor == 1) {
		switch (ch) {
		case CH_CREATE:
			assert_int_equal(e2e_host_write(h1, "new", 3, 0644),
					 0);
			break;
		case CH_UNLINK:
			assert_int_equal(unlink(h0), 0);
			break;
		case CH_RENAME:
			assert_int_equal(rename(h0, h1), 0);
			break;
		case CH_CHMOD:
			assert_int_equal(chmod(h0, 0600), 0);
			break;
		case CH_TRUNCATE:
			assert_int_equal(truncate(h0, 2), 0);
			break;
		case CH_WRITE:
			fd = open(h0, O_WRONLY | O_APPEND);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, "0123456789", 10), 10);
			close(fd);
			break;
		case CH_SETXATTR:
			assert_int_equal(setxattr(h0, "user.k", "v", 1, 0), 0);
			break;
		default:
			fail();
		}
		return;
	}
	switch (ch) {
	case CH_CREATE:
		fd = vqf_gcli_open(b, n[1], O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_close(b, fd), 0);
		break;
	case CH_UNLINK:
		assert_int_equal(vqf_gcli_unlink(b, n[0]), 0);
		break;
	case CH_RENAME:
		assert_int_equal(vqf_gcli_rename(b, n[0], n[1], 0), 0);
		break;
	case CH_CHMOD:
		assert_int_equal(vqf_gcli_chmod(b, n[0], 0600), 0);
		break;
	case CH_TRUNCATE:
		assert_int_equal(vqf_gcli_truncate(b, n[0], 2), 0);
		break;
	case CH_WRITE:
		fd = vqf_gcli_open(b, n[0], O_WRONLY | O_APPEND, 0);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_write(b, fd, "0123456789", 10), 10);
		assert_int_equal(vqf_gcli_close(b, fd), 0);
		break;
	case CH_SETXATTR:
		assert_int_equal(vqf_gcli_setxattr(b, n[0], "user.k", "v", 1,
						   0), 0);
		break;
	default:
		fail();
	}
}

static void cell(struct e2e *e, enum vqf_gcli_cache mode, enum change ch,
		 int actor)
{
	struct vqf_gcli *a = vqf_sim_cli(e->s);
	char n[2][64];
	struct view before, again, after, truth;
	u64 r0, r1, sent;

	names(ch, actor, n);
	prepare(e, ch, n);
	settle(e);
	before = guest_view(a, n);
	truth = host_view(e, n);
	assert_true(same(&before, &truth));
	r0 = requests(e, 0);
	again = guest_view(a, n);
	r1 = requests(e, 0);
	assert_true(same(&before, &again));
	if (mode == VQF_GCLI_CACHE_NONE)
		assert_true(r1 > r0);
	else
		assert_int_equal(r1, r0);	/* nothing changed: no trip */

	act(e, ch, actor, n);
	settle(e);
	truth = host_view(e, n);
	assert_false(same(&before, &truth));	/* the change shows */
	r0 = requests(e, 0);
	after = guest_view(a, n);
	r1 = requests(e, 0);
	sent = r1 - r0;
	switch (mode) {
	case VQF_GCLI_CACHE_NONE:
		assert_true(same(&after, &truth));
		assert_true(r1 > r0);
		break;
	case VQF_GCLI_CACHE_SHARED:
		if (!same(&after, &truth))
			fail_msg("shared: %s by %s not seen", change_name[ch],
				 actor ? "host" : "guest B");
		assert_true(r1 > r0);
		/* Revalidated: proven again, no trip. */
		r0 = requests(e, 0);
		again = guest_view(a, n);
		assert_true(same(&again, &truth));
		assert_int_equal(requests(e, 0), r0);
		break;
	case VQF_GCLI_CACHE_ALWAYS:
		assert_true(same(&after, &before));	/* stale */
		assert_int_equal(r1, r0);
		clk += 3600 * SEC;
		after = guest_view(a, n);
		assert_true(same(&after, &before));	/* still */
		break;
	case VQF_GCLI_CACHE_AUTO:
		assert_true(same(&after, &before));	/* within timeout */
		assert_int_equal(r1, r0);
		clk += 2 * SEC;
		after = guest_view(a, n);
		assert_true(same(&after, &truth));
		break;
	}
	print_message("    %-7s %-9s by %-7s: ok (%llu requests after)\n",
		      mode_name[mode], change_name[ch],
		      actor ? "host" : "guest B",
		      (unsigned long long)sent);
}

static void matrix(enum vqf_gcli_cache mode)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;
	bool xattr;
	int ch, actor;

	clk = 1000 * SEC;
	cfg.guests = 2;
	cfg.inline_kick = true;
	cfg.cli.cache = mode;
	cfg.cli.timeout_ns = SEC;
	cfg.cli.clock = fake_clock;
	cfg.cli.clock_arg = &clk;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	assert_non_null(vqf_sim_hub(e->s));
	xattr = have_user_xattr(e);
	for (ch = 0; ch < CH_NR; ch++) {
		for (actor = 0; actor < 2; actor++) {
			if (ch == CH_SETXATTR && !xattr) {
				print_message("    setxattr: no user xattrs "
					      "here, cell skipped\n");
				continue;
			}
			cell(e, mode, ch, actor);
		}
	}
	if (mode == VQF_GCLI_CACHE_SHARED) {
		struct vqf_ver_stats vs;

		assert_true(vqf_gcli_get_ver_stats(vqf_sim_cli(e->s), &vs));
		assert_int_equal(vs.index_out_of_range, 0);
		assert_int_equal(vs.backward, 0);
		print_message("    guest A: %llu table-proven cache hits, "
			      "%llu refuted\n",
			      (unsigned long long)e2e_stats(e).cli.ver_valid,
			      (unsigned long long)e2e_stats(e).cli.ver_stale);
	}
	assert_int_equal(e2e_free(e), 0);
}

static void test_matrix_none(void **state)
{
	matrix(VQF_GCLI_CACHE_NONE);
}

static void test_matrix_auto(void **state)
{
	matrix(VQF_GCLI_CACHE_AUTO);
}

static void test_matrix_always(void **state)
{
	matrix(VQF_GCLI_CACHE_ALWAYS);
}

static void test_matrix_shared(void **state)
{
	matrix(VQF_GCLI_CACHE_SHARED);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix_none),
		cmocka_unit_test(test_matrix_auto),
		cmocka_unit_test(test_matrix_always),
		cmocka_unit_test(test_matrix_shared),
	};

	e2e_pick_fs(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
