"""The dashboard as a user gets it: `kbench serve` started as a real server over a planted
store (SQLite, and PostgreSQL from tests/services.py), driven by Debian's chromium."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_series
from tests.services import LOOPBACK, free_port, wait_for_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STEP_AT, POINTS = 30, 40


@dataclass(frozen=True)
class Planted:
    url: str  # the dashboard
    db_url: str
    stepped: list[int]  # run ids of the series with a +3 % step at STEP_AT, confirmed by a watch
    flat: list[int]  # run ids of an A/A series
    commits: list[str]
    suspected: list[int]  # run ids of a 19 ms series with a +3 % step at STEP_AT nothing confirmed


def plant(store: Store) -> tuple[list[int], list[int], list[str], list[int]]:
    from kbench.store.watch import WatchStore

    commits = fake_commits(POINTS, seed=4)
    values = noisy(POINTS, level=164.0, cv=0.002, seed=1)
    values[STEP_AT:] *= 1.03
    stepped = plant_series(store, values, params={"size": "64"}, commits=commits,
                           labels=[f"nightly-{i}" for i in range(POINTS)], seed=1)
    flat = plant_series(store, noisy(POINTS, level=5e6, cv=0.002, seed=2), benchmark="will-it-scale.getppid1",
                        metric="will-it-scale.getppid1.per_process_ops", unit="ops/s", direction="higher",
                        params={"nr_task": "1"}, commits=commits, seed=2)
    slow = noisy(POINTS, level=19.2e6, cv=0.002, seed=3)
    slow[STEP_AT:] *= 1.03
    suspected = plant_series(store, slow, benchmark="command", metric="command.wall", params={"cmd": "./prog"},
                             commits=commits, seed=3)
    watches = WatchStore(store.engine)
    watch, _ = watches.open_watch(key="dashboard", repo="/src/prog", branches=["main"], build="make",
                                  job_path="/jobs/nightly.yaml", job_text="", options={})
    verdict = {"verdict": "regression", "change_pct": 2.9, "ci_pct": [2.4, 3.4], "p_value": 0.00024, "unit": "ns"}
    watches.add_finding(watch["id"], branch="main", instance_id="0123abcd", benchmark="syscall.getppid",
                        metric="syscall.getppid.latency", params={"size": "64"}, kind="regression", state="confirmed",
                        status="open", good=commits[STEP_AT - 1], bad=commits[STEP_AT], candidate={},
                        culprit=commits[STEP_AT], culprit_subject="getppid: take the slow path",
                        verification=[{"why": "verify", "verdict": verdict, "blocks": 20, "run_ids": [],
                                       "base": {"commit": commits[STEP_AT - 1], "median": 164.0, "stdev_pct": 0.4,
                                                "slots": 40},
                                       "new": {"commit": commits[STEP_AT], "median": 168.8, "stdev_pct": 0.4,
                                               "slots": 40}}])
    return stepped, flat, commits, suspected


def kbench_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "kbench"), *args]


def start_dashboard(db_url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            kbench_command("--db", db_url, "serve", "--host", LOOPBACK, "--port", str(port)),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_for_port(port, timeout=60, process=server)
    except BaseException:
        stop(server)
        raise RuntimeError(f"kbench serve did not start: {log.read_text()}") from None
    return server, f"http://{LOOPBACK}:{port}"


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=20)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def dashboard(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    workdir = tmp_path_factory.mktemp(f"dashboard-{request.param}")
    if request.param == "sqlite":
        db_url = f"sqlite:///{workdir / 'kbench.db'}"
    else:
        server_url = request.getfixturevalue("postgres_url")
        name = f"dash_{uuid.uuid4().hex[:10]}"
        admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        db_url = server_url.rsplit("/", 1)[0] + f"/{name}"
    store = Store.open(db_url)
    stepped, flat, commits, suspected = plant(store)
    store.engine.dispose()
    server, url = start_dashboard(db_url, workdir / "serve.log")
    try:
        yield Planted(url, db_url, stepped, flat, commits, suspected)
    finally:
        stop(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.errors = errors
    try:
        yield tab
    finally:
        context.close()
