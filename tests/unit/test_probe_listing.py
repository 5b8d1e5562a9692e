"""``kbench-probe --list`` kept in kbench's cache directory per probe binary (kinds/probe/listing.py):
asked once, asked again when the binary changes, and asked as before when the cache is unusable."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from kbench.kinds.probe.listing import cache_path, probe_list
from kbench.native import find_native

ENTRIES: list[dict[str, object]] = [
    {"name": "getppid", "description": "getppid(2)", "params": [], "columns": ["ticks"]}
]


def fake_probe(path: Path, calls: Path, entries: list[dict[str, object]]) -> Path:
    """An executable that counts its calls in ``calls`` and prints ``entries`` for ``--list``."""
    path.write_text(f"#!/bin/sh\necho x >> '{calls}'\ncat <<'END'\n{json.dumps(entries)}\nEND\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def calls_of(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def test_the_list_is_asked_once_per_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    probe = fake_probe(tmp_path / "probe", calls, ENTRIES)
    assert probe_list(probe) == ENTRIES
    assert probe_list(probe) == ENTRIES
    assert calls_of(calls) == 1
    path = cache_path(probe)
    assert path is not None and path.parent == tmp_path / "cache" / "probe-list"

    # A rebuilt binary (another size and modification time) is asked again.
    changed: list[dict[str, object]] = [*ENTRIES, {"name": "getpid", "description": "getpid(2)"}]
    fake_probe(probe, calls, changed)
    os.utime(probe, ns=(1, 1))
    assert probe_list(probe) == changed
    assert calls_of(calls) == 2
    assert probe_list(probe) == changed
    assert calls_of(calls) == 2


def test_an_unusable_cache_asks_the_probe_each_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(blocker))
    calls = tmp_path / "calls"
    probe = fake_probe(tmp_path / "probe", calls, ENTRIES)
    assert probe_list(probe) == ENTRIES
    assert probe_list(probe) == ENTRIES
    assert calls_of(calls) == 2


def test_a_damaged_cache_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    probe = fake_probe(tmp_path / "probe", calls, ENTRIES)
    path = cache_path(probe)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_text('[{"name": "getpp')  # a write cut short
    assert probe_list(probe) == ENTRIES
    assert json.loads(path.read_text()) == ENTRIES
    assert calls_of(calls) == 1


def test_the_real_probes_list_from_the_cache_is_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(tmp_path / "cache"))
    probe = find_native("kbench-probe")
    printed = json.loads(subprocess.run([str(probe), "--list"], capture_output=True, text=True, check=True).stdout)
    assert probe_list(probe) == printed  # asked
    assert probe_list(probe) == printed  # read back
    assert list((tmp_path / "cache" / "probe-list").iterdir()) == [cache_path(probe)]
