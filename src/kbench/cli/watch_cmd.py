"""``kbench watch``: follow branches, measure every commit, and mail only confirmed culprits."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from kbench import exit_codes, git
from kbench.cli.errors import user_errors
from kbench.cli.fail_on import exit_if_found, fail_on_option
from kbench.cli.main import Context, emit_json, err_console, fail, pass_context
from kbench.cli.needs import needs_extra
from kbench.cli.parsing import Duration
from kbench.cli.progress import LongWork, quiet_option
from kbench.compare.thresholds import DEFAULT_ALPHA

if TYPE_CHECKING:
    from kbench.fleet.settings import FleetSettings
    from kbench.store.db import Store
    from kbench.watch.loop import WatchOptions


def _fleet_store(fleet_queue: str) -> tuple[Store, FleetSettings]:
    """The fleet's database as the watch's store, after checking the class name and the broker."""
    from kbench.cli.fleet_cmd import fleet_settings
    from kbench.fleet.app import check_broker, make_app
    from kbench.fleet.database import open_fleet_store
    from kbench.fleet.settings import check_queue
    from kbench.store.db import Store

    check_queue(fleet_queue)
    settings = fleet_settings()
    check_broker(make_app(settings))
    return Store(open_fleet_store(settings.db_url)), settings


def _refuse_options(options: WatchOptions) -> None:
    """What the options alone refuse, before the store is opened or anything measured (exit 2)."""
    from kbench.engine.interleaved import least_command_budget_s
    from kbench.watch.addresses import BadAddress, recipient
    from kbench.watch.preflight import credential_in_url, unwritable_outbox

    for address in options.mail_to:
        try:
            recipient(address)
        except BadAddress as exc:
            fail(f"--mail-to: {exc}", exit_codes.USAGE)
    if options.mail_command is not None and options.outbox is None:
        fail("--mail-command goes with --outbox (each mail is written there before it is handed over)",
             exit_codes.USAGE)
    if options.outbox is not None and (why := unwritable_outbox(options.outbox)) is not None:
        fail(f"--outbox: {why}", exit_codes.USAGE)
    least = least_command_budget_s()
    if options.kernel_image is None and options.budget_s < least:
        fail(f"--budget {options.budget_s:g} s: a side-by-side comparison of two builds needs at least {least:.1f} s "
             "(6 blocks of 4 slots of about 0.1 s); give --budget 2s or more (a slower program needs more)",
             exit_codes.USAGE)
    if options.fleet_repo is not None and (why := credential_in_url(options.fleet_repo)) is not None:
        fail(why, exit_codes.USAGE)


def _current_branch(repo: Path) -> str:
    proc = git.run(repo, "symbolic-ref", "--quiet", "--short", "HEAD", timeout=git.QUICK_S)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "HEAD"


@click.command("watch")
@click.argument("repo", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="A branch (or any ref) to follow; repeatable. Default: the repository's current branch.")
@click.option("--build", metavar="CMD",
              help="Builds a commit, run in its worktree (e.g. 'cc -O1 -o prog prog.c'); required but with "
              "--kernel-tree.")
@click.option("--build-timeout", "build_timeout", type=Duration(), default="60m", show_default=True,
              metavar="DURATION", help="Kill a build that runs longer than this (its process group): the commit is "
              "build-failed with that reason.")
@click.option("--job", "job_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The job run on every commit, in the commit's worktree (`cmd: ./prog` is the commit's program); "
              "`control:` names an instance every run is judged against.")
@click.option("--from", "start", metavar="REV",
              help="The first commit to measure, the first time a branch is followed (default: its head); later "
              "polls go on from where the last one stopped.")
@click.option("--once", is_flag=True, help="Measure what is new, reach verdicts, and exit.")
@click.option("--interval", type=Duration(), default="10m", show_default=True,
              help="Without --once: poll this often.")
@click.option("--outbox", type=click.Path(file_okay=False, path_type=Path),
              help="Write one RFC 5322 mail per confirmed regression here (and a follow-up when it is fixed or "
              "reverted).")
@click.option("--mail-command", metavar="CMD", help="Also hand every mail to CMD on its stdin (e.g. 'sendmail -t').")
@click.option("--mail-to", "mail_to", multiple=True, metavar="ADDR",
              help="Recipients of the mails (default: the culprit's author); repeatable.")
@click.option("--mail-timeout", type=Duration(), default="60s", show_default=True,
              help="How long the mail command may run; then its processes are killed and the mail is not sent "
              "(exit 14).")
@click.option("--max-commits", type=click.IntRange(min=1), metavar="N",
              help="Build at most N of the commits new at a poll (evenly spaced, the newest always); a bisection "
              "reaches the others.")
@click.option("--budget", type=Duration(), default="20s", show_default=True,
              help="Measuring time of each side-by-side comparison (confirmation, verification).")
@click.option("--alpha", type=click.FloatRange(min=0.001, max=0.2), default=DEFAULT_ALPHA, show_default=True,
              help="Level of each comparison; a culprit is named only after two comparisons both found it.")
@click.option("--min-change", type=click.FloatRange(min=0.0, max=100.0), default=1.0, show_default=True,
              metavar="PCT", help="The smallest change in percent worth a culprit: both comparisons must measure at "
              "least this much (builds that differ only in a comment can differ by a fraction of a percent in code "
              "layout).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the comparisons' random orders.")
@click.option("--fetch", is_flag=True, help="git fetch --all in REPO before each poll.")
@click.option("--kernel-from-build", "kernel_image", metavar="PATH",
              help="A kernel tree: the build makes a kernel (a bzImage in the worktree, or . for the build tree), "
              "booted in qemu for every run of the job's one benchmark (syscall.*, kfunc.*), as `kbench bisect` "
              "takes it.")
@click.option("--kernel-tree", is_flag=True,
              help="REPO is a kernel tree whose commits kbench builds itself (no --build): each commit's kernel is "
              "tree:REPO@SHA, built incrementally in kbench's build directory (kbench kernel build) and booted in "
              "qemu for every run of the job's one benchmark; a commit that does not build is 'build failed: <the "
              "first compiler error>'.")
@click.option("--kernel-modules", metavar="PATH",
              help="With --kernel-from-build: the modules the guest needs (virtio_pci, virtio_console) when they are "
              "not built in: a modules_install directory in the worktree.")
@click.option("--boot-timeout", type=click.FloatRange(min=5), default=120.0, show_default=True,
              help="With --kernel-from-build: seconds a kernel may take to boot before it counts as hung.")
@click.option("--fleet", "fleet_queue", metavar="CLASS", callback=needs_extra("fleet", "kbench watch --fleet"),
              help="Measure on fleet workers of this machine class (kbench worker --allow-command) instead of "
              "here: the new commits of a poll at once, one task each; comparisons and bisection rounds as tasks. "
              "The watch's store is then the fleet's database (docs/fleet.md).")
@click.option("--fleet-repo", metavar="URL",
              help="With --fleet: the repository as the workers reach it (default: REPO).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Where builds and bisections happen (default: kbench's cache, watch/STORE-ID/ID).")
@click.option("--json", "as_json", is_flag=True, help="Print each poll as one JSON document.")
@quiet_option
@fail_on_option
@pass_context
def watch_cmd(
    ctx: Context, repo: Path, branches: tuple[str, ...], build: str | None, build_timeout: float, job_file: Path,
    start: str | None, once: bool,
    interval: float, outbox: Path | None, mail_command: str | None, mail_to: tuple[str, ...], mail_timeout: float,
    max_commits: int | None, budget: float, alpha: float, min_change: float, seed: int, fetch: bool,
    kernel_image: str | None, kernel_tree: bool, kernel_modules: str | None, boot_timeout: float,
    fleet_queue: str | None,
    fleet_repo: str | None, workdir: Path | None, as_json: bool, quiet: bool, fail_on: frozenset[str],
) -> None:
    """Follow BRANCHes of REPO: build every new commit (first-parent order) in a worktree of
    kbench's own, run JOB there and store the runs. A change point of a series is only a
    candidate: it is confirmed by measuring the builds on either side of it side by side
    now, bisected when its range holds more than one commit, and its culprit measured once
    more against its parent. Only then is it a regression, mailed into --outbox.

    \b
    Exit codes: 0 done; 9 with --fail-on regression when a regression was confirmed at this
    poll; 14 a mail was not sent (its mail command failed or timed out; printed on stderr, the
    mail kept in --outbox); 2 a bad repository, branch, job or option (mail options and --budget
    included: refused before anything is measured); and the common ones.
    """
    from kbench.jobs import JobError
    from kbench.watch.loop import Watch, WatchError, WatchOptions
    from kbench.watch.report import poll_json, poll_text

    if fail_on - {"regression"}:
        raise click.BadParameter("watch mails regressions only: give --fail-on regression", param_hint="--fail-on")
    if kernel_tree:
        if build is not None or kernel_image is not None or kernel_modules is not None:
            raise click.UsageError("--kernel-tree builds each commit's kernel itself: it goes without --build, "
                                   "--kernel-from-build and --kernel-modules")
        from kbench.kernels.per_commit import TREE_IMAGE

        build, kernel_image = "", TREE_IMAGE
    elif build is None:
        raise click.UsageError("Missing option '--build' (or --kernel-tree: kbench builds each commit's kernel)")
    repo = repo.resolve()
    options = WatchOptions(
        repo=repo, branches=branches or (_current_branch(repo),), build=build, job=job_file.resolve(), start=start,
        outbox=outbox.resolve() if outbox else None, mail_command=mail_command, mail_to=mail_to,
        mail_timeout_s=mail_timeout,
        max_commits=max_commits, budget_s=budget, alpha=alpha, min_change_pct=min_change, seed=seed, fetch=fetch,
        workdir=workdir.resolve() if workdir else None, fleet_queue=fleet_queue, fleet_repo=fleet_repo,
        kernel_image=kernel_image, kernel_modules=kernel_modules, boot_timeout=boot_timeout,
        build_timeout_s=build_timeout,
    )
    if kernel_modules is not None and kernel_image is None:
        raise click.UsageError("--kernel-modules goes with --kernel-from-build")
    if fleet_repo is not None and fleet_queue is None:
        raise click.UsageError("--fleet-repo goes with --fleet")
    _refuse_options(options)

    work = LongWork("watch", unit="commits", quiet=quiet or as_json)

    def log(text: str) -> None:
        work.describe(text)  # what the watch is doing: its own words
        if not quiet:
            err_console.print(f"watch {time.strftime('%H:%M:%S')} {text}", highlight=False, markup=False)

    with user_errors(), work:
        store, settings = ctx.store, None
        if fleet_queue is not None:
            store, settings = _fleet_store(fleet_queue)
        try:
            watch = Watch(store, options, log=log, fleet=settings, progress=work)
            watch.claim()
        except (WatchError, JobError) as exc:
            if isinstance(exc, JobError):
                raise
            fail(str(exc), exit_codes.USAGE)
        log(f"watch {watch.id}{' (new)' if watch.created else ''}: {repo} {', '.join(options.branches)}")
        try:
            while True:
                try:
                    result = watch.poll()
                except WatchError as exc:
                    fail(str(exc), exit_codes.USAGE)
                if as_json:
                    emit_json(poll_json(result))
                else:
                    sys.stdout.write(poll_text(result))
                    sys.stdout.flush()
                for why in result.mail_failures:
                    err_console.print(Text.assemble(("kbench: error:", "bold red"), " ", why), highlight=False)
                if once:
                    break
                work(f"waiting: the next poll at {time.strftime('%H:%M:%S', time.localtime(time.time() + interval))}",
                     0, None)
                time.sleep(interval)
        finally:
            watch.release()
    if result.mail_failures:  # an error wins over the --fail-on gate; the mails are in the outbox
        sys.exit(exit_codes.MAIL_FAILED)
    new = [f for f in result.regressions() if f["id"] in result.new_regressions]
    exit_if_found(fail_on, (("regression", f"{f['metric']} due to {str(f['culprit'])[:12]}") for f in new))
