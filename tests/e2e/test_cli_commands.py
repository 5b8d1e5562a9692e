"""The command line as a typist meets it: a suggestion for a mistyped command, and shell
completion of commands and benchmark names (Click's protocol: _KBENCH_COMPLETE)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def kbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def complete(*words: str) -> list[tuple[str, str]]:
    """(type, value) pairs bash completion gets for the command line ``words`` (the last is being typed)."""
    line = ["kbench", *words]
    proc = kbench(env={"_KBENCH_COMPLETE": "bash_complete", "COMP_WORDS": " ".join(line),
                       "COMP_CWORD": str(len(line) - 1)})
    assert proc.returncode == 0, proc.stderr
    return [tuple(item.split(",", 1)) for item in proc.stdout.split("\n") if item]  # type: ignore[misc]


@pytest.mark.parametrize(("typed", "meant"), [("rnu", "run"), ("histroy", "history"), ("comapre", "compare")])
def test_a_mistyped_command_gets_a_suggestion(typed: str, meant: str) -> None:
    proc = kbench(typed)
    assert proc.returncode == 2
    assert f"No such command '{typed}' (did you mean {meant}" in proc.stderr


@pytest.mark.parametrize(("args", "hint"), [
    (["run", "--sampels", "10", "syscall.getppid"], "No such option '--sampels' (did you mean --samples"),
    (["--dbb", "x", "results"], "No such option '--dbb' (did you mean --db?)"),
    (["report", "regresions"], "No such command 'regresions' (did you mean regressions?)"),
    (["run", "syscall.getpid"], "unknown benchmark 'syscall.getpid' (did you mean syscall.getppid"),
])
def test_every_did_you_mean_reads_the_same(args: list[str], hint: str) -> None:
    """Click's own wordings ("Did you mean 'x'?", "(Did you mean one of: ...)") are replaced by
    kbench's (kbench.contract.suggest.hint), for options, commands, subcommands and names alike."""
    proc = kbench(*args)
    assert proc.returncode == 2
    assert hint in proc.stderr
    assert "Did you mean" not in proc.stderr


def test_commands_and_benchmark_names_complete() -> None:
    assert ("plain", "run") in complete("ru")
    names = {value for kind, value in complete("run", "syscall.getp")}
    assert names == {"syscall.getppid"}
    listed = subprocess.run([sys.executable, "-m", "kbench.cli", "list", "--json"], capture_output=True, text=True,
                            check=True).stdout
    fib = set(re.findall(r'"(kfunc\.fib\w*)"', listed))
    assert fib and {value for _, value in complete("compare", "kfunc.fib")} == fib
    assert complete("run", "./jobs/") == [("file", "./jobs/")]  # a job file: the shell completes paths


def test_completion_scripts_exist_for_the_shells_the_readme_names() -> None:
    text = README.read_text()
    for shell in ("bash", "zsh", "fish"):
        assert f"_KBENCH_COMPLETE={shell}_source kbench" in text
        proc = kbench(env={"_KBENCH_COMPLETE": f"{shell}_source"})
        assert proc.returncode == 0 and "_KBENCH_COMPLETE" in proc.stdout, (shell, proc.stderr)
