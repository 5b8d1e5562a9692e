"""Progress of long work (kbench.cli.progress): drawn on a real pseudo-terminal, never into a
pipe, not with --json or --quiet, without colours under NO_COLOR.

``kbench calibrate`` of a command with the trials design is the long work here (six short
trials, a few seconds): its stderr is the slave side of a pty this test opens, its stdout a
pipe, as when a person runs it with the output redirected.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from kbench.cli.progress import PERCENT, LongWork, count_text

CALIBRATE = ("calibrate", "--command", "true", "--design", "trials", "--trials", "3", "--samples", "5")
COLOUR = re.compile(r"\x1b\[(?:\d+;)*(?:3[0-7]|9[0-7]|38|4[0-7]|48)(?:;\d+)*m")
"""An SGR sequence that sets a colour (foreground or background); bold and the cursor's are not."""
BAR = "━"


def _run(db: Path, *args: str, terminal: bool = True, env: dict[str, str] | None = None) -> tuple[str, str, int]:
    """(stdout, what reached stderr, exit code) of ``kbench ARGS``; stderr a 120-column pty when
    ``terminal``, else a pipe."""
    environment = {**os.environ, "KBENCH_DB": str(db), "TERM": "xterm-256color", **(env or {})}
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TTY_COMPATIBLE", "FORCE_TERMINAL"):
        if env is None or name not in env:
            environment.pop(name, None)
    argv = [sys.executable, "-m", "kbench.cli", *args]
    if not terminal:
        proc = subprocess.run(argv, capture_output=True, text=True, env=environment, timeout=300)
        return proc.stdout, proc.stderr, proc.returncode
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=environment)
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal's last descriptor
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    return out, seen.decode("utf-8", errors="replace"), child.wait(timeout=300)


def test_calibrate_shows_its_progress_on_a_terminal(tmp_path: Path) -> None:
    out, terminal, code = _run(tmp_path / "r.db", *CALIBRATE)
    assert code == 0, terminal
    # what is being done, the trials done and left, the time spent
    assert re.search(r"A[12] trial [123]", terminal) and BAR in terminal, terminal[-2000:]
    assert re.search(r"\d/6 trials, \d left", terminal) and re.search(r"\d:\d\d:\d\d", terminal)
    assert COLOUR.search(terminal)  # a terminal gets colours unless NO_COLOR says otherwise
    # the bar is gone at the end; the report went to stdout untouched
    assert "calibration 1" in out and "\x1b" not in out and BAR not in out and "trials, " not in out


def test_no_color_draws_it_without_colours(tmp_path: Path) -> None:
    _, terminal, code = _run(tmp_path / "r.db", *CALIBRATE, env={"NO_COLOR": "1"})
    assert code == 0, terminal
    assert BAR in terminal and re.search(r"\d/6 trials, \d left", terminal)
    assert not COLOUR.search(terminal), repr(COLOUR.search(terminal))


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_json_and_quiet_draw_nothing_even_on_a_terminal(tmp_path: Path, flag: str) -> None:
    out, terminal, code = _run(tmp_path / "r.db", *CALIBRATE, flag)
    assert code == 0, terminal
    assert BAR not in terminal and "trials, " not in terminal and "trial 1" not in terminal
    assert ("calibration_id" in out) == (flag == "--json")


def test_a_pipe_gets_no_progress(tmp_path: Path) -> None:
    out, err, code = _run(tmp_path / "r.db", *CALIBRATE, terminal=False)
    assert code == 0, err
    assert BAR not in err + out and "\r" not in err and "trials, " not in err + out


def test_the_count_says_what_is_done_and_left() -> None:
    assert count_text(3, 8, "steps") == "3/8 steps, 5 left"
    assert count_text(3, None, "commits") == "3 commits" and count_text(0, None, "commits") == ""
    assert count_text(1, None, "objects") == "1 object"
    assert count_text(37.4, 100, PERCENT) == "37% of the budget"
    assert count_text(9, 8, "steps") == "9/8 steps, 0 left"  # an estimate overrun says nothing left
    heard = LongWork("x", quiet=True)
    with heard:
        heard("building", 1, 4)
        heard.advance("measuring")
        heard.describe("judging")
    assert (heard.what, heard.done, heard.total) == ("judging", 2, 4) and not heard.shown


@pytest.mark.parametrize("flag", [None, "--json", "--quiet"])
def test_run_draws_its_bar_only_without_json_or_quiet(tmp_path: Path, flag: str | None) -> None:
    _, terminal, code = _run(tmp_path / "r.db", "run", "syscall.getppid", "--samples", "2000",
                             *((flag,) if flag else ()))
    assert code == 0, terminal
    assert (BAR in terminal) == (flag is None), terminal[-1500:]
