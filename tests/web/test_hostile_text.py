"""Outside text in the dashboard's pages (a command, labels, a commit subject, a watch's log)
reaches the browser with its control characters written as escapes: the served HTML holds
no raw ESC, BEL or NUL and no bidirectional override (U+202E reorders what a reader sees)."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_series
from tests.web.conftest import start_dashboard, stop

HOSTILE = "evil\u202etxt.exe\x1b[2J\x07ring\x1b]8;;http://x/\x1b\\"
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
POINTS, STEP_AT = 24, 16


@dataclass(frozen=True)
class Served:
    url: str
    runs: list[int]
    series_id: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from kbench.store.watch import WatchStore

    workdir = tmp_path_factory.mktemp("hostile-text")
    db_url = f"sqlite:///{workdir / 'kbench.db'}"
    store = Store.open(db_url)
    commits = fake_commits(POINTS, seed=5)
    values = noisy(POINTS, level=19.2e6, cv=0.002, seed=5)
    values[STEP_AT:] *= 1.05
    runs = plant_series(store, values, benchmark="command", metric="command.wall", params={"cmd": HOSTILE},
                        commits=commits, labels=[f"{HOSTILE}-{i}" for i in range(POINTS)], seed=5)
    watches = WatchStore(store.engine)
    watch, _ = watches.open_watch(key="hostile", repo=f"/src/{HOSTILE}", branches=[HOSTILE], build=HOSTILE,
                                  job_path="/jobs/j.yaml", job_text="", options={})
    verdict = {"verdict": "regression", "change_pct": 5.0, "ci_pct": [4.0, 6.0], "p_value": 0.0001}
    watches.add_finding(watch["id"], branch=HOSTILE, instance_id="0123abcd", benchmark="command",
                        metric="command.wall", params={"cmd": HOSTILE}, kind="regression", state="confirmed",
                        status="open", good=commits[STEP_AT - 1], bad=commits[STEP_AT], candidate={},
                        culprit=commits[STEP_AT], culprit_subject=HOSTILE, log=[HOSTILE],
                        verification=[{"why": "verify", "verdict": verdict}])
    store.engine.dispose()
    server, url = start_dashboard(db_url, workdir / "serve.log")
    try:
        with urllib.request.urlopen(f"{url}/api/series", timeout=60) as response:
            series_id = json.loads(response.read())["series"][0]["id"]
        yield Served(url, runs, series_id)
    finally:
        stop(server)


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        assert response.status == 200 and "text/html" in response.headers["content-type"]
        return response.read().decode("utf-8")  # strict: the page is valid UTF-8


def test_every_page_shows_outside_text_escaped(served: Served) -> None:
    before, after = served.runs[STEP_AT - 1], served.runs[STEP_AT]
    pages = ["/", f"/series/{served.series_id}", f"/runs/{after}", f"/compare?a={before}&b={after}",
             "/regressions?since=3650d"]
    shown = {path: _page(served.url + path) for path in pages}
    for path, html in shown.items():
        assert RAW.findall(html) == [], path
    # the text is there, escaped as the terminal shows it, and HTML-escaped besides
    assert "evil\\u202etxt.exe\\x1b[2J\\x07ring" in shown[f"/runs/{after}"]
    assert "evil\\u202etxt.exe\\x1b[2J\\x07ring" in shown["/regressions?since=3650d"]
    assert "\\x1b]8;;http://x/\\x1b\\" in shown["/"]


def test_the_browser_sees_the_escapes_not_the_characters(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/runs/{served.runs[0]}")
    text = page.locator("main").inner_text()
    assert "evil\\u202etxt.exe" in text and "\u202e" not in text and "\x1b" not in text

