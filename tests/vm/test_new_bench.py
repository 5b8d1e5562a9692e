"""A benchmark added to kbench.ko as one file plus one line of benches/list.h, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from kbench.contract.request import RunRequest
from kbench.kinds.kfunc.catalog import benchmarks_in
from kbench.kinds.kfunc.loaded import describe
from kbench.resources import find_resource
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

NEW_BENCH = Path(__file__).resolve().parents[1] / "data" / "kmod" / "xor_sum.c"


def test_a_benchmark_added_as_one_file_and_one_line_runs_in_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kmod = tmp_path / "kmod"
    shutil.copytree(find_resource("kmod"), kmod, ignore=shutil.ignore_patterns("*.o", "*.ko", "*.cmd", "*.mod*"))
    shutil.copy(NEW_BENCH, kmod / "benches" / NEW_BENCH.name)
    listing = kmod / "benches" / "list.h"
    listing.write_text(listing.read_text().replace(
        "/* Add a new benchmark here. */", "KBENCH_BUILTIN(xor_sum);\n/* Add a new benchmark here. */"
    ))
    catalog = {bench.workload: bench for bench in benchmarks_in(kmod)}
    monkeypatch.setenv("KBENCH_KMOD_DIR", str(kmod))
    with VmTarget(TEST_KERNEL, console_log=tmp_path / "console.log") as target:
        assert target.module is not None, target.module_error
        assert target.module.benchmarks() == list(catalog)
        described = describe(target.module, "xor_sum")
        assert described == catalog["xor_sum"]
        medians = {}
        for words in ("1", "256"):
            request = RunRequest(benchmark=described.name, params={"words": words}, samples=400, batch=4)
            measurement = target.module.run(described, request)
            assert measurement.columns["ticks"].size == 400
            medians[words] = float(np.median(measurement.per_op("cycles")))
        # 256 loads and xors per call against 1: far more work, whatever TCG's speed
        assert medians["256"] > 10 * medians["1"], medians
        session = target.session
        assert session is not None
        problems = kernel_log_problems(session.dmesg())
        assert session.exec(["rmmod", "kbench"], timeout=60).rc == 0
        assert not problems, problems
