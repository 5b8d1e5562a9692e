/* kbench-probe: the command line of `run` and the workload parameters. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe.h"

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

int kb_parse_ll(const char *s, long long *out)
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
		if (kb_parse_ll(val, &v) < 0)
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
/* options                                                             */

void kb_usage(FILE *f)
{
	fputs("usage: kbench-probe --list | --list-scale | --version | run WORKLOAD [options]\n"
	      "       kbench-probe sequence [--output FILE] -- WORKLOAD [options] -- ...\n"
	      "                 (the runs one after another in one process, outputs concatenated)\n"
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
	      "  --spill FILE            also stream the samples to FILE as they are taken\n"
	      "                          (written at least every second; run only)\n"
	      "  --progress              progress lines on stderr\n"
	      "  --counters              perf event counters around the measured region\n"
	      "  --ignore-failure        time failed operations too (default: stop at the first, exit 4)\n"
	      "  --mark                  mark each measured sample's operations for instruction counters\n"
	      "                          (callgrind's collection, kbench's emulator marks)\n"
	      "  --perf-control CTL,ACK  enable/disable a profiler (perf record --control fd:..)\n"
	      "                          around the measured region\n"
	      "See docs/probe-format.md.\n",
	      f);
}

long long kb_opt_int(const char *opt, const char *v, long long lo, long long hi)
{
	long long x;
	if (kb_parse_ll(v, &x) < 0)
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

/* --perf-control CTL,ACK: two open descriptors (perf record's --control fd:CTL,ACK other ends). */
static void parse_perf_control(const char *v, struct kb_run_opts *o)
{
	int ctl, ack, used = 0;

	if (sscanf(v, "%d,%d%n", &ctl, &ack, &used) != 2 || v[used] || ctl < 0 || ack < 0)
		kb_die(KB_EXIT_USAGE, "--perf-control %s: expected two descriptors CTL,ACK", v);
	if (fcntl(ctl, F_GETFD) < 0 || fcntl(ack, F_GETFD) < 0)
		kb_die(KB_EXIT_USAGE, "--perf-control %s: descriptor not open", v);
	o->perf_ctl_fd = ctl;
	o->perf_ack_fd = ack;
}

void kb_parse_run(int argc, char **argv, struct kb_run_opts *o, struct kb_ctx *c)
{
	memset(o, 0, sizeof *o);
	o->samples = 10000;
	o->max_samples = 10000000;
	o->cpu = -1;
	o->timer = "auto";
	o->overhead_pairs = 100000;
	o->perf_ctl_fd = o->perf_ack_fd = -1;
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
		} else if (IS("--ignore-failure")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--ignore-failure takes no value");
			o->ignore_failure = 1;
		} else if (IS("--mark")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--mark takes no value");
			o->mark = 1;
		} else if (IS("--counters")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--counters takes no value");
			o->counters = 1;
		} else if (IS("--perf-control")) {
			parse_perf_control(VALUE(), o);
		} else if (IS("-p") || IS("--param")) {
			kvs[nkv++] = VALUE();
		} else if (IS("--samples")) {
			o->samples = kb_opt_int(name, VALUE(), 1, KB_MAX_SAMPLES);
			o->have_samples = 1;
		} else if (IS("--duration")) {
			o->duration = opt_dbl(name, VALUE(), 1e-3, 1e6);
			o->have_duration = 1;
		} else if (IS("--max-samples")) {
			o->max_samples = kb_opt_int(name, VALUE(), 1, KB_MAX_SAMPLES);
			o->have_max = 1;
		} else if (IS("--warmup-samples")) {
			o->warmup_samples = kb_opt_int(name, VALUE(), 0, KB_MAX_SAMPLES);
			o->have_wsamples = 1;
		} else if (IS("--warmup-duration")) {
			o->warmup_duration = opt_dbl(name, VALUE(), 0, 1e6);
			o->have_wduration = 1;
		} else if (IS("--batch")) {
			const char *v = VALUE();
			o->batch = strcmp(v, "auto") == 0 ? 0 : kb_opt_int(name, v, 1, KB_MAX_BATCH);
		} else if (IS("--cpu")) {
			o->cpu = kb_opt_int(name, VALUE(), 0, CPU_SETSIZE - 1);
		} else if (IS("--timer")) {
			o->timer = VALUE();
			if (strcmp(o->timer, "tsc") && strcmp(o->timer, "clock") && strcmp(o->timer, "auto"))
				kb_die(KB_EXIT_USAGE, "--timer %s: expected tsc, clock or auto", o->timer);
		} else if (IS("--overhead-pairs")) {
			o->overhead_pairs = kb_opt_int(name, VALUE(), 100, KB_MAX_SAMPLES);
		} else if (IS("--output")) {
			o->output = VALUE();
			if (!o->output[0])
				kb_die(KB_EXIT_USAGE, "--output needs a file name");
		} else if (IS("--spill")) {
			o->spill = VALUE();
			if (!o->spill[0])
				kb_die(KB_EXIT_USAGE, "--spill needs a file name");
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
	c->stop_on_failure = !o->ignore_failure;
	if ((c->wl->flags & KB_F_BATCH1) && o->batch > 1)
		kb_die(KB_EXIT_USAGE, "workload %s runs one operation per sample: --batch must be 1 or auto",
		       c->wl->name);
	params_defaults(c);
	for (int k = 0; k < nkv; k++)
		set_param(c, kvs[k]);
	free(kvs);
}

