// SPDX-License-Identifier: GPL-2.0
/*
 * crc32c: CRC32C (Castagnoli) of `len` bytes of a random block, with the
 * library's generic implementation (lib/crc32.c, built in), not the
 * crypto API: no module dependency, no driver selection.
 */
#include <linux/crc32.h>
#include <linux/slab.h>

#include "benches.h"

/* Kbuild detects kernels that renamed __crc32c_le() to crc32c(). */
#ifdef KBENCH_CRC32C_RENAMED
#define crc32c_generic(crc, p, len)	crc32c(crc, p, len)
#else
#define crc32c_generic(crc, p, len)	__crc32c_le(crc, p, len)
#endif

static struct kbench_param crc32c_params[] = {
	{
		.name = "len",
		.description = "bytes per checksum",
		.type = KBENCH_PARAM_U64,
		.min = 1,
		.max = 1 << 20,
		.value.u64 = 64,
	},
};

struct crc32c_state {
	struct kbench_area area;
	size_t len;
	u32 sink;
};

static void crc32c_teardown(struct kbench_ctx *ctx)
{
	struct crc32c_state *st = ctx->priv;

	kbench_area_free(&st->area);
	kfree(st);
}

static int crc32c_setup(struct kbench_ctx *ctx)
{
	struct crc32c_state *st = kzalloc(sizeof(*st), GFP_KERNEL);

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->len = crc32c_params[0].value.u64;
	if (kbench_area_alloc(&st->area, ctx, st->len)) {
		crc32c_teardown(ctx);
		return -ENOMEM;
	}
	return 0;
}

static void crc32c_call(struct kbench_ctx *ctx, u32 i)
{
	struct crc32c_state *st = ctx->priv;

	st->sink ^= crc32c_generic(~0U, kbench_area_block(&st->area, i),
				   st->len);
}

struct kbench kbench_crc32c = {
	.name = "crc32c",
	.description = "__crc32c_le() (lib/crc32, generic) of len bytes",
	.params = crc32c_params,
	.nr_params = ARRAY_SIZE(crc32c_params),
	.setup = crc32c_setup,
	.call = crc32c_call,
	.teardown = crc32c_teardown,
};
