"""``kbench import`` of files a hostile (or unlucky) user hands it: every one is refused
with one line naming the file and the field, exit 2, nothing stored; nothing blocks or
takes unbounded memory; files that differ are never taken for one another.

The damaged files are kept in ``tests/data/hostile/`` (``recovery-valid.json`` is the
recovery file the others are damaged copies of)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from kbench.importers import MAX_TOOL_FILE_BYTES
from tests.faults.conftest import Sandbox, run_rows

HOSTILE = Path(__file__).parent.parent / "data" / "hostile"


def _one_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("kbench: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


def _hyperfine(path: Path, command: str, times: list[float]) -> Path:
    path.write_text(json.dumps({"results": [{"command": command, "mean": sum(times) / len(times), "times": times,
                                             "exit_codes": [0] * len(times)}]}))
    return path


def test_two_hyperfine_files_with_one_mtime_are_two_runs(sandbox: Sandbox) -> None:
    first = _hyperfine(sandbox.root / "a.json", "sleep 0.01", [0.011, 0.012, 0.013])
    second = _hyperfine(sandbox.root / "b.json", "sleep 0.02", [0.011, 0.012, 0.013])  # same times, other command
    os.utime(first, (1_700_000_000, 1_700_000_000))
    os.utime(second, (1_700_000_000, 1_700_000_000))
    done = sandbox.invoke("import", str(first), str(second))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{first}: hyperfine: added as run 1 (hyperfine.command, complete, 3 samples)",
        f"{second}: hyperfine: added as run 2 (hyperfine.command, complete, 3 samples)",
    ]
    # Again, in the other order, and a copy under another name and date: the content is known.
    copy = sandbox.root / "copy.json"
    shutil.copy(second, copy)
    again = sandbox.invoke("import", str(second), str(first), str(copy))
    assert [line.split(": ", 2)[2] for line in again.stdout.splitlines()] == [
        "already stored as run 2 (hyperfine.command, complete, 3 samples)",
        "already stored as run 1 (hyperfine.command, complete, 3 samples)",
        "already stored as run 2 (hyperfine.command, complete, 3 samples)",
    ]
    assert [(run_id, status, n) for run_id, status, n, _ in run_rows(sandbox.db)] == [(1, "complete", 3),
                                                                                      (2, "complete", 3)]


DAMAGED = {
    "hyperfine-memory-null.json": "results[0].memory_usage_byte[0]: an integer expected (got null)",
    "hyperfine-exit-code-1e30.json": "results[0].exit_codes[0]: an integer expected (got 1e+30)",
    "hyperfine-exit-code-nested.json": "results[0].exit_codes[0]: an integer expected (got a list)",
    "hyperfine-exit-codes-short.json": "results[0]: exit_codes has 1 values for 2 times",
    "hyperfine-times-bools.json": "results[0].times[0]: a number expected (got true)",
    "hyperfine-times-nan.json": "results[0].times[0]: a finite number expected (got nan)",
    "pyperf-values-number.json": "benchmarks[0].runs[0].values: a list expected (got 5)",
    "pyperf-unit-list.json": "benchmarks[0].metadata.unit: unknown pyperf unit []",
    "pyperf-metadata-list.json": "metadata: a mapping expected (got a list)",
    "pyperf-metadata-string.json": 'benchmarks[0].metadata: a mapping expected (got "str")',
    "recovery-columns-null.json": "result.columns: a mapping expected (got null)",
    "recovery-started-at-not-a-date.json": 'run.started_at: a date and time expected',
    "recovery-params-list.json": "run.params: a mapping expected (got a list)",
    "recovery-status-weird.json": "result.status: one of 'complete', 'interrupted', 'failed' or 'abandoned' expected",
    "recovery-count-lies.json": "result.columns.ticks: its data does not hold the 3 values of <u8 its count says",
    "recovery-data-not-base64.json": "result.columns.ticks: damaged sample data",
    "recovery-benchmark-nul.json": "run.benchmark: holds a control character",
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_file_is_one_line_naming_the_file_and_the_field(sandbox: Sandbox, name: str) -> None:
    path = HOSTILE / name
    tool = name.split("-", 1)[0]
    error = _one_line(sandbox.invoke("import", str(path)))
    assert error.startswith(f"kbench: error: {path}: damaged {tool} file: {DAMAGED[name]}"), error
    assert not sandbox.db.exists()  # nothing stored, no run left `running` (the database is not even made)


def test_the_damaged_files_are_damaged_copies_of_files_that_import(sandbox: Sandbox) -> None:
    done = sandbox.invoke("import", str(HOSTILE / "recovery-valid.json"))
    assert done.returncode == 0, done.stderr
    assert run_rows(sandbox.db) == [(1, "complete", 5, None)]


def test_a_damaged_file_among_good_ones_stores_nothing(sandbox: Sandbox) -> None:
    good = _hyperfine(sandbox.root / "good.json", "true", [0.001, 0.002])
    _one_line(sandbox.invoke("import", str(good), str(HOSTILE / "recovery-status-weird.json")))
    assert not sandbox.db.exists()


def _peak_rss_mib(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``argv`` from a fresh interpreter; its result and the peak RSS of that command."""
    report = ("import resource, subprocess, sys\n"
              "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
              "sys.stderr.write(p.stderr); sys.stdout.write(p.stdout)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
              "sys.exit(p.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", report, *argv], capture_output=True, text=True, env=env, timeout=300)
    *lines, peak_kib = proc.stdout.splitlines()
    return subprocess.CompletedProcess(argv, proc.returncode, "\n".join(lines), proc.stderr), int(peak_kib) / 1024


def test_a_gzip_bomb_is_refused_without_inflating_it(sandbox: Sandbox) -> None:
    """300 KB that inflate to 300 MiB: refused at the cap, in less memory than the inflated
    file (main took 965 MB); a kbench import of a small file peaks at about 130 MiB here."""
    bomb = sandbox.root / "bomb.json.gz"
    inflated_mib = 300
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip
    with open(bomb, "wb") as f:
        f.write(compressor.compress(b'{"results": [{"command": "'))
        block = b"a" * (1 << 20)
        for _ in range(inflated_mib):
            f.write(compressor.compress(block))
        f.write(compressor.compress(b'", "times": [1]}]}') + compressor.flush())
    assert bomb.stat().st_size < 1 << 20
    proc, peak_mib = _peak_rss_mib(sandbox.argv("import", str(bomb)), sandbox.env())
    error = _one_line(proc)
    assert f"{bomb}: inflates to more than {MAX_TOOL_FILE_BYTES >> 20} MiB (gzip)" in error
    assert peak_mib < inflated_mib - 44, f"peak RSS {peak_mib:.0f} MiB"
    assert not sandbox.db.exists()


def test_a_file_bigger_than_its_format_allows_is_refused_unread(sandbox: Sandbox) -> None:
    big = sandbox.root / "big.json"
    with open(big, "wb") as f:
        f.write(b'{"results": [{"command": "x", "times": [')
        f.truncate(MAX_TOOL_FILE_BYTES + 1)  # a sparse file: nothing written but its size
    error = _one_line(sandbox.invoke("import", str(big)))
    assert f"{big}: {MAX_TOOL_FILE_BYTES + 1:,} bytes, more than the 32 MiB a file of this format may have" in error


def test_a_fifo_and_a_device_are_refused_without_blocking(sandbox: Sandbox) -> None:
    fifo = sandbox.root / "results.json"
    os.mkfifo(fifo)
    # No writer ever opens the FIFO: reading it would block for ever (the timeout says so).
    error = _one_line(sandbox.run("import", str(fifo), timeout=120))
    assert f"{fifo}: not a regular file (a FIFO); kbench imports regular files only" in error
    error = _one_line(sandbox.run("import", "--format", "hyperfine", "/dev/zero", timeout=120))
    assert "/dev/zero: not a regular file (a character device)" in error
    assert not sandbox.db.exists()


def test_a_file_of_2000_entries_is_2000_runs_stored_once(sandbox: Sandbox) -> None:
    """2,000 entries in one file are 2,000 runs, stored together (one transaction): a
    second import finds them all. (Speed is measured by benchmarks/import_speed.py.)"""
    entries = [{"command": f"cmd {i}", "times": [0.01 + i * 1e-6, 0.02], "exit_codes": [0, 0]} for i in range(2000)]
    path = sandbox.root / "many.json"
    path.write_text(json.dumps({"results": entries}))
    first = sandbox.run("import", str(path))
    assert first.returncode == 0, first.stderr
    assert first.stdout.count(": added as run ") == 2000
    again = sandbox.run("import", str(path))
    assert again.stdout.count(": already stored as run ") == 2000
    assert len(run_rows(sandbox.db)) == 2000
