"""Hostile inputs are refused before anything runs: exit 2, one clear line naming the
limit or the path, no database created, no process started.

These run the command in this process (``Sandbox.invoke``): nothing is started, and
an interpreter start per case would cost more than the case itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kbench.contract.limits import KFUNC, PROBE
from kbench.jobs.expand import DEFAULT_MAX_INSTANCES
from kbench.jobs.yaml_tree import MAX_DEPTH, MAX_NODES
from tests.faults.conftest import Sandbox


def _refused(proc: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr
    return proc.stderr


def _nothing_happened(sandbox: Sandbox) -> None:
    assert not sandbox.db.exists(), "the database was created"
    assert sandbox.leftovers() == []


def _job(sandbox: Sandbox, text: str) -> Path:
    path = sandbox.root / "job.yaml"
    path.write_text(text)
    return path


def _axis(name: str, count: int, start: int = 1) -> str:
    return f"{name}: [{', '.join(str(v) for v in range(start, start + count))}]\n"


def test_a_twelve_line_job_asking_for_millions_of_instances_is_refused_at_once(sandbox: Sandbox) -> None:
    job = _job(sandbox, "benchmark: syscall.getppid\n" + _axis("samples", 80) + _axis("batch", 80)
               + _axis("warmup", 1000, start=0))
    for command in (("run", str(job)), ("job", "validate", str(job)), ("job", "expand", str(job))):
        error = _refused(sandbox.invoke(*command), "6,400,000 instances", f"limit of {DEFAULT_MAX_INSTANCES:,}",
                         "--max-instances")
        assert "nothing was run" in error
    _nothing_happened(sandbox)


def test_the_matrix_cap_can_be_raised(sandbox: Sandbox) -> None:
    job = _job(sandbox, "benchmark: syscall.getppid\n" + _axis("samples", 20) + _axis("batch", 20))
    _refused(sandbox.invoke("job", "validate", str(job), "--max-instances", "399"), "400 instances")
    done = sandbox.invoke("job", "validate", str(job), "--max-instances", "400")
    assert done.returncode == 0 and "valid, 400 instances" in done.stdout


def test_deep_nesting_is_a_problem_line_not_a_recursion_error(sandbox: Sandbox) -> None:
    for depth in (MAX_DEPTH + 1, 1000, 5000):
        lists = "benchmark: syscall.getppid\nparams:\n  x: " + "[" * depth + "]" * depth + "\n"
        mappings = "benchmark: syscall.getppid\nparams: " + "{a: " * depth + "1" + "}" * depth + "\n"
        for text in (lists, mappings):
            _refused(sandbox.invoke("run", str(_job(sandbox, text))), f"nested more than {MAX_DEPTH} levels deep")
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "x: 1\n"
    _refused(sandbox.invoke("job", "validate", str(_job(sandbox, block))), f"nested more than {MAX_DEPTH} levels deep")
    _nothing_happened(sandbox)


def test_an_alias_bomb_is_refused_without_expanding_it(sandbox: Sandbox) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    job = _job(sandbox, "\n".join([*lines, "benchmark: syscall.getppid"]) + "\n")
    _refused(sandbox.invoke("run", str(job)), f"more than {MAX_NODES:,} values once its aliases")
    _nothing_happened(sandbox)


def test_a_huge_job_file_is_refused_unread(sandbox: Sandbox) -> None:
    job = _job(sandbox, "benchmark: syscall.getppid\n# " + "x" * (2 << 20) + "\n")
    _refused(sandbox.invoke("run", str(job)), "more than the limit of 1,048,576")
    _nothing_happened(sandbox)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--samples", str(10**12)), f"limit of {PROBE.max_samples:,} samples"),
        (("--samples", "1000", "--batch", str(10**12)), f"limit of {PROBE.max_batch:,} operations per sample"),
        (("--samples", "10000000", "--batch", "16777216"), f"limit of {PROBE.max_calls:,}"),
        (("--duration", "1000000000s"), "limit of 1,000,000 s (11.6 days)"),
        (("--warmup", "100000000000s"), "limit of 1,000,000 s (11.6 days)"),
        (("--cpu", "999"), "cpu 999 does not exist on this target"),
        (("--iterations", str(10**9)), "iterations"),
    ],
)
def test_out_of_bounds_requests_are_usage_errors_before_anything_runs(
    sandbox: Sandbox, args: tuple[str, ...], needle: str
) -> None:
    _refused(sandbox.invoke("run", "syscall.getppid", *args), needle)
    _nothing_happened(sandbox)


def test_kfunc_limits_are_those_of_kbench_ko(sandbox: Sandbox) -> None:
    common = ("run", "kfunc.empty", "--kernel", "deb:6.1.0-56-amd64")
    _refused(sandbox.invoke(*common, "--samples", str(KFUNC.max_samples + 1)), f"{KFUNC.max_samples:,}")
    _refused(sandbox.invoke(*common, "--samples", "1000", "--batch", str(KFUNC.max_batch + 1)), f"{KFUNC.max_batch:,}")
    _refused(sandbox.invoke(*common, "--samples", "10000000", "--batch", "128"), f"{KFUNC.max_calls:,}")
    _refused(sandbox.invoke(*common, "--cpu", "2"), "cpu 2 does not exist on this target; its usable CPUs are 0-1")
    _nothing_happened(sandbox)


def test_job_limits_name_the_line(sandbox: Sandbox) -> None:
    job = _job(sandbox, "benchmark: syscall.getppid\nsamples: 1000000000000\ncpu: 0\n")
    error = _refused(sandbox.invoke("run", str(job)), "job.yaml:2: samples: syscall.getppid: samples 1000000000000")
    assert "nothing was run" in error
    _nothing_happened(sandbox)


def test_a_local_kfunc_run_asks_before_loading_into_the_running_kernel(sandbox: Sandbox) -> None:
    done = sandbox.invoke("run", "kfunc.empty", "--samples", "100")
    _refused(done, "loads it into the running kernel", "--local-kernel", "--kernel deb:")
    job = _job(sandbox, "benchmark: kfunc.empty\nsamples: 100\n")
    _refused(sandbox.invoke("run", str(job)), "would load kbench.ko into the running kernel", "--local-kernel")
    _nothing_happened(sandbox)


def test_kmod_new_into_an_unwritable_place_is_one_line(sandbox: Sandbox) -> None:
    blocker = sandbox.root / "a-file"
    blocker.write_text("")
    done = sandbox.invoke("kmod", "new", "mybench", "--dir", str(blocker / "sub"))
    error = _refused(done, "cannot write", str(blocker))
    assert error.strip().count("\n") == 0
    assert blocker.read_text() == "" and not os.path.exists(blocker / "sub")


HOSTILE = Path(__file__).parent.parent / "data" / "hostile"


@pytest.mark.parametrize("name", ["job-nul.yaml", "job-terminal-escape.yaml"])
def test_a_control_character_in_a_job_file_is_a_problem_line_in_every_command(sandbox: Sandbox, name: str) -> None:
    job = HOSTILE / name
    line = "job-nul.yaml:2: yaml: the file holds the control character U+0000 at column 11" if name == "job-nul.yaml" \
        else "job-terminal-escape.yaml:2: yaml: the file holds the control character U+001B at column 1"
    fleet = sandbox.env(KBENCH_DB="postgresql+psycopg://kbench@127.0.0.1:9/none", KBENCH_BROKER="redis://127.0.0.1:9/0")
    for command, env in ((("job", "validate"), None), (("job", "expand"), None), (("run",), None),
                         (("fleet", "submit", "--queue", "small"), fleet)):
        error = _refused(sandbox.invoke(*command, str(job), env=env), line)
        assert "invalid job file: 1 problem; nothing was run" in error
        assert "\x00" not in error and "\x1b" not in error
    _nothing_happened(sandbox)


def test_numbers_beyond_every_limit_are_named_as_such(sandbox: Sandbox) -> None:
    error = _refused(sandbox.invoke("job", "validate", str(HOSTILE / "job-5000-digit-samples.yaml")),
                     "job-5000-digit-samples.yaml:2: samples: must be a number of at most 20 digits, "
                     "got one of 5,000 digits")
    assert "set_int_max_str_digits" not in error and len(error) < 300
    _refused(sandbox.invoke("job", "validate", str(HOSTILE / "job-duration-just-over.yaml")),
             "duration 1000000.4 s is more than the limit of 1,000,000 s (11.6 days)")
    _refused(sandbox.invoke("run", "syscall.getppid", "--duration", "1000000.5s"),
             "duration 1000000.5 s is more than the limit of 1,000,000 s")
    _nothing_happened(sandbox)


@pytest.mark.parametrize("age", ["99999999999d", "99999999999999999999w", "9" * 5000 + "h"])
def test_an_age_beyond_the_calendar_is_a_usage_error(sandbox: Sandbox, age: str) -> None:
    for command in (("history",), ("report", "regressions")):
        done = sandbox.invoke(*command, "--since", age)
        assert done.returncode == 2, done
        assert "Invalid value for '--since'" in done.stderr and "reaches back before the year 1" in done.stderr
    assert not sandbox.db.exists()


def test_tune_reset_refuses_a_state_path_that_is_a_directory(sandbox: Sandbox) -> None:
    state = sandbox.root / "tune-state"
    state.mkdir()
    error = _refused(sandbox.invoke("tune", "--reset", env=sandbox.env(KBENCH_TUNE_STATE=str(state))),
                     f"refusing the tune state file {state}: a directory; nothing was changed")
    assert error.count("\n") == 1
    assert state.is_dir() and not any(state.iterdir())


def test_tune_help_gives_the_documented_exit_status() -> None:
    from click.testing import CliRunner

    from kbench.cli.main import cli
    from kbench.exit_codes import TUNE_FAILED

    text = CliRunner().invoke(cli, ["tune", "--help"]).stdout
    assert f"Exit status {TUNE_FAILED} when a knob" in " ".join(text.split())
    assert "| 6 | `kbench tune`: a knob that exists here could not be changed |" in (
        Path(__file__).parents[2] / "docs" / "exit-codes.md").read_text()
    assert TUNE_FAILED == 6
