"""Turn a probe invocation into per-operation values the statistics can use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kbench.contract.measurement import Measurement
from kbench.targets.base import ProbeInvocation, TargetError
from kbench.targets.probe_output import ProbeOutput, ProbeOutputError, parse_probe_output, parse_probe_outputs

EXIT_INTERRUPTED = 130


def measurement_from_invocation(invocation: ProbeInvocation) -> Measurement:
    """Parse the probe's bytes; raise TargetError with the probe's message on failure."""
    return _measurements(invocation, lambda data: [parse_probe_output(data)])[0]


def measurements_from_invocation(invocation: ProbeInvocation) -> list[Measurement]:
    """The records of a ``kbench-probe sequence``, a measurement each; interrupted, the last
    one (the run that was stopped) is marked so. TargetError as ``measurement_from_invocation``."""
    return _measurements(invocation, parse_probe_outputs)


def _measurements(invocation: ProbeInvocation, parse: Callable[[bytes], list[ProbeOutput]]) -> list[Measurement]:
    failed = invocation.exit_code not in (0, EXIT_INTERRUPTED)
    if failed and not invocation.stdout:
        message = invocation.stderr.strip() or f"kbench-probe exited with {invocation.exit_code}"
        raise TargetError(message)
    try:
        outputs = parse(invocation.stdout)
    except ProbeOutputError as exc:
        if invocation.interrupted:
            return [Measurement(header={}, columns={}, interrupted=True, stderr=invocation.stderr)]
        raise TargetError(f"{exc}; probe stderr: {invocation.stderr.strip()}") from exc
    measurements = [measurement_from_output(output, invocation.stderr) for output in outputs]
    if invocation.interrupted and not measurements[-1].interrupted:
        measurements[-1] = replace(measurements[-1], interrupted=True)
    return measurements


def measurement_from_output(output: ProbeOutput, stderr: str) -> Measurement:
    """One record of the probe's output as a measurement."""
    columns = {name: output.rows[:, i].copy() for i, name in enumerate(output.columns)}
    interrupted = bool(output.header.get("interrupted"))
    return Measurement(header=output.header, columns=columns, interrupted=interrupted, stderr=stderr)
