"""The Go benchmark export read by the real ``benchstat`` (golang.org/x/perf/cmd/benchstat).

benchstat comes from ``scripts/install-benchstat.sh`` (run by ``make deps``) in
``$KBENCH_TOOLS_BIN`` (default ~/.cache/kbench/bin) or from PATH; when it is missing and Go
is available, the test builds it there once through the Go module proxy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kbench.report.comparison import gobench
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData

BASE_GETPPID = (76.1, 76.3, 76.2, 76.5, 76.4, 76.3, 76.2, 76.4)
NEW_GETPPID = tuple(round(v * 1.05, 3) for v in BASE_GETPPID)  # 5% slower
BASE_OPS = (512000.0, 512400.0, 512900.0, 511800.0, 512300.0, 512600.0, 512100.0, 512500.0)
NEW_OPS = tuple(v * 0.9 for v in BASE_OPS)  # 10% fewer operations


def _benchstat() -> str:
    tools = Path(os.environ.get("KBENCH_TOOLS_BIN", Path.home() / ".cache" / "kbench" / "bin"))
    for candidate in (tools / "benchstat", shutil.which("benchstat")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    go = shutil.which("go")
    if go is None:
        pytest.skip("no benchstat and no Go toolchain to build it (see scripts/install-benchstat.sh)")
    tools.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(tools), GOTOOLCHAIN="auto")
    proc = subprocess.run(
        [go, "install", "golang.org/x/perf/cmd/benchstat@latest"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, f"building benchstat failed:\n{proc.stderr}"
    return str(tools / "benchstat")


def _metric(
    metric: str, unit: str, direction: str, base: tuple[float, ...], new: tuple[float, ...]
) -> MetricComparison:
    b, n = sorted(base)[len(base) // 2], sorted(new)[len(new) // 2]
    change = (n - b) / b * 100
    return MetricComparison(
        metric=metric, unit=unit, direction=direction, base=b, new=n, change_pct=change,
        ci_pct=(change - 0.5, change + 0.5), p_value=0.001,
        verdict="regression", trials=(len(base), len(new)),
        base_data=SideData(trial_statistics=base), new_data=SideData(trial_statistics=new),
    )


def test_benchstat_reads_both_sides_and_reports_the_changes(tmp_path: Path) -> None:
    report = ComparisonReport(
        title="benchstat", base_label="6.1.0-56-amd64", new_labels=("6.12.5",),
        metrics=(
            _metric("syscall.getppid.latency", "ns", "lower", BASE_GETPPID, NEW_GETPPID),
            _metric("will-it-scale.mmap1.per_process_ops", "ops", "higher", BASE_OPS, NEW_OPS),
        ),
        context={"arch": "x86_64", "cpu": "Xeon 8370C"},
    )
    base_file, new_file = gobench.write_files(report, tmp_path)
    proc = subprocess.run([_benchstat(), str(base_file), str(new_file)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "cpu: Xeon 8370C" in out and "goarch: amd64" in out
    assert "6.1.0-56-amd64.txt" in out and "6.12.5.txt" in out
    assert "sec/op" in out and "per_process_ops-ops" in out

    getppid = next(line for line in out.splitlines() if line.startswith("SyscallGetppid "))
    change = re.search(r"([+-]\d+\.\d+)% \(p=", getppid)
    assert change is not None, getppid
    assert float(change.group(1)) == pytest.approx(5.0, abs=0.1)  # slower: positive, as in the report
    assert "n=8" in getppid

    mmap = next(line for line in out.splitlines() if line.startswith("WillItScaleMmap1 "))
    change = re.search(r"([+-]\d+\.\d+)% \(p=", mmap)
    assert change is not None, mmap
    assert float(change.group(1)) == pytest.approx(-10.0, abs=0.1)
    assert report.metrics[1].change_pct < 0


def test_benchstat_reads_the_single_stream_with_a_kernel_column(tmp_path: Path) -> None:
    report = ComparisonReport(
        title="benchstat", base_label="6.1.0-56-amd64", new_labels=("6.12.5",),
        metrics=(_metric("syscall.getppid.latency", "ns", "lower", BASE_GETPPID, NEW_GETPPID),),
    )
    stream = tmp_path / "all.txt"
    stream.write_text(gobench.render(report))
    proc = subprocess.run([_benchstat(), "-col", "kernel", str(stream)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    header = next(line for line in proc.stdout.splitlines() if "6.1.0-56-amd64" in line)
    assert header.index("6.1.0-56-amd64") < header.index("6.12.5")
    getppid = next(line for line in proc.stdout.splitlines() if line.startswith("SyscallGetppid "))
    assert re.search(r"\+5\.\d+% \(p=", getppid), getppid
