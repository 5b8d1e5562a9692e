"""Run a suite's real tool N times, each a fresh process, and keep everything it said."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from kbench import children
from kbench.suites.errors import SuiteError, SuiteParseError, ToolFailed, ToolMissing
from kbench.suites.model import ParamValue
from kbench.suites.process import Finished, run_process
from kbench.suites.registry import lookup_test
from kbench.suites.result import Iteration, SuiteResult
from kbench.suites.suite import Suite

STDERR_TAIL_LINES = 15
VERSION_TIMEOUT_SECONDS = 10.0

IterationCallback = Callable[[Iteration], None]


def run_suite(
    test: str,
    params: Mapping[str, ParamValue] | None = None,
    iterations: int = 1,
    timeout: float = 600.0,
    *,
    on_iteration: IterationCallback | None = None,
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
    """
    if iterations < 1:
        raise ValueError(f"iterations must be ≥ 1, got {iterations}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    suite, spec = lookup_test(test)
    resolved = spec.resolve(dict(params or {}))
    if suite.duration_param is not None and timeout <= float(resolved[suite.duration_param]):
        raise ValueError(
            f"{spec.full_name}: timeout {timeout:g} s leaves no time for {suite.duration_param}="
            f"{resolved[suite.duration_param]} s; allow more than the run lasts"
        )
    argv = suite.command(spec, resolved)
    tool_path = shutil.which(suite.tool)
    if tool_path is None:
        raise ToolMissing(suite.tool, suite.package)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    tool_version = _tool_version(suite, tool_path)
    done: list[Iteration] = []
    interrupted = False
    with children.scratch_dir(f"kbench-{suite.name}-") as scratch:
        try:
            for index in range(iterations):
                try:
                    finished = run_process(argv, executable=tool_path, cwd=Path(scratch), timeout=timeout)
                except OSError as exc:
                    raise SuiteError(f"{spec.full_name}: cannot start {tool_path}: {exc}") from exc
                iteration = _iteration(suite, spec.name, argv, index, finished, tuple(done), timeout)
                done.append(iteration)
                if on_iteration is not None:
                    on_iteration(iteration)
        except KeyboardInterrupt:  # run_process has already stopped the tool
            interrupted = True
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
    )


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
            values = suite.parse(test, output)
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


def _tool_version(suite: Suite, tool_path: str) -> str:
    """The version the tool reports for ``version_args``; ``unknown`` if it says none."""
    try:
        done = children.run(
            [tool_path, *suite.version_args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=VERSION_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return suite.version(done.stdout + done.stderr) or "unknown"
