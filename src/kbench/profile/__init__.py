"""Why a run costs what it costs: perf event counters, sampled call graphs, folded stacks,
flame graphs and profile deltas.

Pure functions and data (no store, no target): the kinds collect counters and profiles
through their targets and put them in the run (``counters`` in the measurement's header,
a profile beside it); report, compare and the CLI read them through this room.
"""
