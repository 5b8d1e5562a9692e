"""Records the store and its recovery files share (no SQLAlchemy here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
