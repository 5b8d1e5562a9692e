"""Outside text never drives the terminal: a command line from an imported file, a
``--label``, a job file's value are printed literally (no rich markup read in them, no
hyperlink made of them) with their control characters written as escapes, by every
command that shows them."""

from __future__ import annotations

import io
import json
import os
import re

import pytest

from kbench.cli.console import SafeConsole
from kbench.contract.text import printable, shown
from tests.faults.conftest import Sandbox

HOSTILE_COMMAND = "[bold red]X[/]\x1b[2J[link=https://evil.example]L[/link]\x07\u202eevil\r\nnext"
"""Markup, a clear-screen, a hyperlink, a bell, a right-to-left override, a carriage return, a new line."""
ESCAPED_COMMAND = "[bold red]X[/]\\x1b[2J[link=https://evil.example]L[/link]\\x07\\u202eevil\\r\\nnext"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Any control character but tab and new line, and the bidirectional controls."""


def _no_raw_controls(*texts: str) -> None:
    for text in texts:
        found = RAW.search(text)
        assert found is None, f"raw {found.group()!r} in {text!r}"


@pytest.fixture
def imported(sandbox: Sandbox) -> Sandbox:
    """Two runs of one hostile command (one series), imported from hyperfine files."""
    for index, times in enumerate(([0.10, 0.11, 0.12], [0.20, 0.21, 0.22])):
        path = sandbox.root / f"hostile-{index}.json"
        path.write_text(json.dumps({"results": [{"command": HOSTILE_COMMAND, "times": times * 4}]}))
        os.utime(path, (1_700_000_000 + 100 * index, 1_700_000_000 + 100 * index))
        done = sandbox.run("import", str(path))
        assert done.returncode == 0, done.stderr
    return sandbox


def test_an_imported_command_is_printed_literally_by_every_command(imported: Sandbox) -> None:
    """(Data formats written to a pipe, such as ``export --format csv``, keep the text as
    it is: their readers need it; to a terminal they are escaped too.)"""
    shown_by: dict[tuple[str, ...], str] = {}
    for command in (("results",), ("show", "1"), ("history",), ("history", "--last", "0"),
                    ("report", "regressions", "--since", "3000d"), ("compare", "--runs", "1", "--runs", "2")):
        done = imported.run(*command)
        assert done.returncode == 0, (command, done.stderr)
        _no_raw_controls(done.stdout, done.stderr)
        shown_by[command] = done.stdout
    assert ESCAPED_COMMAND in shown_by[("history",)]  # markup as written, controls as escapes, on one line
    assert "\\x1b[2J" in shown_by[("show", "1")]
    assert "evil.example" not in "".join(RAW.findall(shown_by[("history",)]))


def test_a_label_is_printed_literally(sandbox: Sandbox) -> None:
    label = "[red]lab[/]\x1b]8;;https://evil.example\x07L\x1b]8;;\x07"
    done = sandbox.run("run", "syscall.getppid", "--samples", "100", "--label", label)
    assert done.returncode == 0, done.stderr
    history = sandbox.run("history", "syscall.getppid")
    assert history.returncode == 0, history.stderr
    _no_raw_controls(history.stdout, history.stderr)
    assert "[red]lab[/]\\x1b]8;;https://evil.example\\x07L\\x1b]8;;\\x07" in history.stdout


def test_an_error_naming_a_hostile_path_is_one_escaped_line(sandbox: Sandbox) -> None:
    path = sandbox.root / "results\x1b[2J[bold]x.json"
    path.write_text("not json")
    done = sandbox.invoke("import", str(path))
    assert done.returncode == 2
    _no_raw_controls(done.stderr)
    assert "results\\x1b[2J[bold]x.json: not in a format kbench can import" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_job_file_value_with_a_bidirectional_override_is_escaped(sandbox: Sandbox) -> None:
    job = sandbox.root / "job.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: \"1\u202e0\"\n", encoding="utf-8")
    done = sandbox.invoke("job", "validate", str(job))
    assert done.returncode == 2
    _no_raw_controls(done.stderr)
    assert "'1\\u202e0'" in done.stderr


def test_the_console_escapes_every_renderable_on_a_colour_terminal() -> None:
    """On a terminal rich writes its own escapes for styles; the text's own never pass."""
    from rich.table import Table
    from rich.text import Text

    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="standard", width=200)
    table = Table()
    table.add_column("command")
    table.add_row(HOSTILE_COMMAND.replace("\r\n", " "))
    console.print(HOSTILE_COMMAND.replace("\r\n", " "), highlight=False)
    console.print(Text.assemble(("bold", "bold"), " ", HOSTILE_COMMAND.replace("\r\n", " ")), highlight=False)
    console.print(table)
    written = out.getvalue()
    assert "\x1b[1m" in written  # rich's own bold
    for raw in ("\x1b[2J", "\x07", "\u202e", "\x1b]8;;https://evil.example"):
        assert raw not in written
    assert written.count("[bold red]X[/]\\x1b[2J[link=https://evil.example]") == 3


def test_printable_and_shown() -> None:
    assert printable("a\tb\nc\x1b\x9b\u2066") == "a\\tb\\nc\\x1b\\x9b\\u2066"
    assert printable("a\tb\nc\x1b", lines=True) == "a\tb\nc\\x1b"
    assert printable("plain ünïcode ✓") == "plain ünïcode ✓"
    assert shown("9" * 5000) == "'" + "9" * 58 + "… (5,002 characters)"
    assert shown(int("9" * 4000)).endswith("(4,000 characters)")
