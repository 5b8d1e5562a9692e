"""One expanded job instance: what to measure, how, and where; its stable id; its RunRequest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kbench.contract.request import RunRequest

ID_LENGTH = 12
ID_VERSION = 1
# Fields that describe the measurement and therefore enter the id.
IDENTITY_FIELDS = (
    "benchmark", "params", "nr_task_spec", "mode", "iterations", "runtime_s", "target",
    "cpufreq_governor", "samples", "warmup_samples", "warmup_duration_s", "batch", "cpu",
    "subtract_overhead", "metric",
)


def instance_id(content: dict[str, Any]) -> str:
    """The first 12 hex digits of SHA-256 over the canonical JSON of ``content``.

    Canonical JSON: ``{"kbench-job": 1, ...content}`` without the entries whose value is
    None or an empty mapping, keys sorted at every level, separators ``,`` and ``:``,
    ASCII only. Key order in the file, YAML quoting and the machine do not matter; any
    changed value does.
    """
    kept = {k: v for k, v in content.items() if v is not None and v != {}}
    text = json.dumps({"kbench-job": ID_VERSION, **kept}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:ID_LENGTH]


@dataclass(frozen=True)
class JobInstance:
    """One point of a job's matrix.

    ``params`` are the benchmark parameters as written (strings); ``nr_task`` is resolved
    against the CPU count given to ``expand_job`` while ``nr_task_spec`` keeps what the file
    says (``"50%"``); ``runtime_s`` is ``runtime``/``duration`` in seconds; ``iterations`` is
    the number of trials (RunRequests to execute) for this instance; ``target`` is
    ``local``, ``deb:RELEASE`` or a kernel image path as written (relative to ``source``'s
    directory). ``id`` covers the fields in IDENTITY_FIELDS, not ``tags`` or ``source``.
    """

    id: str
    benchmark: str
    params: dict[str, str] = field(default_factory=dict)
    nr_task: int | None = None
    nr_task_spec: str | None = None
    mode: str | None = None
    iterations: int = 1
    runtime_s: float | None = None
    target: str = "local"
    cpufreq_governor: str | None = None
    samples: int | None = None
    warmup_samples: int | None = None
    warmup_duration_s: float | None = None
    batch: int | None = None
    cpu: int | None = None
    subtract_overhead: bool = False
    counters: bool = False
    """perf counters around each run (``counters:`` or LKP's ``perf-stat:``); not part of the id: they
    change nothing measured."""
    profile: bool = False
    """A profile in a run of its own after the instance's runs (``profile:`` or LKP's ``perf-profile:``)."""
    ignore_failure: bool = False
    """Time failed executions too (``ignore_failure:``, as ``--ignore-failure``); not part of the id."""
    metric: str | None = None
    """``instructions``: counted in instructions instead of timed (``metric:``, docs/instructions.md);
    None: timed (left out of the id, so that a timed instance keeps the id it always had)."""
    tags: tuple[str, ...] = ()
    source: str = "<job>"
    derived_params: dict[str, str] = field(default_factory=dict)
    """Benchmark parameters set by job settings: the task count (``nr_task``/``nr_threads``
    as the benchmark counts tasks: hackbench ``groups``, stress-ng ``workers``...) and a
    whole tool's duration (``runtime``/``testtime`` as stress-ng ``timeout``...)."""
    engine_runtime: bool = True
    """``runtime_s`` is the engine's duration mode (False: it became a parameter or was ignored)."""
    warnings: tuple[str, ...] = ()
    """What the job asks for and this instance will not do (``FILE:LINE: key: ignored: ...``)."""
    control: bool = False
    """Picked by the job's ``control:``: measured beside the others, which are judged relative to it."""
    monitors: dict[str, float] = field(default_factory=dict)
    """LKP's monitors sampled during the runs (name → interval s: ``vmstat``, ``mpstat``, ``proc-vmstat``,
    ``interrupts``); not part of the id: they observe, they change nothing measured."""
    guest_setup: dict[str, str] = field(default_factory=dict)
    """LKP's disk set-up asked (``disk``, ``fs``, ``md``, ``mount_option``, ``nr_pmem``, ``bp_memmap``; made
    in the guest before the instance runs: ``kbench.targets.vm.guest_setup``). In the id when given
    (``expand``), so that every other instance keeps the id it always had."""

    def identity(self) -> dict[str, Any]:
        """The content the id is computed from (``metric`` only when counted: a timed instance's
        content is what it was before counting existed)."""
        return {name: getattr(self, name) for name in IDENTITY_FIELDS
                if name != "metric" or self.metric is not None}

    def run_params(self) -> dict[str, str]:
        """The benchmark parameters of one run: ``params`` plus ``nr_task`` (resolved) and
        ``mode`` when the job gives them (the catalog has checked the benchmark takes them)."""
        params = dict(self.params)
        params.update(self.derived_params)
        if self.nr_task is not None and not self.derived_params:
            params["nr_task"] = str(self.nr_task)
        if self.mode is not None:
            params["mode"] = self.mode
        return params

    def to_run_request(self) -> RunRequest:
        """The engine's request for one trial of this instance (run it ``iterations`` times).

        ``runtime_s`` becomes ``duration_s``; the tags gain ``job:<id>`` so that every run
        of the instance can be found again. ``target`` and ``cpufreq_governor`` are not
        part of a RunRequest: the caller chooses the target and applies the governor.
        """
        return RunRequest(
            benchmark=self.benchmark,
            params=self.run_params(),
            samples=self.samples,
            duration_s=self.runtime_s if self.engine_runtime else None,
            warmup_samples=self.warmup_samples,
            warmup_duration_s=self.warmup_duration_s,
            batch=self.batch,
            cpu=self.cpu,
            subtract_overhead=self.subtract_overhead,
            tags=(*self.tags, f"job:{self.id}"),
            counters=self.counters,
            ignore_failure=self.ignore_failure,
            monitors=dict(self.monitors),
        )

    def describe(self) -> dict[str, str]:
        """Every set field as display text, flat: ``benchmark``, each parameter by name
        (``params.NAME`` if a parameter shares a setting's name), ``nr_task`` as
        ``2 (100%)`` for percentages, ``runtime`` and ``warmup`` with units."""
        shown: dict[str, str] = {"benchmark": self.benchmark}
        nr_task = None if self.nr_task is None else str(self.nr_task)
        if nr_task is not None and (self.nr_task_spec or "").endswith("%"):
            nr_task += f" ({self.nr_task_spec})"
        settings = {
            "nr_task": nr_task,
            "mode": self.mode,
            "iterations": str(self.iterations),
            "runtime": None if self.runtime_s is None else f"{self.runtime_s:g}s",
            "target": self.target,
            "cpufreq_governor": self.cpufreq_governor,
            "samples": None if self.samples is None else str(self.samples),
            "warmup": str(self.warmup_samples) if self.warmup_samples is not None else (
                None if self.warmup_duration_s is None else f"{self.warmup_duration_s:g}s"
            ),
            "batch": None if self.batch is None else str(self.batch),
            "cpu": None if self.cpu is None else str(self.cpu),
            "subtract_overhead": "true" if self.subtract_overhead else None,
            "counters": "true" if self.counters else None,
            "profile": "true" if self.profile else None,
            "ignore_failure": "true" if self.ignore_failure else None,
            "metric": self.metric,
        }
        derived = {name: value for name, value in self.derived_params.items() if name != "nr_task"}
        for name, value in {**self.params, **derived}.items():
            shown[f"params.{name}" if name in settings or name == "benchmark" else name] = value
        shown.update({name: value for name, value in settings.items() if value is not None})
        shown.update(self.guest_setup)
        return shown

    def to_dict(self) -> dict[str, Any]:
        """All fields as JSON-ready data (tags as a list)."""
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["warnings"] = list(self.warnings)
        return data


def varying_keys(instances: list[JobInstance]) -> list[str]:
    """The ``describe()`` keys whose text is not the same in every instance (a key missing
    from some instances varies), in order of first appearance."""
    described = [instance.describe() for instance in instances]
    keys: list[str] = []
    for shown in described:
        keys += [key for key in shown if key not in keys]
    return [key for key in keys if len({shown.get(key) for shown in described}) > 1]
