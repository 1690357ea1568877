/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vring_hg.h - tell helgrind about the ring's lock-free hand-offs.
 *
 * Helgrind knows pthread primitives, not C11 fences, so without help it
 * reports every descriptor and buffer hand-off as a race.  The publishing
 * side marks "happens before" on the index it is about to store, the
 * consuming side "happens after" once its acquire fence has run.  Fields
 * that are racy by design (indices, flags, event indices: each read may see
 * an old value and the protocol copes) are excluded from checking.  Outside
 * valgrind each annotation is a dozen no-op instructions, so the fast
 * paths skip them unless vqf_hg_running() said so when the queue was made.
 */
#ifndef VRING_HG_H
#define VRING_HG_H

#if defined(__has_include)
#if __has_include("valgrind/helgrind.h")
#include <valgrind/helgrind.h>
#define VQF_HG 1
#endif
#endif

#ifdef VQF_HG
#define vqf_hg_before(p)	ANNOTATE_HAPPENS_BEFORE(p)
#define vqf_hg_after(p)		ANNOTATE_HAPPENS_AFTER(p)
#define vqf_hg_racy(p, len)	VALGRIND_HG_DISABLE_CHECKING(p, len)
#define vqf_hg_running()	(RUNNING_ON_VALGRIND != 0)
#else
#define vqf_hg_before(p)	do { } while (0)
#define vqf_hg_after(p)		do { } while (0)
#define vqf_hg_racy(p, len)	do { } while (0)
#define vqf_hg_running()	false
#endif

#endif /* VRING_HG_H */
