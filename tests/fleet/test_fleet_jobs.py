"""A real fleet: Redis and PostgreSQL, ``kbench worker`` processes on two classes, ``kbench fleet`` commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fleet.conftest import FleetHarness, write_job

SIX = """\
# 3 benchmarks x 2 sample counts = 6 instances, cheap ones
benchmark: [syscall.getppid, syscall.sched_yield, syscall.noop]
samples: [200, 300]
warmup: 0
"""


def test_six_instances_on_two_classes_end_as_one_run_each_on_a_machine_of_the_class(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    job_file = write_job(tmp_path / "six.yaml", SIX)
    expanded = json.loads(fleet.kbench("job", "expand", str(job_file), "--json").stdout)["instances"]
    assert len(expanded) == 6
    fleet.start_worker("lkp-alpha-1", "alpha")
    fleet.start_worker("lkp-beta-1", "beta")
    job = fleet.submit(job_file, "--queue", "alpha", "--queue", "beta")
    waiting = fleet.submit(job_file, "--queue", "gamma")  # no machine of class gamma yet
    assert fleet.wait_job(job) == "done"

    tasks = fleet.tasks(job)
    assert len(tasks) == 12 and {t["state"] for t in tasks} == {"done"}
    # Every instance once per class, each on a machine registered for that class.
    assert sorted((t["queue"], t["instance_ids"][0]) for t in tasks) == sorted(
        (q, i["id"]) for q in ("alpha", "beta") for i in expanded)
    by_instance = {i["id"]: i for i in expanded}
    for task in tasks:
        machine = fleet.machine(task["machine"])
        assert machine["queue"] == task["queue"] and task["attempts"] == 1
        runs = fleet.runs_of(task["id"])
        assert [(r["status"], r["task_key"]) for r in runs] == [("complete", f"{task['id']}#0")]
        assert task["run_ids"] == [runs[0]["id"]]
        run = runs[0]
        assert run["machine_id"] == machine["machine_id"] is not None
        assert {f"queue:{task['queue']}", f"worker:{task['machine']}", f"fleet:{job}"} <= set(run["tags"])
        # Run exactly as `kbench run` would: the request `kbench job expand` computes, plus the fleet's tags.
        expected = by_instance[task["instance_ids"][0]]["run_request"]
        request = run["request"]
        assert {k: v for k, v in request.items() if k != "tags"} == {
            k: v for k, v in expected.items() if k != "tags"}
        assert set(expected["tags"]) <= set(request["tags"])
    assert len(fleet.runs()) == 12  # nothing else was stored
    shown = json.loads(fleet.kbench("show", str(run["id"]), "--json", env={"KBENCH_DB": fleet.db_url}).stdout)
    assert shown["status"] == "complete" and shown["n"] == int(expected["samples"])

    # The class nobody serves: still queued, and said so.
    assert {t["state"] for t in fleet.tasks(waiting)} == {"queued"}
    status = fleet.kbench("fleet", "status").stdout
    assert "gamma (no machine)" in status and job in status
    machines = json.loads(fleet.kbench("fleet", "machines", "--json").stdout)["machines"]
    assert {(m["name"], m["queue"], m["state"]) for m in machines} == {
        ("lkp-alpha-1", "alpha", "idle"), ("lkp-beta-1", "beta", "idle")}
    assert all(m["cpu_count"] == os.cpu_count() and m["memory_bytes"] > 0 and m["cpu_model"] for m in machines)
    table = fleet.kbench("fleet", "machines").stdout
    assert "lkp-alpha-1" in table and "last seen" in table

    # Fleet runs are ordinary runs: `kbench results` lists them by the job's tag.
    listed = fleet.kbench("results", "--tag", f"fleet:{job}", "--limit", "100", "--json",
                          env={"KBENCH_DB": fleet.db_url})
    assert len(json.loads(listed.stdout)) == 12
    # ... and `kbench history` puts each of them in a series of its machine, like a local run.
    history = json.loads(fleet.kbench("history", "syscall.*", "--json", env={"KBENCH_DB": fleet.db_url}).stdout)
    primary = [s for s in history["series"] if s["metric"].endswith(".latency")]
    assert sorted(p["run_id"] for s in primary for p in s["points"]) == sorted(t["run_ids"][0] for t in tasks)
    assert {s["machine"] for s in primary} == {machines[0]["hostname"]}

    # A machine of the missing class arrives: the waiting job runs there.
    fleet.start_worker("lkp-gamma-1", "gamma")
    assert fleet.wait_job(waiting) == "done"
    assert {t["machine"] for t in fleet.tasks(waiting)} == {"lkp-gamma-1"}
    assert len(fleet.runs()) == 18


def test_repeat_submits_every_task_n_times(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "one.yaml", "benchmark: syscall.getppid\nsamples: 100\nwarmup: 0\n")
    fleet.start_worker("rep-1", "rep")
    job = fleet.submit(job_file, "--queue", "rep", "--repeat", "3")
    assert fleet.wait_job(job) == "done"
    tasks = fleet.tasks(job)
    assert sorted(t["repeat_index"] for t in tasks) == [0, 1, 2]
    keys = [r["task_key"] for r in fleet.runs()]
    assert sorted(keys) == sorted(f"{t['id']}#0" for t in tasks)


def test_a_comparison_is_submitted_whole_and_runs_on_one_machine(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "cmp.yaml", """\
benchmark: command
params:
  cmd: ["true", "sleep 0.002"]
samples: 5
warmup: 0
""")
    fleet.start_worker("cmp-1", "cmp", "--allow-command")
    fleet.start_worker("cmp-2", "cmp", "--allow-command")
    out = json.loads(fleet.kbench("fleet", "submit", str(job_file), "--queue", "cmp", "--compare", "cmd",
                                  "--trials", "3", "--json").stdout)
    assert [t["kind"] for t in out["tasks"]] == ["compare"] and len(out["tasks"][0]["instances"]) == 2
    assert fleet.wait_job(out["job"]) == "done"
    (task,) = fleet.tasks(out["job"])
    runs = fleet.runs_of(task["id"])
    sides = {tag for r in runs for tag in r["tags"] if tag.startswith("side:")}
    assert sides == {"side:true", "side:sleep 0.002"}
    assert {r["status"] for r in runs} == {"complete"} and len(runs) == 6  # 3 trials a side, fixed by the budget
    assert {tag for r in runs for tag in r["tags"] if tag.startswith("worker:")} == {f"worker:{task['machine']}"}
    report = task["result"]
    assert report["base_label"] == "true" and report["new_labels"] == ["sleep 0.002"]
    verdict = report["metrics"][0]
    assert verdict["metric"] == "command.wall" and verdict["trials"] == {"base": 3, "new": 3}
    # `sleep 0.002` takes at least 2 ms of wall time whatever the load; the sign of the change is
    # not asserted: on this loaded VM `true` took longer than that waiting for a CPU, and 3 trials
    # a side gave -11.6% once.
    assert verdict["new"] >= 2e6 and verdict["base"] > 0


def test_a_program_that_fails_fails_its_task_once_and_is_never_timed(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "fails.yaml", """\
benchmark: command
params:
  cmd: ["true", "echo 'no such input' >&2; exit 7"]
samples: 3
warmup: 0
""")
    fleet.start_worker("fails-1", "fails", "--allow-command")
    job = fleet.submit(job_file, "--queue", "fails")
    fleet.wait_job(job)
    tasks = {json.dumps(t["instance_ids"]): t for t in fleet.tasks(job)}
    states = sorted((t["state"], t["attempts"]) for t in tasks.values())
    assert states == [("done", 1), ("failed", 1)]  # a program's failure is not retried on another attempt
    failed = next(t for t in tasks.values() if t["state"] == "failed")
    assert "failed: exit status 7" in failed["error"] and "no such input" in failed["error"]
    runs = fleet.runs_of(failed["id"])
    assert [r["status"] for r in runs] == ["failed"]  # stored as failed, with no samples judged
