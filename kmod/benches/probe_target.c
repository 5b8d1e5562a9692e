// SPDX-License-Identifier: GPL-2.0
/*
 * probe_target: one call of kbench_probe_target(), an empty function with
 * an ftrace call site that the compiler may neither inline nor drop: the
 * place to measure a probe.  The cycles a probe on it logs are the probe's
 * effective overhead (what it adds to every duration it logs); this
 * bench's cycles per call with the probe, minus those without, are its
 * total overhead (what it adds to every call of the probed function).
 */
#include "benches.h"

noinline void kbench_probe_target(void)
{
	barrier();	/* a side effect: the call cannot be dropped */
}

static void probe_target_call(struct kbench_ctx *ctx, u32 i)
{
	kbench_probe_target();
}

struct kbench kbench_probe_target_bench = {
	.name = "probe_target",
	.description = "a call of kbench_probe_target(), an empty function to put a probe on",
	.call = probe_target_call,
};
