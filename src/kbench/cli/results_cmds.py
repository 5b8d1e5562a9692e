"""``kbench show`` and ``kbench results``: read the store (``kbench export`` is in export_cmd).

Both start quickly (docs/PERFORMANCE.md): what only ``show`` needs (numpy, the kinds,
the renderings) is imported when it runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from kbench import exit_codes
from kbench.cli.main import Context, emit_json, err_console, fail, literal, out_console, pass_context, user_errors
from kbench.cli.needs import needs_extra
from kbench.report.units import format_value
from kbench.store.records import RUN_STATUSES

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun
    from kbench.profile.folded import FoldedProfile
    from kbench.store.records import RunRecord


@click.command("show")
@click.argument("run_id", type=int)
@click.option("--hist", type=click.Choice(["linear", "log2"]), default="linear", show_default=True)
@click.option("--no-hist", "no_hist", is_flag=True, help="Leave the histogram and the CDF out.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--sum-keys", "sums", multiple=True, metavar="K1+K2",
              help="Also report tracepoint keys logged one after another along one path, summed (e.g. 2+3).")
@click.option("--flame", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.svg",
              help="Write the flame graph of the run's profile (`run --profile`) to FILE.svg (interactive: "
              "click to zoom, Search).")
@click.option("--over-time", "over_time", is_flag=True,
              help="The run over time instead: chunk medians with their spread by sample and by time, and "
              "where the warm-up ends (seed 001's view).")
@click.option("--chunks", type=click.IntRange(min=1, max=1000), default=10, show_default=True,
              help="With --over-time: chunks the samples are split into.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              callback=needs_extra("plots", "kbench show --over-time --html (its plots)"),
              help="With --over-time: also write the plots and the table as a self-contained HTML page.")
@pass_context
def show_cmd(
    ctx: Context, run_id: int, hist: str, no_hist: bool, as_json: bool, sums: tuple[str, ...], flame: Path | None,
    over_time: bool, chunks: int, html_path: Path | None,
) -> None:
    """Show a stored run: summary, histogram, CDF, context, counters, profile and warnings; or,
    with --over-time, the run in chunks over its samples and its time."""
    from kbench.cli.render import render_profile, render_run
    from kbench.engine.stored_run import load_stored_run
    from kbench.profile.folded import profile_from_row
    from kbench.report.run_json import kernel_text, profile_json, run_context_json, run_json

    if html_path is not None and not over_time:
        raise click.UsageError("--html draws the run over time: give --over-time too")
    with user_errors():
        view = load_stored_run(ctx.reader, run_id)
        profile = profile_from_row(ctx.reader.load_profile(run_id))
    if flame is not None:
        _write_flame(flame, view.record, profile)
    if over_time:
        _show_over_time(view, chunks, html_path, as_json)
        return
    if sums:
        from kbench.kinds.trace.plan import parse_key_sum
        from kbench.report.trace_run import with_key_sums

        try:
            view = dataclasses.replace(
                view, measurement=with_key_sums(view.measurement, [parse_key_sum(text) for text in sums]))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--sum-keys") from None
    record = view.record
    if as_json:
        emit_json(
            run_json(
                view,
                extra={**run_context_json(record), "sysinfo": record.sysinfo, "error": record.error,
                       **profile_json(profile)},
            )
        )
        return
    console = out_console()
    target = record.target or {}
    version = "".join(f", {name} {value}" for name, value in (("commit", record.commit), ("label", record.label))
                      if value)
    console.print(
        literal(
            f"{record.benchmark}{_params_text(record.params)} on {target.get('kind', '?')} kernel "
            f"{target.get('kernel_release', '?')}{kernel_text(record.target)}{version}, "
            f"started {record.started_at:%Y-%m-%d %H:%M:%S} UTC"
        ),
        highlight=False,
    )
    if record.error:
        console.print(Text.assemble(("error:", "red"), " ", record.error), highlight=False)
    render_run(console, view, hist, histogram=not no_hist)
    render_profile(console, profile, None, run_id)


def _write_flame(path: Path, record: RunRecord, profile: FoldedProfile | None) -> None:
    from kbench import exit_codes
    from kbench.cli.main import err_console, fail
    from kbench.profile.flame import flame_svg

    if profile is None:
        fail(f"run {record.id} has no profile: measure one with `kbench run ... --profile`", exit_codes.NOT_FOUND)
    kernel = (record.target or {}).get("kernel_release", "?")
    subtitle = (f"{profile.event} at {profile.frequency_hz} Hz, {profile.samples:,} samples, "
                f"{profile.details.get('window', '')}, kernel {kernel}")
    try:
        path.write_text(flame_svg(profile, title=f"run {record.id}: {record.benchmark}", subtitle=subtitle))
    except OSError as exc:
        fail(f"--flame {path}: {exc.strerror or exc}", exit_codes.USAGE)
    err_console.print(f"wrote {path}")


def _show_over_time(view: StoredRun, chunks: int, html_path: Path | None, as_json: bool) -> None:
    from kbench.report.over_time import over_time, render_html, text_lines, to_json

    try:
        shown = over_time(view, chunks)
    except ValueError as exc:
        fail(str(exc), exit_codes.USAGE)
    if html_path is not None:
        try:
            html_path.write_text(render_html(shown))
        except OSError as exc:
            fail(f"cannot write {html_path}: {exc.strerror or exc}", exit_codes.USAGE)
        err_console.print(literal(f"wrote {html_path}"), highlight=False)
    if as_json:
        emit_json(to_json(shown))
        return
    console = out_console()
    for line in text_lines(shown):
        console.print(literal(line), highlight=False)


def _params_text(params: dict[str, object] | None) -> str:
    """A run's parameters as `` size=64 mode=thread`` ('' without any)."""
    return "".join(f" {key}={value}" for key, value in (params or {}).items())


@click.command("results")
@click.option("--benchmark", "-b", help="Benchmark name; * matches anything (syscall.*).")
@click.option("--status", type=click.Choice(list(RUN_STATUSES)))
@click.option("--kernel", "kernel_release", help="Kernel release of the target.")
@click.option("--tag", help="Only runs with this tag.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_context
def results_cmd(
    ctx: Context, benchmark: str | None, status: str | None, kernel_release: str | None,
    tag: str | None, limit: int, as_json: bool,
) -> None:
    """List stored runs, newest first."""
    with user_errors():
        rows = ctx.reader.list_runs(
            benchmark=benchmark, status=status, kernel_release=kernel_release, tag=tag, limit=limit
        )
    if as_json:
        emit_json(rows)
        return
    table = Table(box=None, pad_edge=False)
    for name in ("run", "started (UTC)", "benchmark", "parameters", "status", "n", "median", "target", "tags"):
        table.add_column(name, justify="right" if name in ("run", "n", "median") else "left")
    for row in rows:
        median = format_value(row["median"], row["unit"]) if row["median"] is not None else "-"
        target = f"{row['kind'] or '?'} {row['kernel_release'] or ''}"
        if row["accel"]:
            target += f" ({row['accel']})"
        table.add_row(
            str(row["id"]), f"{row['started_at']:%Y-%m-%d %H:%M:%S}", literal(row["benchmark"]),
            literal(_params_text(row["params"]).strip() or "-"), row["status"], str(row["n_samples"]), median,
            literal(target), literal(",".join(row["tags"] or [])),
        )
    out_console().print(table)
