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
 */
#ifndef _KBENCH_H
#define _KBENCH_H

#include <linux/types.h>
#include <linux/in6.h>

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

/*
 * One benchmark parameter, shown as /sys/kernel/kbench/<bench>/<name>.
 * The bench initialises @value with its default and reads it in setup();
 * the core only writes it while no run of this benchmark is in progress.
 */
struct kbench_param {
	const char *name;
	const char *description;
	enum kbench_param_type type;
	u64 min;			/* KBENCH_PARAM_U64 only */
	u64 max;			/* KBENCH_PARAM_U64 only */
	union {
		u64 u64;
		struct kbench_ipv4_prefix ipv4;
		struct kbench_ipv6_prefix ipv6;
	} value;
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

#endif /* _KBENCH_H */
