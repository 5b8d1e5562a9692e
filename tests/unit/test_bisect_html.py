"""The HTML page of a bisection, on reports of real bisections (``Bisector``) over a simulated lab.

The reports go through ``bisect_cmd.report_dict`` and a JSON round trip, as ``kbench bisect
status --json`` would hand them out; the pages are read back with the element tree of the
comparison report's browser test, and one is rendered by headless Chromium.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbench.bisect.driver import FAILED, BisectError, Bisector, BisectState, Settings
from kbench.cli import main as _cli  # noqa: F401  (imports bisect_cmd; importing bisect_cmd first is a cycle)
from kbench.cli.bisect_cmd import report_dict
from kbench.report.bisect_html import change_text, commit_positions, render_bisect_html
from tests.e2e.test_html_report import WINDOW, Element, _by_id, _chromium, _TreeBuilder, render_in_chromium

NASTY = 'fix <b>&"x"'
COUNT = 16  # commits after the good one, the last is the bad one
BASE_NS = 20e6


def _sha(number: int) -> str:
    return hashlib.sha1(f"commit {number}".encode()).hexdigest()


GOOD_SHA = _sha(0)
COMMITS = [_sha(i) for i in range(1, COUNT + 1)]


class SimulatedLab:
    """Commits with known mean trial statistics (ns), lognormal noise around them; some do not build."""

    def __init__(self, means: dict[str, float], subjects: dict[str, str], broken: set[str], sigma: float,
                 seed: int):
        self.means = means
        self.subjects = subjects
        self.broken = broken
        self.sigma = sigma
        self.rng = np.random.default_rng(seed)

    def build(self, commit: str) -> str | None:
        return "exit 1: prog.c:12:1: error: expected ';' before '}' token" if commit in self.broken else None

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {commit: [] for commit in commits}
        for _ in range(n):
            for index in self.rng.permutation(len(commits)):
                commit = commits[int(index)]
                out[commit].append(float(self.means[commit] * self.rng.lognormal(0.0, self.sigma)))
        return out

    def describe(self, commit: str) -> dict[str, str]:
        return {"sha": commit, "subject": self.subjects[commit], "author": "Kay Bench <kay@example.org>"}


def bisection(*, culprit: int | None, broken: Sequence[int] = (), broken_good: bool = False, sigma: float = 0.01,
              seed: int = 0) -> dict[str, Any]:
    """The report of a real bisection: from commit index ``culprit`` on, trials are 5% slower."""
    means = {GOOD_SHA: BASE_NS} | {
        sha: BASE_NS * (1.05 if culprit is not None and i >= culprit else 1.0) for i, sha in enumerate(COMMITS)
    }
    subjects = {GOOD_SHA: "v1.0"} | {sha: f"mm: tidy up step {i}" for i, sha in enumerate(COMMITS)}
    if culprit is not None:
        subjects[COMMITS[culprit]] = NASTY
    failing = {COMMITS[i] for i in broken} | ({GOOD_SHA} if broken_good else set())
    lab = SimulatedLab(means, subjects, failing, sigma, seed)
    state = BisectState(good=GOOD_SHA, bad=COMMITS[-1], commits=list(COMMITS))
    try:
        Bisector(lab, state, Settings()).run()
    except BisectError as exc:  # what ``kbench bisect`` stores then
        state.status, state.result = FAILED, {"error": str(exc)}
    record = {
        "id": 7, "status": state.status, "repo": "/home/kay/src/prog", "good": GOOD_SHA, "bad": COMMITS[-1],
        "command": "./prog --fast", "build": "make -j2 prog",
        "params": {"samples": 10, "trials": 3, "check_trials": 20, "metric": "cpu", "alpha": 0.05, "seed": 0,
                   "commits": list(COMMITS), "workdir": "/tmp/kbench-bisect/7"},
        "refs": state.refs, "steps": state.steps, "result": state.result,
        "created_at": "2025-01-02 10:00:00", "updated_at": "2025-01-02 10:04:31",
    }
    report: dict[str, Any] = json.loads(json.dumps(report_dict(record)))
    return report


class _TextTreeBuilder(_TreeBuilder):
    """The browser test's element tree, plus the text directly inside each element."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[int, list[str]] = {}

    def handle_data(self, data: str) -> None:
        self.texts.setdefault(id(self.current), []).append(data)


@dataclass(frozen=True)
class Page:
    source: str
    root: Element
    texts: dict[int, list[str]]

    def by_id(self, element_id: str) -> Element:
        return _by_id(self.root, element_id)

    def has(self, element_id: str) -> bool:
        return any(e.attrs.get("id") == element_id for e in self.root.walk())

    def text(self, element: Element) -> str:
        return " ".join(" ".join(" ".join(self.texts.get(id(e), [])) for e in element.walk()).split())


def page_of(report: dict[str, Any]) -> Page:
    source = render_bisect_html(report)
    builder = _TextTreeBuilder()
    builder.feed(source)
    builder.close()
    return Page(source, builder.root, builder.texts)


@pytest.fixture(scope="module")
def found() -> dict[str, Any]:
    """Culprit at index 9, index 7 (the first midpoint) does not build."""
    return bisection(culprit=9, broken=[7])


def _rows(page: Page) -> list[Element]:
    return page.by_id("steps-table").find("tr", "step-row")


def test_first_bad_commit_headline_and_hooks(found: dict[str, Any]) -> None:
    assert found["status"] == "done" and found["first_bad"]["sha"] == COMMITS[9]
    page = page_of(found)
    headline = page.by_id("headline")
    assert headline.attrs["data-status"] == "done"
    first_bad = page.by_id("first-bad")
    assert first_bad.attrs["data-sha"] == COMMITS[9] and first_bad.parent is headline
    text = page.text(headline)
    assert f"first bad commit: {COMMITS[9][:12]} {NASTY}" in text
    assert "author: Kay Bench <kay@example.org>" in text
    rounds = len(found["evidence"]["parent_trials"])
    assert f"change vs its parent {COMMITS[8][:12]} ({rounds} rounds side by side): " \
        f"{change_text(found['change_pct'], found['ci_pct'], found['p_value'])}" in text
    assert not page.has("candidates")
    for hook in ("check", "evidence-plot", "parameters"):
        assert page.has(hook), hook
    plot = page.by_id("evidence-plot")
    assert plot.tag == "figure"
    svgs = plot.find("svg")
    assert len(svgs) == 1 and "evidence-svg" in svgs[0].classes and len(svgs[0].find("path")) > 20


def test_one_row_per_step_with_its_verdict(found: dict[str, Any]) -> None:
    page = page_of(found)
    rows = _rows(page)
    steps = found["steps"]
    assert [r.attrs["data-verdict"] for r in rows] == [s["verdict"] for s in steps]
    assert [r.attrs["data-commit"] for r in rows] == [s["commit"] for s in steps]
    assert rows[0].attrs["data-verdict"] == "skip" and rows[0].attrs["data-commit"] == COMMITS[7]
    assert "build failed: exit 1" in page.text(rows[0])
    assert {"good", "bad", "skip"} <= {r.attrs["data-verdict"] for r in rows}
    for row, step in zip(rows, steps, strict=True):
        cells = row.find("td")
        assert page.text(cells[0]) == str(steps.index(step) + 1)
        assert page.text(cells[1]) == step["commit"][:12]
        assert page.text(cells[4]) == str(len(step["trials"]))
        assert ("first-bad" in row.classes) == (step["commit"] == COMMITS[9])
        assert bool(row.find("span", "weak")) == bool(step["weak"])
        assert bool(row.find("span", "recheck")) == (step["phase"] == "recheck")


def test_change_text_leaves_out_what_is_missing() -> None:
    assert change_text(5.04, [4.1, 5.9], 0.0002) == "+5.0% (CI +4.1…+5.9%, p=0.0002)"
    assert change_text(7.0, [None, None], 0.1) == "+7.0% (p=0.10)"  # JSON's NaN is None
    assert change_text(None, None, None) == "–"


def test_weak_and_recheck_marks() -> None:
    report = copy.deepcopy(bisection(culprit=9, broken=[7]))
    report["steps"][1]["weak"] = True
    report["steps"].append(dict(report["steps"][1], phase="recheck", weak=False))
    rows = _rows(page_of(report))
    assert len(rows) == len(report["steps"])
    assert rows[1].find("span", "weak") and not rows[1].find("span", "recheck")
    assert rows[-1].find("span", "recheck") and rows[-1].attrs["data-phase"] == "recheck"


def test_subjects_are_escaped(found: dict[str, Any]) -> None:
    page = page_of(found)
    assert NASTY not in page.source
    assert "fix &lt;b&gt;&amp;&quot;x&quot;" in page.source
    assert not page.root.find("b")  # no element came out of a subject
    row = next(r for r in _rows(page) if r.attrs["data-commit"] == COMMITS[9])
    assert page.text(row.find("td", "subject")[0]) == NASTY


def test_commit_order_comes_from_the_commit_list(found: dict[str, Any]) -> None:
    expected = {step["commit"]: COMMITS.index(step["commit"]) + 1 for step in found["steps"]}
    assert commit_positions(found) == expected
    unknown = dict(found, commits=[c for c in COMMITS if c != found["steps"][0]["commit"]])  # one missing
    assert commit_positions(unknown) is None and commit_positions(dict(found, commits=None)) is None
    assert "evidence-svg" in render_bisect_html(unknown)  # the plot falls back to the order measured


def test_parameters_and_extra_keys(found: dict[str, Any]) -> None:
    report = copy.deepcopy(found)
    report["unit"] = "cycles"
    report["kind"] = "program"
    report["steps"][0]["console_tail"] = ["prog.c:12:1: error: expected ';' <here>", "make: *** [prog] Error 1"]
    page = page_of(report)
    parameters = page.text(page.by_id("parameters"))
    for fragment in ("command ./prog --fast", "build make -j2 prog", f"good {GOOD_SHA}", "commits 16",
                     "params.metric cpu", "params.trials 3", "unit cycles", "kind program"):
        assert fragment in parameters, fragment
    assert "cycles" in page.text(_rows(page)[1])
    assert "expected ';' <here>" in page.text(_rows(page)[0].find("pre")[0])


def test_no_difference() -> None:
    report = bisection(culprit=None)
    assert report["status"] == "no-difference" and report["steps"] == []
    page = page_of(report)
    assert page.by_id("headline").attrs["data-status"] == "no-difference"
    assert "no reproducible difference" in page.text(page.by_id("headline"))
    assert not page.has("first-bad")
    assert _rows(page) == []
    assert len(page.by_id("check").find("tr")) == 3
    assert page.by_id("evidence-plot").find("svg")  # the check's trials are drawn


def test_failed() -> None:
    report = bisection(culprit=9, broken_good=True)
    assert report["status"] == "failed"
    page = page_of(report)
    headline = page.by_id("headline")
    assert headline.attrs["data-status"] == "failed"
    assert f"good commit {GOOD_SHA[:12]} does not build" in page.text(headline)
    assert not page.has("first-bad") and _rows(page) == []
    assert not page.by_id("evidence-plot").find("svg")  # nothing was measured


def test_ambiguous_candidates() -> None:
    report = bisection(culprit=10, broken=[9])
    assert report["status"] == "done" and report["first_bad"] is None
    page = page_of(report)
    assert page.by_id("headline").attrs["data-status"] == "done"
    assert not page.has("first-bad")
    items = page.by_id("candidates").find("li")
    assert [li.attrs["data-sha"] for li in items] == [COMMITS[9], COMMITS[10]]
    assert NASTY in page.text(items[1])
    assert "one of 2 commits" in page.text(page.by_id("headline"))
    assert "skip" in [r.attrs["data-verdict"] for r in _rows(page)]


def test_running_and_sparse_reports_render(found: dict[str, Any]) -> None:
    running = dict(found, status="running", first_bad=None, candidates=None, steps=found["steps"][:2])
    page = page_of(running)
    assert page.by_id("headline").attrs["data-status"] == "running"
    assert "kbench bisect resume 7" in page.text(page.by_id("headline"))
    assert len(_rows(page)) == 2
    bare = page_of({"status": "aborted"})
    assert bare.by_id("headline").attrs["data-status"] == "aborted"
    assert _rows(bare) == [] and bare.has("parameters")


def test_page_is_self_contained_with_unique_ids(found: dict[str, Any]) -> None:
    page = page_of(found)
    assert "<script" not in page.source and "<link" not in page.source
    assert "http://" not in page.source.replace("http://www.w3.org/", "")
    assert "https://" not in page.source and "@import" not in page.source
    ids = [e.attrs["id"] for e in page.root.walk() if "id" in e.attrs]
    assert len(ids) == len(set(ids))


def test_chromium_renders_the_steps_and_the_plot(found: dict[str, Any], tmp_path: Path) -> None:
    from matplotlib import image

    chromium = _chromium()  # skips when missing
    page = tmp_path / "bisect.html"
    page.write_text(render_bisect_html(found), encoding="utf-8")
    screenshot = tmp_path / "bisect.png"
    dom = render_in_chromium(chromium, page, screenshot, tmp_path)

    builder = _TextTreeBuilder()
    builder.feed(dom)
    rendered = Page(dom, builder.root, builder.texts)
    rows = _rows(rendered)
    assert [r.attrs["data-verdict"] for r in rows] == [s["verdict"] for s in found["steps"]]
    assert rendered.by_id("first-bad").attrs["data-sha"] == COMMITS[9]
    assert rendered.by_id("evidence-plot").find("svg")

    pixels = image.imread(str(screenshot))
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    rgb = pixels[..., :3]
    assert float(rgb.std()) > 0.05  # not a blank page
    not_background = np.any(np.abs(rgb - rgb[5, 5]) > 0.1, axis=-1)
    assert not_background.mean() > 0.02  # text, tables and the plot cover a real part of it
    colorful = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.3
    assert colorful.mean() > 0.002  # verdict colours in the plot and the badges
