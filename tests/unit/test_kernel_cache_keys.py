"""The built-kernel cache's key: (source tree id, config recipe digest, compiler). A tree id
is git's own tree object id (``git rev-parse REV^{tree}`` is the reference), or a digest of
a directory's content; the recipe digest changes with anything asked and nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kbench.kernels import tree_digest
from kbench.kernels.build import entry_key
from kbench.kernels.errors import KernelConfigError, KernelSourceError
from kbench.kernels.recipe import make_recipe
from kbench.kernels.source import identify
from kbench.kernels.spec import parse_tree_spec


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A kernel-like tree whose .gitignore ignores everything at the top, as Debian's linux-source's does."""
    repo = tmp_path / "linux"
    repo.mkdir()
    (repo / ".gitignore").write_text("/*\n")
    (repo / "Makefile").write_text("all:\n")
    (repo / "Kconfig").write_text('mainmenu "t"\n')
    (repo / "kernel").mkdir()
    (repo / "kernel" / "sys.c").write_text("int getppid(void) { return 1; }\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-f", ".")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "same tree")
    (repo / "kernel" / "sys.c").write_text("int getppid(void) { return 2; }\n")
    _git(repo, "add", "-f", "kernel/sys.c")
    _git(repo, "commit", "-qm", "two")
    return repo


def test_a_revision_is_identified_by_gits_tree_id(repo: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    head, parent, first = (identify(repo, rev, memo) for rev in ("main", "main~1", "main~2"))
    assert head.tree_id == _git(repo, "rev-parse", "main^{tree}")
    assert head.commit == _git(repo, "rev-parse", "main")
    assert parent.tree_id == first.tree_id == _git(repo, "rev-parse", "main~2^{tree}")  # an empty commit
    assert parent.commit != first.commit and head.tree_id != parent.tree_id
    assert identify(repo / "kernel", "main", memo).path == repo  # a path inside the repository
    with pytest.raises(KernelSourceError, match="'nope' names no commit"):
        identify(repo, "nope", memo)


def test_a_directory_is_identified_by_its_content_whatever_gitignore_says(repo: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    before = identify(repo, None, memo)
    assert before.tree_id.startswith("dir-") and before.commit is None
    assert identify(repo, None, memo).tree_id == before.tree_id
    sys_c = repo / "kernel" / "sys.c"
    sys_c.write_text("int getppid(void) { return 3; }\n")
    changed = identify(repo, None, memo).tree_id
    assert changed != before.tree_id
    sys_c.chmod(0o755)
    assert identify(repo, None, memo).tree_id not in (before.tree_id, changed)
    sys_c.chmod(0o644)
    assert identify(repo, None, memo).tree_id == changed
    (repo / "ignored.o").write_text("x")  # ignored by .gitignore, but it is content
    assert identify(repo, None, memo).tree_id != changed
    (repo / "ignored.o").unlink()
    _git(repo, "commit", "-q", "--allow-empty", "-m", "three")  # .git does not count
    assert identify(repo, None, memo).tree_id == changed
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(repo), str(copy)], check=True)
    assert identify(copy, None, memo).tree_id == changed  # the same content elsewhere


def test_an_unchanged_directory_is_not_read_again(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memo = tmp_path / "memo"
    old = os.path.getmtime(repo / "Makefile") - 60
    for path in repo.rglob("*"):
        if ".git" not in path.parts:
            os.utime(path, (old, old))  # older than the memo's racy window
    first = identify(repo, None, memo).tree_id
    read: list[Path] = []
    original = tree_digest._file_digest
    monkeypatch.setattr(tree_digest, "_file_digest", lambda path: read.append(path) or original(path))
    assert identify(repo, None, memo).tree_id == first
    assert read == []
    (repo / "kernel" / "sys.c").write_text("int getppid(void) { return 4; }\n")
    assert identify(repo, None, memo).tree_id != first
    assert read == [repo / "kernel" / "sys.c"]


def test_the_recipe_digest_changes_with_what_is_asked_only(tmp_path: Path) -> None:
    one = tmp_path / "one.config"
    one.write_text("CONFIG_SMP=y\n")
    two = tmp_path / "sub" / "two.config"
    two.parent.mkdir()
    two.write_text("CONFIG_SMP=y\n")
    other = tmp_path / "other.config"
    other.write_text("CONFIG_NR_CPUS=4\n")
    digest = make_recipe("minimal", [one], ["kbench.ko"]).digest()
    assert make_recipe("minimal", [one], ["kbench.ko", "boot"]).digest() == digest  # boot is always asked
    assert make_recipe("minimal", [two], ["kbench.ko"]).digest() == digest  # the same content elsewhere
    different = {
        make_recipe("minimal", [], ["kbench.ko"]).digest(),
        make_recipe("minimal", [one, other], ["kbench.ko"]).digest(),
        make_recipe("minimal", [other, one], ["kbench.ko"]).digest(),
        make_recipe("minimal", [one], ["kbench.ko", "trace"]).digest(),
        make_recipe("defconfig", [one], ["kbench.ko"]).digest(),
        make_recipe(str(other), [one], ["kbench.ko"]).digest(),
        digest,
    }
    assert len(different) == 7
    with pytest.raises(KernelConfigError, match="no such file"):
        make_recipe(str(tmp_path / "missing"), [], [])
    with pytest.raises(KernelConfigError, match="unknown kernel feature speed"):
        make_recipe("minimal", [], ["speed"])


def test_the_cache_key_changes_with_each_of_its_parts() -> None:
    key = entry_key("a" * 40, "r" * 24, "gcc 12.2.0; ld 2.40")
    assert key == entry_key("a" * 40, "r" * 24, "gcc 12.2.0; ld 2.40")
    assert len({key, entry_key("b" * 40, "r" * 24, "gcc 12.2.0; ld 2.40"),
                entry_key("a" * 40, "s" * 24, "gcc 12.2.0; ld 2.40"),
                entry_key("a" * 40, "r" * 24, "gcc 13.1.0; ld 2.40")}) == 4


def test_tree_specs(tmp_path: Path) -> None:
    assert parse_tree_spec("tree:/src/linux@HEAD~1") == parse_tree_spec("tree:/src/linux@HEAD~1")
    spec = parse_tree_spec("tree:/src/linux@v6.1^{commit}")
    assert (spec.path, spec.rev) == (Path("/src/linux"), "v6.1^{commit}")
    assert parse_tree_spec("tree:/src/linux").rev is None
    odd = tmp_path / "a@b"
    odd.mkdir()
    assert parse_tree_spec(f"tree:{odd}").path == odd and parse_tree_spec(f"tree:{odd}").rev is None
    assert parse_tree_spec(f"tree:{odd}@main").rev == "main"
    assert parse_tree_spec("tree:~/linux@main").path == Path.home() / "linux"
    for bad, said in (("tree:", "no tree path"), ("tree:/src/linux@", "nothing after '@'"),
                      ("tree:@HEAD", "no tree path")):
        with pytest.raises(KernelSourceError, match=said):
            parse_tree_spec(bad)
