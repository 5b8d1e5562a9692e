"""The regression report and the release table over a planted store, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_series

STEP_AT = 20


def kbench(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in this process (click's runner): a fresh interpreter per call
    would cost seconds here; tests/history/test_cli_versions.py runs the installed script."""
    from click.testing import CliRunner

    from kbench.cli.main import cli

    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("reports")
    db = root / "k.db"
    store = Store.open(f"sqlite:///{db}")
    commits = fake_commits(30, seed=9)
    latency = noisy(30, level=200.0, cv=0.002, seed=1)
    latency[STEP_AT:] *= 1.04
    slow = plant_series(store, latency, params={"size": "64"}, commits=commits,
                        labels=[f"nightly-{i}" for i in range(30)])
    ops = noisy(30, level=5e6, cv=0.002, seed=2)
    ops[STEP_AT:] *= 1.05  # higher is better: an improvement
    better = plant_series(store, ops, benchmark="will-it-scale.getppid1", unit="ops/s", direction="higher",
                          metric="will-it-scale.getppid1.per_process_ops", params={"nr_task": "1"}, commits=commits)
    kernels = ["6.1.0-55-amd64"] * 6 + ["6.1.0-56-amd64"] * 6 + ["6.12.11-amd64"]
    releases = noisy(13, level=1000.0, cv=0.01, seed=3)
    releases[6:12] *= 0.93
    releases[12] *= 1.10
    per_kernel = plant_series(store, releases, benchmark="kfunc.memcpy", unit="cycles", params={"size": "64"},
                              kernels=kernels, kind="vm", accel="tcg")
    store.engine.dispose()
    return {"db": db, "slow": slow, "better": better, "commits": commits, "releases": releases,
            "per_kernel": per_kernel}


def test_regressions_json_has_one_entry_per_change_for_the_worse(planted: dict[str, object]) -> None:
    proc = kbench(planted["db"], "report", "regressions", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (entry,) = report["suspected"]
    assert report["confirmed"] == []
    change = entry["change_point"]
    assert entry["metric"] == "syscall.getppid.latency" and entry["params"] == {"size": "64"}
    assert change["run_id"] == planted["slow"][STEP_AT] and change["verdict"] == "regression"
    commits = planted["commits"]
    assert change["correlated"]["range"] == f"{commits[STEP_AT - 1]}..{commits[STEP_AT]}"
    # nothing measured it again: a suspected change point, never "due to commit"
    assert entry["status"] == "suspected" and entry["confirmed"] is False and "confirmation" not in entry
    assert entry["noise_pct"] < 1.0  # cv 0.2 %: the 4 % step stands far out of it
    assert entry["subject"] == f"[kbench] [syscall.getppid] suspected: syscall.getppid.latency " \
                               f"{change['change_pct']:+.1f}% regression in {commits[STEP_AT - 1][:10]}.." \
                               f"{commits[STEP_AT][:10]}"
    assert entry["machine"]["hostname"] == "lab-box" and entry["machine"]["cpus"] == 2
    assert entry["reproduce"] == [f"git checkout {commits[STEP_AT]}",
                                  f"kbench run syscall.getppid -p size=64 --samples 64 --commit {commits[STEP_AT]} "
                                  f"--label nightly-{STEP_AT}"]
    with_improvements = json.loads(kbench(planted["db"], "report", "regressions", "--format", "json",
                                          "--improvements").stdout)
    assert sorted(e["change_point"]["verdict"] for e in with_improvements["suspected"]) == ["improvement", "regression"]


def test_since_keeps_only_newer_changes(planted: dict[str, object]) -> None:
    # Planted runs start on 2026-11-01 03:00, one a day: the change is at 2026-11-21 03:00.
    assert len(json.loads(kbench(planted["db"], "report", "regressions", "--format", "json", "--since",
                                 "2026-11-21").stdout)["suspected"]) == 1
    assert json.loads(kbench(planted["db"], "report", "regressions", "--format", "json", "--since",
                             "2026-11-21T03:01").stdout)["suspected"] == []


def test_text_markdown_and_html_reports(planted: dict[str, object], tmp_path: Path) -> None:
    commits = planted["commits"]
    text = kbench(planted["db"], "report", "regressions").stdout
    assert "[kbench] [syscall.getppid] suspected: syscall.getppid.latency +" in text
    assert f"regression in {commits[STEP_AT - 1][:10]}..{commits[STEP_AT][:10]}" in text
    assert "kbench suspects a +" in text and "due to commit" not in text and "not a culprit" in text
    assert "on test machine: lab-box: 2 CPUs, Planted CPU @ 2.0GHz, 24 GiB memory (target: local)" in text
    assert "        size: 64" in text and "To reproduce:" in text
    assert f"{STEP_AT} runs before" in text and "10 runs after" in text
    assert "the series' run-to-run noise ±0.2%" in text
    markdown = kbench(planted["db"], "report", "regressions", "--format", "markdown").stdout
    assert markdown.startswith("# kbench regression report") and "| before | %change | after |" in markdown
    out = tmp_path / "r.html"
    assert kbench(planted["db"], "report", "regressions", "--format", "html", "-o", str(out)).returncode == 0
    html = out.read_text()
    assert html.count('<article class="regression"') == 1 and "<svg class=\"change-plot\"" in html
    assert 'data-status="suspected"' in html
    assert "<script" not in html and "http" not in html.split("<main>", 1)[1]


def test_a_regression_a_watch_confirmed_is_reported_as_confirmed_with_its_culprit(tmp_path: Path) -> None:
    """A confirmed finding (as kbench watch stores it) whose culprit sits at the change point makes the
    entry confirmed: the culprit, its side-by-side change and status; elsewhere it stays suspected."""
    from kbench.store.watch import WatchStore

    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    commits = fake_commits(30, seed=5)
    values = noisy(30, level=200.0, cv=0.002, seed=6)
    values[STEP_AT:] *= 1.04
    plant_series(store, values, params={"size": "64"}, commits=commits)
    other = noisy(30, level=300.0, cv=0.002, seed=7)
    other[10:] *= 1.04
    plant_series(store, other, params={"size": "128"}, commits=commits)
    watches = WatchStore(store.engine)
    watch, _ = watches.open_watch(key="k", repo="/r", branches=["main"], build="make", job_path="/j.yaml",
                                  job_text="", options={})
    verdict = {"verdict": "regression", "change_pct": 3.9, "ci_pct": [3.1, 4.6], "p_value": 0.00024}
    watches.add_finding(watch["id"], branch="main", instance_id="abc", benchmark="syscall.getppid",
                        metric="syscall.getppid.latency", params={"size": "64"}, kind="regression",
                        state="confirmed", status="open", good=commits[STEP_AT - 1], bad=commits[STEP_AT],
                        candidate={}, culprit=commits[STEP_AT], culprit_subject="make getppid slower",
                        verification=[{"why": "verify", "verdict": verdict}])
    store.engine.dispose()
    report = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)
    (confirmed,) = report["confirmed"]
    (suspected,) = report["suspected"]  # the change point at the culprit is the confirmation, not an entry
    assert report["covered_change_points"] == 1
    assert confirmed["culprit"]["sha"] == commits[STEP_AT] and confirmed["params"] == {"size": "64"}
    assert confirmed["subject"] == f"[kbench] [syscall.getppid] {commits[STEP_AT][:10]}: syscall.getppid.latency " \
                                   "+3.9% regression"
    assert confirmed["change_pct"] == 3.9 and confirmed["ci_pct"] == [3.1, 4.6] and confirmed["status"] == "open"
    assert confirmed["reproduce"][:3] == ["git clone /r kbench-repro && cd kbench-repro",
                                          f"git checkout {commits[STEP_AT]}", "make"]  # the build step
    # the entry names its culprit and no other commit of the series
    named = {c for c in commits if c in json.dumps(confirmed)}
    assert named == {commits[STEP_AT]}
    assert suspected["params"] == {"size": "128"} and "suspected:" in suspected["subject"]
    text = kbench(db, "report", "regressions").stdout
    assert "kbench found 1 open confirmed regression(s) and 1 suspected change point(s)" in text
    assert f"commit: {commits[STEP_AT]} (\"make getppid slower\")" in text
    assert "+3.9% (CI +3.1% … +4.6% at 95%, p=0.00024)" in text and "status: open" in text
    assert text.index(f"{commits[STEP_AT][:10]}: syscall.getppid.latency") < text.index("suspected: syscall")


def test_git_log_of_the_commit_range_with_repo(planted: dict[str, object], tmp_path: Path) -> None:
    """The report lists exactly the commits git says are between the runs around the change."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.org"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    git("init", "-q")
    made = []
    for i in range(5):
        (repo / "f").write_text(str(i))
        git("add", "f")
        git("commit", "-q", "-m", f"change {i}")
        made.append(git("rev-parse", "HEAD"))
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    values = noisy(20, cv=0.002, seed=4)
    values[10:] *= 1.05
    plant_series(store, values, commits=[made[1]] * 10 + [made[4]] * 10)
    store.engine.dispose()
    report = json.loads(kbench(db, "report", "regressions", "--format", "json", "--repo", str(repo)).stdout)
    log = report["suspected"][0]["change_point"]["correlated"]["git_log"]
    assert [c["id"] for c in log] == git("rev-list", f"{made[1]}..{made[4]}").split()
    assert [c["subject"] for c in log] == ["change 4", "change 3", "change 2"]
    text = kbench(db, "report", "regressions", "--repo", str(repo)).stdout
    assert "correlated commits" in text and "A: change 3" in text


def test_release_table_against_welch_intervals_from_scipy(planted: dict[str, object], tmp_path: Path) -> None:
    plot = tmp_path / "releases.png"
    proc = kbench(planted["db"], "report", "releases", "--kernel", "deb:6.1.0-55-amd64", "--kernel",
                  "6.1.0-56-amd64", "--kernel", "6.12.11-amd64", "--format", "json", "--plot", str(plot))
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    base, second, single = row["kernels"]
    logs = np.log(planted["releases"])
    assert base["relative"] == 100.0 and base["runs"] == 6
    welch = stats.ttest_ind(logs[6:12], logs[:6], equal_var=False).confidence_interval(0.95)
    assert second["relative"] == pytest.approx(100 * np.exp(logs[6:12].mean() - logs[:6].mean()))
    assert second["ci"] == pytest.approx([100 * np.exp(welch.low), 100 * np.exp(welch.high)], rel=1e-6)
    assert second["ci_basis"] == "between runs"
    assert single["runs"] == 1 and single["ci_basis"] == "within run"
    assert single["relative"] == pytest.approx(100 * planted["releases"][12] / np.exp(logs[:6].mean()))
    # cycles, lower is better: 7 % fewer is an improvement, 10 % more a regression
    assert row["summary"][0].startswith("kfunc.memcpy.latency on kernel 6.1.0-56-amd64 has -")
    assert row["summary"][0].endswith("improvement when comparing to 6.1.0-55-amd64")
    assert row["summary"][1].endswith("regression when comparing to 6.1.0-55-amd64")
    assert plot.stat().st_size > 5000
    text = kbench(planted["db"], "report", "releases", "--kernel", "6.1.0-55-amd64", "--kernel",
                  "6.1.0-56-amd64").stdout
    assert "relative to 6.1.0-55-amd64 = 100" in text and "base" in text


def test_bad_input_is_one_line_with_the_documented_exit_code(planted: dict[str, object], tmp_path: Path) -> None:
    db = planted["db"]
    cases = [
        (("history", "nothing.here"), 4, "no series matches 'nothing.here'"),
        (("report", "regressions", "--since", "last tuesday"), 2, "neither a date"),
        (("report", "releases", "--kernel", "6.1.0-55-amd64"), 2, "at least two kernels"),
        (("report", "releases", "--kernel", "a", "--kernel", "b", "--plot", str(tmp_path / "x.gif")), 2, ".png"),
        (("history", "--window", "2"), 2, "--window"),
        (("history", "--max-pvalue", "1.5"), 2, "--max-pvalue"),
    ]
    for args, code, message in cases:
        proc = kbench(db, *args)
        assert proc.returncode == code, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
