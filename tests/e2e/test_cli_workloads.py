"""The other kinds of benchmark through the CLI: suites, will-it-scale, kfunc refusals."""

from __future__ import annotations

import platform
from pathlib import Path

from tests.e2e.conftest import KbenchRunner, as_json


def test_suite_run_keeps_every_iteration_and_the_tool_output(kbench: KbenchRunner) -> None:
    run = as_json(kbench("run", "stress-ng.cpu", "-p", "timeout=1", "--iterations", "2", "--json"))
    assert run["metric"] == "stress-ng.cpu.bogo_ops_per_s" and run["n"] == 2
    metrics = {m["metric"]: m for m in run["metrics"]}
    assert set(metrics) == {"stress-ng.cpu.bogo_ops_per_s", "stress-ng.cpu.bogo_ops_per_s_usr_sys",
                            "stress-ng.cpu.bogo_ops"}
    ops = metrics["stress-ng.cpu.bogo_ops"]["values"]
    rate = metrics["stress-ng.cpu.bogo_ops_per_s"]["values"]
    # bogo ops / rate is the tool's measured time; about the 1 s asked for.
    for total, per_second in zip(ops, rate, strict=True):
        assert 0.5 < total / per_second < 3.0
    exported = as_json(kbench("export", str(run["run_id"])))
    assert exported["probe_header"]["tool_version"].count(".") >= 1  # e.g. 0.15.06
    assert exported["probe_header"]["command"][0] == "stress-ng"


def test_suite_rejects_probe_options(kbench: KbenchRunner) -> None:
    proc = kbench("run", "hackbench.pipe-process", "--samples", "10", check=False)
    assert proc.returncode == 2 and "use --iterations" in proc.stderr


def test_will_it_scale_run_reports_per_task_rate_per_interval(kbench: KbenchRunner) -> None:
    run = as_json(kbench("run", "will-it-scale.getppid1", "-p", "nr_task=2", "-p", "mode=thread",
                         "-p", "interval=0.5", "--duration", "2s", "--warmup", "1s", "--json"))
    assert run["metric"] == "will-it-scale.getppid1.per_thread_ops"
    assert run["n"] == 4  # 2 s of 0.5 s intervals after the warm-up
    metrics = {m["metric"]: m for m in run["metrics"]}
    per_task = metrics["will-it-scale.getppid1.per_thread_ops"]["values"]
    total = metrics["will-it-scale.getppid1.ops"]["values"]
    for task_rate, total_rate in zip(per_task, total, strict=True):
        assert abs(total_rate - 2 * task_rate) <= 1e-6 * total_rate
    assert all(0.0 <= v <= 1.0 for v in metrics["will-it-scale.getppid1.idle"]["values"])


def test_kfunc_on_a_kernel_that_cannot_load_modules_says_why(kbench: KbenchRunner) -> None:
    nomodule = "nomodule" in Path("/proc/cmdline").read_text().split()
    proc = kbench("run", "kfunc.empty", "--samples", "100", "--local-kernel", check=False)
    if nomodule:
        assert proc.returncode == 3
        assert f"cannot run on the local kernel {platform.release()}" in proc.stderr
        assert "nomodule" in proc.stderr and "--kernel deb:" in proc.stderr


def test_module_without_kernel_is_a_usage_error(kbench: KbenchRunner, tmp_path: Path) -> None:
    source = tmp_path / "x.c"
    source.write_text("")
    proc = kbench("run", "kfunc.x", "--module", str(source), check=False)
    assert proc.returncode == 2 and "give --kernel too" in proc.stderr


def test_job_file_matrix_runs_every_instance(kbench: KbenchRunner, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "benchmark: [syscall.getppid, syscall.read_devzero]\n"
        "samples: [500, 1000, 2000]\n"
        "tags: [matrix]\n"
    )
    expanded = as_json(kbench("job", "expand", str(job), "--json"))["instances"]
    assert len(expanded) == 6
    results = as_json(kbench("run", str(job), "--json"))
    assert [r["id"] for r in results] == [e["id"] for e in expanded]
    stored = as_json(kbench("results", "--tag", "matrix", "--json"))
    assert len(stored) == 6
    ns = sorted(r["n_samples"] for r in stored)
    assert ns == [500, 500, 1000, 1000, 2000, 2000]
    for result in results:
        assert result["median"] > 0 and result["status"] == ["complete"]


def test_invalid_job_file_runs_nothing(kbench: KbenchRunner, tmp_path: Path, db_path: Path) -> None:
    job = tmp_path / "bad.yaml"
    job.write_text("benchmark: syscall.getppid\nsampels: 100\n")
    proc = kbench("run", str(job), check=False)
    assert proc.returncode == 2
    assert f"{job}:2: sampels: unknown key" in proc.stderr
    assert "did you mean samples" in proc.stderr
    assert not db_path.exists() or as_json(kbench("results", "--json")) == []


def test_nr_task_sweep_prints_a_scaling_curve(kbench: KbenchRunner, tmp_path: Path) -> None:
    job = tmp_path / "scale.yaml"
    job.write_text(
        "suite: will-it-scale\nruntime: 1s\nwarmup: 1s\nnr_task: [1, 100%]\n"
        "will-it-scale:\n  test: getppid1\n  mode: process\n"
    )
    out = kbench("run", str(job)).stdout
    assert "scaling curve: will-it-scale.getppid1.per_process_ops (process)" in out
    curve = out.split("scaling curve:")[1].splitlines()
    rows = [line.split() for line in curve if line.strip() and line.split()[0].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"]
    per_task = [float(row[1].replace(",", "")) for row in rows]
    total = [float(row[2].replace(",", "")) for row in rows]
    assert total[0] == per_task[0] and abs(total[1] - 2 * per_task[1]) <= 2  # rounding of the printed figures
    assert rows[0][3] == "100%"


def test_job_governor_is_applied_or_its_absence_recorded(kbench: KbenchRunner, tmp_path: Path) -> None:
    job = tmp_path / "gov.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 200\ncpufreq_governor: performance\ntags: [gov]\n")
    as_json(kbench("run", str(job), "--json"))
    run_id = as_json(kbench("results", "--tag", "gov", "--json"))[0]["id"]
    shown = as_json(kbench("show", str(run_id), "--json"))
    if Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists():
        assert set(shown["sysinfo"]["noise"]["governor"].values()) == {"performance"}
    else:
        assert any(w.startswith("cpufreq_governor=performance: not available here") for w in shown["warnings"])
