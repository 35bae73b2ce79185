"""Charts for the reports, as inline SVG strings.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.axis import XAxis, YAxis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

from rtbench.analysis.stored import usable_hist
from rtbench.model import Int64Array, Series

FloatArray = npt.NDArray[np.float64]

# Series longer than this are drawn as min/max per bucket: a mean or a
# stride would hide exactly the spikes a latency plot is for.
MAX_POINTS = 240
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
# dict[Any, Any]: matplotlib types the keys as a Literal of every rc name.
_RC: dict[Any, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "rtbench",  # deterministic output for the same data
    "font.family": "sans-serif",
    "font.size": 8.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_ids = itertools.count(1)
_PATH_DATA = re.compile(r'\bd="[^"]*"')
_DECIMALS = re.compile(r"(\.\d)\d+")
_LINETO = re.compile(r"\s*\n\s*L\s+")
_ATTR = re.compile(r'(\b(?:x|y|x1|x2|y1|y2|width|height|transform|viewBox)=")([^"]*)"')
_FONT = re.compile(r"font-family: [^;\"]*;? ?")
_INDENT = re.compile(r"\n[ \t]+")
_NO_ROTATION = re.compile(r' transform="rotate\(-0 [^"]*\)"')
_GROUP_ID = re.compile(r'<g id="[^"]*">')


@dataclass
class Bar:
    lo: float  # in the series' unit
    hi: float
    count: int


def unit_scale(unit: str) -> tuple[float, str]:
    """Divisor and display unit: nanoseconds are shown in µs."""
    return (1000.0, "µs") if unit == "ns" else (1.0, unit)


def plain(text: str) -> str:
    """Text for matplotlib as it is: `$` would start mathtext (and a parse
    error on arbitrary labels)."""
    return text.replace("$", r"\$")


def hist_bars(s: Series) -> list[Bar]:
    """The series' distribution as bars: the target's histogram buckets, or
    (a run without one) log-spaced bins of the raw samples."""
    hist = usable_hist(s)
    if hist is not None and hist.n:
        return [Bar(*hist.bucket_bounds(i), c) for i, c in hist.counts if c]
    if s.samples is not None and len(s.samples):
        return _sample_bars(s.samples)
    return []


def _sample_bars(values: Int64Array) -> list[Bar]:
    lo, hi = int(values.min()), int(values.max())
    log = lo > 0 and hi > lo  # log-spaced bins need positive values
    edges = np.geomspace(lo, hi + 1, 65) if log else np.linspace(lo, hi + 1, 65)
    counts, edges = np.histogram(values, bins=edges)
    return [Bar(float(edges[i]), float(edges[i + 1]), int(c)) for i, c in enumerate(counts) if c]


def dense(bars: Sequence[Bar]) -> tuple[FloatArray, FloatArray]:
    """(edges, counts) of sparse bars, the gaps between them as empty bins:
    what a step outline needs."""
    edges = [bars[0].lo]
    counts: list[float] = []
    for b in bars:
        if b.lo > edges[-1]:
            counts.append(0.0)
            edges.append(b.lo)
        counts.append(float(b.count))
        edges.append(b.hi)
    return np.asarray(edges, dtype=np.float64), np.asarray(counts, dtype=np.float64)


def downsample_minmax(
    values: Int64Array, max_points: int = MAX_POINTS
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(index, min, max) per bucket of consecutive samples, at most
    `max_points` buckets; every sample's value lies within its bucket's
    [min, max], so a single spike survives any reduction."""
    n = len(values)
    if n <= max_points:
        x = np.arange(n, dtype=np.float64)
        v = values.astype(np.float64)
        return x, v, v
    edges = np.linspace(0, n, max_points + 1).astype(np.int64)
    starts = edges[:-1]
    mins = np.minimum.reduceat(values, starts).astype(np.float64)
    maxs = np.maximum.reduceat(values, starts).astype(np.float64)
    return starts.astype(np.float64), mins, maxs


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


def _draw_bars(ax: Axes, bars: Sequence[Bar], div: float) -> None:
    """One filled step path (one SVG element, not one per bucket) on a log
    count axis whose floor, half a count, keeps single counts visible."""
    edges, counts = dense(bars)
    floor = 0.5
    ax.stairs(
        np.maximum(counts, floor),
        edges / div,
        fill=True,
        baseline=floor,
        color=COLORS[0],
        alpha=0.85,
    )
    log_axis(ax, "y", minor=False)
    ax.set_ylim(bottom=floor)


def log_axis(ax: Axes, which: str, minor: bool = False) -> None:
    """A log scale labelled 1, 10, 100, ... in plain text: the default
    labels are mathtext, which costs more than the rest of a chart."""
    if which == "x":
        ax.set_xscale("log")
        axis: XAxis | YAxis = ax.xaxis
    else:
        ax.set_yscale("log")
        axis = ax.yaxis
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
    if not minor:
        axis.set_minor_locator(NullLocator())


def _log_x_if_wide(ax: Axes, lo: float, hi: float) -> None:
    """Log x when the values span more than a decade and are positive: the
    tail of a latency distribution is orders of magnitude from its body."""
    if lo > 0 and hi / lo > 10:
        log_axis(ax, "x")


def _symmetric_x(ax: Axes, bars: Sequence[Bar], div: float) -> None:
    """A linear x axis centred on 0, for values of both signs (a deviation
    from a release time): a log axis would hide the negative half."""
    reach = max(max(abs(b.lo), abs(b.hi)) for b in bars) / div
    ax.set_xlim(-reach * 1.05, reach * 1.05)
    ax.axvline(0, color="#888888", linewidth=0.6)


def group_svg(case: str, name: str, group: Sequence[Series]) -> str | None:
    """The distributions of one series name of a case, one line per sweep
    point (fractions of each point's samples when there are several, so
    points of different n compare), the exact max of each in the legend.
    Values of both signs get a symmetric linear x axis, positive values
    spanning decades a log one."""
    drawn = [(s, hist_bars(s)) for s in group]
    drawn = [(s, bars) for s, bars in drawn if bars]
    if not drawn:
        return None
    div, unit = unit_scale(drawn[0][0].unit)
    single = len(drawn) == 1
    all_bars = [b for _, bars in drawn for b in bars]
    signed = min(b.lo for b in all_bars) < 0
    with matplotlib.rc_context(_RC):
        fig, ax = _figure(height=2.3)
        for (s, bars), color in zip(drawn, itertools.cycle(COLORS), strict=False):
            edges, counts = dense(bars)
            scale = 1.0 if single else 1.0 / max(s.n, 1)
            label = f"{s.label}: max {s.max / div:.3f}" if s.max is not None else s.label
            if single:
                _draw_bars(ax, bars, div)
            else:
                ax.stairs(counts * scale, edges / div, color=color, linewidth=1.0)
            if not single:
                ax.plot([], [], color=color, label=plain(label))
            if s.max is not None and single:
                ax.axvline(s.max / div, color=COLORS[1], linestyle="--", linewidth=0.8)
        if not single:
            log_axis(ax, "y", minor=False)
        if signed:
            _symmetric_x(ax, all_bars, div)
        else:
            first = min((b.lo for b in all_bars if b.lo > 0), default=0.0)
            _log_x_if_wide(ax, first / div, max(b.hi for b in all_bars) / div)
        ax.set_xlabel(f"{plain(name)} ({unit})")
        ax.set_ylabel("count (log)" if single else "fraction (log)")
        n = sum(s.n for s, _ in drawn)
        title = f"{case} {name}: distribution, n = {n}"
        if single:  # the max in the title: a legend of one would widen the chart
            top = drawn[0][0].max
            title += f", max {top / div:.3f} {unit}" if top is not None else ""
        else:
            ax.legend(frameon=False, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.0, 1.02))
        ax.set_title(plain(title), loc="left")
        return to_svg(fig, f"histogram of {case} {name}", tight=not single)


def timeseries_svg(s: Series, max_points: int = MAX_POINTS) -> str | None:
    """Each sample against its index; min/max bands when there are many."""
    if s.samples is None or len(s.samples) < 2:
        return None
    div, unit = unit_scale(s.unit)
    x, lo, hi = downsample_minmax(s.samples, max_points)
    with matplotlib.rc_context(_RC):
        fig, ax = _figure(height=2.2)
        if len(x) == len(s.samples):
            ax.plot(x, hi / div, linewidth=0.6, color=COLORS[0])
        else:
            ax.fill_between(x, lo / div, hi / div, color=COLORS[0], linewidth=0.6)
        low, high = float(lo.min()), float(hi.max())
        if low > 0 and high / low > 50:
            log_axis(ax, "y")
        ax.set_xlabel("sample")
        ax.set_ylabel(unit)
        per = len(s.samples) / len(x)
        note = "" if per == 1 else f" (band: min to max of each {per:.0f} samples)"
        ax.set_title(plain(f"{s.case} {s.label}: over time{note}"), loc="left")
        return to_svg(fig, f"{s.case} {s.label} over time")


def curve_svg(
    title: str, key: str, xs: Sequence[int], lines: Sequence[tuple[str, Sequence[float]]], unit: str
) -> str:
    """An indicator against a sweep parameter (determinism: does the cost
    grow with the number of tasks?)."""
    div, shown = unit_scale(unit)
    with matplotlib.rc_context(_RC):
        fig, ax = _figure(height=2.4)
        for (name, ys), color in zip(lines, itertools.cycle(COLORS), strict=False):
            ax.plot(
                xs,
                np.asarray(ys, dtype=np.float64) / div,
                marker="o",
                color=color,
                label=plain(name),
            )
        if min(xs) > 0 and max(xs) / min(xs) > 10:
            log_axis(ax, "x")
        values = [v for _, ys in lines for v in ys if v > 0]
        if values and max(values) / min(values) > 10:
            log_axis(ax, "y")  # on a linear axis the max flattens the mean
            ax.set_ylabel(f"{shown} (log)")
        ax.set_xlabel(plain(key))
        if not ax.get_ylabel():
            ax.set_ylabel(shown)
        ax.legend(frameon=False)
        ax.set_title(plain(title), loc="left")
        return to_svg(fig, title)


def overlay_svg(title: str, named: Sequence[tuple[str, Series]]) -> str | None:
    """Several runs' distributions of one series, as fractions of each run's
    samples (runs differ in n) on a log scale, outlined so overlaps show."""
    drawn = [(name, s, hist_bars(s)) for name, s in named]
    drawn = [d for d in drawn if d[2]]
    if not drawn:
        return None
    div, unit = unit_scale(drawn[0][1].unit)
    with matplotlib.rc_context(_RC):
        fig, ax = _figure(height=2.6)
        for (name, s, bars), color in zip(drawn, itertools.cycle(COLORS), strict=False):
            edges, counts = dense(bars)
            ax.stairs(
                counts / max(s.n, 1), edges / div, color=color, linewidth=1.0, label=plain(name)
            )
        log_axis(ax, "y", minor=False)
        lows = [b.lo for _, _, bars in drawn for b in bars if b.lo > 0]
        highs = [bars[-1].hi for _, _, bars in drawn]
        if lows:
            _log_x_if_wide(ax, min(lows) / div, max(highs) / div)
        ax.set_xlabel(unit)
        ax.set_ylabel("fraction (log)")
        ax.legend(frameon=False)
        ax.set_title(plain(title), loc="left")
        return to_svg(fig, title)
