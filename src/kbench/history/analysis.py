"""Series with their change points, each judged (regression, improvement) and correlated with versions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kbench.contract.json_document import utc_timestamp
from kbench.contract.vocabulary import IMPROVEMENT as IMPROVEMENT
from kbench.contract.vocabulary import REGRESSION as REGRESSION
from kbench.history.changes import Change, DetectionSettings, detect_many, winsorized
from kbench.history.rules import CANDIDATE, JudgedChange, judge
from kbench.history.series import Series
from kbench.history.versions import Correlated, correlate

CHANGE = "change"
"""A change point's verdict when its series has no known better direction."""


def verdict(direction: str | None, change_pct: float) -> str:
    """A change in the worse direction is a regression; with no known direction (or no
    relative change to judge), a change."""
    if change_pct == 0:
        return CHANGE
    if direction == "lower":
        return REGRESSION if change_pct > 0 else IMPROVEMENT
    if direction == "higher":
        return REGRESSION if change_pct < 0 else IMPROVEMENT
    return CHANGE


@dataclass(frozen=True)
class ChangePoint:
    """A change point of a series, at the most likely first run after the change.

    ``first_index``..``last_index``: the runs that could be the first after it
    (``kbench.history.rules.location_range``); ``correlated`` spans the last run before
    the first of them to the last of them, so its commits are every commit the change
    could come from. ``status``: candidate, or pending / transient (too few runs on a side)."""

    index: int
    run_id: int
    started_at: datetime
    change: Change
    verdict: str
    correlated: Correlated
    status: str = CANDIDATE
    first_index: int = -1
    last_index: int = -1

    @property
    def runs_in_range(self) -> int:
        """How many runs could be the first after the change."""
        return self.last_index - self.first_index + 1

    def to_json(self) -> dict[str, Any]:
        c = self.change
        return {
            "run_id": self.run_id, "index": self.index, "started_at": utc_timestamp(self.started_at),
            "status": self.status, "range": {"first_index": self.first_index, "last_index": self.last_index},
            "before": c.before.median, "after": c.after.median, "change_pct": c.change_pct,
            "verdict": self.verdict, "p_value": c.p_value, "confidence": 1.0 - c.p_value,
            "before_mean": c.before.mean, "after_mean": c.after.mean,
            "before_stddev": c.before.stdev, "after_stddev": c.after.stdev,
            "runs_before": c.before.n, "runs_after": c.after.n,
            "correlated": self.correlated.to_json(),
        }


@dataclass
class SeriesHistory:
    """A series and its change points, oldest first."""

    series: Series
    change_points: list[ChangePoint] = field(default_factory=list)
    pending: list[ChangePoint] = field(default_factory=list)
    """Change points with fewer than 3 runs on a side at an end of the series: not reported yet."""
    transient: list[ChangePoint] = field(default_factory=list)
    """Change points around a blip of fewer than 3 runs between two others: never reported."""

    @property
    def latest_change(self) -> ChangePoint | None:
        return self.change_points[-1] if self.change_points else None

    def to_json(self, *, with_points: bool = True) -> dict[str, Any]:
        s = self.series
        data: dict[str, Any] = {
            "id": s.id, "benchmark": s.benchmark, "params": s.params, "metric": s.metric, "unit": s.unit,
            "direction": s.direction, "machine": s.machine, "target": s.target, "scope": s.scope or None,
            "n_points": len(s.points),
        }
        if with_points:
            data["points"] = [p.to_json() for p in s.points]
        data["change_points"] = [c.to_json() for c in self.change_points]
        data["pending"] = [c.to_json() for c in self.pending]
        data["transient"] = [c.to_json() for c in self.transient]
        return data


def analyse(
    series: list[Series], settings: DetectionSettings | None = None, *, repo: Path | None = None,
    workers: int | None = None,
) -> list[SeriesHistory]:
    """Find the change points of every series (on several CPUs when there are many)."""
    settings = settings or DetectionSettings()
    changes = detect_many([s.values() for s in series], settings, workers=workers)
    return [history_of(s, found, repo, settings) for s, found in zip(series, changes, strict=True)]


def history_of(
    series: Series, changes: list[Change], repo: Path | None = None, settings: DetectionSettings | None = None,
) -> SeriesHistory:
    """The series with Otava's ``changes`` judged by ``kbench.history.rules`` (found with ``settings``)."""
    settings = settings or DetectionSettings()
    data = series.values()
    tested = winsorized(data, settings.winsorize) if settings.winsorize and data.size else data
    judged = judge(data, tested, changes, commits=[p.commit for p in series.points],
                   max_pvalue=settings.max_pvalue)
    return SeriesHistory(
        series,
        [_change_point(series, j, repo) for j in judged.candidates],
        pending=[_change_point(series, j, repo) for j in judged.pending],
        transient=[_change_point(series, j, repo) for j in judged.transient],
    )


def _change_point(series: Series, judged: JudgedChange, repo: Path | None) -> ChangePoint:
    points, c = series.points, judged.change
    return ChangePoint(
        index=c.index, run_id=points[c.index].run_id, started_at=points[c.index].started_at, change=c,
        verdict=verdict(series.direction, c.change_pct),
        correlated=correlate(points[judged.first - 1], points[judged.last], repo),
        status=judged.status, first_index=judged.first, last_index=judged.last,
    )
