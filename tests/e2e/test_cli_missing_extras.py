"""A command that needs an extra which is not installed says so in one line and exits 16.

Each case runs the real ``kbench`` in a subprocess whose imports of the extra's modules fail
as they do where the extra is not installed (a finder first on ``sys.meta_path`` raises
``ModuleNotFoundError``, which is what a missing module raises). A real environment without
``[web]`` is checked by ``make dist-check`` (scripts/dist-check.sh), which installs the wheel
alone in a new venv and runs ``kbench serve`` there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench import exit_codes
from tests.e2e.conftest import KbenchRunner

HIDING = """
import sys
hidden = set(sys.argv[1].split(","))


class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hidden())
if sys.argv[2] == "--without-asking":  # the command skips its own check: the import itself fails
    import kbench.extras
    kbench.extras.require = lambda *args, **kwargs: None
    del sys.argv[2]
sys.argv = ["kbench", *sys.argv[2:]]
from kbench.cli.main import main
main()
"""


def kbench_without(modules: str, *args: str, db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KBENCH_DB=str(db), COLUMNS="80")
    return subprocess.run([sys.executable, "-c", HIDING, modules, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def one_line(proc: subprocess.CompletedProcess[str], extra: str) -> str:
    assert proc.returncode == exit_codes.EXTRA_MISSING == 16, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].endswith(f"pip install 'kbench-lab[{extra}]'") or f"'kbench-lab[{extra}]' (" in lines[0]
    return lines[0]


def test_serve_without_web_names_the_extra(tmp_path: Path, db_path: Path) -> None:
    line = one_line(kbench_without("fastapi,uvicorn", "serve", "--port", "0", db=db_path, cwd=tmp_path), "web")
    assert line == ("kbench: error: kbench serve needs kbench's [web] extra, which is not installed "
                    "(no module 'fastapi'): pip install 'kbench-lab[web]'")


def test_fleet_and_worker_without_the_fleet_extra(tmp_path: Path, db_path: Path) -> None:
    for args in (("fleet", "status"), ("fleet", "submit", "job.yaml"), ("worker", "--queue", "demo"),
                 ("watch", ".", "--branch", "main", "--fleet", "demo", "job.yaml")):
        line = one_line(kbench_without("celery,kombu,redis", *args, db=db_path, cwd=tmp_path), "fleet")
        assert line.startswith(f"kbench: error: kbench {args[0]}") and "needs kbench's [fleet] extra" in line, line
    help_text = kbench_without("celery,kombu,redis", "fleet", "status", "--help", db=db_path, cwd=tmp_path)
    assert help_text.returncode == 0 and "Usage: kbench fleet status" in help_text.stdout


@pytest.mark.parametrize("args", [
    ("compare", "--runs", "1", "--runs", "2", "--report-dir", "out"),
    ("compare", "--runs", "1", "--runs", "2", "--format", "html"),
    ("bisect", "status", "1", "--html", "b.html"),
    ("show", "1", "--over-time", "--html", "o.html"),
    ("report", "releases", "--kernel", "6.1", "--kernel", "6.12", "--plot", "r.png"),
], ids=["compare-report-dir", "compare-html", "bisect-html", "show-over-time-html", "releases-plot"])
def test_static_plots_without_the_plots_extra_are_refused_before_anything_runs(
    args: tuple[str, ...], tmp_path: Path, db_path: Path
) -> None:
    """The runs named do not exist: the extra is checked first, before the store is read."""
    line = one_line(kbench_without("matplotlib", *args, db=db_path, cwd=tmp_path), "plots")
    assert f"kbench {args[0]}" in line and "needs kbench's [plots] extra" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database made, no report written


def test_the_same_commands_without_plots_output_need_no_matplotlib(
    kbench: KbenchRunner, tmp_path: Path, db_path: Path
) -> None:
    kbench("run", "syscall.getppid", "--samples", "200")
    kbench("run", "syscall.getppid", "--samples", "200")
    proc = kbench_without("matplotlib", "compare", "--runs", "1", "--runs", "2", db=db_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "syscall.getppid" in proc.stdout


def test_parquet_without_pyarrow(kbench: KbenchRunner, tmp_path: Path, db_path: Path) -> None:
    kbench("run", "syscall.getppid", "--samples", "100")
    for args in (("1",), ("--runs", "1")):
        proc = kbench_without("pyarrow", "export", *args, "--format", "parquet", "-o", "x.parquet",
                              db=db_path, cwd=tmp_path)
        assert one_line(proc, "parquet") == (
            "kbench: error: kbench export --format parquet needs kbench's [parquet] extra, which is not installed "
            "(no module 'pyarrow'): pip install 'kbench-lab[parquet]' (or export --format csv)")
        assert not (tmp_path / "x.parquet").exists()


def test_an_import_of_an_extra_the_command_did_not_check_ends_the_same_way(tmp_path: Path, db_path: Path) -> None:
    """The safety net in ``kbench.cli.main``: no check asked first, the import itself fails."""
    proc = kbench_without("fastapi", "--without-asking", "serve", "--port", "0", db=db_path, cwd=tmp_path)
    assert one_line(proc, "web") == ("kbench: error: kbench serve needs kbench's [web] extra, which is not "
                                     "installed (no module 'fastapi'): pip install 'kbench-lab[web]'")


def test_an_import_error_of_no_extra_is_a_bug_and_keeps_its_traceback(tmp_path: Path, db_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("benchmarks: []\n")
    proc = kbench_without("yaml", "job", "check", "job.yaml", db=db_path, cwd=tmp_path)  # PyYAML is required
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "No module named 'yaml'" in proc.stderr
