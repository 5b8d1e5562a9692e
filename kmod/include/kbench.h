/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kbench.h - benchmark API of kbench.ko
 *
 * A benchmark is a struct kbench: a name, a description, its own
 * parameters, and three callbacks.  The core (kbench.ko) owns everything
 * else: sysfs (/sys/kernel/kbench/<name>/), the timing loop, the sample
 * buffers, the overhead measurement, interrupt/preemption control, signals
 * and per-CPU synchronised starts.  A benchmark knows nothing of sysfs.
 *
 * Built-in benchmarks live in kmod/benches/ and are listed in one table;
 * another module registers its own with kbench_register() and must call
 * kbench_unregister() before it is unloaded.
 *
 * The second half of this header is the tracepoint API: keyed START/STOP
 * regions anywhere in kernel code, logged into kbench.ko's log buffer.
 */
#ifndef _KBENCH_H
#define _KBENCH_H

#include <linux/types.h>
#include <linux/in6.h>
#include <linux/ktime.h>

#ifdef CONFIG_X86
#include <asm/msr.h>
#endif

struct module;

#define KBENCH_API_VERSION	1

enum kbench_param_type {
	KBENCH_PARAM_U64,		/* decimal or 0x hex, in [min, max] */
	KBENCH_PARAM_IPV4_PREFIX,	/* "a.b.c.d" or "a.b.c.d/len" */
	KBENCH_PARAM_IPV6_PREFIX,	/* "x:y::z" or "x:y::z/len" */
};

struct kbench_ipv4_prefix {
	__be32 addr;
	u8 plen;
};

struct kbench_ipv6_prefix {
	struct in6_addr addr;
	u8 plen;
};

union kbench_param_value {
	u64 u64;
	struct kbench_ipv4_prefix ipv4;
	struct kbench_ipv6_prefix ipv6;
};

/*
 * One benchmark parameter, shown as /sys/kernel/kbench/<bench>/<name>.
 * The bench initialises @value with its default and reads it in setup()
 * only, never in call(), report() or teardown(): in an A/B run
 * (/sys/kernel/kbench/ab/) several sides of one benchmark run in one
 * thread, and the core gives each side's setup() that side's values,
 * restoring the attribute's own value afterwards.  Keep what call() needs
 * in ctx->priv.  The core writes @value only while no run of this
 * benchmark is in progress.
 */
struct kbench_param {
	const char *name;
	const char *description;
	enum kbench_param_type type;
	u64 min;			/* KBENCH_PARAM_U64 only */
	u64 max;			/* KBENCH_PARAM_U64 only */
	union kbench_param_value value;
};

/*
 * What a benchmark sees of one measuring thread.  In a parallel run every
 * CPU has its own context (and its own @priv).
 */
struct kbench_ctx {
	/*
	 * dataset_size pseudo-random values from the LCG seeded by the
	 * `seed` attribute; identical for the same seed and size.
	 */
	const u32 *dataset;
	u32 dataset_size;
	int cpu;		/* CPU the thread is bound to, -1 if unbound */
	unsigned int worker;	/* index of this thread in the run */
	bool atomic;		/* calls run with irqs or preemption off */
	void *priv;		/* the benchmark's own state, set by setup() */
	/*
	 * The side of an A/B run this context belongs to (0 in any other
	 * run): every side has a context, a dataset and a setup() of its own.
	 */
	unsigned int side;
};

/* The benchmark must never be run with interrupts disabled. */
#define KBENCH_F_NO_IRQS_OFF	BIT(0)

struct kbench {
	const char *name;		/* [a-z0-9_]+, unique */
	const char *description;	/* one line */
	struct kbench_param *params;
	unsigned int nr_params;
	unsigned int flags;		/* KBENCH_F_* */
	/* Prepare inputs (may sleep, may fail); untimed. Optional. */
	int (*setup)(struct kbench_ctx *ctx);
	/*
	 * The timed call.  @i is an index into ctx->dataset (and into any
	 * per-dataset table setup() built): it walks the dataset in order,
	 * wrapping, one step per call.  Must not sleep when ctx->atomic.
	 */
	void (*call)(struct kbench_ctx *ctx, u32 i);
	/*
	 * Append " key=value" facts about the run (e.g. lookup hits) to
	 * @buf; called after the last sample, before teardown().  Optional.
	 */
	int (*report)(struct kbench_ctx *ctx, char *buf, size_t size);
	/* Undo setup(); called whenever setup() succeeded.  Optional. */
	void (*teardown)(struct kbench_ctx *ctx);
	struct module *owner;
};

int kbench_register(struct kbench *bench);
void kbench_unregister(struct kbench *bench);

/*
 * kbench_register() under the benchmark's name followed by @suffix.  A module
 * built with -DKBENCH_NAME_SUFFIX='"_new"' registers every benchmark this
 * way: kbench builds two versions of one module like that, so that both load
 * at once and an A/B run can alternate them (`kbench compare --module old.c
 * --module new.c`).
 */
int kbench_register_suffixed(struct kbench *bench, const char *suffix);
#ifdef KBENCH_NAME_SUFFIX
#define kbench_register(bench) kbench_register_suffixed(bench, KBENCH_NAME_SUFFIX)
#endif

/*
 * A memory area cut into blocks, for benchmarks that read or copy memory:
 * the call for dataset index i uses block kbench_area_block(area, i), so
 * consecutive calls touch different, randomly placed cache lines.  The
 * area holds min(dataset_size, KBENCH_AREA_MAX / stride) blocks of
 * @block bytes (stride = block rounded up to a cache line), filled with
 * pseudo-random bytes.
 */
#define KBENCH_AREA_MAX		(16U << 20)

struct kbench_area {
	u8 *base;
	u32 *offset;		/* per dataset index: byte offset of its block */
	size_t size;
};

int kbench_area_alloc(struct kbench_area *area, const struct kbench_ctx *ctx,
		      size_t block);
void kbench_area_free(struct kbench_area *area);

static inline void *kbench_area_block(const struct kbench_area *area, u32 i)
{
	return area->base + area->offset[i];
}

/*
 * The generator behind the dataset: x' = x * 6364136223846793005 +
 * 1442695040888963407 (mod 2^64); each value is the top 32 bits of x'.
 */
static inline u32 kbench_lcg_next(u64 *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (u32)(*state >> 32);
}

/* Cycles as counted by an ordered TSC read (nanoseconds elsewhere). */
static __always_inline u64 kbench_cycles(void)
{
#ifdef CONFIG_X86
	return rdtsc_ordered();
#else
	return ktime_get_ns();
#endif
}

/*
 * Keyed tracepoints (the seL4 benchmarking extensions' TRACE_POINT_START and
 * TRACE_POINT_STOP): wrap a region of any kernel code in
 *
 *	KBENCH_TRACE_START(3);
 *	...
 *	KBENCH_TRACE_STOP(3);
 *
 * and, while the log is on (/sys/kernel/kbench/trace/control, see
 * docs/sysfs-ABI.md), every STOP whose START ran since the last STOP of that
 * key logs one entry: the key, the CPU, the START time and the cycles in
 * between, read with kbench_cycles() like the benchmarks' samples.  A STOP
 * without such a START logs nothing, so a region can be timed along one path
 * only; keys may interleave and nest.  Keys are 0 .. N-1, N being the
 * module parameter trace_keys (at most KBENCH_TRACE_KEYS_MAX); another key
 * logs nothing and is counted in the log's status as invalid.
 *
 * START stamps are kept per CPU and tagged with the task: a STOP logs only
 * on the CPU, and in the task, of its START.  A region during which the task
 * was switched out is logged with KBENCH_LOG_F_SWITCHED (its cycles include
 * the time off the CPU); one that migrated is normally not logged.  Use a
 * key from one context only (task or interrupt): an interrupt runs in the
 * context of the task it interrupted.
 *
 * The calls never sleep and may be used with interrupts off and in NMI
 * context.  KBENCH_TRACE_NAME() may sleep: call it from module init.
 */
#define KBENCH_TRACE_KEYS_MAX	4096U
#define KBENCH_TRACE_NAME_LEN	32	/* with the NUL */

#define KBENCH_TRACE_START(key)		kbench_trace_start(key)
#define KBENCH_TRACE_STOP(key)		kbench_trace_stop(key)
#define KBENCH_TRACE_NAME(key, name)	kbench_trace_name(key, name)

void kbench_trace_start(unsigned int key);
void kbench_trace_stop(unsigned int key);
/*
 * Name a key for the reports: 1..31 characters of [A-Za-z0-9_.:-]; NULL
 * removes the name.  Returns 0 or -EINVAL (key out of range, bad name).
 */
int kbench_trace_name(unsigned int key, const char *name);
/* N, the number of keys (the trace_keys module parameter). */
unsigned int kbench_trace_keys(void);

/*
 * The log buffer holds entries of every producer, told apart by @kind:
 * tracepoints, probed kernel functions, the recorded window of each
 * benchmark run, and whatever logs through kbench_log_record().  An entry is
 * 32 bytes, read out raw by /sys/kernel/kbench/trace/log.
 */
enum kbench_log_kind {
	KBENCH_LOG_TRACEPOINT = 1,	/* key: the tracepoint key */
	KBENCH_LOG_FUNCTION = 2,	/* key: the probe's slot (trace/functions) */
	KBENCH_LOG_RUN = 3,		/* key: the run's number; data: samples */
	/* Kernel entries (trace/entries/, core/entries.c). */
	KBENCH_LOG_SYSCALL = 4,		/* key: syscall number; data: return */
	KBENCH_LOG_IRQ = 5,		/* key: irq; data: handler's return */
	KBENCH_LOG_SOFTIRQ = 6,		/* key: softirq vector number */
	KBENCH_LOG_VECTOR = 7,		/* key: system vector; data: vector */
	KBENCH_LOG_FAULT = 8,		/* key: 0 user, 1 kernel; data: error */
	/* Add a new producer here. */
};

#define KBENCH_LOG_F_SWITCHED	BIT(0)	/* the task was switched out inside */
#define KBENCH_LOG_F_IRQ	BIT(1)	/* logged outside task context */
#define KBENCH_LOG_F_UNBOUND	BIT(2)	/* RUN: the worker was not pinned */
#define KBENCH_LOG_F_UNTIMED	BIT(3)	/* an entry without an exit: cycles 0 */

struct kbench_log_entry {
	u64 start;		/* kbench_cycles() at the start */
	u64 cycles;		/* duration */
	u32 key;
	u32 data;		/* the producer's own */
	u32 pid;		/* current->pid when logged */
	u16 cpu;		/* CPU that logged it */
	u8 kind;		/* enum kbench_log_kind */
	u8 flags;		/* KBENCH_LOG_F_* */
};

/*
 * Log one entry if the log is on and has room (cpu, pid and the IRQ flag are
 * filled in here).  Returns true if it was stored; a full log counts it as
 * overflow.  Safe in any context.
 */
bool kbench_log_record(u8 kind, u8 flags, u32 key, u64 start, u64 cycles,
		       u32 data);

#endif /* _KBENCH_H */
