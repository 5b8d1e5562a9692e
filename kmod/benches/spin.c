// SPDX-License-Identifier: GPL-2.0
/*
 * spin: `loops` steps of dependent arithmetic per call, a known amount of
 * work.  Each step is one step of a 64-bit LCG (a multiply and an add) on the
 * previous step's result, so no step can start before the one before it ends
 * and the compiler can neither drop nor shorten the chain: the cost grows by
 * the same amount per loop.  Two runs with loops=99 and loops=100 differ by
 * 1% of work, which is how the sensitivity of in-kernel timing is measured.
 */
#include <linux/compiler.h>
#include <linux/slab.h>

#include "benches.h"

static struct kbench_param spin_params[] = {
	{
		.name = "loops",
		.description = "dependent arithmetic steps per call",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 100000,
		.value.u64 = 100,
	},
};

struct spin_state {
	u64 loops;
	u64 x;
};

static int spin_setup(struct kbench_ctx *ctx)
{
	struct spin_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	st->loops = spin_params[0].value.u64;
	st->x = ctx->dataset[0];
	ctx->priv = st;
	return 0;
}

static void spin_call(struct kbench_ctx *ctx, u32 i)
{
	struct spin_state *st = ctx->priv;
	u64 x = st->x;
	u64 n;

	for (n = 0; n < st->loops; n++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		OPTIMIZER_HIDE_VAR(x);
	}
	st->x = x;
}

static void spin_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

struct kbench kbench_spin = {
	.name = "spin",
	.description = "loops steps of dependent arithmetic (a known amount of work)",
	.params = spin_params,
	.nr_params = ARRAY_SIZE(spin_params),
	.setup = spin_setup,
	.call = spin_call,
	.teardown = spin_teardown,
};
