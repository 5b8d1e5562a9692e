"""``kbench history``: every series of stored runs with its change points."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from kbench.cli.fail_on import exit_if_found, fail_on_option
from kbench.cli.history_options import Since, detection_options, history_errors, settings_from
from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors


@click.command("history")
@click.argument("selector", required=False, metavar="[BENCH|SERIES]")
@click.option("--since", type=Since(), help="Only runs started then or later (2026-11-20, 7d, 12h).")
@click.option(
    "--last", type=click.IntRange(min=0), default=10, show_default=True,
    help="Points listed per series in the text output (0: all). --json always has all.",
)
@click.option(
    "--repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A git checkout: list the commits between the runs around each change point.",
)
@detection_options
@click.option("--json", "as_json", is_flag=True, help="Print {\"series\": [...]} with every point and change point.")
@fail_on_option
@pass_context
def history_cmd(
    ctx: Context, selector: str | None, since: datetime | None, last: int, repo: Path | None,
    window: int, max_pvalue: float, raw_values: bool, as_json: bool, fail_on: frozenset[str],
) -> None:
    """List the series of stored runs (benchmark + parameters + metric + machine + target), points
    newest last, with their change points (Apache Otava).

    BENCH is a benchmark or metric name or glob (syscall.*); SERIES is a series id from this list.
    --fail-on looks at every change point listed (narrow it with --since).
    """
    from kbench.history.analysis import analyse
    from kbench.history.load import load_series

    settings = settings_from(window, max_pvalue, raw_values)
    with user_errors(), history_errors():
        histories = analyse(load_series(ctx.reader.engine, selector, since=since), settings, repo=repo)
    if as_json:
        emit_json({"settings": settings.to_json(), "series": [h.to_json() for h in histories]})
    else:
        from kbench.report.history_text import render_history

        render_history(out_console(), histories, last)
    exit_if_found(fail_on, ((c.verdict, h.series.metric) for h in histories for c in h.change_points))
