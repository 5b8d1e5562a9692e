"""A job file's ``kernel: tree:PATH[@REV]``: accepted as a target, its tree taken from the job
file's folder when relative, as a kernel image path is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.engine.job_runner import _resolved_target
from kbench.jobs.expand import expand_job
from kbench.jobs.problems import JobError


def _targets(tmp_path: Path, kernel: str) -> list[str]:
    job = tmp_path / "jobs" / "job.yaml"
    job.parent.mkdir(exist_ok=True)
    job.write_text(f"suite: syscall\ntest: getppid\nkernel: {kernel}\n")
    return [_resolved_target(instance) for instance in expand_job(job, cpu_count=2)]


def test_a_tree_kernel_is_a_target_and_a_relative_tree_is_the_job_files_neighbour(tmp_path: Path) -> None:
    assert _targets(tmp_path, "tree:linux@HEAD~1") == [f"tree:{tmp_path / 'jobs' / 'linux@HEAD~1'}"]
    assert _targets(tmp_path, "tree:/src/linux@v6.1") == ["tree:/src/linux@v6.1"]
    assert _targets(tmp_path, "tree:~/linux") == ["tree:~/linux"]  # the spec reader expands ~
    assert _targets(tmp_path, "[tree:a@main, tree:a@main~1]") == [
        f"tree:{tmp_path / 'jobs' / 'a@main'}", f"tree:{tmp_path / 'jobs' / 'a@main~1'}"]


def test_an_empty_tree_is_refused_with_the_targets_there_are(tmp_path: Path) -> None:
    with pytest.raises(JobError) as refused:
        _targets(tmp_path, "'tree:'")
    assert "tree:PATH[@REV]" in str(refused.value.problems[0])
