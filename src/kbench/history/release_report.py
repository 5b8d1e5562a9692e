"""The release table as text or Markdown, and as a plot (matplotlib, one panel per series)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from kbench.history.releases import WITHIN_RUN, KernelValue, ReleaseRow

PANELS_PER_ROW = 3


def _cell(value: KernelValue | None, first: bool) -> str:
    if value is None:
        return "-"
    mark = "*" if value.basis == WITHIN_RUN else ""
    text = f"{value.relative:.1f} [{value.low:.1f}, {value.high:.1f}]{mark} ({value.runs})"
    return text + (" base" if first else "")


def render_text(rows: Sequence[ReleaseRow], kernels: Sequence[str]) -> str:
    if not rows:
        return (f"no series has runs on {kernels[0]} and on another of {', '.join(kernels[1:])}; "
                "`kbench history --json` lists the kernels of every point\n")
    header = ["series", "metric", "parameters", "machine", "target", *kernels]
    table = [header] + [
        [r.series.id, r.series.metric, r.series.describe_params(), r.series.machine, r.series.target,
         *(_cell(v, i == 0) for i, v in enumerate(r.values))]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [
        f"Release comparison: the value on each kernel relative to {kernels[0]} = 100,",
        "with 95% confidence intervals [low, high] and (runs). * the interval is the run's own median CI",
        "(one run: noise between runs not measured).",
        "",
    ]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines.append("")
    for row in rows:
        better = {"lower": " (lower is better)", "higher": " (higher is better)"}.get(row.series.direction or "", "")
        lines += [f"{sentence}{better}" for sentence in row.summaries()]
    return "\n".join(lines) + "\n"


def render_markdown(rows: Sequence[ReleaseRow], kernels: Sequence[str]) -> str:
    out = [f"# Release comparison (relative to {kernels[0]} = 100, 95% CI)\n"]
    if not rows:
        return out[0] + "\n" + render_text(rows, kernels)
    out.append("| series | metric | parameters | machine | " + " | ".join(kernels) + " |")
    out.append("|---|---|---|---|" + "---:|" * len(kernels))
    for r in rows:
        cells = " | ".join(_cell(v, i == 0) for i, v in enumerate(r.values))
        out.append(f"| `{r.series.id}` | `{r.series.metric}` | {r.series.describe_params()} | "
                   f"{r.series.machine} ({r.series.target}) | {cells} |")
    out.append("")
    out += [f"- {sentence}" for row in rows for sentence in row.summaries()]
    return "\n".join(out) + "\n"


def render_plot(rows: Sequence[ReleaseRow], kernels: Sequence[str], path: Path) -> None:
    """Bars of each kernel's relative value with its interval, a line at 100; format from the suffix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = max(len(rows), 1)
    columns = min(count, PANELS_PER_ROW)
    lines = math.ceil(count / columns)
    figure, axes = plt.subplots(lines, columns, figsize=(4.2 * columns, 3.4 * lines), squeeze=False)
    colours = plt.get_cmap("tab10")
    for panel, row in zip(axes.flat, rows, strict=False):
        present = [(i, v) for i, v in enumerate(row.values) if v is not None]
        positions = [i for i, _ in present]
        heights = [v.relative for _, v in present]
        errors = [[v.relative - v.low for _, v in present], [v.high - v.relative for _, v in present]]
        # Points with intervals, not bars: the axis is zoomed around 100 and bars would exaggerate.
        panel.plot(positions, heights, color="#9ca3af", linewidth=1, zorder=1)
        for position, height, low, high in zip(positions, heights, errors[0], errors[1], strict=True):
            panel.errorbar([position], [height], yerr=[[low], [high]], fmt="o", capsize=5, markersize=7,
                           color=colours(position % 10), zorder=2)
        panel.axhline(100.0, color="#444444", linewidth=0.8, linestyle="--")
        panel.set_xticks(range(len(kernels)), kernels, rotation=20, ha="right", fontsize=8)
        low = min(v.low for _, v in present)
        high = max(v.high for _, v in present)
        margin = max(2.0, (high - low) * 0.25)
        panel.set_ylim(max(0.0, low - margin), high + margin)
        better = {"lower": "lower is better", "higher": "higher is better"}.get(row.series.direction or "", "")
        panel.set_title(f"{row.series.metric}\n{row.series.describe_params()} · {row.series.machine}", fontsize=9)
        panel.set_ylabel(f"relative to {kernels[0]} = 100" + (f"\n({better})" if better else ""), fontsize=8)
    for panel in list(axes.flat)[len(rows):]:
        panel.set_visible(False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
