"""The noise checklist: each item decided from captured sysinfo dicts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kbench.sysinfo.checklist import NOISY, NOT_AVAILABLE, OK, CheckItem, noise_checklist
from kbench.sysinfo.collect import collect_sysinfo
from tests.unit.test_sysinfo import GUEST_FILES

# Captured from the development VM (kvm, no cpufreq, no thermal zones, SMT notsupported).
DEV_VM: dict[str, Any] = {
    "cpu": {"count": 2},
    "virtualization": {"vm": "kvm", "virtualized": True},
    "noise": {
        "governor": None, "turbo": None, "smt": "notsupported", "aslr": "2", "isolcpus": None,
        "nohz_full": None, "loadavg_1m": 0.1, "scaling": None, "smt_active": "0", "isolated": "",
        "nohz_full_cpus": None, "thermal": [], "irqbalance_running": False,
    },
}

# A laptop as it comes: powersave, turbo on, SMT on, ASLR on, irqbalance, warm.
LAPTOP: dict[str, Any] = {
    "cpu": {"count": 8},
    "virtualization": {"vm": "none", "virtualized": False},
    "noise": {
        "governor": {f"cpu{i}": "powersave" for i in range(8)},
        "turbo": {"driver": "intel_pstate", "enabled": True},
        "smt": "on", "smt_active": "1", "aslr": "2", "isolcpus": None, "nohz_full": None,
        "isolated": "", "nohz_full_cpus": None, "loadavg_1m": 6.5,
        "scaling": {"driver": "intel_pstate", "available_governors": ["performance", "powersave"],
                    "intel_pstate_status": "active"},
        "thermal": [{"zone": 0, "type": "acpitz", "temp_c": 45.0},
                    {"zone": 1, "type": "x86_pkg_temp", "temp_c": 88.0}],
        "irqbalance_running": True,
    },
}


def _tuned(laptop: dict[str, Any]) -> dict[str, Any]:
    tuned = copy.deepcopy(laptop)
    noise = tuned["noise"]
    noise.update(
        governor={f"cpu{i}": "performance" for i in range(8)},
        turbo={"driver": "intel_pstate", "enabled": False},
        smt="off", smt_active="0", aslr="0", isolcpus="2-3", nohz_full="2-3", loadavg_1m=0.2,
        irqbalance_running=False,
        thermal=[{"zone": 0, "type": "acpitz", "temp_c": 41.0}],
    )
    return tuned


def states(info: dict[str, Any]) -> dict[str, str]:
    return {item.name: item.state for item in noise_checklist(info)}


def by_name(info: dict[str, Any]) -> dict[str, CheckItem]:
    return {item.name: item for item in noise_checklist(info)}


def test_dev_vm_says_what_is_not_available_and_why() -> None:
    assert states(DEV_VM) == {
        "governor": NOT_AVAILABLE, "scaling driver": NOT_AVAILABLE, "turbo": NOT_AVAILABLE,
        "SMT": NOT_AVAILABLE, "ASLR": NOISY, "isolation": NOISY, "irqbalance": OK, "load": OK,
        "thermal": NOT_AVAILABLE,
    }
    items = by_name(DEV_VM)
    assert items["governor"].value == "no cpufreq in this VM"
    assert items["thermal"].value == "no /sys/class/thermal zones in this VM"
    assert "SMT notsupported" in items["SMT"].value
    assert "kbench tune" in items["ASLR"].advice


def test_untuned_laptop_is_noisy_everywhere_it_can_be() -> None:
    got = states(LAPTOP)
    for name in ("governor", "turbo", "SMT", "ASLR", "isolation", "irqbalance", "load", "thermal"):
        assert got[name] == NOISY, name
    assert got["scaling driver"] == OK
    items = by_name(LAPTOP)
    assert items["scaling driver"].value == "intel_pstate (active)"
    assert "88" in items["thermal"].value and "x86_pkg_temp" in items["thermal"].value
    assert items["load"].value == "6.50 on 8 CPUs"


def test_tuned_laptop_is_ok() -> None:
    got = states(_tuned(LAPTOP))
    assert set(got.values()) == {OK}, got
    assert by_name(_tuned(LAPTOP))["isolation"].advice.endswith("--cpu 2")


def test_isolcpus_flags_are_skipped_in_the_advice() -> None:
    info = copy.deepcopy(LAPTOP)
    info["noise"]["isolcpus"] = "domain,managed_irq,5-7"
    item = by_name(info)["isolation"]
    assert item.state == OK and item.advice.endswith("--cpu 5")


def test_mixed_governors_are_noisy() -> None:
    info = copy.deepcopy(_tuned(LAPTOP))
    info["noise"]["governor"]["cpu5"] = "schedutil"
    item = by_name(info)["governor"]
    assert item.state == NOISY and item.value == "performance, schedutil"


def test_cpufreq_boost_and_smt_forceoff() -> None:
    info = copy.deepcopy(LAPTOP)
    info["noise"].update(turbo={"driver": "cpufreq", "enabled": False}, smt="forceoff", smt_active="0")
    items = by_name(info)
    assert items["turbo"].state == OK and items["turbo"].value == "off (cpufreq)"
    assert items["SMT"].state == OK


@pytest.mark.parametrize(("load", "state"), [(3.9, OK), (4.1, NOISY)])
def test_load_threshold_is_half_a_task_per_cpu(load: float, state: str) -> None:
    info = copy.deepcopy(LAPTOP)
    info["noise"]["loadavg_1m"] = load
    assert by_name(info)["load"].state == state


def test_guest_files_through_the_reader() -> None:
    info = collect_sysinfo(GUEST_FILES.get, local=False)
    items = by_name(info)
    assert items["governor"].state == OK  # performance on the one CPU that has cpufreq
    assert items["ASLR"].state == OK and items["isolation"].state == OK
    assert items["irqbalance"].state == NOT_AVAILABLE  # processes of a guest are not listed
    assert items["SMT"].value == "no SMT control in this VM"


def test_every_item_has_a_known_state_and_advice_on_this_machine() -> None:
    for item in noise_checklist(collect_sysinfo()):
        assert item.state in (OK, NOISY, NOT_AVAILABLE)
        assert item.value and item.advice
