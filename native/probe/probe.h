/* kbench-probe: shared declarations.
 *
 * Layout of native/probe/:
 *   probe.c      main(): the commands; errors, warnings, signals, clean-up
 *   options.c    the command line of `run` and the workload parameters
 *   run.c        one `run`: overhead, batch calibration, warm-up, measurement
 *   loop.c       the timed sample loops (one per timer) and the empty timed region
 *   usage.c      what the measuring thread and the machine did meanwhile
 *   counters.c   perf event counters around the measured region; a profiler's window
 *   output.c     --list, the header and the sample stream of a run
 *   timer.h/.c   timers (TSC with fences, CLOCK_MONOTONIC_RAW), calibration,
 *                resolution and overhead measurement
 *   workloads.c  every workload: one run function (+ optional set-up/tear-down)
 *                and one line in the table `kb_workloads[]`
 *   json.c       a small JSON writer (string buffer, escaping)
 *   scale.h/.c   `scale`: the will-it-scale model (N tasks, per-interval counters)
 *   scale_tests.c  its testcases, one line each in kb_scale_tests[]
 *
 * The contract with Python is docs/probe-format.md.
 */
#ifndef KBENCH_PROBE_H
#define KBENCH_PROBE_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>

#define KB_VERSION "0.1.0"
#define KB_FORMAT "kbench-probe/1"
#define KB_UNUSED __attribute__((unused))

/* ---- exit codes (docs/probe-format.md) ---- */
#define KB_EXIT_OK 0
#define KB_EXIT_USAGE 2
#define KB_EXIT_SETUP 3
#define KB_EXIT_FAILED 4 /* a measured operation failed (not --ignore-failure): header `failure` */
#define KB_EXIT_INTERRUPTED 130

/* ---- JSON writer (json.c) ---- */
struct jbuf {
	char *s;
	size_t len, cap;
};
void jb_init(struct jbuf *b);
void jb_free(struct jbuf *b);
void jb_raw(struct jbuf *b, const char *s);
void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jb_str(struct jbuf *b, const char *s); /* a quoted, escaped JSON string */
void jb_key(struct jbuf *b, const char *k); /* "k": (with a comma when needed) */
void jb_comma(struct jbuf *b);              /* a comma unless after [ { or : */
void jb_kstr(struct jbuf *b, const char *k, const char *v); /* v NULL -> null */
void jb_kint(struct jbuf *b, const char *k, long long v);
void jb_ku64(struct jbuf *b, const char *k, uint64_t v);
void jb_kdbl(struct jbuf *b, const char *k, double v, int prec);
void jb_kbool(struct jbuf *b, const char *k, int v);

/* ---- errors ---- */
/* Print `kbench-probe: error: ...` on stderr, clean up workload files, exit `code`. */
void kb_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
int kb_open_output(const char *output, char *path, size_t size, volatile int *made);
void kb_install_signals(void (*handler)(int), int restart);
/* `run`'s --output FILE, removed by kb_die() and the signal handler once made. */
extern char kb_output_path[4096];
extern volatile int kb_output_made;
/* The handler `run` installs: stop at the next sample, or give up on a second signal. */
void kb_on_signal(int sig);
const char *kb_split_option(const char *arg, char *name, size_t size);
/* Add a string to the header's `warnings`. */
void kb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The warnings so far: JSON strings separated by commas ("" if none). */
const char *kb_warnings_json(void);
/* Forget the warnings so far (the next run of a sequence starts with none). */
void kb_warnings_reset(void);

/* Set by the SIGINT/SIGTERM handler; checked between samples. */
extern volatile sig_atomic_t kb_stop;

/* ---- workload parameters ---- */
enum kb_ptype { KB_INT, KB_STR, KB_BOOL };

struct kb_param {
	const char *name;
	enum kb_ptype type;
	const char *def;     /* default, as a string */
	const char *desc;
	long long min, max;  /* KB_INT bounds (inclusive) */
	const char *choices; /* KB_STR: "a|b|c" or NULL for free text */
};

#define KB_MAX_PARAMS 12

/* Everything a workload needs while it runs.  Set-up fills the fields it uses;
 * the run function must only do the work (no allocation, no printing). */
struct kb_ctx {
	const struct kb_workload *wl;
	/* effective parameter values, in the order of wl->params */
	char *pval[KB_MAX_PARAMS];
	long long pint[KB_MAX_PARAMS];
	int nparams;

	int pinned_cpu;         /* -1 when not pinned */
	/* generic state for the workloads */
	int fd, fd2, fd3, fd4;
	long long size, file_size, off;
	long long batch;        /* operations per sample, known before warm-up */
	int iarg;
	void *buf;
	void *priv;
	long long errors;       /* operations that returned an error */
	int last_errno;         /* errno (or exit status for `command`) of the last one */
	int stop_on_failure;    /* stop at the first failed operation (not --ignore-failure) */
	char path[4096];        /* a file made by set-up: unlinked at exit */
	int path_made;
	/* `setup` object of the header, filled by set-up (JSON members, no braces) */
	struct jbuf setup;
};

/* Parameter access by name (the name must exist in the workload's table). */
long long kb_pint(const struct kb_ctx *c, const char *name);
const char *kb_pstr(const struct kb_ctx *c, const char *name);
/* Replace the effective value of a parameter (e.g. an "auto" default resolved). */
void kb_pset_int(struct kb_ctx *c, const char *name, long long v);

typedef int (*kb_setup_fn)(struct kb_ctx *c, char *err, size_t errlen);
/* Run `n` operations.  `extra` points at the row's columns after `ticks`
 * (only for workloads with extra columns). */
typedef void (*kb_run_fn)(struct kb_ctx *c, uint64_t n, uint64_t *extra);
/* Called between samples, outside the timed region (may be NULL). */
typedef void (*kb_between_fn)(struct kb_ctx *c);
typedef void (*kb_teardown_fn)(struct kb_ctx *c);

#define KB_F_BATCH1 1u /* one operation per sample, always */

struct kb_workload {
	const char *name;
	const char *desc;
	kb_run_fn run;
	kb_setup_fn setup;       /* NULL: nothing to prepare */
	kb_teardown_fn teardown; /* NULL: nothing to release */
	kb_between_fn between;   /* NULL: nothing between samples */
	const struct kb_param *params; /* terminated by {NULL} */
	const char *const *columns;    /* NULL: {"ticks"} */
	unsigned flags;
};

extern const struct kb_workload kb_workloads[];
extern const size_t kb_nworkloads;

/* Anything set-up made that must go at exit (files, helpers).  Safe to call
 * more than once; called on every exit path. */
void kb_cleanup(void);
extern struct kb_ctx *kb_active_ctx;

/* The volatile sink that consumes every operation's result. */
extern volatile uint64_t kb_sink;

/* The `command` workload's running child, ended by the signal handler (0: none). */
extern volatile pid_t kb_running_child;
/* The exit status of the last command that failed (0 if none did). */
int kb_command_last_status(const struct kb_ctx *c);
const char *kb_command_last_stderr(const struct kb_ctx *c);

/* ---- the command line of `run` (options.c) ---- */
#define KB_MAX_SAMPLES 100000000ll /* 10^8 rows */
#define KB_MAX_BATCH (1ll << 24)

struct kb_run_opts {
	const char *workload;
	long long samples;
	double duration;
	long long max_samples;
	long long warmup_samples;
	double warmup_duration;
	long long batch; /* 0 = auto */
	long long cpu;   /* -1 = not pinned */
	const char *timer;
	long long overhead_pairs;
	const char *output;
	const char *spill; /* stream the measured rows here as they are taken (NULL: no) */
	int progress;
	int counters;                 /* --counters: perf events around the measured region */
	int perf_ctl_fd, perf_ack_fd; /* --perf-control CTL,ACK (-1: none) */
	int have_samples, have_duration, have_max, have_wsamples, have_wduration;
	int ignore_failure; /* --ignore-failure: time failed operations too (default: stop at the first) */
	int mark; /* --mark: the measured samples' operations marked for instruction counters (marks.h) */
};

void kb_usage(FILE *f);
/* An integer with an optional binary suffix k/m/g (x1024^n); 0 on success. */
int kb_parse_ll(const char *s, long long *out);
/* The value of option `opt`, an integer in [lo, hi]; exits 2 otherwise. */
long long kb_opt_int(const char *opt, const char *v, long long lo, long long hi);
/* Parse `run WORKLOAD ...` into `o`; the workload's parameters go to `c`. */
void kb_parse_run(int argc, char **argv, struct kb_run_opts *o, struct kb_ctx *c);

/* ---- the timed loops (loop.c) ---- */
/*
 * One call of kb_run_loop() measures samples until `count` are done (count > 0)
 * or, when dur_ticks > 0, until dur_ticks have passed since the first sample
 * started.  Rows go to rows[] (ncols u64 each); rows == NULL: not kept.
 */
struct kb_loop {
	struct kb_ctx *c;
	kb_run_fn run;
	kb_between_fn between;
	uint64_t batch;
	int ncols;
	int gap_col;       /* the column of gap_ticks (kb_ncolumns), < 0: none */
	uint64_t *rows;
	long long cap;     /* rows allocated */
	long long max;     /* hard cap (grow up to it) */
	long long count;   /* 0: duration mode */
	uint64_t dur_ticks;
	int progress;
	/* the spill: rows [0, spilled) are written to spill_fd (spill_on: it is open) */
	int spill_on, spill_fd;
	long long spilled;
	int spill_failed;
	/* results */
	long long n;
	uint64_t first_t0, last_t1;
	long long migrations;
	uint32_t last_aux;
	int have_aux;
	int capped, grow_failed;
	int failed; /* stopped at a failed operation: the sample that held it is not kept */
	int marked; /* each sample's operations bracketed by instruction-counter marks (--mark) */
};

void kb_run_loop(struct kb_loop *L);
/* What --mark marks with in this build: callgrind client requests, emulator marks (1/0). */
int kb_marks_callgrind(void);
int kb_marks_emulator(void);
/* Write the rows taken since the last call, [L->spilled, n), to the spill. */
void kb_spill_rows(struct kb_loop *L, long long n);
/* `n` empty timed regions, exactly as the sample loop times them, into d[]. */
uint64_t kb_overhead_pairs(uint64_t *d, long long n);
int kb_cmp_u64(const void *a, const void *b);

/* ---- what the run saw (usage.c) ---- */
#define KB_USAGE_MAX_CPUS 1024

struct kb_stat_ticks {
	int cpu; /* -1: the aggregate "cpu" line */
	uint64_t idle, steal, total;
};

struct kb_usage_snap {
	uint64_t thread_cpu_ns;
	long long runqueue_wait_ns; /* -1: no schedstat */
	struct rusage thread, self;
	int ncpu; /* per-CPU lines read; -1: /proc/stat unreadable */
	struct kb_stat_ticks all, cpu[KB_USAGE_MAX_CPUS];
};

void kb_usage_read_stat(struct kb_usage_snap *s);
void kb_usage_read_thread(struct kb_usage_snap *s);
/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in ns. */
uint64_t kb_thread_cpu_ns(void);
/* User + system CPU seconds between two rusage snapshots. */
double kb_rusage_cpu_s(const struct rusage *a, const struct rusage *b);
/* The header's `usage` object (docs/probe-format.md). */
void kb_usage_json(struct jbuf *h, const struct kb_usage_snap *a, const struct kb_usage_snap *b,
		   uint64_t wall_ns, double children_cpu_s);

/* ---- one run (run.c) ---- */
/* Everything the header of a run reports, and its samples (loop.rows). */
struct kb_run {
	struct kb_run_opts opts;
	struct kb_ctx *c;
	struct kb_loop loop;
	char start_time[64], end_time[64];
	uint64_t overhead_min, overhead_median;
	int batch_auto;
	uint64_t batch_target;       /* ticks a sample must reach (auto batch) */
	long long calibration_samples;
	long long warmup_samples;
	double warmup_s;
	int cpu_start, cpu_end;
	uint64_t measure_start_ns, measure_end_ns;
	struct kb_usage_snap usage_start, usage_end;
	double children_cpu_s;
	long long failed_ops;        /* measured operations that failed */
	long long failed_before;     /* ... and operations of the calibration and warm-up */
	int last_errno, last_status; /* of the last failed one (`command`: exit status, or -signal) */
	char failed_stderr[512];     /* `command`: the last line its failed execution wrote to stderr */
	int stopped_at_failure;      /* the run stopped at its first failed operation */
	int interrupted;
	int spill_fd; /* --spill FILE, or -1 */
};

/* `kbench-probe run ...`: measure, write the output; the exit code. */
int kb_run(int argc, char **argv);
/* `kbench-probe sequence -- RUN -- RUN ...`: the runs one after another in this
 * process, their outputs concatenated; the exit code. */
#define KB_MAX_SEQUENCE 1024
int kb_sequence(int argc, char **argv);

/* ---- perf event counters and the profile window (counters.c) ---- */
/* Just before the measured loop: read the counters and enable them (if asked). */
void kb_counters_start(const struct kb_run_opts *o);
/* The same without run options: count when @on. */
void kb_counters_begin(int on);
/* Open the events now (disabled), so that the tasks created next inherit them. */
void kb_counters_open(void);
/* The operations the counted region made, when the header's n x batch is not it. */
void kb_counters_operations(uint64_t operations);
/* Just after it: disable and read them again. */
void kb_counters_stop(void);
/* The header's `counters` object (nothing unless the last run counted). */
void kb_counters_json(struct jbuf *h);
/* Tell the profiler on --perf-control to start (open) or stop recording. */
void kb_profile_window(const struct kb_run_opts *o, int open);

/* ---- output (output.c) ---- */
int kb_write_all(int fd, const void *buf, size_t len);
/* How the last failed operation of `r` failed: "exit status 3", "killed by signal 9 (Killed)", an errno's text. */
void kb_failure_text(const struct kb_run *r, char *buf, size_t len);
/* `--list`: the workloads as JSON on stdout. */
int kb_list_workloads(void);
int kb_ncolumns(const struct kb_workload *wl);
/* The run's header line and its rows; 0, or -1 with errno set. */
int kb_write_run(int fd, const struct kb_run *r);
/* The spill's header line (what is known before the first measured sample). */
int kb_write_spill_header(int fd, const struct kb_run *r);
void kb_iso_now(char *buf, size_t len);

#endif
