"""The difference between two kernel configs, in the style of the kernel's
``scripts/diffconfig``: options only in the first (``-OPT value``), options whose value
changed (`` OPT old -> new``), options only in the second (``+OPT value``), each group
sorted by name, names without ``CONFIG_`` and "is not set" written ``n``."""

from __future__ import annotations

from dataclasses import dataclass

from kbench.kernels.kconfig import parse_config


@dataclass(frozen=True)
class ConfigDiff:
    removed: tuple[tuple[str, str], ...]
    changed: tuple[tuple[str, str, str], ...]
    added: tuple[tuple[str, str], ...]

    @property
    def count(self) -> int:
        """How many options differ."""
        return len(self.removed) + len(self.changed) + len(self.added)

    def lines(self) -> list[str]:
        return [*(f"-{name} {value}" for name, value in self.removed),
                *(f" {name} {old} -> {new}" for name, old, new in self.changed),
                *(f"+{name} {value}" for name, value in self.added)]


def _short(text: str) -> dict[str, str]:
    return {option.removeprefix("CONFIG_"): "n" if value is None else value
            for option, value in parse_config(text).items()}


def diff_configs(old: str, new: str) -> ConfigDiff:
    a, b = _short(old), _short(new)
    return ConfigDiff(
        removed=tuple((name, a[name]) for name in sorted(a.keys() - b.keys())),
        changed=tuple((name, a[name], b[name]) for name in sorted(a.keys() & b.keys()) if a[name] != b[name]),
        added=tuple((name, b[name]) for name in sorted(b.keys() - a.keys())),
    )
