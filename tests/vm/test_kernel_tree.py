"""Kernels kbench builds from source (Debian's linux-source-6.1 as a git repository), booted
and measured: `kbench kernel build`, `tree:REPO@REV` kernels in run and compare, the
cache of built kernels, the config check and a compile error. One full build per session
(``tree_kernel``), cached across sessions; the other revisions build incrementally in the
same workspace."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbench.cachefiles import default_cache_dir
from kbench.kernels.build import TREE_DIGESTS, workspace_for
from kbench.kernels.kconfig import parse_config
from kbench.kernels.recipe import make_recipe
from kbench.kernels.requirements import DEFAULT_FEATURES
from kbench.kernels.source import identify
from kbench.targets.vm.kernel import bzimage_release
from tests.vm.kernel_tree import broken_line, git, linux_repo

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]


def kbench(*args: str, db: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **({"KBENCH_DB": str(db)} if db else {}))
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                          timeout=3000)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="session")
def repo() -> Path:
    return linux_repo()


@pytest.fixture(scope="session")
def tree_kernel(repo: Path) -> dict[str, Any]:
    """``kbench kernel build REPO --rev main~1``: the one full build of the session (found in the
    cache when an earlier session built it)."""
    built: dict[str, Any] = json.loads(kbench("kernel", "build", str(repo), "--rev", "main~1", "--json").stdout)
    return built


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_built_kernel_is_what_kbuild_made_and_the_same_revision_again_comes_from_the_cache(
        repo: Path, tree_kernel: dict[str, Any]) -> None:
    build_dir = Path(tree_kernel["build_dir"])
    assert tree_kernel["commit"] == git(repo, "rev-parse", "main~1")
    assert tree_kernel["tree_id"] == git(repo, "rev-parse", "main~1^{tree}")
    again = json.loads(kbench("kernel", "build", str(repo), "--rev", "main~1", "--json").stdout)
    assert again["from_cache"] is True and again["key"] == tree_kernel["key"]
    assert again["config_digest"] == tree_kernel["config_digest"] == sha256(Path(again["config"]))
    # The entry's files are kbuild's own: the release it wrote, the bzImage's setup header, the .config
    # kbuild keeps in the build directory (one recipe: every revision's is the same)
    assert bzimage_release(Path(again["image"])) == again["release"]
    kbuild = Path(again["kbuild_dir"])
    assert (kbuild / "include" / "config" / "kernel.release").read_text().strip() == again["release"]
    assert sha256(build_dir / ".config") == again["config_digest"]
    config = parse_config(Path(again["config"]).read_text())
    for option in ("CONFIG_64BIT", "CONFIG_VIRTIO_CONSOLE", "CONFIG_MODULE_UNLOAD", "CONFIG_KPROBES",
                   "CONFIG_PVH", "CONFIG_DEVTMPFS_MOUNT", "CONFIG_FTRACE_SYSCALLS"):
        assert config.get(option) == "y", option
    assert config.get("CONFIG_FUNCTION_TRACER") is None  # not asked: only a trace run needs it
    assert (Path(again["modules_dir"]) / "modules.builtin").is_file()
    # the user's checkout was not touched: its HEAD, index and working tree are as they were
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_a_run_on_a_tree_kernel_carries_its_kernel(repo: Path, tree_kernel: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    run = json.loads(kbench("run", "syscall.getppid", "--kernel", f"tree:{repo}@main~1", "--samples", "20000",
                            "--json", db=db).stdout)
    kernel = run["kernel"]
    assert kernel["config_digest"] == tree_kernel["config_digest"] == sha256(Path(tree_kernel["config"]))
    assert kernel["commit"] == git(repo, "rev-parse", "main~1") and kernel["release"] == tree_kernel["release"]
    assert run["target"]["details"]["kbench_ko"] == "loaded"  # built against the entry's kit
    assert run["target"]["build_id"] == tree_kernel["build_id"] and len(tree_kernel["build_id"]) == 40
    shown = kbench("show", str(run["run_id"]), db=db).stdout
    assert f"config {tree_kernel['config_digest'][:12]}" in shown and f"commit {kernel['commit'][:12]}" in shown
    assert json.loads(kbench("show", str(run["run_id"]), "--json", db=db).stdout)["kernel"] == kernel


def test_comparing_two_revisions_finds_the_planted_slowdown(
        repo: Path, tree_kernel: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    proc = kbench("compare", "--kernel", f"tree:{repo}@main~1", "--kernel", f"tree:{repo}@main",
                  "syscall.getppid", "--json", db=db)
    report = json.loads(proc.stdout)
    verdicts = {m["metric"]: m["verdict"] for m in report["metrics"]}
    assert verdicts["syscall.getppid.latency"] == "regression", proc.stdout
    assert "kernel_configs" not in report  # one recipe, one .config for both revisions
    # The release table of the two trees: both have release 6.1.192+; their commits tell them apart
    releases = json.loads(kbench("report", "releases", "syscall.getppid", "--kernel", f"tree:{repo}@main~1",
                                 "--kernel", f"tree:{repo}@main", "--format", "json", db=db).stdout)
    (row,) = [r for r in releases["rows"] if r["metric"] == "syscall.getppid.latency"]
    values = {value["kernel"]: value for value in row["kernels"] if value is not None}
    assert values[f"tree:{repo}@main~1"]["relative"] == 100.0
    assert values[f"tree:{repo}@main"]["relative"] > 100.0
    head = json.loads(kbench("kernel", "build", str(repo), "--rev", "main", "--json").stdout)
    assert head["from_cache"] is True and head["config_digest"] == tree_kernel["config_digest"]
    assert head["tree_id"] != tree_kernel["tree_id"] and head["build_dir"] == tree_kernel["build_dir"]


def test_an_option_that_does_not_survive_is_named_with_why(repo: Path, tmp_path: Path) -> None:
    fragment = tmp_path / "no-block.config"
    fragment.write_text("# CONFIG_BLOCK is not set\n")
    proc = kbench("kernel", "build", str(repo), "--rev", "main", "--fragment", str(fragment), check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("kbench: error: 1 config option asked for did not survive make olddefconfig: ")
    assert "CONFIG_VIRTIO_BLK=y (from kbench's options (boot, kbench.ko)) is not set: depends on BLK_DEV (not set: " \
           "CONFIG_BLK_DEV); CONFIG_BLK_DEV depends on BLOCK (not set: CONFIG_BLOCK)" in proc.stderr
    # the reference: the .config make olddefconfig wrote in that recipe's workspace
    recipe = make_recipe("minimal", [fragment], DEFAULT_FEATURES)
    workspace = workspace_for(default_cache_dir(), identify(repo, "main", default_cache_dir() / TREE_DIGESTS), recipe)
    written = parse_config((workspace / "build" / ".config").read_text())
    assert written.get("CONFIG_BLOCK") is None and written.get("CONFIG_VIRTIO_BLK") is None
    assert written.get("CONFIG_VIRTIO_CONSOLE") == "y"


def test_a_compile_error_is_shown_with_its_file_and_line_and_loses_nothing(
        repo: Path, tree_kernel: dict[str, Any]) -> None:
    proc = kbench("kernel", "build", str(repo), "--rev", "broken", check=False)
    assert proc.returncode == 15, proc.stderr
    line = broken_line(repo)  # where the semicolon went missing: gcc's error is there
    assert proc.stderr.startswith(f"kbench: error: building linux@broken failed (make exit 2): "
                                  f"kernel/sys.c:{line}: error: expected ';' before 'return'"), proc.stderr
    log = Path(proc.stderr.rsplit("(log: ", 1)[1].split(")")[0])
    assert f"/kernel/sys.c:{line}:26: error: expected ';' before 'return'" in log.read_text()  # gcc's own words
    again = json.loads(kbench("kernel", "build", str(repo), "--rev", "main~1", "--json").stdout)
    assert again["from_cache"] is True and again["key"] == tree_kernel["key"]
