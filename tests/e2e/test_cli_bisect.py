"""kbench bisect through the CLI on a generated git repository of a small C program.

The culprit adds 5% more work to the hot loop. The trial statistic is the command's CPU
time (``--metric cpu``): this 2-CPU VM is shared with other load, which makes wall times
bimodal (15 or 30 ms for one program), while the user + system time of the child stays
within ~2%. At 5% against that spread the simulation (benchmarks/bisect_rounds.py, the
same driver) names the right commit in 300 of 300 bisections of 16..256 commits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbench.bisect.demo import BUILD, COMMAND, make_demo_repo
from tests.e2e.conftest import KbenchRunner, as_json

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")

CULPRIT, BROKEN = 13, 9  # commit 9 is the first midpoint of 19 commits: the search must skip it
MEASURE = ("--build", BUILD, "--command", COMMAND, "--samples", "10", "--metric", "cpu")


def _start_args(repo: Path, shas: list[str], workdir: Path) -> list[str]:
    return ["bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", *MEASURE,
            "--workdir", str(workdir)]


def _saved_steps(db_path: Path) -> int:
    """Steps saved so far, read without opening the store (no write lock taken)."""
    if not db_path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute("select steps from bisections order by id desc limit 1").fetchone()
    except sqlite3.OperationalError:  # not created yet, or busy
        return 0
    return len(json.loads(row[0])) if row else 0


def _checkout_untouched(repo: Path, head: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout
    assert git("rev-parse", "HEAD").strip() == head
    assert git("status", "--porcelain") == ""
    assert len(git("worktree", "list").splitlines()) == 1  # the worktrees were removed


def test_bisect_names_the_culprit_and_skips_the_broken_commit(kbench: KbenchRunner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=20, culprit=CULPRIT, broken=BROKEN, extra=0.05)
    page = tmp_path / "bisect.html"
    report = as_json(kbench(*_start_args(repo, shas, tmp_path / "wt"), "--json", "--html", str(page), timeout=300))
    assert {"first_bad", "steps", "change_pct", "ci_pct", "p_value", "status"} <= report.keys()
    assert report["status"] == "done"
    assert report["first_bad"]["sha"] == shas[CULPRIT]
    assert report["first_bad"]["subject"] == f"step {CULPRIT}: more work in the hot loop"
    assert report["first_bad"]["author"] == "Kay Bench <kay@example.org>"
    skipped = [step for step in report["steps"] if step["verdict"] == "skip"]
    assert [step["commit"] for step in skipped] == [shas[BROKEN]]
    assert skipped[0]["reason"].startswith("build failed")
    assert 2 < report["change_pct"] < 9 and report["ci_pct"][0] > 0 and report["p_value"] < 0.05
    assert len([s for s in report["steps"] if s["phase"] == "search"]) <= 6  # ~log2(19) + the skip
    for step in report["steps"]:
        assert {"commit", "subject", "trials", "median", "verdict"} <= step.keys()
    _checkout_untouched(repo, shas[-1])
    text = kbench("bisect", "status").stdout
    assert f"first bad commit: {shas[CULPRIT]}" in text and "skip" in text and "change vs its parent " in text
    html = page.read_text()
    assert f'data-sha="{shas[CULPRIT]}"' in html and 'id="steps-table"' in html and "<svg" in html
    again = tmp_path / "again.html"
    kbench("bisect", "status", "--html", str(again))
    assert again.read_text() == html  # rendered from the store alone
    # Every trial is a stored run of the command benchmark, tagged with the bisection.
    runs = as_json(kbench("results", "--json"))
    assert runs and all(f"bisect:{report['id']}" in (r.get("tags") or []) for r in runs)


def test_equal_good_and_bad_end_with_no_reproducible_difference(kbench: KbenchRunner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=16, culprit=None, broken=None)
    proc = kbench(*_start_args(repo, shas, tmp_path / "wt"), check=False, timeout=200)
    assert proc.returncode == 10, proc.stderr
    assert "no reproducible difference between G and B" in proc.stdout
    status = kbench("bisect", "status", "--json", check=False)
    assert status.returncode == 10 and as_json(status)["status"] == "no-difference"
    assert as_json(status)["steps"] == [] and as_json(status)["first_bad"] is None
    _checkout_untouched(repo, shas[-1])
    bad_rev = kbench("bisect", "start", "--repo", str(repo), "--good", "nope", "--bad", "main", *MEASURE,
                     check=False)
    assert bad_rev.returncode == 11 and "'nope' is not a commit" in bad_rev.stderr
    missing = kbench("bisect", "status", "99", check=False)
    assert missing.returncode == 4 and "no bisection with id 99" in missing.stderr


def test_resume_after_a_kill_finishes_with_the_same_answer(
    kbench: KbenchRunner, db_path: Path, tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=20, culprit=CULPRIT, broken=BROKEN, extra=0.05)
    env = dict(os.environ, KBENCH_DB=str(db_path))
    log = tmp_path / "start.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "kbench.cli", *_start_args(repo, shas, tmp_path / "wt")],
                                env=env, stdout=subprocess.DEVNULL, stderr=err)
        steps = 0
        deadline = time.monotonic() + 150
        try:
            while steps < 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
                steps = _saved_steps(db_path)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert steps >= 2, f"the bisection did not get two steps in:\n{log.read_text()}"
    killed = as_json(kbench("bisect", "status", "--json"))
    assert killed["status"] == "running" and killed["first_bad"] is None
    done = as_json(kbench("bisect", "resume", "--json", timeout=200))
    assert done["status"] == "done" and done["first_bad"]["sha"] == shas[CULPRIT]
    assert done["steps"][: len(killed["steps"])] == killed["steps"]  # the saved steps were kept, not redone
    assert len({step["commit"] for step in done["steps"] if step["phase"] == "search"}) == len(
        [step for step in done["steps"] if step["phase"] == "search"])
    _checkout_untouched(repo, shas[-1])
    reset = kbench("bisect", "reset")
    assert "worktrees removed" in reset.stderr


def test_the_oracle_drives_git_bisect_run(db_path: Path, tmp_path: Path) -> None:
    # 10 commits: the culprit (+10%) at 6, commit 3 does not build (the oracle says skip: 125).
    # The oracle judges each commit afresh with no re-check at the boundary (git bisect run
    # keeps no state for it), so a weak decision at 5% is a skip that can leave git with
    # only skipped commits on a noisy machine (seen once in CI). This test checks the git
    # integration and the exit codes; the driver's tests above plant 5%.
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=10, culprit=6, broken=3, extra=0.10)
    runner = tmp_path / "kbench"
    runner.write_text(f"#!/bin/sh\nexec {sys.executable} -m kbench.cli \"$@\"\n")
    runner.chmod(0o755)
    env = dict(os.environ, KBENCH_DB=str(db_path), XDG_CACHE_HOME=str(tmp_path / "cache"))

    def git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=check,
                              timeout=400)

    oracle = [str(runner), "bisect", "oracle", "--good", shas[0], "--bad", shas[-1], *MEASURE]
    git("checkout", "-q", shas[3])
    broken = subprocess.run(oracle, cwd=repo, capture_output=True, text=True, env=env, timeout=120)
    assert broken.returncode == 125 and "build failed" in broken.stderr
    git("checkout", "-q", "main")
    assert subprocess.run(oracle, cwd=repo, capture_output=True, text=True, env=env).returncode == 1  # B itself

    git("bisect", "start", shas[-1], shas[0])
    run = git("bisect", "run", *oracle, check=False)
    assert f"{shas[6]} is the first bad commit" in run.stdout, run.stdout + run.stderr
    log = git("bisect", "log").stdout
    assert f"# skip: [{shas[3]}]" in log or shas[3] not in log  # skipped if the search reached it
    git("bisect", "reset")
    assert git("status", "--porcelain").stdout == ""
    assert not list((tmp_path / "cache" / "kbench" / "bisect").glob("oracle-*/*"))  # worktrees removed

    # A usage error must abort `git bisect run` (exit 255), not read as "bad" (exit 2).
    git("bisect", "start", shas[-1], shas[0])
    aborted = git("bisect", "run", str(runner), "bisect", "oracle", "--good", shas[0], "--bad", shas[-1],
                  "--build", BUILD, check=False)
    assert aborted.returncode != 0 and "the oracle needs --build and --command" in aborted.stderr
    assert "is the first bad commit" not in aborted.stdout
    git("bisect", "reset")


@pytest.mark.parametrize(("options", "message"), [
    (("--build", BUILD), "give --build and --command"),
    (("--build", BUILD, "--command", COMMAND, "--module", "m.c", "--kernel", "deb:x"), "exclude each other"),
    (("--module", "m.c"), "--module needs --kernel"),
    (("--build", BUILD, "--command", COMMAND, "--kernel", "deb:x"), "--kernel goes with --module"),
    (("--build", "make", "--kernel-from-build", "arch/x86/boot/bzImage"), "needs --build"),
    (("--kernel-from-build", "vmlinuz", "--benchmark", "syscall.getppid"), "needs --build"),
    (("--build", "make", "--kernel-from-build", "vmlinuz", "--benchmark", "syscall.getpid"), "did you mean"),
    (("--build", "make", "--kernel-from-build", "vmlinuz", "--benchmark", "syscall.getppid", "--module", "m.c"),
     "goes without --module"),
    (("--build", BUILD, "--command", COMMAND, "--kernel-modules", "mods"), "--kernel-modules goes with"),
    (("--build", BUILD, "--command", COMMAND, "--trials", "9", "--max-trials", "4"), "more than --max-trials"),
])
def test_what_to_measure_is_checked_before_anything_runs(
    kbench: KbenchRunner, tmp_path: Path, options: tuple[str, ...], message: str,
) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=3, culprit=None, broken=None)
    proc = kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", *options, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert kbench("bisect", "status", check=False).returncode == 4  # nothing was started


@pytest.mark.parametrize(("options", "message"), [
    (("--benchmark", "syscall.getppid", "--build", "make"), "--kernel-tree builds each commit's kernel itself"),
    (("--benchmark", "syscall.getppid", "--kernel-modules", "mods"), "goes without --build and --kernel-modules"),
    (("--benchmark", "syscall.getppid", "--kernel-from-build", "vmlinuz"), "exclude each other"),
    ((), "--kernel-tree needs --benchmark"),
    (("--benchmark", "syscall.getppid", "--command", "./prog"), "goes without --module, --command"),
])
def test_a_kernel_tree_bisection_takes_no_build_command(
    kbench: KbenchRunner, tmp_path: Path, options: tuple[str, ...], message: str,
) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=3, culprit=None, broken=None)
    proc = kbench("bisect", "start", "--kernel-tree", str(repo), "--good", shas[0], "--bad", "main", *options,
                  check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    watch = kbench("watch", str(repo), "--kernel-tree", "--build", "make", "--job", str(repo / "prog.c"), "--once",
                   check=False)
    assert watch.returncode == 2 and "--kernel-tree builds each commit's kernel itself" in watch.stderr
    assert kbench("bisect", "status", check=False).returncode == 4  # nothing was started


@pytest.mark.parametrize(("job", "extra", "message"), [
    ("benchmark: syscall.read_devzero\nparams:\n  size: [1, 512]\nsamples: 1000\n", (), "expands to 2 instances"),
    ("benchmark: syscall.getppid\nruntime: 2s\n", (), "give `samples`, not a runtime"),
    ("benchmark: syscall.getppid\nsamples: 1000\n", ("--benchmark", "syscall.getppid"), "--job gives the benchmark"),
    ("benchmark: syscall.getppid\nsamplez: 1000\n", (), "job.yaml:2: samplez"),
    ("kernel: deb:6.1.0-56-amd64\nbenchmark: syscall.getppid\nsamples: 100\n", (), "has no place in a bisection"),
])
def test_a_job_file_names_what_a_kernel_bisection_measures(
    kbench: KbenchRunner, tmp_path: Path, job: str, extra: tuple[str, ...], message: str,
) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=3, culprit=None, broken=None)
    (tmp_path / "job.yaml").write_text(job)
    proc = kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "false",
                  "--kernel-from-build", "arch/x86/boot/bzImage", "--job", str(tmp_path / "job.yaml"), *extra,
                  check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_a_job_file_of_one_instance_is_measured(kbench: KbenchRunner, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=3, culprit=None, broken=None)
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: syscall.read_devzero\nparams:\n  size: 512\nsamples: 3000\n")
    # The build makes no kernel, so the good end is refused before anything boots (exit 11).
    proc = kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "false",
                  "--kernel-from-build", "arch/x86/boot/bzImage", "--job", str(job), check=False)
    assert proc.returncode == 11 and "good commit" in proc.stderr and "does not build" in proc.stderr
    report = as_json(kbench("bisect", "status", "--json", check=False))
    params = report["params"]
    assert params["kind"] == "kernel" and params["benchmark"] == "syscall.read_devzero"
    assert params["bench_params"] == {"size": "512"} and params["samples"] == 3000
    with_command = kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build",
                          BUILD, "--command", COMMAND, "--job", str(job), check=False)
    assert with_command.returncode == 2 and "--job goes with --module, --kernel-from-build or --kernel-tree" in \
        with_command.stderr
