/* kbench-probe scale: the will-it-scale model.
 *
 * N tasks (forked processes whose counters live in a MAP_SHARED anonymous
 * mapping, or threads) each loop one testcase and publish their own count in
 * their own cache-line-padded slot.  They start together behind a barrier (a
 * futex word); the harness then wakes up once per interval at absolute
 * CLOCK_MONOTONIC deadlines, reads every counter and /proc/stat, and keeps one
 * row per interval: per-task deltas and the machine's idle/total time.
 * Contract: docs/probe-format.md, section "scale".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "scale.h"

#define SC_LINE 256 /* bytes per counter slot: no false sharing, even with
		     * adjacent-line prefetch or 128/256-byte lines */
#define SC_MAX_TASKS 4096
#define SC_FIXED_COLS 3 /* elapsed_ns, idle_userhz, total_userhz */

/* ------------------------------------------------------------------ */
/* the shared area (MAP_SHARED | MAP_ANONYMOUS: visible across fork)   */

struct sc_ctl {
	_Alignas(SC_LINE) uint32_t go;  /* futex word of the start barrier */
	_Alignas(SC_LINE) uint32_t stop; /* read by every task every op: read-only while running */
	_Alignas(SC_LINE) uint32_t ready;
	uint32_t failed;
};

struct sc_slot {
	_Alignas(SC_LINE) uint64_t ops; /* written by its task only, relaxed */
	uint64_t errors;
	int last_errno;
	int cpu;       /* sched_getcpu() after pinning, before the barrier */
	int pin_errno; /* sched_setaffinity failure, 0 = fine */
	int state;     /* 0 starting, 1 ready, 2 set-up failed */
	char err[200];
};

_Static_assert(sizeof(struct sc_slot) == SC_LINE, "one slot per SC_LINE bytes");

static struct sc_ctl *sh;
static struct sc_slot *slots;
static size_t sh_len;

/* ------------------------------------------------------------------ */
/* options                                                             */

enum sc_pin { PIN_CORE, PIN_CPU, PIN_LIST, PIN_NONE };
static const char *const pin_names[] = {"core", "cpu", "cpu-list", "none"};

struct sc_opts {
	const struct kb_scale_test *test;
	long tasks;
	int thread_mode;
	double duration, warmup, interval;
	enum sc_pin pin;
	const char *cpu_list;
	const char *dir;
	const char *output;
	int counters; /* --counters: perf events over the measured intervals */
	int ignore_failure; /* --ignore-failure: failed operations and abnormal ends are warnings */
};

/* ------------------------------------------------------------------ */
/* harness state needed by clean-up and the signal handler             */

static long harness_pid;
static pid_t *pids;       /* process mode */
static volatile int npids;
static pthread_t *threads; /* thread mode */
static int nthreads;
static char (*paths)[4096]; /* KB_SCALE_F_PATH files */
static volatile int npaths;
static char out_path[4096];
static volatile int out_made, out_done;
static cpu_set_t *task_sets; /* NULL entries when not pinned */
static int *task_pinned;
static struct sc_opts O;

static void unlink_paths(void)
{
	for (int i = 0; i < npaths; i++)
		unlink(paths[i]);
}

/* Every exit path of the harness: children killed and reaped, files gone,
 * an unfinished --output file removed.  Not for tasks (they _exit). */
static void sc_cleanup(void)
{
	if (getpid() != harness_pid)
		return;
	if (sh)
		__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < npids; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
	unlink_paths();
	npaths = 0;
	if (out_made && !out_done)
		unlink(out_path);
}

static void on_signal(int sig KB_UNUSED)
{
	if (kb_stop) { /* second signal: give up at once, without output */
		for (int i = 0; i < npids; i++)
			if (pids[i] > 0)
				kill(pids[i], SIGKILL);
		for (int i = 0; i < npaths; i++)
			unlink(paths[i]);
		if (out_made)
			unlink(out_path);
		_exit(KB_EXIT_INTERRUPTED);
	}
	kb_stop = 1;
}

/* ------------------------------------------------------------------ */
/* small parsers                                                       */

static long sc_int(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || end == v || *end)
		kb_die(KB_EXIT_USAGE, "%s %s: not an integer", opt, v);
	if (x < lo || x > hi)
		kb_die(KB_EXIT_USAGE, "%s %s: out of range [%ld, %ld]", opt, v, lo, hi);
	return x;
}

static double sc_dbl(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x))
		kb_die(KB_EXIT_USAGE, "%s %s: not a number", opt, v);
	if (x < lo || x > hi)
		kb_die(KB_EXIT_USAGE, "%s %s: out of range [%g, %g]", opt, v, lo, hi);
	return x;
}

/* "0-3,6,8-9" in the order written (duplicates kept out).  Returns the count,
 * -1 on a syntax error. */
static int parse_cpu_list(const char *s, int *out, int max)
{
	int n = 0;
	const char *p = s;
	if (!*p)
		return -1;
	while (*p) {
		char *end;
		errno = 0;
		long a = strtol(p, &end, 10), b;
		if (errno || end == p || a < 0 || a >= CPU_SETSIZE)
			return -1;
		p = end;
		b = a;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (errno || end == p || b < a || b >= CPU_SETSIZE)
				return -1;
			p = end;
		}
		for (long c = a; c <= b; c++) {
			int dup = 0;
			for (int k = 0; k < n; k++)
				dup |= out[k] == c;
			if (!dup && n < max)
				out[n++] = (int)c;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -1;
		else
			break;
	}
	return n;
}

static void set_to_str(const cpu_set_t *set, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		int w = e > c ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", c, e)
			      : snprintf(buf + at, len - at, "%s%d", at ? "," : "", c);
		if (w < 0 || (size_t)w >= len - at)
			break;
		at += (size_t)w;
		c = e;
	}
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* --list-scale                                                        */

int kb_scale_list(void)
{
	struct jbuf b;
	jb_init(&b);
	jb_raw(&b, "[");
	for (size_t i = 0; i < kb_nscale_tests; i++) {
		const struct kb_scale_test *t = &kb_scale_tests[i];
		jb_comma(&b);
		jb_raw(&b, "{");
		jb_kstr(&b, "name", t->name);
		jb_kstr(&b, "description", t->desc);
		jb_kstr(&b, "op", t->op);
		jb_kstr(&b, "unit", "ops/s");
		jb_kstr(&b, "direction", "higher");
		jb_key(&b, "modes");
		jb_raw(&b, "[\"process\",\"thread\"]");
		jb_key(&b, "params");
		jb_raw(&b, "[{");
		jb_kstr(&b, "name", "nr_task");
		jb_kstr(&b, "type", "int");
		jb_kstr(&b, "default", "1");
		jb_kstr(&b, "description", "tasks looping the testcase (--tasks)");
		jb_kint(&b, "min", 1);
		jb_kint(&b, "max", SC_MAX_TASKS);
		jb_raw(&b, "},{");
		jb_kstr(&b, "name", "mode");
		jb_kstr(&b, "type", "str");
		jb_kstr(&b, "default", "process");
		jb_kstr(&b, "description", "process: forked tasks; thread: threads of one process (--mode)");
		jb_key(&b, "choices");
		jb_raw(&b, "[\"process\",\"thread\"]");
		jb_raw(&b, "}]}");
	}
	jb_raw(&b, "]\n");
	fputs(b.s, stdout);
	jb_free(&b);
	return fflush(stdout) == 0 ? 0 : KB_EXIT_SETUP;
}

static const struct kb_scale_test *find_test(const char *name)
{
	for (size_t i = 0; i < kb_nscale_tests; i++)
		if (strcmp(kb_scale_tests[i].name, name) == 0)
			return &kb_scale_tests[i];
	struct jbuf names;
	jb_init(&names);
	for (size_t i = 0; i < kb_nscale_tests; i++)
		jb_printf(&names, "%s%s", i ? ", " : "", kb_scale_tests[i].name);
	kb_die(KB_EXIT_USAGE, "unknown scale testcase '%s' (valid: %s)", name, names.s);
}

static void scale_usage(FILE *f)
{
	fputs("usage: kbench-probe scale TESTCASE [options] | kbench-probe --list-scale\n"
	      "  --tasks N               tasks looping the testcase (default 1)\n"
	      "  --mode process|thread   forked processes or threads (default process)\n"
	      "  --duration SEC          measured time after the warm-up (default 5)\n"
	      "  --warmup-seconds W      warm-up time, written but flagged (default 1)\n"
	      "  --interval SEC          sampling interval (default 1)\n"
	      "  --pinning core|cpu|none round-robin over cores (default), CPUs, or not at all\n"
	      "  --cpu-list LIST         round-robin over these CPUs (e.g. 0-3,6)\n"
	      "  --dir DIR               where per-task files go (default $TMPDIR or /tmp)\n"
	      "  --output FILE           write to FILE instead of stdout\n"
	      "  --counters              perf events of the tasks (and the harness) over the measured intervals\n"
	      "  --ignore-failure        failed operations are warnings (default: the run failed, exit 4)\n"
	      "See docs/probe-format.md (section scale).\n",
	      f);
}

static void parse_scale(int argc, char **argv, struct sc_opts *o)
{
	memset(o, 0, sizeof *o);
	o->tasks = 1;
	o->duration = 5;
	o->warmup = 1;
	o->interval = 1;
	o->pin = PIN_CORE;
	const char *testname = NULL, *mode = NULL, *pinning = NULL;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-') {
			if (testname)
				kb_die(KB_EXIT_USAGE, "unexpected argument '%s' (testcase is %s)", a, testname);
			testname = a;
			continue;
		}
		char name[64];
		const char *val = kb_split_option(a, name, sizeof name);
#define IS(s) (strcmp(name, s) == 0)
#define VALUE()                                                                        \
	(val ? val : (i + 1 < argc ? argv[++i]                                         \
				  : (kb_die(KB_EXIT_USAGE, "%s needs a value", name), "")))
		if (IS("--list-scale")) {
			exit(kb_scale_list());
		} else if (IS("-h") || IS("--help")) {
			scale_usage(stdout);
			exit(0);
		} else if (IS("--tasks") || IS("-t")) {
			o->tasks = sc_int(name, VALUE(), 1, SC_MAX_TASKS);
		} else if (IS("--mode")) {
			mode = VALUE();
		} else if (IS("--duration")) {
			o->duration = sc_dbl(name, VALUE(), 1e-3, 1e6);
		} else if (IS("--warmup-seconds")) {
			o->warmup = sc_dbl(name, VALUE(), 0, 1e6);
		} else if (IS("--interval")) {
			o->interval = sc_dbl(name, VALUE(), 0.01, 3600);
		} else if (IS("--pinning")) {
			pinning = VALUE();
		} else if (IS("--cpu-list")) {
			o->cpu_list = VALUE();
		} else if (IS("--dir")) {
			o->dir = VALUE();
			if (!o->dir[0])
				kb_die(KB_EXIT_USAGE, "--dir needs a directory");
		} else if (IS("--output")) {
			o->output = VALUE();
			if (!o->output[0])
				kb_die(KB_EXIT_USAGE, "--output needs a file name");
		} else if (IS("--counters")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--counters takes no value");
			o->counters = 1;
		} else if (IS("--ignore-failure")) {
			if (val)
				kb_die(KB_EXIT_USAGE, "--ignore-failure takes no value");
			o->ignore_failure = 1;
		} else {
			kb_die(KB_EXIT_USAGE, "unknown option '%s' for scale (see kbench-probe scale --help)", a);
		}
#undef IS
#undef VALUE
	}
	if (!testname)
		kb_die(KB_EXIT_USAGE, "scale needs a TESTCASE (see kbench-probe --list-scale)");
	o->test = find_test(testname);
	if (mode) {
		if (strcmp(mode, "process") == 0)
			o->thread_mode = 0;
		else if (strcmp(mode, "thread") == 0)
			o->thread_mode = 1;
		else
			kb_die(KB_EXIT_USAGE, "--mode %s: expected process or thread", mode);
	}
	if (pinning) {
		if (strcmp(pinning, "core") == 0)
			o->pin = PIN_CORE;
		else if (strcmp(pinning, "cpu") == 0)
			o->pin = PIN_CPU;
		else if (strcmp(pinning, "none") == 0)
			o->pin = PIN_NONE;
		else
			kb_die(KB_EXIT_USAGE, "--pinning %s: expected core, cpu or none", pinning);
	}
	if (o->cpu_list) {
		if (pinning && o->pin == PIN_NONE)
			kb_die(KB_EXIT_USAGE, "--cpu-list and --pinning none contradict each other");
		o->pin = PIN_LIST;
	}
	if (o->duration < o->interval * 0.5)
		kb_die(KB_EXIT_USAGE, "--duration %g is shorter than one --interval (%g s)", o->duration,
		       o->interval);
	if (!o->dir) {
		o->dir = getenv("TMPDIR");
		if (!o->dir || !o->dir[0])
			o->dir = "/tmp";
	}
}

/* ------------------------------------------------------------------ */
/* pinning: one cpu_set_t per task                                     */

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* CPUs this run may use: online and in the probe's affinity mask, ascending. */
static int usable_cpus(int *cpus, int max)
{
	char buf[4096];
	int online[CPU_SETSIZE];
	int n = -1;
	if (read_small("/sys/devices/system/cpu/online", buf, sizeof buf) == 0)
		n = parse_cpu_list(buf, online, CPU_SETSIZE);
	cpu_set_t aff;
	int have_aff = sched_getaffinity(0, sizeof aff, &aff) == 0;
	if (n < 0) { /* no sysfs: the affinity mask alone */
		n = 0;
		for (int c = 0; c < CPU_SETSIZE && have_aff; c++)
			if (CPU_ISSET(c, &aff))
				online[n++] = c;
	}
	qsort(online, (size_t)n, sizeof *online, cmp_int);
	int k = 0;
	for (int i = 0; i < n && k < max; i++)
		if (!have_aff || CPU_ISSET(online[i], &aff))
			cpus[k++] = online[i];
	return k;
}

/* Fill task_sets/task_pinned; returns a description of the policy. */
static void plan_pinning(const struct sc_opts *o, int *ncpus_out, int *nunits_out)
{
	static int cpus[CPU_SETSIZE];
	int ncpus = usable_cpus(cpus, CPU_SETSIZE);
	*ncpus_out = ncpus;
	*nunits_out = 0;
	task_sets = calloc((size_t)o->tasks, sizeof *task_sets);
	task_pinned = calloc((size_t)o->tasks, sizeof *task_pinned);
	if (!task_sets || !task_pinned)
		kb_die(KB_EXIT_SETUP, "out of memory");
	if (o->pin == PIN_NONE || ncpus == 0) {
		if (o->pin != PIN_NONE)
			kb_warn("no usable CPU found in /sys/devices/system/cpu/online: tasks are not pinned");
		return;
	}
	static cpu_set_t units[CPU_SETSIZE];
	int nunits = 0;
	if (o->pin == PIN_LIST) {
		static int list[CPU_SETSIZE];
		int n = parse_cpu_list(o->cpu_list, list, CPU_SETSIZE);
		if (n <= 0)
			kb_die(KB_EXIT_USAGE, "--cpu-list %s: expected CPU numbers like 0-3,6", o->cpu_list);
		for (int i = 0; i < n; i++) {
			int ok = 0;
			for (int k = 0; k < ncpus; k++)
				ok |= cpus[k] == list[i];
			if (!ok)
				kb_die(KB_EXIT_USAGE, "--cpu-list: CPU %d is not online or not allowed for "
				       "this process", list[i]);
			CPU_ZERO(&units[nunits]);
			CPU_SET(list[i], &units[nunits]);
			nunits++;
		}
	} else if (o->pin == PIN_CPU) {
		for (int i = 0; i < ncpus; i++) {
			CPU_ZERO(&units[nunits]);
			CPU_SET(cpus[i], &units[nunits]);
			nunits++;
		}
	} else { /* cores: the SMT siblings of each core together, cores in the order of their first CPU */
		for (int i = 0; i < ncpus; i++) {
			char path[128], buf[1024];
			static int sib[CPU_SETSIZE];
			snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
				 cpus[i]);
			int ns = read_small(path, buf, sizeof buf) == 0 ? parse_cpu_list(buf, sib, CPU_SETSIZE) : -1;
			cpu_set_t s;
			CPU_ZERO(&s);
			int first = cpus[i];
			if (ns > 0) {
				for (int k = 0; k < ns; k++)
					for (int m = 0; m < ncpus; m++)
						if (cpus[m] == sib[k]) {
							CPU_SET(sib[k], &s);
							if (sib[k] < first)
								first = sib[k];
						}
			}
			CPU_SET(cpus[i], &s);
			if (first != cpus[i])
				continue; /* this core was added with its first CPU */
			units[nunits++] = s;
		}
	}
	*nunits_out = nunits;
	for (long t = 0; t < o->tasks; t++) {
		task_sets[t] = units[t % nunits];
		task_pinned[t] = 1;
	}
}

/* ------------------------------------------------------------------ */
/* the tasks                                                           */

static void futex_wait_go(void)
{
	while (__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) == 0)
		syscall(SYS_futex, &sh->go, FUTEX_WAIT, 0, NULL, NULL, 0);
}

/* Pin, set up, report ready, wait for the start, loop until stop. */
static void task_body(int idx, struct kb_scale_task *t)
{
	struct sc_slot *s = &slots[idx];
	memset(t, 0, sizeof *t);
	t->idx = idx;
	t->nr_tasks = (int)O.tasks;
	t->thread_mode = O.thread_mode;
	t->ops = &s->ops;
	t->stop = &sh->stop;
	t->errors = &s->errors;
	t->last_errno = &s->last_errno;
	t->dir = O.dir;
	t->path = paths ? paths[idx] : "";
	t->harness_pid = harness_pid;
	t->fd = t->fd2 = -1;
	if (task_pinned[idx] && sched_setaffinity(0, sizeof task_sets[idx], &task_sets[idx]) < 0)
		s->pin_errno = errno ? errno : EINVAL;
	s->cpu = sched_getcpu();
	char err[sizeof s->err];
	err[0] = 0;
	if (O.test->setup && O.test->setup(t, err, sizeof err) < 0) {
		memcpy(s->err, err, sizeof s->err);
		__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
		__atomic_add_fetch(&sh->failed, 1, __ATOMIC_ACQ_REL);
	} else {
		__atomic_store_n(&s->state, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	}
	futex_wait_go();
	if (s->state == 1 && !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE))
		O.test->loop(t);
}

static void *thread_main(void *arg)
{
	/* SIGINT/SIGTERM go to the harness thread, whose interval sleep they cut short */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	struct kb_scale_task t;
	task_body((int)(intptr_t)arg, &t);
	kb_scale_task_release(&t);
	return NULL;
}

static void start_process(int idx)
{
	pid_t pid = fork();
	if (pid < 0)
		kb_die(KB_EXIT_SETUP, "fork of task %d: %s", idx, strerror(errno));
	if (pid == 0) {
		/* the task: the harness handles signals and kills us at the end */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != harness_pid)
			_exit(0);
		struct kb_scale_task t;
		task_body(idx, &t);
		_exit(0);
	}
	pids[npids] = pid;
	npids = npids + 1;
}

/* ------------------------------------------------------------------ */
/* /proc/stat                                                          */

static int stat_fd = -1;

/* Aggregate "cpu" line: idle = idle + iowait; total = user + nice + system +
 * idle + iowait + irq + softirq + steal (guest time is already in user/nice). */
static int read_proc_stat(uint64_t *idle, uint64_t *total)
{
	static char buf[1024];
	if (stat_fd < 0)
		return -1;
	ssize_t r = pread(stat_fd, buf, sizeof buf - 1, 0);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	if (strncmp(buf, "cpu ", 4) != 0)
		return -1;
	unsigned long long v[8] = {0};
	int n = sscanf(buf + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6], &v[7]);
	if (n < 4)
		return -1;
	*idle = v[3] + v[4];
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	return 0;
}

/* ------------------------------------------------------------------ */
/* the run                                                             */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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


static const char *fs_of(const char *dir)
{
	struct statfs s;
	if (statfs(dir, &s) < 0)
		return "unknown";
	switch ((unsigned long)s.f_type) {
	case 0xEF53: return "ext2/3/4";
	case 0x01021994: return "tmpfs";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x794c7630: return "overlayfs";
	default: return "other";
	}
}

/* Stop the tasks: they leave their loop at the next op; processes that do not
 * exit within 2 s are killed.  Returns the number of abnormal task ends. */
static int stop_tasks(char *why, size_t whylen)
{
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &sh->go, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	int bad = 0;
	why[0] = 0;
	if (O.thread_mode) {
		for (int i = 0; i < nthreads; i++)
			pthread_join(threads[i], NULL);
		nthreads = 0;
		return 0;
	}
	uint64_t deadline = now_ns() + 2000000000ull;
	for (int i = 0; i < npids; i++) {
		if (pids[i] <= 0)
			continue;
		int st = 0;
		pid_t r;
		while ((r = waitpid(pids[i], &st, WNOHANG)) == 0 && now_ns() < deadline) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
		if (r == 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &st, 0);
			snprintf(why, whylen, "task %d did not stop within 2 s and was killed", i);
			bad++;
		} else if (r > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			if (WIFSIGNALED(st))
				snprintf(why, whylen, "task %d died of signal %d", i, WTERMSIG(st));
			else
				snprintf(why, whylen, "task %d exited with status %d", i, WEXITSTATUS(st));
			bad++;
		}
		pids[i] = 0;
	}
	return bad;
}

int kb_scale_main(int argc, char **argv)
{
	harness_pid = getpid();
	parse_scale(argc, argv, &O);
	const struct kb_scale_test *test = O.test;
	const long N = O.tasks;
	const int ncols = SC_FIXED_COLS + (int)N;
	const uint64_t interval_ns = (uint64_t)llround(O.interval * 1e9);
	const long warm_n = lround(O.warmup / O.interval);
	long meas_n = lround(O.duration / O.interval);
	if (meas_n < 1)
		meas_n = 1;
	const long total_n = warm_n + meas_n;
	atexit(sc_cleanup);

	char start_time[64], end_time[64];
	iso_now(start_time, sizeof start_time);

	int outfd = kb_open_output(O.output, out_path, sizeof out_path, &out_made);
	kb_install_signals(on_signal, 0); /* no SA_RESTART: the interval sleep returns EINTR */

	int ncpus, nunits;
	plan_pinning(&O, &ncpus, &nunits);

	/* shared counters */
	sh_len = sizeof(struct sc_ctl) + (size_t)N * sizeof(struct sc_slot);
	void *m = mmap(NULL, sh_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		kb_die(KB_EXIT_SETUP, "mmap of the shared counters (%zu bytes): %s", sh_len, strerror(errno));
	memset(m, 0, sh_len);
	sh = m;
	slots = (struct sc_slot *)((char *)m + sizeof(struct sc_ctl));

	uint64_t *rows = calloc((size_t)total_n * (size_t)ncols, sizeof *rows);
	uint64_t *prev = calloc((size_t)N, sizeof *prev);
	pids = calloc((size_t)N, sizeof *pids);
	threads = calloc((size_t)N, sizeof *threads);
	if (!rows || !prev || !pids || !threads)
		kb_die(KB_EXIT_SETUP, "out of memory for %ld intervals x %d columns", total_n, ncols);

	/* per-task files the harness makes (open1) */
	if (test->flags & KB_SCALE_F_PATH) {
		paths = calloc((size_t)N, sizeof *paths);
		if (!paths)
			kb_die(KB_EXIT_SETUP, "out of memory");
		for (long i = 0; i < N; i++) {
			int n = snprintf(paths[i], sizeof paths[i], "%s/kbench-probe.%ld.scale.%s.%ld", O.dir,
					 harness_pid, test->name, i);
			if (n < 0 || (size_t)n >= sizeof paths[i])
				kb_die(KB_EXIT_USAGE, "--dir %s is too long", O.dir);
			int fd = open(paths[i], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (fd < 0)
				kb_die(KB_EXIT_SETUP, "%s: cannot create %s: %s", test->name, paths[i],
				       strerror(errno));
			npaths = (int)i + 1;
			close(fd);
		}
	}

	stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	uint64_t st_idle = 0, st_total = 0;
	int have_stat = read_proc_stat(&st_idle, &st_total) == 0;
	if (!have_stat)
		kb_warn("/proc/stat is not readable: idle_userhz and total_userhz are 0");

	/* counters: opened (disabled) first, so that every task inherits them */
	if (O.counters)
		kb_counters_open();

	/* start the tasks; they pin themselves, set up, and wait at the barrier */
	for (long i = 0; i < N && !kb_stop; i++) {
		if (O.thread_mode) {
			pthread_attr_t attr;
			pthread_attr_init(&attr);
			int r = pthread_create(&threads[i], &attr, thread_main, (void *)(intptr_t)i);
			pthread_attr_destroy(&attr);
			if (r) {
				char why[256];
				stop_tasks(why, sizeof why);
				kb_die(KB_EXIT_SETUP, "pthread_create of task %ld: %s", i, strerror(r));
			}
			nthreads = (int)i + 1;
		} else {
			start_process((int)i);
		}
	}
	long started = O.thread_mode ? nthreads : npids;
	uint64_t setup_deadline = now_ns() + 60000000000ull;
	while (!kb_stop) {
		uint32_t done = __atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) +
				__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE);
		if (done >= (uint32_t)started)
			break;
		if (!O.thread_mode)
			for (int i = 0; i < npids; i++) {
				int st;
				if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
					pids[i] = 0;
					kb_die(KB_EXIT_SETUP, "%s: task %d ended during set-up (%s %d)", test->name,
					       i, WIFSIGNALED(st) ? "signal" : "status",
					       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
				}
			}
		if (now_ns() > setup_deadline) {
			char why[256];
			stop_tasks(why, sizeof why);
			kb_die(KB_EXIT_SETUP, "%s: tasks not ready after 60 s", test->name);
		}
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE)) {
		char why[256], msg[sizeof slots[0].err + 32] = "";
		for (long i = 0; i < N; i++)
			if (slots[i].state == 2) {
				snprintf(msg, sizeof msg, "task %ld: %s", i, slots[i].err);
				break;
			}
		stop_tasks(why, sizeof why);
		kb_die(KB_EXIT_SETUP, "%s: set-up failed in %u task(s); %s", test->name, sh->failed, msg);
	}

	/*
	 * The sampler wakes once an interval and must read the counters on time
	 * even when N busy tasks occupy every CPU: run this thread (only) as
	 * SCHED_FIFO when allowed, else at the highest nice level it may take.
	 */
	const char *sampler_priority = "normal";
	struct sched_param fifo = { .sched_priority = 1 };
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0)
		sampler_priority = "SCHED_FIFO 1";
	else if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10) == 0)
		sampler_priority = "nice -10";

	/* go */
	long n = 0;
	uint64_t max_late = 0;
	long late = 0;
	uint64_t late_limit = interval_ns / 20 > 2000000 ? interval_ns / 20 : 2000000;
	if (have_stat)
		read_proc_stat(&st_idle, &st_total);
	const uint64_t t0 = now_ns();
	uint64_t t_last = t0;
	if (!kb_stop) {
		if (O.counters && warm_n == 0)
			kb_counters_begin(1);
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &sh->go, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	while (n < total_n && !kb_stop) {
		uint64_t deadline = t0 + (uint64_t)(n + 1) * interval_ns;
		struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
		int r;
		while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR && !kb_stop)
			;
		if (kb_stop)
			break; /* the interval in progress is not complete: not written */
		uint64_t t = now_ns();
		uint64_t *row = rows + (size_t)n * (size_t)ncols;
		for (long i = 0; i < N; i++) {
			uint64_t v = __atomic_load_n(&slots[i].ops, __ATOMIC_RELAXED);
			row[SC_FIXED_COLS + i] = v - prev[i];
			prev[i] = v;
		}
		uint64_t idle = 0, total = 0;
		if (have_stat && read_proc_stat(&idle, &total) == 0) {
			row[1] = idle - st_idle;
			row[2] = total - st_total;
			st_idle = idle;
			st_total = total;
		}
		row[0] = t - t0;
		if (t < deadline)
			t = deadline; /* only if the sleep failed: not late */
		if (t - deadline > max_late)
			max_late = t - deadline;
		if (t - deadline > late_limit)
			late++;
		t_last = t;
		n++;
		if (O.counters && n == warm_n)
			kb_counters_begin(1); /* the measured intervals begin */
	}
	kb_counters_stop();
	int interrupted = kb_stop != 0;

	char why[256];
	int bad = stop_tasks(why, sizeof why);
	iso_now(end_time, sizeof end_time);
	unlink_paths();
	npaths = 0;

	/* warnings */
	if (bad)
		kb_warn("%d task(s) ended abnormally (last: %s)", bad, why);
	uint64_t errors = 0;
	int last_errno = 0;
	for (long i = 0; i < N; i++) {
		errors += slots[i].errors;
		if (slots[i].errors)
			last_errno = slots[i].last_errno;
	}
	if (errors)
		kb_warn("%llu operations failed (last: %s)", (unsigned long long)errors, strerror(last_errno));
	for (long i = 0; i < N; i++)
		if (slots[i].pin_errno) {
			char s[256];
			set_to_str(&task_sets[i], s, sizeof s);
			kb_warn("pinning task %ld to CPUs %s failed (%s): it is not pinned", i, s,
				strerror(slots[i].pin_errno));
		}
	if (late)
		kb_warn("%ld of %ld samples were taken more than %.1f ms after their deadline (max %.3f ms): "
			"the harness competed with the tasks for a CPU",
			late, n, (double)late_limit * 1e-6, (double)max_late * 1e-6);
	for (long i = 0; i < N; i++)
		for (long k = warm_n; k < n; k++)
			if (rows[(size_t)k * (size_t)ncols + SC_FIXED_COLS + (size_t)i] == 0) {
				kb_warn("task %ld made no progress in interval %ld", i, k);
				break;
			}
	if (O.pin != PIN_NONE && nunits > 0 && N > nunits)
		kb_warn("%ld tasks on %d %s: tasks share them", N, nunits,
			O.pin == PIN_CORE ? "cores" : "CPUs");
	else if (N > ncpus && ncpus > 0)
		kb_warn("%ld tasks on %d CPUs: tasks share them", N, ncpus);

	/* header */
	struct jbuf h;
	jb_init(&h);
	jb_raw(&h, "{");
	jb_kstr(&h, "format", KB_FORMAT);
	jb_kstr(&h, "probe_version", KB_VERSION);
	jb_kstr(&h, "kind", "scale");
	jb_kstr(&h, "testcase", test->name);
	jb_kstr(&h, "description", test->desc);
	jb_kstr(&h, "op", test->op);
	jb_kint(&h, "tasks", N);
	jb_kstr(&h, "mode", O.thread_mode ? "thread" : "process");
	jb_kdbl(&h, "interval_s", (double)interval_ns * 1e-9, 9);
	jb_kint(&h, "warmup_intervals", warm_n);
	jb_kint(&h, "measured_intervals_requested", meas_n);
	jb_kdbl(&h, "duration_requested_s", O.duration, 6);
	jb_kdbl(&h, "warmup_requested_s", O.warmup, 6);
	jb_kstr(&h, "clock", "CLOCK_MONOTONIC");
	jb_kint(&h, "user_hz", sysconf(_SC_CLK_TCK));
	jb_key(&h, "pinning");
	jb_raw(&h, "{");
	jb_kstr(&h, "policy", pin_names[O.pin]);
	if (O.cpu_list)
		jb_kstr(&h, "cpu_list", O.cpu_list);
	jb_kint(&h, "usable_cpus", ncpus);
	jb_kint(&h, "units", nunits);
	jb_key(&h, "task_cpus");
	jb_raw(&h, "[");
	for (long i = 0; i < N; i++) {
		char s[256] = "";
		if (task_pinned[i] && !slots[i].pin_errno)
			set_to_str(&task_sets[i], s, sizeof s);
		jb_comma(&h);
		if (s[0])
			jb_str(&h, s);
		else
			jb_raw(&h, "null");
	}
	jb_raw(&h, "]");
	jb_key(&h, "cpu_at_start");
	jb_raw(&h, "[");
	for (long i = 0; i < N; i++) {
		jb_comma(&h);
		jb_printf(&h, "%d", slots[i].cpu);
	}
	jb_raw(&h, "]}");
	jb_kstr(&h, "start_time", start_time);
	jb_kstr(&h, "end_time", end_time);
	jb_kdbl(&h, "elapsed_s", (double)(t_last - t0) * 1e-9, 9);
	jb_key(&h, "ops_at_stop");
	jb_raw(&h, "[");
	for (long i = 0; i < N; i++) {
		jb_comma(&h);
		jb_printf(&h, "%llu", (unsigned long long)slots[i].ops);
	}
	jb_raw(&h, "]");
	jb_ku64(&h, "errors", errors);
	int failed = (errors || bad) && !interrupted && !O.ignore_failure;
	jb_key(&h, "failure");
	jb_raw(&h, "{");
	jb_ku64(&h, "count", errors + (uint64_t)bad);
	jb_kbool(&h, "stopped", failed);
	jb_kbool(&h, "ignored", O.ignore_failure);
	if (bad)
		jb_kstr(&h, "last", why);
	else if (errors)
		jb_kstr(&h, "last", strerror(last_errno));
	if (errors && last_errno)
		jb_kint(&h, "last_errno", last_errno);
	jb_raw(&h, "}");
	jb_key(&h, "sampling");
	jb_raw(&h, "{");
	jb_kdbl(&h, "max_late_ms", (double)max_late * 1e-6, 3);
	jb_kint(&h, "late_samples", late);
	jb_kstr(&h, "sampler_priority", sampler_priority);
	jb_kdbl(&h, "late_limit_ms", (double)late_limit * 1e-6, 3);
	jb_raw(&h, "}");
	jb_key(&h, "setup");
	jb_raw(&h, "{");
	jb_kstr(&h, "dir", O.dir);
	jb_kstr(&h, "filesystem", fs_of(O.dir));
	{
		char thp[256] = "unknown";
		if (read_small("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp) == 0)
			thp[strcspn(thp, "\n")] = 0;
		jb_kstr(&h, "transparent_hugepage", thp);
	}
	jb_raw(&h, "}");
	jb_key(&h, "columns");
	jb_raw(&h, "[\"elapsed_ns\",\"idle_userhz\",\"total_userhz\"");
	for (long i = 0; i < N; i++)
		jb_printf(&h, ",\"ops_task%ld\"", i);
	jb_raw(&h, "]");
	jb_kint(&h, "n", n);
	jb_kbool(&h, "interrupted", interrupted);
	if (O.counters) {
		uint64_t measured_ops = 0;
		for (long k = warm_n; k < n; k++)
			for (long i = 0; i < N; i++)
				measured_ops += rows[(size_t)k * (size_t)ncols + SC_FIXED_COLS + (size_t)i];
		kb_counters_operations(measured_ops);
		kb_counters_json(&h);
	}
	jb_key(&h, "warnings");
	jb_raw(&h, "[");
	const char *w = kb_warnings_json();
	if (w && *w)
		jb_raw(&h, w);
	jb_raw(&h, "]}\n");

	int badw = kb_write_all(outfd, h.s, h.len) < 0;
	if (!badw && n > 0) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		for (long i = 0; i < n * ncols; i++)
			rows[i] = __builtin_bswap64(rows[i]);
#endif
		badw = kb_write_all(outfd, rows, (size_t)n * (size_t)ncols * sizeof *rows) < 0;
	}
	if (outfd != 1 && close(outfd) < 0)
		badw = 1;
	if (badw) {
		fprintf(stderr, "kbench-probe: error: writing the output: %s\n", strerror(errno));
		return KB_EXIT_SETUP;
	}
	out_done = 1;
	jb_free(&h);
	if (interrupted)
		return KB_EXIT_INTERRUPTED;
	return failed ? KB_EXIT_FAILED : KB_EXIT_OK;
}
