"""``kbench history`` for a terminal: each series with a sparkline, its change points and last points."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kbench.contract.text import printable
from kbench.history.analysis import REGRESSION, ChangePoint, SeriesHistory
from kbench.history.confirmed import SUSPECTED, Confirmation
from kbench.history.regressions import shown_as
from kbench.history.rules import MIN_SEGMENT_RUNS
from kbench.report.units import format_value

SPARK = "▁▂▃▄▅▆▇█"
_STYLE = {REGRESSION: "red", "improvement": "green", "change": "yellow"}


def sparkline(values: Sequence[float] | np.ndarray[Any, Any], width: int = 40,
              span: tuple[float, float] | None = None) -> str:
    """Block characters for ``values`` (bucket means when there are more values than ``width``),
    from ``span``'s low to its high (``Series.drawn_range``: scaled to the series' noise), else
    from the values' own minimum to their maximum."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return ""
    if data.size > width:
        data = np.array([bucket.mean() for bucket in np.array_split(data, width)])
    low, high = span if span is not None else (float(data.min()), float(data.max()))
    if high <= low:
        return SPARK[len(SPARK) // 2] * data.size
    levels = np.clip(np.rint((data - low) / (high - low) * (len(SPARK) - 1)), 0, len(SPARK) - 1).astype(int)
    return "".join(SPARK[i] for i in levels)


def short(commit: str | None, length: int = 12) -> str:
    return commit[:length] if commit else "-"


def first_after(point: ChangePoint) -> str:
    """The run after the change as its user knows it: ``nightly-20 (commit 1a2b3c4d5e6f, run 53)``,
    ``commit 1a2b3c4d5e6f (run 53)``, or ``run 53`` when it was stored without a version."""
    after = point.correlated.after
    commit = f"commit {short(after.commit)}" if after.commit else ""
    if after.label:
        return f"{after.label} ({', '.join(filter(None, (commit, f'run {point.run_id}')))})"
    if commit:
        return f"{commit} (run {point.run_id})"
    return f"run {point.run_id}"


def describe_change(series_unit: str, point: ChangePoint) -> str:
    """``+3.1% regression at nightly-20 (commit 1a2b3c4d5e6f, run 123): 164.2ns → 169.3ns, p=0.0002;
    commits 1a2b..3c4d``."""
    c = point.change
    text = (
        f"{c.change_pct:+.1f}% {point.verdict} at {first_after(point)}: "
        f"{format_value(c.before.median, series_unit)} → {format_value(c.after.median, series_unit)}, "
        f"p={c.p_value:.2g}"
    )
    if point.runs_in_range > 1:
        text += f", could start at any of {point.runs_in_range} runs"
    correlated = point.correlated
    if correlated.commit_range:
        text += f"; commits {short(correlated.before.commit)}..{short(correlated.after.commit)}"
    if len(correlated.kernels) > 1:
        text += f"; kernels {correlated.kernels[0]} → {correlated.kernels[1]}"
    if len(correlated.labels) > 1:
        text += f"; labels {correlated.labels[0]} → {correlated.labels[1]}"
    return text


def render_history(console: Console, histories: Sequence[SeriesHistory], last: int,
                   since: datetime | None = None, confirmations: Sequence[Confirmation] = ()) -> None:
    """Every series: header, sparkline, change points (each as ``kbench report regressions`` states it:
    the regressions a watch confirmed there, else suspected or within noise), then its ``last`` points
    (all for 0), newest last."""
    if not histories:
        console.print(nothing_since(since) if since else "no complete runs stored yet: `kbench run …` adds them")
        return
    for number, history in enumerate(histories):
        if number:
            console.print()
        _render_series(console, history, last, confirmations)


def describe_confirmation(confirmation: Confirmation) -> str:
    """``confirmed: +4.0% regression due to 1a2b3c4d5e6f "subject", measured side by side against its
    parent (p=1e-06); open (kbench watch 1, finding 3)``: the watch's own figures, never the change point's."""
    what = "regression" if confirmation.kind == REGRESSION else "fix"
    return (f"confirmed: {confirmation.change_pct:+.1f}% {what} due to {confirmation.culprit[:12]} "
            f"\"{confirmation.subject}\", measured side by side against its parent (p={confirmation.p_value:.2g}); "
            f"{confirmation.status_text} (kbench watch {confirmation.watch_id}, finding {confirmation.finding_id})")


def nothing_since(since: datetime) -> str:
    """What an empty history since ``since`` means (a moment still to come is said to be one)."""
    later = " (that is in the future)" if since > datetime.now(UTC) else ""
    return f"no complete runs stored since {since:%Y-%m-%d %H:%M} UTC{later}"


def _render_series(console: Console, history: SeriesHistory, last: int,
                   confirmations: Sequence[Confirmation]) -> None:
    s = history.series
    better = {"lower": ", lower is better", "higher": ", higher is better"}.get(s.direction or "", "")
    # Parameters, machine and target come from outside (an imported command line, a label):
    # one printable line, never markup.
    console.print(Text.assemble(
        (s.id, "bold"),
        printable(f"  {s.metric} ({s.unit}{better})  {s.describe_params()}  on {s.machine} {s.target}"
                  + (f"  [{s.scope.replace(':', ' ')}]" if s.scope else "")),
        f" — {len(s.points)} runs",
    ), highlight=False)
    console.print(f"  {sparkline(s.values(), span=s.drawn_range())}", highlight=False)
    for point in history.change_points:
        status, found = shown_as(s, point, confirmations)
        if found:
            for confirmation in found:
                console.print(Text.assemble("  ", (printable(describe_confirmation(confirmation)),
                                                   _STYLE[point.verdict])), highlight=False)
            continue
        line = f"{status}: {describe_change(s.unit, point)}"
        console.print(Text.assemble("  ", (line, _STYLE[point.verdict] if status == SUSPECTED else "dim")),
                      highlight=False)
    for point in history.pending:
        c = point.change
        console.print(Text(f"  pending: {describe_change(s.unit, point)}; {min(c.before.n, c.after.n)} run(s) on "
                           f"one side, reported from {MIN_SEGMENT_RUNS}", style="dim"), highlight=False)
    shown = s.points if last == 0 else s.points[-last:]
    first_index = len(s.points) - len(shown)
    marks = {c.index: c for c in history.change_points}
    rows: list[list[Text]] = []
    for offset, run in enumerate(shown):
        change = marks.get(first_index + offset)
        rows.append([
            Text("▶", style=_STYLE[change.verdict]) if change else Text(), Text(str(run.run_id)),
            Text(f"{run.started_at:%Y-%m-%d %H:%M}"), Text(printable(run.kernel or "-")),
            Text(printable(short(run.commit))), Text(printable(run.label or "-")),
            Text(format_value(run.value, s.unit)),
        ])
    _print_table(console, RUN_COLUMNS, rows)


RUN_COLUMNS = ("", "run", "started (UTC)", "kernel", "commit", "label", "median")
_RIGHT = frozenset({"run", "median"})


def _print_table(console: Console, names: Sequence[str], rows: list[list[Text]]) -> None:
    """The rows under their column names, as ``Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))``
    prints them: written here as lines when they fit the console (a rich table costs about 5 ms to
    lay out, most of ``kbench history``'s own time over ten series), by rich's table when wider
    (it wraps and crops cells to the width)."""
    header = [Text(name) for name in names]
    widths = [max(cell.cell_len for cell in column) for column in zip(header, *rows, strict=True)]
    if sum(widths) + 2 * (len(widths) - 1) > console.width:
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
        for name in names:
            table.add_column(name, justify="right" if name in _RIGHT else "left")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    lines = []
    for number, row in enumerate([header, *rows]):
        line = Text(style="bold" if number == 0 else "")
        for index, (name, cell, width) in enumerate(zip(names, row, widths, strict=True)):
            pad = " " * (width - cell.cell_len)
            line.append_text(Text(pad) + cell if name in _RIGHT else cell + Text(pad))
            if index < len(names) - 1:
                line.append("  ")
        lines.append(line)
    console.print(Text("\n").join(lines), highlight=False, no_wrap=True)
