"""Records the store and its recovery files share (no SQLAlchemy here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbench.stats.summary import Summary

SCHEMA_VERSION = 12

RUN_COLUMNS_V4 = ("owner_pid", "owner_boot_id", "owner_host", "commit", "label", "task_key")
"""Columns of ``runs`` added by schema v4 (the migration adds them to older databases)."""
RUN_COLUMNS_V6 = ("import_digest",)
"""Columns of ``runs`` added by schema v6."""
RUN_COLUMNS_V8 = ("heartbeat_at",)
"""Columns of ``runs`` added by schema v8."""
TARGET_COLUMNS_V10 = ("config_digest",)
"""Columns of ``targets`` added by schema v10 (the kernel's ``.config``, in ``kernel_configs``)."""
FINDING_COLUMNS_V11 = ("triage", "triage_reason", "triage_at")
"""Columns of ``watch_findings`` added by schema v11: the status a person set (``kbench finding``)."""
FLEET_JOB_COLUMNS_V12 = ("inputs",)
"""Columns of ``fleet_jobs`` added by schema v12: what travels with a fleet job (``kbench.fleet.inputs``)."""

ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": RUN_COLUMNS_V4 + RUN_COLUMNS_V6 + RUN_COLUMNS_V8,
    "fleet_tasks": ("spec",),  # v9
    "targets": TARGET_COLUMNS_V10,
    "watch_findings": FINDING_COLUMNS_V11,
    "fleet_jobs": FLEET_JOB_COLUMNS_V12,
}
"""Columns that migrations add to tables of older databases. A database whose version is
current but which lacks one of them (written by a development build whose migrations were
numbered differently) is repaired by running every migration again: each is idempotent."""
"""The results database's schema (``schema.py``): bump it and add a step to
``migrations.MIGRATIONS`` for every change."""

RUN_STATUSES = ("running", "complete", "interrupted", "failed", "abandoned")
"""Every status a stored run can have."""


@dataclass(frozen=True)
class SummaryRecord:
    """One metric's summary as stored next to a run."""

    metric: str
    unit: str
    basis: str
    values: Mapping[str, Any]
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    """A stored run, without its samples (load those with ``Store.load_samples``)."""

    id: int
    benchmark: str
    metric: str
    unit: str
    direction: str
    status: str
    params: dict[str, Any]
    request: dict[str, Any]
    timer: dict[str, Any] | None
    overhead: dict[str, Any] | None
    probe_header: dict[str, Any] | None
    sysinfo: dict[str, Any] | None
    noise: dict[str, Any] | None
    warnings: list[str]
    tags: list[str]
    error: str | None
    tool_output: str | None
    n_samples: int
    batch: int | None
    started_at: datetime
    finished_at: datetime | None
    target: dict[str, Any] | None
    summaries: list[dict[str, Any]]
    commit: str | None = None  # the version measured (``kbench run --commit``), if given
    label: str | None = None  # and its name (``--label``)


def summary_columns(summary: Summary) -> dict[str, Any]:
    """The summary columns the store keeps next to a run (``runs`` list them)."""
    return {
        "n": summary.n,
        "min": summary.min,
        "median": summary.p50,
        "p90": summary.p90,
        "p95": summary.p95,
        "p99": summary.p99,
        "max": summary.max,
        "mean": summary.mean,
        "stdev": summary.stdev,
        "mad": summary.mad,
        "steady_state_index": summary.steady_state_index,
    }
