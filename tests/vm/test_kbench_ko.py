"""kbench.ko in a real Debian kernel under qemu: results, safety, permissions, fuzzing.

Every check compares the module against an independent oracle: numpy on the raw
samples, the errno rules written in docs/sysfs-ABI.md, or the guest's kernel log.
"""

from __future__ import annotations

import errno
import math
import random
import re
import time

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.kinds.kfunc.catalog import COMMON_PARAMS, KBENCH_ONLY_PARAMS, kfunc_benchmarks
from kbench.kinds.kfunc.loaded import describe
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import kernel_log_problems

pytestmark = pytest.mark.vm

BENCHES = [b.workload for b in kfunc_benchmarks()]


def _module(target: VmTarget) -> KbenchModule:
    assert target.module is not None
    return target.module


def _nearest_rank(sorted_values: np.ndarray, percent: float) -> int:
    """ABI rule: 0-based index ceil(n * p / 100) - 1 of the sorted values."""
    index = max(math.ceil(sorted_values.size * percent / 100) - 1, 0)
    return int(sorted_values[index])


def test_catalog_matches_the_loaded_module(kbench_vm: VmTarget) -> None:
    session = kbench_vm.session
    assert session is not None
    names = session.exec(["cat", f"{SYSFS_ROOT}/benchmarks"]).text.split()
    assert names == BENCHES  # registered in the order of benches/list.h
    for bench in kfunc_benchmarks():
        assert describe(_module(kbench_vm), bench.workload) == bench
    common = {p.name for p in COMMON_PARAMS}
    for bench in kfunc_benchmarks():
        directory = f"{SYSFS_ROOT}/{bench.workload}"
        assert session.exec(["cat", f"{directory}/description"]).text.strip() == bench.description
        params_text = session.exec(["cat", f"{directory}/params"]).text
        reported = {}
        for line in params_text.splitlines():
            fields = parse_key_values(line.split(" description=")[0])
            reported[fields["name"]] = fields["value"]
        own = {p.name: p.default for p in bench.params if p.name not in common}
        assert reported == own, bench.name
        for name in common - KBENCH_ONLY_PARAMS:
            default = next(p.default for p in COMMON_PARAMS if p.name == name)
            value = session.exec(["cat", f"{directory}/{name}"]).text.strip()
            assert value == default, (bench.name, name, value)


@pytest.mark.parametrize("bench", BENCHES)
def test_every_bench_text_summary_agrees_with_its_raw_samples(kbench_vm: VmTarget, bench: str) -> None:
    batch = 4
    measurement = _module(kbench_vm).run(
        lookup(f"kfunc.{bench}"), RunRequest(benchmark=f"kfunc.{bench}", samples=1500, warmup_samples=50, batch=batch)
    )
    ticks = measurement.columns["ticks"]
    assert ticks.size == 1500 and measurement.header["batch"] == batch
    assert not measurement.interrupted
    text = parse_key_values(measurement.header["kernel_run"].splitlines()[0])
    ordered = np.sort(ticks)
    median = _nearest_rank(ordered, 50)
    deviations = np.sort(np.abs(ticks.astype(np.int64) - median))
    expected = {
        "count": ticks.size,
        "min": int(ordered[0]) // batch,
        "max": int(ordered[-1]) // batch,
        "50th": median // batch,
        "90th": _nearest_rank(ordered, 90) // batch,
        "95th": _nearest_rank(ordered, 95) // batch,
        "mad": _nearest_rank(deviations, 50) // batch,
    }
    assert {key: int(text[key]) for key in expected} == expected
    overhead_sample = int(text["overhead_sample"])
    assert 0 < overhead_sample < median, "the empty region must cost less than a sample"
    assert int(text["overhead"]) == overhead_sample // batch
    assert int(text["tsc_khz"]) == _module(kbench_vm).tsc_khz() > 0
    if bench.startswith("fib"):
        # The harness installed routes covering the whole default prefix: every lookup hits.
        assert int(text["lookups_err"]) == 0 and int(text["lookups_ok"]) > 0


def test_parallel_run_reports_every_cpu(kbench_vm: VmTarget) -> None:
    measurement = _module(kbench_vm).run(
        lookup("kfunc.spin_lock"),
        RunRequest(benchmark="kfunc.spin_lock", params={"parallel": "1", "shared": "1"}, samples=500, batch=2),
    )
    lines = measurement.header["kernel_run"].splitlines()
    cpu_lines = [line for line in lines if re.match(r"cpu\d+ ", line)]
    assert len(cpu_lines) == 2 and lines[-1].startswith("all ")
    cpu = measurement.columns["cpu"]
    assert sorted(set(cpu.tolist())) == [0, 1]
    assert (cpu == 0).sum() == (cpu == 1).sum() == 500
    assert int(parse_key_values(lines[-1])["count"]) == 1000


def test_million_samples_with_interrupts_off_do_not_trip_the_watchdogs(kbench_vm: VmTarget) -> None:
    session = kbench_vm.session
    assert session is not None
    before = session.dmesg()
    measurement = _module(kbench_vm).run(
        lookup("kfunc.empty"),
        RunRequest(benchmark="kfunc.empty", params={"irqs_off": "1"}, samples=1_000_000, warmup_samples=0, batch=1),
    )
    assert measurement.columns["ticks"].size == 1_000_000
    new_log = session.dmesg()[len(before) :]
    assert kernel_log_problems(new_log) == []


def test_signal_aborts_a_run_with_eintr_and_the_module_stays_usable(kbench_vm: VmTarget, guest_helper: str) -> None:
    session = kbench_vm.session
    assert session is not None
    directory = f"{SYSFS_ROOT}/empty"
    kbench_vm.module.io.write_values(directory, {"loop_count": "10000000", "warmup": "0", "batch": "64"})  # type: ignore[union-attr]
    aborted = session.exec([guest_helper, "alarm-read", f"{directory}/run", "4000"], timeout=120)
    assert aborted.text.split()[0] == f"errno={errno.EINTR}", aborted.text
    status = parse_key_values(session.exec(["cat", f"{directory}/status"]).text.splitlines()[0])
    assert status["result"] == "interrupted" and status["state"] == "idle"
    kept = int(status["count"])
    assert 0 < kept < 10_000_000
    assert len(session.read_file(f"{directory}/samples")) == 8 * kept
    again = _module(kbench_vm).run(lookup("kfunc.empty"), RunRequest(benchmark="kfunc.empty", samples=100, batch=1))
    assert again.columns["ticks"].size == 100


def test_unprivileged_users_cannot_start_a_run(kbench_vm: VmTarget, guest_helper: str) -> None:
    session = kbench_vm.session
    assert session is not None
    run = f"{SYSFS_ROOT}/empty/run"
    as_nobody = session.exec(["cat", run], uid=65534, timeout=60)
    assert as_nobody.rc != 0 and b"Permission denied" in as_nobody.stderr
    knob = session.exec(["sh", "-c", f"echo 5 > {SYSFS_ROOT}/empty/loop_count"], uid=65534, timeout=60)
    assert knob.rc != 0 and b"Permission denied" in knob.stderr
    without_cap = session.exec([guest_helper, "nocap-read", run], timeout=60)
    assert without_cap.text.strip() == f"errno={errno.EPERM}"
    mode = session.exec(["stat", "-c", "%a %U", run]).text.strip()
    assert mode == "400 root"


# --- fuzzing the attribute stores ---------------------------------------------------

INT_ATTRIBUTES = {  # attribute -> (min, max), from docs/sysfs-ABI.md (guest has 2 CPUs)
    "loop_count": (1, 10_000_000),
    "warmup": (0, 10_000_000),
    "batch": (1, 1_000_000),
    "cpu": (-1, 1),
    "irqs_off": (0, 1),
    "preempt_off": (0, 1),
    "histogram": (0, 1),
    "counters": (0, 1),
    "dataset_size": (1, 1 << 20),
    "seed": (0, (1 << 64) - 1),
    "size": (1, 1 << 20),
}
FUZZ_BENCH = "kmalloc"


def _int_case(rng: random.Random, low: int, high: int) -> bytes:
    kind = rng.choice(["valid", "valid", "above", "below", "huge", "text", "hex", "float", "trailing",
                       "space", "inner", "newline-only", "long-garbage", "valid-newline", "plus", "zeros"])
    if kind == "valid":
        return str(rng.randint(low, high)).encode()
    if kind == "valid-newline":
        return f"{rng.randint(low, high)}\n".encode()
    if kind == "above":
        return str(high + rng.randint(1, 10**6)).encode()
    if kind == "below":
        return str(low - rng.randint(1, 10**6)).encode() if low - 1 >= -(2**63) else b"-5"
    if kind == "huge":
        return ("9" * rng.randint(21, 4000)).encode()
    if kind == "text":
        return rng.choice([b"abc", b"on", b"true", b"NaN", b"one", b"\xff\xfe"])
    if kind == "hex":
        return b"0x10"
    if kind == "float":
        return b"1.5"
    if kind == "trailing":
        return f"{rng.randint(max(low, 0), max(low, 0) + 9)}abc".encode()
    if kind == "space":
        return f" {rng.randint(max(low, 0), max(low, 0) + 9)}".encode()
    if kind == "inner":
        return b"1 2"
    if kind == "plus":
        return f"+{rng.randint(max(low, 0), max(low, 0) + 9)}".encode()
    if kind == "zeros":
        return f"{'0' * rng.randint(1, 3)}{rng.randint(max(low, 1), max(low, 1) + 9)}".encode()
    if kind == "newline-only":
        return b"\n"
    return bytes(rng.randrange(33, 127) for _ in range(rng.randint(100, 3000)))


def _expected_int(data: bytes, low: int, high: int) -> tuple[int, bytes | None]:
    """(errno, value read back afterwards or None when unchanged) by the documented rules:
    an optional '-', digits without a leading zero, at most one newline."""
    text = data[:-1] if data.endswith(b"\n") else data
    if re.fullmatch(rb"-?[0-9]+", text) and not re.fullmatch(rb"-?0[0-9]+", text):
        value = int(text)
        if low <= value <= high:
            return 0, f"{value}\n".encode()
        return errno.ERANGE, None
    return errno.EINVAL, None


GUEST_CPUS = 2  # the VM's CPUs: nr_cpu_ids, all online
_CPU_ITEM = rb"(0|[1-9][0-9]*)(-(0|[1-9][0-9]*))?"


def _cpus_case(rng: random.Random) -> bytes:
    return rng.choice([
        b"all", b"all\n", b"0", b"1\n", b"0-1", b"0,1", b"1,0", b"0-0,1",
        b" 0", b"0 ", b"ALL", b"All", b"all,0", b"0,,1", b",0", b"0,", b"1-0", b"0-", b"-1", b"+1", b"00",
        b"01", b"0-01", b"0\n\n", b"0-1:1/2", b"\n", b"2", b"0-2", b"5,0", b"9" * 23, b"1" * 23 + b"-0",
        str(rng.randint(GUEST_CPUS, 10**6)).encode(), f"0,{rng.randint(GUEST_CPUS, 4096)}".encode(),
    ])


def _expected_cpus(data: bytes) -> tuple[int, bytes | None]:
    """(errno, read back) for a store to ``cpus``, by docs/sysfs-ABI.md."""
    text = data[:-1] if data.endswith(b"\n") else data
    if text == b"all":
        return 0, b"all\n"
    if not re.fullmatch(_CPU_ITEM + rb"(," + _CPU_ITEM + rb")*", text):
        return errno.EINVAL, None
    chosen: set[int] = set()
    too_big = False
    for item in text.split(b","):
        first, _, last = item.partition(b"-")
        low, high = int(first), int(last or first)
        if high < low:
            return errno.EINVAL, None
        if high >= GUEST_CPUS:
            too_big = True
        else:
            chosen.update(range(low, high + 1))
    if too_big:
        return errno.ERANGE, None
    ordered = sorted(chosen)
    shown = f"{ordered[0]}-{ordered[-1]}" if len(ordered) > 1 else str(ordered[0])
    return 0, f"{shown}\n".encode()


def _prefix_case(rng: random.Random) -> tuple[bytes, int, bytes | None]:
    a, b = rng.randrange(256), rng.randrange(256)
    plen = rng.randint(16, 32)
    cases = [
        (f"{a}.{b}.0.0/{plen}".encode(), 0, None),
        (f"{a}.{b}.0.0/{rng.randint(33, 200)}".encode(), errno.ERANGE, None),
        (f"{rng.randint(256, 999)}.0.0.0/8".encode(), errno.EINVAL, None),
        (b"2001:db8::/32", errno.EINVAL, None),
        (b"10.0.0.0/", errno.EINVAL, None),
        (b"10.0.0.0/-1", errno.EINVAL, None),
        (b"10.0.0.0/+8", errno.EINVAL, None),
        (b"10.0.0.0/08", errno.EINVAL, None),
        (b"10.0.0.0/" + b"9" * 23, errno.ERANGE, None),
        (b"not-an-address", errno.EINVAL, None),
    ]
    return rng.choice(cases)


def test_fuzzed_attribute_writes_get_the_documented_errno_and_change_nothing(
    kbench_vm: VmTarget, guest_helper: str
) -> None:
    session = kbench_vm.session
    assert session is not None
    rng = random.Random(20261122)
    cases: list[tuple[str, str, bytes, int, bytes | None]] = []  # path, kind, data, errno, after
    directory = f"{SYSFS_ROOT}/{FUZZ_BENCH}"
    for _ in range(1100):
        roll = rng.random()
        if roll < 0.03:
            attribute = rng.choice(list(INT_ATTRIBUTES))
            cases.append((f"{directory}/{attribute}", "badaddr", b"", errno.EFAULT, None))
        elif roll < 0.05:
            attribute = rng.choice(list(INT_ATTRIBUTES))
            cases.append((f"{directory}/{attribute}", "empty", b"", 0, None))
        elif roll < 0.15:
            data, err, _ = _prefix_case(rng)
            cases.append((f"{SYSFS_ROOT}/fib4_lookup/dst_prefix", "data", data, err, None))
        elif roll < 0.25:
            data = _cpus_case(rng)
            err, after = _expected_cpus(data)
            cases.append((f"{directory}/cpus", "data", data, err, after))
        else:
            attribute = rng.choice(list(INT_ATTRIBUTES))
            low, high = INT_ATTRIBUTES[attribute]
            data = _int_case(rng, low, high)
            err, after = _expected_int(data, low, high)
            cases.append((f"{directory}/{attribute}", "data", data, err, after))
    casefile = "\n".join(f"{path}\t{kind}\t{data.hex() or '-'}" for path, kind, data, _, _ in cases) + "\n"
    session.write_file("/tmp/fuzz-cases", casefile.encode())
    result = session.exec([guest_helper, "writes", "/tmp/fuzz-cases"], timeout=600)
    assert result.rc == 0, result.stderr
    rows = [line.split("\t") for line in result.text.splitlines()]
    assert len(rows) == len(cases)
    mismatches = []
    for (path, kind, data, want_errno, want_after), row in zip(cases, rows, strict=True):
        got_errno, ret = int(row[1]), int(row[2])
        before = b"" if row[3] == "-" else bytes.fromhex(row[3])
        after = b"" if row[4] == "-" else bytes.fromhex(row[4])
        if got_errno != want_errno:
            mismatches.append(f"{path} {kind} {data[:40]!r}: errno {got_errno}, documented {want_errno}")
        elif want_errno or kind == "empty":
            if after != before:
                mismatches.append(f"{path} {data[:40]!r}: rejected but value changed {before!r} -> {after!r}")
            if kind == "empty" and ret != 0:
                mismatches.append(f"{path}: empty write returned {ret}")
        elif want_after is not None and after != want_after:
            mismatches.append(f"{path} {data[:40]!r}: reads back {after!r}, expected {want_after!r}")
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cases:\n" + "\n".join(mismatches[:30])
    # Restore defaults the later tests rely on.
    kbench_vm.module.io.write_values(  # type: ignore[union-attr]
        directory, {"cpu": "-1", "irqs_off": "0", "preempt_off": "0", "histogram": "0", "counters": "0",
                    "dataset_size": "4096", "seed": "1", "size": "64", "cpus": "all"}
    )
    kbench_vm.module.io.write_values(f"{SYSFS_ROOT}/fib4_lookup", {"dst_prefix": "10.0.0.0/8"})  # type: ignore[union-attr]


def test_bad_parameter_through_the_engine_is_a_clear_error(kbench_vm: VmTarget) -> None:
    from kbench.targets.base import TargetError

    with pytest.raises(TargetError, match=r"kmalloc/size: ERANGE"):
        _module(kbench_vm).run(
            lookup("kfunc.kmalloc"),
            RunRequest(benchmark="kfunc.kmalloc", params={"size": "0"}, samples=10, batch=1),
        )


def test_guest_attributes_are_read_by_the_agent_and_a_run_by_cat_with_its_bound(kbench_vm: VmTarget) -> None:
    from kbench.targets.kmod_sysfs import SysfsError

    io = _module(kbench_vm).io
    # an attribute that answers at once: the agent reads it (no process), errors keep their errno
    assert parse_key_values(io.read_text(f"{SYSFS_ROOT}/spin/status").splitlines()[0])["state"] == "idle"
    assert int(io.read_text(f"{SYSFS_ROOT}/tsc_khz")) > 0
    with pytest.raises(SysfsError) as missing:
        io.read_text(f"{SYSFS_ROOT}/spin/no_such_attribute")
    assert missing.value.errno == errno.ENOENT
    # a read that runs the benchmark goes through cat: its bound stops it and the run is interrupted
    names = ("loops", "loop_count", "batch", "warmup")
    before = {name: io.read_text(f"{SYSFS_ROOT}/spin/{name}").strip() for name in names}
    io.write_values(f"{SYSFS_ROOT}/spin", {"loops": "100000", "loop_count": "10000000", "batch": "1", "warmup": "0"})
    try:
        with pytest.raises(SysfsError) as stopped:
            io.read_text(f"{SYSFS_ROOT}/spin/run", timeout=2.0)
        assert stopped.value.errno == errno.ETIMEDOUT
        for _ in range(50):
            status = parse_key_values(io.read_text(f"{SYSFS_ROOT}/spin/status").splitlines()[0])
            if status["state"] == "idle":
                break
            time.sleep(0.1)
        assert status["state"] == "idle" and status["result"] == "interrupted", status
    finally:
        io.write_values(f"{SYSFS_ROOT}/spin", before)
