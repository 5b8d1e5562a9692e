// SPDX-License-Identifier: GPL-2.0
/*
 * empty: a call that does nothing.  Its cycles per call are the harness's
 * own cost per call (the indirect call and the dataset index step), to be
 * compared with the other benchmarks; `overhead` is the per-sample cost.
 */
#include "benches.h"

static void empty_call(struct kbench_ctx *ctx, u32 i)
{
}

struct kbench kbench_empty = {
	.name = "empty",
	.description = "an empty function: the per-call cost of the harness",
	.call = empty_call,
};
