"""The trace room's pure parts on synthetic logs: storage, selection, sums, overhead, histograms, names."""

from __future__ import annotations

import math
import re
import struct

import numpy as np
import pytest

from kbench.engine.measurement import Measurement
from kbench.engine.series import metric_series
from kbench.trace.analysis import combine_keys, key_series, trace_json
from kbench.trace.log import (
    ENTRY_DTYPE,
    FLAG_UNBOUND,
    KIND_FUNCTION,
    KIND_RUN,
    KIND_TRACEPOINT,
    TRACE_FORMAT,
    TraceLog,
    TraceLogError,
    trace_log_of,
)
from kbench.trace.overhead import OverheadTable, tracepoint_overhead
from kbench.trace.plan import TracePlan, parse_key_sum
from kbench.trace.render import funclatency_lines, table_lines
from kbench.trace.report import run_trace_json, with_key_sums
from kbench.trace.selection import measured_entries
from kbench.trace.symbols import Kallsyms, UnknownFunction


def _log(rows: list[tuple[int, ...]], **context: object) -> TraceLog:
    """rows: (kind, key, cpu, pid, start, cycles[, flags, data])."""
    entries = np.zeros(len(rows), dtype=ENTRY_DTYPE)
    for i, row in enumerate(rows):
        kind, key, cpu, pid, start, cycles, *rest = row
        flags, data = [*rest, 0, 0][:2]
        entries[i] = (start, cycles, key, data, pid, cpu, kind, flags)
    return TraceLog(entries, tsc_khz=1000, **context)  # type: ignore[arg-type]


def test_entries_parse_from_the_kernel_layout_and_round_trip() -> None:
    raw = struct.pack("<QQIIIHBB", 1000, 25, 3, 7, 42, 1, KIND_TRACEPOINT, 1)
    raw += struct.pack("<QQIIIHBB", 2000, 30, 0, 9, 43, 0, KIND_FUNCTION, 0)
    log = TraceLog.from_bytes(raw, 2_000_000, names={3: "x"}, functions={0: "f"}, status={"overflow": "5"})
    assert log.n == 2 and log.overflow == 5
    assert log.entries[0].tolist() == (1000, 25, 3, 7, 42, 1, KIND_TRACEPOINT, 1)
    with pytest.raises(TraceLogError, match="whole number"):
        TraceLog.from_bytes(raw[:-1], 1)
    again = TraceLog.from_columns(log.to_columns(), log.context_json())
    embedded = TraceLog.from_embedded(log.to_embedded())
    for copy in (again, embedded):
        assert copy.entries.tobytes() == log.entries.tobytes()
        assert (copy.names, copy.functions, copy.status, copy.tsc_khz) == (
            log.names, log.functions, log.status, log.tsc_khz)
    assert next(iter(log.to_columns())) == "ticks"


def test_measured_entries_are_those_inside_the_last_runs_windows() -> None:
    rows = [
        (KIND_RUN, 1, 0, 9, 100, 100),  # an earlier run (calibration)
        (KIND_TRACEPOINT, 0, 0, 9, 150, 10),  # inside run 1 only
        (KIND_RUN, 2, 0, 9, 1000, 500),  # run 2, worker on CPU 0
        (KIND_RUN, 2, 1, 8, 1000, 500),  # run 2, worker on CPU 1
        (KIND_TRACEPOINT, 0, 0, 9, 1100, 50),  # inside, CPU 0
        (KIND_TRACEPOINT, 0, 1, 8, 1200, 50),  # inside, CPU 1
        (KIND_TRACEPOINT, 0, 0, 9, 1480, 50),  # ends after the window
        (KIND_TRACEPOINT, 0, 2, 7, 1100, 50),  # CPU 2 had no worker
        (KIND_FUNCTION, 0, 0, 9, 990, 5),  # before
    ]
    selection = measured_entries(_log(rows))
    assert sorted(selection.entries["start"].tolist()) == [1100, 1200]
    assert selection.outside == 4 and selection.windows.size == 2
    # An unbound worker's window takes entries of any CPU.
    unbound = [*rows[:2], (KIND_RUN, 2, 1, 9, 1000, 500, FLAG_UNBOUND), *rows[4:]]
    assert sorted(measured_entries(_log(unbound)).entries["start"].tolist()) == [1100, 1100, 1200]
    # Without windows everything counts.
    plain = [row for row in rows if row[0] != KIND_RUN]
    assert measured_entries(_log(plain)).entries.size == len(plain)


def _brute_force_sums(rows: list[tuple[int, ...]], keys: tuple[int, ...]) -> list[int]:
    """Consecutive runs of exactly ``keys`` per (pid, cpu) in start order, by brute force."""
    sums = []
    groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for kind, key, cpu, pid, start, cycles, *_ in rows:
        if kind == KIND_TRACEPOINT and key in keys:
            groups.setdefault((pid, cpu), []).append((start, key, cycles))
    for sequence in groups.values():
        sequence.sort()
        for i in range(len(sequence) - len(keys) + 1):
            window = sequence[i : i + len(keys)]
            if tuple(key for _, key, _ in window) == keys:
                sums.append(sum(cycles for _, _, cycles in window))
    return sorted(sums)


def test_keys_summed_along_a_path_agree_with_brute_force() -> None:
    rng = np.random.default_rng(7)
    rows: list[tuple[int, ...]] = []
    clock = 0
    for _ in range(400):
        pid, cpu = int(rng.integers(2)), int(rng.integers(2))
        taken = rng.random() < 0.6
        for key in (2, 3) if taken else (2,):  # the seed's example: 3 only on the path with c
            if rng.random() < 0.1:
                key = 5  # an unrelated key in between never joins a sum
            clock += int(rng.integers(1, 50))
            rows.append((KIND_TRACEPOINT, key, cpu, pid, clock, int(rng.integers(10, 100))))
    combined = combine_keys(_log(rows), (2, 3))
    assert sorted(combined.values.astype(int).tolist()) == _brute_force_sums(rows, (2, 3))
    assert combined.metric == "trace.key2+3.cycles" and combined.label == "keys 2+3"
    with pytest.raises(ValueError):
        combine_keys(_log(rows), (2,))


def test_key_sum_parsing() -> None:
    assert parse_key_sum("2+3") == (2, 3) and parse_key_sum("0+7+1") == (0, 7, 1)
    for bad in ("2", "2+2", "a+b", "-1+2", "2+"):
        with pytest.raises(ValueError):
            parse_key_sum(bad)


def test_nested_pair_tables_match_numpy() -> None:
    rng = np.random.default_rng(3)
    rows: list[tuple[int, ...]] = []
    outer_all, inner_all = [], []
    clock = 0
    for _ in range(300):
        cpu = int(rng.integers(2))
        inner = int(rng.integers(40, 60))
        before, after = int(rng.integers(100, 150)), int(rng.integers(100, 150))
        outer = before + inner + after
        rows.append((KIND_TRACEPOINT, 1, cpu, 5, clock + before, inner))  # the kernel logs inner first
        rows.append((KIND_TRACEPOINT, 0, cpu, 5, clock, outer))
        outer_all.append(outer)
        inner_all.append(inner)
        clock += outer + 10
    rows.append((KIND_TRACEPOINT, 1, 0, 5, clock + 1000, 50))  # an inner entry with no outer around it
    overhead = tracepoint_overhead(_log(rows))
    total = np.array(outer_all, dtype=float) - np.array(inner_all, dtype=float)
    effective = np.array(inner_all, dtype=float)
    for table, values in ((overhead.total, total), (overhead.effective, effective)):
        assert table.samples == 300
        assert (table.min, table.max) == (values.min(), values.max())
        assert table.mean == pytest.approx(values.mean())
        assert table.stdev == pytest.approx(values.std(ddof=1))
        assert table.stdev_pct == pytest.approx(100 * values.std(ddof=1) / values.mean())
    assert overhead.median_total == np.median(total)
    lines = table_lines("Total", overhead.total, "m")
    assert lines[1].split(" | ")[0].strip() == "Machine" and lines[3].split(" | ")[1].strip() == "300"
    assert math.isnan(OverheadTable.of(np.array([])).mean)


def test_funclatency_buckets_count_every_value() -> None:
    values = np.array([0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024], dtype=float)
    lines = funclatency_lines(values)
    assert lines[0].strip() == "cycles : count     distribution"
    buckets = {}
    for line in lines[1:]:
        matched = re.match(r"\s*(\d+) -> (\d+)\s*: (\d+)", line)
        assert matched is not None
        low, high, count = (int(x) for x in matched.groups())
        buckets[(low, high)] = count
        assert line.rstrip().endswith("|")
    expected = {(0, 0): 1, (1, 1): 1, (2, 3): 2, (4, 7): 2, (8, 15): 1}
    for e in range(4, 10):
        expected[(2**e, 2 ** (e + 1) - 1)] = 0
    expected[(512, 1023)] = 2
    expected[(1024, 2047)] = 1
    assert buckets == expected
    stars = [line.split("|")[1].count("*") for line in lines[1:]]
    assert max(stars) == 40 and funclatency_lines(np.array([])) == []


def test_series_and_json_per_function_and_key() -> None:
    rows = [(KIND_FUNCTION, 0, 0, 1, 10 * i, 100 + i) for i in range(30)]
    rows += [(KIND_TRACEPOINT, 3, 0, 1, 10 * i, 20 + i % 3) for i in range(10)]
    log = _log(rows, names={3: "lookup"}, functions={0: "fib_table_lookup"})
    found = key_series(log)
    assert [s.metric for s in found] == ["trace.fib_table_lookup.cycles", "trace.key3.cycles"]
    listed = trace_json(log)
    function, key = listed
    assert (function["name"], function["count"], function["min"], function["max"]) == (
        "fib_table_lookup", 30, 100, 129)
    assert function["median"] == np.median(np.arange(100, 130)) and function["unit"] == "cycles"
    assert function["mad"] == np.median(np.abs(np.arange(100, 130) - np.median(np.arange(100, 130))))
    assert (key["key"], key["name"], key["count"]) == (3, "lookup", 10)
    # A trace run's columns give one metric series per function and key, the metric first.
    header = {"format": TRACE_FORMAT, "trace": {**log.context_json(), "sums": []}}
    measurement = Measurement(header=header, columns=log.to_columns(), interrupted=False, stderr="")
    series = metric_series(measurement, "trace.key3.cycles", "cycles", "lower")
    assert [s.name for s in series] == ["trace.key3.cycles", "trace.fib_table_lookup.cycles"]
    assert trace_log_of(header, measurement.columns) is not None
    # A kfunc run carries its log in the header instead.
    kfunc = Measurement(header={"trace": log.to_embedded()}, columns={"ticks": np.arange(5, dtype=np.uint64)},
                        interrupted=False, stderr="")
    assert [item["count"] for item in run_trace_json(kfunc)["trace"]] == [30, 10]


def test_kallsyms_names_and_near_matches() -> None:
    text = "\n".join([
        "ffffffff818da640 T fib_table_lookup",
        "ffffffff818da000 t __fib_lookup",
        "ffffffff81000000 D jiffies",
        "ffffffffc0000000 t mod_func\t[mymod]",
        "ffffffff81100000 T __x64_sys_getppid",
    ])
    symbols = Kallsyms.parse(text)
    symbols.check("fib_table_lookup")
    symbols.check("mymod:mod_func")
    with pytest.raises(UnknownFunction, match=r"no function fib_lookup .*near matches: __fib_lookup"):
        symbols.check("fib_lookup")
    with pytest.raises(UnknownFunction, match=r"fib_table_lookupp .*near matches: fib_table_lookup"):
        symbols.check("fib_table_lookupp")
    with pytest.raises(UnknownFunction, match="not a function"):
        symbols.check("jiffies")
    with pytest.raises(UnknownFunction, match="no function othermod:mod_func"):
        symbols.check("othermod:mod_func")
    with pytest.raises(UnknownFunction, match="not a kernel symbol name"):
        symbols.check("a b")


def test_a_trace_plan_needs_something_to_trace_and_one_workload() -> None:
    with pytest.raises(ValueError, match="name what to trace"):
        TracePlan(functions=(), command="true")
    with pytest.raises(ValueError, match="either a benchmark"):
        TracePlan(functions=("f",))
    plan = TracePlan(functions=(), keys=(3,), command="true", sums=((2, 3),))
    assert plan.metric == "trace.key3.cycles"
    assert plan.params() == {"functions": "", "keys": "3", "sums": "2+3", "command": "true"}
    assert plan.benchmark().params[0].name == "functions"


def test_a_stored_runs_report_can_ask_for_key_sums() -> None:
    rows = [(KIND_TRACEPOINT, 2, 0, 1, 100 * i, 10) for i in range(5)]
    rows += [(KIND_TRACEPOINT, 3, 0, 1, 100 * i + 20, 7) for i in range(5)]
    log = _log(rows)
    kfunc = Measurement(header={"trace": log.to_embedded()}, columns={"ticks": np.arange(3, dtype=np.uint64)},
                        interrupted=False, stderr="")
    listed = run_trace_json(with_key_sums(kfunc, [(2, 3)]))["trace"]
    assert [(item["label"], item["count"]) for item in listed] == [("key 2", 5), ("key 3", 5), ("keys 2+3", 5)]
    assert listed[2]["median"] == 17
    with pytest.raises(ValueError, match="no trace log"):
        with_key_sums(Measurement(header={}, columns={}, interrupted=False, stderr=""), [(2, 3)])
