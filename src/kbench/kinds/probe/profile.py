"""A profile pass of a probe workload: its own run under ``perf record``, the measured region only."""

from __future__ import annotations

from dataclasses import replace

from kbench import children
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.native import find_native
from kbench.profile.folded import FoldedProfile
from kbench.profile.perf_record import ProfileError, record_here
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport


def profile_probe(target: Transport, benchmark: Benchmark, request: RunRequest, seconds: float) -> FoldedProfile:
    """``benchmark`` as ``request`` runs it (parameters, batch, pinning), for ``seconds`` of measured
    samples, recorded by perf between the probe's enable and disable of its measured region."""
    if target.in_guest:
        from kbench.kinds.probe.guest_profile import profile_probe_in_guest

        return profile_probe_in_guest(target, benchmark, request, seconds)
    run = replace(request, samples=None, duration_s=seconds, counters=False)
    args = run.probe_args(benchmark.workload)
    probe = str(find_native("kbench-probe"))
    with children.scratch_dir("kbench-profile-run-") as scratch:
        command = [probe, args[0], "--output", str(scratch / "samples.bin"), *args[1:]]
        try:
            return record_here(probe_command=command, timeout=max(600.0, 20 * seconds))
        except ProfileError as exc:
            raise TargetError(f"{benchmark.name}: {exc}") from exc
