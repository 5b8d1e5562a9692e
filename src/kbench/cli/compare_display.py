"""How ``kbench compare`` shows its progress on stderr (``kbench.engine.compare.Display``).

Trials: a bar of trials done; interleaved blocks: a bar of the budget spent, then the
profiling; counting instructions: a status line. Drawn only on a terminal, never with
``--json``, and gone when the work ends (rich.progress is imported only then).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kbench.cli.console import err_console, label_column
from kbench.contract.progress import Step
from kbench.engine.compare import Work


class CompareDisplay:
    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    @contextmanager
    def work(self, kind: Work, total: float | None) -> Iterator[Step]:
        if kind == "counting":
            with err_console.status("counting instructions") as status:
                def counting(what: str, done: float, total: float | None) -> None:
                    status.update(what)

                yield counting
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        count = MofNCompleteColumn() if kind == "trials" else TextColumn("{task.percentage:>3.0f}% of the budget")
        with Progress(label_column(), BarColumn(), count, TimeElapsedColumn(), console=err_console, transient=True,
                      disable=not err_console.is_terminal or self.quiet) as bar:
            task = bar.add_task("trials" if kind == "trials" else "pilot block", total=total)

            def step(what: str, done: float, total: float | None) -> None:
                bar.update(task, description=what, completed=done)

            yield step
