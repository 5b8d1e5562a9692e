"""Kernel function names from /proc/kallsyms: is a name probeable, and what is near it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kbench.contract.suggest import close_matches

FUNCTION_TYPES = frozenset("tT")
"""kallsyms types of code: a probe goes on one of these."""
NAME_PATTERN = re.compile(r"^(?:[A-Za-z0-9_]+:)?[A-Za-z0-9_.]+$")
"""What kbench.ko's ``trace/functions`` accepts: a symbol, optionally ``module:symbol``."""
MAX_NAME = 127
NEAR_MATCHES = 6


class UnknownFunction(ValueError):
    """A name that is not a probeable function of the kernel; the message lists near matches."""


@dataclass(frozen=True)
class Kallsyms:
    """Symbol name -> kallsyms types, with the module for module symbols (``name [mod]``)."""

    types: dict[str, str]
    modules: dict[str, str]
    source: str = "/proc/kallsyms"

    @classmethod
    def parse(cls, text: str, source: str = "/proc/kallsyms") -> Kallsyms:
        types: dict[str, str] = {}
        modules: dict[str, str] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 3:
                continue
            kind, name = parts[1], parts[2]
            types[name] = types.get(name, "") + kind
            if len(parts) > 3:
                modules[name] = parts[3].strip("[]")
        return cls(types, modules, source)

    def functions(self) -> list[str]:
        return [name for name, kinds in self.types.items() if FUNCTION_TYPES & set(kinds)]

    def near(self, name: str) -> list[str]:
        """Functions whose name contains ``name``, then the closest spellings."""
        functions = self.functions()
        bare = name.split(":")[-1]
        containing = sorted((f for f in functions if bare in f and f != bare), key=len)[:NEAR_MATCHES // 2]
        close = close_matches(bare, functions, n=NEAR_MATCHES, cutoff=0.6)
        return list(dict.fromkeys(containing + close))[:NEAR_MATCHES]

    def check(self, name: str) -> None:
        """UnknownFunction unless ``name`` is a function symbol (of its module, if given)."""
        if len(name) > MAX_NAME or not NAME_PATTERN.match(name):
            raise UnknownFunction(f"{name!r} is not a kernel symbol name ([A-Za-z0-9_.], optionally module:name)")
        module, _, bare = name.rpartition(":")
        kinds = self.types.get(bare)
        if kinds is None or (module and self.modules.get(bare) != module):
            near = self.near(name)
            hint = f"; near matches: {', '.join(near)}" if near else ""
            raise UnknownFunction(f"no function {name} in this kernel's {self.source}{hint}")
        if not FUNCTION_TYPES & set(kinds):
            raise UnknownFunction(f"{name} is not a function (kallsyms type {kinds}): only code can be probed")


SYSTEM_MAP_HEAD_LINES = 200
"""A real System.map lists code (``_text``, ``startup_64``) within its first lines."""


def system_map_of(vmlinuz: Path, release: str, build_dir: Path | None) -> Path | None:
    """The System.map that goes with a kernel image, if there is one: ``boot/System.map-RELEASE``
    beside ``vmlinuz``, or a build tree's ``System.map``. Debian's packages ship a placeholder
    there (one line: "The real System.map is in the linux-image-<version>-dbg package"): a map
    that lists no code is not one."""
    for candidate in (vmlinuz.parent / f"System.map-{release}", *([build_dir / "System.map"] if build_dir else [])):
        if candidate.is_file() and _lists_code(candidate):
            return candidate
    return None


def _lists_code(system_map: Path) -> bool:
    with system_map.open(errors="replace") as lines:
        for _, line in zip(range(SYSTEM_MAP_HEAD_LINES), lines, strict=False):
            parts = line.split()
            if len(parts) >= 3 and parts[1] in FUNCTION_TYPES:
                return True
    return False
