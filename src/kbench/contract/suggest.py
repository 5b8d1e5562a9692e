"""Suggestions for a mistyped name: its closest spellings and the ``(did you mean …?)`` hint.

Every "did you mean" kbench prints comes from here, so the hint reads the same everywhere.
Closeness is difflib's ratio (``SequenceMatcher``): ``cutoff`` is the least ratio a choice
needs to be suggested; callers that list many near names (kernel functions, releases) ask
for more than the three a hint names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

HINT_MATCHES = 3
"""Most names one hint suggests."""
CUTOFF = 0.5
"""The least closeness of a suggestion unless the caller says otherwise."""


def close_matches(word: str, choices: Iterable[str], *, n: int = HINT_MATCHES, cutoff: float = CUTOFF) -> list[str]:
    """The at most ``n`` choices closest to ``word`` with a closeness of ``cutoff`` or more, closest first."""
    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)


def hint(close: Sequence[str]) -> str:
    """`` (did you mean a or b?)`` naming ``close``, or an empty string when it is empty."""
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = CUTOFF) -> str:
    """`` (did you mean a or b?)`` for the closest of ``choices`` to ``word``, or an empty string."""
    return hint(close_matches(word, choices, cutoff=cutoff))
