"""A/B runs inside kbench.ko: /sys/kernel/kbench/ab/ (docs/sysfs-ABI.md, "A/B runs").

Two or more *sides* (a benchmark and its parameter values) alternate in short slots
inside one kernel thread, in blocks of mirrored random order (ABBA / BAAB); every
recorded sample says its side and slot, and whether an interrupt or a context switch
reached it. ``run_ab`` writes the sides and knobs, reads ``run`` within a bound, and
returns the records; a side that the module refuses or whose set-up fails is a
``TargetError`` naming that side.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.targets.base import TargetError
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule, SysfsError

if TYPE_CHECKING:
    import numpy as np

AB_DIR = f"{SYSFS_ROOT}/ab"
RECORD_FIELDS = (("cycles", "<u8"), ("slot", "<u4"), ("side", "<u2"), ("flags", "<u2"))
"""One record of ``ab/samples``: 16 bytes, little-endian (struct kbench_ab_record)."""
FLAG_IRQ = 1
"""The CPU took an interrupt or NMI during the sample (or just after it)."""
FLAG_SWITCH = 2
"""The measuring thread was switched out during the sample (preempted, slept or migrated)."""
MAX_SIDES = 16
MAX_RECORDS = 4 << 20
"""kbench.ko's limit of recorded samples in one A/B run."""
SLOT_MAX_S = 0.010
"""kbench.ko refuses a side whose slot takes longer (ERANGE)."""
SIDE_KNOBS = ("seed", "dataset_size", "irqs_off", "preempt_off")
"""Per-side settings an A/B side line takes besides the benchmark's own parameters."""
NOT_IN_A_SIDE = frozenset({"parallel", "cpus"})
"""kfunc parameters an A/B run cannot take (it runs one thread)."""


class AbSideError(TargetError):
    """kbench.ko refused a side of an A/B run, or its set-up failed; ``side`` says which."""

    def __init__(self, message: str, side: int):
        super().__init__(message)
        self.side = side


@dataclass(frozen=True)
class AbSide:
    """One side: a benchmark registered in kbench.ko (``bench``, without ``kfunc.``) and the
    values it takes: its own parameters and ``SIDE_KNOBS``."""

    bench: str
    params: Mapping[str, str]

    def line(self) -> str:
        words = [self.bench, *(f"{key}={_module_value(value)}" for key, value in self.params.items())]
        return " ".join(words)


@dataclass(frozen=True)
class AbSettings:
    """The run-wide knobs of ``ab/``."""

    blocks: int
    slot_samples: int
    batch: int = 1
    warmup: int = 1
    order_seed: int = 1
    cpu: int | None = None

    def values(self) -> dict[str, str]:
        return {"blocks": str(self.blocks), "slot_samples": str(self.slot_samples), "batch": str(self.batch),
                "warmup": str(self.warmup), "order_seed": str(self.order_seed),
                "cpu": str(-1 if self.cpu is None else self.cpu)}


@dataclass(frozen=True)
class AbRun:
    """What one A/B run left: every record in order and the module's own account of it."""

    records: np.ndarray  # structured, RECORD_FIELDS
    settings: AbSettings
    sides: tuple[AbSide, ...]
    status: dict[str, str]
    side_status: tuple[dict[str, str], ...]
    run_text: str
    tsc_khz: int
    interrupted: bool

    @property
    def blocks(self) -> int:
        """Complete recorded blocks."""
        return int(self.status.get("blocks", 0))

    def overhead(self, side: int) -> int:
        """Median empty timed region of that side's mode, cycles per sample."""
        return int(self.side_status[side].get("overhead_sample", 0))


def supports_ab(module: KbenchModule) -> bool:
    """True when the loaded kbench.ko has A/B runs (``ab/``)."""
    try:
        module.io.read_text(f"{AB_DIR}/status")
    except SysfsError:
        return False
    return True


def record_dtype() -> np.dtype:
    import numpy as np

    return np.dtype(list(RECORD_FIELDS))


def write_sides(module: KbenchModule, sides: Sequence[AbSide]) -> None:
    """Set ``ab/sides``; a refused side is an ``AbSideError`` naming it and the errno's reason."""
    if not 2 <= len(sides) <= MAX_SIDES:
        raise TargetError(f"an A/B run takes 2 to {MAX_SIDES} sides, got {len(sides)}")
    text = "".join(f"{side.line()}\n" for side in sides)
    try:
        module.io.write_values(AB_DIR, {"sides": text})
        return
    except SysfsError as exc:
        failure = exc
    # Which line? Each one alone, twice (an A/A pair is a valid set of sides).
    for index, side in enumerate(sides):
        try:
            module.io.write_values(AB_DIR, {"sides": f"{side.line()}\n{side.line()}\n"})
        except SysfsError as exc:
            raise AbSideError(f"kbench.ko refused side {index} `{side.line()}`: {_refusal(exc.errno)}",
                              index) from exc
    raise TargetError(f"kbench.ko refused the sides: {failure}") from failure


def run_ab(module: KbenchModule, sides: Sequence[AbSide], settings: AbSettings, bound_s: float) -> AbRun:
    """One A/B run of ``sides``, stopped after ``bound_s`` seconds (then TargetError).

    Ctrl-C (KeyboardInterrupt) or a signal to the reader stops it in the kernel at the next
    slot: the records taken so far come back with ``interrupted`` set."""
    import numpy as np

    write_sides(module, sides)
    module.io.write_values(AB_DIR, settings.values())
    interrupted = False
    run_text = ""
    try:
        run_text = module.io.read_text(f"{AB_DIR}/run", timeout=bound_s)
    except SysfsError as exc:
        if exc.errno == errno.ETIMEDOUT:
            raise TargetError(f"the A/B run of {len(sides)} sides did not finish within its bound of "
                              f"{bound_s:.0f} s ({settings.blocks} blocks); it was stopped") from exc
        if exc.errno != errno.EINTR:
            raise _failure(exc, _status(module)[0], sides) from exc
        interrupted = True
    except KeyboardInterrupt:
        interrupted = True
    status, side_status = _status(module)
    raw = module.io.read_bytes(f"{AB_DIR}/samples")
    records = np.frombuffer(raw, dtype=record_dtype()).copy()
    expected = int(status.get("count", records.size))
    if records.size != expected:
        raise TargetError(f"kbench.ko returned {records.size} A/B records, its status says {expected}")
    return AbRun(records=records, settings=settings, sides=tuple(sides), status=status,
                 side_status=tuple(side_status), run_text=run_text.strip(), tsc_khz=module.tsc_khz(),
                 interrupted=interrupted or status.get("result") == "interrupted")


def _status(module: KbenchModule) -> tuple[dict[str, str], list[dict[str, str]]]:
    lines = [line for line in module.io.read_text(f"{AB_DIR}/status").splitlines() if line.strip()]
    if not lines:
        raise TargetError("kbench.ko's ab/status is empty")
    return parse_key_values(lines[0]), [parse_key_values(line) for line in lines[1:]]


def _failure(exc: SysfsError, status: Mapping[str, str], sides: Sequence[AbSide]) -> TargetError:
    side = int(status.get("failed_side", "-1"))
    if 0 <= side < len(sides):
        line = sides[side].line()
        if exc.errno == errno.ERANGE:
            return AbSideError(f"side {side} `{line}`: a slot of it takes longer than {SLOT_MAX_S * 1e3:g} ms; "
                               "give fewer samples per slot or a smaller batch", side)
        if exc.errno == errno.EBUSY:
            return AbSideError(f"side {side} `{line}`: a run of {sides[side].bench} is in progress", side)
        return AbSideError(f"side {side} `{line}` failed its set-up: {_errno_name(exc.errno)} "
                           f"({os.strerror(exc.errno)})", side)
    if exc.errno == errno.ERANGE:
        return TargetError(f"the A/B run is too large for kbench.ko: at most {MAX_RECORDS} recorded samples and "
                           "10^9 calls per side ({exc})")
    return TargetError(f"the A/B run failed: {exc}")


def _refusal(code: int) -> str:
    reasons = {
        errno.ENOENT: "no such benchmark is registered",
        errno.EINVAL: "a malformed value, or a parameter the benchmark does not have",
        errno.ERANGE: "a value out of its range",
        errno.EOPNOTSUPP: "the benchmark cannot run with interrupts off",
    }
    return f"{_errno_name(code)} ({reasons.get(code, os.strerror(code))})"


def _errno_name(code: int) -> str:
    """The kernel's name of an errno (Python calls 95 ENOTSUP, the kernel EOPNOTSUPP)."""
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, str(code))


def _module_value(value: str) -> str:
    return {"true": "1", "yes": "1", "false": "0", "no": "0"}.get(value, value)
