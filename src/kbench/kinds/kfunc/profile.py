"""Profiles of in-kernel benchmarks: the guest kernel sampled while kbench.ko's kthread runs."""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.profile.folded import FoldedProfile
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport


def profile_kfunc(target: Transport, benchmark: Benchmark, request: RunRequest, seconds: float) -> FoldedProfile:
    raise TargetError(f"{benchmark.name}: --profile of in-kernel benchmarks is not supported yet")
