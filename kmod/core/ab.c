// SPDX-License-Identifier: GPL-2.0
/*
 * A/B inside one kthread: two or more sides (a benchmark with parameter
 * values of its own, e.g. "spin loops=400" and "spin loops=404", or
 * benchmarks of two modules) alternate in short slots within one run.
 *
 * Every side has its own context, dataset and setup(), all made before the
 * first slot.  A block runs each side twice, in a random order followed by
 * its mirror image (ABBA or BAAB for two sides), so that a drift linear
 * over the block adds the same to every side; the order comes from the LCG
 * of kbench.h seeded with `order_seed` (docs/sysfs-ABI.md gives the exact
 * shuffle).  A slot is `slot_samples` samples of `batch` calls of one side,
 * taken with interrupts or preemption off if that side asks for it, never
 * cut: between slots the thread reschedules and checks for an abort.
 *
 * Each recorded sample says its side and slot, and carries flags when the
 * CPU took an interrupt or NMI, or the thread was switched out, during it:
 * after every sample the CPU's interrupt counters and the thread's context
 * switches are read again (outside the timed region) and compared.
 *
 * The run holds every benchmark it times (their modules cannot be
 * unloaded meanwhile) and claims each one as its own run would (a run of
 * it, or a store to its attributes, gets -EBUSY).  Unloading kbench.ko
 * aborts it.
 */
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/kernel_stat.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#ifdef CONFIG_X86
#include <asm/hardirq.h>
#endif

#include "ab.h"
#include "trace.h"

struct kbench_ab_side {
	struct kbench_entry *entry;		/* held: kbench_entry_get() */
	union kbench_param_value *values;	/* this side's parameters */
	union kbench_param_value *saved;	/* the attributes' meanwhile */
	u64 seed;
	u32 dataset_size;
	bool irqs_off;
	bool preempt_off;

	struct kbench_ctx ctx;
	u32 *dataset;
	u32 next;		/* dataset index of the next call */
	bool claimed;		/* holds entry->run_lock, entry->running set */
	bool set_up;
	u64 overhead;
	char report[KBENCH_REPORT_LEN];
};

struct kbench_ab_run {
	const struct kbench_ab_config *cfg;
	const bool *dying;	/* kbench.ko is being unloaded */
	unsigned int nr_sides;
	struct kbench_ab_side sides[KBENCH_AB_SIDES_MAX];
	struct kbench_ab_record *records;
	u32 nr_records;
	u32 slots;		/* recorded slots begun */
	u32 blocks;		/* recorded blocks completed */
	u64 order_state;	/* the LCG drawing each block's order */
	u64 slot_max;		/* cycles */
	u64 *overhead_buf;
	bool abort;
	int failed_side;
	int error;
	struct completion done;
};

/* Interrupts and NMIs this CPU has taken so far (a sum of its counters). */
static __always_inline unsigned long kbench_ab_irqs(void)
{
	unsigned long n = this_cpu_read(kstat.irqs_sum);

#ifdef CONFIG_X86
	n += this_cpu_read(irq_stat.__nmi_count);
	n += this_cpu_read(irq_stat.x86_platform_ipis);
	n += this_cpu_read(irq_stat.apic_irq_work_irqs);
#ifdef CONFIG_X86_LOCAL_APIC
	n += this_cpu_read(irq_stat.apic_timer_irqs);
#endif
#ifdef CONFIG_SMP
	n += this_cpu_read(irq_stat.irq_resched_count);
	n += this_cpu_read(irq_stat.irq_call_count);
#endif
#endif
	return n;
}

static bool kbench_ab_should_stop(const struct kbench_ab_run *r)
{
	unsigned int i;

	if (READ_ONCE(r->abort) || READ_ONCE(*r->dying))
		return true;
	for (i = 0; i < r->nr_sides; i++)
		if (READ_ONCE(r->sides[i].entry->dying))
			return true;
	return false;
}

static void kbench_ab_release(struct kbench_ab_side *s)
{
	kfree(s->values);
	kfree(s->saved);
	kvfree(s->dataset);
	if (s->entry)
		kbench_entry_put(s->entry);
	memset(s, 0, sizeof(*s));
}

/* Next word of *@rest separated by blanks, or NULL. */
static char *kbench_ab_word(char **rest)
{
	char *word;

	do {
		word = strsep(rest, " \t");
	} while (word && !*word);
	return word;
}

/* One "key=value" of a side: a knob of the side or a parameter. */
static int kbench_ab_parse_pair(struct kbench_ab_side *s, const char *key,
				const char *val, bool *given)
{
	const struct kbench *b = s->entry->bench;
	unsigned int nr = b->nr_params, i;
	u64 v;
	int ret;

	for (i = 0; i < nr; i++)
		if (!strcmp(key, b->params[i].name))
			break;
	if (i == nr) {
		static const char * const knobs[] = {
			"seed", "dataset_size", "irqs_off", "preempt_off",
		};

		for (i = 0; i < ARRAY_SIZE(knobs); i++)
			if (!strcmp(key, knobs[i]))
				break;
		if (i == ARRAY_SIZE(knobs))
			return -EINVAL;
		i += nr;
	}
	if (given[i])
		return -EINVAL;
	given[i] = true;
	if (i < nr)
		return kbench_param_parse(&b->params[i], val, &s->values[i]);
	switch (i - nr) {
	case 0:
		return kbench_parse_u64(val, 0, U64_MAX, &s->seed);
	case 1:
		ret = kbench_parse_u64(val, 1, KBENCH_DATASET_MAX, &v);
		s->dataset_size = v;
		return ret;
	case 2:
		ret = kbench_parse_u64(val, 0, 1, &v);
		s->irqs_off = v;
		return ret;
	default:
		ret = kbench_parse_u64(val, 0, 1, &v);
		s->preempt_off = v;
		return ret;
	}
}

/*
 * kbench_ab_parse - one line of `sides` into @s, holding its benchmark:
 * "<bench>[ <key>=<value>]...", blanks between words.  Parameters not
 * named keep the attribute's value of this moment.  With @canonical, the
 * line is written there with single spaces.  Returns 0, -ENOENT (no such
 * benchmark), -EINVAL (a malformed word, an unknown or repeated key),
 * -ERANGE, -EOPNOTSUPP (irqs_off=1 where the benchmark forbids it) or
 * -ENOMEM; on error @s holds nothing.
 */
static int kbench_ab_parse(const char *line, struct kbench_ab_side *s,
			   char *canonical, size_t size)
{
	char text[KBENCH_AB_LINE_MAX];
	const struct kbench *b;
	char *rest = text, *word;
	bool *given = NULL;
	unsigned int i;
	int len = 0, ret;

	memset(s, 0, sizeof(*s));
	s->seed = 1;
	s->dataset_size = 4096;
	if (strscpy(text, line, sizeof(text)) < 0)
		return -EINVAL;
	word = kbench_ab_word(&rest);
	if (!word)
		return -EINVAL;
	s->entry = kbench_entry_get(word);
	if (!s->entry)
		return -ENOENT;
	b = s->entry->bench;
	if (canonical)
		len = scnprintf(canonical, size, "%s", word);
	ret = -ENOMEM;
	s->values = kcalloc(max(b->nr_params, 1U), sizeof(*s->values),
			    GFP_KERNEL);
	s->saved = kcalloc(max(b->nr_params, 1U), sizeof(*s->saved),
			   GFP_KERNEL);
	given = kcalloc(b->nr_params + 4, sizeof(*given), GFP_KERNEL);
	if (!s->values || !s->saved || !given)
		goto err;
	mutex_lock(&s->entry->lock);
	for (i = 0; i < b->nr_params; i++)
		s->values[i] = b->params[i].value;
	mutex_unlock(&s->entry->lock);

	ret = 0;
	while (!ret && (word = kbench_ab_word(&rest))) {
		char *eq = strchr(word, '=');

		if (!eq || eq == word) {
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		ret = kbench_ab_parse_pair(s, word, eq + 1, given);
		if (canonical)
			len += scnprintf(canonical + len, size - len, " %s=%s",
					 word, eq + 1);
	}
	if (!ret && s->irqs_off && (b->flags & KBENCH_F_NO_IRQS_OFF))
		ret = -EOPNOTSUPP;
err:
	kfree(given);
	if (ret)
		kbench_ab_release(s);
	return ret;
}

/*
 * kbench_ab_check_line - is @line a valid side now?  Writes it with single
 * spaces into @canonical.  Errors as kbench_ab_parse().
 */
int kbench_ab_check_line(const char *line, char *canonical, size_t size)
{
	struct kbench_ab_side s;
	int ret = kbench_ab_parse(line, &s, canonical, size);

	if (!ret)
		kbench_ab_release(&s);
	return ret;
}

static void kbench_ab_enter(const struct kbench_ab_side *s,
			    unsigned long *flags)
{
	if (s->irqs_off)
		local_irq_save(*flags);
	else if (s->preempt_off)
		preempt_disable();
}

static void kbench_ab_leave(const struct kbench_ab_side *s,
			    unsigned long flags)
{
	if (s->irqs_off)
		local_irq_restore(flags);
	else if (s->preempt_off)
		preempt_enable();
}

/* Claim every benchmark of the run as a run of it would (-EBUSY if busy). */
static int kbench_ab_claim(struct kbench_ab_run *r)
{
	unsigned int i, j;

	for (i = 0; i < r->nr_sides; i++) {
		struct kbench_entry *e = r->sides[i].entry;

		for (j = 0; j < i; j++)
			if (r->sides[j].entry == e)
				break;
		if (j < i)
			continue;	/* claimed with side j */
		if (!mutex_trylock(&e->run_lock)) {
			r->failed_side = i;
			return -EBUSY;
		}
		mutex_lock(&e->lock);
		e->running = true;
		mutex_unlock(&e->lock);
		r->sides[i].claimed = true;
		if (READ_ONCE(e->dying))
			return -ENODEV;
	}
	return 0;
}

static void kbench_ab_unclaim(struct kbench_ab_run *r)
{
	unsigned int i;

	for (i = 0; i < r->nr_sides; i++) {
		struct kbench_entry *e = r->sides[i].entry;

		if (!r->sides[i].claimed)
			continue;
		mutex_lock(&e->lock);
		e->running = false;
		mutex_unlock(&e->lock);
		mutex_unlock(&e->run_lock);
		r->sides[i].claimed = false;
	}
}

/* setup() with this side's parameter values in place of the attributes'. */
static int kbench_ab_setup(struct kbench_ab_side *s)
{
	struct kbench_entry *e = s->entry;
	struct kbench *b = e->bench;
	unsigned int i;
	int ret = 0;

	if (!b->setup)
		return 0;
	mutex_lock(&e->lock);
	for (i = 0; i < b->nr_params; i++) {
		s->saved[i] = b->params[i].value;
		b->params[i].value = s->values[i];
	}
	mutex_unlock(&e->lock);
	ret = b->setup(&s->ctx);
	mutex_lock(&e->lock);
	for (i = 0; i < b->nr_params; i++)
		b->params[i].value = s->saved[i];
	mutex_unlock(&e->lock);
	return ret;
}

/* Median of KBENCH_OVERHEAD_PAIRS empty regions, in this side's mode. */
static void kbench_ab_overhead(struct kbench_ab_run *r,
			       struct kbench_ab_side *s)
{
	u32 n = KBENCH_OVERHEAD_PAIRS, i = 0;

	while (i < n) {
		unsigned long flags = 0;
		u32 end = min(i + 256, n);

		cond_resched();
		kbench_ab_enter(s, &flags);
		for (; i < end; i++) {
			u64 t0 = kbench_cycles();

			barrier();
			r->overhead_buf[i] = kbench_cycles() - t0;
		}
		kbench_ab_leave(s, flags);
	}
	s->overhead = kbench_select(r->overhead_buf, n, kbench_rank(n, 50));
}

/*
 * The calls of one slot, untimed and with interrupts on: -ERANGE if they
 * take longer than KBENCH_AB_SLOT_MAX_US (then no slot of this side may
 * run with interrupts or preemption off, or hold the CPU that long).
 */
static int kbench_ab_check_slot(struct kbench_ab_run *r,
				struct kbench_ab_side *s)
{
	const struct kbench *b = s->entry->bench;
	u64 calls = (u64)r->cfg->slot_samples * r->cfg->batch, k;
	u64 t0 = kbench_cycles();

	for (k = 0; k < calls; k++) {
		b->call(&s->ctx, s->next);
		if (++s->next == s->ctx.dataset_size)
			s->next = 0;
		if (kbench_cycles() - t0 > r->slot_max)
			return -ERANGE;
	}
	return 0;
}

/* One slot of side @s; its samples go to @out unless it is NULL. */
static void kbench_ab_slot(struct kbench_ab_run *r, struct kbench_ab_side *s,
			   u16 side, struct kbench_ab_record *out, u32 slot)
{
	void (*call)(struct kbench_ctx *ctx, u32 i) = s->entry->bench->call;
	u32 n = r->cfg->slot_samples, batch = r->cfg->batch;
	u32 size = s->ctx.dataset_size, next = s->next, j, k;
	unsigned long flags = 0, irqs, switches;

	kbench_ab_enter(s, &flags);
	irqs = kbench_ab_irqs();
	switches = kbench_switches(current);
	for (j = 0; j < n; j++) {
		unsigned long now_irqs, now_switches;
		u64 t0, t1;

		t0 = kbench_cycles();
		barrier();
		for (k = 0; k < batch; k++) {
			call(&s->ctx, next);
			if (++next == size)
				next = 0;
		}
		barrier();
		t1 = kbench_cycles();
		now_irqs = kbench_ab_irqs();
		now_switches = kbench_switches(current);
		if (out) {
			out[j].cycles = t1 - t0;
			out[j].slot = slot;
			out[j].side = side;
			out[j].flags = (now_irqs != irqs ? KBENCH_AB_F_IRQ : 0) |
				       (now_switches != switches ?
					KBENCH_AB_F_SWITCH : 0);
		}
		irqs = now_irqs;
		switches = now_switches;
	}
	kbench_ab_leave(s, flags);
	s->next = next;
}

/*
 * One block: a random order of the sides (Fisher-Yates from the LCG: for
 * i = k-1 .. 1, swap order[i] with order[next() % (i + 1)]), then that
 * order reversed.  Recorded, or a warm-up block when !@record.
 */
static int kbench_ab_block(struct kbench_ab_run *r, bool record)
{
	unsigned int k = r->nr_sides, i, pos;
	u8 order[KBENCH_AB_SIDES_MAX];

	for (i = 0; i < k; i++)
		order[i] = i;
	for (i = k - 1; i > 0; i--) {
		u32 j = kbench_lcg_next(&r->order_state) % (i + 1);

		swap(order[i], order[j]);
	}
	for (pos = 0; pos < 2 * k; pos++) {
		u8 side = pos < k ? order[pos] : order[2 * k - 1 - pos];
		struct kbench_ab_record *out = NULL;

		if (kbench_ab_should_stop(r))
			return -EINTR;
		cond_resched();
		if (record) {
			out = r->records + r->nr_records;
			r->nr_records += r->cfg->slot_samples;
		}
		kbench_ab_slot(r, &r->sides[side], side, out, r->slots);
		if (record)
			r->slots++;
	}
	if (record)
		r->blocks++;
	return 0;
}

static int kbench_ab_measure(struct kbench_ab_run *r)
{
	const struct kbench_ab_config *cfg = r->cfg;
	unsigned int i;
	u32 b;
	int ret;

	for (i = 0; i < r->nr_sides; i++) {
		if (kbench_ab_should_stop(r))
			return -EINTR;
		kbench_ab_overhead(r, &r->sides[i]);
		ret = kbench_ab_check_slot(r, &r->sides[i]);
		if (ret) {
			r->failed_side = i;
			return ret;
		}
	}
	for (b = 0; b < cfg->warmup; b++) {
		ret = kbench_ab_block(r, false);
		if (ret)
			return ret;
	}
	for (b = 0; b < cfg->blocks; b++) {
		ret = kbench_ab_block(r, true);
		if (ret)
			return ret;
	}
	return 0;
}

static int kbench_ab_thread(void *data)
{
	struct kbench_ab_run *r = data;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < r->nr_sides && !ret; i++) {
		ret = kbench_ab_setup(&r->sides[i]);
		if (ret)
			r->failed_side = i;
		else
			r->sides[i].set_up = true;
	}
	if (!ret)
		ret = kbench_ab_measure(r);
	for (i = 0; i < r->nr_sides; i++) {
		struct kbench_ab_side *s = &r->sides[i];
		const struct kbench *b = s->entry->bench;

		if (!s->set_up)
			continue;
		if (b->report && r->nr_records)
			b->report(&s->ctx, s->report, sizeof(s->report));
		if (b->teardown)
			b->teardown(&s->ctx);
	}
	r->error = ret;
	/* Never returns into module text after signalling the reader. */
	kthread_complete_and_exit(&r->done, 0);
}

/* Parse, hold and prepare every side; datasets made from their seeds. */
static int kbench_ab_prepare(struct kbench_ab_run *r)
{
	const struct kbench_ab_config *cfg = r->cfg;
	u64 records, calls;
	unsigned int i;
	int ret;

	for (i = 0; i < r->nr_sides; i++) {
		struct kbench_ab_side *s = &r->sides[i];
		u64 state;
		u32 j;

		ret = kbench_ab_parse(cfg->lines[i], s, NULL, 0);
		if (ret) {
			r->failed_side = i;
			return ret;
		}
		s->dataset = kvmalloc_array(s->dataset_size, sizeof(u32),
					    GFP_KERNEL);
		if (!s->dataset)
			return -ENOMEM;
		state = s->seed;
		for (j = 0; j < s->dataset_size; j++)
			s->dataset[j] = kbench_lcg_next(&state);
		s->ctx.dataset = s->dataset;
		s->ctx.dataset_size = s->dataset_size;
		s->ctx.cpu = cfg->cpu;
		s->ctx.atomic = s->irqs_off || s->preempt_off;
		s->ctx.side = i;
	}
	records = (u64)cfg->blocks * 2 * r->nr_sides * cfg->slot_samples;
	calls = ((u64)cfg->blocks + cfg->warmup) * 2 * cfg->slot_samples *
		cfg->batch;
	if (records > KBENCH_AB_RECORDS_MAX || calls > KBENCH_CALLS_MAX)
		return -ERANGE;
	r->records = kvmalloc_array(records, sizeof(*r->records), GFP_KERNEL);
	r->overhead_buf = kvmalloc_array(KBENCH_OVERHEAD_PAIRS, sizeof(u64),
					 GFP_KERNEL);
	if (!r->records || !r->overhead_buf)
		return -ENOMEM;
	/* Touch every page now rather than inside a slot. */
	memset(r->records, 0, records * sizeof(*r->records));
	memset(r->overhead_buf, 0, KBENCH_OVERHEAD_PAIRS * sizeof(u64));
	return 0;
}

/* Run the thread, bound to cfg->cpu or not; -EINTR if a signal cut it. */
static int kbench_ab_start(struct kbench_ab_run *r)
{
	int cpu = r->cfg->cpu;
	struct task_struct *t;
	int ret = 0;

	if (cpu >= 0) {
		cpus_read_lock();
		if (!cpu_online(cpu))
			ret = -EINVAL;
		cpus_read_unlock();
		if (ret)
			return ret;
	}
	t = kthread_create(kbench_ab_thread, r, "kbench/ab");
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (cpu >= 0)
		kthread_bind(t, cpu);
	wake_up_process(t);
	if (wait_for_completion_interruptible(&r->done)) {
		WRITE_ONCE(r->abort, true);
		wait_for_completion(&r->done);
		ret = -EINTR;
	}
	if (r->error && r->error != -EINTR)
		return r->error;
	if (r->error == -EINTR)
		ret = -EINTR;
	if (ret == -EINTR && kbench_ab_should_stop(r) && !READ_ONCE(r->abort))
		ret = -ENODEV;	/* unloading, not a signal */
	return ret;
}

/* Per side: its recorded samples (and which were flagged). */
static void kbench_ab_tally(struct kbench_ab_run *r,
			    struct kbench_ab_result *res)
{
	u32 i, slot = U32_MAX;
	bool slot_disturbed = false;

	res->disturbed_slots = 0;
	for (i = 0; i < r->nr_records; i++) {
		const struct kbench_ab_record *rec = &r->records[i];
		struct kbench_ab_side_result *sr = &res->sides[rec->side];

		if (rec->slot != slot) {
			slot = rec->slot;
			slot_disturbed = false;
		}
		sr->count++;
		if (rec->flags) {
			sr->disturbed++;
			if (!slot_disturbed)
				res->disturbed_slots++;
			slot_disturbed = true;
		}
	}
}

static int kbench_ab_format(struct kbench_ab_run *r,
			    const struct kbench_ab_result *res, char *buf)
{
	const struct kbench_ab_config *cfg = r->cfg;
	u64 *values = NULL, *scratch = NULL;
	u32 most = 0, i;
	unsigned int s;
	int len = 0;

	for (s = 0; s < r->nr_sides; s++)
		most = max(most, res->sides[s].count);
	values = kvmalloc_array(max(most, 1U), sizeof(u64), GFP_KERNEL);
	scratch = kvmalloc_array(max(most, 1U), sizeof(u64), GFP_KERNEL);
	if (!values || !scratch) {
		kvfree(values);
		kvfree(scratch);
		return -ENOMEM;
	}
	for (s = 0; s < r->nr_sides; s++) {
		struct kbench_stats st;
		u32 n = 0;

		for (i = 0; i < r->nr_records; i++)
			if (r->records[i].side == s)
				values[n++] = r->records[i].cycles;
		kbench_summarize(values, n, scratch, &st);
		len += scnprintf(buf + len, PAGE_SIZE - len, "side%u bench=%s ",
				 s, res->sides[s].bench);
		len += kbench_format_stats(buf + len, PAGE_SIZE - len, &st,
					   cfg->batch, r->sides[s].overhead);
		len += scnprintf(buf + len, PAGE_SIZE - len,
				 " overhead_sample=%llu disturbed=%u%s\n",
				 r->sides[s].overhead, res->sides[s].disturbed,
				 r->sides[s].report);
	}
	len += scnprintf(buf + len, PAGE_SIZE - len,
			 "blocks=%u slots=%u slot_samples=%u batch=%u warmup=%u disturbed_slots=%u tsc_khz=%u order_seed=%llu\n",
			 res->blocks, res->slots, cfg->slot_samples, cfg->batch,
			 cfg->warmup, res->disturbed_slots, kbench_tsc_khz,
			 cfg->order_seed);
	kvfree(values);
	kvfree(scratch);
	return len;
}

/*
 * kbench_ab_run - one A/B run of @cfg; the summary goes to the PAGE_SIZE
 * buffer @buf, and the run's records, counts and error to @res (whose
 * earlier records the caller has freed).  Returns the length of the
 * summary or a negative errno: -EINTR (a signal) and -ENODEV (unloading)
 * keep the samples taken so far.
 */
ssize_t kbench_ab_run(const struct kbench_ab_config *cfg,
		      struct kbench_ab_result *res, const bool *dying,
		      char *buf)
{
	struct kbench_ab_run *r;
	unsigned int i;
	ssize_t ret;

	memset(res, 0, sizeof(*res));
	res->failed_side = -1;
	res->batch = cfg->batch;
	res->slot_samples = cfg->slot_samples;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->cfg = cfg;
	r->dying = dying;
	r->nr_sides = cfg->nr_sides;
	r->failed_side = -1;
	r->order_state = cfg->order_seed;
	r->slot_max = (u64)kbench_tsc_khz * KBENCH_AB_SLOT_MAX_US / 1000;
	init_completion(&r->done);

	ret = -EINVAL;
	if (r->nr_sides < 2)
		goto out;
	ret = kbench_ab_prepare(r);
	if (!ret)
		ret = kbench_ab_claim(r);
	if (!ret)
		ret = kbench_ab_start(r);
	if (ret && ret != -EINTR && ret != -ENODEV)
		goto out;

	for (i = 0; i < r->nr_sides; i++)
		strscpy(res->sides[i].bench, r->sides[i].entry->bench->name,
			sizeof(res->sides[i].bench));
	res->blocks = r->blocks;
	res->slots = r->slots;
	res->nr_records = r->nr_records;
	kbench_ab_tally(r, res);
	if (!ret)
		ret = kbench_ab_format(r, res, buf);
	if (ret >= 0 || ret == -EINTR || ret == -ENODEV) {
		res->records = r->records;
		r->records = NULL;
	}
out:
	res->nr_sides = r->nr_sides;
	for (i = 0; i < r->nr_sides; i++) {
		if (r->sides[i].entry && !res->sides[i].bench[0])
			strscpy(res->sides[i].bench,
				r->sides[i].entry->bench->name,
				sizeof(res->sides[i].bench));
		res->sides[i].overhead = r->sides[i].overhead;
	}
	res->failed_side = r->failed_side;
	res->error = ret < 0 ? ret : 0;
	if (ret >= 0)
		res->result = KBENCH_RESULT_OK;
	else if (ret == -EINTR || ret == -ENODEV)
		res->result = KBENCH_RESULT_INTERRUPTED;
	else
		res->result = KBENCH_RESULT_ERROR;
	if (!res->records) {
		res->nr_records = 0;
		res->blocks = 0;
		res->slots = 0;
	}
	kbench_ab_unclaim(r);
	for (i = 0; i < r->nr_sides; i++)
		kbench_ab_release(&r->sides[i]);
	kvfree(r->records);
	kvfree(r->overhead_buf);
	kfree(r);
	return ret;
}
