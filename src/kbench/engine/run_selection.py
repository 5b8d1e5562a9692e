"""Which stored runs a selector names: ``1,2,3``, ``tag:NAME`` or ``kernel:RELEASE``.

``kbench compare --runs`` and ``kbench export --runs`` give one selector per side;
``parse_selector`` checks its text (the command line reports a ValueError as a bad
option), ``select_runs`` finds the runs in the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kbench.store.errors import RunNotFound

if TYPE_CHECKING:
    from kbench.store.db import Store

SelectorKind = Literal["ids", "tag", "kernel"]


class NoMatchingRuns(RunNotFound):
    """A well-formed selector that names no stored run (exit 4, as a missing run id)."""


@dataclass(frozen=True)
class RunSelector:
    """Runs by id (``ids``, in the order given), or the completed runs with a tag or on a kernel release."""

    text: str
    kind: SelectorKind
    ids: tuple[int, ...] = ()
    value: str = ""


def parse_selector(text: str) -> RunSelector:
    """``1,2,3`` → ids; ``tag:NAME`` and ``kernel:RELEASE`` → that kind and value (ValueError otherwise)."""
    kind, _, value = text.partition(":")
    if kind == "tag" and value:
        return RunSelector(text, "tag", value=value)
    if kind == "kernel" and value:
        return RunSelector(text, "kernel", value=value)
    try:
        ids = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a run selector (ids like 1,2,3, tag:NAME or kernel:RELEASE)") from None
    if not ids:
        raise ValueError("an empty list of runs")
    return RunSelector(text, "ids", ids=ids)


def select_runs(store: Store, selector: RunSelector, benchmark: str | None = None) -> list[int]:
    """Run ids of ``selector``: the ids as given, or the matching completed runs of ``benchmark``
    (any benchmark when None) oldest first; NoMatchingRuns when a tag or kernel matches none."""
    if selector.kind == "ids":
        return list(selector.ids)
    from kbench.catalog.benchmarks import lookup  # parse_selector alone stays light, for the command line

    bench = lookup(benchmark).name if benchmark else None
    rows = store.list_runs(
        benchmark=bench, status="complete", limit=None,
        tag=selector.value if selector.kind == "tag" else None,
        kernel_release=selector.value if selector.kind == "kernel" else None,
    )
    if not rows:
        raise NoMatchingRuns(f"no completed runs match {selector.text!r}" + (f" for {bench}" if bench else ""))
    return sorted(int(row["id"]) for row in rows)
