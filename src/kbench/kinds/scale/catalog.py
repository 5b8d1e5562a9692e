"""The will-it-scale catalog: N tasks loop a testcase; ops per second per task (probe `scale`)."""

from __future__ import annotations

from functools import cache

from kbench.contract.benchmark import Benchmark, ParamSpec
from kbench.contract.vocabulary import HIGHER_IS_BETTER
from kbench.kinds.scale.testcases import list_scale_tests

NAME = "scale"

DEFAULT_DURATION_S = 5.0
DEFAULT_WARMUP_S = 1.0
INTERVAL_PARAM = ParamSpec("interval", "float", "1", "seconds between two samples of the task counters")


@cache
def scale_benchmarks() -> tuple[Benchmark, ...]:
    """``will-it-scale.<test>``, primary metric ``per_process_ops`` (``per_thread_ops`` in thread mode)."""
    return tuple(
        Benchmark(
            name=test.benchmark,
            kind=NAME,
            workload=test.name,
            description=test.description,
            unit="ops/s",
            metric=f"{test.benchmark}.per_process_ops",
            direction=HIGHER_IS_BETTER,
            params=(
                *(
                    ParamSpec(p["name"], p.get("type", "str"), str(p.get("default", "")), p.get("description", ""))
                    for p in test.params
                ),
                INTERVAL_PARAM,
            ),
        )
        for test in list_scale_tests()
    )
