"""Dashboard: a series page with 10,000 runs, served and drawn, measured by the browser (goal ≤ 1 s server time).

Usage: .venv/bin/python benchmarks/history_dashboard.py [--points 10000] [--loads 5]

Plants one series of N runs (with a step) in a fresh SQLite store, starts `kbench serve`
on 127.0.0.1, and loads /series/ID in Debian's chromium (Playwright) LOADS times. For each
load the browser's resource timing gives: the page's and its /api/series/ID JSON's server
time (the `Server-Timing: app;dur=` header the app sets), the JSON's request→response-end
time, and the time from navigation start until Plotly has drawn every point. Medians.
The first request (the index, which loads every run and finds the change points) and the
first series page are reported apart from the later loads (served from the app's cache).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ (the planting helpers)

from tests.history.planting import plant_bulk
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, start_dashboard, stop

from kbench.store.db import Store

TIMING = """() => {
  const server = (entry) => (entry.serverTiming.find((t) => t.name === 'app') || {}).duration;
  const page = performance.getEntriesByType('navigation')[0];
  const api = performance.getEntriesByType('resource').find((e) => e.name.includes('/api/series/'));
  return {page_server: server(page), api_server: server(api), api_total: api.responseEnd - api.requestStart,
          api_bytes: api.transferSize, drawn: Number(document.getElementById('series-plot').dataset.drawnAt)};
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'k.db'}"
        store = Store.open(db_url)
        values = 164.0 * (1 + 0.005 * np.random.default_rng(1).standard_normal(args.points))
        values[args.points * 3 // 4:] *= 1.03
        plant_bulk(store, values)
        store.engine.dispose()
        server, url = start_dashboard(db_url, Path(tmp) / "serve.log")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(url + "/")
                first = page.evaluate(
                    "() => performance.getEntriesByType('navigation')[0].serverTiming.find(t => t.name === 'app')"
                    ".duration")
                sid = page.locator("tr.series-row").first.get_attribute("data-series")
                results = []
                for _ in range(args.loads + 1):
                    page.goto(f"{url}/series/{sid}")
                    page.wait_for_selector('#series-plot[data-rendered="true"]', timeout=120_000)
                    assert page.locator("#series-plot").get_attribute("data-points") == str(args.points)
                    results.append(page.evaluate(TIMING))
                browser.close()
        finally:
            stop(server)
    cold, warm = results[0], results[1:]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in warm)

    print(f"series page with {args.points} runs, {args.loads} warm loads (+1 cold), load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"first request (the index: loads every run, finds the change points): server {first:.0f} ms")
    print(f"first series page: page server {cold['page_server']:.0f} ms, JSON server {cold['api_server']:.0f} ms, "
          f"drawn after {cold['drawn']:.0f} ms")
    print(f"warm medians: page server {median('page_server'):.0f} ms, JSON server {median('api_server'):.0f} ms, "
          f"JSON request→end {median('api_total'):.0f} ms ({warm[0]['api_bytes'] / 1e6:.1f} MB), "
          f"drawn after {median('drawn'):.0f} ms")


if __name__ == "__main__":
    main()
