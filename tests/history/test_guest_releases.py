"""The release table across kernels booted in one VM: a guest run's machine is the host and
the VM's configuration, not the memory each guest kernel reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from kbench.store.db import Store
from kbench.sysinfo.collect import machine_fingerprint
from tests.history.planting import plant_series
from tests.history.test_reports import kbench

HOST = {"hostname": "vm", "cpu": {"model": "AMD EPYC", "count": 2}, "memory_bytes": 25276502016}


def guest_sysinfo(reported_memory: int, memory_mb: int | None = 1024) -> dict[str, Any]:
    """What a getppid run in qemu stores (as captured from a real run here): the guest's own
    facts, the VM's configuration and the host's inventory."""
    info: dict[str, Any] = {
        "hostname": "kbench-vm", "cpu": {"model": "QEMU TCG CPU version 2.5+", "count": 2},
        "memory_bytes": reported_memory, "virtualization": {"vm": "qemu-tcg", "virtualized": True},
        "noise": {}, "host": HOST,
    }
    if memory_mb is not None:
        info["vm_config"] = {"cpus": 2, "memory_mb": memory_mb}
    return info


# The same VM (2 CPUs, 1024 MiB) as two Debian kernels report it.
OLD, NEW = "6.1.0-56-amd64", "6.12.111+deb12-amd64"
REPORTED = {OLD: 1007099904, NEW: 1014280192}


def test_two_kernels_in_one_vm_are_one_machine() -> None:
    old, new = (machine_fingerprint(guest_sysinfo(REPORTED[k])) for k in (OLD, NEW))
    assert old == new
    assert machine_fingerprint(guest_sysinfo(REPORTED[OLD], memory_mb=2048)) != old  # another VM
    other_host = {**guest_sysinfo(REPORTED[OLD]), "host": {**HOST, "hostname": "other"}}
    assert machine_fingerprint(other_host) != old
    assert machine_fingerprint(HOST) != old  # the host's own runs are another series


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    path = tmp_path_factory.mktemp("guest-releases") / "k.db"
    store = Store.open(f"sqlite:///{path}")
    rng = np.random.default_rng(11)
    old = 391.0 * (1 + 0.004 * rng.standard_normal(3))
    new = 402.0 * (1 + 0.004 * rng.standard_normal(3))
    for kernel, values in ((OLD, old), (NEW, new)):
        plant_series(store, values, kernels=[kernel] * 3, kind="vm", accel="tcg",
                     sysinfo=guest_sysinfo(REPORTED[kernel]), seed=int(values[0]))
    store.engine.dispose()
    return path, old, new


def test_the_release_table_compares_two_guest_kernels(db: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, old, new = db
    proc = kbench(path, "report", "releases", "--kernel", OLD, "--kernel", NEW, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    base, other = row["kernels"]
    assert base["runs"] == other["runs"] == 3
    logs_old, logs_new = np.log(old), np.log(new)
    assert other["relative"] == pytest.approx(100 * np.exp(logs_new.mean() - logs_old.mean()), rel=1e-6)
    welch = stats.ttest_ind(logs_new, logs_old, equal_var=False).confidence_interval(0.95)
    assert other["ci"] == pytest.approx([100 * np.exp(welch.low), 100 * np.exp(welch.high)], rel=1e-6)


def test_history_has_one_series_named_after_the_host(db: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, _, _ = db
    text = kbench(path, "history").stdout
    assert text.count("syscall.getppid.latency") == 1  # one series, both kernels in it
    assert "on vm vm/tcg — 6 runs" in text


def test_a_report_describes_the_host_and_the_vm() -> None:
    from kbench.history.machines import Machine

    machine = Machine.parse(machine_fingerprint(guest_sysinfo(REPORTED[OLD])))
    assert machine.describe() == "vm: 2 CPUs, AMD EPYC, 24 GiB memory; guest: 2 CPUs, QEMU TCG CPU version 2.5+, " \
        "1024 MiB memory"
    assert machine.to_json()["memory_bytes"] == HOST["memory_bytes"]


def test_machines_of_one_hostname_get_readable_names() -> None:
    from kbench.history.machines import distinct_names

    guest = machine_fingerprint(guest_sysinfo(REPORTED[OLD]))
    host = machine_fingerprint(HOST)
    names = distinct_names("vm", [guest, host, host])
    assert names == {host: "vm (2 CPUs, AMD EPYC, 24 GiB memory)",
                     guest: "vm (2 CPUs, AMD EPYC, 24 GiB memory; guest: 2 CPUs, QEMU TCG CPU version 2.5+, "
                            "1024 MiB memory)"}
    assert not any("|" in name for name in names.values())
    a_byte_more = machine_fingerprint({**HOST, "memory_bytes": HOST["memory_bytes"] + 1})  # the same in GiB
    twins = distinct_names("vm", [host, a_byte_more])
    assert len(set(twins.values())) == 2
    assert all(name.startswith("vm (2 CPUs, AMD EPYC, 24 GiB memory) #") for name in twins.values())


def test_nothing_to_compare_exits_4(db: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, _, _ = db
    for extra in ((), ("--format", "json"), ("--format", "markdown")):
        proc = kbench(path, "report", "releases", "--kernel", OLD, "--kernel", "6.1.0-99-amd64", *extra)
        assert proc.returncode == 4, (extra, proc.stdout, proc.stderr)
        assert "nothing to compare: no series has runs on 6.1.0-56-amd64 and on another of 6.1.0-99-amd64" \
            in proc.stderr and proc.stdout == ""
