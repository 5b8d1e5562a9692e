"""Independent checks of kbench's profile exports: speedscope's published file-format schema,
written out here as checks, and ``go tool pprof -raw`` read back into folded stacks.

The speedscope checks follow https://www.speedscope.app/file-format-schema.json (draft 06,
generated from speedscope's src/lib/file-format-spec.ts): a File requires ``$schema`` (that
URL), ``shared`` (with ``frames``, each requiring a string ``name``; ``file`` a string,
``line`` and ``col`` numbers) and ``profiles``; ``name`` and ``exporter`` are strings and
``activeProfileIndex`` a number. A sampled profile requires ``type`` "sampled", ``name``,
``unit`` (one of the ValueUnit strings), ``startValue``, ``endValue``, ``samples`` (arrays
of numbers) and ``weights`` (numbers); an evented one ``events`` of open/close events. On
top of the schema, what the spec's comments ask and speedscope's importer relies on: frame
indices inside ``shared.frames``, as many weights as samples, ``endValue >= startValue``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
VALUE_UNITS = {"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def speedscope_problems(document: Any) -> list[str]:
    """Every way ``document`` breaks speedscope's file format (module docstring); [] when valid."""
    problems: list[str] = []
    if not isinstance(document, dict):
        return ["the file is not a JSON object"]
    for key in ("$schema", "shared", "profiles"):
        if key not in document:
            problems.append(f"missing required {key}")
    if "$schema" in document and document["$schema"] != SCHEMA_URL:
        problems.append(f"$schema is {document['$schema']!r}")
    for key in ("name", "exporter"):
        if key in document and not isinstance(document[key], str):
            problems.append(f"{key} is not a string")
    if "activeProfileIndex" in document and not _number(document["activeProfileIndex"]):
        problems.append("activeProfileIndex is not a number")
    frames = (document.get("shared") or {}).get("frames") if isinstance(document.get("shared"), dict) else None
    if not isinstance(frames, list):
        problems.append("shared.frames is not an array")
        frames = []
    for index, frame in enumerate(frames):
        if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
            problems.append(f"frame {index} has no string name")
            continue
        if "file" in frame and not isinstance(frame["file"], str):
            problems.append(f"frame {index}: file is not a string")
        for key in ("line", "col"):
            if key in frame and not _number(frame[key]):
                problems.append(f"frame {index}: {key} is not a number")
    profiles = document.get("profiles")
    if not isinstance(profiles, list):
        return [*problems, "profiles is not an array"]
    for index, profile in enumerate(profiles):
        problems += [f"profile {index}: {p}" for p in _profile_problems(profile, len(frames))]
    return problems


def _profile_problems(profile: Any, frame_count: int) -> list[str]:
    if not isinstance(profile, dict):
        return ["not an object"]
    kind = profile.get("type")
    required = ["type", "name", "unit", "startValue", "endValue"]
    required += ["samples", "weights"] if kind == "sampled" else ["events"]
    problems = [f"missing required {key}" for key in required if key not in profile]
    if kind not in ("sampled", "evented"):
        problems.append(f"type {kind!r} is neither sampled nor evented")
    if "name" in profile and not isinstance(profile["name"], str):
        problems.append("name is not a string")
    if "unit" in profile and profile["unit"] not in VALUE_UNITS:
        problems.append(f"unit {profile['unit']!r} is not a ValueUnit")
    for key in ("startValue", "endValue"):
        if key in profile and not _number(profile[key]):
            problems.append(f"{key} is not a number")
    if _number(profile.get("startValue")) and _number(profile.get("endValue")) \
            and profile["endValue"] < profile["startValue"]:
        problems.append("endValue is below startValue")
    if kind != "sampled":
        return problems
    samples, weights = profile.get("samples"), profile.get("weights")
    if not isinstance(samples, list) or not all(isinstance(s, list) and all(_number(i) for i in s) for s in samples):
        return [*problems, "samples is not an array of arrays of numbers"]
    if not isinstance(weights, list) or not all(_number(w) for w in weights):
        return [*problems, "weights is not an array of numbers"]
    if len(samples) != len(weights):
        problems.append(f"{len(samples)} samples but {len(weights)} weights")
    bad = [i for s in samples for i in s if not (isinstance(i, int) and 0 <= i < frame_count)]
    if bad:
        problems.append(f"frame indices outside shared.frames: {bad[:5]}")
    return problems


def go_tool() -> str | None:
    """The go command, when this machine has Go (its pprof comes with it)."""
    return shutil.which("go")


_RAW_SAMPLE = re.compile(r"^\s+(-?\d+):((?: \d+)*)\s*$")
_RAW_LABELS = re.compile(r"^\s+(\w+):\[(.*)\]$")
_RAW_LOCATION = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) :\d+:\d+ s=\d+$")


def pprof_raw_stacks(path: Path, go: str) -> tuple[dict[str, int], str]:
    """Folded stacks as ``go tool pprof -raw`` prints ``path``'s samples (the ``comm`` label as
    the root frame), and its whole output."""
    text = subprocess.run([go, "tool", "pprof", "-raw", str(path)], capture_output=True, text=True, check=True,
                          timeout=600).stdout
    samples: list[tuple[int, list[int], str | None]] = []
    names: dict[int, str] = {}
    section = ""
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:" and (match := _RAW_SAMPLE.match(line)):
            samples.append((int(match.group(1)), [int(i) for i in match.group(2).split()], None))
        elif section == "Samples:" and (match := _RAW_LABELS.match(line)) and samples and match.group(1) == "comm":
            value, ids, _ = samples[-1]
            samples[-1] = (value, ids, match.group(2))
        elif section == "Locations" and (match := _RAW_LOCATION.match(line)):
            names[int(match.group(1))] = match.group(2)
    stacks: Counter[str] = Counter()
    for value, ids, comm in samples:
        frames = [names[i] for i in reversed(ids)]
        stacks[";".join(([comm] if comm is not None else []) + frames)] += value
    return dict(stacks), text
