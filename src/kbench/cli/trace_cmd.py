"""``kbench trace``: kernel functions (and tracepoint keys) timed in place while a workload runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from kbench import exit_codes
from kbench.catalog.benchmarks import lookup
from kbench.cli.main import Context, emit_json, fail, out_console, pass_context, user_errors
from kbench.cli.parsing import Duration, KeyValue
from kbench.cli.progress import LongWork, quiet_option
from kbench.contract.benchmark import Benchmark, UnknownBenchmark
from kbench.contract.request import RunRequest
from kbench.kinds.registry import kind_of
from kbench.kinds.trace.plan import TracePlan, parse_key_sum
from kbench.trace.symbols import MAX_NAME, NAME_PATTERN

if TYPE_CHECKING:
    from kbench.engine.runner import RunResult
    from kbench.kinds.trace.session import TraceHost

MAX_KEY = 4095
TRACE_KERNEL = ("boot", "kbench.ko", "trace")
"""What a kernel kbench builds for a trace (a ``tree:`` spec) is configured for: the function
tracer too, so that kprobes on function entries go through ftrace rather than a breakpoint."""


@click.command("trace")
@click.argument("functions", nargs=-1)
@click.option("--kernel", metavar="SPEC", help="Trace this kernel booted in qemu: deb:<release>, a bzImage or a "
              "build tree. Default: the running kernel (kbench.ko loaded, root).")
@click.option("--during", "during", metavar="BENCHMARK",
              help="Workload: run this benchmark (kfunc.* in kbench.ko, or a syscall.* probe) with the log on.")
@click.option("--command", "command", metavar="CMD", help="Workload: run this shell command in the traced kernel.")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(),
              help="Parameter KEY=VALUE of the --during benchmark (repeatable).")
@click.option("--samples", type=click.IntRange(min=1), help="--during: samples of the benchmark (default 10000).")
@click.option("--batch", type=click.IntRange(min=1), help="--during: calls per sample (default: calibrated).")
@click.option("--warmup", type=click.IntRange(min=0), help="--during: warm-up samples (default 100).")
@click.option("--cpu", type=click.IntRange(min=0), help="--during: pin the benchmark to this CPU.")
@click.option("--key", "keys", multiple=True, type=click.IntRange(0, MAX_KEY),
              help="Report this tracepoint key (KBENCH_TRACE_START/STOP) too (repeatable).")
@click.option("--sum-keys", "sums", multiple=True, metavar="K1+K2",
              help="Also report keys logged one after another along one path, summed (e.g. 2+3; repeatable).")
@click.option("--module", "modules", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="With --kernel: build and load a module of your own first (NAME.c or a module directory).")
@click.option("--log-size", type=click.IntRange(0, 1 << 24), metavar="ENTRIES",
              help="Resize kbench.ko's log buffer first (32 bytes per entry).")
@click.option("--timeout", type=Duration(), default=600.0, show_default=True, help="--command: kill it after this.")
@click.option("--no-overhead", is_flag=True, help="Do not measure the probe's and the tracepoints' own overhead.")
@click.option("--hist", type=click.Choice(["both", "log2", "linear"]), default="both", show_default=True,
              help="Histograms per function: funclatency's log2 buckets, linear bins, or both.")
@click.option("--tag", "tags", multiple=True, help="Label the stored run (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the text report.")
@quiet_option
@pass_context
def trace_cmd(
    ctx: Context, functions: tuple[str, ...], kernel: str | None, during: str | None, command: str | None,
    params: tuple[tuple[str, str], ...], samples: int | None, batch: int | None, warmup: int | None,
    cpu: int | None, keys: tuple[int, ...], sums: tuple[str, ...], modules: tuple[Path, ...],
    log_size: int | None, timeout: float, no_overhead: bool, hist: str, tags: tuple[str, ...], as_json: bool,
    quiet: bool,
) -> None:
    """Time FUNCTION… in place (kretprobes) while a workload runs; store every call's cycles.

    \b
    Prints a funclatency-style log2 histogram per function and the linear one, the
    probe's own overhead (measured on an empty function in the same boot), and the
    distribution of each tracepoint key named with --key. Root only: the kernel side
    needs CAP_SYS_ADMIN. Example:
      kbench trace fib_table_lookup --during kfunc.fib4_lookup --kernel deb:6.1.0-56-amd64
    """
    for name in functions:
        if len(name) > MAX_NAME or not NAME_PATTERN.match(name):
            raise click.BadParameter(f"{name!r} is not a kernel symbol name", param_hint="FUNCTION")
    if modules and not kernel:
        raise click.UsageError("--module loads a module into a kernel booted in qemu: give --kernel too")
    if command is not None and (params or samples or batch or warmup is not None or cpu is not None):
        raise click.UsageError("-p, --samples, --batch, --warmup and --cpu set up the --during benchmark, "
                               "not a --command")
    try:
        key_sums = tuple(parse_key_sum(text) for text in sums)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--sum-keys") from None
    with user_errors():
        known = lookup(during) if during and not modules else None
        if known is not None:
            _check_workload(known)
            known.validate_params(dict(params))
    placeholder = known or (lookup("kfunc.empty") if during else None)  # a user module's bench is known later
    try:
        TracePlan(functions=functions, keys=keys, during=placeholder, command=command)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    if kernel not in (None, "local") and not modules:
        _check_functions_before_boot(kernel, functions)
    booting = kernel not in (None, "local")
    with user_errors(), LongWork("tracing", quiet=quiet or as_json) as work, _host(kernel, modules, work) as host:
        workload = known or (_guest_benchmark(host, during) if during else None)
        if workload is not None:
            _check_workload(workload)
            workload.validate_params(dict(params))
        plan = TracePlan(
            functions=functions, keys=keys, sums=key_sums, during=workload,
            during_request=RunRequest(benchmark=workload.name, params=dict(params), samples=samples,
                                      warmup_samples=warmup, batch=batch, cpu=cpu) if workload else None,
            command=command, timeout=timeout, log_size=log_size, measure_overhead=not no_overhead,
        )
        result = _trace(ctx, host, plan, tags, work, first=2 if booting else 1)
        info = host.info()
    if as_json:
        from kbench.engine.stored_run import stored_run
        from kbench.report.run_json import run_json

        with user_errors():
            report = stored_run(ctx.store, result)
        emit_json(run_json(report, {"workload": result.measurement.header.get("workload")}))
        return
    machine = f"{info.kernel_release} ({info.kind}{'-' + info.accel if info.accel else ''})"
    _render(result, hist, machine)


def _check_workload(benchmark: Benchmark) -> None:
    if kind_of(benchmark).sample_unit is None:  # timed operations: kfunc.*, syscall.*, command
        raise UnknownBenchmark(f"{benchmark.name} cannot be traced with --during: give a kfunc.* or syscall.* "
                               "benchmark, or run the tool with --command")


def _check_functions_before_boot(kernel: str, functions: tuple[str, ...]) -> None:
    """Refuse an unknown function from the kernel's System.map, when it has one, before any boot
    (a ``module:name`` is checked in the guest, once its modules are loaded)."""
    from kbench.targets.vm import default_cache_dir, resolve_kernel
    from kbench.trace.symbols import Kallsyms, UnknownFunction, system_map_of

    plain = [name for name in functions if ":" not in name]
    if not plain:
        return
    with user_errors():
        image = resolve_kernel(kernel, default_cache_dir(), features=TRACE_KERNEL)
    found = system_map_of(image.vmlinuz, image.release, image.build_dir)
    if found is None:
        return
    symbols = Kallsyms.parse(found.read_text(errors="replace"), source=f"{found.name} (checked before booting)")
    for name in plain:
        try:
            symbols.check(name)
        except UnknownFunction as exc:
            fail(str(exc), exit_codes.USAGE)


@contextlib.contextmanager
def _host(kernel: str | None, modules: tuple[Path, ...], work: LongWork) -> Iterator[TraceHost]:
    if kernel is None or kernel == "local":
        from kbench.kinds.trace.hosts import LocalTraceHost

        yield LocalTraceHost()
        return
    from kbench.kinds.trace.hosts import VmTraceHost
    from kbench.targets.vm_target import VmTarget

    work(f"booting {kernel}" + (" and loading the modules" if modules else ""), 0, None)
    with VmTarget(kernel, extra_modules=modules, kernel_features=TRACE_KERNEL) as target:
        yield VmTraceHost(target)


def _guest_benchmark(host: TraceHost, name: str) -> Benchmark:
    """The catalog's benchmark, or one a user module registered in the traced kernel."""
    try:
        return lookup(name)
    except UnknownBenchmark:
        from kbench.kinds.kfunc.loaded import describe

        return describe(host.kbench_module(), name.removeprefix("kfunc."))


def _trace(ctx: Context, host: TraceHost, plan: TracePlan, tags: tuple[str, ...], work: LongWork,
           first: int) -> RunResult:
    """The trace, stored; ``work`` counts the boot (``first`` 2) and the check as its first steps."""
    from kbench.engine.runner import execute_run
    from kbench.kinds.trace.session import TraceTarget, check_functions
    from kbench.trace.kernel import ProbeRefused
    from kbench.trace.symbols import UnknownFunction

    work("checking the functions", first - 1, None)
    try:
        check_functions(host, plan.functions)
    except (UnknownFunction, ProbeRefused) as exc:
        fail(str(exc), exit_codes.USAGE)
    benchmark = plan.benchmark()
    request = RunRequest(benchmark=benchmark.name, params=plan.params(), tags=tags)

    def phase(what: str, done: float, total: float | None) -> None:
        work(what, first + done, first + (total or 0))

    return execute_run(ctx.store, benchmark, request, TraceTarget(host, plan, phase))


def _render(result: RunResult, hist: str, machine: str) -> None:
    from kbench.report.trace_run import run_trace_lines

    console = out_console()
    header = result.measurement.header
    workload = header.get("workload", {})
    what = workload.get("benchmark") or f"the command {workload.get('command')!r}"
    console.print(Text.assemble(("trace", "bold"), f"  run {result.run_id}  {result.status}  {machine}  (kretprobes, "
                                f"timer {header['timer']['name']}, during {what})"), highlight=False)
    if workload.get("median") is not None:
        console.print(f"{workload['benchmark']}: median {workload['median']:.1f} {workload['unit']} per call over "
                      f"{workload['n']} samples (batch {workload.get('batch')}), as its own loop times it "
                      "with the probes in place", highlight=False)
    for line in run_trace_lines(result.measurement, hist, machine):
        console.print(line, highlight=False)
    for warning in result.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {warning}"), highlight=False)
