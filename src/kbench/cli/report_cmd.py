"""``kbench report regressions`` and ``kbench report releases``: reports over the stored history."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from kbench import exit_codes
from kbench.cli.console import write_stdout
from kbench.cli.fail_on import exit_if_found, findings_fail_on_option
from kbench.cli.history_options import Since, detection_options, evidence_option, settings_from
from kbench.cli.main import Context, fail, pass_context, user_errors
from kbench.cli.needs import needs_extra
from kbench.contract.vocabulary import IMPROVEMENT

FORMATS = ("text", "json", "markdown", "html")


@click.group("report")
def report_group() -> None:
    """Reports over every stored run: new regressions (0-Day style) and release-over-release tables."""


@report_group.command("regressions")
@click.argument("selector", required=False, metavar="[BENCH|SERIES]")
@click.option(
    "--since", type=Since(),
    help="Only change points whose first run after the change started then or later (2026-11-20, 7d, 12h). "
    "Every stored run is still used to find them.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.option("--improvements", is_flag=True, help="Report changes in the better direction too.")
@click.option(
    "--repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A git checkout: list the commits between the runs around each change (correlated commits).",
)
@detection_options
@evidence_option
@findings_fail_on_option
@pass_context
def regressions_cmd(
    ctx: Context, selector: str | None, since: datetime | None, fmt: str, output: Path | None,
    improvements: bool, repo: Path | None, window: int, max_pvalue: float, raw_values: bool, evidence: bool,
    fail_on: frozenset[str],
) -> None:
    """The regressions a watch confirmed, each with its culprit measured against its parent (table,
    interval, status, the steps to reproduce it, build included), then the change points of the
    stored runs no confirmation covers (suspected: headline with %change, before/after with stddev,
    machine, parameters, correlated commits). --fail-on improvement reports improvements too (as
    --improvements)."""
    improvements = improvements or IMPROVEMENT in fail_on
    from kbench.history.analysis import analyse
    from kbench.history.confirmed import load_confirmations
    from kbench.history.load import load_series
    from kbench.history.regressions import regression_report, wanted_runs
    from kbench.report.why import report_json, report_why_rows
    from kbench.store.series import run_requests

    settings = settings_from(window, max_pvalue, raw_values)
    with user_errors():
        engine = ctx.reader  # a Store: read-only SQLite is read without SQLAlchemy
        histories = analyse(load_series(engine, selector, evidence=evidence), settings, repo=repo)
        report = regression_report(
            histories, run_requests(engine, wanted_runs(histories, since)), since=since, improvements=improvements,
            confirmations=load_confirmations(engine),
        )
        why = report_why_rows(ctx.reader, report)
    scope = _scope(len(histories), since, improvements)
    if fmt == "json":
        text = _json(report_json(report, why, settings.to_json(), since, len(histories)))
    elif fmt == "markdown":
        from kbench.report.regression_text import render_markdown

        text = render_markdown(report, scope, why)
    elif fmt == "html":
        from kbench.report.regression_html import render_page

        text = render_page(report, scope, why)
    else:
        from kbench.report.regression_text import render_text

        text = render_text(report, scope, why)
    _write(text, output, data=fmt != "text")
    exit_if_found(fail_on, report.gate())


def _scope(series: int, since: datetime | None, improvements: bool) -> str:
    kinds = "regressions and improvements" if improvements else "regressions"
    when = f" since {since:%Y-%m-%d %H:%M} UTC" if since else ""
    return f"in {series} series ({kinds}{when})"


@report_group.command("releases")
@click.argument("selector", required=False, metavar="[BENCH|SERIES]")
@click.option(
    "--kernel", "kernels", multiple=True, required=True, metavar="RELEASE",
    help="A kernel release (repeat, oldest first; the first is the base = 100). deb:RELEASE works too, and "
         "tree:PATH@REV names the runs on the kernel kbench built from that commit.",
)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.option(
    "--plot", type=click.Path(dir_okay=False, path_type=Path),
    callback=needs_extra("plots", "kbench report releases --plot"),
    help="Also draw the table (one panel per series): FILE.png, .svg or .pdf.",
)
@pass_context
def releases_cmd(
    ctx: Context, selector: str | None, kernels: tuple[str, ...], fmt: str, output: Path | None, plot: Path | None,
) -> None:
    """Per series, the value on each kernel relative to the first kernel = 100, with 95% CIs
    (the 0-Day release-over-release table)."""
    from kbench.history.load import load_series
    from kbench.history.release_report import render_markdown, render_plot, render_text
    from kbench.history.releases import label_tree_kernels, normalise_kernel, release_rows
    from kbench.store.series import median_intervals, run_requests

    if len(kernels) < 2:
        raise click.BadParameter("give at least two kernels (the first is the base)", param_hint="--kernel")
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise click.BadParameter(f"{plot}: the plot is written as .png, .svg or .pdf", param_hint="--plot")
    names = [normalise_kernel(k) for k in kernels]
    with user_errors():
        engine = ctx.reader  # a Store: read-only SQLite is read without SQLAlchemy
        series = load_series(engine, selector)
        label_tree_kernels(series, _tree_commits(names),
                           lambda ids: {i: r["target"]["details"] for i, r in run_requests(engine, ids).items()})
        ids = [p.run_id for s in series for p in s.points if p.kernel in names]
        rows = release_rows(series, names, median_intervals(engine, ids))
    if not rows:
        fail(f"nothing to compare: no series has runs on {names[0]} and on another of {', '.join(names[1:])} "
             "(`kbench history --json` lists the kernels of every point)", exit_codes.NOT_FOUND)
    if fmt == "json":
        text = _json({"kernels": names, "base": names[0], "confidence": 0.95, "rows": [r.to_json() for r in rows]})
    elif fmt == "markdown":
        text = render_markdown(rows, names)
    else:
        text = render_text(rows, names)
    if plot is not None:
        render_plot(rows, names, plot)
    _write(text, output, data=fmt != "text")


def _tree_commits(names: list[str]) -> dict[str, str]:
    """The commit each ``tree:PATH@REV`` of ``names`` names (KernelSourceError when it names none)."""
    from kbench.kernels.spec import is_tree_spec

    if not any(is_tree_spec(name) for name in names):
        return {}
    from kbench.cachefiles import default_cache_dir
    from kbench.kernels.build import TREE_DIGESTS
    from kbench.kernels.errors import KernelSourceError
    from kbench.kernels.source import identify
    from kbench.kernels.spec import parse_tree_spec

    found = {}
    for name in filter(is_tree_spec, names):
        tree = parse_tree_spec(name)
        if tree.rev is None:
            raise KernelSourceError(f"{name}: give the revision (tree:PATH@REV): runs are found by their commit")
        path = tree.path
        if tree.url is not None:  # tree:URL@REV: its clone in the cache (kernels/remote.py)
            from kbench.kernels.remote import cloned

            path = cloned(tree.url, tree.rev, default_cache_dir())
        commit = identify(path, tree.rev, default_cache_dir() / TREE_DIGESTS).commit
        assert commit is not None
        found[name] = commit
    return found


def _json(data: object) -> str:
    from kbench.contract.json_document import dumps

    return dumps(data) + "\n"


def _write(text: str, output: Path | None, *, data: bool) -> None:
    if output is None:
        write_stdout(text, data=data)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}", exit_codes.USAGE)

