// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * workload.c - smallfile and fio-like workloads over struct vqf_wl_fs
 * (see vqf_workload.h), and the plain-syscall implementation of it.
 *
 * Each phase runs its jobs in threads started for that phase; the calling
 * thread samples the transport counters around the phase and reports
 * progress while it waits.  A phase's time runs from just before the
 * first job starts to the end of the last job's last operation.
 */
#define _GNU_SOURCE
#include "vqf_workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/xattr.h>
#include <unistd.h>

#define KIB		1024ull
#define MIB		(1024ull * KIB)
/* Data is a pattern with this period, shifted per file, so a read that
 * returns another file's or another offset's bytes is caught.
 */
#define PAT_PERIOD	251u
#define MAX_BS		(64 * MIB)
#define MAX_JOBS	1024u
#define MAX_BLOCKS	(1ull << 28)
#define PREP_CHUNK	(128 * KIB)
#define RM_DEPTH	4

static const char *const kind_names[VQF_WL_NR_KINDS] = {
	[VQF_WL_SMALLFILE] = "smallfile",
	[VQF_WL_SEQREAD] = "seqread",
	[VQF_WL_RANDREAD] = "randread",
	[VQF_WL_SEQWRITE] = "seqwrite",
	[VQF_WL_RANDWRITE] = "randwrite",
};

const char *vqf_wl_kind_name(enum vqf_wl_kind k)
{
	return (unsigned int)k < VQF_WL_NR_KINDS ? kind_names[k] : NULL;
}

int vqf_wl_kind_parse(const char *name, enum vqf_wl_kind *out)
{
	for (unsigned int i = 0; i < VQF_WL_NR_KINDS; i++) {
		if (name && !strcmp(name, kind_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

struct wl_run;

struct wl_job {
	struct wl_run *r;
	unsigned int id;
	pthread_t th;
	int fd;			/* seq/rand: the job's open file */
	char *buf;
	uint32_t *perm;	/* rand: block order */
	uint64_t ops, bytes;
	int fn_ret;
	struct timespec end;
};

struct wl_run {
	const struct vqf_wl_fs *fs;
	struct vqf_wl_cfg cfg;
	struct vqf_wl_result *res;
	char top[64];
	char *pat;		/* bs + PAT_PERIOD bytes of pattern */
	uint64_t nblocks;	/* seq/rand: I/Os per job */
	struct wl_job *jobs;
	const char *phase;
	int (*fn)(struct wl_job *j);

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int running;	/* jobs of this phase not done yet */
	atomic_uint_fast64_t done;	/* operations of this phase */
	atomic_bool failed;
};

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static bool ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* Records the first failure only: later ones are usually its echoes. */
static int wl_fail(struct wl_run *r, const char *op, const char *path,
		   int err)
{
	struct vqf_wl_result *res = r->res;

	pthread_mutex_lock(&r->lock);
	if (!res->err) {
		res->err = err;
		snprintf(res->errmsg, sizeof(res->errmsg),
			 "%s: %s(%s) on %s: %s (errno %d)",
			 r->phase ? r->phase : "setup", op, path,
			 r->fs->name ? r->fs->name : "fs", strerror(-err),
			 -err);
	}
	pthread_mutex_unlock(&r->lock);
	atomic_store(&r->failed, true);
	return err;
}

static const char *pat_at(struct wl_run *r, unsigned int file, uint64_t off)
{
	return r->pat + (off + (uint64_t)file * 13) % PAT_PERIOD;
}

/* Writes [off, off + len) of file @file's pattern, @chunk at a time. */
static int put_data(struct wl_run *r, int fd, unsigned int file,
		    uint64_t off, uint64_t len, size_t chunk, bool append,
		    const char *path)
{
	const struct vqf_wl_fs *fs = r->fs;
	uint64_t end = off + len;

	while (off < end) {
		size_t n = end - off < chunk ? end - off : chunk;
		const char *p = pat_at(r, file, off);
		ssize_t w = append ? fs->write(fs->ctx, fd, p, n) :
				     fs->pwrite(fs->ctx, fd, p, n, off);

		if (w < 0)
			return wl_fail(r, append ? "write" : "pwrite", path,
				       (int)w);
		if (w == 0)
			return wl_fail(r, "pwrite (no progress)", path, -EIO);
		off += w;
	}
	return 0;
}

/* Reads [off, off + len) and checks it against file @file's pattern. */
static int get_data(struct wl_run *r, int fd, unsigned int file, char *buf,
		    uint64_t off, uint64_t len, const char *path)
{
	const struct vqf_wl_fs *fs = r->fs;
	uint64_t end = off + len;

	while (off < end) {
		size_t n = end - off < r->cfg.bs ? end - off : r->cfg.bs;
		ssize_t got = fs->pread(fs->ctx, fd, buf, n, off);

		if (got < 0)
			return wl_fail(r, "pread", path, (int)got);
		if (got == 0)
			return wl_fail(r, "pread (short file)", path, -EIO);
		if (memcmp(buf, pat_at(r, file, off), got))
			return wl_fail(r, "pread (data differs)", path, -EIO);
		off += got;
	}
	return 0;
}

static void job_path(struct wl_run *r, struct wl_job *j, char *out,
		     size_t size, char kind, unsigned int i)
{
	snprintf(out, size, "%s/j%u/%c%07u", r->top, j->id, kind, i);
}

static unsigned int file_no(struct wl_job *j, unsigned int i)
{
	return j->id * 1000003u + i;
}

static void op_done(struct wl_job *j)
{
	j->ops++;
	atomic_fetch_add_explicit(&j->r->done, 1, memory_order_relaxed);
}

/* smallfile phases: one operation is one file. */

typedef int (*sf_one_fn)(struct wl_job *j, unsigned int i, const char *p);

/*
 * One smallfile phase: @one on each of the job's files (named with @tag),
 * one operation each; stops as soon as any job has failed.
 */
static int sf_each(struct wl_job *j, char tag, sf_one_fn one)
{
	struct wl_run *r = j->r;
	char p[128];

	for (unsigned int i = 0; i < r->cfg.files; i++) {
		int ret;

		if (atomic_load_explicit(&r->failed, memory_order_relaxed))
			return -ECANCELED;
		job_path(r, j, p, sizeof(p), tag, i);
		ret = one(j, i, p);
		if (ret)
			return ret;
		op_done(j);
	}
	return 0;
}

/* open, write or read one file's worth of data at @off, close. */
static int sf_file_io(struct wl_job *j, unsigned int i, const char *p,
		      int flags, bool wr, uint64_t off)
{
	struct wl_run *r = j->r;
	const struct vqf_wl_fs *fs = r->fs;
	int fd, ret;

	fd = fs->open(fs->ctx, p, flags, 0644);
	if (fd < 0)
		return wl_fail(r, "open", p, fd);
	ret = wr ? put_data(r, fd, file_no(j, i), off, r->cfg.size,
			    r->cfg.bs, flags & O_APPEND, p) :
		   get_data(r, fd, file_no(j, i), j->buf, off, r->cfg.size,
			    p);
	if (ret) {
		fs->close(fs->ctx, fd);
		return ret;
	}
	ret = fs->close(fs->ctx, fd);
	if (ret < 0)
		return wl_fail(r, "close", p, ret);
	j->bytes += r->cfg.size;
	return 0;
}

static int sf_create_one(struct wl_job *j, unsigned int i, const char *p)
{
	return sf_file_io(j, i, p, O_WRONLY | O_CREAT | O_EXCL, true, 0);
}

static int sf_read_one(struct wl_job *j, unsigned int i, const char *p)
{
	return sf_file_io(j, i, p, O_RDONLY, false, 0);
}

static int sf_append_one(struct wl_job *j, unsigned int i, const char *p)
{
	return sf_file_io(j, i, p, O_WRONLY | O_APPEND, true, j->r->cfg.size);
}

static int sf_rename_one(struct wl_job *j, unsigned int i, const char *p)
{
	struct wl_run *r = j->r;
	char q[128];
	int ret;

	job_path(r, j, q, sizeof(q), 'r', i);
	ret = r->fs->rename(r->fs->ctx, p, q);
	return ret < 0 ? wl_fail(r, "rename", p, ret) : 0;
}

static int sf_delete_one(struct wl_job *j, unsigned int i, const char *p)
{
	struct wl_run *r = j->r;
	int ret;

	(void)i;
	ret = r->fs->unlink(r->fs->ctx, p);
	return ret < 0 ? wl_fail(r, "unlink", p, ret) : 0;
}

static int sf_create(struct wl_job *j)
{
	return sf_each(j, 'f', sf_create_one);
}

static int sf_read(struct wl_job *j)
{
	return sf_each(j, 'f', sf_read_one);
}

static int sf_append(struct wl_job *j)
{
	return sf_each(j, 'f', sf_append_one);
}

static int sf_rename(struct wl_job *j)
{
	return sf_each(j, 'f', sf_rename_one);
}

static int sf_delete(struct wl_job *j)
{
	return sf_each(j, 'r', sf_delete_one);
}

/* fio-like jobs: one file per job, one operation is one I/O of bs. */

static void big_path(struct wl_run *r, unsigned int id, char *out,
		     size_t size)
{
	snprintf(out, size, "%s/j%u.dat", r->top, id);
}

static int io_one(struct wl_job *j, uint64_t blk, bool wr, const char *p)
{
	struct wl_run *r = j->r;
	uint64_t off = blk * r->cfg.bs;
	uint64_t len = r->cfg.size - off < r->cfg.bs ?
		       r->cfg.size - off : r->cfg.bs;
	int ret;

	ret = wr ? put_data(r, j->fd, j->id, off, len, len, false, p) :
		   get_data(r, j->fd, j->id, j->buf, off, len, p);
	if (ret)
		return ret;
	j->bytes += len;
	op_done(j);
	return 0;
}

static int io_run(struct wl_job *j)
{
	struct wl_run *r = j->r;
	bool wr = r->cfg.kind == VQF_WL_SEQWRITE ||
		  r->cfg.kind == VQF_WL_RANDWRITE;
	char p[128];

	big_path(r, j->id, p, sizeof(p));
	for (uint64_t i = 0; i < r->nblocks; i++) {
		if ((i & 63) == 0 &&
		    atomic_load_explicit(&r->failed, memory_order_relaxed))
			return -ECANCELED;
		if (io_one(j, j->perm ? j->perm[i] : i, wr, p))
			return -EIO;
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct wl_job *j = arg;
	struct wl_run *r = j->r;

	if (r->cfg.job_init)
		r->cfg.job_init(r->cfg.job_arg, j->id);
	j->fn_ret = r->fn(j);
	clock_gettime(CLOCK_MONOTONIC, &j->end);
	pthread_mutex_lock(&r->lock);
	if (--r->running == 0)
		pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static int io_prepare(struct wl_job *j)
{
	struct wl_run *r = j->r;
	const struct vqf_wl_fs *fs = r->fs;
	bool rd = r->cfg.kind == VQF_WL_SEQREAD ||
		  r->cfg.kind == VQF_WL_RANDREAD;
	char p[128];
	int fd;

	big_path(r, j->id, p, sizeof(p));
	fd = fs->open(fs->ctx, p, (rd ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL,
		      0644);
	if (fd < 0)
		return wl_fail(r, "open", p, fd);
	j->fd = fd;
	if (!rd)
		return 0;
	return put_data(r, fd, j->id, 0, r->cfg.size,
			r->cfg.bs > PREP_CHUNK ? r->cfg.bs : PREP_CHUNK,
			false, p);
}

static void deadline_in(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/*
 * Runs @fn in every job at once.  A measured phase gets the next slot of
 * the result.  Returns 0 or the first failure's errno.
 */
static int run_phase(struct wl_run *r, const char *name,
		     int (*fn)(struct wl_job *j), uint64_t total,
		     bool measured)
{
	const struct vqf_wl_fs *fs = r->fs;
	const struct vqf_wl_cfg *cfg = &r->cfg;
	struct vqf_wl_result *res = r->res;
	struct vqf_wl_counters c0 = { 0 }, c1 = { 0 };
	struct timespec t0, end, dl;
	unsigned int started;
	int ret = 0;

	r->phase = name;
	r->fn = fn;
	atomic_store(&r->done, 0);
	for (unsigned int i = 0; i < cfg->jobs; i++) {
		r->jobs[i].ops = 0;
		r->jobs[i].bytes = 0;
		r->jobs[i].fn_ret = 0;
	}
	r->running = cfg->jobs;
	if (fs->counters)
		fs->counters(fs->ctx, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (started = 0; started < cfg->jobs; started++) {
		struct wl_job *j = &r->jobs[started];

		ret = pthread_create(&j->th, NULL, job_main, j);
		if (ret) {
			pthread_mutex_lock(&r->lock);
			r->running -= cfg->jobs - started;
			pthread_mutex_unlock(&r->lock);
			wl_fail(r, "pthread_create", name, -ret);
			break;
		}
	}

	pthread_mutex_lock(&r->lock);
	deadline_in(&dl, cfg->progress_ms);
	while (r->running) {
		if (pthread_cond_timedwait(&r->cond, &r->lock, &dl) !=
		    ETIMEDOUT)
			continue;
		if (cfg->progress) {
			uint64_t done = atomic_load(&r->done);

			pthread_mutex_unlock(&r->lock);
			cfg->progress(cfg->progress_arg, name, done, total);
			pthread_mutex_lock(&r->lock);
		}
		deadline_in(&dl, cfg->progress_ms);
	}
	pthread_mutex_unlock(&r->lock);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(r->jobs[i].th, NULL);
	if (fs->counters)
		fs->counters(fs->ctx, &c1);

	if (atomic_load(&r->failed))
		return res->err ? res->err : -EIO;
	if (!measured || res->nphases >= VQF_WL_MAX_PHASES)
		return 0;

	struct vqf_wl_phase *ph = &res->phase[res->nphases++];

	end = t0;
	*ph = (struct vqf_wl_phase){ .name = name };
	for (unsigned int i = 0; i < cfg->jobs; i++) {
		ph->ops += r->jobs[i].ops;
		ph->bytes += r->jobs[i].bytes;
		if (ts_after(&r->jobs[i].end, &end))
			end = r->jobs[i].end;
	}
	ph->secs = ts_diff(&t0, &end);
	ph->delta.requests = c1.requests - c0.requests;
	ph->delta.lookups = c1.lookups - c0.lookups;
	ph->delta.forgets = c1.forgets - c0.forgets;
	ph->delta.kicks = c1.kicks - c0.kicks;
	ph->delta.irqs = c1.irqs - c0.irqs;
	ph->delta.interrupts = c1.interrupts - c0.interrupts;
	ph->delta.cli_copied = c1.cli_copied - c0.cli_copied;
	ph->delta.drv_copied = c1.drv_copied - c0.drv_copied;
	return 0;
}

/* Directory listings, for cleanup and for the before/after check. */

/*
 * @dir/@name into @out; -ENAMETOOLONG rather than a truncated path, which
 * would name another file (names in the tree may be up to NAME_MAX long).
 */
static int join(char *out, size_t size, const char *dir, const char *name)
{
	int n = snprintf(out, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

struct name_list {
	char **names;
	bool *dir;
	size_t n, cap;
	int err;
};

static int list_add(void *arg, const char *name, const struct stat *st)
{
	struct name_list *l = arg;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **nn = realloc(l->names, cap * sizeof(*nn));
		bool *nd;

		if (!nn)
			goto nomem;
		l->names = nn;
		nd = realloc(l->dir, cap * sizeof(*nd));
		if (!nd)
			goto nomem;
		l->dir = nd;
		l->cap = cap;
	}
	l->names[l->n] = strdup(name);
	if (!l->names[l->n])
		goto nomem;
	l->dir[l->n++] = S_ISDIR(st->st_mode);
	return 0;
nomem:
	l->err = -ENOMEM;
	return -ENOMEM;
}

static void list_free(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->dir);
	memset(l, 0, sizeof(*l));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_dir(struct wl_run *r, const char *path, struct name_list *l)
{
	const struct vqf_wl_fs *fs = r->fs;
	int ret;

	memset(l, 0, sizeof(*l));
	ret = fs->readdir(fs->ctx, path, list_add, l);
	if (ret < 0) {
		list_free(l);
		return wl_fail(r, "readdir", *path ? path : "/", ret);
	}
	return 0;
}

/*
 * ls -l of the job's directory, as coreutils does it: one listing
 * (READDIRPLUS where the filesystem has it), the names sorted, then per
 * entry an lstat and the ACL probe (lgetxattr system.posix_acl_access).
 * One operation is one entry.
 */
static int sf_lsl(struct wl_job *j)
{
	struct wl_run *r = j->r;
	const struct vqf_wl_fs *fs = r->fs;
	struct name_list l = { 0 };
	char dir[96], p[160];
	int ret;

	snprintf(dir, sizeof(dir), "%s/j%u", r->top, j->id);
	ret = (fs->readdir_plus ? fs->readdir_plus : fs->readdir)(fs->ctx,
			dir, list_add, &l);
	if (ret < 0) {
		list_free(&l);
		return wl_fail(r, "readdir", dir, ret);
	}
	if (l.n != r->cfg.files) {
		list_free(&l);
		return wl_fail(r, "readdir (wrong number of entries)", dir,
			       -EIO);
	}
	if (l.n > 1)
		qsort(l.names, l.n, sizeof(*l.names), cmp_str);
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct stat st;
		ssize_t x;

		if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
			ret = -ECANCELED;
			break;
		}
		ret = join(p, sizeof(p), dir, l.names[i]);
		if (ret) {
			ret = wl_fail(r, "lstat", l.names[i], ret);
			break;
		}
		ret = (fs->lstat ? fs->lstat : fs->stat)(fs->ctx, p, &st);
		if (ret < 0) {
			ret = wl_fail(r, "lstat", p, ret);
			break;
		}
		if (!S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != r->cfg.size) {
			ret = wl_fail(r, "lstat (wrong type or size)", p,
				      -EIO);
			break;
		}
		/* No ACL (or no ACL support) is the usual answer; a
		 * default ACL on the shared directory gives one.
		 */
		x = fs->getxattr ? fs->getxattr(fs->ctx, p,
						"system.posix_acl_access",
						NULL, 0) : 0;
		if (x < 0 && x != -ENODATA && x != -EOPNOTSUPP) {
			ret = wl_fail(r, "lgetxattr(system.posix_acl_access)",
				      p, (int)x);
			break;
		}
		op_done(j);
	}
	list_free(&l);
	return ret;
}

/* Removes @path and what is in it, @depth levels down at most. */
static int rm_tree(struct wl_run *r, const char *path, int depth)
{
	const struct vqf_wl_fs *fs = r->fs;
	struct name_list l;
	char p[256];
	int ret = 0;

	if (list_dir(r, path, &l))
		return -EIO;
	for (size_t i = 0; i < l.n && !ret; i++) {
		ret = join(p, sizeof(p), path, l.names[i]);
		if (ret) {
			wl_fail(r, "rm_tree", l.names[i], ret);
		} else if (l.dir[i] && depth > 0) {
			ret = rm_tree(r, p, depth - 1);
		} else {
			ret = fs->unlink(fs->ctx, p);
			if (ret < 0)
				wl_fail(r, "unlink", p, ret);
		}
	}
	list_free(&l);
	if (ret)
		return ret;
	ret = fs->rmdir(fs->ctx, path);
	if (ret < 0)
		return wl_fail(r, "rmdir", path, ret);
	return 0;
}

/* The root after the run must hold exactly the names it held before. */
static int same_root(struct wl_run *r, struct name_list *before)
{
	struct name_list after;
	size_t i = 0, k = 0;
	int ret = 0;

	if (list_dir(r, "", &after))
		return -EIO;
	if (after.n > 1)
		qsort(after.names, after.n, sizeof(*after.names), cmp_str);
	while (!ret && (i < before->n || k < after.n)) {
		int c = i == before->n ? 1 : k == after.n ? -1 :
			strcmp(before->names[i], after.names[k]);

		if (c < 0)
			ret = wl_fail(r, "root check: vanished",
				      before->names[i], -ENOENT);
		else if (c > 0)
			ret = wl_fail(r, "root check: left behind",
				      after.names[k], -EEXIST);
		i += c <= 0;
		k += c >= 0;
	}
	list_free(&after);
	return ret;
}

static int make_top(struct wl_run *r)
{
	static atomic_uint seq;
	const struct vqf_wl_fs *fs = r->fs;
	int ret = -EEXIST;

	for (int tries = 0; tries < 100 && ret == -EEXIST; tries++) {
		snprintf(r->top, sizeof(r->top), "vqf-wl.%d.%u", (int)getpid(),
			 atomic_fetch_add(&seq, 1));
		ret = fs->mkdir(fs->ctx, r->top, 0755);
	}
	if (ret < 0) {
		wl_fail(r, "mkdir", r->top, ret);
		r->top[0] = 0;
		return ret;
	}
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int setup_jobs(struct wl_run *r)
{
	const struct vqf_wl_cfg *cfg = &r->cfg;
	bool rnd = cfg->kind == VQF_WL_RANDREAD ||
		   cfg->kind == VQF_WL_RANDWRITE;
	size_t patlen = (cfg->bs > PREP_CHUNK ? cfg->bs : PREP_CHUNK) +
			PAT_PERIOD;

	r->pat = malloc(patlen);
	r->jobs = calloc(cfg->jobs, sizeof(*r->jobs));
	if (!r->pat || !r->jobs)
		return -ENOMEM;
	/* A period that divides no power of two, so shifts are visible. */
	for (size_t i = 0; i < patlen; i++)
		r->pat[i] = (char)((i % PAT_PERIOD) * 7 + 1);
	for (unsigned int i = 0; i < cfg->jobs; i++) {
		struct wl_job *j = &r->jobs[i];

		j->r = r;
		j->id = i;
		j->fd = -1;
		j->buf = malloc(cfg->bs);
		if (!j->buf)
			return -ENOMEM;
		if (!rnd)
			continue;
		uint64_t s = ((uint64_t)cfg->seed << 16) ^ (i + 1) ^
			     0x9e3779b97f4a7c15ull;

		j->perm = malloc(r->nblocks * sizeof(*j->perm));
		if (!j->perm)
			return -ENOMEM;
		for (uint64_t b = 0; b < r->nblocks; b++)
			j->perm[b] = (uint32_t)b;
		for (uint64_t b = r->nblocks - 1; b > 0; b--) {
			uint64_t k = xorshift(&s) % (b + 1);
			uint32_t t = j->perm[b];

			j->perm[b] = j->perm[k];
			j->perm[k] = t;
		}
	}
	return 0;
}

static int norm_cfg(const struct vqf_wl_cfg *in, struct vqf_wl_cfg *c)
{
	bool sf = in->kind == VQF_WL_SMALLFILE;

	*c = *in;
	if ((unsigned int)c->kind >= VQF_WL_NR_KINDS)
		return -EINVAL;
	if (!c->jobs)
		c->jobs = 1;
	if (!c->files)
		c->files = 1000;
	if (!c->size)
		c->size = sf ? 4 * KIB : 64 * MIB;
	if (!c->bs) {
		if (sf)
			c->bs = c->size < MIB ? c->size : MIB;
		else if (c->kind == VQF_WL_RANDREAD ||
			 c->kind == VQF_WL_RANDWRITE)
			c->bs = 4 * KIB;
		else
			c->bs = 128 * KIB;
	}
	if (!c->seed)
		c->seed = 0x5eed;
	if (!c->progress_ms)
		c->progress_ms = 250;
	if (c->jobs > MAX_JOBS || c->bs > MAX_BS)
		return -EINVAL;
	/* Appends double a small file; offsets must fit off_t. */
	if (c->size > (1ull << 46))
		return -EINVAL;
	if (!sf && (c->size + c->bs - 1) / c->bs > MAX_BLOCKS)
		return -EINVAL;
	return 0;
}

static void free_run(struct wl_run *r)
{
	if (r->jobs) {
		for (unsigned int i = 0; i < r->cfg.jobs; i++) {
			free(r->jobs[i].buf);
			free(r->jobs[i].perm);
		}
	}
	free(r->jobs);
	free(r->pat);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
}

static int run_phases(struct wl_run *r)
{
	static const struct {
		const char *name;
		int (*fn)(struct wl_job *j);
	} sf[] = {
		{ "create", sf_create },
		{ "ls-l", sf_lsl },
		{ "read", sf_read },
		{ "append", sf_append },
		{ "rename", sf_rename },
		{ "delete-renamed", sf_delete },
	};
	const struct vqf_wl_cfg *cfg = &r->cfg;
	const struct vqf_wl_fs *fs = r->fs;
	uint64_t total;
	char p[128];
	int ret;

	if (cfg->kind != VQF_WL_SMALLFILE) {
		total = r->nblocks * cfg->jobs;
		ret = run_phase(r, "prepare", io_prepare, cfg->jobs, false);
		if (!ret)
			ret = run_phase(r, vqf_wl_kind_name(cfg->kind), io_run,
					total, true);
		return ret;
	}
	for (unsigned int i = 0; i < cfg->jobs; i++) {
		snprintf(p, sizeof(p), "%s/j%u", r->top, i);
		ret = fs->mkdir(fs->ctx, p, 0755);
		if (ret < 0)
			return wl_fail(r, "mkdir", p, ret);
	}
	total = (uint64_t)cfg->files * cfg->jobs;
	for (size_t i = 0; i < sizeof(sf) / sizeof(sf[0]); i++) {
		ret = run_phase(r, sf[i].name, sf[i].fn, total, true);
		if (ret)
			return ret;
	}
	return 0;
}

int vqf_wl_run(const struct vqf_wl_fs *fs, const struct vqf_wl_cfg *cfg,
	       struct vqf_wl_result *res)
{
	struct wl_run r = { .fs = fs, .res = res };
	struct name_list before = { 0 };
	struct timespec t0, t1;
	pthread_condattr_t ca;
	int ret;

	if (!fs || !cfg || !res)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	if (norm_cfg(cfg, &r.cfg)) {
		res->err = -EINVAL;
		snprintf(res->errmsg, sizeof(res->errmsg),
			 "invalid workload configuration");
		return -EINVAL;
	}
	res->has_counters = fs->counters != NULL;
	if (r.cfg.kind != VQF_WL_SMALLFILE)
		r.nblocks = (r.cfg.size + r.cfg.bs - 1) / r.cfg.bs;
	pthread_mutex_init(&r.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r.cond, &ca);
	pthread_condattr_destroy(&ca);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	ret = setup_jobs(&r);
	if (ret) {
		wl_fail(&r, "malloc", "job buffers", ret);
		goto out;
	}
	ret = list_dir(&r, "", &before);
	if (ret)
		goto out;
	if (before.n > 1)
		qsort(before.names, before.n, sizeof(*before.names), cmp_str);
	ret = make_top(&r);
	if (ret)
		goto out;

	ret = run_phases(&r);

	/* Cleanup runs after a failure too: the directory is the caller's. */
	r.phase = "cleanup";
	for (unsigned int i = 0; i < r.cfg.jobs; i++) {
		int cr;

		if (r.jobs[i].fd < 0)
			continue;
		cr = fs->close(fs->ctx, r.jobs[i].fd);
		r.jobs[i].fd = -1;
		if (cr < 0 && !ret) {
			char p[128];

			big_path(&r, i, p, sizeof(p));
			ret = wl_fail(&r, "close", p, cr);
		}
	}
	atomic_store(&r.failed, false);
	if (rm_tree(&r, r.top, RM_DEPTH) && !ret)
		ret = res->err;
	if (same_root(&r, &before) && !ret)
		ret = res->err;
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->total_secs = ts_diff(&t0, &t1);
	list_free(&before);
	free_run(&r);
	if (ret && !res->err)
		res->err = ret;
	return ret ? res->err : 0;
}

/* Plain syscalls on a host directory (or a mountpoint). */

struct posix_fs {
	int dirfd;
	char *root;	/* for lgetxattr(2), which has no *at() form */
};

static int pdir(void *ctx)
{
	return ((struct posix_fs *)ctx)->dirfd;
}

/* "" and "/" are the root; other paths are relative to it. */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static int p_open(void *ctx, const char *path, int flags, mode_t mode)
{
	int fd = openat(pdir(ctx), rel(path), flags | O_CLOEXEC, mode);

	return fd < 0 ? -errno : fd;
}

static int p_close(void *ctx, int fd)
{
	return close(fd) ? -errno : 0;
}

static ssize_t p_pread(void *ctx, int fd, void *buf, size_t n, off_t off)
{
	ssize_t r = pread(fd, buf, n, off);

	return r < 0 ? -errno : r;
}

static ssize_t p_pwrite(void *ctx, int fd, const void *buf, size_t n,
			off_t off)
{
	ssize_t r = pwrite(fd, buf, n, off);

	return r < 0 ? -errno : r;
}

static ssize_t p_write(void *ctx, int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);

	return r < 0 ? -errno : r;
}

static int p_stat(void *ctx, const char *path, struct stat *st)
{
	return fstatat(pdir(ctx), rel(path), st, 0) ? -errno : 0;
}

static int p_lstat(void *ctx, const char *path, struct stat *st)
{
	return fstatat(pdir(ctx), rel(path), st, AT_SYMLINK_NOFOLLOW) ?
	       -errno : 0;
}

static ssize_t p_getxattr(void *ctx, const char *path, const char *name,
			  void *value, size_t size)
{
	struct posix_fs *p = ctx;
	char *full;
	ssize_t r;

	if (asprintf(&full, "%s/%s", p->root, rel(path)) < 0)
		return -ENOMEM;
	r = lgetxattr(full, name, value, size);
	if (r < 0)
		r = -errno;
	free(full);
	return r;
}

static int p_unlink(void *ctx, const char *path)
{
	return unlinkat(pdir(ctx), rel(path), 0) ? -errno : 0;
}

static int p_rename(void *ctx, const char *from, const char *to)
{
	return renameat(pdir(ctx), rel(from), pdir(ctx), rel(to)) ? -errno :
								     0;
}

static int p_mkdir(void *ctx, const char *path, mode_t mode)
{
	return mkdirat(pdir(ctx), rel(path), mode) ? -errno : 0;
}

static int p_rmdir(void *ctx, const char *path)
{
	return unlinkat(pdir(ctx), rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int p_readdir(void *ctx, const char *path, vqf_wl_dirent_fn fn,
		     void *arg)
{
	int fd = openat(pdir(ctx), rel(path),
			O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (;;) {
		struct stat st = { 0 };

		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = errno ? -errno : 0;
			break;
		}
		st.st_ino = de->d_ino;
		st.st_mode = de->d_type == DT_UNKNOWN ? 0 :
			     DTTOIF(de->d_type);
		if (de->d_type == DT_UNKNOWN &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			st.st_mode = 0;
		ret = fn(arg, de->d_name, &st);
		if (ret)
			break;
	}
	closedir(d);
	return ret;
}

int vqf_wl_posix_open(const char *root, struct vqf_wl_fs *fs)
{
	struct posix_fs *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->root = strdup(root);
	p->dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dirfd < 0 || !p->root) {
		int err = p->root ? -errno : -ENOMEM;

		if (p->dirfd >= 0)
			close(p->dirfd);
		free(p->root);
		free(p);
		return err;
	}
	*fs = (struct vqf_wl_fs){
		.name = "native",
		.ctx = p,
		.open = p_open,
		.close = p_close,
		.pread = p_pread,
		.pwrite = p_pwrite,
		.write = p_write,
		.stat = p_stat,
		.unlink = p_unlink,
		.rename = p_rename,
		.mkdir = p_mkdir,
		.rmdir = p_rmdir,
		.readdir = p_readdir,
		/* getdents: the kernel picks READDIRPLUS on a FUSE mount. */
		.lstat = p_lstat,
		.getxattr = p_getxattr,
	};
	return 0;
}

void vqf_wl_posix_close(struct vqf_wl_fs *fs)
{
	struct posix_fs *p = fs->ctx;

	if (p) {
		close(p->dirfd);
		free(p->root);
		free(p);
	}
	fs->ctx = NULL;
}
