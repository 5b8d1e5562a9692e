"""What a new user found (issue 16, CLI polish), each through the real ``kbench`` command:
tag filters before the row limit, -q and --no-hist, ``list PATTERN``, no trailing padding
when piped, schema_version and UTC times in every JSON output, and read-only commands
that never create a database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select

from kbench.contract.json_document import SCHEMA_VERSION
from kbench.store import schema
from kbench.store.db import Store
from tests.e2e.conftest import KbenchRunner, as_json

REPO = Path(__file__).resolve().parents[2]
NEWER_UNTAGGED = 10_000
"""More newer runs than ``compare --runs tag:`` used to read before filtering by tag."""
UTC_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
LOOKS_LIKE_A_TIME = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d")


def _kbench(db: Path | str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KBENCH_DB"}
    return subprocess.run(
        [sys.executable, "-m", "kbench.cli", "--db", str(db), *args],
        capture_output=True, text=True, env=dict(env, COLUMNS="120"), timeout=300, cwd=cwd,
    )


@pytest.fixture(scope="module")
def tagged_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, list[int]]]]:
    """Three real runs tagged ``before``, three tagged ``after``, then 10,000 newer complete
    runs without a tag (rows only)."""
    db = tmp_path_factory.mktemp("tagged") / "k.db"
    ids: dict[str, list[int]] = {"before": [], "after": []}
    for tag in ("before", "before", "before", "after", "after", "after"):
        done = _kbench(db, "run", "syscall.getppid", "--samples", "300", "--tag", tag, "--json")
        assert done.returncode == 0, done.stderr
        ids[tag].append(json.loads(done.stdout)["run_id"])
    store = Store.open(f"sqlite:///{db}")
    with store.engine.begin() as conn:
        template = dict(conn.execute(select(schema.runs).where(schema.runs.c.id == ids["after"][-1])).mappings().one())
        template.pop("id")
        conn.execute(insert(schema.runs), [{**template, "tags": []} for _ in range(NEWER_UNTAGGED)])
    store.engine.dispose()
    yield db, ids


def test_results_filters_by_tag_before_the_limit(tagged_db: tuple[Path, dict[str, list[int]]]) -> None:
    db, ids = tagged_db
    listed = json.loads(_kbench(db, "results", "--tag", "before", "--limit", "2", "--json").stdout)
    assert [row["id"] for row in listed] == ids["before"][:0:-1]
    assert all("before" in row["tags"] for row in listed)
    text = _kbench(db, "results", "--tag", "before", "--limit", "2").stdout.splitlines()
    assert [line.split()[0] for line in text[1:]] == [str(i) for i in ids["before"][:0:-1]]


def test_compare_runs_by_tag_finds_runs_older_than_many_others(tagged_db: tuple[Path, dict[str, list[int]]]) -> None:
    db, _ = tagged_db
    done = _kbench(db, "compare", "syscall.getppid", "--runs", "tag:before", "--runs", "tag:after", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (metric,) = report["metrics"]
    assert metric["trials"] == {"base": 3, "new": 3}
    assert report["schema_version"] == SCHEMA_VERSION


def test_run_quiet_prints_one_line_and_no_hist_leaves_the_distribution_out(kbench: KbenchRunner) -> None:
    line = kbench("run", "syscall.getppid", "--samples", "1000", "-q").stdout
    match = re.fullmatch(r"syscall\.getppid median (\S+) ns n=1000 run (\d+)\n", line)
    assert match, line
    shown = as_json(kbench("show", match[2], "--json"))
    assert float(match[1]) == pytest.approx(shown["median"], rel=1e-5) and shown["n"] == 1000
    full = kbench("show", match[2]).stdout
    assert "histogram (linear bins)" in full and "\nCDF\n" in full
    for text in (kbench("run", "syscall.getppid", "--samples", "1000", "--no-hist").stdout,
                 kbench("show", match[2], "--no-hist").stdout):
        assert "histogram" not in text and "CDF" not in text
        assert "median" in text and "steady from sample" in text
    both = kbench("run", "syscall.getppid", "-q", "--json", check=False)
    assert both.returncode == 2 and "not both" in both.stderr


def test_run_quiet_with_a_job_file_prints_a_line_per_instance(kbench: KbenchRunner, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 200\nparams:\n  spin: [0, 50]\n")
    lines = kbench("run", str(job), "-q").stdout.splitlines()
    assert len(lines) == 2, lines
    for line in lines:
        assert re.fullmatch(r"\S+ syscall\.getppid median \S+ ns n=200 runs \d+", line), line


def test_list_pattern_glob_or_substring_with_unit_and_direction(kbench: KbenchRunner) -> None:
    catalog = {b["name"]: b for b in as_json(kbench("list", "--json"))}
    for pattern, wanted in (
        ("pipe", {n for n in catalog if "pipe" in n}),
        ("syscall.*", {n for n in catalog if n.startswith("syscall.")}),
        ("*.PIPE-*", {n for n in catalog if re.fullmatch(r".*\.pipe-.*", n)}),
    ):
        assert wanted, pattern
        lines = kbench("list", pattern).stdout.splitlines()
        assert lines[0].split()[:3] == ["benchmark", "unit", "direction"]
        rows = [line.split() for line in lines[1:] if line and line.split()[0] in catalog]
        assert {row[0] for row in rows} == wanted
        for name, unit, direction, *_ in rows:
            assert (unit, direction) == (catalog[name]["unit"], catalog[name]["direction"])
        assert {b["name"] for b in as_json(kbench("list", pattern, "--json"))} == wanted
    missing = kbench("list", "no-such-benchmark", check=False)
    assert missing.returncode == 2 and "no benchmark matches 'no-such-benchmark'" in missing.stderr


def test_no_line_ends_in_padding_when_piped(kbench: KbenchRunner) -> None:
    run_id = as_json(kbench("run", "syscall.getppid", "--samples", "500", "--tag", "a-long-tag", "--json"))["run_id"]
    kbench("run", "syscall.getppid", "--samples", "500", "-q")  # no tag: the last column is empty (padded)
    scaling = str(REPO / "examples" / "scaling.yaml")
    for args in (["list"], ["results"], ["show", str(run_id)], ["job", "expand", scaling]):
        out = kbench(*args).stdout
        assert out.count("\n") >= 3, args
        padded = [line for line in out.splitlines() if line.endswith(" ")]
        assert padded == [], (args, padded[:3])


def _check_document(data: Any, where: str) -> None:
    """schema_version at the top (in each object of a list) and every time in UTC ISO-8601."""
    objects = data if isinstance(data, list) else [data]
    assert objects, f"{where}: nothing to check"
    for item in objects:
        assert item["schema_version"] == SCHEMA_VERSION and isinstance(item["schema_version"], int), where
    times = list(_times(data))
    for key, value in times:
        assert UTC_TIME.match(value), f"{where}: {key}={value!r} is not an ISO-8601 UTC time"


def _times(data: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _times(v, str(k))
    elif isinstance(data, list):
        for v in data:
            yield from _times(v, key)
    elif isinstance(data, str) and (LOOKS_LIKE_A_TIME.match(data) or key.endswith("_at")):
        yield key, data


def test_every_json_output_has_the_schema_version_and_utc_times(kbench: KbenchRunner, tmp_path: Path) -> None:
    run = as_json(kbench("run", "syscall.getppid", "--samples", "500", "-p", "spin=5", "--tag", "j", "--json"))
    _check_document(run, "run --json")
    assert run["benchmark"] == "syscall.getppid" and run["params"] == {"spin": "5"} and run["tags"] == ["j"]
    assert run["target"]["kind"] == "local" and run["target"]["kernel_release"] == os.uname().release
    started = datetime.fromisoformat(run["started_at"])
    assert started.tzinfo is not None and started.utcoffset().total_seconds() == 0
    assert abs((datetime.now(UTC) - started).total_seconds()) < 3600
    other = as_json(kbench("run", "syscall.getppid", "--samples", "500", "--tag", "k", "--json"))["run_id"]
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: syscall.getppid\nsamples: 200\n")
    outputs = {
        "show --json": as_json(kbench("show", str(run["run_id"]), "--json")),
        "results --json": as_json(kbench("results", "--json")),
        "list --json": as_json(kbench("list", "--json")),
        "job expand --json": as_json(kbench("job", "expand", str(job), "--json")),
        "run JOB --json": as_json(kbench("run", str(job), "--json")),
        "history --json": as_json(kbench("history", "--json")),
        "report regressions --format json": as_json(kbench("report", "regressions", "--format", "json")),
        "compare --runs --json": as_json(kbench("compare", "--runs", str(run["run_id"]), "--runs", str(other),
                                                "--json")),
        "sysinfo --json": as_json(kbench("sysinfo", "--json")),
        "export --format json": as_json(kbench("export", str(run["run_id"]), "--format", "json")),
        "cache prune --dry-run --json": as_json(kbench("cache", "prune", "--dry-run", "--json")),
    }
    for where, data in outputs.items():
        _check_document(data, where)
    # with one kernel there is nothing to compare: exit 4 and no document (docs/exit-codes.md)
    releases = kbench("report", "releases", "--kernel", os.uname().release, "--kernel", "x", "--format", "json",
                      check=False)
    assert releases.returncode == 4 and releases.stdout == ""
    assert outputs["show --json"]["started_at"] == run["started_at"]
    assert any(p["started_at"] for s in outputs["history --json"]["series"] for p in s["points"])


READ_ONLY_COMMANDS = [
    ["results"], ["results", "--json"], ["show", "1"], ["export", "1"], ["history"],
    ["report", "regressions"], ["report", "releases", "--kernel", "a", "--kernel", "b"],
    ["compare", "--runs", "1", "--runs", "2"], ["bisect", "status"],
]


@pytest.mark.parametrize("args", READ_ONLY_COMMANDS, ids=" ".join)
def test_a_read_only_command_on_a_missing_directory_fails_in_one_line_and_creates_nothing(
    args: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "typo" / "dir" / "x.db"
    done = _kbench(db, *args, cwd=tmp_path)
    assert done.returncode == 5, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kbench: error: ")
    assert f"results database {db}: no such database ({tmp_path / 'typo'}" in done.stderr
    assert "nothing was created" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [a for a in READ_ONLY_COMMANDS if a[0] in ("results", "history", "report")],
                         ids=" ".join)
def test_a_read_only_command_on_a_missing_file_reads_nothing_and_creates_nothing(
    args: list[str], tmp_path: Path
) -> None:
    done = _kbench(tmp_path / "x.db", *args, cwd=tmp_path)
    # an empty store gives report releases nothing to compare: exit 4, as docs/exit-codes.md says
    assert done.returncode == (4 if args[:2] == ["report", "releases"] else 0), done.stderr
    assert list(tmp_path.iterdir()) == []
