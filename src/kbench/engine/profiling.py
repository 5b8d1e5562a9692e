"""Profiles stored with runs: a profile pass after the measured run(s), its folded stacks kept beside them.

A profile is never taken inside a measured run: sampling costs time (a timer interrupt
per sample, a stack walk) and would land in the numbers. ``profile_run`` runs the
benchmark once more, as its run did (``kbench.kinds.registry.profile``), and stores what
perf sampled with that run (``Store.save_profile``); ``stored_profile`` reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.registry import profile as profile_on
from kbench.profile.folded import FoldedProfile, profile_from_row
from kbench.profile.perf_record import DEFAULT_SECONDS
from kbench.store.db import Store
from kbench.targets.base import Target, TargetError

TargetSource = Target | Callable[[str | None], AbstractContextManager[Target]]


def profile_run(store: Store, run_id: int, target: Target, benchmark: Benchmark, request: RunRequest,
                seconds: float = DEFAULT_SECONDS) -> FoldedProfile:
    """Profile ``benchmark`` as ``request`` runs it on ``target`` and store it with run ``run_id``
    (TargetError when it cannot be profiled)."""
    profile = profile_on(target, benchmark, request, seconds)
    profile = replace(profile, details={**profile.details, "run_id": run_id})
    store.save_profile(run_id, event=profile.event, frequency_hz=profile.frequency_hz, samples=profile.samples,
                       weight=profile.total, data=profile.encode(), details=dict(profile.details))
    return profile


def stored_profile(store: Store, run_id: int) -> FoldedProfile | None:
    """The profile stored with run ``run_id``, or None."""
    return profile_from_row(store.load_profile(run_id))


@dataclass(frozen=True)
class ProfiledSide:
    """A side of a comparison to profile: its label, the run its profile goes with, what it runs."""

    label: str
    run_id: int
    benchmark: Benchmark
    request: RunRequest
    kernel: str | None = None


def profile_sides(store: Store, sides: Sequence[ProfiledSide], targets: TargetSource,
                  seconds: float = DEFAULT_SECONDS) -> tuple[dict[str, FoldedProfile], list[str]]:
    """Profile every side in a run of its own, after its timed ones, and store each profile with
    the side's run: (label -> profile, why a side has none). ``targets`` is the target all sides
    ran on, or a factory making each side's (``make_target(kernel)``)."""
    found: dict[str, FoldedProfile] = {}
    problems: list[str] = []
    for side in sides:
        try:
            if callable(targets):
                with targets(side.kernel) as target:
                    found[side.label] = profile_run(store, side.run_id, target, side.benchmark, side.request,
                                                    seconds)
            else:
                found[side.label] = profile_run(store, side.run_id, targets, side.benchmark, side.request, seconds)
        except TargetError as exc:
            problems.append(f"{side.label}: {exc}")
    return found, problems


def stored_side_profiles(store: Store, runs: Mapping[str, int]) -> dict[str, FoldedProfile]:
    """The profiles stored with the runs of a comparison of stored runs (label -> run id), where there are."""
    found = {}
    for label, run_id in runs.items():
        profile = stored_profile(store, run_id)
        if profile is not None:
            found[label] = profile
    return found
