/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of kbench.ko's core (registry, sysfs, runs, stats).
 */
#ifndef _KBENCH_CORE_H
#define _KBENCH_CORE_H

#include <linux/cpumask.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "kbench.h"
#include "counters.h"

#define KBENCH_VERSION			"1"

#define KBENCH_LOOP_COUNT_MAX		10000000U
#define KBENCH_WARMUP_MAX		10000000U
#define KBENCH_BATCH_MAX		1000000U
#define KBENCH_DATASET_MAX		BIT(20)
/* (warmup + loop_count) * batch may not exceed this many calls per CPU. */
#define KBENCH_CALLS_MAX		1000000000ULL
/* Empty timed regions measured at the start of every run (per CPU). */
#define KBENCH_OVERHEAD_PAIRS		4096U
/* Irqs/preemption are re-enabled at least this often (microseconds). */
#define KBENCH_CHUNK_US			1000U
/* A single sample may not take longer than this with irqs/preempt off. */
#define KBENCH_ATOMIC_SAMPLE_MAX_US	10000U
/* How long the CPUs of a parallel run wait for each other (ms). */
#define KBENCH_BARRIER_TIMEOUT_MS	5000U
#define KBENCH_REPORT_LEN		96

/* The common knobs of a benchmark, copied at the start of each run. */
struct kbench_config {
	u32 loop_count;
	u32 warmup;
	u32 batch;
	int cpu;
	bool irqs_off;
	bool preempt_off;
	bool histogram;
	u32 dataset_size;
	u64 seed;
	bool counters;		/* perf events around the recorded loop */
	bool cpus_all;		/* parallel runs use every online CPU */
	struct cpumask cpus;	/* otherwise these */
};

enum kbench_result {
	KBENCH_RESULT_NONE,
	KBENCH_RESULT_OK,
	KBENCH_RESULT_INTERRUPTED,
	KBENCH_RESULT_ERROR,
};

/* Where one CPU's samples sit in the samples buffer of the last run. */
struct kbench_segment {
	int cpu;
	u32 offset;
	u32 count;
	u64 overhead;
};

struct kbench_param_attr {
	struct kobj_attribute attr;
	struct kbench_param *param;
};

struct kbench_entry {
	struct kobject kobj;		/* /sys/kernel/kbench/<name> */
	struct kbench *bench;
	/* kbench_register_suffixed(): the name it gave, and the bench's own. */
	char *suffixed_name;
	const char *own_name;
	struct list_head node;		/* in kbench_list */
	struct kbench_param_attr *param_attrs;
	bool dying;			/* being unregistered: abort runs */

	/* Serialises runs: a second concurrent run gets -EBUSY. */
	struct mutex run_lock;

	/* Protects everything below; never held across a run. */
	struct mutex lock;
	bool running;
	struct kbench_config cfg;
	/* The last run. */
	u32 last_run;			/* its number since load (0: none yet) */
	enum kbench_result result;
	int error;
	bool parallel;
	u64 *samples;			/* raw per-sample cycles, in order */
	u32 nr_samples;
	u32 batch;
	u64 overhead;			/* per-sample cycles, median */
	struct kbench_segment *segments;
	unsigned int nr_segments;
	struct kbench_counts counts;	/* of every CPU, when it counted */
	/* The run in progress, for samples_live (NULL between runs). */
	struct kbench_run *live;
};

/* Summary of n raw samples (cycles per sample). */
struct kbench_stats {
	u64 min;
	u64 max;
	u64 p50;
	u64 p90;
	u64 p95;
	u64 p99;
	u64 mad;
	u32 count;
};

/* main.c */
extern struct kobject *kbench_root;
extern unsigned int kbench_tsc_khz;
extern unsigned int kbench_tsc_khz_kernel;

/* tsc.c */
unsigned int kbench_tsc_measure_khz(void);
struct kbench_entry *kbench_entry_get(const char *name);
void kbench_entry_put(struct kbench_entry *e);

/* sysfs.c */
int kbench_sysfs_add(struct kbench_entry *e);
void kbench_sysfs_del(struct kbench_entry *e);
extern const struct kobj_type kbench_entry_ktype;
int kbench_parse_s64(const char *buf, s64 min, s64 max, s64 *val);
int kbench_parse_u64(const char *buf, u64 min, u64 max, u64 *val);
int kbench_check_cpu(s64 cpu);
int kbench_param_parse(const struct kbench_param *p, const char *buf,
		       union kbench_param_value *val);

/* ab_sysfs.c: /sys/kernel/kbench/ab/, the A/B runs of core/ab.c. */
int kbench_ab_init(struct kobject *root);
void kbench_ab_exit(void);

/* run.c */
struct kbench_run;
ssize_t kbench_run(struct kbench_entry *e, bool parallel, char *buf);
ssize_t kbench_live_read(struct kbench_entry *e, char *buf, loff_t pos,
			 size_t count);

/* stats.c */
u64 kbench_select(u64 *v, size_t n, size_t k);
size_t kbench_rank(size_t n, unsigned int percent);
void kbench_summarize(const u64 *v, size_t n, u64 *scratch,
		      struct kbench_stats *st);
int kbench_format_stats(char *buf, size_t size, const struct kbench_stats *st,
			u32 batch, u64 overhead);
int kbench_format_histogram(char *buf, size_t size, const u64 *v, size_t n,
			    const struct kbench_stats *st, u32 batch);

#endif /* _KBENCH_CORE_H */
