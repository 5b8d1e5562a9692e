"""Counters and profiles of in-kernel benchmarks, in the shared guest (tests/vm/conftest.py).

kbench.ko counts with the kernel's perf_event API on its measuring kthread around the
recorded loop (kmod/core/counters.c); a profile pass samples the guest kernel with the
guest's own perf while the kthread runs. The guest is qemu's TCG: software events only.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.kinds.registry import measure, profile
from kbench.profile.counters import HARDWARE_EVENTS, SOFTWARE_EVENTS, parse_counters
from kbench.targets.kmod_sysfs import SYSFS_ROOT
from kbench.targets.vm_target import VmTarget

pytestmark = pytest.mark.vm

FIB4 = "kfunc.fib4_lookup"


def test_fib4_lookup_counters_cover_its_recorded_loop(kbench_vm: VmTarget) -> None:
    bench = lookup(FIB4)
    started = time.monotonic()
    measurement = measure(kbench_vm, bench, RunRequest(FIB4, samples=2000, warmup_samples=50, batch=64,
                                                       counters=True))
    wall_s = time.monotonic() - started
    counters = parse_counters(measurement.header)
    assert counters is not None and counters.source == "perf_event_create_kernel_counter"
    assert counters.operations == 2000 * 64
    assert [e.name for e in counters.events] == [*SOFTWARE_EVENTS, *HARDWARE_EVENTS]
    task_clock_s = (counters.value("task-clock") or 0) * 1e-9
    timed_s = float(np.sum(measurement.columns["ticks"])) / measurement.header["timer"]["hz"]
    # A second clock: every timed region (TSC, read by the loop) lies inside the counted window, on
    # the counted thread, so task-clock (the scheduler's clock of that thread) holds them all; and
    # a sample of 64 lookups (~15 us under TCG) dwarfs the loop's own instructions around it.
    assert timed_s <= task_clock_s * 1.02
    assert task_clock_s <= timed_s * 1.3
    assert task_clock_s < wall_s  # the thread ran within the host's wall time of the run
    for name in HARDWARE_EVENTS:  # qemu's TCG has no virtual PMU
        event = counters.event(name)
        assert event is not None and not event.supported and event.reason and "ENOENT" in event.reason


def test_a_parallel_run_counts_every_cpu_and_an_uncounted_run_counts_nothing(kbench_vm: VmTarget) -> None:
    bench = lookup(FIB4)
    parallel = measure(kbench_vm, bench, RunRequest(FIB4, params={"parallel": "1"}, samples=500, batch=16,
                                                    counters=True))
    counters = parse_counters(parallel.header)
    assert counters is not None and parallel.header["counters"]["threads"] == kbench_vm.cpus
    assert counters.operations == parallel.header["n"] * 16 == kbench_vm.cpus * 500 * 16
    assert (counters.value("task-clock") or 0) > 0
    plain = measure(kbench_vm, bench, RunRequest(FIB4, samples=200, batch=16))
    assert "counters" not in plain.header
    assert kbench_vm.module is not None
    counted = kbench_vm.module.io.read_text(f"{SYSFS_ROOT}/fib4_lookup/counter_values")
    assert counted.split()[1] == "counted=0"


def test_a_profile_of_fib4_lookup_names_fib_table_lookup(kbench_vm: VmTarget) -> None:
    found = profile(kbench_vm, lookup(FIB4), RunRequest(FIB4, batch=16), seconds=1.0)
    assert found.details["where"] == "guest" and found.event == "cpu-clock"
    assert all(stack.startswith("kbench/") for stack in found.stacks)  # the measuring thread only
    top_frame, top_self, _ = found.top(1)[0]
    assert top_self > 0.3
    assert top_frame == "fib_table_lookup_[k]"  # the kernel's, resolved from the guest's kallsyms
    # the benchmark's call (a module symbol) under the timing loop, fib_table_lookup under it
    assert any("kbench_timed_loop_[k];" in stack and stack.endswith(";fib_table_lookup_[k]")
               for stack in found.stacks)
    assert found.children_shares()["kbench_timed_loop_[k]"] > 0.8
    assert found.samples > 500  # about 1 s at 4999 Hz, fewer under TCG
