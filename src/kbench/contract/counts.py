"""Instruction counts' shared words: the header format of a counted run, and what every report
of counts says (docs/instructions.md)."""

from __future__ import annotations

COUNTS_FORMAT = "kbench-instructions/1"
"""The ``format`` of a counted run's header (``kbench.kinds.instructions``)."""

NOT_TIME = ("instructions are not time: a change in memory stalls, branch mispredictions, frequency or "
            "vector width moves the time and not the count, and the other way round (docs/PERFORMANCE.md)")
"""The warning every counted run and comparison carries."""
