/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The built-in benchmarks, one per file in this directory.  To add one,
 * write benches/<name>.c defining struct kbench kbench_<name>, declare it
 * here, add it to kbench-y in Kbuild and to the table in core/main.c.
 */
#ifndef _KBENCH_BENCHES_H
#define _KBENCH_BENCHES_H

#include "kbench.h"

extern struct kbench kbench_empty;
extern struct kbench kbench_ktime_get;
extern struct kbench kbench_get_random_u32;
extern struct kbench kbench_spin_lock;
extern struct kbench kbench_rcu_read_lock;
extern struct kbench kbench_kmalloc;
extern struct kbench kbench_memcpy;
extern struct kbench kbench_crc32c;
extern struct kbench kbench_jhash;
extern struct kbench kbench_fib4_lookup;
extern struct kbench kbench_fib6_lookup;
extern struct kbench kbench_trace_overhead;
extern struct kbench kbench_probe_target_bench;
extern struct kbench kbench_spin;

/* The empty function probe_target calls (benches/probe_target.c). */
void kbench_probe_target(void);

#endif /* _KBENCH_BENCHES_H */
