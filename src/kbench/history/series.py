"""Series: the stored runs of one benchmark, parameters, metric, machine and target kind, in order."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from kbench.contract.json_document import utc_timestamp
from kbench.history.machines import distinct_names
from kbench.history.since import as_utc

EVIDENCE_TAG_PREFIXES = ("bisect:", "finding:")
"""Runs tagged so are a conclusion's evidence, not points of a series: a bisection's trials
(``bisect:ID``), a watch's side-by-side confirmations and verifications of a finding
(``finding:ID``) and its first look at a new branch's oldest commit against its newest
(``head-check``). They measure worktrees of kbench's own (``cmd=cd …/builds/SHA && ./prog``),
each a configuration of its own, and are shown with the bisection or finding they serve."""
EVIDENCE_TAGS = ("bisect-oracle", "head-check")
WATCH_TAG_PREFIX = "watch:"
SERIES_ID_LENGTH = 12
_SERIES_ID = re.compile(r"^[0-9a-f]{4,12}$")
UNKNOWN_MACHINE = "unknown"
DRAWN_NOISE_SPAN = 6.0
"""A small plot of a series is at least this many run-to-run standard deviations tall: noise is
drawn as noise, and a difference far below it (rounding, a constant count) as a flat line."""
DRAWN_RELATIVE_FLOOR = 1e-6
"""...and at least this fraction of the series' level tall, for a series without noise."""
DRAWN_MIDDLE = 0.45
"""Where a widened range puts the values' middle: a little below half, so that a flat series
sits inside one of the eight block characters of a sparkline, not on the boundary of two."""
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Point:
    """One run seen through one metric: its median and the version it measured."""

    run_id: int
    started_at: datetime
    value: float  # the run's median of this metric
    mean: float
    stdev: float  # within the run
    n: int  # samples (or tool iterations) in the run
    kernel: str | None
    commit: str | None
    label: str | None
    tags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "started_at": utc_timestamp(self.started_at), "value": self.value,
            "mean": self.mean, "stdev": self.stdev, "n": self.n, "kernel": self.kernel,
            "commit": self.commit, "label": self.label, "tags": list(self.tags),
        }


@dataclass
class Series:
    """Every complete run of one benchmark configuration on one machine and target kind."""

    id: str
    benchmark: str
    params: dict[str, str]
    metric: str
    unit: str
    direction: str | None  # "lower" / "higher" is better, None when not known
    machine: str  # the machine's name as people know it (hostname)
    machine_fingerprint: str
    target: str  # "local", or "vm/<accel>"
    points: list[Point] = field(default_factory=list)
    scope: str = ""
    """``watch:ID`` for the runs a watch made of its repository's commits (two watched repositories
    with one job are two series), else empty."""

    def values(self) -> np.ndarray:
        return np.array([p.value for p in self.points], dtype=np.float64)

    def describe_params(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.params.items()) or "-"

    def noise(self) -> float:
        """The run-to-run standard deviation of the series' values: from successive differences
        (robust: a step moves one difference, not the scale), and never below the standard error
        of one run's median from its own samples."""
        values = self.values()
        between = (_MAD_TO_SIGMA * float(np.median(np.abs(np.diff(values)))) / math.sqrt(2)
                   if values.size > 1 else 0.0)
        errors = [p.stdev / math.sqrt(p.n) for p in self.points if p.n > 0 and math.isfinite(p.stdev)]
        within = float(np.median(errors)) if errors else 0.0
        return max(between, within)

    def drawn_range(self) -> tuple[float, float]:
        """The vertical range a small plot of the series spans: its values' range, widened around
        its middle (``DRAWN_MIDDLE``) to ``DRAWN_NOISE_SPAN`` times its noise and
        ``DRAWN_RELATIVE_FLOOR`` of its level."""
        values = self.values()
        if values.size == 0:
            return (0.0, 1.0)
        low, high = float(values.min()), float(values.max())
        least = max(DRAWN_NOISE_SPAN * self.noise(), DRAWN_RELATIVE_FLOOR * abs(float(np.median(values))))
        if high - low >= least:
            return (low, high)
        middle = (low + high) / 2
        least = least if least > 0 else 1.0
        return (middle - DRAWN_MIDDLE * least, middle + (1 - DRAWN_MIDDLE) * least)


def series_id(benchmark: str, params: Mapping[str, Any], metric: str, machine: str, target: str,
              scope: str = "") -> str:
    """A short stable name for a series (the same in every database holding its runs)."""
    parts: list[Any] = [benchmark, sorted((str(k), str(v)) for k, v in params.items()), metric, machine, target]
    if scope:
        parts.append(scope)
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:SERIES_ID_LENGTH]


def is_evidence(tags: Iterable[str]) -> bool:
    """Whether a run with ``tags`` is a conclusion's evidence rather than a point of a series."""
    return any(tag in EVIDENCE_TAGS or tag.startswith(EVIDENCE_TAG_PREFIXES) for tag in tags)


def series_scope(tags: Iterable[str]) -> str:
    """The scope a run's series is kept apart by: the watch that measured it (``watch:ID``), else ''."""
    return next((tag for tag in tags if tag.startswith(WATCH_TAG_PREFIX)), "")


def looks_like_series_id(text: str) -> bool:
    return bool(_SERIES_ID.match(text))


def target_kind(kind: str | None, accel: str | None) -> str:
    """``local``; a VM's runs are kept apart by accelerator (TCG is many times slower than KVM)."""
    if not kind:
        return "unknown"
    return f"{kind}/{accel}" if kind == "vm" and accel else kind


def build_series(
    rows: Iterable[Mapping[str, Any]], directions: Mapping[tuple[str, str], str] | None = None, *,
    evidence: bool = False,
) -> list[Series]:
    """Group point rows (``kbench.store.series``) into series, keeping the rows' order.

    A row's direction is the run's when the row is the run's primary metric, ``lower`` for
    a derived ``.cpu`` metric, else ``directions[(benchmark, metric)]`` when given. Runs that
    are a conclusion's evidence (``is_evidence``) are left out unless ``evidence``; a watch's
    runs form series of their own (``series_scope``).
    """
    found: dict[str, Series] = {}
    hostnames: dict[str, set[str]] = {}
    for row in rows:
        value = row["median"]
        if value is None or not math.isfinite(float(value)):
            continue
        tags = tuple(row.get("tags") or ())
        if not evidence and is_evidence(tags):
            continue
        machine = row.get("machine_fingerprint") or UNKNOWN_MACHINE
        target = target_kind(row.get("target_kind"), row.get("accel"))
        params = {str(k): str(v) for k, v in sorted((row.get("params") or {}).items())}
        scope = series_scope(tags)
        sid = series_id(row["benchmark"], params, row["metric"], machine, target, scope)
        series = found.get(sid)
        if series is None:
            series = found[sid] = Series(
                id=sid, benchmark=row["benchmark"], params=params, metric=row["metric"], unit=row["unit"],
                direction=_direction(row, directions), machine=row.get("hostname") or UNKNOWN_MACHINE,
                machine_fingerprint=machine, target=target, scope=scope,
            )
            hostnames.setdefault(series.machine, set()).add(machine)
        series.points.append(Point(
            run_id=int(row["run_id"]), started_at=as_utc(row["started_at"]), value=float(value),
            mean=float(row["mean"]), stdev=float(row["stdev"]), n=int(row["n"]),
            kernel=row.get("kernel_release"), commit=row.get("commit"), label=row.get("label"), tags=tags,
        ))
    names = {hostname: distinct_names(hostname, fingerprints)
             for hostname, fingerprints in hostnames.items() if len(fingerprints) > 1}
    for series in found.values():
        if series.machine in names:  # two machines of one name: say which, readably
            series.machine = names[series.machine][series.machine_fingerprint]
        series.points.sort(key=lambda p: (p.started_at, p.run_id))
    return sorted(found.values(),
                  key=lambda s: (s.benchmark, s.metric, s.describe_params(), s.machine, s.target, s.scope))


def _direction(row: Mapping[str, Any], directions: Mapping[tuple[str, str], str] | None) -> str | None:
    if row["metric"] == row.get("run_metric"):
        return str(row["run_direction"])
    if row["metric"] == f"{row['benchmark']}.cpu":
        return "lower"
    if directions is not None:
        return directions.get((row["benchmark"], row["metric"]))
    return None


def header_directions(
    headers: Mapping[int, Mapping[str, Any]], benchmark_of: Mapping[int, str]
) -> dict[tuple[str, str], str]:
    """(benchmark, metric) → direction, from the metric lists suite runs store in their headers."""
    found: dict[tuple[str, str], str] = {}
    for run_id, header in headers.items():
        for metric in header.get("metrics") or ():
            if isinstance(metric, Mapping) and metric.get("direction") in ("lower", "higher"):
                found[(benchmark_of[run_id], str(metric["name"]))] = str(metric["direction"])
    return found
