// SPDX-License-Identifier: GPL-2.0
/*
 * rotmix: a benchmark module of its own, written to kbench.h the way a user
 * writes one (not part of kbench.ko).  One call runs `work` rounds of a
 * rotate-xor-add mix, each round depending on the last, so its cost grows by
 * the same amount per round; `tag` is stored and never used, a parameter
 * that changes nothing.  The tests compare work=2000 with 2020 (+1 %) and
 * tag=1 with tag=2 (A/A) inside one kernel thread.
 */
#include <linux/bitops.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "kbench.h"

static struct kbench_param rotmix_params[] = {
	{
		.name = "work",
		.description = "dependent rounds per call",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1000000,
		.value.u64 = 1000,
	},
	{
		.name = "tag",
		.description = "a label; changes nothing",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = 1000,
		.value.u64 = 0,
	},
};

struct rotmix_state {
	u64 work;
	u64 tag;
	u64 x;
};

static int rotmix_setup(struct kbench_ctx *ctx)
{
	struct rotmix_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	st->work = rotmix_params[0].value.u64;
	st->tag = rotmix_params[1].value.u64;
	st->x = ctx->dataset[0] | 1;
	ctx->priv = st;
	return 0;
}

static void rotmix_call(struct kbench_ctx *ctx, u32 i)
{
	struct rotmix_state *st = ctx->priv;
	u64 x = st->x;
	u64 n;

	for (n = 0; n < st->work; n++) {
		x = rol64(x, 13) ^ (x + 0x9e3779b97f4a7c15ULL);
		OPTIMIZER_HIDE_VAR(x);
	}
	st->x = x;
}

static void rotmix_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

static struct kbench rotmix_bench = {
	.name = "rotmix",
	.description = "work rounds of a dependent rotate-xor-add mix",
	.params = rotmix_params,
	.nr_params = ARRAY_SIZE(rotmix_params),
	.setup = rotmix_setup,
	.call = rotmix_call,
	.teardown = rotmix_teardown,
	.owner = THIS_MODULE,
};

static int __init rotmix_init(void)
{
	return kbench_register(&rotmix_bench);
}

static void __exit rotmix_exit(void)
{
	kbench_unregister(&rotmix_bench);
}

module_init(rotmix_init);
module_exit(rotmix_exit);

MODULE_DESCRIPTION("rotmix: a kbench benchmark module of its own");
MODULE_LICENSE("GPL");
