"""Running the kernel's ``make`` for kbench: out of tree, every line kept in a log file,
progress read from kbuild's quiet lines (``  CC      kernel/sys.o``), and on failure the
first compiler error with its file and line.

make runs through ``kbench.children``: killed with kbench (kill -9 included), the
compilers with it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kbench import children
from kbench.kernels.errors import KernelBuildError

STEP = re.compile(r"^\s{2}([A-Z][A-Z0-9_]*(?: \[M\])?)\s+(\S.*)$")
"""kbuild's quiet output: a step (CC, LD, AR, AS, GEN ...) and what it makes."""
COUNTED_STEPS = ("CC", "AS", "CC [M]")
COMPILER_ERROR = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<column>\d+):)? (?:fatal )?error: (?P<what>.*)$")
LINKER_ERROR = re.compile(r"^(?P<file>[^\s:][^:]*):(?:\(.*?\)|[^:]*): (?P<what>undefined reference to .*)$")
MAKE_ERROR = re.compile(r"^make(?:\[\d+\])?: \*\*\* (?P<what>.*)$")


class BuildProgress(Protocol):
    """Told about a make as it runs: ``step`` for every object compiled (its count so far,
    of ``expected`` when an earlier build of the same kind says how many)."""

    def started(self, what: str, expected: int | None) -> None: ...

    def step(self, done: int, current: str) -> None: ...

    def finished(self) -> None: ...


class Silent:
    def started(self, what: str, expected: int | None) -> None:
        pass

    def step(self, done: int, current: str) -> None:
        pass

    def finished(self) -> None:
        pass


@dataclass(frozen=True)
class MakeResult:
    steps: int
    """Objects compiled (CC and AS steps)."""


def jobs() -> int:
    """make's -j: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def make(
    source: Path, build_dir: Path, targets: Sequence[str], log: Path, *, extra: Sequence[str] = (),
    progress: BuildProgress | None = None, what: str = "building", expected: int | None = None,
) -> MakeResult:
    """``make -C SOURCE O=BUILD_DIR -jN EXTRA TARGETS``, its output appended to ``log``;
    KernelBuildError (with the first error) when it fails."""
    progress = progress or Silent()
    argv = ["make", "-C", str(source), f"O={build_dir}", f"-j{jobs()}", *extra, *targets]
    # kbuild unexports LC_ALL: LANG and LC_CTYPE make gcc's messages plain ASCII (its quotes)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LC_")},
           "KBUILD_BUILD_USER": "kbench", "KBUILD_BUILD_HOST": "kbench", "LANG": "C", "LC_CTYPE": "C"}
    steps = 0
    log.parent.mkdir(parents=True, exist_ok=True)
    progress.started(what, expected)
    try:
        with open(log, "a", buffering=1, encoding="utf-8", errors="replace") as out:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            with children.spawn(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, errors="replace") as proc:
                assert proc.stdout is not None
                for line in proc.stdout:
                    out.write(line)
                    match = STEP.match(line)
                    if match and match.group(1) in COUNTED_STEPS:
                        steps += 1
                        progress.step(steps, match.group(2))
                code = proc.wait()
    finally:
        progress.finished()
    if code != 0:
        first = first_error(log.read_text(errors="replace"), source, build_dir)
        raise KernelBuildError(
            f"{what} failed (make exit {code}): {first or 'see the log'} (log: {log})",
            log=log, first_error=first,
        )
    return MakeResult(steps)


def first_error(text: str, source: Path | None = None, build_dir: Path | None = None) -> str | None:
    """The first compiler error of a make's output (``FILE:LINE: error: WHAT``, the file relative
    to ``source`` when it is inside), else the first linker error, else make's own first error."""
    lines = text.splitlines()
    for pattern in (COMPILER_ERROR, LINKER_ERROR):
        for line in lines:
            match = pattern.match(line)
            if match:
                where = _shown(match.group("file"), source, build_dir)
                at = f":{match.group('line')}" if "line" in match.groupdict() else ""
                return f"{where}{at}: error: {match.group('what')}"
    for line in lines:
        match = MAKE_ERROR.match(line)
        if match:
            return match.group("what")
    return None


def _shown(file: str, source: Path | None, build_dir: Path | None) -> str:
    """``file`` relative to ``source`` (gcc names it as make's command line did: absolute, or
    relative to the build directory, where kbuild runs)."""
    if source is None:
        return file
    path = Path(file)
    for candidate in (path, *((build_dir / path,) if build_dir else ()), source / path):
        try:
            return str(candidate.resolve().relative_to(source.resolve()))
        except (ValueError, OSError):
            continue
    return file
