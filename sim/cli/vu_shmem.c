// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_shmem.c - the DAX window and the version table of `vqfuse-sim
 * vhost-user` (see vqf_vu_shm.h).
 */
#define _GNU_SOURCE
#include "vqf_vu_shm.h"
#include "vqf_cli_base.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int vqf_vu_shm_opt(struct vqf_vu_shm *s, const char *name,
		   const unsigned long long *num)
{
	if (!strcmp(name, "--version-table")) {
		s->version_table = true;
		return 1;
	}
	if (num && !strcmp(name, "--dax-window")) {
		s->dax_window = *num;
		return 1;
	}
	if (num && !strcmp(name, "--dax-inode-min")) {
		s->dax_inode_min = *num;
		return 1;
	}
	if (num && !strcmp(name, "--guests")) {
		s->guests = (unsigned int)*num;
		/* Several guests see each other's changes through the table */
		if (s->guests > 1)
			s->version_table = true;
		return 1;
	}
	if (num && !strcmp(name, "--ver-hostile")) {
		s->hostile = *num;
		s->version_table = true;
		return 1;
	}
	return 0;
}

int vqf_vu_shm_check(const struct vqf_vu_shm *s, bool passthrough_ll)
{
	if (s->dax_window & (s->dax_window - 1))
		return vqf_cli_bad_usage("--dax-window: %llu is not a power "
					 "of two", s->dax_window);
	if (s->dax_inode_min && !s->dax_window)
		return vqf_cli_bad_usage("--dax-inode-min: needs --dax-window");
	if (s->dax_window && passthrough_ll)
		return vqf_cli_bad_usage("--dax-window: not with "
					 "passthrough_ll (no access to its "
					 "open files)");
	return 0;
}

/* The window reaches vqfuse's passthrough's files here. */
static const struct vqf_fsdev_dax_ops vu_dax_ops = {
	.file_fd = vqf_pt_dax_file_fd,
	.node_fd = vqf_pt_dax_node_fd,
};

/*
 * --ver-hostile: the guest turns it on and off with a file in the shared
 * directory, so one boot can check both a truthful and a lying table.
 * Each lie is one the guest must catch (lib/vqf_version.h): a version
 * ahead of the slot it names (the table "went backwards" once the slot
 * is read), and another live-looking slot with no usable version (the
 * inode's slot changed).
 */
static void vu_hostile(void *ctx, struct fuse_entryver_out *ev)
{
	struct vqf_vu_shm *s = ctx;
	unsigned long long n;

	if (!ev->version_index || access(s->hostile_path, F_OK))
		return;
	n = __atomic_add_fetch(&s->hostile_ctr, 1, __ATOMIC_RELAXED);
	if (n % s->hostile)
		return;
	if ((n / s->hostile) & 1) {
		ev->initial_version += 1000000;
		return;
	}
	/* A slot the table has, never 0 or the root's. */
	ev->version_index = ev->version_index + 1 < s->nr_slots ?
			    ev->version_index + 1 : VQF_VER_ROOT_INDEX + 1;
	ev->initial_version = 0;
}

/* Requests through the current port (it changes only while stopped). */
static int vu_serve(void *ctx, void *req, size_t len,
		    vqf_backend_reply_fn reply, void *rctx)
{
	struct vqf_vu_port *p = ctx;

	return vqf_hub_process(p->port, req, len, reply, rctx);
}

/*
 * The device stopped: the guest's next session starts on a fresh port,
 * the old one's lookups given back (the hub answers the next INIT).
 */
static void vu_serve_reset(void *ctx)
{
	struct vqf_vu_port *p = ctx;
	struct vqf_hub_port *np;

	if (vqf_hub_port_new(p->s->hub, &np)) {
		/* Keep the old port: its lookups stay counted. */
		fprintf(stderr, "%s: vhost-user: no new hub port\n",
			vqf_cli_prog);
		return;
	}
	vqf_hub_port_free(p->port);
	p->port = np;
}

/*
 * The hub's resize hook: a shrink maps the part of every other guest's
 * mappings of @nodeid past the file's new end again (the truncating
 * guest's kernel knows the size; a host change: every guest); a growth
 * maps the pages the file grew over again in every guest's window
 * (vqf_fsdev_dax_resized()), dropping the pages QEMU replaced while they
 * were past the end.  The table is bumped already; the guest whose
 * request it was has its reply after this.
 */
static void vu_resized(void *ctx, u64 nodeid, u64 old_size, u64 new_size,
		       const struct vqf_hub_port *from)
{
	struct vqf_vu_shm *s = ctx;
	bool shrink = new_size < old_size;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&s->vh_lock);
	if (shrink)
		s->shrinks++;
	else
		s->growths++;
	for (i = 0; i < s->guests && i < VQF_VU_GUESTS_MAX; i++) {
		if (!s->vhs[i] ||
		    (shrink && from && s->ports[i].port == from))
			continue;
		ret = vqf_vhost_dax_resized(s->vhs[i], nodeid, old_size,
					    new_size);
		if (ret < 0)
			s->eof_errors++;
		else
			s->eof_remaps += (unsigned int)ret;
	}
	pthread_mutex_unlock(&s->vh_lock);
}

void vqf_vu_shm_attach(struct vqf_vu_shm *s, unsigned int i,
		       struct vqf_vhost *vh)
{
	if (!s->vh_lock_on || i >= VQF_VU_GUESTS_MAX)
		return;
	pthread_mutex_lock(&s->vh_lock);
	s->vhs[i] = vh;
	pthread_mutex_unlock(&s->vh_lock);
}

int vqf_vu_shm_setup(struct vqf_vu_shm *s, struct vqf_backend *be,
		     struct vqf_pt *pt, const char *shared,
		     struct vqf_vhost_cfg *vc)
{
	struct vqf_hub_cfg hc = { 0 };
	unsigned int i;
	int ret;

	s->pt = pt;
	s->table_fd = -1;
	if (s->dax_window && pt) {
		vc->dax_window = s->dax_window;
		vc->dax_ops = &vu_dax_ops;
		vc->dax_ctx = pt;
		vc->dax_inode_min = s->dax_inode_min;
	}
	if (!s->version_table)
		return 0;
	hc.be = be;
	hc.root = shared;
	if (s->hostile) {
		if (asprintf(&s->hostile_path, "%s/.vqf-hostile", shared) < 0)
			return -ENOMEM;
		hc.entryver_hook = vu_hostile;
		hc.hook_ctx = s;
	}
	if (vc->dax_window) {
		pthread_mutex_init(&s->vh_lock, NULL);
		s->vh_lock_on = true;
		hc.resize_hook = vu_resized;
		hc.resize_ctx = s;
	}
	ret = vqf_hub_new(&hc, &s->hub);
	if (ret)
		return ret;
	if (vc->dax_window) {
		/* A file some guest can store into behind the server's
		 * back has a slot that proves nothing (the hub's rule).
		 */
		vc->dax_writable = vqf_hub_dax_writable;
		vc->dax_writable_ctx = s->hub;
	}
	if (!s->guests)
		s->guests = 1;
	s->ports = calloc(s->guests, sizeof(*s->ports));
	if (!s->ports)
		return -ENOMEM;
	for (i = 0; i < s->guests; i++) {
		s->ports[i].s = s;
		ret = vqf_hub_port_new(s->hub, &s->ports[i].port);
		if (ret)
			return ret;
	}
	s->table_fd = vqf_hub_table_fd(s->hub);
	if (s->table_fd < 0)
		return s->table_fd;
	vqf_hub_table(s->hub, &vc->ver_table_size);
	s->nr_slots = vc->ver_table_size / sizeof(s64);
	vc->ver_table_fd = s->table_fd;
	vc->serve = vu_serve;
	vc->serve_ctx = &s->ports[0];
	vc->serve_reset = vu_serve_reset;
	return 0;
}

void vqf_vu_shm_guest(struct vqf_vu_shm *s, unsigned int i,
		      struct vqf_vhost_cfg *vc)
{
	if (s->ports && i < s->guests)
		vc->serve_ctx = &s->ports[i];
}

void vqf_vu_shm_print_hub(struct vqf_vu_shm *s, FILE *f)
{
	struct vqf_hub_stats h;

	if (!s->hub)
		return;
	vqf_hub_get_stats(s->hub, &h);
	if (s->vh_lock_on) {
		pthread_mutex_lock(&s->vh_lock);
		fprintf(f, "%s: windows: %llu shrinks and %llu growths seen, "
			"%llu ranges mapped again, %llu failed; %llu bumps "
			"for writable mappings (%llu of files not held)\n",
			vqf_cli_prog, s->shrinks, s->growths, s->eof_remaps,
			s->eof_errors, (unsigned long long)h.wmap_bumps,
			(unsigned long long)h.wmap_unknown);
		pthread_mutex_unlock(&s->vh_lock);
	}
	fprintf(f, "%s: hub: %u guests, %llu requests, %llu entry versions "
		"(%llu raced), %llu bumps, %llu host events (%llu bumps), "
		"%llu hostile\n",
		vqf_cli_prog, s->guests, (unsigned long long)h.requests,
		(unsigned long long)h.entryver_sent,
		(unsigned long long)h.entryver_raced,
		(unsigned long long)h.bumps,
		(unsigned long long)h.host_events,
		(unsigned long long)h.host_bumps,
		(unsigned long long)__atomic_load_n(&s->hostile_ctr,
						    __ATOMIC_RELAXED));
}

void vqf_vu_shm_print(const struct vqf_vu_shm *s, struct vqf_vhost *vh,
		      FILE *f)
{
	struct vqf_vhost_stats st;
	const struct vqf_fsdev_stats *d = &st.dev;

	if (!s->dax_window && !s->version_table)
		return;
	vqf_vhost_get_stats(vh, &st);
	fprintf(f, "%s: shmem: %llu starts served, %llu not (features "
		"or channel missing), %llu channels, %llu maps, %llu unmaps, "
		"%llu map refused, %llu unmap refused, %llu without channel, "
		"%llu breaks (%llu timeouts), table maps %llu (%llu INITs "
		"without it); acks "
		"%llu malformed, %llu mismatched, %llu unsolicited; %llu "
		"cancelled, %llu undo unmaps; channels refused %llu not "
		"socket, %llu not stream, %llu unconnected\n",
		vqf_cli_prog, (unsigned long long)st.shm_served,
		(unsigned long long)st.shm_unserved,
		(unsigned long long)st.shm.channels,
		(unsigned long long)st.shm.maps,
		(unsigned long long)st.shm.unmaps,
		(unsigned long long)st.shm.map_refused,
		(unsigned long long)st.shm.unmap_refused,
		(unsigned long long)st.shm.no_channel,
		(unsigned long long)st.shm.breaks,
		(unsigned long long)st.shm.timeouts,
		(unsigned long long)st.table_maps,
		(unsigned long long)st.table_unoffered,
		(unsigned long long)st.shm.acks_malformed,
		(unsigned long long)st.shm.acks_mismatched,
		(unsigned long long)st.shm.acks_unsolicited,
		(unsigned long long)st.shm.cancelled,
		(unsigned long long)st.shm.undo_unmaps,
		(unsigned long long)st.shm.chan_not_socket,
		(unsigned long long)st.shm.chan_not_stream,
		(unsigned long long)st.shm.chan_unconnected);
	if (!s->dax_window)
		return;
	fprintf(f, "%s: dax: %llu setups (%llu by nodeid, %llu "
		"replaced), %llu remove batches (%llu mappings), %llu "
		"refused, %llu bad fh, %llu map errors, %llu resets, "
		"%llu ranges mapped again at a size change (%llu failed), "
		"%llu attributes marked DAX\n",
		vqf_cli_prog, (unsigned long long)d->dax_setups,
		(unsigned long long)d->dax_by_nodeid,
		(unsigned long long)d->dax.replaced,
		(unsigned long long)d->dax_removes,
		(unsigned long long)d->dax.removes,
		(unsigned long long)d->dax_refused,
		(unsigned long long)d->dax_bad_fh,
		(unsigned long long)d->dax_mmap_errors,
		(unsigned long long)d->dax_resets,
		(unsigned long long)d->dax_eof_remaps,
		(unsigned long long)d->dax_eof_errors,
		(unsigned long long)d->dax_inode_marked);
}

void vqf_vu_shm_free(struct vqf_vu_shm *s)
{
	unsigned int i;

	free(s->hostile_path);
	s->hostile_path = NULL;
	if (!s->hub)
		return;		/* only the hub's table has a descriptor */
	for (i = 0; s->ports && i < s->guests; i++)
		if (s->ports[i].port)
			vqf_hub_port_free(s->ports[i].port);
	free(s->ports);
	s->ports = NULL;
	vqf_hub_free(s->hub);
	s->hub = NULL;
	if (s->vh_lock_on)
		pthread_mutex_destroy(&s->vh_lock);
	s->vh_lock_on = false;
	if (s->table_fd >= 0)
		close(s->table_fd);
	s->table_fd = -1;
}
