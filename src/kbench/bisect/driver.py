"""The bisection itself, over a ``Lab`` that builds and measures commits.

1. Check: measure G and B (the lab interleaves them, adaptively); if ``compare_trials``
   finds no significant difference, stop with status ``no-difference``. The trial
   statistics of G and B are kept as the two reference distributions.
2. Steps: ``search.next_commit`` picks a commit X; its build failing marks it ``skip``;
   else one *bracketed* batch is measured: ``trials`` trials each of X, G and B, in a
   random order per round (``Lab.round``), and ``oracle.classify`` judges X against the
   G and B trials of this batch, not against the check's: a machine drifts over the
   minutes of a bisection (other load, frequency, cache state), and fresh references
   drift with it. Undecided after the first batch: one more batch (``extra_batches``);
   still undecided: a weak decision by position (never skip: a skip loses information the
   search needs, a weak verdict is re-checked).
3. Re-check: when the search ends on a first bad commit and it or its parent (the last
   commit judged good) was judged weakly, both are measured again in one bracketed batch
   (with G and B; the parent and the candidate are left out when they are G or B) and
   judged on all their trials against all their references with a final decision. If a
   verdict flips, the search continues. Each commit is re-checked at most once.
The state is handed to ``save`` after the check and after every step, so ``resume`` can
continue from exactly there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kbench.bisect.oracle import UNDECIDED, Classification, classify
from kbench.bisect.search import BAD, GOOD, SKIP, latest_verdicts, next_commit, search_result
from kbench.compare.judge import compare_trials
from kbench.compare.verdict import LOWER_IS_BETTER

RUNNING = "running"
DONE = "done"
NO_DIFFERENCE = "no-difference"
FAILED = "failed"
ABORTED = "aborted"


class BisectError(RuntimeError):
    """The bisection cannot go on (a reference does not build, bad commits, ...)."""


class Lab(Protocol):
    """Builds and measures commits; trial statistics are positive numbers (ns)."""

    def build(self, commit: str) -> str | None:
        """Build ``commit``; None when it built, else why not (a short text)."""
        ...

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        """``n`` trial statistics of each commit (built first if needed), interleaved."""
        ...

    def pair(self, good: str, bad: str) -> tuple[list[float], list[float]]:
        """Interleaved trial statistics of the two references."""
        ...

    def describe(self, commit: str) -> dict[str, str]:
        """{"sha", "subject", "author"} of a commit."""
        ...


@dataclass(frozen=True)
class Settings:
    trials: int = 5
    extra_batches: int = 1
    alpha: float = 0.05


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


def _median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else math.nan


class Bisector:
    def __init__(
        self, lab: Lab, state: BisectState, settings: Settings,
        save: Callable[[BisectState], None] = lambda _state: None, log: Callable[[str], None] = lambda _text: None,
    ):
        self.lab = lab
        self.state = state
        self.settings = settings
        self.save = save
        self.log = log

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
            self._finish()
            return state

    def _check(self) -> None:
        state = self.state
        for commit in (state.good, state.bad):
            error = self.lab.build(commit)
            if error is not None:
                raise BisectError(f"{'good' if commit == state.good else 'bad'} commit {commit[:12]} "
                                  f"does not build: {error}")
        good, bad = self.lab.pair(state.good, state.bad)
        verdict = compare_trials(good, bad, direction=LOWER_IS_BETTER, alpha=self.settings.alpha)
        state.refs = {
            "good": good, "bad": bad, "change_pct": verdict.change_pct, "ci_pct": list(verdict.ci_pct),
            "p_value": verdict.p_value, "verdict": verdict.verdict,
        }
        self.log(f"check: bad vs good {verdict.change_pct:+.2f}% CI [{verdict.ci_pct[0]:+.2f}%, "
                 f"{verdict.ci_pct[1]:+.2f}%] p={verdict.p_value:.3g} ({len(good)}+{len(bad)} trials)")
        if not verdict.significant:
            state.status = NO_DIFFERENCE
            state.result = {"first_bad": None, "reason": "no reproducible difference between good and bad",
                            **{k: state.refs[k] for k in ("change_pct", "ci_pct", "p_value")}}
        self.save(state)

    def _references(self) -> tuple[list[float], list[float]]:
        assert self.state.refs is not None
        return list(self.state.refs["good"]), list(self.state.refs["bad"])

    def _step(self, commit: str) -> None:
        error = self.lab.build(commit)
        if error is not None:
            self._record(commit, [], None, phase="search", note=f"build failed: {error}")
            return
        state = self.state
        trials: dict[str, list[float]] = {commit: [], state.good: [], state.bad: []}
        batches = 0
        judged: Classification | None = None
        while judged is None or (judged.verdict == UNDECIDED and batches <= self.settings.extra_batches):
            for key, values in self.lab.round([commit, state.good, state.bad], self.settings.trials).items():
                trials[key] += values
            batches += 1
            judged = classify(trials[state.good], trials[state.bad], trials[commit], alpha=self.settings.alpha)
        if judged.verdict == UNDECIDED:
            judged = classify(trials[state.good], trials[state.bad], trials[commit], alpha=self.settings.alpha,
                              final=True)
        self._record(commit, trials[commit], judged, phase="search", batches=batches,
                     refs=(trials[state.good], trials[state.bad]))

    def _recheck(self) -> bool:
        """Re-measure a weakly judged first bad commit and its parent; True if anything was measured."""
        state = self.state
        result = search_result(state.commits, latest_verdicts(state.steps))
        if result.first_bad is None:
            return False
        latest = {str(step["commit"]): step for step in state.steps}
        targets = [c for c in (result.parent, result.first_bad) if c is not None and c in latest]
        if not any(latest[c].get("weak") for c in targets):
            return False
        if any(step.get("phase") == "recheck" and step["commit"] in targets for step in state.steps):
            return False
        self.log("re-check: " + " and ".join(c[:12] for c in targets) + " (weak evidence)")
        fresh = self.lab.round([*targets, state.good, state.bad], self.settings.trials)
        for commit in targets:
            old_good, old_bad = latest[commit].get("refs") or self._references()
            good, bad = list(old_good) + fresh[state.good], list(old_bad) + fresh[state.bad]
            trials = list(latest[commit]["trials"]) + fresh[commit]
            judged = classify(good, bad, trials, alpha=self.settings.alpha, final=True)
            self._record(commit, trials, judged, phase="recheck", batches=1, refs=(good, bad))
        return True

    def _finish(self) -> None:
        state = self.state
        result = search_result(state.commits, latest_verdicts(state.steps))
        good, bad = self._references()
        latest = {str(step["commit"]): step for step in state.steps}
        out: dict[str, Any] = {
            "first_bad": None, "candidates": [self.lab.describe(c) for c in result.candidates],
            "parent": result.parent or state.good,
            "steps": len(state.steps),
            "trial_batches": sum(int(step.get("batches", 0)) for step in state.steps),
        }
        if result.first_bad is not None:
            out["first_bad"] = self.lab.describe(result.first_bad)
            step = latest.get(result.first_bad)
            culprit = list(step["trials"]) if step is not None else bad
            base = list(step["refs"][0]) if step is not None and step.get("refs") else good
            verdict = compare_trials(base, culprit, direction=LOWER_IS_BETTER, alpha=self.settings.alpha)
            out.update(change_pct=verdict.change_pct, ci_pct=list(verdict.ci_pct), p_value=verdict.p_value,
                       verdict=verdict.verdict)
        else:
            out.update(change_pct=state.refs["change_pct"] if state.refs else math.nan, ci_pct=None, p_value=None,
                       reason="skipped commits leave several candidates")
        state.result = out
        state.status = DONE
        self.save(state)

    def _record(
        self, commit: str, trials: list[float], judged: Classification | None, *, phase: str, batches: int = 0,
        note: str = "", refs: tuple[list[float], list[float]] | None = None,
    ) -> None:
        step: dict[str, Any] = {
            "commit": commit, "subject": self.lab.describe(commit)["subject"], "phase": phase,
            "trials": trials, "median": _median(trials), "batches": batches,
            "refs": [refs[0], refs[1]] if refs is not None else None,
        }
        if judged is None:
            step.update(verdict=SKIP, weak=False, reason=note, change_vs_good_pct=None, p_vs_good=None,
                        p_vs_bad=None, position=None)
        else:
            step.update(
                verdict=judged.verdict, weak=judged.weak, reason=judged.reason,
                change_vs_good_pct=judged.vs_good.change_pct, p_vs_good=judged.vs_good.p_value,
                p_vs_bad=judged.vs_bad.p_value, position=judged.position,
            )
        self.state.steps.append(step)
        weak = " (weak)" if step["weak"] else ""
        self.log(f"step {len(self.state.steps)}: {commit[:12]} {step['subject']!r}: {step['verdict']}{weak}"
                 + (f" median {step['median'] / 1e6:.3f} ms, {len(trials)} trials" if trials else f" ({note})"))
        self.save(self.state)


__all__ = ["ABORTED", "BAD", "DONE", "FAILED", "GOOD", "NO_DIFFERENCE", "RUNNING", "SKIP", "BisectError",
           "BisectState", "Bisector", "Lab", "Settings"]
