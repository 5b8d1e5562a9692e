"""Profiles recorded where a benchmark runs: ``perf record`` through a tool host (this machine or a guest).

The recording and ``perf script`` both run where the code ran (``kbench.suites.ToolHost``:
here, or in the guest through its agent, perf carried into the guest's initramfs with its
libraries as a suite's tools are, ``kbench.targets.vm.tools``), so kernel symbols come from
that kernel's own ``/proc/kallsyms`` (module symbols included) and user symbols from the
binaries as the guest has them; the text ``perf script`` prints is folded here
(``kbench.profile.folded``).

Two windows:

- a command that starts work elsewhere (reading kbench.ko's ``run`` starts a kernel
  thread): recorded on every CPU while the command runs (``-a``), only the samples of
  the processes ``keep`` names kept;
- kbench-probe: perf starts with its events off and the probe switches them on and off
  around its measured region through two named pipes (``--control fifo:``, the probe's
  ``--perf-control``), as on this machine with descriptors.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import Any

from kbench.profile.folded import FoldedProfile, fold_perf_script
from kbench.profile.perf_record import DEFAULT_FREQUENCY_HZ, PERF_PACKAGE, record_argv, sampling_event, script_argv
from kbench.suites import Finished, ToolHost
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport

CPU_PMU = "/sys/bus/event_source/devices/cpu/type"
BUSYBOX = "/bin/busybox"
SCRIPT_TIMEOUT_S = 600.0
SHORT_TIMEOUT_S = 30.0
CONTROL_FDS = (8, 9)
"""The descriptors the probe's shell opens the control pipes on (its ``--perf-control``)."""


def perf_host(target: Transport) -> ToolHost:
    """Where perf records on ``target``: this machine, or its guest (booted again with perf if
    it was booted without; TargetError when this host has no perf to carry in)."""
    from kbench.kinds.suite.run import PERF_TOOL, tool_host

    return tool_host(target, (PERF_TOOL,))


def utility(host: ToolHost, name: str) -> list[str]:
    """The command line prefix running the small utility ``name`` (cat, sh, mkfifo) on ``host``,
    its first word an absolute path: the guest's are busybox applets, which its shell's
    ``command -v`` names without a path."""
    found = host.which(name)
    if found is not None:
        return [found]
    if host.where == "guest":
        return [BUSYBOX, name]
    raise TargetError(f"{name} is not on this machine's PATH")


def _run_utility(host: ToolHost, name: str, args: Sequence[str], cwd: str) -> Finished:
    argv = [*utility(host, name), *args]
    return host.run(argv, executable=argv[0], cwd=cwd, timeout=SHORT_TIMEOUT_S)


def host_sampling_event(host: ToolHost) -> str:
    """``cycles`` where the host's kernel has a core PMU, else ``cpu-clock`` (a guest: asked there)."""
    if host.where != "guest":
        return sampling_event()
    with host.scratch_dir("kbench-pmu-") as scratch:
        found = _run_utility(host, "cat", [CPU_PMU], scratch)
    return "cycles" if found.exit_code == 0 and found.stdout.strip() else "cpu-clock"


def record_on(host: ToolHost, command: Sequence[str], *, window: str, timeout: float,
              keep: Callable[[str], bool] | None = None, system_wide: bool = False,
              probe_window: bool = False, frequency_hz: int = DEFAULT_FREQUENCY_HZ,
              details: dict[str, Any] | None = None) -> FoldedProfile:
    """``command`` (its first word an absolute path on the host) recorded by perf on ``host``
    and folded (module docstring for ``system_wide``, ``keep`` and ``probe_window``).
    TargetError when perf is missing, fails, or sampled nothing that was kept."""
    perf = host.which("perf")
    if perf is None:
        raise TargetError(f"--profile needs perf where the benchmark runs ({host.where}; Debian package "
                          f"{PERF_PACKAGE})")
    event = host_sampling_event(host)
    in_guest = host.where == "guest"
    with host.scratch_dir("kbench-profile-") as scratch:
        data = posixpath.join(scratch, "perf.data")
        fifos = None
        argv = list(command)
        if probe_window:
            fifos = (posixpath.join(scratch, "ctl"), posixpath.join(scratch, "ack"))
            argv = _with_control_pipes(host, scratch, argv, fifos)
        recorded = record_argv(perf, data, argv, event=event, frequency_hz=frequency_hz, fifos=fifos,
                               system_wide=system_wide, lean=in_guest)
        done = host.run(recorded, executable=perf, cwd=scratch, timeout=timeout)
        if done.timed_out:
            raise TargetError(f"perf record did not finish within {timeout:.0f} s ({host.where})")
        if done.exit_code != 0:
            raise TargetError(f"perf record failed (exit {done.exit_code}, {host.where}): {_tail(done.stderr)}")
        script = host.run(script_argv(perf, data), executable=perf, cwd=scratch, timeout=SCRIPT_TIMEOUT_S)
        if script.exit_code != 0:
            raise TargetError(f"perf script failed (exit {script.exit_code}, {host.where}): {_tail(script.stderr)}")
    stacks, samples = fold_perf_script(script.stdout, keep)
    if not samples:
        raise TargetError(f"the profile holds no sample of what was measured ({host.where}): "
                          f"{_tail(done.stderr + script.stderr)}")
    return FoldedProfile(stacks, event=event, frequency_hz=frequency_hz, samples=samples, details={
        "tool": "perf record", "call_graph": "fp", "where": host.where, "window": window,
        "command": list(command), "system_wide": system_wide,
        "symbols": "the guest's /proc/kallsyms and binaries" if in_guest else "this machine's",
        **({"accel": accel} if (accel := getattr(host, "accel", None)) else {}),
        "command_output": done.stdout.strip()[-2000:], **(details or {})})


def _with_control_pipes(host: ToolHost, scratch: str, command: list[str], fifos: tuple[str, str]) -> list[str]:
    """``command`` run by a shell that opens the control pipes on CONTROL_FDS first (perf
    has both open already, read and write, so neither open blocks)."""
    made = _run_utility(host, "mkfifo", fifos, scratch)
    if made.exit_code != 0:
        raise TargetError(f"mkfifo failed ({host.where}): {_tail(made.stderr)}")
    ctl, ack = CONTROL_FDS
    script = f'exec "$@" --perf-control {ctl},{ack} {ctl}>"{fifos[0]}" {ack}<"{fifos[1]}"'
    return [*utility(host, "sh"), "-c", script, "sh", *command]


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "no message"
