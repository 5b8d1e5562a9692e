"""Stored runs in other tools' formats: hyperfine JSON, pyperf JSON, Go benchmark text, and a
tidy table (CSV, Parquet, JSON) with one row per run.

The runs come in ``Group``s: one per run when runs are exported one by one, one per side
when a comparison's sides (``kbench export --runs A --runs B``) are. Each writer takes the
groups and returns bytes:

- ``hyperfine``: ``{"results": [...]}`` as ``hyperfine --export-json`` writes it, a result per
  group, ``times`` in seconds (``report.interop.hyperfine``);
- ``pyperf``: a pyperf suite, a benchmark per group, a pyperf run per kbench trial
  (``report.interop.pyperf``);
- ``gobench``: Go benchmark text for ``benchstat``, a line per trial
  (``report.interop.gobench_text``);
- ``csv``, ``parquet``, ``json`` over ``--runs``: a row per run with its parameters and the
  summaries stored with it (``report.interop.tidy``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kbench.report.interop import gobench_text, hyperfine, pyperf
from kbench.report.interop.common import (
    SECONDS_PER_UNIT,
    TABLE_FORMATS,
    TOOL_FORMATS,
    ExportProblem,
    Group,
    describe,
    imported,
    seconds,
    trials,
)

__all__ = ["SECONDS_PER_UNIT", "TABLE_FORMATS", "TOOL_FORMATS", "ExportProblem", "Group", "describe", "imported",
           "seconds", "trials", "write"]


def write(fmt: str, groups: Sequence[Group]) -> bytes:
    """``groups`` in the tool format ``fmt`` (a key of TOOL_FORMATS)."""
    writers: dict[str, Callable[[Sequence[Group]], bytes]] = {
        "hyperfine": hyperfine.render, "pyperf": pyperf.render, "gobench": gobench_text.render,
    }
    if fmt not in writers:
        raise ExportProblem(f"unknown format {fmt!r}; choose one of {', '.join(TOOL_FORMATS)}")
    return writers[fmt](groups)
