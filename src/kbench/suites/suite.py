"""The one interface every suite module fills in: a definition plus three functions.

A suite module (``hackbench.py``, ``fio.py`` …) declares its tests as data and supplies
``command`` (argv from validated, typed parameters), ``parse`` (metrics from the tool's
output text) and ``version`` (the version from the tool's ``version_args`` output).
``Suite`` adds what is common: test lookup, parameter validation, and the check that
the output held every metric the test declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kbench.contract.benchmark import TaskCount
from kbench.contract.suggest import did_you_mean
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import BadSuiteParameter, ParamValue, SuiteTest, UnknownSuiteTest

CommandBuilder = Callable[[SuiteTest, dict[str, ParamValue]], list[str]]
OutputParser = Callable[[SuiteTest, str], dict[str, float]]
TimedParser = Callable[[SuiteTest, str, float], dict[str, float]]
"""A parser that also takes the iteration's wall-clock seconds (a tool that prints no rate of its own)."""
Preparer = Callable[[SuiteTest, dict[str, ParamValue]], list[str]]
"""The argv of a command run once in the scratch directory before the first iteration, not timed
(the input file a tool reads: pigz's data, netperf's sendfile file); empty: nothing to do."""
VersionParser = Callable[[str], str]


@dataclass(frozen=True)
class Server:
    """A daemon the tool talks to (netperf's netserver): its foreground argv and its TCP port."""

    argv: list[str]
    port: int


ServerBuilder = Callable[[SuiteTest, dict[str, ParamValue]], Server]


@dataclass(frozen=True)
class Suite:
    """One external tool and the tests kbench runs with it.

    ``parse_stream`` names the stream (``"stdout"`` or ``"stderr"``) whose text
    ``parse`` reads; ``duration_param`` names the parameter holding the seconds one run
    lasts, if the tool has one; ``task_count`` says which parameter sets the number of tasks
    (LKP's ``nr_threads``), if the tool runs several. ``server`` builds the daemon the tool
    needs, if any (started before the first iteration, stopped after the last). The tool
    runs in a fresh scratch directory (its working directory) that kbench removes afterwards.
    """

    name: str
    tool: str
    package: str
    description: str
    tests: tuple[SuiteTest, ...]
    version_args: tuple[str, ...]
    parse_stream: str
    command: CommandBuilder
    parse_output: OutputParser
    version: VersionParser
    duration_param: str | None = None
    task_count: TaskCount | None = None
    server: ServerBuilder | None = None
    extra_tools: tuple[str, ...] = ()
    """Other executables of the package the tests run (netserver beside netperf)."""
    unavailable: str = ""
    """Why no test of this suite can run on this system (no Debian 12 package has the tool), or empty."""
    prepare: Preparer | None = None
    parse_timed: TimedParser | None = None
    """Used instead of ``parse_output`` when given: it also gets the iteration's wall-clock seconds."""

    def why_unavailable(self, test: SuiteTest) -> str:
        """Why ``test`` cannot run on this system, or empty."""
        return self.unavailable or test.unavailable

    @property
    def tools(self) -> tuple[str, ...]:
        """Every executable a run needs: the tool first (a guest must carry them all)."""
        return (self.tool, *self.extra_tools)

    def test(self, name: str) -> SuiteTest:
        """The test called ``name`` (without the suite prefix)."""
        for test in self.tests:
            if test.name == name:
                return test
        known = [t.name for t in self.tests]
        raise UnknownSuiteTest(
            f"{self.name} has no test {name!r}{did_you_mean(name, known)}; its tests: {', '.join(known)}"
        )

    def build_command(self, test: str, params: Mapping[str, ParamValue] | None = None) -> list[str]:
        """The argv that runs ``test``; ``params`` are checked and defaults filled in.

        Raises UnknownSuiteTest or BadSuiteParameter (a BadParameter) with a message
        that names the parameter and what it accepts, or why the test cannot run on this system.
        """
        spec = self.test(test)
        if self.why_unavailable(spec):
            raise BadSuiteParameter(f"{spec.full_name} cannot run on this system: {self.why_unavailable(spec)}")
        return self.command(spec, spec.resolve(dict(params or {})))

    def parse(self, test: str, output: str, wall_seconds: float | None = None) -> dict[str, float]:
        """``{<suite>.<test>.<stat>: value}`` for every metric ``test`` declares.

        Pure: reads only ``output`` (the text of ``parse_stream``) and, for a suite that times
        its tool itself (``parse_timed``), ``wall_seconds``. Raises SuiteParseError when the
        output lacks a declared metric.
        """
        spec = self.test(test)
        if self.parse_timed is not None:
            if wall_seconds is None:
                raise SuiteParseError(f"{spec.full_name} is read with the iteration's time, and none was given")
            found = self.parse_timed(spec, output, wall_seconds)
        else:
            found = self.parse_output(spec, output)
        missing = [name for name in spec.metric_names() if name not in found]
        if missing:
            raise SuiteParseError(f"{self.tool} output has no value for {', '.join(missing)}")
        return {name: found[name] for name in spec.metric_names()}
