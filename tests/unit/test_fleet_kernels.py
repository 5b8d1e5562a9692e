"""Kernels a fleet job carries (``kbench.fleet.kernels``): what travels for a bzImage, a build
tree and a bundle; what is refused at submit; the bundle a worker makes once from the store's
parts, and a part whose bytes are not its digest refused (a real SQLite store)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from sqlalchemy import update

from kbench.fleet.inputs import InputRefused
from kbench.fleet.kernels import bundle, gather_kernels, store_kernels, with_kernels
from kbench.fleet.plan import PlanError
from kbench.jobs import JobInstance, expand_job
from kbench.store import schema
from kbench.store.db import Store
from kbench.targets.vm.bundle import read_bundle

RELEASE = "6.6.0-test"


def _bzimage(path: Path, release: str = RELEASE) -> Path:
    """A file with a bzImage's setup header (HdrS) naming ``release``: what kbench reads of an image."""
    head = bytearray(0x4000)
    head[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", head, 0x20E, 0x1000)
    version = f"{release} (kay@example.org) #1 SMP".encode()
    head[0x1200:0x1200 + len(version)] = version
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(head))
    return path


def _instances(folder: Path, target: str) -> tuple[Path, list[JobInstance]]:
    job = folder / "job.yaml"
    job.write_text(f"benchmark: syscall.getppid\ntarget: {target}\nsamples: 10\n")
    return job, expand_job(job, cpu_count=1)


def _bundle_dir(folder: Path) -> Path:
    top = folder / "kernel"
    _bzimage(top / "vmlinuz")
    (top / "config").write_text("CONFIG_X=y\n")
    module = top / "modules" / "kernel" / "drivers" / "virtio" / "virtio.ko"
    module.parent.mkdir(parents=True)
    module.write_bytes(b"\x7fELF module")
    (top / "modules" / "modules.order").write_text("kernel/drivers/virtio/virtio.ko\n")
    (top / "kernel.json").write_text(json.dumps({
        "format": 1, "release": RELEASE, "image": "vmlinuz", "config": "config", "modules_dir": "modules",
        "kbuild_dir": None, "build_id": None, "source": "bzimage", "built_from": None}))
    return top


def test_what_travels_for_each_kind_of_kernel(tmp_path: Path) -> None:
    _bzimage(tmp_path / "bzImage")
    _bzimage(tmp_path / "linux" / "arch" / "x86" / "boot" / "bzImage")
    (tmp_path / "linux" / ".config").write_text("CONFIG_Y=y\n")
    top = _bundle_dir(tmp_path)
    found = {}
    for target in ("./bzImage", "./linux", "./kernel", str(tmp_path / "bzImage")):
        job, instances = _instances(tmp_path, target)
        (kernel,) = gather_kernels(job, instances, tmp_path)
        found[target] = sorted(kernel.parts), kernel.release
    assert found == {"./bzImage": (["image"], RELEASE), "./linux": (["config", "image"], RELEASE),
                     "./kernel": (["config", "image", "modules"], RELEASE),
                     str(tmp_path / "bzImage"): (["image"], RELEASE)}
    # the modules' archive depends on their bytes only: touched files pack to the same digest
    job, instances = _instances(tmp_path, "./kernel")
    (first,) = gather_kernels(job, instances, tmp_path)
    for path in (top / "modules").rglob("*"):
        os.utime(path, (1, 1))
    (again,) = gather_kernels(job, instances, tmp_path)
    assert again.parts["modules"].digest == first.parts["modules"].digest
    for target in ("local", "deb:6.1.0-56-amd64", "tree:https://git.example.org/linux.git@v6.6"):
        job, instances = _instances(tmp_path, target)
        assert gather_kernels(job, instances, tmp_path) == []


@pytest.mark.parametrize(("target", "said"), [
    ("./missing/bzImage", "no such file"),
    ("./empty", r"neither a kernel bundle \(kernel.json\) nor a kernel build tree"),
    ("./notes.txt", "is not an x86 bzImage"),
    ("tree:linux@HEAD", "is a kernel tree on this machine"),
    ("tree:https://me:tok@git.example.org/l.git@v1", r"give tree:https://git\.example\.org/l\.git@v1"),
])
def test_what_is_refused_at_submit(tmp_path: Path, target: str, said: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a kernel\n" * 100)
    job, instances = _instances(tmp_path, target)
    with pytest.raises(PlanError, match=said):
        gather_kernels(job, instances, tmp_path)


def test_a_worker_makes_the_bundle_once_and_refuses_bytes_that_are_not_the_digest(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'fleet.db'}")
    submitter = tmp_path / "submitter"
    _bundle_dir(submitter)
    job, instances = _instances(submitter, "./kernel")
    manifest = {"kernels": store_kernels(store.engine, gather_kernels(job, instances, tmp_path))}
    cache = tmp_path / "worker"
    (ran,) = with_kernels(store.engine, manifest, instances, cache)
    made = Path(ran.target)
    assert made.parent == cache / "kernels"
    kernel = read_bundle(made, ran.target)  # boots as any bundle: the release, config and modules are there
    assert kernel.release == RELEASE and kernel.config is not None and kernel.modules_dir is not None
    assert (kernel.modules_dir / "kernel/drivers/virtio/virtio.ko").read_bytes() == b"\x7fELF module"
    assert kernel.built_from == {"submitted_as": "./kernel",
                                 "image_digest": manifest["kernels"]["./kernel"]["image"]["digest"]}
    assert bundle(store.engine, "./kernel", manifest["kernels"]["./kernel"], cache) == made  # made once
    # a store whose image bytes are not the digest: a worker without the image refuses the kernel
    digest = manifest["kernels"]["./kernel"]["image"]["digest"]
    with store.engine.begin() as conn:
        chunks = schema.fleet_input_chunks
        conn.execute(update(chunks).where(chunks.c.digest == digest).values(codec="raw", data=b"MZ"))
    with pytest.raises(InputRefused, match=f"kernel ./kernel: files: image: refused: input {digest}"):
        with_kernels(store.engine, manifest, instances, tmp_path / "another-worker")
    assert not (tmp_path / "another-worker" / "kernels").exists()
    store.engine.dispose()
