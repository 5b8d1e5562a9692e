"""``kbench import`` of files the real hyperfine and pyperf write, then ``kbench compare --runs``
on the imported runs. The tools run inside the tests."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import KbenchRunner, as_json

needs_hyperfine = pytest.mark.skipif(shutil.which("hyperfine") is None, reason="hyperfine is not installed")


def hyperfine_json(path: Path, *commands: str, runs: int = 10, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    subprocess.run(["hyperfine", "-N", "--style", "none", "--warmup", "1", "--runs", str(runs), *extra, *commands,
                    "--export-json", str(path)], check=True, capture_output=True, timeout=300)
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def pyperf_json(path: Path, statement: str) -> dict[str, Any]:
    pytest.importorskip("pyperf")
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "--processes", "4", "--values", "3", "--loops", "1000",
                    "--warmups", "1", "--quiet", "-o", str(path), statement], check=True, capture_output=True,
                   timeout=300)
    document: dict[str, Any] = json.loads(path.read_text())
    return document


@needs_hyperfine
def test_hyperfine_file_becomes_one_run_per_command_with_every_time(kbench: KbenchRunner, tmp_path: Path) -> None:
    file = tmp_path / "results.json"
    document = hyperfine_json(file, "sleep 0.005", "sleep 0.05")
    out = kbench("import", str(file)).stdout.splitlines()
    assert out == [f"{file}: hyperfine: added as run {n} (hyperfine.command, complete, 10 samples)" for n in (1, 2)]
    again = kbench("import", str(file)).stdout.splitlines()
    assert [line.split(": ")[2] for line in again] == ["already stored as run 1 (hyperfine.command, complete, "
                                                       "10 samples)", "already stored as run 2 (hyperfine.command, "
                                                       "complete, 10 samples)"]
    for run_id, result in zip((1, 2), document["results"], strict=True):
        shown = as_json(kbench("show", str(run_id), "--json"))
        assert shown["params"] == {"command": result["command"]}
        assert (shown["metric"], shown["unit"]) == ("hyperfine.command.time", "s")
        assert shown["n"] == len(result["times"]) == 10
        assert shown["median"] == pytest.approx(statistics.median(result["times"]), rel=1e-12)
        assert shown["min"] == result["min"] and shown["max"] == result["max"]
        exported = json.loads(kbench("export", str(run_id), "--format", "json").stdout)
        assert exported["samples"]["hyperfine.command.time"] == result["times"]
        assert exported["samples"]["exit_code"] == result["exit_codes"]


@needs_hyperfine
def test_compare_runs_of_two_imported_commands_finds_the_slower_one(kbench: KbenchRunner, tmp_path: Path) -> None:
    file = tmp_path / "results.json"
    document = hyperfine_json(file, "sleep 0.005", "sleep 0.05", runs=12)
    kbench("import", str(file))
    report = as_json(kbench("compare", "--runs", "1", "--runs", "2", "--json"))
    (metric,) = report["metrics"]
    base, new = (result["times"] for result in document["results"])
    # every execution is one trial: Mann-Whitney over 12 vs 12 single values
    assert metric["trials"] == {"base": 12, "new": 12}
    assert metric["base"] == pytest.approx(statistics.median(base), rel=1e-9)
    assert metric["new"] == pytest.approx(statistics.median(new), rel=1e-9)
    assert metric["change_pct"] > 100  # 5 ms against 50 ms of sleep
    if max(base) < min(new):  # 12 vs 12 without overlap: p = 2 / C(24, 12) ≈ 7e-7
        assert metric["p_value"] < 1e-4
    else:  # a loaded machine stretched a 5 ms sleep past a 50 ms one: the test is on the data it got
        assert metric["p_value"] < 0.05
    assert metric["verdict"] in ("regression", "inconclusive")


@needs_hyperfine
def test_hyperfine_parameters_become_run_parameters(kbench: KbenchRunner, tmp_path: Path) -> None:
    file = tmp_path / "scan.json"
    hyperfine_json(file, "sleep 0.00{n}", runs=3, extra=("-P", "n", "1", "2"))
    kbench("import", str(file))
    shown = [as_json(kbench("show", str(n), "--json"))["params"] for n in (1, 2)]
    assert shown == [{"command": "sleep 0.001", "n": "1"}, {"command": "sleep 0.002", "n": "2"}]


def test_pyperf_file_becomes_one_run_with_every_value_of_every_process(kbench: KbenchRunner, tmp_path: Path) -> None:
    file = tmp_path / "timeit.json"
    document = pyperf_json(file, "sum(range(50))")
    added = kbench("import", str(file)).stdout
    assert added == f"{file}: pyperf: added as run 1 (pyperf.benchmark, complete, 12 samples)\n"
    shown = as_json(kbench("show", "1", "--json"))
    runs = [run for run in document["benchmarks"][0]["runs"] if run.get("values")]
    values = [value for run in runs for value in run["values"]]
    assert len(runs) == 4 and len(values) == 12
    assert (shown["params"], shown["metric"], shown["unit"]) == ({"name": "timeit"}, "pyperf.benchmark.time", "s")
    assert shown["median"] == pytest.approx(statistics.median(values), rel=1e-12)
    exported = json.loads(kbench("export", "1", "--format", "json").stdout)
    assert exported["samples"]["pyperf.benchmark.time"] == values
    assert exported["samples"]["trial"] == [n for n, run in enumerate(document["benchmarks"][0]["runs"])
                                            for _ in run.get("values", [])]


def test_pyperf_gzip_file_is_read_too(kbench: KbenchRunner, tmp_path: Path) -> None:
    """pyperf compresses FILE.json.gz (pyperformance's usual output)."""
    pytest.importorskip("pyperf")
    file = tmp_path / "timeit.json.gz"
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "--processes", "2", "--values", "2", "--loops", "100",
                    "--quiet", "-o", str(file), "pass"], check=True, capture_output=True, timeout=300)
    assert file.read_bytes()[:2] == b"\x1f\x8b"
    added = kbench("import", str(file)).stdout
    assert added == f"{file}: pyperf: added as run 1 (pyperf.benchmark, complete, 4 samples)\n"


def test_unknown_and_damaged_files_are_refused_and_nothing_is_stored(
    kbench: KbenchRunner, tmp_path: Path, db_path: Path
) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"name": "not a benchmark file"}\n')
    proc = kbench("import", str(other), check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"kbench: error: {other}: not in a format kbench can import: it is none of "
                                  "recovery, hyperfine, pyperf")
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"results": [{"command": "true", "times": "soon"}]}')
    proc = kbench("import", str(damaged), check=False)
    assert proc.returncode == 2
    assert f"{damaged}: damaged hyperfine file: results[0].times: a list expected (got \"soon\")" in proc.stderr
    assert not db_path.exists() or as_json(kbench("results", "--json")) == []
