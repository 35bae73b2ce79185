"""Charts for the reports, as inline SVG strings drawn by
`rtbench.reports.svgchart` (no matplotlib: a quick run's report has a
hundred charts, and matplotlib took 70-90 ms each plus 1.3 s to import).

Distributions are the series' histogram buckets as steps (one path per
line), on a log count axis whose floor, half a count, keeps a single
sample visible; a series over time is its samples, or min/max bands of
consecutive samples when there are many (a spike survives any reduction).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rtbench.analysis.chunkwise import minmax_envelope, value_range
from rtbench.analysis.stored import usable_hist
from rtbench.model import ArraySamples, ChunkedSamples, Int64Array, Series
from rtbench.reports.svgchart import Axis, Chart, axis_for

FloatArray = npt.NDArray[np.float64]

# Series longer than this are drawn as min/max per bucket: a mean or a
# stride would hide exactly the spikes a latency plot is for.
MAX_POINTS = 240
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
FLOOR = 0.5  # the log count axis' floor: a single count stays visible


@dataclass
class Bar:
    lo: float  # in the series' unit
    hi: float
    count: int


def unit_scale(unit: str) -> tuple[float, str]:
    """Divisor and display unit: nanoseconds are shown in µs."""
    return (1000.0, "µs") if unit == "ns" else (1.0, unit)


def hist_bars(s: Series) -> list[Bar]:
    """The series' distribution as bars: the target's histogram buckets, or
    (a run without one) log-spaced bins of the raw samples."""
    hist = usable_hist(s)
    if hist is not None and hist.n:
        return [Bar(*hist.bucket_bounds(i), c) for i, c in hist.counts if c]
    if s.chunked is not None and len(s.chunked):
        return _sample_bars(s.chunked)
    return []


def _sample_bars(values: ChunkedSamples) -> list[Bar]:
    found = value_range(values)
    assert found is not None
    lo, hi = found
    log = lo > 0 and hi > lo  # log-spaced bins need positive values
    edges = np.geomspace(lo, hi + 1, 65) if log else np.linspace(lo, hi + 1, 65)
    counts = np.zeros(len(edges) - 1, dtype=np.int64)
    for chunk in values.chunks():  # whole counts: the same summed by chunk
        counts += np.histogram(chunk, bins=edges)[0]
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


def _x_axis(bars: Sequence[Bar], div: float) -> Axis:
    """Values of both signs: a linear axis centred on 0 (a log axis would
    hide the negative half); positive values spanning more than a decade:
    a log axis (the tail of a latency distribution is orders of magnitude
    from its body); else linear."""
    lo, hi = min(b.lo for b in bars) / div, max(b.hi for b in bars) / div
    if lo < 0:
        reach = max(abs(lo), abs(hi)) * 1.05
        return Axis(-reach, reach)
    first = min((b.lo for b in bars if b.lo > 0), default=0.0) / div
    if first > 0 and hi / first > 10:
        return axis_for(first, hi, log=True)
    return axis_for(lo, hi, log=False)


def _count_axis(top: float, bottom: float = FLOOR) -> Axis:
    return axis_for(bottom, max(top, bottom * 2), log=True, margin=0.05)


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
    n = sum(s.n for s, _ in drawn)
    title = f"{case} {name}: distribution, n = {n}"
    if single:  # the max in the title: a legend of one would widen the chart
        top = drawn[0][0].max
        title += f", max {top / div:.3f} {unit}" if top is not None else ""
    chart = Chart(
        f"histogram of {case} {name}",
        title,
        f"{name} ({unit})",
        "count (log)" if single else "fraction (log)",
        height=210,
    )
    x = _x_axis(all_bars, div)
    lines = [(s, *dense(bars)) for s, bars in drawn]
    if single:
        s, edges, counts = lines[0]
        chart.set_axes(x, _count_axis(float(counts.max())))
        chart.stairs(
            edges / div,
            np.maximum(counts, FLOOR),
            COLORS[0],
            fill=True,
            baseline=FLOOR,
            opacity=0.85,
        )
        if s.max is not None:
            chart.vline(s.max / div, COLORS[1], dash="4 2")
    else:
        fractions = [counts / max(s.n, 1) for s, _, counts in lines]
        positive = [f[f > 0] for f in fractions]
        low = min(float(p.min()) for p in positive if len(p))
        labels = [
            f"{s.label}: max {s.max / div:.3f}" if s.max is not None else s.label
            for s, _, _ in lines
        ]
        chart.set_axes(
            x, _count_axis(max(float(p.max()) for p in positive if len(p)), low / 2), legend=labels
        )
        for (_s, edges, _), frac, label, color in zip(
            lines, fractions, labels, itertools.cycle(COLORS), strict=False
        ):
            chart.stairs(edges / div, np.maximum(frac, low / 2), color)
            chart.legend.append((label, color))
    if x.lo < 0:
        chart.vline(0.0, "#888888", width=0.6)
    return chart.svg()


def timeseries_svg(s: Series, max_points: int = MAX_POINTS) -> str | None:
    """Each sample against its index; min/max bands when there are many."""
    data = s.chunked
    if data is None or len(data) < 2:
        return None
    n = len(data)
    div, unit = unit_scale(s.unit)
    if isinstance(data, ArraySamples) or n <= max_points:
        x, lo, hi = downsample_minmax(data.array(), max_points)
    else:  # a long stored series: the same envelope, a chunk at a time
        x, lo, hi = minmax_envelope(data, max_points)
    per = n / len(x)
    note = "" if per == 1 else f" (band: min to max of each {per:.0f} samples)"
    chart = Chart(
        f"{s.case} {s.label} over time",
        f"{s.case} {s.label}: over time{note}",
        "sample",
        unit,
        height=200,
    )
    low, high = float(lo.min()) / div, float(hi.max()) / div
    log = low > 0 and high / low > 50
    chart.set_axes(
        axis_for(0.0, float(n - 1), log=False, margin=0.02),
        axis_for(low, high, log=log, margin=0.05),
    )
    if len(x) == n:
        chart.line(x, hi / div, COLORS[0], width=0.6)
    else:
        chart.band(x, lo / div, hi / div, COLORS[0])
    return chart.svg()


def curve_svg(
    title: str, key: str, xs: Sequence[int], lines: Sequence[tuple[str, Sequence[float]]], unit: str
) -> str:
    """An indicator against a sweep parameter (determinism: does the cost
    grow with the number of tasks?)."""
    div, shown = unit_scale(unit)
    values = [v / div for _, ys in lines for v in ys if v > 0]
    log_y = bool(values) and max(values) / min(values) > 10  # linear: the max flattens the mean
    chart = Chart(title, title, key, f"{shown} (log)" if log_y else shown)
    log_x = min(xs) > 0 and max(xs) / min(xs) > 10
    every = [v / div for _, ys in lines for v in ys]
    y = (
        axis_for(min(values), max(values), log=True, margin=0.05)
        if log_y
        else axis_for(min(every, default=0.0), max(every, default=1.0), log=False, margin=0.05)
    )
    chart.set_axes(
        axis_for(float(min(xs)), float(max(xs)), log=log_x, margin=0.05),
        y,
        legend=[name for name, _ in lines],
    )
    for (name, ys), color in zip(lines, itertools.cycle(COLORS), strict=False):
        vs = np.asarray(ys, dtype=np.float64) / div
        chart.line(np.asarray(xs, dtype=np.float64), vs, color, width=1.2)
        for xv, yv in zip(xs, vs, strict=True):
            chart.dot(float(xv), float(yv), color, r=3.0)
        chart.legend.append((name, color))
    return chart.svg()


def overlay_svg(title: str, named: Sequence[tuple[str, Series]]) -> str | None:
    """Several runs' distributions of one series, as fractions of each run's
    samples (runs differ in n) on a log scale, outlined so overlaps show."""
    drawn = [(name, s, hist_bars(s)) for name, s in named]
    drawn = [d for d in drawn if d[2]]
    if not drawn:
        return None
    div, unit = unit_scale(drawn[0][1].unit)
    lines = [(name, s, *dense(bars)) for name, s, bars in drawn]
    fractions = [counts / max(s.n, 1) for _, s, _, counts in lines]
    positive = np.concatenate([f[f > 0] for f in fractions])
    low = float(positive.min()) / 2
    chart = Chart(title, title, unit, "fraction (log)", height=230)
    chart.set_axes(
        _x_axis([b for _, _, bars in drawn for b in bars], div),
        _count_axis(float(positive.max()), low),
        legend=[n for n, *_ in lines],
    )
    for (name, _, edges, _), frac, color in zip(
        lines, fractions, itertools.cycle(COLORS), strict=False
    ):
        chart.stairs(edges / div, np.maximum(frac, low), color)
        chart.legend.append((name, color))
    return chart.svg()
