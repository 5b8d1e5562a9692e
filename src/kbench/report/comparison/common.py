"""Wording and numbers shared by the comparison renderers (one definition, every format)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kbench.profile.counters import is_counter_metric
from kbench.report.comparison.model import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    ComparisonReport,
    MetricComparison,
)


def format_number(value: float) -> str:
    """A table value with 4-5 significant digits and no exponent for everyday magnitudes; ``n/a``
    for a value that could not be computed."""
    if not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 10_000 or (value == int(value) and magnitude >= 100):
        return f"{value:.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude >= 0.001 or value == 0:
        return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"
    return f"{value:.3g}"


def format_change(pct: float) -> str:
    """``-3.1%`` / ``+0.4%``: always signed, one decimal; ``n/a`` when undefined."""
    if not math.isfinite(pct):
        return "n/a"
    return f"{pct:+.1f}%"


def format_ci(ci_pct: tuple[float, float]) -> str:
    """``-3.5…-2.7%``: the interval of the change, signed; ``n/a`` when it could not be computed."""
    low, high = ci_pct
    if not (math.isfinite(low) and math.isfinite(high)):
        return "n/a"
    return f"{low:+.1f}…{high:+.1f}%"


def format_p(p: float) -> str:
    """Two significant digits (``0.002``, ``0.046``), ``<0.0001`` below that, NaN as ``n/a``."""
    if not math.isfinite(p):
        return "n/a"
    if p < 1e-4:
        return "<0.0001"
    if p >= 0.1:
        return f"{p:.2f}"
    return f"{p:.2g}"


def p_text(p: float) -> str:
    """``p=0.002`` or ``p<0.0001``."""
    text = format_p(p)
    return f"p{text}" if text.startswith("<") else f"p={text}"


def verdict_slug(verdict: str) -> str:
    """``no change`` → ``no-change``: a token for HTML attributes and CSS classes."""
    return re.sub(r"[^a-z0-9]+", "-", verdict.lower()).strip("-") or "unknown"


def direction_text(direction: str) -> str:
    return "higher is better" if direction == "higher" else "lower is better"


HEADLINE_EVERY_METRIC = 3


def headline(report: ComparisonReport, m: MetricComparison) -> str:
    """The sentence a kernel developer pastes into a mail; it always says the metric's verdict, e.g.

    ``syscall.getppid.latency on kernel 6.12.x has a +3.1% (CI +2.7…+3.5%, p=0.002)
    regression compared to 6.1.0-56-amd64``, ``command.cpu on program ./b: no change
    compared to ./a (+0.02%, CI -0.21…+0.25%, within ±0.5%)`` or ``…: inconclusive
    compared to ./a (too-noisy: …)``.
    """
    subject = f"{report.label_kind} {report.new_label_of(m)}".strip()
    if m.significant:
        smaller = f", smaller than the ±{m.margin_pct:g}% margin" if m.real_within_margin else ""
        return (
            f"{m.metric} on {subject} has a {format_change(m.change_pct)} "
            f"(CI {format_ci(m.ci_pct)}, {p_text(m.p_value)}{smaller}) {m.verdict} compared to {report.base_label}"
        )
    figures = f"{format_change(m.change_pct)}, CI {format_ci(m.ci_pct)}"
    if m.verdict == NO_CHANGE:
        within = f"within ±{m.margin_pct:g}%" if m.margin_pct is not None else p_text(m.p_value)
        return f"{m.metric} on {subject}: no change: {within}, compared to {report.base_label} ({figures})"
    why = m.reason.split(";")[0] if m.reason else "no reason given"
    return f"{m.metric} on {subject}: {m.verdict} compared to {report.base_label} ({figures}; {why})"


def headlines(report: ComparisonReport) -> list[str]:
    """Every line states its metric's verdict. Up to ``HEADLINE_EVERY_METRIC`` metrics: one line
    per metric, in report order (the primary metric first). Beyond: one per regression, then per
    improvement (each group by decreasing |change|), then per other verdict except "no change",
    which gets one summary line."""
    if len(report.metrics) <= HEADLINE_EVERY_METRIC:
        return [headline(report, m) for m in report.metrics]
    lines: list[str] = []
    for verdict in (REGRESSION, IMPROVEMENT):
        chosen = [m for m in report.metrics if m.verdict == verdict]
        chosen.sort(key=lambda m: -abs(m.change_pct) if math.isfinite(m.change_pct) else 0.0)
        lines.extend(headline(report, m) for m in chosen)
    lines.extend(headline(report, m) for m in report.metrics if m.verdict not in (REGRESSION, IMPROVEMENT, NO_CHANGE))
    unchanged = sum(m.verdict == NO_CHANGE for m in report.metrics)
    if unchanged:
        lines.append(f"no change in {unchanged} other metric{'s' if unchanged != 1 else ''} compared to "
                     f"{report.base_label}")
    return lines


MIN_OVERALL_METRICS = 2
"""An overall figure aggregates two benchmarks or more; with one (a metric, or several metrics
of one benchmark: a program's CPU and wall time), each metric's own change is the only figure
printed (an average of two sizes of the same change would be a third size)."""


def benchmark_of(metric: str) -> str:
    """``syscall.getppid.latency`` → ``syscall.getppid``; ``command.cpu`` → ``command``."""
    return metric.rsplit(".", 1)[0] if metric.count(".") >= 1 else metric


@dataclass(frozen=True)
class Overall:
    """The release-comparison summary of one new label against the base.

    geomean_ratio: geometric mean over the metrics of the direction-aware ratio
      (``MetricComparison.goodness_ratio``: > 1 is better), or None when the metrics that
      have one belong to fewer than ``MIN_OVERALL_METRICS`` benchmarks.
    metrics_used: how many metrics had a ratio; skipped: how many had none (a
      non-positive or missing value).
    """

    label: str
    geomean_ratio: float | None
    metrics_used: int
    skipped: int
    regressions: int
    improvements: int
    unchanged: int
    other: int

    @property
    def shown(self) -> bool:
        """Whether there is an overall figure to print (metrics of two benchmarks or more)."""
        return self.geomean_ratio is not None

    @property
    def worse_pct(self) -> float | None:
        """100 (1 / geomean_ratio - 1): the geometric mean of the metrics' changes, each taken
        towards worse (new/base when lower is better, base/new when higher is), in the same
        terms as a lower-is-better metric's %change: equal changes of +5% give +5% (worse),
        -5% give -5% (better)."""
        return None if self.geomean_ratio is None else 100.0 * (1.0 / self.geomean_ratio - 1.0)

    @property
    def better_pct(self) -> float | None:
        """-worse_pct: positive = better overall."""
        worse = self.worse_pct
        return None if worse is None else -worse

    @property
    def wording(self) -> str:
        """``2.3% better overall`` / ``1.0% worse overall`` / ``no overall change``."""
        pct = self.worse_pct
        if pct is None:
            if self.metrics_used >= 1:
                return "no overall figure (one benchmark: each metric's change is its own figure)"
            return "no overall figure (no metric has two positive values)"
        if round(pct, 1) == 0:
            return "no overall change (within 0.05%)"
        return f"{abs(pct):.1f}% {'worse' if pct > 0 else 'better'} overall"


def overall(report: ComparisonReport, label: str) -> Overall:
    """The summary of one new label. Perf counters are the why of a benchmark's change, not a benchmark
    of their own: they take no part in the overall figure (a program's CPU time, wall time and counters
    averaged gave "8.8 % worse overall" for a +13.8 % CPU-time regression)."""
    metrics = report.for_label(label)
    measured = [m for m in metrics if not is_counter_metric(m.metric)]
    ratios = [r for r in (m.goodness_ratio for m in measured) if r is not None]
    benchmarks = {benchmark_of(m.metric) for m in measured if m.goodness_ratio is not None}
    geomean = (math.exp(sum(math.log(r) for r in ratios) / len(ratios))
               if len(benchmarks) >= MIN_OVERALL_METRICS else None)
    regressions = sum(m.verdict == REGRESSION for m in metrics)
    improvements = sum(m.verdict == IMPROVEMENT for m in metrics)
    unchanged = sum(m.verdict == NO_CHANGE for m in metrics)
    return Overall(
        label=label,
        geomean_ratio=geomean,
        metrics_used=len(ratios),
        skipped=len(measured) - len(ratios),
        regressions=regressions,
        improvements=improvements,
        unchanged=unchanged,
        other=len(metrics) - regressions - improvements - unchanged,
    )


def overall_sentences(report: ComparisonReport) -> list[str]:
    """The overall sentence of each new label that has an overall figure (two benchmarks or more)."""
    return [overall_sentence(report, s) for s in (overall(report, label) for label in report.new_labels) if s.shown]


def overall_sentence(report: ComparisonReport, summary: Overall) -> str:
    """``kernel 6.12.x is 2.3% better overall than 6.1.0-56 (geometric mean of 5 metrics; ...)``."""
    counts = [
        f"{summary.regressions} regression{'s' if summary.regressions != 1 else ''}",
        f"{summary.improvements} improvement{'s' if summary.improvements != 1 else ''}",
        f"{summary.unchanged} no change",
    ]
    if summary.other:
        counts.append(f"{summary.other} other")
    basis = f"geometric mean of the changes, each towards worse, over {summary.metrics_used} metric"
    basis += "s" if summary.metrics_used != 1 else ""
    if summary.skipped:
        basis += f", {summary.skipped} without a ratio skipped"
    subject = f"{report.label_kind} {summary.label}".strip()
    verb = "is" if summary.wording.endswith("overall") else "has"
    return f"{subject} {verb} {summary.wording} vs {report.base_label} ({basis}; {', '.join(counts)})"


def method_note(report: ComparisonReport) -> str:
    """How to read the numbers: confidence level and p-value correction."""
    note = (f"CI: confidence interval of the change, at 1 - the alpha in its verdict's reason ({report.confidence:.0%} "
            "for a fixed design; a sequential look's level is higher; a 'no change' states its own)")
    if report.correction:
        note += f"; p-values corrected for {len(report.metrics)} comparisons ({report.correction})"
    return note


def flat_items(mapping: object, prefix: str = "") -> list[tuple[str, str]]:
    """``{"cpu": {"model": "X"}}`` → ``[("cpu.model", "X")]``; lists are joined with ``, ``."""
    items: list[tuple[str, str]] = []
    if isinstance(mapping, Mapping):
        for key, value in mapping.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, Mapping) and value:
                items.extend(flat_items(value, name))
            else:
                items.append((name, _scalar(value)))
    return items


def _scalar(value: object) -> str:
    if isinstance(value, Mapping):  # an empty one (flat_items spreads the others): nothing set
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(_scalar(v) for v in value)
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
