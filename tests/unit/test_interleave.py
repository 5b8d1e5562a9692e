"""The one interleaver: orders of rounds and mirrored blocks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kbench.engine.interleave import interleaved_rounds, mirrored_order, round_order, schedule


def test_mirrored_blocks_are_abba_or_baab_about_equally_often() -> None:
    rng = np.random.default_rng(1)
    orders = Counter(tuple(mirrored_order(rng, 2)) for _ in range(4000))
    assert set(orders) == {(0, 1, 1, 0), (1, 0, 0, 1)}
    assert abs(orders[(0, 1, 1, 0)] - 2000) < 4 * 32  # binomial sd ~ 32


def test_every_side_sits_symmetrically_in_a_mirrored_block() -> None:
    rng = np.random.default_rng(2)
    for k in (2, 3, 5):
        order = mirrored_order(rng, k)
        positions = {side: [i for i, s in enumerate(order) if s == side] for side in range(k)}
        assert all(sum(p) == 2 * k - 1 for p in positions.values())  # same mean position for every side


def test_rounds_keep_the_order_bisect_always_had() -> None:
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    measured: list[str] = []
    result = interleaved_rounds(a, ["x", "y", "z"], 4, lambda c: measured.append(c) or [1.0])
    expected = [["x", "y", "z"][int(i)] for _ in range(4) for i in b.permutation(3)]
    assert measured == expected and result == {"x": [1.0] * 4, "y": [1.0] * 4, "z": [1.0] * 4}
    assert sorted(round_order(np.random.default_rng(4), 4)) == [0, 1, 2, 3]
    assert len(list(schedule(np.random.default_rng(5), 3, 2, mirrored=True))) == 12
    with pytest.raises(ValueError):
        list(schedule(np.random.default_rng(5), 0, 2))
