"""`kbench serve` answers every request with 200, 404 or 422, never 500: every route of its
OpenAPI description is sent hostile values in each of its parameters, and runs of 1, 2 and 3
samples (a real `kbench run --samples 2` among them) are shown. `serve` itself fails with one
line, before announcing any URL, when the database is missing or the port is taken."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kbench.store.db import Store
from tests.history.planting import noisy, plant_series
from tests.services import LOOPBACK
from tests.web.conftest import kbench_command, start_dashboard, stop

ALLOWED = {200, 404, 422}
RAW_HOSTILE = [
    "0", "-1", "2147483648", "99999999999999999999999", "9" * 5000, "1.5", "1e3", "NaN", "inf", "abc", " ", "\x00",
    "\u202e\U0001f4a5", "../../etc/passwd", "'; DROP TABLE runs; --", "<script>alert(1)</script>", "true",
    "99999999999d", "99999999999999999999999999999999999999.5w", "-5d", "0001-01-01", "9999-12-31T23:59:59+14:00",
    "{}", "[1]",
]
HOSTILE = [urllib.parse.quote(value, safe="") for value in RAW_HOSTILE] + ["%FF", "%C0%80", ""]
"""URL-encoded: percent escapes of invalid UTF-8 included, and an empty value."""


@dataclass(frozen=True)
class Served:
    url: str
    tiny_runs: list[int]  # 1, 2 and 3 planted samples, then a real 2-sample run
    series_id: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("hostile-web")
    db_url = f"sqlite:///{workdir / 'kbench.db'}"
    store = Store.open(db_url)
    plant_series(store, noisy(12, level=164.0, seed=3), params={"size": "64"}, seed=3)
    tiny = [plant_series(store, [100.0 + n], benchmark="syscall.stat", samples=n, seed=n)[0] for n in (1, 2, 3)]
    store.engine.dispose()
    env = dict(os.environ, KBENCH_DB=str(workdir / "kbench.db"))
    real = subprocess.run(kbench_command("run", "syscall.getppid", "--samples", "2", "--json"), env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    tiny.append(json.loads(real.stdout)["run_id"])
    server, url = start_dashboard(db_url, workdir / "serve.log")
    try:
        series = _get(f"{url}/api/series")[1]["series"]
        yield Served(url, tiny, series[0]["id"])
    finally:
        stop(server)


def _get(url: str) -> tuple[int, Any]:
    """(status, JSON body or the text) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            status, body, kind = response.status, response.read(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as error:
        status, body, kind = error.code, error.read(), error.headers.get("content-type", "")
    return status, json.loads(body) if "json" in kind else body.decode("utf-8", "replace")


def test_runs_of_one_two_and_three_samples_are_shown(served: Served) -> None:
    for run_id in served.tiny_runs:
        status, run = _get(f"{served.url}/api/runs/{run_id}")
        assert status == 200, (run_id, run)
        histogram = run["histogram"]
        assert run["n"] in (1, 2, 3) and sum(histogram["counts"]) == histogram["shown"]
        # p0.5..p99.5 keeps the middle of three samples; of two it keeps none, and then shows both
        assert histogram["shown"] == {1: 1, 2: 2, 3: 1}[run["n"]]
        assert _get(f"{served.url}/runs/{run_id}")[0] == 200
    two_planted, two_real = served.tiny_runs[1], served.tiny_runs[3]
    status, compared = _get(f"{served.url}/api/compare?a={two_planted}&b={two_real}")
    assert status == 200 and len(compared["runs"]) == 2
    assert _get(f"{served.url}/compare?a={two_real}&b={two_planted}")[0] == 200


def _requests(served: Served) -> list[str]:
    """Every GET route of the OpenAPI description with one parameter hostile at a time (the
    others valid), and with no parameters at all."""
    spec = _get(f"{served.url}/api/openapi.json")[1]
    valid = {"run_id": str(served.tiny_runs[1]), "a": str(served.tiny_runs[0]), "b": str(served.tiny_runs[3]),
             "sid": served.series_id, "since": "7d", "improvements": "true", "metric": "command.cpu"}
    urls = []
    for path, operations in spec["paths"].items():
        parameters = operations["get"].get("parameters", [])
        names = [p["name"] for p in parameters]
        assert set(names) <= valid.keys(), f"a new parameter in {path}: give it a valid value here"
        for hostile_name in [None, *names]:
            for value in HOSTILE if hostile_name else [""]:
                chosen = {name: (value if name == hostile_name else valid[name]) for name in names}
                filled = re.sub(r"\{(\w+)\}", lambda m: chosen.pop(m[1]), path)  # noqa: B023
                query = "&".join(f"{name}={v}" for name, v in chosen.items())
                urls.append(filled + (f"?{query}" if query else ""))
    assert len(spec["paths"]) >= 10 and len(urls) > 300
    return urls


def test_every_route_answers_hostile_values_with_200_404_or_422(served: Served) -> None:
    failures = []
    for path in _requests(served):
        status, body = _get(served.url + path)
        if status not in ALLOWED:
            failures.append(f"{status} {path[:120]}: {str(body)[:200]}")
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize(("path", "status"), [
    ("/api/runs/99999999999999999999999", 422), ("/runs/99999999999999999999999", 422),
    ("/api/runs/2147483647", 404), ("/api/compare?a=99999999999999999999999&b=1", 422),
    ("/compare?a=1&b=99999999999999999999999", 422), ("/api/regressions?since=99999999999d", 422),
    ("/regressions?since=99999999999d", 422), ("/api/regressions?since=yesterday", 422),
])
def test_the_issues_requests(served: Served, path: str, status: int) -> None:
    found, body = _get(served.url + path)
    assert found == status, body
    if found == 422 and "since" in path:
        assert "since" in json.dumps(body)


def _serve(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(kbench_command("--db", db, "serve", *args), capture_output=True, text=True, timeout=60)


def test_serve_on_a_busy_port_is_one_line_before_any_url(served: Served, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kbench.db'}"
    Store.open(db).engine.dispose()
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve("--host", LOOPBACK, "--port", str(port), db=db)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"kbench: error: port {port} on {LOOPBACK} is in use by another program: give another "
                           "--port (--port 0 takes a free one)\n")


def test_serve_without_a_database_fails_before_announcing(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "kbench.db"
    done = _serve("--port", "0", db=f"sqlite:///{missing}")
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("kbench: error: no results database at") and "http://" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not missing.parent.exists()


def test_serve_on_port_0_announces_the_port_it_took(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kbench.db'}"
    Store.open(db).engine.dispose()
    server = subprocess.Popen(kbench_command("--db", db, "serve", "--port", "0"), stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = re.fullmatch(r"kbench dashboard on (http://127\.0\.0\.1:(\d+)/) \(Ctrl-C stops it\)\n", line)
        assert found is not None and int(found[2]) != 0, line
        assert _get(found[1] + "api/series")[0] == 200
    finally:
        stop(server)  # type: ignore[arg-type]  # text mode: stop() only signals and waits
