"""What counts a run's instructions, named in its header and in every report of it.

Three counters (docs/instructions.md):

- ``pmu``: the CPU's own counter through ``perf_event_open`` (the probe's ``--counters``,
  kbench.ko's ``counters``), where this machine has one that counts instructions;
- ``valgrind``: Debian's valgrind, which executes user space on a synthetic CPU and counts
  every instruction the program's own code executes (never the kernel's);
- ``plugin``: kbench's qemu TCG plugin in a guest, over the regions kbench marks, kernel and
  user apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PMU = "pmu"
VALGRIND = "valgrind"
PLUGIN = "plugin"



@dataclass(frozen=True)
class CountSource:
    """One counter, as a run names it.

    name: ``pmu``, ``valgrind`` or ``plugin``; tool: the program and version that counted;
    scope: what it sees (``user``, ``user+kernel``, ``kernel and user apart``); region: what one
    sample's count covers; varies: why two counts of the same code may differ with it.
    """

    name: str
    tool: str
    scope: str
    region: str
    varies: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountSource:
        return cls(**{key: str(data.get(key, "")) for key in ("name", "tool", "scope", "region", "varies")})
