"""Runs side by side: one indicator per series, its ratio to the first
column, whether the change is beyond run-to-run noise, and flags for
unstable figures (docs/analysis.md, "Comparison").

The unit of evidence is the run. Samples of one run are not independent
draws of a configuration: a run shares its boot, its calibration, its
background load and its cache state, and two runs of one kernel differ by
far more than their samples' scatter suggests. A test on pooled samples
calls that difference "significant" every time. So each column of a
comparison is a configuration measured k times (its `members`: the runs a
column pools, one when it is one run), the indicator is taken per run, and
the test compares those per-run figures:
- two columns: Welch's t-test on the per-run indicator; more: the
  Alexander-Govern test (means with unequal variances);
- a column of one run has no spread between repetitions: no test, nothing
  is significant, and the comparison says why (`note`);
- the p-values of one comparison are adjusted for the number of series
  tested (Benjamini-Hochberg): 90 series tested at 5 % would otherwise
  give four or five "differences" from noise alone.
Beside the test, each row says whether its change (between the columns'
medians of the per-run figure) exceeds the spread between repetitions
(the widest range of the per-run figure within one column): the effect
size an RT engineer can read without statistics. Both the test and this
are taken on logarithms where every per-run figure is above 0 (ratios).

Like with like: runs from an emulator compare only with runs of the same
emulator (`Run.emulated`). Across kinds the figures stand side by side with
no ratio and no test, and the comparison says why (`note`).

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
import warnings
from dataclasses import dataclass, field

import numpy as np

from rtbench.analysis.stats import (
    PCT_OF,
    Stats,
    check_indicator,
    scipy_stats,
    series_stats,
)
from rtbench.model import Point, Run, Series, point_key

ALPHA = 0.05
UNSTABLE_MAX_P99 = 10.0
UNSTABLE_CV = 1.0
MIN_TAIL_SAMPLES = 10


@dataclass
class CompareRow:
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
    # Per column, the indicator of each of its runs (repetitions).
    per_run: list[list[float]] = field(default_factory=list)
    # The widest range of the per-run figure within one column (None: no
    # column has two runs), and the largest change between the first
    # column's median per-run figure and another's.
    spread: float | None = None
    change: float | None = None
    # Every per-run figure above 0: the test, and whether the change is
    # beyond the spread, are taken on logarithms (ratios).
    log_scale: bool = False

    @property
    def label(self) -> str:
        return f"{self.series}[{self.point_key}]" if self.point_key else self.series

    @property
    def significant(self) -> bool:
        return self.pvalue is not None and self.pvalue < ALPHA

    @property
    def beyond_noise(self) -> bool | None:
        """The change exceeds the spread between repetitions (None: the
        spread is unknown, one run per column)."""
        if self.spread is None or self.change is None:
            return None
        if self.log_scale:
            # On the test's scale: one wild run of four slowed ones (p50 21
            # to 74 us beside 80 to 130 ns) spans more microseconds than the
            # change, but a far smaller ratio than the 200x change.
            spread, change = _effect([np.log(v).tolist() for v in self.per_run])
            return spread is not None and change is not None and change > spread
        return self.change > self.spread

    @property
    def differs(self) -> bool:
        """A difference beyond run-to-run noise: significant, and larger
        than the spread between repetitions (what a comparison leads with)."""
        return self.significant and bool(self.beyond_noise)


@dataclass
class Comparison:
    runs: list[Run]
    indicator: str
    rows: list[CompareRow]
    # Per column, the runs it stands for (repetitions of one configuration).
    members: list[list[Run]] = field(default_factory=list)
    # Why nothing can be significant ('' when the runs allow a test).
    note: str = ""
    tested: int = 0  # rows with a p-value (the adjustment's count)

    @property
    def differing(self) -> list[CompareRow]:
        return [r for r in self.rows if r.differs]


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


# --- the test over runs ----------------------------------------------------

ONE_RUN = (
    "one run per side: how much a repetition alone moves a figure is unknown, so no "
    "difference is called significant (ratios only); measure each side several times "
    "(rtbench run --repeat k) and compare the groups"
)


ACROSS_KINDS = (
    "runs of different kinds ({kinds}): an emulator's timings compare only with the same "
    "emulator's, so the figures are side by side without ratios or tests"
)


def matching_test(indicator: str, k: int) -> str | None:
    """The name of the test over runs that compares `indicator` between k
    columns (None: no test matches it)."""
    if indicator == "n":
        return None
    name = "Welch's t-test" if k == 2 else "Alexander-Govern test"
    return f"{name} on the per-run {indicator}"


CONSTANT_TEST = "each side's repetitions all alike, the sides not"


def constant_columns_p(sizes: list[int]) -> float:
    """The largest chance that runs of one configuration fall as these did:
    every column's repetitions one value, not every column the same one.
    Taken over per-run figures with two values (q and 1 - q), where the
    chance is highest: 1/32 for 3 vs 3 runs, 1/16 for 2 vs 3, 1/128 for
    4 vs 4 (docs/analysis.md)."""
    q = np.linspace(0.0, 1.0, 2001)
    alike = np.prod([q**n + (1 - q) ** n for n in sizes], axis=0)
    total = sum(sizes)
    return float(np.max(alike - q**total - (1 - q) ** total))


def positive(per_run: list[list[float]]) -> bool:
    """Every per-run figure is above 0: the comparison is on logarithms."""
    return all(min(v) > 0 for v in per_run if v)


def run_test(per_run: list[list[float]], indicator: str, first: Series) -> tuple[float | None, str]:
    """(unadjusted p-value, which test) of the per-run figures of the
    columns that have the series; (None, 'none: why') when no test applies."""
    if not first.traits.test:
        return None, f"none: a {first.kind} has no distribution to test"
    present = [np.asarray(v, dtype=np.float64) for v in per_run if v]
    if len(present) < 2:
        return None, "none: fewer than two columns have this series"
    name = matching_test(indicator, len(present))
    if name is None:
        return None, f"none: no test compares a {indicator}"
    if min(len(v) for v in present) < 2:
        return None, "none: " + ONE_RUN.split(":")[0]
    sizes = " vs ".join(str(len(v)) for v in present)
    shown = f"{name} ({sizes} runs)"
    if all(np.ptp(v) == 0 for v in present):
        if len({float(v[0]) for v in present}) == 1:
            return None, "none: every repetition of each side gave the same value"
        # Welch's test has no variance to weigh the change against (its limit
        # is p = 0), though a figure read to a clock's step often repeats
        # exactly: the chance of the pattern itself stands in for it.
        return constant_columns_p([len(v) for v in present]), f"{CONSTANT_TEST} ({sizes} runs)"
    if positive(per_run):
        # Positive figures are tested on their logarithms: a busy machine
        # scales a run's figure (a p50 of 21-74 us over four slowed runs,
        # beside 80-130 ns, was "not significant" on the raw scale under
        # stress-ng), and the effect shown is the ratio.
        present = [np.log(v) for v in present]
        shown = f"{name} (log scale, {sizes} runs)"
    sps = scipy_stats()
    with warnings.catch_warnings():
        # Nearly equal repetitions make scipy warn of precision loss; the
        # p-value it returns is then near 1, which is what they say.
        warnings.simplefilter("ignore", RuntimeWarning)
        if len(present) == 2:
            p = float(sps.ttest_ind(present[0], present[1], equal_var=False).pvalue)
        else:
            p = float(sps.alexandergovern(*present).pvalue)
    return (None if math.isnan(p) else p), shown


def _effect(per_run: list[list[float]]) -> tuple[float | None, float | None]:
    """(spread, change): the widest range of the per-run figure within a
    column (None when no column has two runs) and the largest distance from
    the first column's median to another column's."""
    ranges = [max(v) - min(v) for v in per_run if len(v) >= 2]
    medians = [float(np.median(v)) if v else None for v in per_run]
    base = medians[0]
    changes = [abs(m - base) for m in medians[1:] if m is not None and base is not None]
    return (max(ranges) if ranges else None), (max(changes) if changes else None)


def _adjust(rows: list[CompareRow]) -> int:
    """Benjamini-Hochberg over the rows tested: their p-values become the
    adjusted ones. Returns how many were tested."""
    tested = [r for r in rows if r.pvalue is not None]
    if len(tested) > 1:
        adjusted = scipy_stats().false_discovery_control([r.pvalue for r in tested])
        for r, q in zip(tested, adjusted, strict=True):
            r.pvalue = float(q)
    return len(tested)


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


def _row(key: Key, found: list[Series | None], indicator: str) -> CompareRow:
    sigma3 = indicator == "max_3sigma"
    stats = [series_stats(s, sigma3=sigma3) if s is not None else None for s in found]
    values = [st.value(indicator) if st else None for st in stats]
    # A figure the kind has no meaning for is absent, so not unstable either.
    why = [instability(st, indicator) if st and v is not None else "" for st, v in
           zip(stats, values, strict=True)]  # fmt: skip
    first = next(s for s in found if s is not None)
    return CompareRow(
        case=key[0],
        series=key[1],
        point_key=key[2],
        kind=first.kind,
        unit="count" if indicator == "n" else first.unit,
        values=values,
        ratios=[_ratio(v, values[0]) for v in values],
        pvalue=None,
        test="",
        unstable=[bool(w) for w in why],
        bounded=[bool(st and st.is_bounded(indicator)) for st in stats],
        why_unstable=why,
    )


def _per_run(
    runs: list[Run], key: Key, indicator: str, indexes: dict[int, dict[Key, Series]]
) -> list[float]:
    """The indicator of the series `key` in each run that has it."""
    sigma3 = indicator == "max_3sigma"
    out = []
    for run in runs:
        s = indexes.setdefault(id(run), _index(run)).get(key)
        if s is not None and s.n > 0:
            v = series_stats(s, sigma3=sigma3).value(indicator)
            if v is not None:
                out.append(v)
    return out


def _absent(run: Run, case: str) -> str:
    """Why a run has no figure for a series: its case was not run, or could
    not apply (skipped, unsupported, error), or ran without making this
    series (a one-CPU board has no cross-CPU series): never a number."""
    outcome = next((c.outcome for c in run.cases if c.case == case), None)
    if outcome is None:
        return "not run"
    return "not made" if outcome in ("passed", "failed") else str(outcome)


# Labels that tell repetitions of one configuration apart, not configurations.
REPETITION_LABELS = frozenset({"repetition", "campaign_cell", "repeat", "ab_round", "runs"})


def configurations(runs: list[Run]) -> list[list[Run]]:
    """The runs by configuration: runs whose labels are the same, but for
    the labels of a repetition, are repetitions of one configuration. When
    that does not split them into two or more (unlabelled runs), each run
    is its own configuration."""
    groups: dict[tuple[tuple[str, str], ...], list[Run]] = {}
    for run in runs:
        key = tuple(sorted((k, v) for k, v in run.labels.items() if k not in REPETITION_LABELS))
        groups.setdefault(key, []).append(run)
    if len(groups) < 2:
        return [[r] for r in runs]
    return list(groups.values())


def compare_runs(
    runs: list[Run], indicator: str = "max", members: list[list[Run]] | None = None
) -> Comparison:
    """A row per series key of any run; values and ratios per column (a
    run, or a pool of repetitions whose runs `members` lists, in order).
    The test and the effect size are over the members' per-run figures.
    NothingInCommon when no series is in two of the columns (an all-`-`
    table would say nothing)."""
    check_indicator(indicator)
    groups = members if members is not None else [[r] for r in runs]
    if len(groups) != len(runs):
        raise ValueError("members: one list of runs per column")
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
    kinds = list(dict.fromkeys(r.emulated or "hardware" for g in groups for r in g))
    member_ix: dict[int, dict[Key, Series]] = {}
    rows = []
    for key in keys:
        found = [ix.get(key) for ix in indexes]
        row = _row(key, found, indicator)
        row.absent = ["" if s else _absent(r, key[0]) for r, s in zip(runs, found, strict=True)]
        row.per_run = [_per_run(g, key, indicator, member_ix) for g in groups]
        first = next(s for s in found if s is not None)
        row.pvalue, row.test = run_test(row.per_run, indicator, first)
        row.spread, row.change = _effect(row.per_run)
        row.log_scale = positive(row.per_run)
        rows.append(row)
    if len(kinds) > 1:
        # Like with like: an emulator's time is not a machine's.
        for row in rows:
            row.pvalue, row.test = None, "none: runs of different kinds"
            row.ratios = [None] * len(row.ratios)
            row.spread = row.change = None
    cmp = Comparison(runs, indicator, rows, members=groups, tested=_adjust(rows))
    if len(kinds) > 1:
        cmp.note = ACROSS_KINDS.format(kinds=" and ".join(kinds))
    elif len(runs) >= 2 and min(len(g) for g in groups) < 2:
        cmp.note = ONE_RUN
    return cmp
