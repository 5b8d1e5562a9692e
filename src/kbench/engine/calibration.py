"""A/A calibration: a benchmark compared with itself, with the design ``kbench compare`` uses.

Interleaved design: two identical sides (A1, A2) run as ``kbench compare`` would run
them, for the whole budget (no early stop). sigma = 1.4826 MAD of the block
log-ratios; n = the blocks that fitted. Stored:
- ``mde`` rows ``{"n", "blocks", "power", "effect_pct"}``: the smallest change the
  signed-rank test of n blocks detects with that power (normal approximation,
  ``kbench.compare.detectable.paired_mde_pct``);
- ``trials``: ``{"A1": slot values, "A2": ..., "design", "block_log_ratios", "blocks",
  "budget_s", "margin_pct"}``.

Trials design: two A/A sets of trials (as before); sigma = robust sd of the log trial
statistics; ``mde`` rows ``{"n", "trials", "power", "effect_pct"}`` by resampling.

Both store ``margin_pct`` (``suggested_margin``: twice the interval's expected half-width
at the budget, at least the default margin), which ``kbench compare`` uses as its
default margin for the same benchmark, target and parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.compare.detectable import minimum_detectable_effect, paired_mde_pct, suggested_margin
from kbench.compare.paired import judge_blocks
from kbench.compare.thresholds import DEFAULT_MIN_TRIALS
from kbench.contract.request import BadRequest, RunRequest
from kbench.engine.compare_protocol import ComparisonSide, TrialCallback, run_comparison
from kbench.engine.comparison_sides import INTERLEAVED, choose_design
from kbench.engine.in_kernel import interleaved_comparison
from kbench.engine.interleaved import SlotCallback
from kbench.stats.thresholds import MAD_TO_SIGMA
from kbench.store.db import Store
from kbench.targets.factory import make_target

POWERS = (0.8, 0.95)
DEFAULT_TRIAL_BUDGETS = (5, 10, 20)


@dataclass
class Calibration:
    calibration_id: int
    benchmark: str
    metric: str
    target: str
    design: str
    design_text: str
    sets: dict[str, list[float]]
    sigma_log: float
    aa_change_pct: float
    aa_p_value: float
    aa_verdict: str
    rows: list[dict[str, Any]]
    margin_pct: float
    warnings: list[str] = field(default_factory=list)


def calibrate(
    store: Store, *, benchmark: str | None, command: str | None, kernel: str | None, params: dict[str, str],
    design: str, metric: str, budget_s: float, samples: int | None, trials: int, budgets: tuple[int, ...],
    alpha: float, seed: int, on_slot: SlotCallback | None = None, on_trial: TrialCallback | None = None,
) -> Calibration:
    """Run the A/A calibration of the module docstring and store it; ``on_slot`` and ``on_trial``
    follow its comparison as ``interleaved_comparison`` and ``run_comparison`` call them."""
    if bool(benchmark) == bool(command):
        raise BadRequest("give a BENCHMARK or --command CMD (one of them)")
    bench = lookup(benchmark or "command")
    if command:
        params = {**params, "cmd": command}
    bench.validate_params(params)
    request = RunRequest(benchmark=bench.name, params=params, samples=samples)
    sides = [ComparisonSide(label=label, kernel=kernel, benchmark=bench, request=request) for label in ("A1", "A2")]
    target = kernel or "local"
    if choose_design(design, sides) == INTERLEAVED:
        return _interleaved(store, sides, target, metric, budget_s, samples, alpha, seed, on_slot)
    return _trials(store, sides, target, metric, trials, budgets, alpha, seed, on_trial)


def _interleaved(
    store: Store, sides: list[ComparisonSide], target: str, metric: str, budget_s: float, samples: int | None,
    alpha: float, seed: int, on_slot: SlotCallback | None = None,
) -> Calibration:
    with make_target(sides[0].kernel) as machine:
        outcome = interleaved_comparison(store, sides, machine, budget_s=budget_s, metric=metric, alpha=alpha,
                                         seed=seed, samples=samples, adaptive=False, tags=("calibration",),
                                         on_slot=on_slot)
    primary = outcome.metrics[0]
    d = outcome.log_ratios(1, primary.name)
    sets = {"A1": outcome.side_values(0, primary.name), "A2": outcome.side_values(1, primary.name)}
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) if d.size else math.inf
    n = outcome.blocks
    aa = judge_blocks(d, base_values=sets["A1"], new_values=sets["A2"], direction=primary.direction, alpha=alpha,
                      metric=primary.name, unit=primary.unit)
    rows = [{"n": n, "blocks": n, "budget_s": budget_s, "power": power,
             "effect_pct": paired_mde_pct(sigma, n, power=power, alpha=alpha) if n else math.inf}
            for power in POWERS]
    margin = suggested_margin(sigma, n, alpha=alpha, paired=True)
    warnings = list(aa.warnings)
    if aa.significant:
        warnings.append(f"aa-differs: the two identical sides differ by {aa.change_pct:+.2f}% (p={aa.p_value:.3g}); "
                        "this happens in alpha of calibrations by chance, more often on a machine that changes "
                        "under the measurement")
    stored: dict[str, Any] = {**sets, "design": INTERLEAVED, "block_log_ratios": d.tolist(), "blocks": n,
                              "budget_s": budget_s, "margin_pct": 100.0 * margin}
    calibration_id = store.save_calibration(
        benchmark=sides[0].benchmark.name, metric=primary.name, target=target, params=dict(sides[0].request.params),
        trials=stored, run_ids=[s.run_id for s in outcome.sides], sigma_log=sigma, mde=rows,
    )
    return Calibration(calibration_id, sides[0].benchmark.name, primary.name, target, INTERLEAVED,
                       f"{n} interleaved A/A blocks in {budget_s:g} s", sets, sigma, aa.change_pct, aa.p_value,
                       aa.verdict, rows, 100.0 * margin, warnings)


def _trials(
    store: Store, sides: list[ComparisonSide], target: str, metric: str, trials: int, budgets: tuple[int, ...],
    alpha: float, seed: int, on_trial: TrialCallback | None = None,
) -> Calibration:
    outcome = run_comparison(store, sides, make_target, max_trials=trials, adaptive=False, seed=seed,
                             min_trials=min(DEFAULT_MIN_TRIALS, trials), tags=("calibration",), metric=metric,
                             on_trial=on_trial)
    metric = outcome.sides[0].primary_metric
    sets = {"A1": outcome.sides[0].statistics(metric), "A2": outcome.sides[1].statistics(metric)}
    rows: list[dict[str, Any]] = []
    warnings: set[str] = set()
    for n in budgets or DEFAULT_TRIAL_BUDGETS:
        for power in POWERS:
            effect = minimum_detectable_effect((sets["A1"], sets["A2"]), n, power=power, alpha=alpha)
            rows.append({"n": n, "trials": n, "power": power, "effect_pct": effect.effect_pct})
            warnings.update(effect.warnings)
    whole = minimum_detectable_effect((sets["A1"], sets["A2"]), trials, alpha=alpha)
    margin = suggested_margin(whole.sigma_log, trials, alpha=alpha, paired=False)
    run_ids = [getattr(run, "run_id", 0) for side in outcome.sides for run in side.runs]
    stored: dict[str, Any] = {**sets, "design": "trials", "margin_pct": 100.0 * margin}
    calibration_id = store.save_calibration(
        benchmark=sides[0].benchmark.name, metric=metric, target=target, params=dict(sides[0].request.params),
        trials=stored, run_ids=run_ids,
        sigma_log=whole.sigma_log, mde=rows,
    )
    verdict = "significant" if whole.aa_p_value <= alpha else "not significant"
    return Calibration(calibration_id, sides[0].benchmark.name, metric, target, "trials",
                       f"2 × {trials} interleaved trials", sets, whole.sigma_log, whole.aa_change_pct,
                       whole.aa_p_value, verdict, rows, 100.0 * margin, sorted(warnings | set(whole.warnings)))
