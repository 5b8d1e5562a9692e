"""``--fail-on`` on ``history`` and ``report regressions``: the documented exit code when a
planted change for the worse (or better) is found, 0 on a flat history."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbench.store.db import Store
from tests.history.planting import fake_commits, noisy, plant_finding, plant_series
from tests.history.test_reports import kbench

DOCS = Path(__file__).resolve().parents[2] / "docs" / "exit-codes.md"


def documented_fail_on_code() -> int:
    """The exit code docs/exit-codes.md gives to ``--fail-on``, read from its table."""
    (row,) = [line for line in DOCS.read_text().splitlines() if line.startswith("|") and "--fail-on" in line]
    found = re.match(r"\|\s*(\d+)\s*\|", row)
    assert found, row
    return int(found.group(1))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("fail-on") / "k.db"
    store = Store.open(f"sqlite:///{db}")
    slower = noisy(30, level=200.0, cv=0.002, seed=1)
    slower[20:] *= 1.04  # lower is better: a regression
    plant_series(store, slower, benchmark="syscall.getppid", commits=COMMITS)
    faster = noisy(30, level=5e6, cv=0.002, seed=2)
    faster[20:] *= 1.05  # higher is better: an improvement
    plant_series(store, faster, benchmark="will-it-scale.getppid1", unit="ops/s", direction="higher",
                 metric="will-it-scale.getppid1.per_process_ops")
    plant_series(store, noisy(30, level=80.0, cv=0.002, seed=3), benchmark="syscall.getpid")
    store.engine.dispose()
    return db


COMMITS = fake_commits(30, seed=7)


def test_documented_code_is_distinct_from_every_other_exit_code() -> None:
    from kbench import exit_codes

    code = documented_fail_on_code()
    others = {value for name, value in vars(exit_codes).items() if name.isupper() and name != "VERDICT_FOUND"}
    assert code not in others | {0, 1}


def test_a_suspected_change_fails_a_suspected_gate_and_not_a_regression_gate(planted: Path) -> None:
    # Nothing measured the change again: it is a candidate, and only --fail-on suspected fails on it.
    code = documented_fail_on_code()
    for command in (("history",), ("report", "regressions")):
        gated = kbench(planted, *command, "syscall.getppid", "--fail-on", "suspected")
        assert gated.returncode == code, gated.stderr
        assert "syscall.getppid.latency" in gated.stderr and "1 suspected" in gated.stderr
        assert "syscall.getppid" in gated.stdout  # the report is printed in full first
        ungated = kbench(planted, *command, "syscall.getppid")
        assert ungated.returncode == 0 and ungated.stdout == gated.stdout
        assert kbench(planted, *command, "syscall.getppid", "--fail-on", "regression").returncode == 0


def test_a_flat_history_and_an_improvement_pass_a_suspected_gate(planted: Path) -> None:
    for command in (("history",), ("report", "regressions")):
        for selector in ("syscall.getpid", "will-it-scale.getppid1"):
            proc = kbench(planted, *command, selector, "--fail-on", "suspected,regression")
            assert proc.returncode == 0, (command, selector, proc.stderr)


def test_an_improvement_gate_and_both(planted: Path) -> None:
    code = documented_fail_on_code()
    for command in (("history",), ("report", "regressions")):
        proc = kbench(planted, *command, "will-it-scale.*", "--fail-on", "improvement")
        assert proc.returncode == code and "1 improvement" in proc.stderr, proc.stderr
        both = kbench(planted, *command, "--fail-on", "suspected,improvement")
        assert both.returncode == code and "1 improvement, 1 suspected" in both.stderr, both.stderr
        assert kbench(planted, *command, "syscall.getppid", "--fail-on", "improvement").returncode == 0


def test_an_open_confirmed_regression_fails_the_gate_and_a_fixed_one_does_not(
    tmp_path: Path, planted: Path
) -> None:
    db = tmp_path / "k.db"
    db.write_bytes(planted.read_bytes())
    store = Store.open(f"sqlite:///{db}")
    finding = plant_finding(store, culprit=COMMITS[20], good=COMMITS[19], bad=COMMITS[20])
    code = documented_fail_on_code()
    for command in (("history",), ("report", "regressions")):
        gated = kbench(db, *command, "syscall.getppid", "--fail-on", "regression")
        assert gated.returncode == code and "1 regression" in gated.stderr, gated.stderr
        assert f"due to {COMMITS[20][:12]}" in gated.stderr
        # the change point is the confirmation: nothing suspected is left
        assert kbench(db, *command, "syscall.getppid", "--fail-on", "suspected").returncode == 0
    from kbench.store.watch import WatchStore

    WatchStore(store.engine).update_finding(finding, status="fixed", fixed_in=COMMITS[25])
    for command in (("history",), ("report", "regressions")):
        fixed = kbench(db, *command, "syscall.getppid", "--fail-on", "regression,suspected")
        assert fixed.returncode == 0, fixed.stderr


def test_a_json_report_is_complete_before_the_gate_fails(planted: Path) -> None:
    import json

    proc = kbench(planted, "report", "regressions", "--format", "json", "--fail-on", "suspected")
    assert proc.returncode == documented_fail_on_code()
    report = json.loads(proc.stdout)
    (entry,) = report["suspected"]
    assert entry["metric"] == "syscall.getppid.latency" and report["confirmed"] == []


def test_a_misspelt_verdict_is_a_usage_error(planted: Path) -> None:
    proc = kbench(planted, "history", "--fail-on", "regresion")
    assert proc.returncode == 2 and "give one or more of regression, improvement, suspected" in proc.stderr
