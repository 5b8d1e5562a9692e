"""Unloading kbench.ko in the shared guest while a run reads, and loading it back for the tests after."""

from __future__ import annotations

from kbench.targets.kmod_sysfs import SYSFS_ROOT
from kbench.targets.vm.session import ExecResult, VmSession
from kbench.targets.vm_target import GUEST_MODULE


def rmmod_while_reading(session: VmSession, run_file: str, out: str) -> ExecResult:
    """``run_file`` read in the background into ``out``, ``rmmod kbench`` a second later; the shell
    prints ``rmmod=RC``, ``cat=RC`` (the reader's) and what the reader got."""
    script = (f"cat {run_file} > {out} 2>&1 & pid=$!; sleep 1; rmmod kbench; echo rmmod=$?; "
              f"wait $pid; echo cat=$?; cat {out}")
    return session.exec(["sh", "-c", script], timeout=180)


def assert_unloaded_under_the_reader(done: ExecResult) -> None:
    """rmmod succeeded, and the reader failed with ENODEV rather than finishing its run."""
    assert "rmmod=0" in done.text, done.text + done.stderr.decode()
    assert "cat=0" not in done.text and "No such device" in done.text, done.text


def load_kbench_again(session: VmSession) -> None:
    """The other tests of this session go on with a loaded kbench.ko (its knobs at their defaults)."""
    if session.exec(["test", "-d", SYSFS_ROOT], timeout=30).rc != 0:
        assert session.exec(["insmod", GUEST_MODULE], timeout=60).rc == 0
