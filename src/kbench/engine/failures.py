"""Failed executions in the runs a comparison judges: refused by default, counted when allowed.

A failed execution (a non-zero exit, a death by signal, a system call's error) is never a
measurement: a run stops at the first one unless ``--ignore-failure`` asked to time them, and
then its header's ``failure`` counts them (docs/probe-format.md). A comparison of such runs
says how many each side holds, beside its verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbench.contract.request import BadRequest
from kbench.store.db import Store


def timed_failures(store: Store, run_id: int) -> int:
    """Failed executions stored run ``run_id`` timed (0 unless it was measured with ``--ignore-failure``)."""
    failure = (store.get_run(run_id).probe_header or {}).get("failure")
    return int(failure.get("count") or 0) if isinstance(failure, dict) else 0


def failure_counts(store: Store, runs: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """Timed failed executions per side label (``runs``: a side's label → its run ids)."""
    return {label: sum(timed_failures(store, run_id) for run_id in run_ids) for label, run_ids in runs.items()}


def refuse_timed_failures(store: Store, runs: Mapping[str, Sequence[int]]) -> None:
    """BadRequest naming the stored runs that timed failed executions (when the caller did not allow them)."""
    held = [f"run {run_id} timed {count}" for run_ids in runs.values() for run_id in run_ids
            if (count := timed_failures(store, run_id))]
    if held:
        raise BadRequest(f"these runs timed failed executions (measured with --ignore-failure): {'; '.join(held)}; "
                         "a failure's time is not the program's: give --ignore-failure to compare them anyway")


def failures_text(counts: Mapping[str, int]) -> str | None:
    """``failed executions timed (--ignore-failure): A 0, B 7; …`` when any side holds some, else None."""
    if not any(counts.values()):
        return None
    listed = ", ".join(f"{label} {count}" for label, count in counts.items())
    return (f"failed executions timed (--ignore-failure): {listed}; their times are in the verdict, and a "
            "failure's time is not the program's")
