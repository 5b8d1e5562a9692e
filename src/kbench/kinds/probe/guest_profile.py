"""Profiles of probe workloads in a guest (not yet: the guest has no perf)."""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.profile.folded import FoldedProfile
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport


def profile_probe_in_guest(target: Transport, benchmark: Benchmark, request: RunRequest,
                           seconds: float) -> FoldedProfile:
    raise TargetError(f"{benchmark.name}: --profile of a user-space workload in a guest is not supported yet; "
                      "profile it on this kernel, or profile an in-kernel benchmark (kfunc.*) in the guest")
