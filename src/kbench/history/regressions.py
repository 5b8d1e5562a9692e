"""The regression report: one entry per change point in the worse direction, 0-Day mail style."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kbench.history.analysis import IMPROVEMENT, REGRESSION, ChangePoint, SeriesHistory
from kbench.history.confirmed import CONFIRMED, SUSPECTED, Confirmation, confirming
from kbench.history.series import Series
from kbench.sysinfo.collect import GUEST_MARK


@dataclass(frozen=True)
class Machine:
    """The test machine as its fingerprint describes it (hostname, CPU model and count, memory;
    for runs in a guest, the host's, and the VM's CPUs and memory as ``guest``)."""

    hostname: str
    cpu_model: str | None
    cpus: int | None
    memory_bytes: int | None
    guest: str | None = None

    @classmethod
    def of(cls, series: Series) -> Machine:
        parts = series.machine_fingerprint.split("|")
        if len(parts) not in (4, 8) or (len(parts) == 8 and parts[4] != GUEST_MARK):
            return cls(series.machine, None, None, None)

        def number(text: str) -> int | None:
            return int(text) if text.isdigit() else None

        guest = None
        if len(parts) == 8:
            model, count, memory_mb = parts[5:]
            guest = ", ".join(filter(None, (
                f"{count} CPUs" if count.isdigit() else "", model if model != "None" else "",
                f"{memory_mb} MiB memory" if memory_mb else "",
            ))) or "guest"
        return cls(series.machine, parts[1] if parts[1] != "None" else None, number(parts[2]), number(parts[3]),
                   guest)

    def describe(self) -> str:
        facts = []
        if self.cpus:
            facts.append(f"{self.cpus} CPUs")
        if self.cpu_model:
            facts.append(self.cpu_model)
        if self.memory_bytes:
            facts.append(f"{self.memory_bytes / 2**30:.0f} GiB memory")
        text = f"{self.hostname}: {', '.join(facts)}" if facts else self.hostname
        return f"{text}; guest: {self.guest}" if self.guest else text

    def to_json(self) -> dict[str, Any]:
        return {"hostname": self.hostname, "cpu_model": self.cpu_model, "cpus": self.cpus,
                "memory_bytes": self.memory_bytes, "guest": self.guest}


@dataclass(frozen=True)
class RegressionEntry:
    """A change point worth a mail: the series, the change and how to reproduce it.

    ``confirmation``: the regression ``kbench watch`` confirmed there, with its culprit; None
    for a change point nothing measured again (``suspected``: a candidate, not a culprit)."""

    series: Series
    point: ChangePoint
    machine: Machine
    reproduce: list[str]  # command lines
    confirmation: Confirmation | None = None

    @property
    def status(self) -> str:
        return CONFIRMED if self.confirmation is not None else SUSPECTED

    @property
    def subject(self) -> str:
        """Confirmed: ``[kbench] [command] 9f8e7d6c5b: command.cpu +3.1% regression`` (the culprit, the
        change measured against its parent); suspected: ``[kbench] [command] suspected: command.cpu
        +3.4% change in 1a2b3c4d5e..6f7a8b9c0d``."""
        confirmation = self.confirmation
        if confirmation is not None:
            return (f"[kbench] [{self.series.benchmark}] {confirmation.culprit[:10]}: {self.series.metric} "
                    f"{confirmation.change_pct:+.1f}% regression")
        return (f"[kbench] [{self.series.benchmark}] suspected: {self.series.metric} "
                f"{self.point.change.change_pct:+.1f}% {self.point.verdict} in {self.range_name()}")

    def range_name(self) -> str:
        """Where the change could sit: ``a..b`` of commits, else labels, kernels or runs."""
        correlated = self.point.correlated
        before, after = correlated.before, correlated.after
        if correlated.commit_range:
            return f"{str(before.commit)[:10]}..{str(after.commit)[:10]}"
        if correlated.labels[1:]:
            return f"{before.label}..{after.label}"
        if correlated.kernels[1:]:
            return f"{before.kernel}..{after.kernel}"
        return f"runs {before.run_id}..{after.run_id}"

    def version_name(self) -> str:
        """What changed at the change point: the commit, else the label, else the kernel, else the run."""
        correlated = self.point.correlated
        after = correlated.after
        if correlated.commits[1:]:
            return str(after.commit)[:10]
        if correlated.labels[1:]:
            return str(after.label)
        if correlated.kernels[1:]:
            return str(after.kernel)
        return (after.commit or "")[:10] or after.label or f"run {after.run_id}"

    def to_json(self) -> dict[str, Any]:
        s = self.series
        return {
            "subject": self.subject, "status": self.status, "confirmed": self.confirmation is not None,
            "confirmation": None if self.confirmation is None else self.confirmation.to_json(),
            "series_id": s.id, "benchmark": s.benchmark, "params": s.params,
            "metric": s.metric, "unit": s.unit, "direction": s.direction, "target": s.target,
            "machine": self.machine.to_json(), "change_point": self.point.to_json(), "reproduce": self.reproduce,
        }


def regression_entries(
    histories: Sequence[SeriesHistory], requests: Mapping[int, Mapping[str, Any]], *,
    since: datetime | None = None, improvements: bool = False, confirmations: Sequence[Confirmation] = (),
) -> list[RegressionEntry]:
    """Entries for the change points in the worse direction (and the better one with
    ``improvements``) whose first run after the change started at ``since`` or later;
    confirmed ones first, then newest first, larger changes first on the same run.

    ``requests`` maps run ids to the stored ``{"request", "target"}`` of first-after runs
    (see ``wanted_runs``): they give the reproduce command. ``confirmations``: the
    regressions ``kbench watch`` confirmed (``kbench.history.confirmed``); a change point
    with one among its runs is confirmed, the others are suspected."""
    verdicts = {REGRESSION, IMPROVEMENT} if improvements else {REGRESSION}
    found = list(confirmations)
    entries = [
        RegressionEntry(h.series, point, Machine.of(h.series), reproduce_lines(h.series, point, requests),
                        confirming(h.series, point.first_index, point.last_index, found)
                        if point.verdict == REGRESSION else None)
        for h in histories
        for point in h.change_points
        if point.verdict in verdicts and (since is None or point.started_at >= since)
    ]
    entries.sort(key=lambda e: (e.confirmation is not None, e.point.started_at, abs(e.point.change.change_pct)),
                 reverse=True)
    return entries


def wanted_runs(histories: Sequence[SeriesHistory], since: datetime | None = None) -> list[int]:
    """The first-after runs whose stored request the report needs."""
    return sorted({
        p.run_id for h in histories for p in h.change_points if since is None or p.started_at >= since
    })


def reproduce_lines(series: Series, point: ChangePoint, requests: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """``git checkout`` of the version after the change and the ``kbench run`` that measures it."""
    stored = requests.get(point.run_id, {})
    request = dict(stored.get("request") or {})
    target = dict(stored.get("target") or {})
    args = ["kbench", "run", series.benchmark]
    for key, value in series.params.items():
        args += ["-p", f"{key}={value}"]
    for option, key in (("--samples", "samples"), ("--duration", "duration_s"), ("--batch", "batch"),
                        ("--cpu", "cpu")):
        if request.get(key) is not None:
            args += [option, str(request[key])]
    if request.get("warmup_samples") is not None:
        args += ["--warmup", str(request["warmup_samples"])]
    elif request.get("warmup_duration_s") is not None:
        args += ["--warmup", f"{request['warmup_duration_s']}s"]
    if int(request.get("iterations") or 1) > 1:
        args += ["--iterations", str(request["iterations"])]
    if request.get("subtract_overhead"):
        args.append("--subtract-overhead")
    spec = (target.get("details") or {}).get("spec")
    if target.get("kind") == "vm" and spec:
        args += ["--kernel", str(spec)]
    after = point.correlated.after
    lines = []
    if after.commit:
        lines.append(f"git checkout {after.commit}")
        args += ["--commit", after.commit]
    if after.label:
        args += ["--label", after.label]
    lines.append(shlex.join(args))
    return lines
