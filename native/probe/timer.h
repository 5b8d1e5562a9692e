/* kbench-probe: timers.
 *
 * Ordering scheme for the TSC (x86-64):
 *   start:  lfence; rdtsc; lfence
 *           The first lfence makes rdtsc wait until every earlier instruction
 *           has completed locally; the second keeps later instructions (the
 *           measured work) from starting before the counter was read.
 *   end:    rdtscp; lfence
 *           rdtscp waits until every earlier instruction has executed (and
 *           earlier loads are globally visible); the lfence keeps later
 *           instructions from starting before the read.  rdtscp also returns
 *           IA32_TSC_AUX, which Linux sets to the CPU number: the engine uses
 *           it to notice migrations for free.
 *   end without rdtscp (CPUID 0x80000001 EDX bit 27 clear): lfence; rdtsc; lfence.
 * On AMD, lfence is dispatch-serialising when the kernel sets
 * MSR_AMD64_DE_CFG[1], which Linux does on every CPU it supports.
 *
 * Fallback: clock_gettime(CLOCK_MONOTONIC_RAW), ticks are nanoseconds.
 */
#ifndef KBENCH_TIMER_H
#define KBENCH_TIMER_H

#include <stdint.h>
#include <time.h>

enum kb_timer_kind {
	KB_TIMER_TSCP,  /* TSC, end read with rdtscp */
	KB_TIMER_TSC,   /* TSC, end read with lfence;rdtsc;lfence */
	KB_TIMER_CLOCK, /* CLOCK_MONOTONIC_RAW */
};

struct kb_timer {
	enum kb_timer_kind kind;
	const char *name;        /* "tsc" | "clock_monotonic_raw" */
	double hz;
	int invariant;           /* TSC: invariant (constant + nonstop) */
	char invariant_how[160]; /* where invariance was learned */
	uint64_t resolution_ticks;
	double resolution_ns;
	char calibration[256];
	char end_read[64];       /* "rdtscp;lfence" ... */
};

extern struct kb_timer kb_timer;

#define KB_AI static inline __attribute__((always_inline))

KB_AI uint64_t kb_clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
KB_AI uint64_t kb_tsc_start(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

KB_AI uint64_t kb_tscp_end(uint32_t *aux)
{
	uint32_t lo, hi, c;
	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(c)::"memory");
	*aux = c;
	return ((uint64_t)hi << 32) | lo;
}
#define KB_HAVE_TSC 1
#else
KB_AI uint64_t kb_tsc_start(void) { return 0; }
KB_AI uint64_t kb_tscp_end(uint32_t *aux) { *aux = 0; return 0; }
#define KB_HAVE_TSC 0
#endif

/* The three reads, selected by a compile-time constant `kind` in the
 * engine's always-inline loops. */
KB_AI uint64_t kb_t_start(enum kb_timer_kind kind)
{
	return kind == KB_TIMER_CLOCK ? kb_clock_now() : kb_tsc_start();
}

KB_AI uint64_t kb_t_end(enum kb_timer_kind kind, uint32_t *aux)
{
	if (kind == KB_TIMER_TSCP)
		return kb_tscp_end(aux);
	*aux = 0;
	return kind == KB_TIMER_CLOCK ? kb_clock_now() : kb_tsc_start();
}

/* Choose and calibrate the timer.  `want` is "auto", "tsc" or "clock".
 * Adds warnings with kb_warn().  Returns 0, or -1 with a message in err. */
int kb_timer_init(const char *want, char *err, size_t errlen);

/* Seconds since an arbitrary point (CLOCK_MONOTONIC_RAW), for set-up code. */
double kb_now_s(void);

/* The diagnostic comparison for benchmarks/overhead.py: probe's empty region
 * vs back-to-back `lfence;rdtsc;lfence` reads, same process.  Prints JSON. */
int kb_selftest_overhead(long long pairs);

#endif
