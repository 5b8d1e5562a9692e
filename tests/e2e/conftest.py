"""Helpers for driving the real ``kbench`` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

KbenchRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"


@pytest.fixture
def kbench(db_path: Path) -> KbenchRunner:
    """Run ``python -m kbench.cli`` with a private SQLite database."""

    def run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, KBENCH_DB=str(db_path), COLUMNS="120")
        proc = subprocess.run(
            [sys.executable, "-m", "kbench.cli", *args],
            capture_output=True, text=True, env=env, timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kbench {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return proc

    return run


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)
