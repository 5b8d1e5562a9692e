"""A folded profile as a speedscope file (https://www.speedscope.app/file-format-schema.json), and back.

speedscope's file format (jlfwong/speedscope, src/lib/file-format-spec.ts): ``$schema``,
``shared.frames`` (each ``{"name"}``) and ``profiles``. kbench writes one *sampled*
profile: a sample per folded stack, its frames as indices into ``shared.frames`` root
first (the process name is the root frame, as in the folded text and kbench's flame
graphs), its weight in ``weights`` at the same index. The unit is ``nanoseconds`` for
cpu-clock (a sample weighs its period in ns) and ``none`` otherwise (cycles);
``startValue`` is 0 and ``endValue`` the total weight.

``read_speedscope`` reads a speedscope file's sampled profiles back into folded stacks
(the stacks of several profiles added up, weights rounded to integers as folded stacks
have them); an evented profile is refused.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kbench import __version__
from kbench.profile.folded import FoldedProfile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes")


class SpeedscopeError(ValueError):
    """A file that is not a speedscope file kbench can read."""


def unit_of(event: str) -> str:
    return "nanoseconds" if event == "cpu-clock" else "none"


def to_speedscope(profile: FoldedProfile, name: str) -> bytes:
    """``profile`` as a speedscope file named ``name`` (module docstring)."""
    frames: dict[str, int] = {}
    samples: list[list[int]] = []
    weights: list[int] = []
    for stack, weight in sorted(profile.stacks.items()):
        samples.append([frames.setdefault(frame, len(frames)) for frame in stack.split(";")])
        weights.append(weight)
    document: dict[str, Any] = {
        "$schema": SCHEMA,
        "shared": {"frames": [{"name": frame} for frame in frames]},
        "profiles": [{
            "type": "sampled", "name": name, "unit": unit_of(profile.event), "startValue": 0,
            "endValue": sum(weights), "samples": samples, "weights": weights,
        }],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"kbench {__version__}",
    }
    return json.dumps(document, separators=(",", ":")).encode()


def read_speedscope(data: bytes) -> dict[str, int]:
    """The folded stacks of a speedscope file's sampled profiles (module docstring)."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpeedscopeError(f"not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("$schema") != SCHEMA:
        raise SpeedscopeError(f"not a speedscope file: $schema is not {SCHEMA}")
    try:
        names = [str(frame["name"]) for frame in document["shared"]["frames"]]
        stacks: Counter[str] = Counter()
        for profile in document["profiles"]:
            if profile.get("type") != "sampled":
                raise SpeedscopeError(f"profile {profile.get('name')!r} is {profile.get('type')!r}; "
                                      "only sampled profiles become folded stacks")
            if len(profile["samples"]) != len(profile["weights"]):
                raise SpeedscopeError(f"profile {profile.get('name')!r}: {len(profile['samples'])} samples "
                                      f"but {len(profile['weights'])} weights")
            for sample, weight in zip(profile["samples"], profile["weights"], strict=True):
                stacks[";".join(names[index] for index in sample)] += round(weight)
    except (KeyError, TypeError, IndexError) as exc:
        raise SpeedscopeError(f"not a speedscope file: {exc!r}") from None
    return dict(stacks)
