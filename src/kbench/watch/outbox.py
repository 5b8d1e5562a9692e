"""A confirmed regression's facts gathered from the store, and its mails posted to the outbox."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from kbench.builds.compare import BuildComparison
from kbench.jobs import JobInstance
from kbench.report.bisect_report import render_text, report_dict
from kbench.store.db import Store
from kbench.store.watch import WatchStore
from kbench.watch import git as wgit
from kbench.watch.mail import RegressionMail, SideFigures, follow_up, message, post, read_message


class MailOptions(Protocol):
    @property
    def job(self) -> Path: ...

    @property
    def build(self) -> str: ...

    @property
    def mail_command(self) -> str | None: ...

    @property
    def mail_to(self) -> tuple[str, ...]: ...

    @property
    def kernel_image(self) -> str | None: ...


class Watch(Protocol):
    """What the mails need of a watch (``kbench.watch.loop.Watch``)."""

    id: int
    store: Store
    wstore: WatchStore
    repo: Path
    log: Callable[[str], None]

    @property
    def instances(self) -> Sequence[JobInstance]: ...

    @property
    def options(self) -> MailOptions: ...

UNITS = {"command.cpu": "ns", "command.wall": "ns"}


def machine_text(sysinfo: dict[str, Any] | None) -> str:
    """``host: 2 CPUs, AMD EPYC 7B13, 24 GiB memory`` from a run's machine inventory."""
    info = sysinfo or {}
    cpu = dict(info.get("cpu") or {})
    facts = []
    if cpu.get("count"):
        facts.append(f"{cpu['count']} CPUs")
    if cpu.get("model"):
        facts.append(str(cpu["model"]))
    if info.get("memory_bytes"):
        facts.append(f"{int(info['memory_bytes']) / 2**30:.0f} GiB memory")
    virtual = dict(info.get("virtualization") or {}).get("vm")
    if virtual:
        facts.append(f"virtual machine ({virtual})")
    host = str(info.get("hostname") or "unknown host")
    return f"{host}: {', '.join(facts)}" if facts else host


def _verification(finding: dict[str, Any]) -> BuildComparison:
    checks = [c for c in finding.get("verification") or [] if c.get("why") == "verify"]
    return BuildComparison.from_json({k: v for k, v in checks[-1].items() if k != "why"})


def found_lines(watch: Watch, finding: dict[str, Any]) -> list[str]:
    """How the candidate was found, confirmed, bisected and verified (the finding's log, and the
    bisection's table when there was one)."""
    lines = [f"watch {watch.id}, branch {finding['branch']}, finding {finding['id']}:"]
    lines += [f"  {line}" for line in finding.get("log") or []]
    if finding.get("bisect_id") is not None:
        record = watch.store.get_bisection(int(finding["bisect_id"]))
        lines += ["", "bisect log:", *render_text(report_dict(record)).rstrip("\n").splitlines()]
    return lines


def regression_mail(watch: Watch, finding: dict[str, Any]) -> RegressionMail:
    verified = _verification(finding)
    culprit = wgit.commit_info(watch.repo, str(finding["culprit"]))
    run = watch.store.get_run(verified.run_ids[-1]) if verified.run_ids else None
    params = {str(k): str(v) for k, v in dict(finding["params"]).items()}
    instance = next((i for i in watch.instances if i.id == finding["instance_id"]), None)
    shown = dict(params)
    if instance:
        if instance.samples is not None:
            shown["samples"] = str(instance.samples)
        shown["iterations"] = str(instance.iterations)
    verdict = verified.verdict
    confidence = float(verdict.get("confidence") or 0.95)
    metric = str(finding["metric"])
    return RegressionMail(
        finding_id=int(finding["id"]), benchmark=str(finding["benchmark"]), metric=metric,
        unit=UNITS.get(metric, str(verdict.get("unit") or "")), change_pct=verified.change_pct,
        ci_pct=verified.ci_pct, p_value=verified.p_value,
        confidence=confidence if math.isfinite(confidence) else 0.95, blocks=verified.blocks,
        parent=SideFigures(f"{verified.base.commit[:10]} (parent)", verified.base.median, verified.base.stdev_pct),
        culprit=SideFigures(verified.new.commit[:10], verified.new.median, verified.new.stdev_pct),
        culprit_sha=culprit.sha, culprit_subject=culprit.subject, culprit_author=culprit.author,
        culprit_date=culprit.date, branch=str(finding["branch"]), repo=str(watch.repo),
        machine=machine_text(run.sysinfo if run else None), params=shown, job_path=str(watch.options.job.resolve()),
        build=watch.options.build, cmd=params.get("cmd"), found=found_lines(watch, finding),
        recipients=tuple(watch.options.mail_to) or (culprit.author,), kernel_image=watch.options.kernel_image,
    )


def mail_confirmed(watch: Watch, finding: dict[str, Any], outbox: Path) -> None:
    mail = regression_mail(watch, finding)
    posted = post(message(mail), outbox, f"kbench-{finding['id']}-{mail.culprit_sha[:12]}.eml",
                  watch.options.mail_command)
    note = f"mailed: {posted.path}"
    if posted.command_error:
        note += f" (mail command failed: {posted.command_error})"
    watch.wstore.update_finding(int(finding["id"]), report=str(posted.path), log=note)
    watch.log(f"finding {finding['id']}: {mail.subject} -> {posted.path}")


def mail_status(watch: Watch, finding: dict[str, Any], outbox: Path) -> None:
    """The follow-up of a regression that was fixed or reverted."""
    original = read_message(Path(str(finding["report"])))
    if finding["status"] == "fixed":
        fix = watch.wstore.finding(int(finding["fixed_by"])) if finding.get("fixed_by") else None
        fixed_in = str(finding["fixed_in"])
        info = wgit.commit_info(watch.repo, fixed_in)
        lines = [f"The regression of {finding['metric']} due to commit {str(finding['culprit'])[:12]} is fixed in:", "",
                 f"commit: {info.sha} (\"{info.subject}\")", f"author: {info.author}", ""]
        if fix:
            lines += ["How it was confirmed:", "", *(f"        {line}" for line in fix.get("log") or [])]
        status = f"fixed in {fixed_in[:12]}"
    else:
        info = wgit.commit_info(watch.repo, str(finding["reverted_in"]))
        lines = [f"Commit {str(finding['culprit'])[:12]} was reverted by:", "",
                 f"commit: {info.sha} (\"{info.subject}\")", f"author: {info.author}"]
        status = f"reverted in {info.sha[:12]}"
    msg = follow_up(original, "\n".join([*lines, "", "kbench watch"]) + "\n", subject_status=status)
    posted = post(msg, outbox, f"kbench-{finding['id']}-{str(finding['culprit'])[:12]}-{finding['status']}.eml",
                  watch.options.mail_command)
    watch.wstore.update_finding(int(finding["id"]), followup=str(posted.path), log=f"follow-up mailed: {posted.path}")
    watch.log(f"finding {finding['id']}: {status} -> {posted.path}")
