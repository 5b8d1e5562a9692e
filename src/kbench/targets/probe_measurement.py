"""Turn a probe invocation into per-operation values the statistics can use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kbench.contract.measurement import Measurement
from kbench.targets.base import ExecutionFailed, ProbeInvocation, TargetError
from kbench.targets.probe_output import ProbeOutput, ProbeOutputError, parse_probe_output, parse_probe_outputs

EXIT_FAILED = 4
"""The probe stopped at a failed operation (its header's ``failure``, docs/probe-format.md)."""
EXIT_INTERRUPTED = 130


def measurement_from_invocation(invocation: ProbeInvocation) -> Measurement:
    """Parse the probe's bytes; raise TargetError with the probe's message on failure."""
    return _measurements(invocation, lambda data: [parse_probe_output(data)])[0]


def measurements_from_invocation(invocation: ProbeInvocation) -> list[Measurement]:
    """The records of a ``kbench-probe sequence``, a measurement each; interrupted, the last
    one (the run that was stopped) is marked so. TargetError as ``measurement_from_invocation``."""
    return _measurements(invocation, parse_probe_outputs)


def _measurements(invocation: ProbeInvocation, parse: Callable[[bytes], list[ProbeOutput]]) -> list[Measurement]:
    failed = invocation.exit_code not in (0, EXIT_INTERRUPTED, EXIT_FAILED)
    if failed and not invocation.stdout:
        message = invocation.stderr.strip() or f"kbench-probe exited with {invocation.exit_code}"
        raise TargetError(message)
    try:
        outputs = parse(invocation.stdout)
    except ProbeOutputError as exc:
        if invocation.interrupted:
            return [Measurement(header={}, columns={}, interrupted=True, stderr=invocation.stderr)]
        raise TargetError(f"{exc}; probe stderr: {invocation.stderr.strip()}") from exc
    for record, output in enumerate(outputs):
        if (output.header.get("failure") or {}).get("stopped"):
            raise execution_failed(output.header, record)
    if invocation.exit_code == EXIT_FAILED:
        raise TargetError(f"kbench-probe said an operation failed but its output does not say which; "
                          f"probe stderr: {invocation.stderr.strip()}")
    measurements = [measurement_from_output(output, invocation.stderr) for output in outputs]
    if invocation.interrupted and not measurements[-1].interrupted:
        measurements[-1] = replace(measurements[-1], interrupted=True)
    return measurements


def measurement_from_output(output: ProbeOutput, stderr: str) -> Measurement:
    """One record of the probe's output as a measurement."""
    columns = {name: output.rows[:, i].copy() for i, name in enumerate(output.columns)}
    interrupted = bool(output.header.get("interrupted"))
    return Measurement(header=output.header, columns=columns, interrupted=interrupted, stderr=stderr)


def execution_failed(header: dict[str, Any], record: int = 0) -> ExecutionFailed:
    """The failure a probe header's ``failure`` object describes, naming what was executed
    (``record``: the run's place in a ``sequence``)."""
    failure = header.get("failure") or {}
    workload = str(header.get("workload", "?"))
    params = header.get("params") or {}
    if header.get("kind") == "scale":
        what = f"will-it-scale.{header.get('testcase', '?')}"
    elif workload == "command":
        what = f"command {params.get('cmd', '?')!r}"
    else:
        what = f"syscall.{workload}"
    return ExecutionFailed(what, str(failure.get("last") or "failed"), str(failure.get("stderr") or ""),
                           record=record)

