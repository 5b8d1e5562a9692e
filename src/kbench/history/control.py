"""A series judged against a control: each run divided by a control run measured beside it.

A control is a series the versions under test cannot change (an unchanged reference build,
a benchmark of something the commits do not touch), run every time the watched one is.
What moves both at once is the machine (a slow phase, another tenant, a frequency mode);
divided by the control, it cancels, and what is left is the version's doing.

Pairing: each point of the series is paired with the control point that measured the
same version (the same commit and label where both carry one) and started nearest to it
in time; a point with no such control point is left out (``ControlledSeries.unpaired``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

from kbench.history.series import Point, Series

RATIO_UNIT = "ratio"


class NoControl(LookupError):
    """No control series fits (none on the same machine and target, or several)."""


@dataclass
class ControlledSeries:
    """The ratio series, with the control it was divided by and the points that found no partner."""

    series: Series
    control: Series
    unpaired: list[int] = field(default_factory=list)  # run ids of the watched series


def _same_version(point: Point, control: Point) -> bool:
    if point.commit and control.commit and point.commit != control.commit:
        return False
    return not (point.label and control.label and point.label != control.label)


class _Partners:
    """Control points by commit, each list sorted by start time, for nearest-in-time look-ups."""

    def __init__(self, control: Series):
        usable = sorted((c for c in control.points if c.value > 0), key=lambda c: c.started_at)
        self.everyone = usable
        self.by_commit: dict[str | None, list[Point]] = {}
        for c in usable:
            self.by_commit.setdefault(c.commit, []).append(c)

    def nearest(self, point: Point) -> Point | None:
        pool = self.everyone
        if point.commit:
            pool = self.by_commit.get(point.commit, []) + self.by_commit.get(None, [])
            pool.sort(key=lambda c: c.started_at)
        times = [c.started_at.timestamp() for c in pool]
        at = point.started_at.timestamp()
        i = bisect.bisect_left(times, at)
        order = sorted(range(max(0, i - 8), min(len(pool), i + 8)), key=lambda j: abs(times[j] - at))
        for j in order:
            if _same_version(point, pool[j]):
                return pool[j]
        fitting = [c for c in pool if _same_version(point, c)]
        return min(fitting, key=lambda c: abs(c.started_at.timestamp() - at)) if fitting else None


def relative_to(series: Series, control: Series) -> ControlledSeries:
    """``series`` divided point by point by its partner in ``control`` (module docstring).

    The result keeps the series' metric name with ``/control`` appended, the unit
    ``ratio`` and the series' direction; its id is the series' own with ``/`` and the
    control's id, so it never collides with a stored series."""
    if not control.points:
        raise NoControl(f"control series {control.id} has no runs")
    points: list[Point] = []
    unpaired: list[int] = []
    partners = _Partners(control)
    for point in series.points:
        partner = partners.nearest(point)
        if partner is None:
            unpaired.append(point.run_id)
            continue
        scale = 1.0 / partner.value
        points.append(replace(point, value=point.value * scale, mean=point.mean * scale,
                              stdev=point.stdev * scale))
    ratio = Series(
        id=f"{series.id}/{control.id}", benchmark=series.benchmark, params=dict(series.params),
        metric=f"{series.metric}/control", unit=RATIO_UNIT, direction=series.direction, machine=series.machine,
        machine_fingerprint=series.machine_fingerprint, target=series.target, points=points,
    )
    return ControlledSeries(ratio, control, unpaired)


def control_for(series: Series, controls: list[Series]) -> Series:
    """The one control series on the same machine and target as ``series`` (not itself)."""
    fitting = [c for c in controls if c.id != series.id and c.machine_fingerprint == series.machine_fingerprint
               and c.target == series.target]
    if not fitting:
        raise NoControl(f"series {series.id} ({series.metric}): no control series on machine {series.machine} "
                        f"and target {series.target}")
    if len(fitting) > 1:
        raise NoControl(f"series {series.id} ({series.metric}): the control selects {len(fitting)} series on its "
                        f"machine and target ({', '.join(c.id for c in fitting[:5])}); name one series id")
    return fitting[0]
