"""A failed execution is an outcome, never a time: run, compare, stored runs, suites and jobs.

Each case drives the real ``kbench`` command; the store is read back with the standard library's
sqlite3, not with kbench.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest

from kbench.bisect.demo import BUILD, COMMAND, make_demo_repo
from tests.e2e.conftest import KbenchRunner, as_json

EXECUTION_FAILED = 12


def _runs(db: Path) -> list[tuple[int, str, str | None, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT id, status, error, params FROM runs ORDER BY id"))


def _flaky(tmp_path: Path, every: int) -> Path:
    """A program that fails (exit 3, a line on stderr) at every ``every``-th execution, else does a little work."""
    script = tmp_path / "flaky.sh"
    count = tmp_path / "count"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))
        echo $n > {count}
        if [ $(( n % {every} )) -eq 0 ]; then echo "flaky: execution $n lost" >&2; exit 3; fi
        i=0; while [ $i -lt 200 ]; do i=$((i+1)); done
        """))
    script.chmod(0o755)
    return script


def _steady(tmp_path: Path) -> Path:
    script = tmp_path / "steady.sh"
    script.write_text("#!/bin/sh\ni=0; while [ $i -lt 200 ]; do i=$((i+1)); done\n")
    script.chmod(0o755)
    return script


def test_a_missing_program_fails_the_run_with_exit_status_127(kbench: KbenchRunner, db_path: Path) -> None:
    proc = kbench("run", "command", "-p", "cmd=/nonexistent/prog", "--samples", "3", check=False)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert "command '/nonexistent/prog' failed: exit status 127" in proc.stderr
    assert "/nonexistent/prog: not found" in proc.stderr  # the shell's own words, its stderr's last line
    assert proc.stdout == ""
    [(_, status, error, _)] = _runs(db_path)
    assert status == "failed" and "exit status 127" in (error or "")


def test_a_program_killed_by_a_signal_fails_the_run(kbench: KbenchRunner) -> None:
    proc = kbench("run", "command", "-p", "cmd=kill -KILL $$", "--samples", "3", check=False)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert "killed by signal 9" in proc.stderr


def test_a_failing_system_call_fails_the_run_with_its_error(kbench: KbenchRunner) -> None:
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1":
        pytest.skip("vm.overcommit_memory=1: every mmap() succeeds here")
    proc = kbench("run", "syscall.mmap_munmap", "-p", f"size={64 << 30}", "--samples", "100", check=False)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert "syscall.mmap_munmap failed: Cannot allocate memory" in proc.stderr


def test_ignore_failure_times_them_and_counts_them(kbench: KbenchRunner, tmp_path: Path) -> None:
    flaky = _flaky(tmp_path, every=2)
    run = as_json(kbench("run", "command", "-p", f"cmd={flaky}", "--samples", "6", "--warmup", "2",
                         "--ignore-failure", "--json"))
    assert run["status"] == "complete" and run["n"] == 6
    assert run["failed_executions"] == 3  # executions 3..8 measured: 4, 6 and 8 failed
    assert any(w.startswith("failed executions: 3 in the 6 measured samples") for w in run["warnings"])


def test_compare_names_the_failing_side(kbench: KbenchRunner, tmp_path: Path) -> None:
    steady, flaky = _steady(tmp_path), _flaky(tmp_path, every=3)
    proc = kbench("compare", "--command", str(steady), "--command", str(flaky), "--budget", "60s", "--blocks", "8",
                  check=False, timeout=300)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert f"side {flaky}: command '{flaky}' failed: exit status 3" in proc.stderr
    assert "flaky: execution" in proc.stderr and "lost" in proc.stderr
    assert "regression" not in proc.stdout and "improvement" not in proc.stdout


def test_compare_with_ignore_failure_prints_the_count_beside_the_verdict(
    kbench: KbenchRunner, tmp_path: Path, db_path: Path
) -> None:
    steady, flaky = _steady(tmp_path), _flaky(tmp_path, every=3)
    report = as_json(kbench("compare", "--command", str(steady), "--command", str(flaky), "--budget", "60s",
                            "--blocks", "8", "--ignore-failure", "--json", timeout=180))
    executions = int((tmp_path / "count").read_text())
    counted = report["parameters"]["failed executions"]
    failures = {label: int(n) for label, n in (part.rsplit(": ", 1) for part in counted.split(", "))}
    assert failures[str(steady)] == 0
    # every 3rd execution failed; some fall in the pilot block and the slots' warm-up, which are not judged
    assert 0 < failures[str(flaky)] <= executions // 3
    primary = report["metrics"][0]
    assert any(w.startswith("failed executions timed (--ignore-failure)") for w in primary["warnings"])
    # Stored runs that timed failures are refused unless the comparison accepts them too.
    runs = {int(part.split("=")[1]) for part in report["parameters"]["runs"].split()}
    base, new = sorted(runs)
    refused = kbench("compare", "--runs", str(base), "--runs", str(new), check=False)
    assert refused.returncode == 2
    assert f"run {new} timed {failures[str(flaky)]}" in refused.stderr and "--ignore-failure" in refused.stderr
    again = kbench("compare", "--runs", str(base), "--runs", str(new), "--ignore-failure")
    assert "failed executions" in again.stdout


def test_a_failing_suite_tool_fails_the_run_with_its_exit_status(kbench: KbenchRunner) -> None:
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    proc = kbench("run", "fio.write", "-p", "size=8M", "-p", "runtime=1", "-p", "directory=/nonexistent/kbench",
                  check=False, timeout=120)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert "fio.write (iteration 1:" in proc.stderr and "failed: exit status 1" in proc.stderr


def test_a_job_stops_at_the_instance_whose_program_fails(kbench: KbenchRunner, tmp_path: Path,
                                                         db_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text('benchmark: command\nparams:\n  cmd: ["true", "exit 5"]\nsamples: 3\n')
    proc = kbench("run", str(job), check=False)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert "command 'exit 5' failed: exit status 5" in proc.stderr
    statuses = {json.loads(params)["cmd"]: status for _, status, _, params in _runs(db_path)}
    assert statuses == {"true": "complete", "exit 5": "failed"}
    # ignore_failure: in the job, the same instance is timed and its failures counted
    job.write_text('benchmark: command\nparams:\n  cmd: "exit 5"\nsamples: 3\nignore_failure: true\n')
    ran = as_json(kbench("run", str(job), "--json"))
    assert ran  # the job's summary
    last = _runs(db_path)[-1]
    assert last[1] == "complete"


def test_sensitivity_names_the_failing_configuration(kbench: KbenchRunner, tmp_path: Path) -> None:
    steady, flaky = _steady(tmp_path), _flaky(tmp_path, every=2)
    proc = kbench("sensitivity", "--command", str(steady), "--command", str(flaky), "--budget", "60s", check=False,
                  timeout=300)
    assert proc.returncode == EXECUTION_FAILED, proc.stderr
    assert f"side {flaky}: command '{flaky}' failed: exit status 3" in proc.stderr


# A build that makes commit "step 3"'s program fail (exit 3) and every other commit's work.
FAILING_STEP = 3
FAILING_BUILD = (f"{BUILD} && if git log -1 --format=%s | grep -q '^step {FAILING_STEP}:'; then "
                 "printf '#!/bin/sh\\necho cannot open input >&2\\nexit 3\\n' > prog; fi")


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")
def test_bisect_skips_a_commit_whose_program_fails_and_names_the_culprit(kbench: KbenchRunner,
                                                                          tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=8, culprit=5, broken=None, extra=0.2)
    proc = kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build",
                  FAILING_BUILD, "--command", COMMAND, "--samples", "10", "--metric", "cpu", "--json", timeout=600)
    report = as_json(proc)
    assert report["first_bad"]["sha"] == shas[5] and report["confirmed"] is True, proc.stderr
    skipped = [s for s in report["steps"] if s["verdict"] == "skip"]
    assert [s["commit"] for s in skipped] == [shas[FAILING_STEP]], proc.stderr
    assert skipped[0]["reason"].startswith("program failed: ") and "exit status 3" in skipped[0]["reason"]
    assert "cannot open input" in skipped[0]["reason"] and skipped[0]["trials"] == []


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")
def test_watch_marks_a_commit_whose_program_fails_and_times_it_never(kbench: KbenchRunner, tmp_path: Path,
                                                                     db_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=5, culprit=None, broken=None, extra=0.0)
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: command\nparams:\n  cmd: ./prog\nsamples: 5\niterations: 2\n")
    polled = as_json(kbench("watch", str(repo), "--build", FAILING_BUILD, "--job", str(job), "--once", "--json",
                            "--from", shas[0], "--budget", "10s", "--outbox", str(tmp_path / "out"), timeout=600))
    states = {c["sha"]: (c["state"], c.get("error") or "") for c in polled["commits"]}
    failing = states.pop(shas[FAILING_STEP])
    assert failing[0] == "failed" and failing[1].startswith("program failed: ") and "exit status 3" in failing[1]
    assert {state for state, _ in states.values()} == {"measured"}
    with sqlite3.connect(db_path) as conn:
        timed = [params for (params,) in conn.execute("select params from runs where status = 'complete'")]
    assert not [p for p in timed if shas[FAILING_STEP][:12] in p]  # no complete run of that commit
