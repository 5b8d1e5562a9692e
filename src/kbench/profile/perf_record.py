"""Sampled call graphs with ``perf record``: the command lines, the event, and a recording here.

A profile samples call stacks (``-g``, frame pointers) at ``DEFAULT_FREQUENCY_HZ`` on the
``cycles`` event where the machine has a PMU and on ``cpu-clock`` (a timer) where it does
not (a VM without a virtual PMU), user and kernel frames alike, of the command and every
process it starts. When the command is kbench-probe, perf starts with its events off
(``-D -1``) and the probe switches them on and off around its measured region through
perf's control descriptors (``--control fd:CTL,ACK``; the probe's ``--perf-control``):
the profile then holds the measured loop, not the probe's calibration and set-up.
``perf script`` turns the recording into stacks that ``kbench.profile.folded`` folds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench import children
from kbench.profile.folded import FoldedProfile, fold_perf_script

DEFAULT_FREQUENCY_HZ = 4999
"""Samples per second of CPU time: about 3,700 samples of 0.75 s of CPU, enough that a 6
point change of one function's share stands out of the sampling noise (about ±1.2 points);
odd, so that it does not beat in step with a periodic timer."""
DEFAULT_SECONDS = 2.0
"""How long a profile pass of a probe workload measures (its own run, after the timed ones)."""
SCRIPT_FIELDS = "comm,period,ip,sym,dso"
CORE_PMUS = (Path("/sys/bus/event_source/devices/cpu"), Path("/sys/bus/event_source/devices/cpu_core"))
PERF_PACKAGE = "linux-perf"


class ProfileError(RuntimeError):
    """perf is missing, or recording or reading the profile failed (the message says which)."""


def sampling_event(pmu_paths: Sequence[Path] = CORE_PMUS) -> str:
    """``cycles`` where this machine has a core PMU, else ``cpu-clock``."""
    return "cycles" if any(path.exists() for path in pmu_paths) else "cpu-clock"


def record_argv(perf: str, output: str, command: Sequence[str], *, event: str, frequency_hz: int,
                control: tuple[int, int] | None = None, fifos: tuple[str, str] | None = None,
                system_wide: bool = False, lean: bool = False) -> list[str]:
    """``perf record`` of ``command`` into ``output``; ``control`` = (CTL, ACK) descriptors perf
    reads commands from and acknowledges on, or ``fifos`` = (CTL, ACK) named pipes, its events
    off until "enable"; ``system_wide``: every CPU while the command runs (``-a``), for work
    the command only starts (a kernel thread); ``lean``: no build ids collected or cached
    (a guest: ``perf script`` runs there, on the same binaries, right after)."""
    argv = [perf, "record", "-e", event, "-F", str(frequency_hz), "-g", "-o", output]
    if system_wide:
        argv.append("-a")
    if lean:
        argv += ["--no-buildid", "--no-buildid-cache"]
    if control is not None:
        argv += ["--control", f"fd:{control[0]},{control[1]}", "-D", "-1"]
    elif fifos is not None:
        argv += ["--control", f"fifo:{fifos[0]},{fifos[1]}", "-D", "-1"]
    return [*argv, "--", *command]


def script_argv(perf: str, data: str) -> list[str]:
    return [perf, "script", "-i", data, "-F", SCRIPT_FIELDS]


def find_perf() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise ProfileError(f"--profile needs perf on this machine (Debian package {PERF_PACKAGE})")
    return perf


@dataclass(frozen=True)
class ProbeWindow:
    """The probe's ends of perf's control descriptors: pass ``probe_option()`` to kbench-probe."""

    ctl_write: int
    ack_read: int

    def probe_option(self) -> list[str]:
        return ["--perf-control", f"{self.ctl_write},{self.ack_read}"]


def record_here(command: Sequence[str] | None = None, *, probe_command: Sequence[str] | None = None,
                event: str | None = None, frequency_hz: int = DEFAULT_FREQUENCY_HZ,
                timeout: float = 600.0) -> FoldedProfile:
    """Record a profile on this machine of ``command``, or of ``probe_command`` (kbench-probe
    ``run`` arguments with its path first) in its measured region only. ProfileError on failure."""
    if (command is None) == (probe_command is None):
        raise ValueError("give a command or a probe command")
    perf = find_perf()
    event = event or sampling_event()
    with children.scratch_dir("kbench-profile-") as scratch:
        data = str(scratch / "perf.data")
        fds: list[int] = []
        try:
            if probe_command is not None:
                ctl_read, ctl_write = os.pipe()
                ack_read, ack_write = os.pipe()
                fds = [ctl_read, ctl_write, ack_read, ack_write]
                window = ProbeWindow(ctl_write, ack_read)
                argv = record_argv(perf, data, [*probe_command, *window.probe_option()], event=event,
                                   frequency_hz=frequency_hz, control=(ctl_read, ack_write))
            else:
                argv = record_argv(perf, data, list(command or ()), event=event, frequency_hz=frequency_hz)
            try:
                done = children.run(argv, pass_fds=tuple(fds), capture_output=True, text=True,
                                    errors="replace", timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise ProfileError(f"perf record did not finish within {timeout:g} s") from exc
        finally:
            for fd in fds:
                os.close(fd)
        if done.returncode != 0 or not Path(data).exists():
            raise ProfileError(f"perf record failed (exit {done.returncode}): {_tail(done.stderr)}")
        script = children.run(script_argv(perf, data), capture_output=True, text=True, errors="replace",
                              timeout=timeout)
        if script.returncode != 0:
            raise ProfileError(f"perf script failed (exit {script.returncode}): {_tail(script.stderr)}")
    stacks, samples = fold_perf_script(script.stdout)
    return FoldedProfile(stacks, event=event, frequency_hz=frequency_hz, samples=samples, details={
        "tool": "perf record", "call_graph": "fp", "where": "here",
        "window": "measured region" if probe_command is not None else "whole command",
        "command": list(probe_command if probe_command is not None else command or ()),
    })


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "no message"
