"""Flame graphs of folded stacks as one self-contained, interactive SVG.

Why a renderer of our own: no maintained Python library draws folded stacks to SVG
(Brendan Gregg's flamegraph.pl is Perl and inferno is Rust, neither packaged for Debian
nor PyPI as a library), and Plotly's icicle chart would put a 3 MB script into every
report and cannot write an SVG file without a headless browser. A flame graph is a
simple layout: this module is about 200 lines with no dependency, and its output is one
file that a browser, the HTML report and the dashboard show alike.

Layout (the flame graph convention): the root ("all") at the bottom, each frame above
its caller, its width its share of the sampled weight; siblings in alphabetical order
(so two graphs of the same program line up); frames narrower than ``MIN_WIDTH_PX`` are
merged away. Colours: user frames in warm hues, kernel frames (``_[k]``) in orange-brown,
the hue fixed by the name (the same function has the same colour in every graph). A
differential graph (``base`` given) colours each frame by how its self share changed
against the base: red grew, blue shrank, white unchanged (saturated at ``DIFF_FULL_PP``
percentage points).

Interaction (a small inline script, scoped to its own SVG so several can share a page):
hovering shows name, weight and shares (also as a ``<title>``, which works without the
script); clicking a frame zooms to it, clicking "all" or "Reset zoom" goes back;
"Search" highlights the frames whose name matches a regular expression and prints the
share they cover.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape

from kbench.profile.folded import KERNEL_SUFFIX, FoldedProfile, plain_symbol

WIDTH_PX = 1200
FRAME_PX = 16
MIN_WIDTH_PX = 0.1
FONT_PX = 12
CHAR_PX = 7.0  # an average glyph of 12 px Verdana/DejaVu Sans
TOP_PX = 54
BOTTOM_PX = 24
DIFF_FULL_PP = 5.0


@dataclass
class _Node:
    name: str
    value: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(stacks: Mapping[str, int]) -> _Node:
    root = _Node("all")
    for stack, weight in stacks.items():
        root.value += weight
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
            node.value += weight
    return root


def _colour(name: str, diff_pp: float | None) -> str:
    if diff_pp is not None:
        strength = min(abs(diff_pp) / DIFF_FULL_PP, 1.0)
        fade = int(255 - 200 * strength)
        return f"rgb(255,{fade},{fade})" if diff_pp > 0 else f"rgb({fade},{fade},255)" if diff_pp < 0 else "#f4f4f4"
    seed = zlib.crc32(plain_symbol(name).encode())
    if name.endswith(KERNEL_SUFFIX):
        return f"rgb({200 + seed % 40},{120 + seed % 50},{40 + seed % 30})"
    return f"rgb({205 + seed % 50},{(seed >> 8) % 180 + 20},{(seed >> 16) % 55})"


def _fit(name: str, width: float) -> str:
    chars = int((width - 6) / CHAR_PX)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


def flame_svg(profile: FoldedProfile, *, title: str = "Flame graph", subtitle: str = "",
              base: FoldedProfile | None = None, note: str = "") -> str:
    """The SVG document of ``profile`` (differential against ``base`` when given)."""
    root = _tree(profile.stacks)
    total = max(root.value, 1)
    base_self = base.self_shares() if base is not None else None
    new_self = profile.self_shares() if base is not None else None
    placed: list[tuple[_Node, float, float, int, float | None]] = []

    def walk(node: _Node, x: float, depth: int) -> None:
        width = WIDTH_PX * node.value / total
        if width < MIN_WIDTH_PX:
            return
        diff = None
        if base_self is not None and new_self is not None and depth > 0:
            diff = 100 * (new_self.get(node.name, 0.0) - base_self.get(node.name, 0.0))
        placed.append((node, x, width, depth, diff))
        child_x = x
        for name in sorted(node.children):
            child = node.children[name]
            walk(child, child_x, depth + 1)
            child_x += WIDTH_PX * child.value / total

    walk(root, 0.0, 0)
    rows = 1 + max((depth for _, _, _, depth, _ in placed), default=0)
    frames = "".join(_frame(node, x, width, depth, rows, total, diff) for node, x, width, depth, diff in placed)
    height = TOP_PX + rows * FRAME_PX + BOTTOM_PX
    label = escape(f"{title}{' - ' + subtitle if subtitle else ''}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flame-graph" width="{WIDTH_PX}" height="{height}" '
        f'viewBox="0 0 {WIDTH_PX} {height}" data-total="{total}" role="img" '
        f'aria-label="{label}" font-family="Verdana, DejaVu Sans, sans-serif" font-size="{FONT_PX}">'
        f'<rect width="100%" height="100%" fill="#fdfdf8"/>'
        f'<text x="{WIDTH_PX / 2}" y="18" text-anchor="middle" font-size="15">{escape(title)}</text>'
        f'<text x="{WIDTH_PX / 2}" y="35" text-anchor="middle" fill="#555">{escape(subtitle)}</text>'
        + (f'<text class="fg-note" x="8" y="35" fill="#a00">{escape(note)}</text>' if note else "")
        + f'<text class="fg-reset" x="8" y="18" fill="#33c" style="cursor:pointer" visibility="hidden">Reset zoom'
        f'</text><text class="fg-search" x="{WIDTH_PX - 8}" y="18" text-anchor="end" fill="#33c" '
        f'style="cursor:pointer">Search</text>'
        f'<text class="fg-matched" x="{WIDTH_PX - 8}" y="{height - 6}" text-anchor="end" fill="#555"></text>'
        f'<text class="fg-details" x="8" y="{height - 6}" fill="#333"> </text>'
        f'<g class="fg-frames" transform="translate(0,{TOP_PX})">{frames}</g>'
        f"<script><![CDATA[{_SCRIPT}]]></script></svg>\n"
    )


def _frame(node: _Node, x: float, width: float, depth: int, rows: int, total: int, diff: float | None) -> str:
    y = (rows - 1 - depth) * FRAME_PX
    share = 100 * node.value / total
    name = plain_symbol(node.name) + (" [k]" if node.name.endswith(KERNEL_SUFFIX) else "")
    info = f"{name} ({node.value:,} weight, {share:.2f}% with children"
    info += f", self share {diff:+.2f} pp against the base)" if diff is not None else ")"
    return (
        f'<g class="fg-frame" data-x="{x:.3f}" data-w="{width:.3f}" data-d="{depth}" data-name="{escape(name)}">'
        f"<title>{escape(info)}</title>"
        f'<rect x="{x:.2f}" y="{y}" width="{max(width - 0.5, 0.1):.2f}" height="{FRAME_PX - 1}" '
        f'rx="2" fill="{_colour(node.name, diff)}"/>'
        f'<text x="{x + 3:.2f}" y="{y + FRAME_PX - 4}">{escape(_fit(name, width))}</text></g>'
    )


_SCRIPT = r"""
(function (svg) {
  if (!svg) { return; }
  var W = @WIDTH@, frames = svg.querySelectorAll('.fg-frame'), reset = svg.querySelector('.fg-reset');
  var details = svg.querySelector('.fg-details'), matched = svg.querySelector('.fg-matched');
  var total = parseFloat(svg.getAttribute('data-total'));
  function fit(g, x, w) {
    var r = g.querySelector('rect'), t = g.querySelector('text'), name = g.getAttribute('data-name');
    r.setAttribute('x', x); r.setAttribute('width', Math.max(w - 0.5, 0.1)); t.setAttribute('x', x + 3);
    var n = Math.floor((w - 6) / @CHAR@);
    t.textContent = n < 3 ? '' : (name.length <= n ? name : name.slice(0, n - 2) + '..');
  }
  function zoom(g) {
    var x0 = parseFloat(g.getAttribute('data-x')), w0 = parseFloat(g.getAttribute('data-w'));
    var d0 = parseInt(g.getAttribute('data-d'), 10), scale = W / w0;
    frames.forEach(function (f) {
      var x = parseFloat(f.getAttribute('data-x')), w = parseFloat(f.getAttribute('data-w'));
      var d = parseInt(f.getAttribute('data-d'), 10);
      if (d < d0 && x <= x0 + 0.001 && x + w >= x0 + w0 - 0.001) {
        fit(f, 0, W); f.style.display = ''; f.style.opacity = 0.6;
      } else if (d >= d0 && x >= x0 - 0.001 && x + w <= x0 + w0 + 0.001) {
        fit(f, (x - x0) * scale, w * scale); f.style.display = ''; f.style.opacity = 1;
      } else { f.style.display = 'none'; }
    });
    reset.setAttribute('visibility', 'visible');
  }
  function unzoom() {
    frames.forEach(function (f) {
      fit(f, parseFloat(f.getAttribute('data-x')), parseFloat(f.getAttribute('data-w')));
      f.style.display = ''; f.style.opacity = 1;
    });
    reset.setAttribute('visibility', 'hidden');
  }
  frames.forEach(function (f) {
    f.style.cursor = 'pointer';
    f.addEventListener('click', function () { if (f.getAttribute('data-d') === '0') { unzoom(); } else { zoom(f); } });
    f.addEventListener('mouseover', function () { details.textContent = f.querySelector('title').textContent; });
    f.addEventListener('mouseout', function () { details.textContent = ' '; });
  });
  reset.addEventListener('click', unzoom);
  svg.querySelector('.fg-search').addEventListener('click', function () {
    var term = window.prompt('Search frames (regular expression)', '');
    var covered = 0;
    frames.forEach(function (f) { f.querySelector('rect').removeAttribute('stroke'); });
    if (!term) { matched.textContent = ''; return; }
    var re = new RegExp(term), counted = [];
    frames.forEach(function (f) {
      if (!re.test(f.getAttribute('data-name'))) { return; }
      f.querySelector('rect').setAttribute('stroke', '#e0f'); f.querySelector('rect').setAttribute('stroke-width', 2);
      var x = parseFloat(f.getAttribute('data-x')), w = parseFloat(f.getAttribute('data-w'));
      if (!counted.some(function (c) { return x >= c[0] - 0.001 && x + w <= c[0] + c[1] + 0.001; })) {
        counted.push([x, w]); covered += w;
      }
    });
    matched.textContent = 'matched ' + (100 * covered / W).toFixed(2) + '%';
  });
})(document.currentScript ? document.currentScript.parentNode : null);
""".replace("@WIDTH@", str(WIDTH_PX)).replace("@CHAR@", str(CHAR_PX))
