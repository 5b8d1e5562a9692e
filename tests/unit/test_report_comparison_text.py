"""The LKP/0-Day style text comparison: table alignment, numbers, headlines, overall summary."""

from __future__ import annotations

import math
import re
import statistics

import pytest

from kbench.report.comparison import FORMATS
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData
from kbench.report.comparison.text import render, table_lines

GETPPID_BASE_TRIALS = (74.0, 76.0, 78.0, 77.0)
GETPPID_NEW_TRIALS = (78.5, 78.7, 78.6, 78.9)


def _report(**overrides: object) -> ComparisonReport:
    metrics = (
        MetricComparison(
            metric="syscall.getppid.latency", unit="ns", direction="lower", base=76.3, new=78.66,
            change_pct=3.1, ci_pct=(2.7, 3.5), p_value=0.002, verdict="regression", trials=(4, 4),
            reason="p < 0.05 and |change| >= 1%",
            base_data=SideData(trial_statistics=GETPPID_BASE_TRIALS),
            new_data=SideData(trial_statistics=GETPPID_NEW_TRIALS),
        ),
        MetricComparison(
            metric="will-it-scale.mmap1.per_process_ops", unit="ops", direction="higher", base=512400.0,
            new=513000.0, change_pct=0.12, ci_pct=(-0.4, 0.6), p_value=0.61, verdict="no change",
            trials=(1, 1), base_data=SideData(trial_statistics=(512400.0,)),
            new_data=SideData(trial_statistics=(513000.0,)),
        ),
        MetricComparison(
            metric="syscall.writev.latency", unit="ns", direction="lower", base=1840.0, new=1726.0,
            change_pct=-6.2, ci_pct=(-6.9, -5.5), p_value=0.0004, verdict="improvement", trials=(4, 4),
            base_data=SideData(trial_statistics=(1800.0, 1840.0, 1880.0, 1840.0)),
            new_data=SideData(trial_statistics=(1720.0, 1726.0, 1731.0, 1726.0)),
        ),
    )
    fields: dict[str, object] = {
        "title": "getppid on two kernels",
        "base_label": "6.1.0-56-amd64",
        "new_labels": ("6.12.5",),
        "metrics": metrics,
        "context": {"cpu": "Xeon 8370C", "virtualisation": "kvm"},
        "parameters": {"trials": 4, "interleaving": "ABAB"},
        "correction": "holm",
    }
    fields.update(overrides)
    return ComparisonReport(**fields)  # type: ignore[arg-type]


def _rows(lines: list[str]) -> dict[str, str]:
    """Each row by its metric's name (the last word, or the one before a count's ``(unit)``)."""
    return {line.split()[-2] if line.endswith(")") else line.split()[-1]: line for line in lines[4:]}


def _ends(line: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\S+", line)]


def test_table_columns_line_up_on_their_last_character() -> None:
    lines = table_lines(_report())
    names, marks = lines[2], lines[3]
    stddev1, change, stddev2 = _ends(names)  # "%stddev  %change  %stddev"
    value1, _, value2 = _ends(marks)  # "\\  |  \\" under base value, change, new value
    rows = list(_rows(lines).values())
    assert len(rows) == 3
    for row in rows:
        ends = _ends(row)
        if "±" in row:  # base ± N%  change  new ± N%  metric
            assert ends[:7] == [value1, value1 + 2, stddev1, change, value2, value2 + 2, stddev2], row
        else:
            assert ends[:3] == [value1, change, value2], row
    assert len({row.index(name) for name, row in _rows(lines).items()}) == 1  # metric names start together


def test_table_numbers_are_the_report_values_and_trial_spread() -> None:
    rows = _rows(table_lines(_report()))
    getppid = rows["syscall.getppid.latency"]
    base_pct = statistics.stdev(GETPPID_BASE_TRIALS) / statistics.mean(GETPPID_BASE_TRIALS) * 100
    new_pct = statistics.stdev(GETPPID_NEW_TRIALS) / statistics.mean(GETPPID_NEW_TRIALS) * 100
    assert round(base_pct) == 2 and round(new_pct) == 0  # the data was chosen for this
    # times in their unit, scaled: 76.30 ns, 1840 ns as 1.840 µs
    assert getppid.split() == ["76.30ns", "±", "2%", "+3.1%", "78.66ns", "±", "0%", "syscall.getppid.latency"]
    writev = rows["syscall.writev.latency"]
    assert writev.split()[:4] == ["1.840µs", "±", "2%", "-6.2%"]
    assert writev.split()[4] == "1.726µs"


def test_stddev_is_left_out_with_a_single_trial() -> None:
    row = _rows(table_lines(_report()))["will-it-scale.mmap1.per_process_ops"]
    assert "±" not in row
    # a count with an SI prefix (512400 ops = 512.4k), its unit beside the name
    assert row.split() == ["512.4k", "+0.1%", "513.0k", "will-it-scale.mmap1.per_process_ops", "(ops)"]


def test_header_names_both_sides_above_their_columns() -> None:
    lines = table_lines(_report())
    assert lines[0].startswith("6.1.0-56-amd64")
    new_value_end = len(_rows(lines)["syscall.getppid.latency"].split("±")[1].rstrip())
    assert lines[0].rstrip().endswith("6.12.5")
    assert set(lines[1]) <= {"-", " "}
    row = _rows(lines)["syscall.getppid.latency"]
    assert len(lines[0].rstrip()) == row.index("78.66ns") + len("78.66ns")
    assert new_value_end > 0


def test_headlines_for_regressions_then_improvements() -> None:
    text = render(_report())
    assert (
        "syscall.getppid.latency on kernel 6.12.5 has a +3.1% (CI +2.7…+3.5%, p=0.002) "
        "regression compared to 6.1.0-56-amd64"
    ) in text
    assert (
        "syscall.writev.latency on kernel 6.12.5 has a -6.2% (CI -6.9…-5.5%, p=0.0004) "
        "improvement compared to 6.1.0-56-amd64"
    ) in text
    assert text.index("regression compared") < text.index("improvement compared")
    # three metrics: every one gets a line that states its own verdict
    assert "will-it-scale.mmap1.per_process_ops on kernel 6.12.5: no change: " in text


def test_beyond_three_metrics_the_unchanged_ones_share_a_line() -> None:
    base = _report()
    extra = tuple(
        MetricComparison(metric=f"m{i}", unit="ns", direction="lower", base=1.0, new=1.0, change_pct=0.0,
                         ci_pct=(-0.1, 0.1), p_value=0.9, verdict="no change", trials=(5, 5))
        for i in range(3)
    )
    text = render(_report(metrics=(*base.metrics, *extra)))
    assert "no change in 4 other metrics compared to 6.1.0-56-amd64" in text
    assert "m0 on kernel" not in text


def test_overall_geometric_mean_is_direction_aware() -> None:
    text = render(_report())
    # each metric's change towards worse: getppid +3.1 % (lower is better: new/base), writev
    # -6.2 % (lower is better), mmap1 +0.12 % (higher is better: base/new)
    towards_worse = [1.031, 0.938, 1 / 1.0012]
    pct = (statistics.geometric_mean(towards_worse) - 1) * 100
    assert pct < 0
    assert f"kernel 6.12.5 is {abs(pct):.1f}% better overall vs 6.1.0-56-amd64" in text
    assert "over 3 metrics; 1 regression, 1 improvement, 1 no change" in text


def test_overall_worse_when_the_regressions_weigh_more() -> None:
    report = _report()
    worse = _report(metrics=report.metrics[:2])
    towards_worse = [1.031, 1 / 1.0012]
    pct = (statistics.geometric_mean(towards_worse) - 1) * 100
    assert pct > 0
    assert f"{abs(pct):.1f}% worse overall" in render(worse)


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_one_change_is_printed_with_one_figure(fmt: str) -> None:
    # One metric 90.8 % slower: "+90.8%" is its size; an overall line would have added
    # "47.6% worse" (1 - 1/1.908), a second size for the same change.
    slower = MetricComparison(
        metric="command.wall", unit="ns", direction="lower", base=10.0e6, new=19.08e6, change_pct=90.8,
        ci_pct=(85.0, 96.0), p_value=0.001, verdict="regression", trials=(10, 10),
    )
    text = FORMATS[fmt](_report(metrics=(slower,)))
    assert "+90.8%" in text
    assert not re.search(r"47\.6\s*%|\boverall\b(?! \{)", text)  # (the HTML's CSS names an .overall class)


def test_equal_changes_give_the_same_overall_figure() -> None:
    # Two lower-is-better metrics both +27.9 %: the overall is +27.9 % worse, not 21.8 % (1 - 1/1.279).
    both = tuple(
        MetricComparison(metric=f"m{i}", unit="ns", direction="lower", base=100.0, new=127.9, change_pct=27.9,
                         ci_pct=(25.0, 31.0), p_value=0.001, verdict="regression", trials=(8, 8))
        for i in range(2)
    )
    text = render(_report(metrics=both))
    assert "kernel 6.12.5 is 27.9% worse overall" in text and "21.8" not in text


def test_machine_and_parameters_follow_the_table() -> None:
    text = render(_report())
    assert text.index("%change") < text.index("machine:") < text.index("test parameters:")
    assert "  cpu             Xeon 8370C" in text
    assert "  interleaving  ABAB" in text
    assert "(holm)" in text


def test_several_new_labels_get_a_block_each() -> None:
    base = _report()
    second = [
        MetricComparison(
            metric=m.metric, unit=m.unit, direction=m.direction, base=m.base, new=m.base * 1.01,
            change_pct=1.0, ci_pct=(0.5, 1.5), p_value=0.04, verdict="no change", trials=m.trials,
            new_label="6.13.1",
        )
        for m in base.metrics
    ]
    report = _report(new_labels=("6.12.5", "6.13.1"), metrics=(*base.metrics, *second))
    lines = table_lines(report)
    assert lines[2].count("%change") == 2
    row = next(line for line in lines if line.endswith("syscall.getppid.latency"))
    assert "+3.1%" in row and "+1.0%" in row
    assert row.index("+3.1%") < row.index("+1.0%")
    assert len(lines) == 4 + 3


def test_nan_values_do_not_break_the_table() -> None:
    m = _report().metrics[0]
    broken = MetricComparison(
        metric="x.y.z", unit="ns", direction="lower", base=0.0, new=math.nan, change_pct=math.nan,
        ci_pct=(math.nan, math.nan), p_value=math.nan, verdict="inconclusive", trials=(2, 2),
        base_data=m.base_data,
    )
    text = render(_report(metrics=(broken,)))
    assert "0ns" in text and "x.y.z" in text
    assert "nan" not in text.lower()
    assert "x.y.z on kernel 6.12.5: inconclusive compared to" in text and "CI n/a" in text
    assert "overall" not in text


def test_text_is_registered() -> None:
    assert FORMATS["text"] is render


def test_a_report_needs_a_new_label() -> None:
    with pytest.raises(ValueError, match="at least one new label"):
        _report(new_labels=())


def test_an_unchanged_label_has_no_overall_change() -> None:
    same = tuple(
        MetricComparison(metric=f"m{i}", unit="ns", direction="lower", base=100.0, new=100.4, change_pct=0.01,
                         ci_pct=(-0.2, 0.2), p_value=0.9, verdict="no change", trials=(5, 5))
        for i in range(2)
    )
    text = render(_report(metrics=same))
    # the medians differ by 0.4 %, the verdicts' estimates by 0.01 %: the estimates decide
    assert "kernel 6.12.5 has no overall change (within 0.05%) vs 6.1.0-56-amd64" in text


def test_long_side_labels_never_run_together_in_the_header() -> None:
    base = _report()
    report = _report(base_label="runs 31,32,33,34,35,36,37,38,39", new_labels=("runs 40,41,42,43,44,45,46,47,48",))
    title, rule = table_lines(report)[:2]
    # each label sits over its own block of the rule, with a blank between them
    blocks = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+)*", title)]
    assert len(words) == 2, title
    for (w_start, w_end), (b_start, b_end) in zip(words, blocks, strict=True):
        assert b_start <= w_start and w_end <= b_end, (title, rule)
    assert "runs 31" in title and "runs 40" in title and "39runs" not in title
    assert base.base_label in table_lines(base)[0]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_a_real_change_inside_the_margin_is_said_as_one(fmt: str) -> None:
    import json

    # spin=100|101: +0.4%, CI +0.3…+0.5%, inside ±0.5%: a real regression, smaller than the margin
    small = MetricComparison(
        metric="syscall.getppid.latency", unit="ns", direction="lower", base=250.0, new=251.0, change_pct=0.4,
        ci_pct=(0.3, 0.5), p_value=0.0001, verdict="regression", trials=(40, 40), margin_pct=0.5,
    )
    straddling = MetricComparison(
        metric="syscall.getpid.latency", unit="ns", direction="lower", base=250.0, new=250.1, change_pct=0.04,
        ci_pct=(-0.2, 0.3), p_value=0.7, verdict="no change", trials=(40, 40), margin_pct=0.5,
    )
    text = FORMATS[fmt](_report(metrics=(small, straddling)))
    if fmt == "json":
        real, unclear = json.loads(text)["metrics"]
        assert real["real_within_margin"] is True and unclear["real_within_margin"] is False
        return
    assert "+0.4% (CI +0.3…+0.5%, p=0.0001, smaller than the ±0.5% margin) regression" in text
    assert "syscall.getpid.latency on kernel 6.12.5: no change: within ±0.5%, compared to 6.1.0-56-amd64 " \
           "(+0.0%, CI -0.2…+0.3%)" in text


def test_an_empty_mapping_of_parameters_prints_a_dash_not_braces() -> None:
    text = render(_report(parameters={"params": {}, "trials": 4}))
    (line,) = [line for line in text.splitlines() if line.strip().startswith("params")]
    assert line.split() == ["params", "-"]


def test_a_programs_cpu_and_wall_time_are_one_change_without_an_overall_third_size() -> None:
    # compare --command ./a --command ./b: command.cpu +1.2% (judged) and command.wall +0.2% are
    # two measures of one program's change; their geometric mean (+0.7%) would be a third size.
    cpu = MetricComparison(metric="command.cpu", unit="ns", direction="lower", base=90.76e6, new=91.82e6,
                           change_pct=1.2, ci_pct=(0.4, 2.3), p_value=0.0078, verdict="regression", trials=(8, 8))
    wall = MetricComparison(metric="command.wall", unit="ns", direction="lower", base=325.8e6, new=348.8e6,
                            change_pct=0.2, ci_pct=(-11.1, 12.5), p_value=0.82, verdict="no change", trials=(8, 8))
    text = render(_report(metrics=(cpu, wall)))
    assert "+1.2%" in text and "+0.2%" in text
    assert "overall" not in text.replace("overall alpha", "") and "0.7%" not in text
