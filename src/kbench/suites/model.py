"""The data every suite declares: its tests, their parameters and their metrics.

A suite wraps one external tool (hackbench, stress-ng, fio, sysbench). A test of a
suite is named ``<suite>.<test>`` and reports several metrics ``<suite>.<test>.<stat>``;
the first metric of a test is its primary metric (the one a catalog entry shows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbench.contract.benchmark import BadParameter
from kbench.contract.suggest import did_you_mean
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER

ParamValue = int | float | str | bool

_TRUE = ("1", "true", "yes")
_FALSE = ("0", "false", "no")


class UnknownSuiteTest(LookupError):
    """No suite or no test of a suite has that name; the message suggests close ones."""


class BadSuiteParameter(BadParameter):
    """A suite parameter is unknown, has the wrong type, or is out of range."""




@dataclass(frozen=True)
class SuiteParam:
    """One parameter: ``type`` is "int", "float", "str" or "bool"; ``default`` is text.

    ``minimum``/``maximum`` bound ints and floats, ``choices`` lists the accepted
    strings, and ``pattern`` (a full-match regular expression) constrains other strings;
    ``pattern_hint`` says in words what the pattern accepts.
    """

    name: str
    type: str
    default: str
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    pattern_hint: str = ""

    def coerce(self, bench: str, raw: ParamValue) -> ParamValue:
        """``raw`` (text from a CLI or job file, or a Python value) as this param's type.

        Raises BadSuiteParameter naming ``bench``, the parameter, the value and what
        would have been accepted.
        """
        text = str(raw).strip()
        if self.type == "bool":
            return self._coerce_bool(bench, raw, text)
        if self.type in ("int", "float"):
            return self._coerce_number(bench, raw, text)
        if self.choices and text not in self.choices:
            raise BadSuiteParameter(
                f"{bench}: {self.name} must be one of {', '.join(self.choices)}, got {text!r}"
                f"{did_you_mean(text, list(self.choices))}"
            )
        if self.pattern is not None and not re.fullmatch(self.pattern, text):
            raise BadSuiteParameter(f"{bench}: {self.name} must be {self.pattern_hint or self.pattern}, got {text!r}")
        return text

    def _coerce_bool(self, bench: str, raw: ParamValue, text: str) -> bool:
        if isinstance(raw, bool):
            return raw
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise BadSuiteParameter(f"{bench}: {self.name} must be 0 or 1, got {text!r}")

    def _coerce_number(self, bench: str, raw: ParamValue, text: str) -> int | float:
        value: int | float
        if isinstance(raw, bool):
            raise BadSuiteParameter(f"{bench}: {self.name} must be a number, got {raw!r}")
        try:
            value = int(text, 0) if self.type == "int" else float(text)
        except ValueError:
            kind = "an integer" if self.type == "int" else "a number"
            raise BadSuiteParameter(f"{bench}: {self.name} must be {kind}, got {text!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise BadSuiteParameter(f"{bench}: {self.name} must be ≥ {self.minimum:g}, got {text}")
        if self.maximum is not None and value > self.maximum:
            raise BadSuiteParameter(f"{bench}: {self.name} must be ≤ {self.maximum:g}, got {text}")
        return value


@dataclass(frozen=True)
class SuiteMetric:
    """One reported statistic of a test: ``stat`` is the last part of the metric name."""

    stat: str
    unit: str
    direction: str  # LOWER_IS_BETTER or HIGHER_IS_BETTER
    description: str

    def __post_init__(self) -> None:
        if self.direction not in (LOWER_IS_BETTER, HIGHER_IS_BETTER):
            raise ValueError(f"metric {self.stat}: direction must be lower or higher, got {self.direction!r}")


@dataclass(frozen=True)
class SuiteTest:
    """One test of a suite; ``metrics[0]`` is its primary metric."""

    suite: str
    name: str
    description: str
    params: tuple[SuiteParam, ...]
    metrics: tuple[SuiteMetric, ...]
    unavailable: str = ""
    """Why this test cannot run here (its tool was built without it), or empty."""

    @property
    def full_name(self) -> str:
        return f"{self.suite}.{self.name}"

    @property
    def primary(self) -> SuiteMetric:
        return self.metrics[0]

    def metric_name(self, stat: str) -> str:
        """``<suite>.<test>.<stat>``."""
        return f"{self.full_name}.{stat}"

    def metric_names(self) -> list[str]:
        return [self.metric_name(m.stat) for m in self.metrics]

    def param(self, name: str) -> SuiteParam:
        for spec in self.params:
            if spec.name == name:
                return spec
        known = [p.name for p in self.params]
        raise BadSuiteParameter(
            f"{self.full_name} has no parameter {name!r}{did_you_mean(name, known)}; "
            f"its parameters: {', '.join(known) or 'none'}"
        )

    def resolve(self, values: dict[str, ParamValue]) -> dict[str, ParamValue]:
        """Every parameter of this test, typed: ``values`` checked, defaults filled in."""
        for name in values:
            self.param(name)
        resolved: dict[str, ParamValue] = {}
        for spec in self.params:
            raw = values.get(spec.name, spec.default)
            resolved[spec.name] = spec.coerce(self.full_name, raw)
        return resolved
