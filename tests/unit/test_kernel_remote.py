"""``tree:URL@REV``: a remote kernel repository read as a spec, cloned once into the cache,
fetched again for a revision it lacks; a URL with a credential refused (a real git repository
served as ``file://``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kbench.git import without_credential
from kbench.kernels.errors import KernelSourceError
from kbench.kernels.remote import cloned
from kbench.kernels.spec import is_remote, parse_tree_spec


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, text: str) -> str:
    (repo / "Makefile").write_text(text)
    _git(repo, "add", "Makefile")
    _git(repo, "commit", "-q", "-m", text)
    return _git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize(("spec", "url", "rev"), [
    ("tree:https://git.example.org/linux.git@v6.6", "https://git.example.org/linux.git", "v6.6"),
    ("tree:git@example.org:linux.git@main", "git@example.org:linux.git", "main"),
    ("tree:file:///srv/linux@0123abc", "file:///srv/linux", "0123abc"),
])
def test_a_url_spec_names_the_url_and_its_revision(spec: str, url: str, rev: str) -> None:
    tree = parse_tree_spec(spec)
    assert (tree.url, tree.rev) == (url, rev)


def test_a_url_without_its_revision_is_refused_and_paths_stay_paths() -> None:
    with pytest.raises(KernelSourceError, match="a repository URL needs the revision"):
        parse_tree_spec("tree:https://git.example.org/linux.git")
    assert not is_remote("~/linux") and not is_remote("linux@HEAD~1") and is_remote("ssh://h/l.git")
    assert parse_tree_spec("tree:linux@HEAD~1").url is None


def test_credentials_are_found_and_removed() -> None:
    assert without_credential("https://tok@host/r.git") == "https://host/r.git"
    assert without_credential("https://u:pw@host:8443/r.git") == "https://host:8443/r.git"
    assert without_credential("ssh://git:pw@host/r.git") == "ssh://git@host/r.git"
    for clean in ("https://host/r.git", "ssh://git@host/r.git", "git@host:r.git", "/srv/r", "file:///srv/r"):
        assert without_credential(clean) is None


def test_a_remote_is_cloned_once_and_fetched_for_a_revision_it_lacks(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    first = _commit(origin, "one\n")
    url = f"file://{origin}"
    clone = cloned(url, first, tmp_path / "cache")
    assert _git(clone, "rev-parse", f"{first}^{{commit}}") == first
    assert cloned(url, first, tmp_path / "cache") == clone  # there already: no fetch needed
    second = _commit(origin, "two\n")
    assert cloned(url, "main", tmp_path / "cache") == clone  # a branch moves: fetched again
    assert _git(clone, "rev-parse", "main") == second
    with pytest.raises(KernelSourceError, match="names no commit"):
        cloned(url, "v9.9", tmp_path / "cache")
    with pytest.raises(KernelSourceError, match=r"carries a credential.*tree:https://host/r.git@v1"):
        cloned("https://user:secret@host/r.git", "v1", tmp_path / "cache")
    assert not list((tmp_path / "cache" / "kernel-repos").glob("*.part*"))
