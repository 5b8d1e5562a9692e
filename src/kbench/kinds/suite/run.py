"""Run a standard suite (hackbench, stress-ng, fio, sysbench, netperf) and return its metrics.

On the local kernel the tool runs as a child of kbench; in a VM target's guest it runs
through the guest agent (``GuestTools``), from the extra initramfs archive that carries
the host's binaries and their libraries (``kbench.targets.vm.tools``). The target's
transport says which (``guest_shell``).
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

import numpy as np

from kbench.contract.benchmark import Benchmark
from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.suites import (
    TCP_TABLES,
    Finished,
    SuiteError,
    ToolFailed,
    ToolHost,
    ToolMissing,
    get_suite,
    port_listening,
    run_suite,
)
from kbench.targets.base import ExecutionFailed, TargetError
from kbench.targets.transport import Transport

if TYPE_CHECKING:
    from kbench.targets.vm.session import VmSession

SUITE_TIMEOUT_FLOOR_S = 600.0
PERF_TOOL = "perf"
HOST_PACKAGES = {PERF_TOOL: "linux-perf"}


GUEST_SERVER_START_TIMEOUT_S = 60.0
GUEST_VERSION_TIMEOUT_S = 30.0
LOOPBACK_EXTRA = "127.0.0.2/8"
DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
             ("stderr", "/proc/self/fd/2"))


def check_host_tools(benchmark: Benchmark) -> tuple[str, ...]:
    """The executables ``benchmark`` runs, each checked to be on this host (TargetError naming its package)."""
    suite = get_suite(benchmark.workload.split(".", 1)[0])
    for tool in suite.tools:
        if shutil.which(tool) is None:
            raise TargetError(f"{ToolMissing(tool, suite.package)}; kbench copies it from this host into the guest")
    return suite.tools


def run_suite_benchmark(benchmark: Benchmark, request: RunRequest, host: ToolHost | None = None) -> Measurement:
    """Run the suite test ``request.iterations`` times; one value per iteration and metric.

    ``host``: where the tool runs (default: this machine)."""
    if request.samples is not None or request.duration_s is not None or request.batch is not None:
        raise BadRequest(
            f"{benchmark.name} is a whole-tool benchmark: use --iterations and its own parameters "
            "(not --samples, --duration or --batch)"
        )
    suite = get_suite(benchmark.workload.split(".", 1)[0])
    timeout = SUITE_TIMEOUT_FLOOR_S
    if suite.duration_param and suite.duration_param in request.params:
        timeout = max(timeout, 2 * float(request.params[suite.duration_param]) + 120)
    counted = None
    monitored = None
    try:
        if request.monitors:  # LKP's monitors, sampled where the tool runs; under perf stat's count if both
            from kbench.kinds.suite.monitoring import MonitoringTools
            from kbench.suites import LocalTools

            host = monitored = MonitoringTools(host if host is not None else LocalTools(), request.monitors)
        if request.counters:
            from kbench.kinds.suite.counting import counting
            from kbench.suites import LocalTools

            host = counted = counting(host if host is not None else LocalTools())
        result = run_suite(benchmark.workload, request.params, iterations=request.iterations, timeout=timeout,
                           host=host)
    except ToolFailed as exc:
        if not exc.exit_code:  # killed by kbench at its timeout, or exit 0 with no numbers in its output
            raise TargetError(str(exc)) from exc
        how = f"killed by signal {-exc.exit_code}" if exc.exit_code < 0 else f"exit status {exc.exit_code}"
        last_line = exc.stderr_tail.splitlines()[-1] if exc.stderr_tail else ""
        raise ExecutionFailed(f"{exc.benchmark} (iteration {exc.iteration + 1}: {exc.command})", how,
                              last_line) from exc
    except SuiteError as exc:
        raise TargetError(str(exc)) from exc
    record = result.to_dict()
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in result.raw().items()}
    header = {
        "format": SUITE_FORMAT,
        "workload": benchmark.workload,
        "params": {key: str(value) for key, value in result.params.items()},
        "command": record["command"],
        "tool_path": record["tool_path"],
        "tool_version": record["tool_version"],
        "package": record["package"],
        "where": record["where"],
        "metrics": record["metrics"],
        "iterations": len(result.iterations),
        "columns": list(columns),
        "n": len(result.iterations),
        "interrupted": result.interrupted,
        "warnings": [],
    }
    if monitored is not None and len(monitored.values) == len(result.iterations):
        for name, (unit, direction, values) in monitored.columns().items():
            columns[name] = np.asarray(values, dtype=np.float64)
            header["metrics"].append({"name": name, "unit": unit, "direction": direction, "monitor": True})
        header["columns"] = list(columns)
        header["monitors"] = dict(request.monitors)
    if counted is not None:
        header["warnings"] = list(counted.problems)
        totals = counted.counters()
        if totals is not None:
            header["counters"] = totals
    return Measurement(
        header=header, columns=columns, interrupted=result.interrupted, stderr=json.dumps(record["iterations"])
    )


_guest_tools: weakref.WeakKeyDictionary[VmSession, GuestTools] = weakref.WeakKeyDictionary()
"""The guest's tool host, set up once per boot."""


def run_suite_on(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """Run a suite's tool on ``target``: here, or in its guest (booted again if it lacks the tool,
    or perf when the run counts)."""
    return run_suite_benchmark(benchmark, request, host=suite_host(target, benchmark, perf=request.counters))


def suite_host(target: Transport, benchmark: Benchmark, *, perf: bool = False) -> ToolHost:
    """Where ``benchmark``'s tool runs on ``target``: this machine, or the target's guest (set up
    once); ``perf``: a guest that has perf too (counters, profiles)."""
    if not target.in_guest:
        from kbench.suites import LocalTools

        return LocalTools()
    return tool_host(target, (*check_host_tools(benchmark), *((PERF_TOOL,) if perf else ())))


def tool_host(target: Transport, tools: tuple[str, ...]) -> ToolHost:
    """Where tools run on ``target``: this machine, or its guest carrying the host's ``tools``
    (booted again with them if it lacks one; set up once per boot)."""
    if not target.in_guest:
        from kbench.suites import LocalTools

        return LocalTools()
    for tool in tools:
        if shutil.which(tool) is None:
            package = f" (Debian package {HOST_PACKAGES[tool]})" if tool in HOST_PACKAGES else ""
            raise TargetError(f"{tool} is not installed on this host{package}; kbench copies it from this host "
                              "into the guest")
    shell = target.guest_shell(tools)
    assert shell is not None
    host = _guest_tools.get(shell.session)
    if host is None:
        host = _guest_tools[shell.session] = GuestTools(shell.session, scratch_root=shell.scratch_root)
        host.set_up()
    return host


class GuestTools:
    """Runs a suite's tool in a VM target's guest through the guest agent."""

    where = "guest"

    def __init__(self, session: VmSession, scratch_root: str = "/tmp") -> None:
        self.session = session
        self.scratch_root = scratch_root  # /tmp (tmpfs) or the mounted scratch disk
        self._servers: dict[str, str] = {}  # executable -> pid in the guest

    @property
    def accel(self) -> str | None:
        """The guest's accelerator (``tcg``, ``kvm``): a profile taken under TCG says so."""
        return self.session.accel

    def set_up(self) -> None:
        """Once per guest, before the first suite run: a second IPv4 address on ``lo``.

        The guest has no network but loopback, and glibc's getaddrinfo with AI_ADDRCONFIG
        (netperf uses it) counts IPv4 as configured only for an address other than
        127.0.0.1: without one, netperf cannot even resolve "127.0.0.1". And the /dev links
        to /proc/self/fd that udev makes on a full system.
        """
        self.session.exec(["ip", "addr", "add", LOOPBACK_EXTRA, "dev", "lo"], timeout=30)
        # devtmpfs has no /dev/fd, /dev/stdout…: udev makes them on a full system, and
        # stress-ng writes its YAML report to /dev/stdout
        links = " ".join(f"[ -e /dev/{name} ] || ln -s {target} /dev/{name};" for name, target in DEV_LINKS)
        self.session.exec(["sh", "-c", links], timeout=30)

    def which(self, tool: str) -> str | None:
        # busybox's sh names its own applets (sh, head, base64) without a path: then its which does
        found = self.session.exec(["sh", "-c", f"command -v {shlex.quote(tool)} | grep / || which {shlex.quote(tool)}"],
                                  timeout=30)
        path = found.text.strip()
        return path if found.ok and path.startswith("/") else None

    def version_output(self, tool_path: str, args: tuple[str, ...]) -> str:
        done = self.session.exec([tool_path, *args], timeout=GUEST_VERSION_TIMEOUT_S, env={"LC_ALL": "C"})
        return done.text + done.stderr.decode(errors="replace")

    @contextmanager
    def _scratch(self, prefix: str) -> Iterator[str]:
        made = self.session.exec(["mktemp", "-d", f"{self.scratch_root}/{prefix}XXXXXX"], timeout=30)
        if not made.ok:
            raise SuiteError(f"cannot make a scratch directory in the guest: {made.stderr.decode(errors='replace')}")
        path = made.text.strip()
        try:
            yield path
        finally:
            self.session.exec(["rm", "-rf", path], timeout=120)

    def scratch_dir(self, prefix: str) -> AbstractContextManager[str]:
        return self._scratch(prefix)

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        done = self.session.exec([executable, *argv[1:]], timeout=timeout, cwd=cwd, env={"LC_ALL": "C"})
        return Finished(
            stdout=done.text,
            stderr=done.stderr.decode(errors="replace"),
            exit_code=None if done.timed_out else done.rc,
            wall_seconds=done.duration_s,
            timed_out=done.timed_out,
        )

    def start_server(self, argv: list[str], *, executable: str, port: int) -> None:
        command = shlex.join([executable, *argv[1:]])
        started = self.session.exec(["sh", "-c", f"{command} </dev/null >/dev/null 2>&1 & echo $!"], timeout=30)
        self._servers[executable] = started.text.strip()
        deadline = time.monotonic() + GUEST_SERVER_START_TIMEOUT_S
        while True:
            tables = self.session.exec(["cat", *TCP_TABLES], timeout=30).text
            if port_listening(tables, "", port):
                return
            alive = self.session.exec(["kill", "-0", self._servers[executable]], timeout=30).ok
            if not alive or time.monotonic() > deadline:
                self.stop_server(executable)
                raise SuiteError(f"{argv[0]} did not start listening on port {port} in the guest")
            time.sleep(0.1)

    def stop_server(self, executable: str) -> None:
        pid = self._servers.pop(executable, None)
        if pid:
            self.session.exec(["kill", pid], timeout=30)
