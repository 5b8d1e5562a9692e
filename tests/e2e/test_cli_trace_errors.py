"""`kbench trace` refuses bad input before any kernel boots: exit 2, a specific message, nothing stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import KbenchRunner


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "--command", "true"], "name what to trace"),
        (["trace", "fib_table_lookup"], "either a benchmark (--during) or a command (--command)"),
        (["trace", "f", "--during", "kfunc.empty", "--command", "true"], "either a benchmark"),
        (["trace", "bad name", "--command", "true"], "'bad name' is not a kernel symbol name"),
        (["trace", "f", "--during", "kfunc.nosuch"], "unknown benchmark 'kfunc.nosuch'"),
        (["trace", "f", "--during", "hackbench.pipe-process"], "cannot be traced with --during"),
        (["trace", "f", "--during", "kfunc.kmalloc", "-p", "sise=4"], "has no parameter 'sise'"),
        (["trace", "f", "--command", "true", "--samples", "5"], "set up the --during benchmark"),
        (["trace", "f", "--command", "true", "--sum-keys", "2+2"], "two or more distinct keys"),
        (["trace", "f", "--command", "true", "--key", "4096"], "4096 is not in the range 0<=x<=4095"),
        (["trace", "f", "--command", "true", "--module", "x.c"], "does not exist"),
    ],
)
def test_bad_trace_input_exits_2_and_stores_nothing(
    kbench: KbenchRunner, db_path: Path, args: list[str], message: str
) -> None:
    proc = kbench(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert not db_path.exists() or sqlite3.connect(db_path).execute("select count(*) from runs").fetchone()[0] == 0


def test_tracing_a_kernel_that_cannot_load_kbench_ko_says_why(kbench: KbenchRunner, tmp_path: Path) -> None:
    if Path("/sys/kernel/kbench/trace").is_dir():
        pytest.skip("kbench.ko is loaded in this kernel")
    proc = kbench("trace", "fib_table_lookup", "--command", "true", check=False)
    assert proc.returncode == 3, proc.stderr
    assert "cannot trace the local kernel" in proc.stderr and "--kernel deb:" in proc.stderr
