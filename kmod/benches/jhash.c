// SPDX-License-Identifier: GPL-2.0
/* jhash: Bob Jenkins' hash of `len` bytes of a random block. */
#include <linux/jhash.h>
#include <linux/slab.h>

#include "benches.h"

static struct kbench_param jhash_params[] = {
	{
		.name = "len",
		.description = "bytes per hash",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 16,
		.value.u64 = 16,
	},
};

struct jhash_state {
	struct kbench_area area;
	u32 len;
	u32 sink;
};

static void jhash_teardown(struct kbench_ctx *ctx)
{
	struct jhash_state *st = ctx->priv;

	kbench_area_free(&st->area);
	kfree(st);
}

static int jhash_setup(struct kbench_ctx *ctx)
{
	struct jhash_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->len = jhash_params[0].value.u64;
	if (kbench_area_alloc(&st->area, ctx, st->len)) {
		jhash_teardown(ctx);
		return -ENOMEM;
	}
	return 0;
}

static void jhash_call(struct kbench_ctx *ctx, u32 i)
{
	struct jhash_state *st = ctx->priv;

	st->sink ^= jhash(kbench_area_block(&st->area, i), st->len, 0);
}

struct kbench kbench_jhash = {
	.name = "jhash",
	.description = "jhash() of len bytes",
	.params = jhash_params,
	.nr_params = ARRAY_SIZE(jhash_params),
	.setup = jhash_setup,
	.call = jhash_call,
	.teardown = jhash_teardown,
};
