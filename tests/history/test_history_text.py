"""``kbench history`` text names the run after a change by the version its user knows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_series
from tests.history.test_reports import kbench


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[int], list[int]]:
    path = tmp_path_factory.mktemp("history-text") / "k.db"
    store = Store.open(f"sqlite:///{path}")
    commits = fake_commits(30, seed=5)
    stepped = noisy(30, level=200.0, cv=0.002, seed=1)
    stepped[20:] *= 1.04
    labelled = plant_series(store, stepped, commits=commits, labels=[f"nightly-{i}" for i in range(30)])
    bare = noisy(30, level=90.0, cv=0.002, seed=2)
    bare[12:] *= 1.05
    unversioned = plant_series(store, bare, benchmark="syscall.getpid")
    store.engine.dispose()
    return path, commits, labelled, unversioned


def test_a_change_point_is_named_by_label_and_commit_with_the_run_id_aside(db: tuple) -> None:
    path, commits, labelled, _ = db
    text = kbench(path, "history", "syscall.getppid").stdout
    (line,) = [line for line in text.splitlines() if "regression at" in line]
    assert f"regression at nightly-20 (commit {commits[20][:12]}, run {labelled[20]}):" in line, line


def test_a_run_stored_without_a_version_is_named_by_its_id(db: tuple) -> None:
    path, _, _, unversioned = db
    text = kbench(path, "history", "syscall.getpid").stdout
    (line,) = [line for line in text.splitlines() if "regression at" in line]
    assert re.search(rf"regression at run {unversioned[12]}: ", line), line
