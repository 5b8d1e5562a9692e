"""Why an option did not end up as asked: its dependencies and selectors, read from the
tree's Kconfig files and judged against the final ``.config``.

The reader follows ``source`` statements from the top ``Kconfig`` (x86), keeping the
conditions of the enclosing ``if``, ``menu`` and ``choice`` blocks, and records for
every symbol where it is defined, what it depends on (including a prompt's ``if``) and
which symbols select it. Expressions are evaluated as Kconfig does, over n/m/y = 0/1/2.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kbench.kernels.kconfig import Value

SRCARCH = "x86"
_TOKEN = re.compile(r'\s*(?:(&&|\|\||!=|<=|>=|[!()=<>])|("(?:[^"\\]|\\.)*"|\'[^\']*\')|([A-Za-z0-9_.$-]+))')
_PROMPT_TYPES = ("bool", "tristate", "string", "int", "hex", "prompt")
_ENTRY_STARTS = ("config", "menuconfig", "choice", "endchoice", "comment", "menu", "endmenu", "if", "endif",
                 "source", "osource", "rsource", "orsource", "mainmenu")


@dataclass
class Definition:
    """One ``config SYMBOL`` entry: where, and the conditions it needs (its blocks' and its own)."""

    where: str
    depends: list[str] = field(default_factory=list)
    prompt: bool = False


@dataclass
class KconfigIndex:
    definitions: dict[str, list[Definition]] = field(default_factory=dict)
    selectors: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)


def read_kconfig(source: Path) -> KconfigIndex:
    """Every symbol of the tree at ``source`` reachable from its top Kconfig."""
    index = KconfigIndex()
    _read(source, source / "Kconfig", [], index, set())
    return index


def _logical_lines(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, indentation, text) of each line, continuations joined, help text skipped."""
    try:
        raw = path.read_text(errors="replace").splitlines()
    except OSError:
        return
    number, in_help, help_indent = 0, False, -1
    while number < len(raw):
        start = number
        line = raw[number]
        number += 1
        while line.endswith("\\") and number < len(raw):
            line = line[:-1] + " " + raw[number]
            number += 1
        stripped = line.strip()
        indent = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())
        if in_help:
            if not stripped:
                continue
            if help_indent < 0:
                help_indent = indent
            if indent >= help_indent and help_indent > 0:
                continue
            in_help = False
        if not stripped or stripped.startswith("#"):
            continue
        if stripped in ("help", "---help---"):
            in_help, help_indent = True, -1
            continue
        yield start + 1, line[: len(line) - len(line.lstrip())], stripped


def _read(top: Path, path: Path, blocks: list[list[str]], index: KconfigIndex, seen: set[Path]) -> None:
    if path in seen:
        return
    seen.add(path)
    stack: list[list[str]] = [list(b) for b in blocks]
    current: Definition | None = None
    current_symbol: str | None = None
    collecting: list[str] | None = None  # a menu's or choice's own conditions, being read
    for number, _indent, text in _logical_lines(path):
        word, _, rest = text.partition(" ")
        rest = rest.strip()
        if word in _ENTRY_STARTS:
            current, current_symbol, collecting = None, None, None
        if word in ("config", "menuconfig"):
            current_symbol = rest.split()[0] if rest else None
            if current_symbol:
                current = Definition(f"{path.relative_to(top)}:{number}", [c for b in stack for c in b])
                index.definitions.setdefault(current_symbol, []).append(current)
        elif word in ("menu", "choice"):
            collecting = []
            stack.append(collecting)
        elif word in ("endmenu", "endchoice", "endif"):
            if stack:
                stack.pop()
        elif word == "if":
            stack.append([rest])
        elif word in ("source", "osource", "rsource", "orsource"):
            name = rest.strip('"').replace("$(SRCARCH)", SRCARCH)
            base = path.parent if word.startswith(("r", "or")) else top
            for found in sorted(glob.glob(str(base / name))):
                _read(top, Path(found), stack, index, seen)
        elif word == "depends" and rest.startswith("on "):
            condition = rest[3:].strip()
            if current is not None:
                current.depends.append(condition)
            elif collecting is not None:
                collecting.append(condition)
        elif word == "visible" and rest.startswith("if ") and collecting is not None:
            collecting.append(rest[3:].strip())
        elif current is not None and current_symbol is not None:
            _attribute(word, rest, current, current_symbol, index)


def _attribute(word: str, rest: str, current: Definition, symbol: str, index: KconfigIndex) -> None:
    if word in _PROMPT_TYPES and rest.startswith(('"', "'")):
        current.prompt = True
        condition = _after_if(rest)
        if condition:
            current.depends.append(condition)
    elif word == "select" and rest:
        target = rest.split()[0]
        index.selectors.setdefault(target, []).append((symbol, _after_if(rest)))


def _after_if(text: str) -> str | None:
    """The condition of ``"prompt" if EXPR`` or ``SYMBOL if EXPR``."""
    match = re.search(r'(?:^|["\'\s])if\s+(.*)$', text)
    return match.group(1).strip() if match else None


def tristate(value: Value) -> int:
    return {"y": 2, "m": 1}.get(value or "n", 0)


class _Parser:
    """A Kconfig expression over ``values`` (a ``.config``'s, ``CONFIG_`` prefixes included)."""

    def __init__(self, text: str, values: Mapping[str, Value]) -> None:
        self.tokens = [m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text)]
        self.position = 0
        self.values = values

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.position += 1
        return token

    def expression(self) -> int:
        value = self.conjunction()
        while self.peek() == "||":
            self.take()
            value = max(value, self.conjunction())
        return value

    def conjunction(self) -> int:
        value = self.unary()
        while self.peek() == "&&":
            self.take()
            value = min(value, self.unary())
        return value

    def unary(self) -> int:
        token = self.peek()
        if token == "!":
            self.take()
            return 2 - self.unary()
        if token == "(":
            self.take()
            value = self.expression()
            if self.peek() == ")":
                self.take()
            return value
        left = self.take() or "n"
        if self.peek() in ("=", "!=", "<", ">", "<=", ">="):
            operator = self.take()
            right = self.take() or "n"
            return 2 if _compare(self.text_of(left), operator or "=", self.text_of(right)) else 0
        return self.symbol_value(left)

    def text_of(self, token: str) -> str:
        if token[:1] in "\"'":
            return token[1:-1]
        if token in ("y", "m", "n") or _is_number(token):
            return token
        value = self.values.get(f"CONFIG_{token}")
        if value is None:
            return "n"
        return value[1:-1] if value.startswith('"') else value

    def symbol_value(self, token: str) -> int:
        if token in ("y", "m", "n"):
            return tristate(token)
        return tristate(self.values.get(f"CONFIG_{token}"))


def _is_number(token: str) -> bool:
    try:
        int(token, 0)
    except ValueError:
        return False
    return True


def _compare(left: str, operator: str, right: str) -> bool:
    if operator in ("=", "!="):
        return (left == right) == (operator == "=")
    try:
        a, b = int(left, 0), int(right, 0)
    except ValueError:
        a, b = left, right  # type: ignore[assignment]
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[operator]


def evaluate(expression: str, values: Mapping[str, Value]) -> int:
    """``expression``'s tristate value (0, 1, 2) under ``values``."""
    return _Parser(expression, values).expression()


def symbols_of(expression: str) -> list[str]:
    found = []
    for match in _TOKEN.finditer(expression):
        word = match.group(3)
        if word and word not in ("y", "m", "n") and not word[0].isdigit() and word not in found:
            found.append(word)
    return found


def explain_lost(index: KconfigIndex, option: str, asked: Value, values: Mapping[str, Value]) -> str:
    """Why ``option`` is not ``asked`` in ``values`` (a final .config), as far as Kconfig says."""
    symbol = option.removeprefix("CONFIG_")
    definitions = index.definitions.get(symbol)
    if not definitions:
        return "no such option in this tree"
    if asked is not None and asked != "n":
        chain = _unmet_chain(index, symbol, values, depth=3)
        if chain:
            return "; ".join(chain)
        if not any(definition.prompt for definition in definitions):
            selectors = [name for name, _ in index.selectors.get(symbol, [])]
            chosen_by = f": selected by {', '.join(selectors[:6])}" if selectors else ""
            return f"it has no prompt: only other options enable it{chosen_by}"
        return f"make olddefconfig set it otherwise (defined at {definitions[0].where})"
    on = [name for name, condition in index.selectors.get(symbol, [])
          if tristate(values.get(f"CONFIG_{name}")) and (condition is None or evaluate(condition, values))]
    if on:
        return f"selected by {', '.join(f'CONFIG_{name}' for name in on[:6])}"
    return f"make olddefconfig set it (defined at {definitions[0].where})"


def _unmet(index: KconfigIndex, symbol: str, values: Mapping[str, Value]) -> list[str]:
    """The conditions of ``symbol``'s first definition that has any, that ``values`` do not meet."""
    for definition in index.definitions.get(symbol, []):
        unmet = [part for condition in definition.depends for part in conjuncts(condition)
                 if evaluate(part, values) == 0]
        if unmet:
            return unmet
    return []


def _unmet_chain(index: KconfigIndex, symbol: str, values: Mapping[str, Value], depth: int) -> list[str]:
    """``depends on A (not set: CONFIG_A)``, then why A is not set when that is a dependency too
    (``CONFIG_A depends on B (...)``), down to ``depth`` steps: the root of a chain of blocks."""
    unmet = _unmet(index, symbol, values)
    if not unmet:
        return []
    found = [f"depends on {' && '.join(_bracketed(c) for c in unmet)} ({_unset(unmet, values)})"]
    named = {symbol, *(name for part in unmet for name in symbols_of(part))}
    while depth > 1:
        unset = [name for part in unmet for name in symbols_of(part) if tristate(values.get(f"CONFIG_{name}")) == 0]
        deeper = next(((name, below) for name in unset
                       if (below := _unmet(index, name, values))
                       and any(other not in named for part in below for other in symbols_of(part))), None)
        if deeper is None:
            break
        name, unmet = deeper
        named.update(other for part in unmet for other in symbols_of(part))
        found.append(f"CONFIG_{name} depends on {' && '.join(_bracketed(c) for c in unmet)} "
                     f"({_unset(unmet, values)})")
        depth -= 1
    return found


def conjuncts(condition: str) -> list[str]:
    """``A && (B || C) && !D`` -> ``["A", "(B || C)", "!D"]`` (its top-level ``&&`` operands)."""
    parts, depth, start = [], 0, 0
    for i, character in enumerate(condition):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0 and condition.startswith("&&", i):
            parts.append(condition[start:i].strip())
            start = i + 2
    parts.append(condition[start:].strip())
    return [_unwrapped(part) for part in parts if part]


def _unwrapped(part: str) -> str:
    """``(A && B)`` -> ``A && B`` when the brackets hold the whole part."""
    while part.startswith("(") and part.endswith(")"):
        depth = 0
        for i, character in enumerate(part):
            depth += {"(": 1, ")": -1}.get(character, 0)
            if depth == 0 and i < len(part) - 1:
                return part
        part = part[1:-1].strip()
    return part


def _bracketed(condition: str) -> str:
    return f"({condition})" if "||" in condition else condition


def _unset(conditions: list[str], values: Mapping[str, Value]) -> str:
    names = []
    for condition in conditions:
        for symbol in symbols_of(condition):
            value = values.get(f"CONFIG_{symbol}")
            if tristate(value) == 0 and f"CONFIG_{symbol}" not in names:
                names.append(f"CONFIG_{symbol}")
    return f"not set: {', '.join(names)}" if names else "not met"
