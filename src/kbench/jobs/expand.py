"""Expanding a job file into its instances, after validating all of it, catalog included.

Nothing here measures or stores anything: either every instance is valid and the list is
returned, or a JobError lists every problem found in the file.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import BadParameter, Benchmark, UnknownBenchmark
from kbench.contract.limits import request_problems
from kbench.durations import Warmup
from kbench.jobs.instance import JobInstance, instance_id
from kbench.jobs.lkp_monitors import with_monitors
from kbench.jobs.lkp_setup import check_setup, setup_of
from kbench.jobs.lkp_tests import with_lkp_tests
from kbench.jobs.problems import JobError, JobProblem, ProblemCollector
from kbench.jobs.schema import Axis, AxisValue, JobSpec, read_job
from kbench.jobs.values import NrTask
from kbench.jobs.yaml_tree import compose_mapping
from kbench.kinds.registry import kind_of

JOB_SUFFIXES = (".yaml", ".yml")
TEXT_LABEL = "<job>"
DEFAULT_MAX_INSTANCES = 10_000
"""Most instances a job's matrix may expand to unless the caller allows more."""
MAX_JOB_FILE_BYTES = 1 << 20


def is_job_file(arg: str) -> bool:
    """True if a command-line argument names a job file rather than a benchmark: its name
    ends in ``.yaml`` or ``.yml`` (no benchmark name does). The file need not exist."""
    return arg.lower().endswith(JOB_SUFFIXES)


def expand_job(
    source: str | Path, *, cpu_count: int, name: str | None = None, max_instances: int = DEFAULT_MAX_INSTANCES,
    target_cpus: Callable[[str], Sequence[int]] | None = None,
) -> list[JobInstance]:
    """Validate a job and return its instances, one per point of its matrix.

    ``source`` is a file when it is a ``Path`` or a one-line ``str`` ending in ``.yaml``/
    ``.yml``; any other ``str`` is the YAML text itself. Problems name the file as given
    (or ``name``, or ``<job>`` for text). ``cpu_count`` resolves ``nr_task`` percentages and
    bounds ``cpu``. Instances come benchmark first, then the other axes in file order, the
    last axis varying fastest. A matrix of more than ``max_instances`` instances, and
    values beyond the limits of ``kbench.contract.limits`` (``target_cpus`` gives a target's CPU
    numbers for ``cpu``), are problems too. Raises JobError listing every problem found.
    """
    if cpu_count < 1:
        raise ValueError(f"cpu_count must be at least 1, got {cpu_count}")
    label, text = _read(source, name)
    problems = ProblemCollector(label)
    root = compose_mapping(text, problems)
    if root is None:
        raise problems.error()
    spec = with_lkp_tests(read_job(root, cpu_count=cpu_count, problems=problems), problems)
    benchmarks = _benchmark_axis(spec, problems)
    if benchmarks is not None:
        _check_against_catalog(spec, benchmarks, problems)
    _check_count_or_duration(spec, problems)
    problems.raise_if_any()
    assert benchmarks is not None  # a missing benchmark is a problem, raised above
    _check_matrix_size(spec, benchmarks, max_instances, problems)
    problems.raise_if_any()
    instances = _marked_controls(spec, _instances(spec, benchmarks, cpu_count, label, problems), problems)
    instances = with_monitors(spec, instances, problems)
    _check_limits(spec, instances, target_cpus, problems)
    check_setup(spec, instances, problems)
    problems.raise_if_any()
    return _with_warnings(instances, problems)


def job_files(source: str | Path, *, name: str | None = None) -> tuple[tuple[str, int], ...]:
    """The paths a job names under ``files:`` (relative to its file's folder), each with its line;
    the job is read, not validated (``expand_job`` validates it)."""
    label, text = _read(source, name)
    problems = ProblemCollector(label)
    root = compose_mapping(text, problems)
    if root is None:
        return ()
    return read_job(root, cpu_count=1, problems=problems).files


def _marked_controls(spec: JobSpec, instances: list[JobInstance], problems: ProblemCollector) -> list[JobInstance]:
    """The instances, those ``control:`` picks marked ``control``; a control that picks none or all is a problem."""
    if not spec.control:
        return instances
    picked = [all(instance.describe().get(key) == value for key, value, _ in spec.control) for instance in instances]
    line = spec.control[0][2]
    shown = ", ".join(f"{key}={value}" for key, value, _ in spec.control)
    if not any(picked):
        problems.add(line, "control", f"{shown} picks no instance of the job (`kbench job expand` lists them)")
    elif all(picked):
        problems.add(line, "control", f"{shown} picks every instance: nothing is left to judge against it")
    return [dataclasses.replace(instance, control=True) if mine else instance
            for instance, mine in zip(instances, picked, strict=True)]


def _read(source: str | Path, name: str | None) -> tuple[str, str]:
    is_path = isinstance(source, Path) or ("\n" not in source and is_job_file(source))
    if not is_path:
        return name or TEXT_LABEL, str(source)
    label = name or str(source)
    try:
        size = Path(source).stat().st_size
        if size > MAX_JOB_FILE_BYTES:
            raise JobError([JobProblem(label, None, "job", f"the file is {size:,} bytes, more than the limit of "
                                                          f"{MAX_JOB_FILE_BYTES:,} for a job file")])
        return label, Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    raise JobError([JobProblem(label, None, "job", f"cannot read the file: {reason}")])


def _benchmark_axis(spec: JobSpec, problems: ProblemCollector) -> Axis | None:
    """The benchmarks to measure, looked up in the catalog, from ``benchmark:`` or from
    ``suite:`` + ``test:``; None (with problems recorded) if they cannot be named."""
    named, tests = spec.axis("benchmark"), spec.axis("test")
    if named is not None and (spec.suite is not None or tests is not None):
        where = (spec.suite_line, "suite") if spec.suite_line is not None else (tests.line if tests else None, "test")
        problems.add(*where, "give either benchmark: or suite: with test:, not both")
        return None
    if spec.suite is None and spec.suite_line is not None:
        return None  # the suite's value is invalid, and that was reported
    if named is not None:
        names = [(v.value, v.line) for v in named.values]
        axis = named
    elif spec.suite is not None and tests is not None:
        names = [(f"{spec.suite}.{v.value}", v.line) for v in tests.values]
        axis = tests
    elif spec.suite is not None:
        problems.add(
            spec.suite_line, "suite",
            f"needs a test (test: NAME, at top level or in the {spec.suite}: section)",
        )
        return None
    elif tests is not None:
        problems.add(tests.line, tests.label, "needs a suite (suite: NAME), or name the benchmark with benchmark:")
        return None
    else:
        problems.add(
            spec.line, "benchmark",
            "missing: name what to measure with benchmark: (e.g. benchmark: syscall.getppid) or with suite: and test:",
        )
        return None
    found: list[AxisValue] = []
    first_line: dict[str, int] = {}
    for bench_name, line in names:
        try:
            bench = lookup(bench_name)
        except UnknownBenchmark as exc:
            problems.add(line, axis.label, str(exc))
            continue
        if bench.name in first_line:
            problems.add(line, axis.label, f"{bench.name} is listed twice (first at line {first_line[bench.name]})")
            continue
        if bench.unavailable:
            problems.add(line, axis.label, f"{bench.name} cannot run on this system: {bench.unavailable}")
            continue
        first_line[bench.name] = line
        found.append(AxisValue(bench, line))
    return Axis("benchmark", None, axis.label, axis.line, tuple(found))


def _check_against_catalog(spec: JobSpec, benchmarks: Axis, problems: ProblemCollector) -> None:
    """Every benchmark must take every parameter given (``mode`` included), have a task
    count if ``nr_task`` is given, and every parameter value must have the type the catalog
    declares. A setting that becomes a parameter (the task count, a whole tool's duration)
    must not be given as that parameter too."""
    given = {axis.param: axis for axis in spec.axes if axis.field == "param" and axis.param is not None}
    for bench_value in benchmarks.values:
        bench: Benchmark = bench_value.value
        for axis in spec.axes:
            param = axis.param if axis.field == "param" else axis.field
            if axis.field == "nr_task":
                _check_task_count(bench, axis, given, problems)
                continue
            if axis.field == "runtime" and kind_of(bench).whole_tool:
                _check_suite_runtime(bench, axis, given, problems)
                continue
            kind = kind_of(bench)
            if axis.field == "metric":
                _check_counted(bench, axis, problems)
                continue
            taken = kind.counted if axis.field == "counters" else kind.profiled
            if axis.field in ("counters", "profile") and not taken:
                if any(v.value for v in axis.values):
                    problems.warn(axis.line, axis.label, f"ignored for {bench.name}: {axis.field} are not taken for "
                                                         f"{kind.name} benchmarks yet", bench.name)
                continue
            if param is None or axis.field not in ("param", "mode"):
                continue
            try:
                bench.param(param)
            except BadParameter as exc:
                problems.add(axis.line, axis.label, str(exc))
                continue
            if axis.field != "param":
                continue  # nr_task and mode were checked by their converters
            for value in axis.values:
                try:
                    bench.validate_params({param: value.value})
                except BadParameter as exc:
                    problems.add(value.line, axis.label, str(exc))


def _check_counted(bench: Benchmark, axis: Axis, problems: ProblemCollector) -> None:
    """``metric: instructions`` counts commands, ``syscall.*`` and ``kfunc.*`` only."""
    from kbench.contract.request import BadRequest
    from kbench.kinds.instructions.benchmark import counted

    for value in axis.values:
        if value.value != "instructions":
            continue
        try:
            counted(bench)
        except BadRequest as exc:
            problems.add(value.line, axis.label, str(exc))


def _check_task_count(bench: Benchmark, axis: Axis, given: dict[str, Axis], problems: ProblemCollector) -> None:
    tasks = bench.tasks()
    if tasks is None:
        listing = ", ".join(p.name for p in bench.params) or "none"
        problems.add(axis.line, axis.label, f"{bench.name} has no task count for {axis.label} to set; "
                                            f"its parameters: {listing}")
    elif tasks.param in given:
        twice = given[tasks.param]
        problems.add(twice.line, twice.label, f"{bench.name}: {axis.label} (line {axis.line}) sets {tasks.param} "
                                              "already; give one of them")


def _check_suite_runtime(bench: Benchmark, axis: Axis, given: dict[str, Axis], problems: ProblemCollector) -> None:
    """A whole tool's duration is its own parameter (stress-ng timeout, fio runtime); a tool
    that does a fixed amount of work (hackbench) has none, and the key is ignored for it."""
    if bench.duration_param is None:
        problems.warn(axis.line, axis.label, f"ignored for {bench.name}: it runs a fixed amount of work and "
                                             "has no duration (set its own parameters, e.g. loops)", bench.name)
    elif bench.duration_param in given:
        twice = given[bench.duration_param]
        problems.add(twice.line, twice.label, f"{bench.name}: {axis.label} (line {axis.line}) sets "
                                              f"{bench.duration_param} already; give one of them")


def _check_count_or_duration(spec: JobSpec, problems: ProblemCollector) -> None:
    samples, runtime = spec.axis("samples"), spec.axis("runtime")
    if samples is not None and runtime is not None:
        problems.add(
            samples.line, samples.label,
            f"give either samples (count mode) or {runtime.label} (duration mode, line {runtime.line}), not both",
        )


def _check_matrix_size(spec: JobSpec, benchmarks: Axis, max_instances: int, problems: ProblemCollector) -> None:
    """The matrix is counted before it is built: a few lines of YAML can ask for millions."""
    axes = [benchmarks, *(a for a in spec.axes if a.field not in ("benchmark", "test"))]
    size = math.prod(len(axis.values) for axis in axes)
    if size > max_instances:
        shape = " × ".join(f"{len(axis.values)} {axis.label}" for axis in axes if len(axis.values) > 1)
        problems.add(spec.line, "job", f"the matrix expands to {size:,} instances ({shape}), more than the "
                                       f"limit of {max_instances:,}; raise it with --max-instances if you mean it")


def _check_limits(
    spec: JobSpec, instances: list[JobInstance], target_cpus: Callable[[str], Sequence[int]] | None,
    problems: ProblemCollector,
) -> None:
    """Each instance's samples, batch, durations, iterations and cpu within the limits."""
    lines = {"samples": "samples", "warmup": "warmup", "batch": "batch", "duration": "runtime",
             "iterations": "iterations", "cpu": "cpu"}
    for instance in instances:
        limits = kind_of(lookup(instance.benchmark)).limits
        cpus = target_cpus(instance.target) if target_cpus is not None else None
        request = dataclasses.replace(instance.to_run_request(), iterations=instance.iterations)
        for problem in request_problems(request, limits, cpus):
            axis = spec.axis(lines[problem.field])
            problems.add(axis.line if axis else spec.line, axis.label if axis else problem.field,
                         f"{instance.benchmark}: {problem.message}")


def _instances(
    spec: JobSpec, benchmarks: Axis, cpu_count: int, source: str, problems: ProblemCollector
) -> list[JobInstance]:
    axes = [benchmarks, *(a for a in spec.axes if a.field not in ("benchmark", "test"))]
    instances = []
    for point in itertools.product(*(axis.values for axis in axes)):
        settings: dict[str, Any] = {}
        params: dict[str, str] = {}
        for axis, value in zip(axes, point, strict=True):
            if axis.param is not None:
                params[axis.param] = value.value
            else:
                settings[axis.field] = value.value
        instance = _instance(settings, params, spec.tags, cpu_count, source)
        try:
            lookup(instance.benchmark).validate_params(instance.run_params())
        except BadParameter as exc:
            problems.add(spec.line, "job", str(exc))
        instances.append(instance)
    return instances


def _derived(bench: Benchmark, settings: dict[str, Any], params: dict[str, str], cpu_count: int) -> dict[str, str]:
    """The parameters job settings set: the task count as this benchmark counts tasks, and a
    whole tool's duration in its own parameter (whole seconds, rounded up, for an integer one)."""
    derived: dict[str, str] = {}
    nr_task: NrTask | None = settings.get("nr_task")
    tasks = bench.tasks()
    if nr_task is not None and tasks is not None:
        defaults = {p.name: p.default for p in bench.params}
        derived[tasks.param] = str(tasks.value(nr_task.resolve(cpu_count), params, defaults))
    runtime: float | None = settings.get("runtime")
    if runtime is not None and bench.duration_param is not None:
        integer = bench.param(bench.duration_param).type == "int"
        derived[bench.duration_param] = str(max(1, math.ceil(runtime))) if integer else f"{runtime:g}"
    return derived


def _with_warnings(instances: list[JobInstance], problems: ProblemCollector) -> list[JobInstance]:
    """Each instance with the warnings that concern it: the job's, and those naming its benchmark."""
    out = []
    for instance in instances:
        mine = tuple(str(warning) for warning in problems.warnings(instance.benchmark))
        out.append(dataclasses.replace(instance, warnings=mine) if mine else instance)
    return out


def _instance(
    settings: dict[str, Any], params: dict[str, str], tags: tuple[str, ...], cpu_count: int, source: str
) -> JobInstance:
    bench: Benchmark = settings["benchmark"]
    nr_task: NrTask | None = settings.get("nr_task")
    derived = _derived(bench, settings, params, cpu_count)
    warmup: Warmup = settings.get("warmup") or Warmup()
    instance = JobInstance(
        id="",
        benchmark=bench.name,
        params=params,
        nr_task=nr_task.resolve(cpu_count) if nr_task else None,
        nr_task_spec=nr_task.spec if nr_task else None,
        mode=settings.get("mode"),
        iterations=settings.get("iterations", 1),
        runtime_s=settings.get("runtime"),
        target=settings.get("target", "local"),
        cpufreq_governor=settings.get("cpufreq_governor"),
        samples=settings.get("samples"),
        warmup_samples=warmup.samples,
        warmup_duration_s=warmup.duration_s,
        batch=settings.get("batch"),
        cpu=settings.get("cpu"),
        subtract_overhead=settings.get("subtract_overhead", False),
        counters=settings.get("counters", False),
        profile=settings.get("profile", False),
        ignore_failure=settings.get("ignore_failure", False),
        metric=None if settings.get("metric", "time") == "time" else settings["metric"],
        tags=tags,
        source=source,
        derived_params=derived,
        engine_runtime=not kind_of(bench).whole_tool,
        guest_setup=setup_of(settings),
    )
    setup = {"guest_setup": instance.guest_setup} if instance.guest_setup else {}
    return dataclasses.replace(instance, id=instance_id({**instance.identity(), **setup}))
