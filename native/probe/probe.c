/* kbench-probe: command line, measurement engine, output stream.
 * Contract: docs/probe-format.md.  Overview of the files: probe.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "timer.h"
#include "scale.h"

volatile sig_atomic_t kb_stop;
struct kb_ctx *kb_active_ctx;
extern volatile pid_t kb_running_child;
int kb_command_last_status(const struct kb_ctx *c);

static struct jbuf warnings; /* JSON strings separated by commas */
static char out_path[4096];  /* --output FILE, removed on error */
static volatile int out_made;

#define MAX_SAMPLES 100000000ll /* 10^8 rows */
#define MAX_BATCH (1ll << 24)
#define RES_FACTOR 100          /* a sample >= 100 x timer resolution */
#define OVH_FACTOR 100          /* ... and >= 100 x the median overhead */

/* ------------------------------------------------------------------ */
/* errors, warnings, clean-up                                          */

void kb_cleanup(void)
{
	struct kb_ctx *c = kb_active_ctx;
	if (c) {
		kb_active_ctx = NULL;
		if (c->wl && c->wl->teardown)
			c->wl->teardown(c);
		if (c->path_made)
			unlink(c->path);
		c->path_made = 0;
	}
}

void kb_die(int code, const char *fmt, ...)
{
	kb_cleanup();
	if (out_made)
		unlink(out_path);
	va_list ap;
	va_start(ap, fmt);
	fputs("kbench-probe: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

const char *kb_warnings_json(void)
{
	return warnings.s ? warnings.s : "";
}

void kb_warn(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jb_comma(&warnings);
	jb_str(&warnings, msg);
}

/* First signal: stop at the next sample boundary (and end a running command).
 * Second signal: give up at once (after removing the workload's file). */
static void on_signal(int sig KB_UNUSED)
{
	if (kb_stop) {
		struct kb_ctx *c = kb_active_ctx;
		if (c && c->path_made)
			unlink(c->path);
		if (out_made)
			unlink(out_path);
		_exit(KB_EXIT_INTERRUPTED);
	}
	kb_stop = 1;
	pid_t child = kb_running_child;
	if (child > 0)
		kill(child, SIGTERM);
}

/* ------------------------------------------------------------------ */
/* parameters                                                          */

static int param_index(const struct kb_workload *wl, const char *name)
{
	for (int i = 0; wl->params[i].name; i++)
		if (strcmp(wl->params[i].name, name) == 0)
			return i;
	return -1;
}

long long kb_pint(const struct kb_ctx *c, const char *name)
{
	int i = param_index(c->wl, name);
	return i < 0 ? 0 : c->pint[i];
}

const char *kb_pstr(const struct kb_ctx *c, const char *name)
{
	int i = param_index(c->wl, name);
	return i < 0 ? "" : c->pval[i];
}

void kb_pset_int(struct kb_ctx *c, const char *name, long long v)
{
	int i = param_index(c->wl, name);
	if (i < 0)
		return;
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	free(c->pval[i]);
	c->pval[i] = strdup(buf);
	c->pint[i] = v;
}

/* Integer with optional binary suffix k/m/g (x1024^n).  0 on success. */
static int parse_ll(const char *s, long long *out)
{
	if (!*s)
		return -1;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -1;
	long long mul = 1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ll << 10; break;
		case 'm': case 'M': mul = 1ll << 20; break;
		case 'g': case 'G': mul = 1ll << 30; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -1;
	}
	if (v > LLONG_MAX / mul || v < LLONG_MIN / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static void set_param(struct kb_ctx *c, const char *kv)
{
	const struct kb_workload *wl = c->wl;
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		kb_die(KB_EXIT_USAGE, "-p expects KEY=VALUE, got '%s'", kv);
	char key[128];
	size_t kl = (size_t)(eq - kv);
	if (kl >= sizeof key)
		kb_die(KB_EXIT_USAGE, "parameter name too long: '%.40s...'", kv);
	memcpy(key, kv, kl);
	key[kl] = 0;
	const char *val = eq + 1;
	int i = param_index(wl, key);
	if (i < 0) {
		struct jbuf names;
		jb_init(&names);
		for (int k = 0; wl->params[k].name; k++)
			jb_printf(&names, "%s%s", k ? ", " : "", wl->params[k].name);
		kb_die(KB_EXIT_USAGE, "unknown parameter '%s' for workload %s (valid: %s)", key,
		       wl->name, names.len ? names.s : "none");
	}
	const struct kb_param *p = &wl->params[i];
	char norm[32];
	switch (p->type) {
	case KB_INT: {
		long long v;
		if (parse_ll(val, &v) < 0)
			kb_die(KB_EXIT_USAGE, "parameter %s=%s: not an integer", key, val);
		if (v < p->min || v > p->max)
			kb_die(KB_EXIT_USAGE, "parameter %s=%s: out of range [%lld, %lld]", key, val,
			       p->min, p->max);
		c->pint[i] = v;
		snprintf(norm, sizeof norm, "%lld", v);
		val = norm;
		break;
	}
	case KB_BOOL:
		if (!strcmp(val, "1") || !strcasecmp(val, "true") || !strcasecmp(val, "yes") ||
		    !strcasecmp(val, "on"))
			c->pint[i] = 1;
		else if (!strcmp(val, "0") || !strcasecmp(val, "false") || !strcasecmp(val, "no") ||
			 !strcasecmp(val, "off"))
			c->pint[i] = 0;
		else
			kb_die(KB_EXIT_USAGE, "parameter %s=%s: expected 0/1/true/false", key, val);
		val = c->pint[i] ? "1" : "0";
		break;
	case KB_STR:
		if (p->choices) {
			size_t vl = strlen(val);
			int ok = 0;
			for (const char *ch = p->choices; *ch;) {
				size_t l = strcspn(ch, "|");
				if (l == vl && strncmp(ch, val, l) == 0)
					ok = 1;
				ch += l + (ch[l] == '|');
			}
			if (!ok)
				kb_die(KB_EXIT_USAGE, "parameter %s=%s: expected one of %s", key, val,
				       p->choices);
		}
		break;
	}
	free(c->pval[i]);
	c->pval[i] = strdup(val);
}

static void params_defaults(struct kb_ctx *c)
{
	const struct kb_workload *wl = c->wl;
	for (int i = 0; wl->params[i].name; i++) {
		if (i >= KB_MAX_PARAMS)
			kb_die(KB_EXIT_SETUP, "workload %s has too many parameters", wl->name);
		char kv[512];
		snprintf(kv, sizeof kv, "%s=%s", wl->params[i].name, wl->params[i].def);
		set_param(c, kv);
		c->nparams = i + 1;
	}
}

/* ------------------------------------------------------------------ */
/* --list                                                              */

static const char *const ticks_only[] = {"ticks", NULL};
static const char *const *columns_of(const struct kb_workload *wl)
{
	return wl->columns ? wl->columns : ticks_only;
}

static int ncolumns(const struct kb_workload *wl)
{
	int n = 0;
	for (const char *const *p = columns_of(wl); *p; p++)
		n++;
	return n;
}

static void json_columns(struct jbuf *b, const struct kb_workload *wl)
{
	jb_key(b, "columns");
	jb_raw(b, "[");
	for (const char *const *p = columns_of(wl); *p; p++) {
		jb_comma(b);
		jb_str(b, *p);
	}
	jb_raw(b, "]");
}

static int do_list(void)
{
	static const char *tname[] = {"int", "str", "bool"};
	struct jbuf b;
	jb_init(&b);
	jb_raw(&b, "[");
	for (size_t w = 0; w < kb_nworkloads; w++) {
		const struct kb_workload *wl = &kb_workloads[w];
		jb_comma(&b);
		jb_raw(&b, "{");
		jb_kstr(&b, "name", wl->name);
		jb_kstr(&b, "description", wl->desc);
		jb_kstr(&b, "unit", "ns");
		json_columns(&b, wl);
		jb_kbool(&b, "batch_forced_1", (wl->flags & KB_F_BATCH1) != 0);
		jb_key(&b, "params");
		jb_raw(&b, "[");
		for (int i = 0; wl->params[i].name; i++) {
			const struct kb_param *p = &wl->params[i];
			jb_comma(&b);
			jb_raw(&b, "{");
			jb_kstr(&b, "name", p->name);
			jb_kstr(&b, "type", tname[p->type]);
			jb_kstr(&b, "default", p->def);
			jb_kstr(&b, "description", p->desc);
			if (p->type == KB_INT) {
				jb_kint(&b, "min", p->min);
				jb_kint(&b, "max", p->max);
			}
			if (p->type == KB_STR && p->choices) {
				jb_key(&b, "choices");
				jb_raw(&b, "[");
				for (const char *ch = p->choices; *ch;) {
					size_t l = strcspn(ch, "|");
					char one[64];
					snprintf(one, sizeof one, "%.*s", (int)l, ch);
					jb_comma(&b);
					jb_str(&b, one);
					ch += l + (ch[l] == '|');
				}
				jb_raw(&b, "]");
			}
			jb_raw(&b, "}");
		}
		jb_raw(&b, "]}");
	}
	jb_raw(&b, "]\n");
	fputs(b.s, stdout);
	jb_free(&b);
	return fflush(stdout) == 0 ? 0 : KB_EXIT_SETUP;
}

/* ------------------------------------------------------------------ */
/* the measurement loops                                               */

/* One call of a loop measures samples until `count` are done (count > 0) or,
 * when dur_ticks > 0, until dur_ticks have passed since the first sample
 * started.  Rows go to rows[] (ncols u64 each); rows == NULL: not kept. */
struct loop {
	struct kb_ctx *c;
	kb_run_fn run;
	kb_between_fn between;
	uint64_t batch;
	int ncols;
	uint64_t *rows;
	long long cap;     /* rows allocated */
	long long max;     /* hard cap (grow up to it) */
	long long count;   /* 0: duration mode */
	uint64_t dur_ticks;
	int progress;
	/* results */
	long long n;
	uint64_t first_t0, last_t1;
	long long migrations;
	uint32_t last_aux;
	int have_aux;
	int capped, grow_failed;
};

static int grow_rows(struct loop *L)
{
	long long ncap = L->cap * 2 > L->max ? L->max : L->cap * 2;
	if (ncap <= L->cap)
		return -1;
	uint64_t *r = realloc(L->rows, (size_t)ncap * (size_t)L->ncols * sizeof *r);
	if (!r)
		return -1;
	memset(r + L->cap * L->ncols, 0, (size_t)(ncap - L->cap) * (size_t)L->ncols * sizeof *r);
	L->rows = r;
	L->cap = ncap;
	return 0;
}

static inline __attribute__((always_inline)) void loop_impl(const enum kb_timer_kind kind,
							    struct loop *L)
{
	struct kb_ctx *c = L->c;
	const kb_run_fn run = L->run;
	const kb_between_fn between = L->between;
	const uint64_t batch = L->batch;
	const int ncols = L->ncols;
	uint64_t scratch[8] = {0};
	uint64_t next_progress = 0, quarter = (uint64_t)(kb_timer.hz / 4);
	long long n = 0;
	uint64_t t0 = 0, t1 = 0;
	uint32_t aux = 0;
	if (L->progress)
		next_progress = kind == KB_TIMER_CLOCK ? kb_clock_now() + quarter
						       : kb_tsc_start() + quarter;
	for (;;) {
		if (kb_stop)
			break;
		uint64_t *row = L->rows ? L->rows + n * ncols : scratch;
		if (between)
			between(c);
		t0 = kb_t_start(kind);
		run(c, batch, row + 1);
		t1 = kb_t_end(kind, &aux);
		if (kb_stop) /* a signal arrived inside this sample: its time is not clean */
			break;
		row[0] = t1 - t0;
		if (n == 0 && L->n == 0)
			L->first_t0 = t0;
		n++;
		L->last_t1 = t1;
		if (kind == KB_TIMER_TSCP) {
			if (L->have_aux && aux != L->last_aux)
				L->migrations++;
			L->last_aux = aux;
			L->have_aux = 1;
		}
		if (L->count) {
			if (n >= L->count)
				break;
		} else if (t1 - L->first_t0 >= L->dur_ticks) {
			break;
		}
		if (L->rows && n >= L->cap) {
			if (n >= L->max) {
				L->capped = 1;
				break;
			}
			if (grow_rows(L) < 0) {
				L->grow_failed = 1;
				break;
			}
		}
		if (L->progress && t1 >= next_progress) {
			if (L->count)
				fprintf(stderr, "progress %lld %lld\n", n, L->count);
			else
				fprintf(stderr, "progress %lld %lld\n",
					llround((double)(t1 - L->first_t0) / kb_timer.hz * 1e3),
					llround((double)L->dur_ticks / kb_timer.hz * 1e3));
			next_progress = t1 + quarter;
		}
	}
	L->n += n;
}

static __attribute__((noinline)) void loop_tscp(struct loop *L) { loop_impl(KB_TIMER_TSCP, L); }
static __attribute__((noinline)) void loop_tsc(struct loop *L) { loop_impl(KB_TIMER_TSC, L); }
static __attribute__((noinline)) void loop_clock(struct loop *L) { loop_impl(KB_TIMER_CLOCK, L); }

static void run_loop(struct loop *L)
{
	switch (kb_timer.kind) {
	case KB_TIMER_TSCP: loop_tscp(L); break;
	case KB_TIMER_TSC: loop_tsc(L); break;
	case KB_TIMER_CLOCK: loop_clock(L); break;
	}
}

/* The empty timed region, exactly as the sample loop times (start; end). */
static inline __attribute__((always_inline)) void ovh_impl(const enum kb_timer_kind kind,
							   uint64_t *d, long long n)
{
	uint32_t aux;
	for (long long i = 0; i < n; i++) {
		uint64_t t0 = kb_t_start(kind);
		uint64_t t1 = kb_t_end(kind, &aux);
		d[i] = t1 - t0;
	}
}

uint64_t kb_overhead_pairs(uint64_t *d, long long n)
{
	switch (kb_timer.kind) {
	case KB_TIMER_TSCP: ovh_impl(KB_TIMER_TSCP, d, n); break;
	case KB_TIMER_TSC: ovh_impl(KB_TIMER_TSC, d, n); break;
	case KB_TIMER_CLOCK: ovh_impl(KB_TIMER_CLOCK, d, n); break;
	}
	return n ? d[0] : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ */
/* options                                                             */

struct opts {
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
	int progress;
	int have_samples, have_duration, have_max, have_wsamples, have_wduration;
};

static void usage(FILE *f)
{
	fputs("usage: kbench-probe --list | --list-scale | --version | run WORKLOAD [options]\n"
	      "       kbench-probe scale TESTCASE [options] (kbench-probe scale --help)\n"
	      "  -p, --param KEY=VALUE   workload parameter (repeatable)\n"
	      "  --samples N             count mode (default 10000)\n"
	      "  --duration SEC          duration mode\n"
	      "  --max-samples N         cap in duration mode (default 10000000)\n"
	      "  --warmup-samples N      warm-up by count\n"
	      "  --warmup-duration SEC   warm-up by time\n"
	      "  --batch B|auto          operations per sample (default auto)\n"
	      "  --cpu C                 pin the measuring thread\n"
	      "  --timer tsc|clock|auto  (default auto)\n"
	      "  --overhead-pairs N      empty timed regions for the overhead (default 100000)\n"
	      "  --output FILE           write to FILE instead of stdout\n"
	      "  --progress              progress lines on stderr\n"
	      "See docs/probe-format.md.\n",
	      f);
}

static long long opt_int(const char *opt, const char *v, long long lo, long long hi)
{
	long long x;
	if (parse_ll(v, &x) < 0)
		kb_die(KB_EXIT_USAGE, "%s %s: not an integer", opt, v);
	if (x < lo || x > hi)
		kb_die(KB_EXIT_USAGE, "%s %s: out of range [%lld, %lld]", opt, v, lo, hi);
	return x;
}

static double opt_dbl(const char *opt, const char *v, double lo, double hi)
{
	errno = 0;
	char *end;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x))
		kb_die(KB_EXIT_USAGE, "%s %s: not a number", opt, v);
	if (x < lo || x > hi)
		kb_die(KB_EXIT_USAGE, "%s %s: out of range [%g, %g]", opt, v, lo, hi);
	return x;
}

static const struct kb_workload *find_workload(const char *name)
{
	for (size_t i = 0; i < kb_nworkloads; i++)
		if (strcmp(kb_workloads[i].name, name) == 0)
			return &kb_workloads[i];
	struct jbuf names;
	jb_init(&names);
	for (size_t i = 0; i < kb_nworkloads; i++)
		jb_printf(&names, "%s%s", i ? ", " : "", kb_workloads[i].name);
	kb_die(KB_EXIT_USAGE, "unknown workload '%s' (valid: %s)", name, names.s);
}

/*
 * Split one command-line word: "--name=value" gives name "--name" and returns
 * "value"; anything else is copied whole into name and NULL is returned.
 */
const char *kb_split_option(const char *arg, char *name, size_t size)
{
	const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;

	if (!eq) {
		snprintf(name, size, "%s", arg);
		return NULL;
	}
	snprintf(name, size, "%.*s", (int)(eq - arg), arg);
	return eq + 1;
}

/* Parses `run WORKLOAD ...`; params are applied to c after defaults. */
static void parse_run(int argc, char **argv, struct opts *o, struct kb_ctx *c)
{
	memset(o, 0, sizeof *o);
	o->samples = 10000;
	o->max_samples = 10000000;
	o->cpu = -1;
	o->timer = "auto";
	o->overhead_pairs = 100000;
	const char **kvs = calloc((size_t)argc + 1, sizeof *kvs);
	int nkv = 0;
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		if (a[0] != '-') {
			if (o->workload)
				kb_die(KB_EXIT_USAGE, "unexpected argument '%s' (workload is %s)", a,
				       o->workload);
			o->workload = a;
			continue;
		}
		char name[64];
		const char *val = kb_split_option(a, name, sizeof name);
#define IS(s) (strcmp(name, s) == 0)
#define VALUE()                                                                        \
	(val ? val : (i + 1 < argc ? argv[++i]                                         \
				  : (kb_die(KB_EXIT_USAGE, "%s needs a value", name), "")))
		if (IS("--progress")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--progress takes no value");
			o->progress = 1;
		} else if (IS("-p") || IS("--param")) {
			kvs[nkv++] = VALUE();
		} else if (IS("--samples")) {
			o->samples = opt_int(name, VALUE(), 1, MAX_SAMPLES);
			o->have_samples = 1;
		} else if (IS("--duration")) {
			o->duration = opt_dbl(name, VALUE(), 1e-3, 1e6);
			o->have_duration = 1;
		} else if (IS("--max-samples")) {
			o->max_samples = opt_int(name, VALUE(), 1, MAX_SAMPLES);
			o->have_max = 1;
		} else if (IS("--warmup-samples")) {
			o->warmup_samples = opt_int(name, VALUE(), 0, MAX_SAMPLES);
			o->have_wsamples = 1;
		} else if (IS("--warmup-duration")) {
			o->warmup_duration = opt_dbl(name, VALUE(), 0, 1e6);
			o->have_wduration = 1;
		} else if (IS("--batch")) {
			const char *v = VALUE();
			o->batch = strcmp(v, "auto") == 0 ? 0 : opt_int(name, v, 1, MAX_BATCH);
		} else if (IS("--cpu")) {
			o->cpu = opt_int(name, VALUE(), 0, CPU_SETSIZE - 1);
		} else if (IS("--timer")) {
			o->timer = VALUE();
			if (strcmp(o->timer, "tsc") && strcmp(o->timer, "clock") && strcmp(o->timer, "auto"))
				kb_die(KB_EXIT_USAGE, "--timer %s: expected tsc, clock or auto", o->timer);
		} else if (IS("--overhead-pairs")) {
			o->overhead_pairs = opt_int(name, VALUE(), 100, MAX_SAMPLES);
		} else if (IS("--output")) {
			o->output = VALUE();
			if (!o->output[0])
				kb_die(KB_EXIT_USAGE, "--output needs a file name");
		} else {
			kb_die(KB_EXIT_USAGE, "unknown option '%s' (see kbench-probe --help)", a);
		}
#undef IS
#undef VALUE
	}
	if (!o->workload)
		kb_die(KB_EXIT_USAGE, "run needs a WORKLOAD (see kbench-probe --list)");
	if (o->have_samples && o->have_duration)
		kb_die(KB_EXIT_USAGE, "--samples and --duration are mutually exclusive");
	if (o->have_max && !o->have_duration)
		kb_die(KB_EXIT_USAGE, "--max-samples applies to --duration only");
	c->wl = find_workload(o->workload);
	if ((c->wl->flags & KB_F_BATCH1) && o->batch > 1)
		kb_die(KB_EXIT_USAGE, "workload %s runs one operation per sample: --batch must be 1 or auto",
		       c->wl->name);
	params_defaults(c);
	for (int k = 0; k < nkv; k++)
		set_param(c, kvs[k]);
	free(kvs);
}

/* ------------------------------------------------------------------ */
/* the run                                                             */

static void iso_now(char *buf, size_t len)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char s[32];
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%.20s.%06dZ", s, (int)(ts.tv_nsec / 1000) % 1000000);
}

/* ------------------------------------------------------------------ */
/* usage: what the measuring thread and the machine did while measuring */

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

/* The "cpu" lines of /proc/stat: idle = idle + iowait; total = user + nice +
 * system + idle + iowait + irq + softirq + steal (as in scale.c). */
static void usage_read_stat(struct kb_usage_snap *s)
{
	s->ncpu = -1;
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f) && strncmp(line, "cpu", 3) == 0) {
		unsigned long long v[8] = {0};
		int cpu = -1, off = 0;
		if (line[3] != ' ' && sscanf(line + 3, "%d%n", &cpu, &off) != 1)
			break;
		if (sscanf(line + 3 + off, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 4)
			break;
		struct kb_stat_ticks t = {cpu, v[3] + v[4], v[7], 0};
		for (int i = 0; i < 8; i++)
			t.total += v[i];
		if (cpu < 0) {
			s->all = t;
			s->ncpu = 0;
		} else if (s->ncpu >= 0 && s->ncpu < KB_USAGE_MAX_CPUS) {
			s->cpu[s->ncpu++] = t;
		}
	}
	fclose(f);
}

/* The thread's own counters; the order mirrors the end snapshot. */
static void usage_read_thread(struct kb_usage_snap *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	s->thread_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	getrusage(RUSAGE_THREAD, &s->thread);
	getrusage(RUSAGE_SELF, &s->self);
	s->runqueue_wait_ns = -1;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	if (f) {
		unsigned long long run, wait;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			s->runqueue_wait_ns = (long long)wait;
		fclose(f);
	}
}

static double tv_s(struct timeval a, struct timeval b)
{
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_usec - a.tv_usec) * 1e-6;
}

static double ru_cpu_s(const struct rusage *a, const struct rusage *b)
{
	return tv_s(a->ru_utime, b->ru_utime) + tv_s(a->ru_stime, b->ru_stime);
}

static void usage_fractions(struct jbuf *h, const struct kb_stat_ticks *a, const struct kb_stat_ticks *b)
{
	uint64_t total = b->total - a->total;
	jb_ku64(h, "ticks", total);
	double t = total ? (double)total : NAN;
	jb_kdbl(h, "busy_fraction", 1.0 - (double)(b->idle - a->idle) / t, 4);
	jb_kdbl(h, "steal_fraction", (double)(b->steal - a->steal) / t, 4);
}

/* The header's `usage` object (docs/probe-format.md). `children` is the
 * RUSAGE_CHILDREN difference, taken after tear-down so helpers are reaped. */
static void usage_json(struct jbuf *h, const struct kb_usage_snap *a, const struct kb_usage_snap *b,
		       uint64_t wall_ns, double children_cpu_s)
{
	jb_key(h, "usage");
	jb_raw(h, "{");
	jb_kdbl(h, "wall_s", (double)wall_ns * 1e-9, 6);
	jb_kdbl(h, "thread_cpu_s", (double)(b->thread_cpu_ns - a->thread_cpu_ns) * 1e-9, 6);
	jb_kdbl(h, "thread_user_s", tv_s(a->thread.ru_utime, b->thread.ru_utime), 6);
	jb_kdbl(h, "thread_sys_s", tv_s(a->thread.ru_stime, b->thread.ru_stime), 6);
	if (a->runqueue_wait_ns >= 0 && b->runqueue_wait_ns >= 0)
		jb_kdbl(h, "runqueue_wait_s", (double)(b->runqueue_wait_ns - a->runqueue_wait_ns) * 1e-9, 6);
	else
		jb_kstr(h, "runqueue_wait_s", NULL);
	jb_kint(h, "voluntary_ctxsw", b->thread.ru_nvcsw - a->thread.ru_nvcsw);
	jb_kint(h, "involuntary_ctxsw", b->thread.ru_nivcsw - a->thread.ru_nivcsw);
	jb_kint(h, "minor_faults", b->thread.ru_minflt - a->thread.ru_minflt);
	jb_kint(h, "major_faults", b->thread.ru_majflt - a->thread.ru_majflt);
	jb_kdbl(h, "process_cpu_s", ru_cpu_s(&a->self, &b->self), 6);
	jb_kdbl(h, "children_cpu_s", children_cpu_s, 6);
	jb_key(h, "machine");
	if (a->ncpu < 0 || b->ncpu < 0) {
		jb_raw(h, "null}");
		return;
	}
	jb_raw(h, "{");
	jb_kstr(h, "source", "/proc/stat");
	jb_kint(h, "user_hz", sysconf(_SC_CLK_TCK));
	jb_kint(h, "cpus", b->ncpu);
	usage_fractions(h, &a->all, &b->all);
	jb_key(h, "per_cpu_busy");
	jb_raw(h, "{");
	for (int i = 0; i < b->ncpu; i++)
		for (int j = 0; j < a->ncpu; j++)
			if (a->cpu[j].cpu == b->cpu[i].cpu) {
				uint64_t total = b->cpu[i].total - a->cpu[j].total;
				char key[16];
				snprintf(key, sizeof key, "%d", b->cpu[i].cpu);
				jb_kdbl(h, key, total ? 1.0 - (double)(b->cpu[i].idle - a->cpu[j].idle) / (double)total : NAN, 4);
				break;
			}
	jb_raw(h, "}}}");
}


static int do_run(int argc, char **argv)
{
	static struct kb_ctx ctx;
	struct kb_ctx *c = &ctx;
	struct opts o;
	c->fd = c->fd2 = c->fd3 = c->fd4 = -1;
	c->pinned_cpu = -1;
	jb_init(&c->setup);
	jb_init(&warnings);
	parse_run(argc, argv, &o, c);
	const struct kb_workload *wl = c->wl;
	const int ncols = ncolumns(wl);
	const int duration_mode = o.have_duration;

	char start_time[64], end_time[64];
	iso_now(start_time, sizeof start_time);

	int outfd = kb_open_output(o.output, out_path, sizeof out_path, &out_made);
	kb_install_signals(on_signal, 1);

	char err[512];
	if (kb_timer_init(strcmp(o.timer, "clock") == 0 ? "clock" : o.timer, err, sizeof err) < 0)
		kb_die(KB_EXIT_USAGE, "%s", err);

	/* pinning */
	int cpu_start = sched_getcpu();
	if (o.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)o.cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) == 0) {
			c->pinned_cpu = (int)o.cpu;
			cpu_start = sched_getcpu();
		} else {
			kb_warn("pinning to CPU %lld failed (%s): the run is not pinned", o.cpu,
				strerror(errno));
		}
	}

	/* overhead of the empty timed region */
	uint64_t *ovh = malloc((size_t)o.overhead_pairs * sizeof *ovh);
	if (!ovh)
		kb_die(KB_EXIT_SETUP, "out of memory for %lld overhead pairs", o.overhead_pairs);
	memset(ovh, 0, (size_t)o.overhead_pairs * sizeof *ovh);
	kb_overhead_pairs(ovh, o.overhead_pairs / 10 + 1); /* warm the loop */
	kb_overhead_pairs(ovh, o.overhead_pairs);
	qsort(ovh, (size_t)o.overhead_pairs, sizeof *ovh, cmp_u64);
	uint64_t ovh_min = ovh[0], ovh_med = ovh[o.overhead_pairs / 2];
	free(ovh);

	/* workload set-up */
	kb_active_ctx = c;
	jb_raw(&c->setup, "{");
	if (wl->setup) {
		int r = wl->setup(c, err, sizeof err);
		if (r < 0)
			kb_die(r == -2 ? KB_EXIT_USAGE : KB_EXIT_SETUP, "%s: %s", wl->name, err);
	}
	jb_raw(&c->setup, "}");

	struct loop L;
	memset(&L, 0, sizeof L);
	L.c = c;
	L.run = wl->run;
	L.between = wl->between;
	L.ncols = ncols;

	/* batch */
	int batch_auto = o.batch == 0 && !(wl->flags & KB_F_BATCH1);
	uint64_t target = RES_FACTOR * kb_timer.resolution_ticks;
	if (OVH_FACTOR * ovh_med > target)
		target = OVH_FACTOR * ovh_med;
	uint64_t batch = o.batch ? (uint64_t)o.batch : 1;
	long long calib_samples = 0;
	if (batch_auto) {
		/* per candidate: 3 samples to warm caches (not used), then the
		 * median of 15 decides */
		uint64_t cal[18];
		for (;;) {
			struct loop K = L;
			K.batch = batch;
			K.rows = cal;
			K.cap = K.max = K.count = 18;
			c->batch = (long long)batch;
			run_loop(&K);
			calib_samples += K.n;
			if (K.n < 18)
				break; /* interrupted */
			qsort(cal + 3, 15, sizeof *cal, cmp_u64);
			uint64_t med = cal[3 + 7];
			if (med >= target)
				break;
			if (batch >= (uint64_t)MAX_BATCH) {
				kb_warn("batch calibration stopped at the cap %lld: one sample is %llu ticks, "
					"below the target %llu", MAX_BATCH, (unsigned long long)med,
					(unsigned long long)target);
				break;
			}
			batch *= 2;
		}
	}
	L.batch = batch;
	c->batch = (long long)batch;

	/* sample buffer (count mode: before the warm-up) */
	long long cap = duration_mode ? 0 : o.samples;
	if (!duration_mode) {
		L.rows = malloc((size_t)cap * (size_t)ncols * sizeof(uint64_t));
		if (!L.rows)
			kb_die(KB_EXIT_SETUP, "out of memory for %lld samples", cap);
		memset(L.rows, 0, (size_t)cap * (size_t)ncols * sizeof(uint64_t));
	}

	/* warm-up: by count and/or by time; defaults: count mode max(10, 1% of
	 * samples); duration mode at least 10 samples and 1% of the duration */
	long long w_count;
	double w_dur;
	if (o.have_wsamples || o.have_wduration) {
		w_count = o.have_wsamples ? o.warmup_samples : 0;
		w_dur = o.have_wduration ? o.warmup_duration : 0;
	} else if (duration_mode) {
		w_count = 10;
		w_dur = o.duration / 100;
	} else {
		w_count = o.samples / 100 > 10 ? o.samples / 100 : 10;
		w_dur = 0;
	}
	long long w_done = 0;
	uint64_t w0 = kb_clock_now();
	if (w_count > 0 && !kb_stop) {
		struct loop W = L;
		W.rows = NULL;
		W.count = w_count;
		run_loop(&W);
		w_done += W.n;
	}
	if (w_dur > 0 && !kb_stop) {
		struct loop W = L;
		W.rows = NULL;
		W.count = 0;
		W.dur_ticks = (uint64_t)(w_dur * kb_timer.hz);
		W.max = LLONG_MAX;
		run_loop(&W);
		w_done += W.n;
	}
	double w_elapsed = (double)(kb_clock_now() - w0) * 1e-9;

	/* duration mode: size the buffer from the warm-up rate, with headroom */
	if (duration_mode) {
		double per_sample = w_done > 0 ? w_elapsed / (double)w_done : 0;
		double est = per_sample > 0 ? o.duration / per_sample * 1.25 + 1024 : 65536;
		cap = est > (double)o.max_samples ? o.max_samples : (long long)est;
		if (cap < 1)
			cap = 1;
		L.rows = malloc((size_t)cap * (size_t)ncols * sizeof(uint64_t));
		if (!L.rows)
			kb_die(KB_EXIT_SETUP, "out of memory for %lld samples", cap);
		memset(L.rows, 0, (size_t)cap * (size_t)ncols * sizeof(uint64_t));
	}
	L.cap = cap;
	L.max = duration_mode ? o.max_samples : o.samples;
	L.count = duration_mode ? 0 : o.samples;
	L.dur_ticks = duration_mode ? (uint64_t)(o.duration * kb_timer.hz) : 0;
	L.progress = o.progress;

	/* measure (usage snapshots around it, outside the timed region) */
	static struct kb_usage_snap u0, u1;
	struct rusage ch0, ch1;
	getrusage(RUSAGE_CHILDREN, &ch0);
	usage_read_stat(&u0);
	usage_read_thread(&u0);
	uint64_t m0 = kb_clock_now();
	if (!kb_stop)
		run_loop(&L);
	uint64_t m1 = kb_clock_now();
	usage_read_thread(&u1);
	usage_read_stat(&u1);
	int cpu_end = sched_getcpu();
	int interrupted = kb_stop != 0;
	long long errors = c->errors;
	int last_errno = c->last_errno;
	int last_status = strcmp(wl->name, "command") == 0 ? kb_command_last_status(c) : 0;
	kb_cleanup(); /* tear down: helpers stop, files go */
	getrusage(RUSAGE_CHILDREN, &ch1);
	iso_now(end_time, sizeof end_time);

	/* warnings that need the samples */
	long long n = L.n;
	uint64_t med = 0;
	if (n > 0) {
		uint64_t *t = malloc((size_t)n * sizeof *t);
		if (t) {
			for (long long i = 0; i < n; i++)
				t[i] = L.rows[i * ncols];
			qsort(t, (size_t)n, sizeof *t, cmp_u64);
			med = t[n / 2];
			free(t);
		}
		if (med && kb_timer.resolution_ticks * 100 > med)
			kb_warn("timer resolution (%llu ticks) is %.1f%% of the median sample (%llu "
				"ticks): per-operation values are quantized",
				(unsigned long long)kb_timer.resolution_ticks,
				100.0 * (double)kb_timer.resolution_ticks / (double)med,
				(unsigned long long)med);
		if (med && ovh_med * 100 > med)
			kb_warn("timer overhead (median %llu ticks) is %.1f%% of the median sample: "
				"per-operation values include it",
				(unsigned long long)ovh_med, 100.0 * (double)ovh_med / (double)med);
	}
	if (L.migrations > 0 || (cpu_start >= 0 && cpu_end >= 0 && cpu_start != cpu_end))
		kb_warn("the measuring thread changed CPU during the run (%lld migrations seen%s)%s",
			L.migrations, kb_timer.kind == KB_TIMER_TSCP ? " via rdtscp" : ", start/end only",
			c->pinned_cpu < 0 ? ": not pinned, consider --cpu" : "");
	if (errors) {
		if (last_status)
			kb_warn("%lld operations failed (last: exit status %d)", errors, last_status);
		else
			kb_warn("%lld operations failed (last: %s)", errors,
				last_errno ? strerror(last_errno) : "command failed");
	}
	if (L.capped)
		kb_warn("stopped at --max-samples %lld before --duration %g s had passed",
			o.max_samples, o.duration);
	if (L.grow_failed)
		kb_warn("stopped early: could not grow the sample buffer beyond %lld samples", L.cap);

	/* header */
	struct jbuf h;
	jb_init(&h);
	jb_raw(&h, "{");
	jb_kstr(&h, "format", KB_FORMAT);
	jb_kstr(&h, "probe_version", KB_VERSION);
	jb_kstr(&h, "workload", wl->name);
	jb_key(&h, "params");
	jb_raw(&h, "{");
	for (int i = 0; i < c->nparams; i++)
		jb_kstr(&h, wl->params[i].name, c->pval[i]);
	jb_raw(&h, "}");
	jb_kstr(&h, "mode", duration_mode ? "duration" : "count");
	if (duration_mode) {
		jb_key(&h, "samples_requested");
		jb_raw(&h, "null");
		jb_kdbl(&h, "duration_requested_s", o.duration, 6);
		jb_kint(&h, "max_samples", o.max_samples);
	} else {
		jb_kint(&h, "samples_requested", o.samples);
		jb_key(&h, "duration_requested_s");
		jb_raw(&h, "null");
	}
	jb_key(&h, "warmup");
	jb_raw(&h, "{");
	jb_kint(&h, "samples", w_done);
	jb_kdbl(&h, "duration_s", w_elapsed, 6);
	jb_raw(&h, "}");
	jb_kint(&h, "batch", (long long)batch);
	jb_kbool(&h, "batch_auto", batch_auto);
	if (batch_auto) {
		jb_key(&h, "batch_calibration");
		jb_raw(&h, "{");
		jb_kstr(&h, "rule", "smallest power of two with median sample >= max(100 x "
				    "resolution_ticks, 100 x overhead median_ticks)");
		jb_ku64(&h, "target_ticks", target);
		jb_kint(&h, "samples", calib_samples);
		jb_raw(&h, "}");
	}
	jb_key(&h, "timer");
	jb_raw(&h, "{");
	jb_kstr(&h, "name", kb_timer.name);
	jb_kdbl(&h, "hz", kb_timer.hz, 3);
	jb_kbool(&h, "invariant", kb_timer.invariant);
	jb_kstr(&h, "invariant_source", kb_timer.invariant_how);
	jb_ku64(&h, "resolution_ticks", kb_timer.resolution_ticks);
	jb_kdbl(&h, "resolution_ns", kb_timer.resolution_ns, 3);
	jb_kstr(&h, "calibration", kb_timer.calibration);
	jb_kstr(&h, "start_read", kb_timer.kind == KB_TIMER_CLOCK ? "clock_gettime" : "lfence;rdtsc;lfence");
	jb_kstr(&h, "end_read", kb_timer.end_read);
	jb_raw(&h, "}");
	jb_key(&h, "overhead");
	jb_raw(&h, "{");
	jb_kint(&h, "pairs", o.overhead_pairs);
	jb_ku64(&h, "min_ticks", ovh_min);
	jb_ku64(&h, "median_ticks", ovh_med);
	jb_raw(&h, "}");
	jb_key(&h, "cpu");
	jb_raw(&h, "{");
	if (c->pinned_cpu >= 0)
		jb_kint(&h, "pinned", c->pinned_cpu);
	else
		jb_kstr(&h, "pinned", NULL);
	jb_kint(&h, "start", cpu_start);
	jb_kint(&h, "end", cpu_end);
	jb_kint(&h, "migrations", L.migrations);
	jb_raw(&h, "}");
	jb_kstr(&h, "start_time", start_time);
	jb_kstr(&h, "end_time", end_time);
	jb_kdbl(&h, "elapsed_s", (double)(m1 - m0) * 1e-9, 6);
	usage_json(&h, &u0, &u1, m1 - m0, ru_cpu_s(&ch0, &ch1));
	json_columns(&h, wl);
	jb_kint(&h, "n", n);
	jb_kbool(&h, "interrupted", interrupted);
	jb_key(&h, "setup");
	jb_raw(&h, c->setup.s);
	jb_key(&h, "warnings");
	jb_raw(&h, "[");
	if (warnings.len)
		jb_raw(&h, warnings.s);
	jb_raw(&h, "]}\n");

	int bad = kb_write_all(outfd, h.s, h.len) < 0;
	if (!bad && n > 0) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		for (long long i = 0; i < n * ncols; i++)
			L.rows[i] = __builtin_bswap64(L.rows[i]);
#endif
		bad = kb_write_all(outfd, L.rows, (size_t)n * (size_t)ncols * sizeof(uint64_t)) < 0;
	}
	if (outfd != 1 && close(outfd) < 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "kbench-probe: error: writing the output: %s\n", strerror(errno));
		return KB_EXIT_SETUP;
	}
	jb_free(&h);
	free(L.rows);
	return interrupted ? KB_EXIT_INTERRUPTED : KB_EXIT_OK;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		fputs("kbench-probe: error: no command given\n", stderr);
		return KB_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--list") || !strcmp(cmd, "list")) {
		if (argc > 2)
			kb_die(KB_EXIT_USAGE, "--list takes no arguments");
		return do_list();
	}
	if (!strcmp(cmd, "--version")) {
		printf("kbench-probe %s (%s)\n", KB_VERSION, KB_FORMAT);
		return 0;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--selftest-overhead")) {
		/* diagnostic for benchmarks/overhead.py, not part of the contract */
		long long pairs = argc > 2 ? opt_int(cmd, argv[2], 100, MAX_SAMPLES) : 1000000;
		return kb_selftest_overhead(pairs);
	}
	if (!strcmp(cmd, "--list-scale")) {
		if (argc > 2)
			kb_die(KB_EXIT_USAGE, "--list-scale takes no arguments");
		return kb_scale_list();
	}
	if (!strcmp(cmd, "run"))
		return do_run(argc, argv);
	if (!strcmp(cmd, "scale"))
		return kb_scale_main(argc, argv);
	kb_die(KB_EXIT_USAGE, "unknown command '%s' (expected run, scale, --list, --list-scale or --version)", cmd);
}
