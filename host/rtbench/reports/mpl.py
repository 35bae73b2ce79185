"""matplotlib for the one chart not drawn by `rtbench.reports.svgchart`:
the trend's categorical axis of kernel names or dates, with rotated
labels. Imported only by `rtbench trend`, so no other command pays the
1.3 s import of matplotlib.

Drawn with matplotlib's object API (a `Figure` per chart, never pyplot), so
no global state, no display and no GUI backend is involved; saved as SVG
with text kept as text (`svg.fonttype: none`) so that a report stays small,
needs no font file and its numbers can be searched in the browser.

Every SVG's ids get a prefix of their own: matplotlib names clip paths and
markers by a hash of their geometry, so two charts in one page would
otherwise share (duplicate) ids.
"""

from __future__ import annotations

import io
import itertools
import re

from matplotlib.axes import Axes
from matplotlib.figure import Figure

_ids = itertools.count(1)
_PATH_DATA = re.compile(r'\bd="[^"]*"')
_DECIMALS = re.compile(r"(\.\d)\d+")
_LINETO = re.compile(r"\s*\n\s*L\s+")
_ATTR = re.compile(r'(\b(?:x|y|x1|x2|y1|y2|width|height|transform|viewBox)=")([^"]*)"')
_FONT = re.compile(r"font-family: [^;\"]*;? ?")
_INDENT = re.compile(r"\n[ \t]+")
_NO_ROTATION = re.compile(r' transform="rotate\(-0 [^"]*\)"')
_GROUP_ID = re.compile(r'<g id="[^"]*">')


def _figure(width: float = 6.4, height: float = 2.4) -> tuple[Figure, Axes]:
    # Fixed margins: a layout engine measures every tick label twice and
    # would triple the time a report takes; these fit the labels we draw.
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=0.11, right=0.98, bottom=0.2, top=0.88)
    return fig, fig.add_subplot()


def to_svg(fig: Figure, title: str, tight: bool = False) -> str:
    """The figure as an SVG element to inline in HTML: no XML prologue, no
    metadata, ids made unique, an accessible title. `tight`: the canvas is
    fitted to what is drawn (a legend outside the axes); it draws the
    figure twice, the cost of a report's charts, so only where the fixed
    margins of `_figure` cannot hold what is drawn
    (tests/host/test_reports.py: no chart of a run is clipped)."""
    buf = io.StringIO()
    fig.savefig(
        buf,
        format="svg",
        metadata={"Date": None, "Creator": None},
        bbox_inches="tight" if tight else None,
        pad_inches=0.04,
    )
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    # Path coordinates are in points: a tenth of one is finer than a pixel,
    # and the default six decimals double the size of a report; a lineto
    # after a lineto needs no "L" (SVG repeats the command).
    svg = _PATH_DATA.sub(lambda m: _LINETO.sub(" ", _DECIMALS.sub(r"\1", m.group())), svg)
    # The same for positions in other attributes; the font list of every
    # text element goes to the page's CSS (svg.chart text), indentation away.
    svg = _ATTR.sub(lambda m: m.group(1) + _DECIMALS.sub(r"\1", m.group(2)) + '"', svg)
    svg = _FONT.sub("", svg)
    svg = _INDENT.sub("\n", svg)
    svg = _NO_ROTATION.sub("", svg)
    svg = _GROUP_ID.sub("<g>", svg)  # only defs are referenced by id
    prefix = f"c{next(_ids)}-"
    for ident in set(re.findall(r'\bid="([^"]+)"', svg)):
        svg = svg.replace(f'id="{ident}"', f'id="{prefix}{ident}"')
        svg = svg.replace(f"#{ident})", f"#{prefix}{ident})")
        svg = svg.replace(f'href="#{ident}"', f'href="#{prefix}{ident}"')
    head_end = svg.index(">") + 1
    svg = f"{svg[:head_end]}<title>{_xml_text(title)}</title>{svg[head_end:]}"
    return svg.replace("<svg ", '<svg role="img" class="chart" ', 1)


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
