"""The bisection search (pure) and the driver over a fake lab."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from scipy import integrate, stats

from kbench.bisect.driver import DONE, NO_DIFFERENCE, RUNNING, BisectError, Bisector, BisectState, Settings
from kbench.bisect.oracle import UNDECIDED, classify, log_likelihood_ratio, pooled_sigma, position
from kbench.bisect.search import BAD, GOOD, SKIP, latest_verdicts, next_commit, search_result, steps_left

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


def _marginal_log_likelihood(values: np.ndarray, sigma: float) -> float:
    """log of the integral over mu of prod N(v; mu, sigma), by quadrature (independent of the closed form)."""
    centre = float(values.mean())

    def density(mu: float) -> float:
        return float(np.exp(np.sum(stats.norm.logpdf(values, mu, sigma)) - peak))

    peak = float(np.sum(stats.norm.logpdf(values, centre, sigma)))
    width = 12 * sigma / math.sqrt(values.size)
    area, _ = integrate.quad(density, centre - width, centre + width, epsabs=0, epsrel=1e-10, limit=200)
    return peak + math.log(area)


@pytest.mark.parametrize("sizes", [(5, 5, 5), (3, 7, 4), (12, 20, 20)])
def test_log_likelihood_ratio_matches_numerical_integration(sizes: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(sizes))
    nx, ng, nb = sizes
    good, bad = 100 * rng.lognormal(0, 0.02, ng), 105 * rng.lognormal(0, 0.02, nb)
    trials = 103 * rng.lognormal(0, 0.02, nx)
    sigma = 0.02
    x, g, b = np.log(trials), np.log(good), np.log(bad)
    expected = (_marginal_log_likelihood(np.concatenate([x, b]), sigma) + _marginal_log_likelihood(g, sigma)
                - _marginal_log_likelihood(np.concatenate([x, g]), sigma) - _marginal_log_likelihood(b, sigma))
    assert log_likelihood_ratio(list(good), list(bad), list(trials), sigma) == pytest.approx(expected, abs=1e-6)


def test_pooled_sigma_is_the_within_group_spread_of_a_one_way_anova() -> None:
    rng = np.random.default_rng(3)
    groups = [list(rng.lognormal(m, 0.03, n)) for m, n in ((0.0, 6), (0.1, 9), (0.05, 4))]
    logs = [np.log(g) for g in groups]
    every = np.concatenate(logs)
    between = sum(len(v) * (v.mean() - every.mean()) ** 2 for v in logs)
    df = every.size - len(logs)
    mse = (np.sum((every - every.mean()) ** 2) - between) / df
    assert pooled_sigma(groups) == pytest.approx(math.sqrt(mse) * math.sqrt(df / (df - 2)), rel=1e-12)
    assert pooled_sigma([[5.0]]) == math.inf
    assert pooled_sigma([[5.0, 5.0, 5.0, 5.0]]) == pytest.approx(1e-4 * math.sqrt(3))  # the floor


def test_oracle_rules() -> None:
    rng = np.random.default_rng(1)
    good = list(100 * rng.lognormal(0, 0.01, 10))
    bad = list(110 * rng.lognormal(0, 0.01, 10))
    like_good = list(100 * rng.lognormal(0, 0.01, 5))
    like_bad = list(110 * rng.lognormal(0, 0.01, 5))
    middle = math.exp((np.log(good).mean() + np.log(bad).mean()) / 2)
    halfway = [middle * v for v in (0.995, 1.0, 1.005, 0.998, 1.002)]
    judged = classify(good, bad, like_good)
    assert judged.verdict == GOOD and judged.llr <= -math.log(1e3) and not judged.weak
    assert classify(good, bad, like_bad).verdict == BAD
    undecided = classify(good, bad, halfway)
    assert undecided.verdict == UNDECIDED and abs(undecided.llr) < 1
    leaning = classify(good, bad, [x * 1.0002 for x in halfway], final=True)
    assert leaning.weak and leaning.verdict == BAD and 0.45 < leaning.position < 0.55 and 0 < leaning.llr < 6.9
    assert "short of" in leaning.reason
    # A stricter error needs more evidence: the same trials stop deciding.
    decided = classify(good, bad, like_bad[:2])
    assert decided.verdict == BAD
    assert classify(good, bad, like_bad[:2], error=math.exp(-decided.llr - 0.5)).verdict == UNDECIDED
    assert math.isnan(position([1.0], [1.0], [1.0]))
    with pytest.raises(ValueError, match="positive"):
        classify(good, bad, [0.0])
    with pytest.raises(ValueError, match="error"):
        classify(good, bad, like_bad, error=0.7)


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

    def describe(self, commit: str) -> dict[str, str]:
        return {"sha": commit, "subject": f"subject of {commit}", "author": "A <a@b>"}


def _bisect(culprit: int | None, broken: set[str] = frozenset(), shift: float = 0.05, sigma: float = 0.01,
            seed: int = 0, stop_after: int | None = None, drift: float = 0.0,
            settings: Settings | None = None) -> tuple[BisectState, FakeLab]:
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
        Bisector(lab, state, settings or Settings(), save=save).run()
    return state, lab


def test_driver_names_the_culprit_and_skips_the_broken_commit() -> None:
    state, _ = _bisect(culprit=11, broken={COMMITS[7]})
    assert state.status == DONE and state.result is not None
    assert state.result["first_bad"]["sha"] == COMMITS[11]
    assert state.steps[0]["commit"] == COMMITS[7] and state.steps[0]["verdict"] == SKIP
    assert state.steps[0]["reason"].startswith("build failed")
    assert 3 < state.result["change_pct"] < 7 and state.result["ci_pct"][0] > 0 and state.result["p_value"] < 0.05
    # The change is quoted from the culprit measured side by side with its parent.
    evidence = state.result["evidence"]
    assert state.result["confirmed"] and evidence["parent"]["sha"] == COMMITS[10]
    assert len(evidence["parent_trials"]) == len(evidence["first_bad_trials"]) >= Settings().check_min_trials


def test_driver_stops_when_good_and_bad_do_not_differ() -> None:
    state, lab = _bisect(culprit=None)
    assert state.status == NO_DIFFERENCE and state.steps == [] and state.refs is not None
    rounds = len(state.refs["good"])
    assert rounds == Settings().check_trials and lab.batches == 2 * rounds  # the whole check budget, interleaved
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


def test_a_sequential_step_measures_until_the_evidence_suffices() -> None:
    # Noise 3% against a 5% step: three rounds rarely suffice, so steps go on round by round.
    outcomes = [_bisect(culprit=9, sigma=0.03, seed=seed)[0] for seed in range(6)]
    assert all(s.result is not None and s.result["first_bad"]["sha"] == COMMITS[9] for s in outcomes)
    steps = [step for s in outcomes for step in s.steps if step["phase"] == "search"]
    assert {step["rounds"] for step in steps} - {3}  # some took more than the minimum
    assert all(len(step["trials"]) == step["rounds"] == len(step["refs"][0]) == len(step["refs"][1]) for step in steps)
    assert all(abs(step["llr"]) >= math.log(1e3) for step in steps if not step["weak"])


def test_weak_decisions_at_the_boundary_are_confirmed() -> None:
    # At most two rounds per step and 3% noise: decisions are weak; the two that make the
    # answer (parent and first bad) are measured further until the stricter evidence holds.
    for seed in range(4):
        state, _ = _bisect(culprit=6, sigma=0.03, seed=seed, settings=Settings(trials=2, max_trials=2))
        assert state.result is not None
        searched = [step for step in state.steps if step["phase"] == "search"]
        assert any(step["weak"] for step in searched)
        confirmed = [step for step in state.steps if step["phase"] == "recheck"]
        assert confirmed
        first_looks = {}
        for step in state.steps:
            first_looks.setdefault(step["commit"], step)
        for step in confirmed:
            first = first_looks[step["commit"]]
            assert len(step["trials"]) == len(first["trials"]) + step["rounds"]  # on top of the first look
            assert len(step["refs"][0]) == len(step["trials"])  # references measured alongside
        final = {step["commit"]: step for step in state.steps}
        named = state.result["first_bad"] or state.result["suspect"]  # suspect: not confirmed side by side
        ends = [named["sha"], state.result["parent"]]
        for end in ends:
            if end in final:  # G itself is never a candidate
                assert final[end]["phase"] == "recheck" or abs(final[end]["llr"]) >= math.log(1e6)


def test_a_confirmation_that_flips_sends_the_search_on() -> None:
    # c05 is bad but its first look is made to say good (a disturbed machine): confirming it flips it.
    means = {"c00": 100.0} | {c: 100.0 if i < 4 else 105.0 for i, c in enumerate(COMMITS)}
    lab = FakeLab(means, sigma=0.01, seed=2)
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    Bisector(lab, state, Settings()).run()
    assert state.result is not None and state.result["first_bad"]["sha"] == COMMITS[4]
    planted = dict(state.steps[0], commit=COMMITS[4], verdict=GOOD, weak=True, llr=-1.0, phase="search")
    forged = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS), refs=state.refs,
                         steps=[s for s in state.steps if s["commit"] != COMMITS[4] and s["phase"] == "search"]
                         + [planted])
    Bisector(FakeLab(means, sigma=0.01, seed=5), forged, Settings()).run()
    assert forged.result is not None and forged.result["first_bad"]["sha"] == COMMITS[4]
    flipped = [s for s in forged.steps if s["commit"] == COMMITS[4] and s["phase"] == "recheck"]
    assert flipped and flipped[-1]["verdict"] == BAD


def test_a_commit_between_good_and_bad_is_flagged() -> None:
    # c09 (index 8) does part of the extra work: it differs from both references, is judged by the
    # side it is closer to (good: 40% of the way), and the step says so.
    means = {"c00": 100.0} | {c: 100.0 if i < 8 else (102.0 if i == 8 else 105.0) for i, c in enumerate(COMMITS)}
    lab = FakeLab(means, sigma=0.002)
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    Bisector(lab, state, Settings(trials=5)).run()
    assert state.result is not None and state.result["first_bad"]["sha"] == COMMITS[9]
    partial = next(step for step in state.steps if step["commit"] == COMMITS[8])
    assert partial["verdict"] == GOOD and partial["between"] and 0.3 < partial["position"] < 0.5
    assert "differs from both" in partial["reason"]


def test_a_reference_that_does_not_build_fails_clearly() -> None:
    lab = FakeLab({"c00": 1.0}, broken={"c00"})
    with pytest.raises(BisectError, match="good commit c00 does not build"):
        Bisector(lab, BisectState(good="c00", bad="c16", commits=list(COMMITS)), Settings()).run()


def test_steps_left_is_what_the_search_still_measures() -> None:
    verdicts: dict[str, str] = {}
    left = [steps_left(COMMITS, verdicts)]
    while (commit := next_commit(COMMITS, verdicts)) is not None:
        verdicts[commit] = BAD if COMMITS.index(commit) >= 11 else GOOD
        left.append(steps_left(COMMITS, verdicts))
    assert left[0] == 4 == len(left) - 1  # 15 candidates: 4 steps, and exactly 4 were taken
    assert left == [4, 3, 2, 1, 0]
    assert steps_left(["c01"], {}) == 0  # bad right after good: nothing to search


def test_the_driver_says_what_it_is_doing() -> None:
    means = {"c00": 100.0} | {c: 100.0 * (1.05 if i >= 11 else 1) for i, c in enumerate(COMMITS)}
    heard: list[tuple[str, float, float | None]] = []
    state = BisectState(good="c00", bad=COMMITS[-1], commits=list(COMMITS))
    Bisector(FakeLab(means, {COMMITS[7]}), state, Settings(),
             progress=lambda what, done, total: heard.append((what, done, total))).run()
    assert state.status == DONE
    whats = [what for what, _, _ in heard]
    assert whats[:3] == ["building the good commit c00", f"building the bad commit {COMMITS[-1]}",
                         "checking that good and bad differ, side by side"]
    assert heard[0][2] is None  # no range before the check
    assert f"building {COMMITS[7]} 'subject of {COMMITS[7]}'" in whats  # the broken one: built, never measured
    assert f"measuring {COMMITS[7]} against good and bad" not in whats
    searching = [(done, total) for what, done, total in heard if what.startswith("measuring c")
                 and "parent" not in what]
    assert searching and all(total is not None and done <= total for done, total in searching)
    assert [done for done, _ in searching] == sorted(done for done, _ in searching)
    assert any(what.startswith(f"measuring {COMMITS[11]} against its parent") for what in whats)
