"""`kbench serve` in a real browser, over SQLite and over PostgreSQL (the `dashboard` fixture)."""

from __future__ import annotations

import io
import json
import subprocess
import urllib.error
import urllib.request
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.history.planting import TICKS_PER_NS
from tests.web.conftest import POINTS, STEP_AT, Planted, kbench_command

CHANGE_RED = np.array([0xC6, 0x28, 0x28])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def assert_not_blank(png: bytes) -> np.ndarray:
    """Some pixel variance, and at least 1 % of the pixels away from the background colour."""
    image = pixels(png)
    flat = image.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    drawn = float((np.abs(flat - background).sum(axis=1) > 30).mean())
    assert flat.std(axis=0).max() > 5 and drawn > 0.01, f"screenshot looks blank ({drawn:.2%} drawn)"
    return image


def red_pixels(image: np.ndarray) -> int:
    return int((np.abs(image - CHANGE_RED).sum(axis=2) < 40).sum())


def stepped_id(dashboard: Planted) -> str:
    (found,) = [s for s in get_json(f"{dashboard.url}/api/series")["series"] if s["benchmark"] == "syscall.getppid"]
    return str(found["id"])


def series_id_of(dashboard: Planted, benchmark: str) -> str:
    (found,) = [s for s in get_json(f"{dashboard.url}/api/series")["series"] if s["benchmark"] == benchmark]
    return str(found["id"])


def test_the_index_lists_every_series_with_sparkline_and_latest_confirmed_change(
    dashboard: Planted, page: Any,
) -> None:
    """The latest change of a series is the latest regression a watch confirmed; a change point
    nothing measured again is counted as suspected, never shown as the series' change."""
    cli = subprocess.run(kbench_command("--db", dashboard.db_url, "history", "--json"), capture_output=True,
                         text=True, check=True)
    expected = {s["id"]: s for s in json.loads(cli.stdout)["series"]}
    page.goto(dashboard.url + "/")
    rows = page.locator("tr.series-row")
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.series)")) == sorted(expected)
    for sid in expected:
        assert page.locator(f'tr.series-row[data-series="{sid}"]').locator("svg.sparkline polyline").count() == 1
    stepped = page.locator(f'tr.series-row[data-series="{stepped_id(dashboard)}"]')
    assert stepped.get_attribute("data-verdict") == "regression"
    text = stepped.inner_text()
    assert "+2.9% regression" in text and f"due to {dashboard.commits[STEP_AT][:12]}" in text and "open" in text
    link = stepped.locator("a.verdict").get_attribute("href")
    assert link == f"/runs/{dashboard.stepped[STEP_AT]}?metric=syscall.getppid.latency"
    suspected_id = series_id_of(dashboard, "command")
    assert [c["index"] for c in expected[suspected_id]["change_points"]] == [STEP_AT]
    suspected = page.locator(f'tr.series-row[data-series="{suspected_id}"]')
    assert suspected.get_attribute("data-verdict") == "none"
    assert "1 suspected" in suspected.inner_text() and "regression" not in suspected.inner_text()
    flat = page.locator(f'tr.series-row[data-series="{series_id_of(dashboard, "will-it-scale.getppid1")}"]')
    assert flat.get_attribute("data-verdict") == "none" and "suspected" not in flat.inner_text()
    assert_not_blank(page.screenshot(full_page=True))
    assert page.errors == []


def test_a_series_in_milliseconds_is_drawn_in_milliseconds(dashboard: Planted, page: Any) -> None:
    sid = series_id_of(dashboard, "command")
    page.goto(f"{dashboard.url}/series/{sid}")
    page.wait_for_selector('#series-plot[data-rendered="true"]', timeout=60_000)
    assert page.locator("#series-plot").get_attribute("data-unit") == "ms"
    ticks = page.locator("#series-plot .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert ticks and all(18.0 < float(t.replace(",", "")) < 21.0 for t in ticks), ticks  # 19.2 ms, not "19.2M"
    assert page.locator("#series-plot .g-ytitle").evaluate("e => e.textContent") == "command.wall (ms)"
    row = page.locator("tr.change-row")
    assert row.get_attribute("data-status") == "suspected"
    compare = row.locator("a", has_text="compare").get_attribute("href")
    assert compare is not None and compare.endswith("&metric=command.wall")
    page.goto(f"{dashboard.url}{compare}")
    page.wait_for_selector('#compare-cdf[data-rendered="true"]', timeout=60_000)
    assert page.locator("#compare-cdf .g-xtitle").evaluate("e => e.textContent") == "command.wall (ms)"
    assert page.errors == []


def test_the_series_page_draws_every_run_and_the_change_point_and_a_click_opens_the_run(
    dashboard: Planted, page: Any,
) -> None:
    sid = stepped_id(dashboard)
    api = get_json(f"{dashboard.url}/api/series/{sid}")
    assert [p["run_id"] for p in api["points"]] == dashboard.stepped
    assert [(c["index"], c["run_id"]) for c in api["change_points"]] == [(STEP_AT, dashboard.stepped[STEP_AT])]
    page.goto(f"{dashboard.url}/series/{sid}")
    plot = page.locator("#series-plot")
    page.wait_for_selector('#series-plot[data-rendered="true"]', timeout=60_000)
    assert plot.get_attribute("data-points") == str(POINTS)
    assert plot.get_attribute("data-change-points") == "1"
    runs = plot.locator(".scatterlayer .trace").first.locator("path.point")
    assert runs.count() == POINTS
    image = assert_not_blank(plot.screenshot())
    assert red_pixels(image) > 50, "the change point (red line and marker) is not drawn"
    row = page.locator("tr.change-row")
    assert row.get_attribute("data-run") == str(dashboard.stepped[STEP_AT])
    assert dashboard.commits[STEP_AT][:12] in row.inner_text()
    assert row.get_attribute("data-status") == "confirmed" and "getppid: take the slow path" in row.inner_text()
    assert row.locator("a").first.get_attribute("href") == \
        f"/runs/{dashboard.stepped[STEP_AT]}?metric=syscall.getppid.latency"
    # Click the 12th run's marker: Plotly turns it into plotly_click, the page opens the run.
    box = runs.nth(12).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(f"**/runs/{dashboard.stepped[12]}?metric=syscall.getppid.latency", timeout=30_000)
    page.wait_for_selector('#run-histogram[data-rendered="true"]', timeout=60_000)
    page.wait_for_selector('#run-cdf[data-rendered="true"]', timeout=60_000)
    assert page.locator("#series-link").inner_text() == sid
    assert "label nightly-12" in page.locator("#run-summary").inner_text()
    assert page.locator("#run-context").count() == 1
    assert_not_blank(page.screenshot(full_page=True))
    assert page.errors == []


def test_the_run_api_matches_the_stored_samples(dashboard: Planted) -> None:
    from kbench.store.db import Store

    run_id = dashboard.stepped[5]
    run = get_json(f"{dashboard.url}/api/runs/{run_id}")
    store = Store.open(dashboard.db_url)
    ticks = store.load_samples(run_id)["ticks"].astype(float)
    store.engine.dispose()
    values = ticks / TICKS_PER_NS  # planted: batch 1
    assert run["n"] == values.size
    assert run["summary"]["median"] == pytest.approx(np.median(values))
    assert sum(run["histogram"]["counts"]) == run["histogram"]["shown"]
    assert run["cdf"]["values"][0] == pytest.approx(values.min())
    assert run["cdf"]["values"][-1] == pytest.approx(values.max())
    assert run["commit"] == dashboard.commits[5]


def test_compare_and_regressions_pages(dashboard: Planted, page: Any) -> None:
    before, after = dashboard.stepped[STEP_AT - 1], dashboard.stepped[STEP_AT]
    page.goto(f"{dashboard.url}/compare?a={before}&b={after}")
    page.wait_for_selector('#compare-cdf[data-rendered="true"]', timeout=60_000)
    page.wait_for_selector('#compare-histogram[data-rendered="true"]', timeout=60_000)
    compared = get_json(f"{dashboard.url}/api/compare?a={before}&b={after}")
    a, b = (r["summary"]["median"] for r in compared["runs"])
    assert compared["median_change_pct"] == pytest.approx(100 * (b / a - 1))
    assert f"{compared['median_change_pct']:+.2f}%" in page.locator("#median-change").inner_text()
    assert_not_blank(page.screenshot(full_page=True))
    page.goto(f"{dashboard.url}/regressions")
    entries = page.locator("article.regression")
    assert entries.count() == 2  # the confirmed getppid regression first, then the suspected command.wall change
    confirmed, suspected = entries.nth(0), entries.nth(1)
    assert confirmed.get_attribute("data-status") == "confirmed"
    assert suspected.get_attribute("data-status") == "suspected"
    assert confirmed.get_attribute("data-culprit") == dashboard.commits[STEP_AT]
    assert f"git checkout {dashboard.commits[STEP_AT]}" in confirmed.locator("pre.reproduce").inner_text()
    table = confirmed.locator("pre.side-by-side").inner_text()  # its own side-by-side table, values in their unit
    assert "parent" in table and "164.0ns" in table and "+2.9%" in table and "168.8ns" in table
    assert "getppid: take the slow path" in confirmed.inner_text() and "due to commit" in confirmed.inner_text()
    assert "suspected:" in suspected.inner_text() and "due to commit" not in suspected.inner_text()
    page.goto(f"{dashboard.url}/regressions?since=2099-01-01")
    assert page.locator("article.regression").count() == 0
    assert page.errors == []


def test_unknown_pages_and_bad_input(dashboard: Planted) -> None:
    for path, status in (("/series/0123456789ab", 404), ("/api/series/0123456789ab", 404), ("/runs/99999", 404),
                         ("/api/runs/99999", 404), ("/api/regressions?since=yesterday", 422)):
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(dashboard.url + path, timeout=60)
        assert raised.value.code == status, path
    with urllib.request.urlopen(dashboard.url + "/vendor/plotly.min.js", timeout=60) as response:
        assert b"plotly.js" in response.read(2000)
        assert "app;dur=" in response.headers["Server-Timing"]
