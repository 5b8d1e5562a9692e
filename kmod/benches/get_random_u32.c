// SPDX-License-Identifier: GPL-2.0
/* get_random_u32: one value from the per-CPU batched CRNG output. */
#include <linux/random.h>

#include "benches.h"

static void get_random_u32_call(struct kbench_ctx *ctx, u32 i)
{
	u32 x = get_random_u32();

	OPTIMIZER_HIDE_VAR(x);
}

struct kbench kbench_get_random_u32 = {
	.name = "get_random_u32",
	.description = "get_random_u32(): one 32-bit value from the batched CRNG",
	.call = get_random_u32_call,
};
