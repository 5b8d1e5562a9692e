"""The plugin's records as the host reads them (kbench.targets.vm.plugin), written here with
``struct`` in the layout native/qemu-plugin/icount.c documents: u64 user, u64 kernel, u32 vcpu,
u32 type, u64 extra."""

from __future__ import annotations

import struct
from pathlib import Path

from kbench.targets.vm.plugin import InstructionLog, parse_records


def record(user: int, kernel: int, vcpu: int, kind: int, extra: int = 0) -> bytes:
    return struct.pack("<QQIIQ", user, kernel, vcpu, kind, extra)


def test_regions_and_loops_are_told_apart() -> None:
    data = record(0, 8497, 1, 1) + record(3, 8525, 0, 1) + record(2, 1, 1, 2, 7)
    found = parse_records(data)
    assert list(found.user) == [0, 3] and list(found.kernel) == [8497, 8525] and list(found.vcpu) == [1, 0]
    assert found.loops == ((2, 1),) and found.lost == 1 and found.n == 2


def test_the_log_hands_out_each_record_once_and_waits_for_a_partial_one(tmp_path: Path) -> None:
    log = InstructionLog(tmp_path / "regions.bin")
    with open(log.path, "ab") as f:
        f.write(record(1, 2, 0, 1))
    log.skip()  # what was there before a run is not its
    with open(log.path, "ab") as f:
        f.write(record(5, 6, 0, 1) + record(7, 8, 1, 1)[:20])  # the second one cut short
    first = log.take()
    assert list(first.user) == [5] and list(first.kernel) == [6]
    with open(log.path, "ab") as f:
        f.write(record(7, 8, 1, 1)[20:] + record(1, 0, 0, 2, 3))
    second = log.take()
    assert list(second.user) == [7] and second.loops == ((1, 0),)
    assert log.take().n == 0
