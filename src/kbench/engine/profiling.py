"""Profiles stored with runs: a profile pass after the measured run(s), its folded stacks kept beside them.

A profile is never taken inside a measured run: sampling costs time (a timer interrupt
per sample, a stack walk) and would land in the numbers. ``profile_run`` runs the
benchmark once more, as its run did (``kbench.kinds.registry.profile``), and stores what
perf sampled with that run (``Store.save_profile``); ``stored_profile`` reads it back.
"""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.registry import profile as profile_on
from kbench.profile.folded import FoldedProfile, profile_from_row
from kbench.profile.perf_record import DEFAULT_SECONDS
from kbench.store.db import Store
from kbench.targets.base import Target


def profile_run(store: Store, run_id: int, target: Target, benchmark: Benchmark, request: RunRequest,
                seconds: float = DEFAULT_SECONDS) -> FoldedProfile:
    """Profile ``benchmark`` as ``request`` runs it on ``target`` and store it with run ``run_id``
    (TargetError when it cannot be profiled)."""
    profile = profile_on(target, benchmark, request, seconds)
    store.save_profile(run_id, event=profile.event, frequency_hz=profile.frequency_hz, samples=profile.samples,
                       weight=profile.total, data=profile.encode(), details=dict(profile.details))
    return profile


def stored_profile(store: Store, run_id: int) -> FoldedProfile | None:
    """The profile stored with run ``run_id``, or None."""
    return profile_from_row(store.load_profile(run_id))
