"""The HTML reports' templates: Jinja2, autoescaped, one base layout (``templates/base.html``).

Every self-contained HTML page kbench writes (a comparison, a bisection, the regressions, a
run over time) is a template under ``report/templates`` extending ``base.html``: the
document, its inline style sheet and ``<main>``. Python builds each page's values (numbers
formatted, plots drawn as SVG); the templates hold the markup. Text is escaped by the
templates; SVG drawn by kbench and the style sheets are passed as ``Markup``. Escaping is
the standard library's ``html.escape`` (``&quot;``, ``&#x27;``), as kbench's pages always
wrote it. Jinja2 is imported when a page is rendered, not by the commands that write no HTML.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=_escaped,
    )


def _escaped(value: Any) -> Any:
    """Every value a template prints, escaped by ``html.escape`` (Markup is left as it is; the
    autoescaping then has nothing left to do)."""
    import html

    from markupsafe import Markup

    return value if isinstance(value, Markup) else Markup(html.escape(str(value)))


def render(template: str, **values: Any) -> str:
    """The page (or fragment) ``template`` with ``values``."""
    return environment().get_template(template).render(**values)


def trusted(html: str | None) -> Markup | None:
    """HTML kbench made itself (an SVG plot, a style sheet), to be inserted as it is."""
    from markupsafe import Markup

    return None if html is None else Markup(html)


def style_sheet(*names: str) -> Markup:
    """The style sheets ``templates/NAME``, one after the other, for a page's ``<style>``."""
    from markupsafe import Markup

    return Markup("".join((TEMPLATES / name).read_text() for name in names))
