"""How long work tells what it is doing: ``step(what, done, total)``.

``what`` says what is being done now, in the user's words ("building 3f2a1c9e0b4d",
"block 12: A2"); ``done`` counts the steps finished (commits, blocks, phases, or a
percentage of a time budget), ``total`` the steps in all, None while unknown. Long work
takes such a callable and calls it whenever it starts something new; the command line
draws it (kbench.cli.progress), a test records it, and by default nothing listens.
"""

from __future__ import annotations

from collections.abc import Callable

Step = Callable[[str, float, float | None], None]


def no_steps(what: str, done: float, total: float | None) -> None:
    """The listener of work nobody watches."""
