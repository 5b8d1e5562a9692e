// SPDX-License-Identifier: GPL-2.0
/* ktime_get: one read of CLOCK_MONOTONIC through the timekeeping core. */
#include <linux/ktime.h>

#include "benches.h"

static void ktime_get_call(struct kbench_ctx *ctx, u32 i)
{
	ktime_t t = ktime_get();

	OPTIMIZER_HIDE_VAR(t);
}

struct kbench kbench_ktime_get = {
	.name = "ktime_get",
	.description = "ktime_get(): read CLOCK_MONOTONIC",
	.call = ktime_get_call,
};
