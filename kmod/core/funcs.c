// SPDX-License-Identifier: GPL-2.0
/*
 * Any kernel function timed in place.  A kretprobe on the function (on its
 * ftrace call site where the kernel allows, else an int3) takes the start
 * time at entry; the return handler logs the call's cycles as a
 * KBENCH_LOG_FUNCTION entry whose key is the probe's slot in
 * trace/functions.  Kretprobes rather than fprobes: Debian's 6.1 kernels
 * are built without CONFIG_FPROBE, and the kretprobe API is the same from
 * 6.1 to 6.12.
 *
 * Probes are added and removed only while the log is off, so a slot means
 * one function for the whole of a log.
 */
#include <linux/ctype.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kbench_core.h"
#include "trace.h"

/* Calls in flight per probe (per CPU, and more for sleeping functions). */
#define KBENCH_FUNC_ACTIVE_PER_CPU	4
#define KBENCH_FUNC_ACTIVE_EXTRA	64

struct kbench_func_call {
	u64 start;
	unsigned long switches;
};

struct kbench_func {
	struct kretprobe rp;
	char name[KBENCH_FUNC_NAME_MAX];
	bool armed;
};

static struct kbench_func kbench_funcs[KBENCH_FUNCS_MAX];

static int kbench_func_entry(struct kretprobe_instance *ri,
			     struct pt_regs *regs)
{
	struct kbench_func_call *call = (void *)ri->data;

	if (!kbench_log_is_on())
		return 1;	/* no return handler for this call */
	call->switches = kbench_switches(current);
	call->start = kbench_cycles();
	return 0;
}
NOKPROBE_SYMBOL(kbench_func_entry);

static int kbench_func_return(struct kretprobe_instance *ri,
			      struct pt_regs *regs)
{
	struct kbench_func_call *call = (void *)ri->data;
	u64 now = kbench_cycles();
	struct kretprobe *rp = get_kretprobe(ri);
	struct kbench_func *f;

	if (!rp)
		return 0;
	f = container_of(rp, struct kbench_func, rp);
	kbench_log_record(KBENCH_LOG_FUNCTION,
			  call->switches != kbench_switches(current) ?
			  KBENCH_LOG_F_SWITCHED : 0,
			  f - kbench_funcs, call->start, now - call->start, 0);
	return 0;
}
NOKPROBE_SYMBOL(kbench_func_return);

static struct kbench_func *kbench_func_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < KBENCH_FUNCS_MAX; i++)
		if (kbench_funcs[i].armed && !strcmp(kbench_funcs[i].name, name))
			return &kbench_funcs[i];
	return NULL;
}

/*
 * Probe @name (a kallsyms name, or "module:name").  Returns 0, -EEXIST if
 * it is probed already, -ENOSPC if every slot is taken, or the error of
 * register_kretprobe(): -ENOENT for an unknown symbol, -EINVAL for one
 * that cannot be probed (blacklisted, not a function entry), and so on.
 */
int kbench_funcs_add(const char *name)
{
	struct kbench_func *f = NULL;
	unsigned int i;
	int ret;

	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_func_find(name))
		return -EEXIST;
	for (i = 0; i < KBENCH_FUNCS_MAX && !f; i++)
		if (!kbench_funcs[i].armed)
			f = &kbench_funcs[i];
	if (!f)
		return -ENOSPC;
	memset(f, 0, sizeof(*f));
	strscpy(f->name, name, sizeof(f->name));
	f->rp.kp.symbol_name = f->name;
	f->rp.entry_handler = kbench_func_entry;
	f->rp.handler = kbench_func_return;
	f->rp.data_size = sizeof(struct kbench_func_call);
	f->rp.maxactive = KBENCH_FUNC_ACTIVE_PER_CPU * num_possible_cpus() +
			  KBENCH_FUNC_ACTIVE_EXTRA;
	ret = register_kretprobe(&f->rp);
	if (ret)
		return ret;
	f->armed = true;
	return 0;
}

int kbench_funcs_remove(const char *name)
{
	struct kbench_func *f;

	lockdep_assert_held(&kbench_trace_lock);
	f = kbench_func_find(name);
	if (!f)
		return -ENOENT;
	unregister_kretprobe(&f->rp);
	f->armed = false;
	return 0;
}

void kbench_funcs_clear(void)
{
	struct kretprobe *rps[KBENCH_FUNCS_MAX];
	unsigned int i, n = 0;

	lockdep_assert_held(&kbench_trace_lock);
	for (i = 0; i < KBENCH_FUNCS_MAX; i++)
		if (kbench_funcs[i].armed)
			rps[n++] = &kbench_funcs[i].rp;
	if (n)
		unregister_kretprobes(rps, n);	/* one grace period for all */
	for (i = 0; i < KBENCH_FUNCS_MAX; i++)
		kbench_funcs[i].armed = false;
}

/* "<slot> <name> missed=<n>\n" per probe, in slot order. */
int kbench_funcs_show(char *buf)
{
	unsigned int i;
	int len = 0;

	lockdep_assert_held(&kbench_trace_lock);
	for (i = 0; i < KBENCH_FUNCS_MAX; i++) {
		struct kbench_func *f = &kbench_funcs[i];

		if (f->armed)
			len += sysfs_emit_at(buf, len, "%u %s missed=%lu\n", i,
					     f->name,
					     (unsigned long)f->rp.nmissed +
					     f->rp.kp.nmissed);
	}
	return len;
}
