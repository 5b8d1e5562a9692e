"""The terminal's histogram and CDF of one run, checked against counts made here."""

from __future__ import annotations

import re

import numpy as np

from kbench.report.terminal import CDF_WIDTH, body_histogram_lines, cdf_lines

ROW = re.compile(r"^\s+(\d\.\d) │(.*)$")


def _rows(lines: list[str]) -> dict[float, str]:
    return {float(m.group(1)): m.group(2) for line in lines if (m := ROW.match(line))}


def test_the_cdf_draws_each_column_on_the_row_of_its_fraction() -> None:
    # 90% of the values at 5 ns, the rest spread up to 50 ns: past 5 ns the CDF is 0.9 until
    # the tail rises, so most columns belong on the 0.9 row, none on 1.0 before F reaches 0.95.
    rng = np.random.default_rng(7)
    values = np.concatenate([np.full(9000, 5.0), rng.uniform(5.0, 50.0, 1000)])
    rows = _rows(cdf_lines(values, "ns"))
    assert sorted(rows) == [round(0.1 * i, 1) for i in range(11)]
    lo, hi = np.quantile(values, [0.005, 0.995])
    for column, x in enumerate(np.linspace(lo, hi, CDF_WIDTH)):
        fraction = sum(1 for v in values if v <= x) / values.size  # F(x), counted one by one
        expected_row = round(int(fraction * 10 + 0.5) / 10, 1)
        marked = [level for level, cells in rows.items() if cells[column] == "•"]
        assert marked == [expected_row], (column, x, fraction, marked)
    assert rows[0.9].count("•") > CDF_WIDTH // 2


def test_the_histogram_lines_count_every_value_once_in_whole_timer_steps() -> None:
    # Quantized like getppid at batch 16 on a timer stepping by 10.01 ns: no bin may be empty
    # between full ones because it fell between two possible values.
    step = 10.01 / 16
    rng = np.random.default_rng(1)
    values = 118.9 + step * np.concatenate([rng.integers(0, 40, 19_000), rng.integers(40, 60, 1000)])
    lines = body_histogram_lines(values, "ns")
    counted = [int(re.search(r"(\d+) \(\d+\.\d%\)", line).group(1)) for line in lines]
    assert sum(counted) == values.size
    shares = [float(re.search(r"\((\d+\.\d)%\)", line).group(1)) for line in lines]
    for count, share in zip(counted, shares, strict=True):  # every share is of all the values
        assert share == round(100 * count / values.size, 1), (count, share)
    bins = [line for line in lines if line.lstrip().startswith("[")]
    body_counts = [int(re.search(r"(\d+) \(", line).group(1)) for line in bins]
    assert 0 not in body_counts
    # The uniform part spans 40 possible values, ~475 draws each: bins holding the same number
    # of them differ by sampling noise only (a few %); bins holding 2 and 3 in turn differ by 50%.
    heavy = [count for count in body_counts if count > 0.3 * max(body_counts)][:-1]  # the last may be cut
    assert len(heavy) >= 5 and max(heavy) / min(heavy) < 1.2, body_counts
