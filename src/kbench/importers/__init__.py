"""Bring runs made elsewhere into the results database: one importer per file format.

An importer names its format, recognises a file by its first bytes, and turns it into
``PendingRun``s (what the store's ``begin_run`` and ``finish_run`` take). Formats: kbench
recovery files, hyperfine's ``--export-json`` (``importers.hyperfine``) and pyperf's JSON
(``importers.pyperf``). Adding a format is one module here and one entry in ``IMPORTERS``;
``kbench import --format NAME`` and the automatic detection then know it.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbench.importers.hyperfine import load_hyperfine, looks_like_hyperfine
from kbench.importers.pyperf import load_pyperf, looks_like_pyperf
from kbench.store.recovery import PendingRun, load_recovery, looks_like_recovery

DETECT_BYTES = 4096
GZIP_MAGIC = b"\x1f\x8b"


class ImportProblem(ValueError):
    """A file cannot be imported: unknown or damaged format."""


@dataclass(frozen=True)
class Importer:
    name: str
    description: str
    detect: Callable[[bytes], bool]
    """True if a file starting with these bytes is in this format."""
    load: Callable[[Path], list[PendingRun]]
    """The runs in a file (ValueError saying what is wrong with it)."""


IMPORTERS: dict[str, Importer] = {
    importer.name: importer
    for importer in (
        Importer(
            "recovery",
            "a kbench recovery file: a measured run the database could not take",
            looks_like_recovery,
            lambda path: [load_recovery(path)],
        ),
        Importer(
            "hyperfine",
            "hyperfine --export-json: a run per command, every execution's time",
            looks_like_hyperfine,
            load_hyperfine,
        ),
        Importer(
            "pyperf",
            "pyperf JSON (pyperf -o, pyperformance): a run per benchmark, every value of every process",
            looks_like_pyperf,
            load_pyperf,
        ),
    )
}


def read_runs(path: Path, fmt: str = "auto") -> tuple[str, list[PendingRun]]:
    """(format, runs) of ``path``; ``auto`` picks the format from the file's first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(DETECT_BYTES)
        if head.startswith(GZIP_MAGIC):  # pyperf writes FILE.json.gz compressed
            with gzip.open(path, "rb") as f:
                head = f.read(DETECT_BYTES)
    except (OSError, EOFError) as exc:
        raise ImportProblem(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from exc
    if fmt == "auto":
        found = [importer for importer in IMPORTERS.values() if importer.detect(head)]
        if not found:
            known = ", ".join(IMPORTERS)
            raise ImportProblem(f"{path}: not in a format kbench can import: it is none of {known} "
                                f"(`kbench import --help` describes them)")
        importer = found[0]
    elif fmt in IMPORTERS:
        importer = IMPORTERS[fmt]
    else:
        raise ImportProblem(f"unknown import format {fmt!r} (known: {', '.join(IMPORTERS)})")
    try:
        return importer.name, importer.load(path)
    except ValueError as exc:
        raise ImportProblem(str(exc)) from exc


__all__ = ["IMPORTERS", "ImportProblem", "Importer", "PendingRun", "read_runs"]
