"""Every kind of benchmark, found by its name or by the output it wrote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.kinds import kfunc, probe, scale, suite, trace
from kbench.kinds.base import Kind

KINDS: tuple[Kind, ...] = (probe.KIND, kfunc.KIND, scale.KIND, suite.KIND, trace.KIND)
"""In catalog order."""


class UnknownKind(LookupError):
    """No kind has that name."""


def kind_named(name: str) -> Kind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise UnknownKind(f"no benchmark kind {name!r}; the kinds: {', '.join(k.name for k in KINDS)}")


def kind_that_wrote(header: Mapping[str, Any]) -> Kind | None:
    """The kind whose output ``header`` is (None for a run that wrote no header)."""
    for kind in KINDS:
        if kind.wrote(header):
            return kind
    return None
