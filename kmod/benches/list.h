/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The built-in benchmarks, one line each: KBENCH_BUILTIN(name); for
 * benches/<name>.c, which defines struct kbench kbench_<name>.  Kbuild
 * builds the files named here, core/main.c registers them in this order,
 * and kbench reads each one's name, description and parameters from its
 * file.  The includer defines KBENCH_BUILTIN.
 */
KBENCH_BUILTIN(empty);
KBENCH_BUILTIN(ktime_get);
KBENCH_BUILTIN(get_random_u32);
KBENCH_BUILTIN(spin_lock);
KBENCH_BUILTIN(rcu_read_lock);
KBENCH_BUILTIN(kmalloc);
KBENCH_BUILTIN(memcpy);
KBENCH_BUILTIN(crc32c);
KBENCH_BUILTIN(jhash);
KBENCH_BUILTIN(fib4_lookup);
KBENCH_BUILTIN(fib6_lookup);
KBENCH_BUILTIN(trace_overhead);
KBENCH_BUILTIN(probe_target);
KBENCH_BUILTIN(spin);
/* Add a new benchmark here. */
