"""Known-answer tests of rtbench.analysis.stats: percentiles from samples and
from histograms (exact where the buckets allow, bounded where not), moments,
the 3-sigma filter."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.stats import (
    INDICATORS,
    PERCENTILES,
    computed_once,
    guided_percentiles,
    hist_percentile,
    hist_percentile_range,
    sample_moments,
    sample_percentiles,
    series_stats,
    sigma3_filter,
)
from rtbench.model import Histogram, Series


def one_series(values: list[int], **kwargs: object) -> Series:
    run = build_run([C("X", [S("s", values)])], **kwargs)
    return run.cases[0].series[0]


def test_nearest_rank_percentiles_of_1_to_1000() -> None:
    st = series_stats(one_series(list(range(1, 1001))))
    assert st.source == "samples" and not st.bounded
    assert st.pct == {50.0: 500, 90.0: 900, 99.0: 990, 99.9: 999, 99.99: 1000}
    assert (st.n, st.min, st.max, st.mean) == (1000, 1, 1000, 500.5)
    assert st.stddev == pytest.approx(np.std(np.arange(1, 1001)))


def test_histogram_of_small_values_is_exact_and_agrees_with_samples() -> None:
    # Values below 2^(sub_bits+1) = 64 have buckets of width one.
    values = [int(v) for v in np.random.default_rng(1).integers(0, 64, 5000)]
    raw = series_stats(one_series(values))
    hist = series_stats(one_series(values, samples=False))
    assert hist.source == "histogram" and not hist.bounded
    assert hist.pct == raw.pct
    assert hist.stddev_exact and hist.stddev == pytest.approx(raw.stddev)


def test_histogram_percentiles_bound_the_true_value() -> None:
    values = [int(v) for v in np.random.default_rng(2).lognormal(9, 1, 20000)]
    raw = series_stats(one_series(values))
    hist = series_stats(one_series(values, samples=False))
    assert hist.bounded and not hist.stddev_exact
    for q in PERCENTILES:
        lo, hi = hist.pct_range[q]
        assert lo <= raw.pct[q] <= hi, q
        assert hist.pct[q] == hi  # the conservative figure
        assert hi - lo <= hi / 32  # log2 sub_bits 5: relative width <= 2^-5
    assert hist.is_bounded("p50") and not hist.is_bounded("max")
    assert hist.stddev == pytest.approx(raw.stddev, rel=0.05)


def test_top_rank_of_a_histogram_is_the_exact_max() -> None:
    h = Histogram({"kind": "log2", "sub_bits": 5}, [(100, 3), (200, 1)], 4, 60, 1500, 0)
    # rank 4 of 4 is the max itself, whatever its bucket's width
    assert hist_percentile_range(h, 99.99) == (1500.0, 1500.0)
    assert hist_percentile(h, 50.0) <= 1500


def test_underflow_and_overflow_of_a_linear_histogram() -> None:
    layout = {"kind": "linear", "lo": 100, "width": 10, "buckets": 10}
    # 2 below 100, 5 in [100,110), 3 at or above 200
    h = Histogram(layout, [(0, 5)], 10, 40, 900, 0, underflow=2, overflow=3)
    assert hist_percentile_range(h, 10.0) == (40.0, 40.0)  # rank 1: the min
    assert hist_percentile_range(h, 20.0) == (40.0, 99.0)  # in the underflow
    assert hist_percentile_range(h, 50.0) == (100.0, 109.0)
    assert hist_percentile_range(h, 80.0) == (200.0, 900.0)  # in the overflow


def test_summary_only_series() -> None:
    s = Series(case="X", name="s", n=10, min=1, max=9, sum=50)
    st = series_stats(s)
    assert st.source == "summary" and st.pct == {} and st.mean == 5.0
    assert st.value("p99") is None and st.value("max") == 9.0


def test_sigma3_filter_drops_only_gross_errors() -> None:
    values = [1000 + (i % 7) for i in range(10000)] + [50000]
    st = series_stats(one_series(values), sigma3=True)
    assert st.max == 50000  # the raw max is never replaced
    assert st.filtered_max == 1006 and st.filtered_out == 1
    kept = sigma3_filter(np.array(values, dtype=np.int64))
    assert len(kept) == len(values) - 1 and kept.max() == 1006


def test_sigma3_filter_from_the_histogram_when_samples_were_dropped() -> None:
    """A long THR-SW point keeps the first --max-samples raw samples; the
    filter then runs on the histogram, flagged approximate, and agrees with
    the filter on every sample: the gross errors (all of them past the
    first samples) are left out, the filtered max stays near the body."""
    rng = np.random.default_rng(5)
    values = [int(v) for v in rng.normal(20000, 500, 20000)] + [900000, 950000, 1000000]
    exact = series_stats(one_series(values), sigma3=True)
    hist = series_stats(one_series(values, samples=False), sigma3=True)
    assert hist.source == "histogram" and hist.filtered_approx and not exact.filtered_approx
    assert hist.filtered_out == exact.filtered_out == 3
    assert exact.filtered_max is not None and hist.filtered_max is not None
    # An upper bound within a bucket's width (log2, 32 per octave).
    assert exact.filtered_max <= hist.filtered_max <= exact.filtered_max * (1 + 1 / 32)
    assert hist.max == 1000000  # the raw max is never replaced
    # Without the filter asked for, none is computed.
    assert series_stats(one_series(values, samples=False)).filtered_max is None


def test_moments_in_slices_equal_numpy() -> None:
    v = np.random.default_rng(3).integers(0, 10**9, 5_000_000, dtype=np.int64)
    mu, sd = sample_moments(v)
    assert mu == pytest.approx(v.mean(), rel=1e-12)
    assert sd == pytest.approx(v.std(), rel=1e-9)
    assert all(math.isnan(x) for x in sample_moments(np.array([], dtype=np.int64)))


def test_indicator_names() -> None:
    st = series_stats(one_series(list(range(1, 101))), sigma3=True)
    assert [st.value(i) is not None for i in INDICATORS] == [True] * len(INDICATORS)
    with pytest.raises(KeyError, match="unknown indicator 'p42'"):
        st.value("p42")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_histogram_guided_percentiles_equal_a_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mixed = np.concatenate([rng.lognormal(6, 1.5, 30000), rng.integers(0, 64, 99)])
    values = [int(v) for v in mixed]
    s = one_series(values)
    assert s.hist is not None and s.samples is not None
    got = guided_percentiles(s.samples, s.hist)
    ordered = np.sort(s.samples)
    n = len(ordered)
    want = [float(ordered[math.ceil(round(q / 100 * n, 9)) - 1]) for q in PERCENTILES]
    assert got == want == sample_percentiles(s.samples)
    assert series_stats(s).pct == dict(zip(PERCENTILES, want, strict=True))


def test_a_histogram_that_does_not_match_the_samples_is_not_trusted() -> None:
    s = one_series(list(range(1000, 3000)))
    assert s.hist is not None and s.samples is not None
    wrong = Histogram(s.hist.layout, [(i, c) for i, c in s.hist.counts][1:], s.n, s.min, s.max, 0)
    assert guided_percentiles(s.samples, wrong) is None
    assert series_stats(s).pct[50.0] == 1999  # the samples decide


def test_figures_computed_once_per_block_and_per_filter() -> None:
    """A report's summary, ratings and cases share each series' figures
    inside `computed_once`; the 3-sigma figures stay apart, and outside
    the block every call computes afresh (nothing outlives a report)."""
    s = one_series([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 1000])
    with computed_once():
        plain = series_stats(s)
        assert series_stats(s) is plain
        filtered = series_stats(s, sigma3=True)
        assert filtered is not plain and series_stats(s, sigma3=True) is filtered
        other = series_stats(one_series([3, 1, 4]))
        assert other is not plain and other.n == 3
    assert series_stats(s) is not plain
    assert series_stats(s) == plain
