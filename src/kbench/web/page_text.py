"""The dashboard's templates, which print outside text (labels, commands, commit subjects,
tool output) with its control characters written as escapes (``\\x1b``, ``\\u202e``), as the
terminal does (``kbench.contract.text.printable``): HTML escaping alone leaves an ESC or a
right-to-left override in the page, and a U+202E reorders the text a reader sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from kbench.contract.text import printable


def shown(value: Any) -> Any:
    """What a template prints of ``value``: text with its control characters escaped (tabs and
    newlines kept). Markup too: kbench's own markup holds no control character, and an
    escape written in their place is plain text, so a fragment built elsewhere (the
    regression report's) is cleaned as well."""
    if isinstance(value, Markup):
        return Markup(printable(str(value), lines=True))
    if isinstance(value, str):
        return printable(value, lines=True)
    return value


def dashboard_templates(directory: Path) -> Jinja2Templates:
    """The templates of ``directory``, autoescaped, printing every value through ``shown``."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), autoescape=True, finalize=shown)
    return Jinja2Templates(env=env)
