"""Change points per series, remembered between requests until the series gets a new run."""

from __future__ import annotations

import threading

from kbench.history.analysis import SeriesHistory, history_of
from kbench.history.changes import Change, DetectionSettings, detect
from kbench.history.series import Series


class ChangeCache:
    """Runs are never rewritten, so (point count, first and last run) identifies a series' values."""

    def __init__(self, settings: DetectionSettings):
        self.settings = settings
        self._lock = threading.Lock()
        self._found: dict[str, tuple[tuple[int, int, int], list[Change]]] = {}

    def history(self, series: Series) -> SeriesHistory:
        return history_of(series, self.changes(series))

    def changes(self, series: Series) -> list[Change]:
        points = series.points
        key = (len(points), points[0].run_id, points[-1].run_id) if points else (0, 0, 0)
        with self._lock:
            cached = self._found.get(series.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        found = detect(series.values(), self.settings)
        with self._lock:
            self._found[series.id] = (key, found)
        return found
