/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_trace.h - every request's life as Chrome trace-event JSON.
 *
 * The driver and the device report what happens to a request (by its
 * unique); at the end the events are written as JSON that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.  Each request is one async
 * slice named after its opcode, from QUEUED to COMPLETED, with the stages
 * nested in it:
 *
 *   pending   QUEUED  -> ADDED    waiting for ring space (pending list)
 *   ring      ADDED   -> POPPED   on the available ring
 *   device    POPPED  -> PUSHED   parsed, served by the backend, replied
 *   reply     PUSHED  -> COMPLETED  used ring to validated completion
 *
 * KICKED and INTERRUPTED are instants on the request.  Events are kept in
 * memory (24 bytes each) until vqf_trace_close(); recording is a mutex and
 * an append, from any thread.
 */
#ifndef VQF_TRACE_H
#define VQF_TRACE_H

#include <stdint.h>

enum vqf_trace_ev {
	VQF_T_QUEUED,		/* driver: submitted */
	VQF_T_ADDED,		/* driver: published on the ring */
	VQF_T_KICKED,		/* driver: the queue was notified */
	VQF_T_POPPED,		/* device: chain taken off the ring */
	VQF_T_PUSHED,		/* device: used entry published */
	VQF_T_INTERRUPTED,	/* driver: INTERRUPT sent for it */
	VQF_T_COMPLETED,	/* driver: reply validated, caller woken */
	VQF_T_NR
};

struct vqf_trace;

/* Starts recording into @path (written at close; NULL: kept in memory
 * for vqf_trace_stages() only).  0 or -errno.
 */
int vqf_trace_open(const char *path, struct vqf_trace **out);
/* Records @ev for request @unique (@opcode, virtqueue @queue) now. */
void vqf_trace_event(struct vqf_trace *t, enum vqf_trace_ev ev,
		     uint64_t unique, uint32_t opcode, unsigned int queue);
/* Writes the JSON and frees @t.  0, or -errno if the file could not be
 * written (@t is freed either way).  NULL is a no-op.
 */
int vqf_trace_close(struct vqf_trace *t);
/* Mean time per stage over the requests seen from QUEUED to COMPLETED. */
struct vqf_trace_stages {
	uint64_t requests;	/* complete lives (unique 0 not counted) */
	double pending_ns, ring_ns, device_ns, reply_ns;
	double total_ns;	/* QUEUED -> COMPLETED */
};

/*
 * Sums the stages of every complete request of @opcode (0: of any) so
 * far.  Not while events are still being recorded (it sorts them in
 * place).  0, or -ENODATA when no such request went through every stage.
 */
int vqf_trace_stages(struct vqf_trace *t, uint32_t opcode,
		     struct vqf_trace_stages *out);

/* Events recorded so far. */
uint64_t vqf_trace_count(struct vqf_trace *t);

#endif /* VQF_TRACE_H */
