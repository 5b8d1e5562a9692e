"""Exit codes of the ``kbench`` command (docs/exit-codes.md), and the one base of the errors
that end a command with theirs.

An error a user can meet (a bad request, a missing run, a store that cannot be used, a kernel
that did not build) is a ``KbenchError`` whose class says its exit code; ``kbench.cli.errors``
prints its message as one line and exits with that code, whatever room raised it. A subclass
overrides its base's code (``RunNotFound`` is a ``StoreError`` that exits 4, not 5).
"""

from __future__ import annotations

from typing import ClassVar

OK = 0
USAGE = 2  # bad option, unknown benchmark or parameter, invalid value, limit, unwritable output
MEASUREMENT_FAILED = 3  # the target or the probe could not run the benchmark
NOT_FOUND = 4  # no such run in the store
STORE_FAILED = 5  # the results database cannot be opened or written
TUNE_FAILED = 6  # kbench tune: a knob that exists here could not be changed
BROKER_FAILED = 7  # kbench fleet/worker: the Redis broker did not answer
VERDICT_FOUND = 9  # --fail-on: a verdict it names (regression, improvement) was found
NO_REPRODUCIBLE_DIFFERENCE = 10  # kbench bisect: good and bad do not differ significantly
BISECT_FAILED = 11  # kbench bisect: a reference does not build, or git refused
EXECUTION_FAILED = 12  # a measured execution failed (non-zero exit, signal, error): never timed
BISECT_INCONCLUSIVE = 13  # kbench bisect: it ended without a confirmed culprit (first_bad is null)
MAIL_FAILED = 14  # kbench watch: a mail was not sent (its mail command failed or timed out, no recipient)
KERNEL_BUILD_FAILED = 15  # a kernel kbench builds (kernel build, a tree: spec) did not compile
EXTRA_MISSING = 16  # an optional part this needs is not installed (pip install 'kbench-lab[EXTRA]'); nothing was done
INTERRUPTED = 130  # Ctrl-C: finished samples were kept, run marked interrupted
TERMINATED = 143  # SIGTERM, handled like Ctrl-C


class KbenchError(Exception):
    """An error that ends a command: ``detail_lines()`` one per line, then ``kbench: error:
    {message()}`` on stderr, and the exit code ``exit_code``."""

    exit_code: ClassVar[int] = USAGE

    def message(self) -> str:
        """The error's line (after ``kbench: error:``); by default the exception's text."""
        return str(self)

    def detail_lines(self) -> tuple[object, ...]:
        """Lines printed before the error's own, one per line (an invalid job file's problems)."""
        return ()
