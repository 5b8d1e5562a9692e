"""Small plots of a series (the terminal's sparkline, the dashboard's SVG) are scaled to its noise."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kbench.history.series import DRAWN_MIDDLE, DRAWN_NOISE_SPAN, Point, Series
from kbench.report.history_text import SPARK, sparkline
from kbench.web.svg import sparkline_svg

START = datetime(2026, 11, 1, tzinfo=UTC)


def series_of(values: list[float] | np.ndarray, stdev: float = 0.0, n: int = 100) -> Series:
    s = Series(id="s", benchmark="b", params={}, metric="m", unit="ns", direction="lower", machine="vm",
               machine_fingerprint="vm|x|2|1", target="local")
    s.points = [Point(run_id=i, started_at=START + timedelta(hours=i), value=float(v), mean=float(v), stdev=stdev,
                      n=n, kernel=None, commit=None, label=None) for i, v in enumerate(values)]
    return s


def test_a_difference_far_below_the_noise_is_drawn_flat() -> None:
    values = [1.0] * 10 + [1.0 + 4e-9] * 10  # the 4·10⁻⁹ step, within-run noise 1 %
    s = series_of(values, stdev=0.01)
    line = sparkline(s.values(), span=s.drawn_range())
    assert len(set(line)) == 1, line
    assert len(set(sparkline(s.values()))) == 2  # unscaled, it is drawn at full height
    heights = {y for y in re.findall(r",([0-9.]+)", sparkline_svg(list(s.values()), span=s.drawn_range()))}
    assert len(heights) == 1


def test_a_step_of_many_noise_widths_uses_the_full_height() -> None:
    rng = np.random.default_rng(7)
    values = np.r_[100 + rng.standard_normal(20), 130 + rng.standard_normal(20)]
    s = series_of(values)
    assert s.drawn_range() == (values.min(), values.max())
    line = sparkline(s.values(), span=s.drawn_range())
    assert line[0] in SPARK[:2] and line[-1] in SPARK[-2:]


def test_the_noise_is_the_run_to_run_standard_deviation_and_ignores_one_step() -> None:
    rng = np.random.default_rng(3)
    values = np.r_[rng.normal(50, 2.0, 1000), rng.normal(80, 2.0, 1000)]
    assert series_of(values).noise() == pytest.approx(2.0, rel=0.1)
    # every successive difference 1: the median absolute difference is 1, sigma 1.4826 / sqrt(2)
    assert series_of([0, 1] * 20).noise() == pytest.approx(1.4826 / math.sqrt(2))
    assert series_of([5.0] * 4, stdev=3.0, n=9).noise() == pytest.approx(1.0)  # the runs' own standard error


def test_a_range_narrower_than_the_noise_is_widened_around_its_middle() -> None:
    s = series_of([10.0, 10.5, 10.0, 10.5], stdev=10.0, n=4)  # within-run standard error 5
    low, high = s.drawn_range()
    assert high - low == pytest.approx(DRAWN_NOISE_SPAN * 5.0)
    assert low + DRAWN_MIDDLE * (high - low) == pytest.approx(10.25)
    assert series_of([7.0] * 3).drawn_range() == pytest.approx((7.0 - 7e-6 * DRAWN_MIDDLE,
                                                                7.0 + 7e-6 * (1 - DRAWN_MIDDLE)))
