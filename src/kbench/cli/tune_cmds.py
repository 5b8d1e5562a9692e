"""``kbench tune``: apply or revert the noise settings (governor, turbo, ASLR)."""

from __future__ import annotations

import sys

import click
from rich.text import Text

from kbench import exit_codes
from kbench.cli.main import emit_json, fail, out_console
from kbench.sysinfo.tune import (
    APPLIED,
    FAILED,
    KNOBS,
    NOT_AVAILABLE,
    RESTORED,
    TuneError,
    TuneReport,
    apply_tuning,
    reset_tuning,
)

_STYLE = {APPLIED: "green", RESTORED: "green", FAILED: "red", NOT_AVAILABLE: "dim"}


@click.command("tune")
@click.option("--reset", is_flag=True, help="Restore the values saved by the last `kbench tune`.")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option(
    "--knob", "knobs", multiple=True, type=click.Choice(list(KNOBS)),
    help="Only this knob (repeatable). Default: all.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def tune_cmd(reset: bool, dry_run: bool, knobs: tuple[str, ...], as_json: bool) -> None:
    """Set governor=performance, turbo off and ASLR off for benchmarking, or --reset.

    \b
    The previous values are saved first in $XDG_STATE_HOME/kbench/tune.json
    (env KBENCH_TUNE_STATE overrides); --reset writes them back and removes the file.
    A knob this machine lacks is reported as not available here, with the reason.
    Exit status 6 when a knob that exists could not be changed (e.g. not root),
    2 when the state file is refused (see docs/exit-codes.md).
    """
    try:
        if reset:
            report = reset_tuning(list(knobs) or None, dry_run=dry_run)
        else:
            chosen = {name: KNOBS[name].default for name in knobs} if knobs else None
            report = apply_tuning(chosen, dry_run=dry_run)
    except TuneError as exc:
        fail(str(exc), exit_codes.USAGE)
    if as_json:
        emit_json(report.to_dict())
    else:
        _render(report)
    if report.failed:
        sys.exit(exit_codes.TUNE_FAILED)


def _render(report: TuneReport) -> None:
    console = out_console()
    if report.note:
        console.print(Text(report.note), highlight=False)
    for result in report.results:
        style = _STYLE.get(result.status, "yellow")
        console.print(Text.assemble(f"{result.knob:<9} ", (f"{result.status:<18}", style), " ", result.detail),
                      highlight=False)
    if report.dry_run:
        console.print("dry run: nothing was changed", highlight=False)
    elif report.action == "apply" and any(r.status == APPLIED for r in report.results):
        console.print(Text(f"previous values saved in {report.state_path}; `kbench tune --reset` restores them"),
                      highlight=False)
