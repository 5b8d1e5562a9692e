"""The check after ``make olddefconfig``: every option asked for (kbench's fragment and the
user's, the later winning) must be in the final ``.config`` as asked. Each that is not is
listed with why, from the tree's Kconfig (a dependency not met, an option that has no
prompt, one that something else selects, or no such option)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kbench.kernels.kconfig import Fragment, Value, parse_config, render_value, same_value
from kbench.kernels.kconfig_deps import KconfigIndex, explain_lost


@dataclass(frozen=True)
class LostOption:
    option: str
    asked: Value
    got: Value
    fragment: str
    why: str

    def __str__(self) -> str:
        got = "not set" if self.got is None else self.got
        return f"{render_value(self.option, self.asked)} (from {self.fragment}) is {got}: {self.why}"


def asked_values(fragments: Sequence[Fragment]) -> dict[str, tuple[Value, str]]:
    """Each option the fragments set, with its value and the fragment it comes from (the last one)."""
    asked: dict[str, tuple[Value, str]] = {}
    for fragment in fragments:
        for option, value in parse_config(fragment.text).items():
            asked[option] = (value, fragment.name)
    return asked


def lost_options(
    fragments: Sequence[Fragment], final: Mapping[str, Value], kconfig: Callable[[], KconfigIndex]
) -> list[LostOption]:
    """The options of ``fragments`` that ``final`` does not have as asked; ``kconfig`` reads the
    tree's Kconfig (only when something was lost)."""
    lost = [(option, value, name) for option, (value, name) in asked_values(fragments).items()
            if not same_value(value, final.get(option))]
    if not lost:
        return []
    index = kconfig()
    return [LostOption(option, value, final.get(option), name, explain_lost(index, option, value, final))
            for option, value, name in lost]
