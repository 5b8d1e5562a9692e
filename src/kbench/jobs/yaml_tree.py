"""YAML text to a node tree with line numbers, rejecting what PyYAML would silently accept.

PyYAML's composer keeps every node's position; its constructor would drop them and let
a repeated key silently overwrite the first one. So job files are composed, not loaded,
and mappings are read through ``mapping_items``, which reports repeated keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from kbench.contract.text import cut, printable, shown
from kbench.jobs.problems import ProblemCollector

_KIND_NAMES = {"ScalarNode": "a single value", "SequenceNode": "a list", "MappingNode": "a mapping"}
MAX_DEPTH = 32
"""Deepest nesting of lists and mappings accepted (a job needs three levels)."""
MAX_NODES = 100_000
"""Most values a job may hold once its aliases are expanded (a "billion laughs" file
holds a few aliases that expand to billions)."""


class _DepthError(yaml.composer.ComposerError):  # type: ignore[misc]
    pass


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader whose composer refuses nesting deeper than MAX_DEPTH (PyYAML composes
    recursively: a thousand nested lists would otherwise end in a RecursionError)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _DepthError(None, None, f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size_exceeds(root: yaml.Node, limit: int) -> bool:
    """True if the tree, counting an aliased node once per use, has more than ``limit`` nodes."""
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        count += 1
        if count > limit:
            return True
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
    return False


@dataclass(frozen=True)
class Scalar:
    """A scalar as written: its source text, its YAML type (``str``, ``int``, ``float``,
    ``bool``, ``null``, ``timestamp``...) and its 1-based line."""

    text: str
    type: str
    line: int

    @property
    def shown(self) -> str:
        """The value for a message: quoted if it is a string, as written otherwise (control
        characters escaped, a very long value cut)."""
        return shown(self.text) if self.type == "str" else cut(printable(self.text))


def line_of(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def kind_name(node: yaml.Node) -> str:
    """``a single value``, ``a list`` or ``a mapping``."""
    return _KIND_NAMES.get(type(node).__name__, "a YAML node")


def scalar(node: yaml.ScalarNode) -> Scalar:
    return Scalar(text=str(node.value), type=str(node.tag).rsplit(":", 1)[-1], line=line_of(node))


def _unprintable(text: str, error: yaml.reader.ReaderError) -> tuple[int, str, str]:
    """(line, key, message) for a character YAML does not allow (a NUL byte, a terminal escape)."""
    position = int(error.position)
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    character = error.character if isinstance(error.character, str) else chr(int(error.character))
    return line, "yaml", (f"the file holds the control character U+{ord(character):04X} at column {column}; "
                          "a job file may hold printable text only (YAML)")


def compose_mapping(text: str, problems: ProblemCollector) -> yaml.MappingNode | None:
    """The document's top-level mapping; None (with a problem recorded) if the text is
    not valid YAML, holds more than one document, is empty, or is not a mapping."""
    try:
        loader = _BoundedLoader(text)
    except yaml.reader.ReaderError as exc:  # PyYAML checks every character before parsing
        problems.add(*_unprintable(text, exc))
        return None
    try:
        root = loader.get_single_node()
    except _DepthError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        problems.add(line, "yaml", f"the file is {exc.problem}; a job needs three")
        return None
    except RecursionError:  # a parser limit reached before the composer's
        problems.add(1, "yaml", f"the file is nested more than {MAX_DEPTH} levels deep; a job needs three")
        return None
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
    finally:
        loader.dispose()
    if root is not None and _expanded_size_exceeds(root, MAX_NODES):
        problems.add(1, "yaml", f"the file holds more than {MAX_NODES:,} values once its aliases (*name) are "
                                "expanded; write the values out")
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
