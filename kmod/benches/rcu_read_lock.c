// SPDX-License-Identifier: GPL-2.0
/* rcu_read_lock: enter and leave an RCU read-side critical section. */
#include <linux/rcupdate.h>

#include "benches.h"

static void rcu_read_lock_call(struct kbench_ctx *ctx, u32 i)
{
	rcu_read_lock();
	rcu_read_unlock();
}

struct kbench kbench_rcu_read_lock = {
	.name = "rcu_read_lock",
	.description = "rcu_read_lock() + rcu_read_unlock()",
	.call = rcu_read_lock_call,
};
