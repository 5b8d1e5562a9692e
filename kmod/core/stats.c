// SPDX-License-Identifier: GPL-2.0
/*
 * Order statistics over raw samples: nearest-rank percentiles found by
 * selection (linear time, no sort), the median absolute deviation, and
 * a small text histogram.  Values are cycles per sample; the formatters
 * divide by the batch to print cycles per call.
 */
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "kbench_core.h"

#define KBENCH_HIST_BUCKETS	16
#define KBENCH_RESCHED_EVERY	BIT(20)

/*
 * kbench_rank - 0-based index of the @percent-th percentile in n sorted
 * values, by the nearest-rank definition: the smallest value with at least
 * percent% of the values at or below it, i.e. index ceil(n * p / 100) - 1.
 */
size_t kbench_rank(size_t n, unsigned int percent)
{
	u64 r = DIV_ROUND_UP_ULL((u64)n * percent, 100);

	return r ? r - 1 : 0;
}

static u64 median3(u64 a, u64 b, u64 c)
{
	if (a > b)
		swap(a, b);
	if (b > c)
		swap(b, c);
	return max(a, b);
}

/*
 * kbench_select - the k-th smallest of v[0..n) (0-based), reordering v so
 * that v[0..k) <= v[k] <= v[k+1..n).  Quickselect with a three-way
 * partition, so long runs of equal values (common in cycle counts) cost
 * one pass.  Expected linear time; sleeps between passes.
 */
u64 kbench_select(u64 *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		u64 pivot = median3(v[lo], v[lo + (hi - lo) / 2], v[hi - 1]);
		size_t lt = lo, i = lo, gt = hi;

		while (i < gt) {
			if (v[i] < pivot) {
				swap(v[lt], v[i]);
				lt++;
				i++;
			} else if (v[i] > pivot) {
				gt--;
				swap(v[i], v[gt]);
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
		cond_resched();
	}
	return v[k];
}

/*
 * kbench_summarize - min, max, 50th/90th/95th/99th nearest-rank
 * percentiles and MAD (median of |v - median|) of v[0..n).  @scratch must
 * hold n values; @v is not modified.  All zero when n is 0.
 */
void kbench_summarize(const u64 *v, size_t n, u64 *scratch,
		      struct kbench_stats *st)
{
	size_t i, k50, k90, k95, k99;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	st->count = n;
	st->min = U64_MAX;
	for (i = 0; i < n; i++) {
		scratch[i] = v[i];
		st->min = min(st->min, v[i]);
		st->max = max(st->max, v[i]);
		if (!(i % KBENCH_RESCHED_EVERY))
			cond_resched();
	}
	k50 = kbench_rank(n, 50);
	k90 = kbench_rank(n, 90);
	k95 = kbench_rank(n, 95);
	k99 = kbench_rank(n, 99);
	/* Each selection leaves larger values to the right of its rank. */
	st->p50 = kbench_select(scratch, n, k50);
	st->p90 = kbench_select(scratch + k50, n - k50, k90 - k50);
	st->p95 = kbench_select(scratch + k90, n - k90, k95 - k90);
	st->p99 = kbench_select(scratch + k95, n - k95, k99 - k95);

	for (i = 0; i < n; i++) {
		scratch[i] = v[i] > st->p50 ? v[i] - st->p50 : st->p50 - v[i];
		if (!(i % KBENCH_RESCHED_EVERY))
			cond_resched();
	}
	st->mad = kbench_select(scratch, n, k50);
}

/* "min=.. max=.. count=.. 95th=.. 90th=.. 50th=.. mad=.. overhead=.." */
int kbench_format_stats(char *buf, size_t size, const struct kbench_stats *st,
			u32 batch, u64 overhead)
{
	return scnprintf(buf, size,
			 "min=%llu max=%llu count=%u 95th=%llu 90th=%llu 50th=%llu mad=%llu overhead=%llu",
			 div_u64(st->min, batch), div_u64(st->max, batch),
			 st->count, div_u64(st->p95, batch),
			 div_u64(st->p90, batch), div_u64(st->p50, batch),
			 div_u64(st->mad, batch), div_u64(overhead, batch));
}

/*
 * Sixteen equal-width buckets of per-call cycles from the minimum to the
 * 99th percentile, one "hist lo=A hi=B count=N" line each (bounds
 * inclusive), then one more line for the values above, up to the maximum.
 */
int kbench_format_histogram(char *buf, size_t size, const u64 *v, size_t n,
			    const struct kbench_stats *st, u32 batch)
{
	u32 counts[KBENCH_HIST_BUCKETS + 1] = { 0 };
	u64 lo, hi, width;
	size_t i;
	int j, len = 0;

	if (!n)
		return 0;
	lo = div_u64(st->min, batch);
	hi = div_u64(st->p99, batch);
	width = div_u64(hi - lo + KBENCH_HIST_BUCKETS, KBENCH_HIST_BUCKETS);
	for (i = 0; i < n; i++) {
		u64 b = div64_u64(div_u64(v[i], batch) - lo, width);

		counts[min_t(u64, b, KBENCH_HIST_BUCKETS)]++;
		if (!(i % KBENCH_RESCHED_EVERY))
			cond_resched();
	}
	for (j = 0; j < KBENCH_HIST_BUCKETS; j++)
		len += scnprintf(buf + len, size - len,
				 "hist lo=%llu hi=%llu count=%u\n",
				 lo + j * width, lo + (j + 1) * width - 1,
				 counts[j]);
	len += scnprintf(buf + len, size - len,
			 "hist lo=%llu hi=%llu count=%u\n",
			 lo + KBENCH_HIST_BUCKETS * width,
			 max(div_u64(st->max, batch),
			     lo + KBENCH_HIST_BUCKETS * width),
			 counts[KBENCH_HIST_BUCKETS]);
	return len;
}
