"""``kbench-probe run --spill FILE``: the samples reach FILE as they are taken (docs/probe-format.md, "Spill").

Checked against what the probe writes at the end (``--output``), which it writes
independently of the spill: the same rows in the same order; and a probe killed with
SIGKILL leaves a spill that reads back whole, with at least every row seen in it before
the kill. (How much of a run a kill at a random moment leaves is measured by
benchmarks/spill_overhead.py: a timing figure, not a test.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

from kbench.contract.spill import read_spill, spill_head


def _output(path: Path) -> tuple[dict, np.ndarray]:
    data = path.read_bytes()
    newline = data.index(b"\n")
    header = json.loads(data[:newline])
    return header, np.frombuffer(data[newline + 1:], dtype="<u8").reshape(-1, len(header["columns"]))


def test_the_spill_holds_the_rows_of_the_output_in_order(probe: Path, tmp_path: Path) -> None:
    spill, output = tmp_path / "run.spill", tmp_path / "run.bin"
    done = subprocess.run([str(probe), "run", "command", "--param", "cmd=true", "--samples", "300",
                           "--output", str(output), "--spill", str(spill)], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    header, rows = _output(output)
    contents = read_spill(spill)
    assert contents is not None
    assert contents.rows == header["n"] == 300 and contents.dropped_bytes == 0
    assert list(contents.columns) == header["columns"] == ["ticks", "utime_ns", "stime_ns", "maxrss_kb", "gap_ticks"]
    for i, name in enumerate(header["columns"]):
        assert np.array_equal(contents.columns[name], rows[:, i]), name
    # The spill's header says what is known before the first sample, as the output does.
    spilled = contents.header
    assert spilled["spill"] is True and spilled["format"] == header["format"]
    for key in ("workload", "params", "mode", "batch", "timer", "overhead", "start_time"):
        assert spilled[key] == header[key], key
    assert "end_time" not in spilled and "usage" not in spilled


def test_a_probe_killed_with_sigkill_leaves_its_spill_whole(probe: Path, tmp_path: Path) -> None:
    spill = tmp_path / "run.spill"
    proc = subprocess.Popen([str(probe), "run", "getppid", "--duration", "60", "--output", str(tmp_path / "out"),
                             "--spill", str(spill)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while (head := spill_head(spill)) is None or head.rows == 0:  # the header, then the first second's rows
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.05)
        time.sleep(2.5)
        written_before = spill_head(spill)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert written_before is not None
    contents = read_spill(spill)
    assert contents is not None
    assert contents.rows >= written_before.rows > 0
    # Rows are whole timed samples of getppid: each a positive number of ticks.
    assert contents.columns["ticks"].size == contents.rows and np.all(contents.columns["ticks"] > 0)


def test_sequence_refuses_a_spill(probe: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(probe), "sequence", "--", "getppid", "--samples", "10", "--spill",
                           str(tmp_path / "x")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--spill applies to run only" in done.stderr


def test_an_unwritable_spill_is_a_usage_error(probe: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(probe), "run", "getppid", "--samples", "10", "--output", str(tmp_path / "o"),
                           "--spill", str(tmp_path / "no" / "such" / "dir")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--spill" in done.stderr and "No such file" in done.stderr
