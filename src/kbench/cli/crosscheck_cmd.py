"""``kbench crosscheck``: the same quantity by two independent methods, side by side."""

from __future__ import annotations

import click
from rich.text import Text

from kbench import exit_codes
from kbench.catalog.benchmarks import lookup
from kbench.cli.main import Context, emit_json, err_console, fail, out_console, pass_context, user_errors
from kbench.cli.parsing import KeyValue, complete_benchmarks
from kbench.contract.request import RunRequest
from kbench.kinds.registry import kind_of


@click.command("crosscheck")
@click.argument("benchmark", shell_complete=complete_benchmarks)
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(), help="Benchmark parameter KEY=VALUE.")
@click.option("--kernel", metavar="SPEC", help="Check in this kernel booted in qemu (deb:<release>, …); "
              "default: the running kernel (tracefs; kfunc.* needs --kernel).")
@click.option("--samples", type=click.IntRange(min=1), default=5000, show_default=True, help="Samples per run.")
@click.option("--cpu", type=click.IntRange(min=0), help="Pin the benchmark here (default: the last CPU).")
@click.option("--function", metavar="NAME", help="kfunc.*: the kernel function the benchmark's call times.")
@click.option("--tolerance", type=click.FloatRange(min=0, min_open=True), default=15.0, show_default=True,
              help="Agreement tolerance, in % of the second method's corrected median.")
@click.option("--rounds", type=click.IntRange(min=1, max=50), default=5, show_default=True,
              help="Repetitions, the methods' runs alternating; each method's value is the median over all.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (methods, agreement_pct, verdict, run_ids).")
@pass_context
def crosscheck_cmd(
    ctx: Context, benchmark: str, params: tuple[tuple[str, str], ...], kernel: str | None, samples: int,
    cpu: int | None, function: str | None, tolerance: float, rounds: int, as_json: bool,
) -> None:
    """Measure BENCHMARK's quantity by two independent methods in one session and say if they agree.

    \b
    syscall.*  the probe's per-call latency vs sys_enter->sys_exit of that syscall
    kfunc.*    kbench.ko's loop vs the function timed in place by a kretprobe (--kernel)
    command    rusage CPU time vs on-CPU time from context switches
    Each method's values are stored as a run tagged crosscheck:<id> (kbench results --tag …).
    Exit status 0 when they agree, 1 when they do not.
    """
    from kbench.engine.crosscheck import CrosscheckError, crosscheck
    from kbench.engine.crosscheck_store import crosscheck_lines, store_crosscheck

    with user_errors():
        bench = lookup(benchmark)
        bench.validate_params(dict(params))
    if kind_of(bench).in_kernel and kernel in (None, "local"):
        fail(f"{bench.name} runs in kbench.ko: give --kernel deb:<release> (this kernel loads no modules)",
             exit_codes.USAGE)
    request = RunRequest(benchmark=bench.name, params=dict(params), samples=samples, cpu=cpu,
                         warmup_samples=min(samples, 200))
    from kbench.targets.factory import make_target

    with user_errors(), make_target(kernel, ()) as target:
        try:
            result = crosscheck(target, bench, request, tolerance, function, rounds,
                                progress=None if as_json else _progress)
        except CrosscheckError as exc:
            fail(str(exc), exit_codes.USAGE)
        options = {"rounds": rounds, "tolerance_pct": tolerance, "function": function, "kernel": kernel}
        crosscheck_id, run_ids = store_crosscheck(ctx.store, result, bench, request, target, options)
    data = {**result.to_json(), "id": crosscheck_id, "run_ids": run_ids}
    if as_json:
        emit_json(data)
    else:
        console = out_console()
        for line in crosscheck_lines(data):
            console.print(line, highlight=False)
    if not result.agrees:
        raise SystemExit(1)


def _progress(text: str) -> None:
    err_console.print(Text(text, style="dim"), highlight=False)
