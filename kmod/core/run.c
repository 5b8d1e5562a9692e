// SPDX-License-Identifier: GPL-2.0
/*
 * One run of a benchmark: measuring kthreads (one, or one per CPU behind a
 * start barrier), the chunked timing loop, the empty-region overhead, and
 * the bookkeeping of the last run's samples.
 *
 * The thread that reads `run` only prepares, waits and summarises; the
 * timing happens in kthreads so that `cpu` pins the measurement without
 * touching the reader's affinity.  The reader waits interruptibly: a signal
 * makes every measuring thread stop at its next chunk boundary (at most
 * KBENCH_CHUNK_US plus one sample later) and the read returns -EINTR,
 * keeping the samples taken so far.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ktime.h>

#include "kbench_core.h"
#include "marks.h"

/* Room kept in the run output for the "all" line and the histogram. */
#define KBENCH_RUN_RESERVE	1536

/* Numbers the runs, so that the log tells one run's windows from another's. */
static atomic_t kbench_run_serial = ATOMIC_INIT(0);

struct kbench_run;

struct kbench_worker {
	struct kbench_run *run;
	struct kbench_ctx ctx;
	struct task_struct *task;
	struct completion done;
	u64 *samples;		/* this worker's slice of run->samples */
	u64 *overhead_buf;	/* KBENCH_OVERHEAD_PAIRS values */
	u32 nr_done;		/* recorded samples */
	u32 next;		/* dataset index of the next call */
	u64 overhead;		/* median empty region, cycles */
	int error;
	char report[KBENCH_REPORT_LEN];
	struct kbench_counters counters;	/* cfg.counters: this thread's */
	struct kbench_counts counts;		/* what they counted */
};

struct kbench_run {
	struct kbench_entry *entry;
	struct kbench *bench;
	struct kbench_config cfg;
	u32 *dataset;
	u64 *samples;		/* nr_workers * loop_count */
	u64 *overhead_bufs;
	u64 chunk_cycles;	/* longest irqs/preempt-off chunk */
	u64 atomic_sample_max;	/* longest sample allowed in such a chunk */
	bool abort;		/* set by the reader on a signal, or on error */
	atomic_t arrived;	/* start barrier of a parallel run */
	u32 serial;		/* this run's number since load, for the log */
	unsigned int nr_workers;
	struct kbench_worker workers[];
};

static bool kbench_should_stop(const struct kbench_run *r)
{
	return READ_ONCE(r->abort) || READ_ONCE(r->entry->dying);
}

static void kbench_section_enter(const struct kbench_run *r,
				 unsigned long *flags)
{
	if (r->cfg.irqs_off)
		local_irq_save(*flags);
	else if (r->cfg.preempt_off)
		preempt_disable();
}

static void kbench_section_leave(const struct kbench_run *r,
				 unsigned long flags)
{
	if (r->cfg.irqs_off)
		local_irq_restore(flags);
	else if (r->cfg.preempt_off)
		preempt_enable();
}

/*
 * kbench_timed_loop - take @n samples of @calls calls each (0: the empty
 * region), storing each sample's cycles in @out unless it is NULL.
 * Interrupts or preemption are disabled, as configured, in chunks that end
 * after the first sample finishing past chunk_cycles; between chunks the
 * thread reschedules and checks for an abort.  *@done counts the samples
 * taken, as they are taken (samples_live reads the recorded ones while the
 * run goes on).  Returns 0 or -EINTR.
 */
static int kbench_timed_loop(struct kbench_worker *w, u64 *out, u32 n,
			     u32 calls, u32 *done)
{
	struct kbench_run *r = w->run;
	void (*call)(struct kbench_ctx *ctx, u32 i) = r->bench->call;
	struct kbench_ctx *ctx = &w->ctx;
	u32 size = ctx->dataset_size;
	u32 next = w->next;
	u32 i = 0;
	int ret = 0;

	while (i < n) {
		unsigned long flags = 0;
		u64 t0, t1, end;

		if (kbench_should_stop(r)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
		kbench_section_enter(r, &flags);
		end = kbench_cycles() + r->chunk_cycles;
		do {
			u32 k;

			t0 = kbench_cycles();
			barrier();
			kbench_mark(KBENCH_MARK_START);
			for (k = 0; k < calls; k++) {
				call(ctx, next);
				if (++next == size)
					next = 0;
			}
			kbench_mark(KBENCH_MARK_STOP);
			barrier();
			t1 = kbench_cycles();
			if (out)
				out[i] = t1 - t0;
			i++;
			if (done)	/* after the sample: readers see it whole */
				smp_store_release(done, i);
		} while (i < n && t1 < end);
		kbench_section_leave(r, flags);
	}
	w->next = next;
	if (done)
		*done = i;
	return ret;
}

/* Median cost of the empty timed region, in the run's irq/preempt mode. */
static int kbench_measure_overhead(struct kbench_worker *w)
{
	u32 n = 0;
	int ret;

	ret = kbench_timed_loop(w, w->overhead_buf, KBENCH_OVERHEAD_PAIRS, 0,
				&n);
	if (n)
		w->overhead = kbench_select(w->overhead_buf, n,
					    kbench_rank(n, 50));
	return ret;
}

/*
 * With irqs or preemption off, one sample is the unit that cannot be cut:
 * refuse batches whose sample would keep them off for too long.
 */
static int kbench_check_atomic_sample(struct kbench_worker *w)
{
	struct kbench_run *r = w->run;
	u64 t0, t1;
	u32 k;

	if (!r->cfg.irqs_off && !r->cfg.preempt_off)
		return 0;
	t0 = kbench_cycles();
	for (k = 0; k < r->cfg.batch; k++) {
		r->bench->call(&w->ctx, w->next);
		if (++w->next == w->ctx.dataset_size)
			w->next = 0;
		if (!(k % 1024))
			cond_resched();
	}
	t1 = kbench_cycles();
	return t1 - t0 > r->atomic_sample_max ? -ERANGE : 0;
}

/*
 * Start barrier of a parallel run: every thread counts itself in, then
 * keeps its CPU busy with untimed calls until all have arrived.  A thread
 * that never arrives cannot hang the others: they give up after
 * KBENCH_BARRIER_TIMEOUT_MS with -ETIMEDOUT.
 */
static int kbench_barrier(struct kbench_worker *w)
{
	struct kbench_run *r = w->run;
	unsigned long deadline;

	deadline = jiffies + msecs_to_jiffies(KBENCH_BARRIER_TIMEOUT_MS);
	atomic_inc(&r->arrived);
	while (atomic_read(&r->arrived) < r->nr_workers) {
		r->bench->call(&w->ctx, w->next);
		if (++w->next == w->ctx.dataset_size)
			w->next = 0;
		if (kbench_should_stop(r))
			return -EINTR;
		if (time_after(jiffies, deadline)) {
			WRITE_ONCE(r->abort, true);
			return -ETIMEDOUT;
		}
		cond_resched();
	}
	return 0;
}

static int kbench_worker_measure(struct kbench_worker *w)
{
	struct kbench_run *r = w->run;
	int ret;

	ret = kbench_measure_overhead(w);
	if (!ret && r->nr_workers > 1)
		ret = kbench_barrier(w);
	if (!ret)
		ret = kbench_check_atomic_sample(w);
	if (!ret)
		ret = kbench_timed_loop(w, NULL, r->cfg.warmup, r->cfg.batch,
					NULL);
	if (!ret) {
		u64 t0;

		if (r->cfg.counters)
			kbench_counters_enable(&w->counters);
		/* Only the recorded samples' regions are counted (marks.h). */
		kbench_mark(KBENCH_MARK_ARM);
		t0 = kbench_cycles();
		ret = kbench_timed_loop(w, w->samples, r->cfg.loop_count,
					r->cfg.batch, &w->nr_done);
		kbench_mark(KBENCH_MARK_DISARM);
		if (r->cfg.counters)
			kbench_counters_disable(&w->counters);
		/* The recorded window, for tracepoints logged by the bench. */
		kbench_log_record(KBENCH_LOG_RUN,
				  w->ctx.cpu < 0 ? KBENCH_LOG_F_UNBOUND : 0,
				  r->serial, t0, kbench_cycles() - t0,
				  w->nr_done);
	}
	return ret;
}

static int kbench_worker_fn(void *data)
{
	struct kbench_worker *w = data;
	struct kbench_run *r = w->run;
	struct kbench *b = r->bench;
	int ret = 0;

	if (b->setup)
		ret = b->setup(&w->ctx);
	if (ret) {
		/* Do not let the other CPUs wait for this one. */
		WRITE_ONCE(r->abort, true);
	} else {
		/* Made before the first timed region, read and freed after the last. */
		if (r->cfg.counters)
			kbench_counters_create(&w->counters);
		ret = kbench_worker_measure(w);
		if (r->cfg.counters) {
			kbench_counters_add(&w->counters, &w->counts);
			kbench_counters_release(&w->counters);
		}
		if (b->report && w->nr_done)
			b->report(&w->ctx, w->report, sizeof(w->report));
		if (b->teardown)
			b->teardown(&w->ctx);
	}
	w->error = ret;
	/* Never returns into module text after signalling the reader. */
	kthread_complete_and_exit(&w->done, 0);
}

static void kbench_run_free(struct kbench_run *r)
{
	if (!r)
		return;
	kvfree(r->dataset);
	kvfree(r->samples);
	kvfree(r->overhead_bufs);
	kfree(r);
}

static struct kbench_run *kbench_run_alloc(struct kbench_entry *e,
					   const struct cpumask *cpus,
					   unsigned int nr)
{
	const struct kbench_config *cfg = &e->cfg;
	struct kbench_run *r;
	unsigned int i;
	int cpu;
	u64 state;

	r = kzalloc(struct_size(r, workers, nr), GFP_KERNEL);
	if (!r)
		return NULL;
	r->entry = e;
	r->bench = e->bench;
	r->nr_workers = nr;
	memcpy(&r->cfg, cfg, sizeof(*cfg));
	r->chunk_cycles = (u64)kbench_tsc_khz * KBENCH_CHUNK_US / 1000;
	r->atomic_sample_max = (u64)kbench_tsc_khz *
			       KBENCH_ATOMIC_SAMPLE_MAX_US / 1000;
	atomic_set(&r->arrived, 0);
	r->serial = atomic_inc_return(&kbench_run_serial);

	r->dataset = kvmalloc_array(cfg->dataset_size, sizeof(u32),
				    GFP_KERNEL);
	r->samples = kvmalloc_array((size_t)nr * cfg->loop_count, sizeof(u64),
				    GFP_KERNEL);
	r->overhead_bufs = kvmalloc_array((size_t)nr * KBENCH_OVERHEAD_PAIRS,
					  sizeof(u64), GFP_KERNEL);
	if (!r->dataset || !r->samples || !r->overhead_bufs) {
		kbench_run_free(r);
		return NULL;
	}
	/* Touch every page now rather than inside a timed region. */
	memset(r->samples, 0, (size_t)nr * cfg->loop_count * sizeof(u64));
	memset(r->overhead_bufs, 0,
	       (size_t)nr * KBENCH_OVERHEAD_PAIRS * sizeof(u64));
	state = cfg->seed;
	for (i = 0; i < cfg->dataset_size; i++)
		r->dataset[i] = kbench_lcg_next(&state);

	i = 0;
	for_each_cpu(cpu, cpus) {
		struct kbench_worker *w = &r->workers[i];

		w->run = r;
		w->ctx.dataset = r->dataset;
		w->ctx.dataset_size = cfg->dataset_size;
		w->ctx.cpu = cpu;
		w->ctx.worker = i;
		w->ctx.atomic = cfg->irqs_off || cfg->preempt_off;
		w->samples = r->samples + (size_t)i * cfg->loop_count;
		w->overhead_buf = r->overhead_bufs +
				  (size_t)i * KBENCH_OVERHEAD_PAIRS;
		/* Parallel workers start at different places. */
		w->next = div_u64((u64)i * cfg->dataset_size, nr);
		init_completion(&w->done);
		if (++i == nr)
			break;
	}
	return r;
}

/* Start every worker, wait for all; returns true if a signal cut it. */
static int kbench_run_workers(struct kbench_run *r, bool unbound)
{
	bool interrupted = false;
	unsigned int i;

	for (i = 0; i < r->nr_workers; i++) {
		struct kbench_worker *w = &r->workers[i];
		struct task_struct *t;

		t = kthread_create(kbench_worker_fn, w, "kbench/%d",
				   unbound ? -1 : w->ctx.cpu);
		if (IS_ERR(t)) {
			/* Threads never woken exit without running. */
			while (i--)
				kthread_stop(r->workers[i].task);
			return PTR_ERR(t);
		}
		if (!unbound)
			kthread_bind(t, w->ctx.cpu);
		w->task = t;
	}
	for (i = 0; i < r->nr_workers; i++)
		wake_up_process(r->workers[i].task);

	for (i = 0; i < r->nr_workers; i++) {
		struct kbench_worker *w = &r->workers[i];

		if (!interrupted && wait_for_completion_interruptible(&w->done)) {
			interrupted = true;
			WRITE_ONCE(r->abort, true);
		}
		if (interrupted)
			wait_for_completion(&w->done);
	}
	return interrupted ? -EINTR : 0;
}

/* The error of the run: the first real failure beats an interruption. */
static int kbench_run_error(struct kbench_run *r, int wait_err)
{
	int ret = wait_err;
	unsigned int i;

	for (i = 0; i < r->nr_workers; i++) {
		int err = r->workers[i].error;

		if (err && err != -EINTR)
			return err;
		if (err)
			ret = -EINTR;
	}
	if (ret == -EINTR && READ_ONCE(r->entry->dying))
		return -ENODEV;
	return ret;
}

static u64 kbench_mean_overhead(const struct kbench_run *r)
{
	u64 sum = 0;
	unsigned int i;

	for (i = 0; i < r->nr_workers; i++)
		sum += r->workers[i].overhead;
	return div_u64(sum, r->nr_workers);
}

static int kbench_format_run(struct kbench_run *r, bool parallel,
			     const struct cpumask *cpus, u64 *scratch,
			     char *buf)
{
	u64 overhead = kbench_mean_overhead(r);
	struct kbench_stats st;
	u32 batch = r->cfg.batch;
	unsigned int i, omitted = 0;
	u32 total = 0;
	int len = 0;

	for (i = 0; i < r->nr_workers; i++) {
		struct kbench_worker *w = &r->workers[i];

		total += w->nr_done;
		if (!parallel)
			continue;
		/* The "all" line and the histogram must always fit. */
		if (len > PAGE_SIZE - KBENCH_RUN_RESERVE) {
			omitted++;
			continue;
		}
		kbench_summarize(w->samples, w->nr_done, scratch, &st);
		len += scnprintf(buf + len, PAGE_SIZE - len, "cpu%d ",
				 w->ctx.cpu);
		len += kbench_format_stats(buf + len, PAGE_SIZE - len, &st,
					   batch, w->overhead);
		len += scnprintf(buf + len, PAGE_SIZE - len, "%s\n",
				 w->report);
	}
	if (omitted)
		len += scnprintf(buf + len, PAGE_SIZE - len,
				 "cpus_omitted=%u\n", omitted);
	/* Samples are contiguous here (see kbench_run_locked()). */
	kbench_summarize(r->samples, total, scratch, &st);
	if (parallel)
		len += scnprintf(buf + len, PAGE_SIZE - len, "all ");
	len += kbench_format_stats(buf + len, PAGE_SIZE - len, &st, batch,
				   overhead);
	len += scnprintf(buf + len, PAGE_SIZE - len,
			 " tsc_khz=%u batch=%u overhead_sample=%llu",
			 kbench_tsc_khz, batch, overhead);
	if (parallel)
		len += scnprintf(buf + len, PAGE_SIZE - len, " cpus=%*pbl\n",
				 cpumask_pr_args(cpus));
	else
		len += scnprintf(buf + len, PAGE_SIZE - len, "%s\n",
				 r->workers[0].report);
	if (r->cfg.histogram)
		len += kbench_format_histogram(buf + len, PAGE_SIZE - len,
					       r->samples, total, &st, batch);
	return len;
}

/* Make the kept samples contiguous and describe where each CPU's are. */
static struct kbench_segment *kbench_compact(struct kbench_run *r, u32 *total)
{
	struct kbench_segment *seg;
	unsigned int i;
	u32 off = 0;

	seg = kcalloc(r->nr_workers, sizeof(*seg), GFP_KERNEL);
	if (!seg)
		return NULL;
	for (i = 0; i < r->nr_workers; i++) {
		struct kbench_worker *w = &r->workers[i];

		if (w->samples != r->samples + off)
			memmove(r->samples + off, w->samples,
				(size_t)w->nr_done * sizeof(u64));
		w->samples = r->samples + off;
		seg[i].cpu = w->ctx.cpu;
		seg[i].offset = off;
		seg[i].count = w->nr_done;
		seg[i].overhead = w->overhead;
		off += w->nr_done;
	}
	*total = off;
	return seg;
}

static ssize_t kbench_run_locked(struct kbench_entry *e, bool parallel,
				 char *buf)
{
	const struct kbench_config *cfg = &e->cfg;
	struct kbench_segment *seg = NULL;
	struct kbench_run *r = NULL;
	cpumask_var_t cpus;
	u64 *scratch = NULL;
	unsigned int nr, i;
	u32 total = 0;
	ssize_t ret;
	bool unbound = false;

	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL))
		return -ENOMEM;
	cpus_read_lock();
	if (parallel) {
		cpumask_and(cpus, cfg->cpus_all ? cpu_possible_mask : &cfg->cpus,
			    cpu_online_mask);
	} else if (cfg->cpu >= 0) {
		if (cpu_online(cfg->cpu))
			cpumask_set_cpu(cfg->cpu, cpus);
	} else {
		/* Unbound: the worker's ctx.cpu reads -1. */
		unbound = true;
	}
	cpus_read_unlock();
	nr = unbound ? 1 : cpumask_weight(cpus);

	ret = -EINVAL;
	if (!nr)
		goto out;
	ret = -ERANGE;
	if (((u64)cfg->warmup + cfg->loop_count) * cfg->batch >
	    KBENCH_CALLS_MAX)
		goto out;
	ret = -EOPNOTSUPP;
	if (cfg->irqs_off && (e->bench->flags & KBENCH_F_NO_IRQS_OFF))
		goto out;

	ret = -ENOMEM;
	r = kbench_run_alloc(e, unbound ? cpumask_of(0) : cpus, nr);
	if (!r)
		goto out;
	if (unbound)
		r->workers[0].ctx.cpu = -1;
	scratch = kvmalloc_array((size_t)nr * cfg->loop_count, sizeof(u64),
				 GFP_KERNEL);
	if (!scratch)
		goto out;

	mutex_lock(&e->lock);
	e->live = r;
	mutex_unlock(&e->lock);
	ret = kbench_run_workers(r, unbound);
	mutex_lock(&e->lock);
	e->live = NULL;
	mutex_unlock(&e->lock);
	ret = kbench_run_error(r, ret);
	if (ret && ret != -EINTR && ret != -ENODEV)
		goto out;
	seg = kbench_compact(r, &total);
	if (!seg) {
		ret = -ENOMEM;
		goto out;
	}
	if (!ret)
		ret = kbench_format_run(r, parallel, cpus, scratch, buf);

	/* Keep the samples, also those of an interrupted run. */
	mutex_lock(&e->lock);
	kvfree(e->samples);
	kfree(e->segments);
	memset(&e->counts, 0, sizeof(e->counts));
	for (i = 0; i < nr; i++)
		kbench_counts_merge(&e->counts, &r->workers[i].counts);
	e->samples = r->samples;
	e->nr_samples = total;
	e->last_run = r->serial;
	e->segments = seg;
	e->nr_segments = nr;
	e->overhead = kbench_mean_overhead(r);
	e->batch = cfg->batch;
	e->parallel = parallel;
	e->result = ret < 0 ? KBENCH_RESULT_INTERRUPTED : KBENCH_RESULT_OK;
	e->error = ret < 0 ? ret : 0;
	mutex_unlock(&e->lock);
	r->samples = NULL;
	seg = NULL;
out:
	if (ret < 0 && ret != -EINTR && ret != -ENODEV) {
		mutex_lock(&e->lock);
		kvfree(e->samples);
		kfree(e->segments);
		e->samples = NULL;
		e->segments = NULL;
		memset(&e->counts, 0, sizeof(e->counts));
		e->nr_samples = 0;
		e->nr_segments = 0;
		e->overhead = 0;
		e->parallel = parallel;
		if (r)
			e->last_run = r->serial;
		e->result = KBENCH_RESULT_ERROR;
		e->error = ret;
		mutex_unlock(&e->lock);
	}
	kfree(seg);
	kvfree(scratch);
	kbench_run_free(r);
	free_cpumask_var(cpus);
	return ret;
}

/*
 * kbench_live_read - the samples the run in progress has recorded so far,
 * from byte @pos (samples_live).  Only a single-CPU run is read this way;
 * between runs, and during a parallel run, there is nothing to read.  Called
 * with e->lock held, which keeps e->live (and its buffer) alive.
 */
ssize_t kbench_live_read(struct kbench_entry *e, char *buf, loff_t pos,
			 size_t count)
{
	struct kbench_run *r = e->live;
	struct kbench_worker *w;
	size_t bytes;

	lockdep_assert_held(&e->lock);
	if (!r || r->nr_workers != 1)
		return 0;
	w = &r->workers[0];
	/* Pairs with the release in kbench_timed_loop(): counted samples are written. */
	bytes = (size_t)smp_load_acquire(&w->nr_done) * sizeof(u64);
	if (pos < 0 || pos >= bytes)
		return 0;
	count = min_t(size_t, count, bytes - pos);
	memcpy(buf, (u8 *)w->samples + pos, count);
	return count;
}

/*
 * kbench_run - run @e once (on one CPU, or in parallel on its `cpus`) and
 * print the summary into the PAGE_SIZE buffer @buf.  A concurrent run of
 * the same benchmark gets -EBUSY; the configuration cannot change while
 * this one is in progress (stores get -EBUSY too).
 */
ssize_t kbench_run(struct kbench_entry *e, bool parallel, char *buf)
{
	ssize_t ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!mutex_trylock(&e->run_lock))
		return -EBUSY;
	mutex_lock(&e->lock);
	e->running = true;
	mutex_unlock(&e->lock);

	/* Nobody writes e->cfg while e->running is set. */
	if (READ_ONCE(e->dying))
		ret = -ENODEV;
	else
		ret = kbench_run_locked(e, parallel, buf);

	mutex_lock(&e->lock);
	e->running = false;
	mutex_unlock(&e->lock);
	mutex_unlock(&e->run_lock);
	return ret;
}

/* Helpers for benchmarks that walk memory; see kbench.h. */
int kbench_area_alloc(struct kbench_area *area, const struct kbench_ctx *ctx,
		      size_t block)
{
	size_t stride = ALIGN(max_t(size_t, block, 1), SMP_CACHE_BYTES);
	u32 nr, i;
	u64 state;

	nr = stride >= KBENCH_AREA_MAX ? 1 :
	     min_t(u32, ctx->dataset_size, KBENCH_AREA_MAX / stride);
	area->size = (size_t)nr * stride;
	area->base = kvmalloc(area->size, GFP_KERNEL);
	area->offset = kvmalloc_array(ctx->dataset_size, sizeof(u32),
				      GFP_KERNEL);
	if (!area->base || !area->offset) {
		kbench_area_free(area);
		return -ENOMEM;
	}
	state = ctx->dataset[0];
	for (i = 0; i + sizeof(u32) <= area->size; i += sizeof(u32)) {
		u32 x = kbench_lcg_next(&state);

		memcpy(area->base + i, &x, sizeof(x));
	}
	memset(area->base + i, 0, area->size - i);
	for (i = 0; i < ctx->dataset_size; i++)
		area->offset[i] = (ctx->dataset[i] % nr) * stride;
	return 0;
}
EXPORT_SYMBOL_GPL(kbench_area_alloc);

void kbench_area_free(struct kbench_area *area)
{
	kvfree(area->base);
	kvfree(area->offset);
	area->base = NULL;
	area->offset = NULL;
}
EXPORT_SYMBOL_GPL(kbench_area_free);
