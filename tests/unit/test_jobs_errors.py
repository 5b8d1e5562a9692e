"""The bad-job corpus: every malformed file yields exactly its expected problems."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from kbench.jobs import JobError, expand_job
from tests.unit.test_jobs import JOBS, scalability_stand_ins

__all__ = ["scalability_stand_ins"]  # a fixture used below

BAD = JOBS / "bad"


def _expected() -> dict[str, list[str]]:
    table: dict[str, list[str]] = defaultdict(list)
    for line in (BAD / "expected.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            table[line.split(":", 1)[0]].append(line)
    return table


EXPECTED = _expected()


def test_the_corpus_is_complete() -> None:
    files = sorted(p.name for p in BAD.glob("*.yaml"))
    assert len(files) >= 15
    assert sorted(EXPECTED) == files


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_job_reports_exactly_its_problems(
    scalability_stand_ins: None, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(BAD)
    with pytest.raises(JobError) as caught:
        expand_job(Path(name), cpu_count=2)
    assert [str(problem) for problem in caught.value.problems] == EXPECTED[name]
