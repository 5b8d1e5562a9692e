"""``kbench history``: every series of stored runs with its change points."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbench.cli.fail_on import exit_if_found, findings_fail_on_option
from kbench.cli.history_options import Since, detection_options, evidence_option, settings_from
from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.contract.vocabulary import IMPROVEMENT

if TYPE_CHECKING:
    from kbench.history.analysis import SeriesHistory
    from kbench.history.confirmed import Confirmation
    from kbench.history.series import Series


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
@click.option(
    "--control", metavar="BENCH|SERIES",
    help="Judge each series divided by a control measured beside it (a series id, benchmark or metric on the "
    "same machine and target, e.g. an unchanged reference build): what moves both is the machine.",
)
@detection_options
@evidence_option
@click.option("--json", "as_json", is_flag=True, help="Print {\"series\": [...]} with every point and change point.")
@findings_fail_on_option
@pass_context
def history_cmd(
    ctx: Context, selector: str | None, since: datetime | None, last: int, repo: Path | None, control: str | None,
    window: int, max_pvalue: float, raw_values: bool, evidence: bool, as_json: bool, fail_on: frozenset[str],
) -> None:
    """List the series of stored runs (benchmark + parameters + metric + machine + target), points
    newest last, with their change points (E-divisive means, t-test).

    BENCH is a benchmark or metric name or glob (syscall.*); SERIES is a series id from this list.
    --fail-on judges the series listed as `report regressions` does (narrow it with --since): the
    open regressions a watch confirmed in them, and their change points no confirmation covers.
    """
    from kbench.history.analysis import analyse
    from kbench.history.confirmed import load_confirmations
    from kbench.history.load import load_series

    settings = settings_from(window, max_pvalue, raw_values)
    notes: list[str] = []
    with user_errors():
        series = load_series(ctx.reader, selector, since=since, evidence=evidence)
        if control is not None:
            series, notes = _relative_to_control(series, load_series(ctx.reader, control, since=since,
                                                                     evidence=evidence))
        histories = analyse(series, settings, repo=repo)
        confirmations = load_confirmations(ctx.reader)
    if as_json:
        from kbench.history.regressions import history_json

        emit_json({"settings": settings.to_json(), "series": [history_json(h, confirmations) for h in histories],
                   **({"control": {"selector": control, "notes": notes}} if control is not None else {})})
    else:
        from kbench.report.history_text import render_history

        console = out_console()
        for note in notes:
            console.print(note, highlight=False, markup=False)
        render_history(console, histories, last, since, confirmations)
    if fail_on:
        exit_if_found(fail_on, _gate(histories, since, IMPROVEMENT in fail_on, confirmations))


def _gate(histories: list[SeriesHistory], since: datetime | None, improvements: bool,
          confirmations: list[Confirmation]) -> list[tuple[str, str]]:
    """What ``--fail-on`` judges: the report over the series listed (``kbench.history.regressions``)."""
    from kbench.history.regressions import regression_report

    with user_errors():
        report = regression_report(histories, {}, since=since, improvements=improvements,
                                   confirmations=confirmations)
    return report.gate()


def _relative_to_control(series: list[Series], controls: list[Series]) -> tuple[list[Series], list[str]]:
    """Each series that is not a control, divided by its control; what was left out, said."""
    from kbench.history.control import NoControl, control_for, relative_to

    control_ids = {c.id for c in controls}
    found: list[Series] = []
    notes: list[str] = []
    for one in series:
        if one.id in control_ids:
            continue
        try:
            controlled = relative_to(one, control_for(one, controls))
        except NoControl as exc:
            notes.append(f"not shown: {exc}")
            continue
        if controlled.unpaired:
            notes.append(f"{one.id} ({one.metric}): {len(controlled.unpaired)} run(s) without a control run of the "
                         f"same version left out")
        found.append(controlled.series)
    if not found:
        raise click.UsageError("--control: no series is left to show (" + "; ".join(notes or ["only controls"]) + ")")
    return found, notes
