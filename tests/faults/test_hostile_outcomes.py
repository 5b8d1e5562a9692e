"""The smaller hostile cases of issue 34: each ends in one clear line with a documented exit
code, or in a clean outcome that says what it found, and changes nothing it should not."""

from __future__ import annotations

import pytest

from tests.faults.conftest import Sandbox, run_rows


@pytest.mark.parametrize("option", [("--duration", "1s"), ("--warmup", "0.5s")])
def test_a_kfunc_duration_is_refused_before_a_guest_boots_or_a_run_is_stored(
    sandbox: Sandbox, option: tuple[str, str]
) -> None:
    sandbox.run("run", "syscall.getppid", "--samples", "100")
    done = sandbox.invoke("run", "kfunc.empty", *option, "--kernel", "deb:6.1.0-56-amd64")
    assert [status for _, status, _, _ in run_rows(sandbox.db)] == ["complete"]  # no `failed` run of it
    assert sandbox.leftovers() == []
    assert done.returncode == 2, done
    label = "duration" if option[0] == "--duration" else "warm-up duration"
    assert done.stderr == ("kbench: error: kfunc benchmarks run inside the kernel and are count-based: give a count "
                           f"of samples (--samples) and of warm-up samples, not a {label}\n")


def test_a_kfunc_duration_in_a_job_file_is_one_of_its_problems(sandbox: Sandbox) -> None:
    job = sandbox.root / "job.yaml"
    job.write_text("benchmark: kfunc.empty\nkernel: deb:6.1.0-56-amd64\nduration: 2s\n")
    done = sandbox.invoke("run", str(job))
    assert not sandbox.db.exists()
    assert done.returncode == 2, done
    assert f"{job}:3: duration: kfunc.empty: kfunc benchmarks run inside the kernel and are count-based" in done.stderr


def test_history_since_a_moment_after_every_run_says_so(sandbox: Sandbox) -> None:
    assert sandbox.run("run", "syscall.getppid", "--samples", "100").returncode == 0
    done = sandbox.invoke("history", "--since", "2099-01-01")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "no complete runs stored since 2099-01-01 00:00 UTC (that is in the future)\n"
    named = sandbox.invoke("history", "syscall.getppid", "--since", "2099-01-01")
    assert named.returncode == 4
    assert named.stderr.startswith("kbench: error: no series matches 'syscall.getppid' with runs since 2099-01-01 "
                                   "00:00 UTC")
    assert "syscall.getppid.latency" in sandbox.invoke("history", "--since", "2000-01-01").stdout
