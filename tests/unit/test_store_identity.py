"""A store's identity: one UUID per store, kept in it, the same for every process that asks."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kbench.store.db import Store
from kbench.workspaces import WorkspaceBusy, held, workspace_dir


def test_a_store_keeps_one_uuid_and_two_stores_differ(tmp_path: Path) -> None:
    first = Store.open(f"sqlite:///{tmp_path / 'a.db'}").identity
    assert uuid.UUID(first).version == 4
    assert Store.open(f"sqlite:///{tmp_path / 'a.db'}").identity == first
    assert Store.open(f"sqlite:///{tmp_path / 'a.db'}", read_only=True).identity == first
    assert Store.open(f"sqlite:///{tmp_path / 'b.db'}").identity != first


def test_processes_asking_a_new_store_at_once_agree_on_its_identity(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    code = f"from kbench.store.db import Store; print(Store.open({'sqlite:///' + str(db)!r}).identity)"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    seen = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert seen == {Store.open(f"sqlite:///{db}").identity}


def test_two_servers_databases_never_share_a_spill_directory(
    private_postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database of a server keeps its runs' spills in the state directory under its identity, not
    # under its URL: the same URL may name another database tomorrow (dropped and made again).
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = Store.open(private_postgres_url)
    assert store.spill_dir == tmp_path / "state" / "kbench" / "spill" / store.identity
    assert uuid.UUID(store.identity).version == 4
    assert Store.open(private_postgres_url).spill_dir == store.spill_dir


def test_a_workspace_is_held_by_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(tmp_path / "cache"))
    place = workspace_dir("bisect", "0f" * 16, 3)
    assert place == tmp_path / "cache" / "bisect" / ("0f" * 16) / "3"
    script = (f"import time; from pathlib import Path; from kbench.workspaces import held\n"
              f"with held(Path({str(place)!r}), 'bisection 3'):\n    print('in', flush=True); time.sleep(60)\n")
    other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "in"
        busy = rf"bisection 3 is in use by another kbench \(pid {other.pid} on "
        with pytest.raises(WorkspaceBusy, match=busy), held(place, "bisection 3"):
            pass
    finally:
        other.kill()
        other.wait()
    with held(place, "bisection 3") as mine:  # its holder gone, the lock is free again
        assert mine == place
    assert not place.with_name("3.lock").exists()  # removed by its holder
