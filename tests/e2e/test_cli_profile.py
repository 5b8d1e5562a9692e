"""End to end: profiles of real programs with the real perf; flame graphs and profile deltas.

The program has two functions doing the same work; with argument 1 the second does 30%
more of it, so the whole program spends about 15% more time and ``mix_b``'s share of the
samples grows by about 6.5 percentage points (from 50% to 56.5%).
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.e2e.conftest import KbenchRunner, as_json

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
static unsigned long long state = 88172645463325252ull;
__attribute__((noinline)) unsigned long long mix_a(unsigned long long n)
{
    for (unsigned long long i = 0; i < n; i++) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; }
    return state;
}
__attribute__((noinline)) unsigned long long mix_b(unsigned long long n)
{
    for (unsigned long long i = 0; i < n; i++) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; }
    return state;
}
int main(int argc, char **argv)
{
    int mode = argc > 1 ? atoi(argv[1]) : 0;
    unsigned long long n = 10000000ull;
    printf("%llu\n", (mix_a(n) + mix_b(mode ? n * 13 / 10 : n)) & 1);
    return 0;
}
"""
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def prog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("perf") is None:
        pytest.skip("needs perf (Debian package linux-perf)")
    directory = tmp_path_factory.mktemp("prog")
    (directory / "prog.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O2", "-o", str(directory / "prog"), str(directory / "prog.c")], check=True)
    return directory / "prog"


def _frames(svg_text: str) -> dict[str, float]:
    root = ET.fromstring(svg_text)
    return {str(g.get("data-name")): float(g.get("data-w") or 0) for g in root.iter(f"{SVG}g")
            if g.get("class") == "fg-frame"}


def test_run_profile_show_and_flame_graph(kbench: KbenchRunner, prog: Path, tmp_path: Path) -> None:
    run = as_json(kbench("run", "command", "-p", f"cmd={prog} 1", "-p", "shell=0", "--samples", "3",
                         "--profile", "--json"))
    profile = run["profile"]
    assert profile["samples"] > 500 and profile["details"]["window"] == "measured region"
    top = {row["symbol"]: row for row in profile["top"]}
    # mix_b does 1.3x mix_a's work: the two leaves hold nearly all samples, about 56.5% and 43.5%
    assert top["mix_b"]["self_pct"] > top["mix_a"]["self_pct"] > 25
    assert top["mix_b"]["self_pct"] + top["mix_a"]["self_pct"] > 80
    flame = tmp_path / "run.svg"
    text = kbench("show", str(run["run_id"]), "--flame", str(flame), "--no-hist").stdout
    assert "profile (" in text and "mix_b" in text
    frames = _frames(flame.read_text())
    assert frames["mix_b"] > frames["mix_a"] > 0
    assert as_json(kbench("show", str(run["run_id"]), "--json"))["profile"]["samples"] == profile["samples"]


def test_flame_of_a_run_without_a_profile_is_refused(kbench: KbenchRunner, tmp_path: Path) -> None:
    run = as_json(kbench("run", "syscall.getppid", "--samples", "500", "--json"))
    refused = kbench("show", str(run["run_id"]), "--flame", str(tmp_path / "x.svg"), check=False)
    assert refused.returncode == 4 and "has no profile" in refused.stderr
    assert not (tmp_path / "x.svg").exists()


def test_compare_profile_names_the_function_that_grew(kbench: KbenchRunner, prog: Path, tmp_path: Path) -> None:
    # Each side is profiled for 2 s of measured region at 4999 Hz: about 2,500 cpu-clock samples of
    # each side here. mix_b's share grows by about 6.5 points; the binomial standard error of that
    # difference is about 1.4 points, so the chance that it shows under the 0.5 points of the next
    # symbol (those below 1% of the samples) is about 1e-5; every other symbol shrinks or moves by
    # well under a point. A 12 s budget: a slot of this 100 ms program can take 0.3 s on a loaded
    # machine, and compare refuses a budget that cannot fit the blocks a verdict needs.
    out = tmp_path / "out"
    report = as_json(kbench("compare", "--command", f"{prog} 0", "--command", f"{prog} 1", "-p", "shell=0",
                            "--profile", "--budget", "12s", "--report-dir", str(out), "--json"))
    rows = report["profile_delta"]
    assert rows[0]["symbol"] == "mix_b" and rows[0]["change_pct"] > 3 and not rows[0]["within_noise"]
    assert rows[0]["new_label"] == f"{prog} 1"
    mix_a_self = next(r for r in rows if r["symbol"] == "mix_a" and r["kind"] == "self")
    assert mix_a_self["change_pct"] < 0
    assert [r["change_pct"] for r in rows] == sorted((r["change_pct"] for r in rows), reverse=True)
    assert report["profile"]["sides"][0]["largest_growth"] == "mix_b"
    assert set(report["profile"]["runs"]) == {f"{prog} 0", f"{prog} 1"}

    diff = next(out.glob("flame-diff-*.svg"))
    assert "largest growth: mix_b" in diff.read_text()
    frames = _frames(diff.read_text())
    assert frames["mix_b"] > frames["mix_a"]
    assert len(list(out.glob("flame-*.svg"))) == 3
    html = (out / "report.html").read_text()
    assert 'id="profile"' in html and 'data-symbol="mix_b"' in html and "flame-diff" in html
    assert "Why: profile delta" in (out / "report.md").read_text()
    assert "perf-profile.self.mix_b" in (out / "report.txt").read_text()

    # the profiles are stored with the sides' runs: comparing those runs again shows the same delta
    runs = report["profile"]["runs"]
    again = as_json(kbench("compare", "--runs", str(runs[f"{prog} 0"]), "--runs", str(runs[f"{prog} 1"]), "--json"))
    assert again["profile_delta"][0]["symbol"] == "mix_b"
    assert again["profile_delta"][0]["change_pct"] == pytest.approx(rows[0]["change_pct"])
