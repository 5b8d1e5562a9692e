"""Stored-run selectors (``--runs`` of compare and export) against a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.engine.run_selection import NoMatchingRuns, RunSelector, parse_selector, select_runs
from kbench.store.db import Store
from kbench.store.errors import RunNotFound

TARGET = {"kind": "local", "kernel_release": "6.1.0-56-amd64", "kernel_version": "#1 SMP"}


def _run(store: Store, *, benchmark: str = "syscall.getppid", tags: tuple[str, ...] = (),
         release: str = "6.1.0-56-amd64", status: str = "complete") -> int:
    run_id = store.begin_run(
        benchmark=benchmark, metric=f"{benchmark}.latency", unit="ns", direction="lower", params={},
        request={}, sysinfo=None, target={**TARGET, "kernel_release": release}, tags=tags,
    )
    store.finish_run(run_id, status=status)
    return run_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", RunSelector("3", "ids", ids=(3,))),
        ("5,1, 2", RunSelector("5,1, 2", "ids", ids=(5, 1, 2))),
        ("1,2,", RunSelector("1,2,", "ids", ids=(1, 2))),
        ("tag:nightly", RunSelector("tag:nightly", "tag", value="nightly")),
        ("kernel:6.1.0-56-amd64", RunSelector("kernel:6.1.0-56-amd64", "kernel", value="6.1.0-56-amd64")),
    ],
)
def test_a_selector_is_parsed(text: str, expected: RunSelector) -> None:
    assert parse_selector(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("tag:", "is not a run selector"), ("one,two", "is not a run selector"), ("kernels:x", "is not a run selector"),
     (",", "an empty list of runs"), ("", "an empty list of runs")],
)
def test_a_bad_selector_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_selector(text)


def test_runs_are_selected_by_id_tag_and_kernel(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    old = _run(store, tags=("nightly",), release="6.1.0-55-amd64")
    new = _run(store, tags=("nightly", "x"))
    _run(store, tags=("nightly",), status="failed")  # only completed runs count
    other = _run(store, benchmark="syscall.getpid", tags=("nightly",))
    _run(store, tags=("nightly-2",))  # a tag is matched whole

    assert select_runs(store, parse_selector(f"{new},{old}")) == [new, old]  # as given
    assert select_runs(store, parse_selector("tag:nightly")) == [old, new, other]  # oldest first
    assert select_runs(store, parse_selector("tag:nightly"), "syscall.getppid") == [old, new]
    assert select_runs(store, parse_selector("kernel:6.1.0-55-amd64")) == [old]
    with pytest.raises(NoMatchingRuns, match=r"no completed runs match 'tag:nothing' for syscall\.getppid"):
        select_runs(store, parse_selector("tag:nothing"), "syscall.getppid")
    with pytest.raises(NoMatchingRuns, match=r"no completed runs match 'kernel:5\.10'$"):
        select_runs(store, parse_selector("kernel:5.10"))
    assert issubclass(NoMatchingRuns, RunNotFound)  # exit 4, as a missing run id
