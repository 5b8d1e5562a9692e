"""Release over release: each series' value on every kernel relative to the first kernel = 100.

A kernel's value is the geometric mean of the medians of its runs. The interval of
kernel K relative to the first kernel F is a 95 % confidence interval of the ratio of
geometric means: ``exp(d ± t·se)`` with ``d`` the difference of the mean log medians,
``se² = se_K² + se_F²`` and Welch–Satterthwaite degrees of freedom. A kernel measured by
two or more runs contributes the standard error of its log medians (between-run noise);
a kernel measured by one run contributes the width of that run's stored median CI
(within-run noise only, so narrower than a repeat would show — the row says so). The
first kernel's own interval is its uncertainty alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kbench.history.series import Series

CONFIDENCE = 0.95
BETWEEN_RUNS, WITHIN_RUN = "between runs", "within run"


@dataclass(frozen=True)
class KernelValue:
    kernel: str
    runs: int
    value: float  # geometric mean of the runs' medians
    relative: float  # 100 × value / the first kernel's value
    low: float  # the 95 % CI of ``relative``
    high: float
    basis: str  # BETWEEN_RUNS or WITHIN_RUN (what the interval's noise estimate comes from)

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "runs": self.runs, "value": self.value, "relative": self.relative,
                "ci": [self.low, self.high], "ci_basis": self.basis}


@dataclass(frozen=True)
class ReleaseRow:
    """One series across the kernels asked for (None where it has no run on that kernel)."""

    series: Series
    values: list[KernelValue | None]

    def summaries(self) -> list[str]:
        """0-Day's sentences: ``… on kernel B has -8.68% regression when comparing to A``."""
        base = self.values[0]
        assert base is not None
        out = []
        for value in self.values[1:]:
            if value is None:
                continue
            change = value.relative - 100.0
            verdict = _verdict(self.series.direction, value)
            if verdict is None:
                out.append(f"{self.series.metric} on kernel {value.kernel} is almost the same as that in "
                           f"{base.kernel} ({change:+.2f}%, the interval holds 100)")
            else:
                out.append(f"{self.series.metric} on kernel {value.kernel} has {change:+.2f}% {verdict} "
                           f"when comparing to {base.kernel}")
        return out

    def to_json(self) -> dict[str, Any]:
        s = self.series
        return {
            "series_id": s.id, "benchmark": s.benchmark, "params": s.params, "metric": s.metric, "unit": s.unit,
            "direction": s.direction, "machine": s.machine, "target": s.target,
            "kernels": [None if v is None else v.to_json() for v in self.values], "summary": self.summaries(),
        }


def _verdict(direction: str | None, value: KernelValue) -> str | None:
    if value.low <= 100.0 <= value.high:
        return None
    higher = value.relative > 100.0
    if direction is None:
        return "change"
    return "improvement" if higher == (direction == "higher") else "regression"


def normalise_kernel(name: str) -> str:
    """``deb:6.1.0-56-amd64`` (a --kernel spec) names the release ``6.1.0-56-amd64``."""
    return name.removeprefix("deb:")


def label_tree_kernels(
    series: Sequence[Series], commits: Mapping[str, str], details_of: Callable[[list[int]], Mapping[int, Any]],
) -> None:
    """Name the points of kernels kbench built by the ``tree:`` specs that asked for them:
    ``commits`` maps a spec to the commit it names, ``details_of`` gives the stored target
    details of runs (``details["kernel"]["commit"]``). Every revision of a tree has the
    same release, so the release cannot tell them apart; the commit does."""
    if not commits:
        return
    by_commit = {commit: spec for spec, commit in commits.items()}
    details = details_of([p.run_id for s in series for p in s.points])
    for s in series:
        for i, point in enumerate(s.points):
            kernel = ((details.get(point.run_id) or {}).get("kernel") or {})
            spec = by_commit.get(str(kernel.get("commit") or ""))
            if spec is not None:
                s.points[i] = replace(point, kernel=spec)


def release_rows(
    series: Sequence[Series], kernels: Sequence[str], median_cis: Mapping[tuple[int, str], tuple[float, float]],
) -> list[ReleaseRow]:
    """Rows for the series with runs on the first kernel and at least one other.

    ``median_cis`` maps (run id, metric) to the run's stored median CI (``store.series.median_intervals``)."""
    names = [normalise_kernel(k) for k in kernels]
    rows = []
    for s in series:
        by_kernel = {name: [p for p in s.points if p.kernel == name and p.value > 0] for name in names}
        if not by_kernel[names[0]] or sum(1 for name in names[1:] if by_kernel[name]) == 0:
            continue
        estimates = {
            name: _log_estimate([p.value for p in points], [median_cis.get((p.run_id, s.metric)) for p in points])
            for name, points in by_kernel.items() if points
        }
        base_log, base_se, base_df = estimates[names[0]]
        values: list[KernelValue | None] = []
        for name in names:
            if name not in estimates:
                values.append(None)
                continue
            log_mean, se, df = estimates[name]
            if name == names[0]:
                diff, se_diff, dof = 0.0, base_se, base_df
            else:
                diff, se_diff, dof = log_mean - base_log, math.hypot(se, base_se), _welch_df(se, df, base_se, base_df)
            half = _t_quantile(dof) * se_diff
            n = len(by_kernel[name])
            basis = BETWEEN_RUNS if n > 1 and len(by_kernel[names[0]]) > 1 else WITHIN_RUN
            values.append(KernelValue(
                kernel=name, runs=n, value=math.exp(log_mean), relative=100.0 * math.exp(diff),
                low=100.0 * math.exp(diff - half), high=100.0 * math.exp(diff + half), basis=basis,
            ))
        rows.append(ReleaseRow(s, values))
    return rows


def _log_estimate(values: Sequence[float], cis: Sequence[tuple[float, float] | None]) -> tuple[float, float, float]:
    """(mean of log values, its standard error, degrees of freedom; inf for a known-σ estimate)."""
    logs = np.log(np.asarray(values, dtype=np.float64))
    if logs.size > 1:
        return float(logs.mean()), float(logs.std(ddof=1) / math.sqrt(logs.size)), float(logs.size - 1)
    interval = cis[0]
    if interval is None or not (interval[0] > 0 and interval[1] > 0):
        return float(logs[0]), 0.0, math.inf
    z = _t_quantile(math.inf)
    return float(logs[0]), (math.log(interval[1]) - math.log(interval[0])) / (2 * z), math.inf


def _welch_df(se1: float, df1: float, se2: float, df2: float) -> float:
    terms = [se**4 / df for se, df in ((se1, df1), (se2, df2)) if math.isfinite(df) and df > 0]
    total = (se1**2 + se2**2) ** 2
    return total / sum(terms) if terms and sum(terms) > 0 else math.inf


def _t_quantile(df: float) -> float:
    from scipy.stats import norm, t

    q = 0.5 + CONFIDENCE / 2
    return float(norm.ppf(q)) if not math.isfinite(df) else float(t.ppf(q, df))
