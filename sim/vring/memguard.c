// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memguard.c - SIGBUS recovery points and zero-page fallback (see
 * vqf_memguard.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vqf_memguard.h"

static _Thread_local struct vqf_memguard *mg_cur;
static atomic_uint_fast64_t mg_recovered, mg_zero_filled;
static uintptr_t mg_page;
static int mg_err;

static void mg_handler(int sig, siginfo_t *si, void *uc)
{
	struct vqf_memguard *g = mg_cur;
	struct sigaction dfl;
	void *page;

	(void)sig;
	(void)uc;
	if (g) {
		mg_cur = g->prev;
		atomic_fetch_add(&mg_recovered, 1);
		/* SA_NODEFER: SIGBUS is not blocked, nothing to restore. */
		siglongjmp(g->env, 1);
	}
	page = (void *)((uintptr_t)si->si_addr & ~(mg_page - 1));
	if (si->si_code == BUS_ADRERR && page &&
	    mmap(page, mg_page, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
		atomic_fetch_add(&mg_zero_filled, 1);
		return;
	}
	/* Not a truncated mapping: the access faults again and kills. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGBUS, &dfl, NULL);
}

static void mg_install_once(void)
{
	struct sigaction sa;

	mg_page = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (sigaction(SIGBUS, NULL, &sa) == 0 &&
	    (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == mg_handler)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mg_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		mg_err = -errno;
}

/*
 * Every call checks that the handler is still ours: a test harness
 * (cmocka) installs its own SIGBUS handler around each test.
 */
int vqf_memguard_install(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&lock);
	mg_install_once();
	pthread_mutex_unlock(&lock);
	return mg_err;
}

void vqf_memguard_enter(struct vqf_memguard *g)
{
	g->prev = mg_cur;
	/* The handler may read mg_cur at any instruction after this. */
	atomic_signal_fence(memory_order_seq_cst);
	mg_cur = g;
	atomic_signal_fence(memory_order_seq_cst);
}

void vqf_memguard_leave(struct vqf_memguard *g)
{
	atomic_signal_fence(memory_order_seq_cst);
	mg_cur = g->prev;
	atomic_signal_fence(memory_order_seq_cst);
}

int vqf_memguard_seal(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return -errno;
	if (seals & F_SEAL_SHRINK)
		return 0;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	return 0;
}

void vqf_memguard_stats(struct vqf_memguard_stats *out)
{
	out->recovered = atomic_load(&mg_recovered);
	out->zero_filled = atomic_load(&mg_zero_filled);
}
