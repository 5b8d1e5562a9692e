"""`kbench run --commit/--label` stores the version measured; `kbench history` shows it; start-up stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from kbench.store.db import Store

KBENCH = str(Path(sys.executable).parent / "kbench")


def kbench(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KBENCH, "--db", str(db), *args], capture_output=True, text=True, timeout=300)


def git_repo(path: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.org"}
    path.mkdir()
    subprocess.run(["git", "-C", str(path), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "--allow-empty", "-m", "one"], check=True, env=env)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def stored_versions(db: Path) -> list[tuple[str | None, str | None]]:
    store = Store.open(f"sqlite:///{db}")
    with store.engine.connect() as conn:
        rows = conn.execute(text('SELECT "commit", label FROM runs ORDER BY id')).all()
    store.engine.dispose()
    return [(row[0], row[1]) for row in rows]


def test_run_stores_the_commit_given_as_an_id_or_as_a_checkout(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    head = git_repo(tmp_path / "repo")
    assert kbench(db, "run", "syscall.getppid", "--samples", "200", "--commit", "ABCDEF1234",
                  "--label", "nightly-1").returncode == 0
    assert kbench(db, "run", "syscall.getppid", "--samples", "200", "--commit", str(tmp_path / "repo")).returncode == 0
    assert stored_versions(db) == [("abcdef1234", "nightly-1"), (head, None)]
    data = json.loads(kbench(db, "history", "syscall.getppid", "--json").stdout)
    (series,) = data["series"]
    assert [(p["commit"], p["label"]) for p in series["points"]] == [("abcdef1234", "nightly-1"), (head, None)]
    assert set(series) >= {"benchmark", "params", "metric", "machine", "points", "change_points"}
    shown = kbench(db, "history").stdout
    assert "syscall.getppid.latency" in shown and head[:12] in shown and "nightly-1" in shown


def test_a_job_file_run_stores_the_commit_on_every_instance(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    job = tmp_path / "nightly.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 200\niterations: 2\n")
    proc = kbench(db, "run", str(job), "--commit", "0123abcd", "--label", "n7")
    assert proc.returncode == 0, proc.stderr
    assert stored_versions(db) == [("0123abcd", "n7"), ("0123abcd", "n7")]


@pytest.mark.parametrize(("args", "message"), [
    (("--commit", "not-a-sha"), "not a commit id"),
    (("--commit", "abc"), "not a commit id"),
    (("--label", ""), "1 to 255 characters"),
])
def test_a_bad_version_is_refused_before_anything_runs(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    db = tmp_path / "k.db"
    proc = kbench(db, "run", "syscall.getppid", "--samples", "200", *args)
    assert proc.returncode == 2 and message in proc.stderr
    assert not db.exists() or stored_versions(db) == []


def test_a_directory_that_is_no_checkout_is_refused(tmp_path: Path) -> None:
    proc = kbench(tmp_path / "k.db", "run", "syscall.getppid", "--commit", str(tmp_path))
    assert proc.returncode == 2 and "not a git checkout" in proc.stderr


def test_kbench_help_imports_no_web_plot_or_change_point_library() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom kbench.cli.main import cli\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn', 'jinja2', 'plotly', 'otava', 'playwright')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_dashboard_engine_refuses_writes(tmp_path: Path, postgres_url: str) -> None:
    from kbench.web.server import read_only_engine

    db = tmp_path / "k.db"
    Store.open(f"sqlite:///{db}").engine.dispose()
    for url in (f"sqlite:///{db}", postgres_url):
        engine = read_only_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() >= 0
            with pytest.raises(Exception, match=r"(?i)read.only|readonly|query_only|attempt to write"):
                conn.execute(text("INSERT INTO kbench_meta (key, value) VALUES ('x', 'y')"))
        engine.dispose()
    from kbench.store.db import StoreError

    with pytest.raises(StoreError, match="no results database"):
        read_only_engine(f"sqlite:///{tmp_path / 'missing.db'}")
