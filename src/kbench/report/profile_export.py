"""A stored run's profile and counters in the formats other tools read.

- ``folded``: the stored folded stacks as they are, ``comm;root;...;leaf WEIGHT`` per line
  (flamegraph.pl, inferno, speedscope and ``perf script`` pipelines read it);
- ``speedscope``: a speedscope JSON file (``kbench.profile.speedscope``);
- ``pprof``: a gzip-compressed profile.proto (``kbench.profile.pprof``; ``go tool pprof``);
- ``perf-stat``: the run's counters as ``perf stat -x,`` prints them
  (``kbench.profile.perf_stat.perf_stat_csv``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kbench.profile.counters import parse_counters
from kbench.profile.folded import FoldedProfile

PROFILE_FORMATS = ("folded", "speedscope", "pprof")
COUNTER_FORMATS = ("perf-stat",)
FORMATS = PROFILE_FORMATS + COUNTER_FORMATS


class NothingToExport(LookupError):
    """The run has no profile (or no counters) to export."""


def describe(run_id: int, benchmark: str, profile: FoldedProfile) -> list[str]:
    """What the profile is, in lines: the run, the event and its rate, the samples, the window."""
    rate = f" at {profile.frequency_hz} Hz" if profile.frequency_hz else ""
    lines = [f"kbench run {run_id}: {benchmark}", f"{profile.event}{rate}, {profile.samples} samples"]
    window = profile.details.get("window")
    if window:
        lines.append(f"window: {window}")
    return lines


def export_profile(fmt: str, run_id: int, benchmark: str, profile: FoldedProfile | None,
                   started_at: datetime | None = None) -> bytes:
    """Run ``run_id``'s profile in ``fmt`` (one of PROFILE_FORMATS); NothingToExport without one."""
    if profile is None:
        raise NothingToExport(f"run {run_id} has no profile: measure one with `kbench run ... --profile`")
    if fmt == "folded":
        return profile.folded_text().encode()
    if fmt == "speedscope":
        from kbench.profile.speedscope import to_speedscope

        return to_speedscope(profile, f"run {run_id}: {benchmark} ({profile.event})")
    if fmt == "pprof":
        from kbench.profile.pprof import to_pprof

        nanos = int(started_at.timestamp() * 1e9) if started_at is not None else 0
        return to_pprof(profile, comments=describe(run_id, benchmark, profile), time_nanos=nanos)
    raise ValueError(f"unknown profile format {fmt!r}; choose one of {', '.join(PROFILE_FORMATS)}")


def export_counters(fmt: str, run_id: int, benchmark: str, header: Mapping[str, Any]) -> bytes:
    """Run ``run_id``'s counters (from its header) in ``fmt`` (``perf-stat``); NothingToExport
    when it counted none."""
    from kbench.profile.perf_stat import perf_stat_csv

    if fmt not in COUNTER_FORMATS:
        raise ValueError(f"unknown counter format {fmt!r}; choose one of {', '.join(COUNTER_FORMATS)}")
    counters = parse_counters(header)
    if counters is None:
        raise NothingToExport(f"run {run_id} has no counters: measure them with `kbench run ... --counters`")
    ops = (f", {counters.operations:.0f} {counters.operation}s (the counts cover them all)"
           if counters.operations else "")
    comment = f"kbench run {run_id}: {benchmark}, {counters.source}, {counters.scope}{ops}"
    return perf_stat_csv(counters, [comment]).encode()
