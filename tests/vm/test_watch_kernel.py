"""``kbench watch --kernel-from-build``: each commit's kernel built, boot-checked and booted for its runs.

The generated repository stands for a kernel tree, as in test_bisect_kernel.py: a commit's
``build.sh`` "builds" by copying the Debian test kernel to ``arch/x86/boot/bzImage`` and
linking its modules as ``mods`` (virtio_pci and virtio_console are modules there); commit
2's build fails like a compiler. The job measures ``syscall.getppid`` twice per commit,
each run in a fresh boot of that commit's kernel. Every kernel is the same, so the watch
must find no regression; what is checked is that each run is stored with its commit, on
the VM target, and that the failed build is recorded with its error line.

Wall time: 3 boot checks and 6 runs of ~5 s boots under TCG: about a minute.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.targets.vm import KernelImage
from tests.vm.git_repo import git, new_repo

pytestmark = pytest.mark.vm

BUILD = """\
#!/bin/sh
# revision {k}
set -e
mkdir -p arch/x86/boot
{make}
ln -sfn {modules} mods
"""


def _copy(vm_kernel: KernelImage) -> str:
    """A build step that "builds" the Debian test kernel."""
    return f"cp {shlex.quote(str(vm_kernel.vmlinuz))} arch/x86/boot/bzImage"


def _kernel_repo(tmp_path: Path, vm_kernel: KernelImage, makes: list[str]) -> tuple[Path, list[str]]:
    """The repository standing for a kernel tree: commit k's build.sh runs ``makes[k]``; its commits, oldest first."""
    assert vm_kernel.modules_dir is not None
    repo = tmp_path / "linux"
    repo.mkdir()
    new_repo(repo)
    shas = []
    for k, make in enumerate(makes):
        (repo / "build.sh").write_text(BUILD.format(k=k, make=make, modules=shlex.quote(str(vm_kernel.modules_dir))))
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"step {k}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def test_a_kernel_tree_is_watched_one_boot_per_run(tmp_path: Path, vm_kernel: KernelImage) -> None:
    copy = _copy(vm_kernel)
    fails = "echo \"kernel/sys.c:951:9: error: 'pid' undeclared\" >&2; exit 2"
    repo, shas = _kernel_repo(tmp_path, vm_kernel, [copy, copy, fails, copy])
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 2000\niterations: 2\n")
    db = tmp_path / "k.db"
    proc = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "watch", str(repo), "--build", "sh build.sh", "--job", str(job),
         "--kernel-from-build", "arch/x86/boot/bzImage", "--kernel-modules", "mods", "--boot-timeout", "90",
         "--from", shas[0], "--once", "--json", "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=1200, env={**os.environ, "KBENCH_DB": str(db)},
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    states = {c["sha"]: c for c in result["commits"]}
    assert [states[sha]["state"] for sha in shas] == ["measured", "measured", "build-failed", "measured"]
    assert states[shas[2]]["error"] == "build command: exit 2: kernel/sys.c:951:9: error: 'pid' undeclared"
    assert result["regressions"] == []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute('select runs.id, runs."commit", runs.label, runs.benchmark, runs.status, targets.kind, '
                            "runs.tags from runs join targets on runs.target_id = targets.id").fetchall()
    measured = [r for r in rows if r[1] is not None]  # the job's runs carry their commit (boot checks store none)
    assert all("watch:1" in json.loads(r[6]) for r in measured)
    assert {(r[2], r[3], r[4], r[5]) for r in measured} == {("main", "syscall.getppid", "complete", "vm")}
    for sha in (shas[0], shas[1], shas[3]):
        assert sorted(states[sha]["run_ids"]) == sorted(r[0] for r in measured if r[1] == sha)
        assert len(states[sha]["run_ids"]) == 2


@pytest.mark.soak
def test_two_builds_of_one_kernel_compared_side_by_side_are_no_regression(
    tmp_path: Path, vm_kernel: KernelImage,
) -> None:
    """The confirmation of a kernel watch: trials of two kernels, one boot each, in rounds; the same
    kernel twice must not be called a regression (at most alpha/2 of the time by design)."""
    from kbench.jobs import expand_job
    from kbench.store.db import Store
    from kbench.watch.kernel import KernelMeasurer

    repo, shas = _kernel_repo(tmp_path, vm_kernel, [_copy(vm_kernel)] * 2)
    (instance,) = expand_job("benchmark: syscall.getppid\nsamples: 2000\n", cpu_count=2)
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    measurer = KernelMeasurer(store, repo, "sh build.sh", instance, tmp_path / "work", image="arch/x86/boot/bzImage",
                              modules="mods", boot_timeout=90.0, tags=("watch:1",))
    try:
        found = measurer.compare(shas[0], shas[1], instance, tags=(), seed=0)
    finally:
        measurer.close()
    assert not isinstance(found, str), found
    assert found.word != "regression" and found.blocks >= 5
    assert found.base.slots == found.new.slots == found.blocks
    runs = store.list_runs(limit=1000)
    assert len([r for r in runs if "watch:1" in r["tags"]]) == 2 * found.blocks
