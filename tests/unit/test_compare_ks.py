"""The Kolmogorov-Smirnov p-value of every verdict (kbench.compare.ks), bit for bit scipy.stats.ks_2samp's."""

from __future__ import annotations

import subprocess
import sys
import warnings
from math import comb

import numpy as np
import pytest
from scipy import stats

from kbench.compare import ks


def scipy_p(x: np.ndarray, y: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ks_2samp(x, y).pvalue)


def test_hand_checkable_cases() -> None:
    # Complete separation of n and n values: D = 1, P = 2 / C(2n, n).
    for n in (1, 2, 3, 5, 8):
        assert ks.ks_2samp_p(np.arange(n) + 0.0, np.arange(n) + 100.0) == pytest.approx(2 / comb(2 * n, n))
    assert ks.ks_2samp_p(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 1.0  # D = 0
    assert ks.ks_statistic(np.array([1.0, 2.0, 3.0]), np.array([2.5])) == pytest.approx(2 / 3)


@pytest.mark.parametrize("shape", ["normal", "shifted", "ties"])
def test_equal_to_scipy_for_every_size_up_to_30(shape: str) -> None:
    rng = np.random.default_rng(["normal", "shifted", "ties"].index(shape))
    for m in range(1, 31):
        for n in range(1, 31):
            x = rng.normal(size=m)
            y = rng.normal(0.8 if shape == "shifted" else 0.0, 1.0, size=n)
            if shape == "ties":
                x, y = np.round(x), np.round(y)
            assert ks.ks_2samp_p(x, y) == scipy_p(x, y), (m, n)


@pytest.mark.parametrize(("m", "n", "shift"), [(500, 500, 0.1), (300, 700, 0.0), (999, 1000, 0.05),
                                               (2000, 37, 0.5), (10_001, 40, 0.2)])
def test_equal_to_scipy_for_larger_samples(m: int, n: int, shift: float) -> None:
    """10,001 values go past the exact limit: scipy's asymptotic form, through scipy.stats."""
    rng = np.random.default_rng(m * n)
    x, y = rng.lognormal(0, 0.3, m), rng.lognormal(shift, 0.3, n)
    assert ks.ks_2samp_p(x, y) == scipy_p(x, y)


def test_without_scipys_compiled_method_scipy_stats_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ks, "_band_method", lambda: None)
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=12), rng.normal(size=17)
    assert ks.ks_2samp_p(x, y) == scipy_p(x, y)


def test_a_verdicts_ks_p_imports_no_scipy_stats() -> None:
    code = ("import sys, numpy as np\nfrom kbench.compare.judge import judge\n"
            "rng = np.random.default_rng(1)\n"
            "v = judge(rng.lognormal(0, .1, 9), rng.lognormal(0, .1, 12), direction='lower')\n"
            "assert 0 < v.ks_p_value <= 1\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['scipy.stats._stats_pythran']"  # the compiled function only, not the package
