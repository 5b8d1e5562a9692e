"""The bisection itself, over a ``Lab`` that builds and measures commits.

1. Check: measure G and B in interleaved rounds (random order in each) with the
   sequential comparison of ``kbench.compare.sequential`` (its error rate holds over all
   looks): stop as soon as they differ significantly, or after ``check_trials`` rounds
   with status ``no-difference``. Their trials inform the spread the oracle assumes.
2. Steps: ``search.next_commit`` picks a commit X; its build failing marks it ``skip``;
   else X is measured *bracketed*: rounds of one trial each of X, G and B in a random
   order (``Lab.round``), at least ``trials`` rounds, then one more round at a time until
   ``oracle.classify`` decides (a sequential likelihood-ratio test of "X is like G"
   against "X is like B", each decision wrong with probability about ``error``) or
   ``max_trials`` rounds are spent; then the sign of the evidence decides *weakly*
   (never skip: a skip loses information the search needs, a weak verdict is re-checked).
   X is judged against the G and B trials of its own rounds, not the check's: a machine
   drifts over the minutes of a bisection (other load, frequency, cache state), and
   fresh references drift with it. The check's trials inform only the spread.
3. Confirm: the answer rests on two decisions, the first bad commit and its parent (the
   last commit judged good). When the search ends, each of them whose evidence is short
   of the stricter ``confirm_error`` (weak decisions always are) is measured further,
   continuing its sequential test on top of its earlier trials and references, until
   |LLR| >= log(1 / confirm_error) or ``max_trials`` more rounds. A wrong decision
   anywhere in the search leaves a wrong commit at one end of the answer, so this is
   where later evidence contradicts it: if a verdict flips, the search continues. G and
   B are never re-measured as candidates, and each commit is confirmed at most once.
The state is handed to ``save`` after the check and after every step, so ``resume`` can
continue from exactly there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from kbench.bisect.oracle import UNDECIDED, Classification, classify
from kbench.bisect.search import BAD, GOOD, SKIP, latest_verdicts, next_commit, search_result, steps_left
from kbench.compare.judge import compare_trials
from kbench.compare.sequential import DIFFERENT, SequentialComparison, SequentialStep
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.compare.verdict import LOWER_IS_BETTER
from kbench.contract.progress import Step, no_steps
from kbench.contract.quantities import format_ns

IMPLAUSIBLE_FACTOR = 2.0
"""Confirming trials whose median lies below 1/2 of the smallest or above 2x the largest trial the same
build measured earlier in the bisection are not evidence (``Bisector._implausible``)."""

RUNNING = "running"
DONE = "done"
NO_DIFFERENCE = "no-difference"
FAILED = "failed"
ABORTED = "aborted"


class BisectError(RuntimeError):
    """The bisection cannot go on (a reference does not build, bad commits, ...)."""


class ProgramFailed(BisectError):
    """A measured execution of ``commit``'s program failed (``kbench.targets.base.ExecutionFailed``):
    the commit is skipped with ``reason``, as a failed build is; it is never timed. A good or bad
    commit whose program fails ends the bisection (a BisectError)."""

    def __init__(self, commit: str, reason: str) -> None:
        super().__init__(f"commit {commit[:12]}: {reason}")
        self.commit = commit
        self.reason = reason


class Lab(Protocol):
    """Builds and measures commits; trial statistics are positive numbers (ns)."""

    def build(self, commit: str) -> str | None:
        """Build ``commit``; None when it built, else why not: one line, then optionally more
        lines of evidence (a kernel's console tail) that the step keeps as ``console_tail``."""
        ...

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        """``n`` trial statistics of each commit (built first if needed), interleaved; ProgramFailed
        when an execution of one of them failed."""
        ...

    def describe(self, commit: str) -> dict[str, str]:
        """{"sha", "subject", "author"} of a commit."""
        ...


@dataclass(frozen=True)
class Settings:
    trials: int = 3  # rounds (one trial of X, G and B each) before the first decision
    max_trials: int = 15  # rounds before a weak decision
    error: float = 1e-3  # wrong-decision probability of one sequential test
    confirm_error: float = 1e-6  # the same for the two commits the answer rests on
    alpha: float = DEFAULT_ALPHA  # of the good-vs-bad check and of the reported p values
    check_trials: int = 20  # most rounds of G and B in the check
    check_min_trials: int = 5
    counted: bool = False  # trial statistics are instruction counts per operation, not ns

    def __post_init__(self) -> None:
        if not 1 <= self.trials <= self.max_trials:
            raise ValueError(f"need 1 <= trials <= max_trials, got {self.trials} and {self.max_trials}")
        if not 3 <= self.check_min_trials <= self.check_trials:
            raise ValueError(f"need 3 <= check_min_trials <= check_trials, got {self.check_min_trials} "
                             f"and {self.check_trials}")


@dataclass
class BisectState:
    """Everything a bisection needs to resume; JSON-friendly."""

    good: str
    bad: str
    commits: list[str]  # ancestry path after good up to bad, oldest first
    refs: dict[str, Any] | None = None  # {"good": [...], "bad": [...], "change_pct", "ci_pct", "p_value"}
    steps: list[dict[str, Any]] = field(default_factory=list)
    status: str = RUNNING
    result: dict[str, Any] | None = None


def _statistic_text(value: float, settings: Settings) -> str:
    """A trial statistic as the log prints it: a time scaled to its unit (ns per call of a kfunc,
    ms of a program), or a count of instructions."""
    return f"{value:.6g} instructions" if settings.counted else format_ns(value)


def _median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else math.nan


class Bisector:
    def __init__(
        self, lab: Lab, state: BisectState, settings: Settings,
        save: Callable[[BisectState], None] = lambda _state: None, log: Callable[[str], None] = lambda _text: None,
        progress: Step = no_steps,
    ):
        self.lab = lab
        self.state = state
        self.settings = settings
        self.save = save
        self.log = log
        self.progress = progress

    def _say(self, what: str) -> None:
        """Tell ``progress`` what is being done: steps (commits judged) so far, and of about how
        many once the search has a range (``search.steps_left``)."""
        state = self.state
        done = len(state.steps)
        left = steps_left(state.commits, latest_verdicts(state.steps)) if state.refs is not None else None
        self.progress(what, done, None if left is None else done + left)

    # -- the phases -------------------------------------------------------------------
    def run(self) -> BisectState:
        state = self.state
        if state.status != RUNNING:
            return state
        if state.refs is None:
            self._check()
            if state.status != RUNNING:
                return state
        while True:
            commit = next_commit(state.commits, latest_verdicts(state.steps))
            if commit is not None:
                self._step(commit)
                continue
            if self._recheck():
                continue
            if self._finish():
                return state

    def judge(self, commit: str) -> Classification | str:
        """Build and classify one commit on its own, outside a search (``kbench bisect oracle``):
        its Classification, or why it did not build."""
        error = self.lab.build(commit)
        if error is not None:
            return f"build failed: {error}"
        try:
            judged, _ = self._measure(commit, [], [], [], self.settings.error)
        except ProgramFailed as exc:
            if exc.commit != commit:
                raise BisectError(self._reference_failed(exc)) from exc
            return f"program failed: {exc.reason}"
        return judged

    def _check(self) -> None:
        state = self.state
        for commit in (state.good, state.bad):
            self._say(f"building the {'good' if commit == state.good else 'bad'} commit {commit[:12]}")
            error = self.lab.build(commit)
            if error is not None:
                raise BisectError(f"{'good' if commit == state.good else 'bad'} commit {commit[:12]} "
                                  f"does not build: {error}")
        self._say("checking that good and bad differ, side by side")
        try:
            good, bad, step = self._side_by_side(state.good, state.bad)
        except ProgramFailed as exc:
            raise BisectError(self._reference_failed(exc)) from exc
        assert step.verdict is not None
        verdict = step.verdict
        state.refs = {
            "good": good, "bad": bad, "change_pct": verdict.change_pct, "ci_pct": list(verdict.ci_pct),
            "p_value": verdict.p_value, "verdict": verdict.verdict,
        }
        self.log(f"check: bad vs good {verdict.change_pct:+.2f}% CI [{verdict.ci_pct[0]:+.2f}%, "
                 f"{verdict.ci_pct[1]:+.2f}%] p={verdict.p_value:.3g} ({len(good)}+{len(bad)} trials)")
        if step.decision != DIFFERENT:
            state.status = NO_DIFFERENCE
            state.result = {"first_bad": None, "reason": "no reproducible difference between good and bad",
                            **{k: state.refs[k] for k in ("change_pct", "ci_pct", "p_value")}}
        self.save(state)

    def _reference_failed(self, failed: ProgramFailed) -> str:
        """The message of a good or bad commit whose program fails: the bisection cannot go on."""
        which = {self.state.good: "good", self.state.bad: "bad"}.get(failed.commit, "a")
        return f"the {which} commit's program fails: {failed}"

    def _references(self) -> tuple[list[float], list[float]]:
        assert self.state.refs is not None
        return list(self.state.refs["good"]), list(self.state.refs["bad"])

    def _measure(
        self, commit: str, trials: list[float], good: list[float], bad: list[float], error: float,
    ) -> tuple[Classification, int]:
        """Bracketed rounds of ``commit`` with G and B until the oracle decides (lists grow in place)."""
        state = self.state
        spread = [self.state.refs["good"], self.state.refs["bad"]] if self.state.refs else []
        rounds = 0
        while True:
            n = self.settings.trials if rounds == 0 and len(trials) < self.settings.trials else 1
            fresh = self.lab.round([commit, state.good, state.bad], n)
            trials += fresh[commit]
            good += fresh[state.good]
            bad += fresh[state.bad]
            rounds += n
            if not (trials and good and bad):
                raise BisectError(f"commit {commit[:12]}: the measurement produced no trial statistics")
            judged = classify(good, bad, trials, error=error, alpha=self.settings.alpha,
                              spread_from=spread, final=rounds >= self.settings.max_trials)
            if judged.weak:
                judged = replace(judged, reason=f"undecided after {rounds} rounds, each with fresh good and bad "
                                 f"trials; taken weakly ({judged.reason}) and confirmed if it bounds the answer")
            if judged.verdict != UNDECIDED:
                return judged, rounds

    def _step(self, commit: str) -> None:
        self._say(f"building {commit[:12]} {self.lab.describe(commit)['subject']!r}")
        error = self.lab.build(commit)
        if error is not None:
            first, _, details = error.partition("\n")
            self._record(commit, [], None, phase="search", note=f"build failed: {first}", details=details)
            return
        trials: list[float] = []
        good: list[float] = []
        bad: list[float] = []
        self._say(f"measuring {commit[:12]} against good and bad")
        try:
            judged, rounds = self._measure(commit, trials, good, bad, self.settings.error)
        except ProgramFailed as exc:
            self._skip_failed(exc, "search")
            return
        self._record(commit, trials, judged, phase="search", rounds=rounds, refs=(good, bad))

    def _skip_failed(self, failed: ProgramFailed, phase: str) -> None:
        """A commit whose program failed is ``skip`` with the reason; a good or bad one ends the bisection."""
        if failed.commit in (self.state.good, self.state.bad):
            raise BisectError(self._reference_failed(failed)) from failed
        self._record(failed.commit, [], None, phase=phase, note=f"program failed: {failed.reason}")

    def _recheck(self) -> bool:
        """Confirm the first bad commit and its parent (module docstring); True if anything was measured."""
        state = self.state
        result = search_result(state.commits, latest_verdicts(state.steps))
        if result.first_bad is None:
            return False
        latest = {str(step["commit"]): step for step in state.steps}
        confirmed = {str(step["commit"]) for step in state.steps if step.get("phase") == "recheck"}
        strong = math.log(1 / self.settings.confirm_error)
        targets = [
            c for c in (result.parent, result.first_bad)
            if c is not None and c in latest and c not in confirmed
            and (latest[c].get("weak") or abs(float(latest[c].get("llr") or 0.0)) < strong)
        ]
        if not targets:
            return False
        self.log("confirm: " + " and ".join(c[:12] for c in targets))
        for commit in targets:
            self._say(f"confirming {commit[:12]}")
            old_good, old_bad = latest[commit].get("refs") or ([], [])
            trials, good, bad = list(latest[commit]["trials"]), list(old_good), list(old_bad)
            try:
                judged, rounds = self._measure(commit, trials, good, bad, self.settings.confirm_error)
            except ProgramFailed as exc:
                self._skip_failed(exc, "recheck")
                break
            self._record(commit, trials, judged, phase="recheck", rounds=rounds, refs=(good, bad))
            if judged.verdict != latest[commit]["verdict"]:
                break  # the search continues from the new verdict; the other one may no longer be an end
        return True

    def _finish(self) -> bool:
        """The answer, confirmed side by side (True); False when a commit of the evidence failed to
        run and was skipped, so the search goes on."""
        state = self.state
        result = search_result(state.commits, latest_verdicts(state.steps))
        good, bad = self._references()
        out: dict[str, Any] = {
            "first_bad": None, "candidates": [self.lab.describe(c) for c in result.candidates],
            "parent": result.parent or state.good,
            "steps": len(state.steps),
            "rounds": sum(int(step.get("rounds", 0)) for step in state.steps),
        }
        if result.first_bad is not None:
            parent = result.parent or state.good
            if parent == state.good and result.first_bad == state.bad:
                before, after, decision = good, bad, DIFFERENT  # the check measured exactly this
            else:
                try:
                    before, after, decision = self._evidence(parent, result.first_bad)
                except ProgramFailed as exc:
                    self._skip_failed(exc, "evidence")
                    return False
            verdict = compare_trials(before, after, direction=LOWER_IS_BETTER, alpha=self.settings.alpha)
            out.update(change_pct=verdict.change_pct, ci_pct=list(verdict.ci_pct), p_value=verdict.p_value,
                       verdict=verdict.verdict, confirmed=decision == DIFFERENT,
                       evidence={"parent": self.lab.describe(parent), "parent_trials": before,
                                 "first_bad_trials": after})
            implausible = self._implausible(parent, before) or self._implausible(result.first_bad, after)
            if decision != DIFFERENT:
                out["reason"] = (f"no culprit: measured side by side for {len(before)} rounds, the first bad "
                                 f"candidate {result.first_bad[:12]} and its parent do not differ significantly: "
                                 "the change may be spread over commits")
            elif implausible:
                out.update(confirmed=False, reason=f"no culprit: {implausible}")
            if out["confirmed"]:
                out["first_bad"] = self.lab.describe(result.first_bad)
            else:
                out["suspect"] = self.lab.describe(result.first_bad)
        else:
            out.update(change_pct=state.refs["change_pct"] if state.refs else math.nan, ci_pct=None, p_value=None,
                       reason="no culprit: skipped commits leave several candidates")
        state.result = out
        state.status = DONE
        self.save(state)
        return True

    def _implausible(self, commit: str, trials: Sequence[float]) -> str | None:
        """Why ``trials`` of ``commit`` cannot be evidence, when they lie far outside what the same
        build measured earlier in this bisection (a program that did not really run, a workspace
        another process removed): their median below half the smallest earlier trial or above twice
        the largest. The median, not each trial: one trial of a short benchmark in a guest can be
        slowed 2x by a busy host. None when they are plausible, or when the build has no earlier trials."""
        earlier = self._earlier_trials(commit)
        if not earlier or not trials:
            return None
        low, high = min(earlier) / IMPLAUSIBLE_FACTOR, max(earlier) * IMPLAUSIBLE_FACTOR
        median = float(np.median(trials))
        if low <= median <= high:
            return None
        odd = [t for t in trials if not low <= t <= high]
        return (f"{len(odd)} of the {len(trials)} confirming trials of {commit[:12]} ({min(odd) / 1e6:.3f} ms .. "
                f"{max(odd) / 1e6:.3f} ms; median {median / 1e6:.3f} ms) lie far outside what the same build "
                f"measured earlier in this bisection ({min(earlier) / 1e6:.3f} .. {max(earlier) / 1e6:.3f} ms): "
                "a failed measurement, not evidence")

    def _earlier_trials(self, commit: str) -> list[float]:
        """Every trial statistic of ``commit`` measured before the confirmation: its steps' trials and,
        for the good and bad commits, the check's and every step's references."""
        state = self.state
        found: list[float] = []
        for step in state.steps:
            if step["commit"] == commit:
                found += list(step.get("trials") or [])
            refs = step.get("refs") or [[], []]
            found += list(refs[0]) if commit == state.good else list(refs[1]) if commit == state.bad else []
        if state.refs is not None:
            found += list(state.refs["good"]) if commit == state.good else []
            found += list(state.refs["bad"]) if commit == state.bad else []
        return found

    def _evidence(self, parent: str, culprit: str) -> tuple[list[float], list[float], str]:
        """The first bad commit against its parent, side by side, for the change the report quotes."""
        self.log(f"evidence: {culprit[:12]} against its parent {parent[:12]}")
        self._say(f"measuring {culprit[:12]} against its parent {parent[:12]}")
        before, after, step = self._side_by_side(parent, culprit)
        return before, after, step.decision

    def _side_by_side(self, base: str, new: str) -> tuple[list[float], list[float], SequentialStep]:
        """Rounds of ``base`` and ``new`` until the sequential comparison stops (``check_trials`` at most)."""
        sequential = SequentialComparison(direction=LOWER_IS_BETTER, alpha=self.settings.alpha,
                                          max_trials=self.settings.check_trials,
                                          min_trials=self.settings.check_min_trials)
        step: SequentialStep | None = None
        while step is None or not step.done:
            both = self.lab.round([base, new], 1)
            if not (both[base] and both[new]):
                raise BisectError(f"commit {base[:12]} or {new[:12]} produced no trial statistics")
            step = sequential.add(both[base][0], both[new][0])
        return list(sequential.base), list(sequential.new), step

    def _record(
        self, commit: str, trials: list[float], judged: Classification | None, *, phase: str, rounds: int = 0,
        note: str = "", refs: tuple[list[float], list[float]] | None = None, details: str = "",
    ) -> None:
        step: dict[str, Any] = {
            "commit": commit, "subject": self.lab.describe(commit)["subject"], "phase": phase,
            "trials": trials, "median": _median(trials), "rounds": rounds,
            "refs": [refs[0], refs[1]] if refs is not None else None,
        }
        if judged is None:
            step.update(verdict=SKIP, weak=False, reason=note, change_vs_good_pct=None, p_vs_good=None,
                        p_vs_bad=None, position=None, llr=None, between=False)
            if details:
                step["console_tail"] = details.splitlines()
        else:
            step.update(
                verdict=judged.verdict, weak=judged.weak, reason=judged.reason,
                change_vs_good_pct=judged.vs_good.change_pct, p_vs_good=judged.vs_good.p_value,
                p_vs_bad=judged.vs_bad.p_value, position=judged.position, llr=judged.llr, between=judged.between,
            )
        self.state.steps.append(step)
        weak = " (weak)" if step["weak"] else ""
        self.log(f"step {len(self.state.steps)}: {commit[:12]} {step['subject']!r}: {step['verdict']}{weak}"
                 + (f" median {_statistic_text(step['median'], self.settings)}, {len(trials)} trials" if trials
                    else f" ({note})"))
        self.save(self.state)


__all__ = ["ABORTED", "BAD", "DONE", "FAILED", "GOOD", "NO_DIFFERENCE", "RUNNING", "SKIP", "BisectError",
           "BisectState", "Bisector", "Lab", "ProgramFailed", "Settings"]
