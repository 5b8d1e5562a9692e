"""The will-it-scale testcases the probe offers (``kbench-probe --list-scale``): no numpy here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench import children
from kbench.contract.vocabulary import HIGHER_IS_BETTER
from kbench.native import find_native

SUITE = "will-it-scale"
MODES = ("process", "thread")


@dataclass(frozen=True)
class ScaleTest:
    """One testcase as ``kbench-probe --list-scale`` describes it."""

    name: str
    description: str
    op: str
    unit: str
    direction: str
    params: tuple[dict[str, Any], ...]

    @property
    def benchmark(self) -> str:
        """The benchmark name: ``will-it-scale.<test>``."""
        return f"{SUITE}.{self.name}"


def list_scale_tests(probe: str | Path | None = None) -> list[ScaleTest]:
    """The testcases of ``kbench-probe --list-scale``."""
    exe = str(probe or find_native("kbench-probe"))
    out = children.run([exe, "--list-scale"], capture_output=True, text=True, check=True)
    return [
        ScaleTest(
            name=e["name"],
            description=e.get("description", ""),
            op=e.get("op", ""),
            unit=e.get("unit", "ops/s"),
            direction=e.get("direction", HIGHER_IS_BETTER),
            params=tuple(e.get("params", [])),
        )
        for e in json.loads(out.stdout)
    ]
