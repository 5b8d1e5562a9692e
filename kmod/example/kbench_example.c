// SPDX-License-Identifier: GPL-2.0
/*
 * kbench_example.ko - how another module adds a benchmark to kbench.ko.
 *
 * It appears as /sys/kernel/kbench/example_div/ with every common
 * attribute plus its own `divisor`, and goes away when this module is
 * unloaded.  The timed call divides 64-bit dataset values.
 */
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "kbench.h"

static struct kbench_param example_params[] = {
	{
		.name = "divisor",
		.description = "divide by this",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = U32_MAX,
		.value.u64 = 7,
	},
};

struct example_state {
	u64 divisor;
	u64 sink;
};

static int example_setup(struct kbench_ctx *ctx)
{
	struct example_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	st->divisor = example_params[0].value.u64;
	ctx->priv = st;
	return 0;
}

static void example_call(struct kbench_ctx *ctx, u32 i)
{
	struct example_state *st = ctx->priv;
	u64 x = (u64)ctx->dataset[i] << 32 | i;

	st->sink += div64_u64(x, st->divisor);
}

static int example_report(struct kbench_ctx *ctx, char *buf, size_t size)
{
	struct example_state *st = ctx->priv;

	return scnprintf(buf, size, " sink=%llu", st->sink);
}

static void example_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

static struct kbench example_bench = {
	.name = "example_div",
	.description = "64-bit division (example out-of-tree benchmark)",
	.params = example_params,
	.nr_params = ARRAY_SIZE(example_params),
	.setup = example_setup,
	.call = example_call,
	.report = example_report,
	.teardown = example_teardown,
	.owner = THIS_MODULE,
};

static int __init kbench_example_init(void)
{
	return kbench_register(&example_bench);
}

static void __exit kbench_example_exit(void)
{
	kbench_unregister(&example_bench);
}

module_init(kbench_example_init);
module_exit(kbench_example_exit);

MODULE_DESCRIPTION("kbench example: a benchmark in a separate module");
MODULE_LICENSE("GPL");
