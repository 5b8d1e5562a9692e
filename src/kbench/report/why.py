"""Why a run got slower than another, in the rows a 0-Day mail puts under its headline.

``why_rows(store, base_run, new_run)`` reads two stored runs and gives:

- the perf counters both counted (``kbench.profile.counters``), per operation, as
  ``perf-stat.<event>`` rows with base, %change and new (0-Day's ``perf-stat.*`` rows;
  derived IPC and miss rates too);
- the top of the profile delta when both runs have a profile (``kbench.profile.delta``):
  ``perf-profile.self.<symbol>`` / ``perf-profile.children.<symbol>`` rows with the shares
  on both sides and the change in points, largest growth first.

Renderers: ``text_lines`` (plain text, for ``kbench report regressions`` and the watch's
mails), ``markdown_lines`` and ``to_json``. Every number comes from the stored runs: the
rows can be shown again with ``kbench show RUN`` and ``kbench compare --runs A --runs B``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionReport
from kbench.profile.counters import parse_counters
from kbench.profile.delta import EMULATED_ACCEL, EMULATED_NOTE, DeltaRow, ProfileDelta, profile_delta
from kbench.profile.folded import profile_from_row
from kbench.store.db import RunNotFound, Store

PROFILE_ROWS = 5
"""Profile delta rows a mail shows (the largest growths)."""
EMULATED = f"qemu-{EMULATED_ACCEL}"


@dataclass(frozen=True)
class CounterChange:
    name: str  # the event or derived figure
    unit: str
    base: float
    new: float

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.new / self.base - 1.0) if self.base else math.nan

    def to_json(self) -> dict[str, Any]:
        change = self.change_pct
        return {"name": f"perf-stat.{self.name}", "unit": self.unit, "base": self.base, "new": self.new,
                "change_pct": change if math.isfinite(change) else None}


@dataclass(frozen=True)
class WhyRows:
    """The counters' changes and the profile delta of ``new_run`` against ``base_run``."""

    base_run: int
    new_run: int
    counters: tuple[CounterChange, ...]
    delta: ProfileDelta | None
    note: str = ""  # why the profile delta's scale is not a real CPU's (``EMULATED_NOTE``), else empty

    @property
    def empty(self) -> bool:
        return not self.counters and self.delta is None

    def profile_rows(self, count: int = PROFILE_ROWS) -> list[DeltaRow]:
        return self.delta.growth(count) if self.delta is not None else []

    def text_lines(self, profile_rows: int = PROFILE_ROWS) -> list[str]:
        """0-Day style: ``base  %change  new  perf-stat.<event>`` and ``perf-profile.*`` rows."""
        if self.empty:
            return []
        lines = [f"{'run ' + str(self.base_run):>16}  {'%change':>9}  {'run ' + str(self.new_run):>16}"]
        lines.append(f"{'-' * 16}  {'-' * 9}  {'-' * 16}")
        for row in self.counters:
            change = row.change_pct
            shown = f"{change:+8.1f}%" if math.isfinite(change) else f"{'':>9}"
            lines.append(f"{number_text(row.base):>16}  {shown}  {number_text(row.new):>16}  perf-stat.{row.name}"
                         f" ({row.unit})")
        for delta_row in self.profile_rows(profile_rows):
            noise = " ~" if delta_row.within_noise else ""
            lines.append(f"{delta_row.base_pct:16.2f}  {delta_row.change_pct:+8.2f}p  {delta_row.new_pct:16.2f}  "
                         f"perf-profile.{delta_row.kind}.{delta_row.symbol}{noise}")
        if self.delta is not None:
            lines.append(f"(perf-profile: % of {self.delta.event} samples, change in points p, ~ within sampling "
                         f"noise; {self.delta.base_samples} vs {self.delta.new_samples} samples)")
            if self.note:
                lines.append(f"({self.note})")
        return lines

    def markdown_lines(self, profile_rows: int = PROFILE_ROWS) -> list[str]:
        if self.empty:
            return []
        lines = [f"| run {self.base_run} | %change | run {self.new_run} | why |", "|---:|---:|---:|---|"]
        for row in self.counters:
            change = row.change_pct
            shown = f"{change:+.1f}%" if math.isfinite(change) else ""
            lines.append(f"| {number_text(row.base)} | {shown} | {number_text(row.new)} | `perf-stat.{row.name}` "
                         f"({row.unit}) |")
        for delta_row in self.profile_rows(profile_rows):
            lines.append(f"| {delta_row.base_pct:.2f}% | {delta_row.change_pct:+.2f} points | "
                         f"{delta_row.new_pct:.2f}% | `perf-profile.{delta_row.kind}.{delta_row.symbol}` |")
        if self.delta is not None and self.note:
            lines += ["", f"_{self.note}_"]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"base_run": self.base_run, "new_run": self.new_run,
                "counters": [row.to_json() for row in self.counters],
                "profile_delta": [row.to_dict() for row in self.profile_rows(PROFILE_ROWS)],
                "profile": None if self.delta is None else {
                    "event": self.delta.event, "base_samples": self.delta.base_samples,
                    "new_samples": self.delta.new_samples, "note": self.note or None}}


def number_text(value: float) -> str:
    """A counter's per-operation figure, in four significant digits (or scientific notation)."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return f"{value:.4g}"
    return f"{value:.3e}"


def counter_changes(base_header: dict[str, Any], new_header: dict[str, Any]) -> tuple[CounterChange, ...]:
    """The figures both runs counted, per operation, in the base's order."""
    base, new = parse_counters(base_header), parse_counters(new_header)
    if base is None or new is None:
        return ()
    before, after = base.metric_values(), new.metric_values()
    return tuple(CounterChange(name, unit, value, after[name][0])
                 for name, (value, unit, _) in before.items() if name in after)


def why_rows(store: Store, base_run: int, new_run: int) -> WhyRows | None:
    """The rows for ``new_run`` against ``base_run`` (None when either run is gone)."""
    try:
        base, new = store.get_run(base_run), store.get_run(new_run)
    except RunNotFound:
        return None
    counters = counter_changes(base.probe_header or {}, new.probe_header or {})
    profiles = [profile_from_row(store.load_profile(run)) for run in (base_run, new_run)]
    delta = None
    if profiles[0] is not None and profiles[1] is not None:
        delta = profile_delta(profiles[0], profiles[1], base_label=f"run {base_run}", new_label=f"run {new_run}")
    emulated = any(((run.sysinfo or {}).get("virtualization") or {}).get("vm") == EMULATED for run in (base, new))
    return WhyRows(base_run, new_run, counters, delta, EMULATED_NOTE if emulated and delta is not None else "")


def report_why_rows(store: Store, report: RegressionReport) -> dict[str, WhyRows]:
    """The rows of every entry, by its ``key`` (entries whose runs counted and profiled nothing have
    none): a confirmed regression's culprit against its parent in their side-by-side measurement; a
    suspected change point's first run after the change against its last run before."""
    pairs = [(c.key, c.run_ids[0], c.run_ids[-1]) for c in report.confirmed if len(c.run_ids) >= 2]
    pairs += [(e.key, e.point.correlated.before.run_id, e.point.correlated.after.run_id) for e in report.suspected]
    found = {}
    for key, base_run, new_run in pairs:
        rows = why_rows(store, base_run, new_run)
        if rows is not None and not rows.empty:
            found[key] = rows
    return found


def why_json(found: Mapping[str, WhyRows], key: str) -> dict[str, Any]:
    """The ``why`` key of an entry in ``report regressions --format json`` (nothing without rows)."""
    rows = found.get(key)
    return {"why": rows.to_json()} if rows is not None else {}


def report_json(report: RegressionReport, why: Mapping[str, WhyRows], settings: Mapping[str, Any],
                since: datetime | None, series_checked: int) -> dict[str, Any]:
    """``report regressions --format json`` and the dashboard's ``/api/regressions``: the confirmed
    regressions, then the suspected change points, each with its why rows."""
    from kbench.report.observation_summary import summary_rows

    summary = [row.to_json() for row in summary_rows(report)]
    return {
        "settings": dict(settings), "since": since.isoformat() if since else None, "series_checked": series_checked,
        "summary": report.counts(), "observation_summary": summary, "covered_change_points": report.covered,
        "quiet_change_points": report.quiet,
        "confirmed": [{**c.to_json(), "subject": subject_of(c), **why_json(why, c.key)}
                      for c in report.confirmed],
        "suspected": [{**e.to_json(), **why_json(why, e.key)} for e in report.suspected],
    }


def subject_of(confirmation: Confirmation) -> str:
    """``[kbench] [command] 9f8e7d6c5b: command.cpu +3.1% regression`` (its mail's subject)."""
    return confirmation.mail_subject()
