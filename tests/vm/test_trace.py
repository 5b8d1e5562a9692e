"""Tracepoints, the log buffer and function probes of kbench.ko in a real kernel (shared boot).

Each check has an independent oracle: the LCG that drives the test module's paths
(computed here), entries paired by this file's own code, a program that makes a known
number of system calls, and the errno rules of docs/sysfs-ABI.md. The session fixture
checks the guest's kernel log for BUG/WARNING/Oops at teardown.
"""

from __future__ import annotations

import errno
import hashlib
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import trim_mean

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.kinds.kfunc.loaded import describe
from kbench.kinds.trace.hosts import VmTraceHost
from kbench.kinds.trace.plan import TracePlan
from kbench.kinds.trace.session import check_functions, run_with_log, trace_measurement, traced_kfunc_run
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
from kbench.targets.vm import KernelImage, VmSession, build_user_module
from kbench.targets.vm_target import GUEST_MODULE, VmTarget
from kbench.trace.analysis import combine_keys, trace_json
from kbench.trace.kernel import KernelTraceLog, ProbeRefused, TraceError
from kbench.trace.log import KIND_FUNCTION, KIND_RUN, KIND_TRACEPOINT, TraceLog, trace_log_of
from kbench.trace.overhead import tracepoint_overhead
from kbench.trace.selection import measured_entries
from kbench.trace.symbols import UnknownFunction
from tests.vm.guest_log import kernel_log_problems

pytestmark = pytest.mark.vm

HELPERS = Path(__file__).parent / "helpers"
POKE = "/tmp/trace_poke"
PATHS_KO = "/tmp/trace_paths.ko"
TRACE = f"{SYSFS_ROOT}/trace"
DEFAULT_SIZE = 262144
LCG_A, LCG_C = 6364136223846793005, 1442695040888963407


def _module(target: VmTarget) -> KbenchModule:
    assert target.module is not None
    return target.module


def _session(target: VmTarget) -> VmSession:
    assert target.session is not None
    return target.session


def _log(target: VmTarget) -> KernelTraceLog:
    return KernelTraceLog(_module(target).io)


def _dataset(seed: int = 1, size: int = 4096) -> np.ndarray:
    """docs/sysfs-ABI.md: x_{k+1} = x_k * A + C (mod 2^64), dataset[k] = x_{k+1} >> 32."""
    values, x = [], seed
    for _ in range(size):
        x = (x * LCG_A + LCG_C) % (1 << 64)
        values.append(x >> 32)
    return np.array(values, dtype=np.uint64)


def _poke(target: VmTarget, *args: str, uid: int | None = None) -> dict[str, str]:
    result = _session(target).exec([POKE, *args], timeout=120, uid=uid)
    assert result.rc == 0, result.stderr
    return parse_key_values(result.text)


@pytest.fixture(scope="module")
def poke(kbench_vm: VmTarget, tmp_path_factory: pytest.TempPathFactory) -> str:
    binary = tmp_path_factory.mktemp("poke") / "trace_poke"
    subprocess.run(["gcc", "-O2", "-static", "-Wall", "-o", str(binary), str(HELPERS / "trace_poke.c")], check=True)
    _session(kbench_vm).write_file(POKE, binary.read_bytes(), mode=0o755)
    return POKE


@pytest.fixture(scope="module")
def paths_module(kbench_vm: VmTarget, vm_kernel: KernelImage, vm_cache_dir: Path) -> Iterator[str]:
    """tests/vm/helpers/trace_paths.c built against this kernel's kbench.ko and loaded."""
    ko = build_user_module(HELPERS / "trace_paths.c", vm_kernel, vm_cache_dir)
    session = _session(kbench_vm)
    session.write_file(PATHS_KO, ko.read_bytes())
    loaded = session.exec(["insmod", PATHS_KO], timeout=60)
    assert loaded.rc == 0, loaded.stderr
    yield "trace_paths"
    session.exec(["rmmod", "trace_paths"], timeout=60)


def _paths_run(target: VmTarget, warmup: int, samples: int, **params: str) -> tuple[TraceLog, str]:
    module = _module(target)
    bench = describe(module, "trace_paths")
    request = RunRequest(benchmark="kfunc.trace_paths", params={"bad_key": "0", "work": "20", **params},
                         samples=samples, warmup_samples=warmup, batch=1)
    measurement = traced_kfunc_run(module, bench, request)
    log = trace_log_of(measurement.header, measurement.columns)
    assert log is not None
    return log, measurement.header["kernel_run"]


def _expected_counts(values: np.ndarray) -> Counter[int]:
    c = int(np.count_nonzero(values & 1))
    c2 = int(np.count_nonzero(values & 2))
    n = int(values.size)
    return Counter({0: c, 1: c, 2: c, 3: c, 9: c, 4: n, 5: n, 6: n, 7: n, 8: c2})


def _tracepoint_counts(entries: np.ndarray) -> Counter[int]:
    keys = entries[entries["kind"] == KIND_TRACEPOINT]["key"]
    return Counter(int(key) for key in keys)


# -- tracepoint semantics ------------------------------------------------------------


def test_conditional_logging_counts_match_the_paths_taken(kbench_vm: VmTarget, paths_module: str) -> None:
    warmup, samples = 50, 3000
    log, _ = _paths_run(kbench_vm, warmup, samples)
    dataset = _dataset()
    selection = measured_entries(log)
    # Inside the recorded window: the calls on dataset[warmup:warmup+samples].
    assert _tracepoint_counts(selection.entries) == _expected_counts(dataset[warmup : warmup + samples])
    # Everything logged, warm-up included.
    assert _tracepoint_counts(log.entries) == _expected_counts(dataset[: warmup + samples])
    assert selection.outside == sum(_expected_counts(dataset[:warmup]).values())
    windows = log.of_kind(KIND_RUN)
    assert windows.size == 1 and int(windows["data"][0]) == samples
    assert log.overflow == 0 and int(log.status["invalid_keys"]) == 0
    listed = {item["key"]: item for item in trace_json(log) if item["kind"] == "tracepoint"}
    assert {key: item["count"] for key, item in listed.items()} == dict(_expected_counts(
        dataset[warmup : warmup + samples]))
    assert listed[3]["name"] == "ex3_g" and listed[3]["unit"] == "cycles"
    for item in listed.values():
        assert 0 < item["min"] <= item["median"] <= item["p99"] <= item["max"]


def _inside(outer: np.ndarray, inner: np.ndarray) -> list[tuple[int, list[int]]]:
    """For each outer entry, the indices of inner entries (same task and CPU) wholly inside it."""
    found = []
    for i, o in enumerate(outer):
        hit = ((inner["pid"] == o["pid"]) & (inner["cpu"] == o["cpu"]) & (inner["start"] >= o["start"])
               & (inner["start"] + inner["cycles"] <= o["start"] + o["cycles"]))
        found.append((i, np.flatnonzero(hit).tolist()))
    return found


def test_keys_summed_along_a_path_equal_their_pairs_inside_the_enclosing_key(
    kbench_vm: VmTarget, paths_module: str
) -> None:
    log, _ = _paths_run(kbench_vm, 0, 1500)
    entries = measured_entries(log).entries
    tracepoints = entries[entries["kind"] == KIND_TRACEPOINT]
    enclosing = tracepoints[tracepoints["key"] == 9]
    two, three = tracepoints[tracepoints["key"] == 2], tracepoints[tracepoints["key"] == 3]
    mine = []
    for (i, in_two), (_, in_three) in zip(_inside(enclosing, two), _inside(enclosing, three), strict=True):
        assert len(in_two) == 1 and len(in_three) == 1, "each pass logs one key-2 and one key-3 region"
        total = int(two["cycles"][in_two[0]]) + int(three["cycles"][in_three[0]])
        assert total < int(enclosing["cycles"][i]), "key 9 encloses keys 2 and 3 and their tracepoints"
        mine.append(total)
    combined = combine_keys(log, (2, 3))
    assert combined.values.size == enclosing.size > 0
    assert sorted(combined.values.tolist()) == sorted(float(v) for v in mine)


def test_interleaved_and_nested_keys(kbench_vm: VmTarget, paths_module: str) -> None:
    log, _ = _paths_run(kbench_vm, 0, 1000)
    entries = measured_entries(log).entries
    by_key = {key: entries[(entries["kind"] == KIND_TRACEPOINT) & (entries["key"] == key)] for key in (4, 5, 6, 7)}
    # Interleaved: 5 starts inside 4 and ends after it, once per call.
    a, b = by_key[4], by_key[5]
    for o in a:
        later = b[(b["pid"] == o["pid"]) & (b["cpu"] == o["cpu"]) & (b["start"] > o["start"])
                  & (b["start"] < o["start"] + o["cycles"])]
        assert later.size == 1 and later["start"][0] + later["cycles"][0] > o["start"] + o["cycles"]
    # Nested: 7 inside 6, so outer >= inner for every pair.
    pairs = _inside(by_key[6], by_key[7])
    assert len(pairs) == 1000 and all(len(inner) == 1 for _, inner in pairs)
    assert all(int(by_key[6]["cycles"][i]) >= int(by_key[7]["cycles"][inner[0]]) for i, inner in pairs)


def test_names_and_invalid_keys(kbench_vm: VmTarget, paths_module: str) -> None:
    assert {k: v for k, v in _log(kbench_vm).names().items() if k < 10} == {
        0: "ex1_f_g", 1: "ex2_g", 2: "ex3_f_h", 3: "ex3_g", 4: "interleaved_a", 5: "interleaved_b",
        6: "outer", 7: "inner", 8: "stop_twice", 9: "ex3_all"}
    keys = int(_log(kbench_vm).status()["keys"])
    log, run_line = _paths_run(kbench_vm, 10, 400, bad_key=str(keys + 5))
    report = parse_key_values(run_line)
    assert report["name_bad_key"] == report["name_bad_chars"] == str(-errno.EINVAL)
    # Every call STARTs and STOPs the bad key: two counts per call, warm-up included.
    assert int(log.status["invalid_keys"]) == 2 * 410
    assert keys + 5 not in set(log.entries["key"].tolist())


# -- the tracepoints' own overhead ---------------------------------------------------


def _own_pairs(log: TraceLog) -> tuple[np.ndarray, np.ndarray]:
    entries = measured_entries(log).entries
    outer = entries[(entries["kind"] == KIND_TRACEPOINT) & (entries["key"] == 0)]
    inner = entries[(entries["kind"] == KIND_TRACEPOINT) & (entries["key"] == 1)]
    pairs = _inside(outer, inner)
    assert all(len(found) == 1 for _, found in pairs)
    return (np.array([int(outer["cycles"][i]) for i, _ in pairs], dtype=np.float64),
            np.array([int(inner["cycles"][found[0]]) for _, found in pairs], dtype=np.float64))


def test_nested_pair_overhead_is_positive_and_stable_across_two_runs(kbench_vm: VmTarget) -> None:
    module = _module(kbench_vm)
    bench = lookup("kfunc.trace_overhead")
    means = []
    for _ in range(2):
        request = RunRequest(benchmark=bench.name, params={"outer": "0", "inner": "1"}, samples=2000,
                             warmup_samples=100, batch=1)
        measurement = traced_kfunc_run(module, bench, request)
        log = trace_log_of(measurement.header, measurement.columns)
        assert log is not None
        outer, inner = _own_pairs(log)
        assert outer.size == 2000 and np.all(outer >= inner)
        total, effective = outer - inner, inner
        overhead = tracepoint_overhead(log)
        assert overhead.total.samples == overhead.effective.samples == 2000
        assert overhead.median_total == float(np.median(total)) > 0
        assert overhead.median_effective == float(np.median(effective)) > 0
        assert overhead.effective.mean == pytest.approx(float(effective.mean()))
        # One call of the bench runs two whole pairs: more than one pair's total overhead.
        assert float(np.median(measurement.per_op("cycles"))) > overhead.median_total
        means.append((float(trim_mean(total, 0.2)), float(trim_mean(effective, 0.2))))
    # Trimmed means, not medians: under TCG the TSC advances in steps of a few tens of
    # cycles, about the size of the effective overhead, so a median can jump by a whole
    # step; and not plain means, which a few preempted pairs can double. The guest's two
    # speed modes (about 1.6x apart) stay inside the bound.
    (total_a, effective_a), (total_b, effective_b) = means
    assert 0.5 < total_a / total_b < 2 and 0.5 < effective_a / effective_b < 2, means


# -- functions timed in place ----------------------------------------------------------


def test_kbench_trace_counts_the_system_calls_of_a_known_loop(kbench_vm: VmTarget, poke: str) -> None:
    calls = 4000
    plan = TracePlan(functions=("__x64_sys_getppid",), command=f"{poke} getppid {calls}")
    host = VmTraceHost(kbench_vm)
    check_functions(host, plan.functions)
    measurement = trace_measurement(host, plan)
    assert measurement.header["workload"]["stdout_tail"].strip() == f"calls={calls}"
    log = trace_log_of(measurement.header, measurement.columns)
    assert log is not None and log.functions == {0: "__x64_sys_getppid"}
    logged = log.of_kind(KIND_FUNCTION)
    # The loop's calls, plus the shell's own getppid and any other background caller.
    assert calls <= logged.size <= calls + 20
    # busybox sh execs the loop in its own process, after one getppid of its own.
    (_, most), = Counter(int(pid) for pid in logged["pid"]).most_common(1)
    assert calls <= most <= calls + 1
    assert np.all(logged["cycles"] > 0)
    probe = measurement.header["trace"]["probe_overhead"]
    assert probe["median_effective"] > 0 and probe["total"] > 0
    assert probe["effective"]["samples"] == 2000
    assert _log(kbench_vm).functions() == [], "kbench trace removes its probes"


def test_unknown_and_unprobeable_functions_are_clear_errors(kbench_vm: VmTarget) -> None:
    host = VmTraceHost(kbench_vm)
    with pytest.raises(UnknownFunction, match=r"no function fib_table_lookupp .*near matches: .*fib_table_lookup"):
        check_functions(host, ["fib_table_lookupp"])
    with pytest.raises(UnknownFunction, match=r"jiffies is not a function \(kallsyms type D"):
        check_functions(host, ["jiffies"])
    with pytest.raises(ProbeRefused, match=r"kprobe_int3_handler cannot be probed") as refused:
        check_functions(host, ["kprobe_int3_handler"])
    assert refused.value.errno == errno.EINVAL
    assert _log(kbench_vm).functions() == []


# -- the log buffer under misuse -----------------------------------------------------------


@pytest.mark.parametrize(("layout", "stored"), [("percpu", 32), ("shared", 64)])
def test_overflow_is_counted_never_stored(kbench_vm: VmTarget, layout: str, stored: int) -> None:
    log = _log(kbench_vm)
    log.set_layout(layout)
    log.set_size(64)  # percpu: 64 / 2 CPUs = 32 each
    try:
        bench = lookup("kfunc.trace_overhead")
        request = RunRequest(benchmark=bench.name, params={"outer": "0", "inner": "1"}, samples=500,
                             warmup_samples=0, batch=1, cpu=0)
        _, trace = run_with_log(_module(kbench_vm), log, bench, request)
        attempts = 2 * 500 + 1  # two entries per call, one run window
        assert trace.n == stored
        assert trace.overflow == attempts - stored
        assert set(trace.entries["cpu"].tolist()) == {0}
    finally:
        log.set_size(DEFAULT_SIZE)
        log.set_layout("percpu")


def test_zero_size_log_refuses_to_start_and_runs_still_work(kbench_vm: VmTarget, poke: str) -> None:
    log = _log(kbench_vm)
    log.set_size(0)
    try:
        assert _poke(kbench_vm, "write", f"{TRACE}/control", "reset") == {"errno": str(errno.ENOSPC)}
        with pytest.raises(TraceError, match="no room"):
            log.reset()
        assert log.status()["state"] == "idle" and log.read().n == 0
        bench = lookup("kfunc.trace_overhead")
        measurement = traced_kfunc_run(_module(kbench_vm), bench,
                                       RunRequest(benchmark=bench.name, samples=200, batch=1))
        assert measurement.n == 200 and "trace" not in measurement.header
        assert any("no room" in warning for warning in measurement.header["warnings"])
    finally:
        log.set_size(DEFAULT_SIZE)


def test_every_misuse_gets_its_documented_errno_and_changes_nothing(kbench_vm: VmTarget, poke: str) -> None:
    log = _log(kbench_vm)
    before = log.status()
    cases = [
        ("control", "bogus", errno.EINVAL), ("control", "resetx", errno.EINVAL),
        ("size", "abc", errno.EINVAL), ("size", "0x10", errno.EINVAL), ("size", " 5", errno.EINVAL),
        ("size", "5 ", errno.EINVAL), ("size", "-1", errno.ERANGE), ("size", str((1 << 24) + 1), errno.ERANGE),
        ("size", "9" * 40, errno.ERANGE), ("layout", "diagonal", errno.EINVAL),
        ("functions", "bogus", errno.EINVAL), ("functions", "+", errno.EINVAL),
        ("functions", "+bad name", errno.EINVAL), ("functions", "+" + "x" * 200, errno.EINVAL),
        ("functions", "-fib_table_lookup", errno.ENOENT), ("functions", "+no_such_function_xyz", errno.ENOENT),
        ("functions", "+kprobe_int3_handler", errno.EINVAL),
    ]
    got = [(name, value, int(_poke(kbench_vm, "write", f"{TRACE}/{name}", value)["errno"])) for name, value, _ in cases]
    assert got == cases
    assert log.status() == before and log.functions() == []

    # Probes: a second probe of one function, and a seventeenth.
    kallsyms = _session(kbench_vm).read_file("/proc/kallsyms").decode()
    syscalls = sorted({line.split()[2] for line in kallsyms.splitlines()
                       if line.split()[1] == "T" and line.split()[2].startswith("__x64_sys_")})
    try:
        for name in syscalls[:16]:
            log.probe(name)
        assert _poke(kbench_vm, "write", f"{TRACE}/functions", f"+{syscalls[0]}")["errno"] == str(errno.EEXIST)
        assert _poke(kbench_vm, "write", f"{TRACE}/functions", f"+{syscalls[16]}")["errno"] == str(errno.ENOSPC)
        assert [f.name for f in log.functions()] == syscalls[:16]
    finally:
        log.clear_probes()

    # While logging: no resize, no layout change, no probe change, no read.
    log.reset()
    try:
        for name, value in (("size", "100"), ("layout", "shared"), ("functions", "+fib_table_lookup"),
                            ("functions", "clear")):
            assert _poke(kbench_vm, "write", f"{TRACE}/{name}", value)["errno"] == str(errno.EBUSY), name
        assert _poke(kbench_vm, "read", f"{TRACE}/log")["errno"] == str(errno.EBUSY)
    finally:
        log.finalize()
    status = log.status()
    assert status["size"] == str(DEFAULT_SIZE) and status["layout"] == "percpu"

    # Root only: CAP_SYS_ADMIN for control and functions, mode 0600 for the rest.
    assert _poke(kbench_vm, "nocap-write", f"{TRACE}/control", "reset")["errno"] == str(errno.EPERM)
    assert _poke(kbench_vm, "nocap-write", f"{TRACE}/functions", "+fib_table_lookup")["errno"] == str(errno.EPERM)
    for name in ("control", "size", "layout", "functions"):
        assert _poke(kbench_vm, "write", f"{TRACE}/{name}", "x", uid=65534)["errno"] == str(errno.EACCES)
    assert _poke(kbench_vm, "read", f"{TRACE}/log", uid=65534)["errno"] == str(errno.EACCES)
    assert log.status()["state"] == "finalized"


def test_concurrent_readers_get_the_same_log(kbench_vm: VmTarget, poke: str) -> None:
    log = _log(kbench_vm)
    bench = lookup("kfunc.trace_overhead")
    _, trace = run_with_log(_module(kbench_vm), log, bench,
                            RunRequest(benchmark=bench.name, samples=3000, warmup_samples=0, batch=1))
    session = _session(kbench_vm)
    readers = session.exec(
        f"for i in 1 2 3 4 5 6; do cat {TRACE}/log > /tmp/log$i & done; wait; md5sum /tmp/log1 /tmp/log2 /tmp/log3 "
        "/tmp/log4 /tmp/log5 /tmp/log6; rm -f /tmp/log?", timeout=120)
    digests = {line.split()[0] for line in readers.text.splitlines()}
    expected = hashlib.md5(trace.entries.tobytes()).hexdigest()
    assert digests == {expected} and trace.n == 2 * 3000 + 1
    # Readers racing resets and finalizes: EBUSY or whole entries, never anything else.
    racing = session.exec(
        f"(for i in $(seq 40); do echo reset > {TRACE}/control; echo finalize > {TRACE}/control; done) & "
        f"for i in $(seq 40); do {poke} read {TRACE}/log & {poke} read {TRACE}/log; wait $!; done; wait",
        timeout=300)
    results = [parse_key_values(line) for line in racing.text.splitlines() if line.startswith("errno=")]
    assert len(results) == 80
    assert all(r["errno"] in ("0", str(errno.EBUSY)) and int(r["bytes"]) % 32 == 0 for r in results)


# -- unloading -----------------------------------------------------------------------------


def test_rmmod_of_a_benchmark_module_during_a_traced_run(kbench_vm: VmTarget, paths_module: str, poke: str) -> None:
    session = _session(kbench_vm)
    log = _log(kbench_vm)
    directory = f"{SYSFS_ROOT}/trace_paths"
    _module(kbench_vm).io.write_values(directory, {"loop_count": "10000000", "warmup": "0", "batch": "1"})
    log.reset()
    result = session.exec(
        f"{poke} read {directory}/run > /tmp/rmrun.out & P=$!; sleep 2; rmmod trace_paths; echo rmmod=$?; "
        "wait $P; cat /tmp/rmrun.out", timeout=300)
    log.finalize()
    facts = parse_key_values(result.text.replace("\n", " "))
    assert facts["rmmod"] == "0" and facts["errno"] == str(errno.ENODEV)
    trace = log.read()
    assert trace.n > 0 and set(trace.entries["kind"].tolist()) <= {KIND_TRACEPOINT, KIND_RUN}
    assert "trace_paths" not in _module(kbench_vm).benchmarks()
    assert not any(key < 10 for key in log.names()), "the module's exit removed its names"
    assert session.exec(["insmod", PATHS_KO], timeout=60).rc == 0


def test_rmmod_kbench_while_logging_with_a_probe_armed_and_module_parameters(
    kbench_vm: VmTarget, poke: str
) -> None:
    session = _session(kbench_vm)
    session.exec(["rmmod", "trace_paths"], timeout=60)
    dmesg_before = session.dmesg()
    log = _log(kbench_vm)
    log.probe("__x64_sys_getppid")
    log.reset()
    # Calls go through the probe and fill the log, then the module goes with both still on.
    # (While the probed function is still being called: tests/vm/test_unload_under_calls.py.)
    session.exec(f"{poke} getppid 2000000000 > /dev/null & P=$!; sleep 1; kill $P; wait", timeout=120)
    status = log.status()
    assert status["state"] == "logging", status
    assert log.functions(), "the probe is still armed"
    unloaded = session.exec(["rmmod", "kbench"], timeout=60)
    assert unloaded.rc == 0, unloaded.stderr
    try:
        for bad in ("trace_keys=0", "trace_keys=4097", "trace_log_entries=16777217"):
            refused = session.exec(["insmod", GUEST_MODULE, bad], timeout=60)
            assert refused.rc != 0 and b"Invalid argument" in refused.stderr, bad
        loaded = session.exec(["insmod", GUEST_MODULE, "trace_log_entries=0", "trace_log_percpu=0", "trace_keys=7"],
                              timeout=60)
        assert loaded.rc == 0, loaded.stderr
        status = log.status()
        assert (status["size"], status["layout"], status["keys"]) == ("0", "shared", "7")
        assert _poke(kbench_vm, "write", f"{TRACE}/control", "reset")["errno"] == str(errno.ENOSPC)
        assert session.exec(["rmmod", "kbench"], timeout=60).rc == 0
    finally:
        reloaded = session.exec(["insmod", GUEST_MODULE], timeout=60)
    assert reloaded.rc == 0, reloaded.stderr
    assert log.status()["size"] == str(DEFAULT_SIZE) and log.functions() == []
    assert kernel_log_problems(session.dmesg()[len(dmesg_before):]) == []

