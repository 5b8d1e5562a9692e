// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed tracepoints, and the log buffer that they and every other producer
 * (function probes, the runs' recorded windows) write into.
 *
 * The buffer is allocated up front (trace_log_entries, or trace/size) and
 * written only while the log is on, between a reset and a finalize; the
 * kernel never reads it then.  Two layouts:
 *  - percpu: every CPU owns size / nr_cpu_ids entries and a per-CPU index,
 *    bumped with an unlocked this_cpu_inc_return();
 *  - shared: one index for all CPUs, bumped with an atomic increment.
 * An entry that finds no room is not written, only counted: the indices
 * keep counting past the end, so overflow = index - room.
 *
 * Writers run with preemption disabled and test whether the log is on
 * inside that section, so turning it off and then synchronize_rcu() waits
 * for every writer in flight before finalize touches the buffer.
 *
 * START stamps live per CPU and key, tagged with the task that took them
 * and its context-switch count (see kbench.h for what that means to a
 * user).  Per-task stamps would survive migration, but a module cannot
 * extend task_struct, and a lookup table would cost more than the region
 * it times.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/ctype.h>
#include <linux/kprobes.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kbench_core.h"
#include "trace.h"

static unsigned int trace_keys = 64;
module_param(trace_keys, uint, 0444);
MODULE_PARM_DESC(trace_keys, "tracepoint keys 0..N-1: N in 1..4096 (default 64)");

static unsigned long trace_log_entries = 262144;
module_param(trace_log_entries, ulong, 0444);
MODULE_PARM_DESC(trace_log_entries,
		 "log buffer entries (32 bytes each) at load: 0..16777216 (default 262144)");

static bool trace_log_percpu = true;
module_param(trace_log_percpu, bool, 0444);
MODULE_PARM_DESC(trace_log_percpu,
		 "1: a part of the log per CPU (default); 0: one log, one atomic index");

struct kbench_stamp {
	u64 start;
	struct task_struct *task;	/* NULL: no START since the last STOP */
	unsigned long switches;
};

/* What the writers read; changed only while the log is off. */
struct kbench_log {
	bool on;
	bool percpu;
	unsigned int nr_keys;
	unsigned long room;		/* entries per CPU (percpu) or in all */
	struct kbench_log_entry *entries;
	struct kbench_stamp __percpu *stamps;	/* nr_keys per CPU */
	unsigned long __percpu *next;		/* percpu layout */
};

static struct kbench_log kbench_log ____cacheline_aligned_in_smp;
/* The shared layout's index, on its own line: every entry bumps it. */
static atomic_long_t kbench_log_next ____cacheline_aligned_in_smp;

DEFINE_MUTEX(kbench_trace_lock);

/* Protected by kbench_trace_lock. */
static enum kbench_log_state kbench_log_state;
static unsigned long kbench_log_size;
static unsigned long kbench_log_count;
static unsigned long kbench_log_overflow;
static unsigned long kbench_log_generation;
static char (*kbench_names)[KBENCH_TRACE_NAME_LEN];

static atomic_long_t kbench_invalid_keys;
static atomic_long_t kbench_foreign_stops;

static __always_inline bool kbench_log_put(u8 kind, u8 flags, u32 key,
					   u64 start, u64 cycles, u32 data)
{
	unsigned int cpu = raw_smp_processor_id();
	struct kbench_log_entry *e;
	unsigned long i;

	if (kbench_log.percpu) {
		i = this_cpu_inc_return(*kbench_log.next) - 1;
		if (unlikely(i >= kbench_log.room))
			return false;
		e = kbench_log.entries + (unsigned long)cpu * kbench_log.room + i;
	} else {
		i = atomic_long_inc_return(&kbench_log_next) - 1;
		if (unlikely(i >= kbench_log.room))
			return false;
		e = kbench_log.entries + i;
	}
	if (!in_task())
		flags |= KBENCH_LOG_F_IRQ;
	e->start = start;
	e->cycles = cycles;
	e->key = key;
	e->data = data;
	e->pid = current->pid;
	e->cpu = cpu;
	e->kind = kind;
	e->flags = flags;
	return true;
}

/**
 * kbench_trace_start - START of a keyed region (KBENCH_TRACE_START)
 * @key: 0 .. trace_keys - 1
 */
void notrace kbench_trace_start(unsigned int key)
{
	struct kbench_stamp *s;

	preempt_disable_notrace();
	/* Pairs with the release in kbench_log_reset(): stamps are clean. */
	if (!smp_load_acquire(&kbench_log.on))
		goto out;
	if (unlikely(key >= kbench_log.nr_keys)) {
		atomic_long_inc(&kbench_invalid_keys);
		goto out;
	}
	s = this_cpu_ptr(kbench_log.stamps) + key;
	/* A STOP in an interrupt sees either no stamp or a whole one. */
	WRITE_ONCE(s->task, NULL);
	barrier();
	s->switches = kbench_switches(current);
	s->start = kbench_cycles();
	barrier();
	WRITE_ONCE(s->task, current);
out:
	preempt_enable_notrace();
}
EXPORT_SYMBOL_GPL(kbench_trace_start);
NOKPROBE_SYMBOL(kbench_trace_start);

/**
 * kbench_trace_stop - STOP of a keyed region (KBENCH_TRACE_STOP)
 * @key: 0 .. trace_keys - 1
 *
 * Logs the region if this task STARTed @key on this CPU since the last STOP.
 */
void notrace kbench_trace_stop(unsigned int key)
{
	struct task_struct *task;
	struct kbench_stamp *s;
	unsigned long switches;
	u64 now, start;

	preempt_disable_notrace();
	/* Pairs with the release in kbench_log_reset(): stamps are clean. */
	if (!smp_load_acquire(&kbench_log.on))
		goto out;
	now = kbench_cycles();
	if (unlikely(key >= kbench_log.nr_keys)) {
		atomic_long_inc(&kbench_invalid_keys);
		goto out;
	}
	s = this_cpu_ptr(kbench_log.stamps) + key;
	task = READ_ONCE(s->task);
	if (likely(task == current)) {
		start = s->start;
		switches = s->switches;
		barrier();
		WRITE_ONCE(s->task, NULL);
		kbench_log_put(KBENCH_LOG_TRACEPOINT,
			       switches != kbench_switches(current) ?
			       KBENCH_LOG_F_SWITCHED : 0,
			       key, start, now - start, 0);
	} else if (task) {
		atomic_long_inc(&kbench_foreign_stops);
	}
out:
	preempt_enable_notrace();
}
EXPORT_SYMBOL_GPL(kbench_trace_stop);
NOKPROBE_SYMBOL(kbench_trace_stop);

bool notrace kbench_log_record(u8 kind, u8 flags, u32 key, u64 start,
			       u64 cycles, u32 data)
{
	bool stored = false;

	preempt_disable_notrace();
	/* Pairs with the release in kbench_log_reset(): indices are zero. */
	if (smp_load_acquire(&kbench_log.on))
		stored = kbench_log_put(kind, flags, key, start, cycles, data);
	preempt_enable_notrace();
	return stored;
}
EXPORT_SYMBOL_GPL(kbench_log_record);
NOKPROBE_SYMBOL(kbench_log_record);

bool kbench_log_is_on(void)
{
	/* Pairs with the release in kbench_log_reset(). */
	return smp_load_acquire(&kbench_log.on);
}
NOKPROBE_SYMBOL(kbench_log_is_on);

unsigned int kbench_trace_keys(void)
{
	return kbench_log.nr_keys;
}
EXPORT_SYMBOL_GPL(kbench_trace_keys);

static bool kbench_name_valid(const char *name)
{
	size_t len = strnlen(name, KBENCH_TRACE_NAME_LEN), i;

	if (!len || len >= KBENCH_TRACE_NAME_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && !strchr("_.:-", name[i]))
			return false;
	return true;
}

int kbench_trace_name(unsigned int key, const char *name)
{
	if (key >= kbench_log.nr_keys || (name && !kbench_name_valid(name)))
		return -EINVAL;
	mutex_lock(&kbench_trace_lock);
	if (name)
		strscpy(kbench_names[key], name, KBENCH_TRACE_NAME_LEN);
	else
		kbench_names[key][0] = '\0';
	mutex_unlock(&kbench_trace_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(kbench_trace_name);

/* Turn the log off and wait until no writer is inside it. */
static void kbench_log_off(void)
{
	if (!kbench_log.on)
		return;
	WRITE_ONCE(kbench_log.on, false);
	synchronize_rcu();
}

static unsigned long kbench_log_room(bool percpu, unsigned long size)
{
	return percpu ? size / nr_cpu_ids : size;
}

/* ResetLog: forget every entry and stamp, then log. */
int kbench_log_reset(void)
{
	unsigned int cpu;

	lockdep_assert_held(&kbench_trace_lock);
	if (!kbench_log.room)
		return -ENOSPC;
	kbench_log_off();
	for_each_possible_cpu(cpu) {
		*per_cpu_ptr(kbench_log.next, cpu) = 0;
		memset(per_cpu_ptr(kbench_log.stamps, cpu), 0,
		       kbench_log.nr_keys * sizeof(struct kbench_stamp));
	}
	atomic_long_set(&kbench_log_next, 0);
	atomic_long_set(&kbench_invalid_keys, 0);
	atomic_long_set(&kbench_foreign_stops, 0);
	kbench_log_count = 0;
	kbench_log_overflow = 0;
	kbench_log_generation++;
	kbench_util_reset();
	kbench_log_state = KBENCH_LOG_LOGGING;
	/* Writers that see the log on see the cleared indices and stamps. */
	smp_store_release(&kbench_log.on, true);
	return 0;
}

/*
 * FinalizeLog: stop logging and make the entries readable, those of each
 * CPU after those of the CPU before it.  No effect unless logging.
 */
void kbench_log_finalize(void)
{
	unsigned long total = 0, overflow = 0, next, n;
	unsigned int cpu;

	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_log_state != KBENCH_LOG_LOGGING)
		return;
	kbench_log_off();
	kbench_util_finalize();
	if (kbench_log.percpu) {
		for_each_possible_cpu(cpu) {
			struct kbench_log_entry *seg;

			next = *per_cpu_ptr(kbench_log.next, cpu);
			n = min(next, kbench_log.room);
			seg = kbench_log.entries + (unsigned long)cpu *
			      kbench_log.room;
			if (n && seg != kbench_log.entries + total)
				memmove(kbench_log.entries + total, seg,
					n * sizeof(*seg));
			total += n;
			overflow += next - n;
			cond_resched();
		}
	} else {
		next = atomic_long_read(&kbench_log_next);
		total = min(next, kbench_log.room);
		overflow = next - total;
	}
	kbench_log_count = total;
	kbench_log_overflow = overflow;
	kbench_log_state = KBENCH_LOG_FINALIZED;
}

int kbench_log_resize(unsigned long entries)
{
	struct kbench_log_entry *buf = NULL;

	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_log_state == KBENCH_LOG_LOGGING)
		return -EBUSY;
	if (entries > KBENCH_LOG_ENTRIES_MAX)
		return -ERANGE;
	if (entries) {
		/* Zeroed: every page is touched now, not while logging. */
		buf = kvcalloc(entries, sizeof(*buf),
			       GFP_KERNEL | __GFP_NOWARN);
		if (!buf)
			return -ENOMEM;
	}
	kvfree(kbench_log.entries);
	kbench_log.entries = buf;
	kbench_log_size = entries;
	kbench_log.room = kbench_log_room(kbench_log.percpu, entries);
	kbench_log_count = 0;
	kbench_log_overflow = 0;
	kbench_log_state = KBENCH_LOG_IDLE;
	return 0;
}

int kbench_log_set_layout(bool percpu)
{
	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_log_state == KBENCH_LOG_LOGGING)
		return -EBUSY;
	kbench_log.percpu = percpu;
	kbench_log.room = kbench_log_room(percpu, kbench_log_size);
	return 0;
}

void kbench_log_get_status(struct kbench_log_status *st)
{
	lockdep_assert_held(&kbench_trace_lock);
	st->state = kbench_log_state;
	st->percpu = kbench_log.percpu;
	st->size = kbench_log_size;
	st->room = kbench_log.room;
	st->keys = kbench_log.nr_keys;
	st->entries = kbench_log_count;
	st->overflow = kbench_log_overflow;
	st->invalid_keys = atomic_long_read(&kbench_invalid_keys);
	st->foreign_stops = atomic_long_read(&kbench_foreign_stops);
	st->generation = kbench_log_generation;
}

/* The finalized entries, raw; -EBUSY while logging. */
ssize_t kbench_log_read(char *buf, loff_t pos, size_t count)
{
	size_t bytes;

	lockdep_assert_held(&kbench_trace_lock);
	if (kbench_log_state == KBENCH_LOG_LOGGING)
		return -EBUSY;
	bytes = kbench_log_count * sizeof(struct kbench_log_entry);
	if (pos < 0 || pos >= bytes)
		return 0;
	count = min_t(size_t, count, bytes - pos);
	memcpy(buf, (u8 *)kbench_log.entries + pos, count);
	return count;
}

/* "<key> <name>\n" for every named key, in key order. */
ssize_t kbench_trace_names_read(char *buf, loff_t pos, size_t count)
{
	size_t cap = (size_t)kbench_log.nr_keys * (KBENCH_TRACE_NAME_LEN + 8);
	size_t len = 0;
	unsigned int key;
	ssize_t ret = 0;
	char *text;

	lockdep_assert_held(&kbench_trace_lock);
	text = kvmalloc(cap, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	for (key = 0; key < kbench_log.nr_keys; key++)
		if (kbench_names[key][0])
			len += scnprintf(text + len, cap - len, "%u %s\n", key,
					 kbench_names[key]);
	if (pos >= 0 && pos < len) {
		ret = min_t(size_t, count, len - pos);
		memcpy(buf, text + pos, ret);
	}
	kvfree(text);
	return ret;
}

static void kbench_trace_free(void)
{
	kvfree(kbench_log.entries);
	kbench_log.entries = NULL;
	free_percpu(kbench_log.stamps);
	free_percpu(kbench_log.next);
	kfree(kbench_names);
}

int kbench_trace_init(struct kobject *root)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct kbench_log_entry) != 32);
	if (!trace_keys || trace_keys > KBENCH_TRACE_KEYS_MAX) {
		pr_err("trace_keys must be in 1..%u\n", KBENCH_TRACE_KEYS_MAX);
		return -EINVAL;
	}
	if (trace_log_entries > KBENCH_LOG_ENTRIES_MAX) {
		pr_err("trace_log_entries must be at most %lu\n",
		       KBENCH_LOG_ENTRIES_MAX);
		return -EINVAL;
	}
	kbench_log.nr_keys = trace_keys;
	kbench_log.percpu = trace_log_percpu;
	kbench_log.stamps = __alloc_percpu(trace_keys *
					   sizeof(struct kbench_stamp),
					   __alignof__(struct kbench_stamp));
	kbench_log.next = alloc_percpu(unsigned long);
	kbench_names = kcalloc(trace_keys, KBENCH_TRACE_NAME_LEN, GFP_KERNEL);
	ret = -ENOMEM;
	if (!kbench_log.stamps || !kbench_log.next || !kbench_names)
		goto err;
	mutex_lock(&kbench_trace_lock);
	ret = kbench_log_resize(trace_log_entries);
	mutex_unlock(&kbench_trace_lock);
	if (ret) {
		pr_err("cannot allocate a log of %lu entries\n",
		       trace_log_entries);
		goto err;
	}
	ret = kbench_trace_sysfs_add(root);
	if (ret)
		goto err;
	return 0;
err:
	kbench_trace_free();
	return ret;
}

void kbench_trace_exit(void)
{
	/* Waits for readers and writers inside the attributes. */
	kbench_trace_sysfs_del();
	mutex_lock(&kbench_trace_lock);
	kbench_funcs_clear();
	kbench_log_off();
	mutex_unlock(&kbench_trace_lock);
	kbench_trace_free();
}
