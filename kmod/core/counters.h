/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Perf event counters of the measuring kthreads (core/counters.c), and
 * their text in sysfs (`counter_values`, `ab/counter_values`).
 */
#ifndef _KBENCH_COUNTERS_H
#define _KBENCH_COUNTERS_H

#include <linux/stddef.h>
#include <linux/types.h>

struct perf_event;

/* task-clock .. page-faults (software), cycles .. cache-misses (hardware). */
#define KBENCH_NR_EVENTS	10

/* One set of events, counting one task (the thread that made them). */
struct kbench_counters {
	struct perf_event *event[KBENCH_NR_EVENTS];	/* NULL: not made */
	int error[KBENCH_NR_EVENTS];	/* why not (negative errno), or 0 */
};

/* What one or more sets counted (their sums), as sysfs prints it. */
struct kbench_counts {
	bool counted;		/* the last run counted (its `counters` was 1) */
	unsigned int sets;	/* the sets summed: CPUs of the run, or 1 */
	int error[KBENCH_NR_EVENTS];
	u64 value[KBENCH_NR_EVENTS];
	u64 enabled_ns[KBENCH_NR_EVENTS];
	u64 running_ns[KBENCH_NR_EVENTS];
};

void kbench_counters_create(struct kbench_counters *c);
void kbench_counters_enable(struct kbench_counters *c);
void kbench_counters_disable(struct kbench_counters *c);
void kbench_counters_add(struct kbench_counters *c, struct kbench_counts *sum);
void kbench_counters_release(struct kbench_counters *c);
void kbench_counts_merge(struct kbench_counts *sum,
			 const struct kbench_counts *part);
int kbench_counts_format(char *buf, size_t size, const struct kbench_counts *c,
			 const char *prefix);

#endif /* _KBENCH_COUNTERS_H */
