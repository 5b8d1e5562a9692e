"""``kbench job expand|validate`` through the real command line (exit codes 0 and 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.unit.test_jobs import JOBS

BAD = JOBS / "bad"


def kbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbench.cli", *args],
        capture_output=True, text=True, timeout=60, cwd=BAD, env=dict(os.environ, COLUMNS="200"),
    )


def test_expand_lists_ids_benchmarks_and_varying_keys() -> None:
    proc = kbench("job", "expand", str(JOBS / "good" / "matrix-2x3.yaml"), "--cpus", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["id", "benchmark", "size"]
    assert [line.split()[1:] for line in lines[1:7]] == [
        [bench, size] for bench in ("syscall.read_devzero", "syscall.pread") for size in ("1", "64", "4096")
    ]
    assert lines[7] == "6 instances (benchmark × size) for 2 CPUs"


def test_expand_json_has_every_instance_and_its_run_request() -> None:
    proc = kbench("job", "expand", str(JOBS / "good" / "matrix-2x3.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["varying"] == ["benchmark", "size"]
    assert len(data["instances"]) == 6
    first = data["instances"][0]
    assert first["run_request"]["params"] == {"size": "1"}
    assert first["run_request"]["tags"] == ["read-sizes", f"job:{first['id']}"]


def test_validate_accepts_a_good_file() -> None:
    proc = kbench("job", "validate", str(JOBS / "good" / "matrix-2x3.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("matrix-2x3.yaml: valid, 6 instances\n")


def test_invalid_file_exits_2_printing_every_problem() -> None:
    for command in ("validate", "expand"):
        proc = kbench("job", command, "wrong-types.yaml", "--cpus", "2")
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert proc.stderr.splitlines()[:5] == [
            "wrong-types.yaml:2: samples: must be an integer >= 1, got 'many'",
            "wrong-types.yaml:3: cpu: there is no CPU 9 among 2 CPUs (0-1)",
            "wrong-types.yaml:4: subtract_overhead: must be true or false, got 3",
            "wrong-types.yaml:5: warmup: must be a sample count (1000) or a duration with a unit (0.5s), got 0.5",
            "wrong-types.yaml:6: tags: must be a tag or a flat list of tags (tags are not a matrix)",
        ]
        assert "invalid job file: 5 problems; nothing was run" in proc.stderr


def test_missing_file_exits_2() -> None:
    proc = kbench("job", "validate", "no-such-job.yaml")
    assert proc.returncode == 2
    assert proc.stderr.startswith("no-such-job.yaml: job: cannot read the file: No such file or directory\n")
