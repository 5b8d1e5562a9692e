// SPDX-License-Identifier: GPL-2.0
/*
 * The TSC's rate, measured.  The kernel's tsc_khz comes from its boot-time
 * calibration, which a guest starved of CPU by a loaded host can get badly
 * wrong (a TCG guest on a busy host reported 171779 kHz for a 2.6 GHz TSC);
 * every cycle count kbench turns into time depends on it.  So kbench.ko
 * times the TSC against CLOCK_MONOTONIC_RAW over a few windows at load and
 * keeps the window whose two ends were read most tightly.
 */
#include <linux/irqflags.h>
#include <linux/delay.h>
#include <linux/math64.h>
#include <linux/timekeeping.h>

#include "kbench_core.h"

#define KBENCH_TSC_WINDOW_MS	40U
#define KBENCH_TSC_WINDOWS	5U

/* A TSC reading taken with the clock's: their midpoint, and the spread. */
static void kbench_tsc_stamp(u64 *tsc, u64 *ns, u64 *width)
{
	unsigned long flags;
	u64 before, after;

	local_irq_save(flags);
	before = kbench_cycles();
	*ns = ktime_get_raw_ns();
	after = kbench_cycles();
	local_irq_restore(flags);
	*tsc = before + (after - before) / 2;
	*width = after - before;
}

/*
 * kbench_tsc_measure_khz - TSC cycles per millisecond of CLOCK_MONOTONIC_RAW,
 * from the window of KBENCH_TSC_WINDOWS whose end readings were tightest;
 * 0 if no window could be timed.  Sleeps about 200 ms.
 */
unsigned int kbench_tsc_measure_khz(void)
{
	u64 best_width = U64_MAX, khz = 0;
	unsigned int i;

	for (i = 0; i < KBENCH_TSC_WINDOWS; i++) {
		u64 t0, t1, n0, n1, w0, w1;

		kbench_tsc_stamp(&t0, &n0, &w0);
		msleep(KBENCH_TSC_WINDOW_MS);
		kbench_tsc_stamp(&t1, &n1, &w1);
		if (n1 <= n0 || t1 <= t0 || w0 + w1 >= best_width)
			continue;
		best_width = w0 + w1;
		khz = div64_u64((t1 - t0) * NSEC_PER_MSEC, n1 - n0);
	}
	return khz > U32_MAX ? 0 : khz;
}
