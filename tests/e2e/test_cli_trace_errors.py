"""`kbench trace` refuses bad input before any kernel boots: exit 2, a specific message, nothing stored."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import KbenchRunner
from tests.vm.guest_log import TEST_KERNEL

RELEASE = TEST_KERNEL.removeprefix("deb:")


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


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["f", "f"], "function f is listed twice: name each function once"),
        (["fib_table_lookup", "--key", "3", "--key", "3"], "key 3 is listed twice"),
    ],
)
def test_trace_of_a_guest_kernel_refuses_bad_functions_before_booting(
    db_path: Path, tmp_path: Path, names: list[str], message: str
) -> None:
    # No qemu on PATH: had kbench tried to boot, it would fail with "qemu-system-x86_64 not found".
    env = dict(os.environ, KBENCH_DB=str(db_path), PATH=str(tmp_path), COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", "trace", *names, "--kernel", f"deb:{RELEASE}",
                           "--command", "true"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split()) and "qemu" not in proc.stderr
    assert not db_path.exists() or sqlite3.connect(db_path).execute("select count(*) from runs").fetchone()[0] == 0
