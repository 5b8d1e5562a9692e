"""Comparison formats other than text: registry, JSON, Markdown, Go benchmark export, the model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kbench.report import gobench_format
from kbench.report.comparison import EXTENSIONS, FORMATS, gobench, json_report, markdown, render
from kbench.report.comparison.model import (
    ComparisonReport,
    MetricComparison,
    SideData,
    TrialSeries,
    metric_from_dict,
    side_from_trials,
)

REQUIRED_JSON_KEYS = {
    "metric", "unit", "direction", "base", "new", "change_pct", "ci_pct", "p_value", "verdict", "trials",
}


def _verdict(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "metric": "syscall.getppid.latency", "unit": "ns", "direction": "lower", "base": 76.3, "new": 78.66,
        "change_pct": 3.1, "ci_pct": (2.7, 3.5), "p_value": 0.002, "verdict": "regression", "trials": 5,
        "reason": "p < 0.05",
        "base_data": {"trial_statistics": [76.1, 76.3, 76.2, 76.5, 76.4]},
        "new_data": {"trial_statistics": [78.6, 78.7, 78.5, 78.66, 78.8]},
    }
    data.update(overrides)
    return data


def _report(*metrics: MetricComparison) -> ComparisonReport:
    if not metrics:
        metrics = (
            metric_from_dict(_verdict()),
            metric_from_dict(_verdict(
                metric="will-it-scale.mmap1.per_process_ops", unit="ops", direction="higher", base=512400,
                new=513000, change_pct=0.12, ci_pct=[-0.4, 0.6], p_value=0.61, verdict="no change",
                trials={"base": 3, "new": 4}, reason="",
                base_data={"trial_statistics": [512000, 512400, 512900]},
                new_data={"trial_statistics": [512500, 513000, 513100, 512800]},
            )),
        )
    return ComparisonReport(
        title="a | b", base_label="6.1.0-56-amd64", new_labels=("6.12.5",), metrics=metrics,
        context={"cpu": {"model": "Xeon 8370C", "arch": "x86_64"}}, parameters={"trials": 5},
        correction="holm",
    )


def test_every_format_is_registered_and_renders() -> None:
    assert set(FORMATS) == {"text", "json", "markdown", "html", "gobench"}
    assert set(EXTENSIONS) == set(FORMATS)
    report = _report()
    for name in ("text", "json", "markdown", "gobench"):
        out = render(report, name)
        assert isinstance(out, str) and "getppid" in out.lower()


def test_unknown_format_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown comparison format 'pdf'; choose one of text, json"):
        render(_report(), "pdf")


def test_json_has_one_object_per_metric_with_the_verdict_keys() -> None:
    data = json.loads(json_report.render(_report()))
    assert data["base_label"] == "6.1.0-56-amd64" and data["new_labels"] == ["6.12.5"]
    assert data["correction"] == "holm"
    assert [m["metric"] for m in data["metrics"]] == ["syscall.getppid.latency", "will-it-scale.mmap1.per_process_ops"]
    for m in data["metrics"]:
        assert set(m) >= REQUIRED_JSON_KEYS
    first, second = data["metrics"]
    assert first["ci_pct"] == [2.7, 3.5] and first["p_value"] == 0.002 and first["verdict"] == "regression"
    assert first["trials"] == {"base": 5, "new": 5}
    assert second["trials"] == {"base": 3, "new": 4}
    assert first["base_trials"] == [76.1, 76.3, 76.2, 76.5, 76.4]
    expected = float(np.std(first["base_trials"], ddof=1) / np.mean(first["base_trials"]) * 100)
    assert first["base_stddev_pct"] == pytest.approx(expected)
    assert data["overall"][0]["regressions"] == 1 and data["overall"][0]["unchanged"] == 1


def test_json_turns_nan_into_null() -> None:
    m = metric_from_dict(_verdict(p_value=math.nan, change_pct=math.nan, ci_pct=(math.nan, 1.0)))
    data = json.loads(json_report.render(_report(m)))
    assert data["metrics"][0]["p_value"] is None
    assert data["metrics"][0]["ci_pct"] == [None, 1.0]


def test_markdown_table_has_a_row_per_metric_and_escapes_cells() -> None:
    text = markdown.render(_report())
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| metric |"))
    columns = len(markdown.COLUMNS)
    assert lines[header + 1].count("|") == columns + 1
    rows = lines[header + 2: header + 4]
    assert all(row.count(" | ") == columns - 1 for row in rows)
    assert rows[0].startswith("| syscall.getppid.latency | ns | 76.30 |")
    assert "| +3.1% | +2.7…+3.5% | 0.002 | **regression** | 5/5 |" in rows[0]
    assert rows[1].startswith("| will-it-scale.mmap1.per\\_process\\_ops |")
    assert text.startswith("# a \\| b\n")
    assert "- syscall.getppid.latency on kernel 6.12.5 has a +3.1%" in text
    assert "| cpu.model | Xeon 8370C |" in text


@pytest.mark.parametrize(("metric", "name"), [
    ("syscall.getppid.latency", "BenchmarkSyscallGetppid"),
    ("will-it-scale.mmap1.per_process_ops", "BenchmarkWillItScaleMmap1"),
    ("kfunc.fib4_lookup.cycles", "BenchmarkKfuncFib4Lookup"),
    ("suite.test-4.stat", "BenchmarkSuiteTest4"),
    ("suite.test.-4.stat", "BenchmarkSuiteTest4"),
    ("plain", "BenchmarkPlain"),
])
def test_go_benchmark_name_mangling(metric: str, name: str) -> None:
    assert gobench_format.benchmark_name(metric) == name


def test_go_unit_keeps_metrics_apart() -> None:
    def unit(metric: str, kbench_unit: str) -> str:
        return gobench.go_unit(metric_from_dict(_verdict(metric=metric, unit=kbench_unit)))

    assert unit("syscall.getppid.latency", "ns") == "ns/op"
    assert unit("kfunc.fib4_lookup.cycles", "cycles") == "cycles"
    assert unit("will-it-scale.mmap1.per_process_ops", "ops") == "per_process_ops-ops"
    assert unit("will-it-scale.mmap1.per_thread_ops", "ops") == "per_thread_ops-ops"


def test_go_benchmark_side_file_has_header_and_one_line_per_trial() -> None:
    report = _report()
    base = gobench.render_side(report, "6.1.0-56-amd64").splitlines()
    assert base[:4] == ["goos: linux", "goarch: amd64", "pkg: kbench", "cpu: Xeon 8370C"]
    assert "Unit ns/op better=lower assume=nothing" in base
    assert "Unit per_process_ops-ops better=higher assume=nothing" in base
    results = [line for line in base if line.startswith("Benchmark")]
    assert results[:5] == [f"BenchmarkSyscallGetppid 1 {v} ns/op" for v in ("76.1", "76.3", "76.2", "76.5", "76.4")]
    assert len(results) == 5 + 3
    new = gobench.render_side(report, "6.12.5")
    assert new.count("BenchmarkWillItScaleMmap1 ") == 4
    assert "kernel:" not in new  # a differing key would make benchstat split the files into tables
    with pytest.raises(ValueError, match="unknown label"):
        gobench.render_side(report, "5.10")


def test_go_benchmark_iterations_are_the_trial_sample_counts() -> None:
    side = side_from_trials([np.full(300, 76.0), np.full(200, 77.0)])
    m = metric_from_dict(_verdict(base_data=side, new_data=side))
    lines = [line for line in gobench.render_side(_report(m), "6.12.5").splitlines() if line.startswith("Bench")]
    assert lines == ["BenchmarkSyscallGetppid 300 76 ns/op", "BenchmarkSyscallGetppid 200 77 ns/op"]


def test_go_benchmark_stream_and_files(tmp_path: Path) -> None:
    report = _report()
    stream = gobench.render(report)
    assert stream.index("kernel: 6.1.0-56-amd64") < stream.index("kernel: 6.12.5")
    paths = gobench.write_files(report, tmp_path)
    assert [p.name for p in paths] == ["6.1.0-56-amd64.txt", "6.12.5.txt"]
    assert paths[1].read_text() == gobench.render_side(report, "6.12.5")


def test_metric_from_dict_accepts_compare_spellings() -> None:
    data = {k: v for k, v in _verdict().items() if k not in ("base", "new")}
    m = metric_from_dict(data | {"base_median": 10.0, "new_median": 11.0, "trials": [3, 4]})
    assert (m.base, m.new, m.trials) == (10.0, 11.0, (3, 4))
    assert m.base_data.trial_statistics == (76.1, 76.3, 76.2, 76.5, 76.4)


def test_goodness_ratio_is_above_one_when_better() -> None:
    faster = metric_from_dict(_verdict(base=80.0, new=76.0, change_pct=-5.0))
    assert faster.goodness_ratio == pytest.approx(1 / 0.95)
    more = metric_from_dict(_verdict(direction="higher", base=100.0, new=110.0, change_pct=10.0))
    assert more.goodness_ratio == pytest.approx(1.1)
    assert metric_from_dict(_verdict(base=0.0)).goodness_ratio is None


def test_goodness_ratio_follows_the_verdicts_estimate_not_the_side_medians() -> None:
    # interleaved blocks: the paired estimate (+1.0 %) is the change; the medians (+0.45 %) carry drift
    paired = metric_from_dict(_verdict(base=138_733_000.0, new=139_358_000.0, change_pct=1.0))
    assert paired.goodness_ratio == pytest.approx(1 / 1.01)
    undefined = metric_from_dict(_verdict(base=80.0, new=76.0, change_pct=float("nan")))
    assert undefined.goodness_ratio == pytest.approx(80 / 76)


def test_side_data_spread_and_warmup() -> None:
    assert SideData(trial_statistics=(5.0,)).stddev_pct is None
    assert SideData(trial_statistics=(9.0, 11.0)).stddev_pct == pytest.approx(math.sqrt(2) / 10 * 100)
    rng = np.random.default_rng(1)
    values = np.concatenate([np.full(200, 200.0), 100.0 + rng.normal(0, 1, 2000)])
    series = TrialSeries(values)
    assert 150 <= series.warmup_end <= 260
    assert TrialSeries(values, steady_state_index=7).warmup_end == 7


def test_new_label_must_be_one_of_the_report_labels() -> None:
    with pytest.raises(ValueError, match="is not one of"):
        _report(metric_from_dict(_verdict(new_label="7.0")))


def test_one_spelling_rule_for_the_key_naming_the_sides() -> None:
    """compare's kernels and programs and export's sides name their key through one function."""
    assert [gobench_format.side_key(kind) for kind in ("kernel", "program", "side", None, "a kind!")] == [
        "kernel", "kbench-program", "kbench-side", "kbench-label", "kbench-a-kind"]
    assert gobench_format.config_line("kbench-side", "base\n  run") == "kbench-side: base run"


def test_compare_gobench_writes_the_shared_header() -> None:
    """compare --format gobench writes the header export --format gobench writes (gobench_format.header)."""
    report = _report(metric_from_dict(_verdict(metric="syscall.getppid.latency", unit="ns")))
    compared = gobench.render(report).splitlines()
    cpu = compared[3].removeprefix("cpu: ")
    assert compared[:5] == gobench_format.header({"ns/op": False}, arch="x86_64", cpu=cpu)
    assert compared[4] == "Unit ns/op better=lower assume=nothing"
