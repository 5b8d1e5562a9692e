"""kbench.ko's built-in benchmarks as its own sources declare them.

``kmod/benches/list.h`` names them, one ``KBENCH_BUILTIN(name);`` line each; the file
``kmod/benches/<name>.c`` defines ``struct kbench kbench_<name>`` with designated
initializers. Its ``.name``, ``.description`` and the ``struct kbench_param`` array its
``.params`` points to (name, description, type, default ``.value``, ``.min``, ``.max``)
are read from there, so adding a benchmark touches only those two files. The values
must be literals: strings, integer expressions (``1 << 16``), ``htonl(0x0a000000)`` for
an IPv4 address and ``{ 0x20, 0x01, ... }`` bytes for an IPv6 one. A VM test compares
what is read here with what the loaded module reports in sysfs.
"""

from __future__ import annotations

import ast
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

LIST_FILE = "benches/list.h"
API_HEADER = "include/kbench.h"
_DEFINE = re.compile(r"^#define\s+([A-Z][A-Z0-9_]*)[ \t]+(\S[^\n]*?)\s*$", re.MULTILINE)
_LIST_LINE = re.compile(r"^KBENCH_BUILTIN\(([a-z0-9_]+)\);$", re.MULTILINE)
_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*)'
    r"|(?P<op><<|>>|[{}\[\]().,=;|&+\-*/~])|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}
_PARAM_TYPES = {"KBENCH_PARAM_U64": "u64", "KBENCH_PARAM_IPV4_PREFIX": "ipv4", "KBENCH_PARAM_IPV6_PREFIX": "ipv6"}
_BYTE_ORDER_CALLS = frozenset({"htonl", "ntohl", "cpu_to_be32", "be32_to_cpu"})


class KmodSourceError(ValueError):
    """A bench file does not declare its benchmark in the form read here; says which and where."""


@dataclass(frozen=True)
class KmodParam:
    """A parameter as kbench.ko shows it: ``type`` is u64, ipv4 or ipv6 (a prefix)."""

    name: str
    description: str
    type: str
    default: str  # as sysfs prints it: decimal, "10.0.0.0/8", "2001:db8::/32"
    min: int | None = None
    max: int | None = None


@dataclass(frozen=True)
class KmodBench:
    name: str
    description: str
    params: tuple[KmodParam, ...]


Tokens = list[str]


@dataclass
class InitList:
    """A brace initializer: (designator path, value) for each element, in order."""

    items: list[tuple[tuple[str, ...], Initializer]]

    def get(self, *path: str) -> Initializer | None:
        for designators, value in self.items:
            if designators == path:
                return value
        return None


Initializer = Tokens | InitList


def builtin_benches(kmod_dir: Path) -> tuple[KmodBench, ...]:
    """Every benchmark of ``benches/list.h``, in its order (the order of registration)."""
    listing = kmod_dir / LIST_FILE
    try:
        names = _LIST_LINE.findall(_COMMENT.sub("", listing.read_text()))
    except OSError as exc:
        raise KmodSourceError(f"cannot read {listing}: {exc.strerror}") from exc
    if not names:
        raise KmodSourceError(f"{listing} names no benchmark (lines KBENCH_BUILTIN(name);)")
    constants = defines(kmod_dir / API_HEADER)
    return tuple(read_bench(kmod_dir / "benches" / f"{name}.c", name, constants) for name in names)


def defines(path: Path) -> dict[str, Tokens]:
    """The object-like macros of ``path`` (``#define NAME value``), as tokens."""
    try:
        text = _COMMENT.sub(" ", path.read_text())
    except OSError:
        return {}
    return {name: tokenize(value) for name, value in _DEFINE.findall(text)}


def read_bench(path: Path, name: str, constants: Mapping[str, Tokens] | None = None) -> KmodBench:
    """The benchmark ``kbench_<name>`` that ``path`` defines.

    Integer fields may use the macros in ``constants`` (those of kbench.h) and the
    file's own ``#define``s.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise KmodSourceError(f"{path}: cannot read it ({exc.strerror}); {LIST_FILE} names {name}") from exc
    macros = {**(constants or {}), **defines(path)}
    tokens = [token for word in tokenize(text) for token in _expand(word, macros)]
    where = str(path)
    bench = _definition(tokens, ["struct", "kbench", f"kbench_{name}"], where)
    declared = _string(bench.get("name"), f"{where}: kbench_{name}.name")
    if declared != name:
        raise KmodSourceError(f"{where}: kbench_{name}.name is {declared!r}, but {LIST_FILE} calls it {name!r}")
    description = _string(bench.get("description"), f"{where}: kbench_{name}.description")
    params: tuple[KmodParam, ...] = ()
    array = bench.get("params")
    if array is not None:
        if not (isinstance(array, list) and len(array) == 1):
            raise KmodSourceError(f"{where}: kbench_{name}.params must name a struct kbench_param array")
        table = _definition(tokens, ["struct", "kbench_param", array[0], "[", "]"], where)
        params = tuple(_param(value, f"{where}: {array[0]}") for _, value in table.items)
    return KmodBench(name=name, description=description, params=params)


def tokenize(text: str) -> Tokens:
    """C tokens without comments and whitespace; adjacent string literals stay separate."""
    found = []
    for match in _TOKEN.finditer(_COMMENT.sub(" ", text)):
        if match.lastgroup != "space":
            found.append(match.group())
    return found


def _expand(token: str, macros: Mapping[str, Tokens], depth: int = 0) -> Tokens:
    """A macro name replaced by its value in parentheses (macros in it expanded too)."""
    if token not in macros or depth > 8:
        return [token]
    inner = [t for word in macros[token] for t in _expand(word, macros, depth + 1)]
    return ["(", *inner, ")"]


def _definition(tokens: Tokens, declarator: Tokens, where: str) -> InitList:
    """The brace initializer after ``declarator =`` (``static``/``const`` before it are allowed)."""
    width = len(declarator)
    for start in range(len(tokens) - width):
        if tokens[start : start + width] == declarator and tokens[start + width] == "=":
            value, _ = _initializer(tokens, start + width + 1, where)
            if not isinstance(value, InitList):
                break
            return value
    raise KmodSourceError(f"{where}: no definition `{' '.join(declarator)} = {{ ... }};`")


def _initializer(tokens: Tokens, index: int, where: str) -> tuple[Initializer, int]:
    if tokens[index] != "{":
        end = index
        depth = 0
        while end < len(tokens) and not (depth == 0 and tokens[end] in (",", "}", ";")):
            depth += tokens[end] in "([{"
            depth -= tokens[end] in ")]}"
            end += 1
        return tokens[index:end], end
    items: list[tuple[tuple[str, ...], Initializer]] = []
    index += 1
    while tokens[index] != "}":
        designators: list[str] = []
        while tokens[index] in (".", "["):
            if tokens[index] == ".":
                designators.append(tokens[index + 1])
                index += 2
            else:
                close = tokens.index("]", index)
                designators.append("[" + " ".join(tokens[index + 1 : close]) + "]")
                index = close + 1
        if designators:
            if tokens[index] != "=":
                raise KmodSourceError(f"{where}: expected `=` after .{'.'.join(designators)}")
            index += 1
        value, index = _initializer(tokens, index, where)
        items.append((tuple(designators), value))
        if tokens[index] == ",":
            index += 1
        elif tokens[index] != "}":
            raise KmodSourceError(f"{where}: unexpected {tokens[index]!r} in an initializer")
    return InitList(items), index + 1


def _string(value: Initializer | None, what: str) -> str:
    if not isinstance(value, list) or not value or not all(t.startswith('"') for t in value):
        raise KmodSourceError(f"{what} must be a string literal")
    return "".join(re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), t[1:-1]) for t in value)


def integer(value: Initializer | None, what: str) -> int:
    """The value of a C integer expression of literals (``1 << 20``, ``0x0a000000``, ``htonl(...)``)."""
    if not isinstance(value, list) or not value:
        raise KmodSourceError(f"{what} must be an integer expression of literals")
    text = " ".join(re.sub(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]+$", r"\1", t) for t in value)
    text = re.sub(r"\b0+(\d)", r"\1", text)  # C's leading zeros (octal is not used here)
    try:
        return _evaluate(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError) as exc:
        raise KmodSourceError(f"{what} = {' '.join(value)}: not an integer expression of literals") from exc


def _evaluate(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Invert):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else ~operand
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        operations = {ast.LShift: left << right, ast.RShift: left >> right, ast.BitOr: left | right,
                      ast.BitAnd: left & right, ast.Add: left + right, ast.Sub: left - right,
                      ast.Mult: left * right}
        for operator, result in operations.items():
            if isinstance(node.op, operator):
                return result
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BYTE_ORDER_CALLS
            and len(node.args) == 1):
        return _evaluate(node.args[0])  # the address in host order, as written
    raise ValueError(ast.dump(node))


def _param(value: Initializer, where: str) -> KmodParam:
    if not isinstance(value, InitList):
        raise KmodSourceError(f"{where}: every parameter must be a brace initializer")
    name = _string(value.get("name"), f"{where}: a parameter's .name")
    what = f"{where}: parameter {name}"
    description = _string(value.get("description"), f"{what}: .description")
    kind = value.get("type")
    if not isinstance(kind, list) or len(kind) != 1 or kind[0] not in _PARAM_TYPES:
        raise KmodSourceError(f"{what}: .type must be one of {', '.join(_PARAM_TYPES)}")
    param_type = _PARAM_TYPES[kind[0]]
    if param_type == "u64":
        default = str(integer(value.get("value", "u64"), f"{what}: .value.u64"))
        return KmodParam(name, description, param_type, default,
                         integer(value.get("min"), f"{what}: .min"), integer(value.get("max"), f"{what}: .max"))
    prefix = value.get("value", param_type)
    if not isinstance(prefix, InitList):
        raise KmodSourceError(f"{what}: .value.{param_type} must be a brace initializer")
    length = integer(prefix.get("plen"), f"{what}: .value.{param_type}.plen")
    if param_type == "ipv4":
        address = str(ipaddress.IPv4Address(integer(prefix.get("addr"), f"{what}: .value.ipv4.addr")))
    else:
        raw = prefix.get("addr", "s6_addr")
        if not isinstance(raw, InitList):
            raise KmodSourceError(f"{what}: .value.ipv6.addr.s6_addr must be a list of bytes")
        octets = [integer(byte, f"{what}: an address byte") for _, byte in raw.items]
        address = str(ipaddress.IPv6Address(bytes(octets + [0] * (16 - len(octets)))))
    return KmodParam(name, description, param_type, f"{address}/{length}")
