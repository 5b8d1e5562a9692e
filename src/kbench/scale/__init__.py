"""The will-it-scale model: drive ``kbench-probe scale`` and turn its output into metrics.

``kbench-probe scale TEST --tasks N --mode process|thread`` runs N tasks that loop one
testcase and samples their counters once per interval (docs/probe-format.md, section
"scale"). This package is the Python side of that contract:

- :func:`scale_probe_args` builds the probe's command line (without the binary),
- :func:`parse_scale` reads its output into a :class:`ScaleResult`,
- :meth:`ScaleResult.metrics` gives the metrics, named ``will-it-scale.<test>.<stat>``,
- :func:`list_scale_tests` reads ``kbench-probe --list-scale``,
- :func:`run_scale` does all of it in one call (a local run).

Every interval's sample is kept (``ScaleResult.per_interval``); warm-up intervals are
flagged (``steady`` is False), never dropped.
"""

from kbench.scale.result import (
    MODES,
    SUITE,
    Metric,
    ScaleIntervals,
    ScaleOutputError,
    ScaleResult,
    ScaleTest,
    list_scale_tests,
    metric_names,
    parse_scale,
    run_scale,
    scale_from_output,
    scale_probe_args,
)

__all__ = [
    "MODES",
    "SUITE",
    "Metric",
    "ScaleIntervals",
    "ScaleOutputError",
    "ScaleResult",
    "ScaleTest",
    "list_scale_tests",
    "metric_names",
    "parse_scale",
    "run_scale",
    "scale_from_output",
    "scale_probe_args",
]
