"""A run's context as readable facts for the dashboard's pages (never raw JSON or Python reprs).

The run page shows the run context with the lines ``kbench show`` prints (``usage_lines``),
the noise checklist ``kbench sysinfo`` prints for the machine as it was when the run was
measured, and the request as the options that were set; the compare page shows parameters
as ``key=value``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.sysinfo.checklist import noise_checklist
from kbench.sysinfo.usage import parse_usage, usage_lines

SHOWN_ELSEWHERE = ("benchmark", "params", "commit", "label", "tags")
"""Request fields the run page shows in rows of their own."""


def params_text(params: Mapping[str, Any] | None) -> str:
    """``spin=100 mode=thread``, or ``-`` without parameters."""
    return " ".join(f"{key}={value}" for key, value in (params or {}).items()) or "-"


def usage_text(usage: Mapping[str, Any] | None) -> list[str]:
    """The run context lines of ``kbench show`` for a probe header's ``usage`` object."""
    parsed = parse_usage({"usage": dict(usage)}) if usage else None
    return usage_lines(parsed) if parsed is not None else []


def noise_rows(context: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(item, state, value) of the noise checklist for the machine as the run stored it."""
    info = {"noise": context.get("noise") or {}, "virtualization": context.get("virtualization") or {},
            "cpu": {"count": context.get("cpus")}}
    return [(item.name, item.state, item.value) for item in noise_checklist(info)]


def request_items(request: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The options the run was asked for that were set (not None, False or empty), as (name, value)."""
    found = []
    for key, value in (request or {}).items():
        if key in SHOWN_ELSEWHERE or value is None or value is False or value in ({}, [], ""):
            continue
        found.append((key.replace("_", " "), "yes" if value is True else _plain(value)))
    return found


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return params_text(value)
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value)
    return str(value)
