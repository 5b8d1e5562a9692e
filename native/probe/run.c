/* kbench-probe: one `run`: the timer overhead, the batch, the warm-up and the
 * measured samples, then the output (docs/probe-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "probe.h"
#include "timer.h"

#define RES_FACTOR 100 /* a sample >= 100 x timer resolution */
#define OVH_FACTOR 100 /* ... and >= 100 x the median overhead */
#define CALIBRATION_WARM 3    /* samples per candidate batch that warm caches, not used */
#define CALIBRATION_JUDGED 15 /* ... and samples whose median decides */

static void pin(struct kb_run *r)
{
	struct kb_ctx *c = r->c;
	long long cpu = r->opts.cpu;

	r->cpu_start = sched_getcpu();
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) == 0) {
		c->pinned_cpu = (int)cpu;
		r->cpu_start = sched_getcpu();
	} else {
		kb_warn("pinning to CPU %lld failed (%s): the run is not pinned", cpu, strerror(errno));
	}
}

/* The min and median of `pairs` empty timed regions (after a tenth of them to warm the loop). */
static void measure_overhead(struct kb_run *r)
{
	long long pairs = r->opts.overhead_pairs;
	uint64_t *ovh = malloc((size_t)pairs * sizeof *ovh);
	if (!ovh)
		kb_die(KB_EXIT_SETUP, "out of memory for %lld overhead pairs", pairs);
	memset(ovh, 0, (size_t)pairs * sizeof *ovh); /* fault the pages in before timing */
	kb_overhead_pairs(ovh, pairs / 10 + 1);
	kb_overhead_pairs(ovh, pairs);
	qsort(ovh, (size_t)pairs, sizeof *ovh, kb_cmp_u64);
	r->overhead_min = ovh[0];
	r->overhead_median = ovh[pairs / 2];
	free(ovh);
}

static void set_up_workload(struct kb_run *r)
{
	struct kb_ctx *c = r->c;
	const struct kb_workload *wl = c->wl;
	char err[512];

	kb_active_ctx = c;
	jb_raw(&c->setup, "{");
	if (wl->setup) {
		int ret = wl->setup(c, err, sizeof err);
		if (ret < 0)
			kb_die(ret == -2 ? KB_EXIT_USAGE : KB_EXIT_SETUP, "%s: %s", wl->name, err);
	}
	jb_raw(&c->setup, "}");
}

/* Auto batch: the smallest power of two whose median sample reaches the target. */
static void calibrate_batch(struct kb_run *r)
{
	const struct kb_workload *wl = r->c->wl;
	struct kb_loop *L = &r->loop;
	uint64_t batch = r->opts.batch ? (uint64_t)r->opts.batch : 1;

	r->batch_auto = r->opts.batch == 0 && !(wl->flags & KB_F_BATCH1);
	r->batch_target = RES_FACTOR * kb_timer.resolution_ticks;
	if (OVH_FACTOR * r->overhead_median > r->batch_target)
		r->batch_target = OVH_FACTOR * r->overhead_median;
	while (r->batch_auto) {
		uint64_t cal[CALIBRATION_WARM + CALIBRATION_JUDGED];
		struct kb_loop K = *L;
		K.batch = batch;
		K.ncols = 1; /* ticks only: batched workloads have no columns of their own */
		K.gap_col = -1;
		K.rows = cal;
		K.cap = K.max = K.count = CALIBRATION_WARM + CALIBRATION_JUDGED;
		r->c->batch = (long long)batch;
		kb_run_loop(&K);
		r->calibration_samples += K.n;
		if (K.n < K.count)
			break; /* interrupted */
		qsort(cal + CALIBRATION_WARM, CALIBRATION_JUDGED, sizeof *cal, kb_cmp_u64);
		uint64_t med = cal[CALIBRATION_WARM + CALIBRATION_JUDGED / 2];
		if (med >= r->batch_target)
			break;
		if (batch >= (uint64_t)KB_MAX_BATCH) {
			kb_warn("batch calibration stopped at the cap %lld: one sample is %llu ticks, "
				"below the target %llu", KB_MAX_BATCH, (unsigned long long)med,
				(unsigned long long)r->batch_target);
			break;
		}
		batch *= 2;
	}
	L->batch = batch;
	r->c->batch = (long long)batch;
}

/* A sample buffer with its pages faulted in, so that storing a sample faults nothing. */
static uint64_t *alloc_rows(long long n, int ncols)
{
	size_t bytes = (size_t)n * (size_t)ncols * sizeof(uint64_t);
	uint64_t *rows = malloc(bytes);
	if (!rows)
		kb_die(KB_EXIT_SETUP, "out of memory for %lld samples", n);
	memset(rows, 0, bytes);
	return rows;
}

/* Warm-up by count and/or by time; defaults: count mode max(10, 1% of the
 * samples); duration mode at least 10 samples and 1% of the duration. */
static void warm_up(struct kb_run *r)
{
	const struct kb_run_opts *o = &r->opts;
	long long count;
	double seconds;

	if (o->have_wsamples || o->have_wduration) {
		count = o->have_wsamples ? o->warmup_samples : 0;
		seconds = o->have_wduration ? o->warmup_duration : 0;
	} else if (o->have_duration) {
		count = 10;
		seconds = o->duration / 100;
	} else {
		count = o->samples / 100 > 10 ? o->samples / 100 : 10;
		seconds = 0;
	}
	uint64_t w0 = kb_clock_now();
	if (count > 0 && !kb_stop) {
		struct kb_loop W = r->loop;
		W.rows = NULL;
		W.count = count;
		kb_run_loop(&W);
		r->warmup_samples += W.n;
	}
	if (seconds > 0 && !kb_stop) {
		struct kb_loop W = r->loop;
		W.rows = NULL;
		W.count = 0;
		W.dur_ticks = (uint64_t)(seconds * kb_timer.hz);
		W.max = LLONG_MAX;
		kb_run_loop(&W);
		r->warmup_samples += W.n;
	}
	r->warmup_s = (double)(kb_clock_now() - w0) * 1e-9;
}

/* Duration mode: the buffer sized from the warm-up rate, with headroom (it grows if short). */
static long long duration_capacity(const struct kb_run *r)
{
	const struct kb_run_opts *o = &r->opts;
	double per_sample = r->warmup_samples > 0 ? r->warmup_s / (double)r->warmup_samples : 0;
	double est = per_sample > 0 ? o->duration / per_sample * 1.25 + 1024 : 65536;
	long long cap = est > (double)o->max_samples ? o->max_samples : (long long)est;
	return cap < 1 ? 1 : cap;
}

/* The measured samples, with usage snapshots around them (outside the timed region). */
static void measure(struct kb_run *r)
{
	struct kb_loop *L = &r->loop;
	struct kb_ctx *c = r->c;
	struct rusage children_start, children_end;

	getrusage(RUSAGE_CHILDREN, &children_start);
	kb_usage_read_stat(&r->usage_start);
	kb_usage_read_thread(&r->usage_start);
	kb_profile_window(&r->opts, 1);
	kb_counters_start(&r->opts);
	/* The thread's CPU time spans what the wall clock does, not the counters' set-up. */
	r->usage_start.thread_cpu_ns = kb_thread_cpu_ns();
	long long errors_before = c->errors;
	r->measure_start_ns = kb_clock_now();
	L->marked = r->opts.mark; /* only the measured samples: calibration and warm-up never are */
	if (!kb_stop)
		kb_run_loop(L);
	L->marked = 0;
	r->measure_end_ns = kb_clock_now();
	uint64_t thread_cpu_end_ns = kb_thread_cpu_ns();
	kb_counters_stop();
	kb_profile_window(&r->opts, 0);
	kb_usage_read_thread(&r->usage_end);
	r->usage_end.thread_cpu_ns = thread_cpu_end_ns;
	kb_usage_read_stat(&r->usage_end);
	r->cpu_end = sched_getcpu();
	r->interrupted = kb_stop != 0;

	r->failed_ops = c->errors - errors_before;
	r->failed_before = errors_before;
	r->last_errno = c->last_errno;
	r->stopped_at_failure = c->stop_on_failure && c->errors > 0;
	if (strcmp(c->wl->name, "command") == 0) {
		r->last_status = kb_command_last_status(c);
		snprintf(r->failed_stderr, sizeof r->failed_stderr, "%s", kb_command_last_stderr(c));
	}
	kb_cleanup(); /* tear down: helpers stop, files go */
	getrusage(RUSAGE_CHILDREN, &children_end);
	r->children_cpu_s = kb_rusage_cpu_s(&children_start, &children_end);
	kb_iso_now(r->end_time, sizeof r->end_time);
}

static uint64_t median_ticks(const struct kb_loop *L)
{
	uint64_t med = 0;
	uint64_t *t = malloc((size_t)L->n * sizeof *t);

	if (!t)
		return 0;
	for (long long i = 0; i < L->n; i++)
		t[i] = L->rows[i * L->ncols];
	qsort(t, (size_t)L->n, sizeof *t, kb_cmp_u64);
	med = t[L->n / 2];
	free(t);
	return med;
}

/* The warnings that need the samples. */
static void judge_samples(const struct kb_run *r)
{
	const struct kb_loop *L = &r->loop;
	uint64_t med = L->n > 0 ? median_ticks(L) : 0;

	if (med && kb_timer.resolution_ticks * 100 > med)
		kb_warn("timer resolution (%llu ticks) is %.1f%% of the median sample (%llu "
			"ticks): per-operation values are quantized",
			(unsigned long long)kb_timer.resolution_ticks,
			100.0 * (double)kb_timer.resolution_ticks / (double)med, (unsigned long long)med);
	if (med && r->overhead_median * 100 > med)
		kb_warn("timer overhead (median %llu ticks) is %.1f%% of the median sample: "
			"per-operation values include it",
			(unsigned long long)r->overhead_median,
			100.0 * (double)r->overhead_median / (double)med);
	if (L->migrations > 0)
		kb_warn("the measuring thread changed CPU %lld time%s between samples (seen by rdtscp)%s",
			L->migrations, L->migrations == 1 ? "" : "s",
			r->c->pinned_cpu < 0 ? ": not pinned, consider --cpu" : "");
	else if (r->cpu_start >= 0 && r->cpu_end >= 0 && r->cpu_start != r->cpu_end)
		kb_warn("the measuring thread started on CPU %d and ended on CPU %d%s%s",
			r->cpu_start, r->cpu_end,
			kb_timer.kind == KB_TIMER_TSCP ? ", between samples" : " (moves in between are not seen: no rdtscp)",
			r->c->pinned_cpu < 0 ? ": not pinned, consider --cpu" : "");
	if (L->capped)
		kb_warn("stopped at --max-samples %lld before --duration %g s had passed",
			r->opts.max_samples, r->opts.duration);
	if (L->grow_failed)
		kb_warn("stopped early: could not grow the sample buffer beyond %lld samples", L->cap);
}

/* Measure the run `o` describes (its workload's parameters in `c`) and write it to `outfd`. */
static int measure_and_write(struct kb_run *r, int outfd)
{
	struct kb_run_opts *o = &r->opts;
	struct kb_loop *L = &r->loop;
	struct kb_ctx *c = r->c;

	kb_iso_now(r->start_time, sizeof r->start_time);
	pin(r);
	measure_overhead(r);
	set_up_workload(r);
	L->c = c;
	L->run = c->wl->run;
	L->between = c->wl->between;
	L->ncols = kb_ncolumns(c->wl);
	L->gap_col = L->ncols - 1;
	calibrate_batch(r);
	/* count mode: the buffer before the warm-up; duration mode: sized by it */
	L->cap = o->have_duration ? 0 : o->samples;
	if (!o->have_duration)
		L->rows = alloc_rows(L->cap, L->ncols);
	warm_up(r);
	if (o->have_duration) {
		L->cap = duration_capacity(r);
		L->rows = alloc_rows(L->cap, L->ncols);
	}
	L->max = o->have_duration ? o->max_samples : o->samples;
	L->count = o->have_duration ? 0 : o->samples;
	L->dur_ticks = o->have_duration ? (uint64_t)(o->duration * kb_timer.hz) : 0;
	L->progress = o->progress;
	if (r->spill_fd >= 0) {
		if (kb_write_spill_header(r->spill_fd, r) < 0) {
			kb_warn("writing the spill file's header failed (%s): no samples were streamed",
				strerror(errno));
		} else {
			L->spill_on = 1;
			L->spill_fd = r->spill_fd;
		}
	}
	measure(r);
	judge_samples(r);

	int bad = kb_write_run(outfd, r) < 0;
	free(L->rows);
	L->rows = NULL;
	return bad ? -1 : 0;
}

static int finish_output(int outfd, int bad)
{
	if (outfd != 1 && close(outfd) < 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "kbench-probe: error: writing the output: %s\n", strerror(errno));
		return KB_EXIT_SETUP;
	}
	return KB_EXIT_OK;
}

int kb_run(int argc, char **argv)
{
	static struct kb_ctx ctx;
	static struct kb_run run; /* large (usage snapshots): not on the stack */
	struct kb_run *r = &run;
	struct kb_ctx *c = &ctx;
	char err[512];

	r->c = c;
	c->fd = c->fd2 = c->fd3 = c->fd4 = -1;
	c->pinned_cpu = -1;
	jb_init(&c->setup);
	kb_parse_run(argc, argv, &r->opts, c);

	int outfd = kb_open_output(r->opts.output, kb_output_path, sizeof kb_output_path, &kb_output_made);
	r->spill_fd = -1;
	if (r->opts.spill) {
		/* Kept on every exit path: it is what survives a probe killed with SIGKILL. */
		r->spill_fd = open(r->opts.spill, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (r->spill_fd < 0)
			kb_die(KB_EXIT_USAGE, "--spill %s: %s", r->opts.spill, strerror(errno));
	}
	kb_install_signals(kb_on_signal, 1);
	if (kb_timer_init(r->opts.timer, err, sizeof err) < 0)
		kb_die(KB_EXIT_USAGE, "%s", err);
	int code = finish_output(outfd, measure_and_write(r, outfd) < 0);
	if (r->spill_fd >= 0)
		close(r->spill_fd);
	if (code != KB_EXIT_OK)
		return code;
	if (r->interrupted)
		return KB_EXIT_INTERRUPTED;
	return r->stopped_at_failure ? KB_EXIT_FAILED : KB_EXIT_OK;
}

/* The segments of `sequence [--output FILE] -- RUN... -- RUN...`: argv indexes
 * of each segment's first argument and their count. */
static int split_segments(int argc, char **argv, int *first, int *count, const char **output)
{
	int n = 0, i = 2;

	*output = NULL;
	while (i < argc && strcmp(argv[i], "--") != 0) {
		if (strcmp(argv[i], "--output") == 0 && i + 1 < argc && argv[i + 1][0]) {
			*output = argv[i + 1];
			i += 2;
		} else {
			kb_die(KB_EXIT_USAGE, "sequence: unexpected '%s' before the first '--' "
			       "(only --output FILE)", argv[i]);
		}
	}
	while (i < argc) {
		i++; /* the "--" */
		if (n == KB_MAX_SEQUENCE)
			kb_die(KB_EXIT_USAGE, "sequence: more than %d runs", KB_MAX_SEQUENCE);
		first[n] = i;
		while (i < argc && strcmp(argv[i], "--") != 0)
			i++;
		count[n] = i - first[n];
		if (count[n] == 0)
			kb_die(KB_EXIT_USAGE, "sequence: run %d is empty", n + 1);
		n++;
	}
	if (n == 0)
		kb_die(KB_EXIT_USAGE, "sequence needs at least one run: sequence -- WORKLOAD [options] -- ...");
	return n;
}

/* Parse every run of the sequence before measuring anything: a bad one costs nothing. */
static void parse_sequence(char **argv, struct kb_run_opts *opts, struct kb_ctx *ctxs,
			   const int *first, const int *count, int n)
{
	for (int k = 0; k < n; k++) {
		char **args = calloc((size_t)count[k] + 3, sizeof *args);
		if (!args)
			kb_die(KB_EXIT_SETUP, "out of memory");
		args[0] = argv[0];
		args[1] = "run";
		memcpy(args + 2, argv + first[k], (size_t)count[k] * sizeof *args);
		ctxs[k].fd = ctxs[k].fd2 = ctxs[k].fd3 = ctxs[k].fd4 = -1;
		ctxs[k].pinned_cpu = -1;
		jb_init(&ctxs[k].setup);
		kb_parse_run(count[k] + 2, args, &opts[k], &ctxs[k]);
		free(args); /* the options point into argv, not into args */
		if (opts[k].output)
			kb_die(KB_EXIT_USAGE, "sequence: run %d has --output; give it once, before the first '--'",
			       k + 1);
		if (opts[k].progress)
			kb_die(KB_EXIT_USAGE, "sequence: --progress applies to run only");
		if (opts[k].spill)
			kb_die(KB_EXIT_USAGE, "sequence: --spill applies to run only");
		if (strcmp(opts[k].timer, opts[0].timer) != 0)
			kb_die(KB_EXIT_USAGE, "sequence: every run must use the same --timer (%s, then %s)",
			       opts[0].timer, opts[k].timer);
	}
}

int kb_sequence(int argc, char **argv)
{
	static struct kb_ctx ctxs[KB_MAX_SEQUENCE];
	static struct kb_run_opts opts[KB_MAX_SEQUENCE];
	static struct kb_run run; /* one at a time; large (usage snapshots) */
	static int first[KB_MAX_SEQUENCE], count[KB_MAX_SEQUENCE];
	const char *output;
	char err[512];

	int n = split_segments(argc, argv, first, count, &output);
	parse_sequence(argv, opts, ctxs, first, count, n);
	int outfd = kb_open_output(output, kb_output_path, sizeof kb_output_path, &kb_output_made);
	kb_install_signals(kb_on_signal, 1);
	if (kb_timer_init(opts[0].timer, err, sizeof err) < 0)
		kb_die(KB_EXIT_USAGE, "%s", err);
	int bad = 0, done = 0, failed = 0;
	for (int k = 0; k < n && !bad && !failed && !kb_stop; k++) {
		memset(&run, 0, sizeof run);
		run.spill_fd = -1;
		run.opts = opts[k];
		run.c = &ctxs[k];
		kb_warnings_reset();
		bad = measure_and_write(&run, outfd) < 0;
		failed = run.stopped_at_failure; /* the runs after it are not measured */
		jb_free(&ctxs[k].setup);
		done++;
	}
	int code = finish_output(outfd, bad);
	if (code != KB_EXIT_OK)
		return code;
	if (failed && !kb_stop)
		return KB_EXIT_FAILED;
	return kb_stop || done < n ? KB_EXIT_INTERRUPTED : KB_EXIT_OK;
}
