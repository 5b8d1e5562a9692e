"""What a counter is given to run, and what it is read from (kinds.instructions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import BadRequest, RunRequest
from kbench.kinds.instructions.benchmark import counted, kfunc_placeholder
from kbench.kinds.instructions.command_line import command_line, needs_shell
from kbench.kinds.instructions.pmu import instruction_count
from kbench.kinds.instructions.run import counted_request
from kbench.kinds.registry import kind_of
from kbench.targets.base import ExecutionFailed


@pytest.mark.parametrize("cmd, shell", [
    ("./loop 1000", False), ("/usr/bin/true", False), ("gzip -c big > /dev/null", True), ("a | b", True),
    ("echo $HOME", True), ("X=1 ./prog", True), ("./prog 'a b'", True), ("ls *.c", True),
])
def test_a_shell_is_used_only_for_shell_syntax(cmd: str, shell: bool) -> None:
    assert needs_shell(cmd) is shell


def test_a_program_runs_through_a_link_of_one_name(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "a-program-with-a-long-name"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    line = command_line({"cmd": "bin/a-program-with-a-long-name 1 2"}, tmp_path, scratch)
    assert line.argv == (str(scratch / "prog"), "1", "2") and not line.shell
    assert os.readlink(scratch / "prog") == str(program.resolve())
    shell = command_line({"cmd": "true | true"}, tmp_path, tmp_path)
    assert shell.argv == ("/bin/sh", "-c", "true | true") and shell.shell
    other = tmp_path / "other"
    other.mkdir()
    unsplit = command_line({"cmd": "true | true", "shell": "0"}, tmp_path, other)  # as the probe splits it
    assert unsplit.argv == (str(other / "prog"), "|", "true") and not unsplit.shell


def test_a_program_not_found_fails_like_a_shell_says(tmp_path: Path) -> None:
    with pytest.raises(ExecutionFailed, match="exit status 127"):
        command_line({"cmd": "./no-such-program"}, tmp_path, tmp_path)


def test_counted_benchmarks_are_named_after_their_metric() -> None:
    assert counted(lookup("syscall.getppid")).metric == "syscall.getppid.instructions"
    assert counted(lookup("command")).metric == "command.instructions"
    found = counted(lookup("kfunc.spin"))
    assert (found.name, found.unit, found.direction, kind_of(found).name) == (
        "kfunc.spin", "instructions", "lower", "instructions")
    assert counted(found) is found
    with pytest.raises(BadRequest, match="not suite ones"):
        counted(lookup("hackbench.pipe-process"))


def test_a_counted_request_has_a_fixed_batch_and_no_duration() -> None:
    request = counted_request(counted(lookup("syscall.getppid")), RunRequest("syscall.getppid"))
    assert request.batch == 16 and request.samples == 1000
    kfunc = counted_request(counted(kfunc_placeholder("rotmix")), RunRequest("kfunc.rotmix", batch=4))
    assert (kfunc.batch, kfunc.samples, kfunc.warmup_samples) == (4, 1000, 100)
    command = counted_request(counted(lookup("command")), RunRequest("command", samples=3))
    assert (command.batch, command.samples) == (1, 3)
    with pytest.raises(BadRequest, match="not a duration"):
        counted_request(counted(lookup("syscall.getppid")), RunRequest("syscall.getppid", duration_s=1.0))


def test_the_pmus_count_is_read_scaled_when_multiplexed() -> None:
    # docs/probe-format.md's counters object; instructions counted half the time it was enabled
    header = {"counters": {"source": "perf_event_open", "scope": "user", "events": [
        {"name": "cycles", "type": "hardware", "supported": False, "errno": 2},
        {"name": "instructions", "type": "hardware", "supported": True, "unit": "count", "value": 1000,
         "enabled_ns": 400, "running_ns": 200}]}}
    assert instruction_count(header) == (2000.0, "user")
    header["counters"]["events"][1]["supported"] = False  # type: ignore[index]
    assert instruction_count(header) is None
    assert instruction_count({}) is None
