"""The one mapper of library exceptions to exit codes (kbench.cli.errors.user_errors): every
error a user can meet is a KbenchError whose class carries its code (kbench.exit_codes)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import kbench
from kbench import exit_codes
from kbench.cli.errors import user_errors
from kbench.exit_codes import KbenchError

DOCUMENTED = {
    # class (module.name) -> the code docs/exit-codes.md gives it
    "kbench.contract.benchmark.UnknownBenchmark": exit_codes.USAGE,
    "kbench.contract.benchmark.BadParameter": exit_codes.USAGE,
    "kbench.contract.request.BadRequest": exit_codes.USAGE,
    "kbench.extras.ExtraMissing": exit_codes.EXTRA_MISSING,
    "kbench.store.errors.StoreError": exit_codes.STORE_FAILED,
    "kbench.store.errors.RunNotFound": exit_codes.NOT_FOUND,
    "kbench.store.errors.BisectionNotFound": exit_codes.NOT_FOUND,
    "kbench.targets.base.TargetError": exit_codes.MEASUREMENT_FAILED,
    "kbench.targets.base.ExecutionFailed": exit_codes.EXECUTION_FAILED,
    "kbench.native.NativeToolMissing": exit_codes.MEASUREMENT_FAILED,
    "kbench.history.load.NoSuchSeries": exit_codes.NOT_FOUND,
    "kbench.history.changes.HistoryUnavailable": exit_codes.USAGE,
    "kbench.fleet.settings.SettingsError": exit_codes.USAGE,
    "kbench.fleet.plan.PlanError": exit_codes.USAGE,
    "kbench.store.fleet.MachineNameTaken": exit_codes.USAGE,
    "kbench.fleet.services.ServiceUnavailable": exit_codes.USAGE,
    "kbench.fleet.demo.DemoFailed": exit_codes.USAGE,
    "kbench.fleet.app.BrokerUnreachable": exit_codes.BROKER_FAILED,
    "kbench.kernels.errors.KernelError": exit_codes.USAGE,
    "kbench.kernels.errors.KernelSourceError": exit_codes.USAGE,
    "kbench.kernels.errors.KernelBuildError": exit_codes.KERNEL_BUILD_FAILED,
    "kbench.workspaces.WorkspaceBusy": exit_codes.USAGE,
    "kbench.jobs.problems.JobError": exit_codes.USAGE,
}


def _class(qualified: str) -> type[KbenchError]:
    module, _, name = qualified.rpartition(".")
    found = getattr(importlib.import_module(module), name)
    assert isinstance(found, type) and issubclass(found, KbenchError), qualified
    return found


@pytest.mark.parametrize("qualified", sorted(DOCUMENTED))
def test_each_error_carries_its_documented_code(qualified: str) -> None:
    assert _class(qualified).exit_code == DOCUMENTED[qualified]


def test_every_code_an_error_carries_is_documented() -> None:
    """Each code a KbenchError subclass carries (all of them, every module of kbench imported) is a
    row of docs/exit-codes.md's table."""
    for module in pkgutil.walk_packages(kbench.__path__, "kbench."):
        if module.name.startswith(("kbench.cli", "kbench.web", "kbench.fleet.tasks", "kbench.fleet.worker")):
            continue  # the command layer, and modules that need an extra's import at load time
        try:
            importlib.import_module(module.name)
        except ImportError:
            continue
    table = (Path(__file__).resolve().parents[2] / "docs" / "exit-codes.md").read_text()
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    seen: set[type[KbenchError]] = set()
    stack: list[type[KbenchError]] = [KbenchError]
    while stack:
        cls = stack.pop()
        seen.add(cls)
        stack.extend(sub for sub in cls.__subclasses__() if sub not in seen)
    assert len(seen) > len(DOCUMENTED) // 2
    assert {cls.exit_code for cls in seen} <= documented


@pytest.mark.parametrize("qualified", sorted(set(DOCUMENTED) - {"kbench.jobs.problems.JobError",
                                                                 "kbench.extras.ExtraMissing",
                                                                 "kbench.targets.base.ExecutionFailed",
                                                                 "kbench.fleet.app.SendFailed"}))
def test_each_error_ends_with_its_code_and_one_line(qualified: str, capsys: pytest.CaptureFixture[str]) -> None:
    error = _class(qualified)("the reason")
    with pytest.raises(SystemExit) as ended, user_errors():
        raise error
    assert ended.value.code == DOCUMENTED[qualified]
    prefix = "the fleet's broker is unreachable: " if qualified.endswith("BrokerUnreachable") else ""
    assert capsys.readouterr().err.strip() == f"kbench: error: {prefix}the reason"


def test_a_failed_execution_and_a_missing_extra_end_with_their_codes(capsys: pytest.CaptureFixture[str]) -> None:
    from kbench.extras import ExtraMissing
    from kbench.targets.base import ExecutionFailed

    with pytest.raises(SystemExit) as ended, user_errors():
        raise ExecutionFailed("command './prog'", "exit status 3")
    assert ended.value.code == exit_codes.EXECUTION_FAILED
    assert capsys.readouterr().err.startswith("kbench: error: command './prog' failed: exit status 3")
    with pytest.raises(SystemExit) as ended, user_errors():
        raise ExtraMissing("web", "kbench serve", "fastapi")
    assert ended.value.code == exit_codes.EXTRA_MISSING
    assert "pip install 'kbench-lab[web]'" in capsys.readouterr().err


def test_an_invalid_job_file_lists_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    from kbench.jobs.problems import JobError, JobProblem

    problems = [JobProblem("a.yaml", 2, "samples", "must be an integer >= 1, got 'x'"),
                JobProblem("a.yaml", 3, "runtim", "unknown key (did you mean runtime?)")]
    with pytest.raises(SystemExit) as ended, user_errors():
        raise JobError(problems)
    assert ended.value.code == exit_codes.USAGE
    err = capsys.readouterr().err.splitlines()
    assert err == [str(problems[0]), str(problems[1]), "kbench: error: invalid job file: 2 problems; nothing was run"]


def test_anything_else_is_raised() -> None:
    with pytest.raises(KeyError), user_errors():
        raise KeyError("a bug")
