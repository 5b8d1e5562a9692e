"""A suite's tool run under ``perf stat``: every iteration counted, the counts summed for the run.

``CountingTools`` wraps the place a tool runs (``kbench.suites.ToolHost``: this machine
or a guest): each run of the tool becomes ``perf stat -x, -o FILE -e EVENTS -- TOOL``
in its scratch directory, and FILE is read back through the same host (under any wrapper, e.g.
the monitors: not monitored), so the counters are taken where the tool ran. Version queries and
servers (netserver) are not counted.
"""

from __future__ import annotations

import posixpath
from typing import Any

from kbench.kinds.suite.perf_host import HostUnderPerf
from kbench.profile.counters import sum_raw
from kbench.profile.perf_stat import parse_perf_stat, perf_stat_argv
from kbench.suites import Finished, SuiteError, ToolHost, ToolMissing
from kbench.suites.hosts import innermost

OUTPUT_NAME = ".kbench-perf-stat.csv"
READ_TIMEOUT_S = 30.0


class CountingTools(HostUnderPerf):
    """``host`` with every tool run counted by ``perf stat`` (``readings``: one per run)."""

    def __init__(self, host: ToolHost) -> None:
        super().__init__(host)
        self.cat = host.which("cat") or "/bin/cat"
        self.readings: list[dict[str, Any]] = []
        self.problems: list[str] = []

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        output = posixpath.join(cwd, OUTPUT_NAME)
        counted = perf_stat_argv(self.perf, output, [executable, *argv[1:]])
        finished = self.host.run(counted, executable=self.perf, cwd=cwd, timeout=timeout)
        if finished.exit_code == 0 and not finished.timed_out:
            read = innermost(self.host).run(["cat", output], executable=self.cat, cwd=cwd, timeout=READ_TIMEOUT_S)
            try:
                self.readings.append(parse_perf_stat(read.stdout, operations=1))
            except ValueError as exc:
                self.problems.append(f"perf stat's counts of iteration {len(self.readings) + 1} "
                                     f"could not be read ({exc})")
        return finished

    def counters(self) -> dict[str, Any] | None:
        """The runs' counts added up (operations = iterations counted), or None."""
        total = sum_raw(self.readings)
        if total is not None:
            total["operation"] = "iteration"
            total["per_iteration"] = [
                {e["name"]: e.get("value") for e in reading["events"] if e.get("supported", True)}
                for reading in self.readings
            ]
        return total


def counting(host: ToolHost) -> CountingTools:
    """``host`` under perf stat (SuiteError when perf is not where the tool runs)."""
    try:
        return CountingTools(host)
    except ToolMissing as exc:
        raise SuiteError(f"--counters: {exc}") from exc
