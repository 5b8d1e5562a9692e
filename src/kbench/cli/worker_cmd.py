"""``kbench worker``: make this machine a test machine of the fleet."""

from __future__ import annotations

import socket
import sys

import click

from kbench.cli.errors import user_errors
from kbench.cli.fleet_cmd import broker_option, fleet_settings
from kbench.extras import require


@click.command("worker")
@click.option("--queue", "machine_class", required=True, metavar="CLASS",
              help="The machine class this machine serves (its queue), e.g. skl-sp or ivb-desktop.")
@click.option("--name", default=socket.gethostname, show_default="the host name",
              help="The machine's name in `kbench fleet machines` (unique in the fleet).")
@click.option("--db", metavar="URL",
              help="Results database (PostgreSQL) URL without a password (default: $KBENCH_DB or the fleet config).")
@broker_option
@click.option("--allow-command", is_flag=True,
              help="Also run the `command` benchmark, i.e. any program a job names. Off by default.")
@click.option("--loglevel", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]), default="INFO",
              show_default=True)
def worker_cmd(machine_class: str, name: str, db: str | None, broker: str | None, allow_command: bool,
               loglevel: str) -> None:
    """Register this machine (its sysinfo record) and run its class's tasks one at a time,
    each exactly as `kbench run` would, storing the runs in the fleet's database.
    SIGTERM or Ctrl-C stops it after the task in hand; a second Ctrl-C at once."""
    require("fleet", "kbench worker")
    from kbench.fleet.worker import run_worker

    with user_errors():
        settings = fleet_settings(db=db, broker=broker)
        code = run_worker(settings, queue=machine_class, name=name, allow_command=allow_command, loglevel=loglevel)
    sys.exit(code)
