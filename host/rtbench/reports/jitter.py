"""The published categorical table of release jitter (catalogue: JIT-PER).

|interval - period| (JIT-PER's `deviation` series) counted in whole µs per
category, as the kernel preemption-time method tabulates it: 0, 1-9, 10-99
(in 10 µs bins), and 100 or more, from the raw samples when the run kept
them, else from the target's histogram. (The published table's 0 row is its
"equal to the period" count, so the jitter is the interval's deviation, not
the wake-up latency.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rtbench import catalogue
from rtbench.analysis.stats import has_all_samples
from rtbench.analysis.stored import usable_hist
from rtbench.model import CaseResult, Series
from rtbench.reference import load_datasets

# The cases whose deviation from the period gets the table.


@dataclass
class JitterRow:
    label: str
    count: int
    percent: float
    sub: bool = False  # a 10 µs bin inside "10-99"
    published: int | None = None  # the reference dataset's count (other hardware)


@dataclass
class JitterTable:
    """The published categorical table of |deviation| (catalogue: JIT-PER)."""

    series: str
    n: int
    rows: list[JitterRow]
    exact: bool  # from raw samples; else from histogram buckets
    note: str = ""
    published_source: str = ""  # where `JitterRow.published` comes from


# The published categories: 0, 1-9, then 10 µs bins to 99; the last one is
# ">= 100". Lower edges in whole µs.
_LABELS = ["0", "1-9"] + [f"{lo}-{lo + 9}" for lo in range(10, 100, 10)] + ["≥ 100"]
_EDGES = np.array([0, 1, *range(10, 101, 10)], dtype=np.float64)


def category(ns: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """The category index of each |value| (ns), by whole µs."""
    # float: abs() of INT64_MIN overflows in int64
    us = np.floor(np.abs(np.asarray(ns, dtype=np.float64)) / 1000)
    found: npt.NDArray[np.intp] = np.searchsorted(_EDGES, us, side="right") - 1
    return found


def _counts(s: Series) -> tuple[list[int], int, bool] | None:
    """(count per category, values outside the histogram, exact?)."""
    if has_all_samples(s):
        assert s.chunked is not None
        total = np.zeros(len(_LABELS), dtype=np.int64)
        for chunk in s.chunked.chunks():
            total += np.bincount(category(chunk), minlength=len(_LABELS))
        return [int(c) for c in total], 0, True
    h = usable_hist(s)
    if h is None or not h.n:
        return None
    outside = h.underflow + h.overflow
    if not h.counts:
        return [0] * len(_LABELS), outside, False
    # |value| range of each bucket [lo, hi): negative buckets mirror.
    spans = [_abs_span(*h.bucket_bounds(i)) for i, _ in h.counts]
    lo_cat = category([a for a, _ in spans])
    hi_cat = category([b for _, b in spans])
    # a bucket is counted where its smallest |value| falls
    counts = np.bincount(lo_cat, weights=[c for _, c in h.counts], minlength=len(_LABELS))
    return [int(c) for c in counts], outside, bool(np.all(lo_cat == hi_cat))


def _abs_span(lo: int, hi: int) -> tuple[int, int]:
    """Smallest and largest |v| for v in [lo, hi)."""
    last = hi - 1
    if last < 0:
        return -last, -lo
    if lo >= 0:
        return lo, last
    return 0, max(-lo, last)


def jitter_table(s: Series) -> JitterTable | None:
    """Counts of |deviation| per published category, from the raw
    samples (exact) or else the histogram (approximate where a bucket
    straddles a category boundary)."""
    got = _counts(s)
    if got is None:
        return None
    counts, outside, exact = got
    n = sum(counts) + outside
    if not n:
        return None

    source, published = _published()

    def row(label: str, count: int, sub: bool = False) -> JitterRow:
        return JitterRow(label, count, 100.0 * count / n, sub, published.get(label))

    rows = [row("0", counts[0]), row("1-9", counts[1]), row("10-99", sum(counts[2:-1]))]
    rows += [row(_LABELS[i], counts[i], sub=True) for i in range(2, len(_LABELS) - 1)]
    rows.append(row(_LABELS[-1], counts[-1]))
    note = "" if exact else "approximate: some histogram buckets straddle a category boundary"
    if outside:
        rows.append(row("outside the histogram's range", outside))
    return JitterTable(s.label, n, rows, exact and not outside, note, source)


def _published() -> tuple[str, dict[str, int]]:
    """The published table's counts by category label (with "10-99" summed)."""
    for d in load_datasets():
        if d.jitter:
            counts = {str(b["bin"]): int(b["count"]) for b in d.jitter}
            counts["10-99"] = sum(counts.get(label, 0) for label in _LABELS[2:-1])
            return f"[{d.id}] {d.provenance}", counts
    return "", {}


def jitter_series(c: CaseResult, table: catalogue.Table | None = None) -> list[Series]:
    """The deviation series (interval - period: the published jitter) of a
    case its agent's table declares `jitter` (JIT-PER; `table`: the run's,
    default the POSIX one)."""
    if c.case not in catalogue.jitter_cases(table):
        return []
    return [s for s in c.series if s.name == "deviation"]
