"""YAML text to a node tree with line numbers, rejecting what PyYAML would silently accept.

PyYAML's composer keeps every node's position; its constructor would drop them and let
a repeated key silently overwrite the first one. So job files are composed, not loaded,
and mappings are read through ``mapping_items``, which reports repeated keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from kbench.jobs.problems import ProblemCollector

_KIND_NAMES = {"ScalarNode": "a single value", "SequenceNode": "a list", "MappingNode": "a mapping"}


@dataclass(frozen=True)
class Scalar:
    """A scalar as written: its source text, its YAML type (``str``, ``int``, ``float``,
    ``bool``, ``null``, ``timestamp``...) and its 1-based line."""

    text: str
    type: str
    line: int

    @property
    def shown(self) -> str:
        """The value for a message: quoted if it is a string, as written otherwise."""
        return repr(self.text) if self.type == "str" else self.text


def line_of(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def kind_name(node: yaml.Node) -> str:
    """``a single value``, ``a list`` or ``a mapping``."""
    return _KIND_NAMES.get(type(node).__name__, "a YAML node")


def scalar(node: yaml.ScalarNode) -> Scalar:
    return Scalar(text=str(node.value), type=str(node.tag).rsplit(":", 1)[-1], line=line_of(node))


def compose_mapping(text: str, problems: ProblemCollector) -> yaml.MappingNode | None:
    """The document's top-level mapping; None (with a problem recorded) if the text is
    not valid YAML, holds more than one document, is empty, or is not a mapping."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = f"syntax error: {exc.problem}"
        if exc.context:
            context_line = f" at line {exc.context_mark.line + 1}" if exc.context_mark else ""
            message += f" ({exc.context}{context_line})"
        problems.add(mark.line + 1 if mark else 1, "yaml", message)
        return None
    except yaml.YAMLError as exc:
        problems.add(1, "yaml", f"syntax error: {exc}")
        return None
    if root is None:
        problems.add(1, "job", "the file is empty; a job is a mapping such as `benchmark: syscall.getppid`")
        return None
    if not isinstance(root, yaml.MappingNode):
        problems.add(
            line_of(root), "job",
            f"a job file must be a mapping of keys to values (such as `benchmark: syscall.getppid`), "
            f"not {kind_name(root)}",
        )
        return None
    return root


def mapping_items(
    node: yaml.MappingNode, prefix: str, problems: ProblemCollector
) -> list[tuple[str, yaml.Node, int]]:
    """``(key, value node, key line)`` in file order. A repeated key is reported at its
    second occurrence and dropped; a key that is a list or mapping is reported and dropped.
    ``prefix`` (``"params."``) is prepended to keys in messages."""
    items: list[tuple[str, yaml.Node, int]] = []
    first_line: dict[str, int] = {}
    for key_node, value_node in node.value:
        line = line_of(key_node)
        if not isinstance(key_node, yaml.ScalarNode):
            problems.add(line, prefix.rstrip(".") or "job", f"a key must be a plain name, not {kind_name(key_node)}")
            continue
        key = str(key_node.value)
        if key in first_line:
            problems.add(line, prefix + key, f"given twice (first at line {first_line[key]}); give it once")
            continue
        first_line[key] = line
        items.append((key, value_node, line))
    return items
