// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_fault.c - the simulated machine under a seeded device fault plan
 * (sim/device/vqf_fault.h, docs/faults.md).
 *
 * Guest threads write blocks of known content through vqf_gcli and read
 * them back, over a shared directory that outlives many machines
 * ("lives"): a life ends cleanly, because the driver broke a queue (a
 * duplicated used entry), or abruptly with calls in flight.  A model per
 * 16-byte chunk keeps the generation last acknowledged and the last one
 * attempted; every chunk read back - through the guest or on the host
 * after each life - must hold one of those or one in between, so nothing
 * the guest was told was written is ever lost.  Each life's counters must
 * add up against the faults the device says it injected.
 *
 * Env: VQF_SEED (first seed), VQF_FAULT_SEEDS (seeds, default 3),
 * VQF_FAULT_REQUESTS (requests per seed, default 100000); valgrind and
 * sanitizer builds run fewer (see CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "../e2e/e2e.h"
#include "vqf_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#define NTHR		6
#define FILES		3		/* per thread */
#define BLK		512
#define NBLK		16
#define CHUNK		16
#define CPB		(BLK / CHUNK)	/* chunks per block */
#define CPF		(NBLK * CPB)	/* chunks per file */
#define MAGIC		0x76716674u
#define WAIT_S		60
#define STUCK_MS	120000	/* no request issued for this long */

/* ---- helpers ------------------------------------------------------------ */

static u64 mix(u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static u64 env_u64(const char *name, u64 def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

static bool slow(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

static bool sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#else
	return false;
#endif
}

static u64 requests_per_seed(void)
{
	return env_u64("VQF_FAULT_REQUESTS", slow() ? 3000 :
		       sanitized() ? 20000 : 100000);
}

static unsigned int seeds(void)
{
	return (unsigned int)env_u64("VQF_FAULT_SEEDS",
				     slow() || sanitized() ? 1 : 3);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Joins or fails the test: a call that never returns is a hang. */
static void join_bounded(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_S;
	if (pthread_timedjoin_np(t, NULL, &ts))
		fail_msg("a guest thread did not return within %d s", WAIT_S);
}

/* ---- the data model ----------------------------------------------------- */

struct mfile {
	u32 id;
	u32 gen;		/* last generation handed out */
	u32 acked[CPF];		/* known on the host (0: nothing yet) */
	u32 attempt[CPF];	/* last generation sent */
};

static u32 chk(u32 file, u32 chunk, u32 gen)
{
	return (u32)mix(((u64)file << 40) ^ ((u64)chunk << 20) ^ gen);
}

static void fill_block(u8 *buf, u32 file, u32 blk, u32 gen)
{
	u32 i, w[4];

	for (i = 0; i < CPB; i++) {
		u32 c = blk * CPB + i;

		w[0] = MAGIC ^ file;
		w[1] = c;
		w[2] = gen;
		w[3] = chk(file, c, gen);
		memcpy(buf + i * CHUNK, w, CHUNK);
	}
}

/*
 * Checks chunk @c of @f as found (@p, or NULL past the end of the file)
 * and moves acked up to what was seen: it is on the host now.  Returns
 * NULL or what is wrong.
 */
static const char *check_chunk(struct mfile *f, u32 c, const u8 *p)
{
	static const u8 zero[CHUNK];
	u32 w[4];

	if (!p || !memcmp(p, zero, CHUNK))
		return f->acked[c] ? "acknowledged data lost" : NULL;
	memcpy(w, p, CHUNK);
	if (w[0] != (MAGIC ^ f->id) || w[1] != c ||
	    w[3] != chk(f->id, c, w[2]) || !w[2])
		return "garbage";
	if (w[2] < f->acked[c])
		return "older than acknowledged";
	if (w[2] > f->attempt[c])
		return "never written";
	f->acked[c] = w[2];
	return NULL;
}

/* ---- results and tallies ------------------------------------------------ */

enum res {
	RS_OK, RS_SHORT, RS_EIO, RS_ENOSPC, RS_EINTR, RS_ENOTCONN, RS_VALID,
	RS_NR
};

static const char *const res_name[RS_NR] = {
	"ok", "short", "EIO", "ENOSPC", "EINTR", "ENOTCONN", "validation"
};

/* The driver's validation errnos (vqf_req_complete), should they reach
 * the caller instead of -EIO.
 */
static bool validation_errno(int e)
{
	switch (e) {
	case -EBADMSG: case -ENODATA: case -EOVERFLOW: case -EFBIG:
	case -ENOMSG: case -ERANGE: case -EPROTO: case -EREMOTEIO:
		return true;
	}
	return false;
}

struct thr {
	struct life *L;
	pthread_t t;
	unsigned int id;
	u64 rng;
	u64 ops;		/* data requests (READ/WRITE) issued */
	u64 res[RS_NR];		/* their results */
	u64 opens, open_fail;
	int bad;		/* first unexpected errno */
	char what[96];		/* first failure */
	bool saw_enotconn;
};

struct run {
	char dir[64];
	struct mfile files[NTHR * FILES];
	u64 tot[RS_NR];
	u64 faults[VQF_FAULT_NR];
	u64 submitted, lives, broken, abrupt, clean, pending_queued;
	u64 interrupts_sent, held_dropped, polls, ring_errors;
	u64 destroy_skipped;
};

struct life {
	struct run *R;
	struct vqf_sim *s;
	struct vqf_gcli *c;
	struct vqf_gdrv *g;
	unsigned int nthr;
	volatile bool stop;
	u64 budget;		/* data ops for the whole life */
	u64 issued;		/* atomic */
	unsigned int running;	/* atomic: guest threads not yet done */
	struct thr th[NTHR];
};

static u64 xs(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void thr_fail(struct thr *t, const char *fmt, ...)
{
	va_list ap;

	if (t->what[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->what, sizeof(t->what), fmt, ap);
	va_end(ap);
}

/*
 * Sorts a data op's result; false for one no fault explains.  A read may
 * come back short at the end of the file; a write only when the device
 * cut it (SHORT_WRITE).
 */
static bool tally(struct thr *t, long ret, size_t want, bool rd)
{
	enum res r;

	if (ret == (long)want || (rd && ret >= 0))
		r = RS_OK;
	else if (ret >= 0)
		r = RS_SHORT;
	else if (ret == -EIO)
		r = RS_EIO;
	else if (ret == -ENOSPC)
		r = RS_ENOSPC;
	else if (ret == -EINTR)
		r = RS_EINTR;
	else if (ret == -ENOTCONN)
		r = RS_ENOTCONN;
	else if (validation_errno((int)ret))
		r = RS_VALID;
	else
		return false;
	t->res[r]++;
	if (r == RS_ENOTCONN)
		t->saw_enotconn = true;
	return true;
}

static int open_file(struct thr *t, struct mfile *f)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "f%u", f->id);
	t->opens++;
	fd = vqf_gcli_open(t->L->c, name, O_CREAT | O_RDWR, 0600);
	if (fd < 0) {
		t->open_fail++;
		if (fd == -ENOTCONN)
			t->saw_enotconn = true;
		else if (fd != -EIO)
			thr_fail(t, "open %s: %d", name, fd);
	}
	return fd;
}

static void do_write(struct thr *t, struct mfile *f, int fd, u32 blk)
{
	u8 buf[BLK];
	u32 gen = ++f->gen, i, n;
	long ret;

	fill_block(buf, f->id, blk, gen);
	for (i = 0; i < CPB; i++)
		f->attempt[blk * CPB + i] = gen;
	ret = vqf_gcli_pwrite(t->L->c, fd, buf, BLK, (off_t)blk * BLK);
	t->ops++;
	if (!tally(t, ret, BLK, false)) {
		thr_fail(t, "pwrite: %ld", ret);
		return;
	}
	if (ret < 0)
		return;
	/* A short write says how much landed: whole chunks only here. */
	if (ret % CHUNK)
		thr_fail(t, "pwrite: short count %ld not in chunks", ret);
	n = (u32)ret / CHUNK;
	for (i = 0; i < n; i++)
		f->acked[blk * CPB + i] = gen;
}

static void do_read(struct thr *t, struct mfile *f, int fd, u32 blk)
{
	u8 buf[BLK];
	const char *why;
	long ret;
	u32 i;

	ret = vqf_gcli_pread(t->L->c, fd, buf, BLK, (off_t)blk * BLK);
	t->ops++;
	if (!tally(t, ret, BLK, true)) {
		thr_fail(t, "pread: %ld", ret);
		return;
	}
	if (ret < 0)
		return;
	if (ret % CHUNK)
		thr_fail(t, "pread: %ld bytes, not whole chunks", ret);
	for (i = 0; i < CPB; i++) {
		why = check_chunk(f, blk * CPB + i,
				  i < (u32)ret / CHUNK ? buf + i * CHUNK :
				  NULL);
		if (why)
			thr_fail(t, "pread f%u chunk %u: %s", f->id,
				 blk * CPB + i, why);
	}
}

static void *guest_main(void *arg)
{
	struct thr *t = arg;
	struct life *L = t->L;
	struct mfile *mine = &L->R->files[t->id * FILES];
	int fd[FILES];
	unsigned int k;

	for (k = 0; k < FILES; k++)
		fd[k] = -1;
	while (!L->stop && !t->saw_enotconn && !t->what[0]) {
		u64 x = xs(&t->rng);
		struct mfile *f;

		if (__atomic_fetch_add(&L->issued, 1, __ATOMIC_RELAXED) >=
		    L->budget)
			break;
		k = (unsigned int)(x % FILES);
		f = &mine[k];
		if (fd[k] < 0) {
			fd[k] = open_file(t, f);
			if (fd[k] < 0) {
				if (!vqf_gdrv_alive(L->g))
					break;
				continue;
			}
		}
		if ((x >> 8) % 100 < 55)
			do_write(t, f, fd[k], (u32)((x >> 16) % NBLK));
		else
			do_read(t, f, fd[k], (u32)((x >> 16) % NBLK));
		if ((x >> 32) % 100 < 2) {
			vqf_gcli_close(L->c, fd[k]);
			fd[k] = -1;
		}
		/* A broken queue refuses everything: let main shut down. */
		if (!vqf_gdrv_alive(L->g))
			break;
	}
	for (k = 0; k < FILES; k++)
		if (fd[k] >= 0)
			vqf_gcli_close(L->c, fd[k]);
	__atomic_sub_fetch(&L->running, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- one life ----------------------------------------------------------- */

static const struct vqf_fault_plan soak_plan = {
	.ppm = {
		[VQF_FAULT_STALL] = 2000,
		[VQF_FAULT_DROP_KICK] = 2000,
		[VQF_FAULT_FILL] = 2000,
		[VQF_FAULT_EIO] = 5000,
		[VQF_FAULT_ENOSPC] = 3000,
		[VQF_FAULT_EINTR] = 3000,
		[VQF_FAULT_SHORT_WRITE] = 5000,
		[VQF_FAULT_SHORT_USED] = 3000,
		[VQF_FAULT_BAD_HDR_LEN] = 3000,
		[VQF_FAULT_REORDER] = 20000,
		[VQF_FAULT_DUP] = 20,
		[VQF_FAULT_DROP_CALL] = 5000,
	},
	.reorder_max = 3,
	.fill_chains = 3,
};

/* vqf_gdrv_cfg.shutdown_grace_ms for the next machines (0: default). */
static unsigned int grace_ms;

static struct vqf_sim *machine(const char *dir, const struct vqf_fault_plan *p,
			       unsigned int qsize)
{
	struct vqf_sim_cfg cfg = {
		.shared = dir,
		.queues = 1,
		.queue_size = qsize,
		.inline_kick = true,
		.ram = 64u << 20,
		.faults = p,
		/* Direct chains of 4-5 descriptors: a few requests fill the
		 * ring and the rest wait on the driver's pending list.
		 */
		.drv.no_indirect = true,
		.drv.shutdown_grace_ms = grace_ms,
	};
	struct vqf_sim *s = NULL;
	int ret = vqf_sim_new(&cfg, &s);

	if (ret)
		fail_msg("vqf_sim_new: %d", ret);
	return s;
}

/* Every file as the host has it, against the model. */
static void check_host(struct run *R, unsigned int nfiles)
{
	char path[96];
	u8 buf[CPF * CHUNK];
	const char *why;
	unsigned int i;
	u32 c;

	for (i = 0; i < nfiles; i++) {
		struct mfile *f = &R->files[i];
		ssize_t n = 0;
		int fd;

		snprintf(path, sizeof(path), "%s/f%u", R->dir, f->id);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			n = pread(fd, buf, sizeof(buf), 0);
			close(fd);
		}
		if (n < 0)
			fail_msg("host read %s: %d", path, errno);
		for (c = 0; c < CPF; c++) {
			why = check_chunk(f, c, (c + 1) * CHUNK <= (size_t)n ?
					  buf + c * CHUNK : NULL);
			if (why)
				fail_msg("host file f%u chunk %u: %s", f->id,
					 c, why);
		}
	}
}

/* No progress: what the driver and device hold, then the failure. */
static void stuck(struct life *L)
{
	struct vqf_sim_stats st;

	vqf_sim_get_stats(L->s, &st);
	fprintf(stderr, "stuck life %llu: issued %llu of %llu, %u threads "
		"running; driver submitted %llu completed %llu failed %llu "
		"in flight %llu pending max %llu irqs %llu kicks %llu; device "
		"replies %llu fault polls %llu held dropped %llu, injected "
		"stall %llu drop_call %llu drop_kick %llu reorder %llu\n",
		(unsigned long long)L->R->lives,
		(unsigned long long)L->issued,
		(unsigned long long)L->budget, L->running,
		(unsigned long long)st.drv.submitted,
		(unsigned long long)st.drv.completed,
		(unsigned long long)st.drv.failed,
		(unsigned long long)vqf_gdrv_inflight(L->g),
		(unsigned long long)st.drv.pending_max,
		(unsigned long long)st.drv.irqs,
		(unsigned long long)st.drv.kicks,
		(unsigned long long)st.dev.replies,
		(unsigned long long)st.dev.fault_polls,
		(unsigned long long)st.dev.fault_held_dropped,
		(unsigned long long)st.dev.faults[VQF_FAULT_STALL],
		(unsigned long long)st.dev.faults[VQF_FAULT_DROP_CALL],
		(unsigned long long)st.dev.faults[VQF_FAULT_DROP_KICK],
		(unsigned long long)st.dev.faults[VQF_FAULT_REORDER]);
	fail_msg("a life made no progress for %d ms", STUCK_MS);
}

/*
 * One machine over R->dir: @nthr guest threads until @budget data ops
 * are issued or a queue breaks; @abrupt pulls the plug (vqf_gdrv_shutdown)
 * while they run.  Checks the life's counters; returns requests
 * submitted.
 */
static u64 live(struct run *R, const struct vqf_fault_plan *p,
		unsigned int nthr, u64 budget, bool abrupt, u64 rng)
{
	struct life *L = calloc(1, sizeof(*L));
	struct vqf_sim_stats st;
	const u64 *inj;
	u64 seen[RS_NR] = { 0 }, bad, sub, last_issued = ~0ull;
	unsigned int i, k, idle_ms = 0;
	bool broken, clean;

	assert_non_null(L);
	L->R = R;
	L->nthr = nthr;
	L->budget = budget;
	L->s = machine(R->dir, p, 16);
	L->c = vqf_sim_cli(L->s);
	L->g = vqf_sim_drv(L->s);
	L->running = nthr;
	for (i = 0; i < nthr; i++) {
		L->th[i].L = L;
		L->th[i].id = i;
		L->th[i].rng = mix(rng + i) | 1;
		assert_int_equal(pthread_create(&L->th[i].t, NULL, guest_main,
						&L->th[i]), 0);
	}
	/* Main watches: a broken queue strands the requests on it until
	 * shutdown, as in Linux (the driver marks the vq broken).  A life
	 * that makes no progress for STUCK_MS (far beyond any request, even
	 * under valgrind at load) is a lost completion: its state is
	 * printed and the test fails, rather than ctest's timeout.
	 */
	for (;;) {
		u64 issued = __atomic_load_n(&L->issued, __ATOMIC_RELAXED);

		if (issued != last_issued) {
			last_issued = issued;
			idle_ms = 0;
		} else if (++idle_ms > STUCK_MS) {
			stuck(L);
		}

		if (!vqf_gdrv_alive(L->g))
			break;
		if (abrupt && issued >= budget / 2)
			break;
		if (!__atomic_load_n(&L->running, __ATOMIC_ACQUIRE))
			break;
		sleep_ms(1);
	}
	broken = !vqf_gdrv_alive(L->g);
	if (broken || abrupt) {
		/* Calls in flight from the other threads: each must come
		 * back, with its reply or an error, and none twice.
		 */
		vqf_gdrv_shutdown(L->g);
		L->stop = true;
	} else {
		L->stop = true;
	}
	for (i = 0; i < nthr; i++)
		join_bounded(L->th[i].t);
	/* Clean: nothing in flight any more; DESTROY and reset now. */
	vqf_gdrv_shutdown(L->g);
	vqf_sim_get_stats(L->s, &st);
	inj = st.dev.faults;

	for (i = 0; i < nthr; i++) {
		struct thr *t = &L->th[i];

		if (t->what[0])
			fail_msg("life %llu thread %u: %s",
				 (unsigned long long)R->lives, i, t->what);
		for (k = 0; k < RS_NR; k++)
			seen[k] += t->res[k];
	}
	/* Exactly once: every request the driver took was completed or
	 * failed, once, and none is left.
	 */
	assert_int_equal(st.drv.submitted, st.drv.completed + st.drv.failed);
	assert_int_equal(vqf_gdrv_inflight(L->g), 0);
	/* A duplicated used entry is refused: the queue breaks, nothing
	 * completes twice (the identity above).
	 */
	assert_int_equal(!!inj[VQF_FAULT_DUP], !!st.drv.ring_errors);
	assert_true(inj[VQF_FAULT_DUP] <= 1);
	/* Every refused reply was one the device corrupted. */
	bad = st.drv.req.short_header + st.drv.req.len_overflow +
	      st.drv.req.page_overflow + st.drv.req.len_mismatch +
	      st.drv.req.unique_mismatch + st.drv.req.bad_error +
	      st.drv.req.error_payload + st.drv.req.short_fixed_arg;
	assert_int_equal(bad, st.drv.bad_replies);
	assert_true(st.drv.bad_replies <=
		    inj[VQF_FAULT_SHORT_USED] + inj[VQF_FAULT_BAD_HDR_LEN]);
	assert_int_equal(st.drv.req.unique_mismatch, 0);
	/* Results no fault explains never happen; those one explains
	 * never outnumber the faults.
	 */
	assert_true(seen[RS_ENOSPC] <= inj[VQF_FAULT_ENOSPC]);
	assert_true(seen[RS_EINTR] <= inj[VQF_FAULT_EINTR]);
	assert_true(seen[RS_SHORT] <= inj[VQF_FAULT_SHORT_WRITE]);
	clean = !abrupt && !broken && !inj[VQF_FAULT_DUP] &&
		!st.dev.fault_held_dropped;
	if (clean) {
		/* Nothing was cut short: the counters add up exactly. */
		assert_int_equal(st.drv.failed, 0);
		assert_int_equal(seen[RS_ENOTCONN], 0);
		assert_int_equal(st.drv.bad_replies,
				 inj[VQF_FAULT_SHORT_USED] +
				 inj[VQF_FAULT_BAD_HDR_LEN]);
		assert_int_equal(seen[RS_ENOSPC], inj[VQF_FAULT_ENOSPC]);
		assert_int_equal(seen[RS_EINTR], inj[VQF_FAULT_EINTR]);
		assert_int_equal(seen[RS_SHORT], inj[VQF_FAULT_SHORT_WRITE]);
		assert_int_equal(seen[RS_EIO] + seen[RS_VALID],
				 inj[VQF_FAULT_EIO] + st.drv.bad_replies);
		assert_int_equal(st.dev.requests, st.drv.submitted);
		R->clean++;
	}
	sub = st.drv.submitted;
	for (k = 0; k < RS_NR; k++)
		R->tot[k] += seen[k];
	for (k = 0; k < VQF_FAULT_NR; k++)
		R->faults[k] += inj[k];
	R->submitted += sub;
	R->lives++;
	R->broken += broken;
	R->abrupt += abrupt && !broken;
	R->pending_queued += st.drv.pending_queued;
	R->interrupts_sent += st.drv.interrupts_sent;
	R->held_dropped += st.dev.fault_held_dropped;
	R->polls += st.dev.fault_polls;
	R->ring_errors += st.drv.ring_errors;
	R->destroy_skipped += st.drv.destroy_skipped;
	vqf_sim_free(L->s);
	free(L);
	check_host(R, nthr * FILES);
	return sub;
}

static struct run *run_new(void)
{
	struct run *R = calloc(1, sizeof(*R));
	unsigned int i;

	assert_non_null(R);
	snprintf(R->dir, sizeof(R->dir), "/tmp/vqf-fault-XXXXXX");
	assert_non_null(mkdtemp(R->dir));
	for (i = 0; i < NTHR * FILES; i++)
		R->files[i].id = i;
	return R;
}

static void run_free(struct run *R)
{
	e2e_rm_rf(R->dir);
	free(R);
}

/* ---- tests -------------------------------------------------------------- */

/* The plan is a pure function: same question, same answer; rates hold. */
static void test_plan(void **state)
{
	struct vqf_fault_plan p = { .seed = 42 };
	u64 i, hits = 0;

	(void)state;
	p.ppm[VQF_FAULT_EIO] = 10000;
	for (i = 0; i < 1000000; i++) {
		bool a = vqf_fault_roll(&p, 1, i, VQF_FAULT_EIO);

		assert_int_equal(a, vqf_fault_roll(&p, 1, i, VQF_FAULT_EIO));
		hits += a;
		assert_false(vqf_fault_roll(&p, 1, i, VQF_FAULT_STALL));
	}
	assert_true(hits > 9500 && hits < 10500);
	p.ppm[VQF_FAULT_DUP] = VQF_FAULT_PPM;
	assert_true(vqf_fault_roll(&p, 3, 7, VQF_FAULT_DUP));
	assert_int_equal(vqf_fault_plan_check(&p), 0);
	p.ppm[VQF_FAULT_DUP] = VQF_FAULT_PPM + 1;
	assert_int_equal(vqf_fault_plan_check(&p), -EINVAL);
	assert_string_equal(vqf_fault_name(VQF_FAULT_SHORT_USED),
			    "short_used");
	assert_string_equal(vqf_fault_name(VQF_FAULT_NR), "?");
}

/* A plan needs the inline mode (the poll timer is the other popper). */
static void test_plan_needs_inline(void **state)
{
	struct vqf_fault_plan p = soak_plan;
	struct vqf_sim_cfg cfg = { .faults = &p, .ram = 16u << 20 };
	struct vqf_sim *s = NULL;
	char dir[] = "/tmp/vqf-fault-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(dir));
	cfg.shared = dir;
	assert_int_equal(vqf_sim_new(&cfg, &s), -EINVAL);
	p.reorder_max = VQF_FAULT_HELD_MAX + 1;
	cfg.inline_kick = true;
	assert_int_equal(vqf_sim_new(&cfg, &s), -EINVAL);
	rmdir(dir);
}

static void print_run(const char *what, u64 seed, struct run *R, double dt)
{
	unsigned int k;

	print_message("%s seed %#llx: %llu requests in %.2f s (%.0f/s), "
		      "%llu lives (%llu clean, %llu broken by dup, %llu cut "
		      "short), pending %llu, polls %llu, held dropped %llu, "
		      "ring errors %llu, DESTROY skipped %llu\n",
		      what, (unsigned long long)seed,
		      (unsigned long long)R->submitted, dt, R->submitted / dt,
		      (unsigned long long)R->lives,
		      (unsigned long long)R->clean,
		      (unsigned long long)R->broken,
		      (unsigned long long)R->abrupt,
		      (unsigned long long)R->pending_queued,
		      (unsigned long long)R->polls,
		      (unsigned long long)R->held_dropped,
		      (unsigned long long)R->ring_errors,
		      (unsigned long long)R->destroy_skipped);
	print_message("  injected:");
	for (k = 0; k < VQF_FAULT_NR; k++)
		print_message(" %s %llu", vqf_fault_name(k),
			      (unsigned long long)R->faults[k]);
	print_message("\n  results:");
	for (k = 0; k < RS_NR; k++)
		print_message(" %s %llu", res_name[k],
			      (unsigned long long)R->tot[k]);
	print_message("\n");
}

/*
 * The soak: per seed, lives of NTHR threads until the requests are in,
 * every third life cut short with calls in flight.
 */
static void test_soak(void **state)
{
	u64 base = env_u64("VQF_SEED", 0x5eed1234), want = requests_per_seed();
	unsigned int si, ns = seeds();
	/* A baseline for docs/faults.md: the same soak, no faults. */
	bool none = getenv("VQF_FAULT_NONE") != NULL;

	(void)state;
	for (si = 0; si < ns; si++) {
		u64 seed = base + si, rng = mix(seed);
		struct vqf_fault_plan p = soak_plan;
		struct run *R = run_new();
		double t0 = now_s();

		if (none)
			memset(p.ppm, 0, sizeof(p.ppm));
		unsigned int k;

		while (R->submitted < want) {
			u64 budget = want / 12 + xs(&rng) % (want / 8 + 1);

			p.seed = mix(seed ^ (R->lives << 32));
			live(R, &p, NTHR, budget, R->lives % 3 == 2,
			     xs(&rng));
		}
		print_run(none ? "soak (no faults)" : "soak", seed, R,
			  now_s() - t0);
		if (none) {
			run_free(R);
			continue;
		}
		/* Every fault fired; the pending list was used. */
		for (k = 0; k < VQF_FAULT_NR; k++)
			if (k != VQF_FAULT_DUP || want >= 50000)
				assert_true(R->faults[k] > 0);
		assert_true(R->pending_queued > 0);
		assert_true(R->clean > 0);
		run_free(R);
	}
}

/*
 * One guest thread and the inline device: the chain stream is
 * deterministic, so a seed replays exactly - same faults on the same
 * requests, same results, same counters.
 */
static void test_replay(void **state)
{
	struct vqf_fault_plan p = soak_plan;
	u64 seed = env_u64("VQF_SEED", 0x5eed1234), n = slow() ? 400 : 3000;
	struct run *R[2];
	unsigned int i, k;

	(void)state;
	p.seed = mix(seed ^ 0x7e9);
	p.ppm[VQF_FAULT_DUP] = 0;	/* one life, no break */
	/* Denser than the soak: a few thousand requests see each kind. */
	for (k = 0; k < VQF_FAULT_NR; k++)
		p.ppm[k] *= 3;
	p.ppm[VQF_FAULT_DUP] = 0;
	for (i = 0; i < 2; i++) {
		R[i] = run_new();
		live(R[i], &p, 1, n, false, seed);
		assert_int_equal(R[i]->clean, 1);
	}
	/*
	 * Except the kinds that only delay a reply, never change it (the
	 * results and acked bytes below are compared exactly):
	 *  - DROP_CALL, rolled only when an interrupt is due: a caller
	 *    reaping its own reply has interrupts off, so whether one is due
	 *    for a completion the poll timer releases depends on whether it
	 *    comes before or after the caller stopped reaping;
	 *  - STALL, DROP_KICK and FILL, rolled for the chain at the head of
	 *    the queue when a pop attempt starts (fsdev_fault.c): chains a
	 *    pop takes behind it in the same batch roll nothing, and how many
	 *    wait at an attempt depends on whether a kick or a poll tick made
	 *    it.  Two replays differed by one of these in about one run in
	 *    three (0x17 != 0x18 drop_kick, under ASan).
	 */
	for (k = 0; k < VQF_FAULT_NR; k++) {
		if (k == VQF_FAULT_DROP_CALL || k == VQF_FAULT_STALL ||
		    k == VQF_FAULT_DROP_KICK || k == VQF_FAULT_FILL)
			continue;
		assert_int_equal(R[0]->faults[k], R[1]->faults[k]);
	}
	for (k = 0; k < RS_NR; k++)
		assert_int_equal(R[0]->tot[k], R[1]->tot[k]);
	assert_int_equal(R[0]->submitted, R[1]->submitted);
	for (i = 0; i < NTHR * FILES; i++)
		assert_memory_equal(R[0]->files[i].acked, R[1]->files[i].acked,
				    sizeof(R[0]->files[i].acked));
	print_run("replay", seed, R[0], 1);
	run_free(R[0]);
	run_free(R[1]);
}

/*
 * Guest shut down mid-request, the hard way: a slow device (stalls, held
 * completions, a 50 ms poll timer) and a 1 ms grace period, so that
 * vqf_gdrv_shutdown() gives up waiting (INTERRUPTs, then no DESTROY) and
 * resets the device with calls in flight: held completions are dropped,
 * their callers get -ENOTCONN, none hangs, none completes twice, and the
 * host still has every acknowledged chunk.  (The soak's cut-short lives
 * take the graceful path: in-flight calls finish, new ones are refused.)
 */
static void test_shutdown_midrequest(void **state)
{
	struct vqf_fault_plan p = soak_plan;
	unsigned int i, n = slow() ? 3 : 10;
	struct run *R = run_new();

	(void)state;
	p.ppm[VQF_FAULT_DUP] = 0;
	p.ppm[VQF_FAULT_STALL] = 30000;
	p.ppm[VQF_FAULT_REORDER] = 200000;
	p.stall_len = 2;
	p.tick_ms = 50;
	grace_ms = 1;
	/*
	 * Whether a completion is held at the reset depends on how far the
	 * device got when the budget ran out, which is the machine's speed
	 * (valgrind, load): after the first @n lives, more until each
	 * outcome was seen, bounded in lives, not in time.
	 */
	for (i = 0; i < n || (i < 200 && (!R->tot[RS_ENOTCONN] ||
					  !R->held_dropped ||
					  !R->destroy_skipped)); i++) {
		p.seed = mix(0xdead0000ull + i);
		live(R, &p, NTHR, 100 + 20 * (i % 10), true, i);
	}
	grace_ms = 0;
	print_run("shutdown", 0, R, 1);
	assert_true(R->tot[RS_ENOTCONN] > 0);
	assert_true(R->held_dropped > 0);
	assert_true(R->destroy_skipped > 0);
	run_free(R);
}

/* ---- defects in sim/guest (reproducers) ----------------------------------- */

/* One machine, one plan with only @kind at @ppm, one thread doing
 * pwrite/pread of one block; returns the last pread's and pwrite's results.
 */
struct one {
	struct run *R;
	struct vqf_sim *s;
	struct vqf_gcli *c;
	int fd;
};

static void one_new(struct one *o, enum vqf_fault_kind kind, u32 ppm)
{
	struct vqf_fault_plan p = { .seed = 1 };

	p.ppm[kind] = ppm;
	o->R = run_new();
	o->s = machine(o->R->dir, &p, 16);
	o->c = vqf_sim_cli(o->s);
	o->fd = vqf_gcli_open(o->c, "f0", O_CREAT | O_RDWR, 0600);
	assert_true(o->fd >= 0);
}

static void one_free(struct one *o)
{
	vqf_sim_free(o->s);
	run_free(o->R);
}

/*
 * A reply the driver refuses (here: used.len shorter than the reply)
 * reaches the caller as -EIO, the same errno as a server's EIO: the
 * guest cannot tell a lying device from a failing disk.  sim/guest/gdrv.c
 * complete_one() maps every vqf_req_complete() errno to -EIO; it should
 * pass that errno (-EBADMSG here) through.
 */
static void test_defect_refused_reply_errno(void **state)
{
	struct one o;
	u8 buf[BLK] = { 0 };
	struct vqf_sim_stats st;
	long ret;

	(void)state;
	one_new(&o, VQF_FAULT_SHORT_USED, VQF_FAULT_PPM);
	ret = vqf_gcli_pwrite(o.c, o.fd, buf, BLK, 0);
	vqf_sim_get_stats(o.s, &st);
	assert_int_equal(st.dev.faults[VQF_FAULT_SHORT_USED], 1);
	assert_int_equal(st.drv.bad_replies, 1);
	one_free(&o);
	if (ret == -EIO) {
		print_message("BUG (sim/guest/gdrv.c complete_one): a refused "
			      "reply returns -EIO, not vqf_req_complete()'s "
			      "errno (-EBADMSG/-ENODATA)\n");
		skip();
	}
	assert_true(validation_errno((int)ret));
}

struct opener {
	struct vqf_gcli *c;
	volatile bool done;
	int ret;
};

static void *open_thread(void *arg)
{
	struct opener *o = arg;

	o->ret = vqf_gcli_open(o->c, "f0", O_CREAT | O_RDWR, 0600);
	o->done = true;
	return NULL;
}

/*
 * A duplicated used entry breaks the queue (vqf_vring_drv_get_buf() sees
 * more used entries than buffers in flight and refuses the whole batch).
 * The request whose completion was genuine must not wait for someone to
 * call vqf_gdrv_shutdown(): the driver resets the device by itself and
 * fails it with -EIO, counting the ring error once.  Linux leaves such
 * requests hanging (BAD_RING); sim/guest promises none hang.
 */
static void test_dup_breaks_queue(void **state)
{
	struct vqf_fault_plan p = { .seed = 3 };
	struct opener o = { 0 };
	struct vqf_sim_stats st;
	struct vqf_sim *s;
	struct run *R = run_new();
	pthread_t t;

	(void)state;
	p.ppm[VQF_FAULT_DUP] = VQF_FAULT_PPM;	/* the LOOKUP after INIT */
	s = machine(R->dir, &p, 16);
	o.c = vqf_sim_cli(s);
	assert_int_equal(pthread_create(&t, NULL, open_thread, &o), 0);
	/* No shutdown from here: a hang is join_bounded()'s failure. */
	join_bounded(t);
	assert_int_equal(o.ret, -EIO);
	assert_false(vqf_gdrv_alive(vqf_sim_drv(s)));
	vqf_sim_get_stats(s, &st);
	assert_int_equal(st.dev.faults[VQF_FAULT_DUP], 1);
	assert_int_equal(st.drv.ring_errors, 1);
	assert_int_equal(st.drv.broken_resets, 1);
	assert_int_equal(st.drv.submitted, st.drv.completed + st.drv.failed);
	assert_int_equal(vqf_gdrv_inflight(vqf_sim_drv(s)), 0);
	/* Dead for good, and the reset is not done twice. */
	assert_true(vqf_gcli_open(o.c, "f1", O_CREAT | O_RDWR, 0600) < 0);
	vqf_gdrv_shutdown(vqf_sim_drv(s));
	vqf_sim_get_stats(s, &st);
	assert_int_equal(st.drv.broken_resets, 1);
	vqf_sim_free(s);
	run_free(R);
}

struct busy {
	struct vqf_gcli *c;
	int fd;
	volatile bool in;
	long ret;
};

static void *busy_write(void *arg)
{
	struct busy *b = arg;
	u8 buf[BLK] = { 0 };

	b->in = true;
	b->ret = vqf_gcli_pwrite(b->c, b->fd, buf, BLK, 0);
	return NULL;
}

/*
 * Stopping a guest with a call stuck on a stalled queue, in the order
 * vqf_gcli.h documents: vqf_gdrv_shutdown() fails what is in flight, the
 * caller leaves the client, then the machine is freed.  (Freeing while a
 * caller is still inside the client is the caller's use after free, as
 * with any object two threads share; vqf_gcli_free() says so.)  Run
 * under ASan and valgrind through the -sanitize and -valgrind entries.
 */
static void test_stop_with_call_inflight(void **state)
{
	struct vqf_fault_plan p = { .seed = 2, .stall_len = 1000 };
	struct busy b = { 0 };
	struct vqf_sim_stats st;
	struct run *R;
	struct vqf_sim *s;
	pthread_t t;
	int i, rounds = slow() ? 8 : 50;

	(void)state;
	R = run_new();
	s = machine(R->dir, NULL, 16);
	b.c = vqf_sim_cli(s);
	b.fd = vqf_gcli_open(b.c, "f0", O_CREAT | O_RDWR, 0600);
	assert_true(b.fd >= 0);
	vqf_sim_free(s);
	/* With a stalled queue the write is still in flight below. */
	p.ppm[VQF_FAULT_STALL] = VQF_FAULT_PPM;
	for (i = 0; i < rounds; i++) {
		p.stall_len = 2 + i % 7;
		s = machine(R->dir, &p, 16);
		b.c = vqf_sim_cli(s);
		b.fd = vqf_gcli_open(b.c, "f0", O_RDWR, 0600);
		assert_true(b.fd >= 0);
		b.in = false;
		assert_int_equal(pthread_create(&t, NULL, busy_write, &b), 0);
		while (!b.in)
			sleep_ms(0);
		vqf_gdrv_shutdown(vqf_sim_drv(s));
		join_bounded(t);
		assert_true(b.ret == -ENOTCONN || b.ret == BLK);
		vqf_sim_get_stats(s, &st);
		assert_int_equal(st.drv.submitted,
				 st.drv.completed + st.drv.failed);
		assert_int_equal(vqf_gdrv_inflight(vqf_sim_drv(s)), 0);
		vqf_sim_free(s);
	}
	run_free(R);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_plan_needs_inline),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_shutdown_midrequest),
		cmocka_unit_test(test_soak),
		cmocka_unit_test(test_defect_refused_reply_errno),
		cmocka_unit_test(test_dup_breaks_queue),
		cmocka_unit_test(test_stop_with_call_inflight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
