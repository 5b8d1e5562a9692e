"""Profiles of probe workloads in a guest: the guest's probe under the guest's perf, its measured region only."""

from __future__ import annotations

from dataclasses import replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.host_profile import perf_host, record_on
from kbench.profile.folded import FoldedProfile
from kbench.targets.base import TargetError
from kbench.targets.run_bound import timed_bound
from kbench.targets.transport import Transport

PROBE = "kbench-probe"


def profile_probe_in_guest(target: Transport, benchmark: Benchmark, request: RunRequest,
                           seconds: float) -> FoldedProfile:
    """``benchmark`` as ``request`` runs it, for ``seconds`` of measured samples, recorded by the
    guest's perf between the probe's enable and disable of its measured region."""
    host = perf_host(target)
    probe = host.which(PROBE)
    if probe is None:
        raise TargetError(f"{benchmark.name}: the guest has no {PROBE}")
    run = replace(request, samples=None, duration_s=seconds, counters=False)
    args = run.probe_args(benchmark.workload)
    with host.scratch_dir("kbench-profile-run-") as scratch:
        command = [probe, args[0], "--output", f"{scratch}/samples.bin", *args[1:]]
        try:
            return record_on(host, command, probe_window=True, window="measured region",
                             timeout=2 * timed_bound(seconds, run.warmup_duration_s or 0.0))
        except TargetError as exc:
            raise TargetError(f"{benchmark.name}: {exc}") from exc
