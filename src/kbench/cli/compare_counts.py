"""``kbench compare --metric instructions``: the sides counted instead of timed (docs/instructions.md).

Parses nothing of its own: ``compare_cmd`` hands over the sides as the user gave them, and
gets a ``ComparisonReport`` back, which it renders like any other (and joins to the time's
report for ``--metric instructions,cpu``).
"""

from __future__ import annotations

from pathlib import Path

from kbench.cli.main import Context, err_console
from kbench.engine.instructions import CountedComparison, counted_comparison, stored_counted_comparison
from kbench.report.comparison.model import ComparisonReport
from kbench.sysinfo.collect import collect_sysinfo


def compare_by_counts(
    ctx: Context, *, benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...],
    selected: list[list[int]], params: dict[str, str], modules: tuple[Path, ...], copies: int | None,
    local_kernel: bool, samples: int | None, alpha: float, margin: float | None,
) -> ComparisonReport:
    """The counted comparison of the sides, as a report (BadRequest and TargetError go to the caller)."""
    from kbench.engine.comparison_sides import build_sides, module_comparison
    from kbench.report.counts import counts_report

    parameters: dict[str, object] = {"params": dict(params), "samples": samples or "default", "alpha": alpha}
    if selected:
        outcome = stored_counted_comparison(ctx.reader, selected, alpha=alpha, margin=margin)
        return counts_report(outcome, title=_title(outcome), label_kind="stored", context=_context(),
                             parameters=parameters)
    store = ctx.store
    with err_console.status("counting instructions") as status:
        def on_run(label: str, index: int) -> None:
            status.update(f"counting instructions: {label}, run {index + 1}")

        if modules:
            kernel = kernels[0] if kernels else None
            with module_comparison(kernel, modules, benchmark, params, samples, copies=copies or 1,
                                   local_kernel=local_kernel, count_instructions=True) as (target, found):
                outcome = counted_comparison(store, found.sides, alpha=alpha, margin=margin, target=target,
                                             on_run=on_run)
            label_kind = found.label_kind
            parameters["modules"] = " ".join(str(m) for m in modules)
        else:
            found = build_sides(benchmark, kernels, commands, params, samples)
            outcome = counted_comparison(store, found.sides, alpha=alpha, margin=margin, local_kernel=local_kernel,
                                         on_run=on_run)
            label_kind = found.label_kind
    return counts_report(outcome, title=_title(outcome), label_kind=label_kind, context=_context(),
                         parameters=parameters)


def _title(outcome: CountedComparison) -> str:
    return f"{outcome.metric}: {' vs '.join(side.label for side in outcome.sides)}"


def _context() -> dict[str, object]:
    info = collect_sysinfo()
    return {
        "host": info["hostname"],
        "cpu": f"{info['cpu']['model']} x {info['cpu']['count']}",
        "host kernel": info["kernel"]["release"],
        "virtualization": info["virtualization"].get("vm"),
    }
