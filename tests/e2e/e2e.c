// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * e2e.c - fixtures for the end-to-end tests (see e2e.h).
 */
#define _GNU_SOURCE
#include "e2e.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum vqf_sim_fs e2e_fs = VQF_SIM_FS_VQFUSE;

#define CANARY		"canary"
#define CANARY_DATA	"the rest of the host\n"

void e2e_pick_fs(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : getenv("VQF_E2E_FS");

	e2e_fs = s && !strcmp(s, "ptll") ? VQF_SIM_FS_PTLL :
					   VQF_SIM_FS_VQFUSE;
}

u64 e2e_poll_ns;

void e2e_pick_poll(int argc, char **argv)
{
	const char *s = getenv("VQF_E2E_POLL_US");

	e2e_poll_ns = s ? strtoull(s, NULL, 0) * 1000 : 0;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "poll"))
			e2e_poll_ns = 20000;
	if (e2e_poll_ns)
		fprintf(stderr, "e2e: polling up to %llu ns\n",
			(unsigned long long)e2e_poll_ns);
}

const char *e2e_fs_name(enum vqf_sim_fs fs)
{
	return fs == VQF_SIM_FS_PTLL ? "passthrough_ll" : "vqfuse";
}

bool e2e_slow(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

unsigned int e2e_seed(void)
{
	const char *s = getenv("VQF_SEED");

	return s ? (unsigned int)strtoul(s, NULL, 0) : 0x5eed1234u;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void e2e_rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int out_mtime(const char *dir, struct timespec *ts)
{
	struct stat st;

	if (stat(dir, &st))
		return -errno;
	*ts = st.st_mtim;
	return 0;
}

int e2e_new(struct e2e **out, const struct vqf_sim_cfg *tmpl, int force_fs)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = calloc(1, sizeof(*e));
	int ret = -EIO;

	if (!e)
		return -ENOMEM;
	if (tmpl)
		cfg = *tmpl;
	snprintf(e->dir, sizeof(e->dir), "/tmp/vqf-e2e-XXXXXX");
	snprintf(e->out, sizeof(e->out), "/tmp/vqf-e2e-out-XXXXXX");
	if (!mkdtemp(e->dir)) {
		free(e);
		return -errno;
	}
	if (!mkdtemp(e->out)) {
		ret = -errno;
		e2e_rm_rf(e->dir);
		free(e);
		return ret;
	}
	if (e2e_host_write(e2e_out(e, CANARY), CANARY_DATA,
			   strlen(CANARY_DATA), 0644) ||
	    out_mtime(e->out, &e->out_mtime))
		goto fail;
	e->fs = force_fs >= 0 ? (enum vqf_sim_fs)force_fs : e2e_fs;
	cfg.shared = e->dir;
	cfg.fs = e->fs;
	if (!cfg.poll_ns && !cfg.inline_kick)
		cfg.poll_ns = e2e_poll_ns;
	if (!cfg.ram)
		cfg.ram = 64 << 20;
	ret = vqf_sim_new(&cfg, &e->s);
	if (ret)
		goto fail;
	e->c = vqf_sim_cli(e->s);
	e->g = vqf_sim_drv(e->s);
	*out = e;
	return 0;
fail:
	e2e_rm_rf(e->dir);
	e2e_rm_rf(e->out);
	free(e);
	return ret;
}

bool e2e_out_intact(struct e2e *e)
{
	struct timespec ts;
	struct dirent *d;
	size_t len = 0;
	char *data;
	bool ok;
	int n = 0;
	DIR *dir;

	if (out_mtime(e->out, &ts) || ts.tv_sec != e->out_mtime.tv_sec ||
	    ts.tv_nsec != e->out_mtime.tv_nsec)
		return false;
	dir = opendir(e->out);
	if (!dir)
		return false;
	while ((d = readdir(dir)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			n++;
	closedir(dir);
	data = e2e_host_read(e2e_out(e, CANARY), &len);
	ok = n == 1 && data && len == strlen(CANARY_DATA) &&
	     !memcmp(data, CANARY_DATA, len);
	free(data);
	return ok;
}

int e2e_free(struct e2e *e)
{
	int ret;

	if (!e)
		return 0;
	vqf_sim_free(e->s);
	ret = e2e_out_intact(e) ? 0 : -1;
	if (ret)
		fprintf(stderr, "e2e: the sibling %s was touched\n", e->out);
	e2e_rm_rf(e->dir);
	e2e_rm_rf(e->out);
	free(e);
	return ret;
}

static const char *path_in(const char *dir, const char *name)
{
	static __thread char buf[8][320];
	static __thread unsigned int n;
	char *b = buf[n++ % 8];

	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

const char *e2e_host(struct e2e *e, const char *name)
{
	return path_in(e->dir, name);
}

const char *e2e_out(struct e2e *e, const char *name)
{
	return path_in(e->out, name);
}

void *e2e_host_read(const char *path, size_t *len)
{
	struct stat st;
	size_t done = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	if (buf && done != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	*len = done;
	return buf;
}

int e2e_host_write(const char *path, const void *buf, size_t len,
		   mode_t mode)
{
	size_t done = 0;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		done += (size_t)n;
	}
	return close(fd) ? -errno : 0;
}

void e2e_fill(void *buf, size_t len, unsigned int seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	uint8_t *p = buf;
	size_t i;

	/* xorshift64: cheap, and no two 8-byte words in a row repeat. */
	for (i = 0; i < len; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
}

struct vqf_sim_stats e2e_stats(struct e2e *e)
{
	struct vqf_sim_stats s;

	vqf_sim_get_stats(e->s, &s);
	return s;
}

uint64_t e2e_sent(struct e2e *e, uint32_t opcode)
{
	return e2e_stats(e).drv.by_opcode[opcode];
}

bool e2e_host_equal(struct e2e *e, const char *name, const void *want,
		    size_t len)
{
	size_t got;
	void *data = e2e_host_read(e2e_host(e, name), &got);
	bool same = data && got == len && !memcmp(data, want, len);

	free(data);
	return same;
}

void e2e_dump_refusals(const struct vqf_sim_stats *s)
{
	unsigned int r;

	for (r = 1; r < VQF_DEV_R_NR; r++)
		if (s->dev.dev.reject[r])
			fprintf(stderr, "e2e: device refused %llu request(s): "
				"%s\n",
				(unsigned long long)s->dev.dev.reject[r],
				vqf_dev_reason_name(r));
}

uint64_t e2e_refused(const struct vqf_pt_stats *s)
{
	return s->refused_name_slash + s->refused_name_dot +
	       s->refused_name_empty + s->refused_name_long +
	       s->refused_forged_nodeid + s->refused_stale_nodeid +
	       s->refused_bad_fh + s->refused_not_dir + s->refused_symlink +
	       s->refused_special + s->refused_mknod_dev + s->refused_flags;
}

/* ---- raw requests ------------------------------------------------------ */

static void raw_init(struct vqf_gdrv_call *cl, uint32_t opcode,
		     uint64_t nodeid)
{
	memset(cl, 0, sizeof(*cl));
	vqf_req_init(&cl->req, opcode, nodeid, 0);
	/* Raw entry requests ask for no entryver: their replies are fixed. */
	cl->req.out_argvar = false;
	cl->req.in_h.uid = getuid();
	cl->req.in_h.gid = getgid();
	cl->req.in_h.pid = getpid();
}

/* Bounded: a request the device never answers fails the test, not CI. */
static int raw_call(struct e2e *e, struct vqf_gdrv_call *cl)
{
	return vqf_gdrv_call(e->g, cl, 10000);
}

int raw_names(struct e2e *e, uint32_t opcode, uint64_t nodeid,
	      const void *arg, uint32_t argsize, const char *n1,
	      const char *n2, void *out, uint32_t outsize)
{
	struct vqf_gdrv_call cl;

	raw_init(&cl, opcode, nodeid);
	/* READDIR's data comes back shorter than its buffer. */
	cl.req.out_argvar = opcode == FUSE_READDIR;
	if (argsize)
		vqf_req_add_in(&cl.req, arg, argsize);
	if (n1)
		vqf_req_add_in(&cl.req, n1, (uint32_t)strlen(n1) + 1);
	if (n2)
		vqf_req_add_in(&cl.req, n2, (uint32_t)strlen(n2) + 1);
	if (outsize)
		vqf_req_add_out(&cl.req, out, outsize);
	return raw_call(e, &cl);
}

int raw_lookup_bytes(struct e2e *e, uint64_t parent, const void *name,
		     uint32_t len, struct fuse_entry_out *out)
{
	struct vqf_gdrv_call cl;
	struct fuse_entry_out tmp;

	raw_init(&cl, FUSE_LOOKUP, parent);
	vqf_req_add_in(&cl.req, name, len);
	vqf_req_add_out(&cl.req, out ? out : &tmp, sizeof(tmp));
	return raw_call(e, &cl);
}

int raw_lookup(struct e2e *e, uint64_t parent, const char *name,
	       struct fuse_entry_out *out)
{
	return raw_lookup_bytes(e, parent, name, (uint32_t)strlen(name) + 1,
				out);
}

int raw_getattr(struct e2e *e, uint64_t nodeid, struct fuse_attr *attr)
{
	struct vqf_gdrv_call cl;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	int ret;

	raw_init(&cl, FUSE_GETATTR, nodeid);
	vqf_req_add_in(&cl.req, &gi, sizeof(gi));
	vqf_req_add_out(&cl.req, &ao, sizeof(ao));
	ret = raw_call(e, &cl);
	if (!ret && attr)
		*attr = ao.attr;
	return ret;
}

int raw_open(struct e2e *e, uint64_t nodeid, uint32_t flags, uint64_t *fh)
{
	struct vqf_gdrv_call cl;
	struct fuse_open_in oi = { .flags = flags };
	struct fuse_open_out oo = { 0 };
	int ret;

	raw_init(&cl, FUSE_OPEN, nodeid);
	vqf_req_add_in(&cl.req, &oi, sizeof(oi));
	vqf_req_add_out(&cl.req, &oo, sizeof(oo));
	ret = raw_call(e, &cl);
	if (!ret && fh)
		*fh = oo.fh;
	return ret;
}

int raw_create(struct e2e *e, uint64_t parent, const char *name,
	       uint32_t flags, uint32_t mode, struct fuse_entry_out *entry,
	       uint64_t *fh)
{
	struct vqf_gdrv_call cl;
	struct fuse_create_in ci = { .flags = flags, .mode = mode };
	struct fuse_entry_out eo = { 0 };
	struct fuse_open_out oo = { 0 };
	int ret;

	raw_init(&cl, FUSE_CREATE, parent);
	vqf_req_add_in(&cl.req, &ci, sizeof(ci));
	vqf_req_add_in(&cl.req, name, (uint32_t)strlen(name) + 1);
	vqf_req_add_out(&cl.req, &eo, sizeof(eo));
	vqf_req_add_out(&cl.req, &oo, sizeof(oo));
	ret = raw_call(e, &cl);
	if (!ret) {
		if (entry)
			*entry = eo;
		if (fh)
			*fh = oo.fh;
	}
	return ret;
}

int raw_release(struct e2e *e, uint64_t nodeid, uint64_t fh)
{
	struct vqf_gdrv_call cl;
	struct fuse_release_in ri = { .fh = fh };

	raw_init(&cl, FUSE_RELEASE, nodeid);
	vqf_req_add_in(&cl.req, &ri, sizeof(ri));
	return raw_call(e, &cl);
}

int raw_mknod(struct e2e *e, uint64_t parent, const char *name,
	      uint32_t mode, uint32_t rdev, struct fuse_entry_out *out)
{
	struct vqf_gdrv_call cl;
	struct fuse_mknod_in mi = { .mode = mode, .rdev = rdev };
	struct fuse_entry_out tmp;

	raw_init(&cl, FUSE_MKNOD, parent);
	vqf_req_add_in(&cl.req, &mi, sizeof(mi));
	vqf_req_add_in(&cl.req, name, (uint32_t)strlen(name) + 1);
	vqf_req_add_out(&cl.req, out ? out : &tmp, sizeof(tmp));
	return raw_call(e, &cl);
}

int raw_mkdir(struct e2e *e, uint64_t parent, const char *name,
	      uint32_t mode, struct fuse_entry_out *out)
{
	struct vqf_gdrv_call cl;
	struct fuse_mkdir_in mi = { .mode = mode };
	struct fuse_entry_out tmp;

	raw_init(&cl, FUSE_MKDIR, parent);
	vqf_req_add_in(&cl.req, &mi, sizeof(mi));
	vqf_req_add_in(&cl.req, name, (uint32_t)strlen(name) + 1);
	vqf_req_add_out(&cl.req, out ? out : &tmp, sizeof(tmp));
	return raw_call(e, &cl);
}

int raw_rename(struct e2e *e, uint64_t parent, const char *name,
	       uint64_t newparent, const char *newname, uint32_t flags)
{
	struct vqf_gdrv_call cl;
	struct fuse_rename2_in ri = { .newdir = newparent, .flags = flags };

	raw_init(&cl, FUSE_RENAME2, parent);
	vqf_req_add_in(&cl.req, &ri, sizeof(ri));
	vqf_req_add_in(&cl.req, name, (uint32_t)strlen(name) + 1);
	vqf_req_add_in(&cl.req, newname, (uint32_t)strlen(newname) + 1);
	return raw_call(e, &cl);
}

int raw_link(struct e2e *e, uint64_t oldnodeid, uint64_t newparent,
	     const char *newname, struct fuse_entry_out *out)
{
	struct vqf_gdrv_call cl;
	struct fuse_link_in li = { .oldnodeid = oldnodeid };
	struct fuse_entry_out tmp;

	raw_init(&cl, FUSE_LINK, newparent);
	vqf_req_add_in(&cl.req, &li, sizeof(li));
	vqf_req_add_in(&cl.req, newname, (uint32_t)strlen(newname) + 1);
	vqf_req_add_out(&cl.req, out ? out : &tmp, sizeof(tmp));
	return raw_call(e, &cl);
}

int raw_truncate(struct e2e *e, uint64_t nodeid, uint64_t size)
{
	struct vqf_gdrv_call cl;
	struct fuse_setattr_in si = { .valid = FATTR_SIZE, .size = size };
	struct fuse_attr_out ao;

	raw_init(&cl, FUSE_SETATTR, nodeid);
	vqf_req_add_in(&cl.req, &si, sizeof(si));
	vqf_req_add_out(&cl.req, &ao, sizeof(ao));
	return raw_call(e, &cl);
}

int raw_read(struct e2e *e, uint64_t nodeid, uint64_t fh, uint64_t off,
	     void *buf, uint32_t size)
{
	struct vqf_gram *ram = vqf_gdrv_ram(e->g);
	struct vqf_gdrv_call cl;
	struct fuse_read_in ri = { .fh = fh, .offset = off, .size = size };
	struct vqf_page_desc pd;
	void *page;
	int ret;

	page = vqf_gram_alloc(ram, size ? size : 1, true);
	if (!page)
		return -ENOMEM;
	pd = (struct vqf_page_desc){ .page = page, .length = size };
	memset(&cl, 0, sizeof(cl));
	vqf_req_init_read(&cl.req, FUSE_READ, 0, nodeid, &ri, &pd, 1, false);
	cl.req.in_h.uid = getuid();
	cl.req.in_h.gid = getgid();
	cl.req.in_h.pid = getpid();
	ret = raw_call(e, &cl);
	if (!ret) {
		ret = (int)cl.req.out_args[0].size;
		memcpy(buf, page, (size_t)ret);
	}
	vqf_gram_release(ram, page);
	return ret;
}

int raw_forget(struct e2e *e, uint64_t nodeid, uint64_t nlookup)
{
	int ret = vqf_gdrv_forget(e->g, nodeid, nlookup);

	return ret ? ret : vqf_gdrv_forget_flush(e->g);
}
