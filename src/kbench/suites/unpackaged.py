"""LKP's test suites that no Debian 12 package has: named, with LKP's tests, parameters and metrics,
so that ``kbench list`` shows them and a job naming one is refused with the reason, never with
"unknown benchmark" and never run without its tool.

Each was looked for with ``apt-cache policy`` / ``apt-cache search`` on Debian 12 (bookworm, main,
contrib and non-free): none has a candidate. LKP builds them from their upstream sources; this
machine reaches Debian's binary packages only (the source archive is not reachable either), so
kbench cannot build them at set-up. will-it-scale is not among them: its testcases are kbench's
own (``kbench-probe scale``).
"""

from __future__ import annotations

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite

_RUNTIME = SuiteParam("runtime", "int", "300", "seconds the test runs (LKP's runtime)", 1, 86400)
_TASKS = TaskCount("threads")
_THREADS = SuiteParam("threads", "int", "1", "tasks (LKP's nr_task / nr_threads)", 1, 4096)


def _reason(tool: str) -> str:
    return (f"no Debian 12 package has {tool} (apt-cache policy: no candidate), and kbench cannot fetch its "
            "sources to build it here")


def _unrunnable(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    raise SuiteParseError(f"{test.full_name} cannot run here: {_reason(test.suite)}")


def _no_output(test: SuiteTest, output: str) -> dict[str, float]:
    raise SuiteParseError(f"{test.full_name} cannot run here")


def _suite(name: str, description: str, tests: dict[str, str], params: tuple[SuiteParam, ...],
           metrics: tuple[SuiteMetric, ...], task_count: TaskCount | None = _TASKS) -> Suite:
    return Suite(
        name=name, tool=name, package="(none in Debian 12)", description=description,
        tests=tuple(SuiteTest(name, test, text, params, metrics) for test, text in tests.items()),
        version_args=(), parse_stream="stdout", command=_unrunnable, parse_output=_no_output,
        version=lambda output: "", duration_param="runtime" if any(p.name == "runtime" for p in params) else None,
        task_count=task_count, unavailable=_reason(name),
    )


UNIXBENCH = _suite(
    "unixbench", "UnixBench's system tests (LKP's unixbench)",
    {name: f"UnixBench {name}" for name in (
        "dhry2reg", "whetstone-double", "execl", "fstime", "fsbuffer", "fsdisk", "pipe", "context1", "spawn",
        "syscall", "shell1", "shell8")},
    (_RUNTIME, _THREADS),
    (SuiteMetric("score", "score", HIGHER_IS_BETTER, "UnixBench's index score"),),
)
AIM7 = _suite(
    "aim7", "AIM7 multiuser workloads (LKP's aim7)",
    {name: f"AIM7 {name} workload" for name in (
        "disk_rr", "disk_rw", "disk_rd", "disk_wrt", "disk_cp", "disk_src", "sync_disk_rw", "creat-clo",
        "mem_rtns_1", "fork_test", "brk_test", "page_test", "shared_memory")},
    (SuiteParam("load", "int", "100", "simulated users (LKP's load)", 1, 100_000),),
    (SuiteMetric("jobs_per_min", "jobs/min", HIGHER_IS_BETTER, "AIM7 jobs completed per minute (LKP's "
                                                               "jobs-per-min)"),),
    task_count=None,
)
REAIM = _suite(
    "reaim", "re-aim-7, AIM7's successor (LKP's reaim)",
    {name: f"re-aim {name} workfile" for name in ("five_sec", "custom", "disk", "shared", "compute", "dbase",
                                                  "fserver", "new_dbase", "new_fserver")},
    (_RUNTIME, _THREADS, SuiteParam("nr_job", "int", "100", "jobs per run (LKP's nr_job)", 1, 1_000_000)),
    (SuiteMetric("jobs_per_min", "jobs/min", HIGHER_IS_BETTER, "re-aim jobs completed per minute"),),
)
VM_SCALABILITY = _suite(
    "vm-scalability", "memory-management stress cases (LKP's vm-scalability: usemem and friends)",
    {name: f"vm-scalability case-{name}" for name in (
        "anon-w-seq", "anon-w-rand", "anon-r-seq", "anon-cow-seq", "anon-cow-rand", "lru-shm", "lru-file-mmap-read",
        "small-allocs", "swap-w-seq", "swap-w-rand", "swap-w-rand-mt", "mmap-pread-seq", "migrate")},
    (_RUNTIME, _THREADS, SuiteParam("size", "str", "", "memory each case uses (LKP's size, e.g. 8T, scaled "
                                                      "to the machine by the case)")),
    (SuiteMetric("throughput", "KB/s", HIGHER_IS_BETTER, "bytes touched per second, all tasks"),
     SuiteMetric("median", "KB/s", HIGHER_IS_BETTER, "the median task's bytes per second")),
)
FILEBENCH = _suite(
    "filebench", "Filebench's workload personalities (LKP's filebench)",
    {name: f"Filebench {name}" for name in (
        "fileserver.f", "webproxy.f", "webserver.f", "varmail.f", "oltp.f", "randomread.f", "randomrw.f")},
    (_RUNTIME,),
    (SuiteMetric("sum_bytes_mb_s", "MB/s", HIGHER_IS_BETTER, "bytes moved per second (LKP's sum_bytes_mb/s)"),),
    task_count=None,
)
EBIZZY = _suite(
    "ebizzy", "a web-server-like allocate/search/free workload (LKP's ebizzy)",
    {"ebizzy": "ebizzy: threads allocating, searching and freeing memory chunks"},
    (SuiteParam("duration", "int", "10", "seconds (LKP's duration)", 1, 86400), _THREADS),
    (SuiteMetric("throughput", "records/s", HIGHER_IS_BETTER, "records handled per second"),),
)
FWQ = _suite(
    "fwq", "fixed work quanta: OS noise (LKP's fwq)",
    {"fwq": "fwq: the time of a fixed quantum of work, repeated"},
    (SuiteParam("samples", "int", "100000", "work quanta timed (LKP's samples)", 1, 100_000_000), _THREADS),
    (SuiteMetric("med", "cycles", LOWER_IS_BETTER, "median time of one work quantum"),),
)

SUITES = (UNIXBENCH, AIM7, REAIM, VM_SCALABILITY, FILEBENCH, EBIZZY, FWQ)
