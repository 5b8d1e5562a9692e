// SPDX-License-Identifier: GPL-2.0
/*
 * Perf event counters around the recorded loop of a run (the `counters`
 * knob of a benchmark, and of ab/): the kernel's perf_event API, one
 * counter per event on the measuring kthread itself (task-bound, any CPU),
 * so that it counts what that thread does and nothing else, wherever the
 * scheduler puts it.
 *
 * The thread makes its events disabled, before its first timed region;
 * enables them just before the recorded loop (A/B: before each recorded
 * slot of its side) and disables them just after, outside any region with
 * interrupts or preemption off; reads them when the loop is over and
 * releases them before it exits.  Each event stands alone (no group): the
 * kernel multiplexes hardware events that do not fit its counters, as
 * perf stat does, and enabled/running times say how long each counted.
 *
 * Software events exist everywhere.  Hardware events need a PMU: where the
 * kernel has none (a guest without a virtual PMU) making them fails, and
 * the event is shown with that errno instead of a value, never left out.
 */
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/kernel.h>

#include "counters.h"

struct kbench_event_desc {
	const char *name;
	u32 type;
	u64 config;
	const char *unit;
};

/* In the order of docs/sysfs-ABI.md (and of perf stat). */
static const struct kbench_event_desc kbench_events[KBENCH_NR_EVENTS] = {
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns" },
	{ "context-switches", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES, "count" },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
	  "count" },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
	  "count" },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "count" },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
	  "count" },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
	  "count" },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
	  "count" },
	{ "cache-references", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES, "count" },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
	  "count" },
};

#ifdef CONFIG_PERF_EVENTS

/*
 * kbench_counters_create - make every event, disabled, counting the
 * calling thread.  An event that cannot be made keeps its errno; the
 * others count all the same.
 */
void kbench_counters_create(struct kbench_counters *c)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		struct perf_event_attr attr = {
			.type = kbench_events[i].type,
			.size = sizeof(attr),
			.config = kbench_events[i].config,
			.disabled = 1,
			.exclude_hv = 1,
		};
		struct perf_event *event;

		event = perf_event_create_kernel_counter(&attr, -1, current,
							 NULL, NULL);
		if (IS_ERR(event)) {
			c->event[i] = NULL;
			c->error[i] = PTR_ERR(event);
		} else {
			c->event[i] = event;
			c->error[i] = 0;
		}
	}
}

/* Process context, interrupts on: each call may take the context's lock. */
void kbench_counters_enable(struct kbench_counters *c)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++)
		if (c->event[i])
			perf_event_enable(c->event[i]);
}

void kbench_counters_disable(struct kbench_counters *c)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++)
		if (c->event[i])
			perf_event_disable(c->event[i]);
}

/* Add what each event of @c counted so far (and how long) to @sum. */
void kbench_counters_add(struct kbench_counters *c, struct kbench_counts *sum)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		u64 enabled = 0, running = 0, value;

		if (!c->event[i]) {
			if (!sum->error[i])
				sum->error[i] = c->error[i];
			continue;
		}
		value = perf_event_read_value(c->event[i], &enabled, &running);
		sum->value[i] += value;
		sum->enabled_ns[i] += enabled;
		sum->running_ns[i] += running;
	}
	sum->counted = true;
	sum->sets++;
}

void kbench_counters_release(struct kbench_counters *c)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		if (c->event[i])
			perf_event_release_kernel(c->event[i]);
		c->event[i] = NULL;
	}
}

#else /* !CONFIG_PERF_EVENTS */

void kbench_counters_create(struct kbench_counters *c)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		c->event[i] = NULL;
		c->error[i] = -EOPNOTSUPP;
	}
}

void kbench_counters_enable(struct kbench_counters *c)
{
}

void kbench_counters_disable(struct kbench_counters *c)
{
}

void kbench_counters_add(struct kbench_counters *c, struct kbench_counts *sum)
{
	unsigned int i;

	for (i = 0; i < KBENCH_NR_EVENTS; i++)
		if (!sum->error[i])
			sum->error[i] = c->error[i];
	sum->counted = true;
	sum->sets++;
}

void kbench_counters_release(struct kbench_counters *c)
{
}

#endif /* CONFIG_PERF_EVENTS */

/* Add @part (the counts of other threads) to @sum. */
void kbench_counts_merge(struct kbench_counts *sum,
			 const struct kbench_counts *part)
{
	unsigned int i;

	if (!part->counted)
		return;
	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		if (part->error[i] && !sum->error[i])
			sum->error[i] = part->error[i];
		sum->value[i] += part->value[i];
		sum->enabled_ns[i] += part->enabled_ns[i];
		sum->running_ns[i] += part->running_ns[i];
	}
	sum->counted = true;
	sum->sets += part->sets;
}

/*
 * kbench_counts_format - one line per event of @c into @buf (of @size
 * bytes), each starting with @prefix; nothing when @c did not count.
 * Returns the length written.
 */
int kbench_counts_format(char *buf, size_t size, const struct kbench_counts *c,
			 const char *prefix)
{
	unsigned int i;
	int len = 0;

	if (!c->counted)
		return 0;
	for (i = 0; i < KBENCH_NR_EVENTS; i++) {
		const struct kbench_event_desc *d = &kbench_events[i];
		const char *type = d->type == PERF_TYPE_HARDWARE ?
				   "hardware" : "software";

		len += scnprintf(buf + len, size - len,
				 "%sevent=%s type=%s unit=%s ", prefix, d->name,
				 type, d->unit);
		if (c->error[i])
			len += scnprintf(buf + len, size - len,
					 "supported=0 errno=%d\n", -c->error[i]);
		else
			len += scnprintf(buf + len, size - len,
					 "supported=1 value=%llu enabled_ns=%llu running_ns=%llu\n",
					 c->value[i], c->enabled_ns[i],
					 c->running_ns[i]);
	}
	return len;
}
