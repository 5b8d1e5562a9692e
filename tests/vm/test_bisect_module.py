"""Bisecting an out-of-tree benchmark module in a Debian kernel under qemu (``ModuleLab``).

The generated repository holds one module, ``src/lcgmod.c``, registering ``kfunc.lcg_loop``:
the timed call runs an LCG over a volatile ``WORK`` times. Commit ``CULPRIT`` makes that
``FACTOR`` (5) times the work; commit ``BROKEN`` (the first midpoint of the search) does
not compile. The benchmark name is not given: the lab finds it as the one benchmark the
first module added to /sys/kernel/kbench.

Why 5x: under TCG the guest's TSC follows the host's clock, and other load on this 2-CPU
host (a parallel test run, say) slows the whole guest: the same module gave trial medians
of 4888 and up to 9412 cycles within a minute, 1.9x apart, in phases lasting several
trials. A trial of a good commit measured in a slow phase must still look nearer the good
references than the bad ones on the log scale the oracle uses, i.e. the change must exceed
1.9^2 = 3.6x; 5x leaves room. (2x was judged right here on a quiet host, but the slow
mode of good commits came within 5% of the fast mode of bad ones.)
Wall time: one boot (~8 s), five module builds (~2-3 s each, cached by content on the
next run) and about 40-50 trials of 2000 samples (~0.2 s each): ~23 s, ~31 s with cold builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbench.bisect.driver import DONE, SKIP, Bisector, BisectState, Settings
from kbench.bisect.git import Worktrees, ancestry_path
from kbench.bisect.module_lab import ModuleLab
from kbench.store.db import Store
from tests.vm.git_repo import git, new_repo
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

NAME = "lcgmod"
BENCH = "lcg_loop"
WORK = 300  # about 1 us per call under TCG
FACTOR = 5
COMMITS, CULPRIT, BROKEN = 9, 6, 4  # 8 commits after the good one: BROKEN is the first midpoint

MODULE = """\
// SPDX-License-Identifier: GPL-2.0
/* {comment} */
#include <linux/module.h>

#include "kbench.h"

#define WORK {work}

static void lcg_call(struct kbench_ctx *ctx, u32 i)
{{
	volatile u64 x = ctx->dataset[i];
	unsigned int k;

	for (k = 0; k < WORK; k++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL{broken};
}}

static struct kbench lcg_bench = {{
	.name = "{bench}",
	.description = "an LCG over a volatile, WORK times",
	.call = lcg_call,
	.owner = THIS_MODULE,
}};

static int __init lcgmod_init(void)
{{
	return kbench_register(&lcg_bench);
}}

static void __exit lcgmod_exit(void)
{{
	kbench_unregister(&lcg_bench);
}}

module_init(lcgmod_init);
module_exit(lcgmod_exit);
MODULE_DESCRIPTION("kbench bisect test module");
MODULE_LICENSE("GPL");
"""


def make_repo(repo: Path) -> list[str]:
    """Commits 0..COMMITS-1 of src/lcgmod.c (0 the good one); returns their ids, oldest first."""
    (repo / "src").mkdir(parents=True)
    new_repo(repo)
    shas = []
    for k in range(COMMITS):
        work = WORK * FACTOR if k >= CULPRIT else WORK
        what = "five times the work" if k == CULPRIT else ("break the build" if k == BROKEN else f"comment ({k})")
        source = MODULE.format(comment=f"revision {k}", work=work, bench=BENCH,
                               broken=" + lcg_undeclared" if k == BROKEN else "")
        (repo / "src" / f"{NAME}.c").write_text(source)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"step {k}: {what}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


class CheckedLab:
    """The lab, checked after every call that measured: no user module left in the guest."""

    def __init__(self, lab: ModuleLab):
        self.lab = lab
        self.trials = 0

    def _check_clean(self) -> None:
        assert self.lab.target is not None and self.lab.target.session is not None
        session = self.lab.target.session
        assert session.exec(["cat", "/sys/kernel/kbench/benchmarks"], timeout=30).text.split() == self.lab.builtin
        modules = [line.split()[0] for line in session.exec(["cat", "/proc/modules"], timeout=30).text.splitlines()]
        assert NAME not in modules and "kbench" in modules

    def build(self, commit: str) -> str | None:
        return self.lab.build(commit)

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        stats = self.lab.round(commits, n)
        assert all(len(values) == n for values in stats.values())
        self.trials += sum(len(values) for values in stats.values())
        self._check_clean()
        return stats

    def describe(self, commit: str) -> dict[str, str]:
        return self.lab.describe(commit)


def test_module_bisection_names_the_culprit_in_a_guest(tmp_path: Path, vm_cache_dir: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_repo(repo)
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    bisection_id = store.create_bisection(repo=str(repo), good=shas[0], bad=shas[-1], command=f"kfunc.{BENCH}",
                                          build="", params={})
    worktrees = Worktrees(repo, tmp_path / "wt")
    state = BisectState(good=shas[0], bad=shas[-1], commits=ancestry_path(repo, shas[0], shas[-1]))
    lab = ModuleLab(
        store, tag=f"bisect:{bisection_id}", repo=repo, worktrees=worktrees, build="test -f src/lcgmod.c",
        module=f"src/{NAME}.c", benchmark=None, kernel=TEST_KERNEL, samples=2000, params={}, seed=7,
        cache_dir=vm_cache_dir, console_log=tmp_path / "console.log",
    )
    checked = CheckedLab(lab)
    with lab:
        Bisector(checked, state, Settings(trials=3)).run()
        assert lab.target is not None and lab.target.session is not None
        session = lab.target.session
        log_problems = kernel_log_problems(session.dmesg()) + kernel_log_problems(session.console_text())
        assert lab.guest_problems() == []
    assert lab.target is None and lab.problems == []
    assert not log_problems, "guest kernel log has problems:\n" + "\n".join(log_problems)

    assert lab.benchmark == BENCH  # found as the one benchmark the module added
    assert state.status == DONE, state.result
    assert state.result is not None and state.result["first_bad"]["sha"] == shas[CULPRIT]
    assert state.result["change_pct"] > 150  # five times the work: about +400%
    skipped = [step for step in state.steps if step["verdict"] == SKIP]
    assert [step["commit"] for step in skipped] == [shas[BROKEN]]
    assert "build" in skipped[0]["reason"] and "lcg_undeclared" in skipped[0]["reason"]
    assert len(skipped[0]["reason"]) < 250

    # Every trial is a stored, complete run of the module's benchmark, tagged with the bisection.
    runs = store.list_runs(limit=10_000)
    assert len(runs) == checked.trials > 0
    measured = {sha[:12] for sha in shas} - {shas[BROKEN][:12]}
    for run in runs:
        tags = run["tags"] or []
        assert run["benchmark"] == f"kfunc.{BENCH}" and run["status"] == "complete" and run["n_samples"] == 2000
        assert f"bisect:{bisection_id}" in tags
        assert any(tag.removeprefix("commit:") in measured for tag in tags if tag.startswith("commit:"))
    # worktrees are removed once the module is built; only a failed build leaves its log
    left = list((tmp_path / "wt").glob("*"))
    assert all(p.is_file() and p.name.endswith(".build.log") for p in left), left
    assert {p.name.removesuffix(".build.log") for p in left} <= {shas[BROKEN][:12]}, left


def test_kbench_bisect_start_with_a_module_from_the_command_line(tmp_path: Path) -> None:
    """The same repository through ``kbench bisect start --module --kernel``: JSON and HTML reports."""
    repo = tmp_path / "repo"
    shas = make_repo(repo)
    page = tmp_path / "bisect.html"
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"), COLUMNS="120")
    proc = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "bisect", "start", "--repo", str(repo), "--good", shas[0],
         "--bad", "main", "--module", f"src/{NAME}.c", "--kernel", TEST_KERNEL, "--samples", "2000",
         "--workdir", str(tmp_path / "wt"), "--json", "--html", str(page)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "done" and report["first_bad"]["sha"] == shas[CULPRIT]
    assert report["params"]["kind"] == "module" and report["params"]["kernel"] == TEST_KERNEL
    assert report["change_pct"] > 150 and report["p_value"] < 0.05 and report["confirmed"]
    assert [s["commit"] for s in report["steps"] if s["verdict"] == SKIP] == [shas[BROKEN]]
    assert "warning" not in proc.stderr  # no guest kernel-log problems
    assert f'data-sha="{shas[CULPRIT]}"' in page.read_text()
    wrong = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "bisect", "start", "--repo", str(repo), "--good", shas[0],
         "--bad", "main", "--module", f"src/{NAME}.c"], capture_output=True, text=True, env=env, timeout=60)
    assert wrong.returncode == 2 and "--module needs --kernel" in wrong.stderr
