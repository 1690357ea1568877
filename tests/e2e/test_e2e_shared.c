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
#include <pthread.h>
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

/* A 2-guest machine with cache=shared for guest A and hub settings. */
static struct e2e *shared_machine(const struct vqf_hub_cfg *hub,
				  unsigned int icache_max)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;

	clk = 1000 * SEC;
	cfg.guests = 2;
	cfg.inline_kick = true;
	cfg.cli.cache = VQF_GCLI_CACHE_SHARED;
	cfg.cli.timeout_ns = SEC;
	cfg.cli.clock = fake_clock;
	cfg.cli.clock_arg = &clk;
	cfg.cli.icache_max = icache_max;
	if (hub)
		cfg.hub = *hub;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	return e;
}

static struct vqf_hub_stats hub_stats(struct e2e *e)
{
	struct vqf_hub_stats hs;

	vqf_hub_get_stats(vqf_sim_hub(e->s), &hs);
	return hs;
}

/*
 * Without a slot (table full, or an index A refuses) guest A falls back
 * to its timeout: a change by B shows once the timeout passed, and the
 * cached answer before that is the one cache=auto would give.
 */
static void check_timeout_fallback(struct e2e *e, const char *name)
{
	struct vqf_gcli *a = vqf_sim_cli(e->s);
	struct vqf_gcli *b = vqf_sim_cli_n(e->s, 1);
	struct stat st;
	u64 r0;

	assert_int_equal(e2e_host_write(e2e_host(e, name), "abc", 3, 0644),
			 0);
	settle(e);
	assert_int_equal(vqf_gcli_lstat(a, name, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	r0 = requests(e, 0);
	assert_int_equal(vqf_gcli_lstat(a, name, &st), 0);
	assert_int_equal(requests(e, 0), r0);	/* within the timeout */
	assert_int_equal(vqf_gcli_chmod(b, name, 0600), 0);
	settle(e);
	assert_int_equal(vqf_gcli_lstat(a, name, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);	/* as cache=auto */
	clk += 2 * SEC;
	assert_int_equal(vqf_gcli_lstat(a, name, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

static void out_of_range(void *ctx, struct fuse_entryver_out *ev)
{
	const u64 *bad = ctx;

	ev->version_index = *bad;
}

/* Hostile indices: refused before any address is formed, counted. */
static void test_hostile_index(void **state)
{
	static const u64 bad_index[] = {
		65536, 65536 + 7, 1ULL << 61, ~0ULL,
	};
	unsigned int k;

	for (k = 0; k < sizeof(bad_index) / sizeof(bad_index[0]); k++) {
		struct vqf_hub_cfg hc = {
			.entryver_hook = out_of_range,
			.hook_ctx = (void *)&bad_index[k],
		};
		struct e2e *e = shared_machine(&hc, 0);
		struct vqf_ver_stats vs;

		check_timeout_fallback(e, "hostile");
		assert_true(vqf_gcli_get_ver_stats(vqf_sim_cli(e->s), &vs));
		assert_true(vs.index_out_of_range > 0);
		assert_int_equal(e2e_free(e), 0);
	}
}

static void future_version(void *ctx, struct fuse_entryver_out *ev)
{
	ev->initial_version += 1000000;
}

/* A version ahead of its slot: the table went backwards; never trusted. */
static void test_backward_version(void **state)
{
	struct vqf_hub_cfg hc = { .entryver_hook = future_version };
	struct e2e *e = shared_machine(&hc, 0);
	struct vqf_ver_stats vs;
	struct stat st;
	u64 r0;

	assert_int_equal(e2e_host_write(e2e_host(e, "f"), "abc", 3, 0644),
			 0);
	settle(e);
	assert_int_equal(vqf_gcli_lstat(vqf_sim_cli(e->s), "f", &st), 0);
	assert_true(vqf_gcli_get_ver_stats(vqf_sim_cli(e->s), &vs));
	assert_true(vs.backward > 0);
	/* Not proven valid: a later look goes to the device... */
	assert_int_equal(vqf_gcli_chmod(vqf_sim_cli_n(e->s, 1), "f", 0600),
			 0);
	r0 = requests(e, 0);
	assert_int_equal(vqf_gcli_lstat(vqf_sim_cli(e->s), "f", &st), 0);
	/* ...and sees the change (GETATTR with a version it can trust). */
	assert_true(requests(e, 0) > r0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(e2e_free(e), 0);
}

/* @n files "@prefix-i" made on the host, each looked at by guest A. */
static void host_files_looked_at(struct e2e *e, const char *prefix, int n)
{
	struct stat st;
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), "x", 1,
						0644), 0);
		settle(e);
		assert_int_equal(vqf_gcli_lstat(vqf_sim_cli(e->s), name, &st),
				 0);
	}
}

/* A full table: later inodes live on timeouts, never on wrong answers. */
static void test_table_full(void **state)
{
	struct vqf_hub_cfg hc = { .nr_slots = 4 };
	struct e2e *e = shared_machine(&hc, 0);
	struct vqf_hub_stats hs;

	host_files_looked_at(e, "full", 8);
	hs = hub_stats(e);
	assert_true(hs.ver.table_full > 0);
	assert_true(hs.unversioned > 0);
	check_timeout_fallback(e, "full-late");
	assert_int_equal(e2e_free(e), 0);
}

/* Slots go back when the last guest forgets the inode, and are reused. */
static void test_slot_recycle(void **state)
{
	struct e2e *e = shared_machine(NULL, 4);
	struct vqf_hub_stats hs;

	host_files_looked_at(e, "r", 64);
	/* The client keeps 4 unused inodes: the rest were forgotten. */
	assert_int_equal(vqf_gdrv_forget_flush(vqf_sim_drv(e->s)), 0);
	hs = hub_stats(e);
	assert_true(hs.ver.released > 0);
	assert_true(hs.nodes < 64);
	assert_int_equal(hs.forget_clamped, 0);
	assert_int_equal(hs.forget_unknown, 0);
	assert_int_equal(e2e_free(e), 0);
}

static int count_dirent(void *ctx, const char *name, const struct stat *st)
{
	(void)name;
	(void)st;
	++*(int *)ctx;
	return 0;
}

/*
 * READDIRPLUS hands out a lookup per entry but "." and ".." (the hub
 * walks the backend's reply with lib/'s walker): the hub counts one per
 * file of the listing, every record read to the end.
 */
static void test_readdirplus_counted(void **state)
{
	struct e2e *e = shared_machine(NULL, 0);
	struct vqf_gcli *a = vqf_sim_cli(e->s);
	struct vqf_hub_stats h0, h1;
	char name[32];
	int i, n = 0;

	(void)state;
	assert_int_equal(mkdir(e2e_host(e, "ls"), 0755), 0);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "ls/f%d", i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), "x", 1,
						0644), 0);
	}
	settle(e);
	/* READDIR first: "ls" is looked up and open, nothing counted. */
	assert_int_equal(vqf_gcli_readdir(a, "ls", false, count_dirent, &n),
			 0);
	assert_int_equal(n, 5);
	h0 = hub_stats(e);
	n = 0;
	assert_int_equal(vqf_gcli_readdir(a, "ls", true, count_dirent, &n),
			 0);
	assert_int_equal(n, 5);
	h1 = hub_stats(e);
	assert_int_equal(h1.entries - h0.entries, 3);
	assert_int_equal(h1.nodes - h0.nodes, 3);
	assert_int_equal(e2e_free(e), 0);
}

/* One guest cannot forget what only another looked up. */
static void test_forget_clamped(void **state)
{
	struct e2e *e = shared_machine(NULL, 0);
	struct vqf_gdrv *mine = e->g;
	struct fuse_attr attr;
	struct vqf_hub_stats hs;
	u64 nodeid;

	assert_int_equal(e2e_host_write(e2e_host(e, "held"), "x", 1, 0644),
			 0);
	assert_int_equal(vqf_gcli_get_nodeid(vqf_sim_cli(e->s), "held",
					     &nodeid), 0);
	/*
	 * Guest B forgets 1000 lookups of it: it holds none.  Its device's
	 * guard drops the FORGET (the hub would clamp it to 0 as well).
	 */
	e->g = vqf_sim_drv_n(e->s, 1);
	assert_int_equal(raw_forget(e, nodeid, 1000), 0);
	e->g = mine;
	{
		struct vqf_fsdev_stats ds;

		vqf_fsdev_get_stats(vqf_sim_dev_n(e->s, 1), &ds);
		assert_int_equal(ds.guard.forget_unknown, 1);
		vqf_fsdev_get_stats(vqf_sim_dev_n(e->s, 0), &ds);
		assert_int_equal(ds.guard.forget_unknown, 0);
	}
	hs = hub_stats(e);
	assert_int_equal(hs.forget_clamped, 0);
	/* The server still knows the inode A holds. */
	assert_int_equal(raw_getattr(e, nodeid, &attr), 0);
	assert_int_equal(e2e_free(e), 0);
}

/*
 * Without inotify the hub lstat()s every versioned node each period: a
 * host chmod shows after the next rescan (vqf_hub_sync() runs one now).
 */
static void test_rescan_mode(void **state)
{
	struct vqf_hub_cfg hc = {
		.watch = VQF_HUB_WATCH_RESCAN,
		.rescan_ms = 60000,	/* only the rescans the test runs */
	};
	struct e2e *e = shared_machine(&hc, 0);
	struct vqf_gcli *a = vqf_sim_cli(e->s);
	struct vqf_hub_stats hs;
	struct stat st;
	u64 r0;

	assert_int_equal(e2e_host_write(e2e_host(e, "rs"), "abc", 3, 0644),
			 0);
	assert_int_equal(vqf_gcli_lstat(a, "rs", &st), 0);
	settle(e);		/* the first rescan records what it sees */
	r0 = requests(e, 0);
	assert_int_equal(vqf_gcli_lstat(a, "rs", &st), 0);
	assert_int_equal(requests(e, 0), r0);
	assert_int_equal(chmod(e2e_host(e, "rs"), 0600), 0);
	settle(e);
	assert_int_equal(vqf_gcli_lstat(a, "rs", &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(requests(e, 0) > r0);
	hs = hub_stats(e);
	assert_true(hs.rescans >= 2);
	assert_true(hs.host_bumps >= 1);
	assert_int_equal(hs.host_events, 0);
	assert_int_equal(e2e_free(e), 0);
}

/* ---- INTERRUPT through the hub -------------------------------------- */

struct lkwait {
	struct vqf_gdrv_call cl;	/* first */
	struct fuse_lk_in li;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void lkwait_done(void *ctx, struct vqf_gdrv_call *cl)
{
	struct lkwait *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Whether @w completed within @ms. */
static bool lkwait_wait(struct lkwait *w, unsigned int ms)
{
	struct timespec ts;
	bool done;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done &&
	       pthread_cond_timedwait(&w->cond, &w->lock, &ts) == 0)
		;
	done = w->done;
	pthread_mutex_unlock(&w->lock);
	return done;
}

/*
 * Guest A's SETLKW waits in the server behind guest B's lock; A's
 * INTERRUPT names A's unique, which the backend never saw: the hub must
 * turn it into one for the backend's request, which then ends EINTR.
 */
static void test_interrupt_remapped(void **state)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	struct vqf_gcli *b;
	struct vqf_hub_stats hs;
	struct lkwait w;
	struct e2e *e = NULL;
	uint64_t fh;
	u64 nodeid;
	int fd;

	/* Device workers: the lock waits in one, hiprio is served. */
	cfg.guests = 2;
	cfg.threads = 2;
	cfg.cli.cache = VQF_GCLI_CACHE_SHARED;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	b = vqf_sim_cli_n(e->s, 1);
	assert_int_equal(e2e_host_write(e2e_host(e, "lk"), "x", 1, 0644), 0);
	fd = vqf_gcli_open(b, "lk", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_lock(b, fd, F_OFD_SETLK, &fl), 0);

	assert_int_equal(vqf_gcli_get_nodeid(e->c, "lk", &nodeid), 0);
	assert_int_equal(raw_open(e, nodeid, O_RDWR, &fh), 0);
	memset(&w, 0, sizeof(w));
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	w.li.fh = fh;
	w.li.owner = 0x7777;
	w.li.lk.end = 99;
	w.li.lk.type = F_WRLCK;
	vqf_req_init(&w.cl.req, FUSE_SETLKW, nodeid, 0);
	vqf_req_add_in(&w.cl.req, &w.li, sizeof(w.li));
	assert_int_equal(vqf_gdrv_submit(e->g, &w.cl, lkwait_done, &w), 0);
	assert_false(lkwait_wait(&w, 300));	/* waits behind B's lock */
	assert_int_equal(vqf_gdrv_interrupt(e->g, &w.cl), 0);
	assert_true(lkwait_wait(&w, 30000));
	assert_int_equal(w.cl.result, -EINTR);
	hs = hub_stats(e);
	assert_int_equal(hs.interrupts, 1);
	assert_int_equal(hs.interrupt_stale, 0);

	fl.l_type = F_UNLCK;
	assert_int_equal(vqf_gcli_lock(b, fd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(vqf_gcli_close(b, fd), 0);
	assert_int_equal(raw_release(e, nodeid, fh), 0);
	vqf_gcli_put_nodeid(e->c, nodeid);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	assert_int_equal(e2e_free(e), 0);
}

/*
 * Two guests, two threads each, creating, changing and removing a small
 * set of names at random while looking at them.  Afterwards every guest
 * must see exactly what the host has, for every name: no stale answer
 * survives the changes, whoever made them.
 */
#define STRESS_NAMES	12

struct stress {
	struct e2e *e;
	unsigned int guest, seed, iters;
	int errors;
};

static void *stress_main(void *arg)
{
	struct stress *t = arg;
	struct vqf_gcli *c = vqf_sim_cli_n(t->e->s, t->guest);
	unsigned int i, seed = t->seed;
	char name[32], to[32];
	struct stat st;
	int fd, ret;

	for (i = 0; i < t->iters; i++) {
		unsigned int k = (unsigned int)rand_r(&seed) % STRESS_NAMES;

		snprintf(name, sizeof(name), "s%u", k);
		snprintf(to, sizeof(to), "s%u",
			 (unsigned int)rand_r(&seed) % STRESS_NAMES);
		switch (rand_r(&seed) % 7) {
		case 0:
			fd = vqf_gcli_open(c, name, O_CREAT | O_WRONLY, 0644);
			if (fd >= 0)
				vqf_gcli_close(c, fd);
			else if (fd != -ENOENT && fd != -EEXIST)
				t->errors++;
			break;
		case 1:
			ret = vqf_gcli_unlink(c, name);
			if (ret && ret != -ENOENT)
				t->errors++;
			break;
		case 2:
			ret = vqf_gcli_rename(c, name, to, 0);
			if (ret && ret != -ENOENT)
				t->errors++;
			break;
		case 3:
			ret = vqf_gcli_chmod(c, name, 0600 | (i & 044));
			if (ret && ret != -ENOENT)
				t->errors++;
			break;
		case 4:
			ret = vqf_gcli_truncate(c, name, i % 100);
			if (ret && ret != -ENOENT)
				t->errors++;
			break;
		default:
			ret = vqf_gcli_lstat(c, name, &st);
			if (ret && ret != -ENOENT)
				t->errors++;
			break;
		}
	}
	return NULL;
}

static void test_stress_converges(void **state)
{
	struct e2e *e = shared_machine(NULL, 0);
	struct stress t[4];
	pthread_t thr[4];
	char n[2][64];
	unsigned int i, g, k;

	for (i = 0; i < 4; i++) {
		t[i].e = e;
		t[i].guest = i / 2;
		t[i].seed = e2e_seed() + i;
		t[i].iters = e2e_slow() ? 100 : 2000;
		t[i].errors = 0;
		assert_int_equal(pthread_create(&thr[i], NULL, stress_main,
						&t[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(thr[i], NULL);
		assert_int_equal(t[i].errors, 0);
	}
	settle(e);
	/* Guest B runs cache=shared too: both must agree with the host. */
	for (k = 0; k < STRESS_NAMES; k++) {
		struct view hv, gv;

		snprintf(n[0], 64, "s%u", k);
		snprintf(n[1], 64, "s%u", (k + 1) % STRESS_NAMES);
		hv = host_view(e, n);
		for (g = 0; g < 2; g++) {
			gv = guest_view(vqf_sim_cli_n(e->s, g), n);
			if (!same(&gv, &hv))
				fail_msg("guest %u sees s%u stale", g, k);
		}
	}
	assert_int_equal(e2e_free(e), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix_none),
		cmocka_unit_test(test_matrix_auto),
		cmocka_unit_test(test_matrix_always),
		cmocka_unit_test(test_matrix_shared),
		cmocka_unit_test(test_hostile_index),
		cmocka_unit_test(test_backward_version),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_slot_recycle),
		cmocka_unit_test(test_forget_clamped),
		cmocka_unit_test(test_readdirplus_counted),
		cmocka_unit_test(test_rescan_mode),
		cmocka_unit_test(test_interrupt_remapped),
		cmocka_unit_test(test_stress_converges),
	};

	e2e_pick_fs(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
