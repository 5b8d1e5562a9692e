"""A confirmed regression's facts gathered from the store, and its mails posted to the outbox.

A mail is written to the outbox, then recorded in its finding (``report``, or ``followup``
for a follow-up) with a log line ``mail sending: …``, and only then handed to the mail
command; ``mail sent: …`` or ``mail not sent: …`` follows. A watch killed while its mail
command runs (the guardian ends the command) finds the mail recorded at its next run and does
not hand it over again: each mail goes to the command at most once, and the log says which
one was cut short (docs/watch.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from email.headerregistry import Address
from pathlib import Path
from typing import Any, Protocol

from kbench.builds.compare import BuildComparison
from kbench.contract.text import shown as quoted
from kbench.history.confirmed import Side
from kbench.jobs import JobInstance
from kbench.report.bisect_report import render_text, report_dict
from kbench.report.why import why_rows
from kbench.store.db import Store
from kbench.store.watch import WatchStore
from kbench.watch import git as wgit
from kbench.watch.addresses import author_address
from kbench.watch.mail import RegressionMail, follow_up, message, read_message, send, write

SENDING, SENT, NOT_SENT = "mail sending: ", "mail sent: ", "mail not sent: "
CUT_SHORT = "mail: the watch stopped while the mail command ran; it is not run again: "


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
    def mail_timeout_s(self) -> float: ...

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
        parent=Side("parent", verified.base.median, verified.base.stdev_pct,
                    verified.base.slots),
        culprit=Side(verified.new.commit[:10], verified.new.median, verified.new.stdev_pct, verified.new.slots),
        culprit_sha=culprit.sha, culprit_subject=culprit.subject, culprit_author=culprit.author,
        culprit_date=culprit.date, branch=str(finding["branch"]), repo=str(watch.repo),
        machine=machine_text(run.sysinfo if run else None), params=shown, job_path=str(watch.options.job.resolve()),
        build=watch.options.build, cmd=params.get("cmd"), found=found_lines(watch, finding),
        recipients=tuple(watch.options.mail_to) or _author(culprit), kernel_image=watch.options.kernel_image,
        why=_why_lines(watch.store, verified.run_ids),
    )


def _why_lines(store: Store, run_ids: Sequence[int]) -> list[str]:
    """The perf counters' %change and the profile delta of the culprit's side against its parent's."""
    if len(run_ids) < 2:
        return []
    rows = why_rows(store, run_ids[0], run_ids[-1])
    return rows.text_lines() if rows is not None else []


def _author(culprit: wgit.CommitInfo) -> tuple[Address, ...]:
    found = author_address(culprit.author_name, culprit.author_email)
    return (found,) if found is not None else ()


def mail_confirmed(watch: Watch, finding: dict[str, Any], outbox: Path) -> str | None:
    """The regression's mail: written, recorded, then handed to the mail command; why it was not
    sent (None when it was, or when there is no mail command)."""
    mail = regression_mail(watch, finding)
    path = write(message(mail), outbox, f"kbench-{finding['id']}-{mail.culprit_sha[:12]}.eml")
    watch.log(f"finding {finding['id']}: {mail.subject} -> {path}")
    if not mail.recipients:
        author = wgit.commit_info(watch.repo, mail.culprit_sha).author_email
        why = (f"the culprit's author address {quoted(author)} is not one mail address, and no --mail-to was given: "
               f"{path} has no recipient")
        watch.wstore.update_finding(int(finding["id"]), report=str(path), log=f"{NOT_SENT}{why}")
        return f"finding {finding['id']}: {why}" if watch.options.mail_command else None
    return _hand_over(watch, int(finding["id"]), path, "report")
def mail_status(watch: Watch, finding: dict[str, Any], outbox: Path) -> str | None:
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
    path = write(msg, outbox, f"kbench-{finding['id']}-{str(finding['culprit'])[:12]}-{finding['status']}.eml")
    watch.log(f"finding {finding['id']}: {status} -> {path}")
    return _hand_over(watch, int(finding["id"]), path, "followup")


def _hand_over(watch: Watch, finding_id: int, path: Path, column: str) -> str | None:
    """Record the mail at ``path`` as the finding's ``column`` (from then on it is never handed over
    again), then give it to the mail command; why it was not sent, or None."""
    command = watch.options.mail_command
    if command is None:
        watch.wstore.update_finding(finding_id, **{column: str(path)}, log=f"mailed: {path}")
        return None
    watch.wstore.update_finding(finding_id, **{column: str(path)}, log=f"{SENDING}{path}")
    error = send(path, command, watch.options.mail_timeout_s)
    watch.wstore.update_finding(finding_id, log=f"{SENT}{path}" if error is None else f"{NOT_SENT}{path}: {error}")
    if error is None:
        watch.log(f"finding {finding_id}: sent {path.name}")
        return None
    return f"finding {finding_id}: {path.name}: {error}"


def cut_short(watch: Watch, finding: dict[str, Any]) -> str | None:
    """A mail whose sending the watch did not see end (it was killed meanwhile): recorded once in the
    finding's log, and said; None for any other finding."""
    log = [str(line) for line in finding.get("log") or []]
    sending = [i for i, line in enumerate(log) if line.startswith(SENDING)]
    if not sending or any(line.startswith((SENT, NOT_SENT, CUT_SHORT)) for line in log[sending[-1] + 1:]):
        return None
    path = log[sending[-1]].removeprefix(SENDING)
    watch.wstore.update_finding(int(finding["id"]), log=f"{CUT_SHORT}{path}")
    return (f"finding {finding['id']}: the watch stopped while the mail command ran for {Path(path).name}; it is "
            "not run again (each mail at most once): check whether it went out")
