/* kbench-probe: what the probe writes: the --list catalog, and a run's
 * header line and little-endian sample rows (docs/probe-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "timer.h"

/* Write all of buf, retrying short writes and EINTR; -1 on error. */
int kb_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Open --output PATH for the binary stream (stdout, fd 1, without one). The path
 * is kept in `path` and *made set, so that an error or a second signal can remove
 * a half-written file. */
int kb_open_output(const char *output, char *path, size_t size, volatile int *made)
{
	int fd;

	if (!output)
		return 1;
	snprintf(path, size, "%s", output);
	fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		kb_die(KB_EXIT_USAGE, "--output %s: %s", output, strerror(errno));
	*made = 1;
	return fd;
}

void kb_iso_now(char *buf, size_t len)
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
/* --list                                                              */

static const char *const ticks_only[] = {"ticks", NULL};
static const char *const *columns_of(const struct kb_workload *wl)
{
	return wl->columns ? wl->columns : ticks_only;
}

/* The workload's columns, then "gap_ticks" (kb_loop fills it: the timer ticks from the
 * end of the previous sample to the start of this one, 0 for the first). */
int kb_ncolumns(const struct kb_workload *wl)
{
	int n = 1;
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
	jb_comma(b);
	jb_str(b, "gap_ticks");
	jb_raw(b, "]");
}

int kb_list_workloads(void)
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
/* a run                                                               */

static void header_request(struct jbuf *h, const struct kb_run *r)
{
	const struct kb_run_opts *o = &r->opts;
	const struct kb_ctx *c = r->c;
	const struct kb_workload *wl = c->wl;

	jb_kstr(h, "workload", wl->name);
	jb_key(h, "params");
	jb_raw(h, "{");
	for (int i = 0; i < c->nparams; i++)
		jb_kstr(h, wl->params[i].name, c->pval[i]);
	jb_raw(h, "}");
	jb_kstr(h, "mode", o->have_duration ? "duration" : "count");
	if (o->have_duration) {
		jb_key(h, "samples_requested");
		jb_raw(h, "null");
		jb_kdbl(h, "duration_requested_s", o->duration, 6);
		jb_kint(h, "max_samples", o->max_samples);
	} else {
		jb_kint(h, "samples_requested", o->samples);
		jb_key(h, "duration_requested_s");
		jb_raw(h, "null");
	}
}

static void header_method(struct jbuf *h, const struct kb_run *r)
{
	jb_key(h, "warmup");
	jb_raw(h, "{");
	jb_kint(h, "samples", r->warmup_samples);
	jb_kdbl(h, "duration_s", r->warmup_s, 6);
	jb_raw(h, "}");
	jb_kint(h, "batch", (long long)r->loop.batch);
	jb_kbool(h, "batch_auto", r->batch_auto);
	if (r->opts.mark) {
		jb_key(h, "marks");
		jb_raw(h, "{");
		jb_kbool(h, "callgrind", kb_marks_callgrind());
		jb_kbool(h, "emulator", kb_marks_emulator());
		jb_raw(h, "}");
	}
	if (r->batch_auto) {
		jb_key(h, "batch_calibration");
		jb_raw(h, "{");
		jb_kstr(h, "rule", "smallest power of two with median sample >= max(100 x "
				   "resolution_ticks, 100 x overhead median_ticks)");
		jb_ku64(h, "target_ticks", r->batch_target);
		jb_kint(h, "samples", r->calibration_samples);
		jb_raw(h, "}");
	}
	jb_key(h, "timer");
	jb_raw(h, "{");
	jb_kstr(h, "name", kb_timer.name);
	jb_kdbl(h, "hz", kb_timer.hz, 3);
	jb_kbool(h, "invariant", kb_timer.invariant);
	jb_kstr(h, "invariant_source", kb_timer.invariant_how);
	jb_ku64(h, "resolution_ticks", kb_timer.resolution_ticks);
	jb_kdbl(h, "resolution_ns", kb_timer.resolution_ns, 3);
	jb_kstr(h, "calibration", kb_timer.calibration);
	jb_kstr(h, "start_read", kb_timer.kind == KB_TIMER_CLOCK ? "clock_gettime" : "lfence;rdtsc;lfence");
	jb_kstr(h, "end_read", kb_timer.end_read);
	jb_raw(h, "}");
	jb_key(h, "overhead");
	jb_raw(h, "{");
	jb_kint(h, "pairs", r->opts.overhead_pairs);
	jb_ku64(h, "min_ticks", r->overhead_min);
	jb_ku64(h, "median_ticks", r->overhead_median);
	jb_raw(h, "}");
}

void kb_failure_text(const struct kb_run *r, char *buf, size_t len)
{
	if (r->last_status < 0)
		snprintf(buf, len, "killed by signal %d (%s)", -r->last_status, strsignal(-r->last_status));
	else if (r->last_status)
		snprintf(buf, len, "exit status %d", r->last_status);
	else
		snprintf(buf, len, "%s", r->last_errno ? strerror(r->last_errno) : "failed");
}

/* `failure`: the operations that failed (exit status, signal or errno), and whether the
 * run stopped at the first of them (the default) or timed them all (--ignore-failure). */
static void header_failure(struct jbuf *h, const struct kb_run *r)
{
	char what[160];

	kb_failure_text(r, what, sizeof what);
	jb_key(h, "failure");
	jb_raw(h, "{");
	jb_kint(h, "count", r->failed_ops);
	jb_kint(h, "before", r->failed_before);
	jb_kbool(h, "stopped", r->stopped_at_failure);
	jb_kbool(h, "ignored", r->opts.ignore_failure);
	if (r->failed_ops + r->failed_before) {
		jb_kstr(h, "last", what);
		if (r->last_status > 0)
			jb_kint(h, "exit_status", r->last_status);
		if (r->last_status < 0)
			jb_kint(h, "signal", -r->last_status);
		if (r->last_errno)
			jb_kint(h, "last_errno", r->last_errno);
		if (r->failed_stderr[0])
			jb_kstr(h, "stderr", r->failed_stderr);
	}
	jb_raw(h, "}");
}

static void header_context(struct jbuf *h, const struct kb_run *r)
{
	jb_key(h, "cpu");
	jb_raw(h, "{");
	if (r->c->pinned_cpu >= 0)
		jb_kint(h, "pinned", r->c->pinned_cpu);
	else
		jb_kstr(h, "pinned", NULL);
	jb_kint(h, "start", r->cpu_start);
	jb_kint(h, "end", r->cpu_end);
	jb_kint(h, "migrations", r->loop.migrations);
	jb_raw(h, "}");
	jb_kstr(h, "start_time", r->start_time);
	jb_kstr(h, "end_time", r->end_time);
	jb_kdbl(h, "elapsed_s", (double)(r->measure_end_ns - r->measure_start_ns) * 1e-9, 6);
	kb_usage_json(h, &r->usage_start, &r->usage_end, r->measure_end_ns - r->measure_start_ns,
		      r->children_cpu_s);
	kb_counters_json(h);
}

/* The spill (docs/probe-format.md, "Spill"): a header line written before the first
 * measured sample, with `n` null, then the rows as they are taken. */
int kb_write_spill_header(int fd, const struct kb_run *r)
{
	struct jbuf h;

	jb_init(&h);
	jb_raw(&h, "{");
	jb_kstr(&h, "format", KB_FORMAT);
	jb_kstr(&h, "probe_version", KB_VERSION);
	jb_kbool(&h, "spill", 1);
	header_request(&h, r);
	header_method(&h, r);
	jb_kstr(&h, "start_time", r->start_time);
	json_columns(&h, r->c->wl);
	jb_key(&h, "n");
	jb_raw(&h, "null");
	jb_raw(&h, "}\n");
	int bad = kb_write_all(fd, h.s, h.len) < 0;
	jb_free(&h);
	return bad ? -1 : 0;
}

void kb_spill_rows(struct kb_loop *L, long long n)
{
	if (L->spill_failed || n <= L->spilled)
		return;
	uint64_t *from = L->rows + L->spilled * L->ncols;
	size_t count = (size_t)(n - L->spilled) * (size_t)L->ncols;
	int bad;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	for (size_t i = 0; i < count; i++)
		from[i] = __builtin_bswap64(from[i]);
	bad = kb_write_all(L->spill_fd, from, count * sizeof *from) < 0;
	for (size_t i = 0; i < count; i++)
		from[i] = __builtin_bswap64(from[i]);
#else
	bad = kb_write_all(L->spill_fd, from, count * sizeof *from) < 0;
#endif
	if (bad) {
		/* A full disk must not stop the run: the samples are still in memory. */
		L->spill_failed = 1;
		kb_warn("writing the spill file failed after %lld rows (%s): the rest is in the output only",
			L->spilled, strerror(errno));
		return;
	}
	L->spilled = n;
}

int kb_write_run(int fd, const struct kb_run *r)
{
	const struct kb_loop *L = &r->loop;
	struct jbuf h;

	jb_init(&h);
	jb_raw(&h, "{");
	jb_kstr(&h, "format", KB_FORMAT);
	jb_kstr(&h, "probe_version", KB_VERSION);
	header_request(&h, r);
	header_method(&h, r);
	header_context(&h, r);
	json_columns(&h, r->c->wl);
	jb_kint(&h, "n", L->n);
	jb_kbool(&h, "interrupted", r->interrupted);
	header_failure(&h, r);
	jb_key(&h, "setup");
	jb_raw(&h, r->c->setup.s);
	jb_key(&h, "warnings");
	jb_raw(&h, "[");
	jb_raw(&h, kb_warnings_json());
	jb_raw(&h, "]}\n");

	int bad = kb_write_all(fd, h.s, h.len) < 0;
	jb_free(&h);
	if (!bad && L->n > 0) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		for (long long i = 0; i < L->n * L->ncols; i++)
			L->rows[i] = __builtin_bswap64(L->rows[i]);
#endif
		bad = kb_write_all(fd, L->rows, (size_t)L->n * (size_t)L->ncols * sizeof(uint64_t)) < 0;
	}
	return bad ? -1 : 0;
}
