"""Bisect and watch kernel commits that kbench builds itself (``--kernel-tree``), on the real tree.

The ``series`` branch of tests/vm/kernel_tree.py: six commits on Debian's linux-source-6.1
(comments, a lost semicolon in ``getppid()``, the semicolon back, ``getppid()`` looking its
parent up forty times, a last comment). Every kernel is built by kbench in its one workspace of
the tree (incremental; the tarball's kernel is the session's full build, test_kernel_tree.py's
``tree_kernel``) and found in the cache of built kernels by the next test and the next session:
the bisection builds five kernels (the fourth commit has the second's tree, so it is found
built), the watch none. Each trial boots its kernel afresh (~5 s under TCG).

Wall time here (2 vCPUs, TCG; docs/PERFORMANCE.md), kernels built before: the bisection 297 s at
load ≈ 2 (995 s at load 6-8: 104 trials, each its own boot), the watch 535 s at load ≈ 2 (978 s
at load 6-8); five incremental builds add 25-80 s each the first time. Time goes to boots, not builds. The watch
is a soak test (``make test-all``): CI's bounded run keeps the bisection, which builds the
kernels and confirms the culprit the same way.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from email import message_from_bytes
from pathlib import Path

import pytest

from tests.vm.kernel_tree import BROKEN, CULPRIT, SERIES, git, series_repo

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]


def kbench(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ, KBENCH_DB=str(db), COLUMNS="120"), timeout=3000)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def series() -> tuple[Path, list[str]]:
    return series_repo()


def broken_error(repo: Path, sha: str) -> str:
    """gcc's first error for the lost semicolon, as ``kbench kernel build`` prints it."""
    lines = git(repo, "show", f"{sha}:kernel/sys.c").splitlines()
    (number,) = [i + 1 for i, line in enumerate(lines) if line == "	rcu_read_unlock()"]
    return f"kernel/sys.c:{number}: error: expected ';' before 'return'"


def test_bisect_names_the_planted_commit_confirmed_and_skips_the_one_that_does_not_build(
        series: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, shas = series
    proc = kbench("bisect", "start", "--kernel-tree", str(repo), "--good", "main~1", "--bad", "series",
                  "--benchmark", "syscall.getppid", "--json", db=tmp_path / "k.db")
    report = json.loads(proc.stdout)
    assert report["status"] == "done", report
    assert report["first_bad"]["sha"] == shas[CULPRIT] and report["confirmed"] is True, report
    assert report["change_pct"] > 5 and report["params"]["image"] == "tree:"
    assert report["command"] == "syscall.getppid in each commit's kernel, built by kbench"
    skipped = [step for step in report["steps"] if step["verdict"] == "skip"]
    assert [step["commit"] for step in skipped] == [shas[BROKEN]]
    assert skipped[0]["reason"] == f"build failed: {broken_error(repo, shas[BROKEN])}"
    # each trial's run carries its kernel: kbench's build of that commit
    with sqlite3.connect(f"file:{tmp_path / 'k.db'}?mode=ro", uri=True) as conn:
        run_id, tags = conn.execute("select id, tags from runs order by id desc limit 1").fetchone()
    run = json.loads(kbench("show", str(run_id), "--json", db=tmp_path / "k.db").stdout)
    (tagged,) = [tag.removeprefix("commit:") for tag in json.loads(tags) if tag.startswith("commit:")]
    # the kernel of that commit's tree (two commits of one tree are one kernel: the store keeps the first's commit)
    assert git(repo, "rev-parse", f"{run['kernel']['commit']}^{{tree}}") == git(repo, "rev-parse", f"{tagged}^{{tree}}")
    assert run["kernel"]["config_digest"]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # the user's checkout untouched


@pytest.mark.soak  # ~100 guest boots (16 min at load 6-8): make test-all, not CI's bounded run
def test_watch_mails_the_planted_commit(series: tuple[Path, list[str]], tmp_path: Path) -> None:
    """``--max-commits 3`` measures the tarball, the broken commit and the head; the head check,
    a bisection and the culprit against its parent follow, then the mail."""
    repo, shas = series
    job = tmp_path / "getppid.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 2000\n")
    outbox = tmp_path / "outbox"
    proc = kbench("watch", str(repo), "--kernel-tree", "--branch", "series", "--job", str(job), "--from", "main~1",
                  "--max-commits", "3", "--outbox", str(outbox), "--once", "--json", db=tmp_path / "k.db")
    result = json.loads(proc.stdout)
    states = {c["sha"]: c for c in result["commits"]}
    assert states[shas[BROKEN]]["state"] == "build-failed"
    assert states[shas[BROKEN]]["error"] == f"build failed: {broken_error(repo, shas[BROKEN])}"
    assert states[shas[-1]]["state"] == states[git(repo, "rev-parse", "main~1")]["state"] == "measured"
    (regression,) = result["regressions"]
    assert regression["culprit"]["sha"] == shas[CULPRIT], result
    (mail,) = sorted(outbox.glob("*.eml"))
    message = message_from_bytes(mail.read_bytes())
    assert message["X-Kbench-Culprit"] == shas[CULPRIT]
    body = message.get_payload(decode=True).decode()
    assert SERIES[CULPRIT] in body
    assert "# kernel config: " in body and ", 0 options differ from the parent's" in body
    assert f"kbench compare --kernel 'tree:{repo}@{shas[CULPRIT]}^' --kernel tree:{repo}@{shas[CULPRIT]} " \
           "syscall.getppid" in body
