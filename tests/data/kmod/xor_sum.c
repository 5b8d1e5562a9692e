// SPDX-License-Identifier: GPL-2.0
/*
 * xor_sum: xor of `words` consecutive dataset values.  Not part of kbench.ko:
 * the tests add it to a copy of kmod/ to show that a benchmark is one file
 * plus one line in benches/list.h.
 */
#include <linux/slab.h>

#include "benches.h"

static struct kbench_param xor_sum_params[] = {
	{
		.name = "words",
		.description = "dataset values per call",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 10,
		.value.u64 = 8,
	},
};

struct xor_sum_state {
	u32 words;
	u32 sink;
};

static int xor_sum_setup(struct kbench_ctx *ctx)
{
	struct xor_sum_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	st->words = xor_sum_params[0].value.u64;
	ctx->priv = st;
	return 0;
}

static void xor_sum_call(struct kbench_ctx *ctx, u32 i)
{
	struct xor_sum_state *st = ctx->priv;
	u32 k;

	for (k = 0; k < st->words; k++)
		st->sink ^= ctx->dataset[(i + k) % ctx->dataset_size];
}

static void xor_sum_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

struct kbench kbench_xor_sum = {
	.name = "xor_sum",
	.description = "xor of `words` consecutive dataset values",
	.params = xor_sum_params,
	.nr_params = ARRAY_SIZE(xor_sum_params),
	.setup = xor_sum_setup,
	.call = xor_sum_call,
	.teardown = xor_sum_teardown,
};
