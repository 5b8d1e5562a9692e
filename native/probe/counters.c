/* kbench-probe: perf event counters around the measured region (`--counters`)
 * and the window of an outside profiler (`--perf-control CTL,ACK`).
 *
 * Counters: every event of kb_events[] is opened once per process with
 * perf_event_open(2) on the measuring thread, disabled, inherited by the tasks
 * it creates afterwards (a `command`'s executions), each on its own (no group:
 * the kernel multiplexes them as `perf stat` does, and the header says how long
 * each really counted).  prctl(PR_TASK_PERF_EVENTS_ENABLE/DISABLE) switches all
 * of them with one system call just outside the timed loop; a run's values are
 * the differences of read(2) before and after, so a `sequence` reuses the same
 * events.  An event the machine lacks (no PMU in a VM: ENOENT, EOPNOTSUPP) is
 * written as unsupported with its errno, never left out.
 *
 * Profile window: with --perf-control, `perf record --control fd:..` started
 * with its events disabled (-D -1) gets "enable" just before the measured
 * region and "disable" just after, each acknowledged, so that the profile holds
 * the measured loop only (docs/probe-format.md). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

struct kb_event {
	const char *name;
	uint32_t type;
	uint64_t config;
	const char *unit;
};

static const struct kb_event kb_events[] = {
	{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns"},
	{"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "count"},
	{"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "count"},
	{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "count"},
	{"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "count"},
	{"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "count"},
	{"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "count"},
	{"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "count"},
	{"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "count"},
	{"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "count"},
};
#define KB_NEVENTS (sizeof kb_events / sizeof kb_events[0])

/* One read(2) of an event: PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING. */
struct kb_reading {
	uint64_t value, enabled, running;
};

static struct {
	int opened;          /* events opened (once per process) */
	int user_only;       /* the kernel refused kernel-mode counting: user mode only */
	int fd[KB_NEVENTS];  /* -1: not supported */
	int err[KB_NEVENTS]; /* errno of the failed open */
	struct kb_reading start[KB_NEVENTS], end[KB_NEVENTS];
	int started;
	int has_operations;  /* the caller counted the operations itself (scale) */
	uint64_t operations;
} kc;

static int open_event(const struct kb_event *e, int user_only)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = e->type;
	a.config = e->config;
	a.disabled = 1;
	a.inherit = 1;
	a.exclude_hv = 1;
	a.exclude_kernel = (unsigned)user_only;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Open every event once; EACCES/EPERM (perf_event_paranoid >= 2 without
 * CAP_PERFMON) for kernel mode falls back to user mode for all of them. */
static void open_events(void)
{
	kc.opened = 1;
	for (size_t i = 0; i < KB_NEVENTS; i++) {
		kc.fd[i] = open_event(&kb_events[i], kc.user_only);
		kc.err[i] = kc.fd[i] < 0 ? errno : 0;
		if (kc.fd[i] < 0 && !kc.user_only && (errno == EACCES || errno == EPERM)) {
			for (size_t k = 0; k < i; k++)
				if (kc.fd[k] >= 0)
					close(kc.fd[k]);
			kc.user_only = 1;
			i = (size_t)-1; /* again from the first event */
		}
	}
}

static void read_all(struct kb_reading *r)
{
	for (size_t i = 0; i < KB_NEVENTS; i++) {
		memset(&r[i], 0, sizeof r[i]);
		if (kc.fd[i] >= 0 && read(kc.fd[i], &r[i], sizeof r[i]) != (ssize_t)sizeof r[i])
			memset(&r[i], 0, sizeof r[i]);
	}
}

void kb_counters_open(void)
{
	if (!kc.opened)
		open_events();
}

void kb_counters_begin(int on)
{
	kc.started = 0;
	kc.has_operations = 0;
	if (!on)
		return;
	kb_counters_open();
	read_all(kc.start);
	kc.started = 1;
	prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0);
}

void kb_counters_start(const struct kb_run_opts *o)
{
	kb_counters_begin(o->counters);
}

void kb_counters_operations(uint64_t operations)
{
	kc.operations = operations;
	kc.has_operations = 1;
}

void kb_counters_stop(void)
{
	if (!kc.started)
		return;
	prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
	read_all(kc.end);
}

/* The header's `counters` object, or nothing when the run did not ask for them. */
void kb_counters_json(struct jbuf *h)
{
	if (!kc.started)
		return;
	jb_key(h, "counters");
	jb_raw(h, "{");
	jb_kstr(h, "source", "perf_event_open");
	jb_kstr(h, "scope", kc.user_only ? "user" : "user+kernel");
	if (kc.has_operations)
		jb_ku64(h, "operations", kc.operations);
	jb_kbool(h, "inherit", 1);
	jb_key(h, "events");
	jb_raw(h, "[");
	for (size_t i = 0; i < KB_NEVENTS; i++) {
		const struct kb_event *e = &kb_events[i];
		jb_comma(h);
		jb_raw(h, "{");
		jb_kstr(h, "name", e->name);
		jb_kstr(h, "type", e->type == PERF_TYPE_HARDWARE ? "hardware" : "software");
		if (kc.fd[i] < 0) {
			jb_kbool(h, "supported", 0);
			jb_kint(h, "errno", kc.err[i]);
			jb_kstr(h, "error", strerror(kc.err[i]));
		} else {
			jb_kbool(h, "supported", 1);
			jb_kstr(h, "unit", e->unit);
			jb_ku64(h, "value", kc.end[i].value - kc.start[i].value);
			jb_ku64(h, "enabled_ns", kc.end[i].enabled - kc.start[i].enabled);
			jb_ku64(h, "running_ns", kc.end[i].running - kc.start[i].running);
		}
		jb_raw(h, "}");
	}
	jb_raw(h, "]}");
}

/* ------------------------------------------------------------------ */
/* the profile window                                                  */

static int perf_command(const struct kb_run_opts *o, const char *cmd)
{
	char ack[16] = {0};
	size_t len = strlen(cmd);

	if (kb_write_all(o->perf_ctl_fd, cmd, len) < 0)
		return -1;
	/* perf answers "ack\n" once the command took effect */
	ssize_t got = read(o->perf_ack_fd, ack, sizeof ack - 1);
	return got > 0 && strncmp(ack, "ack", 3) == 0 ? 0 : -1;
}

void kb_profile_window(const struct kb_run_opts *o, int open)
{
	if (o->perf_ctl_fd < 0)
		return;
	if (perf_command(o, open ? "enable\n" : "disable\n") < 0)
		kb_warn("the profiler did not acknowledge '%s' on its control descriptors: the profile "
			"may not cover exactly the measured region", open ? "enable" : "disable");
}
