"""What a healthy guest kernel log must not contain, and the guest-side test helper."""

from __future__ import annotations

import os
import re
from pathlib import Path

TEST_KERNEL = os.environ.get("KBENCH_TEST_KERNEL", "deb:6.1.0-56-amd64")
BAD_KERNEL_LOG = re.compile(
    r"BUG[: ]|WARNING:|Oops|soft lockup|hard LOCKUP|rcu_sched detected stall|rcu_preempt detected stall|"
    r"self-detected stall|general protection|Call Trace"
)
HELPER_SOURCE = Path(__file__).parent / "helpers" / "sysfs_poke.c"
GUEST_HELPER = "/tmp/sysfs_poke"


def kernel_log_problems(log: str) -> list[str]:
    return [line for line in log.splitlines() if BAD_KERNEL_LOG.search(line)]
