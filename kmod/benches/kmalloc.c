// SPDX-License-Identifier: GPL-2.0
/*
 * kmalloc: allocate and free `size` bytes.  GFP_KERNEL normally,
 * GFP_ATOMIC when the run disables interrupts or preemption.
 */
#include <linux/gfp.h>
#include <linux/slab.h>

#include "benches.h"

static struct kbench_param kmalloc_params[] = {
	{
		.name = "size",
		.description = "bytes per allocation",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 20,
		.value.u64 = 64,
	},
};

struct kmalloc_state {
	size_t size;
	gfp_t gfp;
	u64 failures;
};

static int kmalloc_setup(struct kbench_ctx *ctx)
{
	struct kmalloc_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	st->size = kmalloc_params[0].value.u64;
	st->gfp = (ctx->atomic ? GFP_ATOMIC : GFP_KERNEL) | __GFP_NOWARN;
	ctx->priv = st;
	return 0;
}

static void kmalloc_call(struct kbench_ctx *ctx, u32 i)
{
	struct kmalloc_state *st = ctx->priv;
	void *p = kmalloc(st->size, st->gfp);

	if (unlikely(!p))
		st->failures++;
	OPTIMIZER_HIDE_VAR(p);
	kfree(p);
}

static int kmalloc_report(struct kbench_ctx *ctx, char *buf, size_t size)
{
	struct kmalloc_state *st = ctx->priv;

	return scnprintf(buf, size, " alloc_failures=%llu", st->failures);
}

static void kmalloc_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

struct kbench kbench_kmalloc = {
	.name = "kmalloc",
	.description = "kmalloc(size) + kfree()",
	.params = kmalloc_params,
	.nr_params = ARRAY_SIZE(kmalloc_params),
	.setup = kmalloc_setup,
	.call = kmalloc_call,
	.report = kmalloc_report,
	.teardown = kmalloc_teardown,
};
