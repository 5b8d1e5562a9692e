"""The consoles every command prints through: outside text comes out literally.

kbench prints text it did not write (commands and names from imported files, labels,
job values, tool output, kernel logs, paths). A ``SafeConsole`` therefore

- reads no markup and no emoji codes in plain strings: ``[bold red]X[/]`` or
  ``[link=…]`` in a command line is printed as it is. Styled output is built as
  ``rich.text.Text`` with styles (``Text.assemble``), never by pasting text into markup;
- writes every control character of the text it renders as an escape (``\\x1b``, ``\\r``,
  ``\\u202e``: ``kbench.contract.text.printable``), whatever the renderable (a string, a
  ``Text``, a table cell, a progress bar's label). Only the escape sequences rich makes
  itself for styles and cursor control reach the terminal: those are not in the text.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO, cast

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from kbench.contract.text import has_control, printable

if TYPE_CHECKING:
    from rich.progress import TextColumn

PIPE_WIDTH = 200
"""Output that goes to a file or a pipe is not wrapped at 80 columns."""


class SafeConsole(Console):
    """A rich console that prints outside text literally (see the module's docstring)."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("markup", False)
        options.setdefault("emoji", False)
        super().__init__(**options)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text and has_control(segment.text, lines=True):
                yield Segment(printable(segment.text, lines=True), segment.style)
            else:
                yield segment


def label_column() -> TextColumn:
    """A progress bar's label (the task's description, in bold), printed literally."""
    from rich.progress import TextColumn

    return TextColumn("{task.description}", style="bold", markup=False)


err_console = SafeConsole(stderr=True, soft_wrap=True)


def out_console() -> SafeConsole:
    """A console for stdout: the terminal's width, or PIPE_WIDTH when redirected (then
    without the spaces rich pads table cells with at the end of a line)."""
    console = SafeConsole(soft_wrap=True)
    if not console.is_terminal:
        console = SafeConsole(soft_wrap=True, width=PIPE_WIDTH, file=cast(TextIO, TrimmedLines(sys.stdout)))
    return console


def write_stdout(text: str, *, data: bool = False) -> None:
    """Write ``text`` (a rendered report, holding outside text) to stdout. Text for people
    (``data`` False) always has its control characters escaped, new lines kept; a data
    format (CSV, JSON, Markdown, HTML, another tool's format) is written unchanged, as its
    readers expect, except to a terminal."""
    if not data or sys.stdout.isatty():
        text = printable(text, lines=True)
    sys.stdout.write(text)
    sys.stdout.flush()


def write_stdout_bytes(data: bytes) -> None:
    """A data format's bytes to stdout: unchanged, except to a terminal (escaped there)."""
    if sys.stdout.isatty():
        write_stdout(data.decode("utf-8", errors="replace"))
        return
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def echo_literal(text: object, *, err: bool = False) -> None:
    """``click.echo`` of a line holding outside text (a path, a name): control characters escaped."""
    import click

    click.echo(printable(text, lines=True), err=err)


class TrimmedLines(io.TextIOBase):
    """A text stream writing each complete line to ``out`` without its trailing spaces."""

    def __init__(self, out: TextIO):
        self._out = out
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._out.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        """Write a line not yet ended as it is (more of it may follow)."""
        if self._pending:
            self._out.write(self._pending)
            self._pending = ""
        self._out.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._out, "encoding", None) or "utf-8"
