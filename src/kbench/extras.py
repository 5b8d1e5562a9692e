"""kbench's optional parts (the extras of ``kbench-lab``) and the one error for a missing one.

A command that needs an extra checks for it before it does anything else (``require``), so
that a comparison is not measured for ten minutes before its HTML report finds no
matplotlib. An import of an extra's module that fails anyway (``missing_from``) ends the
same way: one line naming the install command, exit 16 (docs/exit-codes.md), no traceback.
This module imports nothing heavy: it only asks whether a module could be imported.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Final

from kbench import exit_codes
from kbench.exit_codes import KbenchError

DISTRIBUTION: Final = "kbench-lab"

EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "plots": ("matplotlib",),
    "web": ("fastapi", "uvicorn"),
    "parquet": ("pyarrow",),
    "postgres": ("psycopg",),
    "fleet": ("celery", "kombu", "redis", "psycopg"),
}
"""Each extra (pyproject.toml's ``[project.optional-dependencies]``) and the top-level modules
kbench imports from it (or SQLAlchemy does for it: psycopg), in the order ``missing_from``
consults them: a module of two extras (psycopg) names the first, the smaller."""


class ExtraMissing(KbenchError):
    """``what`` needs the extra ``extra``, whose module ``module`` is not installed."""

    exit_code = exit_codes.EXTRA_MISSING

    def __init__(self, extra: str, what: str, module: str, hint: str = ""):
        self.extra = extra
        self.what = what
        self.module = module
        self.hint = hint
        super().__init__(f"{what} needs kbench's [{extra}] extra, which is not installed (no module {module!r}): "
                         f"{install_command(extra)}{f' ({hint})' if hint else ''}")


def install_command(extra: str) -> str:
    """The command that adds ``extra`` to the environment kbench runs in: pipx's when kbench
    was installed by pipx (its environment has no pip of the user's), pip's otherwise."""
    if (Path(sys.prefix) / "pipx_metadata.json").is_file():
        return f"pipx install --force '{DISTRIBUTION}[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _installed(module: str) -> bool:
    if sys.modules.get(module) is not None:
        # Imported already: kombu replaces its module by a lazy one whose __spec__ is None,
        # on which find_spec raises ValueError.
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken package, or one hidden by sys.modules[name] = None
        return False


def require(extra: str, what: str, hint: str = "") -> None:
    """Raise ``ExtraMissing`` unless every module of ``extra`` can be imported; ``what`` says
    what needs it (``kbench serve``, ``--report-dir's HTML report``). Imports nothing."""
    for module in EXTRAS[extra]:
        if not _installed(module):
            raise ExtraMissing(extra, what, module, hint)


def missing_from(error: ImportError, what: str) -> ExtraMissing | None:
    """The ``ExtraMissing`` an import error means, when the module it could not import belongs
    to an extra (``None`` otherwise: a bug, to be raised as it is)."""
    name = getattr(error, "name", None)
    if not name:
        return None
    top = name.partition(".")[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return ExtraMissing(extra, what, top)
    return None
