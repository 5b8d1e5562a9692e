"""The dashboard's run page shows a run's perf counters and its profile's flame graph (served
as an interactive SVG), from a real SQLite store through the real ``kbench serve``."""

from __future__ import annotations

import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest
from sqlalchemy import update

from kbench.store import schema
from kbench.store.db import Store
from tests.history.planting import plant_series
from tests.web.conftest import start_dashboard, stop

SVG = "{http://www.w3.org/2000/svg}"


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.headers.get("content-type", ""), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, "", ""


def test_run_page_counters_and_flame_graph(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    profiled, plain = plant_series(store, [100.0, 101.0])
    counters = {"source": "perf_event_open", "scope": "user+kernel", "operations": 1000, "events": [
        {"name": "task-clock", "type": "software", "supported": True, "unit": "ns", "value": 123456,
         "enabled_ns": 123456, "running_ns": 123456},
        {"name": "cycles", "type": "hardware", "supported": False, "errno": 2, "error": "No such file"}]}
    header = {**store.get_run(profiled).probe_header, "counters": counters}
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == profiled).values(probe_header=header))
    folded = b"prog;main;mix_a 400\nprog;main;mix_b 600\n"
    store.save_profile(profiled, event="cpu-clock", frequency_hz=4999, samples=1000, weight=1000,
                       data=zlib.compress(folded), details={"window": "measured region"})
    store.engine.dispose()
    server, url = start_dashboard(f"sqlite:///{db}", tmp_path / "serve.log")
    try:
        status, _, page = _get(f"{url}/runs/{profiled}")
        assert status == 200
        assert 'id="run-counters"' in page and 'data-counter="task-clock"' in page
        assert "123.5 ns/op" in page  # 123456 ns over 1000 operations
        assert "not supported: no such event on this machine" in page
        assert f'data="/runs/{profiled}/flame.svg"' in page
        status, kind, svg = _get(f"{url}/runs/{profiled}/flame.svg")
        assert status == 200 and kind.startswith("image/svg+xml")
        frames = {g.get("data-name"): float(g.get("data-w") or 0) for g in ET.fromstring(svg).iter(f"{SVG}g")
                  if g.get("class") == "fg-frame"}
        assert frames["mix_b"] == pytest.approx(1.5 * frames["mix_a"])
        status, _, page = _get(f"{url}/runs/{plain}")
        assert status == 200 and "run-counters" not in page and "run-flame" not in page
        assert _get(f"{url}/runs/{plain}/flame.svg")[0] == 404
    finally:
        stop(server)
