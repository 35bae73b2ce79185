"""Runs side by side: one indicator per series, its ratio to the first run,
a distribution-level significance test, and flags for unstable figures.

The test compares whole distributions, not means (latencies are heavy-tailed,
so a t-test misleads): Mann-Whitney U for two runs, Kruskal-Wallis H (its
k-sample form) for more. On raw samples when every run kept all of them,
otherwise on the histograms' buckets (every value in a bucket taken as the
bucket's midpoint, so values within one bucket count as ties). Series of
more than MAX_TEST_SAMPLES values are tested on a seeded random subsample of
that size: this bounds time and memory, and keeps the test from calling a
nanosecond's shift among 50 million samples "significant".

A figure is flagged unstable, by a rule that fits the indicator:
- max: the max is more than UNSTABLE_MAX_P99 times the p99 (the max is then
  one rare event, which a rerun may not repeat);
- mean, stddev: the coefficient of variation exceeds UNSTABLE_CV (a few
  huge samples move the mean);
- a percentile: fewer than MIN_TAIL_SAMPLES samples lie beyond it (p99.99
  of 20,000 samples rests on two of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from rtbench.analysis.stats import (
    PCT_OF,
    Stats,
    check_indicator,
    has_all_samples,
    hist_cells,
    scipy_stats,
    series_stats,
)
from rtbench.analysis.stored import usable_hist
from rtbench.model import Histogram, Run, Series

MAX_TEST_SAMPLES = 100_000
ALPHA = 0.05
UNSTABLE_MAX_P99 = 10.0
UNSTABLE_CV = 1.0
MIN_TAIL_SAMPLES = 10
_SEED = 20240601  # fixed: the same runs always give the same p-value

FloatArray = npt.NDArray[np.float64]


@dataclass
class Row:
    case: str
    series: str
    point_key: str
    values: list[float | None]  # per run, the indicator
    ratios: list[float | None]  # vs the first run
    pvalue: float | None
    test: str
    unstable: list[bool]
    bounded: list[bool] = field(default_factory=list)  # value is a bucket bound
    why_unstable: list[str] = field(default_factory=list)
    # Per run without this series, why: the case's outcome there
    # ("unsupported", "skipped"...) or "not run"; "" where it has it. A case
    # one OS cannot do is shown as such, never as a zero.
    absent: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.series}[{self.point_key}]" if self.point_key else self.series

    @property
    def significant(self) -> bool:
        return self.pvalue is not None and self.pvalue < ALPHA


@dataclass
class Comparison:
    runs: list[Run]
    indicator: str
    rows: list[Row]


def instability(st: Stats, indicator: str = "max") -> str:
    """Why a series' figure for `indicator` is unstable ('' when it is not)."""
    p99 = st.pct.get(99.0)
    if indicator == "max" and st.max is not None and p99 and st.max > UNSTABLE_MAX_P99 * p99:
        return f"max/p99 {st.max / p99:.0f}"
    if indicator in ("mean", "stddev") and st.mean and st.stddev is not None:
        cv = st.stddev / st.mean
        return f"CV {cv:.2f}" if cv > UNSTABLE_CV else ""
    q = PCT_OF.get(indicator)
    if q is not None:
        beyond = st.n * (1 - q / 100)
        if beyond < MIN_TAIL_SAMPLES:
            return f"{beyond:.0f} samples beyond {indicator}"
    return ""


# --- the test ---------------------------------------------------------------


def _subsample(values: npt.NDArray[np.int64], rng: np.random.Generator) -> FloatArray:
    if len(values) <= MAX_TEST_SAMPLES:
        return values.astype(np.float64)
    picked = rng.choice(len(values), size=MAX_TEST_SAMPLES, replace=False)
    return values[picked].astype(np.float64)


def hist_values(h: Histogram, rng: np.random.Generator) -> FloatArray:
    """The histogram as values (bucket midpoints, repeated by count); a
    multinomial draw of MAX_TEST_SAMPLES of them when it holds more."""
    mids, counts = hist_cells(h)
    total = int(counts.sum())
    if total > MAX_TEST_SAMPLES:
        counts = rng.multinomial(MAX_TEST_SAMPLES, counts / total)
    return np.repeat(mids, counts)


def _test_name(k: int, on: str, subsampled: bool) -> str:
    name = "Mann-Whitney U" if k == 2 else "Kruskal-Wallis H"
    sub = f", random subsample of {MAX_TEST_SAMPLES} per run" if subsampled else ""
    return f"{name} on {on}{sub}"


def distribution_test(series: list[Series | None]) -> tuple[float | None, str]:
    """(p-value, which test) for the series present in two or more runs."""
    present = [s for s in series if s is not None and s.n > 0]
    if len(present) < 2:
        return None, "none: fewer than two runs have this series"
    rng = np.random.default_rng(_SEED)
    big = any(s.n > MAX_TEST_SAMPLES for s in present)
    if all(has_all_samples(s) for s in present):
        arrays = [_subsample(s.samples, rng) for s in present if s.samples is not None]
        on = "raw samples"
    elif all((h := usable_hist(s)) is not None and h.n for s in present):
        arrays = [hist_values(h, rng) for s in present if (h := usable_hist(s)) is not None]
        on = "histogram buckets (values in a bucket tied)"
    else:
        return None, "none: neither raw samples nor histograms in every run"
    if all(np.array_equal(arrays[0], a) for a in arrays[1:]) and np.ptp(arrays[0]) == 0:
        return 1.0, _test_name(len(arrays), on, big) + " (all values equal)"
    sps = scipy_stats()
    if len(arrays) == 2:
        p = sps.mannwhitneyu(arrays[0], arrays[1], alternative="two-sided").pvalue
    else:
        p = sps.kruskal(*arrays).pvalue
    return float(p), _test_name(len(arrays), on, big)


# --- rows -------------------------------------------------------------------


def _keys(runs: list[Run]) -> list[tuple[str, str, str]]:
    """Every series key of every run, in order of first appearance."""
    seen: dict[tuple[str, str, str], None] = {}
    for run in runs:
        for c in run.cases:
            for s in c.series:
                seen.setdefault(s.key, None)
    return list(seen)


def _index(run: Run) -> dict[tuple[str, str, str], Series]:
    return {s.key: s for c in run.cases for s in c.series}


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def _row(key: tuple[str, str, str], found: list[Series | None], indicator: str) -> Row:
    sigma3 = indicator == "max_3sigma"
    stats = [series_stats(s, sigma3=sigma3) if s is not None else None for s in found]
    values = [st.value(indicator) if st else None for st in stats]
    pvalue, test = distribution_test(found)
    why = [instability(st, indicator) if st else "" for st in stats]
    return Row(
        case=key[0],
        series=key[1],
        point_key=key[2],
        values=values,
        ratios=[_ratio(v, values[0]) for v in values],
        pvalue=pvalue,
        test=test,
        unstable=[bool(w) for w in why],
        bounded=[bool(st and st.is_bounded(indicator)) for st in stats],
        why_unstable=why,
    )


def _absent(run: Run, case: str) -> str:
    outcome = next((c.outcome for c in run.cases if c.case == case), None)
    return "not run" if outcome is None else str(outcome)


def compare_runs(runs: list[Run], indicator: str = "max") -> Comparison:
    """A row per series key of any run; values and ratios per run."""
    check_indicator(indicator)
    indexes = [_index(r) for r in runs]
    rows = []
    for key in _keys(runs):
        found = [ix.get(key) for ix in indexes]
        row = _row(key, found, indicator)
        row.absent = ["" if s else _absent(r, key[0]) for r, s in zip(runs, found, strict=True)]
        rows.append(row)
    return Comparison(runs, indicator, rows)
