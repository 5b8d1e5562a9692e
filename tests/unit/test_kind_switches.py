"""Only kinds/ switches on a kind (docs/architecture.md): the other rooms ask the kind's properties.

The scan finds, outside ``src/kbench/kinds/``, every comparison of something called ``kind``
with a kind's name and every literal collection made only of kinds' names. ``KNOWN`` lists the
ones left, by module, with the reason; an entry that no longer exists fails the test too, so
the list only shrinks.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.contract.limits import KFUNC, PROBE
from kbench.kinds.registry import KIND_MODULES, kind_named, kinds

SRC = Path(__file__).resolve().parents[2] / "src" / "kbench"
KIND_NAMES = frozenset(kind.name for kind in kinds())
KNOWN: dict[str, int] = {}


def _names_kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "kind"
    return isinstance(node, ast.Name) and node.id == "kind"


def _kind_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in KIND_NAMES


def _only_kind_names(node: ast.AST) -> bool:
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "frozenset" and node.args:
        return _only_kind_names(node.args[0])
    return bool(elements) and all(_kind_name(element) for element in elements or ())


def switches(tree: ast.AST) -> list[int]:
    """Lines where a kind's name is switched on."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_kind(side) for side in sides) and any(_kind_name(s) or _only_kind_names(s) for s in sides):
                found.append(node.lineno)
        elif _only_kind_names(node):
            found.append(node.lineno)
    return sorted(set(found))


def test_no_room_but_kinds_switches_on_a_kind() -> None:
    counts = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative.startswith("kinds/"):
            continue
        lines = switches(ast.parse(path.read_text(), str(path)))
        if lines:
            counts[relative] = len(lines)
    assert counts == KNOWN


def test_each_kind_module_holds_the_kind_of_its_name() -> None:
    assert [kind.name for kind in kinds()] == list(KIND_MODULES)
    for name in KIND_MODULES:
        assert kind_named(name).name == name


def test_a_probe_run_imports_no_other_kind() -> None:
    """``show``/``compare --runs`` of the probe's runs find their kind without importing the
    other kinds' catalogs (kbench.ko's sources, the suites' listing)."""
    code = ("import sys\n"
            "from kbench.kinds.registry import kind_named, kind_that_wrote\n"
            "from kbench.targets.probe_output import PROBE_FORMAT\n"
            "assert kind_that_wrote({'format': PROBE_FORMAT}).name == 'probe'\n"
            "assert kind_named('probe').name == 'probe'\n"
            "print(sorted(m for m in sys.modules if m.startswith('kbench.kinds.') and m.count('.') == 2))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "['kbench.kinds.base', 'kbench.kinds.probe', 'kbench.kinds.registry']"


def test_the_scan_finds_a_switch() -> None:
    code = 'if benchmark.kind == "kfunc":\n    pass\nGUEST = ("probe", "kfunc")\nok = kind in {"x"}\n'
    assert switches(ast.parse(code)) == [1, 3]


@pytest.mark.parametrize(
    ("name", "sample_unit", "in_kernel", "whole_tool", "scaling", "limits"),
    [("probe", "ns", False, False, False, PROBE), ("kfunc", "cycles", True, False, False, KFUNC),
     ("scale", None, False, False, True, None), ("suite", None, False, True, False, None),
     ("trace", None, False, False, False, None)],
)
def test_each_kind_says_what_the_rooms_used_to_read_from_its_name(
    name: str, sample_unit: str | None, in_kernel: bool, whole_tool: bool, scaling: bool, limits: object
) -> None:
    """The properties that replaced ``kind == "kfunc"`` (in_kernel), ``== "suite"`` (whole_tool),
    ``== "scale"`` (scaling), ``in ("probe", "kfunc")`` (sample_unit) and contract.limits.LIMITS."""
    kind = kind_named(name)
    assert (kind.sample_unit, kind.in_kernel, kind.whole_tool, kind.scaling, kind.limits) == (
        sample_unit, in_kernel, whole_tool, scaling, limits)


@pytest.mark.parametrize(
    ("name", "counted", "by_default", "with_perf", "profiled"),
    [("probe", True, True, False, True), ("kfunc", True, True, False, True), ("scale", True, False, False, False),
     ("suite", True, False, True, True), ("trace", False, False, False, False)],
)
def test_what_each_kind_counts_and_profiles(
    name: str, counted: bool, by_default: bool, with_perf: bool, profiled: bool
) -> None:
    """What profile.defaults' COUNTED_KINDS and COUNTERS_BY_DEFAULT_KINDS, jobs.expand's PERF_KINDS and
    suite_runner.needs_perf's ``kind == "suite"`` said."""
    kind = kind_named(name)
    assert (kind.counted, kind.counters_by_default, kind.counts_with_perf, kind.profiled) == (
        counted, by_default, with_perf, profiled)


def test_only_probe_workloads_are_system_calls() -> None:
    from kbench.contract.benchmark import Benchmark

    def bench(name: str, kind: str) -> Benchmark:
        return Benchmark(name=name, kind=kind, workload=name, description="", unit="ns", metric=f"{name}.x",
                         direction="lower_is_better", params=())

    assert kind_named("probe").operation_syscall(bench("syscall.getppid", "probe")) == 110  # x86-64's getppid
    assert kind_named("probe").operation_syscall(bench("command", "probe")) is None
    for other in ("kfunc", "scale", "suite", "trace"):
        assert kind_named(other).operation_syscall(bench("syscall.getppid", other)) is None
