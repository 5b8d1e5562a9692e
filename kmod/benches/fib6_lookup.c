// SPDX-License-Identifier: GPL-2.0
/*
 * fib6_lookup: IPv6 output route lookups, ip6_route_output() in init_net,
 * for destinations drawn from `dst_prefix`: the host bits of destination
 * i come from an LCG seeded with dataset value i.  The lookup takes and
 * drops a dst reference.  ip6_pol_route() enables bottom halves, which
 * is not allowed with interrupts off: irqs_off=1 is refused.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <net/dst.h>
#include <net/ip6_route.h>
#include <net/net_namespace.h>

#include "benches.h"

static struct kbench_param fib6_params[] = {
	{
		.name = "dst_prefix",
		.description = "destinations are random addresses in this prefix",
		.type = KBENCH_PARAM_IPV6_PREFIX,
		.value.ipv6 = {
			.addr.s6_addr = { 0x20, 0x01, 0x0d, 0xb8 },
			.plen = 32,
		},
	},
};

struct fib6_state {
	struct in6_addr *daddr;
	u64 ok;
	u64 err;
};

static void fib6_make_addr(struct in6_addr *a,
			   const struct kbench_ipv6_prefix *pfx, u32 value)
{
	u64 state = value;
	int w;

	for (w = 0; w < 4; w++) {
		int net_bits = clamp(pfx->plen - 32 * w, 0, 32);
		u32 mask = net_bits ? ~0U << (32 - net_bits) : 0;
		u32 host = kbench_lcg_next(&state);

		a->s6_addr32[w] = htonl((ntohl(pfx->addr.s6_addr32[w]) & mask) |
					(host & ~mask));
	}
}

static int fib6_setup(struct kbench_ctx *ctx)
{
	struct fib6_state *st;
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
		fib6_make_addr(&st->daddr[i], &fib6_params[0].value.ipv6,
			       ctx->dataset[i]);
	ctx->priv = st;
	return 0;
}

static void fib6_call(struct kbench_ctx *ctx, u32 i)
{
	struct fib6_state *st = ctx->priv;
	struct flowi6 fl6 = { .daddr = st->daddr[i] };
	struct dst_entry *dst;

	dst = ip6_route_output(&init_net, NULL, &fl6);
	if (dst->error)
		st->err++;
	else
		st->ok++;
	dst_release(dst);
}

static int fib6_report(struct kbench_ctx *ctx, char *buf, size_t size)
{
	struct fib6_state *st = ctx->priv;

	return scnprintf(buf, size, " lookups_ok=%llu lookups_err=%llu",
			 st->ok, st->err);
}

static void fib6_teardown(struct kbench_ctx *ctx)
{
	struct fib6_state *st = ctx->priv;

	kvfree(st->daddr);
	kfree(st);
}

struct kbench kbench_fib6_lookup = {
	.name = "fib6_lookup",
	.description = "IPv6 output route lookup (ip6_route_output) of random destinations",
	.params = fib6_params,
	.nr_params = ARRAY_SIZE(fib6_params),
	.flags = KBENCH_F_NO_IRQS_OFF,
	.setup = fib6_setup,
	.call = fib6_call,
	.report = fib6_report,
	.teardown = fib6_teardown,
};
