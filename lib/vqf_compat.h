/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_compat.h - the one place where lib/ meets its host environment.
 *
 * Every other file in lib/ includes only lib/ headers.  This header maps
 * types, byte order, barriers and atomics, errno values, memcpy/memset and a
 * debug assertion onto either the Linux kernel (__KERNEL__) or a C11 libc,
 * so that the same sources compile unchanged into a module and into
 * userspace.  The FUSE and virtio wire formats come from the uapi headers,
 * which both environments provide as <linux/...>.
 *
 * Userspace barriers follow liburing: kernel names over C11 atomics.  A
 * READ_ONCE()/WRITE_ONCE() is a relaxed atomic access, so a 16-bit ring index
 * is never torn or fused; smp_rmb()/smp_wmb() are acquire/release fences.
 */
#ifndef VQF_COMPAT_H
#define VQF_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/bug.h>
#include <linux/minmax.h>
#include <linux/atomic.h>
#include <asm/barrier.h>
#include <asm/byteorder.h>
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_fs.h>

#define VQF_WARN_ON(cond)	WARN_ON_ONCE(cond)

/*
 * 64-bit read-modify-write on plain memory (a counter in a caller-owned
 * stats struct, a slot in a shared table).  atomic64_t is { s64 counter; },
 * so the cast is layout-exact; 64-bit architectures only, where atomic64_*
 * are real instructions and therefore also atomic against another VM.
 */
static inline s64 vqf_atomic64_add_return(s64 *p, s64 v)
{
	/* Fully ordered, like every value-returning atomic. */
	return atomic64_add_return(v, (atomic64_t *)p);
}

static inline void vqf_stat_inc(u64 *p)
{
	/* Unordered: a statistic orders nothing. */
	atomic64_inc((atomic64_t *)p);
}

#else /* !__KERNEL__ */

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <errno.h>
#include <endian.h>
#include <assert.h>
#include <stdatomic.h>
#include <linux/types.h>
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_fs.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#ifndef PAGE_SIZE
#define PAGE_SIZE	4096UL
#endif

#define cpu_to_le16(x)	((__le16)htole16(x))
#define cpu_to_le32(x)	((__le32)htole32(x))
#define cpu_to_le64(x)	((__le64)htole64(x))
#define le16_to_cpu(x)	le16toh((__u16)(x))
#define le32_to_cpu(x)	le32toh((__u32)(x))
#define le64_to_cpu(x)	le64toh((__u64)(x))

#define READ_ONCE(var) \
	atomic_load_explicit((_Atomic __typeof__(var) *)&(var), \
			     memory_order_relaxed)
#define WRITE_ONCE(var, val) \
	atomic_store_explicit((_Atomic __typeof__(var) *)&(var), (val), \
			      memory_order_relaxed)
#define smp_load_acquire(p) \
	atomic_load_explicit((_Atomic __typeof__(*(p)) *)(p), \
			     memory_order_acquire)
#define smp_store_release(p, v) \
	atomic_store_explicit((_Atomic __typeof__(*(p)) *)(p), (v), \
			      memory_order_release)
#define smp_mb()	atomic_thread_fence(memory_order_seq_cst)
#define smp_rmb()	atomic_thread_fence(memory_order_acquire)
#define smp_wmb()	atomic_thread_fence(memory_order_release)
#define virt_mb()	smp_mb()
#define virt_rmb()	smp_rmb()
#define virt_wmb()	smp_wmb()

/*
 * Same contract as the kernel branch: fully ordered RMW, relaxed counter.
 * Wraps like the kernel's atomic64 (the atomic itself is defined to wrap;
 * the "+ v" is done unsigned so it does too).
 */
static inline s64 vqf_atomic64_add_return(s64 *p, s64 v)
{
	return (s64)((u64)atomic_fetch_add_explicit((_Atomic s64 *)p, v,
						    memory_order_seq_cst) +
		     (u64)v);
}

static inline void vqf_stat_inc(u64 *p)
{
	atomic_fetch_add_explicit((_Atomic u64 *)p, 1, memory_order_relaxed);
}

#ifdef VQF_DEBUG
#define VQF_WARN_ON(cond)	({ bool __c = !!(cond); assert(!__c); __c; })
#else
#define VQF_WARN_ON(cond)	(!!(cond))
#endif

#endif /* __KERNEL__ */

/* Environment-neutral helpers lib/ uses everywhere. */
#define VQF_MIN(a, b)		((a) < (b) ? (a) : (b))
#define VQF_MAX(a, b)		((a) > (b) ? (a) : (b))
#define VQF_ALIGN(x, a)		(((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define VQF_IS_ALIGNED(x, a)	(((x) & ((__typeof__(x))(a) - 1)) == 0)
#define VQF_IS_POW2(x)		((x) != 0 && ((x) & ((x) - 1)) == 0)

#endif /* VQF_COMPAT_H */
