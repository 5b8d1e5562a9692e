"""A branch's series: each watched instance's runs in the branch's first-parent order.

History's series are every run of a configuration in the order the runs started; a
watch's are the runs of the commits it measured on one branch, in the order the commits
sit on that branch (oldest first), so a force-pushed branch's abandoned commits drop out
and a commit measured again later stays in its place. Points are the runs' stored
medians of the watched metric: for ``command``, the CPU time of the child (user +
system), the metric ``kbench compare`` judges a program on; otherwise the instance's
primary metric. With a control instance, the series is divided run by run by the
control's (``kbench.history.control``). Change points and the rules that judge them are
history's (``kbench.history.analysis.history_of``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from kbench.catalog.benchmarks import lookup, primary_metric
from kbench.history.analysis import ChangePoint, SeriesHistory, history_of
from kbench.history.changes import DetectionSettings, detect
from kbench.history.control import relative_to
from kbench.history.series import Point, Series, build_series, series_id
from kbench.jobs import JobInstance
from kbench.store import series as queries

COMMAND_METRIC = "command.cpu"
CANDIDATE_MAX_PVALUE = 0.01
"""Change points a watch takes as candidates pass Otava's t-test at this level, not history's
0.001: every candidate is measured again side by side before anything is said, so a false
one costs a comparison (about 20 s), while a missed one is a regression never found.
On simulated series like this VM's (1.5 % run-to-run noise, a 2 % machine shift early on,
a 3 % step) the step was found in 90 % of series at 0.01 against 87 % at 0.001."""


def watched_metric(instance: JobInstance) -> str:
    """The metric a watch judges an instance on (a command's CPU time; otherwise the primary; a
    counted instance's instructions, ``metric: instructions``: the candidates are found by counts,
    and confirmed side by side and bisected by time, docs/instructions.md)."""
    if instance.metric == "instructions":
        from kbench.kinds.instructions.benchmark import counted

        return counted(lookup(instance.benchmark)).metric
    if instance.benchmark == "command":
        return COMMAND_METRIC
    return primary_metric(lookup(instance.benchmark), instance.run_params())


@dataclass
class BranchSeries:
    """One instance's series on a branch, its change points, and where each commit sits."""

    instance: JobInstance
    metric: str
    series: Series
    history: SeriesHistory
    controlled: bool  # divided by the job's control

    def range_of(self, point: ChangePoint) -> tuple[str, str]:
        """(good, bad): the commit of the last run before the change's range, and of the last run in it."""
        points = self.series.points
        return str(points[point.first_index - 1].commit), str(points[point.last_index].commit)


def runs_by_instance(commits: Sequence[Mapping[str, object]]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for row in commits:
        for instance_id, ids in dict(row.get("run_ids") or {}).items():  # type: ignore[call-overload]
            found.setdefault(str(instance_id), []).extend(int(i) for i in ids)
    return found


def _series(engine: Engine, instance: JobInstance, metric: str, run_ids: list[int], line: Mapping[str, int],
            sid: str) -> Series | None:
    """The instance's runs of ``metric`` as one series in line order (machines merged: a watch's
    machines are one machine class)."""
    if not run_ids:
        return None
    rows = queries.cpu_points(engine, run_ids=run_ids) if metric == COMMAND_METRIC else \
        queries.summary_points(engine, run_ids=run_ids)
    rows = [row for row in rows if row["metric"] == metric]
    built = build_series(rows)
    points: list[Point] = [p for s in built for p in s.points if p.commit in line]
    if not points:
        return None
    points.sort(key=lambda p: (line[str(p.commit)], p.started_at, p.run_id))
    first = built[0]
    return Series(
        id=series_id(instance.benchmark, first.params, metric, f"watch:{sid}", first.target),
        benchmark=instance.benchmark, params=dict(first.params), metric=metric, unit=first.unit,
        direction=first.direction, machine=first.machine, machine_fingerprint=first.machine_fingerprint,
        target=first.target, points=points,
    )


def branch_series(
    engine: Engine, instances: Sequence[JobInstance], commits: Sequence[Mapping[str, object]], line: Sequence[str],
    *, watch_id: int, settings: DetectionSettings | None = None,
) -> list[BranchSeries]:
    """The series of every watched (not control) instance on the branch whose first-parent
    line is ``line`` (oldest first), from the measured ``commits`` rows."""
    settings = settings or DetectionSettings(max_pvalue=CANDIDATE_MAX_PVALUE)
    position = {sha: i for i, sha in enumerate(line)}
    measured = [row for row in commits if row.get("state") == "measured" and row.get("sha") in position]
    runs = runs_by_instance(measured)
    control = next((i for i in instances if i.control), None)
    found = []
    for instance in instances:
        if instance.control:
            continue
        metric = watched_metric(instance)
        series = _series(engine, instance, metric, runs.get(instance.id, []), position, str(watch_id))
        if series is None:
            continue
        controlled = False
        if control is not None:
            control_series = _series(engine, control, watched_metric(control), runs.get(control.id, []), position,
                                     str(watch_id))
            if control_series is not None:
                series = relative_to(series, control_series).series
                controlled = True
        history = history_of(series, detect(series.values(), settings), settings=settings)
        found.append(BranchSeries(instance, metric, series, history, controlled))
    return found
