"""``kbench bisect oracle``: one statistical verdict on the checked-out commit, for ``git bisect run``.

    git bisect start BAD GOOD
    git bisect run kbench bisect oracle --good GOOD --bad BAD --build 'make' --command './prog'

The commit under test is HEAD of ``--repo``. It and the two references are built in
worktrees of kbench's own (the checkout is not touched, so a dirty tree is ignored) and
measured in bracketed rounds as in ``kbench bisect start``, until the sequential test
decides. Exit codes follow ``git bisect run``: 0 good, 1 bad, 125 skip (the commit does
not build, or the evidence stayed short of a decision); any failure of kbench itself
(bad options, a reference that does not build, a broken store) exits 255, which makes
git abort the bisection instead of taking the failure for a verdict.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import NoReturn

import click

from kbench.bisect.driver import BisectError, Bisector, BisectState, Settings
from kbench.bisect.git import Worktrees, resolve
from kbench.bisect.lab import CommandLab
from kbench.bisect.oracle import Classification
from kbench.bisect.search import BAD
from kbench.cli.bisect_cmd import check_trial_range, measure_options
from kbench.cli.main import Context, err_console, pass_context, user_errors
from kbench.workspaces import ORACLE, WorkspaceBusy, held, workspace_dir

GOOD_EXIT, BAD_EXIT, SKIP_EXIT, ABORT_EXIT = 0, 1, 125, 255
ORACLE_MAX_TRIALS = 2 * Settings.max_trials


def _exit(code: int, message: str) -> NoReturn:
    err_console.print(f"kbench bisect oracle: {message}", highlight=False, markup=False)
    sys.exit(code)


class AbortingCommand(click.Command):
    """Usage errors exit 255 too: exit 2 would read as "bad" to ``git bisect run``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.show()
            sys.exit(ABORT_EXIT)


@click.command("oracle", cls=AbortingCommand)
@click.option("--good", required=True, metavar="REV", help="A commit with the old performance.")
@click.option("--bad", required=True, metavar="REV", help="A later commit with the new performance.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              show_default=True, help="The repository; its HEAD is the commit judged.")
@measure_options
@pass_context
def oracle_cmd(
    ctx: Context, good: str, bad: str, repo: Path, build: str | None, build_timeout: float, command: str | None,
    samples: int | None, trials: int, max_trials: int, metric: str, seed: int,
) -> None:
    """Judge HEAD against GOOD and BAD: exit 0 good, 1 bad, 125 skip, 255 kbench failed.

    User space only (--build and --command): for a benchmark module measured in a
    kernel, use ``kbench bisect start --module``. Without --max-trials the oracle allows
    twice the rounds of a ``start`` step: git bisect has no confirmation at the end, and
    a skip next to the culprit leaves git with several candidates.
    """
    source = click.get_current_context().get_parameter_source("max_trials")
    if source == click.core.ParameterSource.DEFAULT:
        max_trials = ORACLE_MAX_TRIALS
    try:
        check_trial_range(trials, max_trials)
        if not (build and command):
            raise click.UsageError("the oracle needs --build and --command")
        with user_errors():
            _judge_head(ctx, repo.resolve(), good, bad, build=build, command=command, samples=samples or 10,
                        settings=Settings(trials=trials, max_trials=max_trials), metric=metric, seed=seed,
                        build_timeout_s=build_timeout)
    except click.UsageError as exc:
        exc.show()
        sys.exit(ABORT_EXIT)
    except SystemExit as exc:
        if exc.code in (GOOD_EXIT, BAD_EXIT, SKIP_EXIT):
            raise
        sys.exit(ABORT_EXIT)


def _judge_head(
    ctx: Context, repo: Path, good: str, bad: str, *, build: str, command: str, samples: int, settings: Settings,
    metric: str, seed: int, build_timeout_s: float,
) -> None:
    try:
        head, good_sha, bad_sha = (resolve(repo, rev) for rev in ("HEAD", good, bad))
    except BisectError as exc:
        _exit(ABORT_EXIT, str(exc))
    if head == good_sha:
        _exit(GOOD_EXIT, f"{head[:12]} is the good commit: good")
    if head == bad_sha:
        _exit(BAD_EXIT, f"{head[:12]} is the bad commit: bad")
    digest = hashlib.sha256(f"{repo}\0{good_sha}\0{bad_sha}".encode()).hexdigest()[:12]
    workspace = workspace_dir(ORACLE, ctx.store.identity, digest)
    try:
        with held(workspace, f"the oracle of {repo} between {good_sha[:12]} and {bad_sha[:12]}"):
            judged = _judge_in(ctx, repo, workspace, head, good_sha, bad_sha, build=build, command=command,
                               samples=samples, settings=settings, metric=metric, seed=seed,
                               build_timeout_s=build_timeout_s)
    except (BisectError, WorkspaceBusy) as exc:
        _exit(ABORT_EXIT, str(exc))
    if isinstance(judged, str):
        _exit(SKIP_EXIT, f"{head[:12]}: {judged}: skip")
    _exit(*_verdict(head, judged))


def _judge_in(
    ctx: Context, repo: Path, workspace: Path, head: str, good_sha: str, bad_sha: str, *, build: str, command: str,
    samples: int, settings: Settings, metric: str, seed: int, build_timeout_s: float,
) -> Classification | str:
    """HEAD judged in worktrees under ``workspace`` (removed afterwards): its Classification, or why not."""
    worktrees = Worktrees(repo, workspace)
    lab = CommandLab(ctx.store, tag="bisect-oracle", repo=repo, worktrees=worktrees, build=build, command=command,
                     samples=samples, seed=seed, metric=metric, build_timeout_s=build_timeout_s)
    bisector = Bisector(lab, BisectState(good=good_sha, bad=bad_sha, commits=[head]), settings)
    try:
        for reference, name in ((good_sha, "good"), (bad_sha, "bad")):
            error = lab.build(reference)
            if error is not None:
                _exit(ABORT_EXIT, f"the {name} commit {reference[:12]} does not build: {error}")
        return bisector.judge(head)
    finally:
        worktrees.remove_all()


def _verdict(head: str, judged: Classification) -> tuple[int, str]:
    line = f"{head[:12]}: {judged.verdict}, {judged.reason}, {judged.vs_good.change_pct:+.2f}% vs good"
    if judged.weak:
        return SKIP_EXIT, line + ": skip (the evidence stayed short of a decision)"
    return (BAD_EXIT if judged.verdict == BAD else GOOD_EXIT), line
