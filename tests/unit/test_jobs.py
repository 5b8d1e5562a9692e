"""Job files: matrix expansion, nr_task resolution, stable ids, conversion to RunRequest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import kbench.catalog.benchmarks as catalog
from kbench.contract.benchmark import Benchmark, ParamSpec
from kbench.contract.request import RunRequest
from kbench.jobs import JobError, JobInstance, expand_job, is_job_file, varying_keys

JOBS = Path(__file__).resolve().parents[1] / "data" / "jobs"
STAND_IN_TESTS = ("mmap1", "page_fault1")


def _stand_in(test: str) -> Benchmark:
    return Benchmark(
        name=f"will-it-scale.{test}", kind="probe", workload=f"will_it_scale_{test}",
        description="stand-in for a scalability benchmark", unit="ops/s",
        metric=f"will-it-scale.{test}.per_process_ops", direction="higher",
        params=(ParamSpec("nr_task", "int", "1", "tasks"), ParamSpec("mode", "str", "process", "process|thread")),
    )


@pytest.fixture
def scalability_stand_ins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real catalog plus stand-in ``will-it-scale.*`` benchmarks taking nr_task and mode
    (the real ones may have other parameters; these keep the tests deterministic)."""
    real = catalog.all_benchmarks

    def with_stand_ins() -> dict[str, Benchmark]:
        return {**real(), **{b.name: b for b in map(_stand_in, STAND_IN_TESTS)}}

    monkeypatch.setattr(catalog, "all_benchmarks", with_stand_ins)
    yield


def expand_text(text: str, cpu_count: int = 2) -> list[JobInstance]:
    return expand_job(text, cpu_count=cpu_count)


def test_two_benchmarks_by_three_sizes_make_six_instances() -> None:
    instances = expand_job(JOBS / "good" / "matrix-2x3.yaml", cpu_count=2)
    assert [(i.benchmark, i.params) for i in instances] == [
        (bench, {"size": size})
        for bench in ("syscall.read_devzero", "syscall.pread")
        for size in ("1", "64", "4096")
    ]
    assert {(i.samples, i.warmup_samples, i.tags, i.iterations, i.target) for i in instances} == {
        (20000, 1000, ("read-sizes",), 1, "local")
    }
    assert len({i.id for i in instances}) == 6
    assert varying_keys(instances) == ["benchmark", "size"]


@pytest.mark.parametrize(("cpu_count", "resolved"), [(2, [1, 2, 4, 3]), (8, [4, 8, 16, 3])])
def test_nr_task_percentages_resolve_against_the_cpu_count(
    scalability_stand_ins: None, cpu_count: int, resolved: list[int]
) -> None:
    job = "benchmark: will-it-scale.mmap1\nnr_task: [50%, 100%, 200%, 3]\n"
    instances = expand_text(job, cpu_count)
    assert [i.nr_task for i in instances] == resolved
    assert [i.nr_task_spec for i in instances] == ["50%", "100%", "200%", "3"]
    assert [i.to_run_request().params["nr_task"] for i in instances] == [str(n) for n in resolved]


def test_ids_do_not_depend_on_the_cpu_count(scalability_stand_ins: None) -> None:
    job = "benchmark: will-it-scale.mmap1\nnr_task: [50%, 100%]\n"
    assert [i.id for i in expand_text(job, 2)] == [i.id for i in expand_text(job, 64)]


def test_a_small_percentage_still_runs_one_task(scalability_stand_ins: None) -> None:
    (instance,) = expand_text("benchmark: will-it-scale.mmap1\nnr_task: 1%\n", cpu_count=2)
    assert instance.nr_task == 1


def test_lists_inside_the_lkp_suite_section_multiply(scalability_stand_ins: None) -> None:
    instances = expand_job(JOBS / "good" / "will-it-scale-lkp.yaml", cpu_count=8)
    assert len(instances) == 12
    assert [(i.benchmark, i.nr_task, i.mode) for i in instances[:4]] == [
        ("will-it-scale.mmap1", 4, "process"),
        ("will-it-scale.mmap1", 4, "thread"),
        ("will-it-scale.mmap1", 8, "process"),
        ("will-it-scale.mmap1", 8, "thread"),
    ]
    assert {(i.runtime_s, i.iterations, i.cpufreq_governor) for i in instances} == {(20.0, 3, "performance")}
    assert varying_keys(instances) == ["benchmark", "nr_task", "mode"]
    request = instances[0].to_run_request()
    assert request.params == {"nr_task": "4", "mode": "process"}
    assert request.duration_s == 20.0


def test_several_parameter_lists_multiply() -> None:
    job = "benchmark: syscall.writev_t1k\nparams:\n  size: [1024, 4096]\n  iovcnt: [1, 10, 100]\n"
    instances = expand_text(job)
    assert [(i.params["size"], i.params["iovcnt"]) for i in instances] == [
        (size, iovcnt) for size in ("1024", "4096") for iovcnt in ("1", "10", "100")
    ]


def test_ids_ignore_key_order_quoting_spelling_and_layout() -> None:
    first = expand_text(
        "benchmark: [syscall.pread, syscall.read_devzero]\nruntime: 10s\n"
        "params: {size: [1, 64]}\nwarmup: 500ms\niterations: 1\n"
    )
    second = expand_text(
        "# the same job, written differently\nwarmup: 0.5s\nparams:\n  size:\n    - '64'\n    - \"1\"\n"
        "duration: 10\nbenchmark:\n  - read_devzero\n  - syscall.pread\n"
    )
    assert sorted(i.id for i in first) == sorted(i.id for i in second)
    assert {i.id: i.identity() for i in first} == {i.id: i.identity() for i in second}


@pytest.mark.parametrize(
    "changed",
    ["samples: 1001", "cpu: 1", "batch: 4", "iterations: 2", "kernel: deb:6.1.0-56-amd64",
     "cpufreq_governor: performance", "warmup: 100", "subtract_overhead: true", "metric: instructions"],
)
def test_ids_change_when_any_value_changes(changed: str) -> None:
    base = "benchmark: syscall.read_devzero\nparams: {size: [1, 64]}\n"
    ids = [i.id for i in expand_text(base + "samples: 1000\n")]
    other = [i.id for i in expand_text(base + changed + ("\nsamples: 1000\n" if "samples" not in changed else "\n"))]
    assert not set(ids) & set(other)


def test_ids_change_with_a_parameter_value() -> None:
    (small,) = expand_text("benchmark: syscall.pread\nparams: {size: 512}\n")
    (large,) = expand_text("benchmark: syscall.pread\nparams: {size: 4096}\n")
    assert small.id != large.id


def test_ids_are_the_same_on_every_machine_and_run() -> None:
    # The id is a documented hash of canonical content: pinned so a change is noticed.
    (instance,) = expand_text("benchmark: syscall.getppid\nsamples: 1000\n")
    assert instance.identity() == {
        "benchmark": "syscall.getppid", "params": {}, "nr_task_spec": None, "mode": None, "iterations": 1,
        "runtime_s": None, "target": "local", "cpufreq_governor": None, "samples": 1000,
        "warmup_samples": None, "warmup_duration_s": None, "batch": None, "cpu": None, "subtract_overhead": False,
    }
    canonical = (
        '{"benchmark":"syscall.getppid","iterations":1,"kbench-job":1,"samples":1000,'
        '"subtract_overhead":false,"target":"local"}'
    )
    assert instance.id == hashlib.sha256(canonical.encode()).hexdigest()[:12] == "28e0348e6167"


def test_tags_label_runs_but_do_not_change_ids() -> None:
    (plain,) = expand_text("benchmark: syscall.getppid\n")
    (tagged,) = expand_text("benchmark: syscall.getppid\ntags: [nightly, a/b]\n")
    assert plain.id == tagged.id
    assert tagged.tags == ("nightly", "a/b")


def test_suite_and_test_name_the_same_benchmark_as_benchmark() -> None:
    (lkp,) = expand_text("suite: syscall\ntest: getppid\n")
    (kbench,) = expand_text("benchmark: syscall.getppid\n")
    assert lkp == kbench


def test_parameters_are_kept_as_written() -> None:
    (instance,) = expand_text("benchmark: syscall.mmap_munmap\nparams: {size: 0x2000, touch: true}\n")
    assert instance.params == {"size": "0x2000", "touch": "true"}


def test_to_run_request_carries_every_run_setting() -> None:
    job = (
        "benchmark: syscall.pread\nparams: {size: 512}\nsamples: 5000\nwarmup: 100\nbatch: 8\n"
        "cpu: 1\nsubtract_overhead: yes\ntags: nightly\n"
    )
    (instance,) = expand_text(job)
    request = instance.to_run_request()
    assert request == RunRequest(
        benchmark="syscall.pread", params={"size": "512"}, samples=5000, warmup_samples=100, batch=8,
        cpu=1, subtract_overhead=True, tags=("nightly", f"job:{instance.id}"),
    )
    assert request.probe_args("pread") == [
        "run", "pread", "--param", "size=512", "--samples", "5000", "--warmup-samples", "100",
        "--batch", "8", "--cpu", "1",
    ]


def test_to_run_request_in_duration_mode() -> None:
    (instance,) = expand_text("benchmark: syscall.getppid\nruntime: 1.5m\nwarmup: 200ms\nbatch: auto\n")
    request = instance.to_run_request()
    assert (request.samples, request.duration_s, request.warmup_duration_s, request.batch) == (None, 90.0, 0.2, None)


def test_instances_serialise_to_json() -> None:
    instances = expand_job(JOBS / "good" / "matrix-2x3.yaml", cpu_count=2)
    data = json.loads(json.dumps([i.to_dict() for i in instances]))
    assert data[0]["id"] == instances[0].id
    assert data[0]["params"] == {"size": "1"}
    assert data[0]["source"].endswith("matrix-2x3.yaml")


def test_text_and_paths() -> None:
    with pytest.raises(JobError) as caught:
        expand_job("benchmark: syscall.nope\n", cpu_count=2, name="inline.yaml")
    assert str(caught.value.problems[0]).startswith("inline.yaml:1: benchmark: unknown benchmark 'syscall.nope'")
    with pytest.raises(JobError) as caught:
        expand_job("no/such/job.yaml", cpu_count=2)
    assert [str(p) for p in caught.value.problems] == [
        "no/such/job.yaml: job: cannot read the file: No such file or directory"
    ]


def test_every_problem_is_collected_not_only_the_first() -> None:
    with pytest.raises(JobError) as caught:
        expand_text("benchmark: syscall.getppid\nsamples: 0\nruntim: 1\niterations: -1\n")
    assert str(caught.value).splitlines() == [
        "<job>:2: samples: must be an integer >= 1, got 0",
        "<job>:3: runtim: unknown key (did you mean runtime?)",
        "<job>:4: iterations: must be an integer >= 1, got -1",
    ]


@pytest.mark.parametrize(
    ("arg", "expected"),
    [("job.yaml", True), ("jobs/nightly.YML", True), ("syscall.getppid", False), ("getppid", False)],
)
def test_is_job_file(arg: str, expected: bool) -> None:
    assert is_job_file(arg) is expected


def test_control_marks_the_instances_it_picks_and_keeps_their_ids() -> None:
    text = "benchmark: command\nparams:\n  cmd: [./prog, /opt/ref/prog]\nsamples: 5\n"
    plain = expand_job(text, cpu_count=2)
    marked = expand_job(text + "control:\n  cmd: /opt/ref/prog\n", cpu_count=2)
    assert [i.control for i in marked] == [False, True]
    assert [i.id for i in marked] == [i.id for i in plain]  # control is not part of what is measured
    assert not any(i.control for i in plain)


@pytest.mark.parametrize(("control", "line", "message"), [
    ("control:\n  cmd: /bin/nothing\n", 6, "picks no instance"),
    ("control:\n  samples: 5\n", 6, "picks every instance"),
    ("control: /opt/ref/prog\n", 5, "must be a mapping"),
])
def test_a_control_that_picks_none_or_all_is_a_problem_on_its_line(control: str, line: int, message: str) -> None:
    text = "benchmark: command\nparams:\n  cmd: [./prog, /opt/ref/prog]\nsamples: 5\n" + control
    with pytest.raises(JobError) as caught:
        expand_job(text, cpu_count=2)
    (problem,) = caught.value.problems
    assert message in str(problem) and str(problem).startswith(f"<job>:{line}: control")
