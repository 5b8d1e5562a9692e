"""Many metrics at once: adjust the p-values of a family of verdicts and decide again.

Methods (k = number of p-values in the family, p_(1) <= ... <= p_(k) sorted):

- "holm" (Holm 1979, controls the family-wise error rate, any dependence):
  adjusted p_(i) = max over j <= i of min(1, (k - j + 1) * p_(j)).
- "bh" (Benjamini-Hochberg 1995, controls the false discovery rate for
  independent or positively dependent tests):
  adjusted p_(i) = min over j >= i of min(1, k * p_(j) / j)
  (equal to ``scipy.stats.false_discovery_control(p, method="bh")``).

The family is the verdicts whose decision table was applied (``Verdict.tested``);
verdicts that failed a check (empty side, too few trials, ...) keep their
"inconclusive" and are not counted in k. Each family member gets its adjusted
p-value and is re-decided by the same table at the same alpha, margin and
interval; an adjusted p is never smaller, so adjustment can only turn a
significant verdict into "no change" / "inconclusive", never the reverse.
(The intervals are not widened: they remain per-metric 1 - alpha intervals.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.verdict import Verdict, decide

HOLM: Final = "holm"
BENJAMINI_HOCHBERG: Final = "bh"
Method = Literal["holm", "bh"]


def _as_p_values(p_values: ArrayLike) -> NDArray[np.float64]:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p-values must be one-dimensional, got shape {p.shape}")
    if np.any(~((p >= 0) & (p <= 1))):
        raise ValueError("p-values must lie in [0, 1] (no NaN)")
    return p


def holm(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm step-down adjusted p-values, in input order (module docstring)."""
    p = _as_p_values(p_values)
    k = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (k - np.arange(k)) * p[order])
    adjusted = np.empty(k)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def benjamini_hochberg(p_values: ArrayLike) -> NDArray[np.float64]:
    """Benjamini-Hochberg step-up adjusted p-values, in input order (module docstring)."""
    p = _as_p_values(p_values)
    k = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, k * p[order] / np.arange(1, k + 1))
    adjusted = np.empty(k)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return adjusted


def adjust(verdicts: Sequence[Verdict], method: Method = HOLM) -> tuple[Verdict, ...]:
    """The verdicts, in the same order, with family-adjusted p-values and re-decided verdicts.

    ``Verdict.adjustment`` names the method; ``p_value_unadjusted`` keeps the raw p.
    Raises ``ValueError`` for an unknown method or verdicts already adjusted.
    """
    if method not in (HOLM, BENJAMINI_HOCHBERG):
        raise ValueError(f"method must be {HOLM!r} (family-wise) or {BENJAMINI_HOCHBERG!r} (FDR), got {method!r}")
    if any(v.adjustment is not None for v in verdicts):
        raise ValueError("verdicts were already adjusted; adjust the unadjusted verdicts once, as one family")
    family = [i for i, v in enumerate(verdicts) if v.tested]
    raw = np.array([verdicts[i].p_value_unadjusted for i in family], dtype=np.float64)
    adjusted = holm(raw) if method == HOLM else benjamini_hochberg(raw)
    result = [dataclasses.replace(v, adjustment=method) for v in verdicts]
    for index, p in zip(family, adjusted, strict=True):
        v = verdicts[index]
        verdict, reason = decide(
            direction=v.direction, p_value=float(p), ci_pct=v.ci_pct, alpha=v.alpha, margin_pct=v.margin_pct
        )
        result[index] = dataclasses.replace(
            v,
            p_value=float(p),
            verdict=verdict,
            reason=f"{reason} ({method}-adjusted over {len(family)} metrics)",
            adjustment=method,
        )
    return tuple(result)
