"""A synthetic but realistic comparison report, for demos, docs and renderer tests.

The numbers are generated (seeded, deterministic): log-normal per-operation noise, a
decaying warm-up at the start of every trial, a small per-trial offset (trials differ more
than samples within a trial, as on real machines). The verdicts are a simple stand-in for
``kbench.compare`` (Welch's t-test on per-trial medians, a t interval of the relative
difference of means, a 1% threshold), good enough to make a believable page; real reports
take their verdicts from ``kbench.compare``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from kbench.report.comparison.model import (
    HIGHER_IS_BETTER,
    IMPROVEMENT,
    LOWER_IS_BETTER,
    NO_CHANGE,
    REGRESSION,
    ComparisonReport,
    MetricComparison,
    SideData,
    side_from_trials,
)

EXAMPLE_THRESHOLD_PCT = 1.0
EXAMPLE_ALPHA = 0.05


@dataclass(frozen=True)
class _Spec:
    metric: str
    unit: str
    direction: str
    base: float
    change_pct: float
    noise: float  # log-normal sigma of one sample
    trial_noise: float  # relative sd of the per-trial level


_SPECS = (
    _Spec("syscall.getppid.latency", "ns", LOWER_IS_BETTER, 76.3, 3.1, 0.05, 0.004),
    _Spec("syscall.writev.latency", "ns", LOWER_IS_BETTER, 1840.0, -6.2, 0.08, 0.006),
    _Spec("will-it-scale.mmap1.per_process_ops", "ops", HIGHER_IS_BETTER, 512_400.0, 0.2, 0.03, 0.01),
    _Spec("kfunc.fib4_lookup.cycles", "cycles", LOWER_IS_BETTER, 212.0, 0.4, 0.06, 0.01),
    _Spec("stress-ng.context.bogo_ops_per_s", "ops/s", HIGHER_IS_BETTER, 98_650.0, 4.4, 0.04, 0.008),
)


def _trials(rng: np.random.Generator, level: float, spec: _Spec, trials: int, samples: int) -> list[np.ndarray]:
    out = []
    for _ in range(trials):
        trial_level = level * (1 + rng.normal(0, spec.trial_noise))
        values = trial_level * rng.lognormal(0.0, spec.noise, samples)
        warmup = int(rng.integers(samples // 20, samples // 8))
        decay = np.exp(-np.arange(samples) / max(warmup / 3, 1))
        slower = 1 + 0.35 * decay if spec.direction == LOWER_IS_BETTER else 1 - 0.25 * decay
        out.append(values * slower)
    return out


def _verdict(spec: _Spec, base: SideData, new: SideData) -> tuple[float, tuple[float, float], float, str, str]:
    b, n = np.asarray(base.trial_statistics), np.asarray(new.trial_statistics)
    mean_b = float(b.mean())
    change = 100.0 * (float(np.median(n)) - float(np.median(b))) / float(np.median(b))
    var_b, var_n = b.var(ddof=1) / b.size, n.var(ddof=1) / n.size
    se = float(np.sqrt(var_b + var_n))
    dof = (var_b + var_n) ** 2 / (var_b**2 / (b.size - 1) + var_n**2 / (n.size - 1))
    half = float(scipy_stats.t.ppf(0.975, dof)) * se / mean_b * 100.0
    p = float(scipy_stats.ttest_ind(n, b, equal_var=False).pvalue)
    worse = change > 0 if spec.direction == LOWER_IS_BETTER else change < 0
    if p < EXAMPLE_ALPHA and abs(change) >= EXAMPLE_THRESHOLD_PCT:
        verdict = REGRESSION if worse else IMPROVEMENT
        reason = f"p < {EXAMPLE_ALPHA} and |change| ≥ {EXAMPLE_THRESHOLD_PCT}%"
    else:
        verdict = NO_CHANGE
        reason = f"p ≥ {EXAMPLE_ALPHA}" if p >= EXAMPLE_ALPHA else f"|change| < {EXAMPLE_THRESHOLD_PCT}%"
    return change, (change - half, change + half), p, verdict, reason


def example_report(*, seed: int = 6, trials: int = 8, samples: int = 1500) -> ComparisonReport:
    """Five metrics of two Debian kernels: one regression, two improvements, two unchanged."""
    rng = np.random.default_rng(seed)
    metrics = []
    for spec in _SPECS:
        base = side_from_trials(_trials(rng, spec.base, spec, trials, samples))
        new = side_from_trials(_trials(rng, spec.base * (1 + spec.change_pct / 100), spec, trials, samples))
        change, ci, p, verdict, reason = _verdict(spec, base, new)
        metrics.append(MetricComparison(
            metric=spec.metric, unit=spec.unit, direction=spec.direction,
            base=float(np.median(base.trial_statistics)), new=float(np.median(new.trial_statistics)),
            change_pct=change, ci_pct=ci, p_value=min(1.0, p * len(_SPECS)), verdict=verdict, reason=reason,
            trials=(trials, trials), base_data=base, new_data=new,
        ))
    return ComparisonReport(
        title="getppid/writev/mmap: Debian 6.1 vs 6.12",
        base_label="6.1.0-56-amd64",
        new_labels=("6.12.38+deb12-amd64",),
        metrics=tuple(metrics),
        context={
            "machine": "x86_64 VM, 2 vCPUs, 24 GiB",
            "cpu": "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
            "virtualisation": "kvm (guest), TCG for the measured kernels",
            "governor": "performance (not controllable in a guest)",
            "timer": "tsc",
            "interleaving": "ABAB",
        },
        parameters={"job": "examples/kernels.yaml", "trials": trials, "samples_per_trial": samples,
                    "warmup": "detected (MSER-5)", "seed": seed},
        correction="bonferroni",
    )
