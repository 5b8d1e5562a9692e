"""A job instance's LKP set-up (``JobInstance.guest_setup``) made on its target before it runs.

The guest makes it (``VmTarget.set_up_guest``: ``kbench.targets.vm.guest_setup``) and keeps what it
made in the target's details, which every run stores. The job runner asks for it per instance;
an instance that asks for the set-up the guest already has costs nothing. A ``test_size`` larger
than the file system the set-up made is capped at 80 % of its device (the cap is stated with the
run), as LKP caps fsmark's at the disk's size: a benchmark that fills its file system measures
the failure, not the file system.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kbench.contract.guest_setup import GuestSetup, size_of
from kbench.contract.request import RunRequest
from kbench.targets.base import Target, TargetError

TEST_SIZE_SHARE = 0.8
"""The share of the set-up's device a ``test_size`` may use."""


def has_guest_setup(target: Target) -> bool:
    """Whether ``target`` (a guest) was set up for an earlier instance: the next one, asking for none,
    gets a plain guest again."""
    return getattr(target, "guest_setup", None) is not None


def set_up_guest(target: Target, asked: dict[str, str]) -> dict[str, Any]:
    """Make ``asked`` on ``target`` unless it has it already (empty: undo an earlier set-up); what the
    target made (TargetError on a target that makes no set-up: this machine's kernel)."""
    make = getattr(target, "set_up_guest", None)
    if make is None:
        raise TargetError("LKP's set-up (disk:, fs:, md:, nr_pmem:, THP ...) is made in a guest kernel only")
    made: dict[str, Any] = make(GuestSetup.from_dict(asked))
    return made


def describe_setup(made: dict[str, Any]) -> list[str]:
    """Lines for the run's context: what was made, and every cap or absence it had to state."""
    lines = [f"LKP set-up: {made['made']}" + (f"; {made['md']}" if "md" in made else "")
             + (f"; {made['fs']} at {made['benchmark_dir']}" if "fs" in made else "")] if "made" in made else []
    for key in ("cap", "set_nic_irq_affinity"):
        if key in made:
            lines.append(f"LKP set-up: {key}: {made[key]}")
    if made.get("latency_stats") == "absent":
        lines.append("LKP set-up: disable_latency_stats: the guest kernel has no latency statistics "
                     "(CONFIG_LATENCYTOP is off): none are collected")
    return lines


def capped_test_size(request: RunRequest, made: dict[str, Any]) -> tuple[RunRequest, list[str]]:
    """``request`` with its ``test_size`` capped to the set-up's device, and the line that says so."""
    asked = request.params.get("test_size")
    devices = made.get("devices") or {}
    if not asked or not devices:
        return request, []
    device = min(int(size) for size in devices.values())
    cap = int(device * TEST_SIZE_SHARE) // (1 << 20) << 20
    if size_of(asked) <= cap:
        return request, []
    params = {**request.params, "test_size": f"{cap >> 20}M"}
    return replace(request, params=params), [
        f"test_size {asked} capped to {cap >> 20}M: {int(TEST_SIZE_SHARE * 100)} % of the set-up's "
        f"{device >> 20} MiB device"]
