"""`kbench trace` and a user's tracepoints end to end: boot, trace in the guest, store, report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.vm.guest_log import TEST_KERNEL

pytestmark = pytest.mark.vm


def _kbench(db: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KBENCH_DB=str(db))
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == expect, proc.stderr
    return proc


def _json(db: Path, *args: str) -> Any:
    return json.loads(_kbench(db, *args).stdout)


def test_kbench_trace_times_fib_table_lookup_under_its_benchmark(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    samples = 2000
    run = _json(db, "trace", "fib_table_lookup", "--during", "kfunc.fib4_lookup", "--kernel", TEST_KERNEL,
                "--samples", str(samples), "--batch", "1", "--cpu", "0", "--json")
    (function,) = [item for item in run["trace"] if item["kind"] == "function"]
    # One fib_table_lookup per fib_lookup() of the benchmark's recorded loop (pinned to CPU 0),
    # plus any lookup of the guest's own traffic on that CPU meanwhile.
    assert function["name"] == "fib_table_lookup" and samples <= function["count"] <= samples + 20
    assert run["metric"] == "trace.fib_table_lookup.cycles" and run["n"] == function["count"]
    assert 0 < function["min"] <= function["median"] <= function["p99"] <= function["max"]
    assert sum(bucket["count"] for bucket in function["log2_histogram"]) == function["count"]
    assert run["workload"]["benchmark"] == "kfunc.fib4_lookup" and run["workload"]["n"] == samples
    probe = run["probe_overhead"]
    assert probe["median_effective"] > 0 and probe["effective"]["samples"] == 2000
    assert run["trace_log"]["overflow"] == 0 and run["trace_log"]["outside_run"] > 0  # the warm-up's lookups

    # Every entry is stored raw with the run, and the text report comes back from the store.
    exported = json.loads(_kbench(db, "export", str(run["run_id"])).stdout)["samples"]
    kinds = np.array(exported["kind"])
    assert np.count_nonzero(kinds == 2) == function["count"] + run["trace_log"]["outside_run"]
    assert np.count_nonzero(kinds == 3) == 1  # the benchmark's recorded window
    shown = _kbench(db, "show", str(run["run_id"])).stdout
    assert re.search(r"cycles : count +distribution", shown)
    assert re.search(r"^\s*\d+ -> \d+\s+: \d+\s+\|\*+\s*\|$", shown, re.MULTILINE)
    assert "Probe effective overhead" in shown and "linear histogram" in shown


def test_unknown_function_is_a_usage_error_with_near_matches(tmp_path: Path) -> None:
    proc = _kbench(tmp_path / "k.db", "trace", "fib_table_lookupp", "--command", "true", "--kernel", TEST_KERNEL,
                   expect=2)
    assert re.search(r"no function fib_table_lookupp .*near matches: .*fib_table_lookup", proc.stderr)
    assert _json(tmp_path / "k.db", "results", "--json") == [], "nothing was stored"


def test_a_users_tracepoints_in_a_scaffolded_module(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    _kbench(db, "kmod", "new", "mytrace", "--dir", str(tmp_path))
    samples, batch = 1500, 2
    run = _json(db, "run", "kfunc.mytrace", "--kernel", TEST_KERNEL, "--module", str(tmp_path / "mytrace.c"),
                "-p", "len=256", "--samples", str(samples), "--batch", str(batch), "--json")
    (key,) = run["trace"]
    assert (key["key"], key["name"], key["kind"]) == (3, "sum_loop", "tracepoint")
    assert key["count"] == samples * batch  # one region per call of the recorded loop
    # The region is part of every call, which also pays for the whole START/STOP pair.
    assert key["median"] < run["median"]
    overhead = run["tracepoint_overhead"]
    assert overhead["total"]["samples"] == overhead["effective"]["samples"] == 2000
    assert overhead["median_total"] > 0 and overhead["median_effective"] > 0
    shown = _kbench(db, "show", str(run["run_id"])).stdout
    assert "key 3 (sum_loop): count 3000" in shown
    assert "Total overhead" in shown and "Effective overhead" in shown and "# Samples" in shown
    # Keys along one path summed after the fact: this module has no key 4, so no chain completes.
    summed = _json(db, "show", str(run["run_id"]), "--json", "--sum-keys", "3+4")["trace"]
    assert [(item["label"], item["count"]) for item in summed] == [("key 3 (sum_loop)", 3000), ("keys 3+4", 0)]
    refused = _kbench(db, "show", str(run["run_id"]), "--sum-keys", "3+3", expect=2)
    assert "distinct keys" in refused.stderr
