"""``kbench export``: a run's samples (JSON, CSV, Parquet), runs in other tools' formats
(hyperfine, pyperf, Go benchmark text), a run's profile (folded, speedscope, pprof) or counters
(perf-stat CSV), or a tidy table across runs (``--runs``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbench import exit_codes
from kbench.cli.console import write_stdout_bytes
from kbench.cli.main import Context, fail, pass_context, user_errors
from kbench.cli.outputs import output_problem
from kbench.cli.parsing import Runs
from kbench.report.export import FORMATS as SAMPLE_FORMATS
from kbench.report.interop import TABLE_FORMATS, TOOL_FORMATS
from kbench.report.profile_export import FORMATS as PROFILE_FORMATS

if TYPE_CHECKING:
    from kbench.engine.run_selection import RunSelector
    from kbench.store.db import Store

ALL_FORMATS = tuple(dict.fromkeys([*SAMPLE_FORMATS, *TOOL_FORMATS, *TABLE_FORMATS, *PROFILE_FORMATS]))
BINARY_FORMATS = ("parquet", "pprof")


@click.command("export")
@click.argument("run_id", type=int, required=False)
@click.option("--runs", "run_sets", multiple=True, type=Runs(),
              help="Runs instead of RUN_ID: ids `1,2,3`, `tag:NAME` or `kernel:RELEASE`. Once: a row (csv, "
                   "parquet, json) or an entry (hyperfine, pyperf, gobench) per run; twice or more: the sides "
                   "of a comparison, an entry per side.")
@click.option("-b", "--benchmark", help="With tag:/kernel: selectors, only runs of this benchmark.")
@click.option("--format", "fmt", type=click.Choice(ALL_FORMATS), default="json", show_default=True)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: stdout)."
)
@pass_context
def export_cmd(
    ctx: Context, run_id: int | None, run_sets: tuple[RunSelector, ...], benchmark: str | None, fmt: str,
    output: Path | None,
) -> None:
    """Export a run with all its raw samples (JSON, CSV, Parquet), runs as hyperfine JSON,
    pyperf JSON or Go benchmark text, or a table of runs (--runs).

    A run's profile goes out as folded stacks, speedscope JSON or pprof, its counters as
    perf-stat (perf stat -x, CSV).

    \b
    kbench export 12 --format csv                  every sample of run 12
    kbench export 12 --format hyperfine            run 12 as hyperfine --export-json
    kbench export 12 --format folded               run 12's profile, frame;frame;frame COUNT
    kbench export 12 --format speedscope -o p.json open it in speedscope
    kbench export 12 --format pprof -o p.pb.gz     go tool pprof -top p.pb.gz
    kbench export 12 --format perf-stat            its counters as perf stat -x, prints them
    kbench export --runs 3,4 --format pyperf       a pyperf benchmark per run
    kbench export --runs 1,2 --runs 3,4 --format gobench   benchstat -col kbench-side
    kbench export --runs tag:nightly --format csv  a row per run: parameters, summaries
    See docs/interop.md and docs/profiles.md.
    """
    if (run_id is None) == (not run_sets):
        raise click.UsageError("give a RUN_ID or --runs SELECTOR (not both)")
    if run_sets and fmt in PROFILE_FORMATS:
        raise click.UsageError(f"--format {fmt} exports one run's {'counters' if fmt == 'perf-stat' else 'profile'}: "
                               "give a RUN_ID")
    if output is None and fmt in BINARY_FORMATS and sys.stdout.isatty():
        raise click.UsageError(f"{fmt} is binary: give -o FILE")
    problem = output_problem(output) if output is not None else None
    if problem is not None:
        fail(problem, exit_codes.USAGE)
    from kbench.report.interop import ExportProblem
    from kbench.report.profile_export import NothingToExport

    try:
        with user_errors():
            data = _export(ctx, run_id, run_sets, benchmark, fmt)
    except ExportProblem as exc:
        fail(str(exc), exit_codes.USAGE)
    except NothingToExport as exc:
        fail(str(exc), exit_codes.NOT_FOUND)
    if output is None:
        write_stdout_bytes(data)
        return
    try:
        output.write_bytes(data)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", exit_codes.USAGE)


def _export(
    ctx: Context, run_id: int | None, run_sets: tuple[RunSelector, ...], benchmark: str | None, fmt: str
) -> bytes:
    from kbench.engine.stored_run import load_stored_run
    from kbench.report.interop import Group, write

    store = ctx.reader
    if run_id is not None and fmt in PROFILE_FORMATS:
        return _export_profile(store, run_id, fmt)
    if run_id is not None:
        view = load_stored_run(store, run_id)
        if fmt in TOOL_FORMATS:
            return write(fmt, [Group(f"run {run_id}", (view,))])
        from kbench.report.export import export_run

        return export_run(view, fmt, None)
    from kbench.engine.run_selection import select_runs

    sides = [select_runs(store, selector, benchmark) for selector in run_sets]
    if fmt in TOOL_FORMATS:
        if len(sides) == 1:
            groups = [Group(f"run {n}", (load_stored_run(store, n),)) for n in sides[0]]
        else:
            groups = [Group(f"runs {','.join(map(str, ids))}", tuple(load_stored_run(store, n) for n in ids), side=True)
                      for ids in sides]
        return write(fmt, groups)
    from kbench.report.interop import tidy

    labels = [f"runs {','.join(map(str, ids))}" for ids in sides for _ in ids] if len(sides) > 1 else None
    return tidy.write(fmt, [store.get_run(n) for ids in sides for n in ids], labels)


def _export_profile(store: Store, run_id: int, fmt: str) -> bytes:
    """Run ``run_id``'s profile or counters (``kbench.report.profile_export``)."""
    from kbench.profile.folded import profile_from_row
    from kbench.report.profile_export import COUNTER_FORMATS, export_counters, export_profile

    record = store.get_run(run_id)
    if fmt in COUNTER_FORMATS:
        return export_counters(fmt, run_id, record.benchmark, record.probe_header or {})
    return export_profile(fmt, run_id, record.benchmark, profile_from_row(store.load_profile(run_id)),
                          record.started_at)
