"""The data behind every dashboard page, as JSON-ready dicts (the ``/api`` endpoints return them)."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine

from kbench.history.analysis import ChangePoint, SeriesHistory
from kbench.history.confirmed import Confirmation, culprit_index, load_confirmations, of_series
from kbench.history.load import NoSuchSeries
from kbench.history.regressions import (
    RegressionReport,
    above_noise,
    covering,
    history_json,
    regression_report,
    wanted_runs,
)
from kbench.history.series import Series, is_evidence, series_id, series_scope, target_kind
from kbench.store.db import Store
from kbench.store.series import run_requests, run_version
from kbench.web.cache import ChangeCache, SeriesSnapshot
from kbench.web.svg import downsample

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun
    from kbench.report.why import WhyRows
    from kbench.stats.summary import Summary

HISTOGRAM_BINS = 60
CDF_POINTS = 101
TRIM = (0.5, 99.5)
"""Histograms are drawn over p0.5…p99.5 so that a few extreme samples do not flatten them."""


def all_histories(snapshot: SeriesSnapshot, cache: ChangeCache) -> list[SeriesHistory]:
    return [cache.history(s) for s in snapshot.series()]


def index_data(snapshot: SeriesSnapshot, cache: ChangeCache) -> dict[str, Any]:
    """Every series: identity, point count, latest value, a downsampled sparkline, the latest
    confirmed change (a regression ``kbench watch`` confirmed; a change point alone is only
    counted as suspected)."""
    rows = []
    confirmations = load_confirmations(snapshot.engine)
    for history in all_histories(snapshot, cache):
        s = history.series
        confirmed = _latest_confirmed(s, confirmations)
        suspected = [c for c in history.change_points if _covering(s, c, confirmations) is None and above_noise(c)]
        rows.append({
            **_identity(s), "n_points": len(s.points), "latest_value": s.points[-1].value,
            "latest_run_id": s.points[-1].run_id, "latest_started_at": s.points[-1].started_at.isoformat(),
            "sparkline": downsample(s.values()), "sparkline_range": list(s.drawn_range()),
            "change_points": len(history.change_points),
            "suspected": len(suspected), "latest_change": confirmed,
        })
    return {"settings": cache.settings.to_json(), "series": rows}


def _latest_confirmed(series: Series, confirmations: list[Confirmation]) -> dict[str, Any] | None:
    """The newest confirmed regression of the series, at the first run of its culprit."""
    found = [(c, index) for c in of_series(series, confirmations)
             if (not series.scope or series.scope == c.scope) and (index := culprit_index(series, c)) is not None]
    if not found:
        return None
    confirmation, index = max(found, key=lambda pair: pair[1])
    point = series.points[index]
    return {"run_id": point.run_id, "index": index, "metric": series.metric,
            "verdict": "regression" if confirmation.kind == "regression" else "improvement", "kind": confirmation.kind,
            "change_pct": confirmation.change_pct, "started_at": point.started_at.isoformat(),
            "confirmed": True, "culprit": confirmation.culprit, "subject": confirmation.subject,
            "status": confirmation.status_text, "state": confirmation.status, "finding_id": confirmation.finding_id}


def _covering(series: Series, point: ChangePoint, confirmations: list[Confirmation]) -> Confirmation | None:
    """The (first) confirmation a change point of ``series`` is shown as (``kbench.history.regressions.covering``)."""
    return next(iter(covering(series, point, confirmations)), None)


def series_data(snapshot: SeriesSnapshot, cache: ChangeCache, sid: str) -> dict[str, Any]:
    """One series with every point and change point (``kbench history SERIES --json``'s entry)."""
    found = [s for s in snapshot.series() if s.id == sid]
    if not found:
        raise NoSuchSeries(f"no series {sid!r}")
    history = cache.history(found[0])
    data = history_json(history, load_confirmations(snapshot.engine))
    data["segments"] = _segments(history)
    data["settings"] = cache.settings.to_json()
    return data


def _identity(s: Series) -> dict[str, Any]:
    return {"id": s.id, "benchmark": s.benchmark, "params": s.params, "params_text": s.describe_params(),
            "metric": s.metric, "unit": s.unit, "direction": s.direction, "machine": s.machine, "target": s.target}


def _segments(history: SeriesHistory) -> list[dict[str, Any]]:
    """The stretches between change points with their medians (drawn as a step line)."""
    points = history.series.points
    bounds = [0, *(c.index for c in history.change_points), len(points)]
    values = history.series.values()
    return [
        {"first_run_id": points[start].run_id, "last_run_id": points[stop - 1].run_id, "start": start, "stop": stop,
         "median": float(np.median(values[start:stop]))}
        for start, stop in itertools.pairwise(bounds) if stop > start
    ]


def run_data(engine: Engine, run_id: int, metric: str | None = None) -> dict[str, Any]:
    """A stored run: facts, version, summary, histogram and CDF of its per-operation values, its series.
    ``metric``: show that metric of the run (e.g. ``command.cpu`` beside ``command.wall``)."""
    from kbench.engine.stored_run import load_stored_run

    store = Store(engine)
    return {**_run_data(engine, load_stored_run(store, run_id), metric), **_why_data(store, run_id)}


def _why_data(store: Store, run_id: int) -> dict[str, Any]:
    """The run's perf counters (per operation) and whether it has a profile (its flame graph is
    served at ``/runs/{id}/flame.svg``), for the run page."""
    from kbench.profile.counters import counters_json

    record = store.get_run(run_id)
    found = counters_json(record.probe_header or {})
    row = store.load_profile(run_id)
    profile = None
    if row is not None:
        profile = {"event": row["event"], "frequency_hz": row["frequency_hz"], "samples": row["samples"],
                   "window": (row["details"] or {}).get("window")}
    return {"counters": found.get("counters"), "counters_context": found.get("counters_context"),
            "profile": profile}


def flame_svg_of(engine: Engine, run_id: int) -> str | None:
    """The flame graph of the run's stored profile (None when it has none)."""
    from kbench.profile.flame import flame_svg
    from kbench.profile.folded import profile_from_row

    store = Store(engine)
    record = store.get_run(run_id)
    profile = profile_from_row(store.load_profile(run_id))
    if profile is None:
        return None
    return flame_svg(profile, title=f"run {run_id}: {record.benchmark}",
                     subtitle=f"{profile.event} at {profile.frequency_hz} Hz, {profile.samples:,} samples")


def metric_values(view: StoredRun, metric: str | None) -> tuple[str, str, str, np.ndarray, Summary | None]:
    """(metric, unit, direction, values, summary) of one metric of a run: ``metric`` when the run
    has it (one of its series, or a command's CPU time from its utime/stime columns), else its primary."""
    from kbench.stats.summary import summarize

    record = view.record
    if metric and metric != record.metric:
        for series in view.series:
            if series.name == metric and series.values.size:
                stored = view.summaries.get(metric)
                return metric, series.unit, series.direction, series.values, stored or summarize(series.values)
        columns = view.measurement.columns
        if metric == f"{record.benchmark}.cpu" and "utime_ns" in columns and "stime_ns" in columns:
            cpu = columns["utime_ns"].astype(np.float64) + columns["stime_ns"].astype(np.float64)
            if cpu.size:
                return metric, "ns", "lower", cpu, summarize(cpu)
    return record.metric, record.unit, record.direction, view.values, view.summary


def _run_data(engine: Engine, view: StoredRun, metric: str | None = None) -> dict[str, Any]:
    from kbench.stats.histogram import compact_cdf, linear_histogram
    from kbench.sysinfo.collect import machine_fingerprint

    record = view.record
    shown_metric, unit, direction, values, summary = metric_values(view, metric)
    run_id = record.id
    target = record.target or {}
    version = run_version(engine, run_id)
    data: dict[str, Any] = {
        "run_id": record.id, "benchmark": record.benchmark, "params": record.params, "metric": shown_metric,
        "primary_metric": record.metric, "metrics": _metric_names(view),
        "unit": unit, "direction": direction, "status": record.status,
        "started_at": record.started_at.isoformat(), "finished_at": record.finished_at.isoformat()
        if record.finished_at else None, "n": int(values.size), "basis": view.basis,
        "kernel": target.get("kernel_release"), "target": target_kind(target.get("kind"), target.get("accel")),
        "commit": version["commit"], "label": version["label"], "tags": record.tags, "warnings": record.warnings,
        "request": record.request, "error": record.error, "context": _context(record.sysinfo, record.probe_header),
        "summary": None, "histogram": None, "cdf": None, "series_id": None,
    }
    if record.sysinfo:
        fingerprint = machine_fingerprint(dict(record.sysinfo))
        data["machine"] = record.sysinfo.get("hostname")
        data["series_id"] = (None if is_evidence(record.tags) else
                             series_id(record.benchmark, record.params or {}, shown_metric, fingerprint,
                                       data["target"], series_scope(record.tags)))
    if summary is not None and values.size:
        low, high = np.percentile(values, TRIM)
        shown = values[(values >= low) & (values <= high)]
        if not shown.size:  # a few samples (two: both outside p0.5..p99.5): show them all
            shown = values
        histogram = linear_histogram(shown, HISTOGRAM_BINS)
        cdf = compact_cdf(values, CDF_POINTS)
        data["summary"] = {
            "median": summary.p50, "median_ci": list(summary.median_ci), "mean": summary.mean,
            "stdev": summary.stdev, "min": summary.min, "p90": summary.p90, "p99": summary.p99,
            "max": summary.max, "mad": summary.mad, "outliers": summary.outliers,
            "steady_state_index": summary.steady_state_index,
        }
        data["histogram"] = {"edges": histogram.edges.tolist(), "counts": histogram.counts.tolist(),
                             "shown": int(shown.size), "range": [float(low), float(high)]}
        data["cdf"] = {"values": cdf.values.tolist(), "probabilities": cdf.probabilities.tolist()}
    return data


def _metric_names(view: StoredRun) -> list[str]:
    names = [series.name for series in view.series]
    columns = view.measurement.columns
    if "utime_ns" in columns and "stime_ns" in columns:
        names.append(f"{view.record.benchmark}.cpu")
    return list(dict.fromkeys([view.record.metric, *names]))


def _context(sysinfo: dict[str, Any] | None, header: dict[str, Any] | None) -> dict[str, Any]:
    """The few machine and timer facts a reader of one run wants next to it."""
    info = sysinfo or {}
    cpu = info.get("cpu") or {}
    head = header or {}
    return {
        "hostname": info.get("hostname"), "cpu_model": cpu.get("model"), "cpus": cpu.get("count"),
        "memory_bytes": info.get("memory_bytes"), "virtualization": info.get("virtualization"),
        "noise": info.get("noise"), "timer": head.get("timer"), "batch": head.get("batch"),
        "usage": head.get("usage"),
    }


def compare_data(engine: Engine, first: int, second: int, metric: str | None = None) -> dict[str, Any]:
    """Two runs side by side, with histograms over common bins and the change of the medians
    (of ``metric`` when both runs have it, e.g. the metric a change point was found in)."""
    from kbench.engine.stored_run import load_stored_run

    store = Store(engine)
    views = [load_stored_run(store, run_id) for run_id in (first, second)]
    runs = [_run_data(engine, view, metric) for view in views]
    data: dict[str, Any] = {"runs": runs, "median_change_pct": None, "histograms": None,
                            "same_metric": runs[0]["metric"] == runs[1]["metric"]}
    a, b = (r["summary"] for r in runs)
    if a and b and a["median"]:
        data["median_change_pct"] = 100.0 * (b["median"] / a["median"] - 1.0)
    values = [metric_values(view, metric)[3] for view in views]
    if all(v.size for v in values):
        low = min(float(np.percentile(v, TRIM[0])) for v in values)
        high = max(float(np.percentile(v, TRIM[1])) for v in values)
        if high > low:
            edges = np.linspace(low, high, HISTOGRAM_BINS + 1)
            data["histograms"] = {
                "edges": edges.tolist(),
                "fractions": [(np.histogram(v, bins=edges)[0] / v.size).tolist() for v in values],
            }
    return data


def regression_data(
    snapshot: SeriesSnapshot, cache: ChangeCache, since: datetime | None, improvements: bool
) -> tuple[RegressionReport, dict[str, Any], dict[str, WhyRows]]:
    """The regression report ``kbench report regressions`` prints (``kbench.history.regressions``), its
    JSON (each entry with its why rows: the counters' %change and the top of the profile delta,
    ``kbench.report.why``) and those rows by entry key."""
    from kbench.report.why import report_json, report_why_rows

    histories = all_histories(snapshot, cache)
    requests = run_requests(snapshot.engine, wanted_runs(histories, since))
    report = regression_report(histories, requests, since=since, improvements=improvements,
                               confirmations=load_confirmations(snapshot.engine))
    why = report_why_rows(Store(snapshot.engine), report)
    return report, report_json(report, why, cache.settings.to_json(), since, len(histories)), why
