"""fsmark (Debian package fsmark, tool ``fs_mark``): files written per second, as LKP's fsmark runs it.

The test is LKP's ``sync_method`` (``fsmark.fsyncBeforeClose``, ``fsmark.NoSync`` ...: fs_mark's
``-S`` 0-6). One iteration is one ``fs_mark -L 1`` with one thread per directory ``1`` ... ``N``
under the run's scratch directory (on the job's file system when it sets one up: ``fs:``), each
thread writing ``test_size / max(filesize, 4 KiB) / threads`` files of ``filesize`` bytes, as
LKP counts them (at most fs_mark's 1,000,000). ``nr_files_per_directory`` (LKP's ``1fpd`` or
``1``) spreads them over ``nr_directories`` subdirectories (by default as many as the files
need), fs_mark's ``-D`` and ``-N``.

Parsed (stdout): the line under fs_mark's ``FSUse%  Count  Size  Files/sec  App Overhead``
header: files per second and the time in microseconds spent outside the file system calls.
"""

from __future__ import annotations

import re

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import first_line, size_bytes, size_param, version_in

NAME = "fsmark"
MAX_THREADS = 64  # fs_mark's own limit
MAX_FILES = 1_000_000  # fs_mark's own limit per thread and iteration
MIN_FILE_BLOCK = 4096  # LKP counts a smaller file as one 4 KiB block

SYNC_METHODS = {
    "NoSync": (0, "no sync at all"),
    "fsyncBeforeClose": (1, "fsync() of each file before its close()"),
    "syncFsync": (2, "sync() then fsync() of each file"),
    "PostReverseFsync": (3, "fsync() of every file after all are written, in reverse order"),
    "syncPostReverseFsync": (4, "sync() then fsync() of every file in reverse order"),
    "PostFsync": (5, "fsync() of every file after all are written"),
    "syncPostFsync": (6, "sync() then fsync() of every file after all are written"),
}

PARAMS = (
    size_param("filesize", "4K", "bytes of each file (LKP's filesize; fs_mark -s)"),
    size_param("test_size", "16M", "bytes written in all by one iteration (LKP's test_size)"),
    SuiteParam("threads", "int", "1", "threads, each in a directory of its own (LKP's nr_threads)", 1, MAX_THREADS),
    SuiteParam("nr_directories", "str", "0", "subdirectories per thread directory (fs_mark -D; LKP writes 16d; 0: "
               "as nr_files_per_directory needs, or none)", pattern=r"[0-9]+d?",
               pattern_hint="a count such as 16 or LKP's 16d"),
    SuiteParam("nr_files_per_directory", "str", "", "files written into one subdirectory before the next "
               "(fs_mark -N; LKP writes 1fpd); empty: no subdirectories", pattern=r"([0-9]+(fpd)?)?",
               pattern_hint="a count such as 1 or LKP's 1fpd"),
)

METRICS = (
    SuiteMetric("files_per_sec", "files/s", HIGHER_IS_BETTER, "files created, written (and synced) per second"),
    SuiteMetric("app_overhead", "us", LOWER_IS_BETTER, "microseconds fs_mark spent outside file system calls"),
)


def files_per_thread(params: dict[str, ParamValue]) -> int:
    """How many files each thread writes: LKP's test_size / max(filesize, 4 KiB) / threads, 1 to 1,000,000."""
    block = max(size_bytes(str(params["filesize"])), MIN_FILE_BLOCK)
    files = size_bytes(str(params["test_size"])) // block // int(params["threads"])
    return min(max(files, 1), MAX_FILES)


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    threads = int(params["threads"])
    files = files_per_thread(params)
    argv = ["fs_mark"]
    for index in range(1, threads + 1):
        argv += ["-d", str(index)]
    per_dir = int(str(params["nr_files_per_directory"]).removesuffix("fpd") or 0)
    dirs = int(str(params["nr_directories"]).removesuffix("d"))
    if per_dir and not dirs:
        dirs = max(1, files // per_dir)
    if per_dir:
        argv += ["-D", str(dirs), "-N", str(per_dir)]
    return [*argv, "-n", str(files), "-L", "1", "-S", str(SYNC_METHODS[test.name][0]),
            "-s", str(size_bytes(str(params["filesize"])))]


_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s*$")


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{fsmark.<test>.files_per_sec, .app_overhead}`` from the row under fs_mark's FSUse% header."""
    lines = output.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("FSUse%")), None)
    if header is None:
        raise SuiteParseError(f"fs_mark printed no result table (no 'FSUse%' header): {first_line(output)!r}")
    rows = [match for line in lines[header + 1:] if (match := _ROW.match(line))]
    if not rows:
        raise SuiteParseError("fs_mark's result table has no row")
    if len(rows) != 1:
        raise SuiteParseError(f"fs_mark printed {len(rows)} result rows; kbench runs one iteration (-L 1)")
    row = rows[0]
    return {test.metric_name("files_per_sec"): float(row.group(4)),
            test.metric_name("app_overhead"): float(row.group(5))}


def version(output: str) -> str:
    """``3.3`` from ``#\tVersion 3.3, 1 thread(s) starting at ...`` (fs_mark has no version option)."""
    return version_in(r"Version\s+([0-9][^,\s]*)", output)


SUITE = Suite(
    name=NAME,
    tool="fs_mark",
    package="fsmark",
    description="synchronous file creation and writes (fs_mark), LKP's fsmark",
    tests=tuple(
        SuiteTest(NAME, name, f"fs_mark: create and write files, {text} (LKP's sync_method: {name})", PARAMS, METRICS)
        for name, (_, text) in SYNC_METHODS.items()
    ),
    version_args=("-l", "/dev/null", "-d", "/nonexistent/kbench-version", "-n", "0"),  # writes no log file
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    task_count=TaskCount("threads"),
)
