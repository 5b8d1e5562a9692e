"""``kbench compare --fleet CLASS``: one comparison, all its sides on one machine of CLASS.

The submitting command checks the spec (``refuse_for_fleet``), stores one fleet task of kind
``compare-spec`` whose ``spec`` is the ``ComparisonSpec`` (``spec_to_json``), and waits. The
worker that claims it runs the same engine as a local compare (``kbench.engine.compare.compare``)
on its own machine (the interleaved design alternates the sides there), storing the runs in the
fleet's database tagged ``fleet:JOB``, ``queue:CLASS`` and ``worker:NAME``; the task's result is
the report rendered in the formats a terminal asks for (text, JSON, markdown) and the verdicts
that ``--fail-on`` gates, or the error a local compare would have ended with and its exit code.

Nothing from the submitting machine travels: sides that name its files are refused at submit
(a kernel image or build tree, ``--module`` sources, a ``--command`` whose program is a path
here); stored runs (``--runs``) are compared where they are, without the fleet.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.engine.compare_spec import BadCombination, ComparisonSpec
from kbench.fleet.run_store import FleetRunStore

if TYPE_CHECKING:
    from kbench.store.db import Store

COMPARE_SPEC_KIND = "compare-spec"
FORMATS = ("text", "json", "markdown")
"""The formats a fleet comparison's result carries (html and --report-dir: compare the stored runs with --runs)."""
_NOT_SENT = ("modules", "run_sets")


def refuse_for_fleet(spec: ComparisonSpec) -> None:
    """BadCombination when ``spec`` names something only this machine has (module docstring)."""
    if spec.run_sets:
        raise BadCombination("--fleet measures on a worker; stored runs (--runs) are compared here, without --fleet")
    if spec.modules:
        raise BadCombination("--fleet does not carry --module sources: compare modules on this machine, "
                             "or send them in a job file (`kbench fleet submit`, `files:`)")
    if spec.local_kernel:
        raise BadCombination("--local-kernel loads modules into this machine's kernel: give no --fleet")
    for kernel in spec.kernels:
        if kernel != "local" and not kernel.startswith(("deb:", "tree:")):
            raise BadCombination(f"--kernel {kernel}: with --fleet a kernel is `local`, `deb:RELEASE` or "
                                 "`tree:URL@REV` (each worker gets or builds it); an image or build tree here "
                                 "travels in a job file (`kbench fleet submit`)")
    for command in spec.commands:
        program = _program(command)
        if program is not None and "/" in program and Path(program).exists():
            raise BadCombination(f"--command {command!r}: {program} is a file on this machine, which a worker does "
                                 "not have; install it on the workers (a name on their PATH) or send it in a job "
                                 "file (`kbench fleet submit`, `files:`)")


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def spec_to_json(spec: ComparisonSpec) -> dict[str, Any]:
    """The spec as the task stores it (a spec ``refuse_for_fleet`` accepted)."""
    return {name: value for name, value in asdict(spec).items() if name not in _NOT_SENT}


def spec_from_json(data: dict[str, Any]) -> ComparisonSpec:
    """The spec a task stores (``spec_to_json``)."""
    known = {f.name for f in fields(ComparisonSpec)} - set(_NOT_SENT)
    values: dict[str, Any] = {key: value for key, value in data.items() if key in known}
    for name in ("kernels", "commands"):
        values[name] = tuple(str(v) for v in values.get(name) or ())
    values["params"] = tuple((str(k), str(v)) for k, v in values.get("params") or ())
    return ComparisonSpec(**values)


def job_text(spec: ComparisonSpec) -> str:
    """The job the task names (each worker validates it and refuses ``command`` without --allow-command)."""
    import json

    if spec.commands:
        return f"benchmark: command\nparams:\n  cmd: {json.dumps(spec.commands[0])}\n"
    return f"benchmark: {spec.benchmark}\n"


def run_compare_task(store: Store, spec_json: dict[str, Any], machine: str) -> dict[str, Any]:
    """The comparison a ``compare-spec`` task names, measured here into ``store``; the task's
    result (module docstring). Errors a local compare reports are the result, with their exit code."""
    from kbench.engine.compare import compare
    from kbench.exit_codes import KbenchError
    from kbench.report.comparison import render
    from kbench.report.comparison.outcome import comparison_report

    spec = spec_from_json(spec_json)
    try:
        compared = compare(spec, store)
        report = comparison_report(compared, store)
    except KbenchError as exc:
        return {"machine": machine, "error": " ".join(str(exc).split()), "exit_code": exc.exit_code}
    named = len(report.new_labels) != 1
    verdicts = [[m.verdict, f"{m.metric} on {report.new_label_of(m)}" if named else m.metric]
                for m in report.metrics if not m.real_within_margin]
    return {"machine": machine, "formats": {name: render(report, name) for name in FORMATS},
            "verdicts": verdicts, "side_runs": compared.side_runs}


class TaggedRunStore(FleetRunStore):
    """A task's ``FleetRunStore`` whose every run also carries ``extra_tags`` (the job's, the worker's)."""

    extra_tags: tuple[str, ...] = ()

    def begin_run(self, **kwargs: Any) -> int:
        given = list(kwargs.pop("tags", ()))
        return super().begin_run(tags=[*given, *(t for t in self.extra_tags if t not in given)], **kwargs)
