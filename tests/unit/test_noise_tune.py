"""kbench tune on a fake /sys + /proc tree: apply, reset, dry run, absent knobs, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.sysinfo import tune
from kbench.sysinfo.tune import (
    APPLIED,
    FAILED,
    NOT_AVAILABLE,
    RESTORED,
    UNCHANGED,
    WOULD_APPLY,
    WOULD_RESTORE,
    TuneError,
    apply_tuning,
    default_state_path,
    reset_tuning,
)

CPU = "sys/devices/system/cpu"


def make_tree(root: Path, *, cpus: int = 4, turbo: str | None = "intel_pstate", aslr: bool = True) -> Path:
    for cpu in range(cpus):
        d = root / CPU / f"cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("powersave\n")
        (d / "scaling_available_governors").write_text("performance powersave\n")
    (root / CPU).mkdir(parents=True, exist_ok=True)
    if turbo == "intel_pstate":
        (root / CPU / "intel_pstate").mkdir()
        (root / CPU / "intel_pstate/no_turbo").write_text("0\n")
    elif turbo == "boost":
        (root / CPU / "cpufreq").mkdir(exist_ok=True)
        (root / CPU / "cpufreq/boost").write_text("1\n")
    if aslr:
        (root / "proc/sys/kernel").mkdir(parents=True)
        (root / "proc/sys/kernel/randomize_va_space").write_text("2\n")
    return root


def values(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text().strip()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "available" not in p.name
    }


def statuses(report: tune.TuneReport) -> dict[str, str]:
    return {r.knob: r.status for r in report.results}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "tune.json"


def test_apply_then_reset_restores_exactly(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root")
    before = values(root)
    report = apply_tuning(state_path=state, root=root)
    assert statuses(report) == {"governor": APPLIED, "turbo": APPLIED, "aslr": APPLIED}
    assert not report.failed
    now = values(root)
    assert all(now[f"{CPU}/cpu{i}/cpufreq/scaling_governor"] == "performance" for i in range(4))
    assert now[f"{CPU}/intel_pstate/no_turbo"] == "1"
    assert now["proc/sys/kernel/randomize_va_space"] == "0"
    saved = json.loads(state.read_text())
    assert saved["format"] == "kbench-tune/1"
    assert saved["knobs"]["aslr"] == {str(root / "proc/sys/kernel/randomize_va_space"): "2"}

    reset = reset_tuning(state_path=state, root=root)
    assert statuses(reset) == {"governor": RESTORED, "turbo": RESTORED, "aslr": RESTORED}
    assert values(root) == before
    assert not state.exists()  # consumed
    again = reset_tuning(state_path=state, root=root)
    assert again.results == [] and "nothing to reset" in again.note


def test_applying_twice_keeps_the_first_saved_values(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root")
    before = values(root)
    apply_tuning(state_path=state, root=root)
    second = apply_tuning(state_path=state, root=root)
    assert set(statuses(second).values()) == {UNCHANGED}
    reset_tuning(state_path=state, root=root)
    assert values(root) == before


def test_dry_run_changes_nothing(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root")
    before = values(root)
    report = apply_tuning(dry_run=True, state_path=state, root=root)
    assert set(statuses(report).values()) == {WOULD_APPLY}
    assert values(root) == before and not state.exists()
    apply_tuning(state_path=state, root=root)
    tuned = values(root)
    dry_reset = reset_tuning(dry_run=True, state_path=state, root=root)
    assert set(statuses(dry_reset).values()) == {WOULD_RESTORE}
    assert values(root) == tuned and state.exists()


def test_absent_knobs_are_reported_with_the_reason(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root", cpus=0, turbo=None)
    report = apply_tuning(state_path=state, root=root)
    assert statuses(report) == {"governor": NOT_AVAILABLE, "turbo": NOT_AVAILABLE, "aslr": APPLIED}
    details = {r.knob: r.detail for r in report.results}
    assert "no cpufreq" in details["governor"] and "no_turbo" in details["turbo"]
    assert not report.failed


def test_cpufreq_boost_is_the_turbo_knob_without_intel_pstate(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root", turbo="boost")
    apply_tuning({"turbo": "off"}, state_path=state, root=root)
    assert (root / CPU / "cpufreq/boost").read_text().strip() == "0"
    reset_tuning(["turbo"], state_path=state, root=root)
    assert (root / CPU / "cpufreq/boost").read_text().strip() == "1"


def test_per_job_governor_and_partial_reset(tmp_path: Path, state: Path) -> None:
    root = make_tree(tmp_path / "root")
    apply_tuning({"governor": "performance"}, state_path=state, root=root)
    apply_tuning({"aslr": "off"}, state_path=state, root=root)
    reset_tuning(["governor"], state_path=state, root=root)
    now = values(root)
    assert now[f"{CPU}/cpu0/cpufreq/scaling_governor"] == "powersave"
    assert now["proc/sys/kernel/randomize_va_space"] == "0"  # still tuned, still saved
    assert list(json.loads(state.read_text())["knobs"]) == ["aslr"]


@pytest.mark.parametrize(
    ("knobs", "message"),
    [({"fan": "max"}, "unknown knob fan"), ({"turbo": "half"}, "turbo must be on or off"),
     ({"aslr": "3"}, "aslr must be"), ({"aslr": "0", "governor": "ondemand"}, "not offered")],
)
def test_bad_input_changes_nothing(tmp_path: Path, state: Path, knobs: dict[str, str], message: str) -> None:
    root = make_tree(tmp_path / "root")
    before = values(root)
    with pytest.raises(TuneError, match=message):
        apply_tuning(knobs, state_path=state, root=root)
    assert values(root) == before and not state.exists()


def test_a_failed_write_is_reported_and_not_saved(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "root")
    aslr = root / "proc/sys/kernel/randomize_va_space"
    real_write = tune._write

    def refuse_aslr(path: Path, text: str) -> str | None:
        return "Permission denied (EACCES): needs root" if path == aslr else real_write(path, text)

    monkeypatch.setattr(tune, "_write", refuse_aslr)
    report = apply_tuning(state_path=state, root=root)
    assert statuses(report) == {"governor": APPLIED, "turbo": APPLIED, "aslr": FAILED}
    assert report.failed and "EACCES" in report.results[2].detail
    assert "aslr" not in json.loads(state.read_text())["knobs"]


def test_unwritable_state_file_means_nothing_changes(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "root")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    before = values(root)
    report = apply_tuning({"aslr": "off"}, state_path=blocker / "tune.json", root=root)
    assert statuses(report) == {"aslr": FAILED} and "cannot save" in report.results[0].detail
    assert values(root) == before


def test_state_path_from_env_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KBENCH_TUNE_STATE", str(tmp_path / "x.json"))
    assert default_state_path() == tmp_path / "x.json"
    monkeypatch.delenv("KBENCH_TUNE_STATE")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_path() == tmp_path / "xdg/kbench/tune.json"


def test_a_foreign_state_file_is_refused(state: Path) -> None:
    state.parent.mkdir(parents=True)
    state.write_text('{"format": "something-else"}')
    state.chmod(0o600)
    with pytest.raises(TuneError, match="not a kbench tune state file"):
        reset_tuning(state_path=state)
