"""`kbench watch --fleet`: commits measured by two workers at once, the verdict reached through fleet tasks.

Real Redis and PostgreSQL (tests/services.py), two ``kbench worker --allow-command`` processes
of one machine class. The repository's commit 6 adds 5 % work to the program's loop; the
watch builds 4 of its 12 commits (``--max-commits 4``: 0, 4, 7 and 11), one task each, so
the step lies in 4..7 and is bisected: the bisection's builds and rounds are fleet tasks too,
then the verification. Sized as tests/e2e/test_cli_watch.py explains (5 % here, the whole loop's
comparisons find it with p far below alpha).
"""

from __future__ import annotations

import email
import json
import shutil
from email import policy
from pathlib import Path

import pytest

from kbench.bisect.demo import BUILD, make_demo_repo
from tests.fleet.conftest import FleetHarness

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")


def test_a_watch_on_two_fleet_workers_names_the_culprit(fleet: FleetHarness, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    culprit = 6
    shas = make_demo_repo(repo, commits=12, culprit=culprit, broken=None, extra=0.05)
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: command\nparams:\n  cmd: ./prog\nsamples: 10\niterations: 3\n")
    fleet.start_worker("lab-1", "watchers", "--allow-command")
    fleet.start_worker("lab-2", "watchers", "--allow-command")
    proc = fleet.kbench("watch", str(repo), "--build", BUILD, "--job", str(job), "--from", shas[0], "--once",
                        "--json", "--fleet", "watchers", "--outbox", str(tmp_path / "out"),
                        "--workdir", str(tmp_path / "work"), "--max-commits", "4", timeout=1200)
    result = json.loads(proc.stdout)
    built = [shas[i] for i in (0, 4, 7, 11)]
    # the poll accounts for every new commit: those --max-commits picked were measured, the others
    # are listed untested (a bisection may measure some of them later, under its own name)
    states = {c["sha"]: c["state"] for c in result["commits"]}
    assert sorted(states) == sorted(shas), proc.stderr
    assert sorted(sha for sha, state in states.items() if state == "measured") == sorted(built), proc.stderr
    assert {state for sha, state in states.items() if sha not in built} == {"untested"}, proc.stderr
    assert len(result["regressions"]) == 1, proc.stderr
    (found,) = result["regressions"]
    assert found["culprit"]["sha"] == shas[culprit] and found["confirmed"] is True and found["change_pct"] > 2
    assert found["bisect_id"] is not None
    (mail,) = [email.message_from_bytes(p.read_bytes(), policy=policy.default)
               for p in (tmp_path / "out").glob("*.eml")]
    assert f"commit: {shas[culprit]}" in mail.get_content()

    with fleet.engine.connect() as conn:
        from sqlalchemy import text

        tasks = [dict(r) for r in conn.execute(text(
            "select kind, state, machine, run_ids, spec from fleet_tasks order by created_at")).mappings()]
        good, bad = conn.execute(text("select good, bad from bisections where id = :i"),
                                 {"i": found["bisect_id"]}).one()
    measured = [t for t in tasks if t["kind"] == "watch-commit"]
    assert len(measured) == 4 and {t["state"] for t in measured} == {"done"}
    assert {t["machine"] for t in measured} == {"lab-1", "lab-2"}  # the commits were shared by both workers
    assert sorted(t["spec"]["commits"][0] for t in measured) == sorted(built)
    rounds = [t for t in tasks if t["kind"] == "watch-round" and f"bisect:{found['bisect_id']}" in t["spec"]["tags"]]
    assert rounds and {t["state"] for t in rounds} == {"done"}  # the bisection measured on the workers
    # the check and each step measure good and bad in every round; the evidence, the culprit and its parent
    assert sum(set(t["spec"]["commits"]) >= {good, bad} for t in rounds) >= 2
    compares = [t for t in tasks if t["kind"] == "watch-compare"]
    assert len(compares) >= 2 and {t["state"] for t in compares} == {"done"}  # confirm and verify
    # every run is stored once, by the worker that measured it, tagged with the watch
    runs = fleet.runs()
    assert runs and all("watch:1" in r["tags"] for r in runs)
    assert {r["id"] for r in runs} == {i for t in tasks for i in t["run_ids"]}
    assert len([r for r in runs if any(tag.startswith("worker:lab-") for tag in r["tags"])]) == len(runs)
