"""The kernel config difference a comparison of kernels reports: the config each side's
first run was stored with (``targets.config_digest``), each new side against the base."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kbench.report.comparison.model import ComparisonReport, KernelConfigDifference

if TYPE_CHECKING:
    from kbench.store.db import Store


def with_kernel_configs(
    report: ComparisonReport, store: Store, side_runs: Mapping[str, Sequence[int]]
) -> ComparisonReport:
    """``report`` with its kernel config differences, when its sides ran on kernels whose
    configs differ (or one is unknown); unchanged when every side ran with one config."""
    digests = {label: _digest(store, runs) for label, runs in side_runs.items()}
    base = digests.get(report.base_label)
    if len(set(digests.values())) <= 1 or report.base_label not in digests:
        return report
    found = []
    for label in report.new_labels:
        new = digests.get(label)
        if label not in digests:
            continue
        lines: tuple[str, ...] = ()
        if base is not None and new is not None and base != new:
            from kbench.kernels.diffconfig import diff_configs  # only for kernels whose configs differ

            old_text, new_text = store.kernel_config(base), store.kernel_config(new)
            if old_text is not None and new_text is not None:
                lines = tuple(diff_configs(old_text, new_text).lines())
        found.append(KernelConfigDifference(report.base_label, label, base, new, lines))
    return replace(report, kernel_configs=tuple(found))


def _digest(store: Store, runs: Sequence[int]) -> str | None:
    for run_id in runs:
        target = store.get_run(run_id).target or {}
        if target.get("config_digest"):
            return str(target["config_digest"])
    return None
