"""A comparison's report from its outcome: ``comparison_report(compared, store)``, for every design.

``kbench.engine.compare.compare`` measures (or reads stored runs) and returns a ``Compared``;
this builds the one ``ComparisonReport`` that every format renders: the counted part
(``report.counts``), the timed part by its design (trials, interleaved blocks, copies of
builds), then the profiles, the failed executions and the kernel config differences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.engine.compare import (
    MODULE_COPIES,
    MODULES,
    STORED_COPIES,
    STORED_INTERLEAVED,
    STORED_TRIALS,
    Compared,
    Counted,
    Timed,
)
from kbench.engine.compare_spec import INTERLEAVED, ONE_COPY_WARNING, TRIALS, ComparisonSpec

if TYPE_CHECKING:
    from kbench.report.comparison.model import ComparisonReport
    from kbench.store.db import Store


def comparison_report(compared: Compared, store: Store) -> ComparisonReport:
    """The report of ``compared`` (``store``: where its runs are, for their kernel configs)."""
    from kbench.report.comparison.build import with_failed_executions
    from kbench.report.comparison.kernel_configs import with_kernel_configs

    counted = _counted_report(compared.spec, compared.counted) if compared.counted is not None else None
    if compared.timed is None:
        assert counted is not None
        report = counted
    else:
        report = _timed_report(compared.spec, compared.timed)
        if counted is not None:
            from kbench.report.counts import merged

            report = merged(counted, report)  # instructions, then time: each metric with its verdict
    report = with_failed_executions(report, compared.failures)
    return with_kernel_configs(report, store, compared.side_runs)


def parameters(spec: ComparisonSpec, margin_source: str) -> dict[str, object]:
    """The parameters every timed comparison states."""
    return {"params": dict(spec.params), "samples": spec.samples or "default", "seed": spec.seed,
            "alpha": spec.alpha, "margin": margin_source}


def _counted_report(spec: ComparisonSpec, counted: Counted) -> ComparisonReport:
    from kbench.report.counts import counts_report

    stated: dict[str, object] = {"params": dict(spec.params), "samples": spec.samples or "default",
                                 "alpha": spec.alpha}
    if spec.modules and not spec.run_sets:
        stated["modules"] = " ".join(str(m) for m in spec.modules)
    outcome = counted.outcome
    title = f"{outcome.metric}: {' vs '.join(side.label for side in outcome.sides)}"
    return counts_report(outcome, title=title, label_kind=counted.label_kind, context=counted.context,
                         parameters=stated)


def _timed_report(spec: ComparisonSpec, timed: Timed) -> ComparisonReport:
    from kbench.compare.multiple import Method
    from kbench.report.comparison.build import build_interleaved_report, build_report
    from kbench.report.comparison.noise_floor import noise_floor_text

    correction: Method = "bh" if spec.correction == "bh" else "holm"
    title = f"{timed.subject}: {' vs '.join(timed.labels)}"
    stated = parameters(spec, timed.margin_source)
    if timed.design in (MODULES, MODULE_COPIES):
        stated["modules"] = " ".join(str(m) for m in spec.modules)
    if timed.design in (STORED_COPIES, MODULE_COPIES):
        from kbench.report.comparison.copies import build_copies_report

        assert timed.interleaved is not None
        report = build_copies_report(timed.interleaved, timed.builds, timed.build_of, title=title, alpha=spec.alpha,
                                     margin=timed.margin, context=timed.context, parameters=stated)
    elif timed.design in (STORED_INTERLEAVED, MODULES, INTERLEAVED):
        assert timed.interleaved is not None
        if timed.design == MODULES and len(spec.modules) > 1:
            stated["placement"] = ONE_COPY_WARNING
        report = build_interleaved_report(timed.interleaved, title=title, label_kind=timed.label_kind,
                                          alpha=spec.alpha, margin=timed.margin, correction=correction,
                                          context=timed.context, parameters=stated)
    else:
        assert timed.design in (STORED_TRIALS, TRIALS) and timed.trials is not None and timed.noise_floor is not None
        report = build_report(timed.trials, title=title, label_kind=timed.label_kind, alpha=spec.alpha,
                              margin=timed.margin, correction=correction, context=timed.context,
                              parameters=stated | {"noise floor": noise_floor_text(timed.noise_floor)})
    if timed.profiles is None or (timed.stored_profiles and not timed.profiles):
        return report  # stored runs without profiles: nothing to load the profile code for
    from kbench.report.comparison.profiles import STORED_PROFILES, with_profiles

    if timed.stored_profiles:
        return with_profiles(report, timed.profiles, note=STORED_PROFILES, every_side=True)
    return with_profiles(report, timed.profiles, timed.profile_problems)
