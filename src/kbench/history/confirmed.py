"""Regressions ``kbench watch`` confirmed, as history's reports and the dashboard show them.

A change point of stored runs is a *candidate*: where the runs shifted, not what shifted
them. ``kbench watch`` confirms candidates by measuring the builds on either side side by
side, bisects them, and measures the culprit once more against its parent; only what
passes all of it is stored as a confirmed regression (``kbench.store.watch``). A change
point is shown as confirmed when such a regression of the same benchmark, parameters and
metric has its culprit (or, for a culprit the watch did not measure itself, the last
commit of its range) among the runs the change point could start at; otherwise it is
*suspected*.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.contract.vocabulary import TRIAGE_STATUSES
from kbench.history.machines import Machine
from kbench.history.series import WATCH_TAG_PREFIX, Series
from kbench.history.since import as_utc
from kbench.kernels.per_commit import TREE_IMAGE, commit_spec, config_line

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from kbench.store.db import Store

CONFIRMED, SUSPECTED = "confirmed", "suspected"
COMMAND_UNITS = {"command.cpu": "ns", "command.wall": "ns"}


@dataclass(frozen=True)
class Side:
    """One side of the culprit's measurement against its parent: its median and spread over the slots."""

    label: str
    median: float
    stdev_pct: float
    slots: int

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "median": _finite(self.median), "stdev_pct": _finite(self.stdev_pct),
                "slots": self.slots}


@dataclass(frozen=True)
class Origin:
    """Where a confirmation's commits come from: the watch's repository, build, job and branch."""

    repo: str = ""
    build: str = ""
    job_path: str = ""
    kernel_image: str | None = None


@dataclass(frozen=True)
class Triage:
    """The status a person set on a confirmed regression (``kbench finding N --status``), and why."""

    status: str  # one of kbench.contract.vocabulary.TRIAGE_STATUSES
    reason: str
    at: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "at": self.at.isoformat() if self.at else None}


@dataclass(frozen=True)
class Confirmation:
    """A regression a watch confirmed: its culprit and the side-by-side measurement that verified it.

    This is the one record of that conclusion: every view (``history``, ``report regressions``,
    the dashboard, the mail) states its culprit, size, interval and status from it, never from a
    change point of the stored runs."""

    finding_id: int
    watch_id: int
    branch: str
    benchmark: str
    metric: str
    params: dict[str, str]
    culprit: str
    subject: str
    bad: str
    change_pct: float
    ci_pct: tuple[float, float]
    p_value: float
    status: str  # open | fixed | reverted
    fixed_in: str | None
    reverted_in: str | None
    report: str | None
    confirmed_at: datetime
    unit: str = ""
    parent: Side | None = None
    culprit_side: Side | None = None
    blocks: int = 0
    confidence: float = 0.95
    origin: Origin = field(default_factory=Origin)
    good: str = ""  # the candidate's range: after ``good``, up to ``bad``
    run_ids: tuple[int, ...] = ()  # the side-by-side measurement's runs: the parent's, the culprit's
    kind: str = "regression"  # or "fix": a commit that brought a series back, confirmed the same way
    triage: Triage | None = None  # the status a person set, beside the watch's own
    machine: Machine | None = None  # the machine of the side-by-side measurement

    @property
    def key(self) -> str:
        """The entry's key among a report's entries (``kbench.report.why``)."""
        return f"finding:{self.finding_id}"

    @property
    def scope(self) -> str:
        """The series scope of the watch's runs (``kbench.history.series.series_scope``)."""
        return f"{WATCH_TAG_PREFIX}{self.watch_id}"

    @property
    def is_open(self) -> bool:
        """An open regression: not fixed, not reverted (a fix is never open)."""
        return self.kind == "regression" and self.status == "open"

    @property
    def fails_gate(self) -> bool:
        """Whether ``--fail-on regression`` fails on it: open, and no one has triaged it (acknowledged, an
        author working on it, or won't fix: a person has seen it, and the report keeps showing it)."""
        return self.is_open and self.triage is None

    def mail_subject(self) -> str:
        """``[kbench] [command] 9f8e7d6c5b: command.cpu +3.1% regression`` (its mail's subject)."""
        return regression_subject(self.benchmark, self.culprit, self.metric, self.change_pct)

    def reproduce(self) -> list[str]:
        """The steps that build the culprit and its parent and measure them again (``reproduce_steps``)."""
        return reproduce_steps(self.origin, self.culprit, self.branch, self.benchmark, self.params)

    @property
    def status_text(self) -> str:
        """``open``, ``fixed in 1a2b3c4d5e6f``, ``reverted in …``; a person's status after it:
        ``open; won't fix: the test measures a debug path``."""
        if self.kind != "regression":
            return "a confirmed fix"
        if self.status == "fixed" and self.fixed_in:
            text = f"fixed in {self.fixed_in[:12]}"
        elif self.status == "reverted" and self.reverted_in:
            text = f"reverted in {self.reverted_in[:12]}"
        else:
            text = self.status
        if self.triage is not None:
            text += f"; {self.triage.status}" + (f": {self.triage.reason}" if self.triage.reason else "")
        return text

    def describe(self) -> str:
        """``+3.1% (CI +2.6…+3.6%, p=0.00024) against its parent, measured side by side``."""
        low, high = self.ci_pct
        ci = f"CI {low:+.1f}…{high:+.1f}%, " if math.isfinite(low) and math.isfinite(high) else ""
        return f"{self.change_pct:+.1f}% ({ci}p={self.p_value:.2g}) against its parent, measured side by side"

    def to_json(self) -> dict[str, Any]:
        return {
            "finding_id": self.finding_id, "watch_id": self.watch_id, "branch": self.branch, "repo": self.origin.repo,
            "culprit": {"sha": self.culprit, "subject": self.subject}, "change_pct": _finite(self.change_pct),
            "ci_pct": [_finite(self.ci_pct[0]), _finite(self.ci_pct[1])], "p_value": _finite(self.p_value),
            "confidence": self.confidence, "unit": self.unit,
            "side_by_side": {"parent": None if self.parent is None else self.parent.to_json(),
                             "culprit": None if self.culprit_side is None else self.culprit_side.to_json(),
                             "blocks": self.blocks},
            "kind": self.kind, "status": self.status if self.kind == "regression" else "fix",
            "status_text": self.status_text, "triage": None if self.triage is None else self.triage.to_json(),
            "machine": None if self.machine is None else self.machine.to_json(),
            "fixed_in": self.fixed_in, "reverted_in": self.reverted_in, "report": self.report,
            "benchmark": self.benchmark, "metric": self.metric, "params": self.params, "reproduce": self.reproduce(),
        }


def regression_subject(benchmark: str, culprit: str, metric: str, change_pct: float) -> str:
    """The one subject of a confirmed regression: its mail's, its report entry's, its summary row's."""
    return f"[kbench] [{benchmark}] {culprit[:10]}: {metric} {change_pct:+.1f}% regression"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def reproduce_steps(origin: Origin, sha: str, branch: str, benchmark: str, params: Mapping[str, str]) -> list[str]:
    """Clone, check out and build the culprit, run the watch's job on it, then build its parent beside it
    and measure the two side by side: the steps a regression's mail and report entry print."""
    if origin.kernel_image == TREE_IMAGE:
        return _tree_steps(origin, sha, branch, benchmark, params)
    kernel = f" --kernel {shlex.quote(origin.kernel_image)}" if origin.kernel_image else ""
    lines = [f"git clone {shlex.quote(origin.repo)} kbench-repro && cd kbench-repro", f"git checkout {sha}",
             origin.build,
             f"kbench run {shlex.quote(origin.job_path)}{kernel} --commit {sha} --label {shlex.quote(branch)}",
             "# the culprit side by side with its parent:",
             f"git worktree add ../parent {sha}^ && (cd ../parent && {origin.build})"]
    if origin.kernel_image:
        parent = shlex.quote(str(Path("..") / "parent" / origin.kernel_image))
        lines.append(f"kbench compare --kernel {parent} --kernel {shlex.quote(origin.kernel_image)} {benchmark}"
                     + "".join(f" -p {shlex.quote(f'{k}={v}')}" for k, v in params.items()
                               if k not in ("samples", "iterations")))
    elif params.get("cmd") is not None:
        cmd = params["cmd"]
        lines.append(f"kbench compare --command {shlex.quote(f'cd ../parent && {cmd}')} --command {shlex.quote(cmd)}")
    return lines


def _tree_steps(origin: Origin, sha: str, branch: str, benchmark: str, params: Mapping[str, str]) -> list[str]:
    """The steps of a ``--kernel-tree`` watch: kbench builds the culprit's kernel and its parent's."""
    repo = Path(origin.repo)
    culprit, parent = commit_spec(repo, sha), commit_spec(repo, f"{sha}^")
    config = config_line(repo, sha)
    return [*([f"# {config}"] if config else []),
            f"kbench run {shlex.quote(origin.job_path)} --kernel {shlex.quote(culprit)} --commit {sha} "
            f"--label {shlex.quote(branch)}",
            "# the culprit side by side with its parent (kbench builds both kernels):",
            f"kbench compare --kernel {shlex.quote(parent)} --kernel {shlex.quote(culprit)} {benchmark}"
            + "".join(f" -p {shlex.quote(f'{k}={v}')}" for k, v in params.items()
                      if k not in ("samples", "iterations"))]


def _verified(row: dict[str, Any]) -> dict[str, Any]:
    """The culprit's comparison against its parent (``BuildComparison.to_json`` with ``why``), or {}."""
    checks = [c for c in row.get("verification") or [] if c.get("why") == "verify"]
    return dict(checks[-1]) if checks else {}


def _side(data: Any, label: str) -> Side | None:
    if not isinstance(data, Mapping):
        return None
    return Side(label, _number(data.get("median")), _number(data.get("stdev_pct")), int(data.get("slots") or 0))


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def load_confirmations(source: Engine | Store) -> list[Confirmation]:
    """Every regression (and fix: ``kind``) a watch of this database confirmed (none when it has no
    watch tables yet)."""
    from kbench.store.series import confirmed_findings, run_machines

    rows = confirmed_findings(source)
    machines = run_machines(source, [ids[0] for row in rows if (ids := _verified(row).get("run_ids"))])
    found = []
    for row in rows:
        verified = _verified(row)
        verdict = dict(verified.get("verdict") or {})
        ci = verdict.get("ci_pct") or [math.nan, math.nan]
        watch = dict(row.get("watch") or {})
        options = dict(watch.get("options") or {})
        metric = str(row["metric"])
        confidence = _number(verdict.get("confidence"))
        found.append(Confirmation(
            finding_id=int(row["id"]), watch_id=int(row["watch_id"]), branch=str(row["branch"]),
            benchmark=str(row["benchmark"]), metric=metric,
            params={str(k): str(v) for k, v in dict(row["params"] or {}).items()}, culprit=str(row["culprit"]),
            subject=str(row["culprit_subject"] or ""), bad=str(row["bad"]), good=str(row.get("good") or ""),
            change_pct=_number(verdict.get("change_pct")), ci_pct=(_number(ci[0]), _number(ci[1])),
            p_value=_number(verdict.get("p_value")), status=str(row["status"] or "open"), fixed_in=row["fixed_in"],
            reverted_in=row["reverted_in"], report=row["report"], confirmed_at=row["updated_at"],
            unit=COMMAND_UNITS.get(metric, str(verdict.get("unit") or "")),
            parent=_side(verified.get("base"), "parent"), culprit_side=_side(verified.get("new"), "culprit"),
            blocks=int(verified.get("blocks") or 0), confidence=confidence if math.isfinite(confidence) else 0.95,
            run_ids=tuple(int(i) for i in verified.get("run_ids") or ()), kind=str(row.get("kind") or "regression"),
            origin=Origin(repo=str(watch.get("repo") or ""), build=str(watch.get("build") or ""),
                          job_path=str(watch.get("job_path") or ""), kernel_image=options.get("kernel_image")),
            triage=_triage(row), machine=_machine(machines, verified.get("run_ids")),
        ))
    return found


def _triage(row: Mapping[str, Any]) -> Triage | None:
    status = row.get("triage")
    if status not in TRIAGE_STATUSES:
        return None
    at = row.get("triage_at")
    return Triage(str(status), str(row.get("triage_reason") or ""), as_utc(at) if isinstance(at, datetime) else None)


def _machine(machines: Mapping[int, str], run_ids: Any) -> Machine | None:
    fingerprint = machines.get(int(run_ids[0])) if run_ids else None
    return Machine.parse(fingerprint) if fingerprint else None


def of_series(series: Series, confirmations: list[Confirmation]) -> list[Confirmation]:
    """The confirmations about this series' benchmark, parameters and metric."""
    return [c for c in confirmations if c.benchmark == series.benchmark and c.metric == series.metric
            and c.params == series.params]


def culprit_index(series: Series, confirmation: Confirmation) -> int | None:
    """The first run of the series that measured the culprit (or the last commit of its range)."""
    for commit in (confirmation.culprit, confirmation.bad):
        for index, point in enumerate(series.points):
            if point.commit == commit:
                return index
    return None


def confirming(series: Series, first_index: int, last_index: int,
               confirmations: list[Confirmation]) -> Confirmation | None:
    """The confirmation whose culprit sits among runs ``first_index``..``last_index`` of ``series``."""
    for confirmation in of_series(series, confirmations):
        index = culprit_index(series, confirmation)
        if index is not None and first_index <= index <= last_index:
            return confirmation
    return None


def unmatched_confirmations(
    confirmations: Sequence[Confirmation], entries: Sequence[Any], series: Sequence[Series],
    since: datetime | None = None,
) -> list[Confirmation]:
    """The confirmations no entry shows (no change point of the stored runs sits at them), about
    one of ``series`` and confirmed at ``since`` or later; newest first."""
    shown = {entry.confirmation.finding_id for entry in entries if getattr(entry, "confirmation", None)}
    about = [c for c in confirmations if c.finding_id not in shown and any(of_series(s, [c]) for s in series)]
    if since is not None:
        about = [c for c in about if as_utc(c.confirmed_at) >= since]
    return sorted(about, key=lambda c: as_utc(c.confirmed_at), reverse=True)
