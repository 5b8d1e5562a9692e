"""``kbench import FILE``: store runs kept in files (recovery files, hyperfine and pyperf JSON)."""

from __future__ import annotations

from pathlib import Path

import click

from kbench import exit_codes
from kbench.cli.console import echo_literal
from kbench.cli.main import Context, fail, pass_context, user_errors
from kbench.importers import IMPORTERS, ImportProblem, read_runs
from kbench.store.recovery import PendingRun


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["auto", *IMPORTERS]), default="auto", show_default=True,
    help="The files' format; auto recognises it from the content.",
)
@pass_context
def import_cmd(ctx: Context, files: tuple[Path, ...], fmt: str) -> None:
    """Store the runs in FILES: kbench recovery files, hyperfine and pyperf JSON.

    \b
    Formats (recognised from the content):
      recovery   the file a failed database left: completes the run it was written
                 for when that run still waits in this database, else adds it
      hyperfine  hyperfine --export-json: a run of hyperfine.command per command
                 (parameter command), every execution's time in seconds
      pyperf     pyperf JSON (pyperf timeit -o, pyperformance): a run of
                 pyperf.benchmark per benchmark (parameter name), every value
    Each file's runs are stored together or not at all. A run is identified by
    a digest of its content: importing a file twice adds nothing. A file must
    be a regular file of at most 32 MiB (1 GiB for a recovery file), inflated.
    Compare imported runs with
    `kbench compare --runs ID --runs ID`; see docs/interop.md.
    """
    loaded = []
    for path in files:
        try:
            loaded.append((path, *read_runs(path, fmt)))
        except ImportProblem as exc:
            fail(str(exc), exit_codes.USAGE)
    with user_errors():
        stored = _all_stored(ctx, [run for _, _, runs in loaded for run in runs])
        for path, found_format, runs in loaded:
            outcome = ([(stored[str(run.digest)], "exists") for run in runs] if stored is not None
                       else ctx.store.store_pending_runs(runs))
            for run, (run_id, how) in zip(runs, outcome, strict=True):
                what = {"completed": "completed run", "added": "added as run", "exists": "already stored as run"}[how]
                echo_literal(f"{path}: {found_format}: {what} {run_id} ({run.run['benchmark']}, {run.status}, "
                                             f"{len(next(iter(run.columns.values()))) if run.columns else 0} samples)")


def _all_stored(ctx: Context, runs: list[PendingRun]) -> dict[str, int] | None:
    """digest -> run id when every one of ``runs`` is stored already (each found by its content
    digest, as ``Store.store_pending_runs`` finds it), read without opening the store for
    writing (a SQLite file: through sqlite3, SQLAlchemy not imported); None otherwise."""
    digests = {run.digest for run in runs}
    if None in digests:
        return None
    stored = ctx.reader.stored_digests({str(digest) for digest in digests})
    return stored if all(str(digest) in stored for digest in digests) else None
