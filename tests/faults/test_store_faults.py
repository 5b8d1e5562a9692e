"""The results database failing under kbench: full disk, damaged files, read-only media.

Each case gives exit 5 with one line naming the database and what to do, changes
nothing in the file, and loses no measured sample: a run measured when the disk was
full is written to a recovery file that ``kbench import`` stores later.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import sqlite3
import subprocess
import zlib

import numpy as np
import pytest

from tests.faults.conftest import Sandbox, file_digest, run_rows

READ_COMMANDS = (("results",), ("show", "1"), ("export", "1"))


def _one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    text = proc.stderr.strip()
    assert "Traceback" not in text and text.count("\n") == 0, text
    assert text.startswith("kbench: error: "), text
    for needle in needles:
        assert needle in text, text
    return text


def _two_runs(sandbox: Sandbox) -> None:
    for samples in ("1000", "2000"):
        done = sandbox.run("run", "syscall.getppid", "--samples", samples, "--json")
        assert done.returncode == 0, done.stderr
    with sqlite3.connect(sandbox.db) as conn:  # everything into the main file, as after a clean exit
        conn.execute("pragma wal_checkpoint(truncate)")


def test_disk_full_keeps_the_samples_in_a_recovery_file_that_import_stores(
    sandbox: Sandbox, private_mounts: list[str]
) -> None:
    small = sandbox.root / "small"
    kept = sandbox.root / "kept"
    small.mkdir()
    kept.mkdir()
    db = small / "results.db"
    script = (
        'mount -t tmpfs -o size=300k tmpfs "$1" || exit 99\n'
        'shift; "$@" > "$KEPT/run.out" 2> "$KEPT/run.err"; echo $? > "$KEPT/rc"\n'
        'cp "$DB" "$DB-wal" "$KEPT/" 2>/dev/null; exit 0\n'
    )
    env = sandbox.env(KEPT=str(kept), DB=str(db))
    done = subprocess.run(
        [*private_mounts, "sh", "-c", script, "sh", str(small),
         *sandbox.argv("--db", str(db), "run", "syscall.getppid", "--samples", "200000", "--json")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (kept / "rc").read_text().strip() == "5"
    error = (kept / "run.err").read_text().strip()
    assert error.count("\n") == 0 and "Traceback" not in error, error
    assert "database or disk is full" in error and "the run's 200000 samples were saved in" in error
    [recovery] = sorted(sandbox.recovery.iterdir())
    assert str(recovery) in error and f"kbench import {recovery}" in error
    assert sandbox.leftovers() == []
    # What was measured, read from the recovery file without kbench's code.
    document = json.loads(recovery.read_text())
    column = document["result"]["columns"]["ticks"]
    ticks = np.frombuffer(zlib.decompress(base64.b64decode(column["data"])), dtype=column["dtype"])
    assert ticks.size == column["count"] == 200_000 and ticks.min() > 0

    # The database copied out of the full disk: the run waits there, samples missing.
    copy = kept / "results.db"
    [(run_id, status, n, _)] = run_rows(copy)
    assert n == 0 and status in ("running", "failed")
    imported = sandbox.run("--db", str(copy), "import", str(recovery))
    assert imported.returncode == 0, imported.stderr
    assert f"completed run {run_id}" in imported.stdout
    again = sandbox.run("--db", str(copy), "import", str(recovery))
    assert again.returncode == 0 and f"already stored as run {run_id}" in again.stdout
    assert [(i, s, n) for i, s, n, _ in run_rows(copy)] == [(run_id, "complete", 200_000)]
    exported = json.loads(sandbox.run("--db", str(copy), "export", str(run_id)).stdout)
    assert np.array_equal(np.array(exported["samples"]["ticks"], dtype=np.uint64), ticks)

    # Into another database, it is a new run with the same samples.
    other = sandbox.root / "other.db"
    added = sandbox.run("--db", str(other), "import", "--format", "recovery", str(recovery))
    assert added.returncode == 0 and "added as run 1" in added.stdout
    assert run_rows(other)[0][1:3] == ("complete", 200_000)


def test_a_damaged_page_is_one_line_for_every_command_and_the_file_is_left_alone(sandbox: Sandbox) -> None:
    _two_runs(sandbox)
    with sqlite3.connect(sandbox.db) as conn:
        page_size = conn.execute("pragma page_size").fetchone()[0]
        root_page = conn.execute("select rootpage from sqlite_master where name = 'runs'").fetchone()[0]
    data = bytearray(sandbox.db.read_bytes())
    garbage = random.Random(17).randbytes(page_size)
    data[(root_page - 1) * page_size : root_page * page_size] = garbage
    sandbox.db.write_bytes(bytes(data))
    before = file_digest(sandbox.db)
    for command in (*READ_COMMANDS, ("run", "syscall.getppid", "--samples", "1000")):
        _one_line_error(sandbox.invoke(*command), 5, str(sandbox.db), "malformed", "kbench will not write to it")
    _one_line_error(sandbox.run("results"), 5, "malformed")  # the real command, once
    assert file_digest(sandbox.db) == before


def test_a_truncated_database_is_refused_and_left_alone(sandbox: Sandbox) -> None:
    _two_runs(sandbox)
    data = sandbox.db.read_bytes()
    sandbox.db.write_bytes(data[: len(data) // 2])
    before = file_digest(sandbox.db)
    for command in (*READ_COMMANDS, ("run", "syscall.getppid", "--samples", "1000")):
        _one_line_error(sandbox.invoke(*command), 5, str(sandbox.db), "cut short")
    assert file_digest(sandbox.db) == before


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(sandbox: Sandbox) -> None:
    sandbox.db.write_text("my notes, not a database\n" * 10)
    before = file_digest(sandbox.db)
    for command in (*READ_COMMANDS, ("run", "syscall.getppid", "--samples", "1000")):
        _one_line_error(sandbox.invoke(*command), 5, "not a SQLite database")
    assert file_digest(sandbox.db) == before
    assert sorted(p.name for p in sandbox.root.iterdir()) == ["recovery", "results.db", "tmp"] or \
        sorted(p.name for p in sandbox.root.iterdir()) == ["results.db", "tmp"]


def test_a_database_on_a_read_only_file_system_can_be_read_not_written(
    sandbox: Sandbox, private_mounts: list[str]
) -> None:
    _two_runs(sandbox)
    expected = {" ".join(c): sandbox.run(*c).stdout for c in READ_COMMANDS}
    before = file_digest(sandbox.db)
    folder = sandbox.db.parent
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@"'
    for command in READ_COMMANDS:
        done = subprocess.run([*private_mounts, "sh", "-c", script, "sh", str(folder), *sandbox.argv(*command)],
                              capture_output=True, text=True, env=sandbox.env(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected[" ".join(command)]
    written = subprocess.run(
        [*private_mounts, "sh", "-c", script, "sh", str(folder),
         *sandbox.argv("run", "syscall.getppid", "--samples", "1000")],
        capture_output=True, text=True, env=sandbox.env(), timeout=120,
    )
    _one_line_error(written, 5, str(sandbox.db))
    assert file_digest(sandbox.db) == before
    assert [n for _, _, n, _ in run_rows(sandbox.db)] == [1000, 2000]
    assert list(sandbox.recovery.glob("*")) == []  # refused before measuring: nothing to recover


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "new"])
def test_a_writing_command_says_the_database_is_read_only_not_unable_to_open(
    sandbox: Sandbox, private_mounts: list[str], existing: bool
) -> None:
    """SQLite says "unable to open database file" for a WAL database it cannot make its
    journal files beside; kbench names the database and says it is read-only, and why."""
    if existing:
        _two_runs(sandbox)
        before = file_digest(sandbox.db)
    db = sandbox.db if existing else sandbox.root / "new.db"
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@"'
    done = subprocess.run(
        [*private_mounts, "sh", "-c", script, "sh", str(sandbox.root),
         *sandbox.argv("--db", str(db), "run", "syscall.getppid", "--samples", "100")],
        capture_output=True, text=True, env=sandbox.env(), timeout=120,
    )
    if existing:
        text = _one_line_error(done, 5, f"results database {db} is read-only (it is on a file system mounted "
                                        "read-only)", "commands that only read it")
        assert file_digest(sandbox.db) == before
    else:
        text = _one_line_error(done, 5, f"results database {db} cannot be created here (its directory is on a "
                                        "file system mounted read-only)")
        assert not db.exists()
    assert "unable to open" not in text


def test_a_database_file_this_user_may_not_write_is_read_only(sandbox: Sandbox) -> None:
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr: the file is made immutable (root may write any mode)")
    _two_runs(sandbox)
    before = file_digest(sandbox.db)
    if subprocess.run(["chattr", "+i", str(sandbox.db)], capture_output=True).returncode != 0:
        pytest.skip("this file system does not take the immutable attribute")
    try:
        done = sandbox.invoke("run", "syscall.getppid", "--samples", "100")
    finally:
        subprocess.run(["chattr", "-i", str(sandbox.db)], check=True)
    _one_line_error(done, 5, f"results database {sandbox.db} is read-only (this user may not write the file)")
    assert file_digest(sandbox.db) == before
    assert [n for _, _, n, _ in run_rows(sandbox.db)] == [1000, 2000]


def test_a_database_directory_that_cannot_be_made_is_one_line(sandbox: Sandbox) -> None:
    blocker = sandbox.root / "a-file"
    blocker.write_text("")
    done = sandbox.invoke("--db", str(blocker / "sub" / "results.db"), "run", "syscall.getppid", "--samples", "100")
    _one_line_error(done, 5, "cannot create its directory", str(blocker / "sub"))
    assert blocker.read_text() == ""


@pytest.mark.parametrize("target", ["missing-dir/out.json", "a-file/out.json"])
def test_an_export_that_cannot_be_written_is_refused_before_anything_is_read(sandbox: Sandbox, target: str) -> None:
    _two_runs(sandbox)
    (sandbox.root / "a-file").write_text("")
    output = sandbox.root / target
    done = sandbox.invoke("export", "1", "-o", str(output))
    _one_line_error(done, 2, "cannot write", str(output))
    assert not (sandbox.root / "missing-dir").exists() and (sandbox.root / "a-file").read_text() == ""


def test_import_of_a_file_in_no_known_format_is_refused(sandbox: Sandbox) -> None:
    junk = sandbox.root / "junk.json"
    junk.write_text('{"format": "kbench-recovery/1", "run": {}}')
    _one_line_error(sandbox.invoke("import", str(junk)), 2, "damaged recovery file")
    junk.write_text("not json at all")
    _one_line_error(sandbox.invoke("import", str(junk)), 2, "not in a format kbench can import")
    _one_line_error(sandbox.invoke("import", "--format", "recovery", str(junk)), 2, "cannot read it as a recovery file")
    assert not sandbox.db.exists()


def _two_imported_runs(sandbox: Sandbox) -> tuple[int, int]:
    """Two small runs (imported: no probe needed), everything in the main file; the page
    size and the runs table's root page (a leaf holding both rows)."""
    for command in ("sleep 0.01", "sleep 0.02"):
        path = sandbox.root / f"{command.split()[1]}.json"
        path.write_text(json.dumps({"results": [{"command": command, "times": [0.011, 0.012, 0.013]}]}))
        assert sandbox.invoke("import", str(path)).returncode == 0
    with sqlite3.connect(sandbox.db) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
        page_size = conn.execute("pragma page_size").fetchone()[0]
        root_page = conn.execute("select rootpage from sqlite_master where name = 'runs'").fetchone()[0]
        assert conn.execute("select count(*) from runs").fetchone() == (2,)
    return page_size, root_page


def test_a_runs_table_that_hides_its_rows_is_damaged_not_empty(sandbox: Sandbox) -> None:
    """The runs table's leaf page says it holds no cells: SQLite then reads no row without
    an error. `results`, `show` and `export` say the table is damaged (exit 5), not that
    there are no runs (exit 4), and leave the file as it is."""
    page_size, root_page = _two_imported_runs(sandbox)
    data = bytearray(sandbox.db.read_bytes())
    header = (root_page - 1) * page_size
    assert data[header] == 0x0D  # a table leaf
    data[header + 3: header + 5] = b"\x00\x00"  # its cell count
    sandbox.db.write_bytes(bytes(data))
    before = file_digest(sandbox.db)
    for command in (("results",), ("show", "1"), ("export", "2"), ("show", "999")):
        _one_line_error(sandbox.invoke(*command), 5, str(sandbox.db), "the runs table is damaged",
                        "kbench will not write to it")
    assert file_digest(sandbox.db) == before


def test_a_run_whose_stored_text_is_damaged_is_exit_5(sandbox: Sandbox) -> None:
    """The end of the leaf page (where SQLite put the first row) overwritten with NULs: the
    row still reads, its JSON does not."""
    page_size, root_page = _two_imported_runs(sandbox)
    data = bytearray(sandbox.db.read_bytes())
    end = root_page * page_size
    data[end - 200: end] = bytes(200)
    sandbox.db.write_bytes(bytes(data))
    _one_line_error(sandbox.invoke("show", "1"), 5, "run 1 is stored damaged")
    _one_line_error(sandbox.invoke("results"), 5, "a run is stored damaged")
    assert sandbox.invoke("show", "2").returncode == 0  # the other run is whole
