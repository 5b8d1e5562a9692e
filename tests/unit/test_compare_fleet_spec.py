"""`compare --fleet`: the spec a task carries comes back whole, and sides that name this
machine's files are refused before anything is sent (kbench.fleet.compare_task)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.engine.compare_spec import BadCombination, ComparisonSpec
from kbench.fleet.compare_task import job_text, refuse_for_fleet, spec_from_json, spec_to_json


def test_a_spec_goes_through_the_task_as_json_unchanged() -> None:
    spec = ComparisonSpec(benchmark="syscall.getppid", kernels=("deb:6.1.0-55-amd64", "tree:https://x/l.git@v6.9"),
                          params=(("spin", "100"), ("size", "64|128")), budget_s=12.5, blocks=30, samples=4,
                          margin=0.01, margin_text="1%", counting=True, time_metric="wall", seed=7, counters=False,
                          ignore_failure=True, design="interleaved")
    assert spec_from_json(json.loads(json.dumps(spec_to_json(spec)))) == spec
    assert job_text(ComparisonSpec(commands=('sh -c "echo a"', "true"))).startswith("benchmark: command\n")


@pytest.mark.parametrize(("spec", "said"), [
    (ComparisonSpec(modules=(Path("a.c"), Path("b.c")), local_kernel=True), "does not carry --module"),
    (ComparisonSpec(kernels=("/boot/vmlinuz-6.1", "deb:6.1.0-55-amd64"), benchmark="syscall.getppid"),
     "--kernel /boot/vmlinuz-6.1"),
    (ComparisonSpec(commands=("/bin/true", "sleep 0")), "/bin/true is a file on this machine"),
])
def test_what_only_this_machine_has_is_refused(spec: ComparisonSpec, said: str) -> None:
    with pytest.raises(BadCombination, match=said):
        refuse_for_fleet(spec)


def test_programs_on_the_workers_path_and_debian_kernels_are_sent() -> None:
    refuse_for_fleet(ComparisonSpec(commands=("sleep 0.05", "xz -9 -c /etc/services")))
    refuse_for_fleet(ComparisonSpec(kernels=("deb:6.1.0-55-amd64", "local"), benchmark="syscall.getppid"))
