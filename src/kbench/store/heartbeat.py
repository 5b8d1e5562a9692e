"""The heartbeat of the runs a process is measuring: a thread that renews them while there are any.

``Store.begin_run`` calls ``keep_beating``; the thread calls ``Store.heartbeat`` every
HEARTBEAT_S (``store.liveness``) and ends once no run of this process is ``running`` in
that database any more (or the store is gone). A database that does not answer for a
while costs a few missed beats, nothing else: the run goes on.
"""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

from kbench.store.liveness import HEARTBEAT_S


class Beating(Protocol):
    def heartbeat(self) -> int:
        """Renew the runs this process measures; how many there were."""
        ...


class Heartbeat:
    """The heartbeat thread of one store (started on demand, ended when idle)."""

    def __init__(self, store: Beating):
        self._store = weakref.ref(store)
        self._lock = threading.Lock()
        self._beating = False
        self._generation = 0  # bumped by every keep_beating: a beat that found nothing then does not end it
        self.period_s = HEARTBEAT_S

    def keep_beating(self) -> None:
        """A run was begun: make sure its heartbeat is renewed."""
        with self._lock:
            self._generation += 1
            if self._beating:
                return
            self._beating = True
        threading.Thread(target=self._run, name="kbench-run-heartbeat", daemon=True).start()

    def _run(self) -> None:
        pause = threading.Event()
        while True:
            pause.wait(self.period_s)
            with self._lock:
                generation = self._generation
            store = self._store()
            if store is None:
                renewed = 0
            else:
                try:
                    renewed = store.heartbeat()
                except Exception:  # the database did not answer: try again at the next beat
                    renewed = -1
                del store
            with self._lock:  # the decision to stop and the flag change as one, against keep_beating
                if renewed == 0 and (generation == self._generation or self._store() is None):
                    self._beating = False
                    return
