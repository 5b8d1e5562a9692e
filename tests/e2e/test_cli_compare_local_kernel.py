"""`kbench compare` of in-kernel code on the running kernel (--local-kernel), where it can load modules.

This machine's kernel cannot (it was booted with `nomodule`): the comparisons skip, saying
why, and the error a user gets there is checked instead.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from kbench.targets.local_kmod import why_modules_cannot_load
from tests.e2e.conftest import KbenchRunner

ROTMIX = Path(__file__).resolve().parents[1] / "data" / "kmod" / "rotmix.c"
CANNOT_LOAD = why_modules_cannot_load(platform.release())
needs_module_loading = pytest.mark.skipif(
    CANNOT_LOAD is not None, reason=f"the running kernel cannot load modules here: {CANNOT_LOAD}")


@needs_module_loading
def test_one_percent_of_a_modules_work_is_a_regression_on_this_kernel(kbench: KbenchRunner) -> None:
    done = kbench("compare", "kfunc.rotmix", "--module", str(ROTMIX), "-p", "work=2000|2020", "--local-kernel",
                  "--alpha", "0.001", "--json", timeout=900)
    metric = json.loads(done.stdout)["metrics"][0]
    assert metric["verdict"] == "regression" and 0.5 < metric["change_pct"] < 1.5, metric
    assert metric["ns_per_unit"] is not None


@needs_module_loading
def test_a_builtin_benchmark_alternates_inside_the_local_kbench_ko(kbench: KbenchRunner) -> None:
    done = kbench("compare", "kfunc.spin", "-p", "seed=1|2", "-p", "loops=2000", "--local-kernel",
                  "--alpha", "0.001", "--json", timeout=900)
    report = json.loads(done.stdout)
    assert report["metrics"][0]["verdict"] == "no change", report["metrics"][0]
    assert "inside kbench.ko" in report["parameters"]["design"]


@pytest.mark.skipif(CANNOT_LOAD is None, reason="this kernel loads modules: the comparisons above run instead")
def test_where_modules_cannot_load_the_user_is_told_why(kbench: KbenchRunner) -> None:
    done = kbench("compare", "kfunc.rotmix", "--module", str(ROTMIX), "-p", "work=2000|2020", "--local-kernel",
                  check=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert CANNOT_LOAD is not None and CANNOT_LOAD in " ".join(done.stderr.split())
    assert "--kernel deb:" in done.stderr  # and how to run it in a VM instead


def test_module_without_a_kernel_says_where_it_could_run(kbench: KbenchRunner) -> None:
    done = kbench("compare", "kfunc.rotmix", "--module", str(ROTMIX), "-p", "work=2000|2020", check=False)
    assert done.returncode == 2 and "--kernel SPEC" in done.stderr and "--local-kernel" in done.stderr
