"""The "Examples:" block at the end of every command's ``--help``.

One table for every command and subcommand (``kbench cache prune`` is ``"cache prune"``),
shown as the command's epilog when ``kbench.cli.lazy`` loads it, so the examples of all
commands read alike: the command line, then what it does. Commands whose help text already
walks through examples of its own (``export``, ``finding``, ``kernel build``, ``trace``) are
not repeated here. tests/unit/test_cli_help_examples.py checks that every command's
``--help`` has one line starting with ``kbench <that command>``.
"""

from __future__ import annotations

import click

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "bisect": (
        ("kbench bisect start --repo ~/src/prog --good v1.0 --bad main --build make --command ./prog",
         "find the commit that made ./prog slower"),
        ("kbench bisect status", "where the last bisection stands"),
    ),
    "bisect demo": (
        ("kbench bisect demo /tmp/demo", "a small repository with a planted slowdown to bisect"),
    ),
    "bisect oracle": (
        ("git bisect run kbench bisect oracle --good v1.0 --bad v1.1 --build make --command ./prog",
         "git bisect's own loop, kbench judging each commit"),
        ("kbench bisect oracle --good v1.0 --bad v1.1 --build make --command ./prog --metric cpu",
         "judge the commit checked out now"),
    ),
    "bisect reset": (("kbench bisect reset", "forget the last bisection and remove its worktrees"),),
    "bisect resume": (("kbench bisect resume 3", "carry on bisection 3 after an interruption"),),
    "bisect start": (
        ("kbench bisect start --repo ~/src/prog --good HEAD~19 --bad main --build make --command ./prog",
         "a user-space program's slowdown"),
        ("kbench bisect start --repo ~/linux --good v6.1 --bad v6.2 --build 'make -j2 bzImage' "
         "--kernel-from-build arch/x86/boot/bzImage --benchmark syscall.getppid",
         "a kernel's slowdown: each commit built, booted in qemu and measured"),
    ),
    "bisect status": (("kbench bisect status 3 --json", "bisection 3's steps and verdicts as JSON"),),
    "cache": (("kbench cache prune --older-than 30d", "remove what was not used for 30 days"),),
    "cache prune": (
        ("kbench cache prune --dry-run", "what would be removed"),
        ("kbench cache prune --older-than 30d", "remove entries not used for 30 days"),
    ),
    "calibrate": (
        ("kbench calibrate syscall.getppid", "the noise of a benchmark and the smallest change it detects"),
        ("kbench calibrate --command ./prog --metric cpu", "the same for a program you run"),
    ),
    "compare": (
        ("kbench compare --command ./old --command ./new", "two programs, a verdict per metric"),
        ("kbench compare syscall.getppid -p 'spin=100|200'", "two values of a parameter"),
        ("kbench compare --kernel deb:6.1.0-55-amd64 --kernel deb:6.1.0-56-amd64 syscall.getppid",
         "two kernels, each booted in qemu"),
        ("kbench compare --runs tag:main --runs tag:pr --fail-on regression", "stored runs, in CI"),
        ("kbench compare --command 'xz -1 -c /etc/services' --command 'xz -9 -c /etc/services' --fleet skl-sp",
         "both sides on one fleet worker of class skl-sp"),
    ),
    "crosscheck": (
        ("kbench crosscheck syscall.getppid -p spin=2000", "two independent methods: do they agree?"),
    ),
    "fleet": (
        ("kbench fleet demo", "Redis, PostgreSQL and two workers in a temporary directory"),
        ("kbench fleet submit job.yaml --queue skl-sp", "run a job on the machines of a class"),
    ),
    "fleet cancel": (("kbench fleet cancel 4d5adf2b93a2", "stop a job's tasks that have not started"),),
    "fleet demo": (
        ("kbench fleet demo", "Redis, PostgreSQL and two workers; Ctrl-C stops them all"),
        ("kbench fleet demo --submit examples/fleet-six.yaml", "submit a job to both classes, wait, print, stop"),
        ("kbench fleet demo --isolated --workers 4 --submit job.yaml",
         "as root: four workers in namespaces of their own that cannot see your files"),
    ),
    "fleet machines": (("kbench fleet machines --json", "the registered machines and their classes"),),
    "fleet resend": (("kbench fleet resend 4d5adf2b93a2", "queue again the tasks a broker lost"),),
    "fleet status": (
        ("kbench fleet status", "every job's tasks by state"),
        ("kbench fleet status 4d5adf2b93a2 --json", "one job's tasks"),
    ),
    "fleet submit": (
        ("kbench fleet submit nightly.yaml --queue skl-sp --queue hsw-ep --repeat 3", "on two classes, 3 times"),
        ("kbench fleet submit kernels.yaml --queue skl-sp --compare target", "and compare the kernels"),
    ),
    "history": (
        ("kbench history", "every series with its change points"),
        ("kbench history syscall.getppid --since 30d", "one benchmark's series over 30 days"),
        ("kbench history --fail-on regression", "exit 9 when a series has a regression (CI)"),
    ),
    "import": (
        ("kbench import results.json", "a hyperfine or pyperf JSON file: a run per command"),
        ("kbench import kbench-recovery-*.json", "the files a failed database left"),
    ),
    "job": (
        ("kbench job validate nightly.yaml", "check a job file; list every problem"),
        ("kbench job expand nightly.yaml", "the runs it makes"),
    ),
    "job expand": (("kbench job expand examples/scaling.yaml --cpus 2", "its instances on a 2-CPU machine"),),
    "job validate": (("kbench job validate examples/scaling.yaml", "exit 2 listing every problem"),),
    "kernel": (("kbench kernel build ~/linux --rev HEAD~1", "build (or find in the cache) one revision"),),
    "kmod": (
        ("kbench kmod new mybench", "mybench.c, an in-kernel benchmark to fill in"),
        ("kbench run kfunc.mybench --kernel deb:6.1.0-56-amd64 --module mybench.c", "build it and run it"),
    ),
    "kmod build": (("kbench kmod build mybench.c --kernel deb:6.1.0-56-amd64", "compile it for that kernel"),),
    "kmod new": (("kbench kmod new mybench --dir src", "src/mybench.c from the template"),),
    "list": (
        ("kbench list", "every benchmark"),
        ("kbench list 'syscall.*' --json", "the system-call benchmarks, their parameters and units"),
    ),
    "report": (
        ("kbench report regressions --since 1d", "new regressions of the last day"),
        ("kbench report releases --kernel 6.1.0-55-amd64 --kernel 6.1.0-56-amd64", "one release against another"),
    ),
    "report regressions": (
        ("kbench report regressions --since 1d", "new regressions of the last day"),
        ("kbench report regressions --format html -o report.html", "the report as a page"),
    ),
    "report releases": (
        ("kbench report releases --kernel 6.1.0-55-amd64 --kernel 6.1.0-56-amd64 --plot releases.png",
         "each series on each kernel, relative to the first"),
    ),
    "results": (
        ("kbench results", "stored runs, newest first"),
        ("kbench results -b 'syscall.*' --status complete --json", "some of them, as JSON"),
    ),
    "run": (
        ("kbench run syscall.getppid --samples 20000", "time a system call"),
        ("kbench run syscall.getppid --kernel deb:6.1.0-56-amd64", "the same in a Debian kernel under qemu"),
        ("kbench run command -p cmd='./prog 1' --profile", "time a program, with its profile"),
        ("kbench run nightly.yaml", "every instance of a job file"),
    ),
    "sensitivity": (
        ("kbench sensitivity syscall.getppid -p 'spin=0|100|200'", "which differences the method separates"),
        ("kbench sensitivity --command ./a --command ./b --budget 2m", "two programs, A/A on the diagonal"),
    ),
    "serve": (("kbench serve --port 8080", "the dashboard on http://127.0.0.1:8080"),),
    "show": (
        ("kbench show 12", "run 12: summary, histogram, context, warnings"),
        ("kbench show 12 --over-time", "run 12 in chunks over its samples and its time"),
    ),
    "sysinfo": (("kbench sysinfo", "the machine and its noise sources"),),
    "tune": (
        ("kbench tune --dry-run", "what would change"),
        ("sudo kbench tune", "set the knobs for benchmarking ..."),
        ("sudo kbench tune --reset", "... and put them back"),
    ),
    "watch": (
        ("kbench watch ~/src/prog --branch main --build make --job bench.yaml --outbox mail/",
         "measure every new commit of main"),
        ("kbench watch ~/src/prog --branch main --build make --job bench.yaml --once --json", "one poll, in cron"),
    ),
    "worker": (
        ("kbench worker --queue skl-sp --broker redis://lab:6379/0 --db postgresql://lab/kbench",
         "run the tasks of class skl-sp on this machine"),
    ),
}
"""A command's examples: (command line, what it does)."""

WIDTH = 44
"""Where the explanation starts when every command line of the block is shorter (else below each)."""


def epilog(path: str) -> str | None:
    """The "Examples:" block of command ``path`` (Click's ``\\b`` keeps its lines as written)."""
    examples = EXAMPLES.get(path)
    if not examples:
        return None
    if all(len(line) <= WIDTH for line, _ in examples):
        lines = [f"  {line:<{WIDTH}}  {what}" for line, what in examples]
    else:  # each explanation under its line
        lines = [f"  {line}\n      {what}" for line, what in examples]
    return "Examples:\n\n\b\n" + "\n".join(lines)


def attach(command: click.Command, path: str) -> click.Command:
    """``command`` and its subcommands with their examples as epilog (kept if it has one)."""
    if command.epilog is None:
        command.epilog = epilog(path)
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            attach(sub, f"{path} {name}")
    return command
