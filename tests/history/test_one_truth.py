"""Every view states the same conclusions over one store: the regression a watch confirmed and that is
still open, one it confirmed and that was fixed (with the fix it confirmed too), and a change point no
one confirmed. history (text and JSON), report regressions (text, JSON, Markdown, HTML) and the
dashboard (its JSON and its pages) must name the same commits with the same sizes and statuses, and a
confirmed change point must never be stated with the change point's own figures."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_finding, plant_series
from tests.history.test_reports import kbench
from tests.web.conftest import start_dashboard, stop

COMMITS = fake_commits(30, seed=21)
OPEN, FIXED, FIX, STEP = COMMITS[20], COMMITS[10], COMMITS[25], COMMITS[15]
FIXED_STATUS = f"fixed in {FIX[:12]}"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("one-truth") / "k.db"
    store = Store.open(f"sqlite:///{path}")
    first = noisy(30, level=200.0, cv=0.002, seed=1)
    first[20:] *= 1.055  # the series moved 5.5 %; the watch measured the culprit +4.0 % side by side
    runs = plant_series(store, first, params={"size": "64"}, commits=COMMITS)
    second = noisy(30, level=90.0, cv=0.002, seed=2)
    second[10:25] *= 1.065  # +6.5 % at commit 10, back at commit 25
    back = plant_series(store, second, benchmark="syscall.getpid", commits=COMMITS, seed=3)
    third = noisy(30, level=50.0, cv=0.002, seed=4)
    third[15:] *= 1.08
    plant_series(store, third, benchmark="syscall.getpid", params={"size": "8"}, commits=COMMITS, seed=5)
    plant_finding(store, culprit=OPEN, good=COMMITS[19], bad=OPEN, params={"size": "64"}, change_pct=4.0,
                  run_ids=(runs[19], runs[20]))
    plant_finding(store, culprit=FIXED, good=COMMITS[9], bad=FIXED, benchmark="syscall.getpid", change_pct=6.0,
                  status="fixed", fixed_in=FIX, run_ids=(back[9], back[10]))
    plant_finding(store, culprit=FIX, good=COMMITS[24], bad=FIX, benchmark="syscall.getpid", change_pct=-6.1,
                  kind="fix", status=None, run_ids=(back[24], back[25]))
    store.engine.dispose()
    return path


def test_history_states_the_watchs_conclusions(db: Path) -> None:
    text = kbench(db, "history").stdout
    assert f"confirmed: +4.0% regression due to {OPEN[:12]}" in text and "; open (kbench watch" in text
    assert f"confirmed: +6.0% regression due to {FIXED[:12]}" in text and f"; {FIXED_STATUS} (kbench" in text
    assert f"confirmed: -6.1% fix due to {FIX[:12]}" in text
    (suspected,) = [line for line in text.splitlines() if "suspected:" in line]
    assert re.search(r"suspected: \+[78]\.\d% regression at commit " + STEP[:12], suspected), suspected
    series = {(s["benchmark"], s["params"].get("size")): s for s in json.loads(kbench(db, "history", "--json").stdout)
              ["series"]}
    (opened,) = series[("syscall.getppid", "64")]["change_points"]
    assert opened["status"] == "confirmed" and _named(opened["confirmation"]) == (OPEN[:12], 4.0, "open")
    assert own_figure(db) not in text  # the change point's own size is not stated as the conclusion
    regressed, fixed = series[("syscall.getpid", None)]["change_points"]
    assert _named(regressed["confirmation"]) == (FIXED[:12], 6.0, FIXED_STATUS)
    assert fixed["confirmation"]["kind"] == "fix" and fixed["confirmation"]["culprit"]["sha"] == FIX
    (step,) = series[("syscall.getpid", "8")]["change_points"]
    assert step["status"] == "suspected" and step["confirmations"] == []


def test_the_report_in_every_format_states_the_same(db: Path) -> None:
    data = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)
    assert [_named(c) for c in data["confirmed"]] == [(OPEN[:12], 4.0, "open"), (FIXED[:12], 6.0, FIXED_STATUS)]
    (suspected,) = data["suspected"]
    assert suspected["params"] == {"size": "8"} and STEP in json.dumps(suspected["change_point"]["correlated"])
    rows = [(r["report"], r["status"]) for r in data["observation_summary"]]
    assert rows[:2] == [(f"[kbench] [syscall.getppid] {OPEN[:10]}: syscall.getppid.latency +4.0% regression", "open"),
                        (f"[kbench] [syscall.getpid] {FIXED[:10]}: syscall.getpid.latency +6.0% regression",
                         FIXED_STATUS)]
    for fmt in ("text", "markdown", "html"):
        shown = kbench(db, "report", "regressions", "--format", fmt).stdout
        for report, status in rows[:2]:
            assert report in shown and status in shown, fmt
        assert own_figure(db) not in shown, fmt  # the change point under the open regression: shown as it


def test_the_dashboard_states_the_same(db: Path, tmp_path: Path) -> None:
    report = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)
    history = json.loads(kbench(db, "history", "--json").stdout)
    server, url = start_dashboard(f"sqlite:///{db}", tmp_path / "serve.log")
    try:
        regressions = _get(f"{url}/api/regressions")
        assert [_named(c) for c in regressions["confirmed"]] == [_named(c) for c in report["confirmed"]]
        assert regressions["observation_summary"] == report["observation_summary"]
        index = {(s["benchmark"], s["params"].get("size")): s for s in _get(f"{url}/api/series")["series"]}
        latest = index[("syscall.getppid", "64")]["latest_change"]
        assert (latest["culprit"][:12], latest["change_pct"], latest["status"]) == (OPEN[:12], 4.0, "open")
        fix = index[("syscall.getpid", None)]["latest_change"]
        assert fix["culprit"] == FIX and fix["kind"] == "fix"
        assert index[("syscall.getpid", "8")]["latest_change"] is None and index[("syscall.getpid", "8")]["suspected"]
        for s in history["series"]:
            page = _get(f"{url}/api/series/{s['id']}")
            assert [(c["status"], c["confirmation"]) for c in page["change_points"]] == \
                [(c["status"], c["confirmation"]) for c in s["change_points"]]
        with urllib.request.urlopen(f"{url}/series/{index[('syscall.getpid', None)]['id']}", timeout=60) as got:
            html = got.read().decode()
        assert f"+6.0% side by side, {FIXED_STATUS}" in html
    finally:
        stop(server)


def own_figure(db: Path) -> str:
    """The open regression's change point's own size (``+5.5%`` or near): the series moved by that much."""
    series = json.loads(kbench(db, "history", "syscall.getppid", "--json").stdout)["series"]
    (point,) = series[0]["change_points"]
    figure = f"{point['change_pct']:+.1f}%"
    assert figure != "+4.0%"  # planted apart from the confirmation's
    return figure


def _named(confirmation: dict[str, Any]) -> tuple[str, float, str]:
    return confirmation["culprit"]["sha"][:12], confirmation["change_pct"], confirmation["status_text"]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())
