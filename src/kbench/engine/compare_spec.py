"""What a comparison is asked to compare: a ``ComparisonSpec``, and the checks that refuse a bad one.

The command line parses its options into a spec (``kbench.cli.compare_cmd``); ``check``
refuses sides that cannot go together, in the words the command has always used, and
resolves ``--copies``; ``kbench.engine.compare.compare`` then chooses the design from the
spec and measures (or reads stored runs). This module imports nothing that measures, so
that ``compare --runs`` and ``--help`` stay light.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.exit_codes import KbenchError

if TYPE_CHECKING:
    from kbench.engine.run_selection import RunSelector

AUTO, INTERLEAVED, TRIALS = "auto", "interleaved", "trials"
DESIGNS = (AUTO, INTERLEAVED, TRIALS)
"""``--design``: what the user may ask for; ``auto`` picks interleaved where it applies."""
DEFAULT_BUDGET_S = 20.0
"""The interleaved design's measuring time (``--budget``): with start-up and the pilot block, a
comparison takes under 30 s even when the machine is busy."""
ALTERNATIVES = "|"
"""Between the values of the one parameter that makes the sides (``-p size=64|128``)."""

DEFAULT_COPIES = 3
MAX_COPIES = 8
ONE_COPY_WARNING = ("one copy of each module: the verdict does not include the spread between placements (two loads "
                    "of one build measured up to 2% apart under TCG, docs/PERFORMANCE.md 'Placement'); "
                    f"--copies {DEFAULT_COPIES} measures it")


class BadCombination(KbenchError):
    """Sides or options that cannot go together (the command line shows it as a usage error, exit 2)."""


@dataclass(frozen=True)
class ComparisonSpec:
    """Everything ``kbench compare`` was asked, parsed (option names in the comments)."""

    benchmark: str | None = None  # BENCHMARK
    kernels: tuple[str, ...] = ()  # --kernel
    commands: tuple[str, ...] = ()  # --command
    run_sets: tuple[RunSelector, ...] = ()  # --runs
    params: tuple[tuple[str, str], ...] = ()  # -p KEY=VALUE
    modules: tuple[Path, ...] = ()  # --module
    copies: int | None = None  # --copies (``check`` resolves its default)
    local_kernel: bool = False  # --local-kernel
    whole_runs: bool = False  # --whole-runs
    design: str = AUTO  # --design
    counting: bool = False  # --metric instructions[,TIME]
    time_metric: str | None = "cpu"  # --metric's time, None with --metric instructions alone
    budget_s: float = DEFAULT_BUDGET_S  # --budget
    blocks: int | None = None  # --blocks
    samples: int | None = None  # --samples
    trials: int | None = None  # --trials
    min_trials: int | None = None  # --min-trials
    fixed: bool = False  # --fixed
    trials_per_boot: int = 3  # --trials-per-boot
    margin: float | None = None  # --margin as a fraction
    margin_text: str | None = None  # --margin as written
    alpha: float = DEFAULT_ALPHA  # --alpha
    correction: str = "holm"  # --correction: holm or bh
    seed: int = 0  # --seed
    profile: bool = False  # --profile
    counters: bool | None = None  # --counters/--no-counters (None: the default)
    ignore_failure: bool = False  # --ignore-failure

    @property
    def metric(self) -> str:
        """The time metric judged (``cpu`` when only instructions are counted)."""
        return self.time_metric or "cpu"

    @property
    def varies_a_parameter(self) -> bool:
        return any(ALTERNATIVES in value for _, value in self.params)


def check(spec: ComparisonSpec) -> ComparisonSpec:
    """``spec`` with ``copies`` resolved; BadCombination unless its sides can be compared: exactly
    one kind of side (kernels, commands, stored runs, or a parameter varied with '|'), or modules
    in one kernel."""
    kinds = [name for name, given in (("--kernel", spec.kernels), ("--command", spec.commands),
                                      ("--runs", spec.run_sets)) if given]
    if spec.modules:
        check_module_sides(spec.kernels, bool(spec.commands or spec.run_sets), spec.local_kernel,
                           spec.design == TRIALS)
        return replace(spec, copies=module_copy_count(spec.modules, spec.copies))
    if spec.copies is not None:
        raise BadCombination("--copies applies to --module given twice or more")
    if len(kinds) > 1 or (not kinds and not spec.varies_a_parameter):
        raise BadCombination("give the sides with exactly one of --kernel, --command or --runs (twice or more), "
                             "or vary one parameter with -p KEY=V1|V2")
    return spec


def check_module_sides(kernels: tuple[str, ...], other_sides: bool, local_kernel: bool, trials_design: bool) -> None:
    """BadCombination unless the modules can be the sides: one kernel (booted or this one), no other
    kind of side, the interleaved design (the modules run in one kernel)."""
    if other_sides:
        raise BadCombination("--module compares in-kernel benchmarks: give no --command or --runs")
    if len(kernels) > 1:
        raise BadCombination("--module loads the modules into one kernel: give --kernel once")
    if not kernels and not local_kernel:
        raise BadCombination("--module loads the modules into a kernel booted in qemu (--kernel SPEC), or with "
                             "--local-kernel into the running kernel")
    if trials_design:
        raise BadCombination("--module sides run in one kernel: they are compared with the interleaved design")


def module_copy_count(modules: tuple[Path, ...], copies: int | None) -> int:
    """The copies of each module to load (``--copies``, or its default); BadCombination where it cannot apply."""
    from kbench.kinds.kfunc.loaded import can_copy

    fixed = [str(m) for m in modules if not can_copy(m)]
    if copies is None:
        return DEFAULT_COPIES if len(modules) > 1 and not fixed else 1
    if copies > 1 and len(modules) < 2:
        raise BadCombination("--copies applies to --module given twice or more (the builds compared)")
    if copies > 1 and fixed:
        raise BadCombination(f"--copies {copies}: {', '.join(fixed)} cannot be loaded twice (a .ko's or a module "
                             "directory's name is fixed by its build); give the module as a .c file")
    return copies
