// SPDX-License-Identifier: GPL-2.0
/*
 * fib4_lookup: IPv4 route lookups in init_net for destinations drawn from
 * `dst_prefix`: destination i is the prefix with its host bits taken from
 * dataset value i.  api=0 calls fib_lookup() (the FIB trie, no dst);
 * api=1 calls ip_route_output_key() (trie + output route + dst refcount).
 * The run line reports how many lookups found a route.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <net/ip_fib.h>
#include <net/net_namespace.h>
#include <net/route.h>

#include "benches.h"

enum { FIB4_DST_PREFIX, FIB4_API };

static struct kbench_param fib4_params[] = {
	[FIB4_DST_PREFIX] = {
		.name = "dst_prefix",
		.description = "destinations are random addresses in this prefix",
		.type = KBENCH_PARAM_IPV4_PREFIX,
		.value.ipv4 = { .addr = htonl(0x0a000000), .plen = 8 },
	},
	[FIB4_API] = {
		.name = "api",
		.description = "0: fib_lookup(), 1: ip_route_output_key()",
		.type = KBENCH_PARAM_U64,
		.min = 0,
		.max = 1,
		.value.u64 = 0,
	},
};

struct fib4_state {
	__be32 *daddr;
	bool output_key;	/* api=1 */
	u64 ok;
	u64 err;
};

static int fib4_setup(struct kbench_ctx *ctx)
{
	const struct kbench_ipv4_prefix *pfx = &fib4_params[FIB4_DST_PREFIX].value.ipv4;
	u32 mask = pfx->plen ? ~0U << (32 - pfx->plen) : 0;
	u32 net = ntohl(pfx->addr) & mask;
	struct fib4_state *st;
	u32 i;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->daddr = kvmalloc_array(ctx->dataset_size, sizeof(*st->daddr),
				   GFP_KERNEL);
	if (!st->daddr) {
		kfree(st);
		return -ENOMEM;
	}
	for (i = 0; i < ctx->dataset_size; i++)
		st->daddr[i] = htonl(net | (ctx->dataset[i] & ~mask));
	st->output_key = fib4_params[FIB4_API].value.u64;
	ctx->priv = st;
	return 0;
}

static void fib4_call_fib_lookup(struct kbench_ctx *ctx, u32 i)
{
	struct fib4_state *st = ctx->priv;
	struct flowi4 fl4 = { .daddr = st->daddr[i] };
	struct fib_result res;
	int err;

	rcu_read_lock();
	err = fib_lookup(&init_net, &fl4, &res, 0);
	rcu_read_unlock();
	if (err)
		st->err++;
	else
		st->ok++;
}

static void fib4_call_output_key(struct kbench_ctx *ctx, u32 i)
{
	struct fib4_state *st = ctx->priv;
	struct flowi4 fl4 = { .daddr = st->daddr[i] };
	struct rtable *rt;

	rt = ip_route_output_key(&init_net, &fl4);
	if (IS_ERR(rt)) {
		st->err++;
	} else {
		st->ok++;
		ip_rt_put(rt);
	}
}

static void fib4_call(struct kbench_ctx *ctx, u32 i)
{
	const struct fib4_state *st = ctx->priv;

	if (st->output_key)
		fib4_call_output_key(ctx, i);
	else
		fib4_call_fib_lookup(ctx, i);
}

static int fib4_report(struct kbench_ctx *ctx, char *buf, size_t size)
{
	struct fib4_state *st = ctx->priv;

	return scnprintf(buf, size, " lookups_ok=%llu lookups_err=%llu",
			 st->ok, st->err);
}

static void fib4_teardown(struct kbench_ctx *ctx)
{
	struct fib4_state *st = ctx->priv;

	kvfree(st->daddr);
	kfree(st);
}

struct kbench kbench_fib4_lookup = {
	.name = "fib4_lookup",
	.description = "IPv4 route lookup of random destinations; api selects the function",
	.params = fib4_params,
	.nr_params = ARRAY_SIZE(fib4_params),
	.setup = fib4_setup,
	.call = fib4_call,
	.report = fib4_report,
	.teardown = fib4_teardown,
};
