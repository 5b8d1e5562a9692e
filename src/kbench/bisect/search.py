"""The search: which commit to measure next, and when the first bad commit is known.

Pure functions over the commits strictly after the good commit G up to and including
the bad commit B, oldest first (``git rev-list --ancestry-path --topo-order --reverse
G..B``), and the verdicts so far ("good", "bad" or "skip" per commit). kbench runs this
search itself rather than ``git bisect run``: the verdicts live in the store, so a
bisection survives a kill, and a decision can be revisited after more trials.

Rules. G is good and B is bad by the initial check. ``hi`` is the oldest commit judged
bad; ``lo`` the newest commit older than ``hi`` judged good (G when none). The commits
strictly between them not yet judged are the candidates; the next one measured is the
candidate nearest the middle of (lo, hi), the older one on a tie. Commits marked skip
(a build failed) are never measured again. When no candidate is left, the first bad
commit is ``hi`` if no skipped commit lies between lo and hi; otherwise the answer is
ambiguous: it is one of those skipped commits or ``hi`` (as ``git bisect`` says it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GOOD = "good"
BAD = "bad"
SKIP = "skip"
VERDICTS = (GOOD, BAD, SKIP)


@dataclass(frozen=True)
class SearchResult:
    """The end of a search: ``first_bad`` when unique, else the ``candidates`` (oldest first)."""

    first_bad: str | None
    candidates: tuple[str, ...]
    parent: str | None  # the commit judged good right before the range (None: G itself)


def _bounds(commits: Sequence[str], verdicts: Mapping[str, str]) -> tuple[int, int]:
    """(lo, hi) indices: lo the newest good before hi (-1 for G), hi the oldest bad."""
    if not commits:
        raise ValueError("no commits between good and bad")
    for commit, verdict in verdicts.items():
        if verdict not in VERDICTS:
            raise ValueError(f"{commit}: verdict must be one of {VERDICTS}, got {verdict!r}")
    hi = next((i for i, c in enumerate(commits) if verdicts.get(c) == BAD), len(commits) - 1)
    lo = next((i for i in range(hi - 1, -1, -1) if verdicts.get(commits[i]) == GOOD), -1)
    return lo, hi


def next_commit(commits: Sequence[str], verdicts: Mapping[str, str]) -> str | None:
    """The commit to measure next, or None when the search is over."""
    lo, hi = _bounds(commits, verdicts)
    open_ = [i for i in range(lo + 1, hi) if commits[i] not in verdicts]
    if not open_:
        return None
    middle = (lo + hi) / 2
    return commits[min(open_, key=lambda i: (abs(i - middle), i))]


def steps_left(commits: Sequence[str], verdicts: Mapping[str, str]) -> int:
    """About how many more commits the search measures: ceil(log2(n + 1)) for the n candidates
    left (exact when none is skipped and the range halves evenly; a skip adds one)."""
    lo, hi = _bounds(commits, verdicts)
    candidates = sum(1 for i in range(lo + 1, hi) if commits[i] not in verdicts)
    return candidates.bit_length()


def search_result(commits: Sequence[str], verdicts: Mapping[str, str]) -> SearchResult:
    """The answer once ``next_commit`` is None (raises ``ValueError`` before that)."""
    if next_commit(commits, verdicts) is not None:
        raise ValueError("the search is not over")
    lo, hi = _bounds(commits, verdicts)
    skipped = tuple(commits[i] for i in range(lo + 1, hi))  # all skipped, none open
    parent = commits[lo] if lo >= 0 else None
    if skipped:
        return SearchResult(None, (*skipped, commits[hi]), parent)
    return SearchResult(commits[hi], (commits[hi],), parent)


def latest_verdicts(steps: Sequence[Mapping[str, object]]) -> dict[str, str]:
    """commit → verdict of its latest step (a re-check overrides the first look)."""
    verdicts: dict[str, str] = {}
    for step in steps:
        verdicts[str(step["commit"])] = str(step["verdict"])
    return verdicts
