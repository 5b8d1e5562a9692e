"""The ``format`` a measurement's header names, for the writers that are not a kind's own."""

SUITE_FORMAT = "kbench-suite/1"
"""A suite run's header (``kbench.kinds.suite``, written by ``kinds/suite/run.py``)."""

CROSSCHECK_FORMAT = "kbench-crosscheck/1"
"""A method's values of ``kbench crosscheck`` (``kbench.engine.crosscheck_store``)."""
