"""``kbench export RUN --format folded|speedscope|pprof|perf-stat``: a run's profile and counters
for other tools, checked by the tools' own readers where this machine has them (``go tool
pprof``; speedscope's file-format schema, as checks in tests/profile_readers.py) and read back
to the same stacks and counts.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from kbench.profile.counters import parse_counters
from kbench.profile.folded import FoldedProfile, parse_folded
from kbench.profile.perf_stat import parse_perf_stat
from kbench.profile.pprof import read_pprof
from kbench.profile.speedscope import read_speedscope
from kbench.store.db import Store
from tests.e2e.conftest import KbenchRunner, as_json
from tests.e2e.stored_runs import store_run
from tests.profile_readers import go_tool, pprof_raw_stacks, speedscope_problems

STACKS = {
    "kbench-probe;[kbench-probe]": 548709720,
    "kbench-probe;[kbench-probe];entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_getppid_[k]": 200040,
    "kbench-probe;[kbench-probe];entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]": 421880000,
    "sh;main;operator new(unsigned long);malloc": 7,
    "sh": 3,
}
COUNTERS = {"source": "perf_event_open", "scope": "user+kernel", "inherit": True, "operations": 64000, "events": [
    {"name": "task-clock", "type": "software", "supported": True, "unit": "ns", "value": 6945422,
     "enabled_ns": 6945422, "running_ns": 6945422},
    {"name": "context-switches", "type": "software", "supported": True, "value": 1, "enabled_ns": 6944026,
     "running_ns": 6944026},
    {"name": "cycles", "type": "hardware", "supported": True, "value": 3000000, "enabled_ns": 6944000,
     "running_ns": 3472000},  # multiplexed: counted half the time
    {"name": "instructions", "type": "hardware", "supported": True, "value": 4500000, "enabled_ns": 6944000,
     "running_ns": 3472000},
    {"name": "cache-misses", "type": "hardware", "supported": False, "errno": 2, "error": "No such file"},
]}
FOLDED_LINE = re.compile(r"^[^;\n]+(;[^;\n]+)* \d+$")


@pytest.fixture
def stored(db_path: Path) -> tuple[int, int]:
    """(a run with a profile and counters, a run with neither)."""
    store = Store.open(f"sqlite:///{db_path}")
    profiled = store_run(store, np.arange(300, 400), header={"counters": COUNTERS, "n": 100})
    profile = FoldedProfile(STACKS, event="cpu-clock", frequency_hz=4999, samples=5539)
    store.save_profile(profiled, event="cpu-clock", frequency_hz=4999, samples=5539, weight=profile.total,
                       data=profile.encode(), details={"window": "measured region"})
    bare = store_run(store, np.arange(300, 400))
    return profiled, bare


def test_folded_is_frame_lines_with_counts(kbench: KbenchRunner, stored: tuple[int, int]) -> None:
    text = kbench("export", str(stored[0]), "--format", "folded").stdout
    assert all(FOLDED_LINE.match(line) for line in text.splitlines()), text
    assert parse_folded(text) == STACKS


def test_speedscope_is_valid_and_holds_the_same_stacks(kbench: KbenchRunner, stored: tuple[int, int],
                                                        tmp_path: Path) -> None:
    out = tmp_path / "run.speedscope.json"
    kbench("export", str(stored[0]), "--format", "speedscope", "-o", str(out))
    document = json.loads(out.read_text())
    assert speedscope_problems(document) == []
    assert document["profiles"][0]["unit"] == "nanoseconds"
    assert read_speedscope(out.read_bytes()) == STACKS


def test_pprof_holds_the_same_stacks(kbench: KbenchRunner, stored: tuple[int, int], tmp_path: Path) -> None:
    out = tmp_path / "run.pb.gz"
    kbench("export", str(stored[0]), "--format", "pprof", "-o", str(out))
    found = read_pprof(out.read_bytes())
    assert found.stacks == STACKS and found.sample_types == [("cpu", "nanoseconds")]
    assert found.comments[:2] == [f"kbench run {stored[0]}: syscall.getppid", "cpu-clock at 4999 Hz, 5539 samples"]


def test_go_tool_pprof_reads_the_same_stacks(kbench: KbenchRunner, stored: tuple[int, int], tmp_path: Path) -> None:
    go = go_tool()
    if go is None:
        pytest.skip("needs Go (go tool pprof)")
    out = tmp_path / "run.pb.gz"
    kbench("export", str(stored[0]), "--format", "pprof", "-o", str(out))
    stacks, text = pprof_raw_stacks(out, go)
    assert stacks == STACKS
    assert "PeriodType: cpu nanoseconds" in text and "Period: 200040" in text


def test_counters_as_perf_stat_csv(kbench: KbenchRunner, stored: tuple[int, int]) -> None:
    text = kbench("export", str(stored[0]), "--format", "perf-stat").stdout
    lines = text.splitlines()
    assert lines[0].startswith(f"# kbench run {stored[0]}: syscall.getppid, perf_event_open, user+kernel, 64000 ops")
    assert lines[1] == "6.945422,msec,task-clock,6945422,100.00,,"
    assert lines[3] == "6000000,,cycles,3472000,50.00,,"  # scaled to the enabled time, as perf prints it
    assert lines[4] == "9000000,,instructions,3472000,50.00,1.50,insn per cycle"
    assert "<not supported>,,cache-misses,0,100.00,," in lines
    before = parse_counters({"counters": COUNTERS})
    after = parse_counters({"counters": parse_perf_stat(text), "n": 64000})
    assert before is not None and after is not None
    for name in ("task-clock", "context-switches", "cycles", "instructions"):
        assert after.value(name) == pytest.approx(before.value(name), rel=1e-12), name


def test_a_run_without_a_profile_or_counters(kbench: KbenchRunner, stored: tuple[int, int]) -> None:
    for fmt, what in (("speedscope", "has no profile"), ("perf-stat", "has no counters")):
        refused = kbench("export", str(stored[1]), "--format", fmt, check=False)
        assert refused.returncode == 4 and what in refused.stderr and refused.stdout == ""
    refused = kbench("export", "--runs", str(stored[0]), "--format", "pprof", check=False)
    assert refused.returncode == 2 and "give a RUN_ID" in refused.stderr
    missing = kbench("export", "999", "--format", "folded", check=False)
    assert missing.returncode == 4


def test_a_real_profile_exports(kbench: KbenchRunner, tmp_path: Path) -> None:
    """A profile perf recorded here: speedscope valid, folded lines, the same stacks in both."""
    if shutil.which("perf") is None:
        pytest.skip("needs perf (Debian package linux-perf)")
    run = as_json(kbench("run", "syscall.getppid", "--samples", "2000", "--profile", "--json", timeout=300))
    if not run.get("profile", {}).get("samples"):
        pytest.skip(f"perf recorded no profile here: {run.get('profile')}")
    folded = kbench("export", str(run["run_id"]), "--format", "folded").stdout
    assert folded and all(FOLDED_LINE.match(line) for line in folded.splitlines())
    out = tmp_path / "real.json"
    kbench("export", str(run["run_id"]), "--format", "speedscope", "-o", str(out))
    assert speedscope_problems(json.loads(out.read_text())) == []
    assert read_speedscope(out.read_bytes()) == parse_folded(folded)
