"""What kbench counts and profiles unless told otherwise, and why."""

from __future__ import annotations

COUNTERS_BY_DEFAULT = False
"""``--counters`` is off unless given (to be decided by benchmarks/counters_overhead.py)."""
