"""The VM cache: lock files do not outlive their use, and ``prune_cache`` removes exactly
what may go (stale locks, half-written files, unfinished entries; old or all entries
when asked) and keeps what a process holds."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from kbench.cachefiles import locked
from kbench.targets.vm.prune import prune_cache


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_lock_file_is_gone_after_use(tmp_path: Path) -> None:
    lock = tmp_path / "kernels" / "6.1.0-999-amd64.lock"
    with locked(lock):
        assert lock.is_file()
    assert not lock.exists()


def _hold_and_count(lock: str, counter: str, rounds: int) -> None:
    for _ in range(rounds):
        with locked(Path(lock)):
            # Inside the lock: nobody else may be here. A second holder would make the
            # read-modify-write below lose counts.
            value = int(Path(counter).read_text())
            time.sleep(0.001)
            Path(counter).write_text(str(value + 1))


def test_removing_lock_files_keeps_mutual_exclusion(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    lock = tmp_path / "shared.lock"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_hold_and_count, args=(str(lock), str(counter), 50)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
        assert worker.exitcode == 0
    assert int(counter.read_text()) == 200
    assert not lock.exists()


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    (cache / "kernels" / "6.1.0-56-amd64").mkdir(parents=True)
    (cache / "kernels" / "6.1.0-56-amd64" / "resolved.json").write_text("{}")
    (cache / "kernels" / "6.1.0-56-amd64" / "debs-abc").mkdir()  # a killed download's scratch
    (cache / "kernels" / "6.1.0-55-amd64").mkdir()  # no marker: a download that never finished
    (cache / "kernels" / "6.1.0-999-amd64.lock").write_text("")
    built = cache / "modules" / "kmod-aaaa"
    built.mkdir(parents=True)
    (built / "kbench.ko").write_bytes(b"x" * 100)
    (built / ".kbench-built").write_text("kbench.ko\n")
    (cache / "modules" / "kmod-bbbb").mkdir()  # no marker: a build that failed or was killed
    (cache / "modules" / "kmod-aaaa.lock").write_text("")
    (cache / "initramfs").mkdir()
    (cache / "initramfs" / "6.1.0-56-amd64-1234.cpio").write_bytes(b"c" * 1000)
    (cache / "initramfs" / f"6.1.0-56-amd64-5678.tmp{_dead_pid()}").write_bytes(b"half")
    (cache / "initramfs" / f"6.1.0-56-amd64-9999.tmp{os.getpid()}").write_bytes(b"being written")
    (cache / "bisect" / "wt" / ".git").mkdir(parents=True)
    (cache / "bisect" / "wt" / ".git" / "index.lock").write_text("")  # git's, not ours
    return cache


def _names(cache: Path, report_paths: list[str]) -> set[str]:
    return {str(Path(p).relative_to(cache)) for p in report_paths}


def test_prune_removes_only_what_is_stale_or_unfinished(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    half_written = next(p.name for p in (cache / "initramfs").glob("*5678*"))
    held = cache / "initramfs" / "6.1.0-56-amd64-1234.lock"
    with open(held, "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a kbench is using that initramfs
        dry = prune_cache(cache, dry_run=True)
        report = prune_cache(cache)
    removed = _names(cache, [item.path for item in report.removed])
    assert removed == _names(cache, [item.path for item in dry.removed])
    assert removed == {
        "kernels/6.1.0-999-amd64.lock", "modules/kmod-aaaa.lock", f"initramfs/{half_written}",
        "kernels/6.1.0-56-amd64/debs-abc", "kernels/6.1.0-55-amd64", "modules/kmod-bbbb",
    }
    assert not (cache / "kernels" / "6.1.0-999-amd64.lock").exists()
    assert not (cache / "modules" / "kmod-bbbb").exists() and not (cache / "kernels" / "6.1.0-55-amd64").exists()
    assert not (cache / "kernels" / "6.1.0-56-amd64" / "debs-abc").exists()
    assert not list((cache / "initramfs").glob("*5678*"))
    # complete entries, the held lock, a file still being written and git's lock stay
    assert (cache / "modules" / "kmod-aaaa" / "kbench.ko").exists()
    assert (cache / "kernels" / "6.1.0-56-amd64" / "resolved.json").exists()
    assert (cache / "initramfs" / "6.1.0-56-amd64-1234.cpio").exists() and held.exists()
    assert list((cache / "initramfs").glob("*9999*"))
    assert (cache / "bisect" / "wt" / ".git" / "index.lock").exists()
    assert report.kept == 3  # the kernel, the module and the initramfs


def test_prune_all_and_older_than(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    prune_cache(cache)
    old = cache / "modules" / "kmod-aaaa"
    long_ago = time.time() - 40 * 86400
    for path in (old, *old.iterdir()):
        os.utime(path, (long_ago, long_ago))
    report = prune_cache(cache, older_than_s=30 * 86400)
    assert [Path(item.path).name for item in report.removed] == ["kmod-aaaa"]
    assert report.removed[0].bytes >= 100
    everything = prune_cache(cache, everything=True)
    assert {Path(item.path).name for item in everything.removed} == {
        "6.1.0-56-amd64", "6.1.0-56-amd64-1234.cpio"}
    assert (cache / "bisect" / "wt" / ".git" / "index.lock").exists()


def test_an_unknown_kernel_release_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    import pytest

    from kbench.targets.vm import KernelResolveError
    from kbench.targets.vm.debian import resolve_debian

    with pytest.raises(KernelResolveError, match="apt knows no package"):
        resolve_debian("6.1.0-999-amd64", tmp_path)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_prune_all_keeps_a_workspace_in_use_and_removes_a_left_one(tmp_path: Path) -> None:
    # A bisection being run (its lock held by another process) and one a killed kbench left behind.
    busy = tmp_path / "bisect" / "5f2c0e7e-0000-4000-8000-000000000001" / "3"
    left = tmp_path / "watch" / "5f2c0e7e-0000-4000-8000-000000000002" / "1"
    for workspace in (busy, left):
        (workspace / "0123456789ab").mkdir(parents=True)
        (workspace / "0123456789ab" / "prog.c").write_text("int main(void) { return 0; }\n")
    (left.with_name("1.lock")).write_text("pid 1 on gone")  # its holder died: nobody holds it
    script = (f"from pathlib import Path; import time; from kbench.workspaces import held\n"
              f"with held(Path({str(busy)!r}), 'bisection 3'):\n    print('in', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, KBENCH_CACHE_DIR=str(tmp_path)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "in"
        report = prune_cache(tmp_path, everything=True)
        assert busy.is_dir() and (busy / "0123456789ab" / "prog.c").is_file()
        assert busy.with_name("3.lock").is_file()
        assert not left.exists() and not left.with_name("1.lock").exists()
        assert {r.path for r in report.removed} >= {str(left), str(left.with_name("1.lock"))}
    finally:
        holder.kill()
        holder.wait()


def test_built_kernels_and_their_workspaces_are_pruned_like_the_rest(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    complete = cache / "built-kernels" / "a"
    complete.mkdir(parents=True)
    (complete / "built.json").write_text("{}")
    (complete / "bzImage").write_bytes(b"x" * 100)
    unfinished = cache / "built-kernels" / "b"  # no marker: killed before it was written
    unfinished.mkdir()
    half = cache / "built-kernels" / f"c.tmp{_dead_pid()}"  # a dead kbench's entry being assembled
    half.mkdir()
    living = cache / "built-kernels" / f"d.tmp{os.getpid()}"  # this process is assembling it
    living.mkdir()
    workspace = cache / "kernel-workspaces" / "linux-0123"
    (workspace / "build").mkdir(parents=True)
    held = cache / "kernel-workspaces" / "linux-4567"
    held.mkdir()
    report = prune_cache(cache)
    removed = {Path(item.path).name: item.why for item in report.removed}
    assert removed == {"b": "an unfinished build", half.name: "an unfinished build"}
    assert complete.is_dir() and workspace.is_dir() and living.is_dir()
    with locked(held.with_name(held.name + ".lock")):
        everything = prune_cache(cache, everything=True)
    gone = {Path(item.path).name for item in everything.removed}
    assert {"a", "linux-0123"} <= gone and "linux-4567" not in gone and living.name not in gone
    assert held.is_dir() and not workspace.exists()
