"""The one interleaver: in which order the sides of a comparison (or the commits of a bisection) run.

A machine drifts and switches speed; what runs next to what decides whether that
lands in a verdict. Every design in kbench draws its order here, from a seeded
generator, so runs are reproducible and the order is part of the record.

- ``round_order(rng, k)``: one round, each of k sides once in a random order (a random
  permutation). Rounds of trials (kernel boots, bisect steps) use it.
- ``mirrored_order(rng, k)``: one block, a random permutation followed by its reverse
  (ABBA or BAAB for two sides). Each side's two slots sit symmetrically about the
  block's centre, so a drift that is linear over the block adds the same to every side;
  and swapping two sides is another equally likely order, which turns a block's
  log-ratio d into -d (what makes the paired test of ``kbench.compare.paired`` hold by
  design).
- ``schedule(rng, k, rounds, mirrored)``: the side indices of ``rounds`` rounds or
  blocks, in measuring order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np

Item = TypeVar("Item")
Result = TypeVar("Result")


def round_order(rng: np.random.Generator, sides: int) -> list[int]:
    """Each of ``sides`` indices once, in a random order."""
    return [int(i) for i in rng.permutation(sides)]


def mirrored_order(rng: np.random.Generator, sides: int) -> list[int]:
    """A random permutation followed by its reverse: ABBA / BAAB for two sides."""
    first = round_order(rng, sides)
    return first + first[::-1]


def schedule(rng: np.random.Generator, sides: int, rounds: int, *, mirrored: bool = False) -> Iterator[int]:
    """Side indices of ``rounds`` rounds (or mirrored blocks), in the order they run."""
    if sides < 1 or rounds < 0:
        raise ValueError(f"need at least one side and no negative rounds, got {sides} and {rounds}")
    for _ in range(rounds):
        yield from (mirrored_order(rng, sides) if mirrored else round_order(rng, sides))


def interleaved_rounds(
    rng: np.random.Generator, items: Sequence[Item], rounds: int, measure: Callable[[Item], list[Result]],
    *, mirrored: bool = False,
) -> dict[Item, list[Result]]:
    """``measure`` every item once per round (twice per mirrored block), in ``schedule``'s order;
    the results of each item, in order."""
    found: dict[Item, list[Result]] = {item: [] for item in items}
    for index in schedule(rng, len(items), rounds, mirrored=mirrored):
        item = items[index]
        found[item] += measure(item)
    return found
