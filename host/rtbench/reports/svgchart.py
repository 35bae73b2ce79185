"""A small chart drawn straight to SVG: axes (linear or log), step outlines
and filled steps, lines, bands, marks and a legend, rendered by a Jinja2
template (templates/chart.svg.j2).

The report's charts are all of this kind, and drawing them here takes a
millisecond each where matplotlib took 70-90 ms (plus 1.3 s to import it):
a quick run's report has a hundred of them. Geometry is computed with
numpy, in pixels, y downwards; values outside an axis are clamped to it,
so nothing needs a clip path (and no chart needs an id). Text widths are
estimated from the glyph classes of DejaVu Sans, a little generously: the
chart widens to hold its title and legend, so no label runs out of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import numpy.typing as npt
from jinja2 import Template

from rtbench.reports.jinja import environment

FloatArray = npt.NDArray[np.float64]
ArrayLike = FloatArray | Sequence[float]

FONT = 10.0  # px, tick labels and axis labels
TITLE = 10.5
LEGEND = 8.5
_NARROW = frozenset("ijlt.,:;!|' ()[]/-1")
_WIDE = frozenset("mwMW@%")


def text_width(text: str, size: float) -> float:
    """An upper estimate of the width of `text` in DejaVu Sans."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.42
        elif ch in _WIDE:
            em += 1.0
        elif ch.isupper() or not ch.isascii():
            em += 0.8
        else:
            em += 0.66
    return em * size


def _fmt_tick(v: float) -> str:
    text = f"{v:g}"
    return text.replace("-", "−") if not text.startswith("1e") else text


@dataclass
class Axis:
    lo: float
    hi: float
    log: bool = False
    p0: float = 0.0  # pixel of lo
    p1: float = 1.0  # pixel of hi

    def clamp(self, v: FloatArray) -> FloatArray:
        v = np.clip(np.asarray(v, dtype=np.float64), self.lo, self.hi)
        return v

    def px(self, v: ArrayLike) -> FloatArray:
        v = self.clamp(np.asarray(v, dtype=np.float64))
        if self.log:
            a, b, v = math.log10(self.lo), math.log10(self.hi), np.log10(v)
        else:
            a, b = self.lo, self.hi
        span = (b - a) or 1.0
        return np.asarray(self.p0 + (v - a) / span * (self.p1 - self.p0), dtype=np.float64)

    def ticks(self) -> list[tuple[float, str]]:
        if self.log:
            first, last = math.ceil(math.log10(self.lo) - 1e-9), math.floor(math.log10(self.hi))
            values = [10.0**k for k in range(first, last + 1)]
            if len(values) > 8:  # one label every few decades
                every = math.ceil(len(values) / 6)
                values = values[::every]
            if len(values) < 2:
                values = sorted(
                    {
                        v
                        for k in range(first - 1, last + 1)
                        for m in (1, 2, 5)
                        if self.lo <= (v := m * 10.0**k) <= self.hi
                    }
                )
        else:
            raw = (self.hi - self.lo) / 5 or 1.0
            mag = 10.0 ** math.floor(math.log10(raw))
            step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
            start = math.ceil(self.lo / step - 1e-9)
            values = [k * step for k in range(start, math.floor(self.hi / step + 1e-9) + 1)]
            values = [0.0 if abs(v) < step * 1e-9 else v for v in values]
        return [(v, _fmt_tick(float(f"{v:.6g}"))) for v in values]


def axis_for(lo: float, hi: float, log: bool, margin: float = 0.03) -> Axis:
    """An axis over [lo, hi] with a small margin either side (log: in
    decades); a log axis needs lo > 0."""
    if log:
        a, b = math.log10(lo), math.log10(hi)
        pad = (b - a) * margin or 0.5
        return Axis(10 ** (a - pad), 10 ** (b + pad), True)
    pad = (hi - lo) * margin or max(abs(hi), 1.0) * 0.5
    return Axis(lo - pad, hi + pad, False)


@dataclass
class Path:
    d: str
    fill: str = "none"
    stroke: str = "none"
    width: float = 1.0
    dash: str = ""
    opacity: float = 1.0


@dataclass
class Text:
    x: float
    y: float
    text: str
    anchor: str = "start"
    size: float = FONT
    color: str = "#000000"
    rotate: bool = False


@dataclass
class Dot:
    x: float
    y: float
    r: float
    color: str


def _r(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _points(xs: FloatArray, ys: FloatArray) -> str:
    """SVG path data through the points: M x y L x y x y ... (a lineto
    repeats), to a tenth of a pixel."""
    pairs = np.round(np.column_stack([xs, ys]), 1).ravel().tolist()
    words = [_r(v) for v in pairs]
    if len(words) < 2:
        return ""
    return "M" + " ".join(words[:2]) + (" L" + " ".join(words[2:]) if len(words) > 2 else "")


@cache
def _template() -> Template:
    return environment(autoescape=True).get_template("chart.svg.j2")


@dataclass
class Chart:
    """Build in data units (after `set_axes`), then `svg()`."""

    alt: str  # the accessible title, <title>
    title: str
    xlabel: str
    ylabel: str
    width: float = 620.0
    height: float = 220.0
    font: float = FONT
    min_plot: float = 360.0  # px of axes at least, beside a legend
    x: Axis = field(default_factory=lambda: Axis(0.0, 1.0))
    y: Axis = field(default_factory=lambda: Axis(0.0, 1.0))
    paths: list[Path] = field(default_factory=list)
    dots: list[Dot] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (label, color)
    frame: str = ""

    def set_axes(self, x: Axis, y: Axis, legend: Sequence[str] = ()) -> None:
        """Place the axes in the canvas: margins from the tick labels, a
        legend column on the right, the canvas widened to hold the title."""
        self.x, self.y = x, y
        ytick_w = max((text_width(t, FONT) for _, t in y.ticks()), default=0.0)
        left = FONT + 8 + ytick_w + 6
        legend_w = max((text_width(t, LEGEND) for t in legend), default=0.0)
        right = 12.0 + (legend_w + 30 if legend else 0.0)
        # the last x tick label is centred on the axis' end
        xt = x.ticks()
        right = max(right, text_width(xt[-1][1], FONT) / 2 + 4 if xt else 0.0)
        self.width = max(
            self.width, left + text_width(self.title, TITLE) + 8, left + self.min_plot + right
        )
        top, bottom = TITLE + 12, FONT * 2 + 16
        x.p0, x.p1 = left, self.width - right
        y.p0, y.p1 = self.height - bottom, top
        self.height = max(self.height, top + bottom + LEGEND * 1.5 * len(legend) + 4)
        y.p0 = self.height - bottom
        self._left, self._top, self._bottom = left, top, bottom

    def stairs(
        self,
        edges: ArrayLike,
        counts: ArrayLike,
        color: str,
        *,
        fill: bool = False,
        baseline: float | None = None,
        width: float = 1.0,
        opacity: float = 1.0,
    ) -> None:
        """A step outline: counts[i] over [edges[i], edges[i+1]]; with a
        baseline, closed down to it (filled when `fill`)."""
        e = self.x.px(edges)
        c = self.y.px(counts)
        xs = np.repeat(e, 2)[1:-1]
        ys = np.repeat(c, 2)
        if baseline is not None:
            base = float(self.y.px([baseline])[0])
            xs = np.concatenate([[e[0]], xs, [e[-1]]])
            ys = np.concatenate([[base], ys, [base]])
        d = _points(xs, ys) + (" Z" if fill else "")
        self.paths.append(
            Path(
                d,
                fill=color if fill else "none",
                stroke="none" if fill else color,
                width=width,
                opacity=opacity,
            )
        )

    def line(
        self,
        xs: ArrayLike,
        ys: ArrayLike,
        color: str,
        *,
        width: float = 1.0,
        dash: str = "",
        step_post: bool = False,
    ) -> None:
        px, py = self.x.px(xs), self.y.px(ys)
        if step_post and len(px) > 1:  # hold each y until the next x
            px, py = np.repeat(px, 2)[1:], np.repeat(py, 2)[:-1]
        self.paths.append(Path(_points(px, py), stroke=color, width=width, dash=dash))

    def band(self, xs: ArrayLike, lo: ArrayLike, hi: ArrayLike, color: str) -> None:
        px = self.x.px(xs)
        d = _points(
            np.concatenate([px, px[::-1]]), np.concatenate([self.y.px(hi), self.y.px(lo)[::-1]])
        )
        self.paths.append(Path(d + " Z", fill=color, stroke=color, width=0.6))

    def dot(self, x: float, y: float, color: str, r: float = 2.5) -> None:
        self.dots.append(Dot(float(self.x.px([x])[0]), float(self.y.px([y])[0]), r, color))

    def vline(
        self, x: float, color: str, dash: str = "", width: float = 0.8, label: str = ""
    ) -> None:
        """A vertical mark across the axes, its label written upwards along
        it at the top."""
        px = float(self.x.px([x])[0])
        self.paths.append(
            Path(
                _points(np.array([px, px]), np.array([self.y.p0, self.y.p1])),
                stroke=color,
                width=width,
                dash=dash,
            )
        )
        if label:
            self.texts.append(
                Text(
                    round(px - 2, 1),
                    round(self.y.p1 + 2, 1),
                    label,
                    "end",
                    LEGEND,
                    color,
                    rotate=True,
                )
            )

    def hline(self, y: float, color: str, dash: str = "", label: str = "") -> None:
        py = float(self.y.px([y])[0])
        self.paths.append(
            Path(
                _points(np.array([self.x.p0, self.x.p1]), np.array([py, py])),
                stroke=color,
                width=0.8,
                dash=dash,
            )
        )
        if label:
            self.texts.append(
                Text(round(self.x.p1 - 2, 1), round(py - 2, 1), label, "end", LEGEND, color)
            )

    def svg(self) -> str:
        x, y = self.x, self.y
        self.frame = _points(np.array([x.p0, x.p0, x.p1]), np.array([y.p1, y.p0, y.p0]))
        ticks = []
        for v, label in x.ticks():
            px = float(x.px([v])[0])
            ticks.append(f"M{_r(px)} {_r(y.p0)} L{_r(px)} {_r(y.p0 + 3.5)}")
            self.texts.append(Text(round(px, 1), round(y.p0 + 4 + FONT, 1), label, "middle"))
        for v, label in y.ticks():
            py = float(y.px([v])[0])
            ticks.append(f"M{_r(x.p0 - 3.5)} {_r(py)} L{_r(x.p0)} {_r(py)}")
            self.texts.append(Text(round(x.p0 - 5, 1), round(py + FONT * 0.35, 1), label, "end"))
        if ticks:
            self.paths.append(Path(" ".join(ticks), stroke="#000000", width=0.8))
        self.texts.append(
            Text(round((x.p0 + x.p1) / 2, 1), round(self.height - 5, 1), self.xlabel, "middle")
        )
        self.texts.append(
            Text(
                round(FONT + 2, 1), round((y.p0 + y.p1) / 2, 1), self.ylabel, "middle", rotate=True
            )
        )
        self.texts.append(Text(round(x.p0, 1), round(TITLE + 3, 1), self.title, size=TITLE))
        for i, (label, color) in enumerate(self.legend):
            ly = y.p1 + 4 + LEGEND * 1.5 * i + LEGEND * 0.5
            lx = x.p1 + 8
            self.paths.append(
                Path(f"M{_r(lx)} {_r(ly)} L{_r(lx + 16)} {_r(ly)}", stroke=color, width=1.5)
            )
            self.texts.append(
                Text(round(lx + 20, 1), round(ly + LEGEND * 0.35, 1), label, size=LEGEND)
            )
        return _template().render(c=self)
