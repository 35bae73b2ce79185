"""Statistics of one series, as named functions.

From raw samples when the run kept all of them; otherwise from the target's
histogram, where a percentile is known only to its bucket and is reported
as the bucket's upper bound (flagged `bounded`). n, min, max and mean are
always exact: they come from the target's own summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rtbench.model import Histogram, Int64Array, Run, Series

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


@dataclass
class Stats:
    n: int
    min: int | None
    max: int | None
    mean: float | None
    stddev: float | None
    pct: dict[float, float]  # percentile -> value
    bounded: bool  # percentiles are bucket upper bounds, not exact
    filtered_max: float | None = None  # max after the 3-sigma filter
    filtered_out: int = 0  # samples the filter called gross errors


def has_all_samples(s: Series) -> bool:
    return s.samples is not None and len(s.samples) == s.n and s.n > 0


def sigma3_filter(values: Int64Array) -> Int64Array:
    """Pauta criterion: a sample whose residual from the mean exceeds three
    standard deviations is a gross error. One pass, as published; shown
    beside the raw figures, never instead of them."""
    if len(values) < 3:
        return values
    x = values.astype(np.float64)
    mu, sd = x.mean(), x.std()
    kept: Int64Array = values[np.abs(x - mu) <= 3 * sd]
    return kept


def hist_percentile(h: Histogram, q: float) -> float:
    """Upper bound of the bucket holding the q-th percentile (exact max for
    the top one); under- and overflowed values sit at the ends."""
    if h.min is None or h.max is None:  # empty
        return float("nan")
    rank = max(1, int(np.ceil(q / 100.0 * h.n)))
    seen = h.underflow
    if rank <= seen:
        return float(h.min)
    for index, count in h.counts:
        seen += count
        if rank <= seen:
            return float(min(h.bucket_bounds(index)[1] - 1, h.max))
    return float(h.max)


def series_stats(s: Series, sigma3: bool = False) -> Stats:
    if has_all_samples(s):
        assert s.samples is not None
        v = s.samples
        pct = {q: float(x) for q, x in zip(PERCENTILES, np.percentile(v, PERCENTILES), strict=True)}
        st = Stats(s.n, s.min, s.max, s.mean, float(v.std()), pct, bounded=False)
        if sigma3:
            kept = sigma3_filter(v)
            st.filtered_max = float(kept.max()) if len(kept) else None
            st.filtered_out = len(v) - len(kept)
        return st
    if s.hist is not None and s.hist.n:
        pct = {q: hist_percentile(s.hist, q) for q in PERCENTILES}
        return Stats(s.n, s.min, s.max, s.mean, None, pct, bounded=True)
    return Stats(s.n, s.min, s.max, s.mean, None, {}, bounded=False)


def score(value: float | None, run: Run) -> float | None:
    """indicator / T_std: the figure in units of this hardware's calibration
    workload (CAL-REF), so different machines can be compared."""
    t_std = run.t_std_ns
    if value is None or not t_std:
        return None
    return value / t_std
