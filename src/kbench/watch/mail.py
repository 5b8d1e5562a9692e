"""The mail of a confirmed regression: RFC 5322, laid out as 0-Day's LKP reports are.

One message per confirmed regression, written into the outbox as ``<finding>-<sha12>.eml``
(``email.message.EmailMessage``, UTF-8, a Message-ID and a Date) and, when a mail command
is given (``sendmail -t``), handed to it on its standard input. What it says, in order:
the subject ``[kbench] [BENCH] SHA: METRIC +x% regression``; "due to commit" with the
culprit's id, subject and author; the branch; the test case, machine and parameters; the
LKP ``%stddev %change %stddev`` table of the culprit against its parent measured side by
side, with that comparison's interval and p-value; how the candidate was found, confirmed
and bisected (the bisect log); and the steps to reproduce, the build included.

A regression that is later fixed or reverted gets a follow-up (``Re:``, In-Reply-To the
first mail) saying by which commit and how that was confirmed.

Nothing from outside goes into a header unchecked (``kbench.watch.addresses``): each recipient
is one parsed address, the subject's text has its control characters escaped; the body's
lines of outside text (the commit's subject and author, the branch) too.

The mail command runs as kbench's other children do (``kbench.children``): in a process group
of its own that the guardian kills if the watch is killed, and for at most ``--mail-timeout``
(``MAIL_COMMAND_TIMEOUT_S`` by default), after which its whole group is killed and the mail
counts as not sent.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

from kbench import children
from kbench.contract.text import printable, shown
from kbench.history.confirmed import Origin, Side, regression_subject, reproduce_steps
from kbench.report.lkp_table import Cell, Row, change_text, lkp_table
from kbench.report.units import format_measure, metric_name
from kbench.watch.addresses import ADDR_SPEC, header_text, recipient

INDENT = " " * 8
MAIL_COMMAND_TIMEOUT_S = 60.0
"""How long a mail command may run by default (``--mail-timeout``) before its process group is
killed and the mail counts as not sent (docs/watch.md)."""


@dataclass(frozen=True)
class RegressionMail:
    """Everything a regression's mail prints."""

    finding_id: int
    benchmark: str
    metric: str
    unit: str
    change_pct: float
    ci_pct: tuple[float, float]
    p_value: float
    confidence: float
    blocks: int
    parent: Side
    culprit: Side
    culprit_sha: str
    culprit_subject: str
    culprit_author: str
    culprit_date: str
    branch: str
    repo: str
    machine: str
    params: Mapping[str, str]
    job_path: str
    build: str
    cmd: str | None
    found: Sequence[str]  # how the candidate was found, confirmed and bisected
    recipients: Sequence[str | Address] = field(default_factory=tuple)  # a str is parsed (addresses.recipient)
    sender: str = ""
    kernel_image: str | None = None  # a kernel tree's watch: the image its build makes
    why: Sequence[str] = ()  # the counters' and the profile's rows of the two sides (``kbench.report.why``)

    @property
    def subject(self) -> str:
        return regression_subject(self.benchmark, self.culprit_sha, self.metric, self.change_pct)


def _sender() -> Address:
    host = socket.gethostname()
    return Address("kbench watch", addr_spec=f"kbench@{host if ADDR_SPEC.fullmatch(f'x@{host}') else 'localhost'}")


def table_lines(mail: RegressionMail) -> list[str]:
    """The culprit against its parent in the one ``%stddev %change %stddev`` table (``kbench.report.lkp_table``)."""
    row = Row(metric_name(mail.metric, mail.unit), Cell(format_measure(mail.parent.median, mail.unit),
                                                        mail.parent.stdev_pct),
              [(change_text(mail.change_pct), Cell(format_measure(mail.culprit.median, mail.unit),
                                                   mail.culprit.stdev_pct))])
    return lkp_table(mail.parent.label, [mail.culprit.label], [row])


def reproduce_lines(mail: RegressionMail) -> list[str]:
    """The steps of the report's entry (``kbench.history.confirmed.reproduce_steps``): one wording for both."""
    origin = Origin(repo=mail.repo, build=mail.build, job_path=mail.job_path, kernel_image=mail.kernel_image)
    return reproduce_steps(origin, mail.culprit_sha, mail.branch, mail.benchmark, mail.params)


def body(mail: RegressionMail) -> str:
    low, high = mail.ci_pct
    lines = [
        "Greeting,",
        "",
        f"kbench found a {mail.change_pct:+.1f}% regression of {mail.metric} due to commit:",
        "",
        f"commit: {mail.culprit_sha} (\"{printable(mail.culprit_subject)}\")",
        f"author: {printable(mail.culprit_author)}",
        f"date: {printable(mail.culprit_date)}",
        f"branch: {printable(mail.branch)} of {printable(mail.repo)}",
        "",
        f"in testcase: {mail.benchmark}",
        f"on test machine: {mail.machine}",
        "with following parameters:" if mail.params else "with default parameters",
        "",
        *(f"{INDENT}{key}: {value}" for key, value in mail.params.items()),
        *([""] if mail.params else []),
        f"The culprit measured side by side with its parent just now (interleaved, {mail.blocks} blocks):",
        f"{mail.change_pct:+.1f}% (CI {low:+.1f}% … {high:+.1f}% at {100 * mail.confidence:.3g}%, "
        f"p={mail.p_value:.2g})",
        "",
        *table_lines(mail),
        "",
        *([*(f"{INDENT}{line}" for line in mail.why), ""] if mail.why else []),
        "How it was found:",
        "",
        *(f"{INDENT}{line}".rstrip() for line in mail.found),
        "",
        "To reproduce:",
        "",
        *(f"{INDENT}{line}" for line in reproduce_lines(mail)),
        "",
        "Thanks,",
        "kbench watch",
    ]
    return "\n".join(lines) + "\n"


def message(mail: RegressionMail, when: datetime | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = recipient(mail.sender) if mail.sender else _sender()
    if mail.recipients:
        msg["To"] = [r if isinstance(r, Address) else recipient(r) for r in mail.recipients]
    msg["Subject"] = header_text(mail.subject)
    msg["Date"] = format_datetime(when or datetime.now(UTC))
    msg["Message-ID"] = make_msgid(idstring=f"kbench-{mail.finding_id}", domain="kbench.invalid")
    msg["X-Kbench-Culprit"] = mail.culprit_sha
    msg.set_content(body(mail), cte="8bit")
    return msg


def follow_up(original: EmailMessage, text: str, *, subject_status: str, when: datetime | None = None) -> EmailMessage:
    """A reply to ``original`` (``Re:``, In-Reply-To and References set) saying ``text``."""
    msg = EmailMessage()
    msg["From"] = original["From"]
    if original["To"]:
        msg["To"] = original["To"]
    msg["Subject"] = header_text(f"Re: {original['Subject']} ({subject_status})")
    msg["Date"] = format_datetime(when or datetime.now(UTC))
    msg["Message-ID"] = make_msgid(idstring="kbench-status", domain="kbench.invalid")
    msg["In-Reply-To"] = original["Message-ID"]
    msg["References"] = original["Message-ID"]
    msg.set_content(text, cte="8bit")
    return msg


@dataclass(frozen=True)
class Posted:
    path: Path
    command_error: str | None  # the mail command failed: why (the file is written anyway)


def write(msg: EmailMessage, outbox: Path, name: str) -> Path:
    """``msg`` as ``outbox/name``, whole or not at all."""
    outbox.mkdir(parents=True, exist_ok=True)
    path = outbox / name
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(bytes(msg))
    partial.replace(path)
    return path


def send(path: Path, mail_command: str, timeout_s: float = MAIL_COMMAND_TIMEOUT_S) -> str | None:
    """Hand the mail at ``path`` to ``mail_command`` (``sh -c``) on its standard input; None once
    it exited 0, else why it did not (its exit status and the last line of its stderr, a
    signal, or ``timeout_s`` passed, after which its whole process group is killed)."""
    what = f"mail command {shown(mail_command)}"
    try:
        proc = children.run(["/bin/sh", "-c", mail_command], input=path.read_bytes(), capture_output=True,
                            timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"{what} did not finish within {timeout_s:g} s: stopped (the mail may not have gone)"
    except OSError as exc:
        return f"{what} could not be started: {exc.strerror or exc}"
    if proc.returncode == 0:
        return None
    said = [line for line in proc.stderr.decode(errors="replace").splitlines() if line.strip()]
    status = f"exit status {proc.returncode}" if proc.returncode > 0 else f"killed by signal {-proc.returncode}"
    return f"{what} failed: {status}" + (f"; its stderr's last line: {printable(said[-1].strip())}" if said else "")


def post(msg: EmailMessage, outbox: Path, name: str, mail_command: str | None) -> Posted:
    """Write ``msg`` as ``outbox/name`` and hand it to ``mail_command`` (``sh -c``) if given."""
    path = write(msg, outbox, name)
    return Posted(path, send(path, mail_command) if mail_command else None)


def read_message(path: Path) -> EmailMessage:
    from email import policy
    from email.parser import BytesParser

    parsed = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    assert isinstance(parsed, EmailMessage)
    return parsed


def as_dict(mail: RegressionMail) -> dict[str, Any]:
    return {"subject": mail.subject, "culprit": mail.culprit_sha, "metric": mail.metric, "change_pct": mail.change_pct}
