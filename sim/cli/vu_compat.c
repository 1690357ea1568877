// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_compat.c - vhost-user's command line: our options and virtiofsd's,
 * so that the daemon starts wherever virtiofsd is started (by hand, by
 * libvirt, by a vhost-user JSON description).  Both of virtiofsd's forms
 * are read: the Rust daemon's separate options (--shared-dir, --cache,
 * ...) and the legacy C daemon's "-o key=value,flag" list, which libvirt
 * still writes.  An option of virtiofsd's that this daemon does not
 * implement is refused by name (exit 2), never ignored.  The table of what
 * maps onto what is docs/virtiofsd-compat.md.
 */
#include "vqf_cli.h"
#include "vqf_vu.h"

#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static const char *const vu_flags[] = {
	"--verbose", "--host-locks", "--allow-direct-io", "--trust-guest",
	VQF_VU_SHM_FLAGS, NULL
};
static const char *const vu_strs[] = {
	"--socket", "--shared", "--backend", "--tag", "--timeout", "--cache",
	NULL
};
static const struct vqf_cli_num_opt vu_nums[] = {
	{ "--queues", false, 1, 64 },
	{ "--threads", false, 0, 256 },
	{ "--queue-size", false, 1, 1024 },
	{ "--poll-us", false, 0, 10000 },
	VQF_VU_SHM_NUM,
};

/*
 * virtiofsd's own names.  The "refused" ones are virtiofsd's too: listed
 * so that the message says why rather than "unknown".
 */
static const char *const vfsd_flags[] = {
	"--print-capabilities", "--xattr", "--writeback", "--no-readdirplus",
	"--announce-submounts", "--no-announce-submounts", "--syslog",
	"--no-killpriv-v2", "--version", "-V", "-d", "-f", "--readonly",
	/* refused */
	"--daemonize", "--posix-acl", "--security-label",
	"--allow-mmap", "--killpriv-v2", "--preserve-noatime",
	"--migration-verify-handles", "--migration-confirm-paths", NULL
};
static const char *const vfsd_strs[] = {
	"--socket-path", "--shared-dir", "--socket-group", "--sandbox",
	"--seccomp", "--log-level", "-o", "--modcaps", "--uid-map",
	"--gid-map", "--translate-uid", "--translate-gid",
	/* refused */
	"--xattrmap", "--inode-file-handles", "--migration-mode",
	"--migration-on-error", NULL
};
static const struct vqf_cli_num_opt vfsd_nums[] = {
	{ "--fd", false, 0, INT_MAX },
	{ "--thread-pool-size", false, 0, 256 },
	{ "--rlimit-nofile", false, 0, 1ull << 30 },
};
static const struct vqf_cli_table vfsd_table = {
	.flags = vfsd_flags, .strs = vfsd_strs, .nums = vfsd_nums,
	.nnums = sizeof(vfsd_nums) / sizeof(*vfsd_nums),
};

static int refused(const char *name)
{
	return vqf_cli_bad_usage("vhost-user: virtiofsd's %s is not "
				 "supported by this daemon (see "
				 "docs/virtiofsd-compat.md)", name);
}

static int set_cache(struct vqf_vu_opts *o, const char *name,
		     const char *val)
{
	static const char *const names[] = {
		[VQF_VU_CACHE_NEVER] = "never",
		[VQF_VU_CACHE_METADATA] = "metadata",
		[VQF_VU_CACHE_AUTO] = "auto",
		[VQF_VU_CACHE_ALWAYS] = "always",
	};

	/* "none" is the legacy daemon's and our own run's name for never. */
	if (!strcmp(val, "none")) {
		o->cache = VQF_VU_CACHE_NEVER;
		o->cache_set = true;
		return 0;
	}
	for (unsigned int i = 0; i < sizeof(names) / sizeof(*names); i++) {
		if (!strcmp(val, names[i])) {
			o->cache = i;
			o->cache_set = true;
			return 0;
		}
	}
	return vqf_cli_bad_usage("%s: unknown cache mode '%s' (auto, always, "
				 "never or none, metadata)", name, val);
}

static int set_log_level(struct vqf_vu_opts *o, const char *name,
			 const char *val)
{
	static const struct {
		const char *name;
		enum vqf_vu_log level;
	} lv[] = {
		{ "off", VQF_VU_LOG_OFF }, { "error", VQF_VU_LOG_ERROR },
		{ "err", VQF_VU_LOG_ERROR }, { "warn", VQF_VU_LOG_WARN },
		{ "info", VQF_VU_LOG_INFO }, { "debug", VQF_VU_LOG_DEBUG },
		{ "trace", VQF_VU_LOG_DEBUG },
	};

	for (unsigned int i = 0; i < sizeof(lv) / sizeof(*lv); i++) {
		if (!strcmp(val, lv[i].name)) {
			o->log_level = lv[i].level;
			return 0;
		}
	}
	return vqf_cli_bad_usage("%s: unknown log level '%s' (off, error, "
				 "warn, info, debug, trace)", name, val);
}

/* @val among the NULL-terminated @ok, or a usage error naming both. */
static int one_of(const char *name, const char *val,
		  const char *const *ok, const char **out)
{
	for (const char *const *p = ok; *p; p++) {
		if (!strcmp(val, *p)) {
			*out = *p;
			return 0;
		}
	}
	return vqf_cli_bad_usage("%s: unknown value '%s'", name, val);
}

static const char *const sandboxes[] = { "namespace", "chroot", "none",
					 NULL };
static const char *const seccomps[] = { "none", "kill", "log", "trap",
					NULL };

/* One item of "-o a=b,c": the legacy C daemon's options. */
static int set_legacy(struct vqf_vu_opts *o, const char *key,
		      const char *val)
{
	static const struct {
		const char *name;
		size_t off;
		bool on;
	} flags[] = {
#define F(n, field, v) { n, offsetof(struct vqf_vu_opts, field), v }
		F("xattr", xattr, true), F("no_xattr", xattr, false),
		F("flock", flock, true), F("no_flock", flock, false),
		F("posix_lock", posix_locks, true),
		F("no_posix_lock", posix_locks, false),
		F("readdirplus", readdirplus, true),
		F("no_readdirplus", readdirplus, false),
		F("writeback", writeback, true),
		F("no_writeback", writeback, false),
		F("allow_direct_io", direct_io, true),
		F("no_allow_direct_io", direct_io, false),
		F("announce_submounts", announce_submounts, true),
		F("readonly", readonly, true),
#undef F
	};
	/* Accepted, no effect: what they turn off is off here anyway. */
	static const char *const noops[] = {
		"no_posix_acl", "no_security_label", "no_killpriv_v2",
		"allow_root", NULL
	};
	static const char *const refuse[] = {
		"posix_acl", "security_label", "killpriv_v2", "xattrmap",
		NULL
	};
	unsigned long long n;
	char opt[64];

	snprintf(opt, sizeof(opt), "-o %s", key);
	if (!val) {
		for (unsigned int i = 0; i < sizeof(flags) / sizeof(*flags);
		     i++) {
			if (!strcmp(key, flags[i].name)) {
				*(bool *)((char *)o + flags[i].off) =
					flags[i].on;
				return 0;
			}
		}
		if (!strcmp(key, "debug")) {
			o->log_level = VQF_VU_LOG_DEBUG;
			return 0;
		}
		for (const char *const *p = noops; *p; p++)
			if (!strcmp(key, *p))
				return 0;
	} else if (!strcmp(key, "source")) {
		if (!*val)
			return vqf_cli_bad_usage("-o source: empty path");
		o->shared = val;
		return 0;
	} else if (!strcmp(key, "cache")) {
		return set_cache(o, opt, val);
	} else if (!strcmp(key, "log_level") || !strcmp(key, "loglevel")) {
		return set_log_level(o, opt, val);
	} else if (!strcmp(key, "sandbox")) {
		return one_of(opt, val, sandboxes, &o->sandbox);
	} else if (!strcmp(key, "modcaps")) {
		o->modcaps = val;
		return vqf_vu_check_modcaps(val);
	} else if (!strcmp(key, "timeout")) {
		return vqf_cli_parse_timeout(val, &o->timeout);
	} else if (!strcmp(key, "max_idle_threads")) {
		/* libfuse's idle workers: ours are a fixed pool. */
		if (vqf_cli_parse_num(val, false, 0, INT_MAX, &n))
			return vqf_cli_bad_usage("%s: invalid value '%s'", opt,
						 val);
		return 0;
	}
	for (const char *const *p = refuse; *p; p++)
		if (!strcmp(key, *p))
			return refused(opt);
	return vqf_cli_bad_usage("vhost-user: unknown option '%s'", opt);
}

/*
 * "-o" takes a comma-separated list; a comma inside a value is written
 * twice (",,"), as libvirt escapes the source path.  The list is copied
 * (o->owned) for its pieces to stay (o->shared).
 */
static int set_o(struct vqf_vu_opts *o, const char *list)
{
	const unsigned int max = sizeof(o->owned) / sizeof(*o->owned);
	char *buf, *w, *key;
	const char *r;
	int ret = 0;

	if (o->nowned == max)
		return vqf_cli_bad_usage("-o: given more than %u times", max);
	buf = malloc(strlen(list) + 1);
	if (!buf)
		return vqf_cli_bad_usage("-o: out of memory");
	o->owned[o->nowned++] = buf;
	for (r = list, w = buf, key = buf; !ret; r++) {
		if (*r == ',' && r[1] == ',') {
			*w++ = *r++;
			continue;
		}
		if (*r && *r != ',') {
			*w++ = *r;
			continue;
		}
		*w = 0;
		if (*key) {
			char *eq = strchr(key, '=');

			if (eq)
				*eq = 0;
			ret = set_legacy(o, key, eq ? eq + 1 : NULL);
		}
		if (!*r)
			break;
		key = ++w;
	}
	return ret;
}

/* One unsigned 32-bit number of an id map, ending at @end. */
static int id_num(const char *s, const char *end, unsigned int *out)
{
	unsigned long long n;
	char buf[16];
	size_t len = (size_t)(end - s);

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (vqf_cli_parse_num(buf, false, 0, 0xffffffffull, &n))
		return -1;
	*out = (unsigned int)n;
	return 0;
}

/*
 * --uid-map/--gid-map as virtiofsd reads them: the first character is
 * the separator, and it must close the map too
 * (":namespace_id:host_id:count:").
 */
static int add_idmap(const char *name, const char *val,
		     struct vqf_vu_idmap *m, unsigned int *n)
{
	unsigned int v[3], i;
	const char *p = val + 1, *e;
	char sep = val[0];

	if (*n == VQF_VU_IDMAPS)
		return vqf_cli_bad_usage("%s: more than %u maps", name,
					 VQF_VU_IDMAPS);
	for (i = 0; i < 3; i++) {
		e = strchr(p, sep);
		if (!e || id_num(p, e, &v[i]))
			return vqf_cli_bad_usage("%s=%s: not :namespace_id:"
						 "host_id:count:", name, val);
		p = e + 1;
	}
	if (*p)
		return vqf_cli_bad_usage("%s=%s: text after the closing '%c'",
					 name, val, sep);
	if (!v[2])
		return vqf_cli_bad_usage("%s=%s: a count of 0", name, val);
	m[*n].inside = v[0];
	m[*n].outside = v[1];
	m[*n].count = v[2];
	(*n)++;
	return 0;
}

/*
 * --translate-uid/--translate-gid as virtiofsd reads them: TYPE:a:b:count
 * (forbid-guest:a:count).  The device has no translation of callers' ids:
 * an identity entry (map, guest or host with a == b) is what happens
 * anyway and is accepted; every other entry is refused by name.
 */
static int check_translate(const char *name, const char *val)
{
	static const char *const types[] = {
		"map", "guest", "host", "squash-guest", "squash-host",
		"forbid-guest", NULL
	};
	const char *colon = strchr(val, ':'), *p, *e;
	unsigned int v[3] = { 0 }, nv, i;
	size_t tlen;
	int t = -1;

	tlen = colon ? (size_t)(colon - val) : 0;
	for (i = 0; types[i]; i++)
		if (tlen == strlen(types[i]) && !strncmp(val, types[i], tlen))
			t = (int)i;
	if (t < 0)
		return vqf_cli_bad_usage("%s=%s: unknown type (map, guest, "
					 "host, squash-guest, squash-host, "
					 "forbid-guest)", name, val);
	nv = !strcmp(types[t], "forbid-guest") ? 2 : 3;
	for (i = 0, p = colon + 1; i < nv; i++) {
		e = i + 1 < nv ? strchr(p, ':') : p + strlen(p);
		if (!e || id_num(p, e, &v[i]))
			return vqf_cli_bad_usage("%s=%s: not %s:%s", name, val,
						 types[t], nv == 2 ?
						 "base:count" :
						 "from:to:count");
		p = e + 1;
	}
	if (t <= 2 && v[0] == v[1] && v[2])
		return 0;
	return vqf_cli_bad_usage("%s=%s: translating ids (%s) is not "
				 "implemented by this daemon; only identity "
				 "map/guest/host entries are accepted (see "
				 "docs/virtiofsd-compat.md)", name, val,
				 types[t]);
}

static int set_flag(struct vqf_vu_opts *o, const char *name)
{
	if (!strcmp(name, "--verbose") || !strcmp(name, "-d"))
		o->log_level = VQF_VU_LOG_DEBUG;
	else if (!strcmp(name, "--host-locks"))
		o->posix_locks = o->flock = true;
	else if (!strcmp(name, "--allow-direct-io"))
		o->direct_io = true;
	else if (!strcmp(name, "--print-capabilities"))
		o->print_caps = true;
	else if (!strcmp(name, "--xattr"))
		o->xattr = true;
	else if (!strcmp(name, "--writeback"))
		o->writeback = true;
	else if (!strcmp(name, "--no-readdirplus"))
		o->readdirplus = false;
	else if (!strcmp(name, "--announce-submounts"))
		o->announce_submounts = true;
	else if (!strcmp(name, "--no-announce-submounts"))
		o->announce_submounts = false;
	else if (!strcmp(name, "--syslog"))
		o->syslog = true;
	else if (!strcmp(name, "--version") || !strcmp(name, "-V"))
		o->version = true;
	else if (!strcmp(name, "--trust-guest"))
		o->trust_guest = true;
	else if (!strcmp(name, "--readonly"))
		o->readonly = true;
	/* -f: the legacy daemon's foreground, which is all we do. */
	else if (strcmp(name, "-f") && strcmp(name, "--no-killpriv-v2"))
		return refused(name);
	return 0;
}

static int set_str(struct vqf_vu_opts *o, const char *name, const char *val)
{
	struct group *g;

	if (!strcmp(name, "-o"))
		return set_o(o, val);
	if (!strcmp(name, "--backend"))
		return vqf_cli_parse_backend(name, val, &o->fs);
	if (!strcmp(name, "--timeout"))
		return vqf_cli_parse_timeout(val, &o->timeout);
	if (!strcmp(name, "--cache"))
		return set_cache(o, name, val);
	if (!strcmp(name, "--log-level"))
		return set_log_level(o, name, val);
	if (!strcmp(name, "--sandbox"))
		return one_of(name, val, sandboxes, &o->sandbox);
	if (!strcmp(name, "--seccomp"))
		return one_of(name, val, seccomps, &o->seccomp);
	if (!*val)
		return vqf_cli_bad_usage("%s: empty value", name);
	if (!strcmp(name, "--modcaps")) {
		o->modcaps = val;
		return vqf_vu_check_modcaps(val);
	}
	if (!strcmp(name, "--uid-map"))
		return add_idmap(name, val, o->uid_map, &o->n_uid_map);
	if (!strcmp(name, "--gid-map"))
		return add_idmap(name, val, o->gid_map, &o->n_gid_map);
	if (!strcmp(name, "--translate-uid") ||
	    !strcmp(name, "--translate-gid"))
		return check_translate(name, val);
	if (!strcmp(name, "--socket") || !strcmp(name, "--socket-path")) {
		o->socket = val;
	} else if (!strcmp(name, "--shared") ||
		   !strcmp(name, "--shared-dir")) {
		o->shared = val;
	} else if (!strcmp(name, "--socket-group")) {
		g = getgrnam(val);
		if (!g)
			return vqf_cli_bad_usage("--socket-group: no group "
						 "'%s'", val);
		o->socket_group = val;
	} else if (!strcmp(name, "--tag")) {
		if (strlen(val) > VQF_FS_TAG_LEN)
			return vqf_cli_bad_usage("--tag: longer than %d bytes",
						 VQF_FS_TAG_LEN);
		o->tag = val;
	} else {
		return refused(name);
	}
	return 0;
}

/* One option of vhost-user, as vqf_cli_walk() found it. */
static int vu_set(void *arg, const char *name, const char *val,
		  const unsigned long long *num)
{
	struct vqf_vu_opts *o = arg;
	int ret = vqf_vu_shm_opt(&o->shm, name, num);

	if (ret)
		return ret > 0 ? 0 : ret;
	if (!num)
		return val ? set_str(o, name, val) : set_flag(o, name);
	if (!strcmp(name, "--queues"))
		o->queues = (unsigned int)*num;
	else if (!strcmp(name, "--threads") ||
		 !strcmp(name, "--thread-pool-size"))
		o->threads = (unsigned int)*num;
	else if (!strcmp(name, "--queue-size"))
		o->queue_size = (unsigned int)*num;
	else if (!strcmp(name, "--poll-us"))
		o->poll_us = (unsigned int)*num;
	else if (!strcmp(name, "--fd"))
		o->fd = (int)*num;
	else
		o->rlimit_nofile = *num, o->rlimit_set = true;
	return 0;
}

static const struct vqf_cli_spec vu_spec = {
	.cmd = "vhost-user", .flags = vu_flags, .strs = vu_strs,
	.nums = vu_nums, .nnums = sizeof(vu_nums) / sizeof(*vu_nums),
	.more = &vfsd_table, .set = vu_set,
};

/*
 * The fewest descriptors the daemon serves with: stdio, the stop and
 * listening sockets, the backend's and hub's own, and per guest its
 * connection, memory regions, the back-end channel, shared memory and a
 * call, a kick and an error eventfd per ring (hiprio and --queues).  A
 * limit below this fails its start (docs/virtiofsd-compat.md).
 */
static unsigned long long fds_needed(const struct vqf_vu_opts *o)
{
	unsigned long long guests = o->shm.guests ? o->shm.guests : 1;

	return VQF_VU_FDS_BASE + guests * (VQF_VHOST_MAX_REGIONS +
					   VQF_VU_FDS_GUEST +
					   3ull * (1 + o->queues));
}

/* Once parsed: what the options mean together. */
static int vu_check(const struct vqf_vu_opts *o)
{
	const char *why;
	struct stat st;
	int ret;

	if (o->fd >= 0 && o->socket)
		return vqf_cli_bad_usage("vhost-user: --fd and --socket-path "
					 "(--socket) exclude each other");
	if (o->fd >= 0 && o->socket_group)
		return vqf_cli_bad_usage("vhost-user: --socket-group needs "
					 "--socket-path, not --fd");
	if (o->fd < 0 && !o->socket)
		return vqf_cli_bad_usage("vhost-user: --socket PATH (or "
					 "--socket-path, or --fd N) is "
					 "required");
	if (!o->shared)
		return vqf_cli_bad_usage("vhost-user: --shared DIR (or "
					 "--shared-dir, or -o source=) is "
					 "required");
	if (o->queue_size & (o->queue_size - 1))
		return vqf_cli_bad_usage("--queue-size: %u is not a power of "
					 "two", o->queue_size);
	if (stat(o->shared, &st) || !S_ISDIR(st.st_mode))
		return vqf_cli_bad_usage("--shared: %s: not a directory",
					 o->shared);
	if (o->fs == VQF_SIM_FS_PTLL && (o->timeout || o->cache_set))
		return vqf_cli_bad_usage("--timeout, --cache: not with "
					 "passthrough_ll (it serves its own "
					 "cache=never)");
	ret = vqf_vu_shm_check(&o->shm, o->fs != VQF_SIM_FS_VQFUSE);
	if (ret)
		return ret;
	if (!vqf_vu_backend_safe(o->fs) && !o->trust_guest)
		return vqf_cli_bad_usage("--backend passthrough_ll: not safe "
					 "to face a guest that is not trusted "
					 "(guest node ids are its pointers; "
					 "docs/guard.md); give --trust-guest "
					 "to serve it anyway");
	if (o->sandbox && !strcmp(o->sandbox, "chroot") && geteuid())
		return vqf_cli_bad_usage("--sandbox=chroot: needs root; "
					 "unprivileged, the namespace sandbox "
					 "runs in a user namespace");
	why = vqf_vu_sandbox_of(o) == VQF_VU_SANDBOX_NONE ? NULL :
	      vqf_vu_sandbox_unfit(o->shared);
	if (why)
		return vqf_cli_bad_usage("--shared-dir=%s: %s (--sandbox=none "
					 "serves it unconfined)", o->shared,
					 why);
	if ((o->n_uid_map || o->n_gid_map) &&
	    vqf_vu_sandbox_of(o) != VQF_VU_SANDBOX_NAMESPACE)
		return vqf_cli_bad_usage("--uid-map, --gid-map: need "
					 "--sandbox=namespace (the user "
					 "namespace is part of it)");
	if (o->rlimit_nofile && o->rlimit_nofile < fds_needed(o))
		return vqf_cli_bad_usage("--rlimit-nofile=%llu: too few "
					 "descriptors: need at least %llu "
					 "(%u request queues, %u guests)",
					 o->rlimit_nofile, fds_needed(o),
					 o->queues, o->shm.guests ?
					 o->shm.guests : 1);
	if (o->shm.guests > 1 && !o->socket)
		return vqf_cli_bad_usage("--guests: needs --socket PATH (guest "
					 "i listens on PATH.i)");
	return 0;
}

void vqf_vu_opts_release(struct vqf_vu_opts *o)
{
	while (o->nowned)
		free(o->owned[--o->nowned]);
}

int vqf_vu_parse(int argc, char **argv, struct vqf_vu_opts *o)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->queues = 1;
	o->threads = 2;
	o->queue_size = 1024;
	o->cache = VQF_VU_CACHE_AUTO;
	o->readdirplus = true;
	o->log_level = VQF_VU_LOG_INFO;
	ret = vqf_cli_walk(&vu_spec, argc, argv, o);
	if (!ret && !o->print_caps && !o->version)
		ret = vu_check(o);
	if (ret)
		vqf_vu_opts_release(o);
	return ret;
}

/*
 * The vhost-user spec's "Backend program conventions": one JSON object
 * on stdout.  "separate-options" tells libvirt (qemu_virtiofs.c) that the
 * daemon takes virtiofsd's separate options, so it passes --shared-dir
 * and friends rather than the legacy "-o" list (both are read here).
 */
void vqf_vu_print_capabilities(FILE *f)
{
	fprintf(f, "{\n  \"type\": \"fs\",\n  \"features\": [\n"
		"    \"separate-options\"\n  ]\n}\n");
}

/*
 * Our own options, which both names take.  @vfsd: for vqfuse-virtiofsd's
 * help, which describes --cache and --allow-direct-io among virtiofsd's.
 */
static void own_usage(FILE *f, bool vfsd)
{
	fprintf(f,
"  --socket PATH       unix socket to listen on (or --fd); QEMU connects\n"
"                      with -chardev socket,id=ID,path=PATH\n"
"  --shared DIR        host directory to share (required, must exist)\n"
"  --queues N          request queues offered (1..64, default 1); QEMU's\n"
"                      num-request-queues must not exceed it\n"
"  --threads N         device worker threads (0..256, default 2)\n"
"  --queue-size N      largest ring size accepted (power of two, default\n"
"                      1024)\n"
"  --poll-us N         after serving, the request queues' threads poll\n"
"                      their rings for up to N us (adaptive) before\n"
"                      sleeping on the kick eventfd (0..10000, default 0:\n"
"                      off); virtiofsd has no such option.  Costs CPU\n"
"                      time while idle within the window\n"
"  --backend NAME      vqfuse (default), passthrough_ll or null (answers\n"
"                      from memory, for tests)\n");
	if (!vfsd)
		fprintf(f,
"  --cache MODE        auto (default: 1 s timeouts), always, never (or\n"
"                      none), metadata; as virtiofsd's --cache\n");
	fprintf(f,
"  --timeout S         entry/attr validity given to the guest (default:\n"
"                      the cache mode's)\n"
"  --tag TAG           the device's tag (QEMU's own tag= is what the guest\n"
"                      sees)\n"
"  --host-locks        serve POSIX/OFD/flock locks on the host (default:\n"
"                      the guest keeps them, as virtiofsd without -o\n"
"                      posix_lock,flock)\n");
	if (!vfsd)
		fprintf(f,
"  --allow-direct-io   open host files with the guest's O_DIRECT (default:\n"
"                      dropped, as virtiofsd without allow_direct_io)\n");
	fprintf(f,
"  --dax-window SIZE   a DAX cache window of SIZE bytes (power of two,\n"
"                      K/M/G suffixes) as shared memory region 0, served\n"
"                      through vhost-user's SHMEM protocol (vqfuse backend)\n"
"  --dax-inode-min SIZE with --dax-window: for a guest that mounts\n"
"                      dax=inode (the kernel's default), regular files of\n"
"                      at least SIZE bytes get FUSE_ATTR_DAX (data through\n"
"                      the window), smaller ones READ/WRITE (default off)\n"
"  --version-table     the shared version table as shared memory region 1\n"
"                      (requests go through a hub, which keeps it)\n"
"  --guests N          N front-ends (1..8), guest i on socket PATH.i,\n"
"                      through one hub and one version table (implies\n"
"                      --version-table), each with its own DAX window\n"
"                      with --dax-window; ends when all have gone\n"
"  --ver-hostile N     (tests) while SHARED/.vqf-hostile exists, every Nth\n"
"                      entry reply names a version ahead of its slot or\n"
"                      another slot; implies --version-table\n"
"  --trust-guest       serve a backend that is not safe to face a hostile\n"
"                      guest (passthrough_ll); refused without it\n"
"  --verbose           log every vhost-user message (--log-level=debug)\n");
}

/*
 * virtiofsd's options that are refused by name.  No line may end in a
 * letter and '-': help2man joins such a line to the next as a hyphenated
 * word.
 */
static void refused_usage(FILE *f)
{
	fprintf(f,
"Refused by name (exit 2), not implemented here: --xattrmap, --posix-acl,\n"
"--security-label, --allow-mmap, --killpriv-v2, --preserve-noatime,\n"
"--inode-file-handles, --migration-mode, --migration-on-error,\n"
"--migration-verify-handles, --migration-confirm-paths, --daemonize, and\n"
"-o posix_acl, -o security_label, -o killpriv_v2, -o xattrmap.\n");
}

void vqf_vu_usage(FILE *f)
{
	fprintf(f,
"Options of vhost-user (serve a QEMU vhost-user-fs-pci device):\n");
	own_usage(f, false);
	fprintf(f,
"virtiofsd's options, read as virtiofsd reads them: --socket-path=PATH,\n"
"--fd=N, --socket-group=GROUP, --shared-dir=DIR, --cache=MODE,\n"
"--thread-pool-size=N, --xattr, --writeback, --no-readdirplus,\n"
"--allow-direct-io, --announce-submounts, --no-announce-submounts,\n"
"--sandbox=namespace|chroot|none (default namespace),\n"
"--seccomp=kill|log|trap|none (default kill), --modcaps=+CAP:-CAP,\n"
"--readonly, --uid-map=:NS:HOST:COUNT:, --gid-map=:NS:HOST:COUNT:,\n"
"--translate-uid, --translate-gid (identity entries only),\n"
"--log-level=LEVEL, --syslog, --rlimit-nofile=N, --no-killpriv-v2 (no\n"
"effect), --print-capabilities, -V, --version, -d, -f, and the legacy\n"
"-o source=DIR,cache=MODE,xattr,flock,posix_lock,... list; the program is\n"
"also installed as vqfuse-virtiofsd, which takes them directly, and whose\n"
"--help describes each one (docs/virtiofsd-compat.md).\n");
	refused_usage(f);
	fprintf(f,
"Exits 0 when the front-end disconnects or at SIGINT/SIGTERM, printing\n"
"the counters to the log.\n");
}

/*
 * vqfuse-virtiofsd --help: virtiofsd's options one per line, as
 * virtiofsd's own help has them, then the legacy -o items and ours.  The
 * manual page vqfuse-virtiofsd(1) is made from this text (help2man).
 */
void vqf_vu_virtiofsd_usage(FILE *f)
{
	fprintf(f,
"Usage: %s --socket-path=PATH --shared-dir=DIR [options]\n"
"  or:  %s --fd=N --shared-dir=DIR [options]\n"
"  or:  %s --socket-path=PATH -o source=DIR[,ITEM...] [options]\n"
"  or:  %s --print-capabilities | --version | --help\n"
"\n"
"Serves the directory DIR to a QEMU vhost-user-fs-pci device over a\n"
"vhost-user socket, in virtiofsd's place: vqfuse-sim's vhost-user daemon\n"
"under the name that takes virtiofsd's command line, both the Rust\n"
"daemon's separate options and the legacy C daemon's -o list, with\n"
"virtiofsd's defaults.  An option of virtiofsd's that it does not\n"
"implement is refused by name (exit 2), never ignored.  Given twice, the\n"
"later option wins.\n"
"\n", vqf_cli_prog, vqf_cli_prog, vqf_cli_prog, vqf_cli_prog);
	fprintf(f,
"Options:\n"
"  --socket-path=PATH  vhost-user socket to listen on, removed once QEMU\n"
"                      has connected (also --socket PATH)\n"
"  --fd=N              serve the listening unix stream socket N that the\n"
"                      caller made (libvirt's way); not with --socket-path\n"
"  --socket-group=GROUP\n"
"                      the socket's group, mode 0660 (not with --fd)\n"
"  --shared-dir=DIR    directory to share (required; also --shared DIR or\n"
"                      -o source=DIR)\n"
"  --cache=MODE        auto (default: entries and attributes valid 1 s),\n"
"                      always, never (or none), metadata\n"
"  --thread-pool-size=N\n"
"                      device worker threads (0..256, default 2; 0: each\n"
"                      queue's thread serves its requests)\n"
"  --xattr             serve extended attributes (default: off, ENOSYS)\n"
"  --writeback         FUSE writeback cache when the guest offers it\n"
"                      (default: off)\n"
"  --no-readdirplus    no READDIRPLUS (default: offered, but not with\n"
"                      --cache=never)\n"
"  --allow-direct-io   keep the guest's O_DIRECT on host opens (default:\n"
"                      dropped)\n"
"  --announce-submounts\n"
"                      accepted, no effect: the guest sees one file system\n"
"  --no-announce-submounts\n"
"                      the default\n"
"  --sandbox=MODE      namespace (default; a user namespace when not\n"
"                      root), chroot (root only) or none\n"
"  --seccomp=ACTION    on a system call outside the allowlist: kill\n"
"                      (default), log, trap or none (no filter)\n"
"  --modcaps=LIST      capabilities kept, changed: +cap:-cap:... (names\n"
"                      with or without cap_, any case)\n"
"  --readonly          refuse every change with EROFS (default: off)\n"
"  --uid-map=:NS:HOST:COUNT:\n"
"                      a uid map of the sandbox's user namespace (the\n"
"                      first character separates; up to 8; default: the\n"
"                      caller as root when not root)\n"
"  --gid-map=:NS:HOST:COUNT:\n"
"                      the same for gids\n"
"  --translate-uid=TYPE:A:B:COUNT\n"
"                      only identity entries (map:N:N:C, guest:N:N:C,\n"
"                      host:N:N:C) are accepted; ids are not translated\n"
"  --translate-gid=TYPE:A:B:COUNT\n"
"                      the same for gids\n"
"  --log-level=LEVEL   off, error, warn, info (default), debug, trace\n"
"  --syslog            log to syslog(3) instead of stderr\n"
"  --rlimit-nofile=N   RLIMIT_NOFILE's soft limit (0: left as is; default:\n"
"                      min(1000000, fs.file-max - 16384) if the current\n"
"                      limit is lower, as virtiofsd)\n"
"  --no-killpriv-v2    accepted, no effect (the default)\n"
"  --print-capabilities\n"
"                      print the vhost-user backend capabilities (JSON)\n"
"                      and exit\n"
"  -d                  debug log, as --log-level=debug\n"
"  -f                  accepted: the daemon stays in the foreground\n"
"  -o LIST             the legacy daemon's options, comma-separated (a\n"
"                      comma inside a value written twice); see below\n"
"  -V, --version       print the name and version and exit\n"
"  -h, --help          print this help and exit\n"
"\n");
	fprintf(f,
"Legacy options (-o ITEM[,ITEM...]):\n"
"  -o source=DIR       the directory to share, as --shared-dir\n"
"  -o cache=MODE       as --cache (none is never)\n"
"  -o timeout=S        entry and attribute validity in seconds, instead\n"
"                      of the cache mode's\n"
"  -o xattr|no_xattr   as --xattr (default no_xattr)\n"
"  -o flock|no_flock   serve flock locks on the host (default no_flock:\n"
"                      the guest keeps them)\n"
"  -o posix_lock|no_posix_lock\n"
"                      the same for POSIX and OFD locks (default\n"
"                      no_posix_lock)\n"
"  -o readdirplus|no_readdirplus\n"
"                      as --no-readdirplus (default readdirplus, but not\n"
"                      with cache=none)\n"
"  -o writeback|no_writeback\n"
"                      as --writeback (default no_writeback)\n"
"  -o allow_direct_io|no_allow_direct_io\n"
"                      as --allow-direct-io (default no_allow_direct_io)\n"
"  -o announce_submounts\n"
"                      as --announce-submounts\n"
"  -o readonly         as --readonly\n"
"  -o sandbox=MODE     as --sandbox\n"
"  -o modcaps=LIST     as --modcaps\n"
"  -o log_level=LEVEL  as --log-level, err for error (also loglevel=)\n"
"  -o debug            as -d\n"
"  -o max_idle_threads=N\n"
"                      accepted, no effect (the worker pool is fixed)\n"
"  -o allow_root       accepted, no effect\n"
"  -o no_posix_acl     accepted, no effect (ACLs are not served)\n"
"  -o no_security_label\n"
"                      accepted, no effect (nor are security labels)\n"
"  -o no_killpriv_v2   accepted, no effect (the default)\n"
"\n"
"vqfuse's own options (as for vqfuse-sim vhost-user):\n");
	own_usage(f, true);
	fputc('\n', f);
	refused_usage(f);
	fprintf(f,
"\n"
"Exit status: 0 when the front-end disconnects, at SIGINT or SIGTERM\n"
"(the counters are printed to the log), or after --print-capabilities,\n"
"--version or --help; 1 the daemon could not start or serve; 2 bad\n"
"usage, the option named.\n");
}
