"""LKP-style job files (tests/data/lkp-jobs): recognised keys become kbench settings,
monitors, disk set-up and LKP's scheduling and tuning keys become warnings, unknown keys
stay errors. Checked through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

LKP_JOBS = Path(__file__).resolve().parents[1] / "data" / "lkp-jobs"


def kbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbench.cli", *args],
        capture_output=True, text=True, timeout=60, cwd=LKP_JOBS, env=dict(os.environ, COLUMNS="200"),
    )


def _expected() -> dict[str, tuple[int, list[str]]]:
    table: dict[str, tuple[int, list[str]]] = {}
    name = ""
    for line in (LKP_JOBS / "expected.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        if line.startswith("== "):
            _, name, _, code = line.split()
            table[name] = (int(code), [])
        else:
            table[name][1].append(line)
    return table


EXPECTED = _expected()


def test_the_corpus_is_complete() -> None:
    assert sorted(EXPECTED) == sorted(p.name for p in LKP_JOBS.glob("*.yaml"))
    assert sum(code == 0 for code, _ in EXPECTED.values()) >= 6


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_validate_prints_exactly_the_expected_warnings_or_problems(name: str) -> None:
    code, lines = EXPECTED[name]
    proc = kbench("job", "validate", name, "--cpus", "2")
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.splitlines() == lines
    if code == 0:
        assert all(line.startswith(f"warning: {name}:") and ": ignored" in line for line in lines)
        assert proc.stdout.startswith(f"{name}: valid, ")


def expand(name: str, cpus: int) -> list[dict[str, Any]]:
    proc = kbench("job", "expand", name, "--cpus", str(cpus), "--json")
    assert proc.returncode == 0, proc.stderr
    instances: list[dict[str, Any]] = json.loads(proc.stdout)["instances"]
    return instances


@pytest.mark.parametrize(
    ("name", "cpus", "params"),
    [
        # a hackbench group is 2 × fds = 40 tasks: 100% of 2 CPUs is one group, of 160 CPUs four
        ("hackbench-pipe.yaml", 2, [{"loops": "20", "groups": "1"}]),
        ("hackbench-pipe.yaml", 160, [{"loops": "20", "groups": "4"}]),
        ("hackbench-testtime.yaml", 2, [{"groups": "1"}] * 2),
        ("stress-ng-cpu.yaml", 2, [{"workers": "2", "timeout": "60"}] * 2),
        ("stress-ng-cpu.yaml", 8, [{"workers": "8", "timeout": "60"}] * 2),
        ("sysbench-cpu.yaml", 2, [{"cpu_max_prime": "20000", "threads": "4", "time": "10"}]),
        ("fio-randread.yaml", 2, [{"bs": "4k", "ioengine": "psync", "numjobs": "8", "runtime": "30"}]),
        ("will-it-scale.yaml", 4, [{"nr_task": n, "mode": m} for n in ("2", "4") for m in ("process", "thread")]),
    ],
)
def test_task_count_and_testtime_become_each_benchmarks_own_parameters(
    name: str, cpus: int, params: list[dict[str, str]]
) -> None:
    instances = expand(name, cpus)
    assert [i["run_request"]["params"] for i in instances] == params
    for instance in instances:
        suite = instance["benchmark"].split(".")[0] != "will-it-scale"
        # a whole tool's duration is its own parameter; will-it-scale's is the engine's duration mode
        assert instance["run_request"]["duration_s"] == (None if suite else 2.0)
        assert instance["run_request"]["iterations"] == 1


def test_lkp_iterations_3x_and_hackbench_warnings_stay_with_their_benchmark() -> None:
    (instance,) = expand("hackbench-pipe.yaml", 2)
    assert instance["iterations"] == 3
    assert [w.split(": ")[1] for w in instance["warnings"]] == [
        "testbox", "tbox_group", "kconfig", "rootfs", "perf-profile.delay", "sched_debug"]
    assert instance["profile"] is True and instance["counters"] is False  # LKP's perf-profile monitor: done
    assert instance["monitors"] == {"proc-vmstat": 1.0}  # sampled during the runs (kbench.profile.monitors)
    first, second = expand("hackbench-testtime.yaml", 2)
    assert [w.split(" for ")[1].split(":")[0] for w in first["warnings"]] == ["hackbench.pipe-thread"]
    assert [w.split(" for ")[1].split(":")[0] for w in second["warnings"]] == ["hackbench.socket-thread"]


def test_ids_do_not_depend_on_the_lkp_spelling(tmp_path: Path) -> None:
    """nr_threads is nr_task, testtime is runtime: the same instance, the same id."""
    lkp = expand("stress-ng-cpu.yaml", 2)
    plain = tmp_path / "stress-ng-plain.yaml"
    plain.write_text("suite: stress-ng\nnr_task: 100%\nruntime: 60\nstress-ng:\n  test: [cpu, switch]\n")
    assert [i["id"] for i in expand(str(plain), 2)] == [i["id"] for i in lkp]


def test_lkp_hackbench_mode_and_ipc_name_the_test(tmp_path: Path) -> None:
    """mode: [process, threads] × ipc: [pipe, socket] are the four hackbench tests, with the
    ids of the same job written with test:; one of the two alone is an error saying so."""
    lkp = expand("hackbench-mode-ipc.yaml", 2)
    assert [(i["benchmark"], i["run_request"]["params"]) for i in lkp] == [
        (f"hackbench.{ipc}-{mode}", {"loops": "10", "groups": "1"})
        for ipc in ("pipe", "socket") for mode in ("process", "thread")]
    plain = tmp_path / "plain.yaml"
    plain.write_text("suite: hackbench\nnr_task: 4\nhackbench:\n  loops: 10\n"
                     "  test: [pipe-process, pipe-thread, socket-process, socket-thread]\n")
    assert [i["id"] for i in expand(str(plain), 2)] == [i["id"] for i in lkp]
    half = tmp_path / "half.yaml"
    half.write_text("suite: hackbench\nhackbench:\n  mode: threads\n")
    proc = kbench("job", "validate", str(half))
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[:2] == [
        f"{half}:1: suite: needs a test (test: NAME, at top level or in the hackbench: section)",
        f"{half}:3: hackbench.mode: LKP's ipc and mode name the hackbench test together: give ipc too, or name "
        "the test (test: pipe-process)"]


def test_lkp_perf_monitors_turn_on_counters_and_profiles_without_changing_ids(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("suite: hackbench\ntest: pipe-process\n")
    lkp = tmp_path / "lkp.yaml"
    lkp.write_text("suite: hackbench\ntest: pipe-process\nperf-stat:\nmonitors:\n  perf-profile:\n  vmstat:\n")
    (before,), (after,) = expand(str(plain), 2), expand(str(lkp), 2)
    assert (before["counters"], before["profile"]) == (False, False)
    assert (after["counters"], after["profile"]) == (True, True)
    assert after["run_request"]["counters"] is True
    assert before["id"] == after["id"]  # counting and profiling change nothing measured
    assert after["warnings"] == [] and after["monitors"] == {"vmstat": 1.0}  # LKP's vmstat: sampled
    assert after["run_request"]["monitors"] == {"vmstat": 1.0}
    twice = tmp_path / "twice.yaml"
    twice.write_text("suite: hackbench\ntest: pipe-process\nperf-stat:\ncounters: false\n")
    proc = kbench("job", "validate", str(twice))
    assert proc.returncode == 2 and "counters: already given as perf-stat at line 3" in proc.stderr
