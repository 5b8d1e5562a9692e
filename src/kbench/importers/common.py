"""What every importer of another tool's results does: one metric series per sample column,
summarised as kbench summarises its own runs, in a run header of the suite format.

An imported run is stored like a whole-tool (suite) run: ``columns`` holds one value per
execution of the thing measured (a command's wall time, a pyperf value) under the metric's
name, and the header lists the metrics (name, unit, direction). The header's ``imported``
entry keeps what the tool's file said that kbench has no column for, so an export in the
same format gives the file back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, TypeVar, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, StrictInt, StrictStr, ValidationError

from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.stats.summary import summarize
from kbench.store.records import SummaryRecord, summary_columns
from kbench.store.recovery import PendingRun


@dataclass(frozen=True)
class ImportedMetric:
    """One metric of an imported run: its name ``<tool>.<test>.<stat>``, unit and values in order."""

    name: str
    unit: str
    values: Sequence[float]
    direction: str = LOWER_IS_BETTER


class SummariesWhenRead(Sequence[SummaryRecord]):
    """The summaries of an imported run's metrics (``summarize`` of each metric's values, in
    order), computed when first read: a file whose runs are all stored already needs none."""

    def __init__(self, metrics: tuple[ImportedMetric, ...], columns: Mapping[str, np.ndarray]):
        self._metrics = metrics
        self._columns = columns

    @cached_property
    def _records(self) -> list[SummaryRecord]:
        records = []
        for metric in self._metrics:
            values = self._columns[metric.name]
            if values.size:
                summary = summarize(values)
                records.append(SummaryRecord(metric=metric.name, unit=metric.unit, basis="raw",
                                             values=summary_columns(summary), details=summary.to_dict()))
        return records

    @overload
    def __getitem__(self, index: int) -> SummaryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SummaryRecord]: ...

    def __getitem__(self, index: int | slice) -> SummaryRecord | Sequence[SummaryRecord]:
        return self._records[index]

    def __len__(self) -> int:
        return len(self._records)


def imported_run(
    *,
    tool: str,
    benchmark: str,
    params: Mapping[str, str],
    metrics: Sequence[ImportedMetric],
    extra_columns: Mapping[str, np.ndarray],
    imported: Mapping[str, Any],
    started_at: datetime,
    digest: str,
    tags: Sequence[str] = (),
) -> PendingRun:
    """A complete run of ``benchmark`` whose first metric is the primary one."""
    primary = metrics[0]
    columns: dict[str, np.ndarray] = {m.name: np.asarray(m.values, dtype=np.float64) for m in metrics}
    columns.update(extra_columns)
    header = {
        "format": SUITE_FORMAT,
        "workload": benchmark,
        "tool": tool,
        "params": dict(params),
        "metrics": [{"name": m.name, "unit": m.unit, "direction": m.direction} for m in metrics],
        "imported": dict(imported),
    }
    n = len(primary.values)
    return PendingRun(
        run={
            "benchmark": benchmark, "metric": primary.name, "unit": primary.unit, "direction": primary.direction,
            "params": dict(params), "request": {"benchmark": benchmark, "params": dict(params), "iterations": n,
                                                "imported": tool},
            "sysinfo": None, "target": None, "tags": [f"imported:{tool}", *tags],
            "started_at": started_at.isoformat(),
        },
        status="complete",
        columns=columns,
        probe_header=header,
        summaries=SummariesWhenRead(tuple(metrics), columns),
        warnings=[f"imported from {tool}'s file {imported.get('file', '?')}: no machine inventory or kernel "
                  "target was recorded with it"],
        error=None,
        tool_output=None,
        digest=digest,
    )


FiniteNumber = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""A JSON number (an integer or a float, not true/false, not NaN or infinite)."""
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]
"""A JSON integer that fits a stored 64-bit column."""
NonNegativeInt64 = Annotated[int, Strict(), Field(ge=0, le=2**63 - 1)]
JsonScalar = StrictStr | StrictBool | StrictInt | FiniteNumber | None

MAX_PROBLEMS_SHOWN = 1
"""An invalid file is named with its first problem (and how many more there are): one line."""

Model = TypeVar("Model", bound=BaseModel)


class ImportedFile(BaseModel):
    """A tool's file as read: fields kbench does not use are kept (and ignored)."""

    model_config = ConfigDict(extra="allow", frozen=True)


def validated_json(model: type[Model], data: bytes, path: Path, what: str) -> Model:
    """``data`` parsed as JSON and checked against ``model`` in one pass (pydantic); a
    ValueError naming the file, the field and what is wrong with it otherwise."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise ValueError(problem_line(path, exc, what)) from None


def problem_line(path: Path, error: ValidationError, what: str) -> str:
    """``FILE: damaged WHAT: FIELD: what is wrong (got VALUE)``, and how many more problems
    the file has; ``FILE: cannot read it as a WHAT: not valid JSON: …`` for text that is not JSON."""
    problems = error.errors(include_url=False)
    first = problems[0]
    if first["type"] == "json_invalid":
        return f"{path}: cannot read it as a {what}: not valid JSON: {first['msg'].removeprefix('Invalid JSON: ')}"
    where = field_path(first["loc"]) or "the file"
    line = f"{path}: damaged {what}: {where}: {_message(first)}"
    if len(problems) > MAX_PROBLEMS_SHOWN:
        extra = len(problems) - MAX_PROBLEMS_SHOWN
        line += f" (and {extra} more problem{'s' if extra > 1 else ''})"
    return line


def field_path(loc: Sequence[int | str]) -> str:
    """``results[0].exit_codes[3]`` from pydantic's location tuple."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in _UNION_BRANCHES:
            continue  # which branch of a union pydantic tried: not a field of the file
        else:
            text += f".{part}" if text else str(part)
    return text


_UNION_BRANCHES = {"str", "bool", "int", "float", "none", "list[...]", "dict[str,...]", "function-after[...]"}


_EXPECTED = {
    "list_type": "a list expected", "tuple_type": "a list expected", "dict_type": "a mapping expected",
    "model_type": "a mapping expected", "model_attributes_type": "a mapping expected",
    "float_type": "a number expected", "float_parsing": "a number expected", "int_type": "an integer expected",
    "int_from_float": "an integer expected", "int_parsing": "an integer expected", "string_type": "a string expected",
    "bool_type": "true or false expected", "finite_number": "a finite number expected",
    "datetime_type": "a date and time expected (ISO 8601: 2026-11-20T03:00:00+00:00)",
    "datetime_parsing": "a date and time expected (ISO 8601: 2026-11-20T03:00:00+00:00)",
    "datetime_from_date_parsing": "a date and time expected (ISO 8601: 2026-11-20T03:00:00+00:00)",
    "string_pattern_mismatch": "holds a control character", "none_required": "null expected",
}
"""pydantic's error types, said the way kbench says them."""


def _message(problem: Mapping[str, Any]) -> str:
    kind = str(problem["type"])
    context = problem.get("ctx") or {}
    if kind == "missing":
        return "missing (it is required)"
    if kind == "value_error":
        return str(problem["msg"]).removeprefix("Value error, ")
    if kind in _EXPECTED:
        message = _EXPECTED[kind]
    elif kind == "too_short" and context.get("min_length") == 1:
        message = "must not be empty"
    elif kind == "literal_error":
        message = f"one of {context.get('expected')} expected"
    elif kind == "string_too_long":
        message = f"longer than {context.get('max_length')} characters"
    elif kind == "greater_than_equal":
        message = f"must be at least {context.get('ge')}"
    elif kind == "less_than_equal":
        message = f"must be at most {context.get('le')}"
    else:
        text = str(problem["msg"])
        message = text[:1].lower() + text[1:]
    shown = _shown(problem.get("input"))
    return f"{message} (got {shown})" if shown and kind not in ("string_too_long",) else message


def _shown(value: Any, limit: int = 40) -> str:
    """A short, printable rendering of a rejected value."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list" if value else "[]"
    text = json.dumps(value) if value is None or isinstance(value, bool | str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
