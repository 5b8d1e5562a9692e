"""``--fail-on regression[,improvement]``: a CI gate's exit status from the verdicts a command found.

``compare``, ``report regressions`` and ``history`` (and any command that reaches
verdicts) take the option; after the command has printed or written its whole output,
``exit_if_found`` ends it with ``exit_codes.VERDICT_FOUND`` when a verdict it names was
found, and leaves the exit status alone (0) otherwise. Inconclusive verdicts and "no
change" never trip the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from kbench import exit_codes
from kbench.cli.main import err_console
from kbench.contract.vocabulary import IMPROVEMENT, REGRESSION

SUSPECTED = "suspected"
GATED_VERDICTS = (REGRESSION, IMPROVEMENT, SUSPECTED)
F = TypeVar("F", bound=Callable[..., Any])


class FailOn(click.ParamType):  # type: ignore[type-arg]
    """Verdict words among ``words``, comma-separated."""

    def __init__(self, words: tuple[str, ...]) -> None:
        self.words = words
        self.name = "[" + ",".join(words) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> frozenset[str]:
        if isinstance(value, frozenset):
            return value
        words = [word.strip() for word in str(value).split(",")]
        unknown = [word for word in words if word not in self.words]
        if unknown or not words:
            self.fail(f"{value!r}: give one or more of {', '.join(self.words)}, comma-separated", param, ctx)
        return frozenset(words)


def fail_on_option(func: F) -> F:
    """The ``--fail-on`` option of a comparison, passed to the command as ``fail_on`` (an empty set
    when not given)."""
    return click.option(
        "--fail-on", "fail_on", type=FailOn((REGRESSION, IMPROVEMENT)), default=None, callback=_empty_when_absent,
        help=f"Exit {exit_codes.VERDICT_FOUND} (after the whole output) when a verdict named here is found: "
        "regression, improvement or regression,improvement; 0 otherwise. For CI gates.",
    )(func)


def findings_fail_on_option(func: F) -> F:
    """The ``--fail-on`` option of the views over stored history (``report regressions``, ``history``)."""
    return click.option(
        "--fail-on", "fail_on", type=FailOn(GATED_VERDICTS), default=None, callback=_empty_when_absent,
        help=f"Exit {exit_codes.VERDICT_FOUND} (after the whole output) when one is found: regression (an open "
        "regression a watch confirmed; fixed and reverted ones pass), suspected (a change point of the stored "
        "runs no confirmation covers, beyond its series' noise), improvement (a suspected improvement); "
        "comma-separated. 0 otherwise. For CI gates.",
    )(func)


def _empty_when_absent(ctx: click.Context, param: click.Parameter, value: Any) -> frozenset[str]:
    return value if isinstance(value, frozenset) else frozenset()


def exit_if_found(fail_on: frozenset[str], found: Iterable[tuple[str, str]]) -> None:
    """Exit ``VERDICT_FOUND`` when one of ``found`` — (verdict, what it is about) pairs — has
    a verdict in ``fail_on``, naming them on stderr; return otherwise."""
    hits = [(verdict, what) for verdict, what in found if verdict in fail_on]
    if not hits:
        return
    counts = ", ".join(
        f"{n} {verdict}{'s' if n != 1 else ''}"
        for verdict in GATED_VERDICTS if (n := sum(1 for v, _ in hits if v == verdict))
    )
    names = ", ".join(dict.fromkeys(what for _, what in hits))
    err_console.print(f"kbench: --fail-on {','.join(sorted(fail_on))}: found {counts} ({names})",
                      highlight=False, markup=False)
    raise SystemExit(exit_codes.VERDICT_FOUND)
