"""How a counter runs a ``command``: the program under one fixed name, or a shell when it needs one.

A program's own start-up (the dynamic loader, libc) reads its path: valgrind counted 11 more
instructions for a byte copy of a program under a 31-character path than under a 9-character
one. So a program is run through a link of one fixed name in a scratch directory of one fixed
length (its argv[0] the link's path): two byte copies at any two paths execute the same
instructions. A command line that needs a shell (pipes, redirections, quotes, variables,
globs) runs under ``/bin/sh -c`` as the probe runs it, the shell's instructions counted too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kbench.targets.base import ExecutionFailed

SHELL_SYNTAX = frozenset("|&;<>()$`\\\"'*?[]#~{}!\n")
LINK_NAME = "prog"


@dataclass(frozen=True)
class CommandLine:
    """What to execute: ``argv`` (its first element a path), and whether it is a shell's."""

    argv: tuple[str, ...]
    shell: bool


def needs_shell(cmd: str) -> bool:
    """True when ``cmd`` uses shell syntax (or assigns a variable before the program)."""
    words = cmd.split()
    return any(char in SHELL_SYNTAX for char in cmd) or bool(words and "=" in words[0])


def command_line(params: Mapping[str, str], cwd: Path | None, scratch: Path) -> CommandLine:
    """The command of a ``command`` benchmark's parameters (``cmd``, ``shell``), its program linked
    as ``scratch/prog``; ExecutionFailed (exit status 127, as a shell says) for a program not found."""
    cmd = params.get("cmd", "true")
    through_shell = params.get("shell", "1") not in ("0", "false", "no")
    if through_shell and needs_shell(cmd):
        return CommandLine(("/bin/sh", "-c", cmd), shell=True)
    words = cmd.split()
    if not words:
        raise ExecutionFailed(f"command {cmd!r}", "no program to run (an empty command)")
    program = resolve_program(words[0], cwd)
    if program is None:
        raise ExecutionFailed(f"command {cmd!r}", f"exit status 127 ({words[0]}: not found)")
    link = scratch / LINK_NAME
    link.symlink_to(program)
    return CommandLine((str(link), *words[1:]), shell=False)


def resolve_program(name: str, cwd: Path | None) -> Path | None:
    """``name`` as an executable file: a path (relative to ``cwd``) when it holds a '/', else found
    on PATH; None when there is no such executable."""
    if "/" in name:
        path = Path(name)
        if not path.is_absolute():
            path = (cwd or Path.cwd()) / path
        return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    return Path(found).resolve() if found else None
