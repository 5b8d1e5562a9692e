"""Exit codes of the ``kbench`` command (documented in the README)."""

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
