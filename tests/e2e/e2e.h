/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * e2e.h - fixtures for the end-to-end tests: a temporary shared directory
 * (and a sibling that stands for the rest of the host) served by one
 * simulated machine, plus raw FUSE requests sent through its driver.
 */
#ifndef VQF_E2E_H
#define VQF_E2E_H

#include "vqf_sim.h"

#include <stdbool.h>
#include <stdint.h>

struct e2e {
	char dir[64];		/* the shared directory */
	char out[64];		/* a sibling: must never be touched */
	enum vqf_sim_fs fs;
	struct vqf_sim *s;
	struct vqf_gcli *c;
	struct vqf_gdrv *g;
	/* The sibling as it was set up: its one file and its mtime. */
	struct timespec out_mtime;
};

/*
 * The backend the program was asked for: argv[1] "ptll" or "vqfuse", else
 * env VQF_E2E_FS, else vqfuse.  Sets e2e_fs.
 */
extern enum vqf_sim_fs e2e_fs;
void e2e_pick_fs(int argc, char **argv);
const char *e2e_fs_name(enum vqf_sim_fs fs);

/*
 * Adaptive polling for every machine e2e_new() makes (vqf_sim_cfg.poll_ns,
 * unless the template sets it or inline kicks): any argument "poll" gives
 * 20 us, else env VQF_E2E_POLL_US; 0 (off) otherwise.  Sets e2e_poll_ns.
 */
extern u64 e2e_poll_ns;
void e2e_pick_poll(int argc, char **argv);

/* Under valgrind (env VQF_UNDER_VALGRIND): use smaller counts. */
bool e2e_slow(void);
/* Fixed seed, overridable by env VQF_SEED. */
unsigned int e2e_seed(void);

/*
 * A machine over a fresh shared directory.  @tmpl may be NULL; its shared
 * and fs fields are filled here (fs from e2e_fs unless @force_fs >= 0).
 * Returns 0 or a negative errno, nothing left behind on failure.
 */
int e2e_new(struct e2e **out, const struct vqf_sim_cfg *tmpl, int force_fs);
/* Frees the machine, checks the sibling, removes both directories.
 * Returns 0, or -1 when the sibling was touched.
 */
int e2e_free(struct e2e *e);
/* Whether the sibling is as it was set up (one file, same mtime). */
bool e2e_out_intact(struct e2e *e);

/* Host path of @name inside the share (one of 8 rotating buffers). */
const char *e2e_host(struct e2e *e, const char *name);
/* Host path inside the sibling. */
const char *e2e_out(struct e2e *e, const char *name);

/* Host-side helpers: whole-file contents (malloc'd, *len set) or NULL. */
void *e2e_host_read(const char *path, size_t *len);
int e2e_host_write(const char *path, const void *buf, size_t len,
		   mode_t mode);
void e2e_rm_rf(const char *dir);

/* A deterministic byte pattern for big I/O. */
void e2e_fill(void *buf, size_t len, unsigned int seed);

struct vqf_sim_stats e2e_stats(struct e2e *e);
/* Requests of @opcode the driver has sent so far. */
uint64_t e2e_sent(struct e2e *e, uint32_t opcode);
/* Whether the share's file @name holds exactly @len bytes @want. */
bool e2e_host_equal(struct e2e *e, const char *name, const void *want,
		    size_t len);
/* Prints each device parser refusal reason counted so far (debugging). */
void e2e_dump_refusals(const struct vqf_sim_stats *s);
/* Sum of every vqf_pt_stats refused_* counter. */
uint64_t e2e_refused(const struct vqf_pt_stats *s);

/* ---- raw requests (a malicious guest) ---------------------------------- */

/* Any request: a fixed argument, up to two names, one out argument. */
int raw_names(struct e2e *e, uint32_t opcode, uint64_t nodeid,
	      const void *arg, uint32_t argsize, const char *n1,
	      const char *n2, void *out, uint32_t outsize);
int raw_lookup(struct e2e *e, uint64_t parent, const char *name,
	       struct fuse_entry_out *out);
/* LOOKUP with the name bytes given as is (@len includes any NUL). */
int raw_lookup_bytes(struct e2e *e, uint64_t parent, const void *name,
		     uint32_t len, struct fuse_entry_out *out);
int raw_getattr(struct e2e *e, uint64_t nodeid, struct fuse_attr *attr);
int raw_open(struct e2e *e, uint64_t nodeid, uint32_t flags, uint64_t *fh);
int raw_create(struct e2e *e, uint64_t parent, const char *name,
	       uint32_t flags, uint32_t mode, struct fuse_entry_out *entry,
	       uint64_t *fh);
int raw_release(struct e2e *e, uint64_t nodeid, uint64_t fh);
int raw_mknod(struct e2e *e, uint64_t parent, const char *name,
	      uint32_t mode, uint32_t rdev, struct fuse_entry_out *out);
int raw_mkdir(struct e2e *e, uint64_t parent, const char *name,
	      uint32_t mode, struct fuse_entry_out *out);
int raw_rename(struct e2e *e, uint64_t parent, const char *name,
	       uint64_t newparent, const char *newname, uint32_t flags);
int raw_link(struct e2e *e, uint64_t oldnodeid, uint64_t newparent,
	     const char *newname, struct fuse_entry_out *out);
int raw_truncate(struct e2e *e, uint64_t nodeid, uint64_t size);
int raw_read(struct e2e *e, uint64_t nodeid, uint64_t fh, uint64_t off,
	     void *buf, uint32_t size);
/* Forgets @nlookup of @nodeid and waits until the device has them. */
int raw_forget(struct e2e *e, uint64_t nodeid, uint64_t nlookup);

#endif /* VQF_E2E_H */
