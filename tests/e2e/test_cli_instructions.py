"""``--metric instructions`` through the CLI on this machine: real valgrind (this machine has no
PMU), the counts checked against objdump's disassembly of the program and against valgrind run
outside kbench. Nothing here depends on timing: valgrind counts exactly, whatever the load."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kbench.native import find_native
from tests.disassembly import loop_instructions
from tests.e2e.conftest import KbenchRunner, as_json

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

ASM_LOOP = r"""
#include <stdlib.h>

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1, a = 1, b = 2;

    __asm__ volatile("1:\n\tadd $3, %0\n\txor %0, %1\n\tsub $1, %2\n\tjnz 1b"
                     : "+r"(a), "+r"(b), "+r"(n));
    return (int)(b & 0);
}
"""
UNITS_LOOP = r"""
#include <stdint.h>
static volatile uint64_t sink;
int main(void)
{
    uint64_t x = 88172645463325252ULL;
    for (long u = 0; u < UNITS; u++)
        for (long i = 0; i < 1000; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        }
    sink = x;
    return 0;
}
"""


def cachegrind(argv: list[str], tmp: Path) -> int:
    """valgrind's own total for one execution, outside kbench."""
    out = tmp / "cachegrind.out"
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                    "--log-file=/dev/null", *argv], check=True)
    match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
    assert match
    return int(match.group(1))


@pytest.fixture(scope="module")
def asm_loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("asm")
    (directory / "loop.c").write_text(ASM_LOOP)
    subprocess.run(["gcc", "-O2", "-o", str(directory / "loop"), str(directory / "loop.c")], check=True)
    return directory / "loop"


def test_a_hundred_more_iterations_are_a_hundred_loops_more(kbench: KbenchRunner, asm_loop: Path,
                                                            tmp_path: Path) -> None:
    per_iteration = loop_instructions(asm_loop)
    assert per_iteration == 4  # add, xor, sub, jnz: the asm as written
    report = as_json(kbench("compare", "--command", f"{asm_loop} 1000000", "--command", f"{asm_loop} 1000100",
                            "--metric", "instructions", "--json"))
    (metric,) = report["metrics"]
    assert metric["metric"] == "command.instructions" and metric["verdict"] == "regression"
    assert metric["new"] - metric["base"] == 100 * per_iteration
    assert metric["reason"].startswith("exact:")
    # valgrind outside kbench sees the same difference
    direct = cachegrind([str(asm_loop), "1000100"], tmp_path) - cachegrind([str(asm_loop), "1000000"], tmp_path)
    assert direct == 100 * per_iteration


def test_byte_copies_at_two_paths_count_exactly_the_same(kbench: KbenchRunner, asm_loop: Path, tmp_path: Path) -> None:
    far = tmp_path / "a-directory-with-a-longer-name" / "and-a-copy-of-the-loop-program"
    far.parent.mkdir()
    shutil.copy2(asm_loop, far)
    report = as_json(kbench("compare", "--command", f"{asm_loop} 300000", "--command", f"{far} 300000",
                            "--metric", "instructions", "--json"))
    (metric,) = report["metrics"]
    assert (metric["verdict"], metric["change_pct"], metric["base"]) == ("no change", 0.0, metric["new"])


def test_loop199_against_loop200(kbench: KbenchRunner, tmp_path: Path) -> None:
    (tmp_path / "loop.c").write_text(UNITS_LOOP)
    for units in (199, 200):
        subprocess.run(["gcc", "-O2", f"-DUNITS={units}", "-o", str(tmp_path / f"loop{units}"),
                        str(tmp_path / "loop.c")], check=True)
    proc = kbench("compare", "--command", str(tmp_path / "loop199"), "--command", str(tmp_path / "loop200"),
                  "--metric", "instructions")
    assert re.search(r"command\.instructions on program \S+loop200 has a \+0\.5% .* regression", proc.stdout)
    assert "exact:" in proc.stdout and "instructions are not time" in proc.stdout
    assert "valgrind ran it" in proc.stdout  # the slowdown, stated


def test_a_workloads_counts_are_callgrinds_outside_kbench(kbench: KbenchRunner, tmp_path: Path) -> None:
    report = as_json(kbench("compare", "syscall.getppid", "-p", "spin=0|1", "--metric", "instructions",
                            "--samples", "200", "--json"))
    (metric,) = report["metrics"]
    assert metric["verdict"] == "regression" and metric["reason"].startswith("exact:")
    # the probe run under callgrind by hand, as docs/instructions.md says kbench runs it
    out = tmp_path / "callgrind.out"
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
                    "--log-file=/dev/null", str(find_native("kbench-probe")), "run", "getppid", "--output",
                    str(tmp_path / "samples"), "--mark", "--param", "spin=1", "--samples", "200", "--batch", "16",
                    "--overhead-pairs", "100", "--timer", "clock"], check=True)
    match = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
    assert match
    assert metric["new"] == int(match.group(1)) / (200 * 16)


def test_instructions_beside_cpu_time(kbench: KbenchRunner, asm_loop: Path) -> None:
    report = as_json(kbench("compare", "--command", f"{asm_loop} 2000000", "--command", f"{asm_loop} 4000000",
                            "--metric", "instructions,cpu", "--design", "trials", "--trials", "5", "--fixed",
                            "--samples", "5", "--json"))
    names = [m["metric"] for m in report["metrics"]]
    assert names[0] == "command.instructions" and "command.cpu" in names
    assert report["metrics"][0]["verdict"] == "regression"


def test_a_counted_run_and_a_job(kbench: KbenchRunner, asm_loop: Path, tmp_path: Path) -> None:
    run = as_json(kbench("run", "command", "-p", f"cmd={asm_loop} 1000", "--metric", "instructions", "--json"))
    assert run["metric"] == "command.instructions" and run["unit"] == "instructions"
    assert run["instructions"]["repeated"] is True and run["instructions"]["source"]["name"] == "valgrind"
    shown = kbench("show", str(run["run_id"])).stdout
    assert "instructions per operation: all 2 samples counted the same" in shown
    job = tmp_path / "job.yaml"
    job.write_text(f"benchmark: command\nparams:\n  cmd: ['{asm_loop} 1000', '{asm_loop} 1100']\n"
                   "metric: instructions\n")
    entries = as_json(kbench("run", str(job), "--json"))
    assert [entry["metric"] for entry in entries] == ["command.instructions"] * 2
    medians = [entry["median"] for entry in entries]
    assert medians[1] - medians[0] == 100 * loop_instructions(asm_loop)


@pytest.mark.parametrize("args, said", [
    (("compare", "hackbench.pipe-process", "-p", "groups=1|2", "--metric", "instructions"), "not suite ones"),
    (("run", "syscall.getppid", "--metric", "instructions", "--duration", "1s"), "not a duration"),
    (("run", "kfunc.spin", "--metric", "instructions"), "no PMU that counts instructions"),
])
def test_what_cannot_be_counted_is_one_line_and_exit_2(kbench: KbenchRunner, args: tuple[str, ...],
                                                       said: str) -> None:
    proc = kbench(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbench: error:") and said in lines[0]


def test_timed_runs_are_not_compared_as_counts(kbench: KbenchRunner) -> None:
    first = as_json(kbench("run", "syscall.getppid", "--samples", "100", "--json"))
    second = as_json(kbench("run", "syscall.getppid", "--samples", "100", "--json"))
    proc = kbench("compare", "--runs", str(first["run_id"]), "--runs", str(second["run_id"]), "--metric",
                  "instructions", check=False)
    assert proc.returncode == 2 and "was timed, not counted" in proc.stderr


def test_a_bisection_by_counts_names_the_culprit(kbench: KbenchRunner, tmp_path: Path) -> None:
    """A 1 % change of a 100 000-step loop: one round per commit decides it (counts repeat exactly)."""
    from kbench.bisect.demo import BUILD, make_demo_repo

    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=8, culprit=5, broken=None, extra=0.01, loops=100_000)
    report = as_json(kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build",
                            BUILD, "--command", "./prog", "--metric", "instructions", "--samples", "2", "--trials",
                            "1", "--json", timeout=600))
    assert report["status"] == "done" and report["first_bad"]["sha"] == shas[5]
    assert report["unit"] == "instructions"
    # the culprit adds 1000 steps of the loop (objdump of a build of its parent's program); the
    # programs also print a number that differs between commits, a few instructions of printf
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", shas[4]], check=True)
    subprocess.run(["sh", "-c", BUILD], cwd=repo, check=True)
    per_step = loop_instructions(repo / "prog")
    culprit = next(step for step in report["steps"] if step["commit"] == shas[5])
    parent = next((step for step in report["steps"] if step["commit"] == shas[4]), None)
    good = parent["median"] if parent else float(report["check"]["good_trials"][0])
    assert abs(culprit["median"] - good - 1000 * per_step) < 50
