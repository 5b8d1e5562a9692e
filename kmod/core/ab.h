/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interface of A/B runs (core/ab.c) and their files
 * (core/ab_sysfs.c, /sys/kernel/kbench/ab/).
 */
#ifndef _KBENCH_AB_H
#define _KBENCH_AB_H

#include <linux/types.h>

#include "kbench_core.h"

#define KBENCH_AB_SIDES_MAX		16U
#define KBENCH_AB_LINE_MAX		256	/* a side's line, with the NUL */
#define KBENCH_AB_BLOCKS_MAX		1000000U
#define KBENCH_AB_SLOT_SAMPLES_MAX	65536U
#define KBENCH_AB_WARMUP_MAX		1000U
/* Recorded samples of one run: 64 MiB of records at most. */
#define KBENCH_AB_RECORDS_MAX		(4U << 20)
/* No slot may take longer (checked for each side before the first block). */
#define KBENCH_AB_SLOT_MAX_US		10000U

/* One recorded sample, as `ab/samples` gives it (docs/sysfs-ABI.md). */
struct kbench_ab_record {
	u64 cycles;		/* the sample: batch calls of one side */
	u32 slot;		/* recorded slot, 0-based; block = slot / (2 k) */
	u16 side;		/* line of `sides`, 0-based */
	u16 flags;		/* KBENCH_AB_F_* */
};

/* The CPU took an interrupt or NMI during the sample (or just after it). */
#define KBENCH_AB_F_IRQ		BIT(0)
/* The thread was switched out (preempted, or it slept or migrated). */
#define KBENCH_AB_F_SWITCH	BIT(1)

/* What /sys/kernel/kbench/ab/ is set to; a run works on a copy. */
struct kbench_ab_config {
	unsigned int nr_sides;
	char lines[KBENCH_AB_SIDES_MAX][KBENCH_AB_LINE_MAX];
	u32 blocks;
	u32 slot_samples;
	u32 batch;
	u32 warmup;
	int cpu;
	u64 order_seed;
};

struct kbench_ab_side_result {
	char bench[KBENCH_AB_LINE_MAX];
	u32 count;		/* recorded samples */
	u32 disturbed;		/* of them, flagged */
	u64 overhead;		/* median empty region, cycles */
};

/* The last run, kept until the next one or unload. */
struct kbench_ab_result {
	enum kbench_result result;
	int error;
	int failed_side;	/* the side whose setup or check failed, or -1 */
	struct kbench_ab_record *records;
	u32 nr_records;
	u32 blocks;		/* complete recorded blocks */
	u32 slots;		/* recorded slots, the last one maybe cut short */
	u32 disturbed_slots;
	u32 batch;
	u32 slot_samples;
	unsigned int nr_sides;
	struct kbench_ab_side_result sides[KBENCH_AB_SIDES_MAX];
};

int kbench_ab_check_line(const char *line, char *canonical, size_t size);
ssize_t kbench_ab_run(const struct kbench_ab_config *cfg,
		      struct kbench_ab_result *res, const bool *dying,
		      char *buf);

#endif /* _KBENCH_AB_H */
