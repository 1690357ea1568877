/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The guest of shmem-fault.py: a multiboot image (QEMU's -kernel loads
 * it; 32-bit protected mode, flat segments, no paging, so an address is
 * a physical address) that makes the loads and stores the host asks for
 * through a mailbox in guest RAM, which the host maps from the RAM's
 * backing file:
 *
 *   MBOX +0  seq      the host bumps it once op, addr and value are set
 *        +4  op       1: load 32 bits from addr, 2: store value at addr
 *        +8  addr
 *        +12 value
 *        +16 done     the guest sets it to seq once the access returned
 *        +20 result   what the load read
 *        +24 beat     bumped on every turn of the loop: the guest runs
 *
 * Build: cc -m32 -nostdlib -static -no-pie -Wl,-N -Wl,-Ttext=0x100000
 */
	.set MBOX, 0x300000

	.code32
	.text
	.align 4
	/* multiboot v1 header: an ELF image needs no address fields */
	.long 0x1BADB002
	.long 0
	.long -0x1BADB002

	.globl _start
_start:
	cli
	mov $MBOX, %ebp
1:	incl 24(%ebp)
	mov 0(%ebp), %eax
	cmp 16(%ebp), %eax
	je 1b
	mov 4(%ebp), %ebx
	mov 8(%ebp), %esi
	cmp $1, %ebx
	jne 2f
	mov (%esi), %ecx
	mov %ecx, 20(%ebp)
	jmp 3f
2:	cmp $2, %ebx
	jne 3f
	mov 12(%ebp), %ecx
	mov %ecx, (%esi)
3:	mov %eax, 16(%ebp)
	jmp 1b
