"""Minimum detectable effect from A/A data, and the method-sensitivity matrix."""

import math

import numpy as np
import pytest
from scipy import stats

from kbench.compare.detectable import WARNING_AA_DIFFERS, WARNING_ALPHA_UNREACHABLE, minimum_detectable_effect
from kbench.compare.ranks import p_values
from kbench.compare.sensitivity import sensitivity_matrix


def normal_aa(seed, size=400, noise=0.02):
    rng = np.random.default_rng(seed)
    return 1000 * np.exp(rng.normal(0, noise, size)), 1000 * np.exp(rng.normal(0, noise, size))


def test_normal_method_is_the_closed_form():
    aa = normal_aa(1)
    mde = minimum_detectable_effect(aa, 10, power=0.8, alpha=0.05, method="normal")
    # delta = (1.959964 + 0.841621) * sigma * sqrt(2 / 10) / sqrt(3 / pi)
    delta = (1.959964 + 0.841621) * mde.sigma_log * math.sqrt(0.2) / math.sqrt(3 / math.pi)
    assert mde.effect_pct == pytest.approx(100 * math.expm1(delta), rel=1e-5)
    assert mde.sigma_log == pytest.approx(0.02, rel=0.1)
    assert mde.warnings == ()


@pytest.mark.parametrize(("n", "power"), [(10, 0.8), (20, 0.95), (40, 0.8)])
def test_resampling_agrees_with_the_closed_form_for_normal_data(n, power):
    aa = normal_aa(2)
    resampled = minimum_detectable_effect(aa, n, power=power)
    closed = minimum_detectable_effect(aa, n, power=power, method="normal")
    # the exact small-n test is a little less powerful than the asymptotic formula says
    assert closed.effect_pct * 0.93 <= resampled.effect_pct <= closed.effect_pct * 1.12


def test_a_shift_of_the_mde_is_detected_with_the_stated_power():
    aa = normal_aa(3, size=1000)
    n, target = 12, 0.8
    mde = minimum_detectable_effect(aa, n, power=target)
    rng = np.random.default_rng(4)
    experiments = 4000
    base = rng.normal(0, 0.02, (experiments, n))
    new = rng.normal(np.log1p(mde.effect_pct / 100), 0.02, (experiments, n))
    u = (new[:, :, None] > base[:, None, :]).sum(axis=(1, 2))
    power = np.mean((p_values(u, n, n) <= 0.05) & (u > n * n / 2))
    assert abs(power - target) <= 2.576 * math.sqrt(target * (1 - target) / experiments) + 0.02


def test_mde_warnings():
    aa = normal_aa(5, size=30)
    assert minimum_detectable_effect(aa, 3).effect_pct == math.inf
    assert minimum_detectable_effect(aa, 3).warnings[0].startswith(WARNING_ALPHA_UNREACHABLE)
    offset = (aa[0], aa[1] * 1.03)  # runs of "the same thing" that disagree by 3%
    assert any(w.startswith(WARNING_AA_DIFFERS) for w in minimum_detectable_effect(offset, 10).warnings)
    with pytest.raises(ValueError):
        minimum_detectable_effect(([1.0, 2.0], [1.0, 2.0, 3.0]), 10)


def test_sensitivity_matrix_pairs_and_split_half_diagonal():
    rng = np.random.default_rng(6)
    configs = {
        "6.1 run 1": 1000 * np.exp(rng.normal(0, 0.01, 12)),
        "6.1 run 2": 1000 * np.exp(rng.normal(0, 0.01, 12)),
        "6.12": 1050 * np.exp(rng.normal(0, 0.01, 12)),
        "broken": [1.0, float("nan")],
    }
    matrix = sensitivity_matrix(configs)
    assert matrix.names == tuple(configs)
    assert np.allclose(matrix.mwu_p[:3, :3], matrix.mwu_p[:3, :3].T)
    a, b, c = (np.asarray(configs[k]) for k in ("6.1 run 1", "6.1 run 2", "6.12"))
    assert matrix.mwu_p[0, 2] == pytest.approx(stats.mannwhitneyu(c, a, method="exact").pvalue)
    assert matrix.ks_p[1, 2] == pytest.approx(stats.ks_2samp(b, c).pvalue)
    assert matrix.mwu_p[0, 0] == pytest.approx(stats.mannwhitneyu(a[1::2], a[0::2], method="exact").pvalue)
    assert matrix.mwu_p[0, 1] > 0.05 and matrix.mwu_p[0, 2] < 0.001
    assert np.isnan(matrix.ks_p[3]).all() and np.isnan(matrix.mwu_p[:, 3]).all()
    assert len(matrix.pairs()) == 10
    assert matrix.to_dict()["names"] == list(configs)
