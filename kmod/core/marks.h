/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Marks of the timed regions for an instruction-counting emulator: kbench's
 * qemu TCG plugin (native/qemu-plugin/icount.c, docs/instructions.md) counts
 * the instructions a vCPU executes between a start and a stop mark.
 *
 * A mark is a multi-byte NOP, `nopl disp32(%rax)`, whose displacement is
 * 0x4b42_00_OP ("KB" in its high bytes): it touches no memory, needs no
 * privilege, causes no exit under KVM and costs next to nothing on real
 * hardware, so it stays in every run; only a plugin that looks at the
 * instruction bytes as it translates them sees it.  An I/O port write would
 * be a VM exit under KVM inside the timed region and is invisible to a qemu
 * plugin (the API sees instructions and memory, not port I/O); a hypercall
 * faults on bare metal and under TCG and is a VM exit under KVM.
 */
#ifndef _KBENCH_MARKS_H
#define _KBENCH_MARKS_H

#include <linux/compiler.h>

#define KBENCH_MARK_ARM		1	/* regions count from here (a recorded loop) */
#define KBENCH_MARK_DISARM	2	/* the recorded loop ended */
#define KBENCH_MARK_START	3	/* a timed region begins */
#define KBENCH_MARK_STOP	4	/* and ends */

/* @op must be a constant: the mark is an immediate of the instruction. */
static __always_inline void kbench_mark(const unsigned int op)
{
#ifdef CONFIG_X86_64
	asm volatile(".byte 0x0f, 0x1f, 0x80\n\t.long 0x4b420000 + %c0"
		     : : "i" (op) : "memory");
#else
	barrier();
#endif
}

#endif /* _KBENCH_MARKS_H */
