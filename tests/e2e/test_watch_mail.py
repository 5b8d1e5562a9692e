"""The watch's mail from hostile commits and unreliable mail commands, through the real code:
a real git repository whose culprit's author is hostile, a store holding the watch and its
confirmed regression, and `kbench watch --once` processes that mail it (nothing to measure:
the watch's branch head is already tested, so the poll goes straight to its mails).

Python's own ``email`` parser reading the written files is the independent check of the headers.
"""

from __future__ import annotations

import email
import os
import re
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from kbench.store.db import Store
from kbench.store.watch import WatchStore
from kbench.watch.loop import Watch, WatchOptions
from tests.faults.conftest import alive, assert_all_gone, command_name, descendants, wait_for

pytestmark = pytest.mark.skipif(not Path("/usr/bin/git").exists(), reason="needs git")

HOSTILE_EMAIL = "evil@example.org>, victim@example.com, <x"
HOSTILE_NAME = "Eve\x1b[2J\x07 \u202eDoe"
JOB = "benchmark: command\nparams:\n  cmd: ./prog\nsamples: 3\niterations: 1\n"
BUILD = "true"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _git(repo: Path, *args: str, author: tuple[str, str] = ("Kay Bench", "kay@example.org")) -> str:
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
           "GIT_COMMITTER_NAME": "Kay Bench", "GIT_COMMITTER_EMAIL": "kay@example.org", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@dataclass(frozen=True)
class Planted:
    repo: Path
    job: Path
    db: Path
    outbox: Path
    culprit: str
    finding: int


def plant(tmp: Path, author: tuple[str, str]) -> Planted:
    """A repository whose head is a culprit by ``author``, and a store whose watch of it has tested
    that head and confirmed the regression (its verification as the watch stores it)."""
    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for step, who in ((0, ("Kay Bench", "kay@example.org")), (1, author)):
        (repo / "prog.c").write_text(f"int main(void) {{ return {step} * 0; }}\n")
        _git(repo, "add", "prog.c")
        _git(repo, "commit", "-q", "-m", f"step {step}: \x1b[31mslower\x07", author=who)
    parent, culprit = _git(repo, "rev-list", "--reverse", "HEAD").split()
    job = tmp / "job.yaml"
    job.write_text(JOB)
    db = tmp / "results.db"
    store = Store.open(f"sqlite:///{db}")
    watch = Watch(store, WatchOptions(repo=repo.resolve(), branches=("main",), build=BUILD, job=job.resolve()),
                  log=lambda _line: None)
    watches = WatchStore(store.engine)
    watches.update_watch(watch.id, heads={"main": {"base": parent, "tested": culprit}})
    side = {"median": 1.0e7, "stdev_pct": 1.0, "slots": 40}
    verify = {"why": "verify", "base": {"commit": parent, **side}, "new": {"commit": culprit, **side, "median": 1.05e7},
              "verdict": {"verdict": "regression", "change_pct": 5.0, "ci_pct": [4.0, 6.0], "p_value": 0.001,
                          "confidence": 0.95},
              "blocks": 20, "elapsed_s": 10.0, "design": "interleaved", "run_ids": []}
    finding = watches.add_finding(watch.id, branch="main", instance_id=watch.instances[0].id, benchmark="command",
                                  metric="command.cpu", params={"cmd": "./prog"}, kind="regression",
                                  state="confirmed", status="open", good=parent, bad=culprit, candidate={},
                                  culprit=culprit, culprit_subject="step 1", verification=[verify])
    store.engine.dispose()
    return Planted(repo, job, db, tmp / "out", culprit, finding)


def watch_argv(planted: Planted, *args: str) -> list[str]:
    return [sys.executable, "-m", "kbench.cli", "--db", str(planted.db), "watch", str(planted.repo), "--build", BUILD,
            "--job", str(planted.job), "--once", "--outbox", str(planted.outbox), "--workdir",
            str(planted.repo.parent / "work"), *args]


def run_watch(planted: Planted, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_OWNER")}
    return subprocess.run(watch_argv(planted, *args), capture_output=True, text=True, timeout=timeout, env=env)


def mails(outbox: Path) -> list[tuple[bytes, EmailMessage]]:
    found = []
    for path in sorted(outbox.glob("*.eml")):
        raw = path.read_bytes()
        parsed = email.message_from_bytes(raw, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        found.append((raw, parsed))
    return found


def finding_log(planted: Planted) -> list[str]:
    import json

    with sqlite3.connect(f"file:{planted.db}?mode=ro", uri=True) as conn:
        (log,) = conn.execute("select log from watch_findings where id = ?", (planted.finding,)).fetchone()
    return [str(line) for line in json.loads(log)]


def assert_clean_headers(raw: bytes, parsed: EmailMessage) -> None:
    head = raw.split(b"\n\n", 1)[0].decode("ascii")  # RFC 5322 headers: ASCII, non-ASCII RFC 2047-encoded
    assert CONTROL.findall(head.replace("\n", "")) == [], head
    for name, value in parsed.items():
        assert CONTROL.findall(str(value)) == [], (name, value)


def test_a_hostile_author_address_gets_a_mail_addressed_to_no_one(tmp_path: Path) -> None:
    planted = plant(tmp_path, (HOSTILE_NAME, HOSTILE_EMAIL))
    sent = tmp_path / "sent.eml"
    done = run_watch(planted, "--mail-command", f"cat > {sent}")
    assert done.returncode == 14, done.stderr
    assert "is not one mail address, and no --mail-to was given" in done.stderr
    [(raw, mail)] = mails(planted.outbox)
    assert mail["To"] is None and not mail.get_all("Cc") and not mail.get_all("Bcc")
    assert_clean_headers(raw, mail)
    assert "victim@example.com" not in raw.split(b"\n\n", 1)[0].decode()
    body = mail.get_content()
    assert "\x1b" not in body and "\x07" not in body and "Eve\\x1b[2J\\x07 \\u202eDoe" in body
    assert not sent.exists()  # not handed to `sendmail -t`, which would read the recipients from the headers


def test_a_hostile_author_name_with_a_plain_address_is_one_quoted_recipient(tmp_path: Path) -> None:
    planted = plant(tmp_path, (HOSTILE_NAME + ", victim@example.com", "eve@example.org"))
    sent = tmp_path / "sent.eml"
    done = run_watch(planted, "--mail-command", f"cat > {sent}")
    assert done.returncode == 0, done.stderr
    for raw, mail in (*mails(planted.outbox), (sent.read_bytes(), email.message_from_bytes(
            sent.read_bytes(), policy=policy.default))):
        assert isinstance(mail, EmailMessage)
        assert [a.addr_spec for a in mail["To"].addresses] == ["eve@example.org"]
        assert_clean_headers(raw, mail)


def test_mail_to_names_the_recipients_whatever_the_author(tmp_path: Path) -> None:
    planted = plant(tmp_path, (HOSTILE_NAME, HOSTILE_EMAIL))
    done = run_watch(planted, "--mail-to", "Lab <lab@example.org>")
    assert done.returncode == 0, done.stderr
    [(raw, mail)] = mails(planted.outbox)
    assert [(a.display_name, a.addr_spec) for a in mail["To"].addresses] == [("Lab", "lab@example.org")]
    assert_clean_headers(raw, mail)


@pytest.mark.parametrize(("args", "message"), [
    (("--mail-to", "a@x.org\nBcc: b@y.org"), "--mail-to: 'a@x.org\\nBcc: b@y.org' holds a control character"),
    (("--mail-to", HOSTILE_EMAIL), f"--mail-to: {HOSTILE_EMAIL!r} is not one mail address"),
    (("--mail-command", "cat"), "--mail-command goes with --outbox"),
    (("--budget", "0.5s"), "--budget 0.5 s: a side-by-side comparison of two builds needs at least 1.6 s"),
])
def test_bad_mail_options_are_refused_before_anything(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    argv = watch_argv(planted, *args)
    if "--mail-command" in args:
        argv.remove("--outbox")
        argv.remove(str(planted.outbox))
    before = planted.db.read_bytes()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"kbench: error: {message}") and done.stderr.count("\n") == 1, done.stderr
    assert planted.db.read_bytes() == before and not planted.outbox.exists()


def test_an_outbox_on_a_read_only_file_system_is_refused_before_anything(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    readonly = tmp_path / "ro"
    readonly.mkdir()
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private"] if os.geteuid() == 0 else \
        ["unshare", "--user", "--map-root-user", "--mount"]
    argv = watch_argv(planted)
    argv[argv.index(str(planted.outbox))] = str(readonly / "out")
    done = subprocess.run([*prefix, "sh", "-c", script, "sh", str(readonly), *argv], capture_output=True, text=True,
                          timeout=60)
    if done.returncode == 99:
        pytest.skip("cannot make a read-only bind mount here")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"kbench: error: --outbox: {readonly / 'out'} cannot be written (a read-only file system)\n"


def test_a_failing_mail_command_is_an_error_of_its_own_and_is_not_repeated(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    failing = "cat > /dev/null; echo 'sendmail: cannot reach the relay' >&2; exit 75"
    done = run_watch(planted, "--mail-command", failing)
    assert done.returncode == 14, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("kbench: error:")]
    assert line.startswith(f"kbench: error: finding {planted.finding}: kbench-{planted.finding}-")
    assert line.endswith("failed: exit status 75; its stderr's last line: sendmail: cannot reach the relay")
    assert finding_log(planted)[-1].startswith("mail not sent: ")
    again = run_watch(planted, "--mail-command", failing)
    assert again.returncode == 0, again.stderr  # recorded: a rerun does not hand it over again
    assert len(mails(planted.outbox)) == 1


def test_a_mail_command_that_hangs_is_stopped_with_its_children(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    marker = f"kbench-test-{os.getpid()}-hang"
    done = run_watch(planted, "--mail-command", f"sh -c 'sleep 300 # {marker}' & wait", "--mail-timeout", "2s")
    assert done.returncode == 14, done.stderr
    assert "did not finish within 2 s: stopped" in done.stderr
    assert not _processes_with(marker)


def test_kill_9_during_the_mail_command_leaves_no_child_and_the_rerun_does_not_mail_again(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    sent = tmp_path / "sent"
    env = {k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_OWNER")}
    proc = subprocess.Popen(watch_argv(planted, "--mail-command", f"sleep 300; cat >> {sent}"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found: list[int] = []

    def sleeping() -> bool:
        found[:] = [pid for pid in descendants(proc.pid) if command_name(pid) == "sleep"]
        return bool(found)

    wait_for(sleeping, "the mail command's sleep")
    below = [pid for pid in descendants(proc.pid) if command_name(pid) in ("sh", "sleep")]
    assert len(below) == 2
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert_all_gone(below, "the mail command of a watch killed with -9")
    assert finding_log(planted)[-1].startswith("mail sending: ")
    again = run_watch(planted, "--mail-command", f"cat >> {sent}")
    assert again.returncode == 0, again.stderr
    assert not sent.exists()  # at most once: the mail the killed watch was handing over is not handed over again
    assert "the watch stopped while the mail command ran" in again.stderr
    assert finding_log(planted)[-1].startswith("mail: the watch stopped while the mail command ran")
    assert len(mails(planted.outbox)) == 1


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _watch_rows(planted: Planted) -> list[tuple[int, str, str]]:
    with sqlite3.connect(f"file:{planted.db}?mode=ro", uri=True) as conn:
        return list(conn.execute("select id, options, owner from watches order by id"))


@pytest.mark.parametrize(("args", "message"), [
    (("--branch", "nosuch"), "branch 'nosuch' names no commit in "),
    (("--from", "nosuch"), "--from 'nosuch' names no commit in "),
    (("--branch", "main", "--branch", "side", "--from", "HEAD"), "--from 'HEAD' ("),
])
def test_a_refused_watch_writes_no_row(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    _git(planted.repo, "branch", "side", "HEAD~1")
    before = _watch_rows(planted)
    done = run_watch(planted, *args)  # another watch (other branches): it would be a new row
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"kbench: error: {message}") and done.stderr.count("\n") == 1, done.stderr
    assert _watch_rows(planted) == before


def test_a_watch_run_by_a_live_process_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    store = Store.open(f"sqlite:///{planted.db}")
    from kbench.store.owners import current_owner

    me = current_owner()  # this test's process: alive
    WatchStore(store.engine).update_watch(1, owner={"pid": me.pid, "boot_id": me.boot_id, "host": me.host,
                                                    "since": datetime.now(UTC).isoformat()})
    store.engine.dispose()
    before = _watch_rows(planted)
    done = run_watch(planted, "--mail-to", "lab@example.org", "--max-commits", "3")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"kbench: error: watch 1 is being run by process {me.pid} on {me.host}\n"
    assert _watch_rows(planted) == before  # its options (mail_to, max_commits) untouched


def test_a_fleet_repo_url_with_a_credential_is_refused_before_anything(tmp_path: Path) -> None:
    planted = plant(tmp_path, ("Kay Bench", "kay@example.org"))
    before = planted.db.read_bytes()
    env = {**{k: v for k, v in os.environ.items() if k != "KBENCH_DB"}, "KBENCH_FLEET_CONFIG": str(tmp_path / "none")}
    for url, plain in (("https://user:TOKEN@git.example.org/r.git", "https://git.example.org/r.git"),
                       ("https://ghp_TOKEN@github.com/o/r", "https://github.com/o/r")):
        done = subprocess.run(watch_argv(planted, "--fleet", "lab", "--fleet-repo", url), capture_output=True,
                              text=True, timeout=60, env=env)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == ("kbench: error: --fleet-repo: the URL carries a credential, which would be stored in "
                               f"clear in every fleet task and worker clone; give {plain} and let each worker "
                               "authenticate (a git credential helper, ~/.netrc or an SSH key)\n")
        assert "TOKEN" not in done.stderr.replace(url, "")
    assert planted.db.read_bytes() == before
