"""The 0-Day/LKP ``%stddev %change %stddev`` table: one home for every view that prints one.

``kbench compare``'s text report, a regression's mail and its entry in ``kbench report
regressions`` all draw this table::

      6.1.0-56-amd64                 6.12.5
    ---------------- ---------------------------
             %stddev     %change         %stddev
                 \\          |                \\
       76.30ns ±  1%      +3.1%    78.66ns ±  1%  syscall.getppid.latency

Every value is printed in its unit (``kbench.report.units.format_value``: times scaled to
ns/µs/ms/s, counts with SI prefixes); ``±N%`` is the spread of the side's trials or slots in
percent, blank when it is not known; ``%change`` has one decimal. Every column is
right-aligned, so numbers line up on their last digit, and a label longer than its column is
cut with ``…`` (the lines above the table name it in full).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

STDDEV_WIDTH = 6  # " ±  4%"
MIN_VALUE_WIDTH = 10
CHANGE_WIDTH = 11  # "%change" right-aligned with room for "+1234.5%"


@dataclass(frozen=True)
class Cell:
    """One side's value as printed, and its spread in % (None: not known)."""

    text: str
    stdev_pct: float | None = None


@dataclass(frozen=True)
class Row:
    """A metric's row: the base's cell, then per new side its %change and cell (None: not measured there)."""

    name: str
    base: Cell
    new: Sequence[tuple[str, Cell] | None]


def change_text(pct: float) -> str:
    """``-3.1%`` / ``+0.4%``: always signed, one decimal; ``n/a`` when undefined."""
    return f"{pct:+.1f}%" if math.isfinite(pct) else "n/a"


def stddev_text(pct: float | None) -> str:
    """`` ±  4%`` (rounded to whole percent, LKP style) or blanks when not known."""
    if pct is None or not math.isfinite(pct):
        return " " * STDDEV_WIDTH
    return f" ±{min(pct, 999):3.0f}%"


def fitted(label: str, width: int) -> str:
    """``label``, cut to ``width`` characters with a final ``…`` when longer."""
    return label if len(label) <= width else label[: max(width - 1, 0)] + "…"


def lkp_table(base_label: str, new_labels: Sequence[str], rows: Sequence[Row]) -> list[str]:
    """The table's lines, header included (module docstring)."""
    cells = [row.base.text for row in rows] + [entry[1].text for row in rows for entry in row.new if entry]
    changes = [entry[0] for row in rows for entry in row.new if entry]
    value_width = max([MIN_VALUE_WIDTH, *(len(text) + 2 for text in cells)])
    change_width = max([CHANGE_WIDTH, *(len(text) + 4 for text in changes)])
    base_block = value_width + STDDEV_WIDTH
    new_block = change_width + value_width + STDDEV_WIDTH

    title = fitted(base_label, base_block - 1).ljust(base_block) + "".join(
        fitted(label, change_width + value_width - 1).rjust(change_width + value_width).ljust(new_block)
        for label in new_labels
    )
    rule = "-" * (base_block - 1) + " " + "".join("-" * (new_block - 1) + " " for _ in new_labels)
    names = "%stddev".rjust(base_block) + "".join(
        "%change".rjust(change_width) + "%stddev".rjust(value_width + STDDEV_WIDTH) for _ in new_labels
    )
    marks = [" "] * (base_block + new_block * len(new_labels))
    marks[value_width - 1] = "\\"  # under the last digit of each value, "|" under each change
    for i in range(len(new_labels)):
        start = base_block + i * new_block
        marks[start + change_width - 3] = "|"
        marks[start + change_width + value_width - 1] = "\\"
    lines = [title.rstrip(), rule.rstrip(), names.rstrip(), "".join(marks).rstrip()]
    for row in rows:
        line = row.base.text.rjust(value_width) + stddev_text(row.base.stdev_pct)
        for entry in row.new:
            if entry is None:
                line += " " * new_block
            else:
                change, cell = entry
                line += change.rjust(change_width) + cell.text.rjust(value_width) + stddev_text(cell.stdev_pct)
        lines.append(f"{line}  {row.name}")
    return lines
