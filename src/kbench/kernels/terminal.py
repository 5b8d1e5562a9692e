"""A kernel build's progress on a terminal: what is built, objects compiled (of how many,
when an earlier build says), the file being compiled and the time taken. Nothing is shown
when the console is not a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.contract.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


class TerminalProgress:
    """A ``BuildProgress`` drawn with rich on ``console`` (default: stderr)."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def started(self, what: str, expected: int | None) -> None:
        if not self.console.is_terminal:
            return
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(), TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
            TextColumn("{task.completed} objects", markup=False), TextColumn("{task.fields[current]}", markup=False),
            TimeElapsedColumn(), console=self.console, transient=True,
        )
        self._task = self._bar.add_task(printable(what), total=expected, current="")
        self._bar.start()

    def step(self, done: int, current: str) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, current=printable(current)[-36:])

    def finished(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._task = None, None
