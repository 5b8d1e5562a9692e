"""A suite's tool run under LKP's monitors (vmstat, mpstat, proc-vmstat, interrupts), where it runs.

``MonitoringTools`` wraps the place a tool runs (``kbench.suites.ToolHost``: this machine or a
guest): each run of the tool becomes a ``sh`` that writes a snapshot of the /proc files the
monitors read (``kbench.profile.monitors``), starts a sampler writing one every ``interval``
seconds (each to a file of its own, renamed when complete, so that stopping the sampler never
leaves half a snapshot), runs the tool in the foreground (its output and exit status are the
tool's), stops the sampler and writes a last snapshot. The snapshots are read back through the
same host and become one value per monitor metric for the iteration (``values``). Version
queries, set-up commands and servers (netserver) are not monitored.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace

from kbench.profile.monitors import MonitorError, MonitorValue, monitor_values, parse_snapshots, sources
from kbench.suites import Finished, SuiteError, ToolHost
from kbench.suites.hosts import innermost

PREFIX = ".kbench-monitor"
READ_TIMEOUT_S = 60.0


def sampler_script(files: tuple[str, ...], interval: float, directory: str) -> str:
    """The ``sh -c`` script: snapshot, sampler in the background, ``"$@"`` (the tool), stop, snapshot,
    the tool's exit status. Snapshots go to DIRECTORY/.kbench-monitor.N (0 first, ``end`` last)."""
    base = shlex.quote(posixpath.join(directory, PREFIX))
    cats = "; ".join(f"echo '== {name}'; cat /proc/{name}" for name in files)
    return (
        f"snap() {{ echo \"@@ $(cat /proc/uptime)\"; {cats}; }}; "
        f"snap > {base}.0; "
        f"(n=0; while sleep {interval:g}; do n=$((n+1)); snap > {base}.tmp && mv {base}.tmp {base}.$n; done) "
        ">/dev/null 2>&1 & s=$!; "
        "\"$@\"; rc=$?; kill $s 2>/dev/null; wait $s 2>/dev/null; "
        f"snap > {base}.end; exit $rc"
    )


def reader_script(directory: str) -> str:
    """Every complete snapshot in order, then removes them."""
    base = shlex.quote(posixpath.join(directory, PREFIX))
    return (f"i=0; while [ -e {base}.$i ]; do cat {base}.$i; i=$((i+1)); done; cat {base}.end; "
            f"rm -f {base}.*")


class MonitoringTools:
    """``host`` with every tool run monitored: ``values`` holds one list of MonitorValue per run."""

    def __init__(self, host: ToolHost, monitors: Mapping[str, float]) -> None:
        self.host = host
        self.where = host.where
        self.monitors = tuple(monitors)
        self.interval = min(monitors.values())
        self.files = sources(self.monitors)
        shell = host.which("sh")
        if shell is None:
            raise SuiteError("monitors need sh where the tool runs")
        self.shell = shell
        self.values: list[list[MonitorValue]] = []

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        script = sampler_script(self.files, self.interval, cwd)
        wrapped = ["sh", "-c", script, "sh", executable, *argv[1:]]
        finished = self.host.run(wrapped, executable=self.shell, cwd=cwd, timeout=timeout)
        read = innermost(self.host).run(["sh", "-c", reader_script(cwd)], executable=self.shell, cwd=cwd,
                                        timeout=READ_TIMEOUT_S)
        if finished.exit_code == 0 and not finished.timed_out:
            snapshots = parse_snapshots(read.stdout)
            if len(snapshots) >= 2 and snapshots[-1].uptime <= snapshots[0].uptime:
                # a run shorter than /proc/uptime's 10 ms step: its span is the tool's own time
                snapshots[-1] = replace(snapshots[-1], uptime=snapshots[0].uptime + max(finished.wall_seconds, 1e-3))
            try:
                self.values.append(monitor_values(self.monitors, snapshots))
            except MonitorError as exc:
                raise SuiteError(f"monitors ({', '.join(self.monitors)}): {exc}") from exc
        return finished

    def columns(self) -> dict[str, tuple[str, str, list[float]]]:
        """``{metric: (unit, direction, value per run)}`` for the metrics every run has; one that stayed
        at zero in every run (no swap, no I/O wait, an idle interrupt line) is left out: 0-Day's tables
        list what moved."""
        if not self.values:
            return {}
        names = [v.name for v in self.values[0]]
        common = [n for n in names if all(any(v.name == n for v in run) for run in self.values)]
        table: dict[str, tuple[str, str, list[float]]] = {}
        for name in common:
            found = [next(v for v in run if v.name == name) for run in self.values]
            if all(v.value == 0 for v in found):
                continue
            table[name] = (found[0].unit, found[0].direction, [v.value for v in found])
        return table

    def which(self, tool: str) -> str | None:
        return self.host.which(tool)

    def version_output(self, tool_path: str, args: tuple[str, ...]) -> str:
        return self.host.version_output(tool_path, args)

    def scratch_dir(self, prefix: str) -> AbstractContextManager[str]:
        return self.host.scratch_dir(prefix)

    def start_server(self, argv: list[str], *, executable: str, port: int) -> None:
        self.host.start_server(argv, executable=executable, port=port)

    def stop_server(self, executable: str) -> None:
        self.host.stop_server(executable)
