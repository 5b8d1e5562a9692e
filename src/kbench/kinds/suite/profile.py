"""A profile pass of a suite: one more iteration of the tool under ``perf record``, where it runs.

``RecordingTools`` wraps the tool's host (this machine or a guest) as ``CountingTools``
does for counters: the tool runs as ``perf record -g -- TOOL``, then ``perf script`` reads
the recording in the same scratch directory, through the same host, so symbols are
resolved where the tool ran.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.suite.perf_host import HostUnderPerf
from kbench.profile.folded import FoldedProfile, fold_perf_script
from kbench.profile.perf_record import DEFAULT_FREQUENCY_HZ, record_argv, script_argv
from kbench.suites import Finished, SuiteError, ToolHost, ToolMissing
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport

DATA_NAME = ".kbench-perf.data"
SCRIPT_TIMEOUT_S = 300.0


class RecordingTools(HostUnderPerf):
    """``host`` with each tool run recorded by ``perf record`` (``stacks``: folded, added up)."""

    def __init__(self, host: ToolHost, event: str, frequency_hz: int = DEFAULT_FREQUENCY_HZ) -> None:
        super().__init__(host)
        self.event = event
        self.frequency_hz = frequency_hz
        self.stacks: dict[str, int] = {}
        self.samples = 0
        self.problems: list[str] = []

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        data = posixpath.join(cwd, DATA_NAME)
        recorded = record_argv(self.perf, data, [executable, *argv[1:]], event=self.event,
                               frequency_hz=self.frequency_hz)
        finished = self.host.run(recorded, executable=self.perf, cwd=cwd, timeout=timeout)
        if finished.exit_code == 0 and not finished.timed_out:
            script = self.host.run(script_argv(self.perf, data), executable=self.perf, cwd=cwd,
                                   timeout=SCRIPT_TIMEOUT_S)
            stacks, samples = fold_perf_script(script.stdout)
            for stack, weight in stacks.items():
                self.stacks[stack] = self.stacks.get(stack, 0) + weight
            self.samples += samples
            if not samples:
                self.problems.append(f"perf script read no sample: {script.stderr.strip()[-300:]}")
        return finished


def profile_suite(target: Transport, benchmark: Benchmark, request: RunRequest) -> FoldedProfile:
    """One iteration of the suite's test as ``request`` sets it, recorded where the tool runs."""
    from kbench.kinds.host_profile import host_sampling_event
    from kbench.kinds.suite.run import run_suite_benchmark, suite_host

    host = suite_host(target, benchmark, perf=True)
    try:
        recording = RecordingTools(host, host_sampling_event(host))
    except ToolMissing as exc:
        raise TargetError(f"{benchmark.name}: --profile: {exc}") from exc
    try:
        run_suite_benchmark(benchmark, replace(request, iterations=1, counters=False, monitors={}), host=recording)
    except SuiteError as exc:
        raise TargetError(str(exc)) from exc
    if not recording.samples:
        raise TargetError(f"{benchmark.name}: the profile holds no sample ({'; '.join(recording.problems)})")
    return FoldedProfile(recording.stacks, event=recording.event, frequency_hz=recording.frequency_hz,
                         samples=recording.samples, details={
                             "tool": "perf record", "call_graph": "fp", "where": host.where,
                             "window": "whole tool (one iteration)", "command": benchmark.workload})
