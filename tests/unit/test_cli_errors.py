"""The one mapper of library exceptions to exit codes (kbench.cli.errors.user_errors)."""

from __future__ import annotations

import importlib

import pytest

from kbench.cli import exit_codes
from kbench.cli.errors import ERROR_EXITS, JOB_ERROR, ErrorExit, user_errors


def _class_of(entry: ErrorExit) -> type[BaseException]:
    found = getattr(importlib.import_module(entry.module), entry.name)
    assert isinstance(found, type) and issubclass(found, Exception), entry
    return found


@pytest.mark.parametrize("entry", [*ERROR_EXITS, JOB_ERROR], ids=lambda e: e.name)
def test_every_entry_names_an_exception_class(entry: ErrorExit) -> None:
    _class_of(entry)


@pytest.mark.parametrize("entry", ERROR_EXITS, ids=lambda e: e.name)
def test_each_late_error_ends_with_its_code_and_one_line(entry: ErrorExit, capsys: pytest.CaptureFixture[str]) -> None:
    error = _class_of(entry)("the reason")
    with pytest.raises(SystemExit) as ended, user_errors():
        raise error
    assert ended.value.code == entry.code
    assert capsys.readouterr().err.strip() == f"kbench: error: {entry.prefix}the reason"


def test_documented_codes_of_the_late_errors() -> None:
    """The codes docs/exit-codes.md gives: no such series 4, no broker 7, a kernel that does not
    compile 15, the rest usage errors."""
    codes = {entry.name: entry.code for entry in ERROR_EXITS}
    assert codes.pop("NoSuchSeries") == exit_codes.NOT_FOUND
    assert codes.pop("BrokerUnreachable") == exit_codes.BROKER_FAILED
    assert codes.pop("KernelBuildError") == exit_codes.KERNEL_BUILD_FAILED
    assert set(codes.values()) == {exit_codes.USAGE}


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
