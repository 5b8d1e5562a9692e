"""Counters inside the guest: the probe's perf_event_open runs in the guest kernel (the shared
guest of tests/vm/conftest.py), checked against the guest thread's own CPU clock."""

from __future__ import annotations

import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.kinds.registry import measure
from kbench.profile.counters import HARDWARE_EVENTS, parse_counters
from kbench.targets.vm_target import VmTarget


def test_getppid_counted_in_the_guest(kbench_vm: VmTarget) -> None:
    measurement = measure(kbench_vm, lookup("syscall.getppid"),
                          RunRequest("syscall.getppid", samples=3000, counters=True))
    counters = parse_counters(measurement.header)
    assert counters is not None and counters.source == "perf_event_open"
    assert counters.operations == measurement.header["n"] * measurement.header["batch"]
    task_clock = counters.value("task-clock")
    thread_cpu_s = measurement.header["usage"]["thread_cpu_s"]
    # the same thread's CPU clock in the guest kernel; TCG's guest clock is coarse and the run short,
    # hence 15% (a getppid under TCG costs about 2.5 µs: 3000 x batch ops take tens of ms)
    assert task_clock is not None and task_clock * 1e-9 == pytest.approx(thread_cpu_s, rel=0.15)
    # qemu's TCG guest has no virtual PMU: every hardware event says so
    for name in HARDWARE_EVENTS:
        event = counters.event(name)
        assert event is not None and not event.supported and event.reason
