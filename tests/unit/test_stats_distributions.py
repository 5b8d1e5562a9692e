"""kbench.stats.distributions against scipy.special and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from kbench.stats.distributions import normal_cdf, normal_quantile, student_sf

FREEDOMS = [*range(1, 60), 75, 100, 250, 500, 1000, 0.5, 2.5, 7.3]
T_VALUES = np.concatenate([-np.logspace(-4, 3, 150), [0.0], np.logspace(-4, 3, 150)])


def _relative(got: float, expected: float) -> float:
    return abs(got - expected) / abs(expected)


def test_normal_cdf_is_scipys_ndtr() -> None:
    for x in np.linspace(-37.5, 9, 20001):
        assert _relative(normal_cdf(float(x)), float(special.ndtr(x))) < 1e-13, x
    assert normal_cdf(0.0) == 0.5
    assert normal_cdf(math.inf) == 1.0 and normal_cdf(-math.inf) == 0.0


def test_normal_quantile_is_scipys_ndtri() -> None:
    probabilities = [np.logspace(-300, -1, 1000), np.linspace(0.01, 0.99, 1000), 1 - np.logspace(-16, -1, 200)]
    for p in np.concatenate(probabilities):
        expected = float(special.ndtri(p))
        assert abs(normal_quantile(float(p)) - expected) <= 1e-15 * max(abs(expected), 1.0), p
    assert normal_quantile(0.5) == 0.0
    assert normal_quantile(0.0) == -math.inf and normal_quantile(1.0) == math.inf
    assert math.isnan(normal_quantile(1.5)) and math.isnan(normal_quantile(math.nan))
    for p in (1e-12, 0.025, 0.3, 0.975):  # each the other's inverse
        assert normal_cdf(normal_quantile(p)) == pytest.approx(p, rel=1e-14)


@pytest.mark.parametrize("freedom", FREEDOMS)
def test_student_sf_is_scipys_stdtr(freedom: float) -> None:
    for t in T_VALUES:
        expected = float(special.stdtr(freedom, -t))
        if expected < 1e-300:  # scipy's underflows to 0 before ours
            continue
        assert _relative(student_sf(float(t), freedom), expected) < 1e-11, (freedom, t)


def test_student_sf_for_many_degrees_of_freedom_nears_the_normal() -> None:
    for freedom in (5000, 100_000):
        for t in (0.5, 1.96, 4.0):
            assert _relative(student_sf(t, freedom), float(special.stdtr(freedom, -t))) < 1e-9
    assert student_sf(1.96, 1e7) == pytest.approx(normal_cdf(-1.96), rel=1e-6)


def test_student_sf_matches_the_closed_forms_of_one_and_two_degrees_of_freedom() -> None:
    """ν = 1 (Cauchy): atan(1/t)/π; ν = 2: 1/(s(s + t)) with s = √(2 + t²), for t > 0 (each
    written without a difference of near-equal terms), also where scipy 1.17's stdtr loses digits."""
    for t in np.logspace(-12, 6, 400):
        root = math.sqrt(2 + t * t)
        for freedom, tail in ((1, math.atan(1 / t) / math.pi), (2, 1 / (root * (root + t)))):
            assert _relative(student_sf(float(t), freedom), tail) < 5e-14, (freedom, t)
            assert _relative(student_sf(float(-t), freedom), 1 - tail) < 5e-14, (freedom, -t)


def test_student_sf_edges() -> None:
    assert student_sf(0.0, 3) == 0.5
    assert student_sf(math.inf, 3) == 0.0 and student_sf(-math.inf, 3) == 1.0
    assert math.isnan(student_sf(math.nan, 3))
    assert 0 < student_sf(40.0, 200) < 1e-80  # deep in the tail, not rounded to 0
    with pytest.raises(ValueError, match="degrees of freedom"):
        student_sf(1.0, 0)
