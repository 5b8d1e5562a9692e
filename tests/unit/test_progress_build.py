"""A kernel build's make drawn as long work (kbench.cli.progress.BuildSteps): the make's
quiet lines counted, against a real make running a Makefile that prints kbuild's lines."""

from __future__ import annotations

from pathlib import Path

from kbench.cli.progress import BuildSteps, LongWork
from kbench.kernels.make import make

MAKEFILE = """all:
\t@echo '  GEN     Makefile'
\t@echo '  CC      kernel/sys.o'
\t@echo '  CC      mm/mmap.o'
\t@echo '  AS      arch/x86/entry/entry_64.o'
\t@echo '  LD      vmlinux.o'
"""


def test_objects_compiled_of_as_many_as_the_last_build(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "Makefile").write_text(MAKEFILE)
    heard: list[tuple[str, float, float | None]] = []

    class Listening(LongWork):
        def __call__(self, what: str, done: float, total: float | None = None) -> None:
            heard.append((what, done, total))
            super().__call__(what, done, total)

    with Listening("building", quiet=True) as work:
        result = make(source, tmp_path / "build", [], tmp_path / "log", progress=BuildSteps(work), what="make",
                      expected=4)
    assert result.steps == 3
    assert heard == [("make", 0, 4), ("make: kernel/sys.o", 1, 4), ("make: mm/mmap.o", 2, 4),
                     ("make: arch/x86/entry/entry_64.o", 3, 4), ("make", 3, 4)]
    assert work.unit == "objects" and not work.shown
