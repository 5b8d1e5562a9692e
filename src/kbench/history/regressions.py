"""The regression report: the regressions a watch confirmed, then the change points no confirmation
covers, 0-Day mail style. Every view of regressions (text, Markdown, HTML, JSON, the dashboard, the CI
gates) reads one ``RegressionReport``."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kbench.history.analysis import IMPROVEMENT, REGRESSION, ChangePoint, SeriesHistory
from kbench.history.confirmed import CONFIRMED, SUSPECTED, Confirmation, of_series
from kbench.history.machines import Machine
from kbench.history.series import Series
from kbench.history.since import as_utc

NOISE_FACTOR = 2.0
"""A suspected change point is shown only when its change is at least this many times the
series' own run-to-run noise (the pooled standard deviation of the runs on either side, relative
to the level before): a t-test over many runs finds shifts far smaller than anything worth a look
(+0.4 % at p = 0.0004 on a binary that never changed), and a bimodal wall time steps by 38 % at a
comment commit."""


@dataclass(frozen=True)
class RegressionEntry:
    """A *suspected* change point: where the stored runs shifted in the worse direction, that no
    confirmed finding covers. It is a candidate, not a culprit: nothing measured it again."""

    series: Series
    point: ChangePoint
    machine: Machine
    reproduce: list[str]  # command lines

    status = SUSPECTED

    @property
    def key(self) -> str:
        """The entry's key among a report's entries (``kbench.report.why``): its first run after the change."""
        return f"run:{self.point.correlated.after.run_id}"

    @property
    def subject(self) -> str:
        """``[kbench] [command] suspected: command.cpu +3.4% regression in 1a2b3c4d5e..6f7a8b9c0d``."""
        return (f"[kbench] [{self.series.benchmark}] suspected: {self.series.metric} "
                f"{self.point.change.change_pct:+.1f}% {self.point.verdict} in {self.range_name()}")

    def range_name(self) -> str:
        """Where the change could sit: ``a..b`` of commits, else labels, kernels or runs."""
        correlated = self.point.correlated
        before, after = correlated.before, correlated.after
        if correlated.commit_range:
            return f"{str(before.commit)[:10]}..{str(after.commit)[:10]}"
        if correlated.labels[1:]:
            return f"{before.label}..{after.label}"
        if correlated.kernels[1:]:
            return f"{before.kernel}..{after.kernel}"
        return f"runs {before.run_id}..{after.run_id}"

    def to_json(self) -> dict[str, Any]:
        s = self.series
        return {
            "subject": self.subject, "status": self.status, "confirmed": False,
            "series_id": s.id, "benchmark": s.benchmark, "params": s.params, "scope": s.scope or None,
            "metric": s.metric, "unit": s.unit, "direction": s.direction, "target": s.target,
            "machine": self.machine.to_json(), "change_point": self.point.to_json(),
            "noise_pct": noise_pct(self.point), "reproduce": self.reproduce,
        }


def noise_pct(point: ChangePoint) -> float:
    """The series' run-to-run noise around ``point``: the pooled standard deviation of the runs on either
    side, in % of the level before."""
    before, after = point.change.before, point.change.after
    dof = before.n + after.n - 2
    if dof <= 0 or not before.median:
        return 0.0
    pooled = math.sqrt((before.stdev**2 * (before.n - 1) + after.stdev**2 * (after.n - 1)) / dof)
    return 100.0 * pooled / abs(before.median)


def above_noise(point: ChangePoint) -> bool:
    return abs(point.change.change_pct) >= NOISE_FACTOR * noise_pct(point)


@dataclass(frozen=True)
class RegressionReport:
    """What ``report regressions`` (every format), the dashboard and the CI gates say.

    ``confirmed``: the regressions a watch confirmed (open, fixed or reverted), each stated from
    its own side-by-side measurement; ``suspected``: change points in the worse direction that no
    confirmation covers and that stand out of their series' noise; ``covered``: change points shown
    as the confirmation whose commits they hold; ``quiet``: change points within ``NOISE_FACTOR`` of
    their series' noise, not shown."""

    confirmed: list[Confirmation]
    suspected: list[RegressionEntry]
    covered: int = 0
    quiet: int = 0

    @property
    def empty(self) -> bool:
        return not self.confirmed and not self.suspected

    def counts(self) -> str:
        open_ = sum(c.is_open for c in self.confirmed)
        triaged = sum(c.is_open and c.triage is not None for c in self.confirmed)
        closed = len(self.confirmed) - open_
        text = f"{open_} open confirmed regression(s)"
        notes = [f"{triaged} of them triaged"] if triaged else []
        if closed:
            notes.append(f"{closed} more fixed or reverted")
        if notes:
            text += f" ({'; '.join(notes)})"
        return text + f" and {len(self.suspected)} suspected change point(s)"

    def gate(self) -> list[tuple[str, str]]:
        """(verdict, what) for ``--fail-on``: ``regression`` for each open confirmed regression no one has
        triaged (fixed and reverted ones pass, and so do those with a status a person set: acknowledged,
        author working on it, won't fix), ``suspected`` for each suspected regression, ``improvement``
        for suspected improvements (listed with ``--improvements``)."""
        found = [(REGRESSION, f"{c.metric} due to {c.culprit[:12]}") for c in self.confirmed if c.fails_gate]
        for entry in self.suspected:
            verdict = SUSPECTED if entry.point.verdict == REGRESSION else entry.point.verdict
            found.append((verdict, f"{entry.series.metric} in {entry.range_name()} (suspected)"))
        return found


def covers(confirmation: Confirmation, series: Series, first: int, last: int) -> bool:
    """Whether a change point whose first run after it is one of runs ``first``..``last`` of ``series``
    holds the confirmation's culprit (a regression's, or a fix's): a run of the culprit (or of the last
    commit of its range) is among them, or the confirmation's range (after ``good``, up to ``bad``)
    overlaps them."""
    if of_series(series, [confirmation]) == [] or (series.scope and series.scope != confirmation.scope):
        return False
    commits = [p.commit for p in series.points]
    if any(commits[i] in (confirmation.culprit, confirmation.bad) for i in range(max(first, 0), last + 1)):
        return True
    if confirmation.bad in commits:
        hi = commits.index(confirmation.bad)
        lo = next((i for i in range(hi, -1, -1) if commits[i] == confirmation.good), -1) if confirmation.good else -1
        return lo < last and hi >= first
    return False


WITHIN_NOISE = "within noise"


def covering(series: Series, point: ChangePoint, confirmations: Sequence[Confirmation]) -> list[Confirmation]:
    """The confirmations a change point of ``series`` is shown as (``covers``): what the watch measured
    about the commits it could start at."""
    return [c for c in confirmations if covers(c, series, point.first_index, point.last_index)]


def shown_as(series: Series, point: ChangePoint,
             confirmations: Sequence[Confirmation]) -> tuple[str, list[Confirmation]]:
    """(``confirmed`` with its confirmations, ``suspected`` or ``within noise``): how every view states a
    change point of ``series`` (history, the dashboard's series page, the report)."""
    found = covering(series, point, confirmations)
    if found:
        return CONFIRMED, found
    return (SUSPECTED if above_noise(point) else WITHIN_NOISE), []


def history_json(history: SeriesHistory, confirmations: Sequence[Confirmation], *,
                 with_points: bool = True) -> dict[str, Any]:
    """``kbench history --json``'s entry for a series (and the dashboard's): each change point with how it
    is shown (``status``) and the confirmations it is shown as (``confirmations``; ``confirmation``: the
    first, or null)."""
    data = history.to_json(with_points=with_points)
    for point, shown in zip(history.change_points, data["change_points"], strict=True):
        status, found = shown_as(history.series, point, confirmations)
        shown["status"] = status
        shown["confirmations"] = [c.to_json() for c in found]
        shown["confirmation"] = shown["confirmations"][0] if found else None
    return data


def regression_report(
    histories: Sequence[SeriesHistory], requests: Mapping[int, Mapping[str, Any]], *,
    since: datetime | None = None, improvements: bool = False, confirmations: Sequence[Confirmation] = (),
) -> RegressionReport:
    """The report over ``histories`` (``RegressionReport``): the confirmations about one of their series
    (confirmed at ``since`` or later), newest first; then the change points in the worse direction (and
    the better one with ``improvements``) whose first run after the change started at ``since`` or later,
    that no confirmation covers and that stand out of their series' noise, newest first.

    ``requests`` maps run ids to the stored ``{"request", "target"}`` of first-after runs (see
    ``wanted_runs``): they give a suspected change point's reproduce command."""
    series = [h.series for h in histories]
    about = [c for c in confirmations if c.kind == REGRESSION
             and any(of_series(s, [c]) and (not s.scope or s.scope == c.scope) for s in series)]
    if since is not None:
        about = [c for c in about if as_utc(c.confirmed_at) >= since]
    about.sort(key=lambda c: (c.is_open, as_utc(c.confirmed_at)), reverse=True)
    verdicts = {REGRESSION, IMPROVEMENT} if improvements else {REGRESSION}
    suspected, covered, quiet = [], 0, 0
    for h in histories:
        for point in h.change_points:
            if point.verdict not in verdicts or (since is not None and point.started_at < since):
                continue
            if any(covers(c, h.series, point.first_index, point.last_index) for c in confirmations):
                covered += 1
            elif not above_noise(point):
                quiet += 1
            else:
                suspected.append(RegressionEntry(h.series, point, Machine.parse(h.series.machine_fingerprint),
                                                 reproduce_lines(h.series, point, requests)))
    suspected.sort(key=lambda e: (e.point.started_at, abs(e.point.change.change_pct)), reverse=True)
    return RegressionReport(about, suspected, covered, quiet)


def wanted_runs(histories: Sequence[SeriesHistory], since: datetime | None = None) -> list[int]:
    """The first-after runs whose stored request the report needs."""
    return sorted({
        p.run_id for h in histories for p in h.change_points if since is None or p.started_at >= since
    })


def reproduce_lines(series: Series, point: ChangePoint, requests: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """``git checkout`` of the version after the change and the ``kbench run`` that measures it."""
    stored = requests.get(point.run_id, {})
    request = dict(stored.get("request") or {})
    target = dict(stored.get("target") or {})
    args = ["kbench", "run", series.benchmark]
    for key, value in series.params.items():
        args += ["-p", f"{key}={value}"]
    for option, key in (("--samples", "samples"), ("--duration", "duration_s"), ("--batch", "batch"),
                        ("--cpu", "cpu")):
        if request.get(key) is not None:
            args += [option, str(request[key])]
    if request.get("warmup_samples") is not None:
        args += ["--warmup", str(request["warmup_samples"])]
    elif request.get("warmup_duration_s") is not None:
        args += ["--warmup", f"{request['warmup_duration_s']}s"]
    if int(request.get("iterations") or 1) > 1:
        args += ["--iterations", str(request["iterations"])]
    if request.get("subtract_overhead"):
        args.append("--subtract-overhead")
    spec = (target.get("details") or {}).get("spec")
    if target.get("kind") == "vm" and spec:
        args += ["--kernel", str(spec)]
    after = point.correlated.after
    lines = []
    if after.commit:
        lines.append(f"git checkout {after.commit}")
        args += ["--commit", after.commit]
    if after.label:
        args += ["--label", after.label]
    lines.append(shlex.join(args))
    return lines
