"""Bring runs made elsewhere into the results database: one importer per file format.

An importer names its format, recognises a file by its first bytes, and turns it into
``PendingRun``s (what the store's ``begin_run`` and ``finish_run`` take). Formats: kbench
recovery files, hyperfine's ``--export-json`` (``importers.hyperfine``) and pyperf's JSON
(``importers.pyperf``). Adding a format is one module here and one entry in ``IMPORTERS``;
``kbench import --format NAME`` and the automatic detection then know it.

A file is read only if it is a regular file no bigger than its format allows
(``Importer.max_bytes``; a gzip-compressed one is inflated no further than that), and each
format checks every field it reads for its type before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbench.importers.files import UnreadableFile, inflate_bounded, mebibytes, read_bounded, read_head
from kbench.importers.hyperfine import load_hyperfine, looks_like_hyperfine
from kbench.importers.pyperf import load_pyperf, looks_like_pyperf
from kbench.importers.recovery import load_recovery, looks_like_recovery
from kbench.store.recovery import PendingRun

DETECT_BYTES = 4096
MAX_TOOL_FILE_BYTES = 32 << 20
"""Largest hyperfine or pyperf file, inflated (the biggest real ones are a few MiB: a
pyperformance suite, hyperfine's 10⁵ runs of a command)."""
MAX_RECOVERY_FILE_BYTES = 1 << 30
"""Largest recovery file (kbench's own: a run of 10⁸ samples takes some 500 MiB)."""


class ImportProblem(ValueError):
    """A file cannot be imported: unknown or damaged format."""


@dataclass(frozen=True)
class Importer:
    name: str
    description: str
    detect: Callable[[bytes], bool]
    """True if a file starting with these bytes is in this format."""
    load: Callable[[Path, bytes], list[PendingRun]]
    """The runs in a file, given its name and its (inflated) bytes; ValueError naming the
    file and the field otherwise."""
    max_bytes: int = MAX_TOOL_FILE_BYTES
    """The most a file of this format may hold, on disk and inflated."""


IMPORTERS: dict[str, Importer] = {
    importer.name: importer
    for importer in (
        Importer(
            "recovery",
            "a kbench recovery file: a measured run the database could not take",
            looks_like_recovery,
            load_recovery,
            MAX_RECOVERY_FILE_BYTES,
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
    if fmt != "auto" and fmt not in IMPORTERS:
        raise ImportProblem(f"unknown import format {fmt!r} (known: {', '.join(IMPORTERS)})")
    try:
        if fmt == "auto":
            head = read_head(path, DETECT_BYTES)
            found = [importer for importer in IMPORTERS.values() if importer.detect(head)]
            if not found:
                known = ", ".join(IMPORTERS)
                raise ImportProblem(f"{path}: not in a format kbench can import: it is none of {known} "
                                    f"(`kbench import --help` describes them)")
            importer = found[0]
        else:
            importer = IMPORTERS[fmt]
        data = inflate_bounded(path, read_bounded(path, importer.max_bytes), importer.max_bytes)
        return importer.name, importer.load(path, data)
    except ImportProblem:
        raise
    except (UnreadableFile, ValueError) as exc:
        raise ImportProblem(str(exc)) from exc


__all__ = ["IMPORTERS", "ImportProblem", "Importer", "PendingRun", "mebibytes", "read_runs"]
