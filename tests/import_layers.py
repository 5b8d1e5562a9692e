"""Check kbench's import structure: no import cycle, and imports only go down the layers.

    python -m tests.import_layers            # exit 1 and list the problems if there are any

Every ``import`` statement of ``src/kbench`` counts: at module level, inside a function
(an import moved into a function still depends on its module, it only hides the cycle)
and under ``TYPE_CHECKING``. The layers are listed bottom first (docs/architecture.md
explains them); a room may import its own modules and the rooms of lower layers. Rooms
on one line of ``LAYERS`` are independent: neither imports the other.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "kbench"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("contract", "durations", "native", "resources", "procfs", "interrupts", "_guardian", "git", "cachefiles",
     "extras"),
    ("children", "workspaces"),
    ("stats",),
    ("compare", "sysinfo", "profile"),
    ("store", "kernels"),
    ("targets",),
    ("kmodtools",),
    ("suites", "trace"),
    ("kinds",),
    ("catalog",),
    ("jobs",),
    ("engine",),
    ("bisect", "history", "importers"),
    ("report", "builds"),
    ("fleet", "web"),
    ("watch",),
    ("cli",),
)
"""Rooms from the bottom up. ``kbench`` itself (the version), then ``kbench.exit_codes`` (the exit
codes and ``KbenchError``, the base of every error that ends a command with one) are below everything."""
BELOW_LAYERS: tuple[str, ...] = ("", "exit_codes")
"""The rooms below ``LAYERS``, bottom first: ``kbench`` itself and ``kbench.exit_codes``."""

KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()
"""(importer, imported) module pairs still pointing up, each to be removed; a pair that
no longer exists must be deleted from here too (the check says so)."""

KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
"""Import cycles (as sets of modules) still to be broken; same rule as KNOWN_UPWARD."""


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int


def module_name(path: Path, source: Path = SOURCE) -> str:
    parts = list(path.relative_to(source).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(source: Path = SOURCE) -> dict[str, Path]:
    found = {}
    for path in sorted((source / PACKAGE).rglob("*.py")):
        found[module_name(path, source)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The kbench module ``name`` refers to (a package's attribute resolves to the package)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    """Every import of a kbench module in ``path``, wherever the statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                resolved = _resolve(target, known)
                if resolved is not None and resolved != name:
                    yield Import(name, resolved, node.lineno)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of() -> dict[str, int]:
    index = {name: level - len(BELOW_LAYERS) for level, name in enumerate(BELOW_LAYERS)}
    for level, rooms in enumerate(LAYERS):
        for name in rooms:
            index[name] = level
    return index


def upward(edges: Iterable[Import]) -> list[Import]:
    """Imports of a higher layer's room, or of another room of the same layer."""
    levels = layer_of()
    found = []
    seen = set()
    for edge in edges:
        source, target = room(edge.importer), room(edge.imported)
        if source == target or (edge.importer, edge.imported) in seen:
            continue
        seen.add((edge.importer, edge.imported))
        if source not in levels or target not in levels:
            raise SystemExit(f"room {source if source not in levels else target!r} is not in LAYERS")
        if levels[target] >= levels[source]:
            found.append(edge)
    return found


def cycles(edges: Iterable[Import]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        graph[edge.importer].add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def all_imports(source: Path = SOURCE) -> list[Import]:
    known = modules(source)
    return [edge for name, path in known.items() for edge in imports_of(name, path, known)]


def problems(source: Path = SOURCE) -> list[str]:
    """One line per problem: a new upward import, a new cycle, or a KNOWN_* entry that is gone."""
    edges = all_imports(source)
    found = []
    up = upward(edges)
    pairs = {(edge.importer, edge.imported) for edge in up}
    for edge in up:
        if (edge.importer, edge.imported) not in KNOWN_UPWARD:
            found.append(
                f"{edge.importer} (line {edge.line}, room {room(edge.importer)}) imports {edge.imported} "
                f"(room {room(edge.imported)}): not a lower layer"
            )
    for pair in sorted(KNOWN_UPWARD - pairs):
        found.append(f"KNOWN_UPWARD lists {pair[0]} -> {pair[1]}, which is gone: delete it there")
    loops = set(cycles(edges))
    for loop in sorted(loops - KNOWN_CYCLES, key=sorted):
        found.append(f"import cycle: {' <-> '.join(sorted(loop))}")
    for loop in sorted(KNOWN_CYCLES - loops, key=sorted):
        found.append(f"KNOWN_CYCLES lists {sorted(loop)}, which is gone: delete it there")
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    edges = all_imports()
    print(
        f"{len(modules())} modules, {len(edges)} imports, {len(cycles(edges))} cycles, "
        f"{len(upward(edges))} imports not going down the layers",
        file=sys.stderr,
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
