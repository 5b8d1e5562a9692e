"""Instructions of a function's loop by objdump's disassembly: the independent reference the
instruction-count tests check kbench's counters against."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

BACKWARD_BRANCH = re.compile(r"^\s*([0-9a-f]+):\s+j(?:ne|nz|b|nae|l|g|a|be|ge|le)\s+([0-9a-f]+)", re.MULTILINE)
ADDRESS = re.compile(r"^\s*([0-9a-f]+):", re.MULTILINE)


def function_text(binary: Path, function: str) -> str:
    """objdump's disassembly of ``function`` in ``binary`` (an executable or a kernel module)."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True,
                          check=True).stdout
    marker = f"<{function}>:"
    assert marker in text, f"{function} is not in {binary}"
    return text.split(marker, 1)[1].split("\n\n", 1)[0]


def loop_instructions(binary: Path, function: str = "main") -> int:
    """The instructions of ``function``'s one loop: from the target of its backward conditional
    branch to that branch, both included."""
    body = function_text(binary, function)
    loops = [(int(m.group(2), 16), int(m.group(1), 16)) for m in BACKWARD_BRANCH.finditer(body)
             if int(m.group(2), 16) < int(m.group(1), 16)]
    assert len(loops) == 1, f"{function} has {len(loops)} backward branches:\n{body}"
    start, end = loops[0]
    return sum(start <= int(m.group(1), 16) <= end for m in ADDRESS.finditer(body))
