"""Statistics of one series, as named functions.

From raw samples when the run kept all of them; otherwise from the target's
histogram. n, min, max and mean are always exact: they come from the
target's own summary.

Percentiles are nearest-rank (the smallest value with at least q % of the
samples at or below it), the same definition for samples and histograms, so
a figure does not move when a run drops its raw samples. From a histogram a
percentile is known to its bucket: `pct_range` holds the interval it lies
in, `pct` its upper bound (the conservative figure for a latency), and
`bounded` says that at least one of them is not exact. A bucket of width
one, or one that the exact min/max pin to a single value, gives an exact
figure.

With raw samples the percentiles are exact. The histogram still helps: it
says which bucket holds each rank, so only the samples of those buckets are
gathered and sorted, in one pass by slices, instead of a partial sort of a
copy of the whole series (guided_percentiles).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import Literal

import numpy as np
import numpy.typing as npt

from rtbench.analysis.chunkwise import (
    BlockMaxima,
    SquaredDeviations,
    Tapped,
    remember_block_maxima,
    windows,
)
from rtbench.analysis.evt import default_block_size
from rtbench.analysis.ranks import select
from rtbench.analysis.stored import usable_hist
from rtbench.catalogue import Table, sigma3_cases
from rtbench.model import (
    ArraySamples,
    ChunkedSamples,
    Histogram,
    Int64Array,
    Run,
    Series,
    as_chunked,
)

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
# Names of the indicators a criteria file, a comparison or an export uses.
PCT_NAMES = {q: f"p{q:g}" for q in PERCENTILES}
PCT_OF = {name: q for q, name in PCT_NAMES.items()}
INDICATORS = ("n", "min", "mean", "stddev", *PCT_NAMES.values(), "max", "max_3sigma")

# Samples are reduced in slices of this many so that moments of a huge
# series need a slice's worth of float64 temporaries, not a whole copy.
_SLICE = 1 << 22

Source = Literal["samples", "histogram", "summary"]


@dataclass
class Stats:
    n: int
    min: int | None
    max: int | None
    mean: float | None
    stddev: float | None
    pct: dict[float, float]  # percentile -> value (upper bound when bounded)
    bounded: bool  # some percentile is a bucket bound, not exact
    filtered_max: float | None = None  # max after the 3-sigma filter
    filtered_out: int = 0  # samples the filter called gross errors
    source: Source = "samples"
    pct_range: dict[float, tuple[float, float]] = field(default_factory=dict)
    stddev_exact: bool = True  # False: from bucket midpoints
    filtered_approx: bool = False  # True: the 3-sigma filter ran on the histogram

    def value(self, indicator: str) -> float | None:
        """The figure an indicator name (one of INDICATORS) stands for."""
        simple: dict[str, float | None] = {
            "n": float(self.n),
            "min": _opt_float(self.min),
            "max": _opt_float(self.max),
            "mean": self.mean,
            "stddev": self.stddev,
            "max_3sigma": self.filtered_max,
        }
        if indicator in simple:
            return simple[indicator]
        return self.pct.get(_pct_of(indicator))

    def is_bounded(self, indicator: str) -> bool:
        """True when the indicator's figure is a bucket's upper bound."""
        check_indicator(indicator)
        lo, hi = self.pct_range.get(PCT_OF.get(indicator, -1.0), (0.0, 0.0))
        return lo != hi


def check_indicator(name: str) -> str:
    """`name` itself when it is a known indicator; KeyError otherwise."""
    if name not in INDICATORS:
        raise KeyError(f"unknown indicator {name!r}; known: {', '.join(INDICATORS)}")
    return name


def _pct_of(indicator: str) -> float:
    check_indicator(indicator)
    return PCT_OF[indicator]


def _opt_float(v: int | None) -> float | None:
    return None if v is None else float(v)


def has_all_samples(s: Series) -> bool:
    return s.n_kept == s.n and s.n > 0


def sigma3_filter(values: Int64Array) -> Int64Array:
    """Pauta criterion: a sample whose residual from the mean exceeds three
    standard deviations is a gross error. One pass, as published; shown
    beside the raw figures, never instead of them."""
    if len(values) < 3:
        return values
    mu, sd = sample_moments(values)
    kept: Int64Array = values[(values >= mu - 3 * sd) & (values <= mu + 3 * sd)]
    return kept


def sample_moments(
    values: Int64Array | ChunkedSamples, mean: float | None = None
) -> tuple[float, float]:
    """(mean, population standard deviation), in slices (bounded memory).
    `mean`, when the caller knows it exactly (the summary's sum / n), saves
    a pass over the samples."""
    data = as_chunked(values)
    n = len(data)
    if n == 0:
        return math.nan, math.nan
    if mean is None:
        total = 0.0
        for part in windows(data, _SLICE):
            total += float(part.sum(dtype=np.float64))
        mean = total / n
    mu = mean
    squares = SquaredDeviations(_SLICE, mu, n)  # one float64 slice, reused
    for part in data.chunks():
        squares.add(part)
    return mu, math.sqrt(squares.total() / n)


def sample_percentiles(
    values: Int64Array | ChunkedSamples,
    qs: tuple[float, ...] = PERCENTILES,
    bounds: tuple[int, int] | None = None,
) -> list[float]:
    """Nearest-rank percentiles of raw samples (one partial sort for all an
    array's; a few passes over a long series' chunks: `ranks.select`,
    `bounds` the samples' (min, max) if known)."""
    if isinstance(values, ChunkedSamples):
        n = len(values)
        got = select(values, [_rank(q, n) - 1 for q in qs], bounds)
        return [float(got[_rank(q, n) - 1]) for q in qs]
    n = len(values)
    ranks = sorted({_rank(q, n) - 1 for q in qs})
    part = np.partition(values, ranks)
    return [float(part[_rank(q, n) - 1]) for q in qs]


def _rank(q: float, n: int) -> int:
    """1-based nearest rank of the q-th percentile among n values."""
    # round() first: q/100*n in floating point can land a hair above an
    # integer (99.9 % of 1000 = 999.0000000000001) and ceil would skip a rank.
    return min(n, max(1, math.ceil(round(q / 100.0 * n, 9))))


# --- histograms -------------------------------------------------------------


def _underflow_range(h: Histogram) -> tuple[float, float]:
    assert h.min is not None and h.max is not None
    top = int(h.layout.get("lo", 0)) - 1 if h.layout.get("kind") == "linear" else -1
    return float(h.min), float(min(max(top, h.min), h.max))


def _overflow_range(h: Histogram) -> tuple[float, float]:
    assert h.min is not None and h.max is not None
    layout = h.layout
    if "buckets" in layout and layout.get("kind") in ("linear", "log2"):
        bottom = h.bucket_bounds(int(layout["buckets"]))[0]  # its first value
        return float(max(min(bottom, h.max), h.min)), float(h.max)
    return float(h.min), float(h.max)


def _bucket_range(h: Histogram, index: int) -> tuple[float, float]:
    """The values bucket `index` can hold, narrowed by the exact min and max."""
    assert h.min is not None and h.max is not None
    lo, hi = h.bucket_bounds(index)
    lo_c, hi_c = max(lo, h.min), min(hi - 1, h.max)
    if lo_c > hi_c:  # inconsistent record; fall back to the raw bounds
        return float(lo), float(hi - 1)
    return float(lo_c), float(hi_c)


Cell = tuple[float, float, int]  # [lo, hi] (narrowed by min/max), count


def hist_cell_list(h: Histogram) -> list[Cell]:
    """Every non-empty cell in value order: underflow, buckets, overflow."""
    cells = [(*_bucket_range(h, i), c) for i, c in h.counts if c > 0]
    if h.underflow:
        cells.insert(0, (*_underflow_range(h), h.underflow))
    if h.overflow:
        cells.append((*_overflow_range(h), h.overflow))
    return cells


def _locate(h: Histogram, rank: int, cells: list[Cell]) -> tuple[float, float, int, int]:
    """(lo, hi, values before the cell, values in it) of the cell holding the
    1-based `rank`; the extreme ranks are the exact min and max."""
    assert h.min is not None and h.max is not None
    if rank == 1:
        return float(h.min), float(h.min), 0, 1
    if rank == h.n:
        return float(h.max), float(h.max), h.n - 1, 1
    seen = 0
    for lo, hi, count in cells:
        if rank <= seen + count:
            return lo, hi, seen, count
        seen += count
    return float(h.max), float(h.max), h.n - 1, 1  # counts short of n: a damaged record


def hist_percentile_range(h: Histogram, q: float) -> tuple[float, float]:
    """[lo, hi] that the q-th percentile lies in (lo == hi: exact)."""
    if h.min is None or h.max is None or h.n <= 0:
        return math.nan, math.nan
    lo, hi, _, _ = _locate(h, _rank(q, h.n), hist_cell_list(h))
    return lo, hi


def hist_percentile(h: Histogram, q: float) -> float:
    """Upper bound of the interval holding the q-th percentile."""
    return hist_percentile_range(h, q)[1]


def hist_cells(h: Histogram) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """(midpoint, count) of every non-empty cell, in value order."""
    cells = hist_cell_list(h)
    mids = np.array([(lo + hi) / 2 for lo, hi, _ in cells], dtype=np.float64)
    counts = np.array([c for _, _, c in cells], dtype=np.int64)
    return mids, counts


def hist_stddev(h: Histogram, mean: float) -> tuple[float, bool]:
    """(stddev, exact) from bucket midpoints; exact when every cell holds a
    single possible value."""
    if h.n <= 0 or h.min is None or h.max is None:
        return math.nan, False
    exact = all(lo == hi for lo, hi, _ in hist_cell_list(h))
    mids, counts = hist_cells(h)
    ss = float(np.dot(counts, (mids - mean) ** 2))
    return math.sqrt(ss / max(1, int(counts.sum()))), exact


def guided_percentiles(
    values: Int64Array, h: Histogram, qs: tuple[float, ...] = PERCENTILES
) -> list[float] | None:
    """Exact nearest-rank percentiles of `values`, using their histogram to
    avoid sorting them: a rank in a single-value cell is read off the
    histogram; the others are found among the values of their cell only,
    gathered in one pass by slices. None when the histogram does not match
    the values (the caller then sorts)."""
    n = len(values)
    if h.n != n or n == 0 or h.min is None:
        return None
    cells = hist_cell_list(h)
    if sum(c for _, _, c in cells) != n:
        return None
    where = {q: _locate(h, _rank(q, n), cells) for q in qs}
    wanted = {(lo, hi): count for lo, hi, _, count in where.values() if lo != hi}
    found: dict[tuple[float, float], list[Int64Array]] = {key: [] for key in wanted}
    for start in range(0, n if wanted else 0, _SLICE):
        part = values[start : start + _SLICE]
        for lo, hi in wanted:
            found[lo, hi].append(part[(part >= lo) & (part <= hi)])
    gathered = {key: np.concatenate(parts) for key, parts in found.items()}
    if any(len(gathered[key]) != count for key, count in wanted.items()):
        return None
    out = []
    for q in qs:
        lo, hi, before, _ = where[q]
        if lo == hi:
            out.append(lo)
            continue
        k = _rank(q, n) - before - 1
        out.append(float(np.partition(gathered[lo, hi], k)[k]))
    return out


# --- one series -------------------------------------------------------------


def case_stats(s: Series, table: Table | None = None) -> Stats:
    """The series' figures as its case's published method gives them: with
    the 3-sigma filter for a case its agent's table declares `sigma3`
    (THR-SW; `table`: the run's, `catalogue.run_table`, default the POSIX one)."""
    return series_stats(s, sigma3=s.case in sigma3_cases(table))


_ONCE: ContextVar[dict[tuple[int, bool], tuple[Series, Stats]] | None] = ContextVar(
    "stats_once", default=None
)


@contextmanager
def computed_once() -> Iterator[None]:
    """Within the block each series' figures are computed once: a report's
    summary, ratings and case sections each ask for the same ones (332
    passes over a quick run's samples for 139 distinct series). The memo
    holds every series it saw, so no id is reused while it lives, and ends
    with the block, so nothing outside sees a figure of a series since
    changed."""
    token = _ONCE.set({})
    try:
        yield
    finally:
        _ONCE.reset(token)


def series_stats(s: Series, sigma3: bool = False) -> Stats:
    once = _ONCE.get()
    if once is None:
        return _series_stats(s, sigma3)
    hit = once.get((id(s), sigma3))
    if hit is None or hit[0] is not s:
        hit = once[(id(s), sigma3)] = (s, _series_stats(s, sigma3))
    return hit[1]


def _series_stats(s: Series, sigma3: bool) -> Stats:
    """The series' figures; a histogram the analysis cannot use (see
    `rtbench.analysis.stored`) is left out, never a crash. A kind without
    statistics (a count, a timestamp, a period: rtbench.kinds) gets only its
    exact n, min and max."""
    if not s.traits.stats:
        return Stats(s.n, s.min, s.max, None, None, {}, bounded=False, source="summary")
    if has_all_samples(s):
        return _from_samples(s, sigma3)
    hist = usable_hist(s)
    if hist is not None and hist.n:
        return _from_hist(s, hist, sigma3)
    return Stats(s.n, s.min, s.max, s.mean, None, {}, bounded=False, source="summary")


def _from_samples(s: Series, sigma3: bool) -> Stats:
    data = s.chunked
    assert data is not None
    if isinstance(data, ArraySamples):
        mu, sd = sample_moments(data, s.mean)
        hist = usable_hist(s)
        guided = guided_percentiles(data.values, hist) if hist is not None else None
        values = guided if guided is not None else sample_percentiles(data.values)
    else:  # a long stored series: exact, a chunk at a time (the same figures)
        bounds = (s.min, s.max) if s.min is not None and s.max is not None else None
        tapped: ChunkedSamples = data
        # The moments and EVT's block maxima ride the first counting pass.
        maxima = BlockMaxima(len(data), default_block_size(len(data))) if s.traits.evt else None
        squares = (
            SquaredDeviations(_SLICE, s.mean, len(data))
            if s.mean is not None and len(data)
            else None
        )
        if squares is not None or maxima is not None:
            taps = [t.add for t in (squares, maxima) if t is not None]

            def feed(c: Int64Array) -> None:
                for tap in taps:
                    tap(c)

            tapped = Tapped(data, feed)
        values = sample_percentiles(tapped, bounds=bounds)
        if maxima is not None and isinstance(tapped, Tapped) and tapped.tapped:
            remember_block_maxima(data, maxima)
        if squares is not None and squares.seen == len(data):
            mu, sd = squares.mu, math.sqrt(squares.total() / len(data))
        else:
            mu, sd = sample_moments(data, s.mean)
    pct = dict(zip(PERCENTILES, values, strict=True))
    exact = {q: (x, x) for q, x in pct.items()}
    st = Stats(s.n, s.min, s.max, s.mean, sd, pct, bounded=False, pct_range=exact)
    if sigma3 and len(data) >= 3:
        st.filtered_max, st.filtered_out = _sigma3_max(data, mu, sd)
    return st


def _sigma3_max(v: ChunkedSamples, mu: float, sd: float) -> tuple[float | None, int]:
    """(max, count dropped) under the 3-sigma filter, chunk by chunk."""
    lo, hi = mu - 3 * sd, mu + 3 * sd
    best: float | None = None
    kept = 0
    for part in v.chunks():
        inside = part[(part >= lo) & (part <= hi)]
        kept += len(inside)
        if len(inside):
            m = float(inside.max())
            best = m if best is None else max(best, m)
    return best, len(v) - kept


def _from_hist(s: Series, h: Histogram, sigma3: bool = False) -> Stats:
    ranges = {q: hist_percentile_range(h, q) for q in PERCENTILES}
    pct = {q: hi for q, (_, hi) in ranges.items()}
    mean = s.mean if s.mean is not None else (h.sum / h.n)
    sd, exact = hist_stddev(h, mean)
    bounded = any(lo != hi for lo, hi in ranges.values())
    st = Stats(s.n, s.min, s.max, s.mean, sd, pct, bounded, source="histogram")
    st.pct_range, st.stddev_exact = ranges, exact
    if sigma3 and h.n >= 3 and not math.isnan(sd):
        st.filtered_max, st.filtered_out = _hist_sigma3_max(h, mean, sd)
        st.filtered_approx = True
    return st


def _hist_sigma3_max(h: Histogram, mu: float, sd: float) -> tuple[float | None, int]:
    """The 3-sigma filter where only the histogram covers every sample (a
    long run keeps the first --max-samples raw): sigma from bucket
    midpoints, a cell that straddles a limit counted as kept, its values
    capped at the limit. An approximation, flagged as one by the caller."""
    lo, hi = mu - 3 * sd, mu + 3 * sd
    best: float | None = None
    out = 0
    for c_lo, c_hi, count in hist_cell_list(h):
        if c_hi < lo or c_lo > hi:
            out += count
        else:
            best = min(c_hi, hi) if best is None else max(best, min(c_hi, hi))
    return best, out


def scipy_stats() -> ModuleType:
    """scipy.stats, imported on first use: the import takes a second or more,
    and every `rtbench` command would pay it at start-up otherwise."""
    import scipy.stats

    module: ModuleType = scipy.stats
    return module


def score(value: float | None, run: Run) -> float | None:
    """indicator / T_std: the figure in units of this hardware's calibration
    workload (CAL-REF), so different machines can be compared."""
    t_std = run.t_std_ns
    if value is None or not t_std:
        return None
    return value / t_std
