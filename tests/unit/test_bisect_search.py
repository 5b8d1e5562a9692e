"""The bisection search (pure) and the driver over a fake lab."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from kbench.bisect.driver import DONE, NO_DIFFERENCE, RUNNING, BisectError, Bisector, BisectState, Settings
from kbench.bisect.oracle import UNDECIDED, classify, position
from kbench.bisect.search import BAD, GOOD, SKIP, latest_verdicts, next_commit, search_result

COMMITS = [f"c{i:02d}" for i in range(1, 17)]  # after G=c00, up to B=c16


def _run_search(commits: list[str], first_bad: int, skips: set[int] = frozenset()) -> tuple[list[str], dict]:
    """Drive the pure search with a perfect oracle; returns the visited commits and verdicts."""
    verdicts: dict[str, str] = {}
    visited = []
    while (commit := next_commit(commits, verdicts)) is not None:
        index = commits.index(commit)
        visited.append(commit)
        verdicts[commit] = SKIP if index in skips else (BAD if index >= first_bad else GOOD)
    return visited, verdicts


@pytest.mark.parametrize("first_bad", [0, 1, 7, 8, 14, 15])
def test_binary_search_finds_every_position_in_log2_steps(first_bad: int) -> None:
    visited, verdicts = _run_search(COMMITS, first_bad)
    result = search_result(COMMITS, verdicts)
    assert result.first_bad == COMMITS[first_bad] and result.candidates == (COMMITS[first_bad],)
    assert len(visited) <= math.ceil(math.log2(len(COMMITS)))
    assert result.parent == (COMMITS[first_bad - 1] if first_bad > 0 else None)


def test_the_first_look_is_the_middle_and_skips_move_to_a_neighbour() -> None:
    assert next_commit(COMMITS, {}) == COMMITS[7]  # middle of (-1, 15), older on a tie
    assert next_commit(COMMITS, {COMMITS[7]: SKIP}) == COMMITS[6]
    _, verdicts = _run_search(COMMITS, first_bad=11, skips={7, 8})
    assert verdicts[COMMITS[7]] == SKIP and search_result(COMMITS, verdicts).first_bad == COMMITS[11]


def test_a_skip_next_to_the_culprit_leaves_candidates() -> None:
    _, verdicts = _run_search(COMMITS, first_bad=10, skips={9})
    result = search_result(COMMITS, verdicts)
    assert result.first_bad is None and result.candidates == (COMMITS[9], COMMITS[10])
    # Every commit skipped: the bad commit or any of them.
    _, verdicts = _run_search(COMMITS[:3], first_bad=2, skips={0, 1})
    assert search_result(COMMITS[:3], verdicts).candidates == tuple(COMMITS[:3])


def test_single_commit_and_errors() -> None:
    assert next_commit(["b"], {}) is None
    assert search_result(["b"], {}).first_bad == "b"
    with pytest.raises(ValueError, match="not over"):
        search_result(COMMITS, {})
    with pytest.raises(ValueError, match="verdict"):
        next_commit(COMMITS, {"c01": "maybe"})
    with pytest.raises(ValueError, match="no commits"):
        next_commit([], {})


def test_latest_verdict_wins() -> None:
    steps = [{"commit": "a", "verdict": GOOD}, {"commit": "b", "verdict": BAD}, {"commit": "a", "verdict": BAD}]
    assert latest_verdicts(steps) == {"a": BAD, "b": BAD}


def test_oracle_rules() -> None:
    rng = np.random.default_rng(1)
    good = list(100 * rng.lognormal(0, 0.01, 10))
    bad = list(110 * rng.lognormal(0, 0.01, 10))
    like_good = list(100 * rng.lognormal(0, 0.01, 5))
    like_bad = list(110 * rng.lognormal(0, 0.01, 5))
    halfway = list(105 * rng.lognormal(0, 0.001, 5))
    assert classify(good, bad, like_good).verdict == GOOD
    assert classify(good, bad, like_bad).verdict == BAD
    assert classify(good, bad, halfway).verdict == UNDECIDED  # differs from both
    final = classify(good, bad, [x * 1.02 for x in halfway], final=True)
    assert final.weak and final.verdict == BAD and 0.5 < final.position < 1
    assert math.isnan(position([1.0], [1.0], [1.0]))


class FakeLab:
    """Commits with known means; trial statistics lognormal around them; some do not build.

    ``drift``: the machine's speed changes by this fraction per trial measured (any commit).
    """

    def __init__(self, means: dict[str, float], broken: set[str] = frozenset(), sigma: float = 0.01, seed: int = 0,
                 drift: float = 0.0):
        self.means = means
        self.broken = broken
        self.sigma = sigma
        self.drift = drift
        self.rng = np.random.default_rng(seed)
        self.batches = 0
        self.count = 0
        self.measured: list[str] = []

    def build(self, commit: str) -> str | None:
        return "exit 1: syntax error" if commit in self.broken else None

    def trials(self, commit: str, n: int) -> list[float]:
        self.batches += 1
        self.measured.append(commit)
        values = []
        for _ in range(n):
            self.count += 1
            values.append(self.means[commit] * (1 + self.drift * self.count) * self.rng.lognormal(0, self.sigma))
        return values

    def round(self, commits: list[str], n: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {c: [] for c in commits}
        for _ in range(n):
            for commit in commits:
                out[commit] += self.trials(commit, 1)
        return out

    def pair(self, good: str, bad: str) -> tuple[list[float], list[float]]:
        return self.trials(good, 10), self.trials(bad, 10)

    def describe(self, commit: str) -> dict[str, str]:
        return {"sha": commit, "subject": f"subject of {commit}", "author": "A <a@b>"}


def _bisect(culprit: int | None, broken: set[str] = frozenset(), shift: float = 0.05, sigma: float = 0.01,
            seed: int = 0, stop_after: int | None = None, drift: float = 0.0) -> tuple[BisectState, FakeLab]:
    means = {"c00": 100.0} | {c: 100.0 * (1 + shift if culprit is not None and i >= culprit else 1)
                              for i, c in enumerate(COMMITS)}
    lab = FakeLab(means, broken, sigma, seed, drift)
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    saved: list[int] = []

    class Stop(Exception):
        pass

    def save(current: BisectState) -> None:
        saved.append(len(current.steps))
        if stop_after is not None and len(current.steps) >= stop_after:
            raise Stop

    with contextlib.suppress(Stop):
        Bisector(lab, state, Settings(trials=5), save=save).run()
    return state, lab


def test_driver_names_the_culprit_and_skips_the_broken_commit() -> None:
    state, _ = _bisect(culprit=11, broken={COMMITS[7]})
    assert state.status == DONE and state.result is not None
    assert state.result["first_bad"]["sha"] == COMMITS[11]
    assert state.steps[0]["commit"] == COMMITS[7] and state.steps[0]["verdict"] == SKIP
    assert state.steps[0]["reason"].startswith("build failed")
    assert 3 < state.result["change_pct"] < 7 and state.result["ci_pct"][0] > 0 and state.result["p_value"] < 0.05


def test_driver_stops_when_good_and_bad_do_not_differ() -> None:
    state, lab = _bisect(culprit=None)
    assert state.status == NO_DIFFERENCE and state.steps == [] and lab.batches == 2
    assert state.result is not None and "no reproducible difference" in state.result["reason"]


def test_driver_resumes_from_saved_steps_with_the_same_answer() -> None:
    partial, lab = _bisect(culprit=5, stop_after=2)
    assert partial.status == RUNNING and len(partial.steps) == 2
    resumed_lab = FakeLab(lab.means, seed=9)
    Bisector(resumed_lab, partial, Settings(trials=5)).run()
    assert partial.status == DONE and partial.result is not None
    assert partial.result["first_bad"]["sha"] == COMMITS[5]
    assert COMMITS[7] not in resumed_lab.measured  # the first look was not repeated


def test_fresh_references_in_every_step_survive_a_drifting_machine() -> None:
    # The machine gets 0.05% faster per trial: over a bisection (~100 trials) that is more than the
    # 5% step, so comparing with the check's references alone would call every later commit good.
    for seed in range(3):
        state, _ = _bisect(culprit=13, seed=seed, drift=-0.0005)
        assert state.result is not None and state.result["first_bad"]["sha"] == COMMITS[13]
        assert all(len(step["refs"][0]) == len(step["trials"]) for step in state.steps)


def test_driver_adds_trials_then_decides_weakly_and_rechecks() -> None:
    # A noisy lab: some steps are undecided after 5 trials, get 5 more, and may end weak.
    outcomes = [_bisect(culprit=9, sigma=0.03, seed=seed)[0] for seed in range(12)]
    assert all(s.status == DONE for s in outcomes)
    correct = sum(s.result is not None and (s.result["first_bad"] or {}).get("sha") == COMMITS[9] for s in outcomes)
    assert correct >= 9
    steps = [step for s in outcomes for step in s.steps]
    assert any(step["batches"] == 2 for step in steps)  # a second batch was measured
    assert any(step["weak"] for step in steps)


def test_a_weak_parent_of_the_culprit_is_measured_again() -> None:
    # c09 (index 8) already does part of the extra work: it differs from both references, so it is
    # judged weakly (good, 40% of the way); as the parent of the culprit it is re-checked with it.
    means = {"c00": 100.0} | {c: 100.0 if i < 8 else (102.0 if i == 8 else 105.0) for i, c in enumerate(COMMITS)}
    lab = FakeLab(means, sigma=0.002)
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    Bisector(lab, state, Settings(trials=5)).run()
    assert state.result is not None and state.result["first_bad"]["sha"] == COMMITS[9]
    first = next(step for step in state.steps if step["commit"] == COMMITS[8])
    assert first["weak"] and first["verdict"] == GOOD and first["batches"] == 2
    rechecks = [step for step in state.steps if step["phase"] == "recheck"]
    assert [step["commit"] for step in rechecks] == [COMMITS[8], COMMITS[9]]
    assert [len(step["trials"]) for step in rechecks] == [15, 10]  # 10 + 5 and 5 + 5
    assert [len(step["refs"][1]) for step in rechecks] == [15, 10]  # references measured alongside


def test_a_reference_that_does_not_build_fails_clearly() -> None:
    lab = FakeLab({"c00": 1.0}, broken={"c00"})
    with pytest.raises(BisectError, match="good commit c00 does not build"):
        Bisector(lab, BisectState(good="c00", bad="c16", commits=list(COMMITS)), Settings()).run()
