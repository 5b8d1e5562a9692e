"""Tracepoints and timed kernel functions: kbench.ko's log buffer, read out and analysed.

- ``log``: the log's entries (raw, as kbench.ko wrote them) and how a run stores them
- ``kernel``: /sys/kernel/kbench/trace/ (reset, finalize, read, probes) on any SysfsIO
- ``selection``: which entries a run measured (inside the recorded windows)
- ``analysis``: per-key distributions, keys summed along one path, the JSON ``trace`` list
- ``overhead``: the nested-pair tables of the tracepoints and a probe's own cost
- ``symbols``: kallsyms names, near matches for unknown ones
- ``session``: a traced kfunc run and ``kbench trace`` on a target
- ``series`` / ``render``: a trace run's metric series and its text report
"""
