"""``kbench export`` in other tools' formats, read back by the tools themselves: hyperfine
JSON round trip, pyperf JSON read by ``python -m pyperf stats``, Go benchmark text read by
benchstat, and the tidy CSV/Parquet table across runs (Parquet read back with pyarrow)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import KbenchRunner, as_json
from tests.e2e.test_cli_import_tools import hyperfine_json, needs_hyperfine, pyperf_json

COMPUTED = ("mean", "stddev", "median")
"""Fields hyperfine computes from the times; kbench computes them again on export."""


def _benchstat() -> str | None:
    tools = Path(os.environ.get("KBENCH_TOOLS_BIN", Path.home() / ".cache" / "kbench" / "bin"))
    for candidate in (tools / "benchstat", shutil.which("benchstat")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@needs_hyperfine
@pytest.mark.parametrize("extra", [(), ("-P", "ms", "2", "3")], ids=["commands", "parameter-scan"])
def test_hyperfine_round_trip_gives_every_field_back(
    kbench: KbenchRunner, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    original = tmp_path / "hyperfine.json"
    commands = ("sleep 0.00{ms}",) if extra else ("sleep 0.002", "sleep 0.003")
    document = hyperfine_json(original, *commands, runs=6, extra=extra)
    kbench("import", str(original))
    exported = json.loads(kbench("export", "--runs", "1,2", "--format", "hyperfine").stdout)
    assert len(exported["results"]) == len(document["results"]) == 2
    for mine, theirs in zip(exported["results"], document["results"], strict=True):
        assert list(mine) == list(theirs)  # the same fields in hyperfine's order
        for field, value in theirs.items():
            if field in COMPUTED:
                assert mine[field] == pytest.approx(value, rel=1e-12), field
            else:
                assert mine[field] == value, field
    # one run alone, to a file, is the same result
    out = tmp_path / "one.json"
    kbench("export", "2", "--format", "hyperfine", "-o", str(out))
    assert json.loads(out.read_text())["results"] == exported["results"][1:]


def test_pyperf_round_trip_is_the_same_file_and_pyperf_reads_it(kbench: KbenchRunner, tmp_path: Path) -> None:
    original = tmp_path / "timeit.json"
    document = pyperf_json(original, "sorted(range(100))")
    kbench("import", str(original))
    back = tmp_path / "back.json"
    kbench("export", "1", "--format", "pyperf", "-o", str(back))
    assert json.loads(back.read_text()) == document  # values, warm-ups, metadata: all of it
    theirs = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(original)], capture_output=True, text=True,
                            check=True, timeout=60).stdout
    mine = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(back)], capture_output=True, text=True,
                          check=True, timeout=60).stdout
    assert "Total number of values: 12" in mine
    assert mine == theirs


def test_pyperf_reads_a_kbench_run_exported_as_pyperf(kbench: KbenchRunner, tmp_path: Path) -> None:
    pytest.importorskip("pyperf")
    kbench("run", "syscall.getppid", "--samples", "500", "--json")
    shown = as_json(kbench("show", "1", "--json"))
    out = tmp_path / "getppid.json"
    kbench("export", "1", "--format", "pyperf", "-o", str(out))
    stats = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(out)], capture_output=True, text=True,
                           check=True, timeout=60).stdout
    assert "Total number of values: 500" in stats
    median = re.search(r"Median \+- MAD: +([\d.]+) ns", stats)
    assert median is not None, stats
    assert float(median.group(1)) == pytest.approx(shown["median"], rel=0.01)  # pyperf prints 3 digits


@needs_hyperfine
def test_benchstat_compares_two_sides_exported_as_go_benchmark_text(kbench: KbenchRunner, tmp_path: Path) -> None:
    benchstat = _benchstat()
    if benchstat is None:
        pytest.skip("no benchstat (scripts/install-benchstat.sh)")
    # 5 ms vs 50 ms: on a busy machine a 5 ms sleep took 19 ms +- 39 % and 'sleep 0.01' could not be
    # told from it (p=0.39); a 50 ms sleep never takes less than 50 ms, so the sides stay apart
    document = hyperfine_json(tmp_path / "h.json", "sleep 0.005", "sleep 0.05", runs=10)
    kbench("import", str(tmp_path / "h.json"))
    text = tmp_path / "sides.txt"
    kbench("export", "--runs", "1", "--runs", "2", "--format", "gobench", "-o", str(text))
    lines = text.read_text().splitlines()
    assert lines[:4] == ["goos: linux", "goarch: amd64", "pkg: kbench", "Unit ns/op better=lower assume=nothing"]
    # the sides' parameters differ (the command): the label of each side names it, the
    # benchmark line does not, so that benchstat lines the sides up
    assert lines[4] == "kbench-side: runs 1" and lines[15] == "kbench-side: runs 2"
    assert [line.split()[:2] for line in lines[5:15] + lines[16:]] == [["BenchmarkHyperfineCommand", "1"]] * 20
    proc = subprocess.run([benchstat, "-col", "kbench-side", str(text)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "sec/op" in proc.stdout
    base, new = (statistics.median(result["times"]) for result in document["results"])
    change = re.search(r"([+-]\d+\.\d+)% \(p=(\d\.\d+) n=10\)", proc.stdout)
    assert change is not None, proc.stdout
    assert float(change.group(1)) == pytest.approx((new / base - 1) * 100, abs=1.0)
    assert float(change.group(2)) < 0.01


def test_table_of_runs_as_csv_and_parquet(kbench: KbenchRunner, tmp_path: Path) -> None:
    kbench("run", "syscall.getppid", "--samples", "300", "--tag", "table")
    kbench("run", "syscall.read_devzero", "-p", "size=64", "--samples", "300", "--tag", "table")
    kbench("run", "syscall.getppid", "--samples", "300", "--tag", "other")
    rows = list(csv.DictReader(io.StringIO(kbench("export", "--runs", "tag:table", "--format", "csv").stdout)))
    assert [(row["run_id"], row["benchmark"], row["param.size"]) for row in rows] == [
        ("1", "syscall.getppid", ""), ("2", "syscall.read_devzero", "64")]
    for row in rows:
        shown = as_json(kbench("show", row["run_id"], "--json"))
        assert float(row["median"]) == shown["median"] and float(row["p99"]) == shown["p99"]
        assert int(row["n"]) == 300 and row["unit"] == "ns" and row["tags"] == "table"
        assert row["kernel_release"] == os.uname().release and row["started_at"].endswith("+00:00")
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "runs.parquet"
    kbench("export", "--runs", "tag:table", "--format", "parquet", "-o", str(out))
    table = pq.read_table(out)
    assert table.column_names == list(rows[0])
    assert table.column("run_id").to_pylist() == [1, 2]
    assert table.column("median").to_pylist() == [float(row["median"]) for row in rows]
    assert table.column("param.size").to_pylist() == [None, "64"]
    sides = list(csv.DictReader(io.StringIO(
        kbench("export", "--runs", "tag:table", "--runs", "tag:other", "--format", "csv").stdout)))
    assert [(row["side"], row["run_id"]) for row in sides] == [("runs 1,2", "1"), ("runs 1,2", "2"), ("runs 3", "3")]


def test_a_metric_that_is_not_a_time_cannot_be_written_as_hyperfine(kbench: KbenchRunner) -> None:
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed")
    kbench("run", "stress-ng.get", "-p", "timeout=1")
    proc = kbench("export", "1", "--format", "hyperfine", check=False)
    assert proc.returncode == 2
    assert "run 1 (stress-ng.get.bogo_ops_per_s) is in 'ops/s', not a time: hyperfine's format holds times" \
        in proc.stderr
    proc = kbench("export", "1", "--runs", "1", "--format", "csv", check=False)
    assert proc.returncode == 2 and "give a RUN_ID or --runs SELECTOR (not both)" in proc.stderr


def test_parquet_without_pyarrow_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from kbench.extras import ExtraMissing
    from kbench.report.interop import tidy

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(ExtraMissing, match=r"\[parquet\] extra, .*: pip install 'kbench-lab\[parquet\]'"):
        tidy.write("parquet", [])


def test_one_run_as_parquet_without_pyarrow_fails_clearly(kbench: KbenchRunner, tmp_path: Path, db_path: Path) -> None:
    kbench("run", "syscall.getppid", "--samples", "100")
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "pyarrow.py").write_text("raise ImportError('pyarrow is blocked for this test')\n")
    env = dict(os.environ, PYTHONPATH=str(blocker), KBENCH_DB=str(db_path))
    for args in (["1"], ["--runs", "1"]):
        proc = subprocess.run([sys.executable, "-m", "kbench.cli", "export", *args, "--format", "parquet", "-o",
                               str(tmp_path / "x.parquet")], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 16, proc.stderr
        assert proc.stderr == ("kbench: error: kbench export --format parquet needs kbench's [parquet] extra, which "
                               "is not installed (no module 'pyarrow'): pip install 'kbench-lab[parquet]' "
                               "(or export --format csv)\n")
        assert not (tmp_path / "x.parquet").exists()
