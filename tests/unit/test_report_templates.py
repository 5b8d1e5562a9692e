"""The HTML reports are Jinja2 templates with one base layout, autoescaped, carrying their values.

Each report is rendered from fixed inputs (the synthetic comparison, a simulated bisection, a
planted regression history, a planted run over time) and read back with an HTML parser: the
shared frame, text escaped, and the key values where they belong, computed here independently
where they are numbers of samples.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from kbench.report.comparison import html as comparison_html
from kbench.report.comparison.common import format_change
from kbench.report.comparison.example import example_report
from kbench.report.templating import TEMPLATES, environment, render

HOSTILE = 'a <b>&"x"\''
ESCAPED = "a &lt;b&gt;&amp;&quot;x&quot;&#x27;"


class Page(HTMLParser):
    """Tags (with their attributes) in order and the text inside each element with an id."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text_by_id: dict[str, list[str]] = {}
        self._open: list[str | None] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if tag not in ("meta", "br", "circle", "line", "path", "rect", "use"):
            self._open.append(found.get("id"))

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag not in ("meta", "br"):
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for element in self._open:
            if element:
                self.text_by_id.setdefault(element, []).append(data)

    def text(self, element_id: str) -> str:
        return " ".join(" ".join(self.text_by_id.get(element_id, [])).split())

    def count(self, tag: str, **attrs: str) -> int:
        return sum(1 for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items()))


def _framed(source: str) -> Page:
    """The one base layout: a document with kbench's generator, one inline style sheet, one main."""
    assert source.startswith("<!DOCTYPE html>")
    page = Page(source)
    assert page.count("meta", name="generator", content="kbench") == 1
    head = page.tags[:next(i for i, (tag, _) in enumerate(page.tags) if tag == "body")]
    assert [tag for tag, _ in head].count("style") == 1  # the page's own sheet; plots may carry theirs
    assert page.count("main") == 1 and page.count("link") == 0
    assert "<script" not in source
    return page


def test_every_report_template_extends_the_one_base_layout() -> None:
    pages = sorted(p.name for p in TEMPLATES.glob("*.html") if p.name not in ("base.html", "macros.html"))
    assert pages == ["bisect.html", "comparison.html", "over_time.html", "regression.html",
                     "regression_entries.html"]
    for name in pages:
        first = (TEMPLATES / name).read_text().lstrip().splitlines()[0]
        assert first == '{% extends "base.html" %}' or name == "regression_entries.html", name
    assert environment().autoescape is True


def test_values_are_escaped_and_markup_of_kbench_is_not() -> None:
    from kbench.report.templating import trusted

    shown = render("base.html", title=HOSTILE, css=trusted("p { color: red; }"))
    assert f"<title>{ESCAPED}</title>" in shown and "<style>p { color: red; }</style>" in shown


def test_the_comparison_carries_each_metrics_values() -> None:
    report = example_report()
    report = replace(report, title=HOSTILE, context={"cpu": HOSTILE})
    source = comparison_html.render(report)
    page = _framed(source)
    assert f"<h1>{ESCAPED}</h1>" in source and HOSTILE not in source
    assert page.count("tr", **{"class": "metric-row"}) == len(report.metrics)
    for m in report.metrics:
        section = comparison_html.section_id(report, m)
        assert page.count("section", id=section) == 1
        assert format_change(m.change_pct) in page.text("summary-table")
    assert HOSTILE in page.text("run-context")
    assert page.count("svg") >= len(report.metrics)  # the plots, inserted as they were drawn


def test_the_bisection_names_its_first_bad_commit() -> None:
    from kbench.report.bisect_html import render_bisect_html
    from tests.unit.test_bisect_html import COMMITS, NASTY, bisection

    report = bisection(culprit=9, broken=[7])
    source = render_bisect_html(report)
    page = _framed(source)
    assert page.count("div", id="first-bad", **{"data-sha": COMMITS[9]}) == 1
    assert NASTY in page.text("first-bad") and NASTY not in source
    assert page.count("tr", **{"data-commit": COMMITS[7], "data-verdict": "skip"}) >= 1
    assert len(report["steps"]) == sum(1 for t, a in page.tags if t == "tr" and "step-row" in a.get("class", ""))


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kbench.store.db import Store
    from tests.history.planting import fake_commits, noisy, plant_series

    db = tmp_path_factory.mktemp("templates") / "k.db"
    store = Store.open(f"sqlite:///{db}")
    values = noisy(30, level=200.0, cv=0.002, seed=3)
    values[20:] *= 1.04
    plant_series(store, values, params={"size": HOSTILE}, commits=fake_commits(30, seed=4), samples=300)
    store.engine.dispose()
    return db


def test_the_regression_report_carries_the_change_and_how_to_reproduce(planted_store: Path) -> None:
    from kbench.history.analysis import analyse
    from kbench.history.changes import DetectionSettings
    from kbench.history.load import load_series
    from kbench.history.regressions import regression_report, wanted_runs
    from kbench.report.regression_html import fragment, render_page
    from kbench.store.db import Store
    from kbench.store.series import run_requests

    store = Store.open(f"sqlite:///{planted_store}", read_only=True)
    histories = analyse(load_series(store, None), DetectionSettings())
    report = regression_report(histories, run_requests(store, wanted_runs(histories)))
    (entry,) = report.suspected
    source = render_page(report, "in every series")
    page = _framed(source)
    assert page.count("article", **{"class": "regression", "data-run": str(entry.point.run_id)}) == 1
    assert f"{entry.point.change.change_pct:+.1f}%" in source
    assert "\n".join(entry.reproduce).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&quot;").replace("'", "&#x27;") in source
    assert HOSTILE not in source and ESCAPED in source
    linked = fragment(report, "x", link=lambda series, run: f"/series/{series}?run={run}")
    assert "<!DOCTYPE" not in linked and linked.count('href="/series/') == 3  # the series and both runs


def test_the_run_over_time_shows_each_chunks_median(planted_store: Path) -> None:
    from kbench.engine.stored_run import load_stored_run
    from kbench.report.over_time import over_time, render_html
    from kbench.report.units import format_value
    from kbench.store.db import Store

    run = load_stored_run(Store.open(f"sqlite:///{planted_store}", read_only=True), 1)
    view = over_time(run, chunks=3)
    source = render_html(view)
    page = _framed(source)
    values = np.asarray(run.values, dtype=np.float64)
    for part in np.array_split(values, 3):
        assert format_value(float(np.median(part)), view.unit) in page.text("chunks")


def test_jinja2_is_imported_when_a_page_is_rendered_not_before() -> None:
    code = ("import sys\nimport kbench.report.comparison.html, kbench.report.bisect_html\n"
            "import kbench.report.regression_html\nassert 'jinja2' not in sys.modules\n"
            "from kbench.report.templating import render\n"
            "render('macros.html')\nassert 'jinja2' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
