"""``kbench fleet demo --isolated``: workers in network and mount namespaces of their own that
share nothing with the submitter but the private bridge to Redis and PostgreSQL.

The job's program exists only in the submitter's directory: with ``files: [prog]`` it travels
and every task completes (the program itself checks that it cannot see where it came from);
named by its absolute path instead, nothing carries it and the workers cannot find it. After
kill -9 of the demo, no namespace, veth or bridge of its is left. Without root, the demo says
so and runs plain.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.conftest import alive, descendants, wait_until

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="network and mount namespaces need root and iproute2")

PROGRAM = """#!/bin/sh
# Fails if the worker can see the submitter's directory, where this program was written.
if [ -e "{submitter}/job.yaml" ]; then echo "the worker sees the submitter's files" >&2; exit 3; fi
exit 0
"""


def _demo_env(scratch: Path) -> dict[str, str]:
    skip = ("KBENCH_DB", "KBENCH_BROKER", "KBENCH_FLEET_CONFIG")
    return {**{k: v for k, v in os.environ.items() if k not in skip}, "TMPDIR": str(scratch)}


def _submitter(root: Path, job: str) -> Path:
    """The submitter's directory: ``prog`` and ``job.yaml`` (``job`` with {submitter} filled in)."""
    submitter = root / "submitter"
    submitter.mkdir()
    prog = submitter / "prog"
    prog.write_text(PROGRAM.format(submitter=submitter))
    prog.chmod(0o755)
    (submitter / "job.yaml").write_text(job.format(submitter=submitter))
    return submitter


def _demo(submitter: Path, workdir: Path, scratch: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "fleet", "demo", "--isolated", "--dir", str(workdir),
         "--submit", "job.yaml", *extra],
        capture_output=True, text=True, env=_demo_env(scratch), timeout=600, cwd=submitter,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "isolated: each worker in its own network and mount namespaces" in out.stdout
    return out, json.loads(out.stdout[out.stdout.index("\n{") + 1:])


def _our_network_left(bridge: str) -> list[str]:
    """The demo's namespaces and links still there (their names carry the bridge's tag)."""
    tag = bridge.removeprefix("kbb")
    listed = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    listed += subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return sorted(set(re.findall(rf"\bkb\w*{tag}\w*|kbench-{tag}-\d+", listed)))


def _bridge(stdout: str) -> str:
    found = re.search(r"on bridge (kbb[0-9a-f]+) ", stdout)
    assert found, stdout
    return found.group(1)


@needs_root
def test_a_program_only_the_submitter_has_runs_on_isolated_workers_that_cannot_see_it(
    tmp_path: Path, scratch: Path,
) -> None:
    """The issue's "done means": `cmd: ./prog`, `files: [prog]`, every task complete with its runs."""
    job = "benchmark: command\nfiles: [prog]\nparams:\n  cmd: ./prog\nsamples: 5\nwarmup: 1\n"
    submitter = _submitter(tmp_path, job)
    workdir = tmp_path / "demo"
    out, report = _demo(submitter, workdir, scratch, "--workers", "2")
    assert report["state"] == "done", (report, [p.read_text()[-2000:] for p in workdir.glob("demo-*.log")])
    assert report["counts"]["done"] == 2 and report["counts"]["failed"] == 0
    assert {name: counts["done"] for name, counts in report["machines"].items()} == {"demo-1": 1, "demo-2": 1}
    for log in ("demo-1.log", "demo-2.log"):
        stored = re.findall(r"task \w+: done, runs \[(\d+)\]", (workdir / log).read_text())
        assert len(stored) == 1, (workdir / log).read_text()[-2000:]
    assert not _our_network_left(_bridge(out.stdout))
    assert list(scratch.iterdir()) == []


@needs_root
def test_without_files_the_program_is_not_there_for_an_isolated_worker(tmp_path: Path, scratch: Path) -> None:
    """Named by its absolute path (nothing travels), the submitter's program does not exist on
    the workers: each task fails at once with the shell's "not found"."""
    job = "benchmark: command\nparams:\n  cmd: {submitter}/prog\nsamples: 5\nwarmup: 1\n"
    submitter = _submitter(tmp_path, job)
    workdir = tmp_path / "demo"
    out, report = _demo(submitter, workdir, scratch)
    assert report["state"] == "failed" and report["counts"]["failed"] == 2, report
    for log in ("demo-1.log", "demo-2.log"):
        text = (workdir / log).read_text()
        assert re.search(rf"refused: command '{re.escape(str(submitter))}/prog' failed: exit status 127; "
                         rf".*{re.escape(str(submitter))}/prog: not found", text), text[-2000:]
    assert not _our_network_left(_bridge(out.stdout))


@needs_root
def test_kill_9_of_the_isolated_demo_leaves_no_namespace_veth_or_bridge(tmp_path: Path, scratch: Path) -> None:
    demo = subprocess.Popen([sys.executable, "-m", "kbench.cli", "fleet", "demo", "--isolated", "--workers", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_demo_env(scratch), cwd=tmp_path)
    try:
        assert demo.stdout is not None
        said = b""
        for line in demo.stdout:
            said += line
            if b"Ctrl-C stops the demo" in line:
                break
        bridge = _bridge(said.decode())
        assert len(_our_network_left(bridge)) == 1 + 3 + 3  # the bridge, 3 namespaces, their 3 host veths
        started = descendants(demo.pid)
        os.kill(demo.pid, signal.SIGKILL)
        demo.wait()
        wait_until(lambda: not _our_network_left(bridge), timeout=90, what="the guardian to delete the network")
        wait_until(lambda: not any(alive(pid) for pid in started), timeout=90, what="the workers and servers to die")
        wait_until(lambda: not list(scratch.iterdir()), timeout=90, what="the demo's temp dirs to be removed")
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()


def test_without_root_the_demo_says_so_and_runs_plain(tmp_path: Path, scratch: Path) -> None:
    """As root, in a user namespace of its own (`unshare --user`: not root there, files still
    readable): one line on stderr, then the plain demo runs the job."""
    prefix = ["unshare", "--user"] if os.geteuid() == 0 else []
    if prefix and subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available here")
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 200\nwarmup: 0\n")
    out = subprocess.run([*prefix, sys.executable, "-m", "kbench.cli", "fleet", "demo", "--isolated", "--workers", "1",
                          "--submit", str(job)], capture_output=True, text=True, env=_demo_env(scratch), timeout=600,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[0] == ("kbench fleet demo: --isolated needs namespaces (not root: network and "
                                          "mount namespaces need root); running the plain demo")
    assert "isolated:" not in out.stdout
    report = json.loads(out.stdout[out.stdout.index("\n{") + 1:])
    assert report["state"] == "done" and report["machines"].keys() == {"demo-1"}
