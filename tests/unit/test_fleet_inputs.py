"""What a fleet job carries (``kbench.fleet.inputs``): gathered at submit, stored once by digest,
fetched into a worker's cache and checked there; on a real SQLite store."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import update

from kbench.fleet import inputs
from kbench.fleet.inputs import InputRefused, gather, placed, store_inputs
from kbench.fleet.plan import PlanError
from kbench.jobs import expand_job, job_files
from kbench.store import schema
from kbench.store.db import Store

JOB = """\
benchmark: command
files: [data/input.txt]
params:
  cmd: ["./prog data/input.txt", "true"]
samples: 3
warmup: 0
"""


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _job(folder: Path, text: str = JOB) -> tuple[Path, list[inputs.JobInput]]:
    path = folder / "job.yaml"
    path.write_text(text)
    return path, gather(path, job_files(path), expand_job(path, cpu_count=1))


@pytest.fixture
def submitter(tmp_path: Path) -> Path:
    folder = tmp_path / "submitter"
    (folder / "data").mkdir(parents=True)
    (folder / "prog").write_text("#!/bin/sh\ncat \"$1\" >/dev/null\n")
    (folder / "prog").chmod(0o755)
    (folder / "data" / "input.txt").write_text("some input\n" * 100)
    return folder


def test_the_files_named_and_the_program_a_cmd_runs_are_carried_with_their_digests(submitter: Path) -> None:
    _, found = _job(submitter)
    assert [(f.path, f.size, f.mode) for f in found] == [("data/input.txt", 1100, 0o644), ("prog", 30, 0o755)]
    assert found[1].digest == hashlib.sha256((submitter / "prog").read_bytes()).hexdigest()


def test_the_relative_paths_a_cmd_names_travel_when_they_exist_here(submitter: Path) -> None:
    (submitter / "data" / "extra.bin").write_bytes(b"\0" * 10)
    text = JOB.replace("files: [data/input.txt]\n", "").replace(
        "./prog data/input.txt", "./prog data/input.txt --in=data/extra.bin data/out.txt /etc/hostname bin/none")
    _, found = _job(submitter, text)
    assert [f.path for f in found] == ["prog", "data/input.txt"]  # not an option's value, nor what is not here


@pytest.mark.parametrize(("text", "said"), [
    (JOB.replace("data/input.txt]", "data/nope.txt]"), "job.yaml:2: files: 'data/nope.txt': no such file"),
    (JOB.replace("data/input.txt]", "data]"), "is not a regular file (a directory is not carried"),
    (JOB.replace("./prog data", "./absent data"), "cmd runs './absent', which is not in the job file's folder"),
])
def test_a_job_naming_what_does_not_exist_here_is_refused(submitter: Path, text: str, said: str) -> None:
    with pytest.raises(PlanError) as caught:
        _job(submitter, text)
    assert said in str(caught.value)


def test_size_limits_are_checked_before_anything_is_stored(submitter: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "MAX_FILE_BYTES", 1000)
    with pytest.raises(PlanError, match=r"has 1100 bytes, more than a job carries in one file"):
        _job(submitter)
    monkeypatch.setattr(inputs, "MAX_FILE_BYTES", 2000)
    monkeypatch.setattr(inputs, "MAX_JOB_BYTES", 1120)
    with pytest.raises(PlanError, match=r"the job's files pass 0 MiB in all"):
        _job(submitter)


def test_a_worker_fetches_once_checks_digests_and_refuses_a_mismatch(submitter: Path, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'fleet.db'}")
    _, found = _job(submitter)
    manifest = store_inputs(store.engine, found, submitter)
    assert store_inputs(store.engine, found, submitter) == manifest  # stored once: one row per digest
    with store.engine.connect() as conn:
        assert conn.execute(schema.fleet_inputs.select()).fetchall().__len__() == 2
    cache, work = tmp_path / "cache", tmp_path / "work"
    placed(store.engine, manifest, cache, work / "t1")
    assert (work / "t1" / "prog").read_bytes() == (submitter / "prog").read_bytes()
    assert (work / "t1" / "prog").stat().st_mode & 0o777 == 0o755
    assert (work / "t1" / "data" / "input.txt").read_text() == "some input\n" * 100
    prog = next(f for f in found if f.path == "prog")
    copy = cache / prog.digest[:2] / prog.digest
    assert copy.is_file() and sorted(p.name for p in cache.rglob("*") if p.is_file()) == sorted(
        f.digest for f in found)

    # A damaged cached copy is noticed and fetched again; a partial fetch of a process killed
    # mid-transfer is never used, and removed by the next fetch.
    copy.write_bytes(b"#!/bin/sh\nexit 1\n")
    stale = copy.with_name(f"{copy.name}.part{_dead_pid()}")
    stale.write_bytes(b"#!/bin/sh\n")
    placed(store.engine, manifest, cache, work / "t2")
    assert copy.read_bytes() == (submitter / "prog").read_bytes() and not stale.exists()

    # Bytes in the store that are not the digest: refused, and nothing (not even a partial file) kept.
    copy.unlink()
    with store.engine.begin() as conn:
        chunks = schema.fleet_input_chunks
        conn.execute(update(chunks).where(chunks.c.digest == prog.digest).values(codec="raw", data=b"#!/bin/sh\nrm\n"))
    with pytest.raises(InputRefused, match=f"files: prog: refused: input {prog.digest}: the store holds 13 bytes"):
        placed(store.engine, manifest, cache, work / "t3")
    assert not any(p.name.startswith(prog.digest) for p in cache.rglob("*"))

    # An input the store lacks.
    gone = {"files": [{"path": "x", "digest": "0" * 64, "size": 1, "mode": 0o644}]}
    with pytest.raises(InputRefused, match="the fleet's store has no input 0000"):
        placed(store.engine, gone, cache, work / "t4")
    store.engine.dispose()


@pytest.mark.parametrize(("files", "said"), [
    ("[/etc/passwd]", "files: '/etc/passwd': give a path inside the job file's folder, relative to it"),
    ("[../prog]", "files: '../prog': give a path inside the job file's folder"),
    ("[prog, prog]", "files: 'prog' is listed twice"),
    ("[[a, b]]", "files: must be a path or a flat list of paths"),
])
def test_files_names_paths_inside_the_job_folder(files: str, said: str) -> None:
    from kbench.jobs import JobError

    with pytest.raises(JobError) as caught:
        expand_job(f"benchmark: command\nfiles: {files}\nparams:\n  cmd: ./prog\n", cpu_count=1)
    assert said in str(caught.value)


def test_files_changes_no_instance_id() -> None:
    plain = expand_job("benchmark: command\nparams:\n  cmd: ./prog\n", cpu_count=1)
    carried = expand_job("benchmark: command\nfiles: prog\nparams:\n  cmd: ./prog\n", cpu_count=1)
    assert [i.id for i in plain] == [i.id for i in carried]
