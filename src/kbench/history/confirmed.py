"""Regressions ``kbench watch`` confirmed, as history's reports and the dashboard show them.

A change point of stored runs is a *candidate*: where the runs shifted, not what shifted
them. ``kbench watch`` confirms candidates by measuring the builds on either side side by
side, bisects them, and measures the culprit once more against its parent; only what
passes all of it is stored as a confirmed regression (``kbench.store.watch``). A change
point is shown as confirmed when such a regression of the same benchmark, parameters and
metric has its culprit (or, for a culprit the watch did not measure itself, the last
commit of its range) among the runs the change point could start at; otherwise it is
*suspected*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kbench.history.series import Series
from kbench.history.since import as_utc

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from kbench.store.db import Store

CONFIRMED, SUSPECTED = "confirmed", "suspected"


@dataclass(frozen=True)
class Confirmation:
    """A regression a watch confirmed: its culprit and the side-by-side measurement that verified it."""

    finding_id: int
    watch_id: int
    branch: str
    benchmark: str
    metric: str
    params: dict[str, str]
    culprit: str
    subject: str
    bad: str
    change_pct: float
    ci_pct: tuple[float, float]
    p_value: float
    status: str  # open | fixed | reverted
    fixed_in: str | None
    reverted_in: str | None
    report: str | None
    confirmed_at: datetime

    @property
    def status_text(self) -> str:
        if self.status == "fixed" and self.fixed_in:
            return f"fixed in {self.fixed_in[:12]}"
        if self.status == "reverted" and self.reverted_in:
            return f"reverted in {self.reverted_in[:12]}"
        return self.status

    def describe(self) -> str:
        """``+3.1% (CI +2.6…+3.6%, p=0.00024) against its parent, measured side by side``."""
        low, high = self.ci_pct
        ci = f"CI {low:+.1f}…{high:+.1f}%, " if math.isfinite(low) and math.isfinite(high) else ""
        return f"{self.change_pct:+.1f}% ({ci}p={self.p_value:.2g}) against its parent, measured side by side"

    def to_json(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "finding_id": self.finding_id, "watch_id": self.watch_id, "branch": self.branch,
            "culprit": {"sha": self.culprit, "subject": self.subject}, "change_pct": number(self.change_pct),
            "ci_pct": [number(self.ci_pct[0]), number(self.ci_pct[1])], "p_value": number(self.p_value),
            "status": self.status, "fixed_in": self.fixed_in, "reverted_in": self.reverted_in, "report": self.report,
            "benchmark": self.benchmark, "metric": self.metric, "params": self.params,
        }


def _verified(row: dict[str, Any]) -> dict[str, Any]:
    checks = [c for c in row.get("verification") or [] if c.get("why") == "verify"]
    return dict(checks[-1].get("verdict") or {}) if checks else {}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def load_confirmations(source: Engine | Store) -> list[Confirmation]:
    """Every regression a watch of this database confirmed (none when it has no watch tables yet)."""
    from kbench.store.series import confirmed_findings

    rows = confirmed_findings(source)
    found = []
    for row in rows:
        verdict = _verified(row)
        ci = verdict.get("ci_pct") or [math.nan, math.nan]
        found.append(Confirmation(
            finding_id=int(row["id"]), watch_id=int(row["watch_id"]), branch=str(row["branch"]),
            benchmark=str(row["benchmark"]), metric=str(row["metric"]),
            params={str(k): str(v) for k, v in dict(row["params"] or {}).items()}, culprit=str(row["culprit"]),
            subject=str(row["culprit_subject"] or ""), bad=str(row["bad"]),
            change_pct=_number(verdict.get("change_pct")), ci_pct=(_number(ci[0]), _number(ci[1])),
            p_value=_number(verdict.get("p_value")), status=str(row["status"] or "open"), fixed_in=row["fixed_in"],
            reverted_in=row["reverted_in"], report=row["report"], confirmed_at=row["updated_at"],
        ))
    return found


def of_series(series: Series, confirmations: list[Confirmation]) -> list[Confirmation]:
    """The confirmations about this series' benchmark, parameters and metric."""
    return [c for c in confirmations if c.benchmark == series.benchmark and c.metric == series.metric
            and c.params == series.params]


def culprit_index(series: Series, confirmation: Confirmation) -> int | None:
    """The first run of the series that measured the culprit (or the last commit of its range)."""
    for commit in (confirmation.culprit, confirmation.bad):
        for index, point in enumerate(series.points):
            if point.commit == commit:
                return index
    return None


def confirming(series: Series, first_index: int, last_index: int,
               confirmations: list[Confirmation]) -> Confirmation | None:
    """The confirmation whose culprit sits among runs ``first_index``..``last_index`` of ``series``."""
    for confirmation in of_series(series, confirmations):
        index = culprit_index(series, confirmation)
        if index is not None and first_index <= index <= last_index:
            return confirmation
    return None


def unmatched_confirmations(
    confirmations: Sequence[Confirmation], entries: Sequence[Any], series: Sequence[Series],
    since: datetime | None = None,
) -> list[Confirmation]:
    """The confirmations no entry shows (no change point of the stored runs sits at them), about
    one of ``series`` and confirmed at ``since`` or later; newest first."""
    shown = {entry.confirmation.finding_id for entry in entries if getattr(entry, "confirmation", None)}
    about = [c for c in confirmations if c.finding_id not in shown and any(of_series(s, [c]) for s in series)]
    if since is not None:
        about = [c for c in about if as_utc(c.confirmed_at) >= since]
    return sorted(about, key=lambda c: as_utc(c.confirmed_at), reverse=True)
