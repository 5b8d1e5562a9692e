"""What ``kbench trace`` is asked to do: functions, keys, sums and the workload.

Kept free of heavy imports: the command line builds and checks a plan before any
kernel boots.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbench.contract.benchmark import Benchmark, ParamSpec
from kbench.contract.request import RunRequest
from kbench.contract.vocabulary import LOWER_IS_BETTER


def parse_key_sum(text: str) -> tuple[int, ...]:
    """``2+3`` -> (2, 3); ValueError for anything else."""
    try:
        keys = tuple(int(part) for part in text.split("+"))
    except ValueError:
        raise ValueError(f"{text!r} is not a sum of tracepoint keys such as 2+3") from None
    if len(keys) < 2 or len(set(keys)) != len(keys) or min(keys) < 0:
        raise ValueError(f"{text!r} is not a sum of two or more distinct keys such as 2+3")
    return keys


@dataclass(frozen=True)
class TracePlan:
    """What ``kbench trace`` probes, reports and runs as the workload (one of during/command)."""

    functions: tuple[str, ...]
    keys: tuple[int, ...] = ()
    sums: tuple[tuple[int, ...], ...] = ()
    during: Benchmark | None = None
    during_request: RunRequest | None = None
    command: str | None = None
    timeout: float = 600.0
    log_size: int | None = None
    measure_overhead: bool = True

    def __post_init__(self) -> None:
        if not self.functions and not self.keys:
            raise ValueError("name what to trace: one or more kernel functions, or tracepoint keys (--key)")
        if (self.during is None) == (self.command is None):
            raise ValueError("give the workload to trace: either a benchmark (--during) or a command (--command)")
        for what, given in (("function", list(self.functions)), ("key", [str(key) for key in self.keys])):
            twice = sorted({item for item in given if given.count(item) > 1})
            if twice:
                raise ValueError(f"{what} {', '.join(twice)} is listed twice: name each {what} once")

    @property
    def metric(self) -> str:
        return f"trace.{self.functions[0]}.cycles" if self.functions else f"trace.key{self.keys[0]}.cycles"

    def benchmark(self) -> Benchmark:
        """The stored run's benchmark: ``trace``, its metric the first function (or key)."""
        return Benchmark(
            name="trace", kind="trace", workload="trace",
            description="kernel functions and tracepoints timed in place while a workload runs",
            unit="cycles", metric=self.metric, direction=LOWER_IS_BETTER, params=TRACE_PARAMS,
        )

    def params(self) -> dict[str, str]:
        params = {"functions": ",".join(self.functions)}
        if self.keys:
            params["keys"] = ",".join(map(str, self.keys))
        if self.sums:
            params["sums"] = ",".join("+".join(map(str, keys)) for keys in self.sums)
        if self.during is not None:
            params["during"] = self.during.name
        if self.command is not None:
            params["command"] = self.command
        return params


TRACE_PARAMS = (
    ParamSpec("functions", "str", "", "kernel functions timed by kretprobes, comma-separated"),
    ParamSpec("keys", "str", "", "tracepoint keys reported, comma-separated"),
    ParamSpec("sums", "str", "", "tracepoint keys summed along one path, e.g. 2+3"),
    ParamSpec("during", "str", "", "the benchmark run as the workload"),
    ParamSpec("command", "str", "", "the shell command run as the workload"),
)


