"""Comparisons of in-kernel code alternated inside one kbench.ko thread, in a real Debian kernel under qemu.

How sure these verdicts are (docs/PERFORMANCE.md, "In-kernel A/B inside one kthread": 20
comparisons of each pair and size, each its own boot, on this 2-vCPU host under TCG at load
10-18): the 1 % pairs of short calls (100 and 400 dependent steps) measured +0.78 … +2.14 %,
their 95 % intervals at most ±0.18 % wide, so every estimate sat at least 4 half-widths
(8 standard errors) clear of 0; identical work measured within ±0.04 %, every interval
inside [-0.10, +0.09] %, against the ±0.5 % margin. The tests run at alpha 0.001: for
identical sides the paired design's randomization bounds a false "regression" or
"improvement" by alpha (< 0.1 %) whatever the guest does, and "no change" then needs the
interval within ±0.5 %, which every measured one was by four half-widths or more. The 1 %
test uses 300 steps, between the sizes measured: 8 standard errors clear of 0 against a
critical value of about 3.7 at the first look, a miss needs a shortfall of 4 standard
errors, below 1e-4 under a normal approximation, and the later looks only add blocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.compare.sensitivity import paired_sensitivity_matrix
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.comparison_sides import module_sides
from kbench.engine.in_kernel import interleaved_comparison
from kbench.engine.interleaved import InterleavedOutcome
from kbench.engine.stored_comparison import stored_interleaved
from kbench.kinds.kfunc.loaded import module_copies
from kbench.report.comparison import ComparisonReport
from kbench.report.comparison.copies import build_copies_report
from kbench.store.db import Store
from kbench.targets.kmod_ab import AbSideError
from kbench.targets.vm import build_user_module
from kbench.targets.vm_target import VmTarget
from tests.vm.conftest import booted_kbench_vm
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

ROTMIX = Path(__file__).resolve().parents[1] / "data" / "kmod" / "rotmix.c"
ALPHA = 0.001


@pytest.fixture(scope="module")
def kbench_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    """A guest of this file's own: these tests check precision, and the shared guest has by then
    been through Ctrl-Cs, kills and CPU hogs of other files (about 5 s more to boot)."""
    with booted_kbench_vm(tmp_path_factory.mktemp("precise-vm")) as target:
        yield target


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'compare.db'}")


def _sides(bench: str, common: dict[str, str], key: str, values: list[str]) -> list[ComparisonSide]:
    benchmark = lookup(bench)
    return [ComparisonSide(f"{key}={value}", "deb:guest", benchmark,
                           RunRequest(benchmark.name, {**common, key: value})) for value in values]


def _verdict(outcome: InterleavedOutcome, label: str) -> tuple[str, float, tuple[float, float]]:
    step = outcome.sequential[label].last
    assert step is not None and step.verdict is not None
    return step.verdict.verdict, step.verdict.change_pct, step.verdict.ci_pct


def test_short_calls_one_percent_apart_are_a_regression(kbench_vm: VmTarget, store: Store) -> None:
    sides = _sides("kfunc.spin", {}, "loops", ["300", "303"])
    outcome = interleaved_comparison(store, sides, kbench_vm, alpha=ALPHA, margin_from_noise=True)
    verdict, change, ci = _verdict(outcome, "loops=303")
    assert verdict == "regression", (change, ci, outcome.design)
    assert 0.4 < change < 1.6 and ci[0] > 0, (change, ci)
    assert outcome.design.startswith("interleaved inside kbench.ko")
    assert kbench_vm.module is not None
    assert outcome.ns_per_unit == {"kfunc.spin.cycles": pytest.approx(1e6 / kbench_vm.module.tsc_khz())}
    run = store.get_run(outcome.sides[1].run_id)
    assert run.params == {"loops": "303"} and run.status == "complete"
    columns = store.load_samples(outcome.sides[1].run_id)
    assert {"ticks", "disturbed", "slot", "block"} <= set(columns)
    judged = columns["block"] >= 0
    assert np.unique(columns["block"][judged]).size == outcome.blocks
    assert set(np.unique(columns["disturbed"]).tolist()) <= {0, 1, 2, 3}
    # judged again from the stored samples (slot_values, computed one slot at a time: a second
    # computation of "the interquartile mean of the samples the module did not flag"), the same
    again = stored_interleaved(store, [[s.run_id] for s in outcome.sides], alpha=ALPHA, margin=0.005)
    assert again is not None and again.blocks == outcome.blocks
    assert again.side_values(1, "kfunc.spin.cycles") == pytest.approx(outcome.side_values(1, "kfunc.spin.cycles"))
    assert again.ns_per_unit == outcome.ns_per_unit


def test_a_parameter_that_changes_nothing_is_no_change(kbench_vm: VmTarget, store: Store) -> None:
    sides = _sides("kfunc.spin", {"loops": "300"}, "seed", ["1", "2"])
    outcome = interleaved_comparison(store, sides, kbench_vm, alpha=ALPHA, margin_from_noise=True)
    verdict, change, ci = _verdict(outcome, "seed=2")
    assert verdict == "no change", (change, ci, outcome.design)
    assert -0.5 <= ci[0] <= ci[1] <= 0.5


def test_a_side_whose_setup_fails_is_named_and_nothing_is_stored(kbench_vm: VmTarget, store: Store) -> None:
    session = kbench_vm.session
    assert session is not None
    before = session.dmesg()
    # trace_overhead refuses outer == inner in its setup (-EINVAL)
    sides = _sides("kfunc.trace_overhead", {"outer": "1"}, "inner", ["0", "1"])
    with pytest.raises(AbSideError, match=r"side 1 `trace_overhead outer=1 inner=1` failed its set-up: EINVAL"):
        interleaved_comparison(store, sides, kbench_vm, alpha=ALPHA)
    assert store.list_runs() == []
    assert kernel_log_problems(session.dmesg()[len(before):]) == []


def test_seed_004s_table_in_kernel(kbench_vm: VmTarget, store: Store) -> None:
    """98, 99 and 100 dependent steps, every pair told apart; the diagonal (even against odd
    blocks of one configuration) is an A/A test, which is only checked to exist here: its
    p-values are uniform under the null. 800 blocks in 40 runs of the module: here 400 blocks
    gave p < 1e-26 for every pair, and one run in 10-20 moved the pair by 1-3 % (RUN_BLOCKS);
    the CI run of stop 31 had 400 blocks in 5 runs on a shared guest and got p = 0.09-0.49."""
    sides = _sides("kfunc.spin", {}, "loops", ["98", "99", "100"])
    outcome = interleaved_comparison(store, sides, kbench_vm, adaptive=False, max_blocks=800)
    metric = outcome.metrics[0].name
    matrix = paired_sensitivity_matrix(
        [s.label for s in outcome.sides], [outcome.block_values(i, metric) for i in range(3)],
        [outcome.side_values(i, metric) for i in range(3)])
    off_diagonal = [matrix.paired_p[i, j] for i in range(3) for j in range(3) if i != j]
    assert max(off_diagonal) < 1e-6, (matrix.paired_p, _measured(outcome, metric))
    assert np.all(np.isfinite(np.diag(matrix.paired_p))) and np.all(np.isfinite(np.diag(matrix.ks_p)))


def _measured(outcome: InterleavedOutcome, metric: str) -> str:
    """What a failed precision check needs to be read: the design line (samples left out, runs of
    the module), each side's median slot, and each side's block log-ratios against side 0: median,
    spread and the median of each fifth of the blocks in order."""
    lines = [outcome.design]
    for side in range(len(outcome.sides)):
        line = f"{outcome.sides[side].label}: median slot {np.nanmedian(outcome.side_values(side, metric)):.1f}"
        if side:
            ratios = outcome.log_ratios(side, metric)
            fifths = " ".join(f"{100 * np.median(part):+.2f}%" for part in np.array_split(ratios, 5) if part.size)
            line += (f", log-ratio median {100 * np.median(ratios):+.2f}% sd {100 * np.std(ratios):.2f}%,"
                     f" by fifths {fifths}")
        lines.append(line)
    return "\n".join(lines)


SLOWER = ("st->work = rotmix_params[0].value.u64;", "st->work = rotmix_params[0].value.u64 * 11 / 10;")
"""rotmix's new version: 10 % more rounds per call (about +9.5 % measured: the call's fixed cost dilutes it)."""
COPIES = 3


@contextmanager
def _builds_loaded(kbench_vm: VmTarget, tmp_path: Path, new_source: str) -> Iterator[list[Path]]:
    """rotmix as old.c and new.c (``new_source``), COPIES copies of each loaded as the CLI loads
    them (``module_copies``: rotmix_old_1, rotmix_new_1, rotmix_old_2, ...)."""
    session = kbench_vm.session
    assert session is not None and kbench_vm.kernel is not None
    old, new = tmp_path / "old.c", tmp_path / "new.c"
    old.write_text(ROTMIX.read_text())
    new.write_text(new_source)
    paths, suffixes = module_copies([old, new], COPIES)
    loaded: list[str] = []
    try:
        for path, suffix in zip(paths, suffixes, strict=True):
            ko = build_user_module(path, kbench_vm.kernel, kbench_vm.cache_dir, suffix)
            session.write_file(f"/tmp/{ko.name}", ko.read_bytes())
            done = session.exec(["insmod", f"/tmp/{ko.name}"], timeout=60)
            assert done.rc == 0, done.stderr
            loaded.append(ko.stem)
        kbench_vm.module_benchmarks = [[f"rotmix{suffix}"] for suffix in suffixes]
        yield [old, new]
    finally:
        kbench_vm.module_benchmarks = []
        for name in reversed(loaded):
            session.exec(["rmmod", name], timeout=60)


def _builds_compared(kbench_vm: VmTarget, store: Store, modules: list[Path], alpha: float) -> ComparisonReport:
    found = module_sides(kbench_vm, modules, None, {"work": "500"}, None, COPIES)
    assert found.builds == ("old.c", "new.c") and found.build_of == (0, 1) * COPIES
    assert [s.label for s in found.sides][:2] == ["old.c#1", "new.c#1"] and found.title == "kfunc.rotmix"
    assert [s.benchmark.workload for s in found.sides][:2] == ["rotmix_old_1", "rotmix_new_1"]
    outcome = interleaved_comparison(store, found.sides, kbench_vm, alpha=alpha, margin=0.005)
    assert store.get_run(outcome.sides[1].run_id).benchmark == "kfunc.rotmix_new_1"
    return build_copies_report(outcome, found.builds, found.build_of, title=found.title, alpha=alpha,
                               margin=0.005, context={}, parameters={})


def test_two_builds_of_one_module_get_a_verdict_from_their_copies(
    kbench_vm: VmTarget, store: Store, tmp_path: Path,
) -> None:
    """Builds 10 % apart, 3 copies each, at alpha 0.01 (4 degrees of freedom, t = 4.60). Copies
    of one build were measured up to 2 % apart (docs/PERFORMANCE.md, "Placement"; 36 of 40
    copies within 0.5 %): with a spread of even 1 % between copies, the difference is 11
    standard errors clear of 0, and a miss needs the copies' sample spread to come out 2.4
    times the true one, P(chi2(4) > 23) < 2e-4; the measured spreads make it far smaller."""
    source = ROTMIX.read_text()
    assert SLOWER[0] in source
    with _builds_loaded(kbench_vm, tmp_path, source.replace(*SLOWER)) as modules:
        report = _builds_compared(kbench_vm, store, modules, alpha=0.01)
    metric = report.metrics[0]
    assert (report.base_label, report.new_labels) == ("old.c", ("new.c",))
    assert metric.verdict == "regression" and 4.0 < metric.change_pct < 16.0, (
        metric.change_pct, metric.ci_pct, report.parameters["copies"], report.parameters["design"])
    assert metric.trials == (COPIES, COPIES)
    assert report.parameters["copies"].startswith("kfunc.rotmix.cycles of each copy against old.c#1: old.c: +0.00%")
    # judged again from the stored runs (`compare --runs`, one per copy): regrouped into the builds
    runs = [a for side in report.parameters["runs"].split() for a in ("--runs", side.rsplit("=")[1])]
    again = _kbench_json(tmp_path / "compare.db", "compare", *runs, "--alpha", "0.01")
    judged = again["metrics"][0]
    assert (again["base_label"], again["new_labels"]) == ("old.c", ["new.c"])
    assert judged["verdict"] == metric.verdict and judged["change_pct"] == pytest.approx(metric.change_pct)
    assert again["parameters"]["copies"] == report.parameters["copies"]


def test_two_identical_builds_are_not_told_apart(kbench_vm: VmTarget, store: Store, tmp_path: Path) -> None:
    """One source built twice, 3 copies each, at alpha 0.001: one load per build gave a false
    "regression" (+0.8 to +2.1 %) or "improvement" in 4 of 8 boots; judged on copies, a false
    verdict has probability alpha (0.1 %) where the placements' spread is about normal, and
    their heavy tail (one copy in ten off by 0.6-1.2 %) widens the interval rather than narrowing
    it (8 of 8 boots at alpha 0.05: no verdict)."""
    with _builds_loaded(kbench_vm, tmp_path, ROTMIX.read_text()) as modules:
        report = _builds_compared(kbench_vm, store, modules, alpha=ALPHA)
    metric = report.metrics[0]
    assert metric.verdict in ("no change", "inconclusive"), (metric.change_pct, metric.ci_pct, metric.reason)


def _kbench_json(database: Path, command: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([str(Path(sys.executable).with_name("kbench")), command, *args, "--json"],
                          capture_output=True, text=True, env={**os.environ, "KBENCH_DB": str(database)}, timeout=600)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _kbench_on_two_module_files(tmp_path: Path, command: str, *args: str) -> dict[str, Any]:
    """`kbench COMMAND --module old.c --module new.c --kernel … -p work=500 ARGS --json`, new.c
    doing 10 % more work (SLOWER): its JSON document."""
    old, new = tmp_path / "old.c", tmp_path / "new.c"
    source = ROTMIX.read_text()
    old.write_text(source)
    new.write_text(source.replace(*SLOWER))
    return _kbench_json(tmp_path / "cli.db", command, "--module", str(old), "--module", str(new),
                        "--kernel", TEST_KERNEL, "-p", "work=500", *args)


def test_compare_two_module_files_on_the_command_line(tmp_path: Path) -> None:
    """The user's path end to end: one command builds 3 copies of both files under names of their
    own, boots the kernel, loads all six and compares the files on their copies (its own boot:
    the shared guest is not used), then profiles each file's first copy. Sized as
    test_two_builds_of_one_module_get_a_verdict_from_their_copies."""
    report = _kbench_on_two_module_files(tmp_path, "compare", "--alpha", "0.01", "--profile")
    metric = report["metrics"][0]
    assert report["base_label"] == "old.c" and report["new_labels"] == ["new.c"]
    assert metric["metric"] == "kfunc.rotmix.cycles", metric
    assert metric["verdict"] == "regression", (metric, report["parameters"])
    assert metric["trials"] == {"base": 3, "new": 3}, report["parameters"]
    assert metric["base_ns"] == pytest.approx(metric["base"] * metric["ns_per_unit"])
    assert report["parameters"]["design"].startswith("3 copies of each build")
    assert "inside kbench.ko" in report["parameters"]["design"]
    assert report["parameters"]["runs"].split()[:2] == ["old.c#1=1", "new.c#1=2"]
    # --profile: each build's first copy, profiled in a run of its own, under the build's label
    assert report["profile"]["runs"] == {"old.c": 1, "new.c": 2}, report["profile"]
    (delta,) = report["profile"]["sides"]
    assert (delta["base_label"], delta["new_label"]) == ("old.c", "new.c") and delta["new_samples"] > 0, delta


def test_sensitivity_of_two_module_files_on_the_command_line(tmp_path: Path) -> None:
    """`kbench sensitivity --module old.c --module new.c`: 3 copies of each loaded in one boot and
    measured inside kbench.ko, the modules' p from Student's t on their copies (4 degrees of
    freedom). new.c does 10 % more work (+9.4 % measured): p < 0.01 needs the copies of a build
    less than 2.5 % apart, where here they sit within 0.3 % (docs/PERFORMANCE.md, "Placement":
    36 of 40 within 0.5 %, the farthest 1.2 %)."""
    result = _kbench_on_two_module_files(tmp_path, "sensitivity", "--budget", "5s")
    assert result["names"] == ["old.c", "new.c"] and result["metric"] == "kfunc.rotmix.cycles"
    assert result["test"] == "student-t on copies" and result["copies"] == 3 and result["blocks"] >= 100
    assert result["copies_against"] == "old.c#1" and result["copy_change_pct"]["old.c"][0] == 0.0
    assert all(4.0 < change < 16.0 for change in result["copy_change_pct"]["new.c"]), result["copy_change_pct"]
    paired = np.array(result["paired_p"], dtype=float)
    assert paired[0, 1] == paired[1, 0] < 0.01, result
    assert all(0.0 <= paired[i, i] <= 1.0 for i in range(2))  # copies 1 and 3 against copy 2 of each module


def test_sensitivity_of_one_load_each_says_placement_is_not_in_it(tmp_path: Path) -> None:
    """`--copies 1`: one load of each module, the signed-rank matrix over blocks, and the note
    that placement is not in its p-values. 10 % apart: placement moves a build by up to 2 %
    (docs/PERFORMANCE.md, "Placement"), which leaves 7 %, where the 1 % pairs measured 8
    standard errors clear of 0 in their first 400 blocks (module docstring)."""
    result = _kbench_on_two_module_files(tmp_path, "sensitivity", "--budget", "5s", "--copies", "1")
    assert result["names"] == ["old.c", "new.c"] and result["test"] == "signed-rank" and result["blocks"] >= 100
    assert "docs/PERFORMANCE.md 'Placement'" in result["placement"] and "copies" not in result
    paired = np.array(result["paired_p"], dtype=float)
    assert paired[0, 1] == paired[1, 0] < 0.001, result
