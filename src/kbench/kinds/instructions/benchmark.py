"""A benchmark counted in instructions: what ``--metric instructions`` turns a benchmark into."""

from __future__ import annotations

from dataclasses import replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.limits import KindLimits
from kbench.contract.request import BadRequest
from kbench.contract.vocabulary import LOWER_IS_BETTER

NAME = "instructions"
METRIC = "instructions"
"""The ``--metric`` word, and the last part of a counted metric's name."""
UNIT = "instructions"

COUNTED_LIMITS = KindLimits(NAME, max_samples=10**6, max_warmup_samples=10**6, max_batch=10**6, max_calls=10**9,
                            count_based=True)
"""A counted run takes a count of samples (executions, or samples of ``batch`` operations): the
counters are exact, so a few hundred are plenty; valgrind and TCG make each cost 10-100x."""

PROBE_KIND = "probe"
KFUNC_KIND = "kfunc"
COUNTABLE = (PROBE_KIND, KFUNC_KIND)


def counted(benchmark: Benchmark) -> Benchmark:
    """``benchmark`` counted in instructions per operation (``syscall.getppid`` →
    ``syscall.getppid.instructions``): BadRequest for a kind whose runs cannot be counted."""
    if benchmark.kind == NAME:
        return benchmark
    if benchmark.kind not in COUNTABLE:
        raise BadRequest(f"{benchmark.name}: --metric instructions counts commands, syscall.* and kfunc.* "
                         f"benchmarks, not {benchmark.kind} ones")
    stem = benchmark.metric.rsplit(".", 1)[0] if "." in benchmark.metric else benchmark.name
    return replace(benchmark, kind=NAME, unit=UNIT, metric=f"{stem}.{METRIC}",
                   direction=LOWER_IS_BETTER, columns=("user", "kernel"))


def base_kind(benchmark: Benchmark) -> str:
    """The kind that runs a counted benchmark's operations: kbench.ko's (``kfunc.*``) or the probe's."""
    return KFUNC_KIND if benchmark.name.startswith("kfunc.") else PROBE_KIND


def is_command(benchmark: Benchmark) -> bool:
    return benchmark.name == "command"



def kfunc_placeholder(name: str) -> Benchmark:
    """A benchmark a module of one's own registers (known once the module is loaded), as far as
    counting it needs to know before: that it runs in kbench.ko."""
    full = name if name.startswith("kfunc.") else f"kfunc.{name}"
    return Benchmark(name=full, kind=KFUNC_KIND, workload=full.removeprefix("kfunc."), description="",
                     unit="cycles", metric=f"{full}.cycles", direction=LOWER_IS_BETTER, params=())
