"""Runs side by side: one indicator per series, its ratio to the first run,
the significance test that matches that indicator, and flags for unstable
figures.

The test asks whether the figure compared differs, not whether anything
about the distributions does (docs/analysis.md, "Comparison"):
- mean: Welch's t-test (two runs) or Alexander-Govern (more): means with
  unequal variances;
- a percentile pQ: an exceedance test at the first run's pQ: how many
  values of each run lie above it, Fisher's exact test (two runs) or a
  chi-square test of the 2 x k table (more);
- stddev: the Brown-Forsythe test (Levene's, about the median);
- min, max, max_3sigma, n: none. An extreme is one value; no test says
  whether another run would repeat it (the unstable flag says how much it
  stands out).
Only for kinds with a distribution to test (rtbench.kinds: not a count, a
timestamp or a period) and never on fewer than MIN_TEST_N values a run. On
raw samples when every run kept all of them, otherwise on the histograms'
buckets (every value in a bucket taken as the bucket's midpoint). Series of
more than MAX_TEST_SAMPLES values are tested on a seeded random subsample of
that size: this bounds time and memory, and keeps the test from calling a
nanosecond's shift among 50 million samples "significant".

Series pair across runs by (case, series, point). A point coordinate that a
run measured rather than chose cannot pair: CLK-DUR's recurring sources are
keyed by rank (most frequent first), their measured period an attribute;
streams written before that keyed them by `period_ns`, and are paired by
the same rank (their order in the case).

A figure is flagged unstable, by a rule that fits the indicator:
- max: the max is more than UNSTABLE_MAX_P99 times the p99 (the max is then
  one rare event, which a rerun may not repeat);
- mean, stddev: the coefficient of variation exceeds UNSTABLE_CV (a few
  huge samples move the mean);
- a percentile: fewer than MIN_TAIL_SAMPLES samples lie beyond it (p99.99
  of 20,000 samples rests on two of them).
"""

from __future__ import annotations

import math
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
from rtbench.model import Histogram, Point, Run, Series, point_key

MAX_TEST_SAMPLES = 100_000
MIN_TEST_N = 2  # values a run needs before any test: never a test of one value
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
    kind: str
    unit: str
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


class NothingInCommon(ValueError):
    """The runs share no case: there is nothing to set side by side."""


def instability(st: Stats, indicator: str = "max") -> str:
    """Why a series' figure for `indicator` is unstable ('' when it is not)."""
    p99 = st.pct.get(99.0)
    if indicator == "max" and st.max is not None and p99 is not None:
        floor = max(p99, 1.0)  # a p99 of 0: the max against one unit, not a division by 0
        if st.max > UNSTABLE_MAX_P99 * floor:
            return f"max/p99 {st.max / floor:.0f}"
        return ""
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


def matching_test(indicator: str, k: int) -> str | None:
    """The name of the test that matches `indicator` for k runs (None: no
    test matches it)."""
    if indicator == "mean":
        return "Welch's t-test" if k == 2 else "Alexander-Govern test"
    if indicator == "stddev":
        return "Brown-Forsythe test"
    if indicator in PCT_OF:
        how = "Fisher's exact" if k == 2 else "chi-square"
        return f"exceedance test at the first run's {indicator} ({how} on counts above it)"
    return None


def _values(present: list[Series]) -> tuple[list[FloatArray], str] | None:
    rng = np.random.default_rng(_SEED)
    if all(has_all_samples(s) for s in present):
        return [_subsample(s.samples, rng) for s in present if s.samples is not None], (
            "raw samples"
        )
    if all((h := usable_hist(s)) is not None and h.n for s in present):
        arrays = [hist_values(h, rng) for s in present if (h := usable_hist(s)) is not None]
        return arrays, "histogram buckets (values in a bucket tied)"
    return None


def _pvalue(indicator: str, arrays: list[FloatArray]) -> float:
    sps = scipy_stats()
    if indicator == "mean":
        if len(arrays) == 2:
            return float(sps.ttest_ind(arrays[0], arrays[1], equal_var=False).pvalue)
        return float(sps.alexandergovern(*arrays).pvalue)
    if indicator == "stddev":
        return float(sps.levene(*arrays, center="median").pvalue)
    q = PCT_OF[indicator]
    first = np.sort(arrays[0])
    threshold = first[min(len(first), max(1, math.ceil(round(q / 100 * len(first), 9)))) - 1]
    table = np.array([[int((a > threshold).sum()), int((a <= threshold).sum())] for a in arrays])
    if (table.sum(axis=0) == 0).any():
        return 1.0  # nobody (or everybody) above: no difference at this quantile
    if len(arrays) == 2:
        return float(sps.fisher_exact(table).pvalue)
    return float(sps.chi2_contingency(table).pvalue)


def indicator_test(series: list[Series | None], indicator: str) -> tuple[float | None, str]:
    """(p-value, which test) of `indicator` among the series present in two
    or more runs; (None, 'none: why') when no test applies."""
    present = [s for s in series if s is not None and s.n > 0]
    if len(present) < 2:
        return None, "none: fewer than two runs have this series"
    if not present[0].traits.test:
        return None, f"none: a {present[0].kind} has no distribution to test"
    if any(s.n < MIN_TEST_N for s in present):
        return None, f"none: a run has fewer than {MIN_TEST_N} values"
    name = matching_test(indicator, len(present))
    if name is None:
        return None, f"none: no test compares a {indicator} (one value; see unstable)"
    found = _values(present)
    if found is None:
        return None, "none: neither raw samples nor histograms in every run"
    arrays, on = found
    sub = any(s.n > MAX_TEST_SAMPLES for s in present)
    shown = f"{name} on {on}" + (f", random subsample of {MAX_TEST_SAMPLES} per run" if sub else "")
    if all(np.array_equal(arrays[0], a) for a in arrays[1:]) and np.ptp(arrays[0]) == 0:
        return 1.0, shown + " (all values equal)"
    p = _pvalue(indicator, arrays)
    return (None if math.isnan(p) else p), shown


def distribution_test(series: list[Series | None]) -> tuple[float | None, str]:
    """(p-value, which test) of whole distributions: Mann-Whitney U for two
    runs, Kruskal-Wallis H for more (`rtbench ab` and the reports' detail
    use it beside the indicator's own test)."""
    present = [s for s in series if s is not None and s.n > 0]
    if len(present) < 2:
        return None, "none: fewer than two runs have this series"
    if not present[0].traits.test or any(s.n < MIN_TEST_N for s in present):
        return None, "none: no distribution to test"
    found = _values(present)
    if found is None:
        return None, "none: neither raw samples nor histograms in every run"
    arrays, on = found
    name = "Mann-Whitney U" if len(arrays) == 2 else "Kruskal-Wallis H"
    sub = any(s.n > MAX_TEST_SAMPLES for s in present)
    shown = f"{name} on {on}" + (f", random subsample of {MAX_TEST_SAMPLES} per run" if sub else "")
    if all(np.array_equal(arrays[0], a) for a in arrays[1:]) and np.ptp(arrays[0]) == 0:
        return 1.0, shown + " (all values equal)"
    sps = scipy_stats()
    if len(arrays) == 2:
        p = sps.mannwhitneyu(arrays[0], arrays[1], alternative="two-sided").pvalue
    else:
        p = sps.kruskal(*arrays).pvalue
    return float(p), shown


# --- pairing ----------------------------------------------------------------

# Point coordinates that streams before format 1's `attrs` used for a
# measured value: such series pair by rank (their order in the case).
MEASURED_POINT_KEYS = {("CLK-DUR", "recurring"): "period_ns"}

Key = tuple[str, str, str]


def pairing_key(s: Series, rank: int) -> Key:
    """The key `s` pairs by across runs; `rank` is its 1-based place among
    the case's series of the same name."""
    measured = MEASURED_POINT_KEYS.get((s.case, s.name))
    if measured is None or measured not in s.point:
        return s.key
    point: Point = {k: v for k, v in s.point.items() if k != measured}
    point["rank"] = rank
    return (s.case, s.name, point_key(point))


def _index(run: Run) -> dict[Key, Series]:
    out: dict[Key, Series] = {}
    for c in run.cases:
        ranks: dict[str, int] = {}
        for s in c.series:
            ranks[s.name] = ranks.get(s.name, 0) + 1
            out.setdefault(pairing_key(s, ranks[s.name]), s)
    return out


# --- rows -------------------------------------------------------------------


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def _row(key: Key, found: list[Series | None], indicator: str) -> Row:
    sigma3 = indicator == "max_3sigma"
    stats = [series_stats(s, sigma3=sigma3) if s is not None else None for s in found]
    values = [st.value(indicator) if st else None for st in stats]
    pvalue, test = indicator_test(found, indicator)
    # A figure the kind has no meaning for is absent, so not unstable either.
    why = [instability(st, indicator) if st and v is not None else "" for st, v in
           zip(stats, values, strict=True)]  # fmt: skip
    first = next(s for s in found if s is not None)
    return Row(
        case=key[0],
        series=key[1],
        point_key=key[2],
        kind=first.kind,
        unit="count" if indicator == "n" else first.unit,
        values=values,
        ratios=[_ratio(v, values[0]) for v in values],
        pvalue=pvalue,
        test=test,
        unstable=[bool(w) for w in why],
        bounded=[bool(st and st.is_bounded(indicator)) for st in stats],
        why_unstable=why,
    )


def _absent(run: Run, case: str) -> str:
    """Why a run has no figure for a series: its case was not run, or could
    not apply (skipped, unsupported, error), or ran without making this
    series (a one-CPU board has no cross-CPU series): never a number."""
    outcome = next((c.outcome for c in run.cases if c.case == case), None)
    if outcome is None:
        return "not run"
    return "not made" if outcome in ("passed", "failed") else str(outcome)


def compare_runs(runs: list[Run], indicator: str = "max") -> Comparison:
    """A row per series key of any run; values and ratios per run.
    NothingInCommon when no series is in two of the runs (an all-`-` table
    would say nothing)."""
    check_indicator(indicator)
    indexes = [_index(r) for r in runs]
    keys: dict[Key, int] = {}
    for ix in indexes:
        for key in ix:
            keys[key] = keys.get(key, 0) + 1
    if len(runs) >= 2 and not any(count >= 2 for count in keys.values()):
        names = "; ".join(
            f"#{r.id if r.id is not None else i + 1}: "
            + (", ".join(c.case for c in r.cases) or "no case")
            for i, r in enumerate(runs)
        )
        raise NothingInCommon(f"the runs have no series in common, so nothing compares ({names})")
    rows = []
    for key in keys:
        found = [ix.get(key) for ix in indexes]
        row = _row(key, found, indicator)
        row.absent = ["" if s else _absent(r, key[0]) for r, s in zip(runs, found, strict=True)]
        rows.append(row)
    return Comparison(runs, indicator, rows)
