/* kbench-probe: shared declarations.
 *
 * Layout of native/probe/:
 *   probe.c      command line, the measurement engine, the output stream
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

#define KB_VERSION "0.1.0"
#define KB_FORMAT "kbench-probe/1"
#define KB_UNUSED __attribute__((unused))

/* ---- exit codes (docs/probe-format.md) ---- */
#define KB_EXIT_OK 0
#define KB_EXIT_USAGE 2
#define KB_EXIT_SETUP 3
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
int kb_write_all(int fd, const void *buf, size_t len);
int kb_open_output(const char *output, char *path, size_t size, volatile int *made);
void kb_install_signals(void (*handler)(int), int restart);
const char *kb_split_option(const char *arg, char *name, size_t size);
/* Add a string to the header's `warnings`. */
void kb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The warnings so far: JSON strings separated by commas ("" if none). */
const char *kb_warnings_json(void);

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

#endif
