"""Child processes and scratch directories that never outlive kbench, even after kill -9.

The children kbench starts (the probe, qemu, suite tools, compilers, package tools, the
fleet's servers, mount) go through ``start``, ``spawn`` or ``run`` here. Three kinds do not,
each bounded another way: git commands (``kbench.git.run``: short, each with a time-out);
``pg_isready``, polled for at most 30 s while the fleet's PostgreSQL starts
(``fleet/services.py``); and the workers of ``kbench fleet demo`` (``fleet/demo.py``), started
under ``setpriv --pdeathsig=TERM`` so that each gets SIGTERM when the demo dies, and stopped by
the demo with SIGTERM so that a worker finishes its task first. A child started here:

- it runs in a session and process group of its own, so a whole tool, workers
  included, is stopped at once, and a terminal's Ctrl-C reaches kbench only (kbench
  forwards it where a child should stop cleanly, e.g. the probe keeping its samples);
- it is registered with the *guardian* (``kbench/_guardian.py``), a small process started
  with the first child. kbench holds the only write end of a pipe to it; when kbench
  exits in any way, SIGKILL included, the kernel closes that pipe and the guardian kills
  every group still registered and every process carrying this kbench's owner token in
  its environment, then removes the scratch directories still registered and deletes the
  network namespaces and links registered (``guard_network``: ``kbench fleet demo --isolated``).

PR_SET_PDEATHSIG alone would not do: it reaches direct children only, and fires when
the parent *thread* exits. A cgroup needs delegation kbench does not have everywhere.
So it is the second line of defence, for the guardian's own death: kbench watches its
guardian (a pidfd) and replaces it at once, telling the new one every group and
directory again; and a child started from kbench's main thread gets PR_SET_PDEATHSIG
(SIGKILL), so that even kill -9 of kbench and its guardian together ends it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.procfs import DEAD_STATES, process_stat

OWNER_ENV = "KBENCH_OWNER"
"""Environment variable naming the kbench process a child belongs to (for the guardian)."""
STOP_GRACE_S = 3.0
"""After SIGTERM, how long a child's group gets to stop before SIGKILL."""
GUARDIAN_SCRIPT = Path(__file__).with_name("_guardian.py")

Argv = Sequence[str | os.PathLike[str]]


class _Guardian:
    """The pipe to this process's guardian, started on first use (again after a fork).

    It keeps what it told the guardian (the groups and directories still registered): a
    guardian that dies (someone killed it) is replaced at once, by a thread watching it
    through a pidfd, or at the next registration without one, and the new guardian is
    told everything again, under the same owner token.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._owner_pid = -1
        self._pipe: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._watching = False
        self._token = ""
        self._registered: dict[str, None] = {}  # "+g PGID" / "+d PATH" lines, in order

    @property
    def token(self) -> str:
        with self._lock:
            self._ensure_started()
            return self._token

    def tell(self, line: str) -> None:
        with self._lock:
            self._remember(line)
            for _ in range(2):
                self._ensure_started()
                if self._write(line):
                    return
                self._close()  # the guardian died (someone killed it): start another

    def _remember(self, line: str) -> None:
        kind, _, argument = line.partition(" ")
        if kind.startswith("+"):
            self._registered[line] = None
        else:
            self._registered.pop(f"+{kind[1:]} {argument}", None)

    def _write(self, line: str) -> bool:
        assert self._pipe is not None
        try:
            os.write(self._pipe, (line + "\n").encode(errors="surrogateescape"))  # < PIPE_BUF: atomic
        except OSError:
            return False
        return True

    def _ensure_started(self) -> None:
        if self._pipe is not None and self._owner_pid == os.getpid():
            return
        if self._owner_pid != os.getpid():  # a forked copy: the parent's guardian is not ours
            self._pipe = None
            self._process = None
            self._pidfd = None
            self._watching = False
            self._registered = {}
            import secrets  # here: importing it (hashlib, random) would cost every command's start-up

            self._token = f"{os.getpid()}-{secrets.token_hex(8)}"
        self._owner_pid = os.getpid()
        read_end, write_end = os.pipe()  # both non-inheritable: no other child keeps it open
        # A replacement finds what the one before knew waiting in its pipe as it starts.
        told = self._prefill(write_end)
        try:
            self._process = subprocess.Popen(
                [sys.executable or "python3", "-I", "-S", str(GUARDIAN_SCRIPT), self._token],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, cwd="/",
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = write_end
        for line in list(self._registered)[told:]:  # what did not fit in the pipe before
            if not self._write(line):
                break
        self._watch_guardian()

    def _prefill(self, write_end: int) -> int:
        """Write the registered lines to a new guardian's pipe before it starts, as many as
        fit without waiting; returns how many."""
        os.set_blocking(write_end, False)
        told = 0
        try:
            for line in self._registered:
                os.write(write_end, (line + "\n").encode(errors="surrogateescape"))
                told += 1
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(write_end, True)
        return told

    def _watch_guardian(self) -> None:
        """Have a thread notice the guardian's death and replace it (not possible without pidfds)."""
        assert self._process is not None
        try:
            self._pidfd = os.pidfd_open(self._process.pid)
        except (AttributeError, OSError):
            self._pidfd = None
            return
        if not self._watching:
            self._watching = True
            threading.Thread(target=self._watch, args=(os.getpid(),), name="kbench-guardian-watch",
                             daemon=True).start()

    def _watch(self, owner_pid: int) -> None:
        while True:
            with self._lock:
                pidfd = self._pidfd
                if pidfd is None or self._owner_pid != owner_pid:
                    self._watching = False
                    return
            with contextlib.suppress(OSError, ValueError):  # closed meanwhile: look at the current one
                select.select([pidfd], [], [])  # readable once the guardian has exited
            with self._lock:
                if self._pidfd == pidfd and self._owner_pid == owner_pid and self._process is not None \
                        and self._process.poll() is not None:
                    self._close()
                    self._ensure_started()

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's pipe (holding it would keep the parent's
        guardian from seeing the parent die); the child starts its own when it needs one."""
        for fd in (self._pipe, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._reset()  # a fresh lock too: another thread may have held it at the fork

    def _close(self) -> None:
        for fd in (self._pipe, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self._process is not None:
            self._process.poll()  # reap a guardian that died
        self._pipe = None
        self._pidfd = None


_guardian = _Guardian()
os.register_at_fork(after_in_child=_guardian.forget_after_fork)


def owner_token() -> str:
    """This kbench process's owner token (children carry it as ``KBENCH_OWNER``)."""
    return _guardian.token


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: ours) with this process's owner token added."""
    result = dict(os.environ if env is None else env)
    result[OWNER_ENV] = _guardian.token
    return result


def start(argv: Argv, *, env: Mapping[str, str] | None = None, **popen_args: Any) -> subprocess.Popen[Any]:
    """Start ``argv`` in its own session, registered with the guardian.

    The caller must end with ``finish(proc)`` (``spawn`` does it): it stops the child's
    group if still running and unregisters it.
    """
    if "start_new_session" in popen_args or "process_group" in popen_args or "preexec_fn" in popen_args:
        raise ValueError("children.start chooses the session and process group itself")
    proc: subprocess.Popen[Any] = subprocess.Popen(
        [os.fspath(a) for a in argv], env=child_environment(env), start_new_session=True,
        preexec_fn=_dies_with_this_thread(), **popen_args,
    )
    _guardian.tell(f"+g {proc.pid}")
    return proc


PR_SET_PDEATHSIG = 1


def _dies_with_this_thread() -> Callable[[], None] | None:
    """What the child runs before its program: SIGKILL when kbench dies (PR_SET_PDEATHSIG),
    the second line of defence when the guardian itself was killed too. The signal comes
    when the *thread* that started the child ends, so only children of the main thread
    (whose end is kbench's) get it; the guardian alone stands for the others."""
    if threading.current_thread() is not threading.main_thread():
        return None
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def set_death_signal() -> None:  # in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # kbench died before the signal was armed
            os._exit(127)

    return set_death_signal


@functools.cache
def _prctl() -> Callable[..., int] | None:
    import ctypes

    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux's libc
        return None
    return prctl


def finish(proc: subprocess.Popen[Any], grace: float = STOP_GRACE_S) -> None:
    """Stop ``proc``'s group if the child still runs (SIGTERM, SIGKILL after ``grace``
    seconds), reap it, and unregister it from the guardian."""
    try:
        if proc.poll() is None:
            stop_group(proc, grace)
    finally:
        _guardian.tell(f"-g {proc.pid}")


def signal_group(proc: subprocess.Popen[Any], sig: int) -> None:
    """Send ``sig`` to every process of ``proc``'s group (nothing if the group is gone)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def stop_group(proc: subprocess.Popen[Any], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the group, SIGKILL it after ``grace`` seconds; returns once the child is reaped
    and no living process is left in its group.

    A Ctrl-C while waiting is not allowed to leave the child behind: it skips the grace time.
    """
    signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.wait(timeout=grace)
    if proc.poll() is None:
        signal_group(proc, signal.SIGKILL)
        _wait_uninterrupted(proc)
    _wait_group_gone(proc.pid, deadline)


GROUP_POLL_S = 0.01


def _wait_group_gone(pgid: int, deadline: float) -> None:
    """Return once no living process is left in group ``pgid`` (its leader already reaped):
    a tool's worker may take a moment longer than its leader to die of the same SIGTERM
    (netserver's per-test child). SIGKILL for those still alive at ``deadline``, or at once
    on Ctrl-C. Zombies do not count: orphans are reaped by init, on its own time."""
    killed = False
    while _living_members(pgid):
        now = time.monotonic()
        if now >= deadline:
            if killed:
                return  # unkillable (stuck in the kernel): nothing more to do from here
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            killed, deadline = True, now + STOP_GRACE_S
        try:
            time.sleep(GROUP_POLL_S)
        except KeyboardInterrupt:
            if not killed:
                deadline = time.monotonic()  # SIGKILL at the next look


def _living_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (none at once when the group is empty)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return []
    living = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = process_stat(entry.name)
        if fields is not None and len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in DEAD_STATES:
            living.append(int(entry.name))
    return living


def _wait_uninterrupted(proc: subprocess.Popen[Any]) -> None:
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:
            continue


@contextlib.contextmanager
def spawn(argv: Argv, *, env: Mapping[str, str] | None = None, **popen_args: Any) -> Iterator[subprocess.Popen[Any]]:
    """``start`` as a context manager: on leaving (normally or by an exception), a child
    still running has its group stopped; the child is reaped and unregistered."""
    proc = start(argv, env=env, **popen_args)
    try:
        yield proc
    finally:
        try:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        finally:
            finish(proc)


def run(
    argv: Argv,
    *,
    timeout: float | None = None,
    input: str | bytes | None = None,
    check: bool = False,
    capture_output: bool = False,
    env: Mapping[str, str] | None = None,
    **popen_args: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` for a child that dies with kbench: its own group, registered with
    the guardian, the whole group killed on timeout (TimeoutExpired) or on any exception."""
    if capture_output:
        popen_args.setdefault("stdout", subprocess.PIPE)
        popen_args.setdefault("stderr", subprocess.PIPE)
    if input is not None:
        popen_args["stdin"] = subprocess.PIPE
    elif "stdin" not in popen_args:
        popen_args["stdin"] = subprocess.DEVNULL
    with spawn(argv, env=env, **popen_args) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            signal_group(proc, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, exc.timeout, output=stdout, stderr=stderr) from None
        except BaseException:
            signal_group(proc, signal.SIGKILL)
            _wait_uninterrupted(proc)
            raise
        code = proc.returncode
    if check and code != 0:
        raise subprocess.CalledProcessError(code, proc.args, stdout, stderr)
    return subprocess.CompletedProcess(proc.args, code, stdout, stderr)


def make_scratch_dir(prefix: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """A new temporary directory, removed by the guardian if kbench dies before
    ``remove_scratch_dir`` is called."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix, dir=directory)).resolve()
    _guardian.tell(f"+d {path}")
    return path


def remove_scratch_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _guardian.tell(f"-d {path}")


def multiprocessing_scratch_dir() -> Path | None:
    """Put the directory the multiprocessing module keeps its files in (``pymp-*``: shared
    memory arenas, sockets; billiard, Celery's copy of it, uses the same one) inside a new
    scratch directory, which the guardian removes if kbench is killed: multiprocessing
    removes its own only at a clean exit, and this one goes right after it. None (and
    nothing made) when multiprocessing had made its directory already."""
    import tempfile
    from multiprocessing import util

    before = tempfile.tempdir
    path = make_scratch_dir("kbench-mp-")
    tempfile.tempdir = str(path)
    try:
        made = Path(util.get_temp_dir())
    finally:
        tempfile.tempdir = before
    if made.parent != path:  # made earlier, elsewhere: not ours to move
        remove_scratch_dir(path)
        return None
    util.Finalize(None, remove_scratch_dir, args=(path,), exitpriority=-101)  # after get_temp_dir's own (-100)
    return path


def guard_network(kind: str, name: str) -> None:
    """Have the guardian delete network namespace (``kind`` "netns", killing what runs in it)
    or link (``kind`` "link", e.g. a bridge) ``name`` if kbench dies before ``release_network``."""
    _guardian.tell(f"+{_NETWORK_KINDS[kind]} {name}")


def release_network(kind: str, name: str) -> None:
    """``name`` was deleted (or is no longer kbench's to delete)."""
    _guardian.tell(f"-{_NETWORK_KINDS[kind]} {name}")


_NETWORK_KINDS = {"netns": "n", "link": "l"}


@contextlib.contextmanager
def scratch_dir(prefix: str, directory: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """``make_scratch_dir`` as a context manager: removed on leaving, or by the guardian."""
    path = make_scratch_dir(prefix, directory)
    try:
        yield path
    finally:
        remove_scratch_dir(path)
