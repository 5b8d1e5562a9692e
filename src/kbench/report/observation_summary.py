"""The Observation Summary that opens a regression report, as 0-Day's release reports open: one row per
finding with its test indicator, report, test scenario, test machine, development base and status.

Rows come from the one ``RegressionReport`` every view reads: the confirmed regressions (their status
the watch's, with the one a person set by ``kbench finding N --status``), then the suspected change
points (status ``suspected``: nothing measured them again)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionEntry, RegressionReport

TITLE = "Observation Summary"
HEADERS = ("test indicator", "report", "test scenario", "test machine", "development base", "status")
SUSPECTED_STATUS = "suspected: not confirmed"
UNKNOWN = "?"


@dataclass(frozen=True)
class SummaryRow:
    indicator: str  # the metric
    report: str  # the entry's subject, as its mail's
    scenario: tuple[str, ...]  # "key: value" of the parameters
    machine: str
    base: str  # what the change was measured against: the branch and its last good commit
    status: str
    finding: int | None  # the finding's id (None for a suspected change point)

    def cells(self) -> tuple[str, str, str, str, str, str]:
        return (self.indicator, self.report, ", ".join(self.scenario) or "-", self.machine, self.base, self.status)

    def to_json(self) -> dict[str, Any]:
        return {"indicator": self.indicator, "report": self.report, "scenario": list(self.scenario),
                "machine": self.machine, "base": self.base, "status": self.status, "finding_id": self.finding}


def summary_rows(report: RegressionReport) -> list[SummaryRow]:
    return [*(_confirmed(c) for c in report.confirmed), *(_suspected(e) for e in report.suspected)]


def _confirmed(c: Confirmation) -> SummaryRow:
    base = f"{c.branch} at {c.good[:12]}" if c.good else c.branch
    return SummaryRow(c.metric, c.mail_subject(), tuple(f"{k}: {v}" for k, v in c.params.items()),
                      c.machine.describe() if c.machine is not None else UNKNOWN, base, c.status_text, c.finding_id)


def _suspected(entry: RegressionEntry) -> SummaryRow:
    s, before = entry.series, entry.point.correlated.before
    base = (before.label or (before.commit[:12] if before.commit else None) or before.kernel
            or f"run {before.run_id}")
    return SummaryRow(s.metric, entry.subject, tuple(f"{k}: {v}" for k, v in s.params.items()),
                      f"{entry.machine.describe()} ({s.target})", base, SUSPECTED_STATUS, None)


def text_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """The table in columns as wide as their widest cell (nothing cut: a cell is a fact)."""
    if not rows:
        return []
    table = [HEADERS, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]
    lines = [TITLE, ""]
    for i, line in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * width for width in widths))
    return lines


def markdown_lines(rows: Sequence[SummaryRow]) -> list[str]:
    if not rows:
        return []

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    return [f"## {TITLE}", "", "| " + " | ".join(h.capitalize() for h in HEADERS) + " |",
            "|" + "---|" * len(HEADERS),
            *("| " + " | ".join(cell(c) for c in row.cells()) + " |" for row in rows), ""]
