"""A watch of a counted job (``metric: instructions``) finds its candidates in the counts' series."""

from __future__ import annotations

from pathlib import Path

from kbench.jobs import expand_job
from kbench.watch.series import watched_metric


def test_a_counted_instance_is_watched_by_its_instructions(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("benchmark: command\nparams: {cmd: ./prog}\nmetric: [instructions, time]\n")
    counted, timed = expand_job(job, cpu_count=2)
    assert (counted.metric, timed.metric) == ("instructions", None)
    assert watched_metric(counted) == "command.instructions"
    assert watched_metric(timed) == "command.cpu"
    assert counted.id != timed.id
