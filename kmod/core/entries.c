// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel entry tracking and per-thread CPU utilisation (the seL4 benchmarking
 * extensions' track_kernel_entries and track_utilisation), from the kernel's
 * own tracepoints.
 *
 * Entries: probes on raw_syscalls, irq, x86's irq_vectors and exceptions
 * tracepoints, attached by group (trace/entries/groups), log one entry per
 * kernel entry into the log buffer of trace.c, at its exit, with its start
 * and its cycles.  Only CPUs in trace/entries/cpus log.  A syscall's start is
 * kept per task (in a hashed table, so that a syscall that sleeps or
 * migrates is still timed); interrupts, softirqs and system vectors do not
 * nest within their own kind on a CPU, so their starts are kept per CPU.  A
 * page fault has no exit tracepoint: it is logged at entry, untimed.
 *
 * Utilisation: a probe on sched:sched_switch adds the cycles each thread ran
 * on a CPU to a per-CPU table, between the log's reset and its finalize.  An
 * IPI on every CPU opens and closes the accounting there, so every cycle of
 * the window belongs to one thread or to idle: per CPU, the threads' and the
 * idle cycles add up to the window.  Everything per CPU is touched on its own
 * CPU with interrupts off (the switch runs under the run-queue lock).
 *
 * Groups and utilisation change only while the log is off; the callers hold
 * kbench_trace_lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/hash.h>
#include <linux/interrupt.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/tracepoint.h>

#include "kbench_core.h"
#include "trace.h"

/* Syscalls in flight that can be timed at once (a power of two). */
#define KBENCH_SYSCALL_SLOTS_BITS	12
/* Threads per CPU whose cycles utilisation counts. */
#define KBENCH_UTIL_THREADS		512U

struct kbench_syscall_stamp {
	struct task_struct *task;	/* NULL: free or being written */
	pid_t pid;
	u32 nr;
	u64 start;
	unsigned long switches;
};

struct kbench_entry_cpu {
	u64 irq_start;
	u64 softirq_start;
	u64 vector_start;
	int irq;
	unsigned int softirq;
	int vector;
};

struct kbench_util_thread {
	pid_t pid;			/* 0: free slot */
	pid_t tgid;
	pid_t ppid;			/* the parent process, to find a tree */
	u64 cycles;
	u32 switches;
	char comm[TASK_COMM_LEN];
};

struct kbench_util_cpu {
	bool on;
	u64 since;		/* start of the running thread's interval */
	u64 start;
	u64 end;
	u64 idle;
	u64 lost;		/* cycles of threads the table had no room for */
	unsigned int lost_threads;
	unsigned int used;
	struct kbench_util_thread *threads;
};

struct kbench_hook {
	const char *name;
	void *probe;
	bool optional;		/* may be missing on this kernel or arch */
	struct tracepoint *tp;
	bool on;
};

struct kbench_group {
	const char *name;
	struct kbench_hook *hooks;
	unsigned int nr_hooks;
};

static struct kbench_syscall_stamp *kbench_syscall_stamps;
static DEFINE_PER_CPU(struct kbench_entry_cpu, kbench_entry_cpu);
static struct kbench_util_cpu __percpu *kbench_util;
static bool kbench_util_attached;
static struct cpumask kbench_entry_cpus;
static unsigned int kbench_groups_on;
static atomic_long_t kbench_syscalls_lost;
static atomic_long_t kbench_entries_logged;
static struct kobject *kbench_entries_kobj;

static __always_inline bool kbench_entry_cpu_on(void)
{
	return cpumask_test_cpu(raw_smp_processor_id(), &kbench_entry_cpus);
}

static __always_inline void kbench_entry_log(u8 kind, u8 flags, u32 key,
					     u64 start, u64 cycles, u32 data)
{
	if (kbench_log_record(kind, flags, key, start, cycles, data))
		atomic_long_inc(&kbench_entries_logged);
}

/* -- syscalls ------------------------------------------------------------- */

static __always_inline struct kbench_syscall_stamp *kbench_stamp_of(void *task)
{
	return kbench_syscall_stamps + hash_ptr(task, KBENCH_SYSCALL_SLOTS_BITS);
}

static void notrace kbench_sys_enter(void *data, struct pt_regs *regs, long id)
{
	struct kbench_syscall_stamp *s;

	if (!kbench_log_is_on())
		return;
	preempt_disable_notrace();
	if (kbench_entry_cpu_on()) {
		s = kbench_stamp_of(current);
		/* An exit that reads the slot meanwhile sees no owner. */
		WRITE_ONCE(s->task, NULL);
		smp_wmb();	/* owner cleared before the fields change */
		s->pid = current->pid;
		s->nr = (u32)id;
		s->switches = kbench_switches(current);
		s->start = kbench_cycles();
		smp_wmb();	/* fields written before the owner is set */
		WRITE_ONCE(s->task, current);
	}
	preempt_enable_notrace();
}

static void notrace kbench_sys_exit(void *data, struct pt_regs *regs, long ret)
{
	struct kbench_syscall_stamp *s;
	unsigned long switches;
	u64 now, start;
	pid_t pid;
	u32 nr;

	if (!kbench_log_is_on())
		return;
	preempt_disable_notrace();
	if (!kbench_entry_cpu_on())
		goto out;
	now = kbench_cycles();
	s = kbench_stamp_of(current);
	if (READ_ONCE(s->task) != current)
		goto lost;
	smp_rmb();	/* pairs with the second smp_wmb() of sys_enter */
	pid = s->pid;
	nr = s->nr;
	start = s->start;
	switches = s->switches;
	smp_rmb();	/* pairs with the first smp_wmb() of sys_enter */
	/* Another task hashed here and took the slot while we read it. */
	if (READ_ONCE(s->task) != current || pid != current->pid)
		goto lost;
	WRITE_ONCE(s->task, NULL);
	kbench_entry_log(KBENCH_LOG_SYSCALL,
			 switches != kbench_switches(current) ?
			 KBENCH_LOG_F_SWITCHED : 0,
			 nr, start, now - start, (u32)ret);
	goto out;
lost:
	/* A child's first return from fork has no entry of its own. */
	atomic_long_inc(&kbench_syscalls_lost);
out:
	preempt_enable_notrace();
}

/* -- hard interrupts, softirqs, system vectors, page faults ---------------- */

static void notrace kbench_irq_entry(void *data, int irq,
				     struct irqaction *action)
{
	struct kbench_entry_cpu *c = this_cpu_ptr(&kbench_entry_cpu);

	c->irq = irq;
	c->irq_start = kbench_cycles();
}

static void notrace kbench_irq_exit(void *data, int irq,
				    struct irqaction *action, int ret)
{
	struct kbench_entry_cpu *c = this_cpu_ptr(&kbench_entry_cpu);
	u64 now = kbench_cycles();

	if (c->irq_start && c->irq == irq && kbench_entry_cpu_on())
		kbench_entry_log(KBENCH_LOG_IRQ, 0, irq, c->irq_start,
				 now - c->irq_start, ret);
	c->irq_start = 0;
}

static void notrace kbench_softirq_entry(void *data, unsigned int vec_nr)
{
	struct kbench_entry_cpu *c;

	preempt_disable_notrace();
	c = this_cpu_ptr(&kbench_entry_cpu);
	c->softirq = vec_nr;
	c->softirq_start = kbench_cycles();
	preempt_enable_notrace();
}

static void notrace kbench_softirq_exit(void *data, unsigned int vec_nr)
{
	struct kbench_entry_cpu *c;
	u64 now;

	preempt_disable_notrace();
	c = this_cpu_ptr(&kbench_entry_cpu);
	now = kbench_cycles();
	if (c->softirq_start && c->softirq == vec_nr && kbench_entry_cpu_on())
		kbench_entry_log(KBENCH_LOG_SOFTIRQ, 0, vec_nr,
				 c->softirq_start, now - c->softirq_start, 0);
	c->softirq_start = 0;
	preempt_enable_notrace();
}

/*
 * x86's system vectors (the local timer, IPIs) do not go through
 * irq_handler_entry.  The key of their entries is the hook's place in this
 * table's group (the tracepoint's name without _entry); data is the vector.
 */
static __always_inline void kbench_vector_entry(int vector)
{
	struct kbench_entry_cpu *c = this_cpu_ptr(&kbench_entry_cpu);

	c->vector = vector;
	c->vector_start = kbench_cycles();
}

static __always_inline void kbench_vector_exit(u32 key, int vector)
{
	struct kbench_entry_cpu *c = this_cpu_ptr(&kbench_entry_cpu);
	u64 now = kbench_cycles();

	if (c->vector_start && c->vector == vector && kbench_entry_cpu_on())
		kbench_entry_log(KBENCH_LOG_VECTOR, 0, key, c->vector_start,
				 now - c->vector_start, vector);
	c->vector_start = 0;
}

#define KBENCH_VECTOR(name, key)					\
static void notrace kbench_##name##_entry(void *data, int vector)	\
{									\
	kbench_vector_entry(vector);					\
}									\
static void notrace kbench_##name##_exit(void *data, int vector)	\
{									\
	kbench_vector_exit(key, vector);				\
}

KBENCH_VECTOR(local_timer, 0)
KBENCH_VECTOR(reschedule, 1)
KBENCH_VECTOR(call_function, 2)
KBENCH_VECTOR(call_function_single, 3)
KBENCH_VECTOR(irq_work, 4)
KBENCH_VECTOR(x86_platform_ipi, 5)

static void notrace kbench_page_fault(u32 key, unsigned long error_code)
{
	preempt_disable_notrace();
	if (kbench_entry_cpu_on())
		kbench_entry_log(KBENCH_LOG_FAULT, KBENCH_LOG_F_UNTIMED, key,
				 kbench_cycles(), 0, (u32)error_code);
	preempt_enable_notrace();
}

static void notrace kbench_page_fault_user(void *data, unsigned long address,
					   struct pt_regs *regs,
					   unsigned long error_code)
{
	kbench_page_fault(0, error_code);
}

static void notrace kbench_page_fault_kernel(void *data,
					     unsigned long address,
					     struct pt_regs *regs,
					     unsigned long error_code)
{
	kbench_page_fault(1, error_code);
}

/* -- utilisation ------------------------------------------------------------ */

static struct kbench_util_thread *kbench_util_slot(struct kbench_util_cpu *c,
						   pid_t pid)
{
	unsigned int i = hash_32(pid, 9) % KBENCH_UTIL_THREADS, n;

	for (n = 0; n < KBENCH_UTIL_THREADS; n++) {
		struct kbench_util_thread *t = &c->threads[i];

		if (t->pid == pid)
			return t;
		if (!t->pid) {
			if (c->used >= KBENCH_UTIL_THREADS / 4 * 3)
				return NULL;	/* keep probing short */
			c->used++;
			t->pid = pid;
			return t;
		}
		i = (i + 1) % KBENCH_UTIL_THREADS;
	}
	return NULL;
}

/* Give the cycles since the last switch to @task; irqs off, on this CPU. */
static void kbench_util_charge(struct kbench_util_cpu *c,
			       struct task_struct *task, u64 now, bool out)
{
	struct kbench_util_thread *t;
	u64 delta = now - c->since;

	c->since = now;
	if (is_idle_task(task)) {
		c->idle += delta;
		return;
	}
	t = kbench_util_slot(c, task->pid);
	if (!t) {
		c->lost += delta;
		c->lost_threads++;
		return;
	}
	if (!t->tgid) {
		t->tgid = task->tgid;
		rcu_read_lock();
		t->ppid = task_ppid_nr(task);
		rcu_read_unlock();
	}
	/* The last name: a new kthread is named, a process execs, after it ran. */
	memcpy(t->comm, task->comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
	t->cycles += delta;
	if (out)
		t->switches++;
}

static void notrace kbench_sched_switch(void *data, bool preempt,
					struct task_struct *prev,
					struct task_struct *next,
					unsigned int prev_state)
{
	struct kbench_util_cpu *c = this_cpu_ptr(kbench_util);

	if (c->on)
		kbench_util_charge(c, prev, kbench_cycles(), true);
}

static void kbench_util_open(void *unused)
{
	struct kbench_util_cpu *c = this_cpu_ptr(kbench_util);

	memset(c->threads, 0, KBENCH_UTIL_THREADS * sizeof(*c->threads));
	c->used = 0;
	c->idle = 0;
	c->lost = 0;
	c->lost_threads = 0;
	c->end = 0;
	c->start = kbench_cycles();
	c->since = c->start;
	c->on = true;
}

static void kbench_util_close(void *unused)
{
	struct kbench_util_cpu *c = this_cpu_ptr(kbench_util);

	if (!c->on)
		return;
	c->end = kbench_cycles();
	/* The interrupted task ran from its switch in until now. */
	kbench_util_charge(c, current, c->end, false);
	c->on = false;
}

void kbench_util_reset(void)
{
	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_util_attached)
		on_each_cpu(kbench_util_open, NULL, 1);
}

void kbench_util_finalize(void)
{
	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_util_attached)
		on_each_cpu(kbench_util_close, NULL, 1);
}

/* -- attaching ---------------------------------------------------------------- */

static struct kbench_hook kbench_syscall_hooks[] = {
	{ "sys_enter", kbench_sys_enter },
	{ "sys_exit", kbench_sys_exit },
};

static struct kbench_hook kbench_irq_hooks[] = {
	{ "irq_handler_entry", kbench_irq_entry },
	{ "irq_handler_exit", kbench_irq_exit },
};

static struct kbench_hook kbench_softirq_hooks[] = {
	{ "softirq_entry", kbench_softirq_entry },
	{ "softirq_exit", kbench_softirq_exit },
};

#define KBENCH_VECTOR_HOOK(name, end)					\
	{ #name "_" #end, kbench_##name##_##end, true }

/* In key order: see KBENCH_VECTOR() above and docs/sysfs-ABI.md. */
static struct kbench_hook kbench_vector_hooks[] = {
	KBENCH_VECTOR_HOOK(local_timer, entry),
	KBENCH_VECTOR_HOOK(local_timer, exit),
	KBENCH_VECTOR_HOOK(reschedule, entry),
	KBENCH_VECTOR_HOOK(reschedule, exit),
	KBENCH_VECTOR_HOOK(call_function, entry),
	KBENCH_VECTOR_HOOK(call_function, exit),
	KBENCH_VECTOR_HOOK(call_function_single, entry),
	KBENCH_VECTOR_HOOK(call_function_single, exit),
	KBENCH_VECTOR_HOOK(irq_work, entry),
	KBENCH_VECTOR_HOOK(irq_work, exit),
	KBENCH_VECTOR_HOOK(x86_platform_ipi, entry),
	KBENCH_VECTOR_HOOK(x86_platform_ipi, exit),
};

static struct kbench_hook kbench_fault_hooks[] = {
	{ "page_fault_user", kbench_page_fault_user, true },
	{ "page_fault_kernel", kbench_page_fault_kernel, true },
};

static struct kbench_hook kbench_util_hook = {
	"sched_switch", kbench_sched_switch
};

#define KBENCH_GROUP(name, hooks) { name, hooks, ARRAY_SIZE(hooks) }

static struct kbench_group kbench_groups[] = {
	KBENCH_GROUP("syscalls", kbench_syscall_hooks),
	KBENCH_GROUP("irqs", kbench_irq_hooks),
	KBENCH_GROUP("softirqs", kbench_softirq_hooks),
	KBENCH_GROUP("vectors", kbench_vector_hooks),
	KBENCH_GROUP("faults", kbench_fault_hooks),
};

struct kbench_tp_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void kbench_tp_match(struct tracepoint *tp, void *priv)
{
	struct kbench_tp_lookup *lookup = priv;

	if (!lookup->tp && !strcmp(tp->name, lookup->name))
		lookup->tp = tp;
}

static struct tracepoint *kbench_tp_find(const char *name)
{
	struct kbench_tp_lookup lookup = { name, NULL };

	for_each_kernel_tracepoint(kbench_tp_match, &lookup);
	return lookup.tp;
}

static int kbench_hook_attach(struct kbench_hook *h)
{
	int ret;

	if (h->on)
		return 0;
	h->tp = kbench_tp_find(h->name);
	if (!h->tp)
		return h->optional ? 0 : -ENOENT;
	ret = tracepoint_probe_register(h->tp, h->probe, NULL);
	if (ret)
		return ret;
	h->on = true;
	return 0;
}

/* Unregister; the caller waits with tracepoint_synchronize_unregister(). */
static void kbench_hook_detach(struct kbench_hook *h)
{
	if (!h->on)
		return;
	tracepoint_probe_unregister(h->tp, h->probe, NULL);
	h->on = false;
}

static void kbench_group_detach(struct kbench_group *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_hooks; i++)
		kbench_hook_detach(&g->hooks[i]);
}

static int kbench_group_attach(struct kbench_group *g)
{
	unsigned int i;
	int ret;

	for (i = 0; i < g->nr_hooks; i++) {
		ret = kbench_hook_attach(&g->hooks[i]);
		if (ret) {
			kbench_group_detach(g);
			return ret;
		}
	}
	return 0;
}

/*
 * Attach exactly the groups in @mask.  On failure the groups attached before
 * stay as they were and the error of the first that failed is returned.
 */
static int kbench_groups_set(unsigned int mask)
{
	unsigned int i, added = 0;
	int ret = 0;

	lockdep_assert_held(&kbench_trace_lock);
	if ((mask & BIT(0)) && !kbench_syscall_stamps) {
		kbench_syscall_stamps = kvcalloc(BIT(KBENCH_SYSCALL_SLOTS_BITS),
						 sizeof(*kbench_syscall_stamps),
						 GFP_KERNEL);
		if (!kbench_syscall_stamps)
			return -ENOMEM;
	}
	for (i = 0; i < ARRAY_SIZE(kbench_groups); i++) {
		if (!(mask & BIT(i)) || (kbench_groups_on & BIT(i)))
			continue;
		ret = kbench_group_attach(&kbench_groups[i]);
		if (ret)
			break;
		added |= BIT(i);
	}
	for (i = 0; i < ARRAY_SIZE(kbench_groups); i++) {
		bool drop = ret ? added & BIT(i) :
				  (kbench_groups_on & BIT(i)) && !(mask & BIT(i));

		if (drop)
			kbench_group_detach(&kbench_groups[i]);
	}
	tracepoint_synchronize_unregister();
	if (ret)
		mask = kbench_groups_on;
	kbench_groups_on = mask;
	if (!(mask & BIT(0))) {
		kvfree(kbench_syscall_stamps);
		kbench_syscall_stamps = NULL;
	}
	return ret;
}

static int kbench_util_set(bool on)
{
	unsigned int cpu;
	int ret;

	lockdep_assert_held(&kbench_trace_lock);
	if (on == kbench_util_attached)
		return 0;
	if (!on) {
		kbench_hook_detach(&kbench_util_hook);
		tracepoint_synchronize_unregister();
		kbench_util_attached = false;
		return 0;
	}
	for_each_possible_cpu(cpu) {
		struct kbench_util_cpu *c = per_cpu_ptr(kbench_util, cpu);

		if (!c->threads)
			c->threads = kvcalloc(KBENCH_UTIL_THREADS,
					      sizeof(*c->threads), GFP_KERNEL);
		if (!c->threads)
			return -ENOMEM;
		c->on = false;
		c->start = 0;
		c->end = 0;
		c->used = 0;
	}
	ret = kbench_hook_attach(&kbench_util_hook);
	if (ret)
		return ret;
	kbench_util_attached = true;
	return 0;
}

/* -- sysfs: trace/entries/ ------------------------------------------------------ */

static int kbench_groups_parse(const char *buf, unsigned int *mask)
{
	char *copy, *cursor, *word;
	unsigned int i;
	int ret = 0;

	*mask = 0;
	if (sysfs_streq(buf, "none"))
		return 0;
	if (sysfs_streq(buf, "all")) {
		*mask = BIT(ARRAY_SIZE(kbench_groups)) - 1;
		return 0;
	}
	copy = kstrndup(buf, PAGE_SIZE, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	cursor = strim(copy);
	while (!ret && (word = strsep(&cursor, ","))) {
		for (i = 0; i < ARRAY_SIZE(kbench_groups); i++)
			if (!strcmp(word, kbench_groups[i].name))
				break;
		if (i == ARRAY_SIZE(kbench_groups))
			ret = -EINVAL;
		else
			*mask |= BIT(i);
	}
	kfree(copy);
	return ret;
}

static ssize_t groups_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	unsigned int i;
	int len = 0;

	mutex_lock(&kbench_trace_lock);
	for (i = 0; i < ARRAY_SIZE(kbench_groups); i++)
		if (kbench_groups_on & BIT(i))
			len += sysfs_emit_at(buf, len, "%s%s", len ? "," : "",
					     kbench_groups[i].name);
	mutex_unlock(&kbench_trace_lock);
	return len + sysfs_emit_at(buf, len, "%s\n", len ? "" : "none");
}

static ssize_t groups_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	unsigned int mask;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = kbench_groups_parse(buf, &mask);
	if (ret)
		return ret;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_is_on() ? -EBUSY : kbench_groups_set(mask);
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t cpus_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	ssize_t len;

	mutex_lock(&kbench_trace_lock);
	len = sysfs_emit(buf, "%*pbl\n", cpumask_pr_args(&kbench_entry_cpus));
	mutex_unlock(&kbench_trace_lock);
	return len;
}

static ssize_t cpus_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	cpumask_var_t mask;
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	if (sysfs_streq(buf, "all"))
		cpumask_copy(mask, cpu_possible_mask);
	else
		ret = cpulist_parse(buf, mask);
	if (ret)
		goto out;
	ret = -EINVAL;
	if (cpumask_empty(mask) || !cpumask_subset(mask, cpu_possible_mask))
		goto out;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_is_on() ? -EBUSY : 0;
	if (!ret)
		cpumask_copy(&kbench_entry_cpus, mask);
	mutex_unlock(&kbench_trace_lock);
out:
	free_cpumask_var(mask);
	return ret ? ret : count;
}

static ssize_t utilisation_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(kbench_util_attached));
}

static ssize_t utilisation_store(struct kobject *kobj,
				 struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	bool on;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (sysfs_streq(buf, "1"))
		on = true;
	else if (sysfs_streq(buf, "0"))
		on = false;
	else
		return -EINVAL;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_is_on() ? -EBUSY : kbench_util_set(on);
	mutex_unlock(&kbench_trace_lock);
	return ret ? ret : count;
}

static ssize_t status_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	unsigned int g, i;
	int len;

	mutex_lock(&kbench_trace_lock);
	len = sysfs_emit(buf, "logged=%ld syscalls_lost=%ld syscall_slots=%lu util_threads=%u attached=",
			 atomic_long_read(&kbench_entries_logged),
			 atomic_long_read(&kbench_syscalls_lost),
			 BIT(KBENCH_SYSCALL_SLOTS_BITS), KBENCH_UTIL_THREADS);
	for (g = 0; g < ARRAY_SIZE(kbench_groups); g++)
		for (i = 0; i < kbench_groups[g].nr_hooks; i++)
			if (kbench_groups[g].hooks[i].on)
				len += sysfs_emit_at(buf, len, "%s,",
						     kbench_groups[g].hooks[i].name);
	if (kbench_util_hook.on)
		len += sysfs_emit_at(buf, len, "%s,", kbench_util_hook.name);
	if (buf[len - 1] == ',')
		len--;
	len += sysfs_emit_at(buf, len, "\n");
	mutex_unlock(&kbench_trace_lock);
	return len;
}

/*
 * One line per CPU ("cpu=N start= end= idle= lost= lost_threads= threads="),
 * then one per thread that ran there ("cpu=N pid= tgid= ppid= cycles= switches=
 * comm=NAME", the name last: it may hold spaces).
 */
static ssize_t threads_read(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf, loff_t pos,
			    size_t count)
{
	size_t cap = 0, len = 0;
	unsigned int cpu, i;
	ssize_t ret = 0;
	char *text;

	mutex_lock(&kbench_trace_lock);
	if (kbench_log_is_on()) {
		ret = -EBUSY;
		goto out;
	}
	if (!kbench_util_attached)
		goto out;
	for_each_possible_cpu(cpu)
		cap += per_cpu_ptr(kbench_util, cpu)->used * 128 + 256;
	text = kvmalloc(cap, GFP_KERNEL);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	for_each_possible_cpu(cpu) {
		struct kbench_util_cpu *c = per_cpu_ptr(kbench_util, cpu);

		if (!c->end)
			continue;
		len += scnprintf(text + len, cap - len,
				 "cpu=%u start=%llu end=%llu idle=%llu lost=%llu lost_threads=%u threads=%u\n",
				 cpu, c->start, c->end, c->idle, c->lost,
				 c->lost_threads, c->used);
		for (i = 0; i < KBENCH_UTIL_THREADS; i++) {
			struct kbench_util_thread *t = &c->threads[i];

			if (t->pid)
				len += scnprintf(text + len, cap - len,
						 "cpu=%u pid=%d tgid=%d ppid=%d cycles=%llu switches=%u comm=%s\n",
						 cpu, t->pid, t->tgid, t->ppid, t->cycles,
						 t->switches, t->comm);
		}
		cond_resched();
	}
	if (pos >= 0 && pos < len) {
		ret = min_t(size_t, count, len - pos);
		memcpy(buf, text + pos, ret);
	}
	kvfree(text);
out:
	mutex_unlock(&kbench_trace_lock);
	return ret;
}

static struct kobj_attribute groups_attr = __ATTR(groups, 0600, groups_show,
						  groups_store);
static struct kobj_attribute cpus_attr = __ATTR(cpus, 0600, cpus_show,
						cpus_store);
static struct kobj_attribute utilisation_attr =
	__ATTR(utilisation, 0600, utilisation_show, utilisation_store);
static struct kobj_attribute status_attr = __ATTR(status, 0400, status_show,
						  NULL);

static struct bin_attribute threads_attr = {
	.attr = { .name = "threads", .mode = 0400 },
	.read = threads_read,
};

static struct attribute *kbench_entries_attrs[] = {
	&groups_attr.attr,
	&cpus_attr.attr,
	&utilisation_attr.attr,
	&status_attr.attr,
	NULL,
};

static struct bin_attribute *kbench_entries_bin_attrs[] = {
	&threads_attr,
	NULL,
};

static const struct attribute_group kbench_entries_group = {
	.attrs = kbench_entries_attrs,
	.bin_attrs = kbench_entries_bin_attrs,
};

int kbench_entries_init(struct kobject *trace_dir)
{
	int ret;

	cpumask_copy(&kbench_entry_cpus, cpu_possible_mask);
	kbench_util = alloc_percpu(struct kbench_util_cpu);
	if (!kbench_util)
		return -ENOMEM;
	kbench_entries_kobj = kobject_create_and_add("entries", trace_dir);
	if (!kbench_entries_kobj) {
		ret = -ENOMEM;
		goto err;
	}
	ret = sysfs_create_group(kbench_entries_kobj, &kbench_entries_group);
	if (ret) {
		kobject_put(kbench_entries_kobj);
		kbench_entries_kobj = NULL;
		goto err;
	}
	return 0;
err:
	free_percpu(kbench_util);
	kbench_util = NULL;
	return ret;
}

/* Called with the log off: nothing logs or counts any more after this. */
void kbench_entries_exit(void)
{
	unsigned int cpu;

	kobject_put(kbench_entries_kobj);
	kbench_entries_kobj = NULL;
	mutex_lock(&kbench_trace_lock);
	kbench_groups_set(0);
	kbench_util_set(false);
	mutex_unlock(&kbench_trace_lock);
	if (!kbench_util)
		return;
	for_each_possible_cpu(cpu)
		kvfree(per_cpu_ptr(kbench_util, cpu)->threads);
	free_percpu(kbench_util);
	kbench_util = NULL;
}
