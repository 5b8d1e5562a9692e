"""Inputs travel: a fleet job's files reach workers that do not have them, checked by digest
(real Redis, PostgreSQL and ``kbench worker`` processes, each worker in a directory and with a
cache of its own)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from sqlalchemy import func, select, update

from kbench.store import schema
from tests.fleet.conftest import FleetHarness, write_job

PROG = "#!/bin/sh\n# only the submitter has this program\nexit 0\n"
JOB = """\
benchmark: command
files: [prog]
params:
  cmd: ./prog
samples: 3
warmup: 0
"""


def _submitter(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "submitter"
    folder.mkdir()
    (folder / "prog").write_text(PROG)
    (folder / "prog").chmod(0o755)
    return write_job(folder / "job.yaml", JOB), hashlib.sha256(PROG.encode()).hexdigest()


def _start(fleet: FleetHarness, tmp_path: Path, name: str, machine_class: str) -> Path:
    """A worker whose directory and cache are its own (neither holds the program); its home."""
    home = tmp_path / name
    (home / "cwd").mkdir(parents=True)
    fleet.start_worker(name, machine_class, "--allow-command", cwd=home / "cwd",
                       env={"XDG_CACHE_HOME": str(home / "cache")})
    return home


def test_a_program_only_the_submitter_has_runs_on_every_worker_fetched_once_each(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    job_file, _ = _submitter(tmp_path)
    big = random.Random(35).randbytes(10 << 20)  # 10 MiB that do not compress
    (job_file.parent / "data.bin").write_bytes(big)
    (job_file.parent / "prog").write_text(PROG.replace("exit 0", f'test "$(wc -c < data.bin)" -eq {len(big)}'))
    job_file.write_text(JOB.replace("[prog]", "[prog, data.bin]"))
    digest = hashlib.sha256((job_file.parent / "prog").read_bytes()).hexdigest()
    big_digest = hashlib.sha256(big).hexdigest()
    homes = {name: _start(fleet, tmp_path, name, "far") for name in ("far-1", "far-2")}
    jobs = [fleet.submit(job_file, "--queue", "far", "--repeat", "4") for _ in range(2)]
    for job in jobs:
        assert fleet.wait_job(job) == "done"
    tasks = [task for job in jobs for task in fleet.tasks(job)]
    assert len(tasks) == 8 and {(t["state"], t["attempts"]) for t in tasks} == {("done", 1)}
    for task in tasks:
        runs = fleet.runs_of(task["id"])
        assert [(r["status"], r["n_samples"]) for r in runs] == [("complete", 3)]
        assert task["run_ids"] == [runs[0]["id"]]
    with fleet.engine.connect() as conn:  # stored once for both jobs
        assert conn.execute(select(func.count()).select_from(schema.fleet_inputs)).scalar() == 2
        manifests = [row[0] for row in conn.execute(select(schema.fleet_jobs.c.inputs))]
    size = (job_file.parent / "prog").stat().st_size
    assert manifests == [{"files": [{"path": "prog", "digest": digest, "size": size, "mode": 0o755},
                                    {"path": "data.bin", "digest": big_digest, "size": 10 << 20, "mode": 0o644}]}] * 2
    for name, home in homes.items():
        assert not (home / "cwd" / "prog").exists()
        ran = sum(1 for t in tasks if t["machine"] == name)
        log = fleet.log_tail(fleet.workers[name], 10**6)
        fetched = (log.count(f"input {digest} (prog): fetched"),
                   log.count(f"input {big_digest} (data.bin): fetched, {10 << 20} bytes, digest checked"))
        assert fetched == ((1, 1) if ran else (0, 0)), f"{name} ran {ran} tasks and fetched {fetched}"
        fleet_cache = home / "cache" / "kbench" / "fleet"  # (kbench keeps other caches beside it: probe-list)
        cached = sorted(p.relative_to(home / "cache") for p in fleet_cache.rglob("*") if p.is_file())
        assert cached == (sorted(Path("kbench/fleet/inputs", d[:2], d) for d in (digest, big_digest)) if ran else [])
        assert not any((home / "cache" / "kbench" / "fleet" / "work").glob("*"))  # task directories removed


def test_a_comparison_runs_the_carried_program_on_one_machine(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file, _ = _submitter(tmp_path)
    job_file.write_text(JOB.replace("cmd: ./prog", 'cmd: ["./prog", "./prog again"]'))
    _start(fleet, tmp_path, "cmp-far-1", "cmp-far")
    out = json.loads(fleet.kbench("fleet", "submit", str(job_file), "--queue", "cmp-far", "--compare", "cmd",
                                  "--trials", "3", "--json").stdout)
    assert [(f["path"], f["size"], f["mode"]) for f in out["files"]] == [("prog", len(PROG), 0o755)]
    assert fleet.wait_job(out["job"]) == "done"
    (task,) = fleet.tasks(out["job"])
    runs = fleet.runs_of(task["id"])
    assert {r["status"] for r in runs} == {"complete"} and len(runs) == 6
    assert task["result"]["base_label"] == "./prog" and task["result"]["new_labels"] == ["./prog again"]
    said = fleet.kbench("fleet", "submit", str(job_file), "--queue", "nobody").stdout
    assert "2 tasks queued (2 on nobody); it carries 1 file (prog: 55 B); `kbench fleet status" in said


def test_bytes_that_are_not_the_digest_are_refused_and_never_run(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file, digest = _submitter(tmp_path)
    job = fleet.submit(job_file, "--queue", "bent")  # no worker of the class yet: nothing fetched
    with fleet.engine.begin() as conn:  # the store's copy altered after the submit
        chunks = schema.fleet_input_chunks
        conn.execute(update(chunks).where(chunks.c.digest == digest).values(codec="raw", data=b"#!/bin/sh\nexit 0\n"))
    home = _start(fleet, tmp_path, "bent-1", "bent")
    assert fleet.wait_job(job) == "failed"
    (task,) = fleet.tasks(job)
    assert task["attempts"] == 1  # not retried: it would be refused the same way
    assert task["error"].startswith(f"files: prog: refused: input {digest}: the store holds 17 bytes in 1 chunks")
    assert fleet.runs_of(task["id"]) == []  # never run
    assert not [p for p in (home / "cache" / "kbench" / "fleet").rglob("*") if p.is_file()]  # nothing kept, not
    # even a partial file (kbench's other caches, e.g. probe-list, may be beside it)


def test_a_job_naming_a_file_that_does_not_exist_is_refused_at_submit(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file, _ = _submitter(tmp_path)
    job_file.write_text(JOB.replace("[prog]", "[prog, data/missing.bin]"))
    refused = fleet.kbench("fleet", "submit", str(job_file), "--queue", "far", check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"job.yaml:2: files: 'data/missing.bin': no such file {job_file.parent}/data/missing.bin" in refused.stderr
    assert json.loads(fleet.kbench("fleet", "status", "--json").stdout)["jobs"] == []  # nothing stored
    with fleet.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schema.fleet_inputs)).scalar() == 0
