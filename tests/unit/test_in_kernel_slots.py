"""The bookkeeping of comparisons inside kbench.ko: slot values from the module's records, judged and
dropped blocks, stored columns, module names, and the ns figures of the reports."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.compare.slot import interquartile_mean, interquartile_means
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.in_kernel import _Tally
from kbench.engine.interleaved import Slot, _Runner
from kbench.kinds.kfunc.ab import KernelSlots
from kbench.kinds.kfunc.loaded import module_suffixes
from kbench.report.comparison import render
from kbench.report.comparison.model import ComparisonReport, MetricComparison
from kbench.targets.base import TargetInfo
from kbench.targets.kmod_ab import AbRun, AbSettings, AbSide, record_dtype


def test_row_interquartile_means_agree_with_the_one_slot_definition() -> None:
    rng = np.random.default_rng(7)
    values = rng.lognormal(7.0, 0.3, size=(300, 13))
    valid = rng.random((300, 13)) > 0.2
    valid[5] = False  # a slot whose every sample was disturbed
    valid[6] = [True] + [False] * 12
    found = interquartile_means(values, valid)
    for row in range(values.shape[0]):
        kept = values[row][valid[row]]
        if kept.size == 0:
            assert math.isnan(found[row])
        else:
            assert found[row] == pytest.approx(interquartile_mean(kept), rel=1e-12)


class _FakeTarget:
    """Just enough of a Transport for KernelSlots' bookkeeping (nothing runs)."""

    in_guest = True

    def info(self) -> TargetInfo:
        return TargetInfo(kind="vm", kernel_release="test", kernel_version="test")

    def sysinfo(self) -> dict[str, Any]:
        return {}

    def run_probe(self, *args: object, **kwargs: object) -> Any:
        raise AssertionError("not used")

    def kbench_module(self, benchmark: str) -> Any:
        raise AssertionError("not used")

    def guest_shell(self, tools: object) -> None:
        return None


def _run(blocks: int, per_slot: int, batch: int, cut_slots: int = 0) -> tuple[AbRun, np.ndarray]:
    """Records of two sides in ABBA/BAAB order: side 0 costs 1000 cycles a call, side 1 1010,
    plus noise; some samples flagged. The last ``cut_slots`` slots of an extra block follow."""
    rng = np.random.default_rng(3)
    slots = blocks * 4 + cut_slots
    records = np.zeros(slots * per_slot, dtype=record_dtype())
    order = [[0, 1, 1, 0], [1, 0, 0, 1]]
    sides = np.array([order[b % 2][p] for b in range(blocks + 1) for p in range(4)][:slots])
    records["slot"] = np.repeat(np.arange(slots), per_slot)
    records["side"] = np.repeat(sides, per_slot)
    cost = np.where(records["side"] == 1, 1010.0, 1000.0) * batch
    records["cycles"] = (cost * rng.lognormal(0.0, 0.01, size=records.size)).astype(np.uint64)
    records["flags"][rng.random(records.size) < 0.05] = 1
    records["flags"][3 * per_slot:4 * per_slot] = 2  # slot 3 (block 0) wholly disturbed: block 0 dropped
    status = {"blocks": str(blocks), "count": str(records.size)}
    settings = AbSettings(blocks=blocks, slot_samples=per_slot, batch=batch)
    run = AbRun(records=records, settings=settings, sides=(AbSide("spin", {"loops": "400"}),
                                                           AbSide("spin", {"loops": "404"})),
                status=status, side_status=({"overhead_sample": "30"}, {"overhead_sample": "31"}),
                run_text="", tsc_khz=2_000_000, interrupted=cut_slots > 0)
    return run, sides


def test_a_run_of_the_module_becomes_judged_slots_and_stored_rows(tmp_path: Path) -> None:
    bench = lookup("kfunc.spin")
    sides = [ComparisonSide(f"loops={n}", None, bench, RunRequest(bench.name, {"loops": str(n)})) for n in (400, 404)]
    target = _FakeTarget()
    kernel = KernelSlots(target, [(s.benchmark, s.request) for s in sides])
    runner = _Runner(None, sides, target, None, ())  # type: ignore[arg-type]
    per_slot, batch, blocks = 6, 4, 5
    run, slot_sides = _run(blocks, per_slot, batch, cut_slots=2)
    slots: list[Slot] = []
    tally = _Tally()
    added = tally.keep(run, runner, kernel, slots, bench.metric, first_block=10)

    assert added == blocks - 1  # block 0 has a slot without a clean sample; the cut block is not complete
    assert tally.dropped_blocks == 2 and tally.measured_blocks == blocks
    assert [s.block for s in slots] == [b for b in range(10, 10 + blocks - 1) for _ in range(4)]
    records = run.records
    for slot in slots:
        rows = records[records["slot"] == slot.index]
        clean = rows["cycles"][rows["flags"] == 0] / batch
        assert slot.side == int(slot_sides[slot.index])
        assert slot.values[bench.metric] == pytest.approx(interquartile_mean(clean), rel=1e-12)
        assert slot.seconds == pytest.approx(rows["cycles"].sum() / 2e9)
    assert tally.disturbed_samples == int(np.count_nonzero(records["flags"]))

    for side in (0, 1):
        kept = runner.sides[side]
        columns = {name: np.concatenate(parts) for name, parts in kept.columns.items()}
        mine = records["side"] == side
        assert np.array_equal(columns["ticks"], records["cycles"][mine])
        assert np.array_equal(columns["disturbed"], records["flags"][mine])
        assert np.array_equal(columns["slot"], records["slot"][mine])
        judged_block = {s.index: s.block for s in slots}
        expected = [judged_block.get(int(i), -1) for i in records["slot"][mine]]
        assert columns["block"].tolist() == expected
        assert kept.header is not None and kept.header["batch"] == batch
        assert kept.header["overhead"]["median_ticks"] == 30 + side
        assert kept.header["timer"]["hz"] == 2_000_000_000


def test_two_versions_of_a_module_get_names_of_their_own() -> None:
    assert module_suffixes([Path("a/mybench.c")]) == [None]
    assert module_suffixes([Path("old.c"), Path("new.c")]) == ["_old", "_new"]
    assert module_suffixes([Path("a/mybench.c"), Path("b/mybench.c")]) == ["_1", "_2"]
    assert module_suffixes([Path("Old-Version.c"), Path("x.c")]) == ["_old_version", "_x"]


def _cycles_report(ns_per_unit: float | None) -> ComparisonReport:
    metric = MetricComparison(metric="kfunc.spin.cycles", unit="cycles", direction="lower", base=1000.0,
                              new=1010.0, change_pct=1.0, ci_pct=(0.9, 1.1), p_value=1e-9, verdict="regression",
                              trials=(800, 800), ns_per_unit=ns_per_unit)
    return ComparisonReport(title="t", base_label="loops=400", new_labels=("loops=404",), metrics=(metric,),
                            label_kind="configuration")


def test_cycles_read_in_ns_as_well_in_every_format() -> None:
    tsc_khz = 2_594_281
    per_cycle = 1e6 / tsc_khz  # ns per cycle
    report = _cycles_report(per_cycle)
    document = json.loads(render(report, "json"))["metrics"][0]
    assert document["base_ns"] == pytest.approx(1000 * 1e6 / tsc_khz)
    assert document["new_ns"] == pytest.approx(1010 * 1e6 / tsc_khz)
    text = render(report, "text")
    ns_line = next(line for line in text.splitlines() if line.endswith("MHz)"))
    assert "kfunc.spin.cycles (ns, TSC 2594.281 MHz)" in ns_line
    assert ns_line.split()[:3] == [f"{1000 * 1e6 / tsc_khz:.1f}ns", "+1.0%", f"{1010 * 1e6 / tsc_khz:.1f}ns"]
    assert "385.5ns" in render(report, "markdown") and "385.5ns" in render(report, "html")
    plain = _cycles_report(None)
    assert "MHz" not in render(plain, "text") and json.loads(render(plain, "json"))["metrics"][0]["base_ns"] is None


def test_a_stored_slot_is_judged_again_without_its_disturbed_samples() -> None:
    from kbench.contract.measurement import Measurement
    from kbench.engine.interleaved import slot_values

    bench = lookup("kfunc.spin")
    ticks = np.array([4000, 4004, 4008, 90000, 4012, 4016, 4020, 4024], dtype=np.uint64)
    disturbed = np.array([0, 0, 0, 1, 0, 2, 0, 0])
    header = {"batch": 4, "timer": {"hz": 2e9}}
    slot = Measurement(header, {"ticks": ticks, "disturbed": disturbed}, False, "")
    clean = ticks[disturbed == 0].astype(float) / 4
    assert slot_values(bench, slot)[bench.metric] == pytest.approx(interquartile_mean(clean))
    everything = Measurement(header, {"ticks": ticks}, False, "")
    assert slot_values(bench, everything)[bench.metric] == pytest.approx(interquartile_mean(ticks / 4))
