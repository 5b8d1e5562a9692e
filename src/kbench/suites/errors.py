"""Errors raised while building, running or reading a suite's tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbench.suites.result import Iteration


class SuiteError(RuntimeError):
    """Base class: a suite could not produce a result."""


class ToolMissing(SuiteError):
    """The suite's executable is not on PATH; the message names the Debian package."""

    def __init__(self, tool: str, package: str) -> None:
        super().__init__(f"{tool} not found: install the Debian package {package} (`apt-get install {package}`)")
        self.tool = tool
        self.package = package


class SuiteParseError(SuiteError, ValueError):
    """A tool's output does not hold the numbers its parser expects."""


class ToolFailed(SuiteError):
    """One iteration of the tool failed: non-zero exit, killed, timed out, or unreadable output.

    ``exit_code`` is the tool's exit status (negative: killed by that signal; None: it
    was killed by kbench after ``timeout``). ``stderr_tail`` holds the last lines of its
    standard error (of its standard output when stderr was empty, ``tail_stream`` says
    which); ``completed`` holds the iterations that finished before this one.
    """

    def __init__(
        self,
        *,
        benchmark: str,
        command: str,
        iteration: int,
        reason: str,
        exit_code: int | None,
        stderr_tail: str,
        tail_stream: str = "stderr",
        completed: tuple[Iteration, ...] = (),
    ) -> None:
        tail = f"\n--- last lines of its {tail_stream} ---\n{stderr_tail}" if stderr_tail else " (it printed nothing)"
        super().__init__(f"{benchmark}: iteration {iteration + 1} {reason}: {command}{tail}")
        self.benchmark = benchmark
        self.command = command
        self.iteration = iteration
        self.reason = reason
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        self.completed = completed
