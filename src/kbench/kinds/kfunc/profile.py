"""A profile pass of an in-kernel benchmark: a kbench.ko run of its own, the kernel sampled while its thread runs.

The run is set up as the measured one was (parameters, CPU, batch) with a recorded loop of
about ``seconds`` (``KbenchModule.prepare_run``); ``cat`` reads its ``run`` file under
``perf record -a -g`` where the module is loaded (in a guest: perf carried into it,
``kbench.kinds.host_profile``), and only the samples of the measuring kernel threads
(``kbench/<cpu>``) are kept: what the CPU did for the benchmark, with the kernel's symbols
resolved from that kernel's ``/proc/kallsyms``. The thread's set-up, overhead measurement
and warm-up are in the window too; they are short beside the recorded loop.
"""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.host_profile import perf_host, record_on, utility
from kbench.profile.folded import FoldedProfile
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport

THREAD_PREFIX = "kbench/"
"""The measuring threads' names (``kbench/<cpu>``, ``kbench/-1`` unbound, ``kbench/ab``)."""
PERF_SLACK_S = 120.0


def measuring_thread(comm: str) -> bool:
    return comm.startswith(THREAD_PREFIX)


def profile_kfunc(target: Transport, benchmark: Benchmark, request: RunRequest, seconds: float) -> FoldedProfile:
    """``benchmark`` run as ``request`` says for about ``seconds`` of recorded loop, its thread sampled."""
    host = perf_host(target)  # first: a guest booted again with perf loads kbench.ko again
    with target.kbench_module(benchmark.name) as module:
        prepared = module.prepare_run(benchmark, request, seconds)
        try:
            return record_on(host, [*utility(host, "cat"), prepared.path], system_wide=True, keep=measuring_thread,
                             timeout=2 * prepared.bound_s + PERF_SLACK_S,
                             window=f"the measuring kernel thread ({THREAD_PREFIX}*): set-up, warm-up and "
                                    f"{prepared.loop_count} recorded samples of batch {prepared.batch} "
                                    f"(about {prepared.expected_s:.1f} s)",
                             details={"loop_count": prepared.loop_count, "batch": prepared.batch})
        except TargetError as exc:
            raise TargetError(f"{benchmark.name}: {exc}") from exc
