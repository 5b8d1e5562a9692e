// SPDX-License-Identifier: GPL-2.0
/*
 * spin_lock: take and release a spinlock.  With shared=1 every CPU of a
 * parallel run uses the same lock, which measures contention; with
 * shared=0 each CPU has its own, on its own cache line.
 */
#include <linux/cache.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "benches.h"

/* The lock of every CPU when shared=1; protects nothing else. */
static DEFINE_SPINLOCK(spin_lock_shared);

static struct kbench_param spin_lock_params[] = {
	{
		.name = "shared",
		.description = "1: all CPUs of a parallel run share one lock",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = 1,
		.value.u64 = 0,
	},
};

struct spin_lock_state {
	spinlock_t lock;	/* this CPU's lock when shared=0 */
} ____cacheline_aligned;

static int spin_lock_setup(struct kbench_ctx *ctx)
{
	struct spin_lock_state *st;

	if (spin_lock_params[0].value.u64) {
		ctx->priv = &spin_lock_shared;
		return 0;
	}
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	spin_lock_init(&st->lock);
	ctx->priv = &st->lock;
	return 0;
}

static void spin_lock_call(struct kbench_ctx *ctx, u32 i)
{
	spinlock_t *lock = ctx->priv;

	spin_lock(lock);
	spin_unlock(lock);
}

static void spin_lock_teardown(struct kbench_ctx *ctx)
{
	if (ctx->priv != &spin_lock_shared)
		kfree(container_of(ctx->priv, struct spin_lock_state, lock));
}

struct kbench kbench_spin_lock = {
	.name = "spin_lock",
	.description = "spin_lock() + spin_unlock() of a private or shared lock",
	.params = spin_lock_params,
	.nr_params = ARRAY_SIZE(spin_lock_params),
	.setup = spin_lock_setup,
	.call = spin_lock_call,
	.teardown = spin_lock_teardown,
};
