"""Run a suite's real tool N times, each a fresh process, and keep everything it said."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from kbench.suites.errors import SuiteError, SuiteParseError, ToolFailed, ToolMissing
from kbench.suites.hosts import LocalTools, ToolHost, innermost
from kbench.suites.model import ParamValue
from kbench.suites.process import Finished
from kbench.suites.registry import lookup_test
from kbench.suites.result import Iteration, SuiteResult
from kbench.suites.suite import Suite

STDERR_TAIL_LINES = 15

IterationCallback = Callable[[Iteration], None]


def run_suite(
    test: str,
    params: Mapping[str, ParamValue] | None = None,
    iterations: int = 1,
    timeout: float = 600.0,
    *,
    on_iteration: IterationCallback | None = None,
    host: ToolHost | None = None,
) -> SuiteResult:
    """Run ``<suite>.<test>`` ``iterations`` times and return every iteration's values.

    Parameters are validated (BadSuiteParameter; ValueError when ``timeout`` does not
    exceed the test's own duration parameter) before anything runs; a tool not on
    PATH raises ToolMissing naming its Debian package. Each iteration is a fresh
    process in one scratch directory (removed afterwards), killed with its children
    after ``timeout`` seconds. A non-zero exit, a kill, a timeout or output without
    the test's metrics raises ToolFailed with the exit code, the tail of stderr and
    the iterations already finished. Ctrl-C stops the run and returns what finished,
    marked ``interrupted``. ``on_iteration`` is called after each finished iteration.
    ``host`` says where the tool runs: this machine by default, or a guest kernel (the
    VM target's ``GuestTools``). A suite with a ``server`` (netperf's netserver) has it
    started before the first iteration and stopped after the last.
    """
    host = host if host is not None else LocalTools()
    if iterations < 1:
        raise ValueError(f"iterations must be ≥ 1, got {iterations}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    suite, spec = lookup_test(test)
    if suite.why_unavailable(spec):
        raise SuiteError(f"{spec.full_name} cannot run on this system: {suite.why_unavailable(spec)}")
    resolved = spec.resolve(dict(params or {}))
    if suite.duration_param in resolved and timeout <= float(resolved[str(suite.duration_param)]):
        raise ValueError(
            f"{spec.full_name}: timeout {timeout:g} s leaves no time for {suite.duration_param}="
            f"{resolved[suite.duration_param]} s; allow more than the run lasts"
        )
    argv = suite.command(spec, resolved)
    tool_path = host.which(suite.tool)
    if tool_path is None:
        raise ToolMissing(suite.tool, suite.package)
    # a command may be a shell running the tool (several netperf clients at once)
    command_path = tool_path if argv[0] == suite.tool else host.which(argv[0])
    if command_path is None:
        raise SuiteError(f"{spec.full_name}: {argv[0]} not found where the tool runs")
    server = suite.server(spec, resolved) if suite.server is not None else None
    server_path = None
    if server is not None:
        server_path = host.which(server.argv[0])
        if server_path is None:
            raise ToolMissing(server.argv[0], suite.package)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    tool_version = suite.version(host.version_output(tool_path, suite.version_args)) or "unknown"
    done: list[Iteration] = []
    interrupted = False
    with host.scratch_dir(f"kbench-{suite.name}-") as scratch:
        try:
            setup = suite.prepare(spec, resolved) if suite.prepare is not None else []
            if setup:
                _prepare(host, setup, scratch, spec.full_name)
            if server is not None and server_path is not None:
                host.start_server(server.argv, executable=server_path, port=server.port)
            for index in range(iterations):
                try:
                    finished = host.run(argv, executable=command_path, cwd=scratch, timeout=timeout)
                except OSError as exc:
                    raise SuiteError(f"{spec.full_name}: cannot start {tool_path}: {exc}") from exc
                iteration = _iteration(suite, spec.name, argv, index, finished, tuple(done), timeout)
                done.append(iteration)
                if on_iteration is not None:
                    on_iteration(iteration)
        except KeyboardInterrupt:  # the host has already stopped the tool
            interrupted = True
        finally:
            if server_path is not None:
                host.stop_server(server_path)
    return SuiteResult(
        test=spec,
        params=resolved,
        command=tuple(argv),
        tool_path=tool_path,
        tool_version=tool_version,
        package=suite.package,
        started_at=started_at,
        iterations=tuple(done),
        interrupted=interrupted,
        where=host.where,
    )


PREPARE_TIMEOUT_S = 300.0


def _prepare(host: ToolHost, argv: list[str], scratch: str, name: str) -> None:
    """Run a suite's set-up command in the scratch directory (SuiteError if it fails), on the host itself:
    not under the perf stat or the monitors that wrap it (each wrapper keeps the host it wraps as ``host``)."""
    host = innermost(host)
    path = host.which(argv[0])
    if path is None:
        raise SuiteError(f"{name}: its set-up needs {argv[0]}, which is not where the tool runs")
    done = host.run(argv, executable=path, cwd=scratch, timeout=PREPARE_TIMEOUT_S)
    if done.timed_out or done.exit_code != 0:
        said = _tail(done.stderr or done.stdout) or "no message"
        raise SuiteError(f"{name}: its set-up ({shlex.join(argv)}) failed: {said}")


def _iteration(
    suite: Suite,
    test: str,
    argv: list[str],
    index: int,
    finished: Finished,
    completed: tuple[Iteration, ...],
    timeout: float,
) -> Iteration:
    """The finished process as an Iteration, or ToolFailed saying why it is not one."""
    reason = ""
    values: dict[str, float] = {}
    if finished.timed_out:
        reason = f"did not finish within {timeout:g} s and was killed"
    elif finished.exit_code is not None and finished.exit_code < 0:
        reason = f"was killed by signal {-finished.exit_code}"
    elif finished.exit_code != 0:
        reason = f"failed with exit code {finished.exit_code}"
    else:
        output = finished.stdout if suite.parse_stream == "stdout" else finished.stderr
        try:
            values = suite.parse(test, output, finished.wall_seconds)
        except SuiteParseError as exc:
            reason = f"exited 0 but its output could not be read ({exc})"
    if reason:
        stream, text = ("stderr", finished.stderr) if finished.stderr.strip() else ("stdout", finished.stdout)
        raise ToolFailed(
            benchmark=f"{suite.name}.{test}",
            command=shlex.join(argv),
            iteration=index,
            reason=reason,
            exit_code=finished.exit_code,
            stderr_tail=_tail(text),
            tail_stream=stream,
            completed=completed,
        )
    return Iteration(
        index=index,
        values=values,
        stdout=finished.stdout,
        stderr=finished.stderr,
        exit_code=0,
        wall_seconds=finished.wall_seconds,
    )


def _tail(text: str) -> str:
    return "\n".join(text.rstrip().splitlines()[-STDERR_TAIL_LINES:])
