"""kbench compare / calibrate / sensitivity through the CLI, on real processes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import KbenchRunner, as_json

LOOP = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"
JSON_KEYS = {"metric", "unit", "direction", "base", "new", "change_pct", "ci_pct", "p_value", "verdict", "trials"}


def _metrics(report: dict) -> list[dict]:
    return report["metrics"]


def test_twice_the_work_is_a_regression_with_its_size(kbench: KbenchRunner) -> None:
    report = as_json(kbench(
        "compare", "--command", LOOP.format(n=10000), "--command", LOOP.format(n=20000),
        "--samples", "10", "--trials", "10", "--json",
    ))
    (metric,) = _metrics(report)
    assert metric.keys() >= JSON_KEYS
    assert metric["metric"] == "command.wall" and metric["direction"] == "lower"
    assert metric["verdict"] == "regression"
    # A shell loop of twice the iterations costs up to 3x as much; spawning sh is common to both and
    # this shared VM is noisy (+16% was seen once with other work running), so only the sign and a
    # wide range are asserted; the interval must exclude zero.
    assert 5 < metric["change_pct"] < 200
    low, high = metric["ci_pct"]
    assert low <= metric["change_pct"] <= high and low > 0
    assert metric["p_value"] < 0.05


def test_identical_work_is_not_called_a_regression(kbench: KbenchRunner) -> None:
    report = as_json(kbench(
        "compare", "--command", LOOP.format(n=2000), "--command", LOOP.format(n=2000) + " ",
        "--samples", "5", "--trials", "6", "--fixed", "--json",
    ))
    (metric,) = _metrics(report)
    assert metric["verdict"] in ("no change", "inconclusive")
    low, high = metric["ci_pct"]
    assert low <= 0 <= high or metric["verdict"] == "inconclusive"


def test_stored_runs_compare_without_measuring(kbench: KbenchRunner, tmp_path: Path) -> None:
    ids = [as_json(kbench("run", "syscall.getppid", "--samples", "2000", "--json"))["run_id"] for _ in range(6)]
    before = len(as_json(kbench("results", "--json")))
    text = kbench("compare", "--runs", ",".join(map(str, ids[:3])), "--runs", ",".join(map(str, ids[3:]))).stdout
    assert "%change" in text and "syscall.getppid.latency" in text
    assert len(as_json(kbench("results", "--json"))) == before  # nothing new was measured
    html = tmp_path / "report.html"
    kbench("compare", "--runs", ",".join(map(str, ids[:3])), "--runs", ",".join(map(str, ids[3:])),
           "--format", "html", "-o", str(html))
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="forest-plot"' in page and "<svg" in page
    mismatched = kbench("compare", "--runs", str(ids[0]), "--runs", str(ids[1]), "syscall.stat", check=False)
    assert mismatched.returncode == 2 and "the runs measure syscall.getppid" in mismatched.stderr


def test_too_few_trials_is_inconclusive_with_its_reason(kbench: KbenchRunner) -> None:
    ids = [as_json(kbench("run", "syscall.getppid", "--samples", "500", "--json"))["run_id"] for _ in range(2)]
    report = as_json(kbench("compare", "--runs", str(ids[0]), "--runs", str(ids[1]), "--json"))
    (metric,) = _metrics(report)
    assert metric["verdict"] == "inconclusive" and "few" in metric["reason"]


def test_bad_compare_input(kbench: KbenchRunner) -> None:
    one_side = kbench("compare", "--command", "true", check=False)
    assert one_side.returncode == 2 and "at least two" in one_side.stderr
    mixed = kbench("compare", "--command", "true", "--runs", "1", check=False)
    assert mixed.returncode == 2 and "exactly one of" in mixed.stderr
    same = kbench("compare", "--command", "true", "--command", "true", check=False)
    assert same.returncode == 2 and "identical" in same.stderr
    margin = kbench("compare", "--command", "true", "--command", "false", "--margin", "150%", check=False)
    assert margin.returncode == 2 and "margin" in margin.stderr
    missing = kbench("compare", "--runs", "998", "--runs", "999", check=False)
    assert missing.returncode == 4


def test_calibrate_stores_the_noise_floor_that_compare_reports(kbench: KbenchRunner) -> None:
    calibration = as_json(kbench("calibrate", "syscall.getppid", "--samples", "2000", "--trials", "6",
                                 "--budget", "6", "--json"))
    assert len(calibration["trials"]["A1"]) == len(calibration["trials"]["A2"]) == 6
    assert calibration["sigma_log"] > 0
    effects = {row["power"]: row["effect_pct"] for row in calibration["mde"]}
    assert 0 < effects[0.8] <= effects[0.95]
    ids = [as_json(kbench("run", "syscall.getppid", "--samples", "500", "--json"))["run_id"] for _ in range(2)]
    text = kbench("compare", "--runs", str(ids[0]), "--runs", str(ids[1])).stdout
    assert f"A/A calibration {calibration['calibration_id']}" in text


def test_sensitivity_matrix_separates_real_differences(kbench: KbenchRunner) -> None:
    result = as_json(kbench("sensitivity", "--command", LOOP.format(n=1000), "--command", LOOP.format(n=4000),
                            "--samples", "5", "--trials", "6", "--json"))
    mwu = result["mwu_p"]
    assert len(mwu) == 2 and mwu[0][1] == mwu[1][0] < 0.05
    assert json.dumps(result["names"])


def test_stored_runs_selected_by_tag(kbench: KbenchRunner) -> None:
    for tag in ("before", "before", "before", "after", "after", "after"):
        kbench("run", "syscall.getppid", "--samples", "1000", "--tag", tag)
    report = as_json(kbench("compare", "syscall.getppid", "--runs", "tag:before", "--runs", "tag:after", "--json"))
    (metric,) = report["metrics"]
    assert metric["trials"] == {"base": 3, "new": 3}
    none = kbench("compare", "syscall.getppid", "--runs", "tag:nothing", "--runs", "tag:after", check=False)
    assert none.returncode == 2 and "no completed runs match 'tag:nothing'" in none.stderr
