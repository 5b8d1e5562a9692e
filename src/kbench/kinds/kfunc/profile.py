"""Profiles of in-kernel benchmarks: not yet (perf is not carried into the guest); a clear refusal."""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.profile.folded import FoldedProfile
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport


def profile_kfunc(target: Transport, benchmark: Benchmark, request: RunRequest, seconds: float) -> FoldedProfile:
    raise TargetError(f"{benchmark.name}: --profile of in-kernel benchmarks is not supported yet (perf is not "
                      "carried into the guest); profile syscalls, commands and suites on this kernel")
