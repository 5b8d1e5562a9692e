"""Machine-readable comparison: one JSON document with one object per metric.

Top level: ``title, label_kind, base_label, new_labels, correction, confidence, context,
parameters, overall`` (one entry per new label) and ``metrics``. Each metric object has
``metric, unit, direction, base_label, new_label, base, new, change_pct, ci_pct [low, high],
p_value, verdict, real_within_margin`` (a regression or improvement whose interval lies within the margin: a real change
smaller than the margin), ``reason, trials {base, new}, base_stddev_pct, new_stddev_pct``, the
per-trial (or per-slot) statistics of both sides (``base_trials``, ``new_trials``),
``margin_pct`` (null without one), for in-kernel timing in cycles ``ns_per_unit`` (ns per cycle
at the target's TSC rate) with ``base_ns`` and ``new_ns`` (null otherwise), ``design`` (how it was measured and judged),
``warnings``, ``multimodal`` and ``modes`` (per side with two or more clusters:
``centres``, ``counts``, ``fractions``, ``text``). A comparison that profiled its sides adds
``profile_delta`` (rows ``{symbol, kind, base_pct, new_pct, change_pct, noise_pp,
within_noise, where, new_label}``, ``kbench.profile.delta``) and ``profile``. Raw samples are not
included (use the run exports for them). Non-finite numbers become ``null``.
"""

from __future__ import annotations

import math
from typing import Any

from kbench.contract import json_document
from kbench.profile.delta import DeltaRow
from kbench.report.comparison.common import overall
from kbench.report.comparison.model import ComparisonReport, MetricComparison


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def metric_object(report: ComparisonReport, m: MetricComparison) -> dict[str, Any]:
    return {
        "metric": m.metric,
        "unit": m.unit,
        "direction": m.direction,
        "base_label": report.base_label,
        "new_label": report.new_label_of(m),
        "base": _number(m.base),
        "new": _number(m.new),
        "change_pct": _number(m.change_pct),
        "ci_pct": [_number(m.ci_pct[0]), _number(m.ci_pct[1])],
        "p_value": _number(m.p_value),
        "verdict": m.verdict,
        "real_within_margin": m.real_within_margin,
        "reason": m.reason,
        "trials": {"base": m.trials[0], "new": m.trials[1]},
        "base_stddev_pct": _number(m.base_data.stddev_pct),
        "new_stddev_pct": _number(m.new_data.stddev_pct),
        "base_trials": [_number(v) for v in m.base_data.trial_statistics],
        "new_trials": [_number(v) for v in m.new_data.trial_statistics],
        "margin_pct": _number(m.margin_pct),
        "ns_per_unit": m.ns_per_unit,
        "base_ns": _number(m.in_ns(m.base)),
        "new_ns": _number(m.in_ns(m.new)),
        "design": m.design,
        "warnings": list(m.warnings),
        "multimodal": m.multimodal,
        "modes": dict(m.modes),
    }


def report_object(report: ComparisonReport) -> dict[str, Any]:
    summaries = []
    for label in report.new_labels:
        s = overall(report, label)
        summaries.append({
            "new_label": label,
            "geomean_ratio": _number(s.geomean_ratio),
            "better_pct": _number(s.better_pct),
            "wording": s.wording,
            "metrics_used": s.metrics_used,
            "regressions": s.regressions,
            "improvements": s.improvements,
            "unchanged": s.unchanged,
        })
    return {
        "title": report.title,
        "label_kind": report.label_kind,
        "base_label": report.base_label,
        "new_labels": list(report.new_labels),
        "correction": report.correction,
        "confidence": report.confidence,
        "context": dict(report.context),
        "parameters": dict(report.parameters),
        "overall": summaries,
        "metrics": [metric_object(report, m) for m in report.metrics],
        **profile_objects(report),
        **({"kernel_configs": [{"base_label": d.base_label, "new_label": d.new_label, "base_digest": d.base_digest,
                                "new_digest": d.new_digest, "differ": len(d.lines) if d.known else None,
                                "diffconfig": list(d.lines)} for d in report.kernel_configs]}
           if report.kernel_configs else {}),
    }


def profile_objects(report: ComparisonReport) -> dict[str, Any]:
    """``profile_delta`` (every new side's rows against the base, each with its ``new_label``,
    sorted by growth per side) and ``profile`` (how the profiles were taken), when there are any."""
    profile = report.profile
    if profile is None:
        return {}
    rows = [{**row.to_dict(), "new_label": delta.new_label} for delta in profile.deltas for row in delta.rows]
    return {
        "profile_delta": rows,
        "profile": {
            "note": profile.note, "runs": dict(profile.runs),
            "sides": [{"base_label": d.base_label, "new_label": d.new_label, "event": d.event,
                       "base_samples": d.base_samples, "new_samples": d.new_samples,
                       "largest_growth": _symbol(d.top_growth())}
                      for d in profile.deltas],
        },
    }


def _symbol(row: DeltaRow | None) -> str | None:
    return row.symbol if row is not None else None


def render(report: ComparisonReport) -> str:
    return json_document.dumps(report_object(report), allow_nan=False) + "\n"
