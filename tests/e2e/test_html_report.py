"""The HTML comparison report as a browser shows it: headless Chromium renders the file offline.

One report with synthetic data (``kbench.report.comparison.example``) is written once; two
Chromium processes run side by side, one dumping the rendered DOM, one taking a screenshot.
Set ``KBENCH_SCREENSHOT_DIR`` to keep the page and its screenshot for a look.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from kbench.report.comparison import html
from kbench.report.comparison.common import HEADLINE_EVERY_METRIC, verdict_slug
from kbench.report.comparison.example import example_report
from kbench.report.comparison.model import ComparisonReport

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
WINDOW = (1200, 2000)
VOID = {"meta", "link", "br", "img", "input", "hr", "col", "wbr", "source", "area", "base", "embed", "param"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None
    children: list[Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def walk(self) -> list[Element]:
        found = [self]
        for child in self.children:
            found.extend(child.walk())
        return found

    def find(self, tag: str | None = None, css_class: str | None = None) -> list[Element]:
        return [
            e for e in self.walk()[1:]
            if (tag is None or e.tag == tag) and (css_class is None or css_class in e.classes)
        ]


class _TreeBuilder(HTMLParser):
    """Chromium's serialised DOM into a small element tree (enough for ids, classes, nesting)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent


def _parse(dom: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(dom)
    return builder.root


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium is not installed (scripts/install-deps.sh installs Debian's chromium)")


def render_in_chromium(chromium: str, page: Path, screenshot: Path, work: Path) -> str:
    """The page's DOM as headless Chromium renders it, and its screenshot written to ``screenshot``
    (two Chromium processes side by side, each with its own profile under ``work``)."""
    url = page.resolve().as_uri()

    def start(profile: str, *extra: str) -> subprocess.Popen[str]:
        args = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={work / profile}", *extra, url]
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    dump = start("profile-dom", "--dump-dom")
    shot = start("profile-shot", f"--screenshot={screenshot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 "--hide-scrollbars")
    try:
        dom, dump_err = dump.communicate(timeout=60)
        _, shot_err = shot.communicate(timeout=60)
    finally:
        for proc in (dump, shot):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert dump.returncode == 0 and dom.strip(), f"chromium --dump-dom failed:\n{dump_err[-2000:]}"
    assert shot.returncode == 0 and screenshot.exists(), f"chromium --screenshot failed:\n{shot_err[-2000:]}"
    return dom


@dataclass(frozen=True)
class Rendered:
    report: ComparisonReport
    source: str
    dom: Element
    screenshot: Path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    chromium = _chromium()
    keep = os.environ.get("KBENCH_SCREENSHOT_DIR")
    work = Path(keep) if keep else tmp_path_factory.mktemp("html-report")
    work.mkdir(parents=True, exist_ok=True)
    report = example_report()
    page = work / "comparison.html"
    source = html.render(report)
    page.write_text(source, encoding="utf-8")
    screenshot = work / "comparison.png"
    screenshot.unlink(missing_ok=True)
    dom = render_in_chromium(chromium, page, screenshot, work)
    return Rendered(report, source, _parse(dom), screenshot)


def _by_id(root: Element, element_id: str) -> Element:
    found = [e for e in root.walk() if e.attrs.get("id") == element_id]
    assert len(found) == 1, f"expected one #{element_id}, found {len(found)}"
    return found[0]


def test_page_is_self_contained(rendered: Rendered) -> None:
    source = rendered.source
    assert "<script" not in source
    assert "<link" not in source
    assert "http://" not in source.replace("http://www.w3.org/", "")  # SVG namespaces are names, not fetches
    assert "https://" not in source
    assert "@import" not in source and "url(http" not in source


def test_forest_plot_has_one_row_per_metric(rendered: Rendered) -> None:
    forest = _by_id(rendered.dom, "forest-plot")
    assert forest.tag == "figure"
    svgs = forest.find("svg")
    assert len(svgs) == 1 and "forest-svg" in svgs[0].classes


def test_one_section_per_metric_with_its_verdict_and_plots(rendered: Rendered) -> None:
    sections = rendered.dom.find("section", "metric-section")
    metrics = rendered.report.metrics
    assert [s.attrs["data-metric"] for s in sections] == [m.metric for m in metrics]
    assert [s.attrs["data-verdict"] for s in sections] == [verdict_slug(m.verdict) for m in metrics]
    assert {"regression", "improvement", "no-change"} <= {s.attrs["data-verdict"] for s in sections}
    for section in sections:
        for kind in ("histogram", "cdf", "timeseries"):
            figures = section.find("figure", f"plot-{kind}")
            assert len(figures) == 1, (section.attrs["id"], kind)
            svg = figures[0].find("svg")
            assert len(svg) == 1 and f"{kind}-svg" in svg[0].classes
            assert len(svg[0].find("path")) > 10  # something is drawn


def test_summary_rows_context_and_parameters(rendered: Rendered) -> None:
    table = _by_id(rendered.dom, "summary-table")
    rows = table.find("tr", "metric-row")
    assert [r.attrs["data-verdict"] for r in rows] == [verdict_slug(m.verdict) for m in rendered.report.metrics]
    context = _by_id(rendered.dom, "run-context")
    assert len(context.find("tr")) == len(rendered.report.context)
    parameters = _by_id(rendered.dom, "test-parameters")
    assert len(parameters.find("tr")) == len(rendered.report.parameters)
    # Every metric's verdict is stated: one line each for a few metrics; for many, one per
    # metric that changed or is undecided and one line for all those without a change.
    metrics = rendered.report.metrics
    unchanged = sum(m.verdict == "no change" for m in metrics)
    expected = len(metrics) if len(metrics) <= HEADLINE_EVERY_METRIC else len(metrics) - unchanged + (unchanged > 0)
    assert len(_by_id(rendered.dom, "headlines").find("li")) == expected


def test_ids_are_unique_across_all_inline_svgs(rendered: Rendered) -> None:
    ids = [e.attrs["id"] for e in rendered.dom.walk() if "id" in e.attrs]
    assert len(ids) == len(set(ids))


def test_screenshot_shows_a_page(rendered: Rendered) -> None:
    from matplotlib import image

    assert rendered.screenshot.stat().st_size > 50_000
    pixels = image.imread(str(rendered.screenshot))
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    rgb = pixels[..., :3]
    assert float(rgb.std()) > 0.05  # not a blank page
    not_background = np.any(np.abs(rgb - rgb[5, 5]) > 0.1, axis=-1)
    assert not_background.mean() > 0.05  # text, tables and plots cover a real part of it
    colorful = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.3
    assert colorful.mean() > 0.002  # the colored plots and badges rendered
