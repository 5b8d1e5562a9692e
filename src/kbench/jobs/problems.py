"""The problems found in a job file, and the one exception that carries all of them.

Each problem renders as ``FILE:LINE: key: message`` (``FILE: key: message`` when the
file could not be read at all, so there is no line). ``key`` is the key as written in
the file, dotted inside a section (``params.size``, ``will-it-scale.mode``); problems
about the file as a whole use ``job``, YAML syntax errors use ``yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbench.exit_codes import KbenchError


@dataclass(frozen=True)
class JobProblem:
    """One thing wrong with a job file, at a 1-based line (None: no line applies)."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}"


class JobError(KbenchError, ValueError):
    """A job file is invalid; ``problems`` lists every problem found, by line."""

    def __init__(self, problems: Sequence[JobProblem]):
        self.problems: tuple[JobProblem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def message(self) -> str:
        count = len(self.problems)
        return f"invalid job file: {count} problem{'s' if count != 1 else ''}; nothing was run"

    def detail_lines(self) -> tuple[object, ...]:
        return self.problems


class ProblemCollector:
    """Collects the problems of one file: duplicates dropped, sorted by line on raise."""

    def __init__(self, file: str):
        self.file = file
        self._problems: list[JobProblem] = []
        self._warnings: list[tuple[JobProblem, str | None]] = []

    def add(self, line: int | None, key: str, message: str) -> None:
        problem = JobProblem(self.file, line, key, message)
        if problem not in self._problems:
            self._problems.append(problem)

    def warn(self, line: int | None, key: str, message: str, benchmark: str | None = None) -> None:
        """Record something the job asks for that kbench will not do (the job still runs);
        ``benchmark``: it concerns the instances of that benchmark only."""
        warning = (JobProblem(self.file, line, key, message), benchmark)
        if warning not in self._warnings:
            self._warnings.append(warning)

    def warnings(self, benchmark: str | None = None) -> tuple[JobProblem, ...]:
        """The warnings recorded (those concerning ``benchmark`` and the whole job; every one
        when None), by line."""
        found = [w for w, about in self._warnings if benchmark is None or about in (None, benchmark)]
        return tuple(sorted(found, key=lambda p: -1 if p.line is None else p.line))

    def __bool__(self) -> bool:
        return bool(self._problems)

    def error(self) -> JobError:
        """The JobError for everything collected; problems without a line come first,
        then by line, ties in the order they were found."""
        return JobError(sorted(self._problems, key=lambda p: -1 if p.line is None else p.line))

    def raise_if_any(self) -> None:
        if self._problems:
            raise self.error()
