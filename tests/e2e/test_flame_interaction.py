"""The flame graph's own script in a real browser (Debian's chromium through Playwright): two graphs
on one page, zoom and reset, search, each graph on its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kbench.profile.flame import WIDTH_PX, flame_svg
from kbench.profile.folded import FoldedProfile

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def _profile(mix_b: int) -> FoldedProfile:
    return FoldedProfile({"prog;main;mix_a": 400, "prog;main;mix_b": mix_b, "prog;main;mix_b;helper": 100,
                          "prog;entry_SYSCALL_64_[k];do_syscall_64_[k]": 100}, samples=600 + mix_b)


def _width(page: object, graph: int, name: str) -> float:
    return float(page.eval_on_selector(  # type: ignore[attr-defined]
        f"svg.flame-graph >> nth={graph} >> g.fg-frame[data-name='{name}'] >> rect",
        "r => r.getAttribute('width')"))


def test_zoom_reset_and_search_in_chromium(tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip("needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "two.html"
    page_file.write_text("<!DOCTYPE html><html><body>" + flame_svg(_profile(400), title="one")
                         + flame_svg(_profile(600), title="two") + "</body></html>")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(page_file.as_uri())
            before = _width(page, 0, "mix_b")
            assert before == pytest.approx(WIDTH_PX * 500 / 1000 - 0.5, abs=0.01)
            page.click("svg.flame-graph >> nth=0 >> g.fg-frame[data-name='mix_b']")
            assert _width(page, 0, "mix_b") == pytest.approx(WIDTH_PX - 0.5, abs=0.01)  # zoomed to it
            assert _width(page, 0, "helper") == pytest.approx(WIDTH_PX * 100 / 500 - 0.5, abs=0.01)
            assert page.eval_on_selector("svg.flame-graph >> nth=0 >> g.fg-frame[data-name='mix_a']",
                                         "g => g.style.display") == "none"
            assert _width(page, 1, "mix_b") == pytest.approx(WIDTH_PX * 700 / 1200 - 0.5, abs=0.01)  # the other
            page.click("svg.flame-graph >> nth=0 >> text.fg-reset")
            assert _width(page, 0, "mix_b") == pytest.approx(before, abs=0.01)

            page.once("dialog", lambda dialog: dialog.accept("^mix_"))
            page.click("svg.flame-graph >> nth=1 >> text.fg-search")
            matched = page.text_content("svg.flame-graph >> nth=1 >> text.fg-matched")
            assert matched == f"matched {100 * 1100 / 1200:.2f}%"  # mix_a and mix_b (helper is inside mix_b)
            assert page.text_content("svg.flame-graph >> nth=0 >> text.fg-matched") == ""
        finally:
            browser.close()
