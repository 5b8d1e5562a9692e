"""Bad input gets a clear, specific message, a documented exit code, and stores nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import KbenchRunner


def _run_count(db_path: Path) -> int:
    if not db_path.exists():
        return 0
    with sqlite3.connect(db_path) as conn:
        return conn.execute("select count(*) from runs").fetchone()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "syscall.getpid"], "did you mean syscall.getppid"),
        (["run", "syscall.nosuchthing"], "unknown benchmark 'syscall.nosuchthing'"),
        (["run", "syscall.pread", "-p", "sise=4"], "has no parameter 'sise' (did you mean size"),
        (["run", "syscall.pread", "-p", "size=big"], "size must be an integer, got 'big'"),
        (["run", "syscall.getppid", "-p", "novalue"], "'novalue' is not KEY=VALUE"),
        (["run", "syscall.getppid", "--samples", "0"], "0 is not in the range x>=1"),
        (["run", "syscall.getppid", "--samples", "5", "--duration", "1s"], "not both"),
        (["run", "syscall.getppid", "--duration", "soon"], "is not a duration"),
        (["run", "syscall.getppid", "--warmup", "lots"], "neither a sample count nor a duration"),
    ],
)
def test_bad_run_input_exits_2_and_stores_nothing(
    kbench: KbenchRunner, db_path: Path, args: list[str], message: str
) -> None:
    proc = kbench(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert proc.stdout == ""
    assert _run_count(db_path) == 0


def test_probe_rejection_is_reported_and_recorded_as_failed(kbench: KbenchRunner, db_path: Path) -> None:
    # A value that passes the type check but the probe refuses (negative size).
    proc = kbench("run", "syscall.pread", "-p", "size=-5", "--samples", "10", check=False)
    assert proc.returncode == 3
    assert "size" in proc.stderr
    with sqlite3.connect(db_path) as conn:
        status, error = conn.execute("select status, error from runs").fetchone()
    assert status == "failed" and "size" in error


def test_missing_run_exits_4(kbench: KbenchRunner) -> None:
    proc = kbench("show", "999", check=False)
    assert proc.returncode == 4
    assert "no run with id 999" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "99999999999999999999"], "no run with id 99999999999999999999"),
        (["export", "99999999999999999999"], "no run with id 99999999999999999999"),
        (["show", "--", "-99999999999999999999"], "no run with id -99999999999999999999"),
        (["export", "--runs", "1,99999999999999999999"], "no run with id 99999999999999999999"),
        (["compare", "--runs", "99999999999999999999", "--runs", "1"], "no run with id 99999999999999999999"),
        (["compare", "--runs", "tag:nothing", "--runs", "1"], "no completed runs match 'tag:nothing'"),
        (["export", "--runs", "kernel:0.0.0"], "no completed runs match 'kernel:0.0.0'"),
        (["bisect", "status", "99999999999999999999"], "no bisection with id 99999999999999999999"),
    ],
)
def test_an_id_or_selector_that_names_no_run_exits_4(kbench: KbenchRunner, args: list[str], message: str) -> None:
    """A well-formed id past what a database holds, or a selector matching nothing, is "no such
    run" (4) as ``show 999`` is; a malformed one (``show abc``) is a usage error (2)."""
    kbench("run", "syscall.getppid", "--samples", "100")
    proc = kbench(*args, check=False)
    assert (proc.returncode, proc.stdout) == (4, ""), proc.stderr
    assert proc.stderr.strip() == f"kbench: error: {message}"
    assert kbench("show", "abc", check=False).returncode == 2


def test_unusable_database_exits_5(kbench: KbenchRunner, tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("this is not sqlite\n" * 100)
    proc = kbench("--db", str(not_a_db), "results", check=False)
    assert proc.returncode == 5
    assert "database" in proc.stderr
    assert not_a_db.read_text() == "this is not sqlite\n" * 100


def test_export_format_is_checked(kbench: KbenchRunner) -> None:
    proc = kbench("export", "1", "--format", "xml", check=False)
    assert proc.returncode == 2
    assert "'xml' is not one of" in proc.stderr
