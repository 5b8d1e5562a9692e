"""What the dashboard remembers between requests: the loaded series (until a run is added)
and each series' change points (until that series gets a new run)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from kbench.history.analysis import SeriesHistory, history_of
from kbench.history.changes import Change, DetectionSettings, detect
from kbench.history.series import Series
from kbench.store.series import runs_fingerprint

if TYPE_CHECKING:
    from sqlalchemy import Engine


class ChangeCache:
    """Runs are never rewritten, so (point count, first and last run) identifies a series' values."""

    def __init__(self, settings: DetectionSettings):
        self.settings = settings
        self._lock = threading.Lock()
        self._found: dict[str, tuple[tuple[int, int, int], list[Change]]] = {}

    def history(self, series: Series) -> SeriesHistory:
        return history_of(series, self.changes(series), settings=self.settings)

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


class SeriesSnapshot:
    """Every series as last loaded, reloaded when the store's complete runs change.

    One cheap aggregate query per request decides; loading 10,000 runs costs about 0.5 s."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._lock = threading.Lock()
        self._key: tuple[int, int, str] | None = None
        self._series: list[Series] = []

    def series(self) -> list[Series]:
        from kbench.history.load import load_series

        key = runs_fingerprint(self.engine)
        with self._lock:
            if key == self._key:
                return self._series
        loaded = load_series(self.engine)
        with self._lock:
            self._key, self._series = key, loaded
        return loaded
