"""numpy's first import under ``kbench`` loads OpenBLAS with one thread (kbench/cli/blas_threads.py),
and the variable that says so does not reach the processes kbench starts afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPORT = """
import json, os, subprocess, sys
from kbench.cli.blas_threads import load_numpy_with_one_thread
load_numpy_with_one_thread()
import numpy
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(json.dumps({"threads": len(os.listdir("/proc/self/task")), "here": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "child": child, "sum": float(numpy.arange(10.0).sum())}))
"""
PLAIN = "import os, numpy; print(len(os.listdir('/proc/self/task')))"


def run(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                                     "GOTO_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**environment, **env}).stdout.strip()


def test_numpy_loads_one_blas_thread_and_children_do_not_inherit_the_setting() -> None:
    report = json.loads(run(REPORT))
    assert report["threads"] == int(run(PLAIN, OPENBLAS_NUM_THREADS="1"))  # as if the user had set it
    assert report["here"] is None
    assert report["child"] == "None"
    assert report["sum"] == 45.0


def test_a_thread_count_the_user_chose_is_kept() -> None:
    report = json.loads(run(REPORT, OMP_NUM_THREADS="2"))
    assert report["threads"] == int(run(PLAIN, OMP_NUM_THREADS="2"))
    report = json.loads(run(REPORT, OPENBLAS_NUM_THREADS="2"))
    assert report["here"] == "2" and report["child"] == "2"
