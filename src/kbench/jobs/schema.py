"""The job-file schema: which keys exist, where they may be written, and how the top-level
mapping is read into matrix axes.

Every key except ``suite``, ``tags``, ``testcase``, ``category`` and the parameter section
is a matrix axis: a single value is an axis of one, a flat list is an axis of several.
Benchmark parameters live in one section, ``params:`` or (LKP style) a mapping named after
the suite; ``test``, ``nr_task`` and ``mode`` may be written at top level or in that section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from kbench.contract.suggest import HINT_MATCHES, close_matches, hint
from kbench.jobs import lkp, lkp_setup, values
from kbench.jobs.problems import ProblemCollector
from kbench.jobs.values import JOB_CUTOFF
from kbench.jobs.yaml_tree import Scalar, kind_name, line_of, mapping_items, scalar

PARAMS_SECTION = "params"
# Keys that are not axes: `suite` names the benchmark family; `testcase` and `category`
# are accepted for LKP compatibility and ignored; `tags` is a list that labels every run;
# `control` picks the instances that are controls (measured beside the others, judged against);
# `files` names files a fleet job carries to its workers (relative to the job file's folder).
FIXED_KEYS = ("suite", "tags", "testcase", "category", "control", "files")
# Keys LKP writes inside the suite's section as well as at top level.
SECTION_SETTINGS = ("test", "nr_task", "nr_threads", "mode", "testtime")


@dataclass(frozen=True)
class SettingKey:
    """A key of the job file: the field it sets (aliases share a field) and its converter."""

    field: str
    convert: Callable[[Scalar], Any]


def setting_keys(cpu_count: int) -> dict[str, SettingKey]:
    """Every axis key of the job file (aliases included), by name."""
    return {
        "benchmark": SettingKey("benchmark", values.name),
        "test": SettingKey("test", values.name),
        "runtime": SettingKey("runtime", values.duration),
        "duration": SettingKey("runtime", values.duration),
        "testtime": SettingKey("runtime", values.duration),  # LKP
        "iterations": SettingKey("iterations", values.iterations),
        "nr_task": SettingKey("nr_task", values.nr_task),
        "nr_threads": SettingKey("nr_task", values.nr_task),  # LKP: the same, a number of tasks
        "mode": SettingKey("mode", values.mode),
        "cpufreq_governor": SettingKey("cpufreq_governor", values.choice(values.GOVERNORS)),
        "target": SettingKey("target", values.target),
        "kernel": SettingKey("target", values.target),
        **{name: SettingKey(field, convert) for name, (field, convert) in lkp_setup.SETUP_KEYS.items()},
        "samples": SettingKey("samples", values.positive_int),
        "warmup": SettingKey("warmup", values.warmup),
        "batch": SettingKey("batch", values.batch),
        "cpu": SettingKey("cpu", values.cpu_number(cpu_count)),
        "subtract_overhead": SettingKey("subtract_overhead", values.boolean),
        "counters": SettingKey("counters", values.boolean),
        "profile": SettingKey("profile", values.boolean),
        "ignore_failure": SettingKey("ignore_failure", values.boolean),
        "metric": SettingKey("metric", values.choice(values.METRICS)),
    }


@dataclass(frozen=True)
class AxisValue:
    """One value of an axis, converted, with the line it was written on."""

    value: Any
    line: int


@dataclass(frozen=True)
class Axis:
    """One matrix axis. ``field`` is the setting it fills (``runtime``, ``nr_task``...) or
    ``param`` with ``param`` naming the benchmark parameter; ``label`` is the key as
    written (``duration``, ``params.size``); ``values`` holds the valid values only."""

    field: str
    param: str | None
    label: str
    line: int
    values: tuple[AxisValue, ...]


@dataclass(frozen=True)
class JobSpec:
    """A job file read and type-checked, before the catalog is consulted."""

    axes: tuple[Axis, ...]
    suite: str | None  # None when absent or invalid
    suite_line: int | None  # the line of the suite key, even when its value is invalid
    tags: tuple[str, ...]
    line: int  # where the top-level mapping starts
    control: tuple[tuple[str, str, int], ...] = ()  # (key of JobInstance.describe(), value, line)
    monitors: tuple[tuple[str, float, int], ...] = ()  # LKP's monitors taken: (name, interval s, line)
    files: tuple[tuple[str, int], ...] = ()  # ``files:``: (relative path, line), what a fleet job carries

    def axis(self, field: str) -> Axis | None:
        return next((a for a in self.axes if a.field == field), None)


class _Reader:
    def __init__(self, cpu_count: int, problems: ProblemCollector):
        self.keys = setting_keys(cpu_count)
        self.problems = problems
        self.axes: list[Axis] = []
        self.seen: dict[str, tuple[str, int]] = {}  # field -> (label, line) of the key that set it
        self.section: tuple[str, int] | None = None
        self.monitors: list[tuple[str, float, int]] = []

    def setting(self, key: str, label: str, node: yaml.Node, line: int) -> None:
        spec = self.keys[key]
        if spec.field in self.seen:
            first_label, first_line = self.seen[spec.field]
            self.problems.add(line, label, f"already given as {first_label} at line {first_line}; give it once")
            return
        self.seen[spec.field] = (label, line)
        self.axes.append(self.axis(spec.field, None, label, node, line, spec.convert))

    def axis(
        self, field: str, param: str | None, label: str, node: yaml.Node, line: int,
        convert: Callable[[Scalar], Any],
    ) -> Axis:
        found: list[AxisValue] = []
        first_line: dict[Any, int] = {}
        for item in self.scalars(label, node, line):
            if item.type == "null":
                hint = ' (write "" for an empty string)' if param is not None else ""
                self.problems.add(item.line, label, f"has no value{hint}")
                continue
            try:
                value = convert(item)
            except ValueError as exc:
                self.problems.add(item.line, label, str(exc))
                continue
            if value in first_line:
                self.problems.add(item.line, label, f"{item.shown} is listed twice (first at line {first_line[value]})")
                continue
            first_line[value] = item.line
            found.append(AxisValue(value, item.line))
        return Axis(field, param, label, line, tuple(found))

    def scalars(self, label: str, node: yaml.Node, line: int) -> list[Scalar]:
        """The values of an axis node: one scalar, or the scalars of a flat, non-empty list."""
        if isinstance(node, yaml.ScalarNode):
            return [scalar(node)]
        if isinstance(node, yaml.MappingNode):
            self.problems.add(line, label, "must be a value or a list of values, not a mapping")
            return []
        if not node.value:
            self.problems.add(
                line, label, "an empty list gives no instances; give at least one value or remove the key"
            )
            return []
        items: list[Scalar] = []
        for element in node.value:
            if isinstance(element, yaml.SequenceNode):
                self.problems.add(
                    line_of(element), label,
                    "a list inside a list is not allowed: a list is one matrix axis, write its values in one flat list",
                )
            elif isinstance(element, yaml.MappingNode):
                self.problems.add(
                    line_of(element), label, "a mapping inside a list is not allowed; a list holds values"
                )
            else:
                items.append(scalar(element))
        return items

    def params_section(self, key: str, node: yaml.Node, line: int) -> None:
        if self.section is not None:
            first_key, first_line = self.section
            self.problems.add(
                line, key,
                f"benchmark parameters are already given in {first_key}: (line {first_line}); use one section",
            )
            return
        self.section = (key, line)
        if not isinstance(node, yaml.MappingNode):
            self.problems.add(line, key, f"must be a mapping of benchmark parameters to values, not {kind_name(node)}")
            return
        for name, value_node, name_line in mapping_items(node, f"{key}.", self.problems):
            label = f"{key}.{name}"
            if name in SECTION_SETTINGS:
                self.setting(name, label, value_node, name_line)
            elif name in lkp.SECTION_KEYS:
                self.problems.warn(name_line, label, str(lkp.ignored(name)))
            elif name in self.keys or name in FIXED_KEYS:
                self.problems.add(
                    name_line, label, f"{name} is a job setting, not a benchmark parameter; write it at top level"
                )
            elif name in lkp.TOP_PARAMS:
                self.top_param(name, value_node, name_line)
            else:
                self.axes.append(self.axis("param", name, label, value_node, name_line, values.any_text))

    def top_param(self, key: str, node: yaml.Node, line: int) -> None:
        """An LKP key written at top level that is a benchmark parameter (netperf's ``ip``, ``test_size``);
        the catalog then checks the benchmark takes it. Given in the section too, it is given twice."""
        field = f"param:{key}"
        if field in self.seen:
            first_label, first_line = self.seen[field]
            self.problems.add(line, key, f"already given as {first_label} at line {first_line}; give it once")
            return
        self.seen[field] = (key, line)
        self.axes.append(self.axis("param", key, key, node, line, values.any_text))

    def nested(self, key: str, node: yaml.MappingNode) -> None:
        """LKP's grouped set-up keys (``transparent_hugepage: {thp_enabled: ...}``, ``boot_params:
        {bp1_memmap: ...}``, ``disk: {nr_pmem: 1}``): each inner key is the setting of its name."""
        for name, value_node, name_line in mapping_items(node, f"{key}.", self.problems):
            if name in lkp.NESTED[key]:
                self.setting(name, f"{key}.{name}", value_node, name_line)
            else:
                self.problems.add(name_line, f"{key}.{name}", f"cannot be applied: kbench sets "
                                                          f"{', '.join(sorted(lkp.NESTED[key]))} under {key}:")

    def cluster(self, node: yaml.Node, line: int) -> None:
        """LKP's ``cluster:``: kbench runs client and server on the one target (``cs-localhost``) only."""
        value = scalar(node).text.strip() if isinstance(node, yaml.ScalarNode) else None
        if value != lkp.CLUSTER:
            self.problems.add(line, "cluster", f"kbench runs the client and the server on one target "
                                               f"({lkp.CLUSTER}); {value or 'this value'} needs machines it does "
                                               "not schedule")

    def perf_monitor(self, key: str, node: yaml.Node, line: int) -> None:
        """LKP's ``perf-stat:`` / ``perf-profile:`` monitors: the run's counters / a profile, as kbench
        takes them (``kbench.profile``); LKP's own options of the monitor are named and left out."""
        field = lkp.PERF_MONITORS[key]
        if field in self.seen:
            first_label, first_line = self.seen[field]
            self.problems.add(line, key, f"already given as {first_label} at line {first_line}; give it once")
            return
        self.seen[field] = (key, line)
        self.axes.append(Axis(field, None, key, line, (AxisValue(True, line),)))
        if isinstance(node, yaml.MappingNode):
            for name, _, name_line in mapping_items(node, f"{key}.", self.problems):
                self.problems.warn(name_line, f"{key}.{name}", lkp.perf_option_ignored(key))
        elif not (isinstance(node, yaml.ScalarNode) and scalar(node).type == "null"):
            self.problems.warn(line, key, lkp.perf_option_ignored(key))

    def monitor_list(self, key: str, node: yaml.MappingNode, line: int) -> None:
        """LKP's ``default-monitors:`` / ``monitors:``: its perf-stat and perf-profile are done, the rest
        is one warning naming them."""
        others = []
        for name, value_node, name_line in mapping_items(node, f"{key}.", self.problems):
            if name in lkp.PERF_MONITORS:
                self.perf_monitor(name, value_node, name_line)
            elif name in lkp.SAMPLED_MONITORS:
                self.monitor(name, f"{key}.{name}", value_node, name_line)
            else:
                others.append(name)
        if others:
            self.problems.warn(line, key, f"{lkp.ignored(key)}: {', '.join(others)}")

    def monitor(self, name: str, label: str, node: yaml.Node, line: int) -> None:
        """One of LKP's monitors kbench samples (vmstat, mpstat, proc-vmstat, interrupts): its value is the
        interval in seconds (LKP's ``interval:`` option, or a number; none: every second)."""
        if any(taken == name for taken, _, _ in self.monitors):
            first = next(where for taken, _, where in self.monitors if taken == name)
            self.problems.add(line, label, f"{name} is already taken at line {first}; give it once")
            return
        interval = lkp.DEFAULT_MONITOR_INTERVAL_S
        value = node
        if isinstance(node, yaml.MappingNode):
            value = None
            for option, option_node, option_line in mapping_items(node, f"{label}.", self.problems):
                if option == "interval":
                    value = option_node
                else:
                    self.problems.warn(option_line, f"{label}.{option}", "ignored: kbench's monitors take an "
                                                                           "interval only")
        if isinstance(value, yaml.ScalarNode) and scalar(value).type != "null":
            try:
                interval = float(scalar(value).text.strip().removesuffix("s"))
            except ValueError:
                interval = -1.0
            if not 0 < interval <= lkp.MAX_MONITOR_INTERVAL_S:
                self.problems.add(line, label, f"the sampling interval must be seconds above 0 and at most "
                                               f"{lkp.MAX_MONITOR_INTERVAL_S:g}, got {scalar(value).shown}")
                return
        self.monitors.append((name, interval, line))

    def single_name(self, key: str, node: yaml.Node, line: int, advice: str) -> Scalar | None:
        if isinstance(node, yaml.ScalarNode) and scalar(node).type != "null" and str(node.value).strip():
            return scalar(node)
        got = "no value" if isinstance(node, yaml.ScalarNode) else kind_name(node)
        self.problems.add(line, key, f"must be a single name, not {got}{advice}")
        return None

    def control(self, node: yaml.Node, line: int) -> tuple[tuple[str, str, int], ...]:
        """``control:``: a mapping of instance keys (as ``kbench job expand`` shows them) to one value each."""
        if not isinstance(node, yaml.MappingNode) or not node.value:
            self.problems.add(line, "control", "must be a mapping that picks the control instances, e.g. "
                              "control: {cmd: /opt/ref/prog}")
            return ()
        found = []
        for name, value_node, name_line in mapping_items(node, "control.", self.problems):
            if not isinstance(value_node, yaml.ScalarNode) or scalar(value_node).type == "null":
                self.problems.add(name_line, f"control.{name}", "must be one value (the control's)")
                continue
            found.append((name, str(value_node.value).strip(), name_line))
        return tuple(found)

    def tags(self, node: yaml.Node, line: int) -> tuple[str, ...]:
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        tags: list[str] = []
        for element in nodes:
            if isinstance(element, yaml.ScalarNode) and scalar(element).type != "null" and str(element.value).strip():
                tags.append(str(element.value).strip())
            else:
                self.problems.add(
                    line_of(element), "tags", "must be a tag or a flat list of tags (tags are not a matrix)"
                )
        return tuple(tags)

    def files(self, node: yaml.Node, line: int) -> tuple[tuple[str, int], ...]:
        """``files:``: a relative path or a flat list of them (a fleet job carries these to its workers)."""
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        found: list[tuple[str, int]] = []
        for element in nodes:
            where = line_of(element)
            text = str(element.value).strip() if isinstance(element, yaml.ScalarNode) else ""
            if not text or (isinstance(element, yaml.ScalarNode) and scalar(element).type == "null"):
                self.problems.add(where, "files", "must be a path or a flat list of paths (relative to the job "
                                                  "file's folder), e.g. files: [prog, data/input.bin]")
                continue
            parts = text.split("/")
            if text.startswith("/") or ".." in parts or "\0" in text:
                self.problems.add(where, "files", f"{text!r}: give a path inside the job file's folder, relative "
                                                  "to it (no leading / and no ..): it is placed at that path beside "
                                                  "the command on the worker")
                continue
            if any(text == earlier for earlier, _ in found):
                self.problems.add(where, "files", f"{text!r} is listed twice")
                continue
            found.append((text, where))
        return tuple(found)

    def unknown(self, key: str, node: yaml.Node, line: int, suite: str | None) -> None:
        known = [*self.keys, *FIXED_KEYS, PARAMS_SECTION, *([suite] if suite else [])]
        close = (close_matches(key, known, cutoff=JOB_CUTOFF)
                 or close_matches(key, sorted(lkp.KNOWN), cutoff=JOB_CUTOFF))
        perf = close_matches(key, lkp.PERF_MONITORS, n=1, cutoff=0.8)
        close = list(dict.fromkeys([*perf, *close]))[:HINT_MATCHES]
        if close:
            message = f"unknown key{hint(close)}"
        elif key == "<<":
            message = "YAML merge keys are not supported; write the keys out"
        elif isinstance(node, yaml.MappingNode) and suite is None:
            message = (
                f"unknown key (a section of benchmark parameters named after a suite needs `suite: {key}`; "
                "or use params:)"
            )
        else:
            message = "unknown key"
        self.problems.add(line, key, message)


def read_job(root: yaml.MappingNode, *, cpu_count: int, problems: ProblemCollector) -> JobSpec:
    """Read the top-level mapping into axes, recording every problem of form and type:
    unknown keys, repeated keys and aliases, wrong shapes, empty or nested lists, repeated
    list values, and values their converter refuses."""
    reader = _Reader(cpu_count, problems)
    items = mapping_items(root, "", problems)
    suite: Scalar | None = None
    suite_line: int | None = None
    for key, node, line in items:
        if key == "suite":
            advice = "; to measure several, list benchmarks under benchmark: or tests under test:"
            suite, suite_line = reader.single_name(key, node, line, advice), line
    suite_name = suite.text.strip() if suite else None
    # LKP's fio-basic is kbench's fio, its parameters in a section named fio-setup-basic
    suite_name, lkp_section = lkp.SUITES.get(suite_name or "", (suite_name, suite_name))
    tags: tuple[str, ...] = ()
    control: tuple[tuple[str, str, int], ...] = ()
    files: tuple[tuple[str, int], ...] = ()
    for key, node, line in items:
        if key == "suite":
            continue
        if key == "control":
            control = reader.control(node, line)
            continue
        if key in ("testcase", "category"):
            reader.single_name(key, node, line, "")
        elif key == "tags":
            tags = reader.tags(node, line)
        elif key == "files":
            files = reader.files(node, line)
        elif key == PARAMS_SECTION or (key in (suite_name, lkp_section) and key not in reader.keys):
            reader.params_section(key, node, line)
        elif key in lkp.NESTED and isinstance(node, yaml.MappingNode):
            reader.nested(key, node)
        elif key in reader.keys:
            reader.setting(key, key, node, line)
        elif key in lkp.PERF_MONITORS:
            reader.perf_monitor(key, node, line)
        elif key in lkp.MONITOR_LISTS and isinstance(node, yaml.MappingNode):
            reader.monitor_list(key, node, line)
        elif key in lkp.SAMPLED_MONITORS:
            reader.monitor(key, key, node, line)
        elif key in lkp.TOP_PARAMS:
            reader.top_param(key, node, line)
        elif key == "cluster":
            reader.cluster(node, line)
        elif key in lkp.REFUSED:
            problems.add(line, key, f"cannot be applied: {lkp.REFUSED[key]}")
        elif lkp.ignored(key) is not None:
            problems.warn(line, key, str(lkp.ignored(key)))
        else:
            reader.unknown(key, node, line, suite_name)
    return JobSpec(
        axes=tuple(reader.axes),
        suite=suite_name,
        suite_line=suite_line,
        tags=tags,
        line=line_of(root),
        control=control,
        monitors=tuple(reader.monitors),
        files=files,
    )
