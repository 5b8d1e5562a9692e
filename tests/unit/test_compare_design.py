"""``kbench compare``'s spec → design choice (kbench.engine.compare.designs), without measuring.

Each design is chosen from a ``ComparisonSpec`` as the command line builds it, and the
combinations that cannot be compared are refused with the words the command prints
(as usage errors, exit 2, or as BadRequest, exit 2 as well).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from kbench.contract.request import BadRequest
from kbench.engine.compare import COUNTS, MODULE_COPIES, MODULES, STORED, designs
from kbench.engine.compare_spec import (
    DEFAULT_COPIES,
    INTERLEAVED,
    TRIALS,
    BadCombination,
    ComparisonSpec,
    check,
)
from kbench.engine.run_selection import parse_selector

RUNS = (parse_selector("1,2,3"), parse_selector("4,5,6"))
PROGRAMS = ("true", "sleep 0")


def chosen(**given: Any) -> tuple[str, ...]:
    return designs(check(ComparisonSpec(**given)))


@pytest.mark.parametrize(("given", "expected"), [
    ({"run_sets": RUNS}, (STORED,)),
    ({"run_sets": RUNS, "benchmark": "syscall.getppid"}, (STORED,)),
    ({"run_sets": RUNS, "counting": True, "time_metric": None}, (COUNTS,)),
    ({"commands": PROGRAMS}, (INTERLEAVED,)),
    ({"commands": PROGRAMS, "design": TRIALS}, (TRIALS,)),
    ({"commands": PROGRAMS, "trials": 6}, (TRIALS,)),  # --trials selects trials under auto
    ({"commands": PROGRAMS, "min_trials": 3}, (TRIALS,)),
    ({"commands": PROGRAMS, "counting": True, "time_metric": None}, (COUNTS,)),
    ({"commands": PROGRAMS, "counting": True, "time_metric": "cpu"}, (COUNTS, INTERLEAVED)),
    ({"benchmark": "syscall.getppid", "params": (("spin", "0|10"),)}, (INTERLEAVED,)),
    ({"benchmark": "syscall.getppid", "kernels": ("deb:6.1.0-1", "deb:6.1.0-2")}, (TRIALS,)),
    ({"benchmark": "will-it-scale.getppid1", "params": (("nr_task", "1|2"),)}, (TRIALS,)),  # whole runs
    ({"modules": (Path("old.c"), Path("new.c")), "local_kernel": True}, (MODULE_COPIES,)),
    ({"modules": (Path("old.c"), Path("new.c")), "local_kernel": True, "copies": 1}, (MODULES,)),
    ({"modules": (Path("old.ko"), Path("new.ko")), "kernels": ("deb:6.1.0-1",)}, (MODULES,)),
    ({"modules": (Path("one.c"),), "local_kernel": True, "params": (("work", "1|2"),)}, (MODULES,)),
    ({"modules": (Path("old.c"), Path("new.c")), "local_kernel": True, "counting": True, "time_metric": "cpu"},
     (COUNTS, MODULE_COPIES)),
], ids=lambda value: repr(value) if isinstance(value, tuple) else None)
def test_each_design_is_chosen_from_the_spec(given: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert chosen(**given) == expected


def test_check_resolves_the_copies_of_modules() -> None:
    two = (Path("old.c"), Path("new.c"))
    assert check(ComparisonSpec(modules=two, local_kernel=True)).copies == DEFAULT_COPIES
    assert check(ComparisonSpec(modules=(Path("old.ko"), Path("new.c")), local_kernel=True)).copies == 1
    assert check(ComparisonSpec(commands=PROGRAMS)).copies is None


@pytest.mark.parametrize(("given", "error"), [
    ({"kernels": ("deb:a", "deb:b"), "commands": PROGRAMS},
     "give the sides with exactly one of --kernel, --command or --runs (twice or more), or vary one parameter "
     "with -p KEY=V1|V2"),
    ({"benchmark": "syscall.getppid"}, "give the sides with exactly one of --kernel"),
    ({"commands": PROGRAMS, "run_sets": RUNS}, "give the sides with exactly one of --kernel"),
    ({"commands": PROGRAMS, "copies": 2}, "--copies applies to --module given twice or more"),
    ({"modules": (Path("a.c"), Path("b.c")), "commands": PROGRAMS, "local_kernel": True},
     "--module compares in-kernel benchmarks: give no --command or --runs"),
    ({"modules": (Path("a.c"), Path("b.c")), "run_sets": RUNS, "local_kernel": True},
     "--module compares in-kernel benchmarks: give no --command or --runs"),
    ({"modules": (Path("a.c"), Path("b.c")), "kernels": ("deb:a", "deb:b")},
     "--module loads the modules into one kernel: give --kernel once"),
    ({"modules": (Path("a.c"), Path("b.c"))}, "--module loads the modules into a kernel booted in qemu"),
    ({"modules": (Path("a.c"), Path("b.c")), "local_kernel": True, "design": TRIALS},
     "--module sides run in one kernel: they are compared with the interleaved design"),
    ({"modules": (Path("a.c"),), "local_kernel": True, "copies": 2},
     "--copies applies to --module given twice or more (the builds compared)"),
    ({"modules": (Path("a.ko"), Path("b.c")), "local_kernel": True, "copies": 2},
     "--copies 2: a.ko cannot be loaded twice"),
])
def test_sides_that_cannot_go_together_are_refused_in_the_commands_words(given: dict[str, Any],
                                                                         error: str) -> None:
    with pytest.raises(BadCombination) as refused:
        check(ComparisonSpec(**given))
    assert str(refused.value).startswith(error)
    assert refused.value.exit_code == 2


@pytest.mark.parametrize(("given", "error"), [
    ({"run_sets": RUNS, "counting": True, "time_metric": "cpu"},
     "--metric instructions,TIME: stored runs are counted or timed, not both; compare them with --metric "
     "instructions"),
    ({"benchmark": "syscall.getppid", "kernels": ("deb:a", "deb:b"), "design": INTERLEAVED},
     "--design interleaved: the sides run in different kernels: each needs its own boot, so trials are the unit; "
     "use --design trials"),
    ({"commands": ("true",)}, "a comparison needs at least two sides: give --command twice or more"),
    ({"commands": PROGRAMS, "benchmark": "syscall.getppid"}, "--command compares commands: give no BENCHMARK"),
])
def test_requests_the_design_cannot_measure_are_refused(given: dict[str, Any], error: str) -> None:
    with pytest.raises(BadRequest, match="^" + click.unstyle(error).replace("|", r"\|").replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        chosen(**given)


def test_the_command_shows_a_bad_combination_as_a_usage_error(tmp_path: Path) -> None:
    """What ``check`` refuses reaches the user as click's usage error, exit 2, before anything is opened."""
    result = subprocess.run([sys.executable, "-m", "kbench.cli", "compare", "--command", "true", "--kernel", "deb:a"],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, KBENCH_DB=str(tmp_path / "results.db"), COLUMNS="200"))
    assert result.returncode == 2
    assert "Usage: " in result.stderr
    assert "Error: give the sides with exactly one of --kernel, --command or --runs" in result.stderr
    assert not (tmp_path / "results.db").exists()
