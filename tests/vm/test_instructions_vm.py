"""Instructions counted in a real Debian kernel under qemu TCG by kbench's plugin, between kbench.ko's
marks and kbench-probe's (docs/instructions.md).

One guest, booted with the plugin for these tests only (the shared guest runs without it, whose
cost would slow every other test: docs/PERFORMANCE.md). The counts are checked against
independent references: objdump's disassembly of rotmix.ko's loop, and valgrind counting the
same probe binary on the host. Counts are exact, so no check here depends on timing or load.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.compare.counts import REASON_EXACT
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.instructions import CountedComparison, counted_comparison
from kbench.kinds.kfunc.loaded import loaded_benchmark
from kbench.native import find_native
from kbench.store.db import Store
from kbench.targets.vm import build_user_module
from kbench.targets.vm_target import VmTarget
from tests.disassembly import loop_instructions
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm
ROTMIX = Path(__file__).resolve().parents[1] / "data" / "kmod" / "rotmix.c"


@pytest.fixture(scope="module")
def counting_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    """A guest booted with kbench's plugin, kbench.ko and rotmix.ko loaded; its kernel log checked at the end."""
    console = tmp_path_factory.mktemp("icount-vm") / "console.log"
    target = VmTarget(TEST_KERNEL, console_log=console, extra_modules=[ROTMIX], count_instructions=True)
    target.start()
    assert target.module is not None, target.module_error
    yield target
    session = target.session
    assert session is not None
    problems = kernel_log_problems(session.dmesg()) + kernel_log_problems(session.console_text())
    target.close()
    assert not problems, "guest kernel log has problems:\n" + "\n".join(problems)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'counts.db'}")


def _compared(target: VmTarget, store: Store, benchmark: str, values: list[dict[str, str]],
              samples: int = 200) -> CountedComparison:
    bench = loaded_benchmark(target, benchmark) if benchmark == "kfunc.rotmix" else lookup(benchmark)
    sides = [ComparisonSide(" ".join(f"{k}={v}" for k, v in params.items()), None, bench,
                            RunRequest(bench.name, params=params, samples=samples)) for params in values]
    return counted_comparison(store, sides, target=target)


def test_one_more_round_is_one_loop_body_more_per_call(counting_vm: VmTarget, store: Store) -> None:
    assert counting_vm.kernel is not None
    rotmix_ko = build_user_module(ROTMIX, counting_vm.kernel, counting_vm.cache_dir)
    per_round = loop_instructions(rotmix_ko, "rotmix_call")  # 7 for Debian 6.1's gcc-12 here
    outcome = _compared(counting_vm, store, "kfunc.rotmix", [{"work": "300"}, {"work": "301"}])
    base, new = (side.counts() for side in outcome.sides)
    assert base.samples_repeat and new.samples_repeat  # interrupts off: every sample the same
    assert new.count - base.count == per_round
    (verdict,) = outcome.verdicts
    assert verdict.verdict == "regression" and verdict.reason.startswith(REASON_EXACT)
    assert 0.25 < verdict.change_pct < 0.34  # one round of about 300, plus the call's own instructions
    assert outcome.sides[0].header["interrupts"].startswith("off")
    kernel, user = (outcome.sides[0].mode_counts(mode) for mode in ("kernel", "user"))
    assert kernel is not None and user is not None
    assert user.count == 0 and kernel.count == base.count  # kbench.ko's thread: kernel mode only


def test_a_parameter_that_changes_nothing_changes_no_count(counting_vm: VmTarget, store: Store) -> None:
    outcome = _compared(counting_vm, store, "kfunc.rotmix", [{"work": "300", "tag": "1"}, {"work": "300", "tag": "2"}])
    (verdict,) = outcome.verdicts
    assert (verdict.verdict, verdict.change_pct) == ("no change", 0.0)
    assert len(outcome.sides[0].runs) == 1  # one run: every sample already repeated


def _callgrind_per_op(spin: str, tmp: Path) -> float:
    """The probe's workload under valgrind on the host, counted as kbench counts it there."""
    out = tmp / f"callgrind.{spin}"
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
                    "--log-file=/dev/null", str(find_native("kbench-probe")), "run", "getppid", "--output",
                    str(tmp / "samples"), "--mark", "--param", f"spin={spin}", "--samples", "100", "--batch", "16",
                    "--overhead-pairs", "100", "--timer", "clock"], check=True)
    match = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
    assert match
    return int(match.group(1)) / (100 * 16)


def test_a_syscall_is_counted_kernel_and_user_apart(counting_vm: VmTarget, store: Store, tmp_path: Path) -> None:
    outcome = _compared(counting_vm, store, "syscall.getppid", [{"spin": "0"}, {"spin": "1"}])
    user = [side.mode_counts("user") for side in outcome.sides]
    kernel = [side.mode_counts("kernel") for side in outcome.sides]
    assert all(found is not None for found in (*user, *kernel))
    user_median = [float(np.median(found.values)) for found in user if found is not None]
    kernel_median = [float(np.median(found.values)) for found in kernel if found is not None]
    assert min(kernel_median) > 0 and min(user_median) > 0
    # the same system call on both sides: its kernel path counts the same in most samples
    assert kernel_median[0] == kernel_median[1]
    # spin=1's arithmetic is user code: the guest's plugin and valgrind on the host count it alike
    assert user_median[1] - user_median[0] == _callgrind_per_op("1", tmp_path) - _callgrind_per_op("0", tmp_path)


def test_the_issues_command_says_regression_in_one_run(tmp_path: Path) -> None:
    """The command of issue 37's "done means", as a user types it (its own guest, booted with the plugin)."""
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "cli.db"))
    proc = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "compare", "kfunc.rotmix", "--module", str(ROTMIX), "-p", "work=300|301",
         "--metric", "instructions", "--kernel", TEST_KERNEL, "--json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    total = report["metrics"][0]
    assert total["metric"] == "kfunc.rotmix.instructions" and total["verdict"] == "regression"
    assert 0.25 < total["change_pct"] < 0.34 and total["ci_pct"] == [total["change_pct"]] * 2
    assert report["parameters"]["counted by"].startswith("kbench-icount")
