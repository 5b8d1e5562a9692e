"""Kernel-function benchmarks provided by kbench.ko (kmod/benches/*.c).

The table mirrors the module's bench table; a VM test compares it with what the loaded
module reports in /sys/kernel/kbench/<bench>/{description,params}, so the two cannot
drift apart silently.
"""

from __future__ import annotations

from kbench.catalog.benchmarks import LOWER_IS_BETTER, Benchmark, ParamSpec

COMMON_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("irqs_off", "bool", "0", "take samples with local interrupts disabled"),
    ParamSpec("preempt_off", "bool", "0", "take samples with preemption disabled"),
    ParamSpec("dataset_size", "int", "4096", "inputs are drawn from this many LCG values (1..2^20)"),
    ParamSpec("seed", "int", "1", "seed of the LCG that makes the input dataset"),
    ParamSpec("parallel", "bool", "0", "run on every CPU of `cpus` at once, behind a start barrier"),
    ParamSpec("cpus", "str", "all", "CPU list for parallel runs (e.g. 0-3,8)"),
)
"""Parameters every in-kernel benchmark accepts (module attributes, plus `parallel`)."""

KBENCH_ONLY_PARAMS = frozenset({"parallel"})
"""Parameters kbench interprets itself; they are not module attributes."""

_BENCHES: tuple[tuple[str, str, tuple[ParamSpec, ...]], ...] = (
    ("empty", "an empty function: the per-call cost of the harness", ()),
    ("ktime_get", "ktime_get(): read CLOCK_MONOTONIC", ()),
    ("get_random_u32", "get_random_u32(): one 32-bit value from the batched CRNG", ()),
    ("rcu_read_lock", "rcu_read_lock() + rcu_read_unlock()", ()),
    (
        "spin_lock",
        "spin_lock() + spin_unlock() of a private or shared lock",
        (ParamSpec("shared", "int", "0", "1: all CPUs of a parallel run share one lock"),),
    ),
    ("kmalloc", "kmalloc(size) + kfree()", (ParamSpec("size", "int", "64", "bytes per allocation"),)),
    (
        "memcpy",
        "memcpy() of size bytes from a random source block",
        (ParamSpec("size", "int", "64", "bytes per copy"),),
    ),
    (
        "crc32c",
        "__crc32c_le() (lib/crc32, generic) of len bytes",
        (ParamSpec("len", "int", "64", "bytes per checksum"),),
    ),
    ("jhash", "jhash() of len bytes", (ParamSpec("len", "int", "16", "bytes per hash"),)),
    (
        "fib4_lookup",
        "IPv4 route lookup of random destinations; api selects the function",
        (
            ParamSpec("dst_prefix", "str", "10.0.0.0/8", "destinations are random addresses in this prefix"),
            ParamSpec("api", "int", "0", "0: fib_lookup(), 1: ip_route_output_key()"),
        ),
    ),
    (
        "fib6_lookup",
        "IPv6 output route lookup (ip6_route_output) of random destinations",
        (ParamSpec("dst_prefix", "str", "2001:db8::/32", "destinations are random addresses in this prefix"),),
    ),
    (
        "trace_overhead",
        "nested tracepoint pairs (outer around an empty inner): the tracepoints' own cost",
        (
            ParamSpec("outer", "int", "0", "key of the outer pair"),
            ParamSpec("inner", "int", "1", "key of the empty inner pair"),
        ),
    ),
    ("probe_target", "a call of kbench_probe_target(), an empty function to put a probe on", ()),
    (
        "spin",
        "loops steps of dependent arithmetic (a known amount of work)",
        (ParamSpec("loops", "int", "100", "dependent arithmetic steps per call"),),
    ),
)


def kfunc_benchmarks() -> tuple[Benchmark, ...]:
    """Every built-in kbench.ko benchmark as ``kfunc.<bench>`` (metric ``….cycles``)."""
    return tuple(
        Benchmark(
            name=f"kfunc.{name}",
            kind="kfunc",
            workload=name,
            description=description,
            unit="cycles",
            metric=f"kfunc.{name}.cycles",
            direction=LOWER_IS_BETTER,
            params=own + COMMON_PARAMS,
        )
        for name, description, own in _BENCHES
    )
