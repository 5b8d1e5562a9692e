"""Every command's ``--help`` shows how it is used: at least one example line that starts
with ``kbench <that command>`` (kbench.cli.examples, or the command's own help text)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kbench.cli.examples import EXAMPLES
from kbench.cli.main import COMMANDS, cli


def _commands(group: click.Group, path: tuple[str, ...], ctx: click.Context) -> Iterator[tuple[str, ...]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, (*path, name)
        if command.hidden:
            continue
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name), ctx)


GROUPS_SHOWING_A_SUBCOMMAND = {"kmod"}
"""Whose examples include another command's line (kmod: kbench run of the module it made)."""
EVERY_COMMAND = list(_commands(cli, (), click.Context(cli, info_name="kbench")))


def test_the_walk_reaches_every_command_and_subcommand() -> None:
    assert {path[0] for path in EVERY_COMMAND} == set(COMMANDS)
    assert ("cache", "prune") in EVERY_COMMAND and ("bisect", "start") in EVERY_COMMAND


@pytest.mark.parametrize("path", EVERY_COMMAND, ids=" ".join)
def test_every_help_has_an_example_of_its_command(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="kbench", terminal_width=100)
    assert result.exit_code == 0, result.output
    prefix = " ".join(("kbench", *path))
    examples = [line.strip() for line in result.output.splitlines() if line.strip().startswith(prefix)]
    assert examples, f"`{prefix} --help` shows no example starting with {prefix!r}:\n{result.output}"
    assert all(line == prefix or line[len(prefix)] == " " for line in examples)


def _parsed(args: list[str]) -> list[str]:
    """The command path ``args`` reaches, after Click parsed every level (UsageError if it cannot)."""
    command: click.Command = cli
    ctx = cli.make_context("kbench", list(args))
    path = []
    while isinstance(command, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, sub, rest = command.resolve_command(ctx, rest)
        assert name is not None and sub is not None
        path.append(name)
        command, ctx = sub, sub.make_context(name, rest, parent=ctx)
    return path


@pytest.mark.parametrize(("path", "line"), [
    (path, line) for path, examples in EXAMPLES.items() for line, _ in examples if line.startswith("kbench ")
], ids=lambda value: value if isinstance(value, str) and not value.startswith("kbench ") else "")
def test_every_example_parses(path: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example's options and arguments exist and have valid values (Click parses it, in a
    home and directory holding the files and trees it names); nothing runs."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for tree in ("src/prog", "linux"):
        (tmp_path / tree).mkdir(parents=True, exist_ok=True)
    for name in ("mybench.c", "bench.yaml", "nightly.yaml", "job.yaml", "kernels.yaml", "results.json",
                 "examples/scaling.yaml", "examples/fleet-six.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    words = [os.path.expanduser(word) for word in shlex.split(line)[1:]]
    assert _parsed(words)[: len(path.split())] == path.split() or path in GROUPS_SHOWING_A_SUBCOMMAND
