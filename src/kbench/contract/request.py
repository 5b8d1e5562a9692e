"""What the user asked to measure, independent of where it runs."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kbench.exit_codes import KbenchError

DEFAULT_SAMPLES = 10_000
_COMMIT = re.compile(r"^[0-9a-f]{4,64}$")
LABEL_MAX = 255


class BadRequest(KbenchError, ValueError):
    """The measurement request is inconsistent (e.g. both a count and a duration)."""


@dataclass(frozen=True)
class RunRequest:
    """One measurement: count mode (``samples``) or duration mode (``duration_s``)."""

    benchmark: str
    params: dict[str, str] = field(default_factory=dict)
    samples: int | None = None
    duration_s: float | None = None
    warmup_samples: int | None = None
    warmup_duration_s: float | None = None
    batch: int | None = None  # None: calibrated by the probe
    cpu: int | None = None
    subtract_overhead: bool = False
    iterations: int = 1  # fresh tool processes, for whole-tool (suite) benchmarks
    tags: tuple[str, ...] = ()
    timer: str | None = None  # probe timer: "tsc", "clock" or None (the probe's auto)
    overhead_pairs: int | None = None  # probe empty-region pairs (None: the probe's default)
    commit: str | None = None  # the git commit measured (history series carry it)
    label: str | None = None  # a free name for the measured version
    counters: bool = False  # perf event counters around the measured region (kbench.profile.counters)
    ignore_failure: bool = False  # time failed executions too (default: the first one fails the run)
    monitors: dict[str, float] = field(default_factory=dict)
    """LKP's monitors sampled during a whole tool's iterations: name (vmstat, mpstat, proc-vmstat,
    interrupts) → interval in seconds (``kbench.profile.monitors``)."""

    def __post_init__(self) -> None:
        if self.commit is not None and not _COMMIT.match(self.commit):
            raise BadRequest(f"commit must be a git commit id (4 to 64 hex digits), got {self.commit!r}")
        if self.label is not None and not 0 < len(self.label) <= LABEL_MAX:
            raise BadRequest(f"label must be 1 to {LABEL_MAX} characters, got {len(self.label)}")
        if self.samples is not None and self.duration_s is not None:
            raise BadRequest("give either a sample count or a duration, not both")
        if self.samples is not None and self.samples < 1:
            raise BadRequest(f"samples must be at least 1, got {self.samples}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise BadRequest(f"duration must be positive, got {self.duration_s}")
        if self.warmup_samples is not None and self.warmup_duration_s is not None:
            raise BadRequest("give either a warm-up count or a warm-up duration, not both")
        if self.warmup_samples is not None and self.warmup_samples < 0:
            raise BadRequest(f"warm-up samples cannot be negative, got {self.warmup_samples}")
        if self.warmup_duration_s is not None and self.warmup_duration_s < 0:
            raise BadRequest(f"warm-up duration cannot be negative, got {self.warmup_duration_s}")
        if self.batch is not None and self.batch < 1:
            raise BadRequest(f"batch must be at least 1, got {self.batch}")
        if self.iterations < 1:
            raise BadRequest(f"iterations must be at least 1, got {self.iterations}")
        if self.cpu is not None and self.cpu < 0:
            raise BadRequest(f"cpu must be a CPU number, got {self.cpu}")
        if self.timer not in (None, "tsc", "clock", "auto"):
            raise BadRequest(f"timer must be tsc, clock or auto, got {self.timer!r}")
        if self.overhead_pairs is not None and self.overhead_pairs < 100:
            raise BadRequest(f"overhead pairs must be at least 100, got {self.overhead_pairs}")

    def probe_args(self, workload: str) -> list[str]:
        """The ``kbench-probe run`` arguments for this request (moves to the probe kind with the targets)."""
        args = ["run", workload]
        for key, value in self.params.items():
            args += ["--param", f"{key}={value}"]
        if self.duration_s is not None:
            args += ["--duration", repr(self.duration_s)]
        else:
            args += ["--samples", str(self.samples or DEFAULT_SAMPLES)]
        if self.warmup_samples is not None:
            args += ["--warmup-samples", str(self.warmup_samples)]
        if self.warmup_duration_s is not None:
            args += ["--warmup-duration", repr(self.warmup_duration_s)]
        args += ["--batch", str(self.batch) if self.batch else "auto"]
        if self.cpu is not None:
            args += ["--cpu", str(self.cpu)]
        if self.timer is not None:
            args += ["--timer", self.timer]
        if self.overhead_pairs is not None:
            args += ["--overhead-pairs", str(self.overhead_pairs)]
        if self.counters:
            args.append("--counters")
        if self.ignore_failure:
            args.append("--ignore-failure")
        return args

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        return data
