"""``kbench finding N --status``: the status a person sets on a confirmed regression, shown in the
Observation Summary that opens ``report regressions`` (every format), in the dashboard, and respected by
``--fail-on``; the summary's rows checked against what was planted."""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kbench.history.confirmed import load_confirmations
from kbench.store.db import Store
from kbench.store.watch import WatchStore
from tests.history.planting import fake_commits, noisy, plant_finding, plant_series
from tests.history.test_fail_on import documented_fail_on_code
from tests.history.test_reports import kbench
from tests.web.conftest import start_dashboard, stop

COMMITS = fake_commits(30, seed=11)
MACHINE = "lab-box: 2 CPUs, Planted CPU @ 2.0GHz, 24 GiB memory"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A series that steps up 4 % at commit 20, the finding the watch confirmed there (its side-by-side runs:
    the series' runs 19 and 20), a flat series with a 5 % step at commit 12 no one confirmed, and a
    finding that was dropped."""
    path = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{path}")
    values = noisy(30, level=200.0, cv=0.002, seed=1)
    values[20:] *= 1.04
    runs = plant_series(store, values, params={"size": "64"}, commits=COMMITS)
    other = noisy(30, level=90.0, cv=0.002, seed=2)
    other[12:] *= 1.05
    plant_series(store, other, benchmark="syscall.getpid", commits=COMMITS, seed=3)
    plant_finding(store, culprit=COMMITS[20], good=COMMITS[19], bad=COMMITS[20], params={"size": "64"},
                  run_ids=(runs[19], runs[20]))
    watches = WatchStore(store.engine)
    dropped = watches.add_finding(1, branch="main", instance_id="i1", benchmark="syscall.getpid",
                                  metric="syscall.getpid.latency", params={}, series_id=None, kind="regression",
                                  good=COMMITS[3], bad=COMMITS[4], candidate={})
    watches.update_finding(dropped, state="dropped", reason="did not hold when measured again")
    store.engine.dispose()
    return path


class _Table(HTMLParser):
    """The cells of ``table.observation-summary``, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._inside = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._inside = dict(attrs).get("class") == "observation-summary"
        elif self._inside and tag == "tr":
            self.rows.append([])
        elif self._inside and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._inside = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def summary_cells(html: str) -> list[list[str]]:
    parser = _Table()
    parser.feed(html)
    return parser.rows


def test_the_report_opens_with_one_summary_row_per_finding(db: Path) -> None:
    data = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)
    confirmed, suspected = data["observation_summary"]
    assert confirmed == {
        "indicator": "syscall.getppid.latency", "finding_id": 1,
        "report": f"[kbench] [syscall.getppid] {COMMITS[20][:10]}: syscall.getppid.latency +4.0% regression",
        "scenario": ["size: 64"], "machine": MACHINE, "base": f"main at {COMMITS[19][:12]}", "status": "open"}
    assert suspected["indicator"] == "syscall.getpid.latency" and suspected["finding_id"] is None
    assert suspected["status"] == "suspected: not confirmed" and suspected["base"] == COMMITS[11][:12]
    text = kbench(db, "report", "regressions").stdout
    table = text[text.index("Observation Summary"):text.index("\n" + "-" * 78 + "\n")]
    header, rule, first, second = table.splitlines()[2:6]
    assert header.split("  ")[0] == "test indicator" and set(rule) <= {"-", " "}
    assert first.startswith("syscall.getppid.latency") and MACHINE in first and first.rstrip().endswith("open")
    assert second.startswith("syscall.getpid.latency") and "suspected: not confirmed" in second
    assert text.index("Observation Summary") < text.index("kbench found a +4.0% regression")
    markdown = kbench(db, "report", "regressions", "--format", "markdown").stdout
    assert "## Observation Summary" in markdown and f"| main at {COMMITS[19][:12]} | open |" in markdown
    html_rows = summary_cells(kbench(db, "report", "regressions", "--format", "html").stdout)
    assert html_rows[0][0] == "Test indicator" and html_rows[1][3] == MACHINE and len(html_rows) == 3


def test_a_status_set_by_hand_is_shown_everywhere_and_passes_the_gate(db: Path, tmp_path: Path) -> None:
    code = documented_fail_on_code()
    assert kbench(db, "report", "regressions", "--fail-on", "regression").returncode == code
    confirmed_at = load_confirmations(Store.open(f"sqlite:///{db}", read_only=True))[0].confirmed_at
    done = kbench(db, "finding", "1", "--status", "wont-fix", "--reason", "the test measures a debug path")
    assert done.returncode == 0, done.stderr
    assert "status: open; won't fix: the test measures a debug path" in done.stdout
    assert f"test machine: {MACHINE}" in done.stdout and "set the status to \"won't fix\"" in done.stdout
    (confirmation,) = load_confirmations(Store.open(f"sqlite:///{db}", read_only=True))
    assert confirmation.triage is not None and confirmation.triage.status == "won't fix"
    assert isinstance(confirmation.triage.at, datetime)
    assert confirmation.confirmed_at == confirmed_at  # when the watch concluded, not when a person triaged
    status = "open; won't fix: the test measures a debug path"
    data = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)
    assert data["observation_summary"][0]["status"] == status
    assert data["confirmed"][0]["triage"]["status"] == "won't fix" and data["confirmed"][0]["status"] == "open"
    assert "1 open confirmed regression(s) (1 of them triaged)" in data["summary"]
    assert status in kbench(db, "report", "regressions").stdout
    assert kbench(db, "report", "regressions", "--fail-on", "regression").returncode == 0
    assert kbench(db, "history", "syscall.getppid", "--fail-on", "regression").returncode == 0
    server, url = start_dashboard(f"sqlite:///{db}", tmp_path / "serve.log")
    try:
        with urllib.request.urlopen(f"{url}/regressions", timeout=60) as response:
            rows = summary_cells(response.read().decode())
        assert rows[1][-1] == status
        with urllib.request.urlopen(f"{url}/api/regressions", timeout=60) as response:
            assert json.loads(response.read())["confirmed"][0]["status_text"] == status
        with urllib.request.urlopen(f"{url}/api/series", timeout=60) as response:
            changes = [s["latest_change"] for s in json.loads(response.read())["series"] if s["latest_change"]]
        assert [c["status"] for c in changes] == [status]
    finally:
        stop(server)
    cleared = kbench(db, "finding", "1", "--clear", "--reason", "it is not a debug path after all")
    assert cleared.returncode == 0 and "took the status back" in cleared.stdout
    assert kbench(db, "report", "regressions", "--fail-on", "regression").returncode == code


def test_each_status_a_person_sets_is_taken_in_either_spelling(db: Path) -> None:
    for given, stored in (("acknowledged", "acknowledged"), ("author-working-on-it", "author working on it"),
                          ("Author working on it", "author working on it"), ("won't fix", "won't fix")):
        assert kbench(db, "finding", "1", "--status", given, "--reason", "r").returncode == 0
        assert json.loads(kbench(db, "finding", "1", "--json").stdout)["triage"]["status"] == stored


@pytest.mark.parametrize(("args", "code", "message"), [
    (("finding", "1", "--status", "fixed", "--reason", "r"), 2, "is not a status a person sets"),
    (("finding", "1", "--status", "acknowledged"), 2, "needs --reason"),
    (("finding", "1", "--status", "acknowledged", "--reason", "r", "--clear"), 2, "contradict"),
    (("finding", "2", "--status", "acknowledged", "--reason", "r"), 2, "finding 2 is dropped: did not hold"),
    (("finding", "99", "--status", "acknowledged", "--reason", "r"), 4, "no finding 99 in"),
    (("finding", "99"), 4, "no finding 99 in"),
])
def test_bad_input_is_refused_and_changes_nothing(db: Path, args: tuple[str, ...], code: int, message: str) -> None:
    before = load_confirmations(Store.open(f"sqlite:///{db}", read_only=True))
    proc = kbench(db, *args)
    assert proc.returncode == code and message in proc.stderr, proc.stderr
    assert load_confirmations(Store.open(f"sqlite:///{db}", read_only=True)) == before


def test_a_finding_the_watch_dropped_is_shown_with_its_reason(db: Path) -> None:
    shown = kbench(db, "finding", "2")
    assert shown.returncode == 0 and "finding 2: dropped regression of syscall.getpid.latency" in shown.stdout
    assert "did not hold when measured again" in shown.stdout
    assert json.loads(kbench(db, "finding", "2", "--json").stdout)["state"] == "dropped"
