"""The user's build command (bisect, watch): its output goes to a log as it comes, a hung build is killed.

Before, the whole output was held in memory (a build printing 400 MB took a watch to 1.25 GB)
and a hung build was waited for 4 hours.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PRINTED_MB = 200


def _peak_rss_kib(code: str) -> int:
    """Run ``code`` in a fresh interpreter; its peak resident set (ru_maxrss of itself, KiB)."""
    probe = code + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_a_build_that_prints_hundreds_of_megabytes_is_not_held_in_memory(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    build = (f"yes 'cc -c src/file.c -o src/file.o' | head -c {PRINTED_MB * 1000 * 1000}; echo; "
             "echo 'prog.c:3:1: error: expected ; before }' >&2; exit 1")
    baseline = _peak_rss_kib("from kbench.bisect.labkit import run_build_command")
    peak = _peak_rss_kib(
        "from pathlib import Path\nfrom kbench.bisect.labkit import run_build_command\n"
        f"reason = run_build_command({build!r}, Path({str(worktree)!r}))\n"
        "assert reason == 'build command: exit 1: prog.c:3:1: error: expected ; before }', reason")
    assert peak - baseline < 64 * 1024, (baseline, peak)  # < 64 MiB more than importing it; the output is 200 MB
    log = worktree.with_name("wt.build.log")
    assert log.stat().st_size > PRINTED_MB * 1000 * 1000  # every byte went to the log
    assert log.read_bytes().endswith(b"error: expected ; before }\n")


def test_a_hung_build_is_killed_with_its_children_at_the_timeout(tmp_path: Path) -> None:
    from kbench.bisect.labkit import run_build_command

    worktree = tmp_path / "wt"
    worktree.mkdir()
    marker = f"{61000 + os.getpid() % 1000}"
    started = time.monotonic()
    reason = run_build_command(f"sleep {marker} & sleep {marker}; wait", worktree, timeout_s=2)
    assert reason is not None and reason.startswith("build command timed out after 2 s (--build-timeout); its output: ")
    assert time.monotonic() - started < 60
    deadline = time.monotonic() + 10
    while True:  # the whole group was killed: no `sleep MARKER` is left
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == ["sleep", marker]]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert left == []


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []
