"""A comparison of kernels whose configs differ prints the difference as the kernel's
scripts/diffconfig does (the script itself is the reference), from the configs the store
keeps once per digest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kbench.report.comparison import render
from kbench.report.comparison.kernel_configs import with_kernel_configs
from kbench.report.comparison.model import ComparisonReport
from kbench.store.db import Store
from tests.kernel_source import kernel_source_files

OLD = "CONFIG_64BIT=y\n# CONFIG_SMP is not set\nCONFIG_LOG_BUF_SHIFT=14\nCONFIG_SLOB=y\nCONFIG_OLD=m\n"
NEW = "CONFIG_64BIT=y\nCONFIG_SMP=y\nCONFIG_LOG_BUF_SHIFT=17\n# CONFIG_SLOB is not set\nCONFIG_SLUB=y\n"


def _run(store: Store, config: str | None, build_id: str) -> int:
    target = {"kind": "vm", "kernel_release": "6.1.192+", "kernel_version": "#1", "accel": "tcg",
              "build_id": build_id, "details": {}, "kernel_config": config}
    return store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                           direction="lower", params={}, request={}, sysinfo=None, target=target, tags=[])


def _report() -> ComparisonReport:
    return ComparisonReport(title="syscall.getppid: A vs B", base_label="A", new_labels=("B",), metrics=())


def test_the_difference_is_what_scripts_diffconfig_prints(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    sides = {"A": [_run(store, OLD, "a"), _run(store, OLD, "a")], "B": [_run(store, NEW, "b")]}
    report = with_kernel_configs(_report(), store, sides)
    (tmp_path / "old").write_text(OLD)
    (tmp_path / "new").write_text(NEW)
    script = kernel_source_files("scripts/diffconfig") / "scripts" / "diffconfig"
    expected = subprocess.run(["python3", str(script), "old", "new"], cwd=tmp_path, capture_output=True, text=True,
                              check=True).stdout.splitlines()
    (difference,) = report.kernel_configs
    assert list(difference.lines) == expected and len(expected) == 5
    text = render(report, "text")
    assert f"kernel config: B ({difference.new_digest[:12]}) against A ({difference.base_digest[:12]}): " \
           f"5 options differ" in text  # type: ignore[index]
    assert "\n".join(f"  {line}" for line in expected) in text
    data = json.loads(render(report, "json"))
    assert data["kernel_configs"][0]["diffconfig"] == expected and data["kernel_configs"][0]["differ"] == 5


def test_one_config_on_both_sides_prints_nothing_and_an_unknown_one_says_so(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    same = with_kernel_configs(_report(), store, {"A": [_run(store, OLD, "a")], "B": [_run(store, OLD, "b")]})
    assert same.kernel_configs == () and "kernel config" not in render(same, "text")
    unknown = with_kernel_configs(_report(), store, {"A": [_run(store, OLD, "a")], "B": [_run(store, None, "c")]})
    assert "kernel config: B against A: B's is unknown" in render(unknown, "text")
