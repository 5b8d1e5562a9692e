"""Load series from the results store: which series a selector names, with all their points."""

from __future__ import annotations

import fnmatch
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kbench import exit_codes
from kbench.exit_codes import KbenchError
from kbench.history.series import Series, build_series, header_directions, looks_like_series_id
from kbench.store import series as queries

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from kbench.store.db import Store


class NoSuchSeries(KbenchError, LookupError):
    """The selector names no series in this database."""

    exit_code = exit_codes.NOT_FOUND


def load_series(
    engine: Engine | Store, selector: str | None = None, *, since: datetime | None = None, evidence: bool = False,
) -> list[Series]:
    """Every series, or those a selector names: a series id (or a prefix of 4+ characters),
    a benchmark name or glob (``syscall.*``), or a metric name or glob.

    ``since`` keeps only runs started then or later. Raises NoSuchSeries when a selector
    matches nothing. ``engine`` may be a Store (a read-only SQLite file is then read without
    SQLAlchemy) or an Engine. A conclusion's evidence (a bisection's trials, a watch's side-by-side
    comparisons: ``kbench.history.series.is_evidence``) is left out unless ``evidence``."""
    rows: list[dict[str, Any]] = []
    for benchmark in _benchmarks_to_query(selector):
        rows = queries.summary_points(engine, benchmark=benchmark, since=since)
        rows += queries.cpu_points(engine, benchmark=benchmark, since=since)
        if rows:
            break
    secondary = {
        (row["benchmark"], row["metric"]): int(row["run_id"])
        for row in rows
        if row["metric"] != row["run_metric"] and row["metric"] != f"{row['benchmark']}.cpu"
    }
    headers = queries.probe_headers(engine, sorted(set(secondary.values())))
    benchmark_of = {run_id: bench for (bench, _metric), run_id in secondary.items()}
    found = build_series(rows, header_directions(headers, benchmark_of), evidence=evidence)
    if selector:
        found = [s for s in found if _selected(s, selector)]
        if not found:
            when = f" with runs since {since:%Y-%m-%d %H:%M} UTC" if since else ""
            raise NoSuchSeries(
                f"no series matches {selector!r}{when} (a series id, benchmark or metric; see `kbench history`)"
            )
    return found


def _benchmarks_to_query(selector: str | None) -> list[str | None]:
    """Which benchmark names to ask the database for: the selector itself, else the benchmark
    of a metric name (``command.cpu`` → ``command``); everything for ids and globs."""
    if not selector or looks_like_series_id(selector) or "*" in selector or "?" in selector:
        return [None]
    return [selector, selector.rsplit(".", 1)[0]] if "." in selector else [selector]


def _selected(series: Series, selector: str) -> bool:
    if looks_like_series_id(selector) and series.id.startswith(selector):
        return True
    return any(fnmatch.fnmatchcase(name, selector) for name in (series.benchmark, series.metric))
