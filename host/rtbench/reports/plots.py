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

import matplotlib
import numpy as np

from rtbench.model import Series
from rtbench.reports.charts import (
    _RC,
    COLORS,
    FloatArray,
    hist_bars,
    log_axis,
    plain,
    to_svg,
)
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
    if s.samples is not None and len(s.samples) == s.n and s.n:
        values = np.clip(s.samples.astype(np.float64), edges[0], edges[-1])
        counts, _ = np.histogram(values, bins=edges)
        return counts.astype(np.float64)
    out = np.zeros(len(edges) - 1, dtype=np.float64)
    for b in hist_bars(s):
        mid = float(np.sqrt(max(b.lo, 1.0) * max(b.hi, 1.0)))
        i = int(np.clip(np.searchsorted(edges, mid, side="right") - 1, 0, len(out) - 1))
        out[i] += b.count
    return out


def _mark(ax: matplotlib.axes.Axes, x: float, text: str, color: str, y: float) -> None:
    ax.axvline(x, color=color, linestyle=":", linewidth=0.9)
    ax.annotate(
        text, (x, y), xycoords=("data", "axes fraction"), ha="right", va="top",
        color=color, fontsize=7, rotation=90,
    )  # fmt: skip


def summary_histogram_svg(lines: Sequence[Line]) -> str | None:
    if not lines:
        return None
    edges = _edges(lines)
    with matplotlib.rc_context(_RC):
        fig = matplotlib.figure.Figure(figsize=(5.0, 3.0))
        ax = fig.add_subplot()
        for ln, color in zip(lines, itertools.cycle(PALETTE), strict=False):
            counts = _counts(ln.series, edges)
            ax.stairs(
                np.maximum(counts, 0.5), edges / 1000, baseline=0.5, color=color,
                linewidth=1.0, label=plain(f"{ln.label}: max {fmt_value(ln.max)}"),
            )  # fmt: skip
        log_axis(ax, "x")
        log_axis(ax, "y", minor=False)
        ax.set_ylim(bottom=0.5)
        ax.set_xlim(edges[0] / 1000, edges[-1] / 1000)
        worst = lines[0]
        if worst.p99 is not None:
            _mark(ax, worst.p99 / 1000, "p99", "#555555", 0.98)
        if worst.p999 is not None:
            _mark(ax, worst.p999 / 1000, "p99.9", "#555555", 0.98)
        _mark(ax, worst.max / 1000, f"max {fmt_value(worst.max)}", PALETTE[0], 0.98)
        ax.set_xlabel("latency (µs, log)")
        ax.set_ylabel("samples (log)")
        ax.set_title(
            "Latency histogram (max in µs); p99, p99.9, max of the worst series marked",
            loc="left",
        )
        ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.02))
        return to_svg(fig, "latency histogram of the run", tight=True)


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
    with matplotlib.rc_context(_RC):
        fig = matplotlib.figure.Figure(figsize=(4.2, 3.0))
        ax = fig.add_subplot()
        floor = 1.0
        for ln, color in zip(lines, itertools.cycle(PALETTE), strict=False):
            xs, ys = _survival(ln.series, edges)
            if not len(xs):
                continue
            # the last sample: 1/n above everything below the max
            xs = np.append(xs, ln.max)
            ys = np.append(ys, 1.0 / max(ln.n, 1))
            floor = min(floor, 1.0 / max(ln.n, 1))
            ax.step(xs / 1000, ys, where="post", color=color, linewidth=1.0)
            ax.plot([ln.max / 1000], [1.0 / max(ln.n, 1)], "o", color=color, markersize=2.5)
        log_axis(ax, "x")
        log_axis(ax, "y", minor=False)
        ax.set_ylim(floor / 2, 1.5)
        ax.set_xlim(edges[0] / 1000, edges[-1] / 1000)
        for level, name in ((1e-2, "p99"), (1e-3, "p99.9")):
            if level > floor:
                ax.axhline(level, color="#888888", linestyle=":", linewidth=0.8)
                ax.annotate(
                    name, (1.0, level), xycoords=("axes fraction", "data"), ha="right",
                    va="bottom", fontsize=7, color="#555555",
                )  # fmt: skip
        ax.set_xlabel("latency (µs, log)")
        ax.set_ylabel("fraction of samples above (log)")
        ax.set_title("Exceedance (1 - CDF); dot: the max", loc="left")
        return to_svg(fig, "exceedance plot of the run", tight=True)
