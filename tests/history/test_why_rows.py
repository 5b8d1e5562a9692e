"""The why rows of a regression (perf counters' %change and the top of the profile delta), in
``kbench report regressions`` and from ``why_rows`` for a pair of runs (the watch's mails)."""

from __future__ import annotations

import json
import urllib.request
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sqlalchemy import update

from kbench.report.why import EMULATED_NOTE, why_rows
from kbench.store import schema
from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_series
from tests.history.test_reports import kbench
from tests.web.conftest import start_dashboard, stop

STEP_AT = 12


def _counters(task_clock_ns: float, switches: int, operations: int) -> dict[str, object]:
    events = [
        {"name": "task-clock", "type": "software", "supported": True, "unit": "ns", "value": task_clock_ns,
         "enabled_ns": task_clock_ns, "running_ns": task_clock_ns},
        {"name": "context-switches", "type": "software", "supported": True, "unit": "count", "value": switches,
         "enabled_ns": task_clock_ns, "running_ns": task_clock_ns},
        {"name": "cycles", "type": "hardware", "supported": False, "errno": 2, "error": "No such file"},
    ]
    return {"source": "perf_event_open", "scope": "user+kernel", "operations": operations, "events": events}


def _profile(store: Store, run_id: int, mix_a: int, mix_b: int) -> None:
    folded = f"prog;main;mix_a {mix_a}\nprog;main;mix_b {mix_b}\nprog;do_syscall_64_[k] 20\n".encode()
    store.save_profile(run_id, event="cpu-clock", frequency_hz=4999, samples=mix_a + mix_b + 20,
                       weight=mix_a + mix_b + 20, data=zlib.compress(folded), details={})


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    db = tmp_path_factory.mktemp("why") / "k.db"
    store = Store.open(f"sqlite:///{db}")
    values = noisy(20, level=200.0, cv=0.002, seed=4)
    values[STEP_AT:] *= 1.05
    runs = plant_series(store, values, commits=fake_commits(20, seed=5))
    before, after = runs[STEP_AT - 1], runs[STEP_AT]
    for run_id, task_clock, switches in ((before, 2.0e8, 40), (after, 2.1e8, 50)):
        header = {**store.get_run(run_id).probe_header, "counters": _counters(task_clock, switches, 1_000_000)}
        with store.engine.begin() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(probe_header=header))
    _profile(store, before, 500, 500)
    _profile(store, after, 500, 650)
    store.engine.dispose()
    return {"db": db, "before": before, "after": after}


def test_the_pair_of_runs_gives_counter_changes_and_the_profile_delta(planted: dict[str, object]) -> None:
    store = Store.open(f"sqlite:///{planted['db']}", read_only=True)
    rows = why_rows(store, int(planted["before"]), int(planted["after"]))  # type: ignore[arg-type]
    assert rows is not None
    by_name = {row.name: row for row in rows.counters}
    assert by_name["task-clock"].base == pytest.approx(200.0) and by_name["task-clock"].unit == "ns"
    assert by_name["task-clock"].change_pct == pytest.approx(5.0)
    assert by_name["context-switches"].change_pct == pytest.approx(25.0)
    assert "cycles" not in by_name  # not counted: no row
    top = rows.profile_rows()[0]
    assert (top.symbol, top.kind) == ("mix_b", "self")
    assert top.base_pct == pytest.approx(100 * 500 / 1020) and top.new_pct == pytest.approx(100 * 650 / 1170)
    text = "\n".join(rows.text_lines())
    assert "+5.0%" in text and "perf-stat.task-clock (ns/op)" not in text  # per op: the unit is ns
    assert "perf-stat.task-clock (ns)" in text and "perf-profile.self.mix_b" in text
    assert why_rows(store, 9999, int(planted["after"])) is None  # type: ignore[arg-type]
    assert rows.note == "" and EMULATED_NOTE not in text  # measured on this machine: shares of real CPU time


def test_a_profile_delta_from_a_tcg_guest_says_why_its_scale_is_not_a_real_cpus(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    runs = plant_series(store, noisy(4, level=100.0, cv=0.002, seed=1), commits=fake_commits(4, seed=2))
    tcg = {**(store.get_run(runs[1]).sysinfo or {}), "virtualization": {"vm": "qemu-tcg", "virtualized": True}}
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == runs[1]).values(sysinfo=tcg))
    for run_id in runs[:3]:
        _profile(store, run_id, 500, 600)
    emulated = why_rows(store, runs[0], runs[1])
    native = why_rows(store, runs[0], runs[2])
    assert emulated is not None and native is not None
    assert emulated.note == EMULATED_NOTE and f"({EMULATED_NOTE})" in emulated.text_lines()
    assert emulated.to_json()["profile"]["note"] == EMULATED_NOTE
    assert native.note == "" and native.to_json()["profile"]["note"] is None
    no_profile = why_rows(store, runs[2], runs[3])
    assert no_profile is not None and no_profile.note == ""  # no delta: nothing to qualify


def test_report_regressions_carries_the_rows_in_every_format(planted: dict[str, object]) -> None:
    db: Path = planted["db"]  # type: ignore[assignment]
    text = kbench(db, "report", "regressions").stdout
    assert "perf-stat.task-clock (ns)" in text and "perf-stat.context-switches (/op)" in text
    assert "perf-profile.self.mix_b" in text
    assert text.index("%change") < text.index("perf-stat.task-clock") < text.index("To reproduce")
    (entry,) = json.loads(kbench(db, "report", "regressions", "--format", "json").stdout)["suspected"]
    why = entry["why"]
    assert (why["base_run"], why["new_run"]) == (planted["before"], planted["after"])
    assert why["counters"][0]["name"] == "perf-stat.task-clock"
    assert why["counters"][0]["change_pct"] == pytest.approx(5.0)
    assert why["profile_delta"][0]["symbol"] == "mix_b"
    markdown = kbench(db, "report", "regressions", "--format", "markdown").stdout
    assert "`perf-profile.self.mix_b`" in markdown and "`perf-stat.task-clock` (ns)" in markdown


class _WhyTable(HTMLParser):
    """The rows of every ``table.why``: data-row -> its cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self._in_why = False
        self._row: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._in_why = found.get("class") == "why"
        elif tag == "tr" and self._in_why and found.get("data-row"):
            self._row = found["data-row"]
            self.rows[self._row] = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self.rows[self._row].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "table":
            self._in_why = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _why_cells(html: str) -> dict[str, list[str]]:
    parser = _WhyTable()
    parser.feed(html)
    return parser.rows


def _check_html_rows(rows: dict[str, list[str]]) -> None:
    # the planted counts: task-clock 200 -> 210 ns per op (+5.0%), 40 -> 50 switches per 10^6 ops
    assert rows["perf-stat.task-clock"][:3] == ["200", "+5.0%", "210"]
    assert rows["perf-stat.context-switches"][1] == "+25.0%"
    assert "perf-stat.cycles" not in rows  # not counted: no row
    # the planted profiles: mix_b 500 of 1020 -> 650 of 1170 samples
    base, change, new = rows["perf-profile.self.mix_b"][:3]
    assert base == f"{100 * 500 / 1020:.2f}%" and new == f"{100 * 650 / 1170:.2f}%"
    assert change == f"{100 * 650 / 1170 - 100 * 500 / 1020:+.2f}p"


def test_the_html_report_and_the_dashboard_carry_the_rows(planted: dict[str, object], tmp_path: Path) -> None:
    db: Path = planted["db"]  # type: ignore[assignment]
    html = kbench(db, "report", "regressions", "--format", "html").stdout
    _check_html_rows(_why_cells(html))
    assert html.index('class="before-after"') < html.index('class="why"') < html.index("To reproduce")
    server, url = start_dashboard(f"sqlite:///{db}", tmp_path / "serve.log")
    try:
        with urllib.request.urlopen(f"{url}/regressions", timeout=60) as response:
            _check_html_rows(_why_cells(response.read().decode()))
        with urllib.request.urlopen(f"{url}/api/regressions", timeout=60) as response:
            (entry,) = json.loads(response.read())["suspected"]
        assert entry["why"]["counters"][0] == {**entry["why"]["counters"][0], "name": "perf-stat.task-clock"}
        assert entry["why"]["profile_delta"][0]["symbol"] == "mix_b"
    finally:
        stop(server)
