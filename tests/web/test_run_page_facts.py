"""The dashboard's run and compare pages show a run's context as readable facts: the run
context lines of ``kbench show``, the noise checklist, the request's options, parameters as
key=value, never raw JSON or a Python dict."""

from __future__ import annotations

import html
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbench.store.db import Store
from tests.e2e.stored_runs import SYSINFO, store_run
from tests.web.conftest import start_dashboard, stop

USAGE = {"wall_s": 1.000002, "thread_cpu_s": 0.493077, "thread_user_s": 0.125337, "thread_sys_s": 0.367742,
         "runqueue_wait_s": 0.511716, "voluntary_ctxsw": 0, "involuntary_ctxsw": 131, "minor_faults": 299,
         "major_faults": 0, "process_cpu_s": 0.49309, "children_cpu_s": 0.0,
         "machine": {"source": "/proc/stat", "user_hz": 100, "cpus": 2, "ticks": 202, "busy_fraction": 1.0,
                     "steal_fraction": 0.0, "per_cpu_busy": {"0": 1.0, "1": 1.0}}}
NOISE = {"governor": {"0": "powersave", "1": "powersave"}, "turbo": None, "smt": "notsupported", "aslr": "2",
         "isolcpus": None, "nohz_full": None, "loadavg_1m": 0.3, "irqbalance_running": False, "thermal": []}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("run-page")
    db = root / "k.db"
    store = Store.open(f"sqlite:///{db}")
    rng = np.random.default_rng(2)
    sysinfo = {**SYSINFO, "noise": NOISE}
    first = store_run(store, rng.integers(700, 760, 400), params={"spin": "100", "mode": "thread"},
                      header={"usage": USAGE}, sysinfo=sysinfo)
    second = store_run(store, rng.integers(720, 780, 400), params={"spin": "101", "mode": "thread"}, sysinfo=sysinfo)
    store.engine.dispose()
    server, url = start_dashboard(f"sqlite:///{db}", root / "serve.log")
    try:
        found = {}
        for name, path in (("run", f"/runs/{first}"), ("compare", f"/compare?a={first}&b={second}"),
                           ("plotly", "/vendor/plotly.min.js")):
            with urllib.request.urlopen(url + path, timeout=60) as response:
                found[name] = response.read().decode()
        yield found
    finally:
        stop(server)


def _cell(page: str, element_id: str, end: str = "</td></tr>") -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?){end}', page, re.S)
    assert found, element_id
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1)))


def test_usage_is_the_run_context_kbench_show_prints(pages: dict[str, str]) -> None:
    usage = _cell(pages["run"], "run-usage")
    assert "thread on CPU 49.3% of 1.000 s" in usage and "waited for a CPU 51.2%" in usage
    assert "131 involuntary (131/s)" in usage and "machine busy 100.0% of 2 CPUs" in usage
    assert "wall_s" not in usage and "{" not in usage


def test_noise_is_the_checklist_and_request_the_options_set(pages: dict[str, str]) -> None:
    noise = _cell(pages["run"], "run-noise", end="</table></td></tr>")
    assert "governor" in noise and "powersave" in noise and "aslr" in noise.lower()
    assert "{" not in noise and "loadavg_1m" not in noise
    request = " ".join(_cell(pages["run"], "run-request").split())
    assert "samples 400" in request and "None" not in request and "{" not in request


def test_parameters_are_key_value_on_both_pages(pages: dict[str, str]) -> None:
    assert "spin=100 mode=thread" in pages["run"]
    compare = pages["compare"]
    assert "spin=100 mode=thread" in compare and "spin=101 mode=thread" in compare
    assert "{'spin'" not in html.unescape(compare)


def test_the_dashboard_serves_its_vendored_plotly(pages: dict[str, str]) -> None:
    from kbench.web import app

    vendor = Path(app.__file__).parent / "static" / "vendor"
    assert pages["plotly"] == (vendor / "plotly.min.js").read_text()
    version = re.search(r"plotly\.js (v[\d.]+)", pages["plotly"][:200])
    assert version and f"plotly.js {version.group(1)}" in (vendor / "README.md").read_text()
    assert "MIT License" in (vendor / "plotly.LICENSE.txt").read_text()
