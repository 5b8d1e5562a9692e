"""The profile part of a comparison report: deltas against the base and flame graphs.

Each new side's profile is compared with the base's (``kbench.profile.delta``); each
side gets its own flame graph and each new side a differential one, coloured by the
change of every frame's self share against the base and titled with its largest growth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from kbench.profile.delta import EMULATED_ACCEL, EMULATED_NOTE, ProfileDelta, profile_delta
from kbench.profile.flame import flame_svg
from kbench.profile.folded import FoldedProfile
from kbench.report.comparison.model import ComparisonReport, ProfileComparison

STORED_PROFILES = "the profiles stored with the sides' runs (each recorded in a run of its own)"
PROFILED_APART = ("each side profiled in a run of its own after the timed blocks (perf record); profiling "
                  "never touched the judged numbers")


def growth_note(delta: ProfileDelta) -> str:
    """``largest growth: mix_b +6.42 points self`` (or that nothing grew)."""
    top = delta.top_growth()
    if top is None:
        return "no symbol's share grew"
    noise = " (within sampling noise)" if top.within_noise else ""
    return f"largest growth: {top.symbol} {top.change_pct:+.2f} points {top.kind}{noise}"


def profile_comparison(profiles: Mapping[str, FoldedProfile], base_label: str, new_labels: Sequence[str], *,
                       runs: Mapping[str, int] | None = None, note: str = PROFILED_APART) -> ProfileComparison | None:
    """The report's profile part for the sides that have a profile (None when the base has none)."""
    base = profiles.get(base_label)
    if base is None:
        return None
    deltas, diffs, flames = [], {}, {}
    for label, profile in profiles.items():
        flames[label] = flame_svg(profile, title=f"{label}", subtitle=_subtitle(profile))
    for label in new_labels:
        new = profiles.get(label)
        if new is None:
            continue
        delta = profile_delta(base, new, base_label=base_label, new_label=label)
        deltas.append(delta)
        diffs[label] = flame_svg(new, base=base, title=f"{label} against {base_label}",
                                 subtitle=f"{_subtitle(new)}; red: self share grew, blue: shrank",
                                 note=growth_note(delta))
    if runs is None:
        runs = {label: int(p.details["run_id"]) for label, p in profiles.items() if p.details.get("run_id")}
    if any(p.details.get("accel") == EMULATED_ACCEL for p in profiles.values()):
        note = f"{note}; {EMULATED_NOTE}"
    return ProfileComparison(tuple(deltas), flames, diffs, dict(runs), note)


def _subtitle(profile: FoldedProfile) -> str:
    return f"{profile.event} at {profile.frequency_hz} Hz, {profile.samples:,} samples"


def write_flame_graphs(report: ComparisonReport, directory: Path) -> list[Path]:
    """Every flame graph of the report into ``directory``: ``flame-<label>.svg`` per side and
    ``flame-diff-<new label>.svg`` per new side (none without profiles)."""
    profile = report.profile
    if profile is None:
        return []
    written = []
    for prefix, graphs in (("flame", profile.flames), ("flame-diff", profile.diff_flames)):
        for label, svg in graphs.items():
            path = directory / f"{prefix}-{_file_slug(label)}.svg"
            path.write_text(svg)
            written.append(path)
    return written


def _file_slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_.")[:80] or "side"


def with_profiles(report: ComparisonReport, profiles: Mapping[str, FoldedProfile], problems: Sequence[str] = (), *,
                  note: str = PROFILED_APART, every_side: bool = False) -> ComparisonReport:
    """``report`` with its sides' profiles (deltas and flame graphs) and why a side has none
    (``parameters["profile"]``). ``every_side``: leave the report as it is unless every side
    has a profile (stored runs, whose profiles were not asked for)."""
    if every_side and set(profiles) != {report.base_label, *report.new_labels}:
        return report
    parameters = dict(report.parameters)
    if problems:
        parameters["profile"] = "; ".join(problems)
    return replace(report, parameters=parameters, profile=profile_comparison(
        profiles, report.base_label, report.new_labels, note=note))
