// SPDX-License-Identifier: GPL-2.0
/*
 * trace_paths: the tracepoint examples of the seL4 benchmarking extensions as
 * a kbench benchmark, for the tests.  Every call takes the paths below with
 * c = bit 0 and c2 = bit 1 of its dataset value, so that the test knows from
 * the LCG how often each key must log.
 */
#include <linux/module.h>

#include "kbench.h"

#define PATHS_KEYS	10

static struct kbench_param paths_params[] = {
	{
		.name = "bad_key",
		.description = "a key every call STARTs and STOPs as well (0: none)",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = U32_MAX,
		.value.u64 = 0,
	},
	{
		.name = "work",
		.description = "loop steps of each of f, g and h",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = 1000000,
		.value.u64 = 20,
	},
};

static int name_errors[2];

static noinline void paths_work(u64 steps)
{
	u64 x = 0;

	while (steps--) {
		x++;
		OPTIMIZER_HIDE_VAR(x);
	}
}

static void paths_call(struct kbench_ctx *ctx, u32 i)
{
	u64 bad = paths_params[0].value.u64;
	u64 work = paths_params[1].value.u64;
	bool c = ctx->dataset[i] & 1;
	bool c2 = ctx->dataset[i] & 2;

	/* Seed example 1: key 0 logs f and g when c. */
	KBENCH_TRACE_START(0);
	paths_work(work);
	if (c) {
		paths_work(work);
		KBENCH_TRACE_STOP(0);
	}
	/* Seed example 2: key 1 logs g when c. */
	if (c) {
		paths_work(work);
		KBENCH_TRACE_START(1);
	}
	paths_work(work);
	KBENCH_TRACE_STOP(1);
	/* Seed example 3: keys 2 + 3 log f, h and g when c; key 9 all of it. */
	KBENCH_TRACE_START(9);
	KBENCH_TRACE_START(2);
	paths_work(work);
	if (c) {
		paths_work(work);
		KBENCH_TRACE_STOP(2);
		KBENCH_TRACE_START(3);
	}
	paths_work(work);
	KBENCH_TRACE_STOP(3);
	if (c)
		KBENCH_TRACE_STOP(9);
	/* Interleaved: 4 and 5. */
	KBENCH_TRACE_START(4);
	paths_work(work);
	KBENCH_TRACE_START(5);
	paths_work(work);
	KBENCH_TRACE_STOP(4);
	paths_work(work);
	KBENCH_TRACE_STOP(5);
	/* Nested: 7 inside 6. */
	KBENCH_TRACE_START(6);
	paths_work(work);
	KBENCH_TRACE_START(7);
	paths_work(work);
	KBENCH_TRACE_STOP(7);
	paths_work(work);
	KBENCH_TRACE_STOP(6);
	/* Only a STOP after a START since the last STOP logs: key 8. */
	if (c2)
		KBENCH_TRACE_START(8);
	KBENCH_TRACE_STOP(8);
	KBENCH_TRACE_STOP(8);
	if (bad) {
		KBENCH_TRACE_START(bad);
		KBENCH_TRACE_STOP(bad);
	}
}

static int paths_report(struct kbench_ctx *ctx, char *buf, size_t size)
{
	return scnprintf(buf, size, " name_bad_key=%d name_bad_chars=%d",
			 name_errors[0], name_errors[1]);
}

static struct kbench paths_bench = {
	.name = "trace_paths",
	.description = "the seL4 tracepoint path examples",
	.params = paths_params,
	.nr_params = ARRAY_SIZE(paths_params),
	.call = paths_call,
	.report = paths_report,
	.owner = THIS_MODULE,
};

static const char * const paths_names[PATHS_KEYS] = {
	"ex1_f_g", "ex2_g", "ex3_f_h", "ex3_g", "interleaved_a",
	"interleaved_b", "outer", "inner", "stop_twice", "ex3_all",
};

static int __init paths_init(void)
{
	unsigned int key;
	int ret;

	name_errors[0] = KBENCH_TRACE_NAME(kbench_trace_keys(), "too_far");
	name_errors[1] = KBENCH_TRACE_NAME(0, "has space");
	for (key = 0; key < PATHS_KEYS; key++) {
		ret = KBENCH_TRACE_NAME(key, paths_names[key]);
		if (ret)
			return ret;
	}
	return kbench_register(&paths_bench);
}

static void __exit paths_exit(void)
{
	unsigned int key;

	kbench_unregister(&paths_bench);
	for (key = 0; key < PATHS_KEYS; key++)
		KBENCH_TRACE_NAME(key, NULL);
}

module_init(paths_init);
module_exit(paths_exit);

MODULE_DESCRIPTION("kbench test module: seL4 tracepoint paths");
MODULE_LICENSE("GPL");
