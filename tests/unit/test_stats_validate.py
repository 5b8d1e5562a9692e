"""as_samples: the input contract of kbench.stats."""

import numpy as np
import pytest

from kbench.stats import as_samples, summarize


def test_accepts_lists_of_ints_and_returns_float64():
    result = as_samples([3, 1, 2])
    assert result.dtype == np.float64
    assert result.tolist() == [3.0, 1.0, 2.0]


def test_float64_array_is_returned_without_copy():
    values = np.array([1.0, 2.0])
    assert as_samples(values) is values


def test_zero_is_a_valid_sample():
    assert as_samples([0.0, 0.0]).tolist() == [0.0, 0.0]


def test_rejects_empty():
    with pytest.raises(ValueError, match=r"^samples are empty"):
        as_samples([])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, 2.0, 3.0, float("nan"), 5.0], r"samples must be finite: values\[3\] is nan$"),
        ([1.0, float("inf")], r"samples must be finite: values\[1\] is inf$"),
        ([float("-inf"), 1.0], r"samples must be finite: values\[0\] is -inf$"),
        ([1.0, -2.5, 3.0], r"samples must be non-negative: values\[1\] is -2.5$"),
    ],
)
def test_rejects_invalid_values_naming_index_and_value(values, message):
    with pytest.raises(ValueError, match=message):
        as_samples(values)


def test_reports_the_first_invalid_value_whatever_its_kind():
    with pytest.raises(ValueError, match=r"values\[1\] is -1.0"):
        as_samples([1.0, -1.0, float("nan")])


def test_finds_the_culprit_in_a_large_array():
    values = np.ones(1_000_000)
    values[765_432] = np.nan
    with pytest.raises(ValueError, match=r"values\[765432\] is nan"):
        as_samples(values)


def test_rejects_two_dimensional_input():
    with pytest.raises(ValueError, match=r"one-dimensional.*\(2, 2\)"):
        as_samples([[1.0, 2.0], [3.0, 4.0]])


def test_rejects_scalars():
    with pytest.raises(ValueError, match="one-dimensional"):
        as_samples(3.0)


def test_rejects_non_numbers():
    with pytest.raises(ValueError, match="samples must be numbers"):
        as_samples(["fast", "slow"])


def test_public_functions_apply_the_contract():
    with pytest.raises(ValueError, match=r"values\[0\] is nan"):
        summarize([float("nan")])
