"""Turn a probe invocation into per-operation values the statistics can use."""

from __future__ import annotations

from dataclasses import replace

from kbench.contract.measurement import Measurement
from kbench.targets.base import ProbeInvocation, TargetError
from kbench.targets.probe_output import ProbeOutput, ProbeOutputError, parse_probe_output

EXIT_INTERRUPTED = 130


def measurement_from_invocation(invocation: ProbeInvocation) -> Measurement:
    """Parse the probe's bytes; raise TargetError with the probe's message on failure."""
    failed = invocation.exit_code not in (0, EXIT_INTERRUPTED)
    if failed and not invocation.stdout:
        message = invocation.stderr.strip() or f"kbench-probe exited with {invocation.exit_code}"
        raise TargetError(message)
    try:
        output: ProbeOutput = parse_probe_output(invocation.stdout)
    except ProbeOutputError as exc:
        if invocation.interrupted:
            return Measurement(header={}, columns={}, interrupted=True, stderr=invocation.stderr)
        raise TargetError(f"{exc}; probe stderr: {invocation.stderr.strip()}") from exc
    measurement = measurement_from_output(output, invocation.stderr)
    if invocation.interrupted and not measurement.interrupted:
        return replace(measurement, interrupted=True)
    return measurement


def measurement_from_output(output: ProbeOutput, stderr: str) -> Measurement:
    """One record of the probe's output as a measurement."""
    columns = {name: output.rows[:, i].copy() for i, name in enumerate(output.columns)}
    interrupted = bool(output.header.get("interrupted"))
    return Measurement(header=output.header, columns=columns, interrupted=interrupted, stderr=stderr)
