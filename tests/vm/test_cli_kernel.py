"""`kbench run … --kernel deb:…` end to end: boot, measure in the guest, store on the host."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.vm.guest_log import TEST_KERNEL

pytestmark = pytest.mark.vm


def _kbench(db: Path, *args: str) -> dict:
    env = dict(os.environ, KBENCH_DB=str(db))
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_kfunc_run_in_a_debian_kernel_is_stored_with_its_target(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    run = _kbench(db, "run", "kfunc.fib4_lookup", "--kernel", TEST_KERNEL, "--samples", "3000", "--profile",
                  "--json")
    assert run["metric"] == "kfunc.fib4_lookup.cycles" and run["unit"] == "cycles" and run["n"] == 3000
    assert run["min"] <= run["median"] <= run["p99"] <= run["max"]
    # kbench.ko's counters of its thread, per call (on by default for kfunc runs); the guest's perf
    # profile of it (a run of its own)
    assert run["counters_context"]["source"] == "perf_event_create_kernel_counter"
    assert run["counters"]["task-clock"]["per_op"] > 0 and run["counters"]["cycles"]["supported"] is False
    assert run["profile"]["details"]["where"] == "guest"
    assert run["profile"]["top"][0] == {**run["profile"]["top"][0], "symbol": "fib_table_lookup", "where": "kernel"}
    shown = _kbench(db, "show", str(run["run_id"]), "--json")
    target = shown["target"]
    assert target["kind"] == "vm" and target["kernel_release"] == TEST_KERNEL.removeprefix("deb:")
    assert target["accel"] in ("kvm", "tcg")
    assert shown["sysinfo"]["kernel"]["release"] == TEST_KERNEL.removeprefix("deb:")
    with sqlite3.connect(db) as conn:
        header = json.loads(conn.execute("select probe_header from runs").fetchone()[0])
    # The module's own summary (nearest rank, whole cycles per call) agrees with ours.
    kernel_line = dict(word.split("=", 1) for word in header["kernel_run"].split() if "=" in word)
    exported = json.loads(subprocess.run(
        [sys.executable, "-m", "kbench.cli", "--db", str(db), "export", str(run["run_id"])],
        capture_output=True, text=True, check=True).stdout)
    ticks = np.array(exported["samples"]["ticks"])
    assert int(kernel_line["min"]) == ticks.min() // header["batch"]
    assert int(kernel_line["max"]) == ticks.max() // header["batch"]
    # ns beside cycles, at the TSC rate kbench.ko reported (cycles x 1e6 / tsc_khz)
    tsc_khz = int(kernel_line["tsc_khz"])
    assert run["ns"]["median"] == pytest.approx(run["median"] * 1e6 / tsc_khz)
    assert run["ns"]["p99"] == pytest.approx(run["p99"] * 1e6 / tsc_khz)


def test_syscall_run_in_a_debian_kernel(tmp_path: Path) -> None:
    run = _kbench(tmp_path / "k.db", "run", "syscall.getppid", "--kernel", TEST_KERNEL, "--samples", "2000", "--json")
    assert run["metric"] == "syscall.getppid.latency" and run["n"] == 2000
    assert run["overhead"]["median"] > 0 and run["median"] > 0


def test_own_benchmark_module_scaffold_build_and_run(tmp_path: Path) -> None:
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"))
    subprocess.run([sys.executable, "-m", "kbench.cli", "kmod", "new", "mysum", "--dir", str(tmp_path)],
                   check=True, env=env, capture_output=True)
    source = tmp_path / "mysum.c"
    assert "kbench_register(&mysum_bench)" in source.read_text()
    again = subprocess.run([sys.executable, "-m", "kbench.cli", "kmod", "new", "mysum", "--dir", str(tmp_path)],
                           env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr
    small = _kbench(tmp_path / "k.db", "run", "kfunc.mysum", "--kernel", TEST_KERNEL, "--module", str(source),
                    "-p", "len=16", "--samples", "2000", "--batch", "4", "--json")
    large = _kbench(tmp_path / "k.db", "run", "kfunc.mysum", "--kernel", TEST_KERNEL, "--module", str(source),
                    "-p", "len=4096", "--samples", "2000", "--batch", "4", "--json")
    assert small["metric"] == "kfunc.mysum.cycles" and small["n"] == 2000
    # Summing 256x more bytes must cost clearly more per call. The two runs boot two guests and a
    # TCG guest runs in one of two speed modes 1.6x apart (docs/PERFORMANCE.md), so the bound
    # leaves room for the boots landing in different modes (one CI run measured 18.5x).
    assert large["median"] > 8 * small["median"], (large["median"], small["median"])


def test_job_matrix_runs_in_a_debian_kernel_with_one_boot(tmp_path: Path) -> None:
    job = tmp_path / "vm-job.yaml"
    job.write_text(
        f"kernel: {TEST_KERNEL}\n"
        "benchmark: [syscall.getppid, kfunc.jhash]\n"
        "samples: [300, 600, 900]\n"
        "tags: [vm-matrix]\n"
    )
    results = _kbench(tmp_path / "k.db", "run", str(job), "--json")
    assert len(results) == 6
    stored = _kbench(tmp_path / "k.db", "results", "--tag", "vm-matrix", "--json")
    assert sorted((r["benchmark"], r["n_samples"]) for r in stored) == sorted(
        (b, n) for b in ("syscall.getppid", "kfunc.jhash") for n in (300, 600, 900)
    )
    assert {r["kind"] for r in stored} == {"vm"}
    assert {r["kernel_release"] for r in stored} == {TEST_KERNEL.removeprefix("deb:")}
    shown = _kbench(tmp_path / "k.db", "show", str(stored[0]["id"]), "--json")
    # One boot served every instance: the same console log is recorded for all runs.
    consoles = {
        _kbench(tmp_path / "k.db", "show", str(r["id"]), "--json")["target"]["details"]["console_log"]
        for r in stored
    }
    assert len(consoles) == 1 and shown["sysinfo"]["virtualization"]["vm"].startswith("qemu-")


def test_syscall_configurations_interleave_in_one_guest_probe_per_block(tmp_path: Path) -> None:
    # 400 steps of dependent arithmetic per call more than double getppid's cost in the guest too
    report = _kbench(tmp_path / "k.db", "compare", "syscall.getppid", "-p", "spin=0|400", "--kernel", TEST_KERNEL,
                     "--budget", "8s", "--json")
    (metric,) = report["metrics"]
    assert metric["verdict"] == "regression" and metric["ci_pct"][0] > 20, metric
    assert re.search(r", up to \d+ blocks in one probe process,", report["parameters"]["design"])
    assert report["parameters"]["blocks"] >= 6


SECOND_KERNEL = os.environ.get("KBENCH_TEST_KERNEL_B", "deb:6.1.0-55-amd64")


def test_compare_two_debian_kernels_writes_text_json_and_html(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    html = tmp_path / "kernels.html"
    env = dict(os.environ, KBENCH_DB=str(db))
    args = ["compare", "kfunc.jhash", "--kernel", TEST_KERNEL, "--kernel", SECOND_KERNEL, "--samples", "2000",
            "--trials", "6", "--trials-per-boot", "3", "--fixed"]
    report = _kbench(db, *args, "--json", "--report-dir", str(tmp_path / "reports"))
    written = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert written == ["benchstat", "report.html", "report.json", "report.md", "report.txt"]
    assert "%change" in (tmp_path / "reports" / "report.txt").read_text()
    (metric,) = report["metrics"]
    assert metric["metric"] == "kfunc.jhash.cycles" and metric["trials"] == {"base": 6, "new": 6}
    assert metric["verdict"] in ("regression", "improvement", "no change", "inconclusive")
    low, high = metric["ci_pct"]
    assert low <= metric["change_pct"] <= high
    order = report["parameters"]["block order"].split()
    assert len(order) == 4 and sorted(order) == sorted([TEST_KERNEL.removeprefix("deb:"),
                                                        SECOND_KERNEL.removeprefix("deb:")] * 2)
    stored = _kbench(db, "results", "--json")
    assert {r["kernel_release"] for r in stored} == {TEST_KERNEL.removeprefix("deb:"),
                                                     SECOND_KERNEL.removeprefix("deb:")}
    # The same stored trials as an HTML report, without measuring again.
    base_ids = [r["id"] for r in stored if r["kernel_release"] == TEST_KERNEL.removeprefix("deb:")]
    new_ids = [r["id"] for r in stored if r["kernel_release"] != TEST_KERNEL.removeprefix("deb:")]
    subprocess.run([sys.executable, "-m", "kbench.cli", "compare", "--runs", ",".join(map(str, base_ids)),
                    "--runs", ",".join(map(str, new_ids)), "--format", "html", "-o", str(html)],
                   check=True, env=env, capture_output=True)
    page = html.read_text()
    assert 'id="forest-plot"' in page and 'data-metric="kfunc.jhash.cycles"' in page
