/* kbench-probe: the timed sample loops, one per timer, and the empty timed
 * region whose cost is the timer overhead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marks.h"
#include "probe.h"
#include "timer.h"

static int grow_rows(struct kb_loop *L)
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
							    const int marked, struct kb_loop *L)
{
	struct kb_ctx *c = L->c;
	const kb_run_fn run = L->run;
	const kb_between_fn between = L->between;
	const uint64_t batch = L->batch;
	const int ncols = L->ncols;
	const int gap_col = L->gap_col;
	uint64_t scratch[8] = {0};
	uint64_t next_progress = 0, quarter = (uint64_t)(kb_timer.hz / 4);
	const int spill = L->spill_on && L->rows;
	const uint64_t second = (uint64_t)kb_timer.hz;
	uint64_t next_spill = 0;
	long long n = 0;
	uint64_t t0 = 0, t1 = 0, previous_t1 = L->last_t1;
	uint32_t aux = 0;
	if (L->progress)
		next_progress = kind == KB_TIMER_CLOCK ? kb_clock_now() + quarter
						       : kb_tsc_start() + quarter;
	for (;;) {
		if (kb_stop)
			break;
		if (__builtin_expect(c->stop_on_failure && c->errors, 0)) {
			L->failed = 1; /* an earlier phase (calibration, warm-up) failed */
			break;
		}
		uint64_t *row = L->rows ? L->rows + n * ncols : scratch;
		if (between)
			between(c);
		t0 = kb_t_start(kind);
		if (marked)
			kb_mark_on();
		run(c, batch, row + 1);
		if (marked)
			kb_mark_off();
		t1 = kb_t_end(kind, &aux);
		if (kb_stop) /* a signal arrived inside this sample: its time is not clean */
			break;
		if (__builtin_expect(c->stop_on_failure && c->errors, 0)) {
			L->failed = 1; /* a failed operation is never a measurement */
			break;
		}
		row[0] = t1 - t0;
		if (gap_col >= 0)
			row[gap_col] = n == 0 && L->n == 0 ? 0 : t0 - previous_t1;
		previous_t1 = t1;
		if (n == 0 && L->n == 0) {
			L->first_t0 = t0;
			next_spill = t0 + second;
		}
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
		/* Between samples, outside the timed region: at most one write a second. */
		if (__builtin_expect(spill && t1 >= next_spill, 0)) {
			kb_spill_rows(L, n);
			next_spill = t1 + second;
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
	if (spill)
		kb_spill_rows(L, n); /* the rest, also after a signal: they are finished samples */
	L->n += n;
}

static __attribute__((noinline)) void loop_tscp(struct kb_loop *L) { loop_impl(KB_TIMER_TSCP, 0, L); }
static __attribute__((noinline)) void loop_tsc(struct kb_loop *L) { loop_impl(KB_TIMER_TSC, 0, L); }
static __attribute__((noinline)) void loop_clock(struct kb_loop *L) { loop_impl(KB_TIMER_CLOCK, 0, L); }
/* The measured loop of --mark: the same, each sample's operations marked (marks.h). */
static __attribute__((noinline)) void marked_tscp(struct kb_loop *L) { loop_impl(KB_TIMER_TSCP, 1, L); }
static __attribute__((noinline)) void marked_tsc(struct kb_loop *L) { loop_impl(KB_TIMER_TSC, 1, L); }
static __attribute__((noinline)) void marked_clock(struct kb_loop *L) { loop_impl(KB_TIMER_CLOCK, 1, L); }

void kb_run_loop(struct kb_loop *L)
{
	if (L->marked) {
		kb_emulator_mark(KB_MARK_ARM);
		switch (kb_timer.kind) {
		case KB_TIMER_TSCP: marked_tscp(L); break;
		case KB_TIMER_TSC: marked_tsc(L); break;
		case KB_TIMER_CLOCK: marked_clock(L); break;
		}
		kb_emulator_mark(KB_MARK_DISARM);
		return;
	}
	switch (kb_timer.kind) {
	case KB_TIMER_TSCP: loop_tscp(L); break;
	case KB_TIMER_TSC: loop_tsc(L); break;
	case KB_TIMER_CLOCK: loop_clock(L); break;
	}
}

int kb_marks_callgrind(void) { return KB_HAVE_CALLGRIND; }
int kb_marks_emulator(void) { return KB_EMULATOR_MARKS; }

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

int kb_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

