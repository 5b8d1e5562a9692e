"""Profile delta, 0-Day style: each symbol's share of the samples on two sides, self and with children.

A row is ``{symbol, kind, base_pct, new_pct, change_pct, noise_pp, where}``:

- base_pct / new_pct: the symbol's share of its side's sampled weight in percent, *self*
  (it was the leaf: the CPU was in it) or *children* (it was on the stack: in it or in
  what it called); ``kbench.profile.folded`` defines both;
- change_pct: new_pct - base_pct, in percentage points (0-Day's perf-profile rows show
  these shares side by side);
- noise_pp: the half-width of a 95% interval of that difference from sampling alone,
  1.96 sqrt(p1 (1 - p1) / n1 + p2 (1 - p2) / n2) x 100 with n the sides' sample counts
  (binomial, samples taken as independent: a lower bound of the real noise); a change
  within it is ``within_noise``;
- where: ``kernel`` or ``user``.

Rows are sorted by growth (largest change_pct first; ties: self before children, then
by name). Symbols below ``MIN_SHARE_PCT`` on both sides are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from kbench.profile.folded import FoldedProfile, is_kernel, plain_symbol

EMULATED_NOTE = ("profiled in a qemu TCG guest: the shares are of emulated time, where kernel code (page walks, "
                 "interrupts, device emulation) weighs differently than on hardware; its points compare the two "
                 "sides with each other, not with a profile taken on a real CPU")
"""Why the scale of a profile delta taken under TCG is not a real CPU's (its sides still compare)."""
EMULATED_ACCEL = "tcg"

MIN_SHARE_PCT = 0.5
"""A symbol under this share on both sides is not a row (sampling noise, and a long tail)."""
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class DeltaRow:
    symbol: str
    kind: str  # "self" or "children"
    base_pct: float
    new_pct: float
    change_pct: float
    noise_pp: float
    where: str

    @property
    def within_noise(self) -> bool:
        return abs(self.change_pct) <= self.noise_pp

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "within_noise": self.within_noise}


@dataclass(frozen=True)
class ProfileDelta:
    """The delta of ``new`` against ``base`` (labels), with the profiles' own facts."""

    base_label: str
    new_label: str
    event: str
    base_samples: int
    new_samples: int
    rows: tuple[DeltaRow, ...]

    def growth(self, count: int = 10) -> list[DeltaRow]:
        """The rows that grew most (change > 0), largest first."""
        return [row for row in self.rows if row.change_pct > 0][:count]

    def shrink(self, count: int = 5) -> list[DeltaRow]:
        """The rows that shrank most, largest drop first."""
        return sorted((row for row in self.rows if row.change_pct < 0), key=lambda r: r.change_pct)[:count]

    def top_growth(self) -> DeltaRow | None:
        grown = self.growth(1)
        return grown[0] if grown else None

    def to_dict(self) -> dict[str, Any]:
        return {"base_label": self.base_label, "new_label": self.new_label, "event": self.event,
                "base_samples": self.base_samples, "new_samples": self.new_samples,
                "rows": [row.to_dict() for row in self.rows]}


def profile_delta(base: FoldedProfile, new: FoldedProfile, *, base_label: str = "base", new_label: str = "new",
                  min_share_pct: float = MIN_SHARE_PCT) -> ProfileDelta:
    """The rows of the module docstring for ``new`` against ``base``."""
    rows: list[DeltaRow] = []
    for kind, before, after in (("self", base.self_shares(), new.self_shares()),
                                ("children", base.children_shares(), new.children_shares())):
        for frame in set(before) | set(after):
            p1, p2 = before.get(frame, 0.0), after.get(frame, 0.0)
            if 100 * max(p1, p2) < min_share_pct:
                continue
            rows.append(DeltaRow(
                symbol=plain_symbol(frame), kind=kind, base_pct=100 * p1, new_pct=100 * p2,
                change_pct=100 * (p2 - p1), noise_pp=_noise_pp(p1, base.samples, p2, new.samples),
                where="kernel" if is_kernel(frame) else "user",
            ))
    rows.sort(key=lambda r: (-r.change_pct, r.kind != "self", r.symbol))
    return ProfileDelta(base_label, new_label, new.event if new.event == base.event else f"{base.event}|{new.event}",
                        base.samples, new.samples, tuple(rows))


def _noise_pp(p1: float, n1: int, p2: float, n2: int) -> float:
    if n1 <= 0 or n2 <= 0:
        return math.inf
    return 100 * Z_95 * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)


def delta_from_dict(data: Mapping[str, Any]) -> ProfileDelta:
    """A delta from its ``to_dict`` form (a stored report)."""
    return ProfileDelta(
        str(data["base_label"]), str(data["new_label"]), str(data["event"]), int(data["base_samples"]),
        int(data["new_samples"]),
        tuple(DeltaRow(str(r["symbol"]), str(r["kind"]), float(r["base_pct"]), float(r["new_pct"]),
                       float(r["change_pct"]), float(r["noise_pp"]), str(r["where"])) for r in data["rows"]),
    )


def delta_lines(delta: ProfileDelta, *, growth: int = 10, shrink: int = 5) -> list[str]:
    """0-Day style text rows: base %, new %, change in points, the symbol (self / children)."""
    lines = [f"profile delta ({delta.event}, {delta.base_samples} vs {delta.new_samples} samples; "
             f"shares in %, change in percentage points; ~ within sampling noise)",
             f"{delta.base_label[:14]:>14} {delta.new_label[:14]:>14} {'change':>9}  symbol"]
    for row in [*delta.growth(growth), *delta.shrink(shrink)]:
        mark = "~" if row.within_noise else " "
        tag = "perf-profile.self" if row.kind == "self" else "perf-profile.children"
        kernel = " [k]" if row.where == "kernel" else ""
        lines.append(f"{row.base_pct:14.2f} {row.new_pct:14.2f} {row.change_pct:+8.2f}{mark}  "
                     f"{tag}.{row.symbol}{kernel}")
    return lines
