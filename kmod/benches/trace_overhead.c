// SPDX-License-Identifier: GPL-2.0
/*
 * trace_overhead: the nested pair of the seL4 benchmarking extensions,
 * which measures the tracepoints' own cost.  Each call runs
 *
 *	KBENCH_TRACE_START(outer);
 *	KBENCH_TRACE_START(inner);
 *	KBENCH_TRACE_STOP(inner);
 *	KBENCH_TRACE_STOP(outer);
 *
 * With the log on, the empty inner pair logs the cycles the instrumentation
 * adds to a measurement (the effective overhead), and outer - inner the
 * cycles one START/STOP pair adds to the execution (the total overhead).
 * The harness's samples time two whole pairs per call; with the log off,
 * two pairs that log nothing.
 */
#include <linux/slab.h>

#include "benches.h"

static struct kbench_param trace_overhead_params[] = {
	{
		.name = "outer",
		.description = "key of the outer pair",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = KBENCH_TRACE_KEYS_MAX - 1,
		.value.u64 = 0,
	},
	{
		.name = "inner",
		.description = "key of the empty inner pair",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = KBENCH_TRACE_KEYS_MAX - 1,
		.value.u64 = 1,
	},
};

struct trace_overhead_keys {
	unsigned int outer;
	unsigned int inner;
};

static int trace_overhead_setup(struct kbench_ctx *ctx)
{
	u64 outer = trace_overhead_params[0].value.u64;
	u64 inner = trace_overhead_params[1].value.u64;
	struct trace_overhead_keys *keys;

	/* Two distinct keys that the log knows. */
	if (outer == inner || outer >= kbench_trace_keys() ||
	    inner >= kbench_trace_keys())
		return -EINVAL;
	keys = kmalloc(sizeof(*keys), GFP_KERNEL);
	if (!keys)
		return -ENOMEM;
	keys->outer = outer;
	keys->inner = inner;
	ctx->priv = keys;
	return 0;
}

static void trace_overhead_call(struct kbench_ctx *ctx, u32 i)
{
	const struct trace_overhead_keys *keys = ctx->priv;

	KBENCH_TRACE_START(keys->outer);
	KBENCH_TRACE_START(keys->inner);
	KBENCH_TRACE_STOP(keys->inner);
	KBENCH_TRACE_STOP(keys->outer);
}

static void trace_overhead_teardown(struct kbench_ctx *ctx)
{
	kfree(ctx->priv);
}

struct kbench kbench_trace_overhead = {
	.name = "trace_overhead",
	.description = "nested tracepoint pairs (outer around an empty inner): the tracepoints' own cost",
	.params = trace_overhead_params,
	.nr_params = ARRAY_SIZE(trace_overhead_params),
	.setup = trace_overhead_setup,
	.call = trace_overhead_call,
	.teardown = trace_overhead_teardown,
};
