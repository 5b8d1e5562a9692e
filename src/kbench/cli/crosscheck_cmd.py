"""``kbench crosscheck``: the same quantity by two independent methods, side by side."""

from __future__ import annotations

import math

import click

from kbench.catalog.benchmarks import lookup
from kbench.cli import exit_codes
from kbench.cli.main import Context, emit_json, fail, out_console, pass_context, user_errors
from kbench.cli.parsing import KeyValue
from kbench.engine.request import RunRequest


@click.command("crosscheck")
@click.argument("benchmark")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(), help="Benchmark parameter KEY=VALUE.")
@click.option("--kernel", metavar="SPEC", help="Check in this kernel booted in qemu (deb:<release>, …); "
              "default: the running kernel (tracefs; kfunc.* needs --kernel).")
@click.option("--samples", type=click.IntRange(min=1), default=5000, show_default=True, help="Samples per run.")
@click.option("--cpu", type=click.IntRange(min=0), help="Pin the benchmark here (default: the last CPU).")
@click.option("--function", metavar="NAME", help="kfunc.*: the kernel function the benchmark's call times.")
@click.option("--tolerance", type=click.FloatRange(min=0, min_open=True), default=15.0, show_default=True,
              help="Agreement tolerance, in % of the second method's corrected median.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (methods, agreement_pct, verdict).")
@pass_context
def crosscheck_cmd(
    ctx: Context, benchmark: str, params: tuple[tuple[str, str], ...], kernel: str | None, samples: int,
    cpu: int | None, function: str | None, tolerance: float, as_json: bool,
) -> None:
    """Measure BENCHMARK's quantity by two independent methods in one session and say if they agree.

    \b
    syscall.*  the probe's per-call latency vs sys_enter->sys_exit of that syscall
    kfunc.*    kbench.ko's loop vs the function timed in place by a kretprobe (--kernel)
    command    rusage CPU time vs on-CPU time from context switches
    Exit status 0 when they agree, 1 when they do not.
    """
    from kbench.trace.crosscheck import CrosscheckError, crosscheck

    with user_errors():
        bench = lookup(benchmark)
        bench.validate_params(dict(params))
    if bench.kind == "kfunc" and kernel in (None, "local"):
        fail(f"{bench.name} runs in kbench.ko: give --kernel deb:<release> (this kernel loads no modules)",
             exit_codes.USAGE)
    request = RunRequest(benchmark=bench.name, params=dict(params), samples=samples, cpu=cpu,
                         warmup_samples=min(samples, 200))
    from kbench.targets.factory import make_target

    with user_errors(), make_target(kernel, ()) as target:
        try:
            result = crosscheck(target, bench, request, tolerance, function)
        except CrosscheckError as exc:
            fail(str(exc), exit_codes.USAGE)
    if as_json:
        emit_json(result.to_json())
    else:
        _render(result)
    if not result.agrees:
        raise SystemExit(1)


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.1f}"


def _render(result: object) -> None:
    from kbench.trace.crosscheck import Crosscheck

    assert isinstance(result, Crosscheck)
    console = out_console()
    console.print(f"[bold]crosscheck {result.benchmark}[/]: {result.quantity} ({result.source})", highlight=False)
    width = max(len(m.method) for m in result.methods)
    console.print(f"  {'method':<{width}}  {'median':>10}  {'p90':>10}  {'n':>8}  {'corrected':>10}  unit",
                  highlight=False)
    for m in result.methods:
        console.print(f"  {m.method:<{width}}  {_fmt(m.median):>10}  {_fmt(m.p90):>10}  {m.values.size:>8}  "
                      f"{_fmt(m.corrected):>10}  {m.unit}", highlight=False)
    for m in result.methods:
        if m.correction:
            console.print(f"  correction of {m.method.split(' (')[0]}: -{_fmt(m.correction)} {m.unit}, "
                          f"{m.correction_why}", highlight=False)
    console.print(f"  ratio of medians {result.ratio:.3f}; corrected, they differ by {result.agreement_pct:+.1f}% "
                  f"(tolerance ±{result.tolerance_pct:g}%)", highlight=False)
    colour = "green" if result.agrees else "red"
    console.print(f"  verdict: [{colour}]{result.verdict}[/] — {result.reason()}", highlight=False)
    for note in result.notes:
        console.print(f"  note: {note}", highlight=False)

