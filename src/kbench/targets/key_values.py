"""The ``key=value`` words kbench.ko's sysfs files are written in."""

from __future__ import annotations


def parse_key_values(line: str) -> dict[str, str]:
    """``min=1 max=9 cpus=0-1`` → {"min": "1", "max": "9", "cpus": "0-1"}."""
    pairs = {}
    for word in line.split():
        key, sep, value = word.partition("=")
        if sep:
            pairs[key] = value
    return pairs
