"""kbench's imports: no cycle, and every import goes down the layers (tests/import_layers.py)."""

from __future__ import annotations

from pathlib import Path

from tests import import_layers


def test_no_import_cycle_and_no_import_up_the_layers() -> None:
    problems = import_layers.problems()
    assert problems == [], "\n".join(problems)


def test_every_room_has_a_layer() -> None:
    rooms = {import_layers.room(name) for name in import_layers.modules()}
    placed = {name for layer in import_layers.LAYERS for name in layer}
    below = set(import_layers.BELOW_LAYERS)
    assert rooms - below <= placed, f"rooms without a layer: {sorted(rooms - below - placed)}"


def write(root: Path, module: str, text: str) -> None:
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        init = root / parent / "__init__.py"
        if parent != Path(".") and not init.exists():
            init.write_text("")
    path.write_text(text)


def test_the_checker_sees_imports_hidden_in_functions_and_type_checking(tmp_path: Path) -> None:
    write(tmp_path, "kbench.stats.low", "def f():\n    from kbench.engine import high\n")
    write(tmp_path, "kbench.engine.high", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
          "    from kbench.engine.other import X\n")
    write(tmp_path, "kbench.engine.other", "from . import high\nX = 1\n")
    edges = import_layers.all_imports(tmp_path)
    pairs = {(edge.importer, edge.imported) for edge in edges}
    assert ("kbench.stats.low", "kbench.engine.high") in pairs
    assert ("kbench.engine.high", "kbench.engine.other") in pairs
    assert ("kbench.engine.other", "kbench.engine.high") in pairs  # relative import resolved
    assert [(e.importer, e.imported) for e in import_layers.upward(edges)] == [
        ("kbench.stats.low", "kbench.engine.high")
    ]
    assert import_layers.cycles(edges) == [frozenset({"kbench.engine.high", "kbench.engine.other"})]


def test_rooms_of_one_layer_may_not_import_each_other(tmp_path: Path) -> None:
    write(tmp_path, "kbench.compare.a", "import kbench.sysinfo.b\n")
    write(tmp_path, "kbench.sysinfo.b", "")
    write(tmp_path, "kbench.sysinfo.c", "from kbench.stats import d\n")
    write(tmp_path, "kbench.stats.d", "")
    upward = import_layers.upward(import_layers.all_imports(tmp_path))
    assert [(e.importer, e.imported) for e in upward] == [("kbench.compare.a", "kbench.sysinfo.b")]
