"""kbench.ko's TSC rate when the guest kernel got its own wrong.

A TCG guest starved of CPU on a loaded host once calibrated its TSC at 171779 kHz for a
2.6 GHz TSC, and every cycle count turned into ns was 15x off. `tsc_early_khz=171779`
makes the kernel take that value again; kbench.ko must measure the real rate itself.
The oracle is independent: under TCG the guest reads the host's TSC, whose rate the host's
kbench-probe calibrates in user space (a different program, clock and method).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbench.native import find_native
from kbench.targets.kmod_sysfs import SYSFS_ROOT
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

WRONG_KHZ = 171779


def _host_tsc_khz() -> float | None:
    done = subprocess.run([str(find_native("kbench-probe")), "run", "getppid", "--samples", "10"],
                          capture_output=True, check=True)
    timer = json.loads(done.stdout.split(b"\n", 1)[0])["timer"]
    return float(timer["hz"]) / 1000 if timer["name"] == "tsc" else None


def test_a_miscalibrated_guest_gets_the_measured_rate(tmp_path: Path) -> None:
    host_khz = _host_tsc_khz()
    if host_khz is None:
        pytest.skip("the host's TSC is not invariant: no independent rate to check against")
    with VmTarget(TEST_KERNEL, console_log=tmp_path / "console.log",
                  cmdline_extra=f"tsc_early_khz={WRONG_KHZ}") as target:
        session = target.session
        assert session is not None and target.module is not None, target.module_error
        if session.accel != "tcg":
            pytest.skip(f"the guest runs under {session.accel}: its TSC need not be the host's")
        kernel_khz = int(session.read_file(f"{SYSFS_ROOT}/tsc_khz_kernel").decode())
        used_khz = target.module.tsc_khz()
        log = session.dmesg()
    assert kernel_khz == WRONG_KHZ
    assert used_khz == pytest.approx(host_khz, rel=1e-3), (used_khz, host_khz)
    assert f"the kernel's tsc_khz {WRONG_KHZ} is" in log
    assert kernel_log_problems(log) == []
