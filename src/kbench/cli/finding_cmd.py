"""``kbench finding N``: a finding of ``kbench watch`` as the reports state it, and the status a person sets."""

from __future__ import annotations

import getpass
import socket
from typing import Any

import click

from kbench import exit_codes
from kbench.cli.errors import fail
from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.contract.text import printable
from kbench.contract.vocabulary import TRIAGE_STATUSES

ALIASES = {status.replace("'", "").replace(" ", "-"): status for status in TRIAGE_STATUSES}
"""``author-working-on-it`` and ``wont-fix`` for scripts and shells that quote badly."""


class TriageStatus(click.ParamType):  # type: ignore[type-arg]
    name = "status"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = " ".join(str(value).strip().lower().split())
        found = text if text in TRIAGE_STATUSES else ALIASES.get(text.replace(" ", "-"))
        if found is None:
            choices = ", ".join(f"'{s}'" for s in TRIAGE_STATUSES)
            self.fail(f"{value!r} is not a status a person sets; one of {choices} "
                      f"(or {', '.join(ALIASES)})", param, ctx)
        return found


@click.command("finding", epilog="""\b
Examples:
  kbench finding 3                                  what the watch concluded, and its log
  kbench finding 3 --status acknowledged --reason "bisected by hand too; looking"
  kbench finding 3 --status "won't fix" --reason "the test measures a debug path"
  kbench finding 3 --clear --reason "not fixed after all"
""")
@click.argument("finding_id", type=click.IntRange(min=1), metavar="N")
@click.option("--status", "status", type=TriageStatus(),
              help=f"Set the finding's status by hand: {', '.join(TRIAGE_STATUSES)}. Shown beside the watch's own "
                   "(open, fixed in, reverted in) in every view; a triaged regression no longer fails --fail-on.")
@click.option("--reason", default="", help="Why (required with --status): shown with the status.")
@click.option("--clear", is_flag=True, help="Take a status set by hand back.")
@click.option("--json", "as_json", is_flag=True, help="Print the finding as report regressions --format json does.")
@pass_context
def finding_cmd(ctx: Context, finding_id: int, status: str | None, reason: str, clear: bool, as_json: bool) -> None:
    """Show finding N of `kbench watch` (its culprit, change, status and log), or set its status by hand."""
    from kbench.history.confirmed import load_confirmations
    from kbench.store.watch import WatchStore

    if status is not None and clear:
        fail("--status and --clear contradict each other: give one", exit_codes.USAGE)
    if status is not None and not reason.strip():
        fail(f"--status {status!r} needs --reason: the report shows why beside it", exit_codes.USAGE)
    with user_errors():
        store = ctx.store if (status is not None or clear) else ctx.reader
        watches = WatchStore(store.engine)
        row = _finding_row(watches, finding_id, store.where)
        if status is not None or clear:
            if row["state"] != "confirmed" or row["kind"] != "regression":
                what = "fix" if row["kind"] == "fix" else str(row["state"])
                fail(f"finding {finding_id} is {'a confirmed ' if what == 'fix' else ''}{what}"
                     f"{': ' + str(row['reason']) if row.get('reason') else ''}; only a confirmed regression "
                     "takes a status", exit_codes.USAGE)
            watches.set_triage(finding_id, status, reason.strip(), f"{getpass.getuser()}@{socket.gethostname()}")
            row = watches.finding(finding_id)
        confirmation = next((c for c in load_confirmations(store) if c.finding_id == finding_id), None)
    data = {**(confirmation.to_json() if confirmation is not None else {}),
            "finding_id": finding_id, "state": row["state"], "kind": row["kind"], "reason": row.get("reason"),
            "log": list(row.get("log") or [])}
    if as_json:
        emit_json(data)
        return
    console = out_console()
    if confirmation is not None:
        console.print(printable(f"finding {finding_id}: {confirmation.metric} {confirmation.change_pct:+.1f}% "
                                f"{'regression' if confirmation.kind == 'regression' else 'fix'} due to "
                                f"{confirmation.culprit[:12]} (\"{confirmation.subject}\")"), highlight=False)
        console.print(printable(f"status: {confirmation.status_text}"), highlight=False)
        console.print(printable(f"measured: {confirmation.describe()}"), highlight=False)
        if confirmation.machine is not None:
            console.print(printable(f"test machine: {confirmation.machine.describe()}"), highlight=False)
    else:
        console.print(printable(f"finding {finding_id}: {row['state']} {row['kind']} of {row['metric']} "
                                f"({row['good'][:12]}..{row['bad'][:12]})"
                                + (f": {row['reason']}" if row.get("reason") else "")), highlight=False)
    for line in data["log"]:
        console.print(printable(f"  {line}"), highlight=False)


def _finding_row(watches: Any, finding_id: int, where: str) -> dict[str, Any]:
    from sqlalchemy.exc import NoResultFound, OperationalError, ProgrammingError

    try:
        return dict(watches.finding(finding_id))
    except NoResultFound:
        fail(f"no finding {finding_id} in {where}", exit_codes.NOT_FOUND)
    except (OperationalError, ProgrammingError) as exc:
        if "watch_findings" in str(exc):
            fail(f"no finding {finding_id} in {where}: no watch has stored anything there", exit_codes.NOT_FOUND)
        raise
