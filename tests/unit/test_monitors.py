"""LKP's monitors from snapshots of the kernel's counters (kbench.profile.monitors) and the sampler that
takes them (kbench.kinds.suite.monitoring).

tests/data/monitors/two-snapshots.txt holds two real snapshots of this machine's /proc/stat, /proc/vmstat,
/proc/meminfo and /proc/interrupts, taken around a hackbench run; each figure is checked against the
counter read out of the raw text here with a regular expression of its own. The sampler runs for real.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kbench.kinds.suite.monitoring import MonitoringTools, reader_script, sampler_script
from kbench.profile.monitors import MonitorError, monitor_values, parse_snapshots, sources
from kbench.suites import LocalTools

DATA = Path(__file__).resolve().parents[1] / "data" / "monitors" / "two-snapshots.txt"


def raw(text: str, pattern: str) -> list[float]:
    return [float(v) for v in re.findall(pattern, text, flags=re.MULTILINE)]


def test_figures_are_the_kernels_counters_over_the_run() -> None:
    text = DATA.read_text()
    snapshots = parse_snapshots(text)
    assert len(snapshots) == 2
    up = raw(text, r"^@@ ([0-9.]+)")
    seconds = up[1] - up[0]
    values = {v.name: v for v in monitor_values(("vmstat", "mpstat", "proc-vmstat", "interrupts"), snapshots)}
    ctxt, intr = raw(text, r"^ctxt (\d+)"), raw(text, r"^intr (\d+)")
    assert values["vmstat.system.cs"].value == pytest.approx((ctxt[1] - ctxt[0]) / seconds)
    assert values["vmstat.system.in"].value == pytest.approx((intr[1] - intr[0]) / seconds)
    faults = raw(text, r"^pgfault (\d+)")
    assert values["proc-vmstat.pgfault"].value == faults[1] - faults[0] and values["proc-vmstat.pgfault"].unit == \
        "events"
    free = raw(text, r"^MemFree:\s+(\d+) kB")
    assert values["vmstat.memory.free"].value == pytest.approx(sum(free) / 2)
    nr_free = raw(text, r"^nr_free_pages (\d+)")
    assert values["proc-vmstat.nr_free_pages"].value == pytest.approx(sum(nr_free) / 2)
    cpu = [[float(x) for x in line.split()[1:]] for line in re.findall(r"^cpu .*$", text, flags=re.MULTILINE)]
    jiffies = [b - a for a, b in zip(cpu[0], cpu[1], strict=True)]
    total = sum(jiffies[:8])
    assert values["mpstat.cpu.all.usr"].value == pytest.approx(100 * jiffies[0] / total)
    assert values["vmstat.cpu.sy"].value == pytest.approx(100 * (jiffies[2] + jiffies[5] + jiffies[6]) / total)
    assert sum(values[f"mpstat.cpu.all.{c}"].value for c in ("usr", "nice", "sys", "iowait", "irq", "soft",
                                                              "steal", "idle")) == pytest.approx(100)
    loc = [sum(float(v) for v in line.split()[1:3]) for line in re.findall(r"^\s*LOC:.*$", text, flags=re.MULTILINE)]
    assert values["interrupts.LOC:Local_timer_interrupts"].value == loc[1] - loc[0]


def test_snapshots_that_cannot_be_read_are_refused() -> None:
    one = DATA.read_text().split("@@ ")[1]
    with pytest.raises(MonitorError, match="1 snapshot"):
        monitor_values(("vmstat",), parse_snapshots("@@ " + one))
    without_meminfo = re.sub(r"== meminfo\n(?:(?!==|@@).*\n)*", "", DATA.read_text())
    with pytest.raises(MonitorError, match="lacks /proc/meminfo"):
        monitor_values(("vmstat",), parse_snapshots(without_meminfo))
    assert sources(("mpstat", "vmstat")) == ("stat", "vmstat", "meminfo")


def test_the_sampler_takes_a_snapshot_every_interval_and_keeps_the_tools_exit(tmp_path: Path) -> None:
    script = sampler_script(("stat", "vmstat"), 0.5, str(tmp_path))
    done = subprocess.run(["sh", "-c", script, "sh", "sh", "-c", "sleep 2.2; echo out; exit 3"],
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (3, "out\n")  # the tool's own output and exit status
    read = subprocess.run(["sh", "-c", reader_script(str(tmp_path))], capture_output=True, text=True, timeout=30)
    snapshots = parse_snapshots(read.stdout)
    assert 5 <= len(snapshots) <= 7, [s.uptime for s in snapshots]  # before, every 0.5 s, after
    assert snapshots[-1].uptime - snapshots[0].uptime == pytest.approx(2.2, abs=0.3)
    assert all(set(s.files) == {"stat", "vmstat"} for s in snapshots)
    assert list(tmp_path.iterdir()) == []  # the reader removes them


def test_monitored_tool_keeps_zero_free_metrics_only(tmp_path: Path) -> None:
    tools = MonitoringTools(LocalTools(), {"vmstat": 1.0, "interrupts": 1.0})
    for _ in range(2):
        finished = tools.run(["true"], executable="/bin/true", cwd=str(tmp_path), timeout=30)
        assert finished.exit_code == 0
    columns = tools.columns()
    assert all(len(values) == 2 and any(v != 0 for v in values) for _, _, values in columns.values())
    assert "vmstat.memory.free" in columns and columns["vmstat.memory.free"][0] == "kB"
