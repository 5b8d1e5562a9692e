"""The store's errors, importable without the database layer (the CLI maps them to exit codes)."""


class StoreError(RuntimeError):
    """The database cannot be used as asked (missing run, newer schema, bad URL)."""


class RunNotFound(StoreError):
    """No run has the requested id."""


class BisectionNotFound(RunNotFound):
    """No bisection has the requested id (exit code as for a missing run)."""
