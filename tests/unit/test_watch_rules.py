"""kbench watch's small rules, each against values worked out by hand: which commits a poll builds,
how a range widens, when a comparison holds, when a candidate is one already met, reverts, the mail."""

from __future__ import annotations

import email
import subprocess
from email import policy
from pathlib import Path

import pytest

from kbench.builds.compare import BuildComparison, SideSummary
from kbench.history.confirmed import Side
from kbench.report.lkp_table import Cell, Row, lkp_table
from kbench.report.units import format_measure
from kbench.store.db import Store
from kbench.store.watch import WatchStore
from kbench.watch.loop import Watch, WatchOptions, _covered, sample
from kbench.watch.mail import RegressionMail, message, post
from kbench.watch.verdicts import holds, widen


def test_a_poll_builds_at_most_n_commits_evenly_spaced_with_the_first_and_the_newest() -> None:
    commits = [f"c{i}" for i in range(10)]
    assert sample(commits, None) == commits and sample(commits, 12) == commits
    assert sample(commits, 4) == ["c0", "c3", "c6", "c9"]
    assert sample(commits, 2) == ["c0", "c9"] and sample(commits, 1) == ["c9"]
    assert sample(commits[:4], 3) == ["c0", "c2", "c3"]  # round half to even: 1.5 -> 2


def test_a_range_widens_by_as_many_measured_commits_again_at_least_three() -> None:
    line = [f"c{i}" for i in range(20)]
    measured = set(line) - {"c4", "c5"}  # two commits were not built
    assert widen(line, measured, "c9", "c10") == ("c6", "c13")  # three measured commits on each side
    # five measured inside: five more a side, c8 c7 c6 c3 c2 before (c4, c5 skipped), c15..c19 after
    assert widen(line, measured, "c9", "c14") == ("c2", "c19")
    assert widen(line, measured, "c0", "c19") is None  # nothing left to add


def test_widening_near_the_ends_stops_at_them() -> None:
    line = [f"c{i}" for i in range(6)]
    assert widen(line, set(line), "c0", "c1") == ("c0", "c4")
    assert widen(line, set(line), "c4", "c5") == ("c1", "c5")
    assert widen(line, set(line), "cX", "c5") is None  # not on the line (force-pushed away)


def _comparison(word: str, change_pct: float) -> BuildComparison:
    return BuildComparison(SideSummary("a", 1.0, 1.0, 10), SideSummary("b", 1.0, 1.0, 10),
                           {"verdict": word, "change_pct": change_pct, "ci_pct": [0.0, 0.0], "p_value": 0.01},
                           10, 1.0, "", [])


@pytest.mark.parametrize(("word", "change", "kind", "expected"), [
    ("regression", 2.0, "regression", True),
    ("regression", 0.6, "regression", False),  # real, but smaller than the 1 % worth a culprit
    ("improvement", -2.0, "regression", False),
    ("no change", 0.1, "regression", False),
    ("improvement", -1.5, "fix", True),
    ("improvement", -0.5, "fix", False),
    ("inconclusive", 3.0, "regression", False),
])
def test_a_comparison_holds_only_in_the_finding_s_direction_and_large_enough(
    word: str, change: float, kind: str, expected: bool,
) -> None:
    assert holds(_comparison(word, change), kind, 1.0) is expected


def test_a_candidate_overlapping_a_finding_s_range_or_holding_its_culprit_is_that_finding() -> None:
    position = {f"c{i}": i for i in range(20)}
    dropped = {"kind": "regression", "candidate": {"good": "c4", "bad": "c6"}, "good": "c4", "bad": "c6",
               "culprit": None}
    confirmed = {"kind": "regression", "candidate": {}, "good": "c10", "bad": "c13", "culprit": "c12"}
    existing = [dropped, confirmed]
    assert _covered(existing, "regression", position, "c5", "c8")  # overlaps c5..c6 of the dropped one
    assert not _covered(existing, "regression", position, "c6", "c8")  # touches it only at c6: after c6 is new
    assert _covered(existing, "regression", position, "c11", "c12")  # holds the culprit c12
    assert not _covered(existing, "fix", position, "c5", "c8")  # another kind


def test_the_lkp_table_lines_up_on_the_last_digits() -> None:
    row = Row("command.cpu", Cell(format_measure(13.88e6, "ns"), 1.6), [("+9.7%", Cell(format_measure(15.26e6, "ns"),
                                                                                    2.2))])
    lines = lkp_table("1f896e1645 (parent)", ["96f5515dc9"], [row])
    title, rule, names, marks, row = lines
    assert row.endswith("  command.cpu") and "13.88ms ±  2%" in row and "+9.7%" in row and "15.26ms ±  2%" in row
    assert marks.index("\\") == row.index("13.88ms") + len("13.88ms") - 1  # "\" under the last digit
    assert marks.rindex("\\") == row.index("15.26ms") + len("15.26ms") - 1
    assert marks.index("|") == row.index("+9.7%") + len("+9.7%") - 3
    assert title.rstrip().endswith("96f5515dc9") and "%change" in names and set(rule) == {"-", " "}


def test_the_mail_is_rfc_5322_and_says_due_to_commit(tmp_path: Path) -> None:
    mail = RegressionMail(
        finding_id=3, benchmark="command", metric="command.cpu", unit="ns", change_pct=3.14, ci_pct=(2.5, 3.9),
        p_value=0.00024, confidence=0.985, blocks=13, parent=Side("p (parent)", 1e7, 1.0, 20),
        culprit=Side("c", 1.0314e7, 1.0, 20), culprit_sha="c" * 40, culprit_subject="slow: more work",
        culprit_author="Kay Bench <kay@example.org>", culprit_date="2026-11-27", branch="main", repo="/src/prog",
        machine="box: 2 CPUs", params={"cmd": "./prog"}, job_path="/jobs/w.yaml", build="make", cmd="./prog",
        found=["candidate: …"], recipients=("Kay Bench <kay@example.org>",),
    )
    posted = post(message(mail), tmp_path / "out", "kbench-3.eml", "cat > " + str(tmp_path / "sent.eml"))
    assert posted.command_error is None
    for raw in (posted.path.read_bytes(), (tmp_path / "sent.eml").read_bytes()):
        parsed = email.message_from_bytes(raw, policy=policy.default)
        assert parsed["Subject"] == "[kbench] [command] cccccccccc: command.cpu +3.1% regression"
        assert parsed["To"] == "Kay Bench <kay@example.org>" and parsed["Message-ID"] and parsed["Date"]
        body = parsed.get_content()
        assert f"due to commit:\n\ncommit: {'c' * 40} (\"slow: more work\")" in body
        assert "+3.1% (CI +2.5% … +3.9% at 98.5%, p=0.00024)" in body
        assert "git checkout " + "c" * 40 in body and "\n        make\n" in body
    failed = post(message(mail), tmp_path / "out", "again.eml", "exit 3")
    assert failed.path.exists() and failed.command_error is not None and "exit status 3" in failed.command_error


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.org", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def test_a_regression_whose_culprit_a_later_commit_reverts_is_reverted_with_a_follow_up(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for k in range(3):
        (repo / f"f{k}").write_text(str(k))
        _git(repo, "add", f"f{k}")
        _git(repo, "commit", "-q", "-m", f"change {k}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "revert", "--no-edit", shas[1])
    revert = _git(repo, "rev-parse", "HEAD")
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: command\nparams:\n  cmd: ./prog\n")
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    options = WatchOptions(repo=repo, branches=("main",), build="true", job=job, outbox=tmp_path / "out")
    watch = Watch(store, options, log=lambda _text: None)
    original = tmp_path / "out" / "kbench-1.eml"
    original.parent.mkdir()
    original.write_bytes(bytes(message(RegressionMail(
        finding_id=1, benchmark="command", metric="command.cpu", unit="ns", change_pct=5.0, ci_pct=(4.0, 6.0),
        p_value=0.001, confidence=0.95, blocks=10, parent=Side("p", 1.0, 0.0, 20), culprit=Side("c", 1.05, 0, 20),
        culprit_sha=shas[1], culprit_subject="change 1", culprit_author="A <a@example.org>", culprit_date="",
        branch="main", repo=str(repo), machine="m", params={}, job_path=str(job), build="true", cmd="./prog",
        found=[]))))
    watches = WatchStore(store.engine)
    finding = watches.add_finding(watch.id, branch="main", instance_id="i", benchmark="command", metric="command.cpu",
                                  params={}, kind="regression", state="confirmed", status="open", good=shas[0],
                                  bad=shas[1], candidate={}, culprit=shas[1], culprit_subject="change 1",
                                  report=str(original))
    watch._reverts("main", [*shas, revert])
    row = watches.finding(finding)
    assert (row["status"], row["reverted_in"]) == ("reverted", revert)
    watch._mail()
    follow = email.message_from_bytes(Path(watches.finding(finding)["followup"]).read_bytes(), policy=policy.default)
    original_message = email.message_from_bytes(original.read_bytes(), policy=policy.default)
    assert follow["In-Reply-To"] == original_message["Message-ID"]
    assert follow["Subject"] == f"Re: {original_message['Subject']} (reverted in {revert[:12]})"
    assert f"commit: {revert}" in follow.get_content()


def test_a_poll_tells_how_many_of_its_new_commits_are_built_and_measured(tmp_path: Path) -> None:
    from collections.abc import Iterator, Sequence

    from kbench.watch.measurer import CommitMeasured

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for k in range(4):
        (repo / f"f{k}").write_text(str(k))
        _git(repo, "add", f"f{k}")
        _git(repo, "commit", "-q", "-m", f"change {k}")
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: command\nparams:\n  cmd: ./prog\n")
    heard: list[tuple[str, float, float | None]] = []
    options = WatchOptions(repo=repo, branches=("main",), build="true", job=job,
                           start=_git(repo, "rev-parse", "HEAD~2"))
    watch = Watch(Store.open(f"sqlite:///{tmp_path / 'k.db'}"), options, log=lambda _text: None,
                  progress=lambda what, done, total: heard.append((what, done, total)))

    class NoBuilds:
        def measure_commits(self, commits: Sequence[str], *, label: str,
                            tags: Sequence[str]) -> Iterator[tuple[str, CommitMeasured]]:
            assert heard[-1][1:] == (0, len(commits))  # said before the first build
            for sha in commits:
                yield sha, CommitMeasured("build-failed", "exit 1")

        def close(self) -> None:
            pass

    watch.measurer = NoBuilds()  # type: ignore[assignment]
    result = watch.poll()
    assert len(result.commits) == 3
    assert [(done, total) for _, done, total in heard] == [(0, 3), (1, 3), (2, 3), (3, 3), (0, None)]
    assert {what for what, _, _ in heard[:-1]} == {"building and measuring the new commits"}
    assert heard[-1][0] == "looking for changes in the new runs"
