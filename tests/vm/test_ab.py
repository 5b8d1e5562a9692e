"""A/B runs inside kbench.ko (/sys/kernel/kbench/ab/) in a real Debian kernel under qemu.

The records are checked against what docs/sysfs-ABI.md promises, recomputed here
independently: the order of the sides in every block (the LCG and shuffle the ABI
writes down), the per-side statistics of ``run`` (numpy's nearest rank), the cost per
side (10x the work is far more than TCG's speed modes can hide). Then the failures:
a side the module refuses, a side whose set-up fails, a signal, and unloading a
module (a side's, and kbench.ko itself) during a run, with the guest's kernel log
checked each time.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbench.resources import find_resource
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_ab import (
    AB_DIR,
    AbSettings,
    AbSide,
    AbSideError,
    record_dtype,
    run_ab,
)
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
from kbench.targets.vm import build_user_module
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import kernel_log_problems
from tests.vm.unload import assert_unloaded_under_the_reader, load_kbench_again, rmmod_while_reading

pytestmark = pytest.mark.vm

LCG_A, LCG_C, MASK = 6364136223846793005, 1442695040888963407, (1 << 64) - 1


def _module(target: VmTarget) -> KbenchModule:
    assert target.module is not None
    return target.module


def block_orders(seed: int, sides: int) -> Iterator[list[int]]:
    """docs/sysfs-ABI.md: per block, Fisher-Yates from the identity with j = next() % (i + 1)
    for i = k-1 .. 1 (next() = top 32 bits of the LCG step), then the order reversed."""
    state = seed
    while True:
        order = list(range(sides))
        for i in range(sides - 1, 0, -1):
            state = (state * LCG_A + LCG_C) & MASK
            j = (state >> 32) % (i + 1)
            order[i], order[j] = order[j], order[i]
        yield order + order[::-1]


def _nearest_rank(values: np.ndarray, percent: int) -> int:
    ordered = np.sort(values)
    return int(ordered[max(math.ceil(ordered.size * percent / 100) - 1, 0)])


def test_sides_alternate_in_the_documented_mirrored_blocks(kbench_vm: VmTarget) -> None:
    module = _module(kbench_vm)
    module.io.write_values(f"{SYSFS_ROOT}/spin", {"loops": "123"})
    sides = [AbSide("spin", {"loops": "400"}), AbSide("spin", {"loops": "4000"}),
             AbSide("spin", {"loops": "1500", "seed": "7"})]
    settings = AbSettings(blocks=40, slot_samples=8, batch=2, warmup=3, order_seed=12345)
    run = run_ab(module, sides, settings, bound_s=120)

    k, per_slot = len(sides), settings.slot_samples
    records = run.records
    assert records.size == settings.blocks * 2 * k * per_slot and not run.interrupted
    slots = records["slot"].reshape(-1, per_slot)
    assert np.array_equal(slots[:, 0], np.arange(slots.shape[0])) and np.all(slots == slots[:, :1])
    side_of_slot = records["side"].reshape(-1, per_slot)
    assert np.all(side_of_slot == side_of_slot[:, :1])
    orders = block_orders(settings.order_seed, k)
    for _ in range(settings.warmup):  # warm-up blocks draw their orders first
        next(orders)
    expected = [side for _, order in zip(range(settings.blocks), orders, strict=False) for side in order]
    assert side_of_slot[:, 0].tolist() == expected
    assert set(np.unique(records["flags"]).tolist()) <= {0, 1, 2, 3}

    per_call = {side: records["cycles"][records["side"] == side] / settings.batch for side in range(k)}
    medians = {side: float(np.median(values)) for side, values in per_call.items()}
    assert medians[1] > 4 * medians[0] and medians[0] < medians[2] < medians[1], medians

    lines = run.run_text.splitlines()
    assert [line.split()[0] for line in lines[:k]] == [f"side{i}" for i in range(k)]
    for side in range(k):
        fields = parse_key_values(lines[side])
        raw = records["cycles"][records["side"] == side]
        assert fields["bench"] == "spin" and int(fields["count"]) == raw.size
        assert int(fields["50th"]) == _nearest_rank(raw, 50) // settings.batch
        assert int(fields["min"]) == int(raw.min()) // settings.batch
        assert int(fields["disturbed"]) == int(np.count_nonzero(records["flags"][records["side"] == side]))
    summary = parse_key_values(lines[k])
    assert int(summary["blocks"]) == settings.blocks and int(summary["slots"]) == settings.blocks * 2 * k
    disturbed_slots = np.count_nonzero(records["flags"].reshape(-1, per_slot).any(axis=1))
    assert int(summary["disturbed_slots"]) == disturbed_slots
    # each side's set-up saw its own loops; the attribute kept its value
    assert module.io.read_text(f"{SYSFS_ROOT}/spin/loops").strip() == "123"
    assert module.io.read_text(f"{AB_DIR}/sides").splitlines() == [s.line() for s in sides]


def test_a_side_the_module_refuses_is_named(kbench_vm: VmTarget) -> None:
    module = _module(kbench_vm)
    settings = AbSettings(blocks=2, slot_samples=2)
    for bad, code in ((AbSide("spin", {"loops": "0"}), "ERANGE"), (AbSide("nosuch", {}), "ENOENT"),
                      (AbSide("spin", {"colour": "1"}), "EINVAL"),
                      (AbSide("fib6_lookup", {"irqs_off": "1"}), "EOPNOTSUPP")):
        with pytest.raises(AbSideError, match=code) as raised:
            run_ab(module, [AbSide("spin", {}), bad], settings, bound_s=60)
        assert raised.value.side == 1


def test_a_side_whose_setup_fails_is_a_clear_error_and_nothing_breaks(kbench_vm: VmTarget) -> None:
    session = kbench_vm.session
    assert session is not None
    module = _module(kbench_vm)
    before = session.dmesg()
    # trace_overhead refuses equal keys in its setup (docs/sysfs-ABI.md): -EINVAL
    sides = [AbSide("spin", {"loops": "100"}), AbSide("trace_overhead", {"outer": "1", "inner": "1"})]
    with pytest.raises(AbSideError, match=r"side 1 `trace_overhead outer=1 inner=1` failed its set-up: EINVAL"):
        run_ab(module, sides, AbSettings(blocks=5, slot_samples=4), bound_s=60)
    status = parse_key_values(module.io.read_text(f"{AB_DIR}/status").splitlines()[0])
    assert status["result"] == "error" and status["failed_side"] == "1" and status["count"] == "0"
    assert status["error"] == str(-errno.EINVAL) and status["state"] == "idle"
    assert module.io.read_bytes(f"{AB_DIR}/samples") == b""
    again = run_ab(module, [AbSide("spin", {}), AbSide("empty", {})], AbSettings(blocks=5, slot_samples=4),
                   bound_s=60)
    assert again.records.size == 5 * 4 * 4
    assert kernel_log_problems(session.dmesg()[len(before):]) == []


LONG_BLOCKS, LONG_SLOT = 20000, 4


def _long_run(module: KbenchModule, sides: list[AbSide]) -> None:
    """Sides and knobs of an A/B run of several seconds: slots of ~80 us under TCG (20000 steps a
    call), far below the 10 ms kbench.ko allows a slot even when a loaded host slows the guest."""
    module.io.write_values(AB_DIR, {"sides": "".join(f"{s.line()}\n" for s in sides)})
    module.io.write_values(AB_DIR, AbSettings(blocks=LONG_BLOCKS, slot_samples=LONG_SLOT, batch=1).values())


def test_a_signal_stops_the_run_and_keeps_its_records(kbench_vm: VmTarget, guest_helper: str) -> None:
    session = kbench_vm.session
    assert session is not None
    module = _module(kbench_vm)
    _long_run(module, [AbSide("spin", {"loops": "20000"}), AbSide("spin", {"loops": "19800"})])
    aborted = session.exec([guest_helper, "alarm-read", f"{AB_DIR}/run", "1500"], timeout=120)
    assert aborted.text.split()[0] == f"errno={errno.EINTR}", aborted.text
    status = parse_key_values(module.io.read_text(f"{AB_DIR}/status").splitlines()[0])
    assert status["result"] == "interrupted" and status["state"] == "idle"
    records = np.frombuffer(session.read_file(f"{AB_DIR}/samples"), dtype=record_dtype())
    assert 0 < records.size == int(status["count"]) < LONG_BLOCKS * 4 * LONG_SLOT
    # a slot is never cut: the run stops between slots
    assert records.size % LONG_SLOT == 0 and int(status["slots"]) == records.size // LONG_SLOT
    assert int(status["blocks"]) == records.size // (4 * LONG_SLOT)


def test_unloading_a_sides_module_during_a_run_is_refused(kbench_vm: VmTarget, tmp_path: Path) -> None:
    session = kbench_vm.session
    assert session is not None and kbench_vm.kernel is not None
    module = _module(kbench_vm)
    ko = build_user_module(find_resource("kmod") / "example" / "kbench_example.c", kbench_vm.kernel,
                           kbench_vm.cache_dir)
    session.write_file("/tmp/kbench_example.ko", ko.read_bytes())
    assert session.exec(["insmod", "/tmp/kbench_example.ko"], timeout=60).rc == 0
    before = session.dmesg()
    _long_run(module, [AbSide("spin", {"loops": "20000"}), AbSide("example_div", {"divisor": "3"})])
    script = (f"cat {AB_DIR}/run > /tmp/ab.out 2>&1 & pid=$!; sleep 1; "
              "rmmod kbench_example; echo rmmod=$?; "
              f"echo 5 > {SYSFS_ROOT}/spin/loops; echo store=$?; "
              f"cat {SYSFS_ROOT}/spin/run > /dev/null; echo single=$?; "
              "kill -INT $pid; wait $pid; rmmod kbench_example; echo after=$?")
    done = session.exec(["sh", "-c", script], timeout=180)
    words = dict(line.split("=", 1) for line in done.text.split() if "=" in line)
    assert words["rmmod"] != "0", done.text + done.stderr.decode()  # in use: refused
    assert words["store"] != "0" and words["single"] != "0", done.text  # EBUSY while the A/B run holds spin
    assert words["after"] == "0", done.text
    assert "example_div" not in module.benchmarks()
    assert kernel_log_problems(session.dmesg()[len(before):]) == []


def test_unloading_kbench_during_a_run_is_clean(kbench_vm: VmTarget) -> None:
    session = kbench_vm.session
    assert session is not None
    module = _module(kbench_vm)
    before = session.dmesg()
    _long_run(module, [AbSide("spin", {"loops": "20000"}), AbSide("spin", {"loops": "19800"})])
    done = rmmod_while_reading(session, f"{AB_DIR}/run", "/tmp/ab.out")
    try:
        assert_unloaded_under_the_reader(done)
        assert not session.exec(["test", "-d", SYSFS_ROOT], timeout=30).ok
        assert kernel_log_problems(session.dmesg()[len(before):]) == []
    finally:
        load_kbench_again(session)
    assert "spin" in module.benchmarks()
