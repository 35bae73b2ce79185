"""The summary charts of a run report (its first screen).

- `summary_histogram_svg`: OSADL's latency plot: every line one series (a
  CPU, or a case's worst series), counts per bucket on a log scale over a
  log latency axis, all lines on one set of buckets; p99, p99.9 and max of
  the worst line marked, each line's max in the legend.
- `exceedance_svg`: 1 - CDF on a log scale, the fraction of samples above
  each latency: the tail reads directly (10^-2 at the p99, 10^-3 at the
  p99.9), down to one sample (1/n) at the max.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rtbench.model import Series
from rtbench.reports.charts import COLORS, FloatArray, hist_bars
from rtbench.reports.svgchart import Axis, Chart
from rtbench.reports.units import fmt_value

BINS = 120
PALETTE = (*COLORS, "#e377c2", "#7f7f7f", "#bcbd22")


@dataclass
class Line:
    label: str  # "CASE series[point]"
    series: Series
    n: int
    max: float  # ns
    p99: float | None
    p999: float | None


def _edges(lines: Sequence[Line]) -> FloatArray:
    """Log-spaced bucket edges (ns) from the smallest positive value to just
    past the largest max: one set for every line."""
    lows = []
    for ln in lines:
        s = ln.series
        if s.min is not None and s.min > 0:
            lows.append(float(s.min))
        else:
            lows.append(1.0)
    lo = max(min(lows), 1.0) / 1.1
    hi = max(max(ln.max for ln in lines), lo) * 1.1
    # at least a decade around the data, so the log axes have a labelled tick
    mid = float(np.sqrt(lo * hi))
    lo, hi = min(lo, mid / 3.2), max(hi, mid * 3.2)
    return np.geomspace(lo, hi, BINS + 1)


def _counts(s: Series, edges: FloatArray) -> FloatArray:
    """The series' values counted on `edges`: exact from raw samples, else
    each histogram bucket at its (geometric) middle."""
    if s.chunked is not None and len(s.chunked) == s.n and s.n:
        total = np.zeros(len(edges) - 1, dtype=np.int64)
        for chunk in s.chunked.chunks():  # whole counts: the same summed by chunk
            values = np.clip(chunk.astype(np.float64), edges[0], edges[-1])
            total += np.histogram(values, bins=edges)[0]
        return total.astype(np.float64)
    out = np.zeros(len(edges) - 1, dtype=np.float64)
    for b in hist_bars(s):
        mid = float(np.sqrt(max(b.lo, 1.0) * max(b.hi, 1.0)))
        i = int(np.clip(np.searchsorted(edges, mid, side="right") - 1, 0, len(out) - 1))
        out[i] += b.count
    return out


def summary_histogram_svg(lines: Sequence[Line]) -> str | None:
    if not lines:
        return None
    edges = _edges(lines)
    counts = [_counts(ln.series, edges) for ln in lines]
    labels = [f"{ln.label}: max {fmt_value(ln.max)}" for ln in lines]
    chart = Chart(
        "latency histogram of the run",
        "Latency histogram (max in µs); p99, p99.9, max of the worst series marked",
        "latency (µs, log)",
        "samples (log)",
        width=470,
        height=280,
        min_plot=330,
    )
    top = max(float(c.max()) for c in counts)
    chart.set_axes(
        Axis(edges[0] / 1000, edges[-1] / 1000, log=True),
        Axis(0.5, max(top, 1.0) * 1.6, log=True),
        legend=labels,
    )
    for c, label, color in zip(counts, labels, itertools.cycle(PALETTE), strict=False):
        chart.stairs(edges / 1000, np.maximum(c, 0.5), color, baseline=0.5)
        chart.legend.append((label, color))
    worst = lines[0]
    if worst.p99 is not None:
        chart.vline(worst.p99 / 1000, "#555555", dash="1 2", width=0.9, label="p99")
    if worst.p999 is not None:
        chart.vline(worst.p999 / 1000, "#555555", dash="1 2", width=0.9, label="p99.9")
    chart.vline(
        worst.max / 1000, PALETTE[0], dash="1 2", width=0.9, label=f"max {fmt_value(worst.max)}"
    )
    return chart.svg()


def _survival(s: Series, edges: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(x, fraction of samples above x) at each edge, ending at the max."""
    counts = _counts(s, edges)
    total = counts.sum()
    if total <= 0:
        return np.zeros(0), np.zeros(0)
    above = total - np.cumsum(counts)  # samples above each bucket's upper edge
    x = edges[1:]
    keep = above > 0
    xs = np.concatenate([[edges[0]], x[keep]])
    ys = np.concatenate([[1.0], above[keep] / total])
    return xs, ys


def exceedance_svg(lines: Sequence[Line]) -> str | None:
    if not lines:
        return None
    edges = _edges(lines)
    curves = []
    floor = 1.0
    for ln, color in zip(lines, itertools.cycle(PALETTE), strict=False):
        xs, ys = _survival(ln.series, edges)
        if not len(xs):
            continue
        # the last sample: 1/n above everything below the max
        last = 1.0 / max(ln.n, 1)
        curves.append((np.append(xs, ln.max), np.append(ys, last), ln.max, last, color))
        floor = min(floor, last)
    chart = Chart(
        "exceedance plot of the run",
        "Exceedance (1 - CDF); dot: the max",
        "latency (µs, log)",
        "fraction of samples above (log)",
        width=340,
        height=280,
    )
    chart.set_axes(
        Axis(edges[0] / 1000, edges[-1] / 1000, log=True), Axis(floor / 2, 1.5, log=True)
    )
    for xs, ys, top, last, color in curves:
        chart.line(xs / 1000, ys, color, step_post=True)
        chart.dot(top / 1000, last, color)
    for level, name in ((1e-2, "p99"), (1e-3, "p99.9")):
        if level > floor:
            chart.hline(level, "#888888", dash="1 2", label=name)
    return chart.svg()
