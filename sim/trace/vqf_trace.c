// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_trace.c - Chrome trace-event JSON of request lifecycles (see
 * vqf_trace.h).  Events are appended as they come; at close they are
 * sorted by request and time and written as nested async slices (ph "b"
 * / "e", one id per request) so that each request is one track in
 * Perfetto.
 */
#define _GNU_SOURCE
#include "vqf_trace.h"
#include "vqf_fuse_ops.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tev {
	uint64_t ns;
	uint64_t unique;
	uint32_t opcode;
	uint16_t queue;
	uint8_t ev;
	uint8_t pad;
	uint32_t tid;
};

struct vqf_trace {
	FILE *f;
	pthread_mutex_t lock;
	struct tev *v;
	uint64_t n, cap;
	uint64_t t0;
	int err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int vqf_trace_open(const char *path, struct vqf_trace **out)
{
	struct vqf_trace *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	/* Opened now: a bad path is an error before the run, not after. */
	t->f = path ? fopen(path, "w") : NULL;
	if (path && !t->f) {
		int err = -errno;

		free(t);
		return err;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->t0 = now_ns();
	*out = t;
	return 0;
}

/* gettid() is a system call each time: once per thread is enough. */
static uint32_t my_tid(void)
{
	static __thread uint32_t tid;

	if (!tid)
		tid = (uint32_t)gettid();
	return tid;
}

void vqf_trace_event(struct vqf_trace *t, enum vqf_trace_ev ev,
		     uint64_t unique, uint32_t opcode, unsigned int queue)
{
	struct tev e = { .ns = now_ns(), .unique = unique, .opcode = opcode,
			 .queue = (uint16_t)queue, .ev = (uint8_t)ev,
			 .tid = my_tid() };

	if (!t || ev >= VQF_T_NR)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->n == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 4096;
		struct tev *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			t->err = -ENOMEM;	/* keep what we have */
			pthread_mutex_unlock(&t->lock);
			return;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = e;
	pthread_mutex_unlock(&t->lock);
}

uint64_t vqf_trace_count(struct vqf_trace *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->n;
	pthread_mutex_unlock(&t->lock);
	return n;
}

static int by_request(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;

	if (x->unique != y->unique)
		return x->unique < y->unique ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* The stage a request enters at @ev, NULL if @ev starts none. */
static const char *stage_of(uint8_t ev)
{
	switch (ev) {
	case VQF_T_QUEUED:
		return "pending";
	case VQF_T_ADDED:
		return "ring";
	case VQF_T_POPPED:
		return "device";
	case VQF_T_PUSHED:
		return "reply";
	default:
		return NULL;
	}
}

static const char *op_name(uint32_t opcode, char *buf, size_t len)
{
	const struct vqf_fuse_op *op = vqf_fuse_op(opcode);

	if (op && op->name)
		return op->name;
	snprintf(buf, len, "op%u", opcode);
	return buf;
}

struct writer {
	FILE *f;
	uint64_t t0;
	bool first;
};

static void emit(struct writer *w, const char *ph, const char *name,
		 const char *cat, const struct tev *e, bool args)
{
	double us = (double)(e->ns - w->t0) / 1000.0;

	fprintf(w->f, "%s\n{\"ph\":\"%s\",\"name\":\"%s\",\"cat\":\"%s\","
		"\"id\":\"0x%llx\",\"ts\":%.3f,\"pid\":1,\"tid\":%u",
		w->first ? "" : ",", ph, name, cat,
		(unsigned long long)e->unique, us, e->tid);
	if (!strcmp(ph, "n"))
		fprintf(w->f, ",\"s\":\"t\"");
	if (args)
		fprintf(w->f, ",\"args\":{\"unique\":%llu,\"queue\":%u}",
			(unsigned long long)e->unique, e->queue);
	fputc('}', w->f);
	w->first = false;
}

/* One request's events, sorted by time: its slice and its stages. */
static void write_request(struct writer *w, const struct tev *v, uint64_t n)
{
	const char *open_stage = NULL;
	char buf[16];
	const char *name = op_name(v[0].opcode, buf, sizeof(buf));
	const struct tev *last = &v[n - 1];
	uint64_t i;

	emit(w, "b", name, "request", &v[0], true);
	for (i = 0; i < n; i++) {
		const struct tev *e = &v[i];
		const char *st = stage_of(e->ev);

		if (e->ev == VQF_T_KICKED || e->ev == VQF_T_INTERRUPTED) {
			emit(w, "n", e->ev == VQF_T_KICKED ? "kicked" :
			     "interrupted", "request", e, false);
			continue;
		}
		if (st || e->ev == VQF_T_COMPLETED) {
			if (open_stage)
				emit(w, "e", open_stage, "stage", e, false);
			open_stage = st;
			if (st)
				emit(w, "b", st, "stage", e, e->ev ==
				     VQF_T_ADDED || e->ev == VQF_T_POPPED);
		}
	}
	/* A request that never completed (shutdown) ends at its last
	 * event, so every slice is closed.
	 */
	if (open_stage)
		emit(w, "e", open_stage, "stage", last, false);
	emit(w, "e", name, "request", last, false);
}

/* The time of each of @n events of one request, by event; 0: absent. */
static void times_of(const struct tev *v, uint64_t n, uint64_t *at)
{
	memset(at, 0, VQF_T_NR * sizeof(*at));
	for (uint64_t i = 0; i < n; i++)
		if (!at[v[i].ev])
			at[v[i].ev] = v[i].ns;
}

int vqf_trace_stages(struct vqf_trace *t, uint32_t opcode,
		     struct vqf_trace_stages *out)
{
	uint64_t at[VQF_T_NR], i, j, sum[5] = { 0 };

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&t->lock);
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), by_request);
	for (i = 0; i < t->n; i = j) {
		for (j = i + 1; j < t->n && t->v[j].unique == t->v[i].unique;
		     j++)
			;
		if (!t->v[i].unique || (opcode && t->v[i].opcode != opcode))
			continue;
		times_of(&t->v[i], j - i, at);
		if (!at[VQF_T_QUEUED] || !at[VQF_T_ADDED] ||
		    !at[VQF_T_POPPED] || !at[VQF_T_PUSHED] ||
		    !at[VQF_T_COMPLETED])
			continue;
		sum[0] += at[VQF_T_ADDED] - at[VQF_T_QUEUED];
		sum[1] += at[VQF_T_POPPED] - at[VQF_T_ADDED];
		sum[2] += at[VQF_T_PUSHED] - at[VQF_T_POPPED];
		sum[3] += at[VQF_T_COMPLETED] - at[VQF_T_PUSHED];
		sum[4] += at[VQF_T_COMPLETED] - at[VQF_T_QUEUED];
		out->requests++;
	}
	pthread_mutex_unlock(&t->lock);
	if (!out->requests)
		return -ENODATA;
	out->pending_ns = (double)sum[0] / out->requests;
	out->ring_ns = (double)sum[1] / out->requests;
	out->device_ns = (double)sum[2] / out->requests;
	out->reply_ns = (double)sum[3] / out->requests;
	out->total_ns = (double)sum[4] / out->requests;
	return 0;
}

int vqf_trace_close(struct vqf_trace *t)
{
	struct writer w;
	uint64_t i, j;
	int ret;

	if (!t)
		return 0;
	if (!t->f) {
		ret = t->err;
		goto out;
	}
	qsort(t->v, t->n, sizeof(*t->v), by_request);
	w.f = t->f;
	w.t0 = t->t0;
	w.first = true;
	fprintf(t->f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	for (i = 0; i < t->n; i = j) {
		for (j = i + 1; j < t->n && t->v[j].unique == t->v[i].unique;
		     j++)
			;
		/* Unique 0 is no request (a FORGET carries none here). */
		if (t->v[i].unique)
			write_request(&w, &t->v[i], j - i);
	}
	fprintf(t->f, "\n]}\n");
	ret = ferror(t->f) ? -EIO : 0;
	if (fclose(t->f) && !ret)
		ret = -errno;
	if (!ret)
		ret = t->err;
out:
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
	return ret;
}
