"""A suite tool's host whose tool runs go through perf, where the tool runs (the base of
``CountingTools`` and ``RecordingTools``)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from kbench.profile.perf_record import PERF_PACKAGE
from kbench.suites import ToolHost, ToolMissing


class HostUnderPerf:
    """``host`` with perf found on it (ToolMissing if it is not there); every call but ``run``,
    which a subclass wraps in perf, goes to ``host`` as it is."""

    def __init__(self, host: ToolHost) -> None:
        self.host = host
        self.where = host.where
        perf = host.which("perf")
        if perf is None:
            raise ToolMissing("perf", PERF_PACKAGE)
        self.perf = perf

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
