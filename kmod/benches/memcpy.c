// SPDX-License-Identifier: GPL-2.0
/*
 * memcpy: copy `size` bytes from a randomly chosen block of a large
 * source area (see struct kbench_area) into one destination buffer.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "benches.h"

static struct kbench_param memcpy_params[] = {
	{
		.name = "size",
		.description = "bytes per copy",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 20,
		.value.u64 = 64,
	},
};

struct memcpy_state {
	struct kbench_area src;
	void *dst;
	size_t size;
};

static void memcpy_teardown(struct kbench_ctx *ctx)
{
	struct memcpy_state *st = ctx->priv;

	kbench_area_free(&st->src);
	kvfree(st->dst);
	kfree(st);
}

static int memcpy_setup(struct kbench_ctx *ctx)
{
	struct memcpy_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->size = memcpy_params[0].value.u64;
	st->dst = kvzalloc(st->size, GFP_KERNEL);
	if (!st->dst || kbench_area_alloc(&st->src, ctx, st->size)) {
		memcpy_teardown(ctx);
		return -ENOMEM;
	}
	return 0;
}

static void memcpy_call(struct kbench_ctx *ctx, u32 i)
{
	struct memcpy_state *st = ctx->priv;

	memcpy(st->dst, kbench_area_block(&st->src, i), st->size);
}

struct kbench kbench_memcpy = {
	.name = "memcpy",
	.description = "memcpy() of size bytes from a random source block",
	.params = memcpy_params,
	.nr_params = ARRAY_SIZE(memcpy_params),
	.setup = memcpy_setup,
	.call = memcpy_call,
	.teardown = memcpy_teardown,
};
