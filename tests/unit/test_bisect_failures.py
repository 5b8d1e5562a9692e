"""A bisection never times a failure and never names an unconfirmed commit (the driver over a fake lab)."""

from __future__ import annotations

import pytest

from kbench.bisect.driver import DONE, BisectError, Bisector, BisectState, ProgramFailed, Settings
from kbench.bisect.search import SKIP
from tests.unit.test_bisect_search import COMMITS, FakeLab


class FailingLab(FakeLab):
    """A FakeLab whose ``failing`` commits' programs fail, and whose ``short`` commit measures
    ``short_value`` in every trial of a side-by-side round (two commits: the check, the evidence)."""

    def __init__(self, means: dict[str, float], *, failing: set[str] = frozenset(), short: str | None = None,
                 short_value: float = 0.0, only_first: bool = False, seed: int = 0) -> None:
        super().__init__(means, sigma=0.01, seed=seed)
        self.failing = failing
        self.short = short
        self.short_value = short_value
        self.only_first = only_first  # only the first side-by-side trial of ``short`` measures short_value
        self._shortened = 0

    def round(self, commits: list[str], n: int) -> dict[str, list[float]]:
        for commit in commits:
            if commit in self.failing:
                raise ProgramFailed(commit, "command './prog' failed: exit status 3")
        out = super().round(commits, n)
        if self.short in out and len(commits) == 2:
            trials = out[self.short]
            if not self.only_first:
                out[self.short] = [self.short_value] * len(trials)
            elif self._shortened == 0 and trials:
                out[self.short] = [self.short_value, *trials[1:]]
            self._shortened += len(trials)
        return out


def _means(culprit: int, shift: float = 0.05) -> dict[str, float]:
    return {"c00": 100.0} | {c: 100.0 * (1 + shift if i >= culprit else 1) for i, c in enumerate(COMMITS)}


def _run(lab: FakeLab) -> BisectState:
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    Bisector(lab, state, Settings()).run()
    return state


def test_a_commit_whose_program_fails_is_skipped_with_the_reason_and_never_timed() -> None:
    state = _run(FailingLab(_means(11), failing={COMMITS[7]}))
    assert state.status == DONE and state.result is not None
    assert state.result["first_bad"]["sha"] == COMMITS[11] and state.result["confirmed"] is True
    failed = [step for step in state.steps if step["commit"] == COMMITS[7]]
    assert [step["verdict"] for step in failed] == [SKIP]
    assert failed[0]["reason"].startswith("program failed: ") and "exit status 3" in failed[0]["reason"]
    assert failed[0]["trials"] == []


def test_a_failing_culprit_leaves_no_culprit_but_candidates() -> None:
    # The planted commit's program fails: it is skipped, and the answer is ambiguous, not a wrong commit.
    state = _run(FailingLab(_means(11), failing={COMMITS[11]}))
    assert state.status == DONE and state.result is not None
    assert state.result["first_bad"] is None
    assert [c["sha"] for c in state.result["candidates"]] == [COMMITS[11], COMMITS[12]]
    assert state.result["reason"].startswith("no culprit: ")


@pytest.mark.parametrize("which", ["c00", COMMITS[-1]])
def test_a_reference_whose_program_fails_ends_the_bisection(which: str) -> None:
    with pytest.raises(BisectError, match=r"(good|bad) commit's program fails: .*exit status 3"):
        _run(FailingLab(_means(11), failing={which}))


def test_evidence_that_does_not_confirm_names_no_culprit() -> None:
    # 0.3 % apart under 1 % noise (seed 4: the check finds it), and side by side the search's ends do not differ.
    state = _run(FakeLab(_means(9, shift=0.003), seed=4))
    assert state.result is not None and state.status == DONE and state.result["confirmed"] is False
    assert state.result["first_bad"] is None
    assert state.result["suspect"]["sha"] in {c["sha"] for c in state.result["candidates"]}
    assert state.result["reason"].startswith("no culprit: ")


def test_confirming_trials_far_outside_the_builds_earlier_ones_are_not_evidence() -> None:
    # The culprit's parent (c06) measures 0.69 ms in the evidence phase after 60 ms in its search step:
    # the workspace was gone, say. Side by side the two 'differ' hugely, yet nothing is confirmed.
    means = {c: 60e6 for c in ["c00", *COMMITS]} | {c: 63e6 for c in COMMITS[7:]}
    plain = _run(FakeLab(means, seed=1))
    assert plain.result is not None and plain.result["first_bad"]["sha"] == COMMITS[7]
    lab = FailingLab(means, short=COMMITS[6], short_value=0.69e6, seed=1)
    state = _run(lab)
    assert state.result is not None and state.status == DONE
    assert state.result["first_bad"] is None and state.result["confirmed"] is False
    assert state.result["suspect"]["sha"] == COMMITS[7]
    assert "far outside what the same build measured earlier" in state.result["reason"]
    assert "0.690 ms" in state.result["reason"]


def test_one_confirming_trial_slowed_by_a_busy_host_is_still_evidence() -> None:
    # The parent's first side-by-side trial takes 3x its time (a host that took the guest's CPU away
    # for a while): the median of its trials is what the build measured before,
    # and the culprit is confirmed (before, any trial beyond 2x refused the evidence: CI saw exit 13).
    means = {c: 60e6 for c in ["c00", *COMMITS]} | {c: 63e6 for c in COMMITS[7:]}
    lab = FailingLab(means, short=COMMITS[6], short_value=180e6, only_first=True, seed=1)
    state = _run(lab)
    assert state.result is not None and state.status == DONE
    assert state.result["confirmed"] is True and state.result["first_bad"]["sha"] == COMMITS[7]
