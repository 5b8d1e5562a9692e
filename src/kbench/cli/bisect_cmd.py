"""``kbench bisect``: find the commit that changed a command's run time.

Exit codes besides the common ones: 10 no reproducible difference between the good and
the bad commit; 11 the bisection failed (a reference does not build, git refused).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import click

from kbench.bisect.driver import (
    ABORTED,
    DONE,
    FAILED,
    NO_DIFFERENCE,
    RUNNING,
    BisectError,
    Bisector,
    BisectState,
    Settings,
)
from kbench.bisect.git import Worktrees, ancestry_path, resolve
from kbench.bisect.lab import METRICS, CommandLab
from kbench.cli import exit_codes
from kbench.cli.main import Context, emit_json, err_console, fail, pass_context, user_errors
from kbench.store.db import Store


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbench" / "bisect"


@click.group("bisect")
def bisect_group() -> None:
    """Find the first commit where a command got slower (or faster), with a statistical oracle.

    \b
    Exit codes: 0 done, 10 no reproducible difference between --good and --bad,
    11 the bisection failed (a reference does not build, git refused), and the common ones.
    """


@bisect_group.command("start")
@click.option("--good", required=True, metavar="REV", help="A commit with the old performance.")
@click.option("--bad", required=True, metavar="REV", help="A later commit with the new performance.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              show_default=True, help="The git repository (its checkout is never touched).")
@click.option("--build", "build", required=True, metavar="CMD",
              help="Shell command that builds a commit (cwd: its worktree); non-zero marks it skip.")
@click.option("--command", "command", required=True, metavar="CMD",
              help="Shell command to time (cwd: the worktree); one execution per sample.")
@click.option("--samples", type=click.IntRange(min=1), default=10, show_default=True,
              help="Executions of the command per trial.")
@click.option("--trials", type=click.IntRange(min=1), default=Settings.trials, show_default=True,
              help="Rounds (a trial each of the commit, good and bad) before the first decision on a commit.")
@click.option("--max-trials", type=click.IntRange(min=1), default=Settings.max_trials, show_default=True,
              help="Rounds after which an undecided commit is judged weakly (and confirmed at the end).")
@click.option("--check-trials", type=click.IntRange(min=5), default=Settings.check_trials, show_default=True,
              help="Most rounds of good and bad in the initial check (it stops as soon as they differ).")
@click.option("--metric", type=click.Choice(METRICS), default="wall", show_default=True,
              help="Trial statistic: median wall time per execution, or median user+system CPU time of the "
              "command (robust to other load on the machine).")
@click.option("--alpha", type=click.FloatRange(min=0.001, max=0.2), default=0.05, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the interleaving order.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the worktrees go (default: $XDG_CACHE_HOME/kbench/bisect/ID).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def start_cmd(
    ctx: Context, good: str, bad: str, repo: Path, build: str, command: str, samples: int, trials: int,
    max_trials: int, check_trials: int, metric: str, alpha: float, seed: int, workdir: Path | None, as_json: bool,
) -> None:
    """Check that GOOD and BAD differ, then binary-search the commits between them."""
    repo = repo.resolve()
    if trials > max_trials:
        raise click.BadParameter(f"--trials {trials} is more than --max-trials {max_trials}", param_hint="--trials")
    with user_errors():
        try:
            good_sha, bad_sha = resolve(repo, good), resolve(repo, bad)
            commits = ancestry_path(repo, good_sha, bad_sha)
        except BisectError as exc:
            fail(str(exc), exit_codes.BISECT_FAILED)
        store = ctx.store
        params: dict[str, Any] = {
            "samples": samples, "trials": trials, "max_trials": max_trials, "check_trials": check_trials,
            "metric": metric,
            "alpha": alpha,
            "seed": seed, "commits": commits,
        }
        bisection_id = store.create_bisection(repo=str(repo), good=good_sha, bad=bad_sha, command=command,
                                              build=build, params=params)
        params["workdir"] = str((workdir or _cache_root() / str(bisection_id)).resolve())
        store.update_bisection(bisection_id, params=params)
        err_console.print(f"bisection {bisection_id}: {len(commits)} commits after {good_sha[:12]} up to "
                          f"{bad_sha[:12]}", highlight=False)
        _run(store, bisection_id, as_json)


@bisect_group.command("resume")
@click.argument("bisection_id", type=int, required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def resume_cmd(ctx: Context, bisection_id: int | None, as_json: bool) -> None:
    """Continue a bisection (default: the latest) from its saved steps."""
    with user_errors():
        record = ctx.store.get_bisection(bisection_id)
        if record["status"] != RUNNING:
            _render(record, as_json)
            return
        _run(ctx.store, int(record["id"]), as_json)


@bisect_group.command("status")
@click.argument("bisection_id", type=int, required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def status_cmd(ctx: Context, bisection_id: int | None, as_json: bool) -> None:
    """Show a bisection (default: the latest): its steps so far and, when done, the culprit."""
    with user_errors():
        _render(ctx.store.get_bisection(bisection_id), as_json)


@bisect_group.command("reset")
@click.argument("bisection_id", type=int, required=False)
@pass_context
def reset_cmd(ctx: Context, bisection_id: int | None) -> None:
    """Remove a bisection's worktrees; a running one is marked aborted."""
    with user_errors():
        record = ctx.store.get_bisection(bisection_id)
        Worktrees(Path(record["repo"]), Path(record["params"]["workdir"])).remove_all()
        if record["status"] == RUNNING:
            ctx.store.update_bisection(int(record["id"]), status=ABORTED)
        err_console.print(f"bisection {record['id']}: worktrees removed"
                          + (", aborted" if record["status"] == RUNNING else ""), highlight=False)


def _run(store: Store, bisection_id: int, as_json: bool) -> None:
    record = store.get_bisection(bisection_id)
    params = record["params"]
    repo = Path(record["repo"])
    worktrees = Worktrees(repo, Path(params["workdir"]))
    lab = CommandLab(
        store, bisection_id=bisection_id, repo=repo, worktrees=worktrees, build=record["build"],
        command=record["command"], samples=int(params["samples"]), seed=int(params["seed"]),
        metric=str(params.get("metric", "wall")),
    )
    state = BisectState(good=record["good"], bad=record["bad"], commits=list(params["commits"]),
                        refs=record["refs"], steps=list(record["steps"]), status=record["status"],
                        result=record["result"])

    def save(current: BisectState) -> None:
        store.update_bisection(bisection_id, status=current.status, refs=current.refs, steps=current.steps,
                               result=current.result)

    def log(text: str) -> None:
        err_console.print(f"bisect {bisection_id}: {text}", highlight=False, markup=False)

    settings = Settings(trials=int(params["trials"]), max_trials=int(params.get("max_trials", Settings.max_trials)),
                        check_trials=int(params["check_trials"]), alpha=float(params["alpha"]))
    try:
        Bisector(lab, state, settings, save=save, log=log).run()
    except BisectError as exc:
        store.update_bisection(bisection_id, status=FAILED, result={"error": str(exc)})
        worktrees.remove_all()
        fail(str(exc), exit_codes.BISECT_FAILED)
    worktrees.remove_all()
    _render(store.get_bisection(bisection_id), as_json)


def _clean(value: Any) -> Any:
    """NaN → None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def report_dict(record: dict[str, Any]) -> dict[str, Any]:
    result = record["result"] or {}
    refs = record["refs"] or {}
    report: dict[str, Any] = _clean({
        "id": record["id"], "status": record["status"], "repo": record["repo"], "good": record["good"],
        "bad": record["bad"], "command": record["command"], "build": record["build"],
        "params": {k: v for k, v in record["params"].items() if k != "commits"},
        "commits": len(record["params"]["commits"]),
        "check": {"good_trials": refs.get("good"), "bad_trials": refs.get("bad"),
                  "change_pct": refs.get("change_pct"), "ci_pct": refs.get("ci_pct"), "p_value": refs.get("p_value")},
        "first_bad": result.get("first_bad"), "candidates": result.get("candidates"),
        "change_pct": result.get("change_pct"), "ci_pct": result.get("ci_pct"), "p_value": result.get("p_value"),
        "error": result.get("error"), "reason": result.get("reason"),
        "steps": record["steps"],
        "created_at": str(record["created_at"]), "updated_at": str(record["updated_at"]),
    })
    return report


def _fmt_pct(value: Any) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def _render(record: dict[str, Any], as_json: bool) -> None:
    report = report_dict(record)
    if as_json:
        emit_json(report)
    else:
        sys.stdout.write(render_text(report))
    if record["status"] == NO_DIFFERENCE:
        sys.exit(exit_codes.NO_REPRODUCIBLE_DIFFERENCE)
    if record["status"] == FAILED:
        sys.exit(exit_codes.BISECT_FAILED)


def render_text(report: dict[str, Any]) -> str:
    lines = [f"bisection {report['id']} [{report['status']}]: {report['command']} "
             f"({report['params'].get('metric', 'wall')} time)",
             f"  repo {report['repo']}  good {report['good'][:12]}  bad {report['bad'][:12]}  "
             f"({report['commits']} commits)"]
    check = report["check"]
    if check["change_pct"] is not None:
        low, high = check["ci_pct"] or (None, None)
        lines.append(f"  check: bad vs good {_fmt_pct(check['change_pct'])} CI [{_fmt_pct(low)}, {_fmt_pct(high)}] "
                     f"p={check['p_value']:.3g} ({len(check['good_trials'])}+{len(check['bad_trials'])} trials)")
    if report["steps"]:
        lines.append("")
        lines.append(f"  {'#':>3}  {'commit':12}  {'subject':32}  {'trials':>6}  {'median ms':>10}  "
                     f"{'vs good':>8}  {'verdict':14}")
        for number, step in enumerate(report["steps"], 1):
            median = step["median"]
            verdict = step["verdict"] + (" (weak)" if step.get("weak") else "")
            verdict += " re-check" if step.get("phase") == "recheck" else ""
            lines.append(
                f"  {number:>3}  {step['commit'][:12]:12}  {step['subject'][:32]:32}  {len(step['trials']):>6}  "
                f"{'-' if median is None else f'{median / 1e6:.3f}':>10}  {_fmt_pct(step['change_vs_good_pct']):>8}  "
                f"{verdict}"
            )
    lines.append("")
    status = report["status"]
    if status == NO_DIFFERENCE:
        lines.append("no reproducible difference between G and B: nothing to bisect")
    elif status == DONE and report["first_bad"]:
        culprit = report["first_bad"]
        low, high = report["ci_pct"] or (None, None)
        p_value = report["p_value"]
        lines.append(f"first bad commit: {culprit['sha']}")
        lines.append(f"  {culprit['subject']}")
        lines.append(f"  author: {culprit['author']}")
        lines.append(f"  change vs good: {_fmt_pct(report['change_pct'])} CI [{_fmt_pct(low)}, {_fmt_pct(high)}] "
                     f"p={'-' if p_value is None else f'{p_value:.3g}'}")
    elif status == DONE:
        lines.append("the first bad commit is one of (skipped commits leave it ambiguous):")
        lines += [f"  {c['sha'][:12]} {c['subject']}" for c in report["candidates"] or []]
    elif status == FAILED:
        lines.append(f"failed: {report['error']}")
    elif status == RUNNING:
        lines.append("still running (or interrupted): `kbench bisect resume` continues it")
    return "\n".join(lines) + "\n"
