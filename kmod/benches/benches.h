/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The built-in benchmarks, one per file in this directory.  To add one,
 * write benches/<name>.c defining struct kbench kbench_<name> and add
 * KBENCH_BUILTIN(<name>); to benches/list.h.
 */
#ifndef _KBENCH_BENCHES_H
#define _KBENCH_BENCHES_H

#include "kbench.h"

#define KBENCH_BUILTIN(name) extern struct kbench kbench_##name
#include "list.h"
#undef KBENCH_BUILTIN

/* The empty function probe_target calls (benches/probe_target.c). */
void kbench_probe_target_fn(void);

#endif /* _KBENCH_BENCHES_H */
