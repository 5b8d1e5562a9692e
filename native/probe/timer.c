/* kbench-probe: timer choice, TSC calibration, resolution, overhead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "probe.h"
#include "timer.h"

struct kb_timer kb_timer;

double kb_now_s(void)
{
	return (double)kb_clock_now() * 1e-9;
}

/* Look for whole-word flags in /proc/cpuinfo's first "flags" line. */
static int cpuinfo_has_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int found = -1;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		found = 0;
		size_t fl = strlen(flag);
		for (char *p = strchr(line, ':'); p && *p; p++) {
			if ((p[-1] == ' ' || p[-1] == ':') && strncmp(p, flag, fl) == 0 &&
			    (p[fl] == ' ' || p[fl] == '\n' || p[fl] == 0)) {
				found = 1;
				break;
			}
		}
		break;
	}
	free(line);
	fclose(f);
	return found;
}

/* Invariant TSC: CPUID 0x80000007 EDX bit 8, or the kernel's constant_tsc and
 * nonstop_tsc flags (a hypervisor may hide the CPUID bit while the kernel
 * still knows, e.g. from tsc_known_freq/kvmclock). */
static int tsc_invariant(char *how, size_t howlen)
{
	int cpuid_bit = 0;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000007 &&
	    __get_cpuid(0x80000007, &a, &b, &c, &d))
		cpuid_bit = (d >> 8) & 1;
#endif
	int ct = cpuinfo_has_flag("constant_tsc");
	int ns = cpuinfo_has_flag("nonstop_tsc");
	snprintf(how, howlen,
		 "CPUID 0x80000007 EDX[8]=%d; /proc/cpuinfo constant_tsc=%s nonstop_tsc=%s",
		 cpuid_bit, ct < 0 ? "unknown" : ct ? "yes" : "no",
		 ns < 0 ? "unknown" : ns ? "yes" : "no");
	return cpuid_bit || (ct == 1 && ns == 1);
}

static int have_rdtscp(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000001 &&
	    __get_cpuid(0x80000001, &a, &b, &c, &d))
		return (d >> 27) & 1;
#endif
	return 0;
}

/* One (tsc, clock) pair: the TSC is read just before and just after the clock;
 * the narrowest of several tries is kept and its midpoint used. */
static void tsc_clock_pair(double *tsc_mid, uint64_t *clk, uint64_t *width)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		uint64_t a = kb_tsc_start();
		uint64_t c = kb_clock_now();
		uint64_t b = kb_tsc_start();
		if (b - a < best) {
			best = b - a;
			*tsc_mid = (double)a + (double)(b - a) / 2.0;
			*clk = c;
		}
	}
	*width = best;
}

#define KB_CALIBRATION_NS 60000000ull /* 60 ms busy window */

static void tsc_calibrate(void)
{
	double t0, t1;
	uint64_t c0, c1, w0, w1;
	tsc_clock_pair(&t0, &c0, &w0);
	while (kb_clock_now() - c0 < KB_CALIBRATION_NS) {
#if defined(__x86_64__)
		__asm__ __volatile__("pause");
#endif
	}
	tsc_clock_pair(&t1, &c1, &w1);
	double hz = (t1 - t0) / (double)(c1 - c0) * 1e9;
	/* the error of each end is at most half the bracket (in ticks) */
	double err_ticks = (double)(w0 + w1) / 2.0;
	double ppm = err_ticks / (t1 - t0) * 1e6;
	kb_timer.hz = hz;
	snprintf(kb_timer.calibration, sizeof kb_timer.calibration,
		 "TSC counted against CLOCK_MONOTONIC_RAW over a %.1f ms busy window; "
		 "each end bracketed by two TSC reads (%llu and %llu ticks wide), "
		 "uncertainty <= %.2f ppm",
		 (double)(c1 - c0) / 1e6, (unsigned long long)w0, (unsigned long long)w1, ppm);
}

/* Smallest non-zero difference between consecutive reads of the start read. */
#define KB_RES_READS 20000
static uint64_t measure_resolution(enum kb_timer_kind kind)
{
	uint64_t best = UINT64_MAX;
	uint64_t prev = kind == KB_TIMER_CLOCK ? kb_clock_now() : kb_tsc_start();
	for (int i = 0; i < KB_RES_READS; i++) {
		uint64_t now = kind == KB_TIMER_CLOCK ? kb_clock_now() : kb_tsc_start();
		uint64_t d = now - prev;
		if (d && d < best)
			best = d;
		prev = now;
	}
	return best == UINT64_MAX ? 1 : best;
}

int kb_timer_init(const char *want, char *err, size_t errlen)
{
	memset(&kb_timer, 0, sizeof kb_timer);
	int use_tsc = 0;
	if (!KB_HAVE_TSC) {
		snprintf(kb_timer.invariant_how, sizeof kb_timer.invariant_how,
			 "not x86-64: no TSC");
		if (strcmp(want, "tsc") == 0) {
			snprintf(err, errlen, "--timer tsc: this is not an x86-64 machine");
			return -1;
		}
	} else {
		kb_timer.invariant = tsc_invariant(kb_timer.invariant_how,
						   sizeof kb_timer.invariant_how);
		if (strcmp(want, "tsc") == 0) {
			use_tsc = 1;
			if (!kb_timer.invariant)
				kb_warn("TSC is not invariant (%s) but --timer tsc was requested: "
					"ticks may not be proportional to time",
					kb_timer.invariant_how);
		} else if (strcmp(want, "auto") == 0) {
			use_tsc = kb_timer.invariant;
			if (!use_tsc)
				kb_warn("TSC is not invariant (%s): using CLOCK_MONOTONIC_RAW",
					kb_timer.invariant_how);
		}
	}
	if (use_tsc) {
		kb_timer.name = "tsc";
		if (have_rdtscp()) {
			kb_timer.kind = KB_TIMER_TSCP;
			snprintf(kb_timer.end_read, sizeof kb_timer.end_read, "rdtscp;lfence");
		} else {
			kb_timer.kind = KB_TIMER_TSC;
			snprintf(kb_timer.end_read, sizeof kb_timer.end_read, "lfence;rdtsc;lfence");
		}
		tsc_calibrate();
	} else {
		kb_timer.kind = KB_TIMER_CLOCK;
		kb_timer.name = "clock_monotonic_raw";
		kb_timer.hz = 1e9;
		snprintf(kb_timer.end_read, sizeof kb_timer.end_read, "clock_gettime");
		snprintf(kb_timer.calibration, sizeof kb_timer.calibration,
			 "none: CLOCK_MONOTONIC_RAW counts nanoseconds");
	}
	kb_timer.resolution_ticks = measure_resolution(kb_timer.kind);
	kb_timer.resolution_ns = (double)kb_timer.resolution_ticks / kb_timer.hz * 1e9;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Back-to-back `lfence;rdtsc;lfence` pairs: the cheapest correct fenced pair. */
static void raw_pairs(uint64_t *d, long long n)
{
	for (long long i = 0; i < n; i++) {
		uint64_t a = kb_tsc_start();
		uint64_t b = kb_tsc_start();
		d[i] = b - a;
	}
}


int kb_selftest_overhead(long long pairs)
{
	char err[256];
	if (kb_timer_init("auto", err, sizeof err) < 0 || kb_timer.kind == KB_TIMER_CLOCK) {
		fputs("kbench-probe: error: --selftest-overhead needs an invariant TSC\n", stderr);
		return KB_EXIT_SETUP;
	}
	uint64_t *a = calloc((size_t)pairs, sizeof *a);
	uint64_t *b = calloc((size_t)pairs, sizeof *b);
	if (!a || !b) {
		fputs("kbench-probe: error: out of memory\n", stderr);
		return KB_EXIT_SETUP;
	}
	/* interleave in rounds so that frequency/noise drifts hit both alike */
	long long round = pairs / 10 ? pairs / 10 : pairs;
	for (long long off = 0; off < pairs; off += round) {
		long long n = pairs - off < round ? pairs - off : round;
		kb_overhead_pairs(a + off, n);
		raw_pairs(b + off, n);
	}
	qsort(a, (size_t)pairs, sizeof *a, cmp_u64);
	qsort(b, (size_t)pairs, sizeof *b, cmp_u64);
	uint64_t pm = a[pairs / 2], rm = b[pairs / 2];
	printf("{\"pairs\":%lld,\"timer\":\"tsc\",\"end_read\":\"%s\",\"hz\":%.3f,"
	       "\"probe_min_ticks\":%llu,\"probe_median_ticks\":%llu,"
	       "\"raw_min_ticks\":%llu,\"raw_median_ticks\":%llu,\"ratio_median\":%.4f}\n",
	       pairs, kb_timer.end_read, kb_timer.hz, (unsigned long long)a[0],
	       (unsigned long long)pm, (unsigned long long)b[0], (unsigned long long)rm,
	       rm ? (double)pm / (double)rm : 0.0);
	free(a);
	free(b);
	return 0;
}
