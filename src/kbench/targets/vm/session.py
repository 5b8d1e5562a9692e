"""VmSession: boot a kernel in qemu and run commands in it through kbench-agent."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench import children, interrupts
from kbench.cachefiles import default_cache_dir

from . import accel as accel_mod
from .bootimage import boot_image, image_damage, payload_damage
from .channel import AgentChannel, ChannelClosed, ChannelTimeout, connect_unix
from .console import ConsoleLog
from .errors import GuestRequestError, VmError
from .initramfs import build_initramfs
from .kernel import KernelImage
from .protocol import Kind, Message, Tag
from .qemu import QemuConfig, find_qemu
from .tools import combine_initramfs

#: extra seconds the host waits for a reply beyond the command's own timeout
REPLY_GRACE_S = 30.0
#: a KVM guest that has not said hello after this long is taken as "KVM broken here"
KVM_PROBE_TIMEOUT_S = 15.0
POWEROFF_GRACE_S = 10.0
#: after kernel trouble shows on the console, how long its report may take to finish
TROUBLE_REPORT_WAIT_S = 5.0
#: a closed agent channel: how long to wait for qemu to be seen exiting
QEMU_EXIT_WAIT_S = 2.0
#: after Ctrl-C/SIGTERM is passed to a guest command, how long it may take to stop
INTERRUPT_WAIT_S = 60.0
#: the agent reads a followed file this often (native/agent/agent.c, FOLLOW_PERIOD_MS)
FOLLOW_PERIOD_S = 0.25
#: kernel trouble during a followed command: how long the agent gets to send what it can
FOLLOWED_WAIT_S = 3 * FOLLOW_PERIOD_S


OutputSink = Callable[[bytes], None]
"""Takes the bytes of a followed guest file as they arrive."""


@dataclass(frozen=True)
class Follow:
    """A guest file followed while a command runs: its new bytes go to ``sink`` in order."""

    path: str
    sink: OutputSink


@dataclass(frozen=True)
class ExecResult:
    rc: int  # exit status, or -N if killed by signal N
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


class VmSession:
    """One booted guest. Use as a context manager; ``close()`` powers it off.

    The console (ttyS0) is written to ``console_log`` (default: a file in the
    session's temporary directory, kept in memory after close, see ``console_text``).
    It is watched during every guest operation, boot included: a panic, oops, BUG,
    WARNING, soft lockup, stall or hung task stops the guest and raises VmError with
    the kernel's report. qemu and the temporary directory die with kbench (see
    ``kbench.children``), even when kbench is killed.
    ``accel`` is "auto" (KVM if it works on this host, remembered in cache_dir; else
    TCG), "kvm" or "tcg"; the accelerator used is in ``self.accel`` and why in
    ``self.accel_reason``; under TCG, ``self.tcg_thread`` says whether the vCPUs had a host
    thread each ("multi") or took turns in one ("single", older qemu: see accel.tcg_threading).
    ``initramfs_extra``: cpio archives appended to the initramfs
    (the kernel unpacks them after it, e.g. the suite tools of ``build_tools_cpio``).
    ``scratch_disk_mb``: a sparse raw file of that size in the session's temporary
    directory becomes a virtio-blk disk of the guest (serial ``kbench-scratch``; the
    guest needs the virtio_blk module, see ``VmTarget``), removed with the session.
    """

    def __init__(
        self,
        kernel: KernelImage,
        initramfs_files: Mapping[str, Path] | None = None,
        *,
        cmdline_extra: str = "",
        memory_mb: int = 1024,
        cpus: int = 2,
        accel: str = "auto",
        boot_timeout: float = 60.0,
        console_log: Path | None = None,
        cache_dir: Path | None = None,
        initramfs: Path | None = None,
        extra_modules: Sequence[str] = (),
        kvm_probe_timeout: float = KVM_PROBE_TIMEOUT_S,
        cpu: str | None = None,
        initramfs_extra: Sequence[Path] = (),
        scratch_disk_mb: int = 0,
        qemu_plugin: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.qemu_plugin = qemu_plugin  # a TCG plugin (``-plugin`` value), loaded when the guest runs under TCG
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.cmdline_extra = cmdline_extra
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.cpu = cpu
        self.boot_timeout = boot_timeout
        self.accel = ""
        self.accel_reason = ""
        self.tcg_thread = ""  # under TCG: "single" or "multi" (accel.tcg_threading), why in tcg_thread_reason
        self.tcg_thread_reason = ""
        self.boot_seconds = 0.0
        self.guest_release = ""
        self.guest_uptime_at_hello_s = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._chan: AgentChannel | None = None
        self._closed = False
        self._following = False  # an exec with a followed file is in flight
        self._stopped_because = ""  # why the guest was stopped (kernel trouble), if it was
        self._stopped_report = ""  # and what its console said then
        self._tmp = children.make_scratch_dir("kbench-vm-")
        self._user_console = console_log is not None
        self.console_log = Path(console_log) if console_log is not None else self._tmp / "console.log"
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        self.console = ConsoleLog(self.console_log)
        self._qemu_log = self._tmp / "qemu.log"
        self.scratch_disk: Path | None = None
        if scratch_disk_mb > 0:  # sparse: host space is taken only as the guest writes
            self.scratch_disk = self._tmp / "scratch.img"
            with open(self.scratch_disk, "wb") as disk:
                disk.truncate(scratch_disk_mb << 20)
        self._finalizer = weakref.finalize(self, VmSession._cleanup, None, self._tmp)
        try:
            self.qemu = find_qemu()
            base = initramfs or build_initramfs(
                kernel, initramfs_files or {}, self.cache_dir, extra_modules=extra_modules
            )
            self.initramfs = combine_initramfs([base, *initramfs_extra], self.cache_dir)
            self.boot_image = boot_image(kernel.vmlinuz, self.cache_dir)
            if self.boot_image == kernel.vmlinuz and (damage := payload_damage(kernel.vmlinuz.read_bytes())):
                raise VmError(f"kernel image {kernel.vmlinuz} is damaged: {damage}; not booted")
            self._start(accel, kvm_probe_timeout)
        except BaseException:
            self.close()
            raise

    # ---- boot ------------------------------------------------------------

    def _start(self, requested: str, kvm_probe_timeout: float) -> None:
        choice = accel_mod.choose(requested, self.cache_dir, self.qemu)
        self.accel_reason = choice.reason
        if not choice.needs_probe:
            self._boot(choice.accel, self.boot_timeout)
            return
        try:
            self._boot("kvm", min(kvm_probe_timeout, self.boot_timeout))
        except VmError as e:
            if self.console.panic():
                raise  # the kernel itself is broken: TCG would not help
            detail = e.reason.splitlines()[0]
            accel_mod.remember(self.cache_dir, self.qemu, False, detail)
            self._stop_qemu(graceful=False)
            self.accel_reason = f"KVM attempt failed ({detail}); fell back to TCG"
            self._boot("tcg", self.boot_timeout)
        else:
            accel_mod.remember(self.cache_dir, self.qemu, True, "guest booted")
            self.accel_reason = "KVM booted a guest (first attempt on this host and qemu)"

    def _boot(self, accel: str, timeout: float) -> None:
        sock_path = self._tmp / "agent.sock"
        if sock_path.exists():
            sock_path.unlink()
        threading = accel_mod.tcg_threading(self.qemu) if accel == "tcg" else None
        self.tcg_thread = threading.thread if threading else ""
        self.tcg_thread_reason = threading.reason if threading else ""
        cfg = QemuConfig(
            qemu=self.qemu,
            kernel=self.boot_image,
            initrd=self.initramfs,
            console_log=self.console_log,
            agent_socket=sock_path,
            accel=accel,
            tcg_thread=self.tcg_thread or "multi",
            memory_mb=self.memory_mb,
            cpus=self.cpus,
            cmdline_extra=self.cmdline_extra,
            cpu=self.cpu,
            scratch_disk=self.scratch_disk,
            plugin=self.qemu_plugin,
        )
        self.accel = accel
        self.qemu_argv = cfg.argv()
        self.console_log.write_bytes(b"")
        self.console = ConsoleLog(self.console_log)
        t0 = time.monotonic()
        deadline = t0 + timeout
        with open(self._qemu_log, "wb") as qlog:
            self._proc = children.start(
                self.qemu_argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT
            )
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, VmSession._cleanup, self._proc, self._tmp)
        what = f"the guest agent's hello ({accel}, boot timeout {timeout:.0f} s)"
        try:
            sock = connect_unix(str(sock_path), self._check, deadline)
            self._chan = AgentChannel(sock)
            hello = self._chan.recv(self._check, deadline)
        except ChannelTimeout:
            self._stop_qemu(graceful=False)
            tail = self.console.tail()
            raise VmError(
                f"guest did not boot: no hello from kbench-agent within {timeout:.0f} s "
                f"({accel}; hang or very slow boot)" + ("" if tail.strip() else self._silent_boot_failure()),
                tail,
            ) from None
        except ChannelClosed as e:
            # qemu closes its end of the channel while it exits, a moment before it can be
            # reaped: wait for that moment so that the error says qemu exited, and how.
            if self._proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=QEMU_EXIT_WAIT_S)
            self._check()
            raise VmError(f"guest agent connection lost while waiting for {what}: {e}", self.console.tail()) from None
        if hello.kind != Kind.HELLO:
            raise VmError(f"unexpected first message {hello.kind:#x} from the guest agent", self.console.tail())
        self.boot_seconds = time.monotonic() - t0
        self.guest_release = hello.get_str(Tag.RELEASE, "") or ""
        self.guest_uptime_at_hello_s = hello.get_int(Tag.UPTIME_MS, 0) / 1000

    def _check(self) -> None:
        """Raises VmError if qemu exited or the guest kernel reported trouble."""
        proc = self._proc
        if proc is None:
            raise VmError(self._stopped_because or "the VM is not running", self._stopped_report)
        self.console.refresh()
        panic = self.console.panic()
        if panic:
            # let the trace reach the console (panic=-1 + -no-reboot make qemu exit)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            self._stop_qemu(graceful=False)
            self._stopped_because, self._stopped_report = f"guest kernel panic: {panic}", self.console.tail()
            raise VmError(self._stopped_because, self._stopped_report)
        trouble = self.console.new_trouble()
        if trouble:
            self._wait_for_report(proc)
            if self._following:
                self._take_followed(proc)
            self._stop_qemu(graceful=False)
            self._stopped_because = f"the guest kernel reported trouble, the VM was stopped: {trouble}"
            self._stopped_report = self.console.report(trouble)
            raise VmError(self._stopped_because, self._stopped_report)
        rc = proc.poll()
        if rc is not None:
            qlog = self._qemu_log.read_text(errors="replace").strip() if self._qemu_log.exists() else ""
            msg = f"qemu exited with status {rc}"
            if qlog:
                msg += ": " + " | ".join(qlog.splitlines()[-5:])
            tail = self.console.tail()
            if not tail.strip() and not self.boot_seconds:
                msg += self._silent_boot_failure()
            raise VmError(msg, tail)

    def _silent_boot_failure(self) -> str:
        """Why qemu may have exited before the guest printed a line (with -no-reboot, a
        kernel that faults before its console is up makes qemu exit, status 0)."""
        damage = image_damage(self.kernel.vmlinuz)
        why = f": {self.kernel.vmlinuz} looks damaged, {damage}" if damage else ""
        return f"; the guest printed nothing on its console: the kernel did not start{why}"

    def _take_followed(self, proc: subprocess.Popen[bytes]) -> None:
        """Kernel trouble during a command whose file is followed (a run's samples): let the
        agent send what the file holds now (it reads it every FOLLOW_PERIOD_S) before the
        guest is stopped; the frames wait in the channel for ``_recv_reply``."""
        deadline = time.monotonic() + FOLLOWED_WAIT_S
        while time.monotonic() < deadline and proc.poll() is None and self._chan is not None:
            self._chan.pull()
            time.sleep(0.05)

    def _wait_for_report(self, proc: subprocess.Popen[bytes]) -> None:
        """Give the kernel's report (registers, call trace) time to reach the console."""
        deadline = time.monotonic() + TROUBLE_REPORT_WAIT_S
        size = -1
        while time.monotonic() < deadline and proc.poll() is None and not self.console.trace_finished():
            time.sleep(0.3)
            now = len(self.console.text())
            if now == size:
                return  # quiet for a moment: the report is out
            size = now

    # ---- requests --------------------------------------------------------

    def _request(self, msg: Message, reply_timeout: float, on_output: OutputSink | None = None) -> Message:
        """Send ``msg`` and wait at most ``reply_timeout`` seconds for its reply; ``OUTPUT``
        frames that come first (a followed file, see ``exec``) go to ``on_output``.

        Ctrl-C or SIGTERM at any moment after the frame went out is settled before it is
        raised: a command gets the signal, and the reply is taken, so that the channel is
        ready for the next request (fetching what was measured). An interrupt while
        settling, a second interrupt of the process, or a guest that does not answer in
        time stops the guest instead (later requests fail at once): nothing waits on it then.
        """
        if self._closed or self._chan is None:
            # Every later request says why, with the same report: a caller's clean-up
            # request may be the error that reaches the user.
            raise VmError(self._stopped_because or "the VM session is closed", self._stopped_report)
        self._check()
        deadline = time.monotonic() + reply_timeout
        try:
            try:
                with interrupts.deferred():  # half a frame sent would leave the channel unusable
                    self._chan.send(msg, self._check, deadline)
                reply = self._recv_reply(deadline, on_output)
            except KeyboardInterrupt:
                self._settle_interrupted(msg, on_output)
                raise
            self._check()
        except ChannelTimeout:
            # A reply that comes later would be taken for the next request's: the guest goes.
            self._abandon(f"guest agent silent for {reply_timeout:.0f} s (guest hung?)")
            raise VmError(self._stopped_because, self._stopped_report) from None
        except ChannelClosed as e:
            # qemu closes its end of the channel while it exits, a moment before it can be
            # reaped: wait for that moment so that the error says qemu exited, and how.
            if self._proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=QEMU_EXIT_WAIT_S)
            self._check()
            raise VmError(f"lost the guest agent: {e}", self.console.tail()) from None
        err = reply.get_str(Tag.ERROR)
        if err is not None:
            raise GuestRequestError(err)
        return reply

    def _recv_reply(self, deadline: float, on_output: OutputSink | None) -> Message:
        """The reply to the request in flight; the ``OUTPUT`` frames before it go to ``on_output``."""
        chan = self._chan  # kept: stopping a guest that died drops the session's reference
        assert chan is not None
        while True:
            try:
                reply = chan.recv(self._check, deadline)
            except (VmError, ChannelClosed):
                self._deliver_buffered_output(chan, on_output)  # what the guest sent before it died
                raise
            if reply.kind != Kind.OUTPUT:
                return reply
            if on_output is not None:
                with interrupts.deferred():  # a chunk half written would shift every later row
                    on_output(reply.get(Tag.DATA) or b"")

    def _deliver_buffered_output(self, chan: AgentChannel, on_output: OutputSink | None) -> None:
        """``OUTPUT`` frames already received from a guest that just died, to ``on_output``."""
        if on_output is None:
            return
        for frame in chan.received_frames():
            if frame.kind == Kind.OUTPUT:
                with interrupts.deferred():
                    on_output(frame.get(Tag.DATA) or b"")

    def _settle_interrupted(self, msg: Message, on_output: OutputSink | None) -> None:
        """Ctrl-C or SIGTERM while a request was in flight: pass it to a guest command, and
        take its reply, so that the channel is ready for the next request (e.g. fetching
        the samples already taken). A second interrupt, or no reply within
        INTERRUPT_WAIT_S, stops the guest: kbench does not wait on it any longer."""
        if self._chan is None:
            return
        if interrupts.count() > 1:
            self._abandon("kbench was interrupted again while the guest was busy")
            return
        deadline = time.monotonic() + INTERRUPT_WAIT_S
        try:
            if msg.kind == Kind.EXEC:
                sig = signal.SIGTERM if interrupts.received() == signal.SIGTERM else signal.SIGINT
                self._chan.send(Message(Kind.SIGNAL).add(Tag.SIGNAL, int(sig)), self._check, deadline)
            self._recv_reply(deadline, on_output)
        except KeyboardInterrupt:
            self._abandon("kbench was interrupted again while the guest was stopping a command")
        except (ChannelTimeout, ChannelClosed, VmError):
            self._abandon(f"the guest did not answer within {INTERRUPT_WAIT_S:.0f} s of an interrupt")

    def _abandon(self, why: str) -> None:
        """Stop the guest now (qemu killed); every later request raises VmError saying ``why``."""
        self.console.refresh()
        self._stopped_because = f"{why}; the VM was stopped"
        self._stopped_report = self.console.tail()
        self._stop_qemu(graceful=False)

    def exec(
        self,
        argv_or_sh: Sequence[str] | str,
        timeout: float = 60.0,
        stdin: bytes = b"",
        uid: int | None = None,
        *,
        gid: int | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        follow: Follow | None = None,
    ) -> ExecResult:
        """Runs a command in the guest. A string is run with ``/bin/sh -c``.

        ``timeout`` (seconds) is enforced in the guest (the process group is killed and
        ``timed_out`` set); the host waits REPLY_GRACE_S more for the reply, never longer.
        ``uid``/``gid`` run it as another user (gid defaults to uid). ``follow``: while the
        command runs, what is appended to a guest file reaches ``follow.sink`` as it comes
        (read every FOLLOW_PERIOD_S by the agent, and once more after the command ended; the
        file may appear after the command started). What the guest sent before it died (an
        oops: it gets FOLLOWED_WAIT_S to send it; a dead qemu) is delivered before the
        VmError is raised.
        """
        argv = ["/bin/sh", "-c", argv_or_sh] if isinstance(argv_or_sh, str) else list(argv_or_sh)
        if not argv:
            raise ValueError("exec: empty argv")
        msg = Message(Kind.EXEC)
        for a in argv:
            msg.add(Tag.ARG, a)
        if stdin:
            msg.add(Tag.STDIN, stdin)
        msg.add(Tag.TIMEOUT_MS, int(timeout * 1000))
        if follow is not None:
            msg.add(Tag.FOLLOW, follow.path)
        if uid is not None:
            msg.add(Tag.UID, uid)
        if gid is not None:
            msg.add(Tag.GID, gid)
        if cwd is not None:
            msg.add(Tag.CWD, cwd)
        for k, v in (env or {}).items():
            msg.add(Tag.ENV, f"{k}={v}")
        t0 = time.monotonic()
        self._following = follow is not None
        try:
            reply = self._request(msg, timeout + REPLY_GRACE_S, None if follow is None else follow.sink)
        finally:
            self._following = False
        return ExecResult(
            rc=reply.get_int(Tag.RC, -1),
            stdout=reply.get(Tag.STDOUT) or b"",
            stderr=reply.get(Tag.STDERR) or b"",
            timed_out=bool(reply.get_int(Tag.TIMED_OUT, 0)),
            duration_s=time.monotonic() - t0,
        )

    def read_file(self, path: str, timeout: float = 120.0) -> bytes:
        reply = self._request(Message(Kind.READ_FILE).add(Tag.PATH, path), timeout)
        return reply.get(Tag.DATA) or b""

    def write_file(self, path: str, data: bytes, mode: int = 0o644, timeout: float = 120.0) -> None:
        msg = Message(Kind.WRITE_FILE).add(Tag.PATH, path).add(Tag.DATA, data).add(Tag.MODE, mode)
        self._request(msg, timeout)

    def dmesg(self) -> str:
        return self.exec(["dmesg"], timeout=30).text

    def console_text(self) -> str:
        return self.console.text()

    def console_problems(self) -> list[str]:
        """Panic/oops/BUG/WARNING/lockup lines seen on the console so far."""
        return self.console.problems()

    # ---- shutdown ----------------------------------------------------------

    def _stop_qemu(self, graceful: bool) -> None:
        proc = self._proc
        powered_off = False
        if self._chan is not None:
            if graceful and proc is not None and proc.poll() is None:
                try:
                    self._chan.send(Message(Kind.POWEROFF), lambda: None, time.monotonic() + 5)
                    self._chan.recv(lambda: None, time.monotonic() + 5)
                    powered_off = True
                except (ChannelTimeout, ChannelClosed, OSError, ValueError):
                    pass
            self._chan.close()
            self._chan = None
        if proc is None:
            return
        if powered_off:  # a guest that never answered (still booting, hung) is not waited for
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=POWEROFF_GRACE_S)
        children.finish(proc)
        self._proc = None

    def close(self) -> None:
        """Powers the guest off (kills qemu after a grace period); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._stop_qemu(graceful=True)
        finally:
            self.console.freeze()
            self._finalizer.detach()
            children.remove_scratch_dir(self._tmp)

    @staticmethod
    def _cleanup(proc: subprocess.Popen[bytes] | None, tmp: Path) -> None:
        if proc is not None:
            children.signal_group(proc, signal.SIGKILL)
            children.finish(proc)
        children.remove_scratch_dir(tmp)

    def __enter__(self) -> VmSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running"
        return f"<VmSession {self.kernel.release} {self.accel} {state}>"
