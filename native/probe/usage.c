/* kbench-probe: what the measuring thread and the machine did while a run
 * measured (the header's `usage`, docs/probe-format.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

/* The "cpu" lines of /proc/stat: idle = idle + iowait; total = user + nice +
 * system + idle + iowait + irq + softirq + steal (as in scale.c). */
void kb_usage_read_stat(struct kb_usage_snap *s)
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

uint64_t kb_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's own counters; the order mirrors the end snapshot. */
void kb_usage_read_thread(struct kb_usage_snap *s)
{
	s->thread_cpu_ns = kb_thread_cpu_ns();
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

double kb_rusage_cpu_s(const struct rusage *a, const struct rusage *b)
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
void kb_usage_json(struct jbuf *h, const struct kb_usage_snap *a, const struct kb_usage_snap *b,
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
	jb_kdbl(h, "process_cpu_s", kb_rusage_cpu_s(&a->self, &b->self), 6);
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
