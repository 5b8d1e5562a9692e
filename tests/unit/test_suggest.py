"""The one home of "did you mean" (kbench.contract.suggest) against difflib's own ratio."""

from __future__ import annotations

import difflib

import pytest

from kbench.contract.suggest import HINT_MATCHES, close_matches, did_you_mean, hint
from kbench.jobs.values import JOB_CUTOFF


def test_hint_names_each_close_name_once_joined_by_or() -> None:
    assert hint(["run", "ran"]) == " (did you mean run or ran?)"
    assert hint([]) == ""
    assert did_you_mean("rnu", ["run", "list", "results"]) == " (did you mean run?)"
    assert did_you_mean("zzzz", ["run", "list"]) == ""


def test_at_most_three_names_closest_first() -> None:
    choices = ["samples", "sample", "samplez", "sampled", "other"]
    found = close_matches("samplse", choices)
    assert len(found) == HINT_MATCHES
    ratios = [difflib.SequenceMatcher(None, "samplse", name).ratio() for name in found]
    assert ratios == sorted(ratios, reverse=True)


@pytest.mark.parametrize(("word", "choice"), [("abcdef", "abcxyz"), ("abcdefg", "abcdxyz")])
def test_the_job_file_cutoff_is_stricter_than_the_command_line_one(word: str, choice: str) -> None:
    """A pair whose closeness lies in [0.5, 0.6) is suggested on the command line, not in a job file."""
    ratio = difflib.SequenceMatcher(None, word, choice).ratio()
    assert 0.5 <= ratio < JOB_CUTOFF
    assert did_you_mean(word, [choice]) == f" (did you mean {choice}?)"
    assert did_you_mean(word, [choice], cutoff=JOB_CUTOFF) == ""
