"""``kbench compare --fail-on regression``: the documented exit code on a real 1% regression,
0 on an A/A pair, and the report printed in full either way."""

from __future__ import annotations

import subprocess

from tests.e2e.conftest import KbenchRunner, as_json
from tests.history.test_fail_on import documented_fail_on_code

# getppid followed by 406 instead of 400 steps of dependent arithmetic (the probe's `spin`
# parameter, tests/integration/test_probe_spin.py): about 1% more work per call. The medians of
# the interleaved slots put it at +1.1% (CI +1.0…+1.3%, p < 1e-19 after 120 blocks in 2.4 s) on
# this loaded 2-CPU VM (load average 6.8), so at alpha 0.01 a miss is out of reach of chance.
ONE_PERCENT = ("syscall.getppid", "-p", "spin=400|406")


def test_a_real_one_percent_regression_fails_the_gate(kbench: KbenchRunner) -> None:
    proc = kbench("compare", *ONE_PERCENT, "--margin", "0.5%", "--budget", "10s", "--alpha", "0.01",
                  "--json", "--fail-on", "regression", check=False)
    assert proc.returncode == documented_fail_on_code(), proc.stderr
    (metric,) = as_json(proc)["metrics"]
    assert metric["verdict"] == "regression" and 0.5 < metric["change_pct"] < 3.0, metric
    assert "--fail-on regression: found 1 regression (syscall.getppid.latency)" in proc.stderr
    improvement_gate = kbench("compare", *_stored_sides(proc), "--fail-on", "improvement", check=False)
    assert improvement_gate.returncode == 0, improvement_gate.stderr
    assert "regression" in improvement_gate.stdout


def test_an_a_a_pair_passes_the_gate(kbench: KbenchRunner) -> None:
    # The same program on both sides. At alpha 0.001 the interleaved design calls an A/A pair
    # different at most once in a thousand comparisons (its alpha spending bounds it), so this
    # fails that rarely; a noisy machine makes it inconclusive, which passes the gate too.
    proc = kbench("compare", "--command", "sleep 0.05", "--command", "sleep 0.05 ", "-p", "shell=0",
                  "--budget", "6s", "--alpha", "0.001", "--fail-on", "regression,improvement", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "command.cpu" in proc.stdout and "fail-on" not in proc.stderr


def _stored_sides(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """``--runs A --runs B``: the runs the comparison stored, one per side."""
    runs = dict(item.rsplit("=", 1) for item in as_json(proc)["parameters"]["runs"].split())
    return ["--runs", runs["spin=400"], "--runs", runs["spin=406"]]
