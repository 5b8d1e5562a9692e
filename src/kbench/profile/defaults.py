"""What kbench counts and profiles unless told otherwise, and why (benchmarks/counters_overhead.py).

Which kinds of benchmark take counters and which count unless told otherwise is each kind's to
say (``kbench.kinds.base.Kind``: ``counted``, ``counters_by_default``, with the measurements).
"""

from __future__ import annotations

COUNTERS_BY_DEFAULT = False
"""``kbench compare`` judges counters only when asked (--counters): each counter is one more
secondary metric, and a larger family makes the multiple-comparison correction stricter for the
timed secondary metrics (a command's wall time)."""
