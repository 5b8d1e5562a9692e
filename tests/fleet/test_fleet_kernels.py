"""Kernels travel: a fleet job's kernel (a bundle of Debian's vmlinuz, its config and the few
modules the guest needs) reaches a worker that does not have it, is checked by digest, boots
in qemu there, and is fetched once for two tasks. A kernel path that does not exist, and a
``tree:`` on the submitting machine, are refused at submit (real Redis, PostgreSQL,
``kbench worker`` and qemu)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from kbench.cachefiles import default_cache_dir
from kbench.store import schema
from kbench.targets.vm import resolve_kernel
from tests.fleet.conftest import FleetHarness, write_job
from tests.vm.guest_log import TEST_KERNEL

pytestmark = pytest.mark.vm

JOB = """\
benchmark: syscall.getppid
target: ./kernel
samples: 200
"""


def _bundle(folder: Path) -> tuple[str, str]:
    """A kernel bundle of the test kernel in ``folder``: image, config and only the virtio
    modules the guest boots with; (release, the image's digest)."""
    kernel = resolve_kernel(TEST_KERNEL, default_cache_dir())
    assert kernel.modules_dir is not None and kernel.config is not None
    folder.mkdir(parents=True)
    shutil.copyfile(kernel.vmlinuz, folder / "vmlinuz")
    shutil.copyfile(kernel.config, folder / "config")
    for relative in ("modules.builtin", "modules.order"):
        if (kernel.modules_dir / relative).is_file():
            (folder / "modules").mkdir(exist_ok=True)
            shutil.copyfile(kernel.modules_dir / relative, folder / "modules" / relative)
    for module in [*(kernel.modules_dir / "kernel/drivers/virtio").glob("virtio*.ko*"),
                   *(kernel.modules_dir / "kernel/drivers/char").glob("virtio_console.ko*")]:
        target = folder / "modules" / module.relative_to(kernel.modules_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module, target)
    (folder / "kernel.json").write_text(json.dumps({
        "format": 1, "release": kernel.release, "image": "vmlinuz", "config": "config", "modules_dir": "modules",
        "kbuild_dir": None, "build_id": None, "source": "bzimage", "built_from": None}))
    return kernel.release, hashlib.sha256((folder / "vmlinuz").read_bytes()).hexdigest()


def test_a_kernel_only_the_submitter_has_boots_on_a_worker_fetched_once(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    submitter = tmp_path / "submitter"
    release, digest = _bundle(submitter / "kernel")
    job_file = write_job(submitter / "job.yaml", JOB)
    home = tmp_path / "kern-1"
    (home / "cwd").mkdir(parents=True)
    # the fleet's input cache is the worker's own; qemu's pieces (initramfs) come from kbench's cache
    fleet.start_worker("kern-1", "kern", cwd=home / "cwd",
                       env={"XDG_CACHE_HOME": str(home / "cache"), "KBENCH_CACHE_DIR": str(default_cache_dir())})
    job = fleet.submit(job_file, "--queue", "kern", "--repeat", "2")
    assert fleet.wait_job(job, timeout=600) == "done", fleet.log_tail(fleet.workers["kern-1"])
    tasks = fleet.tasks(job)
    assert [(t["state"], t["machine"]) for t in tasks] == [("done", "kern-1")] * 2
    with fleet.engine.connect() as conn:
        (manifest,) = [row[0] for row in conn.execute(select(schema.fleet_jobs.c.inputs))]
        targets = {row.id: row for row in conn.execute(select(schema.targets))}
        target_of = dict(conn.execute(select(schema.runs.c.id, schema.runs.c.target_id)).all())
    kernel = manifest["kernels"]["./kernel"]
    assert kernel["release"] == release and kernel["image"]["digest"] == digest
    assert sorted(kernel) == ["config", "image", "modules", "release"]
    for task in tasks:
        (run,) = fleet.runs_of(task["id"])
        assert run["status"] == "complete"
        target = targets[target_of[run["id"]]]
        assert target.kind == "vm" and target.kernel_release == release  # the run records the carried kernel
        assert target.details["kernel"]["image_digest"] == digest
        assert target.details["kernel"]["submitted_as"] == "./kernel"
    log = fleet.log_tail(fleet.workers["kern-1"], 10**6)
    assert log.count(f"input {digest} (image): fetched") == 1  # the second task found it in the cache
    assert log.count("kernel ./kernel: bundle") == 2 and log.count(" made (config, image, modules)") == 1
    assert "in this machine's cache" in log
    assert (home / "cache" / "kbench" / "fleet" / "inputs" / digest[:2] / digest).is_file()

    # a comparison of the carried kernel with Debian's: one task, the sides labelled as the job names them
    job_file.write_text(JOB.replace("target: ./kernel", f"target: [./kernel, {TEST_KERNEL}]"))
    out = json.loads(fleet.kbench("fleet", "submit", str(job_file), "--queue", "kern", "--compare", "target",
                                  "--trials", "3", "--json").stdout)
    assert out["kernels"]["./kernel"]["image"]["digest"] == digest
    assert fleet.wait_job(out["job"], timeout=600) == "done", fleet.log_tail(fleet.workers["kern-1"])
    (task,) = fleet.tasks(out["job"])
    assert task["result"]["base_label"] == "./kernel"
    assert task["result"]["new_labels"] == [TEST_KERNEL.removeprefix("deb:")]
    assert fleet.log_tail(fleet.workers["kern-1"], 10**6).count(f"input {digest} (image): fetched") == 1


def test_a_kernel_that_is_not_there_or_a_local_tree_is_refused_at_submit(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    job_file = write_job(tmp_path / "job.yaml", JOB.replace("target: ./kernel", "target: build/bzImage"))
    refused = fleet.kbench("fleet", "submit", str(job_file), "--queue", "kern", check=False)
    assert refused.returncode == 2, refused.stderr
    assert f"target 'build/bzImage': no such file {tmp_path}/build/bzImage" in refused.stderr
    job_file.write_text(JOB.replace("target: ./kernel", "target: tree:linux@HEAD"))
    refused = fleet.kbench("fleet", "submit", str(job_file), "--queue", "kern", check=False)
    assert refused.returncode == 2 and "is a kernel tree on this machine" in refused.stderr
    assert "give tree:URL@REV" in refused.stderr
    job_file.write_text(JOB.replace("target: ./kernel", "target: tree:https://me:secret@git.example.org/l.git@v6.6"))
    refused = fleet.kbench("fleet", "submit", str(job_file), "--queue", "kern", check=False)
    assert refused.returncode == 2 and "tree:https://git.example.org/l.git@v6.6" in refused.stderr
    assert "secret" not in refused.stderr.replace("me:secret@", "")
    assert json.loads(fleet.kbench("fleet", "status", "--json").stdout)["jobs"] == []


def test_a_tree_url_is_cloned_and_built_by_the_worker(fleet: FleetHarness, tmp_path: Path) -> None:
    """``tree:URL@REV`` goes as written: the worker clones the URL into its own cache and hands the
    revision to kbench's kernel build, which here refuses it (a two-file repository is no kernel
    tree: this shows where the build runs without compiling a kernel)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(origin)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (origin / "Makefile").write_text("all:\n")
    subprocess.run([*git, "add", "Makefile"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "not a kernel"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    job_file = write_job(tmp_path / "job.yaml", JOB.replace("./kernel", f"tree:file://{origin}@{sha}"))
    home = tmp_path / "tree-1"
    (home / "cwd").mkdir(parents=True)
    fleet.start_worker("tree-1", "trees", cwd=home / "cwd", env={"XDG_CACHE_HOME": str(home / "cache")})
    job = fleet.submit(job_file, "--queue", "trees")
    assert fleet.wait_job(job) == "failed"
    (task,) = fleet.tasks(job)
    assert "no Makefile and Kconfig at its top (not a kernel source tree)" in task["error"], task["error"]
    (clone,) = (home / "cache" / "kbench" / "kernel-repos").glob("*/.git")
    assert subprocess.run(["git", "-C", str(clone.parent), "cat-file", "-e", f"{sha}^{{commit}}"]).returncode == 0
